/* fuzz_enflame: the Enflame DRS inventory (node annotation enflame.com/gcu-drs-capacity, vendor
 * JSON with profile names <s>g.<m>gb). Whatever the backend accepts must hold cards with a
 * positive slot count, memory in whole GB and the custom info Fit reads, and profiles sorted as
 * Fit walks them; a node accepted is then filtered with a slice request and a memory/core
 * request, and each decision's annotations written. The input is also read as one profile name.
 * abort() on any broken invariant. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../devices/enflame/enflame.h"
#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct vs_devcfg cfg;
static const struct vs_device *drs;

static void setup(void)
{
    struct vs_errbuf eb;
    if (drs)
        return;
    if (vs_devcfg_init(&cfg) || vs_devcfg_finish(&cfg, &eb) ||
        !(drs = vs_devices_find(cfg.devices, "Enflame")))
        abort();
}

static void check_inventory(const struct vs_inventory *inv)
{
    if (inv->reg.n == 0 || !inv->node_info)
        abort();
    for (size_t i = 0; i < inv->reg.n; i++) {
        const struct vs_card_reg *c = &inv->reg.cards[i];
        if (c->count <= 0 || c->devmem <= 0 || c->devmem % 1024 || c->devcore != 100 ||
            !json_is_string(json_object_get(c->custom, "minor")) ||
            !json_is_string(json_object_get(c->custom, "index")) ||
            !json_is_object(json_object_get(c->custom, "profiles")) ||
            json_integer_value(json_object_get(c->custom, "maxSlice")) <= 0)
            abort();
    }
    const json_t *t = json_object_get(inv->node_info, "profiles");
    for (size_t i = 0; i < json_array_size(t); i++) {
        const json_t *p = json_array_get(t, i);
        int64_t s = json_integer_value(json_array_get(p, 2)),
                m = json_integer_value(json_array_get(p, 3));
        int64_t core = json_integer_value(json_array_get(p, 4));
        if (s <= 0 || m <= 0 || core < 1 || core > 100)
            abort();
        if (i) {
            const json_t *q = json_array_get(t, i - 1);
            int64_t qs = json_integer_value(json_array_get(q, 2));
            if (qs > s || (qs == s && json_integer_value(json_array_get(q, 3)) > m))
                abort();
        }
    }
}

/* A pod with one container asking `key`: `val` (and `key2`: `val2` when not NULL). */
static void filter(struct vs_model *m, const char *key, const char *val, const char *key2,
                   const char *val2)
{
    struct vs_container c = {.name = "c"};
    struct vs_pod p = {.ns = "default", .name = "p", .uid = "u", .ctrs = &c, .n_ctrs = 1};
    if (vs_kv_set(&c.limits, key, val) || (key2 && vs_kv_set(&c.limits, key2, val2)))
        abort();
    const char *node = "n";
    struct vs_sched_opts o = {.cfg = &cfg};
    struct vs_filter_result r;
    if (vs_sched_filter(m, &p, &node, 1, &o, &r))
        abort();
    if (r.best >= 0) {
        json_t *an = json_object();
        if (!an || vs_sched_annotations(cfg.devices, &p, vs_model_node(m, "n"), &r.nodes[0], 1, an))
            abort();
        const char *a = json_string_value(json_object_get(an, "assigned-containers"));
        json_t *back = a ? json_loads(a, 0, NULL) : NULL;
        if (!back || !json_is_object(json_object_get(back, "c")))
            abort();
        json_decref(back);
        json_decref(an);
    } else if (!r.nodes[0].reason) {
        abort();
    }
    vs_filter_result_cleanup(&r);
    vs_kv_cleanup(&c.limits);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    char *val = malloc(size + 1);
    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    int64_t s, m;
    vs_enflame_parse_profile(val, &s, &m);
    if (strlen(val) == size) {
        struct vs_knode kn = {.name = strdup("n")};
        struct vs_inventory inv;
        struct vs_errbuf eb;
        memset(&inv, 0, sizeof(inv));
        if (!kn.name || vs_kv_set(&kn.annotations, "enflame.com/gcu-drs-capacity", val))
            abort();
        enum vs_err err = drs->ops->inventory(drs, &kn, &inv, &eb);
        if (err == VS_OK) {
            check_inventory(&inv);
            struct vs_model *mod = vs_model_new(cfg.devices);
            if (!mod || vs_model_upsert_node(mod, &kn, &eb) == VS_ERR_NOMEM)
                abort();
            filter(mod, "enflame.com/drs-gcu", "1", NULL, NULL);
            filter(mod, "enflame.com/gcu-memory", "1000", "enflame.com/gcu-core", "10");
            vs_model_free(mod);
        } else if (err != VS_ERR_PARSE || inv.reg.n) {
            abort();
        }
        vs_register_cleanup(&inv.reg);
        json_decref(inv.node_info);
        vs_knode_cleanup(&kn);
    }
    free(val);
    return 0;
}
