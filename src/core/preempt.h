/* preempt: GPU-aware preemption plans, pure (no I/O, no clock). For a pod that fits nowhere, find
 * on a node the lower-priority tracked pods whose removal makes the pod fit by the very Fit that
 * Filter uses (vs_sched_filter with vs_sched_opts.without), and rank plans across nodes the way
 * kube-scheduler ranks preemption candidates (pkg/scheduler/framework/preemption,
 * pickOneNodeForPreemption): fewest PodDisruptionBudget violations, lowest highest-victim
 * priority, smallest sum of priorities, fewest victims, latest start of the highest-priority
 * victims, then candidate order.
 *
 * Victims on a node are only pods of strictly lower priority, never terminating ones, never the
 * pod itself. A plan is minimal: no victim can be spared and the pod still fit. Among the minimal
 * sets of a node the best by the ranking above is chosen; sets are enumerated by size within a
 * budget of fit evaluations, and kube-scheduler's own reprieve pass (victims sorted by
 * importance, PDB-violating ones reprieved first) always contributes its set, so a plan is never
 * worse than kube-scheduler's. */
#ifndef VS_PREEMPT_H
#define VS_PREEMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "kobj.h"
#include "model.h"
#include "sched.h"

/* One label selector requirement (metav1.LabelSelectorRequirement). */
enum vs_sel_op { VS_SEL_IN, VS_SEL_NOT_IN, VS_SEL_EXISTS, VS_SEL_NOT_EXISTS };

struct vs_sel_expr {
    char *key;
    enum vs_sel_op op;
    char **values;
    size_t n_values;
};

/* A PodDisruptionBudget as preemption reads it. A PDB with no selector, or an empty one,
 * protects nothing here (kube-scheduler's preemption skips it the same way). */
struct vs_pdb {
    char *ns;
    char *name;
    bool has_selector;
    struct vs_kvlist match_labels;
    struct vs_sel_expr *exprs;
    size_t n_exprs;
    int32_t allowed;            /* status.disruptionsAllowed */
    struct vs_kvlist disrupted; /* status.disruptedPods: names already counted by the API */
};

void vs_pdb_cleanup(struct vs_pdb *p);
/* True when the selector of p selects a pod with these labels in namespace ns. */
bool vs_pdb_selects(const struct vs_pdb *p, const char *ns, const struct vs_kvlist *labels);

struct vs_preempt_opts {
    const struct vs_sched_opts *sched; /* Filter's options (without/n_without must be unset) */
    const struct vs_pdb *pdbs;
    size_t n_pdbs;
    bool bound_only;  /* only pods bound to the node (spec.nodeName) may be victims */
    size_t budget;    /* fit evaluations per node for the enumeration; 0 = 1024 */
    bool no_precheck; /* for tests: evaluate every set with Fit (the reference) */
};

struct vs_preempt_plan {
    char *node;
    /* Victims, most important first (higher priority, then earlier start): borrowed from the
     * model, valid until it changes. The first n_forced are the caller's forced victims. */
    const struct vs_podent **victims;
    size_t n;
    size_t n_forced;
    int64_t pdb_violations;
    int32_t max_priority; /* of the victims (INT32_MIN with none) */
    int64_t priority_sum; /* sum of (priority + 2^31) over the victims */
    int64_t earliest_top; /* earliest start among the highest-priority victims (INT64_MAX with
                             none or all unknown) */
    struct vs_filter_result fit; /* the pod's fit on the node with the victims gone (best 0) */
};

void vs_preempt_plan_cleanup(struct vs_preempt_plan *p);

/* Whether the pod may preempt at all: spec.preemptionPolicy is not Never. */
bool vs_preempt_allowed(const struct vs_pod *pod);

/* kube-scheduler's order of plans: negative when a ranks before b. */
int vs_preempt_plan_cmp(const struct vs_preempt_plan *a, const struct vs_preempt_plan *b);

/* The best minimal plan on one node. `forced` victims (kube-scheduler's, may be empty) are
 * always part of the plan and further lower-priority pods are added only when they are not
 * enough. *found is false when no set works (or the pod may not preempt, or has a pod-level
 * error). A plan with no victim at all is returned when the pod already fits there with the
 * forced ones gone and none were forced. Returns VS_ERR_NOMEM only. */
enum vs_err vs_preempt_node(const struct vs_model *m, const struct vs_pod *pod, const char *node,
                            const struct vs_podent *const *forced, size_t n_forced,
                            const struct vs_preempt_opts *o, struct vs_preempt_plan *out,
                            bool *found);

/* Plans on each candidate where some set of victims works (nodes where the pod fits without
 * victims give none), sorted best first by vs_preempt_plan_cmp (candidate order on ties).
 * Free with vs_preempt_plans_free. Returns VS_ERR_NOMEM only. */
enum vs_err vs_preempt_plans(const struct vs_model *m, const struct vs_pod *pod,
                             const char *const *cands, size_t n_cands,
                             const struct vs_preempt_opts *o, struct vs_preempt_plan **out,
                             size_t *n_out);
void vs_preempt_plans_free(struct vs_preempt_plan *p, size_t n);

#endif
