/* flags: one table per command drives both its parser and its --help. A row names a flag, says
 * where its value goes in the command's options struct, its type, its one-line help and, for a
 * numeric flag, the range it accepts; the default shown is the value the options struct holds
 * when parsing starts (or the row's own text). Adding a flag is adding a row. */
#ifndef VS_FLAGS_H
#define VS_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum vs_flag_type {
    VS_FLAG_STR,     /* const char * (borrowed from argv) */
    VS_FLAG_BOOL,    /* bool; "--f" alone is true, "--f=false" */
    VS_FLAG_INT,     /* long long, whole number in [min, max] */
    VS_FLAG_DOUBLE,  /* double, finite, in [min, max] */
    VS_FLAG_DUR,     /* long long milliseconds, a Go duration ("28s", "1h30m") in [min, max] ms */
    VS_FLAG_IGNORED, /* accepted and ignored with one warning; a name ending in '-' is a prefix */
    VS_FLAG_HELP,    /* -h / --help: the parser stops and reports it */
};

struct vs_flag {
    const char *name;  /* without dashes; both "-name" and "--name" are accepted */
    const char *alias; /* another spelling, or NULL */
    enum vs_flag_type type;
    size_t off;       /* offset of the value in the options struct (unused for IGNORED and HELP) */
    const char *help; /* one line */
    const char *def;  /* the default as --help shows it; NULL: the value in the options struct */
    double min, max;  /* numeric types: the accepted range, both ends included (min < max) */
};

/* How the parse ended. */
enum vs_flags_result {
    VS_FLAGS_OK = 0,
    VS_FLAGS_HELP = 1, /* -h or --help was given: print the usage, exit 0 */
    VS_FLAGS_BAD = 2,  /* a one-line message naming the flag and the value went to err */
};

/* Parses argv[0..argc) ("--flag=value", "--flag value", one or two dashes) into opts through
 * the table. Messages start with `prog` ("vgpu-sched", "simulate"). The first ignored flag
 * met is reported through warn(ctx, flag) when warn is set (at most once per parse). */
enum vs_flags_result vs_flags_parse(const struct vs_flag *t, size_t n, int argc, char **argv,
                                    void *opts, const char *prog, FILE *err,
                                    void (*warn)(void *ctx, const char *flag), void *ctx);

/* Prints one line per row: "  --name, --alias TYPE   help (default D; from MIN to MAX)".
 * opts holds the defaults (the struct before parsing). */
void vs_flags_print(FILE *f, const struct vs_flag *t, size_t n, const void *opts);

/* Parses a Go duration ("5m", "28s", "1h30m", "300ms", "0"; no sign) into milliseconds.
 * Returns 0, or -1 when s is not one. */
int vs_flags_parse_duration_ms(const char *s, long long *out);

/* Formats milliseconds as a Go-style duration ("0", "300ms", "28s", "5m", "1h30m"). */
void vs_flags_format_duration(long long ms, char *buf, size_t size);

#endif
