/* fuzz_flags: the command-line parser (flags.h) over serve's own flag table. The input is split
 * at NUL bytes into arguments. A parse that succeeds must leave every numeric value inside its
 * row's range; a duration that parses must format and parse back to itself; abort() if not. */
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ARGS = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull && !(devnull = fopen("/dev/null", "w")))
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGS];
    int argc = 0;
    for (size_t i = 0; i <= size && argc < MAX_ARGS;) {
        argv[argc++] = text + i;
        i += strlen(text + i) + 1;
    }
    size_t n;
    const struct vs_flag *t = vs_serve_flags(&n);
    size_t end = 0;
    for (size_t k = 0; k < n; k++)
        if (t[k].off + sizeof(long long) > end)
            end = t[k].off + sizeof(long long);
    alignas(16) unsigned char opts[1024] = {0};
    if (end > sizeof(opts))
        abort();
    enum vs_flags_result r = vs_flags_parse(t, n, argc, argv, opts, "fuzz", devnull, NULL, NULL);
    for (size_t k = 0; r == VS_FLAGS_OK && k < n; k++) {
        const unsigned char *p = opts + t[k].off;
        double v;
        if (t[k].type == VS_FLAG_INT || t[k].type == VS_FLAG_DUR)
            v = (double)*(const long long *)p;
        else if (t[k].type == VS_FLAG_DOUBLE)
            v = *(const double *)p;
        else
            continue;
        if (v != 0 && (v < t[k].min || v > t[k].max)) /* 0: the flag was not given */
            abort();
    }
    long long ms;
    if (vs_flags_parse_duration_ms(text, &ms) == 0) {
        char buf[64];
        long long back;
        vs_flags_format_duration(ms, buf, sizeof(buf));
        if (vs_flags_parse_duration_ms(buf, &back) || back != ms)
            abort();
    }
    free(text);
    return 0;
}
