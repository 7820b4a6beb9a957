/* pending: every GPU pod Filter refused and that is not placed yet, with what the dashboard
 * shows about it: its request per container, the reasons of its last Filter (counted per reason
 * word, and per node for up to max_detail nodes), how often and since when it was refused, and
 * a filter-mode preemption in progress. Kept until Filter places the pod or the pod is deleted
 * or terminal (the store's pod hook), not lost when its Events age out; an entry no Filter
 * refreshed for stale_s (a pod deleted while the watch was down: kube-scheduler retries a
 * pending pod at least every 5 minutes) is dropped. At most max_pods entries: past it the entry
 * refused longest ago makes room and is counted as dropped.
 *
 * Thread-safe: one mutex over the table, held only to copy in and out. */
#ifndef VS_PENDING_H
#define VS_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devcfg.h"
#include "kobj.h"
#include "request.h"
#include "sched.h"

struct vs_pending_opts {
    size_t max_pods;             /* 0: 2,000 */
    size_t max_detail;           /* per-node reasons kept per pod; 0: 256 */
    int64_t stale_s;             /* 0: 3,600 */
    const struct vs_devcfg *cfg; /* borrowed: builds each pod's request */
};

/* A container's GPU request as the dashboard shows it. */
struct vs_pending_ctr {
    char *name;
    bool init;
    struct vs_req req; /* nums 0: asks for no GPU */
};

struct vs_pending_word {
    char *word;
    size_t nodes;
};

struct vs_pending_node {
    char *node;
    char *reason;
};

/* One refused pod; every string owned by the entry. */
struct vs_pending_entry {
    char *uid, *ns, *name;
    int64_t first_at, last_at; /* unix seconds of the first and the last refusal */
    uint64_t attempts;
    char *error; /* pod-level refusal (bad annotation or quantity), NULL otherwise */
    struct vs_pending_ctr *ctrs;
    size_t n_ctrs;
    char *use_type, *nouse_type;   /* nvidia.com/use-gputype, nouse-gputype ("" = none) */
    size_t n_nodes;                /* nodes the last Filter refused */
    struct vs_pending_word *words; /* reason words, most nodes first */
    size_t n_words;
    struct vs_pending_node *detail; /* the first max_detail nodes, candidate order */
    size_t n_detail;
    char *preempt_node;    /* filter-mode preemption: the node its victims are leaving, or NULL */
    char *preempt_victims; /* "ns/a, ns/b" */
};

struct vs_pending;

struct vs_pending *vs_pending_new(const struct vs_pending_opts *o); /* NULL: out of memory */
void vs_pending_free(struct vs_pending *p);

/* Filter refused pod at `now`: r holds its per-node reasons (r->n nodes) or error the pod-level
 * problem (r may then be NULL). preempt_node/victims: a filter-mode preemption for it (may be
 * NULL). Copies what it keeps; out of memory leaves the table as it was. */
void vs_pending_refused(struct vs_pending *p, const struct vs_pod *pod,
                        const struct vs_filter_result *r, const char *error,
                        const char *preempt_node, const char *preempt_victims, int64_t now);
/* Filter placed the pod, or it was deleted or ended. */
void vs_pending_forget(struct vs_pending *p, const char *uid);

/* Bumped on every change (the dashboard's ETag). */
uint64_t vs_pending_version(struct vs_pending *p);
size_t vs_pending_count(struct vs_pending *p);

/* Every entry, refused first-first (then namespace, name), without the per-node detail
 * (n_detail 0) unless with_detail; stale entries are dropped first. *version receives the
 * version the copy is of. Free with vs_pending_list_free. VS_ERR_NOMEM only. */
enum vs_err vs_pending_list(struct vs_pending *p, int64_t now, bool with_detail,
                            struct vs_pending_entry **out, size_t *n, uint64_t *version,
                            uint64_t *dropped);
/* The entry of pod ns/name with its detail; false when there is none (or out of memory). */
bool vs_pending_get(struct vs_pending *p, const char *ns, const char *name, int64_t now,
                    struct vs_pending_entry *out);
void vs_pending_entry_cleanup(struct vs_pending_entry *e);
void vs_pending_list_free(struct vs_pending_entry *v, size_t n);

/* Counts the words of one FailedNodes reason into words (each part joined with ", " once,
 * without its "k/n " card fraction; node-level strings up to ':'), as simulate --reasons
 * summary does. For tests. */
enum vs_err vs_pending_count_reason(struct vs_pending_word **words, size_t *n, const char *reason);

#endif
