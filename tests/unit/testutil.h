/* testutil: small file helpers shared by the unit tests (built into every test binary).
 * Paths are relative to the project root, the tests' working directory. */
#ifndef VS_TESTUTIL_H
#define VS_TESTUTIL_H

#include <stddef.h>

/* Returns the whole file as a new NUL-terminated buffer (free with free()), its length in *len
 * when len is non-NULL; NULL when the file cannot be read. */
char *vs_test_read_file(const char *path, size_t *len);

/* Writes content to a new mkstemp file under /tmp. Returns its path (free with free(); the
 * caller unlinks the file), NULL on failure. */
char *vs_test_write_tmp(const char *content);

#endif
