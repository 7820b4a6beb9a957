/* slab: small long-lived objects packed in blocks of their own (see slab.h). */
#include "slab.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define VS_SLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VS_SLAB_ASAN 1
#endif
#endif
#ifdef VS_SLAB_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define BLOCK     VS_SLAB_BLOCK /* size and alignment of a block */
#define N_CLASSES 16
#define MAX_SMALL VS_SLAB_MAX_SMALL
#define LARGE     N_CLASSES /* the class of a mapping that holds one larger object */

static const uint16_t class_size[N_CLASSES] = {16,  32,  48,  64,  80,  96,  112, 128,
                                               160, 192, 224, 256, 320, 384, 448, 512};

/* The head of every mapping, at its start (aligned to BLOCK, so any object's head is its
 * address rounded down to BLOCK); its slots, or its one larger object, follow. */
struct block {
    struct block *prev, *next; /* the class's blocks with a free slot */
    struct block *all_prev, *all_next;
    void *free;        /* freed slots, linked through their first word */
    char *fresh, *end; /* slots never handed out: [fresh, end) */
    size_t mapped;     /* bytes */
    uint32_t cls, used, cap;
    bool listed;
};

#define FIRST_SLOT ((sizeof(struct block) + 15) & ~(size_t)15)

struct vs_slab {
    struct block *partial[N_CLASSES]; /* blocks with a free slot, the last one freed into first */
    size_t empty[N_CLASSES];          /* blocks with no object (one is kept per class) */
    struct block *all;                /* every mapping, for vs_slab_free */
    size_t blocks, objects, large, mapped;
};

static int class_of(size_t n)
{
    if (n <= 128)
        return (int)((n + 15) / 16) - 1;
    if (n <= 256)
        return 8 + (int)((n - 129) / 32);
    return 12 + (int)((n - 257) / 64);
}

static void list_add(struct vs_slab *s, struct block *b)
{
    b->prev = NULL;
    b->next = s->partial[b->cls];
    if (b->next)
        b->next->prev = b;
    s->partial[b->cls] = b;
    b->listed = true;
}

static void list_del(struct vs_slab *s, struct block *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        s->partial[b->cls] = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->listed = false;
}

/* `bytes` (a multiple of the page size) mapped at an address aligned to BLOCK: map BLOCK more
 * and give back the ends. The head is set up for class cls and linked into s->all. */
static struct block *map_aligned(struct vs_slab *s, size_t bytes, uint32_t cls)
{
    char *raw =
        mmap(NULL, bytes + BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t base = ((uintptr_t)raw + BLOCK - 1) & ~(uintptr_t)(BLOCK - 1);
    size_t head = base - (uintptr_t)raw;
    if (head)
        munmap(raw, head);
    munmap((char *)base + bytes, BLOCK - head);
    struct block *b = (struct block *)base;
    b->cls = cls;
    b->mapped = bytes;
    b->all_next = s->all;
    if (s->all)
        s->all->all_prev = b;
    s->all = b;
    s->mapped += bytes;
    return b;
}

static void unmap(struct vs_slab *s, struct block *b)
{
    if (b->all_prev)
        b->all_prev->all_next = b->all_next;
    else
        s->all = b->all_next;
    if (b->all_next)
        b->all_next->all_prev = b->all_prev;
    s->mapped -= b->mapped;
    UNPOISON(b, b->mapped);
    munmap(b, b->mapped);
}

static struct block *block_new(struct vs_slab *s, int cls)
{
    struct block *b = map_aligned(s, BLOCK, (uint32_t)cls);
    if (!b)
        return NULL;
    b->fresh = (char *)b + FIRST_SLOT;
    b->end = (char *)b + BLOCK;
    b->cap = (uint32_t)((BLOCK - FIRST_SLOT) / class_size[cls]);
    POISON(b->fresh, (size_t)(b->end - b->fresh));
    s->blocks++;
    s->empty[cls]++;
    list_add(s, b);
    return b;
}

struct vs_slab *vs_slab_new(void)
{
    return calloc(1, sizeof(struct vs_slab));
}

void vs_slab_free(struct vs_slab *s)
{
    if (!s)
        return;
    while (s->all)
        unmap(s, s->all);
    free(s);
}

/* One larger object in a mapping of its own (fresh anonymous pages are zero). */
static void *large_new(struct vs_slab *s, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (n > SIZE_MAX - FIRST_SLOT - page - BLOCK)
        return NULL;
    size_t bytes = (FIRST_SLOT + n + page - 1) / page * page;
    struct block *b = map_aligned(s, bytes, LARGE);
    if (!b)
        return NULL;
    s->large++;
    return (char *)b + FIRST_SLOT;
}

void *vs_slab_calloc(struct vs_slab *s, size_t n)
{
    if (n > MAX_SMALL)
        return large_new(s, n);
    int cls = class_of(n ? n : 1);
    struct block *b = s->partial[cls];
    if (!b && !(b = block_new(s, cls)))
        return NULL;
    char *p;
    if (b->free) {
        p = b->free;
        UNPOISON(p, sizeof(void *));
        b->free = *(void **)p;
    } else {
        p = b->fresh;
        b->fresh += class_size[cls];
    }
    if (b->used++ == 0)
        s->empty[cls]--;
    if (b->used == b->cap)
        list_del(s, b);
    s->objects++;
    UNPOISON(p, n ? n : 1);
    memset(p, 0, n ? n : 1);
    return p;
}

void vs_slab_put(struct vs_slab *s, void *p)
{
    if (!p)
        return;
    struct block *b = (struct block *)((uintptr_t)p & ~(uintptr_t)(BLOCK - 1));
    if (b->cls == LARGE) {
        s->large--;
        unmap(s, b);
        return;
    }
    int cls = (int)b->cls;
    POISON(p, class_size[cls]);
    UNPOISON(p, sizeof(void *));
    *(void **)p = b->free;
    POISON(p, sizeof(void *));
    b->free = p;
    if (!b->listed)
        list_add(s, b);
    s->objects--;
    if (--b->used > 0)
        return;
    if (s->empty[cls] == 0) { /* keep one empty block per class: no map and unmap per object */
        s->empty[cls]++;
        return;
    }
    list_del(s, b);
    s->blocks--;
    unmap(s, b);
}

static char *copy(struct vs_slab *s, const char *str, size_t len)
{
    char *d = vs_slab_calloc(s, len + 1);
    if (d)
        memcpy(d, str, len); /* calloc wrote the NUL */
    return d;
}

char *vs_slab_strndup(struct vs_slab *s, const char *str, size_t n)
{
    return copy(s, str, strnlen(str, n));
}

char *vs_slab_strdup(struct vs_slab *s, const char *str)
{
    return copy(s, str, strlen(str));
}

void vs_slab_stats(const struct vs_slab *s, struct vs_slab_stats *out)
{
    out->blocks = s->blocks;
    out->objects = s->objects;
    out->large = s->large;
    out->mapped = s->mapped;
}
