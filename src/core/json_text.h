/* json_text: JSON text at the byte level, without a parser (jansson parses; gojson.h reads
 * annotation values with Go's rules): skipping one value for the fast-path scanners (ExtenderArgs
 * in extargs.c, LIST pages in kube_list.c), writing a string literal, hex digits. */
#ifndef VS_JSON_TEXT_H
#define VS_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* The value of one hex digit (either case), -1 for anything else. */
int vs_json_hexval(char c);

/* The end of the JSON value that starts at p (no leading whitespace), without decoding or
 * validating it: strings are skipped (escapes respected), brackets counted, a scalar runs to the
 * next delimiter. NULL when the input ends first, the value does not start like one (a stray
 * delimiter or whitespace), or objects/arrays nest deeper than max_depth. For scanners that
 * decode only some parts of a large document and leave the rest to a decoder. */
const char *vs_json_skip(const char *p, const char *end, size_t max_depth);

/* Appends s to buf as a JSON string literal with quotes (escapes ", \, control chars; a byte
 * that does not start valid UTF-8 becomes U+FFFD, as in Go). Returns false on allocation
 * failure. */
struct vs_buf;
bool vs_json_put_string(struct vs_buf *buf, const char *s);
/* The same as Go's json.Marshal writes a string: also <, > and & as \u003c, \u003e, \u0026,
 * U+2028 and U+2029 escaped, \b and \f in short form, and each byte that does not start valid
 * UTF-8 as the escape \ufffd. For values HAMi marshals into annotations. */
bool vs_json_put_string_go(struct vs_buf *buf, const char *s);

#endif
