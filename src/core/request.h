/* request: what each container of a pod asks of each device backend (spec/hami-compat.md §2.2
 * for NVIDIA, spec/hami-vendors.md §1.5 and §2 for the others): every backend's request hook is
 * asked about every container, init containers first. A GPU quantity that is not acceptable is
 * a pod-level error (design.md §4) instead of a silently dropped request. */
#ifndef VS_REQUEST_H
#define VS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devcfg.h"
#include "err.h"
#include "kobj.h"

#define VS_PCT_UNSET 101

struct vs_req {
    uint16_t dev;   /* the backend (vs_device.id) */
    int32_t nums;   /* cards; 0 = this container asks for nothing of the backend */
    int32_t memreq; /* MiB per card, after memoryFactor; 0 = use pct */
    int32_t pct;    /* percent of each card's memory, VS_PCT_UNSET = none (NVIDIA); other
                     * backends: 100 when memreq is 0, else 0 (Enflame: its mode) */
    int32_t cores;  /* percent of each card's compute (clamped to 100 at Fit) */
};

/* One container's requests: at most one per backend, in backend id order. */
struct vs_ctr_req {
    struct vs_req *r;
    size_t n;
};

struct vs_pod_req {
    struct vs_ctr_req *init; /* one per init container */
    size_t n_init;
    struct vs_ctr_req *ctrs; /* one per regular container */
    size_t n_ctrs;
    bool any;                /* some container asks for a device */
    bool any_regular;        /* some regular container asks for a device */
    uint64_t devs;           /* bit per backend some container asks for */
    uint64_t regular;        /* bit per backend some regular container asks for (node lock rule) */
    struct vs_req *ctrs_all; /* storage of every container's requests */
};

/* Builds the requests of every container for every backend of cfg->devices. Errors name the
 * resource, the value and the container, e.g. `invalid nvidia.com/gpumem "8Gi" in container
 * main: must be a whole number of MiB between 0 and 2147483647`. */
enum vs_err vs_request_build(const struct vs_pod *p, const struct vs_devcfg *cfg,
                             struct vs_pod_req *out, struct vs_errbuf *eb);
void vs_pod_req_cleanup(struct vs_pod_req *r);
/* The request of backend dev in container c (NULL when it asks for none). */
const struct vs_req *vs_ctr_req_get(const struct vs_ctr_req *c, uint16_t dev);

/* Looks a resource up in limits, then requests (HAMi's order). Borrowed; NULL when absent. */
const char *vs_request_resource(const struct vs_container *c, const char *name);

/* NVIDIA's request rules for one container (compat §2.2), used by the NVIDIA backend. */
enum vs_err vs_request_nvidia(const struct vs_container *c, const struct vs_devcfg *cfg,
                              struct vs_req *r, struct vs_errbuf *eb);

#endif
