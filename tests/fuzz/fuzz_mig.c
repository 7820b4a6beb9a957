/* fuzz_mig: hami.io/vgpu-mig-allocations. Whatever parses (and so passed validation) must format
 * to a value that parses again to the same entries and formats identically; abort() if not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "annot.h"
#include "gojson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct vs_mig_allocs *m)
{
    struct vs_mig_allocs again;
    struct vs_errbuf eb;
    char *s = vs_annot_format_mig(m);

    if (!s)
        abort();
    /* Past VS_GOJSON_MAX_LEN a formatted value cannot be re-read. */
    if (strlen(s) <= VS_GOJSON_MAX_LEN) {
        if (vs_annot_parse_mig(s, &again, &eb) != VS_OK || again.n != m->n)
            abort();
        char *s2 = vs_annot_format_mig(&again);
        if (!s2 || strcmp(s, s2) != 0)
            abort();
        free(s2);
        vs_mig_allocs_cleanup(&again);
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *val = malloc(size + 1);
    struct vs_mig_allocs m;
    struct vs_errbuf eb;

    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    if (vs_annot_parse_mig(val, &m, &eb) == VS_OK) {
        check_round_trip(&m);
        vs_mig_allocs_cleanup(&m);
    }
    free(val);
    return 0;
}
