/* gojson: annotation values read with Go's encoding/json rules, as HAMi's Go code decodes them
 * into structs, over jansson values (jansson parses; these are accessors, not a parser). Keys
 * match a field ignoring ASCII case and the last matching member wins; an integer field takes
 * only an integer literal in its type's range (`10.0` and `1e3` are errors); null reads as the
 * zero value; other types are errors naming what was found. */
#ifndef VS_GOJSON_H
#define VS_GOJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Longest annotation value parsed (a node register annotation is a few KiB). */
#define VS_GOJSON_MAX_LEN (1u << 20)

/* Parses len bytes of text (no NUL needed): any JSON value, nothing but whitespace after it,
 * no NUL in strings. A key repeated in one object keeps its last value (jansson without
 * JSON_REJECT_DUPLICATES, like Go). On success *out is a new reference (json_decref). Errors:
 * VS_ERR_PARSE with "<what> at offset <byte>", VS_ERR_NOMEM.
 * Where jansson is stricter than Go, the whole value is refused: an integer literal beyond
 * int64 anywhere (Go refuses it only in an integer field), invalid UTF-8 and lone surrogate
 * escapes (Go reads U+FFFD). Values that came through the API are valid UTF-8 already. */
enum vs_err vs_gojson_parse(const char *text, size_t len, json_t **out, struct vs_errbuf *eb);

/* The member of obj that Go would decode into a struct field named `key`: the last member whose
 * key equals `key` ignoring ASCII case. Borrowed; NULL when absent or obj is not an object.
 * (A key repeated with the same spelling counts at its first position: jansson keeps the
 * position of the first occurrence and the value of the last.) */
json_t *vs_gojson_get(const json_t *obj, const char *key);

/* Binds obj's members to the fields of a Go struct in one pass, as Go's decoder does: a member
 * goes to the field in names[0..n) whose name equals its key ignoring ASCII case, and a later
 * member for the same field replaces an earlier one; unknown keys are ignored. out[i] is then
 * the value of names[i] (borrowed) or NULL, the same as vs_gojson_get(obj, names[i]) for each
 * name, in one walk over the members. Returns false (all NULL) when obj is not an object. */
bool vs_gojson_fields(const json_t *obj, const char *const *names, size_t n, json_t **out);

/* An integer field of range [min, max]: NULL (absent) or null gives 0; an integer out of range,
 * a real (`10.0`), or any other type is an error ("expected an integer, got 10.0", "integer 5
 * out of range", "expected an integer, got string"). */
enum vs_err vs_gojson_int(const json_t *v, int64_t min, int64_t max, int64_t *out,
                          struct vs_errbuf *eb);

/* A string field: NULL/null gives "" (static); other non-strings are an error. Borrowed, valid
 * as long as v. */
enum vs_err vs_gojson_str(const json_t *v, const char **out, struct vs_errbuf *eb);

/* A bool field: NULL/null gives false; non-bools are an error. */
enum vs_err vs_gojson_bool(const json_t *v, bool *out, struct vs_errbuf *eb);

/* "null", "bool", "number", "string", "array" or "object" (Go's names for the JSON types). */
const char *vs_gojson_type(const json_t *v);

#endif
