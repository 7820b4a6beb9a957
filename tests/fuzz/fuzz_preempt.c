/* fuzz_preempt: kube-scheduler's ExtenderPreemptionArgs decoder on arbitrary bytes: no crash, no
 * leak; a successful decode yields a pod with a name and, per node, non-empty victim UIDs. */
#include "extargs.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_preempt_args pa;
    struct vs_errbuf eb;
    if (vs_extargs_preempt((const char *)data, size, &pa, &eb) == VS_OK) {
        if (!pa.pod.name || !*pa.pod.name)
            abort();
        for (size_t i = 0; i < pa.n_nodes; i++) {
            if (!pa.nodes[i].node)
                abort();
            for (size_t k = 0; k < pa.nodes[i].n_uids; k++)
                if (!pa.nodes[i].uids[k] || !*pa.nodes[i].uids[k])
                    abort();
        }
    }
    vs_preempt_args_cleanup(&pa);
    return 0;
}
