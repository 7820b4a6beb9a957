/* flags: the table-driven command-line parser and --help printer shared by `serve` and
 * `simulate` (flags.h). Every value is checked against its row: a number outside the row's
 * range, a duration with a sign or without a unit, a boolean that is not Go's spelling of one,
 * is an error naming the flag and the value. */
#include "flags.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int vs_flags_parse_duration_ms(const char *s, long long *out)
{
    if (!s || !*s)
        return -1;
    if (strcmp(s, "0") == 0) {
        *out = 0;
        return 0;
    }
    double total = 0;
    const char *p = s;
    while (*p) {
        /* Digits and a dot only: strtod would also take a sign, "inf", "nan", hex, exponents. */
        if (!((*p >= '0' && *p <= '9') || *p == '.'))
            return -1;
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !isfinite(v))
            return -1;
        for (const char *q = p; q < end; q++) /* no exponent, no hex */
            if (!((*q >= '0' && *q <= '9') || *q == '.'))
                return -1;
        p = end;
        double mul;
        if (strncmp(p, "ms", 2) == 0) {
            mul = 1;
            p += 2;
        } else if (strncmp(p, "us", 2) == 0 || strncmp(p, "\xc2\xb5s", 3) == 0) {
            mul = 0.001;
            p += *p == 'u' ? 2 : 3;
        } else if (strncmp(p, "ns", 2) == 0) {
            mul = 0.000001;
            p += 2;
        } else if (*p == 'h') {
            mul = 3600000;
            p++;
        } else if (*p == 'm') {
            mul = 60000;
            p++;
        } else if (*p == 's') {
            mul = 1000;
            p++;
        } else {
            return -1;
        }
        total += v * mul;
        if (!isfinite(total) || total > 9007199254740992.0) /* 2^53 ms: 285,000 years */
            return -1;
    }
    *out = (long long)total;
    return 0;
}

void vs_flags_format_duration(long long ms, char *buf, size_t size)
{
    if (ms == 0) {
        snprintf(buf, size, "0");
        return;
    }
    if (ms % 1000 != 0 || ms < 1000) {
        snprintf(buf, size, "%lldms", ms);
        return;
    }
    long long s = ms / 1000, h = s / 3600, m = s % 3600 / 60;
    s %= 60;
    size_t n = 0;
    buf[0] = '\0';
    if (h && n < size)
        n += (size_t)snprintf(buf + n, size - n, "%lldh", h);
    if (m && n < size)
        n += (size_t)snprintf(buf + n, size - n, "%lldm", m);
    if (s && n < size)
        snprintf(buf + n, size - n, "%llds", s);
}

static bool is_prefix_row(const struct vs_flag *f)
{
    size_t l = strlen(f->name);
    return f->type == VS_FLAG_IGNORED && l > 0 && f->name[l - 1] == '-';
}

static bool name_is(const char *name, const char *a, size_t nl)
{
    return name && strlen(name) == nl && strncmp(name, a, nl) == 0;
}

static const struct vs_flag *find(const struct vs_flag *t, size_t n, const char *a, size_t nl)
{
    for (size_t k = 0; k < n; k++)
        if (!is_prefix_row(&t[k]) && (name_is(t[k].name, a, nl) || name_is(t[k].alias, a, nl)))
            return &t[k];
    for (size_t k = 0; k < n; k++)
        if (is_prefix_row(&t[k]) && nl > strlen(t[k].name) &&
            strncmp(a, t[k].name, strlen(t[k].name)) == 0)
            return &t[k];
    return NULL;
}

/* A number as the help and the errors print it: whole numbers without an exponent. */
static void fmt_num(char *buf, size_t size, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, size, "%.0f", v);
    else
        snprintf(buf, size, "%g", v);
}

static void fmt_range(char *buf, size_t size, const struct vs_flag *f)
{
    char lo[32], hi[32];
    if (f->type == VS_FLAG_DUR) {
        vs_flags_format_duration((long long)f->min, lo, sizeof(lo));
        vs_flags_format_duration((long long)f->max, hi, sizeof(hi));
    } else {
        fmt_num(lo, sizeof(lo), f->min);
        fmt_num(hi, sizeof(hi), f->max);
    }
    snprintf(buf, size, "%s to %s", lo, hi);
}

static int bad_value(const struct vs_flag *f, const char *val, const char *prog, FILE *err)
{
    char range[96];
    fmt_range(range, sizeof(range), f);
    switch (f->type) {
    case VS_FLAG_BOOL:
        fprintf(err, "%s: invalid value \"%s\" for flag --%s: want true or false\n", prog, val,
                f->name);
        break;
    case VS_FLAG_INT:
        fprintf(err, "%s: invalid value \"%s\" for flag --%s: want a whole number from %s\n", prog,
                val, f->name, range);
        break;
    case VS_FLAG_DOUBLE:
        fprintf(err, "%s: invalid value \"%s\" for flag --%s: want a number from %s\n", prog, val,
                f->name, range);
        break;
    case VS_FLAG_DUR:
        fprintf(err,
                "%s: invalid value \"%s\" for flag --%s: want a duration from %s, such as 300ms, "
                "28s, 5m or 1h30m\n",
                prog, val, f->name, range);
        break;
    default:
        fprintf(err, "%s: invalid value \"%s\" for flag --%s\n", prog, val, f->name);
        break;
    }
    return VS_FLAGS_BAD;
}

static int set_value(const struct vs_flag *f, const char *val, void *opts, const char *prog,
                     FILE *err)
{
    void *dst = (char *)opts + f->off;
    char *end;
    switch (f->type) {
    case VS_FLAG_STR:
        *(const char **)dst = val;
        return 0;
    case VS_FLAG_BOOL: {
        /* Go's strconv.ParseBool. */
        static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
        static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
        if (!val) {
            *(bool *)dst = true;
            return 0;
        }
        for (size_t i = 0; i < 6; i++) {
            if (strcmp(val, yes[i]) == 0) {
                *(bool *)dst = true;
                return 0;
            }
            if (strcmp(val, no[i]) == 0) {
                *(bool *)dst = false;
                return 0;
            }
        }
        return bad_value(f, val, prog, err);
    }
    case VS_FLAG_INT: {
        errno = 0;
        long long v = strtoll(val, &end, 10);
        if (errno || *end || end == val || (double)v < f->min || (double)v > f->max)
            return bad_value(f, val, prog, err);
        *(long long *)dst = v;
        return 0;
    }
    case VS_FLAG_DOUBLE: {
        errno = 0;
        double v = strtod(val, &end);
        if (errno || *end || end == val || !isfinite(v) || v < f->min || v > f->max)
            return bad_value(f, val, prog, err);
        *(double *)dst = v;
        return 0;
    }
    case VS_FLAG_DUR: {
        long long v;
        if (vs_flags_parse_duration_ms(val, &v) || (double)v < f->min || (double)v > f->max)
            return bad_value(f, val, prog, err);
        *(long long *)dst = v;
        return 0;
    }
    case VS_FLAG_IGNORED:
    case VS_FLAG_HELP:
        break;
    }
    return 0;
}

enum vs_flags_result vs_flags_parse(const struct vs_flag *t, size_t n, int argc, char **argv,
                                    void *opts, const char *prog, FILE *err,
                                    void (*warn)(void *ctx, const char *flag), void *ctx)
{
    bool warned = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *a = arg[0] == '-' ? arg + (arg[1] == '-' ? 2 : 1) : arg;
        if (a == arg || !*a || *a == '-' || *a == '=') {
            fprintf(err, "%s: unexpected argument \"%s\"\n", prog, arg);
            return VS_FLAGS_BAD;
        }
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        const struct vs_flag *f = find(t, n, a, nl);
        if (!f) {
            fprintf(err, "%s: unknown flag --%.*s\n", prog, (int)nl, a);
            return VS_FLAGS_BAD;
        }
        if (f->type == VS_FLAG_HELP)
            return VS_FLAGS_HELP;
        if (f->type == VS_FLAG_IGNORED) {
            if (!warned && warn) {
                char name[128];
                snprintf(name, sizeof(name), "--%.*s", (int)(nl < 100 ? nl : 100), a);
                warn(ctx, name);
            }
            warned = true;
            /* A separate value ("--dcu-foo bar") belongs to the ignored flag. */
            if (!eq && i + 1 < argc && argv[i + 1][0] != '-')
                i++;
            continue;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val && f->type != VS_FLAG_BOOL) {
            if (i + 1 >= argc) {
                fprintf(err, "%s: flag --%s needs a value\n", prog, f->name);
                return VS_FLAGS_BAD;
            }
            val = argv[++i];
        }
        if (set_value(f, val, opts, prog, err))
            return VS_FLAGS_BAD;
    }
    return VS_FLAGS_OK;
}

/* The left column: "--name, --alias TYPE", "--prefix-*", "-h, --help". */
static void left_column(const struct vs_flag *f, char *buf, size_t size)
{
    static const char *const tname[] = {
        [VS_FLAG_STR] = " string",   [VS_FLAG_BOOL] = "",         [VS_FLAG_INT] = " int",
        [VS_FLAG_DOUBLE] = " float", [VS_FLAG_DUR] = " duration", [VS_FLAG_IGNORED] = "",
        [VS_FLAG_HELP] = ""};
    if (f->type == VS_FLAG_HELP) {
        snprintf(buf, size, "  -%s, --%s", f->alias ? f->alias : "h", f->name);
        return;
    }
    if (is_prefix_row(f)) {
        snprintf(buf, size, "  --%s*", f->name);
        return;
    }
    snprintf(buf, size, "  --%s%s%s%s", f->name, f->alias ? ", --" : "", f->alias ? f->alias : "",
             tname[f->type]);
}

/* " (default D; from MIN to MAX)", or "" when there is nothing to say. */
static void tail(const struct vs_flag *f, const void *opts, char *buf, size_t size)
{
    char def[160] = "", range[96] = "";
    const void *src = (const char *)opts + f->off;
    if (f->def) {
        snprintf(def, sizeof(def), "%s", f->def);
    } else {
        switch (f->type) {
        case VS_FLAG_STR: {
            const char *s = *(const char *const *)src;
            if (s && *s)
                snprintf(def, sizeof(def), "%s", s);
            break;
        }
        case VS_FLAG_BOOL:
            if (*(const bool *)src)
                snprintf(def, sizeof(def), "true");
            break;
        case VS_FLAG_INT:
            snprintf(def, sizeof(def), "%lld", *(const long long *)src);
            break;
        case VS_FLAG_DOUBLE:
            fmt_num(def, sizeof(def), *(const double *)src);
            break;
        case VS_FLAG_DUR:
            vs_flags_format_duration(*(const long long *)src, def, sizeof(def));
            break;
        case VS_FLAG_IGNORED:
        case VS_FLAG_HELP:
            break;
        }
    }
    if (f->type == VS_FLAG_INT || f->type == VS_FLAG_DOUBLE || f->type == VS_FLAG_DUR)
        fmt_range(range, sizeof(range), f);
    if (*def && *range)
        snprintf(buf, size, " (default %s; %s)", def, range);
    else if (*def)
        snprintf(buf, size, " (default %s)", def);
    else if (*range)
        snprintf(buf, size, " (%s)", range);
    else
        buf[0] = '\0';
}

void vs_flags_print(FILE *out, const struct vs_flag *t, size_t n, const void *opts)
{
    enum { MAX_WIDTH = 44 };
    size_t width = 0;
    char left[160], rest[320];
    for (size_t k = 0; k < n; k++) {
        left_column(&t[k], left, sizeof(left));
        size_t l = strlen(left);
        if (l <= MAX_WIDTH && l > width)
            width = l;
    }
    for (size_t k = 0; k < n; k++) {
        left_column(&t[k], left, sizeof(left));
        tail(&t[k], opts, rest, sizeof(rest));
        size_t l = strlen(left);
        fprintf(out, "%s%*s  %s%s\n", left, (int)(l < width ? width - l : 0), "", t[k].help, rest);
    }
}
