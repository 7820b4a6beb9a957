/* kube_secret: capped reads of the small files secrets come from, and the wiping free. Private
 * to the kube client's files. */
#ifndef VS_KUBE_SECRET_H
#define VS_KUBE_SECRET_H

#include <stddef.h>

#include "err.h"

#define VS_KUBE_SMALL_FILE_MAX (64u << 10) /* token and namespace files */

/* Wipes and frees a secret (NULL is fine). */
void vs_kube_free_secret(char *s);

/* Reads a whole file of at most `max` bytes. Returns a new NUL-terminated buffer (free with
 * free(); wipe it first when it held a secret) or NULL with errno set (EFBIG past the cap). */
char *vs_kube_read_file(const char *path, size_t max, size_t *len_out);

/* A copy of s[0..n) without leading and trailing blanks and line ends (free with free()). */
char *vs_kube_trim_dup(const char *s, size_t n);

/* Reads a token file: trimmed, non-empty. Returns a new string (vs_kube_free_secret) or an
 * error naming the file. */
enum vs_err vs_kube_read_token_file(const char *path, char **out, struct vs_errbuf *eb);

#endif
