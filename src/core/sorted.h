/* sorted: binary search in an array kept sorted (byte-wise, strcmp) by a string member. */
#ifndef VS_SORTED_H
#define VS_SORTED_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The index of the element of base[0..n) whose key is `key` (*found true), or the index where
 * such an element would go (*found false). Each element is `size` bytes; its key is the
 * `const char *` member at byte offset key_off (offsetof), never NULL. */
static inline size_t vs_sorted_find(const void *base, size_t n, size_t size, size_t key_off,
                                    const char *key, bool *found)
{
    const char *b = base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *k;
        memcpy(&k, b + mid * size + key_off, sizeof(k));
        int c = strcmp(k, key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

#endif
