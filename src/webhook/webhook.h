/* webhook: HAMi's mutating admission webhook (spec/hami-compat.md §7, k8s-protocols.md §4):
 * decode an AdmissionReview (admission.k8s.io/v1 or v1beta1, echoed), apply the NVIDIA
 * container mutation and the scheduler-name gate, and answer with a minimal RFC 6902 JSON Patch
 * or a denial, with the DRA guard's admission warnings (dra.h). Pure over jansson: no I/O; the
 * namespace quota comes through a callback. */
#ifndef VS_WEBHOOK_H
#define VS_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devcfg.h"

#include <jansson.h>

/* Namespace quota as tracked by the store (memory already scaled by memoryFactor). */
struct vs_webhook_quota {
    bool has_mem, has_cores;
    int64_t mem_limit, mem_used;
    int64_t cores_limit, cores_used;
};

struct vs_webhook_opts {
    const char *scheduler_name;   /* --scheduler-name; "" or NULL = never set */
    bool force_overwrite_default; /* --force-overwrite-default-scheduler (default true) */
    const struct vs_devcfg *cfg;
    /* Fills q with namespace ns's quota on backend dev (vs_device.id); returns false when it
     * has none. May be NULL. */
    bool (*quota)(void *ctx, const char *ns, uint16_t dev, struct vs_webhook_quota *q);
    void *quota_ctx;
    /* The DRA guard's findings (vs_store_dra_conflicts): a new [{"deviceclass","resource"}]
     * array, NULL when out of memory. A pod being created that asks such a resource gets the
     * admission warning vs_dra_warning (nothing else changes). May be NULL. */
    json_t *(*dra_conflicts)(void *ctx);
    void *dra_ctx;
};

/* Handles one request body (len bytes, not NUL-terminated). Returns the HTTP status (200 for
 * every reviewed request; 400 when the body is not an AdmissionReview at all) and sets *resp to
 * a new JSON string (free with free()): the AdmissionReview response, or {"error":"..."} for
 * 400. Never returns NULL *resp except on OOM (then status 500). */
int vs_webhook_handle(const struct vs_webhook_opts *o, const char *body, size_t len, char **resp);

#endif
