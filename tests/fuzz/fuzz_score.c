/* fuzz_score: hami.io/node-nvidia-score. Whatever parses must format to a value that parses
 * again to the same entries and formats identically; abort() if not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "annot.h"
#include "gojson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct vs_topo *topo)
{
    struct vs_topo again;
    struct vs_errbuf eb;
    char *s = vs_annot_format_score(topo);

    if (!s)
        abort();
    /* Past VS_GOJSON_MAX_LEN a formatted value cannot be re-read. */
    if (strlen(s) <= VS_GOJSON_MAX_LEN) {
        if (vs_annot_parse_score(s, &again, &eb) != VS_OK || again.n != topo->n)
            abort();
        char *s2 = vs_annot_format_score(&again);
        if (!s2 || strcmp(s, s2) != 0)
            abort();
        free(s2);
        vs_topo_cleanup(&again);
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *val = malloc(size + 1);
    struct vs_topo topo;
    struct vs_errbuf eb;

    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    if (vs_annot_parse_score(val, &topo, &eb) == VS_OK) {
        check_round_trip(&topo);
        vs_topo_cleanup(&topo);
    }
    free(val);
    return 0;
}
