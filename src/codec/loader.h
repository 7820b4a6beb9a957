/* loader: reads the input files of `simulate` and `serve --cluster` (design.md §2.3): a JSON or
 * YAML document (or YAML stream) holding Kubernetes objects as `kubectl get -o json|yaml` prints
 * them: a List/NodeList/PodList/ResourceQuotaList with items, a single object, or several YAML
 * documents. Nodes, Pods, ResourceQuotas, ResourceSlices and ResourceClaims are kept in file
 * order; other kinds are skipped
 * with a warning. Uses jansson and libyaml; not part of the core library. */
#ifndef VS_LOADER_H
#define VS_LOADER_H

#include <stddef.h>

#include "dra.h"
#include "err.h"
#include "kobj.h"

struct vs_objset {
    struct vs_knode *nodes;
    size_t n_nodes;
    struct vs_pod *pods;
    size_t n_pods;
    struct vs_kquota *quotas;
    size_t n_quotas;
    struct vs_dra_slice *slices; /* ResourceSlices (resource.k8s.io/v1) */
    size_t n_slices;
    struct vs_dra_claim *claims; /* ResourceClaims */
    size_t n_claims;
};

/* Called once per skipped object or other non-fatal oddity; msg is borrowed for the call. */
typedef void (*vs_warn_fn)(void *ctx, const char *msg);

/* Appends the objects of file `path` to set. On error nothing is appended, and eb holds one
 * line naming the file, the object (Kind ns/name or item index) and the field. warn may be NULL
 * (warnings then go to stderr as "warning: ..."). */
enum vs_err vs_loader_load_file(const char *path, struct vs_objset *set, vs_warn_fn warn,
                                void *warn_ctx, struct vs_errbuf *eb);

/* Same for an in-memory buffer of len bytes (need not be NUL-terminated); `name` is used in
 * messages in place of the file name. */
enum vs_err vs_loader_load_buf(const char *buf, size_t len, const char *name, struct vs_objset *set,
                               vs_warn_fn warn, void *warn_ctx, struct vs_errbuf *eb);

/* Sees every accepted Node/Pod/ResourceQuota as its JSON object (borrowed for the call) with
 * its kind (from the object or its typed list). A non-OK return aborts the load with that
 * error (the message in eb). */
struct json_t;
typedef enum vs_err (*vs_object_fn)(void *ctx, const char *kind, const struct json_t *obj,
                                    struct vs_errbuf *eb);

/* vs_loader_load_file with a raw-object callback (used by the embedded API server). */
enum vs_err vs_loader_load_file_raw(const char *path, struct vs_objset *set, vs_object_fn raw,
                                    void *raw_ctx, vs_warn_fn warn, void *warn_ctx,
                                    struct vs_errbuf *eb);

void vs_objset_cleanup(struct vs_objset *set);

#endif
