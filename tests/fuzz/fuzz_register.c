/* fuzz_register: hami.io/node-nvidia-register (JSON and legacy colon forms). Whatever parses must
 * format to JSON that parses again to the same cards and formats identically; abort() if not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "annot.h"
#include "gojson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct vs_register *reg)
{
    struct vs_register again;
    struct vs_errbuf eb;
    char *s = vs_annot_format_register(reg);

    if (!s)
        abort();
    /* Past VS_GOJSON_MAX_LEN a formatted value cannot be re-read. */
    if (strlen(s) <= VS_GOJSON_MAX_LEN) {
        if (vs_annot_parse_register(s, &again, &eb) != VS_OK || again.n != reg->n)
            abort();
        char *s2 = vs_annot_format_register(&again);
        if (!s2 || strcmp(s, s2) != 0)
            abort();
        free(s2);
        vs_register_cleanup(&again);
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *val = malloc(size + 1);
    struct vs_register reg;
    struct vs_errbuf eb;

    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    if (vs_annot_parse_register(val, &reg, &eb) == VS_OK) {
        check_round_trip(&reg);
        vs_register_cleanup(&reg);
    }
    free(val);
    return 0;
}
