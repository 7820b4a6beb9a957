/* annot: every hami.io / nvidia.com annotation key and grammar the engine reads or writes
 * (spec/hami-compat.md §1), parsed and formatted in this one place. Parsers never crash on bad
 * input: they return VS_ERR_PARSE with a message naming the key and the value. */
#ifndef VS_ANNOT_H
#define VS_ANNOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "err.h"

/* Node annotations */
#define VS_ANNO_REGISTER  "hami.io/node-nvidia-register"
#define VS_ANNO_SCORE     "hami.io/node-nvidia-score"
#define VS_ANNO_HANDSHAKE "hami.io/node-handshake"
#define VS_ANNO_LOCK      "hami.io/mutex.lock"
#define VS_ANNO_CORDON    "hami.io/device-cordon"
/* vgpu-sched's own, on a mirror ResourceClaim (mirror.h): the label (value: the pod uid) and
 * the annotations naming the pod, node and card it mirrors. */
#define VS_LABEL_MIRROR_OF  "vgpu-sched.io/mirror-of"
#define VS_ANNO_MIRROR_POD  "vgpu-sched.io/mirror-pod"
#define VS_ANNO_MIRROR_NODE "vgpu-sched.io/mirror-node"
#define VS_ANNO_MIRROR_CARD "vgpu-sched.io/mirror-card"
/* Pod annotations written by the scheduler */
#define VS_ANNO_VGPU_NODE   "hami.io/vgpu-node"
#define VS_ANNO_VGPU_TIME   "hami.io/vgpu-time"
#define VS_ANNO_TO_ALLOCATE "hami.io/vgpu-devices-to-allocate"
#define VS_ANNO_ALLOCATED   "hami.io/vgpu-devices-allocated"
#define VS_ANNO_MIG_ALLOC   "hami.io/vgpu-mig-allocations"
#define VS_ANNO_BIND_PHASE  "hami.io/bind-phase"
#define VS_ANNO_BIND_TIME   "hami.io/bind-time"
/* Pod annotations written by users */
#define VS_ANNO_NODE_POLICY "hami.io/node-scheduler-policy"
#define VS_ANNO_GPU_POLICY  "hami.io/gpu-scheduler-policy"
#define VS_ANNO_WEIGHTS     "hami.io/device-scoring-weights"
#define VS_ANNO_USE_TYPE    "nvidia.com/use-gputype"
#define VS_ANNO_NOUSE_TYPE  "nvidia.com/nouse-gputype"
#define VS_ANNO_USE_UUID    "nvidia.com/use-gpuuuid"
#define VS_ANNO_NOUSE_UUID  "nvidia.com/nouse-gpuuuid"
#define VS_ANNO_VGPU_MODE   "nvidia.com/vgpu-mode"
#define VS_ANNO_NUMA_BIND   "nvidia.com/numa-bind"
/* vgpu-sched's own: written on a refused pod to make kube-scheduler retry it (requeue.h) */
#define VS_ANNO_REQUEUE "vgpu-sched.io/requeue"
/* Labels */
#define VS_LABEL_VGPU_NODE  "hami.io/vgpu-node"
#define VS_LABEL_SCHED_ROLE "hami.io/scheduler-role"
#define VS_LABEL_WEBHOOK    "hami.io/webhook"
#define VS_LABEL_POD_GROUP  "scheduling.x-k8s.io/pod-group"

/* The vendor word written in device lists and compared by the device plugin. */
#define VS_VENDOR "NVIDIA"

/* ---- node register (§1.1) ---- */

struct vs_mig_placement {
    int32_t start;
    int32_t size;
};

struct vs_mig_profile {
    char *name;
    int32_t memory_mb;
    int32_t core;
    int32_t slice_count;
    struct vs_mig_placement *placements;
    size_t n_placements;
};

struct vs_card_reg {
    char *uuid; /* "id" */
    char *type; /* model, e.g. "NVIDIA A100-SXM4-40GB" */
    char *mode; /* "hami-core" | "mig" | "mps" | "" */
    uint32_t index;
    int32_t count;   /* container slots */
    int32_t devmem;  /* MiB */
    int32_t devcore; /* percent, 100 = one GPU */
    int32_t numa;
    bool health;
    struct vs_mig_profile *profiles;
    size_t n_profiles;
    json_t *custom; /* "custominfo" (a JSON object, vendor facts), NULL when absent */
};

struct vs_register {
    struct vs_card_reg *cards;
    size_t n;
};

/* Parses the JSON form (value starts with '[' after spaces) or the legacy colon form.
 * An empty device list is an error ("no gpu found on node"). out is cleaned up on error. */
enum vs_err vs_annot_parse_register(const char *val, struct vs_register *out, struct vs_errbuf *eb);
/* The same for another backend's register annotation `key` (named in error messages). */
enum vs_err vs_annot_parse_register_as(const char *key, const char *val, struct vs_register *out,
                                       struct vs_errbuf *eb);
/* Formats the JSON form in the device plugin's field order with its omitempty rules.
 * Returns a new string (free with free()), NULL on OOM. */
char *vs_annot_format_register(const struct vs_register *reg);
void vs_register_cleanup(struct vs_register *reg);

/* ---- topology scores (§1.2) ---- */

struct vs_pair_score {
    char *other;
    int64_t score;
};
struct vs_topo_entry {
    char *uuid;
    struct vs_pair_score *scores;
    size_t n;
};
struct vs_topo {
    struct vs_topo_entry *items;
    size_t n;
};
enum vs_err vs_annot_parse_score(const char *val, struct vs_topo *out, struct vs_errbuf *eb);
char *vs_annot_format_score(const struct vs_topo *topo);
void vs_topo_cleanup(struct vs_topo *topo);

/* ---- comma lists: device-cordon, use/nouse-gputype, use/nouse-gpuuuid (§1.5, §1.10) ---- */

struct vs_strlist {
    char **items;
    size_t n;
};
/* Splits on ',', trims spaces/tabs around items, skips empty items. NULL/"" gives n = 0. */
enum vs_err vs_annot_parse_list(const char *val, struct vs_strlist *out);
bool vs_strlist_has(const struct vs_strlist *l, const char *s);
void vs_strlist_cleanup(struct vs_strlist *l);

/* ---- container device lists (§1.7) ---- */

struct vs_cdev {
    char *uuid;
    char *type; /* the backend's word when written by us (AMD: the card's model) */
    int32_t usedmem;
    int32_t usedcores;
    char *extra; /* a backend's own data for its annotations (not in the grammar); may be NULL */
};
struct vs_ctr_devs {
    struct vs_cdev *devs;
    size_t n;
};
struct vs_pod_devs {
    struct vs_ctr_devs *ctrs; /* one entry per container, init containers first */
    size_t n;
};
/* Parses `uuid,type,mem,cores:...;` lists. Empty entries are kept; the empty tail after the
 * final ';' is not an entry. Errors name VS_ANNO_ALLOCATED-style key `key`. */
enum vs_err vs_annot_parse_devices(const char *key, const char *val, struct vs_pod_devs *out,
                                   struct vs_errbuf *eb);
char *vs_annot_format_devices(const struct vs_pod_devs *devs);
void vs_pod_devs_cleanup(struct vs_pod_devs *devs);

/* ---- MIG allocations (§1.8) ---- */

struct vs_mig_alloc {
    int32_t container_index;
    int32_t device_index;
    char *gpu_uuid;
    char *profile;
    struct vs_mig_placement placement;
    bool has_runtime;
    char *mig_uuid;
    int32_t gpu_instance_id;
    int32_t compute_instance_id;
};
struct vs_mig_allocs {
    struct vs_mig_alloc *items;
    size_t n;
};
enum vs_err vs_annot_parse_mig(const char *val, struct vs_mig_allocs *out, struct vs_errbuf *eb);
char *vs_annot_format_mig(const struct vs_mig_allocs *m);
void vs_mig_allocs_cleanup(struct vs_mig_allocs *m);

/* ---- node lock (§1.4, §6.2) ---- */

struct vs_lock {
    int64_t time; /* unix seconds */
    char *ns;     /* "" for the legacy bare-timestamp form */
    char *name;
    bool legacy;
};
enum vs_err vs_annot_parse_lock(const char *val, struct vs_lock *out, struct vs_errbuf *eb);
/* "<RFC3339 UTC>,<ns>,<name>". Returns a new string. */
char *vs_annot_format_lock(int64_t now, const char *ns, const char *name);
void vs_lock_cleanup(struct vs_lock *l);
/* Unix seconds as RFC 3339 in UTC ("2026-12-03T17:02:19Z") into out (>= 21 bytes). */
void vs_annot_format_rfc3339(int64_t now, char *out, size_t len);
/* RFC 3339 with seconds precision and any offset (Go time.RFC3339). */
enum vs_err vs_annot_parse_rfc3339(const char *s, int64_t *out);

/* ---- small user annotations (§1.10) ---- */

struct vs_weights {
    int64_t slot;
    int64_t core;
    int64_t mem;
};
/* NULL/absent gives the default 1/1/1. */
enum vs_err vs_annot_parse_weights(const char *val, struct vs_weights *out, struct vs_errbuf *eb);
/* Go strconv.ParseBool. */
enum vs_err vs_annot_parse_bool(const char *val, bool *out);

#endif
