/* slab: small objects that outlive a request, packed in 64 KiB blocks of their own.
 *
 * A tracked pod's model entry, its strings and usage, a patch's state and the keys of posted
 * Events live for minutes among millions of short-lived chunks (request bodies, JSON trees).
 * From malloc they land on pages of the arenas where the short-lived chunks come and go, and
 * each one keeps its page from the trim: in a 20-minute soak ~540 of them held ~470 pages
 * (docs/reliability.md "Long-lived objects apart from request memory"). Here they share blocks
 * mapped for them alone, in 16 size classes up to 512 bytes; a freed slot is reused by the next
 * object of its class, so the blocks touched follow the most objects alive at once, not how long
 * the service has run. A block whose objects are all freed is unmapped unless it is its class's
 * only empty one. A larger object (rare: a long posted-Event key, a pod on more than 16 cards) gets
 * a mapping of its own, aligned like a block, so every object's block head is found from its
 * address.
 *
 * Not thread-safe: the owner's lock serialises every call (the model's write lock, the async
 * patcher's mutex). Under AddressSanitizer free slots and the bytes of a slot past the size
 * asked for are poisoned, so ASan reports their use as it does in malloc's memory. */
#ifndef VS_SLAB_H
#define VS_SLAB_H

#include <stddef.h>

#define VS_SLAB_BLOCK     ((size_t)64 << 10) /* bytes of a block */
#define VS_SLAB_MAX_SMALL 512                /* the largest object kept in blocks */

struct vs_slab;

/* A new, empty slab; NULL when out of memory. */
struct vs_slab *vs_slab_new(void);
/* Unmaps every block and larger object (objects still allocated go with them). Accepts NULL. */
void vs_slab_free(struct vs_slab *s);

/* n zeroed bytes (n 0 counts as 1); free with vs_slab_put on the same slab. NULL when out of
 * memory. */
void *vs_slab_calloc(struct vs_slab *s, size_t n);
/* A copy of str (of at most n bytes of it for strndup) in the slab; free with vs_slab_put. */
char *vs_slab_strdup(struct vs_slab *s, const char *str);
char *vs_slab_strndup(struct vs_slab *s, const char *str, size_t n);
/* Frees what vs_slab_calloc or vs_slab_str*dup of this slab returned. Accepts NULL. */
void vs_slab_put(struct vs_slab *s, void *p);

struct vs_slab_stats {
    size_t blocks;  /* of small objects, VS_SLAB_BLOCK bytes each */
    size_t objects; /* small objects allocated in them */
    size_t large;   /* larger objects (over 512 bytes), each in a mapping of its own */
    size_t mapped;  /* bytes mapped in all (blocks and larger objects' mappings) */
};
void vs_slab_stats(const struct vs_slab *s, struct vs_slab_stats *out);

#endif
