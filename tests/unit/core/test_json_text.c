/* test_json_text: vs_json_skip, the value skipper the ExtenderArgs and LIST-page scanners share,
 * and vs_json_put_string / vs_json_put_string_go, the formatters' string writers. */
#include "json_text.h"

#include "buf.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

struct skip_case {
    const char *text;
    long end; /* bytes consumed, -1 for NULL */
};

Test(json_text, skip_values)
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

Test(json_text, skip_depth_limit)
{
    const char *t = "[[[1]]]";
    cr_assert_eq(vs_json_skip(t, t + 7, 3), t + 7);
    cr_assert_null(vs_json_skip(t, t + 7, 2));
    /* Stops at the given end, not at a NUL. */
    const char with_nul[] = "\"a\0b\"x";
    cr_assert_eq(vs_json_skip(with_nul, with_nul + 5, 8), with_nul + 5);
}

Test(json_text, put_string_escapes)
{
    struct vs_buf b;
    vs_buf_init(&b);
    cr_assert(vs_json_put_string(&b, "plain \"q\" back\\slash\n\t\x01 end\xc3\xa9"));
    cr_assert_str_eq(b.data, "\"plain \\\"q\\\" back\\\\slash\\n\\t\\u0001 end\xc3\xa9\"");
    vs_buf_cleanup(&b);
}

Test(json_text, put_string_replaces_bytes_that_are_not_utf8)
{
    /* Lone continuation byte, truncated sequence, overlong '/', UTF-16 surrogate, > U+10FFFF:
     * one U+FFFD per offending byte; valid 2-, 3- and 4-byte sequences pass through. */
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"a\x80"
         "b",
         "\"a\xEF\xBF\xBD"
         "b\""},
        {"\xC3", "\"\xEF\xBF\xBD\""},
        {"\xC0\xAF", "\"\xEF\xBF\xBD\xEF\xBF\xBD\""},
        {"\xED\xA0\x80", "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""},
        {"\xF4\x90\x80\x80", "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""},
        {"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x7F",
         "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x7F\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vs_buf b;
        vs_buf_init(&b);
        cr_assert(vs_json_put_string(&b, cases[i].in));
        cr_assert_str_eq(b.data, cases[i].want, "case %zu", i);
        vs_buf_cleanup(&b);
    }
}

/* Go's json.Marshal: HTML-sensitive bytes and U+2028/U+2029 escaped, \b and \f short, controls
 * as \u00xx, bytes that are not UTF-8 as the escape \ufffd. */
Test(json_text, put_string_go_writes_as_go_marshals)
{
    struct vs_buf b;
    vs_buf_init(&b);
    cr_assert(vs_json_put_string_go(&b, "a<b>&\"\\\b\f\n\r\t\x01\x7f\xe2\x80\xa8\xe2\x80\xa9"
                                        "\xc3\xa9\x80z"));
    cr_assert_str_eq(b.data, "\"a\\u003cb\\u003e\\u0026\\\"\\\\\\b\\f\\n\\r\\t\\u0001\x7f"
                             "\\u2028\\u2029\xc3\xa9\\ufffdz\"");
    vs_buf_cleanup(&b);
}
