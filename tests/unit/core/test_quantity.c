/* test_quantity: exact Kubernetes quantity arithmetic (spec/hami-compat.md §0): which texts are
 * whole numbers in int64 (VS_OK), valid but fractional or out of range (VS_ERR_INVAL), or not
 * quantities at all (VS_ERR_PARSE), and rounding up for the Value()-style reader. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <string.h>

#include "quantity.h"

/* Criterion runs each test in a fresh child process, so parameter tables must live in its
 * shared memory: every case keeps its string inline and the table is copied whole. */
static void *shared_copy(const void *src, size_t size)
{
    void *dst = cr_malloc(size);
    if (dst)
        memcpy(dst, src, size);
    return dst;
}

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

struct qcase {
    char in[64];
    enum vs_err code;
    int64_t want; /* only when code == VS_OK */
};

ParameterizedTestParameters(quantity, int)
{
    static const struct qcase cases[] = {
        {"2", VS_OK, 2},
        {"0", VS_OK, 0},
        {"-0", VS_OK, 0},
        {"2k", VS_OK, 2000},
        {"1e3", VS_OK, 1000},
        {"1E3", VS_OK, 1000},
        {"1e+3", VS_OK, 1000},
        {"1Ki", VS_OK, 1024},
        {"1Mi", VS_OK, 1048576},
        {"1Gi", VS_OK, 1073741824},
        {"1.5Gi", VS_OK, 1610612736},
        {"1000m", VS_OK, 1},
        {"2M", VS_OK, 2000000},
        {"3T", VS_OK, 3000000000000},
        {"1E", VS_OK, 1000000000000000000}, /* E is the exa suffix, not an exponent */
        {"-3", VS_OK, -3},
        {"+4", VS_OK, 4},
        {"5.", VS_OK, 5},
        {"007", VS_OK, 7},
        {"1.000", VS_OK, 1},
        {"12.5e1", VS_OK, 125},
        {"9223372036854775807", VS_OK, INT64_MAX},
        {"-9223372036854775808", VS_OK, INT64_MIN},
        {"7Ei", VS_OK, 8070450532247928832},
        /* Exact however many digits: trailing zeros beyond 38 digits, binary suffixes. */
        {"1000000000000000000000000000000000000000e-39", VS_OK, 1},
        {"1.0000000000000000000000000000000000000000Ei", VS_OK, 1152921504606846976},
        {"0.931322574615478515625Ei", VS_OK, 1073741824000000000},
        {"0.5Ki", VS_OK, 512},
        {"1500m", VS_ERR_INVAL, 0},
        {"1.5", VS_ERR_INVAL, 0},
        {"1e-39", VS_ERR_INVAL, 0},
        {"100000000000000000000000000000000000001e-38", VS_ERR_INVAL, 0},
        {"0.1Ki", VS_ERR_INVAL, 0},
        {".5", VS_ERR_INVAL, 0},
        {"1e-3", VS_ERR_INVAL, 0},
        {"1m", VS_ERR_INVAL, 0},
        {"9223372036854775808", VS_ERR_INVAL, 0},
        {"-9223372036854775809", VS_ERR_INVAL, 0},
        {"8Ei", VS_ERR_INVAL, 0},
        {"10E", VS_ERR_INVAL, 0},
        {"1e19", VS_ERR_INVAL, 0},
        {"1e40", VS_ERR_INVAL, 0},
        {"abc", VS_ERR_PARSE, 0},
        {"", VS_ERR_PARSE, 0},
        {"1x", VS_ERR_PARSE, 0},
        {"1.2.3", VS_ERR_PARSE, 0},
        {"e3", VS_ERR_PARSE, 0},
        {"1e", VS_ERR_PARSE, 0},
        {"1e+", VS_ERR_PARSE, 0},
        {"1e3k", VS_ERR_PARSE, 0},
        {"1ki", VS_ERR_PARSE, 0},
        {"1K", VS_ERR_PARSE, 0},
        {" 1", VS_ERR_PARSE, 0},
        {"1 ", VS_ERR_PARSE, 0},
        {"+", VS_ERR_PARSE, 0},
        {"-", VS_ERR_PARSE, 0},
        {".", VS_ERR_PARSE, 0},
        {"--1", VS_ERR_PARSE, 0},
    };
    return cr_make_param_array(struct qcase, shared_copy(cases, sizeof(cases)),
                               sizeof(cases) / sizeof(cases[0]), free_params);
}

ParameterizedTest(struct qcase *c, quantity, int)
{
    int64_t v = 12345;
    enum vs_err err = vs_quantity_int(c->in, &v);
    cr_assert_eq(err, c->code, "\"%s\": got %s, want %s", c->in, vs_err_name(err),
                 vs_err_name(c->code));
    if (c->code == VS_OK)
        cr_assert_eq(v, c->want, "\"%s\": got %lld, want %lld", c->in, (long long)v,
                     (long long)c->want);
    else
        cr_assert_eq(v, 12345, "\"%s\": output written on error", c->in);
}

ParameterizedTestParameters(quantity, ceil)
{
    static const struct qcase cases[] = {
        {"2", VS_OK, 2},
        {"0", VS_OK, 0},
        {"0.5", VS_OK, 1},
        {"1500m", VS_OK, 2},
        {"1m", VS_OK, 1},
        {"2000m", VS_OK, 2},
        {".5", VS_OK, 1},
        {"1.5Gi", VS_OK, 1610612736},
        {"0.1Ki", VS_OK, 103},
        {"-1.5", VS_OK, -1},
        {"-0.5", VS_OK, 0},
        {"-3", VS_OK, -3},
        {"1e-3", VS_OK, 1},
        {"9223372036854775807", VS_OK, INT64_MAX},
        {"9223372036854775808", VS_OK, INT64_MAX},
        {"8Ei", VS_OK, INT64_MAX},
        {"1e40", VS_OK, INT64_MAX},
        {"-1e40", VS_OK, INT64_MIN},
        {"1e999999999999999", VS_OK, INT64_MAX},
        /* Tiny and long values round up exactly instead of saturating. */
        {"1e-39", VS_OK, 1},
        {"-1e-39", VS_OK, 0},
        {"1e-99999999999999999", VS_OK, 1},
        {"0.0000000000000000000000000000000000000000001Ki", VS_OK, 1},
        {"1.000000000000000000000000000000000000001", VS_OK, 2},
        {"100000000000000000000000000000000000001e-38", VS_OK, 2},
        {"12345678901234567890123456789012345678901234567890e-40", VS_OK, 1234567891},
        {"abc", VS_ERR_PARSE, 0},
        {"", VS_ERR_PARSE, 0},
        {"1x", VS_ERR_PARSE, 0},
        {"e3", VS_ERR_PARSE, 0},
    };
    return cr_make_param_array(struct qcase, shared_copy(cases, sizeof(cases)),
                               sizeof(cases) / sizeof(cases[0]), free_params);
}

ParameterizedTest(struct qcase *c, quantity, ceil)
{
    int64_t v = 12345;
    enum vs_err err = vs_quantity_ceil(c->in, &v);
    cr_assert_eq(err, c->code, "\"%s\": got %s, want %s", c->in, vs_err_name(err),
                 vs_err_name(c->code));
    if (c->code == VS_OK)
        cr_assert_eq(v, c->want, "\"%s\": got %lld, want %lld", c->in, (long long)v,
                     (long long)c->want);
}

Test(quantity, null_is_not_a_quantity)
{
    int64_t v;
    cr_assert_eq(vs_quantity_int(NULL, &v), VS_ERR_PARSE);
    cr_assert_eq(vs_quantity_ceil(NULL, &v), VS_ERR_PARSE);
}

ParameterizedTestParameters(quantity, milli_ceil)
{
    static const struct qcase cases[] = {
        {"2", VS_OK, 2000},     {"0", VS_OK, 0},
        {"100m", VS_OK, 100},   {"0.5", VS_OK, 500},
        {"1.5", VS_OK, 1500},   {"250m", VS_OK, 250},
        {"0.0001", VS_OK, 1}, /* rounds up like MilliValue */
        {"1k", VS_OK, 1000000}, {"1Ki", VS_OK, 1024000},
        {"2e-3", VS_OK, 2},     {"9223372036854775807", VS_OK, INT64_MAX}, /* saturates */
        {"x", VS_ERR_PARSE, 0}, {"1.2.3", VS_ERR_PARSE, 0},
    };
    return cr_make_param_array(struct qcase, shared_copy(cases, sizeof(cases)),
                               sizeof(cases) / sizeof(cases[0]), free_params);
}

ParameterizedTest(struct qcase *c, quantity, milli_ceil)
{
    int64_t v = 12345;
    enum vs_err err = vs_quantity_milli_ceil(c->in, &v);
    cr_assert_eq(err, c->code, "\"%s\": got %s, want %s", c->in, vs_err_name(err),
                 vs_err_name(c->code));
    if (c->code == VS_OK)
        cr_assert_eq(v, c->want, "\"%s\": got %lld, want %lld", c->in, (long long)v,
                     (long long)c->want);
}
