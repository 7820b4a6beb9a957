/* devsuite: the fixture of the device backend tests that load a YAML list item by item: one
 * devtest harness `t` (cleaned after each test), expect() comparing a rendered outcome exactly
 * (and freeing it), add() loading one list item ("- kind: Node ..."). DEV_SUITE(name) declares
 * the Criterion suite. Include once, from the test's .c file. */
#ifndef VS_TEST_DEVSUITE_H
#define VS_TEST_DEVSUITE_H

#include <criterion/criterion.h>

#include "devtest.h"

static struct dt t;

static void fini(void)
{
    dt_cleanup(&t);
}

#define DEV_SUITE(name) TestSuite(name, .fini = fini)

static inline void expect(char *got, const char *want)
{
    cr_assert_str_eq(got, want);
    free(got);
}

static inline void add(const char *item)
{
    char *y = malloc(strlen(item) + 8);
    strcpy(y, "items:\n");
    strcat(y, item);
    dt_load(&t, y);
    free(y);
}

#endif
