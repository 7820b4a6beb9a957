/* hash: 64-bit FNV-1a, for signatures kept in memory only (never written anywhere). */
#ifndef VS_HASH_H
#define VS_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "annot.h"

#define VS_FNV_OFFSET 0xcbf29ce484222325ULL

static inline uint64_t vs_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* The list's length, then each item with its terminating NUL; NULL hashes as an empty list. */
static inline uint64_t vs_fnv_strlist(uint64_t h, const struct vs_strlist *l)
{
    size_t n = l ? l->n : 0;
    h = vs_fnv(h, &n, sizeof(n));
    for (size_t i = 0; i < n; i++)
        h = vs_fnv(h, l->items[i], strlen(l->items[i]) + 1);
    return h;
}

#endif
