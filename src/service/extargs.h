/* extargs: decoding of kube-scheduler's extender requests (spec/k8s-protocols.md §1): the
 * ExtenderArgs of filter and the ExtenderBindingArgs of bind. The upstream Go types have no JSON
 * tags, so keys are PascalCase field names matched case-insensitively (Go's encoding/json), and
 * JSON null equals absent. Pure: no I/O; fuzzed as a parser of outside input. */
#ifndef VS_EXTARGS_H
#define VS_EXTARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "kobj.h"

struct vs_filter_args {
    json_t *root;       /* owned: the whole request (general path) or the Pod (fast path) */
    json_t *pod_json;   /* borrowed from root */
    struct vs_pod pod;  /* decoded Pod */
    json_t *node_names; /* borrowed array (general path only; see vs_filter_args_node_names) */
    json_t *nodes;      /* NodeList object, NULL when absent/null (borrowed from root, or owned
                         * in nodes_owned on the fast path) */
    json_t *nodes_owned;
    const char **names; /* the string entries of NodeNames, n_names of them */
    size_t n_names;
    bool has_names;  /* NodeNames was present and not null */
    char *names_buf; /* owned copy of the names (fast path) */
};

/* Errors (VS_ERR_PARSE) with messages: "invalid ExtenderArgs: <json error>",
 * "extender args missing pod", "invalid Pod in ExtenderArgs: <field error>",
 * "NodeNames must be an array of strings", "Nodes must be a NodeList object".
 * out must be cleaned up also on error. */
enum vs_err vs_extargs_filter(const char *body, size_t len, struct vs_filter_args *out,
                              struct vs_errbuf *eb);
void vs_filter_args_cleanup(struct vs_filter_args *a);
/* The same decode without the fast path (names_buf stays NULL): for tests and fuzzing, which
 * check that both agree. */
enum vs_err vs_extargs_filter_general(const char *body, size_t len, struct vs_filter_args *out,
                                      struct vs_errbuf *eb);

/* NodeNames as a JSON array (new reference), NULL when absent or null. */
json_t *vs_filter_args_node_names(const struct vs_filter_args *a);

struct vs_bind_args {
    json_t *root; /* owned; the strings below are borrowed from it */
    const char *name, *ns, *uid, *node;
};

/* Errors: "invalid ExtenderBindingArgs: <json error>", "ExtenderBindingArgs needs PodName,
 * PodNamespace and Node". uid is "" when absent. */
enum vs_err vs_extargs_bind(const char *body, size_t len, struct vs_bind_args *out,
                            struct vs_errbuf *eb);
void vs_bind_args_cleanup(struct vs_bind_args *a);

/* ExtenderPreemptionArgs (spec/k8s-protocols.md §1.6): the Pod and, per candidate node, the
 * victim UIDs kube-scheduler chose (from NodeNameToMetaVictims, or from the metadata.uid of the
 * Pods of NodeNameToVictims when not in node-cache mode). Nodes keep the request's order. */
struct vs_preempt_node_args {
    const char *node;  /* borrowed from root */
    const char **uids; /* borrowed strings; owned array */
    size_t n_uids;
    int64_t pdb_violations; /* NumPDBViolations */
};

struct vs_preempt_args {
    json_t *root;
    struct vs_pod pod;
    struct vs_preempt_node_args *nodes;
    size_t n_nodes;
};

/* Errors (VS_ERR_PARSE): "invalid ExtenderPreemptionArgs: <json error>", "extender args missing
 * pod", "invalid Pod in ExtenderPreemptionArgs: <field error>", "NodeNameToMetaVictims must be an
 * object", "victims of node <n>: Pods must be an array of objects with a string UID",
 * "victims of node <n>: NumPDBViolations must be an integer". out must be cleaned up also on
 * error. */
enum vs_err vs_extargs_preempt(const char *body, size_t len, struct vs_preempt_args *out,
                               struct vs_errbuf *eb);
void vs_preempt_args_cleanup(struct vs_preempt_args *a);

/* Go encoding/json member lookup: exact key, else the last case-insensitive match; null counts
 * as absent. Borrowed. */
json_t *vs_json_get_ci(const json_t *obj, const char *key);

#endif
