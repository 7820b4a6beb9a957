/* quantity: parse <sign><digits>[.<digits>]<suffix> exactly, as value = N / D with 128-bit
 * integers; a value whose magnitude does not fit is reported as out of range rather than
 * approximated. */
#include "quantity.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

typedef unsigned __int128 u128;

#define U128_MAX (~(u128)0)

struct qval {
    bool neg;
    u128 num; /* |value| = num / den */
    u128 den;
    bool huge; /* magnitude beyond what we represent */
};

static bool mul_ok(u128 *a, u128 b)
{
    if (*a != 0 && b > U128_MAX / *a)
        return false;
    *a *= b;
    return true;
}

static u128 pow10u(int e)
{
    u128 r = 1;
    while (e-- > 0)
        r *= 10;
    return r;
}

static int suffix_of(const char *s, int *e10, int *b2)
{
    static const struct {
        const char *s;
        int e10, b2;
    } tab[] = {
        {"", 0, 0},   {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},
        {"T", 12, 0}, {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
        {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    };
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        if (strcmp(s, tab[i].s) == 0) {
            *e10 = tab[i].e10;
            *b2 = tab[i].b2;
            return 1;
        }
    }
    return 0;
}

static enum vs_err parse(const char *s, struct qval *q)
{
    memset(q, 0, sizeof(*q));
    q->den = 1;
    if (!s || !*s)
        return VS_ERR_PARSE;
    const char *p = s;
    if (*p == '+' || *p == '-') {
        q->neg = *p == '-';
        p++;
    }
    u128 m = 0;
    int sig = 0, frac = 0, ndig = 0, dropped = 0;
    bool dot = false;
    for (; *p; p++) {
        if (*p == '.' && !dot) {
            dot = true;
            continue;
        }
        if (!isdigit((unsigned char)*p))
            break;
        ndig++;
        if (m == 0 && *p == '0') {
            if (dot)
                frac++;
            continue;
        }
        if (sig < 38) {
            m = m * 10 + (u128)(*p - '0');
            sig++;
            if (dot)
                frac++;
        } else {
            /* Beyond 38 significant digits: keep the magnitude, remember lost precision. */
            if (!dot)
                dropped++;
            else if (*p != '0')
                q->huge = true;
        }
    }
    if (ndig == 0)
        return VS_ERR_PARSE;
    int e10 = 0, b2 = 0;
    if (!suffix_of(p, &e10, &b2)) {
        if ((*p != 'e' && *p != 'E') || !p[1])
            return VS_ERR_PARSE;
        const char *e = p + 1;
        bool eneg = false;
        if (*e == '+' || *e == '-') {
            eneg = *e == '-';
            e++;
        }
        if (!*e)
            return VS_ERR_PARSE;
        int ev = 0;
        for (; *e; e++) {
            if (!isdigit((unsigned char)*e))
                return VS_ERR_PARSE;
            if (ev < 10000)
                ev = ev * 10 + (*e - '0');
        }
        e10 = eneg ? -ev : ev;
    }
    e10 += dropped - frac;
    if (m == 0) {
        q->num = 0;
        return VS_OK;
    }
    u128 num = m;
    for (int i = 0; i < b2; i++)
        if (!mul_ok(&num, 2))
            q->huge = true;
    if (e10 > 0) {
        if (e10 > 38 || !mul_ok(&num, pow10u(e10)))
            q->huge = true;
    } else if (e10 < 0) {
        if (-e10 > 38)
            q->huge = true; /* a vanishingly small non-zero value */
        else
            q->den = pow10u(-e10);
    }
    q->num = num;
    return VS_OK;
}

enum vs_err vs_quantity_int(const char *s, int64_t *out)
{
    struct qval q;
    enum vs_err err = parse(s, &q);
    if (err)
        return err;
    if (q.huge || q.num % q.den != 0)
        return VS_ERR_INVAL;
    u128 v = q.num / q.den;
    if (q.neg) {
        if (v > (u128)INT64_MAX + 1)
            return VS_ERR_INVAL;
        *out = v == (u128)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (u128)INT64_MAX)
            return VS_ERR_INVAL;
        *out = (int64_t)v;
    }
    return VS_OK;
}

enum vs_err vs_quantity_ceil(const char *s, int64_t *out)
{
    struct qval q;
    enum vs_err err = parse(s, &q);
    if (err)
        return err;
    if (q.huge) {
        *out = q.neg ? INT64_MIN : INT64_MAX;
        return VS_OK;
    }
    u128 v = q.num / q.den;
    if (!q.neg && q.num % q.den)
        v++;
    if (q.neg)
        *out = v > (u128)INT64_MAX ? INT64_MIN : -(int64_t)v;
    else
        *out = v > (u128)INT64_MAX ? INT64_MAX : (int64_t)v;
    return VS_OK;
}
