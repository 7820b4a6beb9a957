/* fuzz_gojson: annotation values on raw bytes (explicit length, no NUL) through the Go-rules
 * helpers over jansson. Every accessor runs on every value of an accepted document; every key
 * must be found again by the case-insensitive lookup and the one-pass binder; strings are
 * re-encoded with the formatters' writer and must parse back to the same string. abort() on a
 * violation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "gojson.h"
#include "json_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_string(const char *s)
{
    struct vs_buf b;
    json_t *back = NULL;
    vs_buf_init(&b);
    if (vs_json_put_string(&b, s) && b.data) {
        if (vs_gojson_parse(b.data, b.len, &back, NULL) != VS_OK || !json_is_string(back) ||
            strcmp(json_string_value(back), s) != 0)
            abort();
        json_decref(back);
    }
    vs_buf_cleanup(&b);
}

static void walk(const json_t *v)
{
    int64_t i;
    const char *s;
    bool x;

    vs_gojson_int(v, INT64_MIN, INT64_MAX, &i, NULL);
    vs_gojson_str(v, &s, NULL);
    vs_gojson_bool(v, &x, NULL);
    if (json_is_string(v))
        check_string(json_string_value(v));
    if (json_is_object(v)) {
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m)
        {
            check_string(k);
            /* One-pass binding agrees with the lookup, for this key and for "id". */
            const char *names[2] = {k, "id"};
            json_t *f[2];
            if (!vs_gojson_get(v, k) || !vs_gojson_fields(v, names, 2, f) ||
                f[0] != vs_gojson_get(v, k) ||
                (strcasecmp(k, "id") != 0 && f[1] != vs_gojson_get(v, "id")))
                abort();
            walk(m);
        }
    } else if (json_is_array(v)) {
        for (size_t n = 0; n < json_array_size(v); n++)
            walk(json_array_get(v, n));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *root = NULL;
    struct vs_errbuf eb;

    if (vs_gojson_parse((const char *)data, size, &root, &eb) == VS_OK) {
        walk(root);
        vs_gojson_get(root, "id");
        json_decref(root);
    }
    return 0;
}
