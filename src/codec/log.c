/* log: key=value or JSON lines on one fd. Settings are written once before threads start and
 * only read afterwards, so they need no lock; each line is emitted with a single write(2). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum vs_log_level g_min = VS_LOG_INFO;
static bool g_json;
static int g_fd = 2;

void vs_log_setup(enum vs_log_level min, bool json, int fd)
{
    g_min = min;
    g_json = json;
    g_fd = fd;
}

bool vs_log_enabled(enum vs_log_level level)
{
    return level >= g_min;
}

const char *vs_log_quote(const char *s, char *out, unsigned len)
{
    unsigned o = 0;
    if (len < 3) {
        if (len)
            out[0] = '\0';
        return out;
    }
    out[o++] = '"';
    for (; s && *s && o + 3 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (c < 0x20) {
            out[o++] = ' ';
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

static const char *level_name(enum vs_log_level l)
{
    switch (l) {
    case VS_LOG_DEBUG:
        return "debug";
    case VS_LOG_INFO:
        return "info";
    case VS_LOG_WARN:
        return "warn";
    case VS_LOG_ERROR:
        return "error";
    }
    return "info";
}

void vs_log_write(enum vs_log_level level, const char *event, const char *fmt, ...)
{
    char ts[40], kv[2048], line[2600];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kv, sizeof(kv), fmt, ap);
    va_end(ap);
    int n;
    if (g_json) {
        char q[2200];
        n = snprintf(line, sizeof(line),
                     "{\"ts\":\"%s\",\"level\":\"%s\",\"event\":\"%s\",\"msg\":%s}\n", ts,
                     level_name(level), event, vs_log_quote(kv, q, sizeof(q)));
    } else {
        n = snprintf(line, sizeof(line), "ts=%s level=%s event=%s%s%s\n", ts, level_name(level),
                     event, kv[0] ? " " : "", kv);
    }
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(g_fd, line, (size_t)n);
    (void)w;
}
