/* serve: `vgpu-sched serve` — HAMi's scheduler flags (spec/hami-compat.md §8.1) plus ours
 * (design.md §2.1), wiring of store, leader watch, node lock, HTTP listeners, and the embedded
 * `--cluster` mode (an in-process API server loaded from a file). */
#ifndef VS_SERVE_H
#define VS_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"
#include "flags.h"

/* Everything `serve` wires, independent of flag parsing (tests start a service from this). */
struct vs_service_config {
    const char *http_bind, *cert_file, *key_file, *client_ca_file, *scheduler_name;
    const char *node_policy, *gpu_policy, *metrics_bind, *node_label_selector;
    const char *lease_name, *lease_ns, *device_config, *kubeconfig, *cluster;
    const char *pod_name, *pod_ns; /* from $POD_NAME / $POD_NAMESPACE */
    const char *tls_min_version, *tls_cipher_suites;
    const char *gpu_preemption; /* auto | verb | filter | off */
    const char *dra_mirror;     /* --dra-mirror: off | fence | share (mirror.h) */
    const char *dra_mirror_ns;  /* --dra-mirror-namespace; NULL or "": the service's namespace */
    double kube_qps;
    double bind_queue_saturation; /* --bind-queue-saturation (0 = off) */
    long long kube_burst, kube_timeout_ms, lock_timeout_ms, lock_retry_ms;
    long long reservation_ttl_ms, http_threads, bind_wait_ms, bind_queue_depth;
    long long optional_retry_ms; /* --optional-api-retry: re-check pace of a missing optional API */
    bool force_overwrite, leader_elect, legacy_metrics;
    bool patch_at_filter; /* --patch-at-filter: Filter patches the pod (HAMi's way) */
    bool enable_ascend, enable_iluvatar; /* HAMi's switches for the vnpus and iluvatars backends */
    bool dashboard;                      /* --dashboard (default true) */
    const char *dashboard_base;          /* --dashboard-base-path ("/") */
    const char *dashboard_ancestors;     /* --dashboard-frame-ancestors ("'none'") */
};

struct vs_service;

/* Defaults of every field (HAMi's flag defaults, and ours). */
void vs_service_config_defaults(struct vs_service_config *c);
/* Starts the whole service. On error returns NULL with eb; *exit_code is 2 for configuration
 * problems (a missing RBAC permission Filter or Bind needs is one: access.h) and 1 for runtime
 * failures. */
struct vs_service *vs_service_start(const struct vs_service_config *c, int *exit_code,
                                    struct vs_errbuf *eb);
int vs_service_port(const struct vs_service *s);
int vs_service_metrics_port(const struct vs_service *s);
bool vs_service_synced(const struct vs_service *s);
/* Leadership terms whose repair of node locks (run as the term starts serving) is done. */
unsigned vs_service_repairs(struct vs_service *s);
/* The dashboard's base path on the metrics listener ("/" by default), NULL when it is off. */
const char *vs_service_dashboard_base(const struct vs_service *s);
/* URL of the API server the service talks to (embedded mode: the in-process one). Borrowed. */
const char *vs_service_api_url(const struct vs_service *s);
/* Fails every Bind waiting in a node's bind queue with `why` (e.g. leadership lost); later
 * Binds queue as usual. vs_service_stop does the same with "vgpu-sched is shutting down". */
void vs_service_fail_binds(struct vs_service *s, const char *why);
void vs_service_stop(struct vs_service *s);

/* Returns the exit code: 0 clean shutdown on SIGTERM/SIGINT (and after -h/--help), 2 bad flags
 * or configuration (including a missing RBAC permission that Filter or Bind needs), 1 runtime
 * failure. */
int vs_serve_main(int argc, char **argv);
/* Prints `serve --help`: what it is and every flag from the table the parser reads. */
void vs_serve_usage(FILE *f);
/* The flag table of `serve` (borrowed, static), n rows. */
const struct vs_flag *vs_serve_flags(size_t *n);

#endif
