/* test_slab: the long-lived object slab — contents kept, slots reused within their class,
 * blocks given back when empty (one kept per class), larger objects in mappings of their own. */
#include "slab.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK VS_SLAB_BLOCK

static struct vs_slab_stats stats(const struct vs_slab *s)
{
    struct vs_slab_stats st;
    vs_slab_stats(s, &st);
    return st;
}

Test(slab, objects_are_zeroed_aligned_and_keep_their_contents)
{
    struct vs_slab *s = vs_slab_new();
    cr_assert(s);
    enum { N = 3000 };
    static unsigned char *p[N];
    for (size_t i = 0; i < N; i++) {
        size_t n = 1 + i % 512;
        p[i] = vs_slab_calloc(s, n);
        cr_assert(p[i], "object %zu", i);
        cr_assert_eq((uintptr_t)p[i] % 16, 0, "object %zu of %zu bytes not 16-aligned", i, n);
        for (size_t k = 0; k < n; k++)
            cr_assert_eq(p[i][k], 0, "object %zu byte %zu not zeroed", i, k);
        memset(p[i], (int)(i & 0xff), n);
    }
    for (size_t i = 0; i < N; i++)
        for (size_t k = 0; k < 1 + i % 512; k++)
            cr_assert_eq(p[i][k], i & 0xff, "object %zu byte %zu overwritten", i, k);
    cr_assert_eq(stats(s).objects, N);
    cr_assert_eq(stats(s).large, 0);
    for (size_t i = 0; i < N; i++)
        vs_slab_put(s, p[i]);
    struct vs_slab_stats st = stats(s);
    cr_assert_eq(st.objects, 0);
    cr_assert_eq(st.blocks, 16, "one empty block kept per size class, got %zu", st.blocks);
    vs_slab_free(s);
}

Test(slab, a_freed_slot_is_the_next_one_of_its_class)
{
    struct vs_slab *s = vs_slab_new();
    void *a = vs_slab_calloc(s, 40), *b = vs_slab_calloc(s, 40), *c = vs_slab_calloc(s, 100);
    cr_assert_eq((char *)b - (char *)a, 48, "48-byte class: next slot 48 bytes on");
    vs_slab_put(s, a);
    cr_assert_eq(vs_slab_calloc(s, 33), a, "33 bytes reuse the freed 48-byte slot");
    cr_assert_neq(vs_slab_calloc(s, 100), a, "another class never gets it");
    cr_assert_eq(stats(s).blocks, 2);
    vs_slab_put(s, b);
    vs_slab_put(s, c);
    vs_slab_free(s);
}

Test(slab, blocks_follow_the_most_objects_alive_not_the_churn)
{
    struct vs_slab *s = vs_slab_new();
    enum { LIVE = 4000 }; /* 4000 x 64 bytes: 4 blocks of 64 KiB */
    static void *p[LIVE];
    for (size_t i = 0; i < LIVE; i++)
        cr_assert(p[i] = vs_slab_calloc(s, 64));
    size_t peak = stats(s).blocks;
    cr_assert_eq(peak, (LIVE * 64 + BLOCK - 1) / (BLOCK - 64), "blocks for %d objects", LIVE);
    /* 100 rounds: a pseudo-random half freed and made again, never more alive than before */
    uint32_t x = 12345;
    for (int round = 0; round < 100; round++) {
        for (size_t i = 0; i < LIVE; i++) {
            x = x * 1103515245u + 12345u;
            if (x >> 31) {
                vs_slab_put(s, p[i]);
                p[i] = NULL;
            }
        }
        for (size_t i = 0; i < LIVE; i++)
            if (!p[i])
                cr_assert(p[i] = vs_slab_calloc(s, 64));
        cr_assert_eq(stats(s).blocks, peak, "round %d: %zu blocks", round, stats(s).blocks);
    }
    /* all gone: one empty block stays for the class */
    for (size_t i = 0; i < LIVE; i++)
        vs_slab_put(s, p[i]);
    cr_assert_eq(stats(s).blocks, 1);
    vs_slab_free(s);
}

Test(slab, over_512_bytes_gets_a_mapping_of_its_own)
{
    struct vs_slab *s = vs_slab_new();
    char *edge = vs_slab_calloc(s, 512), *big = vs_slab_calloc(s, 513);
    char *huge = vs_slab_calloc(s, 3 * BLOCK); /* spans several block sizes */
    cr_assert(edge && big && huge);
    cr_assert_eq((uintptr_t)big % 16, 0);
    for (size_t k = 0; k < 513; k++)
        cr_assert_eq(big[k], 0);
    for (size_t k = 0; k < 3 * BLOCK; k++)
        cr_assert_eq(huge[k], 0, "byte %zu", k);
    memset(big, 'b', 513);
    memset(huge, 'h', 3 * BLOCK);
    cr_assert_eq(edge[0], 0, "the 512-byte object is apart from the larger ones");
    struct vs_slab_stats st = stats(s);
    cr_assert_eq(st.large, 2);
    cr_assert_eq(st.objects, 1);
    cr_assert_eq(st.blocks, 1);
    cr_assert_eq(st.mapped, BLOCK + 4096 /* the head and 513 bytes */ + 3 * BLOCK + 4096,
                 "mapped %zu", st.mapped);
    vs_slab_put(s, big);
    vs_slab_put(s, huge);
    vs_slab_put(s, edge);
    vs_slab_put(s, NULL);
    st = stats(s);
    cr_assert_eq(st.large, 0);
    cr_assert_eq(st.objects, 0);
    cr_assert_eq(st.mapped, BLOCK, "the class's one empty block stays");
    vs_slab_free(s);
}

Test(slab, strdup_and_strndup_copy_into_the_slab)
{
    struct vs_slab *s = vs_slab_new();
    char *a = vs_slab_strdup(s, "2f1e6b5c-8d3a-4c1f-9b7e-0a1b2c3d4e5f");
    char *b = vs_slab_strndup(s, "GPU-0123;rest", 8);
    char *e = vs_slab_strdup(s, "");
    cr_assert_str_eq(a, "2f1e6b5c-8d3a-4c1f-9b7e-0a1b2c3d4e5f");
    cr_assert_str_eq(b, "GPU-0123");
    cr_assert_str_eq(e, "");
    cr_assert_eq(stats(s).objects, 3);
    vs_slab_put(s, a);
    vs_slab_put(s, b);
    vs_slab_put(s, e);
    vs_slab_free(s);
    vs_slab_free(NULL);
}

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>

/* Under AddressSanitizer a freed slot is poisoned, and so are the bytes of a slot past the size
 * asked for: ASan reports a use after vs_slab_put, or an overflow into the slot's rounding, as
 * it does for malloc's memory. */
Test(slab, free_slots_and_slack_are_poisoned_under_asan)
{
    struct vs_slab *s = vs_slab_new();
    char *p = vs_slab_calloc(s, 24); /* a 32-byte slot */
    cr_assert_not(__asan_address_is_poisoned(p));
    cr_assert_not(__asan_address_is_poisoned(p + 23));
    cr_assert(__asan_address_is_poisoned(p + 24), "the slot's last 8 bytes were not asked for");
    vs_slab_put(s, p);
    for (int k = 0; k < 32; k++)
        cr_assert(__asan_address_is_poisoned(p + k), "byte %d of a freed slot readable", k);
    char *q = vs_slab_calloc(s, 32); /* the same slot again, all of it */
    cr_assert_eq(q, p);
    for (int k = 0; k < 32; k++)
        cr_assert_not(__asan_address_is_poisoned(q + k), "byte %d of a new object poisoned", k);
    vs_slab_put(s, q);
    vs_slab_free(s);
}
#endif
