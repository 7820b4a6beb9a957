/* err: the one error enum of vgpu-sched and the buffer that carries a human message.
 * The enum only grows (append, never renumber): codes may be logged and compared by tests. */
#ifndef VS_ERR_H
#define VS_ERR_H

#include <stddef.h>

enum vs_err {
    VS_OK = 0,
    VS_ERR_NOMEM,
    VS_ERR_INVAL,
    VS_ERR_PARSE,
    VS_ERR_KUBE,
    VS_ERR_CONFLICT,
    VS_ERR_TIMEOUT,
    VS_ERR_TLS,
    VS_ERR_NOTFOUND,
    VS_ERR_IO,
    VS_ERR_UNFIT,
    VS_ERR_GONE, /* 410: resourceVersion too old, relist */
    VS_ERR_AUTH, /* 401/403 */
};

#define VS_ERRBUF_SIZE 512

/* A human-readable message for the last error. Callers may pass NULL where they do not care. */
struct vs_errbuf {
    char msg[VS_ERRBUF_SIZE];
};

/* Formats the message into eb (when non-NULL) and returns code, so callers can write
 * `return vs_err_set(eb, VS_ERR_PARSE, "...", ...);`. */
enum vs_err vs_err_set(struct vs_errbuf *eb, enum vs_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to the message already in eb (no-op when eb is NULL). Returns code. */
enum vs_err vs_err_prefix(struct vs_errbuf *eb, enum vs_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Static name of a code, e.g. "VS_ERR_PARSE". Borrowed, never freed. */
const char *vs_err_name(enum vs_err code);

#endif
