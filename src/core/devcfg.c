/* devcfg: HAMi's chart defaults for the device configuration (spec/hami-compat.md §8.2), and the
 * backends it makes. */
#include "devcfg.h"

#include "device.h"

#include <stdlib.h>
#include <string.h>

enum vs_err vs_devcfg_init(struct vs_devcfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->res_count = strdup("nvidia.com/gpu");
    cfg->res_mem = strdup("nvidia.com/gpumem");
    cfg->res_mem_pct = strdup("nvidia.com/gpumem-percentage");
    cfg->res_cores = strdup("nvidia.com/gpucores");
    cfg->res_priority = strdup("nvidia.com/priority");
    cfg->gpu_core_policy = strdup("default");
    cfg->runtime_class_name = strdup("");
    cfg->default_gpu_num = 1;
    cfg->memory_factor = 1;
    if (!cfg->res_count || !cfg->res_mem || !cfg->res_mem_pct || !cfg->res_cores ||
        !cfg->res_priority || !cfg->gpu_core_policy || !cfg->runtime_class_name) {
        vs_devcfg_cleanup(cfg);
        return VS_ERR_NOMEM;
    }
    struct vs_errbuf eb;
    enum vs_err err = vs_devcfg_finish(cfg, &eb);
    if (err)
        vs_devcfg_cleanup(cfg);
    return err;
}

enum vs_err vs_devcfg_finish(struct vs_devcfg *cfg, struct vs_errbuf *eb)
{
    struct vs_devices *set = calloc(1, sizeof(*set));
    if (!set)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    enum vs_err err = vs_devices_build(cfg, set, eb);
    if (err) {
        free(set);
        return err;
    }
    if (cfg->devices) {
        vs_devices_cleanup(cfg->devices);
        free(cfg->devices);
    }
    cfg->devices = set;
    return VS_OK;
}

void vs_devcfg_cleanup(struct vs_devcfg *cfg)
{
    if (!cfg)
        return;
    free(cfg->res_count);
    free(cfg->res_mem);
    free(cfg->res_mem_pct);
    free(cfg->res_cores);
    free(cfg->res_priority);
    free(cfg->gpu_core_policy);
    free(cfg->runtime_class_name);
    json_decref(cfg->doc);
    if (cfg->devices) {
        vs_devices_cleanup(cfg->devices);
        free(cfg->devices);
    }
    memset(cfg, 0, sizeof(*cfg));
}
