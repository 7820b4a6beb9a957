/* fuzz_mirror: the mirror-claim decoder on arbitrary JSON: no crash, no leak; a failed decode
 * leaves nothing set; a decoded mirror has a name, the pod uid of its label and non-empty
 * devices, and its create and status bodies can be built when it names a node and a card. */
#include "mirror.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    if (!j)
        return 0;
    struct vs_mirror m;
    struct vs_errbuf eb;
    if (vs_mirror_from_claim(j, &m, &eb) != VS_OK) {
        if (m.name || m.pod_uid || m.devs || m.n)
            abort();
        json_decref(j);
        return 0;
    }
    if (!m.name || !*m.name || !m.pod_uid)
        abort();
    for (size_t i = 0; i < m.n; i++)
        if (!m.devs[i].driver || !*m.devs[i].driver || !m.devs[i].device || !*m.devs[i].device)
            abort();
    if (m.node && m.card) {
        json_t *c = vs_mirror_claim_json(&m, "ns");
        json_t *s = vs_mirror_status_json(&m);
        if (!c || !s)
            abort();
        json_decref(c);
        json_decref(s);
    }
    if (!vs_mirror_same(&m, &m) && m.allocated)
        abort();
    vs_mirror_cleanup(&m);
    json_decref(j);
    return 0;
}
