/* test_flags: the table-driven flag parser and --help printer (flags.h). Every case checks the
 * exact values parsed, the exact error line, or the exact help text. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"

struct opts {
    const char *name;
    bool on;
    long long n, ms;
    double share;
};

#define O(f) offsetof(struct opts, f)
static const struct vs_flag table[] = {
    {.name = "name", .alias = "nm", .type = VS_FLAG_STR, .off = O(name), .help = "a name"},
    {.name = "on", .type = VS_FLAG_BOOL, .off = O(on), .help = "a switch"},
    {.name = "n", .type = VS_FLAG_INT, .off = O(n), .help = "a count", .min = 1, .max = 10},
    {.name = "wait", .type = VS_FLAG_DUR, .off = O(ms), .help = "a time", .min = 0, .max = 7200000},
    {.name = "share",
     .type = VS_FLAG_DOUBLE,
     .off = O(share),
     .help = "a share",
     .min = 0,
     .max = 1},
    {.name = "help", .alias = "h", .type = VS_FLAG_HELP, .help = "print this help and exit"},
    {.name = "dcu-", .type = VS_FLAG_IGNORED, .help = "ignored"},
    {.name = "logtostderr", .type = VS_FLAG_IGNORED, .help = "ignored"},
};
#define N (sizeof(table) / sizeof(table[0]))

struct run {
    enum vs_flags_result r;
    struct opts o;
    char err[512];
    char warned[128];
    int warnings;
};

static void on_warn(void *ctx, const char *flag)
{
    struct run *r = ctx;
    snprintf(r->warned, sizeof(r->warned), "%s", flag);
    r->warnings++;
}

/* Parses the NULL-terminated argument list over defaults name "x", n 5, ms 1000. */
static struct run parse(const char *first, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 32; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    struct run r = {.o = {.name = "x", .n = 5, .ms = 1000}};
    char *buf = NULL;
    size_t len = 0;
    FILE *err = open_memstream(&buf, &len);
    cr_assert_not_null(err);
    r.r = vs_flags_parse(table, N, argc, argv, &r.o, "prog", err, on_warn, &r);
    fclose(err);
    snprintf(r.err, sizeof(r.err), "%s", buf);
    free(buf);
    return r;
}

Test(flags, values_of_every_type_in_both_spellings)
{
    struct run r = parse("--name=a", "-on", "--n", "7", "-wait=1h30m", "--share", "0.25", NULL);
    cr_assert_eq(r.r, VS_FLAGS_OK, "%s", r.err);
    cr_assert_str_eq(r.o.name, "a");
    cr_assert(r.o.on);
    cr_assert_eq(r.o.n, 7);
    cr_assert_eq(r.o.ms, 5400000);
    cr_assert_float_eq(r.o.share, 0.25, 1e-12);
    cr_assert_str_eq(r.err, "");
    r = parse("--nm", "b", "--on=false", NULL);
    cr_assert_eq(r.r, VS_FLAGS_OK);
    cr_assert_str_eq(r.o.name, "b");
    cr_assert_not(r.o.on);
}

Test(flags, go_boolean_spellings)
{
    const char *yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    const char *no[] = {"0", "f", "F", "false", "FALSE", "False"};
    char a[32];
    for (int i = 0; i < 6; i++) {
        snprintf(a, sizeof(a), "--on=%s", yes[i]);
        struct run r = parse(a, NULL);
        cr_assert(r.r == VS_FLAGS_OK && r.o.on, "%s", a);
        snprintf(a, sizeof(a), "--on=%s", no[i]);
        r = parse("--on", a, NULL);
        cr_assert(r.r == VS_FLAGS_OK && !r.o.on, "%s", a);
    }
    struct run r = parse("--on=yes", NULL);
    cr_assert_eq(r.r, VS_FLAGS_BAD);
    cr_assert_str_eq(r.err, "prog: invalid value \"yes\" for flag --on: want true or false\n");
}

/* Each value outside its row's range, or not of its type, is refused with the flag, the value
 * and what is wanted; the options keep their previous value. */
Test(flags, out_of_range_and_malformed_values_name_flag_and_value)
{
    static const struct {
        const char *flag, *val, *err;
    } cases[] = {
        {"--n", "0", "prog: invalid value \"0\" for flag --n: want a whole number from 1 to 10\n"},
        {"--n", "-5",
         "prog: invalid value \"-5\" for flag --n: want a whole number from 1 to 10\n"},
        {"--n", "11",
         "prog: invalid value \"11\" for flag --n: want a whole number from 1 to 10\n"},
        {"--n", "2.5",
         "prog: invalid value \"2.5\" for flag --n: want a whole number from 1 to 10\n"},
        {"--n", "", "prog: invalid value \"\" for flag --n: want a whole number from 1 to 10\n"},
        {"--n", "99999999999999999999",
         "prog: invalid value \"99999999999999999999\" for flag --n: want a whole number from 1 "
         "to 10\n"},
        {"--share", "-0.1",
         "prog: invalid value \"-0.1\" for flag --share: want a number from 0 to 1\n"},
        {"--share", "nan",
         "prog: invalid value \"nan\" for flag --share: want a number from 0 to 1\n"},
        {"--share", "inf",
         "prog: invalid value \"inf\" for flag --share: want a number from 0 to 1\n"},
        {"--share", "1x",
         "prog: invalid value \"1x\" for flag --share: want a number from 0 to 1\n"},
        {"--wait", "-5s",
         "prog: invalid value \"-5s\" for flag --wait: want a duration from 0 to 2h, such as "
         "300ms, 28s, 5m or 1h30m\n"},
        {"--wait", "5",
         "prog: invalid value \"5\" for flag --wait: want a duration from 0 to 2h, such as "
         "300ms, 28s, 5m or 1h30m\n"},
        {"--wait", "3h",
         "prog: invalid value \"3h\" for flag --wait: want a duration from 0 to 2h, such as "
         "300ms, 28s, 5m or 1h30m\n"},
        {"--wait", "infs",
         "prog: invalid value \"infs\" for flag --wait: want a duration from 0 to 2h, such as "
         "300ms, 28s, 5m or 1h30m\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct run r = parse(cases[i].flag, cases[i].val, NULL);
        cr_assert_eq(r.r, VS_FLAGS_BAD, "%s %s", cases[i].flag, cases[i].val);
        cr_assert_str_eq(r.err, cases[i].err);
        cr_assert_eq(r.o.n, 5);
        cr_assert_eq(r.o.ms, 1000);
    }
}

Test(flags, unknown_missing_and_stray_arguments)
{
    struct run r = parse("--nope=1", NULL);
    cr_assert_eq(r.r, VS_FLAGS_BAD);
    cr_assert_str_eq(r.err, "prog: unknown flag --nope\n");
    r = parse("--n", NULL);
    cr_assert_str_eq(r.err, "prog: flag --n needs a value\n");
    r = parse("stray", NULL);
    cr_assert_str_eq(r.err, "prog: unexpected argument \"stray\"\n");
    r = parse("--", NULL);
    cr_assert_str_eq(r.err, "prog: unexpected argument \"--\"\n");
    r = parse("---n", "3", NULL);
    cr_assert_str_eq(r.err, "prog: unexpected argument \"---n\"\n");
    /* A prefix row needs something after the prefix; "dcu" alone is no flag of the table. */
    r = parse("--dcu-", NULL);
    cr_assert_str_eq(r.err, "prog: unknown flag --dcu-\n");
}

Test(flags, help_stops_the_parse)
{
    struct run r = parse("--n", "3", "-h", "--nope", NULL);
    cr_assert_eq(r.r, VS_FLAGS_HELP);
    cr_assert_eq(r.o.n, 3);
    r = parse("--help", NULL);
    cr_assert_eq(r.r, VS_FLAGS_HELP);
    cr_assert_str_eq(r.err, "");
}

Test(flags, ignored_flags_warn_once_and_take_their_value)
{
    struct run r = parse("--dcu-split", "4", "--logtostderr", "--n", "2", "--dcu-x=1", NULL);
    cr_assert_eq(r.r, VS_FLAGS_OK, "%s", r.err);
    cr_assert_eq(r.warnings, 1);
    cr_assert_str_eq(r.warned, "--dcu-split");
    cr_assert_eq(r.o.n, 2);
    /* An exact row is not a prefix. */
    r = parse("--logtostderrx", NULL);
    cr_assert_str_eq(r.err, "prog: unknown flag --logtostderrx\n");
}

Test(flags, durations_parse_and_format)
{
    static const struct {
        const char *text;
        long long ms;
        const char *shown;
    } ok[] = {{"0", 0, "0"},
              {"300ms", 300, "300ms"},
              {"28s", 28000, "28s"},
              {"5m", 300000, "5m"},
              {"1h30m", 5400000, "1h30m"},
              {"1.5s", 1500, "1500ms"},
              {"2h0m5s", 7205000, "2h5s"},
              {"1500us", 1, "1ms"}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        long long ms = -1;
        cr_assert_eq(vs_flags_parse_duration_ms(ok[i].text, &ms), 0, "%s", ok[i].text);
        cr_assert_eq(ms, ok[i].ms, "%s", ok[i].text);
        char buf[32];
        vs_flags_format_duration(ms, buf, sizeof(buf));
        cr_assert_str_eq(buf, ok[i].shown);
    }
    const char *bad[] = {"", "5", "-1s", "+1s", "1x", "s", "1e3s", "nan", "inf", "0x10s", "1s-"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        long long ms = 42;
        cr_assert_eq(vs_flags_parse_duration_ms(bad[i], &ms), -1, "%s", bad[i]);
        cr_assert_eq(ms, 42);
    }
}

Test(flags, help_lists_every_row_with_default_and_range)
{
    struct opts o = {.name = "x", .n = 5, .ms = 1000, .share = 0.5};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vs_flags_print(f, table, N, &o);
    fclose(f);
    cr_assert_str_eq(buf, "  --name, --nm string  a name (default x)\n"
                          "  --on                 a switch\n"
                          "  --n int              a count (default 5; 1 to 10)\n"
                          "  --wait duration      a time (default 1s; 0 to 2h)\n"
                          "  --share float        a share (default 0.5; 0 to 1)\n"
                          "  -h, --help           print this help and exit\n"
                          "  --dcu-*              ignored\n"
                          "  --logtostderr        ignored\n");
    free(buf);
}
