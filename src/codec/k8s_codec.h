/* k8s_codec: jansson JSON <-> the plain structs of kobj.h. Shared by the file loader and (later)
 * the API client's list/watch decoding, so both read objects identically. */
#ifndef VS_K8S_CODEC_H
#define VS_K8S_CODEC_H

#include <jansson.h>

#include "json_prune.h"

#include "err.h"
#include "kobj.h"
#include "preempt.h"

/* Decode one v1 Pod / v1 Node / v1 ResourceQuota object. `out` is filled (caller cleans up with
 * the matching vs_*_cleanup, also on error). Errors name the JSON path of the bad field, e.g.
 * `spec.containers[0].resources.limits["nvidia.com/gpu"]: expected a string or number`. */
enum vs_err vs_codec_pod_from_json(const json_t *obj, struct vs_pod *out, struct vs_errbuf *eb);
/* Only what the model's resource accounting reads (vs_model_account_pod): metadata namespace,
 * name, uid and the hami.io/vgpu-node annotation; spec.nodeName, containers, initContainers
 * (resources, restartPolicy), overhead and resources; status.phase. Same errors as
 * vs_codec_pod_from_json for those fields; out must be cleaned up (also on error). */
enum vs_err vs_codec_pod_res_from_json(const json_t *obj, struct vs_pod *out, struct vs_errbuf *eb);
/* A new tree (json_decref) of the pod in text[0, len) holding only what
 * vs_codec_pod_res_from_json reads plus status.nominatedNodeName, decoded as json_loadb decodes
 * those members (vs_json_load_pruned); the rest of the text is stepped over, not validated.
 * NULL when that fails: json_loadb the whole text then, for the error. A LIST page's pods
 * without a GPU allocation are read this way (a fifth of the instructions of a full decode). */
json_t *vs_codec_pod_res_load(const char *text, size_t len);
/* The members of a Pod vs_codec_pod_from_json reads, for vs_json_load_pruned: a tree cut down
 * to them decodes to the same vs_pod and the same errors as the whole object (fuzz_podres).
 * Whoever makes the decoder read another member adds it here. */
extern const struct vs_json_keep vs_codec_pod_keep[];
enum vs_err vs_codec_node_from_json(const json_t *obj, struct vs_knode *out, struct vs_errbuf *eb);
/* The members of a Node vs_codec_node_from_json reads, as vs_codec_pod_keep is for Pods
 * (fuzz_podres checks both). */
extern const struct vs_json_keep vs_codec_node_keep[];
/* A policy/v1 PodDisruptionBudget: spec.selector (matchLabels, matchExpressions with In, NotIn,
 * Exists, DoesNotExist), status.disruptionsAllowed and the names of status.disruptedPods. */
enum vs_err vs_codec_pdb_from_json(const json_t *obj, struct vs_pdb *out, struct vs_errbuf *eb);
enum vs_err vs_codec_quota_from_json(const json_t *obj, struct vs_kquota *out,
                                     struct vs_errbuf *eb);

/* JSON type word for messages: "object", "array", "string", "number", "bool", "null", or
 * "nothing" for NULL. Static string. */
const char *vs_codec_type_name(const json_t *v);

#endif
