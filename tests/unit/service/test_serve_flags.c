/* test_serve_flags: the flag table of `serve` (serve.c) is complete: a range on every numeric
 * flag, the defaults inside it, help on every row, no name twice. (tests/cli/check.sh runs the
 * binary with bad values and compares --help with docs/flags.md.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* Every numeric flag has a range with its default inside; every row has one line of help and a
 * name no other row has (as name or alias). A row added without a range fails here. */
Test(serve_flags, every_row_is_complete)
{
    size_t n;
    const struct vs_flag *t = vs_serve_flags(&n);
    struct vs_service_config c;
    vs_service_config_defaults(&c);
    cr_assert_gt(n, 30);
    for (size_t i = 0; i < n; i++) {
        cr_assert(t[i].help && *t[i].help && !strchr(t[i].help, '\n'), "--%s", t[i].name);
        bool numeric =
            t[i].type == VS_FLAG_INT || t[i].type == VS_FLAG_DOUBLE || t[i].type == VS_FLAG_DUR;
        if (numeric)
            cr_assert_lt(t[i].min, t[i].max, "--%s has no range", t[i].name);
        else
            cr_assert(t[i].min == 0 && t[i].max == 0, "--%s: a range on a non-number", t[i].name);
        for (size_t j = 0; j < n; j++) {
            if (i == j)
                continue;
            cr_assert_str_neq(t[i].name, t[j].name);
            if (t[j].alias)
                cr_assert_str_neq(t[i].name, t[j].alias);
        }
    }
}

/* The defaults of vs_service_config_defaults lie inside each numeric row's range. */
Test(serve_flags, defaults_are_in_range)
{
    size_t n;
    const struct vs_flag *t = vs_serve_flags(&n);
    struct {
        struct vs_service_config c;
    } o;
    vs_service_config_defaults(&o.c);
    for (size_t i = 0; i < n; i++) {
        if (t[i].off >= sizeof(o.c))
            continue; /* command-line only settings beside the configuration */
        const char *p = (const char *)&o + t[i].off;
        double v;
        if (t[i].type == VS_FLAG_INT || t[i].type == VS_FLAG_DUR)
            v = (double)*(const long long *)p;
        else if (t[i].type == VS_FLAG_DOUBLE)
            v = *(const double *)p;
        else
            continue;
        cr_assert(v >= t[i].min && v <= t[i].max, "--%s default %g outside %g..%g", t[i].name, v,
                  t[i].min, t[i].max);
    }
}
