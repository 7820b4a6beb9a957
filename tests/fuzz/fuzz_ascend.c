/* fuzz_ascend: what the Ascend backends read from outside. The first byte chooses: odd, the rest
 * is a device-config.yaml read with --enable-ascend (the vnpus section's chips and templates);
 * even, the rest is the register annotation of a node carrying 910B3 and 910C cards (custominfo
 * NetworkID, indices for the 910C modules), on which multi-NPU, 910C and hami-core pods are
 * filtered and their annotations written. Any crash, leak or sanitizer report is a finding. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "devcfg_yaml.h"
#include "device.h"
#include "model.h"
#include "sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void add_pod(struct vs_pod *p, const char *name, const char *anno, const char *const *res,
                    size_t n)
{
    memset(p, 0, sizeof(*p));
    p->ns = strdup("default");
    p->name = strdup(name);
    p->uid = strdup(name);
    p->ctrs = calloc(1, sizeof(*p->ctrs));
    if (!p->ctrs)
        return;
    p->n_ctrs = 1;
    p->ctrs[0].name = strdup("c");
    for (size_t i = 0; i + 1 < n; i += 2)
        vs_kv_set(&p->ctrs[0].limits, res[i], res[i + 1]);
    if (anno)
        vs_kv_set(&p->annotations, "huawei.com/vnpu-mode", anno);
}

static void filter(struct vs_devcfg *cfg, struct vs_model *m, const struct vs_pod *p)
{
    const char *cands[] = {"n"};
    struct vs_sched_opts o = {.cfg = cfg};
    struct vs_filter_result r;
    if (!p->name || !p->ctrs || vs_sched_filter(m, p, cands, 1, &o, &r))
        return;
    if (r.best >= 0) {
        json_t *an = json_object();
        if (an)
            vs_sched_annotations(cfg->devices, p, vs_model_node(m, "n"), &r.nodes[r.best],
                                 1700000000000000000LL, an);
        json_decref(an);
    }
    vs_filter_result_cleanup(&r);
}

static void registers(const char *val)
{
    struct vs_devcfg cfg;
    struct vs_errbuf eb;
    if (vs_devcfg_init(&cfg))
        return;
    cfg.enable_ascend = true;
    struct vs_model *m = NULL;
    if (vs_devcfg_finish(&cfg, &eb) || !(m = vs_model_new(cfg.devices)))
        goto out;
    struct vs_knode kn = {.name = strdup("n")};
    vs_kv_set(&kn.annotations, "hami.io/node-register-Ascend910B3", val);
    vs_kv_set(&kn.annotations, "hami.io/node-register-Ascend910C", val);
    vs_kv_set(&kn.annotations, "hami-vnpu-core", "true");
    if (kn.name)
        vs_model_upsert_node(m, &kn, &eb);
    vs_knode_cleanup(&kn);
    static const char *const two[] = {"huawei.com/Ascend910B3", "2",
                                      "huawei.com/Ascend910B3-memory", "1024"};
    static const char *const c910[] = {"huawei.com/Ascend910C", "4"};
    static const char *const hc[] = {"huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-core",
                                     "30"};
    struct vs_pod p[3];
    add_pod(&p[0], "two", NULL, two, 4);
    add_pod(&p[1], "c910", NULL, c910, 2);
    add_pod(&p[2], "hc", "hami-core", hc, 4);
    for (size_t i = 0; i < 3; i++) {
        filter(&cfg, m, &p[i]);
        vs_pod_cleanup(&p[i]);
    }
out:
    vs_model_free(m);
    vs_devcfg_cleanup(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1) {
        struct vs_devcfg cfg;
        struct vs_errbuf eb;
        if (vs_devcfg_init(&cfg))
            return 0;
        cfg.enable_ascend = true;
        vs_devcfg_load_buf(&cfg, (const char *)data + 1, size - 1, "fuzz", &eb);
        vs_devcfg_cleanup(&cfg);
        return 0;
    }
    char *val = malloc(size);
    if (!val)
        return 0;
    memcpy(val, data + 1, size - 1);
    val[size - 1] = '\0';
    registers(val);
    free(val);
    return 0;
}
