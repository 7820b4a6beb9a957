/* devcfg: the scheduler-relevant keys of HAMi's device-config.yaml `nvidia:` section
 * (spec/hami-compat.md §8.2). Defaults equal HAMi's chart defaults. Loading the YAML file is
 * in devcfg_yaml.c (libyaml); this header stays libc-only so the core can read the values. */
#ifndef VS_DEVCFG_H
#define VS_DEVCFG_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

struct vs_devcfg {
    char *res_count;          /* resourceCountName, "nvidia.com/gpu" */
    char *res_mem;            /* resourceMemoryName, "nvidia.com/gpumem" */
    char *res_mem_pct;        /* resourceMemoryPercentageName, "nvidia.com/gpumem-percentage" */
    char *res_cores;          /* resourceCoreName, "nvidia.com/gpucores" */
    char *res_priority;       /* resourcePriorityName, "nvidia.com/priority" */
    int32_t default_memory;   /* defaultMemory MiB, 0 = whole card */
    int32_t default_cores;    /* defaultCores */
    int32_t default_gpu_num;  /* defaultGPUNum (webhook), 1 */
    int32_t memory_factor;    /* memoryFactor, 1 */
    bool overwrite_env;       /* overwriteEnv */
    char *gpu_core_policy;    /* gpuCorePolicy: "default" | "force" | "disable" */
    char *runtime_class_name; /* runtimeClassName, "" */
};

/* Fills cfg with HAMi's defaults. Returns VS_ERR_NOMEM on allocation failure. */
enum vs_err vs_devcfg_init(struct vs_devcfg *cfg);
void vs_devcfg_cleanup(struct vs_devcfg *cfg);

/* Reads a device-config.yaml (libyaml). Keys absent from the file keep their current value in
 * cfg (call vs_devcfg_init first). Unknown keys are ignored. Errors name the file, the key and
 * the value. Implemented in devcfg_yaml.c, not part of the core library. */
enum vs_err vs_devcfg_load(struct vs_devcfg *cfg, const char *path, struct vs_errbuf *eb);

#endif
