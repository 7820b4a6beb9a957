/* fakeapi: an in-process fake kube-apiserver for tests (libmicrohttpd + jansson). Serves the
 * REST subset vgpu-sched uses (spec/k8s-protocols.md §5) for Nodes, Pods, ResourceQuotas,
 * Events, Leases and PodDisruptionBudgets, with a global resourceVersion counter, a bounded watch
 * history, fault injection (status codes, delays, dropped watches, 410 expiry both as an HTTP
 * status and as an ERROR event), an RBAC-like authorization table answering 403 and
 * SelfSubjectAccessReviews, and resources it can stop serving (404). Every function is thread-safe;
 * one mutex guards the whole state. */
#ifndef VS_FAKEAPI_H
#define VS_FAKEAPI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vs_fakeapi_opts {
    int port;                  /* 0 = any free port; always bound to 127.0.0.1 */
    const char *tls_cert_file; /* PEM; with tls_key_file the fake serves HTTPS */
    const char *tls_key_file;
    const char *token;   /* required bearer token, NULL = no authentication */
    size_t history;      /* watch events kept for resuming; 0 = 4096 */
    int bookmark_ms;     /* BOOKMARK interval on idle watches that asked for them; 0 = 1000 */
    bool quiet;          /* no diagnostics on stderr */
    bool no_request_log; /* keep no record of requests (vs_fakeapi_count answers 0): for a
                          * long-running server, whose record would only grow */
};

struct vs_fakeapi;

/* Starts serving (o may be NULL). NULL when the daemon cannot start (reason on stderr). */
struct vs_fakeapi *vs_fakeapi_start(const struct vs_fakeapi_opts *o);
/* Ends open watches, stops the daemon and frees everything. Accepts NULL. */
void vs_fakeapi_stop(struct vs_fakeapi *api);

int vs_fakeapi_port(const struct vs_fakeapi *api);
/* "http://127.0.0.1:PORT" or https; borrowed, valid until vs_fakeapi_stop. */
const char *vs_fakeapi_url(const struct vs_fakeapi *api);

/* Creates or replaces an object given as JSON text (kind Node, Pod, Lease, ResourceQuota,
 * DeviceClass or Event; namespace defaults to "default" for namespaced kinds). Assigns the next
 * resourceVersion, a uid when missing (a replaced object keeps its uid) and emits ADDED or
 * MODIFIED. Returns the new resourceVersion, 0 on bad input. */
uint64_t vs_fakeapi_put(struct vs_fakeapi *api, const char *json_object);
/* Deletes an object (kind "Pod" or resource "pods"; ns NULL for cluster-scoped) and emits
 * DELETED. Returns 0, or -1 when it does not exist. */
int vs_fakeapi_delete(struct vs_fakeapi *api, const char *kind, const char *ns, const char *name);
/* A deep copy of the stored object (free with json_decref), NULL when absent. */
json_t *vs_fakeapi_get(struct vs_fakeapi *api, const char *kind, const char *ns, const char *name);
/* The current (latest) global resourceVersion. */
uint64_t vs_fakeapi_rv(struct vs_fakeapi *api);

/* Requests seen so far whose method matches and whose path starts with path_prefix. method is
 * an HTTP method ("GET" counts lists and watches too), or "LIST"/"WATCH" for only those, or
 * "*" for any. */
unsigned vs_fakeapi_count(struct vs_fakeapi *api, const char *method, const char *path_prefix);
void vs_fakeapi_reset_counts(struct vs_fakeapi *api);
/* TCP connections accepted so far. */
unsigned vs_fakeapi_connections(struct vs_fakeapi *api);
/* Open watch streams that have not been dropped or ended. */
int vs_fakeapi_watchers(struct vs_fakeapi *api);
/* Waits until at least n watch streams are open; false after timeout_ms. */
bool vs_fakeapi_wait_watchers(struct vs_fakeapi *api, int n, int timeout_ms);

/* The next `count` requests matching (method, prefix) as above answer `status` with a Status
 * body (message "injected fault"). */
void vs_fakeapi_fault(struct vs_fakeapi *api, const char *method, const char *path_prefix,
                      int status, int count);
/* Same with a raw body ("" = empty, NULL = the Status body) and a Retry-After header in
 * seconds when retry_after >= 0. */
void vs_fakeapi_fault_body(struct vs_fakeapi *api, const char *method, const char *path_prefix,
                           int status, int count, const char *body, int retry_after);
/* Every matching request waits ms before it is answered (0 removes the delay). */
void vs_fakeapi_delay(struct vs_fakeapi *api, const char *method, const char *path_prefix, int ms);
/* Breaks every open watch stream now (connection closed without the final chunk). */
void vs_fakeapi_drop_watches(struct vs_fakeapi *api);
/* Compacts `resource` ("pods" or "Pod"): every resourceVersion and continue token issued so
 * far becomes too old. The next watch from such a version answers HTTP 410; open watches are
 * left alone; a LIST continuing such a token answers 410. */
void vs_fakeapi_expire(struct vs_fakeapi *api, const char *resource);
/* Same compaction, reported the other way: open watches on the resource receive an ERROR event
 * with a 410 Status and end, and new watches from an old version get 200 + that ERROR event. */
void vs_fakeapi_expire_event(struct vs_fakeapi *api, const char *resource);
/* The gitVersion GET /version reports (default "v1.36.3"; major and minor are derived). */
void vs_fakeapi_set_version(struct vs_fakeapi *api, const char *git_version);
/* Whether a Binding's metadata.labels are copied onto the pod with spec.nodeName, as
 * kube-apiserver 1.35+ does (PodTopologyLabelsAdmission, on by default): true by default; false
 * acts as an older API server (its annotations are copied either way). */
void vs_fakeapi_binding_labels(struct vs_fakeapi *api, bool copied);
/* Changes the required bearer token (NULL = no authentication). */
void vs_fakeapi_set_token(struct vs_fakeapi *api, const char *token);

/* Authorization, like kube-apiserver's RBAC. Until the first vs_fakeapi_allow every request is
 * allowed (embedded mode, most tests). From then on a request for an object is allowed only
 * when a grant covers its API group ("" core, "policy", "coordination.k8s.io"), its resource
 * ("pods", or "pods/binding" for a subresource), its verb (get, list, watch, create, update,
 * patch, delete, deletecollection) and its namespace; otherwise it is answered 403 with the
 * Status kube-apiserver writes ("pods is forbidden: User \"u\" cannot list resource \"pods\" in
 * API group \"\" at the cluster scope"). verbs: comma-separated, or "*"; group and resource may
 * be "*". ns NULL: every namespace and the cluster scope (a ClusterRole and its
 * ClusterRoleBinding); else that namespace only (a Role). Requests that name no object
 * (/version) are always allowed, and so are SelfSubjectAccessReviews
 * (POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews, answered from the grants) and
 * SelfSubjectReviews (POST /apis/authentication.k8s.io/v1/selfsubjectreviews: the user), as for
 * every authenticated user of a cluster. False when out of memory. */
bool vs_fakeapi_allow(struct vs_fakeapi *api, const char *group, const char *resource,
                      const char *verbs, const char *ns);
/* Drops every grant: all requests are allowed again. */
void vs_fakeapi_allow_all(struct vs_fakeapi *api);
/* The user 403 messages and SelfSubjectReviews name (default "admin"; copied). */
void vs_fakeapi_set_user(struct vs_fakeapi *api, const char *user);
/* Whether a kind ("PodDisruptionBudget" or "poddisruptionbudgets") is served: an unserved one
 * answers every request 404 "the server could not find the requested resource", as for an API
 * group the server does not have (after authorization, as kube-apiserver). -1 for an unknown
 * kind. */
int vs_fakeapi_unserve(struct vs_fakeapi *api, const char *resource, bool unserved);

#endif
