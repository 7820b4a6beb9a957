/* err: message formatting for enum vs_err. Messages are truncated, never overflow. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum vs_err vs_err_set(struct vs_errbuf *eb, enum vs_err code, const char *fmt, ...)
{
    if (eb) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(eb->msg, sizeof(eb->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

enum vs_err vs_err_prefix(struct vs_errbuf *eb, enum vs_err code, const char *fmt, ...)
{
    if (eb) {
        char prefix[VS_ERRBUF_SIZE];
        char old[VS_ERRBUF_SIZE];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        memcpy(old, eb->msg, sizeof(old));
        old[sizeof(old) - 1] = '\0';
        snprintf(eb->msg, sizeof(eb->msg), "%s: %s", prefix, old);
    }
    return code;
}

const char *vs_err_name(enum vs_err code)
{
    switch (code) {
    case VS_OK:
        return "VS_OK";
    case VS_ERR_NOMEM:
        return "VS_ERR_NOMEM";
    case VS_ERR_INVAL:
        return "VS_ERR_INVAL";
    case VS_ERR_PARSE:
        return "VS_ERR_PARSE";
    case VS_ERR_KUBE:
        return "VS_ERR_KUBE";
    case VS_ERR_CONFLICT:
        return "VS_ERR_CONFLICT";
    case VS_ERR_TIMEOUT:
        return "VS_ERR_TIMEOUT";
    case VS_ERR_TLS:
        return "VS_ERR_TLS";
    case VS_ERR_NOTFOUND:
        return "VS_ERR_NOTFOUND";
    case VS_ERR_IO:
        return "VS_ERR_IO";
    case VS_ERR_UNFIT:
        return "VS_ERR_UNFIT";
    case VS_ERR_GONE:
        return "VS_ERR_GONE";
    case VS_ERR_AUTH:
        return "VS_ERR_AUTH";
    }
    return "VS_ERR_UNKNOWN";
}
