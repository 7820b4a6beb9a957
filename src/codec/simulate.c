/* simulate: the what-if driver. Pods already placed in the cluster file (spec.nodeName or
 * hami.io/vgpu-node) are usage; the rest, then every pod of --pods, are scheduled in file
 * order, each seeing the placements before it. */
#include "simulate.h"

#include "buf.h"
#include "annot.h"
#include "devcfg.h"
#include "flags.h"
#include "frag.h"
#include "kfilter.h"
#include "loader.h"
#include "model.h"
#include "podres.h"
#include "policy.h"
#include "preempt.h"
#include "report.h"
#include "sched.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sim_opts {
    const char *cluster;
    const char *pods;
    const char *node_policy;
    const char *gpu_policy;
    const char *devcfg;
    const char *output;
    const char *svg;
    const char *reasons;
    const char *cpu_pods;
    bool enable_ascend, enable_iluvatar;
};

static void warn_to(void *ctx, const char *msg)
{
    fprintf((FILE *)ctx, "warning: %s\n", msg);
}

/* The flags of `simulate`: the parser and --help read this table (flags.h); docs/flags.md is the
 * --help output, checked by ctest flags_doc. */
#define O(f) offsetof(struct sim_opts, f)
static const struct vs_flag flags[] = {
    {.name = "cluster",
     .type = VS_FLAG_STR,
     .off = O(cluster),
     .help = "required: nodes and placed pods, as kubectl prints them (JSON or YAML)"},
    {.name = "pods",
     .type = VS_FLAG_STR,
     .off = O(pods),
     .help = "more pods to schedule after the cluster file's pending ones"},
    {.name = "node-scheduler-policy",
     .type = VS_FLAG_STR,
     .off = O(node_policy),
     .help = "binpack | spread | fragmentation",
     .def = "binpack"},
    {.name = "gpu-scheduler-policy",
     .type = VS_FLAG_STR,
     .off = O(gpu_policy),
     .help = "spread | binpack | topology-aware | mutex | numa | fragmentation, or a comma chain",
     .def = "spread"},
    {.name = "device-config-file",
     .type = VS_FLAG_STR,
     .off = O(devcfg),
     .help = "HAMi's device-config.yaml"},
    {.name = "output", .type = VS_FLAG_STR, .off = O(output), .help = "table | json"},
    {.name = "reasons",
     .type = VS_FLAG_STR,
     .off = O(reasons),
     .help = "full | summary: a refused pod's reasons per node, or counted by reason word"},
    {.name = "cpu-pods",
     .type = VS_FLAG_STR,
     .off = O(cpu_pods),
     .help = "kube | fragmentation: how the pods asking for no GPU are placed"},
    {.name = "svg",
     .type = VS_FLAG_STR,
     .off = O(svg),
     .help = "also draw each card's allocation into this SVG file"},
    {.name = "enable-ascend",
     .type = VS_FLAG_BOOL,
     .off = O(enable_ascend),
     .help = "schedule Huawei Ascend NPUs (the vnpus section's chips)"},
    {.name = "enable-iluvatar",
     .type = VS_FLAG_BOOL,
     .off = O(enable_iluvatar),
     .help = "schedule Iluvatar GPUs (the iluvatars section's chips)"},
    {.name = "help", .alias = "h", .type = VS_FLAG_HELP, .help = "print this help and exit"},
};
#define N_FLAGS (sizeof(flags) / sizeof(flags[0]))

static void sim_defaults(struct sim_opts *o)
{
    *o = (struct sim_opts){.output = "table", .reasons = "full", .cpu_pods = "kube"};
}

void vs_simulate_usage(FILE *f)
{
    struct sim_opts o;
    sim_defaults(&o);
    fprintf(f, "usage: vgpu-sched simulate --cluster FILE [flags]\n"
               "\n"
               "What-if: schedules the cluster file's pending pods, then every pod of --pods, one\n"
               "at a time with the same Filter, score and reserve code as serve, and kube-\n"
               "scheduler's own filters before it; no cluster or network needed. Exit status: 0\n"
               "(also when pods do not fit), 2 bad flags or input.\n"
               "\n"
               "flags:\n");
    vs_flags_print(f, flags, N_FLAGS, &o);
}

/* Returns 0, 1 after --help (usage printed to out), or 2 with a message. */
static int parse_flags(int argc, char **argv, struct sim_opts *o, FILE *out, FILE *err)
{
    sim_defaults(o);
    enum vs_flags_result r =
        vs_flags_parse(flags, N_FLAGS, argc, argv, o, "simulate", err, NULL, NULL);
    if (r == VS_FLAGS_HELP) {
        vs_simulate_usage(out);
        return 1;
    }
    if (r != VS_FLAGS_OK)
        return 2;
    if (!o->cluster) {
        fprintf(err, "simulate: --cluster FILE is required\n");
        return 2;
    }
    if (strcmp(o->output, "table") != 0 && strcmp(o->output, "json") != 0) {
        fprintf(err, "simulate: invalid --output \"%s\" (want table or json)\n", o->output);
        return 2;
    }
    if (strcmp(o->reasons, "full") != 0 && strcmp(o->reasons, "summary") != 0) {
        fprintf(err, "simulate: invalid --reasons \"%s\" (want full or summary)\n", o->reasons);
        return 2;
    }
    if (strcmp(o->cpu_pods, "kube") != 0 && strcmp(o->cpu_pods, "fragmentation") != 0) {
        fprintf(err, "simulate: invalid --cpu-pods \"%s\" (want kube or fragmentation)\n",
                o->cpu_pods);
        return 2;
    }
    return 0;
}

static bool is_placed(const struct vs_pod *p)
{
    const char *vn = vs_kv_get(&p->annotations, VS_ANNO_VGPU_NODE);
    return (p->node_name && *p->node_name) || (vn && *vn);
}

/* Pods from files may lack a UID; the model keys pods by UID. */
static int ensure_uid(struct vs_pod *p)
{
    if (p->uid && *p->uid)
        return 0;
    size_t n = strlen(p->ns) + strlen(p->name) + 16;
    char *u = malloc(n);
    if (!u)
        return -1;
    snprintf(u, n, "simulate:%s/%s", p->ns, p->name);
    free(p->uid);
    p->uid = u;
    return 0;
}

/* What every pod's scheduling shares: the cluster, its nodes' model entries (stable while the
 * Node exists) and scratch space sized to the node count. */
struct sim_ctx {
    struct vs_model *m;
    const struct vs_objset *cl;
    const struct vs_sched_opts *so;
    bool summary; /* --reasons summary (the extender then reports reason words as bits) */
    /* A table pod whose reasons cover more nodes than this is summarised (--output table). */
    size_t table_full_max;
    const struct vs_node **mnodes; /* model entry of cl->nodes[i] */
    const char **cands;            /* names of the nodes that pass kube-scheduler's filters */
    const char **kreason;          /* kreason[i]: why cl->nodes[i] failed them, NULL if it passed */
    /* The lowest spec.priority of the pods tracked on cards (INT32_MAX: none): a refused pod
     * whose priority is not above it has no possible victim, so no preemption search runs. */
    int32_t min_prio;
    char (*kbuf)[VS_KF_REASON_SIZE];
    /* --cpu-pods fragmentation: a pod asking no GPU goes where the fragmentation measure grows
     * least against these statistics (the GPU pods' shapes so far); NULL: kube-scheduler's
     * scoring alone. */
    struct vs_frag_stats *cpu_frag;
    /* Scalar resources (vs_podres_scalar) the pods on each node request, by cl node index, and
     * each placed pod's own (to take back when it is preempted). */
    struct vs_kvlist *sused;
    struct spod {
        char *uid;
        size_t node;
        struct vs_kvlist req;
    } * spods;
    size_t n_spods, cap_spods;
};

/* Whether a backend manages resource `name` (the extender's managedResources: kube-scheduler
 * leaves it to the extender). */
static bool managed_name(void *ctx, const char *name)
{
    const struct vs_devices *set = ctx;
    for (size_t d = 0; d < set->n; d++)
        for (size_t k = 0; k < set->dev[d]->n_managed; k++)
            if (strcmp(set->dev[d]->managed[k], name) == 0)
                return true;
    return false;
}

static long node_index(const struct sim_ctx *c, const char *node)
{
    for (size_t i = 0; node && i < c->cl->n_nodes; i++)
        if (strcmp(c->cl->nodes[i].name, node) == 0)
            return (long)i;
    return -1;
}

/* Adds (sign 1) or takes back (-1) req on node i's sums. */
static int scalar_apply(struct sim_ctx *c, size_t i, const struct vs_kvlist *req, int sign)
{
    for (size_t k = 0; k < req->n; k++) {
        const char *u = vs_kv_get(&c->sused[i], req->items[k].key);
        long long v = (u ? strtoll(u, NULL, 10) : 0) + sign * strtoll(req->items[k].val, NULL, 10);
        char buf[24];
        snprintf(buf, sizeof(buf), "%lld", v);
        if (vs_kv_set(&c->sused[i], req->items[k].key, buf))
            return -1;
    }
    return 0;
}

/* Pod uid with scalar requests req is placed on node: counted there (req is taken over). */
static int scalar_account(struct sim_ctx *c, const char *uid, const char *node,
                          struct vs_kvlist *req)
{
    long i = node_index(c, node);
    if (i < 0 || req->n == 0)
        return 0;
    if (c->n_spods == c->cap_spods) {
        size_t nc = c->cap_spods ? c->cap_spods * 2 : 16;
        struct spod *g = realloc(c->spods, nc * sizeof(*g));
        if (!g)
            return -1;
        c->spods = g;
        c->cap_spods = nc;
    }
    struct spod *sp = &c->spods[c->n_spods];
    if (!(sp->uid = strdup(uid)) || scalar_apply(c, (size_t)i, req, 1)) {
        free(sp->uid);
        return -1;
    }
    sp->node = (size_t)i;
    sp->req = *req;
    memset(req, 0, sizeof(*req));
    c->n_spods++;
    return 0;
}

/* A preempted pod leaves: its scalar requests are taken back. */
static int scalar_unaccount(struct sim_ctx *c, const char *uid)
{
    for (size_t k = 0; k < c->n_spods; k++) {
        if (strcmp(c->spods[k].uid, uid) != 0)
            continue;
        int rc = scalar_apply(c, c->spods[k].node, &c->spods[k].req, -1);
        free(c->spods[k].uid);
        vs_kv_cleanup(&c->spods[k].req);
        c->spods[k] = c->spods[--c->n_spods];
        return rc;
    }
    return 0;
}

/* Appends without the duplicate check of vs_kv_set (node names are unique); cap preallocated. */
static int kv_append(struct vs_kvlist *l, size_t cap, const char *key, const char *val)
{
    if (!l->items && !(l->items = calloc(cap ? cap : 1, sizeof(*l->items))))
        return -1;
    char *k = strdup(key), *v = strdup(val);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    l->items[l->n].key = k;
    l->items[l->n].val = v;
    l->n++;
    return 0;
}

struct word_count {
    const char *word; /* borrowed from a reason text */
    size_t len;
    long n;
};

struct word_counts {
    struct word_count *w;
    size_t n, cap;
};

static int count_word(struct word_counts *c, const char *w, size_t len)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->w[i].len == len && memcmp(c->w[i].word, w, len) == 0) {
            c->w[i].n++;
            return 0;
        }
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        struct word_count *g = realloc(c->w, cap * sizeof(*g));
        if (!g)
            return -1;
        c->w = g;
        c->cap = cap;
    }
    c->w[c->n++] = (struct word_count){w, len, 1};
    return 0;
}

/* Counts each part of a reason joined with ", " once, without a leading "k/n " card fraction
 * (the extender's "1/2 CardInsufficientMemory, 1/2 CardNotHealth" counts two words). */
static int count_reason(struct word_counts *c, const char *reason)
{
    const char *s = reason;
    for (;;) {
        const char *comma = strstr(s, ", ");
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        const char *w = s;
        size_t i = 0;
        while (i < len && w[i] >= '0' && w[i] <= '9')
            i++;
        if (i > 0 && i < len && w[i] == '/') {
            size_t j = i + 1;
            while (j < len && w[j] >= '0' && w[j] <= '9')
                j++;
            if (j > i + 1 && j < len && w[j] == ' ') {
                w += j + 1;
                len -= j + 1;
            }
        }
        if (count_word(c, w, len))
            return -1;
        if (!comma)
            return 0;
        s = comma + 2;
    }
}

static int wc_cmp(const void *a, const void *b)
{
    const struct word_count *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    size_t l = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->word, y->word, l);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The refused pod's reasons: kube-scheduler's for the nodes it filtered out, the extender's
 * (r, over the candidates in order) for the rest, in cluster order; or their word counts. */
static int refused_reasons(const struct sim_ctx *c, const struct vs_filter_result *r,
                           struct vs_sim_pod *out)
{
    size_t nn = c->cl->n_nodes, j = 0;
    bool summary = c->summary || (c->table_full_max && nn > c->table_full_max);
    struct word_counts wc = {0};
    int rc = 0;
    out->n_nodes = nn;
    out->reasons_summary = summary;
    for (size_t i = 0; i < nn && !rc; i++) {
        const char *why = c->kreason[i];
        uint32_t words = 0;
        if (!why) {
            why = r && j < r->n && r->nodes[j].reason ? r->nodes[j].reason : "";
            words = r && j < r->n ? r->nodes[j].words : 0;
            j++;
        }
        if (words) { /* summary only: the extender's words as bits */
            for (int b = 0; b <= VS_REASON_COUNT && !rc; b++) {
                if (!(words & (1u << b)))
                    continue;
                const char *w = b < VS_REASON_COUNT ? vs_reason_words[b] : "NodeInsufficientDevice";
                rc = count_word(&wc, w, strlen(w));
            }
            continue;
        }
        rc = summary ? count_reason(&wc, why)
                     : kv_append(&out->reasons, nn, c->cl->nodes[i].name, why);
    }
    if (summary && !rc) {
        qsort(wc.w, wc.n, sizeof(*wc.w), wc_cmp);
        for (size_t i = 0; i < wc.n && !rc; i++) {
            char word[256], num[24];
            snprintf(word, sizeof(word), "%.*s", (int)(wc.w[i].len < 255 ? wc.w[i].len : 255),
                     wc.w[i].word);
            snprintf(num, sizeof(num), "%ld", wc.w[i].n);
            rc = kv_append(&out->reasons, wc.n, word, num);
        }
    }
    free(wc.w);
    return rc;
}

/* A pod that asks for no GPU: NodeResourcesFit's least-allocated score picks among the
 * candidates, the first of equal scores. With --cpu-pods fragmentation the candidate where the
 * fragmentation grows least comes first, then the one with the least idle GPU capacity (its cpu
 * is worth least to GPU pods there), then that score and the candidate order. */
static int place_plain(struct sim_ctx *c, struct vs_pod *p, const struct vs_podres *res,
                       struct vs_sim_pod *out)
{
    long best = -1;
    int64_t best_score = -1;
    double best_frag = 0, best_idle = 0;
    struct vs_frag_ctx fx;
    if (c->cpu_frag)
        vs_frag_ctx_init(&fx, c->cpu_frag);
    for (size_t i = 0; i < c->cl->n_nodes; i++) {
        if (c->kreason[i] || !c->mnodes[i])
            continue;
        int64_t sc = vs_kfilter_least_allocated(c->mnodes[i], res);
        double idle = 0;
        double fr =
            c->cpu_frag ? vs_sched_frag_plain(&fx, c->mnodes[i], res->cpu, res->mem, &idle) : 0;
        if (best < 0 || fr < best_frag - VS_FRAG_TIE ||
            (fr <= best_frag + VS_FRAG_TIE &&
             (idle < best_idle - VS_FRAG_TIE ||
              (idle <= best_idle + VS_FRAG_TIE && sc > best_score)))) {
            best_score = sc;
            best_frag = fr;
            best_idle = idle;
            best = (long)i;
        }
    }
    if (best < 0)
        return refused_reasons(c, NULL, out);
    out->node = strdup(c->cl->nodes[best].name);
    if (!out->node || vs_model_account(c->m, p->uid, out->node, res))
        return -1;
    return 0;
}

/* What the decision f writes, into out: node, score, the NVIDIA device list (`devices`), the
 * other backends' lists for the table, and every annotation (timestamps left out). */
static int record_decision(const struct vs_model *m, const struct vs_pod *p,
                           const struct vs_node_fit *f, struct vs_sim_pod *out)
{
    const struct vs_devices *set = vs_model_devices(m);
    const struct vs_device *nv = vs_devices_find(set, VS_VENDOR);
    out->gpu = true;
    out->score = f->score;
    if (!(out->node = strdup(f->node)) || !(out->annotations = json_object()))
        return -1;
    struct vs_buf other;
    vs_buf_init(&other);
    for (size_t k = 0; k < f->n_allocs; k++) {
        char *v = vs_annot_format_devices(&f->allocs[k].devs);
        if (!v) {
            vs_buf_cleanup(&other);
            return -1;
        }
        if (nv && f->allocs[k].dev == nv->id) {
            out->devices = v;
            continue;
        }
        vs_buf_printf(&other, "%s%s %s", other.len ? " " : "", set->dev[f->allocs[k].dev]->word, v);
        free(v);
    }
    if (other.len && !(out->other_devices = vs_buf_steal(&other)))
        return -1;
    vs_buf_cleanup(&other);
    json_t *an = json_object();
    if (!an || vs_sched_annotations(set, p, vs_model_node(m, f->node), f, 0, an)) {
        json_decref(an);
        return -1;
    }
    /* A null only removes a stale annotation: it is not something the decision writes. */
    const char *k;
    json_t *v;
    json_object_foreach(an, k, v)
    {
        if (!json_is_null(v))
            json_object_set(out->annotations, k, v);
    }
    json_decref(an);
    return 0;
}

/* No node fits: place the pod by the best preemption plan, if any. The victims leave the
 * what-if state and the pod is committed on the plan's node. Returns 1 when placed, 0 when no
 * plan exists, -1 on OOM. */
static int place_by_preemption(struct sim_ctx *c, struct vs_pod *p, const char *const *cands,
                               size_t nc, const struct vs_sched_opts *so, struct vs_sim_pod *out)
{
    struct vs_model *m = c->m;
    if (!vs_preempt_allowed(p))
        return 0;
    struct vs_preempt_opts po = {.sched = so};
    struct vs_preempt_plan *plans;
    size_t np;
    if (vs_preempt_plans(m, p, cands, nc, &po, &plans, &np))
        return -1;
    if (np == 0) {
        vs_preempt_plans_free(plans, np);
        return 0;
    }
    const struct vs_preempt_plan *best = &plans[0];
    char **uids = calloc(best->n, sizeof(*uids));
    out->victims = calloc(best->n, sizeof(*out->victims));
    char *node = strdup(best->node);
    int rc = -1;
    if (!uids || !out->victims || !node)
        goto out;
    for (size_t i = 0; i < best->n; i++) {
        const struct vs_podent *v = best->victims[i];
        size_t len = strlen(v->ns) + strlen(v->name) + 2;
        out->victims[i] = malloc(len);
        uids[i] = strdup(v->uid);
        if (!out->victims[i] || !uids[i])
            goto out;
        snprintf(out->victims[i], len, "%s/%s", v->ns, v->name);
        out->n_victims++;
    }
    vs_preempt_plans_free(plans, np);
    plans = NULL;
    for (size_t i = 0; i < out->n_victims; i++) {
        vs_model_remove_pod(m, uids[i]);
        vs_model_unaccount(m, uids[i]);
        if (scalar_unaccount(c, uids[i]))
            goto out;
    }
    struct vs_filter_result r;
    const char *one[] = {node};
    if (vs_sched_filter(m, p, one, 1, so, &r))
        goto out;
    if (r.best == 0) {
        const struct vs_node_fit *f = &r.nodes[0];
        struct vs_errbuf eb;
        rc = !record_decision(m, p, f, out) && !vs_sched_commit(m, p, &r, 0, &eb) ? 1 : -1;
    } else {
        /* The plan was computed on this very state: it cannot fail to fit now. */
        rc = -1;
    }
    vs_filter_result_cleanup(&r);
out:
    for (size_t i = 0; uids && i < out->n_victims; i++)
        free(uids[i]);
    free(uids);
    free(node);
    vs_preempt_plans_free(plans, plans ? np : 0);
    return rc;
}

static int schedule_one(struct sim_ctx *c, struct vs_pod *p, struct vs_sim_pod *out)
{
    size_t n = strlen(p->ns) + strlen(p->name) + 2;
    out->pod = malloc(n);
    if (!out->pod)
        return -1;
    snprintf(out->pod, n, "%s/%s", p->ns, p->name);
    struct vs_podres res;
    struct vs_errbuf eb;
    struct vs_kvlist sreq = {0};
    if (vs_podres_compute(p, &res, &eb) ||
        vs_podres_scalar(p, managed_name, (void *)c->so->cfg->devices, &sreq, &eb))
        return (out->error = strdup(eb.msg)) ? 0 : -1;
    const struct vs_objset *cl = c->cl;
    size_t nc = 0;
    for (size_t i = 0; i < cl->n_nodes; i++) {
        struct vs_kf_scalar sc = {.req = &sreq, .used = &c->sused[i]};
        c->kreason[i] = vs_kfilter_node(p, &res, &cl->nodes[i], c->mnodes[i], &sc, c->kbuf[i]);
        if (!c->kreason[i])
            c->cands[nc++] = cl->nodes[i].name;
    }
    struct vs_filter_result r;
    int rc = 0;
    if (vs_sched_filter(c->m, p, c->cands, nc, c->so, &r)) {
        vs_kv_cleanup(&sreq);
        return -1;
    }
    if (r.error) {
        out->error = strdup(r.error);
        rc = out->error ? 0 : -1;
    } else if (!r.managed) {
        rc = place_plain(c, p, &res, out);
    } else if (r.best >= 0) {
        const struct vs_node_fit *f = &r.nodes[r.best];
        if (record_decision(c->m, p, f, out) || vs_sched_commit(c->m, p, &r, 0, &eb) ||
            vs_model_account(c->m, p->uid, out->node, &res))
            rc = -1;
    } else {
        int placed =
            p->priority > c->min_prio ? place_by_preemption(c, p, c->cands, nc, c->so, out) : 0;
        if (placed < 0)
            rc = -1;
        else if (placed)
            rc = vs_model_account(c->m, p->uid, out->node, &res) ? -1 : 0;
        else
            rc = refused_reasons(c, &r, out);
    }
    vs_filter_result_cleanup(&r);
    if (!rc && out->node && scalar_account(c, p->uid, out->node, &sreq))
        rc = -1;
    vs_kv_cleanup(&sreq);
    if (out->node && out->gpu && p->priority < c->min_prio)
        c->min_prio = p->priority; /* now tracked on its cards (victims only raise the minimum) */
    return rc;
}

static void min_prio_of(void *ctx, const struct vs_podent *pe)
{
    int32_t *min = ctx;
    if (pe->priority < *min)
        *min = pe->priority;
}

int vs_simulate_run(struct vs_objset *cl, struct vs_objset *pods, const struct vs_sim_run_opts *o,
                    FILE *err, struct vs_sim_pod **out, size_t *n_out, struct vs_model **model)
{
    struct vs_errbuf eb;
    /* A given model (a what-if's copy of a live one) already holds the cluster's devices and
     * usage: cl then names its nodes for kube-scheduler's filters only. */
    struct vs_model *m = o->model ? o->model : vs_model_new(o->cfg->devices);
    struct vs_sim_pod *res = calloc(cl->n_pods + pods->n_pods + 1, sizeof(*res));
    struct vs_frag_stats *frag = o->frag_stats ? NULL : vs_frag_stats_new();
    size_t n_res = 0;
    *out = NULL;
    *n_out = 0;
    *model = NULL;
    if (!m || !res || (!o->frag_stats && !frag))
        goto oom;
    for (size_t i = 0; !o->model && i < cl->n_nodes; i++) {
        eb.msg[0] = '\0';
        if (vs_model_upsert_node(m, &cl->nodes[i], &eb) == VS_ERR_NOMEM)
            goto oom;
        if (eb.msg[0] && err)
            fprintf(err, "warning: %s: %s\n", o->source, eb.msg);
    }
    for (size_t i = 0; !o->model && i < cl->n_quotas; i++)
        if (vs_model_set_quota(m, &cl->quotas[i]))
            goto oom;
    /* The DRA ledger: the model takes the slices and claims over. */
    for (size_t i = 0; !o->model && i < cl->n_slices; i++)
        if (vs_model_set_slice(m, &cl->slices[i]))
            goto oom;
    for (size_t i = 0; !o->model && i < cl->n_claims; i++)
        if (vs_model_set_claim(m, &cl->claims[i]))
            goto oom;
    for (size_t i = 0; i < cl->n_pods; i++) {
        if (ensure_uid(&cl->pods[i]))
            goto oom;
        if (!is_placed(&cl->pods[i]) || o->model)
            continue;
        enum vs_err e = vs_model_upsert_pod(m, &cl->pods[i], &eb);
        if (e == VS_ERR_NOMEM)
            goto oom;
        if (e && err)
            fprintf(err, "warning: %s: %s\n", o->source, eb.msg);
        e = vs_model_account_pod(m, &cl->pods[i], &eb);
        if (e == VS_ERR_NOMEM)
            goto oom;
        if (e && err)
            fprintf(err, "warning: %s: %s (its cpu and memory are not counted)\n", o->source,
                    eb.msg);
    }
    /* Reasons are reported only for pods no node takes. */
    /* The workload policy `fragmentation` learns from: the pods scheduled so far (or, for a
     * what-if over a live service, the service's own, read and not added to). */
    struct vs_frag_stats *st = o->frag_stats ? o->frag_stats : frag;
    struct vs_sched_opts so = {.cfg = o->cfg,
                               .node_policy = o->node_policy,
                               .gpu_policy = o->gpu_policy,
                               .lazy_reasons = true,
                               .what_if = o->frag_stats != NULL,
                               .frag_stats = st};
    /* Summarised reasons are counted words: the extender need not write them out. */
    so.reason_words = o->summary || (o->table_full_max && cl->n_nodes > o->table_full_max);
    size_t nn = cl->n_nodes ? cl->n_nodes : 1;
    struct sim_ctx ctx = {.m = m,
                          .cl = cl,
                          .so = &so,
                          .summary = o->summary,
                          .table_full_max = o->table_full_max,
                          .mnodes = calloc(nn, sizeof(*ctx.mnodes)),
                          .cands = calloc(nn, sizeof(*ctx.cands)),
                          .kreason = calloc(nn, sizeof(*ctx.kreason)),
                          .kbuf = calloc(nn, sizeof(*ctx.kbuf)),
                          .sused = calloc(nn, sizeof(*ctx.sused)),
                          .cpu_frag = o->cpu_frag ? st : NULL};
    bool ctx_oom = !ctx.mnodes || !ctx.cands || !ctx.kreason || !ctx.kbuf || !ctx.sused;
    for (size_t i = 0; !ctx_oom && i < cl->n_nodes; i++)
        ctx.mnodes[i] = vs_model_node(m, cl->nodes[i].name);
    ctx.min_prio = INT32_MAX;
    vs_model_each_pod(m, min_prio_of, &ctx.min_prio);
    /* The placed pods' scalar requests on their nodes (spec.nodeName, else the extender's
     * hami.io/vgpu-node: where vs_model_account_pod counts their cpu and memory). */
    for (size_t i = 0; !ctx_oom && !o->model && i < cl->n_pods; i++) {
        const struct vs_pod *pp = &cl->pods[i];
        if (!is_placed(pp) || !strcmp(pp->phase ? pp->phase : "", "Succeeded") ||
            !strcmp(pp->phase ? pp->phase : "", "Failed"))
            continue;
        struct vs_kvlist sreq;
        if (vs_podres_scalar(pp, managed_name, (void *)o->cfg->devices, &sreq, &eb))
            continue; /* its quantities are reported with its cpu and memory */
        const char *node = pp->node_name && *pp->node_name
                               ? pp->node_name
                               : vs_kv_get(&pp->annotations, VS_ANNO_VGPU_NODE);
        ctx_oom = scalar_account(&ctx, pp->uid, node, &sreq) != 0;
        vs_kv_cleanup(&sreq);
    }
    for (size_t i = 0; !ctx_oom && i < cl->n_pods; i++) {
        if (is_placed(&cl->pods[i]))
            continue;
        ctx_oom = schedule_one(&ctx, &cl->pods[i], &res[n_res++]) != 0;
    }
    for (size_t i = 0; !ctx_oom && i < pods->n_pods; i++)
        ctx_oom = ensure_uid(&pods->pods[i]) || schedule_one(&ctx, &pods->pods[i], &res[n_res++]);
    free(ctx.mnodes);
    free(ctx.cands);
    free(ctx.kreason);
    free(ctx.kbuf);
    for (size_t i = 0; ctx.sused && i < cl->n_nodes; i++)
        vs_kv_cleanup(&ctx.sused[i]);
    free(ctx.sused);
    for (size_t i = 0; i < ctx.n_spods; i++) {
        free(ctx.spods[i].uid);
        vs_kv_cleanup(&ctx.spods[i].req);
    }
    free(ctx.spods);
    if (ctx_oom)
        goto oom;
    vs_frag_stats_free(frag);
    *out = res;
    *n_out = n_res;
    *model = m;
    return 0;
oom:
    for (size_t i = 0; i < n_res; i++)
        vs_sim_pod_cleanup(&res[i]);
    free(res);
    vs_model_free(m);
    vs_frag_stats_free(frag);
    return -1;
}

int vs_simulate_main(int argc, char **argv, FILE *out, FILE *err)
{
    struct sim_opts o;
    int rc = parse_flags(argc, argv, &o, out, err);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct vs_errbuf eb;
    struct vs_gpu_policy gp;
    const struct vs_node_policy *np;
    if (o.node_policy && vs_policy_parse_node(o.node_policy, "--node-scheduler-policy", &np, &eb)) {
        fprintf(err, "simulate: %s\n", eb.msg);
        return 2;
    }
    if (o.gpu_policy && vs_policy_parse_gpu(o.gpu_policy, "--gpu-scheduler-policy", &gp, &eb)) {
        fprintf(err, "simulate: %s\n", eb.msg);
        return 2;
    }
    struct vs_devcfg cfg;
    struct vs_objset cl = {0}, pods = {0};
    struct vs_model *m = NULL;
    struct vs_sim_pod *res = NULL;
    const char **names = NULL;
    size_t n_res = 0;
    rc = 2;
    if (vs_devcfg_init(&cfg)) {
        fprintf(err, "simulate: out of memory\n");
        return 1;
    }
    cfg.enable_ascend = o.enable_ascend;
    cfg.enable_iluvatar = o.enable_iluvatar;
    if (o.devcfg ? vs_devcfg_load(&cfg, o.devcfg, &eb) : vs_devcfg_finish(&cfg, &eb)) {
        fprintf(err, "%s\n", eb.msg);
        goto out;
    }
    if (vs_loader_load_file(o.cluster, &cl, warn_to, err, &eb)) {
        fprintf(err, "%s\n", eb.msg);
        goto out;
    }
    if (o.pods && vs_loader_load_file(o.pods, &pods, warn_to, err, &eb)) {
        fprintf(err, "%s\n", eb.msg);
        goto out;
    }
    rc = 1;
    names = calloc(cl.n_nodes ? cl.n_nodes : 1, sizeof(*names));
    if (!names)
        goto oom;
    for (size_t i = 0; i < cl.n_nodes; i++)
        names[i] = cl.nodes[i].name;
    bool table = strcmp(o.output, "table") == 0;
    struct vs_sim_run_opts ro = {.cfg = &cfg,
                                 .node_policy = o.node_policy,
                                 .gpu_policy = o.gpu_policy,
                                 .summary = strcmp(o.reasons, "summary") == 0,
                                 .table_full_max = table ? 20 : 0,
                                 .cpu_frag = strcmp(o.cpu_pods, "fragmentation") == 0,
                                 .source = o.cluster};
    if (vs_simulate_run(&cl, &pods, &ro, err, &res, &n_res, &m))
        goto oom;
    struct vs_sim_report rep = {.pods = res,
                                .n_pods = n_res,
                                .model = m,
                                .nodes = names,
                                .n_nodes = cl.n_nodes,
                                .title = NULL};
    char title[160];
    snprintf(title, sizeof(title), "node %s, card %s", o.node_policy ? o.node_policy : "binpack",
             o.gpu_policy ? o.gpu_policy : "spread");
    rep.title = title;
    char *text = strcmp(o.output, "json") == 0 ? vs_report_json(&rep) : vs_report_table(&rep);
    if (!text)
        goto oom;
    fputs(text, out);
    if (strcmp(o.output, "json") == 0)
        fputc('\n', out);
    free(text);
    if (o.svg) {
        const struct vs_sim_report *one = &rep;
        char *svg = vs_report_svg(&one, 1);
        FILE *f = svg ? fopen(o.svg, "w") : NULL;
        if (!f || fputs(svg, f) < 0 || fclose(f) != 0) {
            fprintf(err, "simulate: cannot write %s\n", o.svg);
            free(svg);
            rc = 2;
            goto out;
        }
        free(svg);
    }
    rc = 0;
    goto out;
oom:
    fprintf(err, "simulate: out of memory\n");
out:
    for (size_t i = 0; i < n_res; i++)
        vs_sim_pod_cleanup(&res[i]);
    free(res);
    free(names);
    vs_model_free(m);
    vs_objset_cleanup(&cl);
    vs_objset_cleanup(&pods);
    vs_devcfg_cleanup(&cfg);
    return rc;
}
