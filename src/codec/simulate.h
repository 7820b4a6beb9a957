/* simulate: `vgpu-sched simulate` (design.md §2.2): load a cluster snapshot, schedule the pending
 * pods one at a time with the same Filter/score/reserve code as `serve`, and report. The
 * scheduling itself (vs_simulate_run) also serves the dashboard's what-if, over a cluster built
 * from a copy of the live model. */
#ifndef VS_SIMULATE_H
#define VS_SIMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "devcfg.h"
#include "loader.h"
#include "model.h"
#include "report.h"

struct vs_frag_stats;

struct vs_sim_run_opts {
    const struct vs_devcfg *cfg;
    const char *node_policy, *gpu_policy; /* NULL: binpack, spread */
    bool summary;          /* --reasons summary: refused pods' reasons as word counts */
    size_t table_full_max; /* more nodes than this: reasons as word counts too (0: no limit) */
    bool cpu_frag;         /* --cpu-pods fragmentation */
    /* The workload the fragmentation policy measures against, read and never added to (a
     * what-if over a live service); NULL: a fresh one that learns from the pods scheduled. */
    struct vs_frag_stats *frag_stats;
    const char *source; /* names the cluster in warnings */
    /* A model that already holds the cluster (taken over by the run, returned as *model, freed
     * on failure): cl's nodes are then only the objects kube-scheduler's filters look at, and
     * its placed pods and quotas are not added again. NULL: the model is built from cl. */
    struct vs_model *model;
};

/* Schedules, on the cluster cl (its nodes and quotas; its pods with spec.nodeName or
 * hami.io/vgpu-node are usage), cl's other pods and then every pod of pods, one at a time in
 * order, each seeing the placements before it. Pods without a UID get one. *out receives one
 * result per scheduled pod (*n_out; free each with vs_sim_pod_cleanup, then the array) and
 * *model the model after them (free with vs_model_free). Warnings go to err (may be NULL).
 * Returns 0, or -1 when out of memory (nothing returned). */
int vs_simulate_run(struct vs_objset *cl, struct vs_objset *pods, const struct vs_sim_run_opts *o,
                    FILE *err, struct vs_sim_pod **out, size_t *n_out, struct vs_model **model);

/* Runs the subcommand with argv after "simulate". Output to out, diagnostics to err.
 * Returns the process exit code: 0 done (even if pods did not fit) or after -h/--help (usage
 * to out), 2 bad flags or input. */
int vs_simulate_main(int argc, char **argv, FILE *out, FILE *err);
/* Prints `simulate --help`: what it does and every flag from the table the parser reads. */
void vs_simulate_usage(FILE *f);

#endif
