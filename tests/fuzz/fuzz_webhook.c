/* fuzz_webhook: feeds arbitrary bytes to the AdmissionReview handler under two option sets (HAMi
 * defaults; every device-config feature plus a quota and a DRA guard finding). Beyond crashes
 * and leaks it checks the contract: HTTP 200 or 400, a JSON answer, a patch that applies to
 * request.object, and admission warnings that are exactly the guard's text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/jsonpatch.h"
#include "devcfg.h"
#include "webhook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool quota_cb(void *ctx, const char *ns, uint16_t dev, struct vs_webhook_quota *q)
{
    (void)ctx;
    (void)dev;
    if (strcmp(ns, "ml") != 0)
        return false;
    q->has_mem = q->has_cores = true;
    q->mem_limit = 20000;
    q->mem_used = 10000;
    q->cores_limit = 200;
    q->cores_used = 100;
    return true;
}

#define WARNING                                                                                    \
    "DeviceClass gpu.nvidia.com maps nvidia.com/gpu to DRA: kube-scheduler will refuse this pod "  \
    "before vgpu-sched sees it"

static json_t *dra_cb(void *ctx)
{
    (void)ctx;
    return json_pack("[{s:s,s:s}]", "deviceclass", "gpu.nvidia.com", "resource", "nvidia.com/gpu");
}

/* Aborts unless the answer keeps the contract for this body. */
static void check(const uint8_t *data, size_t size, int http, const char *resp)
{
    json_t *out, *in, *rsp, *p;
    /* Only OOM may leave no answer, and the fuzzer does not fail allocations. */
    if (!resp)
        abort();
    out = json_loads(resp, 0, NULL);
    if (!out || (http != 200 && http != 400))
        abort();
    if (http == 400) {
        if (!json_is_string(json_object_get(out, "error")))
            abort();
        json_decref(out);
        return;
    }
    in = json_loadb((const char *)data, size, 0, NULL);
    rsp = json_object_get(out, "response");
    if (!in || !json_equal(json_object_get(rsp, "uid"),
                           json_object_get(json_object_get(in, "request"), "uid")))
        abort();
    json_t *w = json_object_get(rsp, "warnings");
    if (w && (json_array_size(w) != 1 || strcmp(json_string_value(json_array_get(w, 0))
                                                    ? json_string_value(json_array_get(w, 0))
                                                    : "",
                                                WARNING) != 0))
        abort();
    p = json_object_get(rsp, "patch");
    if (p) {
        size_t n;
        char err[256];
        char *text = tjp_b64_decode(json_string_value(p) ? json_string_value(p) : "", &n);
        json_t *ops = text ? json_loadb(text, n, 0, NULL) : NULL;
        json_t *obj = json_deep_copy(json_object_get(json_object_get(in, "request"), "object"));
        if (!ops || !obj || tjp_apply(obj, ops, err, sizeof(err)) != 0) {
            fprintf(stderr, "patch does not apply: %s\n", err);
            abort();
        }
        json_decref(obj);
        json_decref(ops);
        free(text);
    }
    json_decref(in);
    json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct vs_devcfg plain, rich;
    static bool ready;
    if (!ready) {
        if (vs_devcfg_init(&plain) != VS_OK || vs_devcfg_init(&rich) != VS_OK)
            abort();
        free(rich.gpu_core_policy);
        free(rich.runtime_class_name);
        rich.gpu_core_policy = strdup("force");
        rich.runtime_class_name = strdup("nvidia");
        rich.overwrite_env = true;
        rich.memory_factor = 2;
        rich.default_memory = 1000;
        if (!rich.gpu_core_policy || !rich.runtime_class_name)
            abort();
        ready = true;
    }
    struct vs_webhook_opts opts[2] = {
        {.scheduler_name = "hami-scheduler", .force_overwrite_default = true, .cfg = &plain},
        {.scheduler_name = "",
         .force_overwrite_default = false,
         .cfg = &rich,
         .quota = quota_cb,
         .dra_conflicts = dra_cb},
    };
    for (size_t i = 0; i < 2; i++) {
        char *resp = NULL;
        int http = vs_webhook_handle(&opts[i], (const char *)data, size, &resp);
        check(data, size, http, resp);
        free(resp);
    }
    return 0;
}
