/* json_text: JSON text at the byte level, without a parser (jansson parses): the one value
 * skipper the ExtenderArgs and LIST-page fast paths share, a string-literal writer for the
 * annotation formatters, and hex digits. */
#include "json_text.h"

#include <string.h>

#include "buf.h"

int vs_json_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

const char *vs_json_skip(const char *p, const char *end, size_t max_depth)
{
    size_t depth = 0;
    while (p < end) {
        char c = *p++;
        if (c == '"') {
            for (;;) {
                if (p >= end)
                    return NULL;
                char d = *p++;
                if (d == '"')
                    break;
                if (d == '\\') {
                    if (p >= end)
                        return NULL;
                    p++;
                }
            }
            if (depth == 0)
                return p;
        } else if (c == '{' || c == '[') {
            if (++depth > max_depth)
                return NULL;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return NULL;
            if (--depth == 0)
                return p;
        } else if (depth == 0) {
            if (memchr(",: \t\r\n", c, 6))
                return NULL;
            while (p < end && !memchr(",}] \t\r\n", *p, 7))
                p++;
            return p;
        }
    }
    return NULL;
}

/* Length of the valid UTF-8 sequence at s (at most `avail` bytes), 0 when it is not one: the
 * shortest form only, no surrogates, nothing above U+10FFFF (what jansson accepts). */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    unsigned c = s[0], cp;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

bool vs_json_put_string(struct vs_buf *b, const char *s)
{
    vs_buf_puts(b, "\"");
    const unsigned char *c = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left > 0) {
        /* A run of printable ASCII that needs no escape goes in at once. */
        size_t run = 0;
        while (run < left && c[run] >= 0x20 && c[run] < 0x80 && c[run] != '"' && c[run] != '\\')
            run++;
        if (run) {
            vs_buf_append(b, (const char *)c, run);
            c += run;
            left -= run;
            continue;
        }
        size_t n = 1;
        switch (*c) {
        case '"':
            vs_buf_puts(b, "\\\"");
            break;
        case '\\':
            vs_buf_puts(b, "\\\\");
            break;
        case '\n':
            vs_buf_puts(b, "\\n");
            break;
        case '\r':
            vs_buf_puts(b, "\\r");
            break;
        case '\t':
            vs_buf_puts(b, "\\t");
            break;
        default:
            if (*c < 0x20) {
                vs_buf_printf(b, "\\u%04x", *c);
            } else if ((n = utf8_len(c, left)) > 0) {
                vs_buf_append(b, (const char *)c, n);
            } else {
                /* Not UTF-8: one U+FFFD per byte, as Go's encoder does, so the text stays JSON. */
                vs_buf_puts(b, "\xEF\xBF\xBD");
                n = 1;
            }
        }
        c += n;
        left -= n;
    }
    return vs_buf_puts(b, "\"");
}

bool vs_json_put_string_go(struct vs_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    vs_buf_puts(b, "\"");
    const unsigned char *c = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left > 0) {
        size_t run = 0;
        while (run < left && c[run] >= 0x20 && c[run] < 0x80 && c[run] != '"' && c[run] != '\\' &&
               c[run] != '<' && c[run] != '>' && c[run] != '&')
            run++;
        if (run) {
            vs_buf_append(b, (const char *)c, run);
            c += run;
            left -= run;
            continue;
        }
        size_t n = 1;
        switch (*c) {
        case '"':
        case '\\':
            vs_buf_printf(b, "\\%c", *c);
            break;
        case '\b':
            vs_buf_puts(b, "\\b");
            break;
        case '\f':
            vs_buf_puts(b, "\\f");
            break;
        case '\n':
            vs_buf_puts(b, "\\n");
            break;
        case '\r':
            vs_buf_puts(b, "\\r");
            break;
        case '\t':
            vs_buf_puts(b, "\\t");
            break;
        default:
            if (*c < 0x80) { /* control characters and the HTML-sensitive <, >, & */
                char e[7] = {'\\', 'u', '0', '0', hex[*c >> 4], hex[*c & 0xF], '\0'};
                vs_buf_puts(b, e);
            } else if ((n = utf8_len(c, left)) == 0) {
                vs_buf_puts(b, "\\ufffd");
                n = 1;
            } else if (n == 3 && c[0] == 0xE2 && c[1] == 0x80 && (c[2] == 0xA8 || c[2] == 0xA9)) {
                vs_buf_puts(b, c[2] == 0xA8 ? "\\u2028" : "\\u2029");
            } else {
                vs_buf_append(b, (const char *)c, n);
            }
        }
        c += n;
        left -= n;
    }
    return vs_buf_puts(b, "\"");
}
