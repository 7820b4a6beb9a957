/* devcfg: the device configuration: the scheduler-relevant keys of HAMi's device-config.yaml
 * `nvidia:` section (spec/hami-compat.md §8.2) as fields, the whole document for the other
 * vendors' sections (spec/hami-vendors.md §0.1, read by their backends), the --enable-* switches,
 * and the set of backends all of that makes (device.h). Defaults equal HAMi's chart defaults.
 * Loading the YAML file is in devcfg_yaml.c (libyaml); this header stays libc + jansson so the
 * core can read the values. */
#ifndef VS_DEVCFG_H
#define VS_DEVCFG_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "err.h"

struct vs_devices;

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
    /* The whole device-config document (every section), NULL when none was loaded: the
     * vendors' backends then use HAMi's chart defaults. */
    json_t *doc;
    bool enable_ascend;         /* --enable-ascend: the vnpus backends exist */
    bool enable_iluvatar;       /* --enable-iluvatar: the iluvatars backends exist */
    struct vs_devices *devices; /* the backends made from all of the above (vs_devcfg_finish) */
};

/* Fills cfg with HAMi's defaults and makes its backends. Returns VS_ERR_NOMEM on allocation
 * failure. */
enum vs_err vs_devcfg_init(struct vs_devcfg *cfg);
void vs_devcfg_cleanup(struct vs_devcfg *cfg);
/* Makes cfg->devices again from cfg's current values (after a load or a switch changed):
 * VS_ERR_PARSE with a message naming the section and key when a vendor section is bad (the
 * previous backends are kept then). */
enum vs_err vs_devcfg_finish(struct vs_devcfg *cfg, struct vs_errbuf *eb);

/* Reads a device-config.yaml (libyaml). Keys of the nvidia section absent from the file keep
 * their current value in cfg (call vs_devcfg_init first); the other sections are read by their
 * backends, as HAMi does: a vendor whose section is absent has no resource names. Unknown keys
 * are ignored. Errors name the file, the key and the value. Remakes cfg->devices. Implemented in
 * devcfg_yaml.c, not part of the core library. */
enum vs_err vs_devcfg_load(struct vs_devcfg *cfg, const char *path, struct vs_errbuf *eb);

#endif
