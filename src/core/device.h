/* device: the interface every device backend implements — HAMi's "vendor": NVIDIA, Hygon DCU,
 * each Ascend chip, Cambricon MLU, ... (spec/hami-vendors.md §0, §1.1). A backend is one vendor
 * word with its resource names, its node inventory, its request rules, its Fit, its node-score
 * term, the annotations Filter writes for it and the node lock Bind takes for it.
 *
 * Backends are plug-ins under devices/: each file defines a `struct vs_device_class` that makes
 * the class's backends from the device configuration (one for most vendors, one per configured
 * chip for Ascend and Iluvatar), and devices/registry.c lists the classes. The core knows a
 * backend only through these structs, never by its word: the model holds every backend's cards,
 * sched runs every backend's Fit, and the service writes what the backends' hooks return.
 *
 * A set of configured backends (struct vs_devices) lives in the device configuration
 * (vs_devcfg.devices); backends are ordered byte-wise by word (HAMi's Bind order) and a
 * backend's `id` is its position. Everything here is immutable once built: safe to read from
 * any thread. */
#ifndef VS_DEVICE_H
#define VS_DEVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "annot.h"
#include "err.h"
#include "kobj.h"

#define VS_MAX_DEVICES 64

struct vs_devcfg;
struct vs_device;
struct vs_node;
struct vs_card;
struct vs_scard;
struct vs_req;
struct vs_gpu_policy;

/* Which node lock Bind takes for a backend a regular container asks for (hami-vendors §1.10). */
enum vs_lock_kind {
    VS_LOCK_NONE,   /* no lock (Metax-GPU, Mthreads, GCU, Enflame, kunlun, AWSNeuron) */
    VS_LOCK_SHARED, /* hami.io/mutex.lock, shared by every backend of the pod (re-entrant) */
    VS_LOCK_STAMP,  /* a lock of the backend's own: the annotation lock_key holds the time
                     * it was taken, for lock_ttl seconds (Cambricon) */
};

/* What a backend read from one Node object. Cards are in register order; strings and
 * profiles are moved into the model (so the backend allocates them with malloc). */
struct vs_inventory {
    struct vs_register reg; /* the cards; reg.cards[i].custom is the card's custominfo */
    /* Pair scores between the backend's cards (n x n, row = card i), NULL when none: the
     * `topology-aware` card policy reads them (NVIDIA's hami.io/node-nvidia-score). */
    int64_t *topo;
    json_t *node_info; /* node-level facts a backend keeps for its Fit and score; owned */
};

/* One container's picks of one backend as a Fit makes them. */
struct vs_pick {
    struct vs_scard *card;
    int64_t mem;
    int64_t cores;
    char *extra; /* backend data for its annotations (vs_cdev.extra); owned, may be NULL */
};

/* Tags a backend gives pods (vs_device_ops.pod_tag): values 0 .. VS_POD_TAGS-1. */
#define VS_POD_TAGS 4

/* Per tag value, how many pods hold card c in the evaluation (sched fills it in the calls
 * below): the node's tracked pods whose usage of c's backend names c — HAMi's list of pods per
 * card — less the pod being placed and the pods a what-if leaves out. */
typedef void vs_card_tags_fn(const void *ectx, const struct vs_node *n, const struct vs_card *c,
                             uint32_t counts[VS_POD_TAGS]);

/* Everything a backend's Fit sees for one container on one node. */
struct vs_fit_call {
    const struct vs_device *dev;
    const void *pod_ctx; /* what dev->ops->pod_begin made for this pod */
    const struct vs_pod *pod;
    const struct vs_node *node;
    const struct vs_req *req;
    struct vs_scard **cands; /* this backend's cards, in the policy's order (walk from the end) */
    size_t n_cands;
    const struct vs_gpu_policy *gpu;
    bool numa_bind;
    /* Every card of the node, sorted, and this backend's earlier picks for the pod on this
     * node (earlier containers), for rules that look at them (HAMi's custom filter rule). */
    struct vs_scard *view;
    size_t n_view;
    const struct vs_pod_devs *so_far;
    size_t ctr_index;
    /* Namespace quota check for this backend (NULL when it has none): whether adding `mem`
     * and `cores` on top of the pod's earlier picks of this backend fits the quota. */
    bool (*quota_ok)(const void *qctx, int64_t mem, int64_t cores);
    const void *qctx;
    vs_card_tags_fn *card_tags; /* (ectx, node, card, counts) */
    const void *ectx;
};

/* What a backend's admission hook asks the webhook to change (spec/hami-vendors.md §1.12): the
 * webhook turns each into a JSON Patch op against the pod as submitted and applies it to the
 * decoded pod before the pod is validated. Recorded in order; see vs_admit_*. */
enum vs_admit_kind {
    VS_ADMIT_LIMIT,      /* the container's resources.limits[key] = value (add or replace) */
    VS_ADMIT_REQUEST,    /* the container's resources.requests[key] = value (add or replace) */
    VS_ADMIT_ENV,        /* append env {name: key, value} to the container */
    VS_ADMIT_ENV_UNSET,  /* the same unless the container already has an env named key */
    VS_ADMIT_ANNOTATION, /* the pod's metadata.annotations[key] = value */
    VS_ADMIT_RUNTIME,    /* spec.runtimeClassName = value when the pod has none */
};
struct vs_admit_op {
    enum vs_admit_kind kind;
    char *key, *value;
};
struct vs_admit {
    struct vs_admit_op *ops;
    size_t n, cap;
    bool oom;
};
void vs_admit_set(struct vs_admit *a, enum vs_admit_kind kind, const char *key, const char *value);
void vs_admit_cleanup(struct vs_admit *a);

/* Everything a backend's node-score term sees (hami-vendors §1.9). */
struct vs_score_call {
    const struct vs_device *dev;
    const void *pod_ctx;
    const struct vs_pod *pod;
    const struct vs_node *node;
    const struct vs_pod_devs *devs; /* the pod's picks of this backend, one entry per container */
    const struct vs_scard *before;  /* the node's cards before the pod's placement */
    size_t n_before;
    const char *node_policy;    /* the node policy's name */
    vs_card_tags_fn *card_tags; /* (ectx, node, card, counts) */
    const void *ectx;
};

/* Per-card rules of the generic Fit (hami-vendors §1.6 G-Fit, and NVIDIA's, compat §4.4),
 * which a backend without its own `fit` hook gets. */
struct vs_fit_rules {
    bool cordon;      /* hami.io/device-cordon applies (CardCordoned) */
    bool numa;        /* nvidia.com/numa-bind restarts the walk on every NUMA change */
    bool quota;       /* the namespace quota is checked per card (ResourceQuotaNotFit) */
    bool clamp_cores; /* a cores request over 100 counts as 100 */
    bool topology;    /* the `topology-aware` card policy applies (pair scores) */
    bool same_card;   /* every container's cards must be the cards of the earlier containers
                       * (CardNotFoundCustomFilterRule) */
    bool partitions;  /* cards in MIG mode host several instances */
    const char *use_uuid, *nouse_uuid; /* pod annotation keys (CardUuidMismatch); NULL = none */
};

struct vs_device_ops {
    /* The node's cards of this backend. VS_OK with zero cards when the node has none (its
     * annotation or capacity is absent); VS_ERR_PARSE with a message when what the node holds
     * is malformed (the node is then unusable for this backend, with that reason). */
    enum vs_err (*inventory)(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb);
    /* A fingerprint of everything inventory reads from kn (0 = nothing there): the model skips
     * inventory while it is unchanged. */
    uint64_t (*inventory_fp)(const struct vs_device *d, const struct vs_knode *kn);

    /* The request of one container (init tells an init container): out->nums 0 when it asks
     * for nothing of this backend. VS_ERR_INVAL with a message naming the resource, the value
     * and the container for a quantity that is not acceptable (a pod-level error). */
    enum vs_err (*request)(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb);

    /* Per Filter: what the backend reads from the pod once (selectors, modes); NULL hooks mean
     * no context. A pod-level problem is VS_ERR_INVAL with a message. */
    enum vs_err (*pod_begin)(const struct vs_device *d, const struct vs_pod *p, void **ctx,
                             struct vs_errbuf *eb);
    void (*pod_end)(void *ctx);

    /* Whether a card of the node is a candidate for this backend's requests at all: by default
     * a card this backend registered whose type contains the word (case-insensitively). */
    bool (*candidate)(const struct vs_device *d, const struct vs_card *c);
    /* Generic Fit hooks (used when fit is NULL): F2 (type), the usable total of cores, and
     * whether cards in partition (MIG) mode may be used by this pod. NULL = always / devcore /
     * yes. */
    bool (*type_ok)(const struct vs_device *d, const void *pod_ctx, const struct vs_card *c);
    int64_t (*total_cores)(const struct vs_device *d, const void *pod_ctx, const struct vs_card *c);
    bool (*partitions_ok)(const struct vs_device *d, const void *pod_ctx);
    /* A node-level check before the walk: a reason word (e.g. "ModeNotFit") refuses the node
     * with "1/<candidates> <word>"; NULL passes. */
    const char *(*node_check)(const struct vs_device *d, const void *pod_ctx,
                              const struct vs_node *n);
    /* Collect-all selection (Ascend NetworkID groups, 910C modules): when it returns true for a
     * request, the generic Fit collects every card that passes the checks (walk order), then
     * calls select with all n of them, however many (n may be below req->nums). select either
     * chooses req->nums of them (indices into picks, in output order) and returns true, or
     * returns false: the node's reason is then the walk's reasons plus
     * "<got>/<denominator> AllocatedCardsInsufficientRequest", every item over *denominator
     * (preset to the candidate count; *got preset to n), the item left out when *got is 0
     * unless select sets *report_zero. */
    bool (*collects)(const struct vs_device *d, const void *pod_ctx, const struct vs_req *r);
    bool (*select)(const struct vs_fit_call *fc, const struct vs_pick *picks, size_t n, size_t *out,
                   size_t *got, size_t *denominator, bool *report_zero);

    /* A Fit of the backend's own (replacing the generic one): on success fills picks
     * (req->nums of them, allocated by the caller and zeroed) and returns NULL; else returns the
     * reason text (new string) with no pick's extra left allocated. *nomem on allocation
     * failure. */
    char *(*fit)(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem);
    /* Applies a pick to the evaluation's view of the card (HAMi's AddResourceUsage); NULL =
     * used += 1, usedmem += mem, usedcores += cores. */
    void (*add_usage)(const struct vs_device *d, struct vs_scard *s, const struct vs_pick *p);

    /* The backend's node-score term (added to HAMi's node score); NULL = 0. A backend with one
     * has its picks made on every fitting node (no counting shortcut). */
    double (*score_node)(const struct vs_score_call *sc);
    /* A small value (0 .. VS_POD_TAGS-1) the model keeps of every tracked pod that holds cards
     * of this backend, from the pod (its annotations), on the pod's usage entries
     * (vs_usage.tag): rules that look at the pods already on a card read it through
     * card_tags (Metax sGPU's app classes). NULL: 0. */
    uint8_t (*pod_tag)(const struct vs_device *d, const struct vs_pod *p);
    /* Folds what the pod context's selectors are into h (the fragmentation memo's request key);
     * NULL: the backend's type_ok reads nothing of the pod. */
    uint64_t (*pod_sig)(const void *ctx, uint64_t h);

    /* The pod annotations Filter writes for this backend on the chosen node, set in out (a JSON
     * object: a string value writes the annotation, null removes it). Called only when the pod
     * has picks of this backend. Timestamps come from now_ns; now_ns 0 asks for every
     * annotation but the timestamps (simulate). NULL writes to_allocate_key and allocated_key
     * with the generic device-list grammar. */
    enum vs_err (*annotate)(const struct vs_device *d, const struct vs_pod *p,
                            const struct vs_node *n, const struct vs_pod_devs *devs,
                            const struct vs_mig_allocs *mig, int64_t now_ns, json_t *out);
    /* Admission of one container (init tells an init container; HAMi's MutateAdmission): sets
     * *found when the container uses this backend (the pod is then routed to this scheduler),
     * records changes in a. VS_ERR_INVAL with a message denies the pod (HTTP 500 in HAMi). NULL:
     * found when the count resource is in the container's limits, no change. */
    enum vs_err (*admit)(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *c, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb);
    /* Frees what priv points at (NULL: free()). */
    void (*free_priv)(void *priv);
};

/* A configured backend. Immutable once its set is built. */
struct vs_device {
    char *word; /* HAMi's CommonWord: "NVIDIA", "DCU", "Ascend910B3", ... */
    uint16_t id;
    const struct vs_device_ops *ops;
    struct vs_fit_rules rules;
    void *priv; /* the backend's own configuration */
    /* Resource names (NULL when the vendor has none): the count resource marks a pod as this
     * backend's (webhook routing, the DRA guard); memory and cores are quota keys. */
    char *res_count, *res_mem, *res_cores;
    /* Every resource name kube-scheduler's extender config lists as managed for this backend
     * (HAMi's chart managedResources: ignoredByScheduler). */
    char **managed;
    size_t n_managed;
    int32_t mem_factor; /* quota memory factor (>= 1) */
    enum vs_lock_kind lock;
    char *lock_key;        /* VS_LOCK_STAMP: the node annotation */
    int64_t lock_ttl;      /* VS_LOCK_STAMP: seconds a lock holds */
    char *to_allocate_key; /* NULL when never written */
    char *allocated_key;   /* where this backend's usage is read back from */
    /* The type field of the device entries Filter writes is the card's model, not the word
     * (AMD). */
    bool type_is_model;
    /* Metrics: report cores as a percentage of the card (AMD: devcore is compute units). */
    bool cores_percent;
    /* For the register-annotation ops below: the node annotation holding the cards (a static
     * string, not owned) and the devcore every card gets (0: as registered). */
    const char *register_key;
    int32_t register_devcore;
};

/* A set of configured backends, sorted by word. */
struct vs_devices {
    struct vs_device *dev[VS_MAX_DEVICES];
    size_t n;
};

/* What makes backends: one per devices/ file. */
struct vs_device_class {
    const char *name; /* the class, e.g. "nvidia", "ascend" */
    /* Appends this class's backends configured by cfg (vs_devcfg: the NVIDIA fields, the
     * whole device-config document in cfg->doc, the --enable-* switches) to set, each made
     * with vs_device_new. VS_ERR_PARSE with a message naming the key for a bad section. */
    enum vs_err (*make)(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb);
};

/* The registry (devices/registry.c). */
extern const struct vs_device_class *const vs_device_classes[];
extern const size_t vs_n_device_classes;

/* A new backend with its word and ops, appended to set (id assigned when the set is
 * finished). Returns NULL when out of memory or the set is full. */
struct vs_device *vs_device_new(struct vs_devices *set, const char *word,
                                const struct vs_device_ops *ops);
/* Sets a string field of d (res_count, ...) to a copy of v ("" or NULL leaves it NULL). */
bool vs_device_set_str(char **field, const char *v);
/* Adds a managed resource name. */
bool vs_device_add_managed(struct vs_device *d, const char *name);

/* Builds the set of every class in the registry for cfg: backends sorted by word, ids
 * assigned. On error the set is empty. */
enum vs_err vs_devices_build(const struct vs_devcfg *cfg, struct vs_devices *set,
                             struct vs_errbuf *eb);
void vs_devices_cleanup(struct vs_devices *set);
/* The backend with this word, NULL when none. */
const struct vs_device *vs_devices_find(const struct vs_devices *set, const char *word);

/* The default candidate rule: the card is the backend's and its type contains the word. */
bool vs_device_candidate(const struct vs_device *d, const struct vs_card *c);

/* ---- helpers for backends ---- */

/* Generic to-allocate/allocated annotations (the annotate hook's default). */
enum vs_err vs_device_annotate_generic(const struct vs_device *d, const struct vs_pod_devs *devs,
                                       json_t *out);
/* A quantity of container c by HAMi's lookup (limits, then requests; or limits only). NULL
 * when absent. */
const char *vs_device_res(const struct vs_container *c, const char *name, bool limits_only);
/* A config string of the device-config document: doc.section.key, NULL when absent or not a
 * string. */
const char *vs_devcfg_str(const json_t *doc, const char *section, const char *key);

/* A backend's configuration value: with no document loaded, dflt (HAMi's chart default); with
 * one, section.key ("" when absent: a vendor without its section has no resource names, as in
 * HAMi). */
const char *vs_device_cfg_str(const struct vs_devcfg *cfg, const char *section, const char *key,
                              const char *dflt);
/* The same for an integer (a YAML integer or a decimal string): absent -> dflt; anything else
 * is VS_ERR_PARSE naming "section.key". */
enum vs_err vs_device_cfg_int(const struct vs_devcfg *cfg, const char *section, const char *key,
                              int64_t dflt, int64_t *out, struct vs_errbuf *eb);
/* A resource quantity of container c that must be a whole number in [min, max] (HAMi's int
 * reading). *present false when the resource is absent (or name NULL); VS_ERR_INVAL otherwise,
 * with `invalid <name> "<value>" in container <c>: must be a whole number between <min> and
 * <max>` (our rule for every backend, design.md §4: never a silently dropped request). */
enum vs_err vs_device_qty(const struct vs_container *c, const char *name, bool limits_only,
                          int64_t min, int64_t max, int64_t *out, bool *present,
                          struct vs_errbuf *eb);
/* The same rounded up (HAMi's Quantity.Value() reading): any valid quantity, then [min, max]. */
enum vs_err vs_device_qty_ceil(const struct vs_container *c, const char *name, bool limits_only,
                               int64_t min, int64_t max, int64_t *out, bool *present,
                               struct vs_errbuf *eb);
/* Inventory from a register annotation `key` in HAMi's device-list grammar (JSON array, or the
 * legacy colon form; spec/hami-vendors.md §1.2 styles J and L): absent -> no cards; malformed or
 * empty -> VS_ERR_PARSE naming the key. */
enum vs_err vs_device_inventory_register(const struct vs_knode *kn, const char *key,
                                         struct vs_inventory *out, struct vs_errbuf *eb);
/* vs_device_ops.inventory and .inventory_fp for a backend whose cards are exactly the register
 * annotation d->register_key (devcore set to d->register_devcore when that is not 0). */
enum vs_err vs_device_register_inventory(const struct vs_device *d, const struct vs_knode *kn,
                                         struct vs_inventory *out, struct vs_errbuf *eb);
uint64_t vs_device_register_fp(const struct vs_device *d, const struct vs_knode *kn);
/* FNV-1a of the values of the node annotations `keys` (0 when all are absent). */
uint64_t vs_device_fp_annotations(const struct vs_knode *kn, const char *const *keys, size_t n);
/* The same over the node's annotations `annos`, status.capacity entries `caps` and labels
 * `labels` (any list may be NULL with its count 0): 0 when every one is absent. */
uint64_t vs_device_fp_node(const struct vs_knode *kn, const char *const *annos, size_t na,
                           const char *const *caps, size_t nc, const char *const *labels,
                           size_t nl);
/* The node's status.capacity[name] as HAMi reads it (Quantity.AsInt64): absent (or name NULL)
 * is 0; false when the value is not a whole number within int64. */
bool vs_device_capacity(const struct vs_knode *kn, const char *name, int64_t *out);

/* HAMi's card-level refusal words (compat §4.5, hami-vendors §3.3), for backends' own Fits. */
#define VS_WHY_TYPE      "CardTypeMismatch"
#define VS_WHY_UUID      "CardUuidMismatch"
#define VS_WHY_SLICING   "CardTimeSlicingExhausted"
#define VS_WHY_MEM       "CardInsufficientMemory"
#define VS_WHY_CORE      "CardInsufficientCore"
#define VS_WHY_HEALTH    "CardNotHealth"
#define VS_WHY_NUMA      "NumaNotFit"
#define VS_WHY_EXCLUSIVE "ExclusiveDeviceAllocateConflict"
#define VS_WHY_INSUFF    "AllocatedCardsInsufficientRequest"
#define VS_WHY_MODE      "ModeNotFit"

/* A refusal being counted (HAMi's reason map): up to 16 distinct words (string constants). */
struct vs_reasons {
    const char *word[16];
    size_t count[16];
    size_t n;
};
/* Adds k to word's count (a count of 0 adds nothing). */
void vs_reasons_add(struct vs_reasons *r, const char *word, size_t k);
/* HAMi's GenReason: "<count>/<total> <word>" per word, sorted as plain strings, joined with ", ".
 * Returns a new string (free with free()); NULL and *nomem set when out of memory. */
char *vs_reasons_text(const struct vs_reasons *r, size_t total, bool *nomem);

/* Most cards a node's capacity may synthesize for one backend. */
#define VS_DEVICE_MAX_CAP_CARDS 256

/* Cards synthesized from the node's status.capacity[res] (HAMi's capacity style, hami-vendors
 * §1.2 C): card i of n has id "<node><infix><i>", index i, the given type and health true, the
 * rest zero for the caller to set. Absent or 0 gives no cards; a value that is not a whole number
 * in [0, VS_DEVICE_MAX_CAP_CARDS] is VS_ERR_PARSE naming the resource and the value. */
enum vs_err vs_device_cards_from_capacity(const struct vs_knode *kn, const char *res,
                                          const char *infix, const char *type,
                                          struct vs_inventory *out, struct vs_errbuf *eb);

/* HAMi's CheckUUID on pod p: the card id must be an item of the use_key annotation's comma list
 * (items trimmed; absent or blank = no constraint) and no item of the nouse_key one. */
bool vs_device_uuid_ok(const struct vs_pod *p, const char *use_key, const char *nouse_key,
                       const char *id);
/* The same over the node's status.capacity entries `names` (NULL names are skipped). */
uint64_t vs_device_fp_capacity(const struct vs_knode *kn, const char *const *names, size_t n);
/* A whole-number quantity of the node's status.capacity (HAMi reads it with AsInt64): 0 when
 * absent or name NULL; VS_ERR_PARSE `invalid status.capacity["<name>"] "<v>": not a whole number
 * between 0 and <max>` otherwise. */
enum vs_err vs_device_capacity_max(const struct vs_knode *kn, const char *name, int64_t max,
                                   int64_t *out, struct vs_errbuf *eb);
/* Appends a card to an inventory (id and type copied; index = its position); NULL on OOM. */
struct vs_card_reg *vs_device_add_card(struct vs_inventory *inv, const char *uuid,
                                       const char *type);

/* Whether card c's type passes a comma list of case-insensitive substrings `use` (any of them,
 * blank = no constraint) and `nouse` (none of them): HAMi's CheckType. */
bool vs_device_type_lists(const char *type, const char *use, const char *nouse);

#endif
