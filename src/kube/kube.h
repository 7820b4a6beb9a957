/* kube: a libcurl (OpenSSL) client for the kube-apiserver (spec/k8s-protocols.md §5–6):
 * configuration from a kubeconfig or the in-cluster service account, plain requests with
 * Status-aware errors, paginated LIST, WATCH streams, and an informer loop (list, then watch
 * from the list's resourceVersion with bookmarks; relist on 410; reconnect with capped
 * exponential backoff and jitter). A client-side token-bucket limiter applies --kube-qps and
 * --kube-burst. Thread-safe: every call may come from any thread (curl handles are per call
 * or pooled internally). */
#ifndef VS_KUBE_H
#define VS_KUBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vs_kube_config {
    char *server;    /* https://host:port, no trailing slash */
    char *ca_file;   /* PEM file, or NULL */
    char *ca_data;   /* PEM text (decoded certificate-authority-data), or NULL */
    char *cert_file; /* client certificate, or NULL */
    char *cert_data; /* PEM text, or NULL */
    char *key_file;
    char *key_data;
    char *token;      /* bearer token, or NULL */
    char *token_file; /* re-read at least every minute and after a 401, or NULL */
    bool insecure;    /* insecure-skip-tls-verify */
    char *namespace;  /* namespace of the context / service account ("default" if unknown) */
};

/* Loads the configuration: `path` (a kubeconfig), else $KUBECONFIG, else ~/.kube/config, else
 * in-cluster (KUBERNETES_SERVICE_HOST/PORT, /var/run/secrets/kubernetes.io/serviceaccount/).
 * Uses the kubeconfig's current-context. Errors name the file and the missing/bad field. */
enum vs_err vs_kube_config_load(const char *path, struct vs_kube_config *out, struct vs_errbuf *eb);
void vs_kube_config_cleanup(struct vs_kube_config *c);

struct vs_kube_opts {
    double qps;    /* sustained requests/s; <= 0 = unlimited */
    int burst;     /* bucket size */
    int timeout_s; /* per-request timeout for non-watch calls; 0 = none */
    const char *user_agent;
};

struct vs_kube;

/* Copies what it needs from cfg. Returns NULL (with eb) on error. */
struct vs_kube *vs_kube_new(const struct vs_kube_config *cfg, const struct vs_kube_opts *o,
                            struct vs_errbuf *eb);
void vs_kube_free(struct vs_kube *k);

/* Counters for metrics (monotonic, thread-safe reads). */
struct vs_kube_stats {
    uint64_t requests;
    uint64_t connections;       /* TCP (and TLS) connections opened to the API server */
    uint64_t pool_waits;        /* requests that found every kept connection busy and waited */
    uint64_t errors_by_verb[6]; /* GET LIST WATCH PATCH POST PUT */
};
void vs_kube_stats(const struct vs_kube *k, struct vs_kube_stats *out);

/* One request. `path` starts with "/" (e.g. "/api/v1/namespaces/ns/pods/p"). body may be NULL.
 * On 2xx: VS_OK and *out (if out != NULL) is the parsed JSON body (new reference, NULL when the
 * body is empty). Errors: VS_ERR_NOTFOUND (404), VS_ERR_CONFLICT (409), VS_ERR_GONE (410),
 * VS_ERR_AUTH (401/403), VS_ERR_TIMEOUT, VS_ERR_TLS, VS_ERR_KUBE (other); eb then holds
 * "<METHOD> <path>: <status code> <Status.message>" or the transport error. */
enum vs_err vs_kube_request(struct vs_kube *k, const char *method, const char *path,
                            const char *content_type, const json_t *body, json_t **out,
                            struct vs_errbuf *eb);

/* Shorthands. */
enum vs_err vs_kube_get(struct vs_kube *k, const char *path, json_t **out, struct vs_errbuf *eb);
/* application/merge-patch+json */
enum vs_err vs_kube_merge_patch(struct vs_kube *k, const char *path, const json_t *patch,
                                json_t **out, struct vs_errbuf *eb);
/* application/json-patch+json (RFC 6902: an array of operations, applied all or none; a failed
 * "test" is 422, VS_ERR_KUBE) */
enum vs_err vs_kube_json_patch(struct vs_kube *k, const char *path, const json_t *ops, json_t **out,
                               struct vs_errbuf *eb);
enum vs_err vs_kube_post(struct vs_kube *k, const char *path, const json_t *body, json_t **out,
                         struct vs_errbuf *eb);
enum vs_err vs_kube_put(struct vs_kube *k, const char *path, const json_t *body, json_t **out,
                        struct vs_errbuf *eb);

/* Paginated LIST of a collection path (e.g. "/api/v1/pods"), `limit` per page (0 = server
 * default), optional label selector. Calls on_item for every item (borrowed). *rv_out (new
 * string) is the list's metadata.resourceVersion. A non-zero return of on_item stops with
 * VS_ERR_INVAL. */
enum vs_err vs_kube_list(struct vs_kube *k, const char *path, const char *label_selector, int limit,
                         int (*on_item)(void *ctx, json_t *item), void *ctx, char **rv_out,
                         struct vs_errbuf *eb);

/* The same, but items whose JSON text does not contain `needle` may be skipped without being
 * decoded (NULL: none are). For handlers that ignore such items anyway: most of a LIST's cost
 * is decoding items. on_other (may be NULL) gets the skipped items' raw JSON text instead, for
 * handlers that read a few fields of them with a cheaper decoder. */
enum vs_err vs_kube_list_matching(struct vs_kube *k, const char *path, const char *label_selector,
                                  int limit, const char *needle,
                                  int (*on_item)(void *ctx, json_t *item),
                                  int (*on_other)(void *ctx, const char *text, size_t len),
                                  void *ctx, char **rv_out, struct vs_errbuf *eb);
/* The same, the matching items holding only the members keep names (vs_json_load_pruned; an
 * item it refuses is decoded whole); keep NULL: whole items. */
struct vs_json_keep;
enum vs_err vs_kube_list_kept(struct vs_kube *k, const char *path, const char *label_selector,
                              int limit, const char *needle, const struct vs_json_keep *keep,
                              int (*on_item)(void *ctx, json_t *item),
                              int (*on_other)(void *ctx, const char *text, size_t len), void *ctx,
                              char **rv_out, struct vs_errbuf *eb);

/* WATCH from resourceVersion rv with allowWatchBookmarks=true and timeoutSeconds. Calls
 * on_event(type, object) for ADDED/MODIFIED/DELETED (object borrowed); BOOKMARK events only
 * advance the resourceVersion. Returns when the server ends the stream (VS_OK), *stop becomes
 * non-zero (VS_OK), an ERROR event or HTTP status arrives (410 -> VS_ERR_GONE), or the
 * connection fails. *rv_io is updated (replaced, heap) to the last resourceVersion seen. */
enum vs_err vs_kube_watch(struct vs_kube *k, const char *path, const char *label_selector,
                          char **rv_io, int timeout_s,
                          int (*on_event)(void *ctx, const char *type, json_t *obj), void *ctx,
                          volatile int *stop, struct vs_errbuf *eb);

/* An informer: list + watch forever until *stop. handlers:
 *  begin(ctx)            a (re)list starts
 *  object(ctx, type, o)  "ADDED" (from the list or the watch), "MODIFIED", "DELETED"
 *  synced(ctx)           the list has been applied completely (objects not seen in this list
 *                        since begin() are gone: the store sweeps them)
 *  error(ctx, err, msg)  a failure before a retry (for logs/metrics); may be NULL
 * Relists on 410; reconnects with backoff (200 ms doubling to 30 s, +-20% jitter; see
 * denied_retry_s for refusals); a watch that ends normally is resumed from the last
 * resourceVersion without relisting. */
struct vs_informer_handlers {
    void (*begin)(void *ctx);
    void (*object)(void *ctx, const char *type, json_t *obj);
    void (*synced)(void *ctx);
    void (*error)(void *ctx, enum vs_err err, const char *msg);
    /* LIST items whose text lacks this string may be skipped undecoded (vs_kube_list_matching);
     * NULL: every item reaches object(). Watch events always do (watch_keep may cut them). */
    const char *list_needle;
    /* LIST items list_needle skipped, as raw JSON text (NULL: they are dropped). */
    void (*list_other)(void *ctx, const char *text, size_t len);
    /* > 0: a LIST or WATCH refused for lack of permission (401/403, VS_ERR_AUTH) or for a
     * resource the server does not serve (404, VS_ERR_NOTFOUND) is tried again after this many
     * seconds (+-20%) instead of the backoff, with a fresh LIST: for optional APIs, retried
     * slowly in case they are granted. error() still sees each refusal. */
    double denied_retry_s;
    /* The members object() reads of the LIST items list_needle selects: those items arrive cut
     * down to them (vs_json_load_pruned); NULL: whole. */
    const struct vs_json_keep *list_keep;
    /* The members object() reads of watch events' objects: they arrive cut down to them
     * (vs_json_load_pruned); NULL: whole. */
    const struct vs_json_keep *watch_keep;
};
void vs_kube_informer_run(struct vs_kube *k, const char *path, const char *label_selector,
                          const struct vs_informer_handlers *h, void *ctx, volatile int *stop);

/* Percent-encodes s for use in a query string. New string, free with free(). */
char *vs_kube_escape(const char *s);

#endif
