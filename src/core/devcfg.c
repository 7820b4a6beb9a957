/* devcfg: HAMi's chart defaults for the device configuration (spec/hami-compat.md §8.2). */
#include "devcfg.h"

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
    memset(cfg, 0, sizeof(*cfg));
}
