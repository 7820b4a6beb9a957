/* slab: small long-lived objects packed in blocks of their own (see slab.h). */
#include "slab.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

#define BLOCK     ((size_t)64 << 10) /* size and alignment of a block */
#define N_CLASSES 16
#define MAX_SMALL 512

static const uint16_t class_size[N_CLASSES] = {16,  32,  48,  64,  80,  96,  112, 128,
                                               160, 192, 224, 256, 320, 384, 448, 512};

/* The head of every block; its slots follow. */
struct block {
    struct block *prev, *next; /* the class's blocks with a free slot */
    void *free;                /* freed slots, linked through their first word */
    char *fresh, *end;         /* slots never handed out: [fresh, end) */
    uint32_t cls, used, cap;
    bool listed;
};

#define FIRST_SLOT ((sizeof(struct block) + 15) & ~(size_t)15)

struct vs_slab {
    struct block *partial[N_CLASSES]; /* blocks with a free slot, the last one freed into first */
    size_t empty[N_CLASSES];          /* blocks with no object (one is kept per class) */
    uintptr_t *set;                   /* block addresses, open addressing, 0 = empty */
    size_t set_cap, blocks, objects, large;
};

static int class_of(size_t n)
{
    if (n <= 128)
        return (int)((n + 15) / 16) - 1;
    if (n <= 256)
        return 8 + (int)((n - 129) / 32);
    return 12 + (int)((n - 257) / 64);
}

static size_t set_home(const struct vs_slab *s, uintptr_t b)
{
    uint64_t h = (uint64_t)(b / BLOCK) * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 32) & (s->set_cap - 1);
}

static bool set_has(const struct vs_slab *s, uintptr_t b)
{
    if (!s->set_cap)
        return false;
    for (size_t i = set_home(s, b);; i = (i + 1) & (s->set_cap - 1)) {
        if (s->set[i] == b)
            return true;
        if (!s->set[i])
            return false;
    }
}

static void set_put(struct vs_slab *s, uintptr_t b)
{
    size_t i = set_home(s, b);
    while (s->set[i])
        i = (i + 1) & (s->set_cap - 1);
    s->set[i] = b;
}

/* Room for one more block address (load at most 1/2). */
static bool set_room(struct vs_slab *s)
{
    if ((s->blocks + 1) * 2 <= s->set_cap)
        return true;
    size_t cap = s->set_cap ? s->set_cap * 2 : 64;
    uintptr_t *old = s->set, *g = calloc(cap, sizeof(*g));
    if (!g)
        return false;
    size_t old_cap = s->set_cap;
    s->set = g;
    s->set_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i])
            set_put(s, old[i]);
    free(old);
    return true;
}

/* Removes b (backward-shift deletion keeps every probe chain whole). */
static void set_del(struct vs_slab *s, uintptr_t b)
{
    size_t m = s->set_cap - 1, i = set_home(s, b);
    while (s->set[i] != b)
        i = (i + 1) & m;
    for (size_t j = (i + 1) & m; s->set[j]; j = (j + 1) & m) {
        size_t home = set_home(s, s->set[j]);
        if (((j - home) & m) >= ((j - i) & m)) {
            s->set[i] = s->set[j];
            i = j;
        }
    }
    s->set[i] = 0;
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

/* A block aligned to its size: map twice the size and give back the ends. */
static struct block *block_new(struct vs_slab *s, int cls)
{
    if (!set_room(s))
        return NULL;
    char *raw = mmap(NULL, 2 * BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t base = ((uintptr_t)raw + BLOCK - 1) & ~(uintptr_t)(BLOCK - 1);
    size_t head = base - (uintptr_t)raw;
    if (head)
        munmap(raw, head);
    munmap((char *)base + BLOCK, BLOCK - head);
    struct block *b = (struct block *)base;
    b->cls = (uint32_t)cls;
    b->fresh = (char *)base + FIRST_SLOT;
    b->end = (char *)base + BLOCK;
    b->cap = (uint32_t)((BLOCK - FIRST_SLOT) / class_size[cls]);
    POISON(b->fresh, (size_t)(b->end - b->fresh));
    set_put(s, base);
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
    for (size_t i = 0; i < s->set_cap; i++)
        if (s->set[i]) {
            UNPOISON((void *)s->set[i], BLOCK);
            munmap((void *)s->set[i], BLOCK);
        }
    free(s->set);
    free(s);
}

void *vs_slab_calloc(struct vs_slab *s, size_t n)
{
    if (n > MAX_SMALL) {
        void *p = calloc(1, n);
        if (p)
            s->large++;
        return p;
    }
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
    uintptr_t base = (uintptr_t)p & ~(uintptr_t)(BLOCK - 1);
    if (!set_has(s, base)) {
        s->large--;
        free(p);
        return;
    }
    struct block *b = (struct block *)base;
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
    set_del(s, base);
    s->blocks--;
    UNPOISON(b, BLOCK);
    munmap(b, BLOCK);
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
}
