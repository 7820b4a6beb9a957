/* quantity: parse <sign><digits>[.<digits>]<suffix> exactly. The value is digits × 10^e × 2^b;
 * we only ever need floor(|value|) and whether a fraction remains, which are computed digit by
 * digit without approximation, however many digits or how large an exponent the text has. */
#include "quantity.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

typedef unsigned __int128 u128;

/* Integer parts from 10^20 on are beyond every int64 and are not tracked further. */
#define IP_CAP  ((u128)10000000000ULL * 10000000000ULL)
#define EXP_CAP 1000000000000LL

struct qval {
    bool neg;
    bool huge; /* |value| >= 10^20 */
    bool frac; /* |value| has a non-zero fractional part */
    u128 ip;   /* floor(|value|) when !huge */
};

static int suffix_of(const char *s, int *e10, int *b2)
{
    static const struct {
        const char *s;
        int e10, b2;
    } tab[] = {
        {"", 0, 0},    {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},
        {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
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

/* Exponent suffix `e<int>` / `E<int>` (Go ParseInt after the letter); saturates at EXP_CAP. */
static bool exponent_of(const char *p, int64_t *e10)
{
    if ((*p != 'e' && *p != 'E') || !p[1])
        return false;
    const char *e = p + 1;
    bool eneg = false;
    if (*e == '+' || *e == '-') {
        eneg = *e == '-';
        e++;
    }
    if (!*e)
        return false;
    int64_t ev = 0;
    for (; *e; e++) {
        if (!isdigit((unsigned char)*e))
            return false;
        if (ev < EXP_CAP)
            ev = ev * 10 + (*e - '0');
    }
    *e10 = eneg ? -ev : ev;
    return true;
}

/* Parses s as its value times 10^scale (scale 3: in thousandths, Go's MilliValue). */
static enum vs_err parse(const char *s, int scale, struct qval *q)
{
    memset(q, 0, sizeof(*q));
    if (!s || !*s)
        return VS_ERR_PARSE;
    const char *p = s;
    if (*p == '+' || *p == '-') {
        q->neg = *p == '-';
        p++;
    }
    /* The digits, ignoring the dot: d[0..n); the first na of them are before the dot. */
    const char *d = p, *dot = NULL;
    for (; *p; p++) {
        if (*p == '.' && !dot)
            dot = p;
        else if (!isdigit((unsigned char)*p))
            break;
    }
    const char *dend = p;
    int64_t n = (int64_t)(dend - d) - (dot ? 1 : 0);
    int64_t na = dot ? (int64_t)(dot - d) : n;
    if (n == 0)
        return VS_ERR_PARSE;
    int e10s = 0, b2 = 0;
    int64_t e10;
    if (suffix_of(p, &e10s, &b2))
        e10 = e10s;
    else if (!exponent_of(p, &e10))
        return VS_ERR_PARSE;
    e10 += scale;
#define DIGIT(i) (d[(i) < na ? (i) : (i) + 1] - '0')
    /* Digits [0, cut) weigh 10^0 or more; a negative cut means -cut implied zeros after the
     * point, a cut past n means cut - n implied zeros before it. */
    int64_t cut = na + e10;
    u128 ip = 0;
    for (int64_t i = 0; i < n && i < cut && !q->huge; i++) {
        ip = ip * 10 + (u128)DIGIT(i);
        q->huge = ip >= IP_CAP;
    }
    for (int64_t i = n; ip && i < cut && !q->huge; i++) {
        ip *= 10;
        q->huge = ip >= IP_CAP;
    }
    if (q->huge)
        return VS_OK;
    /* Fraction digits times 2^b2, least significant first: what carries out is the integer
     * part of fraction × 2^b2 and any non-zero digit left behind is a remaining fraction. */
    u128 mult = (u128)1 << b2, carry = 0;
    for (int64_t i = n - 1; i >= 0 && i >= cut; i--) {
        u128 t = (u128)DIGIT(i) * mult + carry;
        q->frac |= t % 10 != 0;
        carry = t / 10;
    }
    for (int64_t i = cut; i < 0 && carry; i++) {
        q->frac |= carry % 10 != 0;
        carry /= 10;
    }
#undef DIGIT
    q->ip = (ip << b2) + carry;
    q->huge = q->ip >= IP_CAP;
    return VS_OK;
}

enum vs_err vs_quantity_int(const char *s, int64_t *out)
{
    struct qval q;
    enum vs_err err = parse(s, 0, &q);
    if (err)
        return err;
    if (q.huge || q.frac)
        return VS_ERR_INVAL;
    if (q.neg) {
        if (q.ip > (u128)INT64_MAX + 1)
            return VS_ERR_INVAL;
        *out = q.ip == (u128)INT64_MAX + 1 ? INT64_MIN : -(int64_t)q.ip;
    } else {
        if (q.ip > (u128)INT64_MAX)
            return VS_ERR_INVAL;
        *out = (int64_t)q.ip;
    }
    return VS_OK;
}

static enum vs_err ceil_scaled(const char *s, int scale, int64_t *out)
{
    struct qval q;
    enum vs_err err = parse(s, scale, &q);
    if (err)
        return err;
    if (q.huge) {
        *out = q.neg ? INT64_MIN : INT64_MAX;
        return VS_OK;
    }
    /* Toward +inf: a positive fraction adds one, a negative one is dropped. */
    u128 v = q.ip + (!q.neg && q.frac);
    if (q.neg)
        *out = v > (u128)INT64_MAX ? INT64_MIN : -(int64_t)v;
    else
        *out = v > (u128)INT64_MAX ? INT64_MAX : (int64_t)v;
    return VS_OK;
}

enum vs_err vs_quantity_ceil(const char *s, int64_t *out)
{
    return ceil_scaled(s, 0, out);
}

enum vs_err vs_quantity_milli_ceil(const char *s, int64_t *out)
{
    return ceil_scaled(s, 3, out);
}
