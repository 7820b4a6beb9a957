/* jsonpatch: test-only helpers shared by test_webhook.c and fuzz_webhook.c: a strict base64
 * decoder and a strict RFC 6902 applier (add, replace, remove) with RFC 6901 pointers, so tests
 * can prove that every patch the webhook emits applies to the object it was computed for.
 * Header-only (static functions) because the two users are linked into different binaries. */
#ifndef VS_TEST_JSONPATCH_H
#define VS_TEST_JSONPATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tjp_b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decodes padded standard base64. Returns a new NUL-terminated buffer (free with free()) and its
 * length in *n; NULL when s is not canonical padded base64. */
static char *tjp_b64_decode(const char *s, size_t *n)
{
    size_t len = strlen(s), o = 0;
    if (len % 4 != 0)
        return NULL;
    char *out = malloc(len / 4 * 3 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        size_t pad = 0;
        for (int k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
            } else if (pad || (v[k] = tjp_b64_value(s[i + k])) < 0) {
                free(out);
                return NULL;
            }
        }
        unsigned long w = (unsigned long)v[0] << 18 | (unsigned long)v[1] << 12 |
                          (unsigned long)v[2] << 6 | (unsigned long)v[3];
        out[o++] = (char)(w >> 16);
        if (pad < 2)
            out[o++] = (char)(w >> 8 & 0xff);
        if (pad < 1)
            out[o++] = (char)(w & 0xff);
    }
    out[o] = '\0';
    *n = o;
    return out;
}

/* Unescapes one RFC 6901 token of length n into out (size >= n+1). False on a bad escape. */
static bool tjp_token(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '~') {
            out[o++] = s[i];
            continue;
        }
        if (i + 1 >= n || (s[i + 1] != '0' && s[i + 1] != '1'))
            return false;
        out[o++] = s[i + 1] == '0' ? '~' : '/';
        i++;
    }
    out[o] = '\0';
    return true;
}

/* An array index token: digits without a leading zero. -1 when it is not one. */
static long tjp_index(const char *t)
{
    if (!*t || (t[0] == '0' && t[1]) || strspn(t, "0123456789") != strlen(t) || strlen(t) > 9)
        return -1;
    return strtol(t, NULL, 10);
}

/* Applies patch (an array of ops) to doc in place; values are copied, so the patch is never
 * changed by later ops. Returns 0, or -1 with a message in err. */
static int tjp_apply(json_t *doc, const json_t *patch, char *err, size_t errlen)
{
    size_t i;
    json_t *op;
    if (!json_is_array(patch)) {
        snprintf(err, errlen, "patch is not an array");
        return -1;
    }
    json_array_foreach((json_t *)patch, i, op)
    {
        const char *kind = json_string_value(json_object_get(op, "op"));
        const char *path = json_string_value(json_object_get(op, "path"));
        json_t *value = json_object_get(op, "value");
        if (!kind || !path || path[0] != '/') {
            snprintf(err, errlen, "op %zu: missing op or path, or path not absolute", i);
            return -1;
        }
        bool add = strcmp(kind, "add") == 0, replace = strcmp(kind, "replace") == 0;
        bool remove = strcmp(kind, "remove") == 0;
        if (!add && !replace && !remove) {
            snprintf(err, errlen, "op %zu: unsupported op %s", i, kind);
            return -1;
        }
        if ((add || replace) && !value) {
            snprintf(err, errlen, "op %zu: no value", i);
            return -1;
        }
        /* Walk to the parent of the last token. */
        json_t *cur = doc;
        const char *p = path + 1;
        char *tok = malloc(strlen(path) + 1);
        if (!tok)
            return -1;
        for (;;) {
            const char *slash = strchr(p, '/');
            size_t n = slash ? (size_t)(slash - p) : strlen(p);
            if (!tjp_token(p, n, tok)) {
                snprintf(err, errlen, "op %zu: bad escape in %s", i, path);
                free(tok);
                return -1;
            }
            if (!slash)
                break;
            json_t *next = NULL;
            if (json_is_object(cur))
                next = json_object_get(cur, tok);
            else if (json_is_array(cur) && tjp_index(tok) >= 0)
                next = json_array_get(cur, (size_t)tjp_index(tok));
            if (!next) {
                snprintf(err, errlen, "op %zu: %s: parent does not exist", i, path);
                free(tok);
                return -1;
            }
            cur = next;
            p = slash + 1;
        }
        int rc = -1;
        if (json_is_object(cur)) {
            bool exists = json_object_get(cur, tok) != NULL;
            if ((replace || remove) && !exists)
                snprintf(err, errlen, "op %zu: %s: member does not exist", i, path);
            else if (remove)
                rc = json_object_del(cur, tok);
            else
                rc = json_object_set_new(cur, tok, json_deep_copy(value));
        } else if (json_is_array(cur)) {
            long idx = strcmp(tok, "-") == 0 && add ? (long)json_array_size(cur) : tjp_index(tok);
            size_t size = json_array_size(cur);
            if (idx < 0 || (size_t)idx > size || ((replace || remove) && (size_t)idx == size))
                snprintf(err, errlen, "op %zu: %s: bad array index", i, path);
            else if (add)
                rc = json_array_insert_new(cur, (size_t)idx, json_deep_copy(value));
            else if (replace)
                rc = json_array_set_new(cur, (size_t)idx, json_deep_copy(value));
            else
                rc = json_array_remove(cur, (size_t)idx);
        } else {
            snprintf(err, errlen, "op %zu: %s: parent is not a container", i, path);
        }
        free(tok);
        if (rc != 0)
            return -1;
    }
    return 0;
}

#endif
