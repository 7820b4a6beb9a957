/* test_request: per-container NVIDIA requests (spec/hami-compat.md §2.2) with our stricter rule
 * (design.md §4): a GPU quantity that is not a whole number in range is a pod-level error with
 * an exact message, never a silently dropped request; gpucores over 100 is kept for Fit. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "kobj.h"
#include "request.h"

/* Criterion runs each test in a fresh child process, so parameter tables must live in its
 * shared memory: every case keeps its strings inline and the table is copied whole. */
static void *shared_copy(const void *src, size_t size)
{
    void *dst = cr_malloc(size);
    if (dst)
        memcpy(dst, src, size);
    return dst;
}

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

/* Fills a resource list from "name=value,name=value"; short names gpu, mem, pct and cores
 * stand for the default nvidia.com resource names. */
static void set_resources(struct vs_kvlist *l, const char *spec)
{
    char buf[256];
    cr_assert_lt(strlen(spec), sizeof(buf));
    strcpy(buf, spec);
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        cr_assert_not_null(eq, "bad resource spec %s", spec);
        *eq = '\0';
        const char *name = kv;
        if (strcmp(kv, "gpu") == 0)
            name = "nvidia.com/gpu";
        else if (strcmp(kv, "mem") == 0)
            name = "nvidia.com/gpumem";
        else if (strcmp(kv, "pct") == 0)
            name = "nvidia.com/gpumem-percentage";
        else if (strcmp(kv, "cores") == 0)
            name = "nvidia.com/gpucores";
        cr_assert_eq(vs_kv_set(l, name, eq + 1), VS_OK);
    }
}

static void add_container(struct vs_container **arr, size_t *n, const char *name,
                          const char *limits, const char *requests)
{
    struct vs_container *grown = realloc(*arr, (*n + 1) * sizeof(*grown));
    cr_assert_not_null(grown);
    *arr = grown;
    struct vs_container *c = &grown[(*n)++];
    memset(c, 0, sizeof(*c));
    c->name = strdup(name);
    set_resources(&c->limits, limits);
    set_resources(&c->requests, requests);
}

static void init_cfg(struct vs_devcfg *cfg, int32_t factor, int32_t defmem, int32_t defcores)
{
    cr_assert_eq(vs_devcfg_init(cfg), VS_OK);
    cfg->memory_factor = factor;
    cfg->default_memory = defmem;
    cfg->default_cores = defcores;
    struct vs_errbuf eb;
    cr_assert_eq(vs_devcfg_finish(cfg, &eb), VS_OK);
}

/* A container's NVIDIA request (nums 0: it asks for none at all). */
static void assert_req(const struct vs_ctr_req *cr, int32_t nums, int32_t mem, int32_t pct,
                       int32_t cores)
{
    if (nums == 0) {
        cr_assert_eq(cr->n, 0, "%zu requests, want none", cr->n);
        return;
    }
    cr_assert_eq(cr->n, 1, "%zu requests, want 1", cr->n);
    const struct vs_req *r = &cr->r[0];
    cr_assert_eq(r->nums, nums, "nums %d, want %d", r->nums, nums);
    cr_assert_eq(r->memreq, mem, "memreq %d, want %d", r->memreq, mem);
    cr_assert_eq(r->pct, pct, "pct %d, want %d", r->pct, pct);
    cr_assert_eq(r->cores, cores, "cores %d, want %d", r->cores, cores);
}

/* One regular container named "c". */
struct one_case {
    char limits[96];
    char requests[96];
    int32_t factor, defmem, defcores;
    enum vs_err code;
    int32_t nums, mem, pct, cores;
    char msg[200];
};

#define NO_GPU 0, 0, 0, 0
#define MEM_MSG(v, max)                                                                            \
    "invalid nvidia.com/gpumem \"" v "\" in container c: must be a whole number of MiB between 0 " \
    "and " max
#define PCT_MSG(v)                                                                                 \
    "invalid nvidia.com/gpumem-percentage value " v " in container c: must be an integer between " \
    "0 and 100"
#define CORES_MSG(v)                                                                               \
    "invalid nvidia.com/gpucores \"" v "\" in container c: must be a whole number of percent "     \
    "(values over 100 mean 100)"
#define GPU_MSG(v)                                                                                 \
    "invalid nvidia.com/gpu \"" v "\" in container c: must be a whole number of cards"

ParameterizedTestParameters(request, one_container)
{
    static const struct one_case cases[] = {
        /* The §2.2 example table. Row 2 is our deliberate difference: an error, not a drop. */
        {"gpu=1,mem=1024", "", 2, 0, 0, VS_OK, 1, 2048, VS_PCT_UNSET, 0, ""},
        {"gpu=1,mem=1Gi", "", 2, 0, 0, VS_ERR_INVAL, NO_GPU, MEM_MSG("1Gi", "1073741823")},
        {"gpu=1", "", 1, 512, 0, VS_OK, 1, 512, VS_PCT_UNSET, 0, ""},
        {"gpu=1,pct=0", "", 1, 512, 0, VS_OK, 1, 512, VS_PCT_UNSET, 0, ""},
        {"gpu=1,pct=0", "", 1, 0, 0, VS_OK, 1, 0, 100, 0, ""},
        {"gpu=1,cores=30,mem=1000", "", 1, 0, 0, VS_OK, 1, 1000, VS_PCT_UNSET, 30, ""},
        /* count */
        {"gpu=1", "", 1, 0, 0, VS_OK, 1, 0, 100, 0, ""},
        {"gpu=2,mem=3000,cores=30", "", 1, 0, 0, VS_OK, 2, 3000, VS_PCT_UNSET, 30, ""},
        {"gpu=2k", "", 1, 0, 0, VS_OK, 2000, 0, 100, 0, ""},
        {"gpu=2147483647", "", 1, 0, 0, VS_OK, INT32_MAX, 0, 100, 0, ""},
        {"gpu=0,mem=8Gi,pct=500,cores=-1", "", 1, 0, 0, VS_OK, NO_GPU, ""},
        {"mem=1000,cores=30", "", 1, 0, 0, VS_OK, NO_GPU, ""},
        {"", "", 1, 512, 25, VS_OK, NO_GPU, ""},
        {"gpu=1.5", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, GPU_MSG("1.5")},
        {"gpu=1500m", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, GPU_MSG("1500m")},
        {"gpu=-1", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, GPU_MSG("-1")},
        {"gpu=2147483648", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, GPU_MSG("2147483648")},
        {"gpu=one", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, GPU_MSG("one")},
        /* memory */
        {"gpu=1,mem=1e3", "", 1, 0, 0, VS_OK, 1, 1000, VS_PCT_UNSET, 0, ""},
        {"gpu=1,mem=2147483647", "", 1, 0, 0, VS_OK, 1, INT32_MAX, VS_PCT_UNSET, 0, ""},
        {"gpu=1,mem=1073741823", "", 2, 0, 0, VS_OK, 1, 2147483646, VS_PCT_UNSET, 0, ""},
        {"gpu=1,mem=1073741824", "", 2, 0, 0, VS_ERR_INVAL, NO_GPU,
         MEM_MSG("1073741824", "1073741823")},
        {"gpu=1,mem=2147483648", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU,
         MEM_MSG("2147483648", "2147483647")},
        {"gpu=1,mem=8Gi", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, MEM_MSG("8Gi", "2147483647")},
        {"gpu=1,mem=1.5", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, MEM_MSG("1.5", "2147483647")},
        {"gpu=1,mem=-5", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, MEM_MSG("-5", "2147483647")},
        {"gpu=1,mem=abc", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, MEM_MSG("abc", "2147483647")},
        {"gpu=1,mem=0", "", 1, 512, 0, VS_OK, 1, 512, VS_PCT_UNSET, 0, ""},
        {"gpu=1,mem=0", "", 1, 0, 0, VS_OK, 1, 0, 100, 0, ""},
        {"gpu=1,mem=1024", "", 0, 0, 0, VS_OK, 1, 1024, VS_PCT_UNSET, 0, ""},
        {"gpu=1,mem=1024", "", -3, 0, 0, VS_OK, 1, 1024, VS_PCT_UNSET, 0, ""},
        /* percentage */
        {"gpu=1,pct=50", "", 1, 0, 0, VS_OK, 1, 0, 50, 0, ""},
        {"gpu=1,pct=50", "", 1, 512, 0, VS_OK, 1, 0, 50, 0, ""},
        {"gpu=1,pct=100", "", 1, 0, 0, VS_OK, 1, 0, 100, 0, ""},
        {"gpu=1,mem=1000,pct=50", "", 1, 0, 0, VS_OK, 1, 1000, 50, 0, ""},
        {"gpu=1,pct=150", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, PCT_MSG("150")},
        {"gpu=1,pct=101", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, PCT_MSG("101")},
        {"gpu=1,pct=-1", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, PCT_MSG("-1")},
        {"gpu=1,pct=50.5", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, PCT_MSG("50.5")},
        /* cores */
        {"gpu=1,cores=120", "", 1, 0, 0, VS_OK, 1, 0, 100, 120, ""},
        {"gpu=1,cores=100", "", 1, 0, 0, VS_OK, 1, 0, 100, 100, ""},
        {"gpu=1,cores=3000000000", "", 1, 0, 0, VS_OK, 1, 0, 100, INT32_MAX, ""},
        {"gpu=1", "", 1, 0, 25, VS_OK, 1, 0, 100, 25, ""},
        {"gpu=1,cores=0", "", 1, 0, 25, VS_OK, 1, 0, 100, 0, ""},
        {"gpu=1,cores=-1", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, CORES_MSG("-1")},
        {"gpu=1,cores=0.5", "", 1, 0, 0, VS_ERR_INVAL, NO_GPU, CORES_MSG("0.5")},
        /* limits win over requests, per resource */
        {"gpu=2", "gpu=1", 1, 0, 0, VS_OK, 2, 0, 100, 0, ""},
        {"", "gpu=1,mem=2000", 1, 0, 0, VS_OK, 1, 2000, VS_PCT_UNSET, 0, ""},
        {"gpu=1", "mem=2000,cores=10", 1, 0, 0, VS_OK, 1, 2000, VS_PCT_UNSET, 10, ""},
        {"gpu=1,mem=1000", "mem=abc", 1, 0, 0, VS_OK, 1, 1000, VS_PCT_UNSET, 0, ""},
        {"gpu=1,mem=abc", "mem=1000", 1, 0, 0, VS_ERR_INVAL, NO_GPU, MEM_MSG("abc", "2147483647")},
        {"gpu=0", "gpu=1", 1, 0, 0, VS_OK, NO_GPU, ""},
    };
    return cr_make_param_array(struct one_case, shared_copy(cases, sizeof(cases)),
                               sizeof(cases) / sizeof(cases[0]), free_params);
}

ParameterizedTest(struct one_case *c, request, one_container)
{
    struct vs_devcfg cfg;
    struct vs_pod pod = {0};
    struct vs_pod_req r;
    struct vs_errbuf eb = {{0}};

    init_cfg(&cfg, c->factor, c->defmem, c->defcores);
    add_container(&pod.ctrs, &pod.n_ctrs, "c", c->limits, c->requests);
    enum vs_err err = vs_request_build(&pod, &cfg, &r, &eb);
    cr_assert_eq(err, c->code, "limits {%s} requests {%s}: %s (%s)", c->limits, c->requests,
                 vs_err_name(err), eb.msg);
    if (err == VS_OK) {
        cr_assert_eq(r.n_ctrs, 1);
        cr_assert_eq(r.n_init, 0);
        assert_req(&r.ctrs[0], c->nums, c->mem, c->pct, c->cores);
        cr_assert_eq(r.any, c->nums > 0);
        cr_assert_eq(r.any_regular, c->nums > 0);
    } else {
        cr_assert_str_eq(eb.msg, c->msg);
        cr_assert_null(r.ctrs);
        cr_assert_null(r.init);
        cr_assert_eq(r.n_ctrs + r.n_init, 0);
        cr_assert_not(r.any);
    }
    vs_pod_req_cleanup(&r);
    vs_pod_cleanup(&pod);
    vs_devcfg_cleanup(&cfg);
}

Test(request, init_and_regular_containers_separately)
{
    struct vs_devcfg cfg;
    struct vs_pod pod = {0};
    struct vs_pod_req r;
    struct vs_errbuf eb = {{0}};

    init_cfg(&cfg, 1, 0, 0);
    add_container(&pod.init, &pod.n_init, "setup", "", "");
    add_container(&pod.init, &pod.n_init, "warm", "gpu=1,mem=20000,cores=10", "");
    add_container(&pod.ctrs, &pod.n_ctrs, "sidecar", "", "");
    add_container(&pod.ctrs, &pod.n_ctrs, "main", "gpu=2,pct=50", "");
    cr_assert_eq(vs_request_build(&pod, &cfg, &r, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(r.n_init, 2);
    cr_assert_eq(r.n_ctrs, 2);
    assert_req(&r.init[0], 0, 0, 0, 0);
    assert_req(&r.init[1], 1, 20000, VS_PCT_UNSET, 10);
    assert_req(&r.ctrs[0], 0, 0, 0, 0);
    assert_req(&r.ctrs[1], 2, 0, 50, 0);
    cr_assert(r.any);
    cr_assert(r.any_regular);
    vs_pod_req_cleanup(&r);
    cr_assert_null(r.init);
    cr_assert_null(r.ctrs);
    cr_assert_eq(r.n_init + r.n_ctrs, 0);
    vs_pod_req_cleanup(NULL);
    vs_pod_cleanup(&pod);
    vs_devcfg_cleanup(&cfg);
}

Test(request, init_only_gpu_is_not_a_regular_request)
{
    struct vs_devcfg cfg;
    struct vs_pod pod = {0};
    struct vs_pod_req r;
    struct vs_errbuf eb = {{0}};

    init_cfg(&cfg, 1, 0, 0);
    add_container(&pod.init, &pod.n_init, "warm", "gpu=1", "");
    add_container(&pod.ctrs, &pod.n_ctrs, "main", "", "");
    cr_assert_eq(vs_request_build(&pod, &cfg, &r, &eb), VS_OK, "%s", eb.msg);
    assert_req(&r.init[0], 1, 0, 100, 0);
    assert_req(&r.ctrs[0], 0, 0, 0, 0);
    cr_assert(r.any);
    cr_assert_not(r.any_regular);
    vs_pod_req_cleanup(&r);
    vs_pod_cleanup(&pod);
    vs_devcfg_cleanup(&cfg);
}

Test(request, no_gpu_anywhere)
{
    struct vs_devcfg cfg;
    struct vs_pod pod = {0};
    struct vs_pod_req r;

    init_cfg(&cfg, 1, 0, 0);
    cr_assert_eq(vs_request_build(&pod, &cfg, &r, NULL), VS_OK);
    cr_assert_eq(r.n_init + r.n_ctrs, 0);
    cr_assert_null(r.init);
    cr_assert_null(r.ctrs);
    cr_assert_not(r.any);
    cr_assert_not(r.any_regular);
    vs_pod_req_cleanup(&r);

    add_container(&pod.init, &pod.n_init, "setup", "cpu=1", "");
    add_container(&pod.ctrs, &pod.n_ctrs, "main", "memory=1Gi", "nvidia.com/gpu=0");
    cr_assert_eq(vs_request_build(&pod, &cfg, &r, NULL), VS_OK);
    assert_req(&r.init[0], 0, 0, 0, 0);
    assert_req(&r.ctrs[0], 0, 0, 0, 0);
    cr_assert_not(r.any);
    cr_assert_not(r.any_regular);
    vs_pod_req_cleanup(&r);
    vs_pod_cleanup(&pod);
    vs_devcfg_cleanup(&cfg);
}

Test(request, error_names_the_failing_container)
{
    struct vs_devcfg cfg;
    struct vs_pod pod = {0};
    struct vs_pod_req r;
    struct vs_errbuf eb = {{0}};

    init_cfg(&cfg, 1, 0, 0);
    add_container(&pod.init, &pod.n_init, "setup", "gpu=1,mem=8Gi", "");
    add_container(&pod.ctrs, &pod.n_ctrs, "main", "gpu=1", "");
    cr_assert_eq(vs_request_build(&pod, &cfg, &r, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "invalid nvidia.com/gpumem \"8Gi\" in container setup: must be a "
                             "whole number of MiB between 0 and 2147483647");
    cr_assert_null(r.init);
    cr_assert_null(r.ctrs);
    vs_pod_cleanup(&pod);

    /* The second regular container fails after the first succeeded: nothing is returned. */
    memset(&pod, 0, sizeof(pod));
    add_container(&pod.ctrs, &pod.n_ctrs, "main", "gpu=1", "");
    add_container(&pod.ctrs, &pod.n_ctrs, "helper", "gpu=1,pct=150", "");
    cr_assert_eq(vs_request_build(&pod, &cfg, &r, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "invalid nvidia.com/gpumem-percentage value 150 in container helper: "
                             "must be an integer between 0 and 100");
    cr_assert_null(r.ctrs);
    cr_assert_eq(r.n_ctrs, 0);
    cr_assert_not(r.any);
    vs_pod_cleanup(&pod);
    vs_devcfg_cleanup(&cfg);
}

Test(request, configured_resource_names)
{
    struct vs_devcfg cfg;
    struct vs_pod pod = {0};
    struct vs_pod_req r;
    struct vs_errbuf eb = {{0}};

    init_cfg(&cfg, 1, 0, 0);
    free(cfg.res_count);
    free(cfg.res_mem);
    cfg.res_count = strdup("example.com/vgpu");
    cfg.res_mem = strdup("example.com/vgpu-mem");
    cr_assert_eq(vs_devcfg_finish(&cfg, &eb), VS_OK);
    add_container(&pod.ctrs, &pod.n_ctrs, "c", "example.com/vgpu=1,example.com/vgpu-mem=4096", "");
    add_container(&pod.ctrs, &pod.n_ctrs, "d", "gpu=1,mem=1000", "");
    cr_assert_eq(vs_request_build(&pod, &cfg, &r, &eb), VS_OK, "%s", eb.msg);
    assert_req(&r.ctrs[0], 1, 4096, VS_PCT_UNSET, 0);
    assert_req(&r.ctrs[1], 0, 0, 0, 0); /* nvidia.com/gpu is not the configured name */
    vs_pod_req_cleanup(&r);
    vs_pod_cleanup(&pod);

    memset(&pod, 0, sizeof(pod));
    add_container(&pod.ctrs, &pod.n_ctrs, "c", "example.com/vgpu=x", "");
    cr_assert_eq(vs_request_build(&pod, &cfg, &r, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg,
                     "invalid example.com/vgpu \"x\" in container c: must be a whole number of "
                     "cards");
    vs_pod_cleanup(&pod);
    vs_devcfg_cleanup(&cfg);
}

Test(request, resource_lookup_prefers_limits)
{
    struct vs_container c = {0};
    set_resources(&c.limits, "gpu=2,cores=30");
    set_resources(&c.requests, "gpu=1,mem=1000");
    cr_assert_str_eq(vs_request_resource(&c, "nvidia.com/gpu"), "2");
    cr_assert_str_eq(vs_request_resource(&c, "nvidia.com/gpucores"), "30");
    cr_assert_str_eq(vs_request_resource(&c, "nvidia.com/gpumem"), "1000");
    cr_assert_null(vs_request_resource(&c, "nvidia.com/gpumem-percentage"));
    vs_container_cleanup(&c);
}
