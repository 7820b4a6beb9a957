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
