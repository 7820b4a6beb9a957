/* json_prune: a jansson tree of only the members a decoder reads (see json_prune.h). Objects
 * and arrays on a kept path are walked here; a kept leaf goes to jansson (or, when it is a
 * plain string, straight to json_stringn_nocheck); everything else is stepped over with
 * vs_json_skip. */
#include "json_prune.h"

#include <string.h>

#include "json_text.h"

/* jansson's own nesting limit (JSON_PARSER_MAX_DEPTH). */
#define MAX_DEPTH 2048

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* True when [s, e) is printable ASCII without quote or backslash: a string literal with
 * these bytes between its quotes means exactly them. */
static bool plain(const char *s, const char *e)
{
    for (; s < e; s++)
        if (*s < 0x20 || *s >= 0x7f || *s == '\\' || *s == '"')
            return false;
    return true;
}

/* The value whose text is [p, q), decoded as jansson decodes it. */
static json_t *load_whole(const char *p, const char *q)
{
    if (q - p >= 2 && *p == '"' && q[-1] == '"' && plain(p + 1, q - 1))
        return json_stringn_nocheck(p + 1, (size_t)(q - p - 2));
    json_error_t je;
    return json_loadb(p, (size_t)(q - p), JSON_DECODE_ANY, &je);
}

static const struct vs_json_keep *find_keep(const struct vs_json_keep *keep, const char *k,
                                            size_t klen)
{
    for (; keep->key; keep++)
        if (strlen(keep->key) == klen && memcmp(keep->key, k, klen) == 0)
            return keep;
    return NULL;
}

static json_t *load_value(const char **pp, const char *end, const struct vs_json_keep *m,
                          size_t depth);

/* The object at *pp ('{'), with only keep's members (all of them, each whole, when keep is
 * NULL); *pp moves past it. */
static json_t *load_object(const char **pp, const char *end, const struct vs_json_keep *keep,
                           size_t depth)
{
    json_t *obj = json_object();
    if (!obj)
        return NULL;
    const char *p = skip_ws(*pp + 1, end);
    if (p < end && *p == '}') {
        *pp = p + 1;
        return obj;
    }
    for (;;) {
        if (p >= end || *p != '"')
            goto fail;
        const char *kq = vs_json_skip(p, end, 0);
        if (!kq)
            goto fail;
        const char *k = p + 1;
        size_t klen = (size_t)(kq - 1 - k);
        json_t *decoded = NULL; /* the key, when it has escapes or bytes beyond ASCII */
        if (!plain(k, kq - 1)) {
            json_error_t je;
            decoded = json_loadb(p, (size_t)(kq - p), JSON_DECODE_ANY, &je);
            if (!decoded || !json_is_string(decoded)) {
                json_decref(decoded);
                goto fail;
            }
            k = json_string_value(decoded);
            klen = json_string_length(decoded);
        }
        static const struct vs_json_keep whole = {.key = ""};
        const struct vs_json_keep *m = keep ? find_keep(keep, k, klen) : &whole;
        p = skip_ws(kq, end);
        if (p < end && *p == ':')
            p = skip_ws(p + 1, end);
        else
            m = NULL, p = NULL;
        json_t *v = m && p ? load_value(&p, end, m, depth + 1) : NULL;
        int set = v ? json_object_setn_new_nocheck(obj, k, klen, v) : -1;
        json_decref(decoded);
        if (m && set != 0)
            goto fail;
        if (!m && (!p || !(p = vs_json_skip(p, end, MAX_DEPTH))))
            goto fail;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}') {
            *pp = p + 1;
            return obj;
        }
        goto fail;
    }
fail:
    json_decref(obj);
    return NULL;
}

/* The array at *pp ('['), each object element with only keep's members. */
static json_t *load_array(const char **pp, const char *end, const struct vs_json_keep *m,
                          size_t depth)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    const struct vs_json_keep elem = {.key = m->key, .members = m->members, .all = m->all};
    const char *p = skip_ws(*pp + 1, end);
    if (p < end && *p == ']') {
        *pp = p + 1;
        return arr;
    }
    for (;;) {
        json_t *v = load_value(&p, end, &elem, depth + 1);
        if (!v || json_array_append_new(arr, v) != 0)
            goto fail;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == ']') {
            *pp = p + 1;
            return arr;
        }
        goto fail;
    }
fail:
    json_decref(arr);
    return NULL;
}

static json_t *load_value(const char **pp, const char *end, const struct vs_json_keep *m,
                          size_t depth)
{
    const char *p = *pp;
    if (depth > MAX_DEPTH || p >= end)
        return NULL;
    if ((m->members || m->all) && *p == '{')
        return load_object(pp, end, m->members, depth);
    if (m->members && m->each && *p == '[')
        return load_array(pp, end, m, depth);
    const char *q = vs_json_skip(p, end, MAX_DEPTH);
    if (!q)
        return NULL;
    json_t *v = load_whole(p, q);
    if (v)
        *pp = q;
    return v;
}

json_t *vs_json_load_pruned(const char *text, size_t len, const struct vs_json_keep *keep)
{
    const char *end = text + len, *p = skip_ws(text, end);
    if (p >= end || *p != '{')
        return NULL;
    json_t *obj = load_object(&p, end, keep, 1);
    if (obj && skip_ws(p, end) != end) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}
