/* kobj: the parts of Kubernetes Node and Pod objects that scheduling needs, as plain C structs.
 * Codecs (input files, the API client) fill these; the core reads them and never sees JSON.
 * Every string is owned by its struct (heap, NUL-terminated) and freed by its cleanup. */
#ifndef VS_KOBJ_H
#define VS_KOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vs_kv {
    char *key;
    char *val;
};

/* An ordered string map (annotations, labels, nodeSelector, resource limits/requests).
 * Keys are unique; vs_kv_set replaces an existing key's value. */
struct vs_kvlist {
    struct vs_kv *items;
    size_t n;
};

/* Borrowed value for key, valid until the list changes; NULL when absent. */
const char *vs_kv_get(const struct vs_kvlist *l, const char *key);
/* Copies key and val into the list (replacing an existing key). */
enum vs_err vs_kv_set(struct vs_kvlist *l, const char *key, const char *val);
/* Removes key if present. */
void vs_kv_del(struct vs_kvlist *l, const char *key);
enum vs_err vs_kv_copy(struct vs_kvlist *dst, const struct vs_kvlist *src);
void vs_kv_cleanup(struct vs_kvlist *l);

struct vs_container {
    char *name;
    struct vs_kvlist limits;   /* resource name -> quantity text, e.g. "nvidia.com/gpu" -> "1" */
    struct vs_kvlist requests; /* same, from resources.requests */
    bool privileged;           /* securityContext.privileged */
    bool restart_always;       /* restartPolicy "Always": a sidecar when it is an init container */
};

/* spec.tolerations[i]; absent fields are "". */
struct vs_toleration {
    char *key;
    char *op; /* operator: "Equal" (also when "") or "Exists" */
    char *value;
    char *effect; /* "" tolerates every effect */
};

/* spec.taints[i] of a Node. */
struct vs_taint {
    char *key;
    char *value;
    char *effect;
};

/* One requirement of a node selector term (matchExpressions or matchFields entry). */
struct vs_nsreq {
    char *key;
    char *op; /* In, NotIn, Exists, DoesNotExist, Gt, Lt (anything else never matches) */
    char **values;
    size_t n_values;
};

/* One of requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: its requirements
 * are ANDed; the terms of a pod are ORed. */
struct vs_nsterm {
    struct vs_nsreq *exprs;
    size_t n_exprs;
    struct vs_nsreq *fields;
    size_t n_fields;
};

/* status.initContainerStatuses[i].state.terminated, as far as the init-release rule needs. */
struct vs_init_status {
    bool terminated;
    int32_t exit_code;
};

struct vs_pod {
    char *ns;
    char *name;
    char *uid;
    char *node_name;      /* spec.nodeName, "" when unset */
    char *scheduler_name; /* spec.schedulerName, "" when unset */
    char *phase;          /* status.phase, "" when unset */
    char *resource_version;
    bool deleting;        /* metadata.deletionTimestamp set */
    int32_t priority;     /* spec.priority (0 when unset, as kube-scheduler reads it) */
    bool preempt_never;   /* spec.preemptionPolicy "Never" */
    int64_t start_time;   /* status.startTime, Unix seconds; 0 when unset */
    char *nominated_node; /* status.nominatedNodeName, "" when unset */
    struct vs_kvlist annotations;
    struct vs_kvlist labels;
    struct vs_kvlist node_selector;
    struct vs_container *init; /* spec.initContainers, in spec order */
    size_t n_init;
    struct vs_container *ctrs; /* spec.containers, in spec order */
    size_t n_ctrs;
    struct vs_init_status *init_status; /* status.initContainerStatuses, in order */
    size_t n_init_status;
    struct vs_kvlist overhead;     /* spec.overhead, quantity text */
    struct vs_kvlist pod_requests; /* spec.resources.requests (pod-level resources) */
    struct vs_kvlist pod_limits;   /* spec.resources.limits */
    struct vs_toleration *tols;    /* spec.tolerations */
    size_t n_tols;
    bool has_required_affinity;  /* spec.affinity.nodeAffinity.required... is set */
    struct vs_nsterm *aff_terms; /* its nodeSelectorTerms, in order */
    size_t n_aff_terms;
};

struct vs_knode {
    char *name;
    char *resource_version;
    bool unschedulable; /* spec.unschedulable */
    struct vs_kvlist annotations;
    struct vs_kvlist labels;
    struct vs_kvlist allocatable; /* status.allocatable, quantity text */
    struct vs_kvlist capacity;    /* status.capacity, quantity text (vendors that derive their
                                   * cards from it: Cambricon, MetaX, Moore Threads, ...) */
    struct vs_taint *taints;      /* spec.taints */
    size_t n_taints;
};

/* A ResourceQuota: only spec.hard is kept (e.g. "limits.nvidia.com/gpumem" -> "20000"). */
struct vs_kquota {
    char *ns;
    char *name;
    struct vs_kvlist hard;
};

void vs_kquota_cleanup(struct vs_kquota *q);
void vs_container_cleanup(struct vs_container *c);
void vs_pod_cleanup(struct vs_pod *p);
void vs_knode_cleanup(struct vs_knode *n);
/* Deep copies; dst must be zeroed or cleaned up before. */
enum vs_err vs_pod_copy(struct vs_pod *dst, const struct vs_pod *src);
enum vs_err vs_knode_copy(struct vs_knode *dst, const struct vs_knode *src);

/* A strdup that maps NULL to "". Returns a new string (free with free()), NULL on OOM. */
char *vs_strdup0(const char *s);

#endif
