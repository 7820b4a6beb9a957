/* fuzz_whatif: the dashboard's outside input on arbitrary bytes — a what-if request body
 * (JSON with a shape or a pod's JSON/YAML text) and an If-None-Match header: no crash, no
 * leak; a decoded request holds 1..VS_WHATIF_MAX_PODS pods, each named, with a UID, unplaced. */
#include "dashboard.h"
#include "devcfg.h"
#include "whatif.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct vs_devcfg cfg;
    static int init;
    if (!init) {
        vs_devcfg_init(&cfg);
        init = 1;
    }
    struct vs_whatif_req r;
    struct vs_errbuf eb;
    if (vs_whatif_parse((const char *)data, size, &cfg, &r, &eb) == VS_OK) {
        if (r.pods.n_pods == 0 || r.pods.n_pods > VS_WHATIF_MAX_PODS)
            abort();
        for (size_t i = 0; i < r.pods.n_pods; i++) {
            const struct vs_pod *p = &r.pods.pods[i];
            if (!p->name || !p->uid || !*p->uid || !p->ns || !*p->ns || !p->node_name ||
                *p->node_name)
                abort();
        }
        vs_whatif_req_cleanup(&r);
    } else if (!eb.msg[0]) {
        abort(); /* an error always says what was wrong */
    }
    char *h = malloc(size + 1);
    if (!h)
        return 0;
    memcpy(h, data, size);
    h[size] = '\0';
    /* "*" matches anything; otherwise a match needs the tag itself in the header */
    bool m = vs_dash_etag_match(h, "\"v1.s.7\"");
    if (m && !strchr(h, '*') && !strstr(h, "\"v1.s.7\""))
        abort();
    free(h);
    return 0;
}
