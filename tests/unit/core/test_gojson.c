/* test_gojson: Go's encoding/json field rules over jansson values: parse errors with offsets,
 * duplicate and case-folded keys, integer fields (`10.0` is not an int), null as the zero
 * value, and the type names in errors. */
#include "gojson.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static json_t *parse_ok(const char *text)
{
    json_t *v = NULL;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_gojson_parse(text, strlen(text), &v, &eb), VS_OK, "%s: %s", text, eb.msg);
    return v;
}

static void expect_parse_error(const char *text, size_t len, const char *msg)
{
    json_t *v = (json_t *)1;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_gojson_parse(text, len, &v, &eb), VS_ERR_PARSE, "accepted %s", text);
    cr_assert_null(v);
    cr_assert_str_eq(eb.msg, msg);
}

Test(gojson, parse_any_value_and_explicit_length)
{
    json_t *v = parse_ok(" null ");
    cr_assert(json_is_null(v));
    json_decref(v);
    /* The length is what counts: the rest of the buffer is not read. */
    const char text[] = "[1,2]garbage";
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_gojson_parse(text, 5, &v, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(json_array_size(v), 2);
    json_decref(v);
}

Test(gojson, parse_errors_name_the_offset)
{
    expect_parse_error("", 0, "unexpected token near end of file at offset 0");
    expect_parse_error("[1,]", 4, "unexpected token near ']' at offset 4");
    expect_parse_error("{} x", 4, "end of file expected near 'x' at offset 4");
    expect_parse_error("[\"a\\u0000\"]", 11, "NUL character in a string at offset 10");
    expect_parse_error("[18446744073709551616]", 22,
                       "too big integer near '18446744073709551616' at offset 21");
    expect_parse_error("[\"\xff\"]", 5, "unable to decode byte 0xff near '\"' at offset 2");
}

Test(gojson, parse_refuses_values_over_the_cap)
{
    size_t n = VS_GOJSON_MAX_LEN + 1;
    char *big = malloc(n);
    cr_assert_not_null(big);
    memset(big, ' ', n);
    big[0] = '1';
    expect_parse_error(big, n, "value longer than 1048576 bytes");
    /* At the cap it is read. */
    json_t *v = NULL;
    cr_assert_eq(vs_gojson_parse(big, n - 1, &v, NULL), VS_OK);
    cr_assert_eq(json_integer_value(v), 1);
    json_decref(v);
    free(big);
}

Test(gojson, repeated_key_keeps_the_last_value)
{
    json_t *v = parse_ok("{\"count\":1,\"x\":0,\"count\":2}");
    cr_assert_eq(json_object_size(v), 2);
    cr_assert_eq(json_integer_value(vs_gojson_get(v, "count")), 2);
    json_decref(v);
}

Test(gojson, keys_fold_ascii_case_and_the_last_match_wins)
{
    json_t *v = parse_ok("{\"ID\":\"a\",\"Id\":\"b\",\"other\":1}");
    cr_assert_str_eq(json_string_value(vs_gojson_get(v, "id")), "b");
    cr_assert_str_eq(json_string_value(vs_gojson_get(v, "ID")), "b");
    cr_assert_null(vs_gojson_get(v, "i"));
    cr_assert_null(vs_gojson_get(v, "missing"));
    json_decref(v);
    v = parse_ok("{\"id\":\"exact\",\"ID\":\"later\"}");
    cr_assert_str_eq(json_string_value(vs_gojson_get(v, "id")), "later"); /* as Go: not exact */
    json_decref(v);
    /* Not an object: nothing. */
    v = parse_ok("[{\"id\":1}]");
    cr_assert_null(vs_gojson_get(v, "id"));
    cr_assert_null(vs_gojson_get(NULL, "id"));
    json_decref(v);
}

struct int_case {
    const char *text;
    int64_t min, max;
    enum vs_err rc;
    int64_t want;
    const char *msg;
};

Test(gojson, integer_fields)
{
    static const struct int_case cases[] = {
        {"10", 0, 100, VS_OK, 10, ""},
        {"-0", -5, 5, VS_OK, 0, ""},
        {"null", 1, 5, VS_OK, 0, ""}, /* null is the zero value, whatever the range */
        {"9223372036854775807", INT64_MIN, INT64_MAX, VS_OK, INT64_MAX, ""},
        {"-9223372036854775808", INT64_MIN, INT64_MAX, VS_OK, INT64_MIN, ""},
        {"10.0", 0, 100, VS_ERR_PARSE, 0, "expected an integer, got 10.0"},
        {"0.5", 0, 100, VS_ERR_PARSE, 0, "expected an integer, got 0.5"},
        {"1e3", 0, 10000, VS_ERR_PARSE, 0, "expected an integer, got 1000.0"},
        {"-1", 0, 100, VS_ERR_PARSE, 0, "integer -1 out of range"},
        {"2147483648", INT32_MIN, INT32_MAX, VS_ERR_PARSE, 0, "integer 2147483648 out of range"},
        {"\"7\"", 0, 100, VS_ERR_PARSE, 0, "expected an integer, got string"},
        {"true", 0, 100, VS_ERR_PARSE, 0, "expected an integer, got bool"},
        {"[]", 0, 100, VS_ERR_PARSE, 0, "expected an integer, got array"},
        {"{}", 0, 100, VS_ERR_PARSE, 0, "expected an integer, got object"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct int_case *c = &cases[i];
        json_t *v = parse_ok(c->text);
        int64_t got = 42;
        struct vs_errbuf eb = {{0}};
        cr_assert_eq(vs_gojson_int(v, c->min, c->max, &got, &eb), c->rc, "case %s", c->text);
        cr_assert_eq(got, c->want, "case %s: got %lld", c->text, (long long)got);
        cr_assert_str_eq(eb.msg, c->msg, "case %s", c->text);
        json_decref(v);
    }
    int64_t got = 42;
    cr_assert_eq(vs_gojson_int(NULL, 1, 5, &got, NULL), VS_OK); /* absent */
    cr_assert_eq(got, 0);
}

Test(gojson, string_and_bool_fields)
{
    json_t *v = parse_ok("{\"s\":\"x\\u00e9\",\"n\":null,\"b\":true,\"f\":false,\"i\":1}");
    const char *s = NULL;
    bool b = false;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_gojson_str(vs_gojson_get(v, "s"), &s, &eb), VS_OK);
    cr_assert_str_eq(s, "x\xc3\xa9");
    cr_assert_eq(vs_gojson_str(vs_gojson_get(v, "n"), &s, &eb), VS_OK);
    cr_assert_str_eq(s, "");
    cr_assert_eq(vs_gojson_str(vs_gojson_get(v, "absent"), &s, &eb), VS_OK);
    cr_assert_str_eq(s, "");
    cr_assert_eq(vs_gojson_str(vs_gojson_get(v, "i"), &s, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "expected a string, got number");
    cr_assert_eq(vs_gojson_bool(vs_gojson_get(v, "b"), &b, &eb), VS_OK);
    cr_assert(b);
    cr_assert_eq(vs_gojson_bool(vs_gojson_get(v, "f"), &b, &eb), VS_OK);
    cr_assert_not(b);
    b = true;
    cr_assert_eq(vs_gojson_bool(vs_gojson_get(v, "n"), &b, &eb), VS_OK);
    cr_assert_not(b);
    cr_assert_eq(vs_gojson_bool(vs_gojson_get(v, "s"), &b, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "expected a bool, got string");
    json_decref(v);
}

Test(gojson, fields_bind_like_get_in_one_pass)
{
    static const char *const names[] = {"id", "count", "health", "absent"};
    json_t *f[4];
    json_t *v =
        parse_ok("{\"Count\":1,\"ID\":\"a\",\"junk\":[],\"count\":2,\"Id\":\"b\",\"HEALTH\":true}");
    cr_assert(vs_gojson_fields(v, names, 4, f));
    cr_assert_str_eq(json_string_value(f[0]), "b");
    cr_assert_eq(json_integer_value(f[1]), 2);
    cr_assert(json_is_true(f[2]));
    cr_assert_null(f[3]);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(f[i], vs_gojson_get(v, names[i]), "field %s", names[i]);
    json_decref(v);
    /* Not an object: false, every field NULL. */
    v = parse_ok("[1]");
    f[0] = f[1] = f[2] = f[3] = (json_t *)1;
    cr_assert_not(vs_gojson_fields(v, names, 4, f));
    for (size_t i = 0; i < 4; i++)
        cr_assert_null(f[i]);
    json_decref(v);
    /* Keys that share a first letter, or differ only past the ASCII case fold, do not bind. */
    static const char *const two[] = {"ab", "ac"};
    v = parse_ok("{\"AC\":1,\"a\":2,\"ab\\u00e9\":3,\"@b\":4}");
    cr_assert(vs_gojson_fields(v, two, 2, f));
    cr_assert_null(f[0]);
    cr_assert_eq(json_integer_value(f[1]), 1);
    json_decref(v);
}
