/* access: the API permissions vgpu-sched needs, and those it can do without. At start-up it asks
 * the API server once per permission with a SelfSubjectAccessReview (authorization.k8s.io/v1;
 * every authenticated user may create them, ClusterRole system:basic-user), which changes
 * nothing. A permission Filter, Bind or the caches need (nodes and pods get/list/watch/patch,
 * pods/binding create, resourcequotas list/watch) that is missing stops the start with the RBAC
 * rule to add. An optional one that is missing — or whose API the server does not serve —
 * degrades one feature instead: said in one log line when it goes (and one when it comes back),
 * exported as vgpu_sched_optional_api_available{api,feature} and in /readyz's "degraded", and
 * checked again every retry interval in case RBAC is fixed. The optional APIs an informer reads
 * (PodDisruptionBudgets, the Lease, DeviceClasses, ResourceSlices, ResourceClaims) are also
 * reported by their informer's LIST and WATCH (vs_access_report), so a 404 or a permission removed
 * later counts too. Thread-safe. */
#ifndef VS_ACCESS_H
#define VS_ACCESS_H

#include <jansson.h>
#include <stdbool.h>

#include "err.h"
#include "kube.h"

/* The optional APIs. Each degrades one feature when missing (docs/migration.md lists them). */
enum vs_api {
    VS_API_PDB,      /* list, watch poddisruptionbudgets.policy: preemption ranks plans by PDBs */
    VS_API_EVICTION, /* create pods/eviction: filter-mode preemption evicts through it */
    VS_API_LEASE,    /* get, list, watch leases in the Lease namespace: --leader-elect */
    VS_API_EVENTS,   /* create events (core/v1, as HAMi): FilteringFailed, BindingSucceed, ... */
    VS_API_DRA_CLASSES, /* list, watch deviceclasses.resource.k8s.io: the DRA guard (dra.h) */
    VS_API_DRA_SLICES,  /* list, watch resourceslices.resource.k8s.io: the DRA ledger (model.h) */
    VS_API_DRA_CLAIMS,  /* list, watch resourceclaims.resource.k8s.io: the DRA ledger */
    VS_API_COUNT
};

struct vs_access_opts {
    bool use[VS_API_COUNT]; /* the optional APIs this configuration uses (the others are not
                             * checked, not exported and always "available") */
    const char *lease_ns;   /* with use[VS_API_LEASE]: --leader-elect-resource-namespace */
    double retry_s;         /* pace of the re-checks of a missing optional API (<= 0: 60) */
};

struct vs_access;

/* Copies what it needs from o. NULL when out of memory. */
struct vs_access *vs_access_new(struct vs_kube *k, const struct vs_access_opts *o);
/* Stops the re-check thread. Accepts NULL. */
void vs_access_free(struct vs_access *a);

/* The start-up check. VS_ERR_AUTH when a required permission is missing: each is logged
 * (event=missing_permission) and eb holds "missing permission: patch pods (add rule apiGroups
 * [\"\"] resources [\"pods\"] verbs [\"patch\"] to the ClusterRole bound to USER)", several
 * joined with "; " (as many as fit, then "and N more"). USER comes from a SelfSubjectReview
 * (authentication.k8s.io/v1), else "vgpu-sched's user". A missing optional permission is logged
 * (event=optional_api_missing) and the service goes on. When SelfSubjectAccessReviews cannot be
 * made (forbidden, not served, an error) one warning is logged and VS_OK returned: nothing
 * blocks the start then, and missing permissions show as the API's errors. */
enum vs_err vs_access_check(struct vs_access *a, struct vs_errbuf *eb);
/* Starts the thread that re-checks, every retry interval, the missing optional permissions no
 * informer reads (pods/eviction, events) with SelfSubjectAccessReviews. */
enum vs_err vs_access_start(struct vs_access *a, struct vs_errbuf *eb);

/* Whether an optional API may be used now (true for NULL a and for unused APIs). */
bool vs_access_available(const struct vs_access *a, enum vs_api api);
/* What a request to an optional API found: VS_OK available, VS_ERR_AUTH forbidden (401/403),
 * VS_ERR_NOTFOUND not served (404); any other error says nothing about access and is ignored.
 * A change of state is logged once. NULL a: nothing. */
void vs_access_report(struct vs_access *a, enum vs_api api, enum vs_err err);
/* The retry interval, seconds. */
double vs_access_retry_s(const struct vs_access *a);

/* The vgpu_sched_optional_api_available family (HELP, TYPE, one sample per used API, 1 or 0),
 * "" when none is used. New string (NULL when out of memory). */
char *vs_access_metrics(const struct vs_access *a);
/* The degraded features for /readyz: [{"api","feature","effect","reason"}] (new reference). */
json_t *vs_access_degraded(const struct vs_access *a);

#endif
