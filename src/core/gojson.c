/* gojson: Go's encoding/json field rules over jansson values (see gojson.h). Values are small;
 * lookups scan an object's members in their order, as Go's decoder assigns them. */
#include "gojson.h"

#include <stdlib.h>
#include <strings.h>

enum vs_err vs_gojson_parse(const char *text, size_t len, json_t **out, struct vs_errbuf *eb)
{
    json_error_t je;
    *out = NULL;
    if (len > VS_GOJSON_MAX_LEN)
        return vs_err_set(eb, VS_ERR_PARSE, "value longer than %u bytes", VS_GOJSON_MAX_LEN);
    /* JSON_DECODE_ANY: "null" is a value here. No JSON_REJECT_DUPLICATES: the last one wins. */
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &je);
    if (!v) {
        if (json_error_code(&je) == json_error_out_of_memory)
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        if (json_error_code(&je) == json_error_null_character) /* jansson names its flag */
            return vs_err_set(eb, VS_ERR_PARSE, "NUL character in a string at offset %d",
                              je.position);
        return vs_err_set(eb, VS_ERR_PARSE, "%s at offset %d", je.text, je.position);
    }
    *out = v;
    return VS_OK;
}

json_t *vs_gojson_get(const json_t *obj, const char *key)
{
    json_t *found = NULL, *v;
    const char *k;
    if (!json_is_object(obj))
        return NULL;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (strcasecmp(k, key) == 0)
            found = v;
    }
    return found;
}

bool vs_gojson_fields(const json_t *obj, const char *const *names, size_t n, json_t **out)
{
    json_t *v;
    const char *k;
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (!json_is_object(obj))
        return false;
    json_object_foreach((json_t *)obj, k, v)
    {
        /* The first letter rules out most names before strcasecmp runs. */
        int k0 = k[0] | 0x20;
        for (size_t i = 0; i < n; i++) {
            if ((names[i][0] | 0x20) == k0 && strcasecmp(k, names[i]) == 0) {
                out[i] = v;
                break;
            }
        }
    }
    return true;
}

const char *vs_gojson_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "bool";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

enum vs_err vs_gojson_int(const json_t *v, int64_t min, int64_t max, int64_t *out,
                          struct vs_errbuf *eb)
{
    *out = 0;
    if (!v || json_is_null(v))
        return VS_OK;
    if (json_is_real(v)) {
        /* jansson keeps no literal; its encoding of a real always shows a '.' or an exponent. */
        char *lit = json_dumps(v, JSON_ENCODE_ANY);
        enum vs_err rc =
            vs_err_set(eb, VS_ERR_PARSE, "expected an integer, got %s", lit ? lit : "a real");
        free(lit);
        return rc;
    }
    if (!json_is_integer(v))
        return vs_err_set(eb, VS_ERR_PARSE, "expected an integer, got %s", vs_gojson_type(v));
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return vs_err_set(eb, VS_ERR_PARSE, "integer %lld out of range", (long long)x);
    *out = x;
    return VS_OK;
}

enum vs_err vs_gojson_str(const json_t *v, const char **out, struct vs_errbuf *eb)
{
    *out = "";
    if (!v || json_is_null(v))
        return VS_OK;
    if (!json_is_string(v))
        return vs_err_set(eb, VS_ERR_PARSE, "expected a string, got %s", vs_gojson_type(v));
    *out = json_string_value(v);
    return VS_OK;
}

enum vs_err vs_gojson_bool(const json_t *v, bool *out, struct vs_errbuf *eb)
{
    *out = false;
    if (!v || json_is_null(v))
        return VS_OK;
    if (!json_is_boolean(v))
        return vs_err_set(eb, VS_ERR_PARSE, "expected a bool, got %s", vs_gojson_type(v));
    *out = json_is_true(v);
    return VS_OK;
}
