/* request: what each container of a pod asks of NVIDIA cards (spec/hami-compat.md §2.2), with
 * our stricter rule that a GPU quantity that is not a whole number in range is a pod-level
 * error (design.md §4) instead of a silently dropped request. */
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
    int32_t nums;   /* cards; 0 = this container asks for no GPU */
    int32_t memreq; /* MiB per card, after memoryFactor; 0 = use pct */
    int32_t pct;    /* percent of each card's memory, VS_PCT_UNSET = none */
    int32_t cores;  /* percent of each card's compute (clamped to 100 at Fit) */
};

struct vs_pod_req {
    struct vs_req *init; /* one per init container */
    size_t n_init;
    struct vs_req *ctrs; /* one per regular container */
    size_t n_ctrs;
    bool any;         /* some container asks for a GPU */
    bool any_regular; /* some regular container asks for a GPU (node lock rule) */
};

/* Builds the requests of every container. Errors name the resource, the value and the
 * container, e.g. `invalid nvidia.com/gpumem "8Gi" in container main: must be a whole number
 * of MiB between 0 and 2147483647`. */
enum vs_err vs_request_build(const struct vs_pod *p, const struct vs_devcfg *cfg,
                             struct vs_pod_req *out, struct vs_errbuf *eb);
void vs_pod_req_cleanup(struct vs_pod_req *r);

/* Looks a resource up in limits, then requests (HAMi's order). Borrowed; NULL when absent. */
const char *vs_request_resource(const struct vs_container *c, const char *name);

#endif
