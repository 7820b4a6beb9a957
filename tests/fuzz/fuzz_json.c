/* fuzz_json: the core's JSON reader on raw bytes (explicit length, no NUL). Every accessor is
 * run on every node of an accepted tree, and strings are re-encoded. */
#include <stdint.h>
#include <stdlib.h>

#include "buf.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const struct vs_json *v, struct vs_buf *b)
{
    int64_t i;
    const char *s;
    bool x;

    vs_json_int(v, INT64_MIN, INT64_MAX, &i, NULL);
    vs_json_str(v, &s, NULL);
    vs_json_bool(v, &x, NULL);
    if (v->type == VS_JSON_STRING)
        vs_json_put_string(b, v->str);
    for (size_t k = 0; k < v->n; k++) {
        if (v->type == VS_JSON_OBJECT) {
            vs_json_put_string(b, v->keys[k]);
            if (!vs_json_get(v, v->keys[k]))
                abort();
        }
        walk(&v->items[k], b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_json *root = NULL;
    struct vs_errbuf eb;

    if (vs_json_parse((const char *)data, size, &root, &eb) == VS_OK) {
        struct vs_buf b;
        vs_buf_init(&b);
        walk(root, &b);
        vs_buf_cleanup(&b);
        vs_json_get(root, "id");
        vs_json_free(root);
    }
    return 0;
}
