/* mirror: which "mirror" ResourceClaims should exist so that kube-scheduler's DRA allocator sees
 * HAMi's allocations. For every tracked pod and every card it uses that a node-local
 * ResourceSlice device also names (uuid, or parentUUID for a partition of the card), one claim,
 * already allocated, whose results name those devices: without a shareID (fence mode: DRA sees
 * the devices as taken) or, in share mode and for a device that allows multiple allocations,
 * with the pod uid as shareID and the pod's memory and cores as consumedCapacity.
 * Pure: no I/O, no locks (the caller holds the model's read lock); service/mirrors.c writes. */
#ifndef VS_MIRROR_H
#define VS_MIRROR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vs_model;

enum vs_mirror_mode { VS_MIRROR_OFF = 0, VS_MIRROR_FENCE, VS_MIRROR_SHARE };

/* "off", "fence" or "share" (case-insensitive). VS_ERR_INVAL naming the value otherwise. */
enum vs_err vs_mirror_mode_parse(const char *s, enum vs_mirror_mode *out, struct vs_errbuf *eb);
/* "off", "fence" or "share" (static). */
const char *vs_mirror_mode_name(enum vs_mirror_mode m);

/* One result of a mirror: a device and whether it is a share of it. */
struct vs_mirror_dev {
    char *driver, *pool, *device;
    bool share; /* shareID = the pod uid, consumedCapacity = mem_mib/cores of the mirror */
};

/* The label value of a card's mirror (one per card, whichever pods use it). */
#define VS_MIRROR_CARD "card"

/* One mirror claim. kube-scheduler keeps the devices allocated without a shareID as a set, so a
 * device must be in one such claim only: its whole results are the card's mirror, one per card
 * (node, card) while any tracked pod uses it, pod_uid NULL; share results (distinct shareIDs,
 * consumed capacity summed) are one mirror per pod and card. */
struct vs_mirror {
    char *name;    /* the card's: "vgpu-mirror-card-<FNV-1a 32 of node>-<... of card>";
                    * a pod's: "vgpu-mirror-<pod uid>-<FNV-1a 32 of card>" (8 hex digits each) */
    char *pod_uid; /* label vgpu-sched.io/mirror-of (VS_MIRROR_CARD: NULL here) */
    char *pod;     /* "ns/name" (annotation vgpu-sched.io/mirror-pod); NULL for the card's */
    char *node;    /* annotation vgpu-sched.io/mirror-node, status.allocation.nodeSelector */
    char *card;    /* annotation vgpu-sched.io/mirror-card */
    int64_t mem_mib, cores;     /* the pod's use of the card (consumed by share results) */
    struct vs_mirror_dev *devs; /* sorted by (driver, pool, device); never empty when desired */
    size_t n;
    bool allocated; /* status.allocation is written (desired mirrors: true) */
    bool dra_held;  /* a card's mirror whose card a DRA claim also holds (vs_mirror_mark_held) */
};
void vs_mirror_cleanup(struct vs_mirror *m);

/* A set of mirrors sorted by name (names unique). */
struct vs_mirror_set {
    struct vs_mirror *items;
    size_t n, cap;
};
void vs_mirror_set_cleanup(struct vs_mirror_set *s);
/* The mirror named `name`, or NULL. Borrowed from s. */
const struct vs_mirror *vs_mirror_set_find(const struct vs_mirror_set *s, const char *name);

/* The name of the card's mirror into out (n bytes, 36 are enough); false when it does not fit. */
bool vs_mirror_card_name(const char *node, const char *card, char *out, size_t n);
/* The claim name for (pod_uid, card) into out (n bytes; 64 is enough for any pod uid up to 40
 * characters). Returns false when it does not fit or is not a valid object name. */
bool vs_mirror_name(const char *pod_uid, const char *card, char *out, size_t n);

/* The mirrors model m calls for in `mode` (out zeroed first; empty for VS_MIRROR_OFF): for every
 * tracked pod that is not expired and has a node, every card of its usage that a node-local
 * slice device of that node names. A share result needs share mode, a device with
 * allowMultipleAllocations named by its uuid and a pod uid in RFC 4122 lowercase form (a
 * pod's mirror); other devices get whole results (the card's mirror).
 * VS_ERR_NOMEM (out emptied). */
enum vs_err vs_mirror_desired(const struct vs_model *m, enum vs_mirror_mode mode,
                              struct vs_mirror_set *out);

/* The same for the one tracked pod `uid` (Bind's mirrors): O(its cards x slices). */
enum vs_err vs_mirror_desired_pod(const struct vs_model *m, enum vs_mirror_mode mode,
                                  const char *uid, struct vs_mirror_set *out);

/* Whether a DRA claim holds a card tracked pod `uid` uses so that the card is over-committed
 * (the claim came after Filter chose the card): true with why (truncated to n) naming the card,
 * the node and the claims holding some of its cards. */
bool vs_mirror_taken(const struct vs_model *m, const char *uid, char *why, size_t n);

/* Sets dra_held on every card's mirror of s whose card (node, card) DRA claims of the ledger
 * hold some of: the mirror then shares a device with a real claim, and kube-scheduler keeps
 * allocated devices as a set, so removing either claim frees the device in its eyes. */
void vs_mirror_mark_held(const struct vs_model *m, struct vs_mirror_set *s);

/* Decodes an existing mirror claim (labelled mirror-of) into out: name, label, the three
 * annotations (absent ones NULL) and status.allocation's results (share: a shareID is set;
 * mem_mib/cores from the first share result's consumedCapacity). VS_ERR_PARSE naming the field
 * for a claim that is not a ResourceClaim (vs_dra_claim_from_json's checks) or has no mirror-of
 * label; nothing is set then. VS_ERR_NOMEM. */
enum vs_err vs_mirror_from_claim(const json_t *claim, struct vs_mirror *out, struct vs_errbuf *eb);

/* Adds a copy of m to s (replacing one of the same name). false when out of memory. */
bool vs_mirror_set_add(struct vs_mirror_set *s, const struct vs_mirror *m);

/* The ResourceClaim to create for mirror m in namespace ns (new reference; NULL when out of
 * memory): labels, annotations, one request per result ("r0", "r1", ... exactly one device of
 * deviceClassName = the driver's name; share results also request the capacity). */
json_t *vs_mirror_claim_json(const struct vs_mirror *m, const char *ns);
/* The status to write through the status subresource (new reference; NULL when out of memory):
 * {"allocation":{"devices":{"results":[...]},"nodeSelector":<the node by metadata.name>}}. */
json_t *vs_mirror_status_json(const struct vs_mirror *m);

/* Same name, node, card, devices and (when some result shares) amounts, and have is allocated. */
bool vs_mirror_same(const struct vs_mirror *want, const struct vs_mirror *have);

/* What a reconcile does: delete have->items[remove[i]], then create want->items[create[i]]. An
 * allocated have entry that is not the same as the want entry of its name is removed and that
 * want entry created again; an unallocated one is only "created" (the create completes it). */
struct vs_mirror_diff {
    size_t *create, n_create;
    size_t *remove, n_remove;
};
enum vs_err vs_mirror_diff(const struct vs_mirror_set *want, const struct vs_mirror_set *have,
                           struct vs_mirror_diff *out);
void vs_mirror_diff_cleanup(struct vs_mirror_diff *d);

#endif
