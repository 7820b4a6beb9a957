/* fuzz_weights: hami.io/device-scoring-weights. Accepted weights are never negative and never
 * all zero; abort() if they are. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "annot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *val = malloc(size + 1);
    struct vs_weights w;
    struct vs_errbuf eb;

    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    if (vs_annot_parse_weights(val, &w, &eb) == VS_OK) {
        if (w.slot < 0 || w.core < 0 || w.mem < 0 || (w.slot == 0 && w.core == 0 && w.mem == 0))
            abort();
    }
    free(val);
    return 0;
}
