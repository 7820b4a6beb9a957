/* serve: flag table, wiring and lifetime of the service. All process-wide state lives here and
 * in main.c; modules get what they need through their contexts. */
#include "serve.h"

#include "access.h"
#include "async.h"
#include "bindq.h"
#include "dashboard.h"
#include "decision.h"
#include "whatif.h"
#include "pending.h"
#include "requeue.h"
#include "devcfg.h"
#include "extender.h"
#include "flags.h"
#include "frag.h"
#include "kube.h"
#include "leader.h"
#include "loader.h"
#include "log.h"
#include "memapi.h"
#include "memtrim.h"
#include "metrics.h"
#include "mirrors.h"
#include "nodelock.h"
#include "policy.h"
#include "server.h"
#include "store.h"
#include "webhook.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* Row types, short for the table below. */
#define F_STR     VS_FLAG_STR
#define F_BOOL    VS_FLAG_BOOL
#define F_INT     VS_FLAG_INT
#define F_DOUBLE  VS_FLAG_DOUBLE
#define F_DUR     VS_FLAG_DUR
#define F_IGNORED VS_FLAG_IGNORED
#define F_HELP    VS_FLAG_HELP

/* Command-line only settings beside the service configuration. */
struct serve_opts {
    struct vs_service_config c;
    const char *log_format;
    long long verbosity;
    bool profiling, debug;
};

/* Range ends of the numeric rows. */
#define DAY_MS  (24.0 * 3600 * 1000)
#define MILLION 1e6

/* The flags of `serve`: the parser and --help read this table (flags.h); docs/flags.md is the
 * --help output, checked by ctest flags_doc. A row: name (and alias), type, where the value
 * goes, one line of help, .def when the default value alone does not say it, and for a numeric
 * flag the range it accepts (.min, .max; test_flags checks every numeric row has one). */
#define O(f)   offsetof(struct serve_opts, f)
#define VENDOR "HAMi's flag for another vendor: accepted and ignored"
#define KLOG   "klog's flag: accepted and ignored"
static const struct vs_flag flags[] = {
    {.name = "http_bind",
     .alias = "http-bind",
     .type = F_STR,
     .off = O(c.http_bind),
     .help = "listener of /filter, /bind, /preempt, /prioritize, /webhook, /healthz, /readyz"},
    {.name = "cert_file",
     .alias = "cert-file",
     .type = F_STR,
     .off = O(c.cert_file),
     .help = "TLS certificate, PEM; HTTPS when both files are given, reloaded when they change"},
    {.name = "key_file",
     .alias = "key-file",
     .type = F_STR,
     .off = O(c.key_file),
     .help = "TLS private key, PEM"},
    {.name = "client-ca-file",
     .type = F_STR,
     .off = O(c.client_ca_file),
     .help = "require client certificates signed by this CA"},
    {.name = "tls-min-version",
     .type = F_STR,
     .off = O(c.tls_min_version),
     .help = "lowest TLS version accepted: VersionTLS12 | VersionTLS13",
     .def = "VersionTLS12"},
    {.name = "tls-cipher-suites",
     .type = F_STR,
     .off = O(c.tls_cipher_suites),
     .help = "TLS 1.2 suites allowed, comma list of Go names; TLS 1.3 suites always on",
     .def = "GnuTLS's list"},
    {.name = "scheduler-name",
     .type = F_STR,
     .off = O(c.scheduler_name),
     .help = "schedulerName the webhook sets; source of Events"},
    {.name = "node-scheduler-policy",
     .type = F_STR,
     .off = O(c.node_policy),
     .help = "binpack | spread | fragmentation"},
    {.name = "gpu-scheduler-policy",
     .type = F_STR,
     .off = O(c.gpu_policy),
     .help = "spread | binpack | topology-aware | mutex | numa | fragmentation, or a comma chain"},
    {.name = "metrics-bind-address",
     .type = F_STR,
     .off = O(c.metrics_bind),
     .help = "listener of /metrics and the dashboard; empty: none"},
    {.name = "dashboard",
     .type = F_BOOL,
     .off = O(c.dashboard),
     .help = "serve the read-only web dashboard and its JSON API on the metrics listener"},
    {.name = "dashboard-base-path",
     .type = F_STR,
     .off = O(c.dashboard_base),
     .help = "path the dashboard is served under (behind an ingress); / redirects to it",
     .def = "/"},
    {.name = "dashboard-frame-ancestors",
     .type = F_STR,
     .off = O(c.dashboard_ancestors),
     .help = "Content-Security-Policy frame-ancestors: who may embed the dashboard",
     .def = "'none'"},
    {.name = "patch-at-filter",
     .type = F_BOOL,
     .off = O(c.patch_at_filter),
     .help = "patch Filter's decision onto the pod at Filter, as HAMi does (one more pod write per "
             "GPU pod); default: it travels in the pod's Binding"},
    {.name = "legacy-metrics",
     .type = F_BOOL,
     .off = O(c.legacy_metrics),
     .help = "also emit HAMi's pre-v2.8 metric names"},
    {.name = "node-label-selector",
     .type = F_STR,
     .off = O(c.node_label_selector),
     .help = "k=v,k2=v2: only these nodes are tracked"},
    {.name = "kube-qps",
     .type = F_DOUBLE,
     .off = O(c.kube_qps),
     .help = "API client requests per second; 0 = no limit",
     .min = 0,
     .max = MILLION},
    {.name = "kube-burst",
     .type = F_INT,
     .off = O(c.kube_burst),
     .help = "API client burst above --kube-qps",
     .min = 1,
     .max = MILLION},
    {.name = "kube-timeout",
     .type = F_DUR,
     .off = O(c.kube_timeout_ms),
     .help = "API request timeout; 0 = none",
     .min = 0,
     .max = DAY_MS},
    {.name = "node-lock-timeout",
     .type = F_DUR,
     .off = O(c.lock_timeout_ms),
     .help = "node lock expiry",
     .min = 1000,
     .max = DAY_MS},
    {.name = "node-lock-retry-timeout",
     .type = F_DUR,
     .off = O(c.lock_retry_ms),
     .help = "longest wait of a Bind for its node's lock; 0 = fail at once",
     .min = 0,
     .max = DAY_MS},
    {.name = "bind-queue-depth",
     .type = F_INT,
     .off = O(c.bind_queue_depth),
     .help = "Binds queued or in flight that make a node busy: it ranks after the others; 0 = off",
     .min = 0,
     .max = MILLION},
    {.name = "bind-queue-saturation",
     .type = F_DOUBLE,
     .off = O(c.bind_queue_saturation),
     .help = "share of --node-lock-retry-timeout a new Bind may wait before its node ranks last; "
             "0 = off",
     .min = 0,
     .max = 1},
    {.name = "reservation-ttl",
     .type = F_DUR,
     .off = O(c.reservation_ttl_ms),
     .help = "a pod filtered but not bound within this time stops holding capacity",
     .min = 1000,
     .max = DAY_MS},
    {.name = "gpu-preemption",
     .type = F_STR,
     .off = O(c.gpu_preemption),
     .help = "auto | verb | filter | off; auto: verb from API server v1.38 on, else filter"},
    {.name = "dra-mirror",
     .type = F_STR,
     .off = O(c.dra_mirror),
     .help = "off | fence | share: keep an allocated ResourceClaim per HAMi pod and card a DRA "
             "driver publishes (docs/dra.md)",
     .def = "off"},
    {.name = "dra-mirror-namespace",
     .type = F_STR,
     .off = O(c.dra_mirror_ns),
     .help = "namespace of those mirror ResourceClaims",
     .def = "$POD_NAMESPACE, the kubeconfig's, default"},
    {.name = "optional-api-retry",
     .type = F_DUR,
     .off = O(c.optional_retry_ms),
     .help = "re-check pace of a missing optional API: PodDisruptionBudgets, pods/eviction, the "
             "Lease, events, DeviceClasses (docs/migration.md)",
     .min = 100,
     .max = DAY_MS},
    {.name = "force-overwrite-default-scheduler",
     .type = F_BOOL,
     .off = O(c.force_overwrite),
     .help = "the webhook replaces default-scheduler too"},
    {.name = "leader-elect",
     .type = F_BOOL,
     .off = O(c.leader_elect),
     .help = "follow kube-scheduler's Lease; a follower refuses Filter and Bind"},
    {.name = "leader-elect-resource-name",
     .type = F_STR,
     .off = O(c.lease_name),
     .help = "name of that Lease"},
    {.name = "leader-elect-resource-namespace",
     .type = F_STR,
     .off = O(c.lease_ns),
     .help = "namespace of that Lease"},
    {.name = "device-config-file",
     .type = F_STR,
     .off = O(c.device_config),
     .help = "HAMi's device-config.yaml"},
    {.name = "enable-ascend",
     .type = F_BOOL,
     .off = O(c.enable_ascend),
     .help = "schedule Huawei Ascend NPUs (the vnpus section's chips)"},
    {.name = "enable-iluvatar",
     .type = F_BOOL,
     .off = O(c.enable_iluvatar),
     .help = "schedule Iluvatar GPUs (the iluvatars section's chips)"},
    {.name = "kubeconfig",
     .type = F_STR,
     .off = O(c.kubeconfig),
     .help = "out-of-cluster API access",
     .def = "$KUBECONFIG, ~/.kube/config, in-cluster"},
    {.name = "cluster",
     .type = F_STR,
     .off = O(c.cluster),
     .help = "embedded mode: no API server, the cluster is loaded from this file"},
    {.name = "http-threads",
     .type = F_INT,
     .off = O(c.http_threads),
     .help = "threads serving the main listener",
     .min = 1,
     .max = 1024},
    {.name = "log-format", .type = F_STR, .off = O(log_format), .help = "text | json"},
    {.name = "debug", .type = F_BOOL, .off = O(debug), .help = "debug logging"},
    {.name = "v",
     .type = F_INT,
     .off = O(verbosity),
     .help = "klog verbosity; 4 or more: debug logging",
     .min = 0,
     .max = INT32_MAX},
    {.name = "profiling",
     .type = F_BOOL,
     .off = O(profiling),
     .help = "accepted for compatibility; no pprof endpoints"},
    {.name = "help", .alias = "h", .type = F_HELP, .help = "print this help and exit"},
    /* HAMi's flags for other vendors, and klog's: accepted and ignored (one warning). A name
     * ending in '-' is a prefix. */
    {.name = "amd-", .type = F_IGNORED, .help = VENDOR},
    {.name = "ascend-", .type = F_IGNORED, .help = VENDOR},
    {.name = "awsneuron-", .type = F_IGNORED, .help = VENDOR},
    {.name = "cambricon-mlu-", .type = F_IGNORED, .help = VENDOR},
    {.name = "dcu-", .type = F_IGNORED, .help = VENDOR},
    {.name = "enflame-", .type = F_IGNORED, .help = VENDOR},
    {.name = "hygon-", .type = F_IGNORED, .help = VENDOR},
    {.name = "iluvatar-", .type = F_IGNORED, .help = VENDOR},
    {.name = "kunlun-", .type = F_IGNORED, .help = VENDOR},
    {.name = "metax-", .type = F_IGNORED, .help = VENDOR},
    {.name = "mlu-", .type = F_IGNORED, .help = VENDOR},
    {.name = "mthreads-", .type = F_IGNORED, .help = VENDOR},
    {.name = "sgpu-topology-aware", .type = F_IGNORED, .help = VENDOR},
    {.name = "vendor-", .type = F_IGNORED, .help = VENDOR},
    {.name = "xpu-", .type = F_IGNORED, .help = VENDOR},
    {.name = "add_dir_header", .type = F_IGNORED, .help = KLOG},
    {.name = "alsologtostderr", .type = F_IGNORED, .help = KLOG},
    {.name = "log_backtrace_at", .type = F_IGNORED, .help = KLOG},
    {.name = "log_dir", .alias = "log-dir", .type = F_IGNORED, .help = KLOG},
    {.name = "log_file", .alias = "log-file", .type = F_IGNORED, .help = KLOG},
    {.name = "log_file_max_size", .type = F_IGNORED, .help = KLOG},
    {.name = "logtostderr", .type = F_IGNORED, .help = KLOG},
    {.name = "one_output", .type = F_IGNORED, .help = KLOG},
    {.name = "skip_headers", .type = F_IGNORED, .help = KLOG},
    {.name = "skip_log_headers", .type = F_IGNORED, .help = KLOG},
    {.name = "stderrthreshold", .type = F_IGNORED, .help = KLOG},
    {.name = "vmodule", .type = F_IGNORED, .help = KLOG},
};
#define N_FLAGS (sizeof(flags) / sizeof(flags[0]))

const struct vs_flag *vs_serve_flags(size_t *n)
{
    *n = N_FLAGS;
    return flags;
}

void vs_serve_usage(FILE *f)
{
    struct serve_opts o = {.log_format = "text"};
    vs_service_config_defaults(&o.c);
    fprintf(f,
            "usage: vgpu-sched serve [flags]\n"
            "       vgpu-sched [flags]\n"
            "\n"
            "The scheduler extender and admission webhook, a drop-in for HAMi's hami-scheduler:\n"
            "its flags with HAMi's spellings and defaults, and ours. --flag=value or --flag "
            "value;\n"
            "a boolean alone is true. Exit status: 0 after SIGTERM or SIGINT, 2 bad flags or\n"
            "configuration, 1 runtime failure.\n"
            "\n"
            "flags:\n");
    vs_flags_print(f, flags, N_FLAGS, &o);
}

static void warn_ignored(void *ctx, const char *flag)
{
    vs_log(VS_LOG_WARN, "flag_ignored",
           "flag=%s note=\"flags of other vendors and klog are accepted and ignored\"", flag);
}

static volatile sig_atomic_t g_stop; /* the signal that asks the service to stop, 0 until then */

static void on_signal(int sig)
{
    g_stop = sig;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGTERM:
        return "SIGTERM";
    case SIGINT:
        return "SIGINT";
    default:
        return "unknown";
    }
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

struct quota_read {
    const char *ns;
    uint16_t dev;
    struct vs_webhook_quota *q;
    bool found;
};

static void quota_locked(void *ctx, const struct vs_model *m)
{
    struct quota_read *r = ctx;
    const struct vs_quota *q = vs_model_quota(m, r->ns);
    if (!q || r->dev >= q->n)
        return;
    const struct vs_quota_res *qr = &q->res[r->dev];
    if (!qr->has_mem && !qr->has_cores)
        return;
    r->found = true;
    r->q->has_mem = qr->has_mem;
    r->q->has_cores = qr->has_cores;
    r->q->mem_limit = qr->mem_limit;
    r->q->mem_used = qr->mem_used;
    r->q->cores_limit = qr->cores_limit;
    r->q->cores_used = qr->cores_used;
}

static bool quota_cb(void *ctx, const char *ns, uint16_t dev, struct vs_webhook_quota *q)
{
    struct quota_read r = {.ns = ns, .dev = dev, .q = q, .found = false};
    vs_store_read(ctx, quota_locked, &r);
    return r.found;
}

static json_t *dra_conflicts_cb(void *ctx)
{
    return vs_store_dra_conflicts(ctx);
}

static void warn_log(void *ctx, const char *msg)
{
    char q[1024];
    vs_log(VS_LOG_WARN, "cluster_file", "msg=%s", vs_log_quote(msg, q, sizeof(q)));
}

void vs_service_config_defaults(struct vs_service_config *c)
{
    memset(c, 0, sizeof(*c));
    c->http_bind = "127.0.0.1:8080";
    c->node_policy = "binpack";
    c->gpu_policy = "spread";
    c->metrics_bind = ":9395";
    c->scheduler_name = "";
    /* A Bind costs about six API requests and two Events: with kube-scheduler's own client
     * defaults (50/100) a 200-pod burst queued behind the limiter for half a minute. */
    c->kube_qps = 300;
    c->kube_burst = 600;
    c->lock_timeout_ms = 5 * 60 * 1000;
    c->lock_retry_ms = 28 * 1000;
    c->reservation_ttl_ms = 5 * 60 * 1000;
    c->http_threads = 8;
    c->bind_wait_ms = 30000;
    c->bind_queue_depth = 1;
    c->force_overwrite = true;
    c->gpu_preemption = "auto";
    c->dra_mirror = "off";
    c->dashboard = true;
    c->optional_retry_ms = 60 * 1000;
}

/* --gpu-preemption=auto: `verb` when the API server is v1.38 or later (kube-scheduler then asks
 * extenders about nodes short only of their resources), else `filter`. */
static enum vs_gpu_preemption preemption_auto(struct vs_kube *k)
{
    json_t *v = NULL;
    struct vs_errbuf eb;
    if (vs_kube_get(k, "/version", &v, &eb)) {
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_WARN, "gpu_preemption", "mode=filter reason=%s",
               vs_log_quote(eb.msg, q, sizeof(q)));
        return VS_GPU_PREEMPT_FILTER;
    }
    const char *maj = json_string_value(json_object_get(v, "major"));
    const char *min = json_string_value(json_object_get(v, "minor"));
    long major = maj ? strtol(maj, NULL, 10) : 0, minor = min ? strtol(min, NULL, 10) : 0;
    enum vs_gpu_preemption m =
        major > 1 || (major == 1 && minor >= 38) ? VS_GPU_PREEMPT_VERB : VS_GPU_PREEMPT_FILTER;
    vs_log(VS_LOG_INFO, "gpu_preemption", "mode=%s apiserver=%s.%s",
           m == VS_GPU_PREEMPT_VERB ? "verb" : "filter", maj ? maj : "?", min ? min : "?");
    json_decref(v);
    return m;
}

struct vs_service {
    atomic_uint repairs; /* leadership terms whose node-lock repair is done (tests wait for it) */
    struct vs_devcfg cfg;
    struct vs_memapi *mem;
    struct vs_kube_config kc;
    struct vs_kube *kube;
    struct vs_access *access;
    struct vs_store *store;
    struct vs_leader *leader;
    struct vs_mirrors *mirrors; /* --dra-mirror: NULL when off */
    struct vs_nodelock *lock;
    struct vs_bindq *bindq;
    struct vs_requeue *requeue;
    struct vs_holds *holds;
    struct vs_async *async;
    struct vs_decisions *decisions; /* NULL with --patch-at-filter */
    struct vs_metrics *metrics;
    struct vs_frag_stats *frag;
    struct vs_memtrim *trim;
    struct vs_server *srv, *msrv;
    struct vs_app app;
    struct vs_webhook_opts wo;
    struct vs_route routes[7];
    struct vs_route mroutes[2 + VS_DASH_ROUTES];
    struct vs_pending *pending;     /* refused pods (dashboard on) */
    struct vs_dashboard *dashboard; /* NULL when off */
    bool leader_elect;
    uint64_t resync_req; /* the current term's store resync (monitor thread only) */
    int64_t term_began;  /* unix seconds, when the current term started (monitor thread only) */
};

/* Leadership-term hooks (leader.h): a term rebuilds the store from the API before it serves,
 * repairs what a crashed leader left, and its reservations die with it. */
static void term_start(void *ctx, uint64_t term)
{
    struct vs_service *s = ctx;
    s->term_began = now_s();
    /* Without --leader-elect the first term is the process's start: the initial lists are the
     * rebuild. */
    s->resync_req = term == 1 && !s->leader_elect ? 0 : vs_store_resync(s->store);
}

static bool term_ready(void *ctx, uint64_t term)
{
    struct vs_service *s = ctx;
    return vs_store_resynced(s->store, s->resync_req);
}

static void term_serving(void *ctx, uint64_t term)
{
    struct vs_service *s = ctx;
    struct vs_nodelock_repair r;
    struct vs_errbuf eb;
    char q[VS_ERRBUF_SIZE + 8];
    enum vs_err err = vs_nodelock_repair(s->lock, s->term_began, &r, &eb);
    vs_log(err ? VS_LOG_WARN : VS_LOG_INFO, "node_lock_repair",
           "term=%llu locked=%u broken=%u kept=%u stuck_allocating=%u failed=%u error=%s",
           (unsigned long long)term, r.locked, r.broken, r.kept, r.stuck_allocating, r.failed,
           err ? vs_log_quote(eb.msg, q, sizeof(q)) : "\"\"");
    atomic_fetch_add(&s->repairs, 1);
}

static void term_end(void *ctx, uint64_t term)
{
    struct vs_service *s = ctx;
    size_t n = vs_store_drop_reservations(s->store);
    /* Binds queued in this term die with it; the queue opens again for the next term. */
    if (s->bindq)
        vs_bindq_fail_all(s->bindq, "vgpu-sched lost leadership");
    vs_log(VS_LOG_INFO, "term_state_dropped", "term=%llu reservations=%zu",
           (unsigned long long)term, n);
}

void vs_service_stop(struct vs_service *s)
{
    if (!s)
        return;
    if (s->bindq)
        vs_bindq_close(s->bindq, "vgpu-sched is shutting down");
    vs_server_stop(s->srv); /* waits for the Binds in progress */
    vs_server_stop(s->msrv);
    vs_dashboard_free(s->dashboard);
    vs_memtrim_free(s->trim);
    vs_requeue_stop(s->requeue); /* its nudges write through async */
    vs_async_stop(s->async);     /* a failed patch unreserves in the store */
    vs_mirrors_stop(s->mirrors); /* after the servers: Binds use it; before the store it reads */
    vs_leader_free(s->leader);
    vs_store_free(s->store);
    vs_mirrors_free(s->mirrors); /* after the store: its hooks kick it */
    vs_access_free(s->access);   /* after the store and the leader: their informers report to it */
    vs_async_free(s->async);     /* after the store: its pod hook forgets patch states */
    vs_decisions_free(s->decisions); /* after the store: its pod hooks read and forget them */
    vs_requeue_free(s->requeue);     /* after the store: its informers report to it */
    vs_pending_free(s->pending);     /* after the store: its pod hook forgets entries */
    vs_bindq_free(s->bindq);
    vs_nodelock_free(s->lock);
    vs_kube_free(s->kube);
    vs_kube_config_cleanup(&s->kc);
    vs_memapi_stop(s->mem);
    vs_metrics_free(s->metrics);
    vs_holds_free(s->holds);
    vs_frag_stats_free(s->frag);
    vs_devcfg_cleanup(&s->cfg);
    free(s);
}

void vs_service_fail_binds(struct vs_service *s, const char *why)
{
    if (s && s->bindq)
        vs_bindq_fail_all(s->bindq, why);
}

/* How long a node lock may outlive its holder's allocation before the next Bind tries it. */
#define VS_HANDOFF_GRACE_MS 2000

static void hook_node(void *ctx, const char *name, const char *lock, const char *rv, bool deleted,
                      bool relist)
{
    struct vs_service *s = ctx;
    vs_bindq_node_event_rv(s->bindq, name, lock, rv, deleted, relist);
}

static void hook_pod(void *ctx, const char *uid, const char *ns, const char *name, bool deleted)
{
    struct vs_service *s = ctx;
    vs_bindq_pod_event(s->bindq, uid, ns, name, deleted);
    vs_pending_forget(s->pending, uid); /* deleted or ended: no longer pending */
    vs_mirrors_kick(s->mirrors);        /* its mirrors are orphans now */
    vs_decisions_forget(s->decisions, uid);
    if (deleted) {
        vs_requeue_forget(s->requeue, uid);
        vs_async_forget(s->async, uid);
    }
}

static void hook_pod_bound(void *ctx, const char *uid, const char *ns, const char *name,
                           bool labeled)
{
    struct vs_service *s = ctx;
    vs_ext_pod_bound(&s->app, uid, ns, name, labeled);
}

static void hook_pod_allocated(void *ctx, const char *ns, const char *name)
{
    struct vs_service *s = ctx;
    vs_bindq_pod_allocated(s->bindq, ns, name);
}

static void hook_expired(void *ctx)
{
    struct vs_service *s = ctx;
    vs_bindq_recheck(s->bindq);
    vs_mirrors_kick(s->mirrors);
}

static void hook_freed(void *ctx)
{
    struct vs_service *s = ctx;
    vs_requeue_freed(s->requeue, mono_s());
    vs_mirrors_kick(s->mirrors); /* a slice or claim changed, or usage left */
}

static bool events_allowed(void *ctx)
{
    struct vs_service *s = ctx;
    return vs_access_available(s->access, VS_API_EVENTS);
}

/* Events wait while allocations are under way (async.h vs_async_set_busy). */
static bool binds_active(void *ctx)
{
    struct vs_service *s = ctx;
    return vs_bindq_active(s->bindq) > 0;
}

static void binds_idle(void *ctx)
{
    struct vs_service *s = ctx;
    vs_async_kick(s->async);
}

static uint64_t api_requests(void *ctx)
{
    struct vs_service *s = ctx;
    struct vs_kube_stats ks;
    vs_kube_stats(s->kube, &ks);
    return ks.requests;
}

static void requeue_nudge(void *ctx, const char *uid, const char *ns, const char *name)
{
    struct vs_service *s = ctx;
    vs_ext_nudge(&s->app, uid, ns, name);
}

int vs_service_port(const struct vs_service *s)
{
    return vs_server_port(s->srv);
}

int vs_service_metrics_port(const struct vs_service *s)
{
    return s->msrv ? vs_server_port(s->msrv) : 0;
}

const char *vs_service_dashboard_base(const struct vs_service *s)
{
    return s->dashboard ? vs_dashboard_base(s->dashboard) : NULL;
}

const char *vs_service_api_url(const struct vs_service *s)
{
    return s->kc.server;
}

unsigned vs_service_repairs(struct vs_service *s)
{
    return atomic_load(&s->repairs);
}

bool vs_service_synced(const struct vs_service *s)
{
    /* Without --leader-elect the replica's one term serves once the initial lists are in. */
    return vs_store_synced(s->store) && (s->leader_elect || vs_leader_term(s->leader, NULL));
}

struct vs_service *vs_service_start(const struct vs_service_config *c, int *exit_code,
                                    struct vs_errbuf *eb)
{
    *exit_code = 2;
    /* Each Filter allocates and frees about a megabyte (results for thousands of candidates).
     * With glibc's defaults the request threads' arenas give that back to the kernel after
     * every request and fault it in again (page clearing was an eighth of a 5,000-candidate
     * Filter): keep up to 16 MiB of free memory per arena, and serve blocks below 4 MiB from
     * the arenas instead of fresh mappings. The free memory goes back once the service is
     * quiet (memtrim, started below). */
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    /* glibc gives each thread that meets a locked arena a new one (up to 8 per core), and every
     * arena keeps its own free memory. Eight arenas: with two, the HTTPS server's malloc'd
     * connection pools (server.c) made the Filter handler's CPU bimodal (suspected: contention
     * on the two); under waves of pods (e2e soak, docs/reliability.md) RSS grew 36 KiB a wave
     * with glibc's default (16 arenas on 2 cores), 13 KiB with eight. MALLOC_ARENA_MAX still
     * wins if set. */
    if (!getenv("MALLOC_ARENA_MAX"))
        mallopt(M_ARENA_MAX, 8);
    const struct vs_node_policy *np;
    struct vs_gpu_policy gp;
    if (vs_policy_parse_node(c->node_policy, "--node-scheduler-policy", &np, eb) ||
        vs_policy_parse_gpu(c->gpu_policy, "--gpu-scheduler-policy", &gp, eb))
        return NULL;
    enum vs_gpu_preemption pmode = VS_GPU_PREEMPT_FILTER;
    bool pauto = false;
    const char *gpm = c->gpu_preemption ? c->gpu_preemption : "auto";
    if (strcasecmp(gpm, "auto") == 0)
        pauto = true;
    else if (strcasecmp(gpm, "verb") == 0)
        pmode = VS_GPU_PREEMPT_VERB;
    else if (strcasecmp(gpm, "filter") == 0)
        pmode = VS_GPU_PREEMPT_FILTER;
    else if (strcasecmp(gpm, "off") == 0)
        pmode = VS_GPU_PREEMPT_OFF;
    else {
        vs_err_set(eb, VS_ERR_INVAL,
                   "invalid --gpu-preemption \"%s\" (want auto, verb, filter or off)", gpm);
        return NULL;
    }
    if (!(c->bind_queue_saturation >= 0) || isinf(c->bind_queue_saturation)) {
        vs_err_set(eb, VS_ERR_INVAL,
                   "invalid --bind-queue-saturation %g (want 0 or a positive share)",
                   c->bind_queue_saturation);
        return NULL;
    }
    if (isnan(c->kube_qps) || isinf(c->kube_qps)) {
        vs_err_set(eb, VS_ERR_INVAL, "invalid --kube-qps %g (want a number of requests per second)",
                   c->kube_qps);
        return NULL;
    }
    enum vs_mirror_mode mmode;
    if (vs_mirror_mode_parse(c->dra_mirror ? c->dra_mirror : "off", &mmode, eb))
        return NULL;
    if (c->optional_retry_ms <= 0) {
        vs_err_set(eb, VS_ERR_INVAL, "invalid --optional-api-retry (want a positive duration)");
        return NULL;
    }
    if (c->cluster && c->kubeconfig) {
        vs_err_set(eb, VS_ERR_INVAL, "--cluster and --kubeconfig exclude each other");
        return NULL;
    }
    struct vs_service *s = calloc(1, sizeof(*s));
    if (!s || vs_devcfg_init(&s->cfg)) {
        free(s);
        *exit_code = 1;
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->cfg.enable_ascend = c->enable_ascend;
    s->cfg.enable_iluvatar = c->enable_iluvatar;
    if (c->device_config ? vs_devcfg_load(&s->cfg, c->device_config, eb)
                         : vs_devcfg_finish(&s->cfg, eb))
        goto fail;
    if (c->cluster) {
        s->mem = vs_memapi_start(eb);
        if (!s->mem || vs_memapi_load_file(s->mem, c->cluster, warn_log, NULL, eb))
            goto fail;
        s->kc.server = strdup(vs_memapi_url(s->mem));
        s->kc.namespace = strdup("default");
        vs_log(VS_LOG_INFO, "embedded_cluster", "file=%s api=%s", c->cluster, s->kc.server);
    } else if (vs_kube_config_load(c->kubeconfig, &s->kc, eb)) {
        goto fail;
    }
    struct vs_kube_opts ko = {.qps = c->kube_qps,
                              .burst = (int)c->kube_burst,
                              .timeout_s = (int)((c->kube_timeout_ms + 999) / 1000),
                              .user_agent = "vgpu-sched/" VS_VERSION};
    *exit_code = 1;
    if (!(s->kube = vs_kube_new(&s->kc, &ko, eb)))
        goto fail;
    if (pauto)
        pmode = preemption_auto(s->kube);
    else
        vs_log(VS_LOG_INFO, "gpu_preemption", "mode=%s source=flag",
               pmode == VS_GPU_PREEMPT_VERB     ? "verb"
               : pmode == VS_GPU_PREEMPT_FILTER ? "filter"
                                                : "off");
    /* What this configuration may lack: a missing required permission stops here (exit 2);
     * a missing optional one degrades its feature (access.h). */
    struct vs_access_opts ao = {.lease_ns = c->lease_ns, .retry_s = c->optional_retry_ms / 1000.0};
    ao.use[VS_API_PDB] = pmode != VS_GPU_PREEMPT_OFF;
    ao.use[VS_API_EVICTION] = pmode == VS_GPU_PREEMPT_FILTER;
    ao.use[VS_API_LEASE] = c->leader_elect;
    ao.use[VS_API_EVENTS] = true;
    ao.use[VS_API_DRA_CLASSES] = true;
    ao.use[VS_API_DRA_SLICES] = true;
    ao.use[VS_API_DRA_CLAIMS] = true;
    if (!(s->access = vs_access_new(s->kube, &ao))) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (vs_access_check(s->access, eb)) {
        *exit_code = 2;
        goto fail;
    }
    if (vs_access_start(s->access, eb))
        goto fail;
    struct vs_store_opts so = {.node_label_selector = c->node_label_selector,
                               .cfg = &s->cfg,
                               .reservation_ttl = c->reservation_ttl_ms / 1000,
                               .watch_pdbs = pmode != VS_GPU_PREEMPT_OFF,
                               .access = s->access,
                               .watch_dra = true,
                               .watch_dra_ledger = true};
    s->metrics = vs_metrics_new();
    struct vs_bindq_opts bo = {.wait_ms = c->lock_retry_ms,
                               .depth = (int)c->bind_queue_depth,
                               .saturation = c->bind_queue_saturation,
                               .expect_ttl_s = c->reservation_ttl_ms / 1000,
                               .metrics = s->metrics,
                               .handoff_grace_ms = VS_HANDOFF_GRACE_MS,
                               .on_idle = binds_idle,
                               .idle_ctx = s};
    if (!s->metrics || !(s->bindq = vs_bindq_new(&bo))) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* Refused pods are nudged 1 s after a change frees capacity (kube-scheduler's own retry on
     * the same event comes first), if refused within 5 min before it (kube-scheduler's
     * podMaxInUnschedulablePodsDuration: older refusals are retried by it anyway). */
    struct vs_requeue_opts ro = {.delay_s = 1.0,
                                 .window_s = 300.0,
                                 .max_pods = 100000,
                                 .thread = true,
                                 .nudge = requeue_nudge,
                                 .ctx = s};
    if (!(s->requeue = vs_requeue_new(&ro))) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* The arenas' free memory goes back to the kernel once no API request was made for 1 s
     * (at most every 5 s): a wave of pods leaves RSS where its live heap is (memtrim.h). */
    struct vs_memtrim_opts mo = {
        .quiet_s = 1.0, .min_interval_s = 5.0, .thread = true, .activity = api_requests, .ctx = s};
    if (!(s->trim = vs_memtrim_start(&mo))) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* The dashboard's list of refused pods (before the store: its pod hook forgets them). */
    if (c->dashboard) {
        struct vs_pending_opts po = {.cfg = &s->cfg};
        if (!(s->pending = vs_pending_new(&po))) {
            vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    /* Before the store starts: its pod hooks read and drop them. */
    if (!c->patch_at_filter && !(s->decisions = vs_decisions_new())) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* Before the store starts: its pod hook drops a deleted pod's patch state. */
    s->async = vs_async_new(s->kube, vs_ext_patch_failed, &s->app);
    if (s->async) {
        vs_async_set_event_gate(s->async, events_allowed, s);
        vs_async_set_patch_gate(s->async, vs_ext_patch_superseded, &s->app);
        vs_async_set_busy(s->async, binds_active, s);
    }
    if (!(s->store = vs_store_new(s->kube, &so, eb)))
        goto fail;
    if (mmode != VS_MIRROR_OFF) {
        const char *mns = c->dra_mirror_ns && *c->dra_mirror_ns ? c->dra_mirror_ns
                          : c->pod_ns && *c->pod_ns             ? c->pod_ns
                          : s->kc.namespace && *s->kc.namespace ? s->kc.namespace
                                                                : "default";
        struct vs_mirrors_opts mo2 = {.kube = s->kube,
                                      .store = s->store,
                                      .mode = mmode,
                                      .ns = mns,
                                      .period_s = 60.0,
                                      .min_gap_s = 1.0};
        if (!(s->mirrors = vs_mirrors_new(&mo2))) {
            vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        vs_log(VS_LOG_INFO, "dra_mirror", "mode=%s namespace=%s", vs_mirror_mode_name(mmode), mns);
    }
    struct vs_store_hooks hooks = {.node = hook_node,
                                   .pod = hook_pod,
                                   .pod_allocated = hook_pod_allocated,
                                   .pod_bound = c->patch_at_filter ? NULL : hook_pod_bound,
                                   .expired = hook_expired,
                                   .freed = hook_freed,
                                   .ctx = s};
    vs_store_set_hooks(s->store, &hooks);
    if (vs_store_start(s->store, eb))
        goto fail;
    struct vs_leader_opts lo = {.enabled = c->leader_elect,
                                .lease_name = c->lease_name,
                                .lease_ns = c->lease_ns,
                                .pod_name = c->pod_name,
                                .pod_ns = c->pod_ns,
                                .access = s->access};
    if (!(s->leader = vs_leader_new(s->kube, &lo, eb))) {
        *exit_code = 2;
        goto fail;
    }
    s->lock = vs_nodelock_new(s->kube, c->lock_timeout_ms / 1000, now_s);
    s->frag = vs_frag_stats_new();
    s->leader_elect = c->leader_elect;
    struct vs_leader_hooks lhooks = {.ctx = s,
                                     .start = term_start,
                                     .ready = term_ready,
                                     .serving = term_serving,
                                     .end = term_end};
    vs_leader_set_hooks(s->leader, &lhooks);
    if (!s->lock || vs_leader_start(s->leader, eb))
        goto fail;
    if (s->mirrors && !vs_mirrors_start(s->mirrors, s->leader)) {
        vs_err_set(eb, VS_ERR_NOMEM, "cannot start the mirror claims' thread");
        goto fail;
    }
    s->app = (struct vs_app){.store = s->store,
                             .kube = s->kube,
                             .lock = s->lock,
                             .bindq = s->bindq,
                             .leader = s->leader,
                             .metrics = s->metrics,
                             .cfg = &s->cfg,
                             .scheduler_name = c->scheduler_name,
                             .node_policy = c->node_policy,
                             .gpu_policy = c->gpu_policy,
                             .bind_wait_ms = (int)c->bind_wait_ms,
                             .decisions = s->decisions,
                             .legacy_metrics = c->legacy_metrics,
                             .preemption = pmode,
                             .holds = s->holds = vs_holds_new(),
                             .now = now_s,
                             .frag_stats = s->frag,
                             .requeue = s->requeue,
                             .pending = s->pending,
                             .access = s->access,
                             .mirrors = s->mirrors};
    if (!s->lock || !s->metrics || !s->frag || !s->async || !s->holds) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    s->app.async = s->async;
    s->wo = (struct vs_webhook_opts){.scheduler_name = c->scheduler_name,
                                     .force_overwrite_default = c->force_overwrite,
                                     .cfg = &s->cfg,
                                     .quota = quota_cb,
                                     .quota_ctx = s->store,
                                     .dra_conflicts = dra_conflicts_cb,
                                     .dra_ctx = s->store};
    s->app.webhook = &s->wo;
    s->routes[0] = (struct vs_route){"POST", "/filter", vs_ext_filter, &s->app, true, false};
    s->routes[1] = (struct vs_route){"POST", "/bind", vs_ext_bind, &s->app, true, true};
    s->routes[2] = (struct vs_route){"POST", "/webhook", vs_ext_webhook, &s->app, true, false};
    s->routes[3] = (struct vs_route){"GET", "/healthz", vs_ext_healthz, &s->app, false, false};
    s->routes[4] = (struct vs_route){"GET", "/readyz", vs_ext_readyz, &s->app, false, false};
    s->routes[5] = (struct vs_route){"POST", "/preempt", vs_ext_preempt, &s->app, true, false};
    s->routes[6] =
        (struct vs_route){"POST", "/prioritize", vs_ext_prioritize, &s->app, true, false};
    s->mroutes[0] = (struct vs_route){"GET", "/metrics", vs_ext_metrics, &s->app, false, false};
    s->mroutes[1] = (struct vs_route){"GET", "/healthz", vs_ext_healthz, &s->app, false, false};
    struct vs_server_opts sopts = {.bind = c->http_bind,
                                   .cert_file = c->cert_file,
                                   .key_file = c->key_file,
                                   .client_ca_file = c->client_ca_file,
                                   .tls_min_version = c->tls_min_version,
                                   .tls_cipher_suites = c->tls_cipher_suites,
                                   .threads = (unsigned)(c->http_threads > 0 ? c->http_threads : 8),
                                   .routes = s->routes,
                                   .n_routes = 7,
                                   .name = "main",
                                   .accepted = &s->app.http_connections};
    *exit_code = 2;
    if (!(s->srv = vs_server_start(&sopts, eb)))
        goto fail;
    size_t nm = 2;
    if (c->dashboard) {
        struct vs_dashboard_opts dopts = {.base_path = c->dashboard_base,
                                          .frame_ancestors = c->dashboard_ancestors,
                                          .app = &s->app};
        if (!(s->dashboard = vs_dashboard_new(&dopts, eb)))
            goto fail;
        nm += vs_dashboard_routes(s->dashboard, s->mroutes + nm);
    }
    /* With the dashboard: a what-if may take a thread for a while, and its body is capped. */
    struct vs_server_opts mopts = {.bind = c->metrics_bind,
                                   .threads = s->dashboard ? 4 : 2,
                                   .max_body = s->dashboard ? VS_WHATIF_MAX_BODY : 0,
                                   .routes = s->mroutes,
                                   .n_routes = nm,
                                   .name = "metrics"};
    if (c->metrics_bind && *c->metrics_bind && !(s->msrv = vs_server_start(&mopts, eb)))
        goto fail;
    *exit_code = 0;
    return s;
fail:
    vs_service_stop(s);
    return NULL;
}

int vs_serve_main(int argc, char **argv)
{
    struct serve_opts o = {.log_format = "text"};
    vs_service_config_defaults(&o.c);
    enum vs_flags_result fr =
        vs_flags_parse(flags, N_FLAGS, argc, argv, &o, "vgpu-sched", stderr, warn_ignored, NULL);
    if (fr == VS_FLAGS_HELP) {
        vs_serve_usage(stdout);
        return 0;
    }
    if (fr != VS_FLAGS_OK)
        return 2;
    if (strcmp(o.log_format, "text") != 0 && strcmp(o.log_format, "json") != 0) {
        fprintf(stderr, "vgpu-sched: invalid --log-format \"%s\" (want text or json)\n",
                o.log_format);
        return 2;
    }
    vs_log_setup(o.debug || o.verbosity >= 4 ? VS_LOG_DEBUG : VS_LOG_INFO,
                 strcmp(o.log_format, "json") == 0, 2);
    if (o.profiling)
        vs_log(VS_LOG_WARN, "flag_ignored", "flag=--profiling note=\"no pprof endpoints\"");
    if (!o.c.cluster) {
        o.c.pod_name = getenv("POD_NAME");
        o.c.pod_ns = getenv("POD_NAMESPACE");
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Every waiting Bind keeps a connection open: allow as many as the hard limit. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int rc;
    struct vs_errbuf eb;
    struct vs_service *s = vs_service_start(&o.c, &rc, &eb);
    if (!s) {
        fprintf(stderr, "vgpu-sched: %s\n", eb.msg);
        curl_global_cleanup();
        return rc;
    }
    vs_log(VS_LOG_INFO, "serving", "bind=%s port=%d tls=%d metrics_port=%d dashboard=%s",
           o.c.http_bind, vs_service_port(s), o.c.cert_file && *o.c.cert_file,
           vs_service_metrics_port(s),
           vs_service_dashboard_base(s) && vs_service_metrics_port(s) ? vs_service_dashboard_base(s)
                                                                      : "off");
    /* The port line on stdout lets scripts and tests find a port-0 listener. */
    printf("listening on port %d\n", vs_service_port(s));
    fflush(stdout);
    while (!g_stop)
        usleep(100 * 1000);
    vs_log(VS_LOG_INFO, "shutdown", "signal=%s", signal_name(g_stop));
    vs_service_stop(s);
    curl_global_cleanup();
    return 0;
}
