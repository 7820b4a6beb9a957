/* test_buf: the growable buffer's formatting helpers against printf itself. */
#include "buf.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_fixed2(double v)
{
    char want[400];
    snprintf(want, sizeof(want), "%.2f", v);
    struct vs_buf b;
    vs_buf_init(&b);
    cr_assert(vs_buf_put_fixed2(&b, v));
    cr_assert_str_eq(b.data, want, "value %.17g", v);
    vs_buf_cleanup(&b);
}

Test(buf, fixed2_matches_printf_on_exact_ties)
{
    /* Halfway cases: printf rounds them half to even. */
    static const float ties[] = {0.125f,  0.375f, 0.625f, 0.875f,  1.125f, 2.5f / 4, 10.125f,
                                 29.875f, 0.0f,   -0.0f,  -0.125f, 30.0f,  1e12f,    16777216.0f};
    for (size_t i = 0; i < sizeof(ties) / sizeof(ties[0]); i++)
        expect_fixed2(ties[i]);
    /* Not floats, or not finite: printf's own output. */
    expect_fixed2(0.1);
    expect_fixed2(1e300);
    expect_fixed2(INFINITY);
    expect_fixed2(-INFINITY);
    expect_fixed2(NAN);
}

Test(buf, fixed2_matches_printf_on_random_floats)
{
    uint64_t s = 12345;
    for (int i = 0; i < 200000; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t bits = (uint32_t)(s >> 32);
        float f;
        if (i % 2) {
            f = (float)(bits % 3000001) / 100000.0f; /* node scores live in [0, 30] */
        } else {
            memcpy(&f, &bits, sizeof(f)); /* any float */
        }
        expect_fixed2(f);
    }
}

Test(buf, truncate)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "abcdef");
    vs_buf_truncate(&b, 10); /* longer than the content: unchanged */
    cr_assert_str_eq(b.data, "abcdef");
    vs_buf_truncate(&b, 3);
    cr_assert_eq(b.len, 3);
    cr_assert_str_eq(b.data, "abc");
    vs_buf_puts(&b, "Z");
    cr_assert_str_eq(b.data, "abcZ");
    vs_buf_cleanup(&b);
}

/* vs_grow_one: room for one more element, by doubling from 16; what was there stays. */
Test(buf, grow_one_doubles_and_keeps_the_elements)
{
    int *v = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 40; i++) {
        cr_assert(vs_grow_one((void **)&v, n, &cap, sizeof(*v)));
        cr_assert_gt(cap, n);
        v[n++] = i;
    }
    cr_assert_eq(cap, 64);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(v[i], i);
    /* no room asked: nothing changes */
    int *same = v;
    cr_assert(vs_grow_one((void **)&v, 10, &cap, sizeof(*v)));
    cr_assert_eq(v, same);
    cr_assert_eq(cap, 64);
    /* a size whose doubling overflows is refused, the array left as it was */
    size_t huge = 1;
    cr_assert_not(vs_grow_one((void **)&v, 1, &huge, SIZE_MAX / 2 + 1));
    cr_assert_eq(v, same);
    cr_assert_eq(huge, 1);
    free(v);
}
