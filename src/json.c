/* json: recursive-descent JSON reader with a depth cap and explicit lengths. Strings with an
 * escaped NUL (\u0000) are rejected so every decoded string is a safe C string. */
#include "json.h"

#include "buf.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct parser {
    const char *s;
    size_t len;
    size_t pos;
    struct vs_errbuf *eb;
};

static enum vs_err fail(struct parser *p, const char *what)
{
    return vs_err_set(p->eb, VS_ERR_PARSE, "%s at offset %zu", what, p->pos);
}

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static bool lit(struct parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return false;
    p->pos += n;
    return true;
}

int vs_json_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool read_hex4(struct parser *p, unsigned *out)
{
    if (p->len - p->pos < 4)
        return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = vs_json_hexval(p->s[p->pos + i]);
        if (h < 0)
            return false;
        v = v * 16 + (unsigned)h;
    }
    p->pos += 4;
    *out = v;
    return true;
}

static bool put_utf8(struct vs_buf *b, unsigned cp)
{
    char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        o[0] = (char)(0xF0 | (cp >> 18));
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return vs_buf_append(b, o, n);
}

static enum vs_err parse_string(struct parser *p, char **out)
{
    struct vs_buf b;
    vs_buf_init(&b);
    p->pos++; /* opening quote */
    for (;;) {
        if (p->pos >= p->len) {
            vs_buf_cleanup(&b);
            return fail(p, "unterminated string");
        }
        char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if ((unsigned char)c < 0x20) {
            vs_buf_cleanup(&b);
            return fail(p, "control character in string");
        }
        if (c != '\\') {
            size_t start = p->pos;
            while (p->pos < p->len && p->s[p->pos] != '"' && p->s[p->pos] != '\\' &&
                   (unsigned char)p->s[p->pos] >= 0x20)
                p->pos++;
            vs_buf_append(&b, p->s + start, p->pos - start);
            continue;
        }
        p->pos++;
        if (p->pos >= p->len) {
            vs_buf_cleanup(&b);
            return fail(p, "unterminated string");
        }
        char e = p->s[p->pos++];
        char one = 0;
        switch (e) {
        case '"':
            one = '"';
            break;
        case '\\':
            one = '\\';
            break;
        case '/':
            one = '/';
            break;
        case 'b':
            one = '\b';
            break;
        case 'f':
            one = '\f';
            break;
        case 'n':
            one = '\n';
            break;
        case 'r':
            one = '\r';
            break;
        case 't':
            one = '\t';
            break;
        case 'u': {
            unsigned cp;
            if (!read_hex4(p, &cp)) {
                vs_buf_cleanup(&b);
                return fail(p, "invalid \\u escape");
            }
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (p->len - p->pos >= 2 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
                    size_t save = p->pos;
                    p->pos += 2;
                    if (read_hex4(p, &lo) && lo >= 0xDC00 && lo < 0xE000)
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    else {
                        p->pos = save;
                        cp = 0xFFFD;
                    }
                } else {
                    cp = 0xFFFD;
                }
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                cp = 0xFFFD;
            }
            if (cp == 0) {
                vs_buf_cleanup(&b);
                return fail(p, "NUL character in string");
            }
            put_utf8(&b, cp);
            continue;
        }
        default:
            vs_buf_cleanup(&b);
            return fail(p, "invalid escape in string");
        }
        vs_buf_append(&b, &one, 1);
    }
    *out = vs_buf_steal(&b);
    return *out ? VS_OK : vs_err_set(p->eb, VS_ERR_NOMEM, "out of memory");
}

static enum vs_err parse_number(struct parser *p, struct vs_json *v)
{
    size_t start = p->pos;
    if (p->pos < p->len && p->s[p->pos] == '-')
        p->pos++;
    if (p->pos >= p->len || !isdigit((unsigned char)p->s[p->pos]))
        return fail(p, "invalid number");
    if (p->s[p->pos] == '0')
        p->pos++;
    else
        while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos]))
            p->pos++;
    if (p->pos < p->len && p->s[p->pos] == '.') {
        p->pos++;
        if (p->pos >= p->len || !isdigit((unsigned char)p->s[p->pos]))
            return fail(p, "invalid number");
        while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos]))
            p->pos++;
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
            p->pos++;
        if (p->pos >= p->len || !isdigit((unsigned char)p->s[p->pos]))
            return fail(p, "invalid number");
        while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos]))
            p->pos++;
    }
    v->type = VS_JSON_NUMBER;
    v->str = strndup(p->s + start, p->pos - start);
    return v->str ? VS_OK : vs_err_set(p->eb, VS_ERR_NOMEM, "out of memory");
}

static enum vs_err parse_value(struct parser *p, struct vs_json *v, int depth);

/* Appends one element to a growing array/object; keys may be NULL for arrays. */
static enum vs_err push(struct parser *p, struct vs_json *v, size_t *cap, char *key,
                        struct vs_json **slot)
{
    if (v->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        struct vs_json *items = realloc(v->items, nc * sizeof(*items));
        if (!items) {
            free(key);
            return vs_err_set(p->eb, VS_ERR_NOMEM, "out of memory");
        }
        v->items = items;
        if (v->type == VS_JSON_OBJECT) {
            char **keys = realloc(v->keys, nc * sizeof(*keys));
            if (!keys) {
                free(key);
                return vs_err_set(p->eb, VS_ERR_NOMEM, "out of memory");
            }
            v->keys = keys;
        }
        *cap = nc;
    }
    memset(&v->items[v->n], 0, sizeof(v->items[0]));
    if (v->type == VS_JSON_OBJECT)
        v->keys[v->n] = key;
    *slot = &v->items[v->n];
    v->n++;
    return VS_OK;
}

static enum vs_err parse_container(struct parser *p, struct vs_json *v, int depth, bool object)
{
    char close = object ? '}' : ']';
    size_t cap = 0;
    v->type = object ? VS_JSON_OBJECT : VS_JSON_ARRAY;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return VS_OK;
    }
    for (;;) {
        char *key = NULL;
        struct vs_json *slot = NULL;
        enum vs_err err;
        skip_ws(p);
        if (object) {
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return fail(p, "expected object key");
            if ((err = parse_string(p, &key)))
                return err;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                free(key);
                return fail(p, "expected ':'");
            }
            p->pos++;
        }
        if ((err = push(p, v, &cap, key, &slot)))
            return err;
        if ((err = parse_value(p, slot, depth + 1)))
            return err;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return VS_OK;
        }
        return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static enum vs_err parse_value(struct parser *p, struct vs_json *v, int depth)
{
    if (depth > VS_JSON_MAX_DEPTH)
        return fail(p, "nesting too deep");
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end of input");
    char c = p->s[p->pos];
    switch (c) {
    case '{':
        return parse_container(p, v, depth, true);
    case '[':
        return parse_container(p, v, depth, false);
    case '"':
        v->type = VS_JSON_STRING;
        return parse_string(p, &v->str);
    case 't':
        if (!lit(p, "true"))
            return fail(p, "invalid literal");
        v->type = VS_JSON_BOOL;
        v->b = true;
        return VS_OK;
    case 'f':
        if (!lit(p, "false"))
            return fail(p, "invalid literal");
        v->type = VS_JSON_BOOL;
        return VS_OK;
    case 'n':
        if (!lit(p, "null"))
            return fail(p, "invalid literal");
        v->type = VS_JSON_NULL;
        return VS_OK;
    default:
        if (c == '-' || isdigit((unsigned char)c))
            return parse_number(p, v);
        return fail(p, "unexpected character");
    }
}

static void json_clear(struct vs_json *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        json_clear(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

void vs_json_free(struct vs_json *v)
{
    if (!v)
        return;
    json_clear(v);
    free(v);
}

enum vs_err vs_json_parse(const char *text, size_t len, struct vs_json **out, struct vs_errbuf *eb)
{
    *out = NULL;
    if (len > VS_JSON_MAX_LEN)
        return vs_err_set(eb, VS_ERR_PARSE, "value longer than %u bytes", VS_JSON_MAX_LEN);
    struct parser p = {.s = text, .len = len, .pos = 0, .eb = eb};
    struct vs_json *v = calloc(1, sizeof(*v));
    if (!v)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    enum vs_err err = parse_value(&p, v, 0);
    if (err == VS_OK) {
        skip_ws(&p);
        if (p.pos != p.len)
            err = fail(&p, "trailing characters");
    }
    if (err) {
        vs_json_free(v);
        return err;
    }
    *out = v;
    return VS_OK;
}

const struct vs_json *vs_json_get(const struct vs_json *obj, const char *key)
{
    const struct vs_json *found = NULL;
    if (!obj || obj->type != VS_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcasecmp(obj->keys[i], key) == 0)
            found = &obj->items[i];
    return found;
}

static const char *type_name(enum vs_json_type t)
{
    switch (t) {
    case VS_JSON_NULL:
        return "null";
    case VS_JSON_BOOL:
        return "bool";
    case VS_JSON_NUMBER:
        return "number";
    case VS_JSON_STRING:
        return "string";
    case VS_JSON_ARRAY:
        return "array";
    case VS_JSON_OBJECT:
        return "object";
    }
    return "?";
}

enum vs_err vs_json_int(const struct vs_json *v, int64_t min, int64_t max, int64_t *out,
                        struct vs_errbuf *eb)
{
    *out = 0;
    if (!v || v->type == VS_JSON_NULL)
        return VS_OK;
    if (v->type != VS_JSON_NUMBER)
        return vs_err_set(eb, VS_ERR_PARSE, "expected an integer, got %s", type_name(v->type));
    if (strpbrk(v->str, ".eE"))
        return vs_err_set(eb, VS_ERR_PARSE, "expected an integer, got %s", v->str);
    errno = 0;
    char *end;
    long long x = strtoll(v->str, &end, 10);
    if (errno || *end || x < min || x > max)
        return vs_err_set(eb, VS_ERR_PARSE, "integer %s out of range", v->str);
    *out = x;
    return VS_OK;
}

enum vs_err vs_json_str(const struct vs_json *v, const char **out, struct vs_errbuf *eb)
{
    *out = "";
    if (!v || v->type == VS_JSON_NULL)
        return VS_OK;
    if (v->type != VS_JSON_STRING)
        return vs_err_set(eb, VS_ERR_PARSE, "expected a string, got %s", type_name(v->type));
    *out = v->str;
    return VS_OK;
}

enum vs_err vs_json_bool(const struct vs_json *v, bool *out, struct vs_errbuf *eb)
{
    *out = false;
    if (!v || v->type == VS_JSON_NULL)
        return VS_OK;
    if (v->type != VS_JSON_BOOL)
        return vs_err_set(eb, VS_ERR_PARSE, "expected a bool, got %s", type_name(v->type));
    *out = v->b;
    return VS_OK;
}

const char *vs_json_skip(const char *p, const char *end, size_t max_depth)
{
    size_t depth = 0;
    while (p < end) {
        char c = *p++;
        if (c == '"') {
            for (;;) {
                if (p >= end)
                    return NULL;
                char d = *p++;
                if (d == '"')
                    break;
                if (d == '\\') {
                    if (p >= end)
                        return NULL;
                    p++;
                }
            }
            if (depth == 0)
                return p;
        } else if (c == '{' || c == '[') {
            if (++depth > max_depth)
                return NULL;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return NULL;
            if (--depth == 0)
                return p;
        } else if (depth == 0) {
            if (memchr(",: \t\r\n", c, 6))
                return NULL;
            while (p < end && !memchr(",}] \t\r\n", *p, 7))
                p++;
            return p;
        }
    }
    return NULL;
}

bool vs_json_put_string(struct vs_buf *b, const char *s)
{
    vs_buf_puts(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        /* A run of characters that need no escape goes in at once. */
        size_t run = 0;
        while (c[run] >= 0x20 && c[run] != '"' && c[run] != '\\')
            run++;
        if (run) {
            vs_buf_append(b, (const char *)c, run);
            c += run - 1;
            continue;
        }
        switch (*c) {
        case '"':
            vs_buf_puts(b, "\\\"");
            break;
        case '\\':
            vs_buf_puts(b, "\\\\");
            break;
        case '\n':
            vs_buf_puts(b, "\\n");
            break;
        case '\r':
            vs_buf_puts(b, "\\r");
            break;
        case '\t':
            vs_buf_puts(b, "\\t");
            break;
        default:
            if (*c < 0x20)
                vs_buf_printf(b, "\\u%04x", *c);
            else
                vs_buf_append(b, (const char *)c, 1);
        }
    }
    return vs_buf_puts(b, "\"");
}
