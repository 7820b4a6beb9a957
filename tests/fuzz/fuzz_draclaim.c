/* fuzz_draclaim: the ResourceClaim decoder on arbitrary bytes: no crash, no leak; a failed
 * decode leaves nothing set, a decoded claim has its metadata and every result's
 * driver/pool/device non-empty, and no negative consumed capacity. */
#include "dra.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_dra_claim c;
    struct vs_errbuf eb;
    if (vs_dra_claim_from_text((const char *)data, size, &c, &eb) != VS_OK) {
        if (c.ns || c.name || c.uid || c.res || c.n)
            abort();
        return 0;
    }
    if (!c.ns || !*c.ns || !c.name || !*c.name || !c.uid || !*c.uid)
        abort();
    for (size_t i = 0; i < c.n; i++) {
        const struct vs_dra_result *r = &c.res[i];
        if (!r->request || !r->driver || !*r->driver || !r->pool || !r->device || r->mem_mib < 0 ||
            r->cores < 0 || (!r->has_mem && r->mem_mib) || (!r->has_cores && r->cores))
            abort();
    }
    vs_dra_claim_cleanup(&c);
    return 0;
}
