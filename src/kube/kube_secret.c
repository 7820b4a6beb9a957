/* kube_secret: small files the client reads secrets from (token, service-account namespace),
 * read with a cap, and the wiping free every secret string goes through. The bottom of the kube
 * client: it includes no other kube header. */
#include "kube_secret.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vs_kube_free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

char *vs_kube_trim_dup(const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        n--;
    return strndup(s, n);
}

char *vs_kube_read_file(const char *path, size_t max, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (cap - len < 4096) {
            size_t ncap = cap ? cap * 2 : 8192;
            if (ncap > max + 4096)
                ncap = max + 4096;
            char *g = realloc(buf, ncap + 1);
            if (!g) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = g;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len > max) {
            explicit_bzero(buf, len);
            free(buf);
            fclose(f);
            errno = EFBIG;
            return NULL;
        }
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        errno = EIO;
        return NULL;
    }
    fclose(f);
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

enum vs_err vs_kube_read_token_file(const char *path, char **out, struct vs_errbuf *eb)
{
    size_t n;
    char *raw = vs_kube_read_file(path, VS_KUBE_SMALL_FILE_MAX, &n);
    if (!raw)
        return vs_err_set(eb, VS_ERR_AUTH, "token file %s: %s", path, strerror(errno));
    bool nul = memchr(raw, '\0', n) != NULL;
    char *tok = vs_kube_trim_dup(raw, n);
    explicit_bzero(raw, n);
    free(raw);
    if (!tok)
        return vs_err_set(eb, VS_ERR_NOMEM, "token file %s: out of memory", path);
    if (!*tok || nul || strpbrk(tok, "\r\n")) {
        bool empty = !*tok;
        vs_kube_free_secret(tok);
        return vs_err_set(eb, VS_ERR_AUTH, "token file %s: %s", path,
                          empty ? "empty" : "not a single-line token");
    }
    *out = tok;
    return VS_OK;
}
