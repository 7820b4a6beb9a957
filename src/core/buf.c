/* buf: growable string buffer. Growth doubles; an allocation failure is sticky (b->oom). */
#include "buf.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vs_buf_init(struct vs_buf *b)
{
    memset(b, 0, sizeof(*b));
}

void vs_buf_cleanup(struct vs_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

static bool reserve(struct vs_buf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

bool vs_buf_append(struct vs_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return false;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

bool vs_buf_puts(struct vs_buf *b, const char *s)
{
    return vs_buf_append(b, s, strlen(s));
}

bool vs_buf_printf(struct vs_buf *b, const char *fmt, ...)
{
    /* Format into the spare capacity first: most appends fit, and measuring first formatted
     * everything twice. */
    if (!reserve(b, 63))
        return false;
    size_t room = b->cap - b->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->data + b->len, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->data[b->len] = '\0';
        return false;
    }
    if ((size_t)n >= room) {
        if (!reserve(b, (size_t)n))
            return false;
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
    return true;
}

char *vs_buf_steal(struct vs_buf *b)
{
    if (b->oom) {
        vs_buf_cleanup(b);
        return NULL;
    }
    if (!b->data && !reserve(b, 0))
        return NULL;
    if (b->len == 0)
        b->data[0] = '\0';
    char *d = b->data;
    memset(b, 0, sizeof(*b));
    return d;
}

bool vs_buf_put_fixed2(struct vs_buf *b, double v)
{
    /* When v is a float's value (node scores are floats) below 1e13, v * 100 is exact in a
     * double (a 24-bit mantissa times 7 bits) and fits the integer; printf rounds the exact
     * decimal value half to even, as nearbyint() does in the default rounding mode. Anything
     * else (NaN, infinities, huge values, doubles with more bits) is left to printf. */
    double a = fabs(v), h = a * 100.0;
    if (!(a < 1e13) || (double)(float)a != a)
        return vs_buf_printf(b, "%.2f", v);
    unsigned long long n = (unsigned long long)nearbyint(h);
    char tmp[40], *e = tmp + sizeof(tmp), *p = e;
    *--p = (char)('0' + n % 10);
    *--p = (char)('0' + n / 10 % 10);
    *--p = '.';
    n /= 100;
    do
        *--p = (char)('0' + n % 10);
    while (n /= 10);
    if (signbit(v))
        *--p = '-';
    return vs_buf_append(b, p, (size_t)(e - p));
}

void vs_buf_truncate(struct vs_buf *b, size_t len)
{
    if (len >= b->len)
        return;
    b->len = len;
    b->data[len] = '\0';
}

bool vs_grow_one(void **arr, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    if (nc > SIZE_MAX / elem)
        return false;
    void *g = realloc(*arr, nc * elem);
    if (!g)
        return false;
    *arr = g;
    *cap = nc;
    return true;
}
