/* log: one line per event, `ts=... level=... event=... key=value ...` (or one JSON object per
 * line with --log-format json). The level is checked before arguments are formatted. Never log
 * tokens, keys or whole objects at info. Thread-safe (one write(2) per line). */
#ifndef VS_LOG_H
#define VS_LOG_H

#include <stdbool.h>

enum vs_log_level { VS_LOG_DEBUG = 0, VS_LOG_INFO, VS_LOG_WARN, VS_LOG_ERROR };

/* Process-wide settings, set once by main before threads start. */
void vs_log_setup(enum vs_log_level min, bool json, int fd);
bool vs_log_enabled(enum vs_log_level level);

/* fmt produces the `key=value ...` part; values containing spaces should be quoted by the
 * caller with %q-like care (use vs_log_quote). */
void vs_log_write(enum vs_log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define vs_log(level, event, ...)                                                                  \
    do {                                                                                           \
        if (vs_log_enabled(level))                                                                 \
            vs_log_write(level, event, __VA_ARGS__);                                               \
    } while (0)

/* Writes s as a double-quoted, escaped value into out (always NUL-terminated, truncated). */
const char *vs_log_quote(const char *s, char *out, unsigned len);

#endif
