/* json: a small strict JSON reader for annotation values inside the core (the core may not use
 * jansson). Values are small (a node register annotation is a few KiB); depth and size are
 * capped. Numbers keep their literal text so integer fields can be checked the way Go's
 * encoding/json checks them (`10.0` is not an int). */
#ifndef VS_JSON_H
#define VS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum vs_json_type {
    VS_JSON_NULL,
    VS_JSON_BOOL,
    VS_JSON_NUMBER,
    VS_JSON_STRING,
    VS_JSON_ARRAY,
    VS_JSON_OBJECT,
};

struct vs_json {
    enum vs_json_type type;
    bool b;
    char *str;             /* STRING: decoded UTF-8; NUMBER: the literal text */
    size_t n;              /* ARRAY/OBJECT: element count */
    struct vs_json *items; /* ARRAY/OBJECT: elements (object values) */
    char **keys;           /* OBJECT: keys, parallel to items */
};

#define VS_JSON_MAX_DEPTH 32
#define VS_JSON_MAX_LEN   (1u << 20)

/* Parses len bytes of text (no NUL needed). On success *out is a new tree, free with
 * vs_json_free(). The message names the byte offset of the problem. */
enum vs_err vs_json_parse(const char *text, size_t len, struct vs_json **out, struct vs_errbuf *eb);
void vs_json_free(struct vs_json *v);

/* Object member lookup with Go's encoding/json rules: the last member whose key equals `key`
 * ignoring ASCII case. Borrowed; NULL when absent or when obj is not an object. */
const struct vs_json *vs_json_get(const struct vs_json *obj, const char *key);

/* Reads an integer field as Go would into an int type of range [min, max]: null or absent
 * (v == NULL) gives 0; a number literal with a fraction or exponent, or out of range, or any
 * other type is an error. */
enum vs_err vs_json_int(const struct vs_json *v, int64_t min, int64_t max, int64_t *out,
                        struct vs_errbuf *eb);
/* String field: NULL/null gives "" (borrowed static); other non-strings are an error.
 * Borrowed, valid as long as the tree. */
enum vs_err vs_json_str(const struct vs_json *v, const char **out, struct vs_errbuf *eb);
/* Bool field: NULL/null gives false; non-bools are an error. */
enum vs_err vs_json_bool(const struct vs_json *v, bool *out, struct vs_errbuf *eb);

/* The value of one hex digit (either case), -1 for anything else. */
int vs_json_hexval(char c);

/* The end of the JSON value that starts at p (no leading whitespace), without decoding or
 * validating it: strings are skipped (escapes respected), brackets counted, a scalar runs to the
 * next delimiter. NULL when the input ends first, the value does not start like one (a stray
 * delimiter or whitespace), or objects/arrays nest deeper than max_depth. For scanners that
 * decode only some parts of a large document and leave the rest to a decoder. */
const char *vs_json_skip(const char *p, const char *end, size_t max_depth);

/* Appends s to buf as a JSON string literal with quotes (escapes ", \, control chars).
 * Returns false on allocation failure. */
struct vs_buf;
bool vs_json_put_string(struct vs_buf *buf, const char *s);

#endif
