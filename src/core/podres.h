/* podres: a pod's cpu, memory and ephemeral-storage request as kube-scheduler counts it
 * (NodeResourcesFit, v1.36): per resource the larger of the app side and the largest init
 * container, sidecar init containers (restartPolicy Always) counted with the app side, plus
 * spec.overhead; pod-level cpu and memory requests (spec.resources) replace the containers'.
 * Extended resources (the GPUs vgpu-sched manages among them) are not counted. */
#ifndef VS_PODRES_H
#define VS_PODRES_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "kobj.h"

/* kube-scheduler's default request of a container that names no cpu / memory request, used only
 * for scoring (schedutil.DefaultMilliCPURequest, DefaultMemoryRequest). */
#define VS_PODRES_DEFAULT_CPU 100                   /* millicores */
#define VS_PODRES_DEFAULT_MEM (200LL * 1024 * 1024) /* bytes */

/* A pod's request for one resource is capped here (2^50: a petabyte of memory, 10^12 cores):
 * no node has that much, so the pod fits nowhere either way, and a node's sums of many such
 * pods (vs_node.res) and a score's sum of node and pod stay far from overflowing. */
#define VS_PODRES_MAX (INT64_C(1) << 50)

struct vs_podres {
    int64_t cpu; /* millicores (Quantity.MilliValue, rounded up) */
    int64_t mem; /* bytes (Quantity.Value, rounded up) */
    int64_t eph; /* bytes of ephemeral-storage */
    /* The same with a container's missing cpu / memory request taken as the defaults above:
     * what least-allocated scoring adds up (NodeInfo.NonZeroRequested). */
    int64_t nz_cpu;
    int64_t nz_mem;
};

/* p's requests of the scalar resources kube-scheduler's NodeResourcesFit counts besides cpu,
 * memory and ephemeral-storage (domain-prefixed extended resources such as example.com/fpga,
 * hugepages-*, attachable-volumes-*), the same way (requests else limits; the app side with
 * sidecars against the largest init step; plus spec.overhead), into out as name -> decimal text,
 * names sorted. skip(ctx, name) true leaves a resource out (the ones the extender manages).
 * VS_ERR_PARSE naming the field for a quantity that does not parse or is negative. */
enum vs_err vs_podres_scalar(const struct vs_pod *p, bool (*skip)(void *ctx, const char *name),
                             void *ctx, struct vs_kvlist *out, struct vs_errbuf *eb);
/* Whether kube-scheduler counts resource `name` as a scalar resource (see vs_podres_scalar). */
bool vs_podres_is_scalar(const char *name);

/* Computes p's request. A container's request for a resource is resources.requests, else
 * resources.limits (the API server's defaulting, so hand-written pods count like admitted ones).
 * VS_ERR_PARSE with the field and the value in eb when a quantity does not parse or is negative. */
enum vs_err vs_podres_compute(const struct vs_pod *p, struct vs_podres *out, struct vs_errbuf *eb);

#endif
