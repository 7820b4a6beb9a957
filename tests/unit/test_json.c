/* test_json: vs_json_skip, the value skipper the ExtenderArgs and LIST-page scanners share. */
#include "json.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

struct skip_case {
    const char *text;
    long end; /* bytes consumed, -1 for NULL */
};

Test(json, skip_values)
{
    static const struct skip_case cases[] = {
        {"\"abc\",1", 5},
        {"\"a\\\"b\\\\\" rest", 8},
        {"{\"k\":[1,{\"x\":\"}]\"}],\"y\":null} tail", 29},
        {"[[],{}],", 7},
        {"123,", 3},
        {"-1.5e3}", 6},
        {"true]", 4},
        {"null", 4},
        {"nul\n", 3},
        {"", -1},
        {" 1", -1},
        {",", -1},
        {":", -1},
        {"]", -1},
        {"}", -1},
        {"\"open", -1},
        {"\"ends with backslash\\", -1},
        {"{\"k\":1", -1},
        {"[[[", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *t = cases[i].text;
        const char *e = vs_json_skip(t, t + strlen(t), SIZE_MAX);
        long got = e ? (long)(e - t) : -1;
        cr_assert_eq(got, cases[i].end, "case %zu (%s): got %ld", i, t, got);
    }
}

Test(json, skip_depth_limit)
{
    const char *t = "[[[1]]]";
    cr_assert_eq(vs_json_skip(t, t + 7, 3), t + 7);
    cr_assert_null(vs_json_skip(t, t + 7, 2));
    /* Stops at the given end, not at a NUL. */
    const char with_nul[] = "\"a\0b\"x";
    cr_assert_eq(vs_json_skip(with_nul, with_nul + 5, 8), with_nul + 5);
}
