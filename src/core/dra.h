/* dra: what vgpu-sched reads of Kubernetes' Dynamic Resource Allocation (resource.k8s.io/v1).
 *
 * The guard: a DeviceClass whose spec.extendedResourceName is a resource a backend counts
 * (vs_device.res_count, e.g. nvidia.com/gpu) makes kube-scheduler's DynamicResources plugin
 * answer every pod asking that resource itself: with no DRA device free it refuses the pod
 * ("cannot fit resource") before any extender is asked, so vgpu-sched never sees it. This file
 * decodes DeviceClasses and keeps the set of classes that do so. Pure: no I/O, no locks (the
 * store keeps a set under its lock). */
#ifndef VS_DRA_H
#define VS_DRA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct vs_devices;

/* What the guard reads of a DeviceClass. */
struct vs_dra_class {
    char *name;     /* metadata.name, never empty */
    char *ext_name; /* spec.extendedResourceName; NULL when absent or "" */
};
void vs_dra_class_cleanup(struct vs_dra_class *c);

/* Decodes a DeviceClass object. VS_ERR_PARSE naming the field when metadata.name is missing,
 * empty or not a string, or when spec or spec.extendedResourceName has the wrong type (a null
 * is absent); nothing is set then. VS_ERR_NOMEM. */
enum vs_err vs_dra_class_from_json(const json_t *obj, struct vs_dra_class *out,
                                   struct vs_errbuf *eb);
/* The same from JSON text (len bytes): VS_ERR_PARSE for text that is not JSON. */
enum vs_err vs_dra_class_from_text(const char *text, size_t len, struct vs_dra_class *out,
                                   struct vs_errbuf *eb);

/* The resource of backends `devs` that class c maps to DRA: c->ext_name when a configured
 * backend counts it (its res_count), else NULL. Borrowed from c. */
const char *vs_dra_class_conflict(const struct vs_dra_class *c, const struct vs_devices *devs);

/* The admission warning for a pod asking `resource` while DeviceClass `cls` maps it, into out
 * (truncated to n). */
void vs_dra_warning(const char *cls, const char *resource, char *out, size_t n);

/* The set of conflicting classes: class name -> resource, ordered by class name. */
struct vs_dra_conflict {
    char *cls, *resource;
};
struct vs_dra_guard {
    struct vs_dra_conflict *items; /* sorted by cls (byte-wise) */
    size_t n, cap;
};
/* Records class c (decoded, current): its entry is added, changed or removed. *before: the
 * resource the class mapped before (new string, the caller frees; NULL: none); *after: the one
 * it maps now (borrowed from g; NULL: none). Returns false when out of memory (nothing
 * changed). */
bool vs_dra_guard_set(struct vs_dra_guard *g, const struct vs_dra_class *c,
                      const struct vs_devices *devs, char **before, const char **after);
/* Removes class `name`; returns its resource (new string, the caller frees) or NULL when it
 * had none. */
char *vs_dra_guard_remove(struct vs_dra_guard *g, const char *name);
void vs_dra_guard_cleanup(struct vs_dra_guard *g);
/* [{"deviceclass","resource"}] in class order (new reference; NULL when out of memory). */
json_t *vs_dra_guard_json(const struct vs_dra_guard *g);

/* ---- the ledger's input: ResourceSlices and ResourceClaims (resource.k8s.io/v1) ----
 *
 * A slice device is a HAMi card when its "uuid" attribute (or, for a MIG or partition device,
 * its "parentUUID") equals a card id in the node's register. Attribute names may be qualified
 * with a domain ("gpu.nvidia.com/uuid"): the part after the last '/' is compared. Only a
 * DeviceAttribute's "string" value is read. */
struct vs_dra_slice_dev {
    char *name;   /* devices[].name, never empty */
    char *uuid;   /* attributes uuid.string; NULL when absent */
    char *parent; /* attributes parentUUID.string; NULL when absent */
    bool multi;   /* allowMultipleAllocations: true (shares with a shareID are possible) */
};
struct vs_dra_slice {
    char *name;   /* metadata.name */
    char *node;   /* spec.nodeName; NULL when the slice is not node-local */
    char *driver; /* spec.driver */
    char *pool;   /* spec.pool.name */
    struct vs_dra_slice_dev *devs;
    size_t n;
};
void vs_dra_slice_cleanup(struct vs_dra_slice *s);
/* Decodes a ResourceSlice. VS_ERR_PARSE naming the field when metadata.name, spec.driver,
 * spec.pool.name or a device's name is missing, empty or not a string, or spec.nodeName,
 * spec.devices, a device's attributes, a uuid/parentUUID attribute or allowMultipleAllocations
 * (not a boolean) has the wrong type;
 * nothing is set then. VS_ERR_NOMEM. */
enum vs_err vs_dra_slice_from_json(const json_t *obj, struct vs_dra_slice *out,
                                   struct vs_errbuf *eb);
enum vs_err vs_dra_slice_from_text(const char *text, size_t len, struct vs_dra_slice *out,
                                   struct vs_errbuf *eb);

/* One allocated result of a claim (status.allocation.devices.results[]). */
struct vs_dra_result {
    char *request, *driver, *pool, *device;
    bool admin;      /* adminAccess: true (not usage) */
    char *share;     /* shareID; NULL: the whole device */
    bool has_mem;    /* consumedCapacity has a "memory" entry */
    int64_t mem_mib; /* its quantity in MiB, rounded up */
    bool has_cores;  /* consumedCapacity has a "cores" entry */
    int64_t cores;   /* its quantity, rounded up */
};
struct vs_dra_claim {
    char *ns, *name, *uid;     /* metadata */
    char *mirror_of;           /* label vgpu-sched.io/mirror-of (a mirror claim, mirror.h);
                                * NULL when absent */
    struct vs_dra_result *res; /* none when the claim is not allocated */
    size_t n;
};
void vs_dra_claim_cleanup(struct vs_dra_claim *c);
/* Decodes a ResourceClaim. VS_ERR_PARSE naming the field when metadata.namespace, .name or .uid
 * is missing, empty or not a string, metadata.labels is not an object or its mirror-of label
 * not a string, or status, status.allocation, .devices, .results, a
 * result's request/driver/pool/device (missing, empty or not a string), adminAccess (not a
 * boolean), shareID (not a string), consumedCapacity (not an object of quantity strings) or a
 * memory/cores quantity (not a quantity) is wrong; nothing is set then. VS_ERR_NOMEM. */
enum vs_err vs_dra_claim_from_json(const json_t *obj, struct vs_dra_claim *out,
                                   struct vs_errbuf *eb);
enum vs_err vs_dra_claim_from_text(const char *text, size_t len, struct vs_dra_claim *out,
                                   struct vs_errbuf *eb);

#endif
