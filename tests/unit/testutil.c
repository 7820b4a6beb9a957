/* testutil: file helpers for the unit tests. Failures return NULL so the calling test can
 * assert on them with a clear message instead of crashing. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *vs_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;

    if (!f)
        return NULL;
    for (;;) {
        if (cap - n < 4096) {
            char *grown = realloc(buf, cap + 65536);
            if (!grown)
                goto fail;
            buf = grown;
            cap += 65536;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f))
        goto fail;
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
fail:
    free(buf);
    fclose(f);
    return NULL;
}

char *vs_test_write_tmp(const char *content)
{
    char *path = strdup("/tmp/vs-test-XXXXXX");
    if (!path)
        return NULL;
    int fd = mkstemp(path);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    size_t len = strlen(content), off = 0;
    while (off < len) {
        ssize_t w = write(fd, content + off, len - off);
        if (w <= 0) {
            close(fd);
            unlink(path);
            free(path);
            return NULL;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0) {
        unlink(path);
        free(path);
        return NULL;
    }
    return path;
}
