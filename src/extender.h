/* extender: kube-scheduler's extender protocol (spec/k8s-protocols.md §1–2, hami-compat.md §4
 * and §6): Filter (choose one node, reserve atomically, record the decision on the pod) and
 * Bind (HAMi node lock, bind-phase, then the binding), plus /healthz, /readyz, /webhook and
 * /metrics handlers. Wire keys are matched case-insensitively; JSON null equals absent. */
#ifndef VS_EXTENDER_H
#define VS_EXTENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "async.h"
#include "bindq.h"
#include "devcfg.h"
#include "kube.h"
#include "leader.h"
#include "metrics.h"
#include "nodelock.h"
#include "server.h"
#include "store.h"

struct vs_webhook_opts;

struct vs_app {
    struct vs_store *store;
    struct vs_kube *kube;
    struct vs_nodelock *lock;
    struct vs_bindq *bindq; /* per-node bind queue; NULL: one lock try, fail on contention */
    struct vs_async *async;
    struct vs_leader *leader;
    struct vs_metrics *metrics;
    const struct vs_devcfg *cfg;
    const char *scheduler_name; /* event source; "" -> "hami-scheduler" */
    const char *node_policy;    /* defaults (flags) */
    const char *gpu_policy;
    int bind_wait_ms; /* how long Bind waits for Filter's pod patch */
    bool legacy_metrics;
    const struct vs_webhook_opts *webhook; /* NULL: /webhook answers 404 */
    int64_t (*now)(void);                  /* unix seconds */
};

void vs_ext_filter(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_bind(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_healthz(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_readyz(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_webhook(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_metrics(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);

/* Drops a reservation whose pod patch failed (async callback). */
void vs_ext_patch_failed(void *app, const char *uid, const char *alloc);

#endif
