/* fuzz_loader: feeds arbitrary bytes to the cluster-file loader (JSON and YAML paths, codec),
 * then runs what simulate derives from the objects: each pod's request (podres) and
 * kube-scheduler's filters and score (kfilter) on each node of a model built from them.
 * Any crash, leak or sanitizer report is a finding; return values are irrelevant. */
#include <stddef.h>
#include <stdint.h>

#include "kfilter.h"
#include "loader.h"
#include "model.h"
#include "podres.h"

static void discard(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_objset set = {0};
    struct vs_errbuf eb;

    vs_loader_load_buf((const char *)data, size, "fuzz", &set, discard, NULL, &eb);
    struct vs_model *m = vs_model_new(NULL);
    for (size_t i = 0; m && i < set.n_nodes && i < 64; i++)
        vs_model_upsert_node(m, &set.nodes[i], &eb);
    for (size_t i = 0; m && i < set.n_pods && i < 64; i++) {
        struct vs_podres r;
        vs_model_account_pod(m, &set.pods[i], &eb); /* pods without a uid are skipped */
        if (vs_podres_compute(&set.pods[i], &r, &eb) != VS_OK)
            continue;
        for (size_t k = 0; k < set.n_nodes && k < 64; k++) {
            char buf[VS_KF_REASON_SIZE];
            const struct vs_node *n = vs_model_node(m, set.nodes[k].name);
            vs_kfilter_node(&set.pods[i], &r, &set.nodes[k], n, NULL, buf);
            if (n)
                vs_kfilter_least_allocated(n, &r);
        }
    }
    vs_model_free(m);
    vs_objset_cleanup(&set);
    return 0;
}
