/* fuzz_metax: MetaX's node inputs through the backends' inventory hooks — the sGPU plugin's JSON
 * (metax-tech.com/node-gpu-devices) and the GPU topology tables (metax-tech.com/gpu.topology.
 * losses / .scores), each the fuzzer's bytes. A parse either fails with a message naming the
 * annotation or yields cards with an id and (sGPU) custominfo {QosPolicy, Model, LinkZone};
 * abort() if not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct vs_devcfg cfg;
static bool ready;

static void check_inventory(const struct vs_device *d, const struct vs_knode *kn, bool sgpu)
{
    struct vs_inventory inv;
    struct vs_errbuf eb;
    memset(&inv, 0, sizeof(inv));
    eb.msg[0] = '\0';
    enum vs_err err = d->ops->inventory(d, kn, &inv, &eb);
    if (err == VS_ERR_PARSE) {
        if (!strstr(eb.msg, "metax-tech.com/node-gpu-devices") || inv.reg.n)
            abort();
    } else if (err == VS_OK) {
        if (sgpu && inv.reg.n == 0)
            abort();
        for (size_t i = 0; i < inv.reg.n; i++) {
            const struct vs_card_reg *c = &inv.reg.cards[i];
            if (!c->uuid || !c->type || (sgpu && (c->index != i || !c->custom)))
                abort();
            if (sgpu && (!json_is_string(json_object_get(c->custom, "QosPolicy")) ||
                         !json_is_integer(json_object_get(c->custom, "LinkZone"))))
                abort();
        }
    } else if (err != VS_ERR_NOMEM) {
        abort();
    }
    vs_register_cleanup(&inv.reg);
    free(inv.topo);
    json_decref(inv.node_info);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready) {
        if (vs_devcfg_init(&cfg))
            abort();
        ready = true;
    }
    char *val = malloc(size + 1);
    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    struct vs_knode kn;
    memset(&kn, 0, sizeof(kn));
    kn.name = "n";
    if (vs_kv_set(&kn.annotations, "metax-tech.com/node-gpu-devices", val) ||
        vs_kv_set(&kn.annotations, "metax-tech.com/gpu.topology.losses", val) ||
        vs_kv_set(&kn.annotations, "metax-tech.com/gpu.topology.scores", val) ||
        vs_kv_set(&kn.capacity, "metax-tech.com/gpu", "2"))
        abort();
    const struct vs_device *sgpu = vs_devices_find(cfg.devices, "Metax-SGPU");
    const struct vs_device *gpu = vs_devices_find(cfg.devices, "Metax-GPU");
    if (!sgpu || !gpu)
        abort();
    check_inventory(sgpu, &kn, true);
    check_inventory(gpu, &kn, false);
    vs_kv_cleanup(&kn.annotations);
    vs_kv_cleanup(&kn.capacity);
    free(val);
    return 0;
}
