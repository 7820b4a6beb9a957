/* metrics: atomic counters and fixed-bucket histograms; HAMi gauges are derived from the model
 * under the store's read lock when /metrics is scraped (never on the Filter path). */
#include "metrics.h"

#include "buf.h"
#include "sched.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                 0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30};
#define NB (sizeof(buckets) / sizeof(buckets[0]))

struct hist {
    atomic_uint_fast64_t b[NB];
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t sum_ns;
};

/* Card reason words (sched.c), then node-level strings, then everything else. */
static const char *const node_words[] = {"NodeInsufficientDevice", "node unregistered",
                                         "node usage unavailable", "other"};
#define NR (VS_REASON_COUNT + sizeof(node_words) / sizeof(node_words[0]))

static const char *reason_word(size_t i)
{
    return i < VS_REASON_COUNT ? vs_reason_words[i] : node_words[i - VS_REASON_COUNT];
}

struct vs_metrics {
    struct hist filter_h, bind_h, bind_wait_h, lock_hold_h;
    atomic_uint_fast64_t outcomes[VS_FILTER_OUTCOMES];
    atomic_uint_fast64_t reasons[NR];
    atomic_uint_fast64_t binds_ok, binds_failed;
    atomic_uint_fast64_t preempt[VS_PM_MODES][VS_PO_OUTCOMES];
    atomic_uint_fast64_t victims;
    atomic_uint_fast64_t preempt_bound_n, preempt_bound_ms;
    atomic_uint_fast64_t requeue_nudges;
};

struct vs_metrics *vs_metrics_new(void)
{
    return calloc(1, sizeof(struct vs_metrics));
}

void vs_metrics_free(struct vs_metrics *m)
{
    if (!m)
        return;
    free(m);
}

static void observe(struct hist *h, double s)
{
    for (size_t i = 0; i < NB; i++)
        if (s <= buckets[i])
            atomic_fetch_add(&h->b[i], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_ns, (uint64_t)(s * 1e9));
}

void vs_metrics_filter(struct vs_metrics *m, enum vs_filter_outcome o, double seconds)
{
    atomic_fetch_add(&m->outcomes[o], 1);
    observe(&m->filter_h, seconds);
}

void vs_metrics_bind(struct vs_metrics *m, bool ok, double seconds)
{
    atomic_fetch_add(ok ? &m->binds_ok : &m->binds_failed, 1);
    observe(&m->bind_h, seconds);
}

void vs_metrics_bind_wait(struct vs_metrics *m, double seconds)
{
    observe(&m->bind_wait_h, seconds);
}

void vs_metrics_lock_hold(struct vs_metrics *m, double seconds)
{
    observe(&m->lock_hold_h, seconds);
}

void vs_metrics_preemption(struct vs_metrics *m, enum vs_preempt_mode_m mode,
                           enum vs_preempt_outcome o)
{
    atomic_fetch_add(&m->preempt[mode][o], 1);
}

void vs_metrics_requeue_nudge(struct vs_metrics *m)
{
    atomic_fetch_add(&m->requeue_nudges, 1);
}

void vs_metrics_victims_evicted(struct vs_metrics *m, unsigned n)
{
    atomic_fetch_add(&m->victims, n);
}

void vs_metrics_preemptor_bound(struct vs_metrics *m, double seconds)
{
    atomic_fetch_add(&m->preempt_bound_n, 1);
    atomic_fetch_add(&m->preempt_bound_ms, (uint64_t)(seconds > 0 ? seconds * 1000 : 0));
}

static void count_word(struct vs_metrics *m, const char *w, size_t n)
{
    for (size_t i = 0; i + 1 < NR; i++) {
        if (strlen(reason_word(i)) == n && strncmp(reason_word(i), w, n) == 0) {
            atomic_fetch_add(&m->reasons[i], 1);
            return;
        }
    }
    atomic_fetch_add(&m->reasons[NR - 1], 1);
}

void vs_metrics_node_reasons(struct vs_metrics *m, const char *r)
{
    if (!r)
        return;
    const char *colon = strchr(r, ':');
    const char *slash = strchr(r, '/');
    if (!slash || (colon && colon < slash)) {
        count_word(m, r, colon ? (size_t)(colon - r) : strlen(r));
        return;
    }
    while (*r) {
        const char *sp = strchr(r, ' ');
        if (!sp)
            break;
        const char *w = sp + 1;
        const char *end = strstr(w, ", ");
        count_word(m, w, end ? (size_t)(end - w) : strlen(w));
        if (!end)
            break;
        r = end + 2;
    }
}

_Static_assert(NB == VS_METRICS_BUCKETS, "metrics.h bucket count");
_Static_assert(NR <= 32, "metrics.h reason count");

static void read_hist(struct hist *h, struct vs_metrics_hist *o)
{
    for (size_t i = 0; i < NB; i++) {
        o->le[i] = buckets[i];
        o->bucket[i] = atomic_load(&h->b[i]);
    }
    o->count = atomic_load(&h->count);
    o->sum_s = (double)atomic_load(&h->sum_ns) / 1e9;
}

void vs_metrics_read(struct vs_metrics *m, struct vs_metrics_view *v)
{
    memset(v, 0, sizeof(*v));
    for (int i = 0; i < VS_FILTER_OUTCOMES; i++)
        v->filter[i] = atomic_load(&m->outcomes[i]);
    v->binds_ok = atomic_load(&m->binds_ok);
    v->binds_failed = atomic_load(&m->binds_failed);
    read_hist(&m->filter_h, &v->filter_h);
    read_hist(&m->bind_h, &v->bind_h);
    read_hist(&m->bind_wait_h, &v->bind_wait_h);
    read_hist(&m->lock_hold_h, &v->lock_hold_h);
    for (size_t i = 0; i < NR; i++) {
        v->reason[i] = reason_word(i);
        v->rejections[i] = atomic_load(&m->reasons[i]);
    }
    v->n_reasons = NR;
    v->requeue_nudges = atomic_load(&m->requeue_nudges);
}

double vs_metrics_quantile(const struct vs_metrics_hist *h, double q)
{
    if (!h->count)
        return NAN;
    double rank = q * (double)h->count;
    for (size_t i = 0; i < VS_METRICS_BUCKETS; i++)
        if ((double)h->bucket[i] >= rank)
            return h->le[i];
    return INFINITY;
}

static void render_hist(struct vs_buf *b, const char *name, const char *help, struct hist *h)
{
    vs_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (size_t i = 0; i < NB; i++)
        vs_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, buckets[i],
                      (unsigned long long)atomic_load(&h->b[i]));
    unsigned long long c = atomic_load(&h->count);
    vs_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9f\n%s_count %llu\n", name, c, name,
                  (double)atomic_load(&h->sum_ns) / 1e9, name, c);
}

/* Label values: escape backslash, quote and newline. */
static const char *lv(const char *s, char *out, size_t len)
{
    size_t o = 0;
    for (; s && *s && o + 3 < len; s++) {
        if (*s == '\\' || *s == '"') {
            out[o++] = '\\';
            out[o++] = *s;
        } else if (*s == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *s;
        }
    }
    out[o] = '\0';
    return out;
}

/* Label names of the HAMi families, current and pre-v2.8 (emitted too with --legacy-metrics). */
struct label_names {
    const char *node, *uuid, *index, *cores, *memlimit, *type; /* card families */
    const char *pod_ns, *pod_node, *pod, *ctr;                 /* pod families (and uuid) */
    const char *quota_ns, *quota;                              /* quota families */
};
static const struct label_names label_sets[2] = {
    {"node", "device_uuid", "device_index", "device_cores", "device_memory_limit", "device_type",
     "namespace", "node", "pod", "container_index", "namespace", "quota_name"},
    {"nodeid", "deviceuuid", "deviceidx", "devicecores", "devicememorylimit", "devicetype",
     "podnamespace", "nodename", "podname", "containeridx", "quotanamespace", "quotaName"},
};

enum card_family {
    F_MEM_LIMIT,
    F_CORE_LIMIT,
    F_MEM_ALLOC,
    F_SHARED,
    F_CORE_ALLOC,
    F_OVERVIEW,
    F_MEM_RATIO,
    F_MIG,
    F_CARD_FAMILIES
};
static const char *const card_names[F_CARD_FAMILIES][2] = {
    {"hami_gpu_memory_limit_bytes", "GPUDeviceMemoryLimit"},
    {"hami_gpu_core_limit_ratio", "GPUDeviceCoreLimit"},
    {"hami_gpu_memory_allocated_bytes", "GPUDeviceMemoryAllocated"},
    {"hami_gpu_shared_count", "GPUDeviceSharedNum"},
    {"hami_gpu_core_allocated_ratio", "GPUDeviceCoreAllocated"},
    {"hami_node_gpu_overview", "nodeGPUOverview"},
    {"hami_node_gpu_memory_allocated_ratio", "nodeGPUMemoryPercentage"},
    {"hami_node_gpu_mig_instance_info", "nodeGPUMigInstance"},
};
/* hami_resource_quota_limit has no legacy counterpart. */
static const char *const quota_names[2][2] = {
    {"hami_resource_quota_used", "QuotaUsed"},
    {"hami_resource_quota_limit", NULL},
};
static const char *const pod_names[2][2] = {
    {"hami_vgpu_memory_allocated_bytes", "vGPUMemoryAllocated"},
    {"hami_vgpu_core_allocated_ratio", "vGPUCoreAllocated"},
};

struct gauge_ctx {
    struct vs_buf *b;
    int family;
    int old;                      /* 1: the pre-v2.8 name and label names */
    const struct vs_devices *set; /* the backends (quota resource names) */
};

/* hami_node_gpu_mig_instance_info: one sample per MIG instance realized on card c, i.e. per
 * hami.io/vgpu-mig-allocations entry of a pod tracked on the node that names c and carries the
 * device plugin's runtime identity (migUUID, gpuInstanceID, computeInstanceID; spec §1.8). An
 * entry without it is a placement Filter reserved whose instance does not exist yet; HAMi skips
 * those as well. Only mig-mode cards are asked. */
static void mig_gauges(struct gauge_ctx *g, const struct vs_node *n, const struct vs_card *c,
                       const char *base)
{
    const char *name = card_names[F_MIG][g->old];
    char mu[256], pr[256];
    for (const struct vs_podent *pe = n->pods; pe; pe = pe->next) {
        for (size_t k = 0; k < pe->mig.n; k++) {
            const struct vs_mig_alloc *a = &pe->mig.items[k];
            if (!a->has_runtime || strcmp(a->gpu_uuid, c->uuid) != 0)
                continue;
            lv(a->profile, pr, sizeof(pr));
            if (g->old) {
                vs_buf_printf(g->b, "%s{%s,migname=\"%s-%d\",zone=\"vGPU\"} 1\n", name, base, pr,
                              a->gpu_instance_id);
                continue;
            }
            vs_buf_printf(g->b,
                          "%s{%s,mig_uuid=\"%s\",profile=\"%s\",gpu_instance_id=\"%d\","
                          "compute_instance_id=\"%d\",placement_start=\"%d\",placement_size="
                          "\"%d\",zone=\"vGPU\"} 1\n",
                          name, base, lv(a->mig_uuid, mu, sizeof(mu)), pr, a->gpu_instance_id,
                          a->compute_instance_id, a->placement.start, a->placement.size);
        }
    }
}

/* Whether card c's cores are reported as a percentage of the card (AMD: devcore counts compute
 * units; HAMi's normalizeAMDCoreMetrics, for the current family names only). */
static bool cores_percent(const struct gauge_ctx *g, const struct vs_card *c)
{
    return !g->old && g->set && c->dev < g->set->n && g->set->dev[c->dev]->cores_percent &&
           c->devcore > 0;
}

/* used of total as a whole percentage, rounded up. */
static long long percent_up(int64_t used, int64_t total)
{
    return (long long)ceil((double)used / (double)total * 100.0);
}

/* The gauges are most of a scrape's text at scale (5,000 nodes: 40,000 cards in each family,
 * tens of thousands of pod samples), so their lines are appended piece by piece rather than
 * formatted with printf; only the ratio's %g still is. */
static void put(struct vs_buf *b, const char *s)
{
    vs_buf_puts(b, s);
}

static void put_ll(struct vs_buf *b, long long v)
{
    char t[24];
    size_t i = sizeof(t);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        t[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        t[--i] = '-';
    vs_buf_append(b, t + i, sizeof(t) - i);
}

/* `sep` name="value" (value already escaped with lv). */
static void put_label(struct vs_buf *b, const char *sep, const char *name, const char *value)
{
    put(b, sep);
    put(b, name);
    put(b, "=\"");
    put(b, value);
    put(b, "\"");
}

static void put_label_ll(struct vs_buf *b, const char *name, long long v)
{
    put(b, ",");
    put(b, name);
    put(b, "=\"");
    put_ll(b, v);
    put(b, "\"");
}

/* The end of a sample line: the zone label, the value, the newline. */
static void put_value(struct vs_buf *b, long long v)
{
    put(b, ",zone=\"vGPU\"} ");
    put_ll(b, v);
    put(b, "\n");
}

/* What a scrape reports of the model, copied under the store's read lock so that the text (tens
 * of MiB at 5,000 nodes) is rendered after it, a piece at a time as the client reads it. Strings
 * are label values already escaped, kept in one arena (offsets: the arena grows). */
struct snap_card {
    uint32_t node, uuid, type; /* arena offsets */
    uint32_t index;
    int32_t devmem, devcore;
    int64_t used, usedmem, usedcores;
    bool pct; /* cores reported as a percentage of the card (cores_percent) */
};

struct snap_usage {
    uint32_t uuid;
    int64_t mem, cores;
    long long pct; /* cores as a percentage of the card's, -1 unless its cores are reported so */
};

struct snap_pod {
    uint32_t ns, node, name;
    size_t first, n; /* its usages */
};

struct vs_metrics_snap {
    bool legacy;
    bool has_model;
    struct vs_buf arena;
    struct snap_card *cards;
    size_t n_cards, cap_cards;
    struct snap_pod *pods;
    size_t n_pods, cap_pods;
    struct snap_usage *usages;
    size_t n_usages, cap_usages;
    struct vs_buf mig[2]; /* hami_node_gpu_mig_instance_info's samples, current and legacy */
    struct vs_buf quota;  /* the quota families, whole */
    const struct vs_devices *set;
    bool any_percent;      /* some backend reports cores in percent (cores_percent) */
    const char *last_type; /* the model's copy of the type snapped last, and its offset */
    uint32_t last_type_at;
    bool oom;
};

static uint32_t snap_str(struct vs_metrics_snap *s, const char *v)
{
    char e[256];
    lv(v, e, sizeof(e));
    uint32_t at = (uint32_t)s->arena.len;
    if (!vs_buf_append(&s->arena, e, strlen(e) + 1))
        s->oom = true;
    return at;
}

static void snap_node(void *ctx, const struct vs_node *n)
{
    struct vs_metrics_snap *s = ctx;
    if (s->oom)
        return;
    uint32_t node = snap_str(s, n->name);
    for (size_t i = 0; i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        if (!vs_grow_one((void **)&s->cards, s->n_cards, &s->cap_cards, sizeof(*s->cards))) {
            s->oom = true;
            return;
        }
        struct snap_card *sc = &s->cards[s->n_cards++];
        struct gauge_ctx g = {.old = 0, .set = s->set};
        *sc = (struct snap_card){.node = node,
                                 .uuid = snap_str(s, c->uuid),
                                 .index = c->index,
                                 .devmem = c->devmem,
                                 .devcore = c->devcore,
                                 .used = c->used,
                                 .usedmem = c->usedmem,
                                 .usedcores = c->usedcores,
                                 .pct = cores_percent(&g, c)};
        /* The model keeps one copy of each type: a node's cards mostly share it. */
        if (!s->last_type || c->type != s->last_type) {
            s->last_type = c->type;
            s->last_type_at = snap_str(s, c->type);
        }
        sc->type = s->last_type_at;
        if (!c->is_mig)
            continue;
        for (int old = 0; old < (s->legacy ? 2 : 1); old++) {
            const struct label_names *l = &label_sets[old];
            char nn[256], id[256], base[900];
            lv(n->name, nn, sizeof(nn));
            lv(c->uuid, id, sizeof(id));
            snprintf(base, sizeof(base), "%s=\"%s\",%s=\"%s\",%s=\"%u\"", l->node, nn, l->uuid, id,
                     l->index, c->index);
            struct gauge_ctx mg = {.b = &s->mig[old], .family = F_MIG, .old = old, .set = s->set};
            mig_gauges(&mg, n, c, base);
        }
    }
}

static void snap_pod(void *ctx, const struct vs_podent *pe)
{
    struct vs_metrics_snap *s = ctx;
    if (s->oom)
        return;
    if (!vs_grow_one((void **)&s->pods, s->n_pods, &s->cap_pods, sizeof(*s->pods))) {
        s->oom = true;
        return;
    }
    struct snap_pod *sp = &s->pods[s->n_pods++];
    *sp = (struct snap_pod){.ns = snap_str(s, pe->ns),
                            .node = snap_str(s, pe->node),
                            .name = snap_str(s, pe->name),
                            .first = s->n_usages};
    struct gauge_ctx g = {.old = 0, .set = s->set};
    for (size_t i = 0; i < pe->n_usage; i++) {
        if (!vs_grow_one((void **)&s->usages, s->n_usages, &s->cap_usages, sizeof(*s->usages))) {
            s->oom = true;
            return;
        }
        struct snap_usage *u = &s->usages[s->n_usages++];
        *u = (struct snap_usage){.uuid = snap_str(s, pe->usage[i].uuid),
                                 .mem = pe->usage[i].mem,
                                 .cores = pe->usage[i].cores,
                                 .pct = -1};
        /* A card's cores in percent (AMD): the share of the card the pod's compute units are. */
        for (size_t k = 0; s->any_percent && pe->on && k < pe->on->n_cards; k++) {
            const struct vs_card *c = &pe->on->cards[k];
            if (strcmp(c->uuid, pe->usage[i].uuid) == 0) {
                if (cores_percent(&g, c))
                    u->pct = percent_up(pe->usage[i].cores, c->devcore);
                break;
            }
        }
        sp->n++;
    }
}

static void card_line(struct vs_buf *b, const struct vs_metrics_snap *s, int family, int old,
                      const struct snap_card *c)
{
    const struct label_names *l = &label_sets[old];
    const char *ty = s->arena.data + c->type;
    if (family == F_MEM_RATIO && c->devmem <= 0)
        return;
    put(b, card_names[family][old]);
    put_label(b, "{", l->node, s->arena.data + c->node);
    put_label(b, ",", l->uuid, s->arena.data + c->uuid);
    put_label_ll(b, l->index, c->index);
    const bool pct = !old && c->pct;
    switch (family) {
    case F_MEM_LIMIT:
        put_label(b, ",", l->type, ty);
        put_value(b, (long long)c->devmem * 1048576LL);
        break;
    case F_CORE_LIMIT:
        put_label(b, ",", l->type, ty);
        put_value(b, pct ? 100 : c->devcore);
        break;
    case F_MEM_ALLOC:
        put_label_ll(b, l->cores, c->devcore);
        put_label(b, ",", l->type, ty);
        put_value(b, (long long)c->usedmem * 1048576LL);
        break;
    case F_SHARED:
        put_label(b, ",", l->type, ty);
        put_value(b, (long long)c->used);
        break;
    case F_CORE_ALLOC:
        put_label(b, ",", l->type, ty);
        put_value(b, pct ? percent_up(c->usedcores, c->devcore) : (long long)c->usedcores);
        break;
    case F_OVERVIEW:
        put_label_ll(b, l->cores, c->devcore);
        put_label_ll(b, l->memlimit, c->devmem);
        put_label(b, ",", l->type, ty);
        put_value(b, (long long)c->usedmem * 1048576LL);
        break;
    case F_MEM_RATIO:
        /* The legacy family never had the type label. */
        if (!old)
            put_label(b, ",", l->type, ty);
        vs_buf_printf(b, ",zone=\"vGPU\"} %g\n", (double)c->usedmem / c->devmem);
        break;
    default:
        break;
    }
}

static void pod_lines(struct vs_buf *b, const struct vs_metrics_snap *s, int family, int old,
                      const struct snap_pod *p)
{
    const struct label_names *l = &label_sets[old];
    for (size_t i = p->first; i < p->first + p->n; i++) {
        const struct snap_usage *u = &s->usages[i];
        long long v = !family               ? (long long)u->mem * 1048576LL
                      : !old && u->pct >= 0 ? u->pct
                                            : (long long)u->cores;
        put(b, pod_names[family][old]);
        put_label(b, "{", l->pod_ns, s->arena.data + p->ns);
        put_label(b, ",", l->pod_node, s->arena.data + p->node);
        put_label(b, ",", l->pod, s->arena.data + p->name);
        put_label(b, ",", l->ctr, "0");
        put_label(b, ",", l->uuid, s->arena.data + u->uuid);
        put_value(b, v);
    }
}

/* Per namespace and managed resource, as HAMi's quota manager keeps them: quota_name is the
 * resource name (e.g. nvidia.com/gpumem), used the tracked pods' collapsed usage (MiB or
 * cores). The limit is the one Filter enforces: the smallest of the namespace's ResourceQuotas,
 * memory already multiplied by memoryFactor so that it is in the unit of used (HAMi reports the
 * raw spec.hard value; the two differ only with memoryFactor > 1). Without a limit the label
 * says "0", as in HAMi, and there is no hami_resource_quota_limit sample. */
static void quota_gauges(void *ctx, const struct vs_quota *q)
{
    struct gauge_ctx *g = ctx;
    const struct label_names *l = &label_sets[g->old];
    const char *name = quota_names[g->family][g->old];
    char ns[256], rn[512];
    lv(q->ns, ns, sizeof(ns));
    for (size_t d = 0; d < q->n && d < g->set->n; d++) {
        const struct vs_device *dev = g->set->dev[d];
        const struct vs_quota_res *qr = &q->res[d];
        /* A backend counts in a namespace once it has a limit or usage there. */
        if (!qr->has_mem && !qr->has_cores && !qr->mem_used && !qr->cores_used)
            continue;
        const char *res[2] = {dev->res_mem, dev->res_cores};
        const bool has[2] = {qr->has_mem, qr->has_cores};
        const long long limit[2] = {qr->mem_limit, qr->cores_limit};
        const long long used[2] = {qr->mem_used, qr->cores_used};
        for (int r = 0; r < 2; r++) {
            if (!res[r])
                continue;
            lv(res[r], rn, sizeof(rn));
            if (g->family == 0)
                vs_buf_printf(g->b, "%s{%s=\"%s\",%s=\"%s\",limit=\"%lld\",zone=\"vGPU\"} %lld\n",
                              name, l->quota_ns, ns, l->quota, rn, has[r] ? limit[r] : 0, used[r]);
            else if (has[r])
                vs_buf_printf(g->b, "%s{%s=\"%s\",%s=\"%s\",zone=\"vGPU\"} %lld\n", name,
                              l->quota_ns, ns, l->quota, rn, limit[r]);
        }
    }
}

struct vs_metrics_snap *vs_metrics_snap_take(const struct vs_model *model, bool legacy)
{
    struct vs_metrics_snap *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->legacy = legacy;
    s->has_model = model != NULL;
    if (model) {
        s->set = vs_model_devices(model);
        for (size_t d = 0; s->set && d < s->set->n; d++)
            s->any_percent |= s->set->dev[d]->cores_percent;
        vs_model_each_node(model, snap_node, s);
        vs_model_each_pod(model, snap_pod, s);
        for (int f = 0; f < 2; f++) {
            for (int old = 0; old < (legacy ? 2 : 1) && quota_names[f][old]; old++) {
                vs_buf_printf(&s->quota, "# TYPE %s gauge\n", quota_names[f][old]);
                struct gauge_ctx g = {.b = &s->quota, .family = f, .old = old, .set = s->set};
                vs_model_each_quota(model, quota_gauges, &g);
            }
        }
    }
    if (s->oom || s->arena.oom || s->mig[0].oom || s->mig[1].oom || s->quota.oom) {
        vs_metrics_snap_free(s);
        return NULL;
    }
    return s;
}

size_t vs_metrics_snap_bytes(const struct vs_metrics_snap *s)
{
    return sizeof(*s) + s->arena.cap + s->cap_cards * sizeof(*s->cards) +
           s->cap_pods * sizeof(*s->pods) + s->cap_usages * sizeof(*s->usages) + s->mig[0].cap +
           s->mig[1].cap + s->quota.cap;
}

void vs_metrics_snap_free(struct vs_metrics_snap *s)
{
    if (!s)
        return;
    vs_buf_cleanup(&s->arena);
    vs_buf_cleanup(&s->mig[0]);
    vs_buf_cleanup(&s->mig[1]);
    vs_buf_cleanup(&s->quota);
    free(s->cards);
    free(s->pods);
    free(s->usages);
    free(s);
}

/* The counters and histograms after the gauges. */
static void render_tail(struct vs_buf *b, struct vs_metrics *m, const struct vs_metrics_extra *x)
{
    render_hist(b, "vgpu_sched_filter_duration_seconds", "Filter latency.", &m->filter_h);
    render_hist(b, "vgpu_sched_bind_duration_seconds", "Bind latency.", &m->bind_h);
    render_hist(b, "vgpu_sched_bind_queue_wait_seconds",
                "Time a Bind waited in its node's bind queue for the node lock.", &m->bind_wait_h);
    render_hist(b, "vgpu_sched_node_lock_hold_seconds",
                "Time from a Bind taking a node lock to its release being seen.", &m->lock_hold_h);
    static const char *const oc[] = {"scheduled", "unschedulable", "error", "passthrough"};
    vs_buf_puts(b, "# TYPE vgpu_sched_filter_total counter\n");
    for (int i = 0; i < VS_FILTER_OUTCOMES; i++)
        vs_buf_printf(b, "vgpu_sched_filter_total{result=\"%s\"} %llu\n", oc[i],
                      (unsigned long long)atomic_load(&m->outcomes[i]));
    vs_buf_puts(b, "# TYPE vgpu_sched_filter_node_rejections_total counter\n");
    for (size_t i = 0; i < NR; i++)
        vs_buf_printf(b, "vgpu_sched_filter_node_rejections_total{reason=\"%s\"} %llu\n",
                      reason_word(i), (unsigned long long)atomic_load(&m->reasons[i]));
    vs_buf_printf(b,
                  "# TYPE vgpu_sched_bind_total counter\n"
                  "vgpu_sched_bind_total{result=\"ok\"} %llu\n"
                  "vgpu_sched_bind_total{result=\"error\"} %llu\n",
                  (unsigned long long)atomic_load(&m->binds_ok),
                  (unsigned long long)atomic_load(&m->binds_failed));
    static const char *const pm[] = {"verb", "filter"};
    static const char *const po[] = {"planned", "no_plan", "pdb_refused", "error"};
    vs_buf_puts(b, "# HELP vgpu_sched_preemptions_total GPU preemption attempts.\n"
                   "# TYPE vgpu_sched_preemptions_total counter\n");
    for (int i = 0; i < VS_PM_MODES; i++)
        for (int k = 0; k < VS_PO_OUTCOMES; k++)
            vs_buf_printf(b, "vgpu_sched_preemptions_total{mode=\"%s\",outcome=\"%s\"} %llu\n",
                          pm[i], po[k], (unsigned long long)atomic_load(&m->preempt[i][k]));
    vs_buf_printf(b,
                  "# HELP vgpu_sched_preemption_victims_total Pods evicted for GPU preemption.\n"
                  "# TYPE vgpu_sched_preemption_victims_total counter\n"
                  "vgpu_sched_preemption_victims_total %llu\n"
                  "# HELP vgpu_sched_preemptor_bind_seconds From a preemptor's evictions to its "
                  "Bind.\n"
                  "# TYPE vgpu_sched_preemptor_bind_seconds summary\n"
                  "vgpu_sched_preemptor_bind_seconds_sum %.3f\n"
                  "vgpu_sched_preemptor_bind_seconds_count %llu\n",
                  (unsigned long long)atomic_load(&m->victims),
                  (double)atomic_load(&m->preempt_bound_ms) / 1000.0,
                  (unsigned long long)atomic_load(&m->preempt_bound_n));
    vs_buf_printf(b,
                  "# HELP vgpu_sched_requeue_nudges_total Refused pods patched so kube-scheduler "
                  "retries them after capacity was freed.\n"
                  "# TYPE vgpu_sched_requeue_nudges_total counter\n"
                  "vgpu_sched_requeue_nudges_total %llu\n",
                  (unsigned long long)atomic_load(&m->requeue_nudges));
    if (x) {
        vs_buf_printf(b,
                      "# TYPE vgpu_sched_node_lock_total counter\n"
                      "vgpu_sched_node_lock_total{event=\"acquired\"} %llu\n"
                      "vgpu_sched_node_lock_total{event=\"contended\"} %llu\n"
                      "vgpu_sched_node_lock_total{event=\"broken\"} %llu\n"
                      "vgpu_sched_node_lock_total{event=\"released\"} %llu\n"
                      "vgpu_sched_node_lock_total{event=\"taken_as_seen\"} %llu\n"
                      "vgpu_sched_node_lock_total{event=\"seen_refused\"} %llu\n",
                      (unsigned long long)x->lock_acquired, (unsigned long long)x->lock_contended,
                      (unsigned long long)x->lock_broken, (unsigned long long)x->lock_released,
                      (unsigned long long)x->lock_taken_as_seen,
                      (unsigned long long)x->lock_seen_refused);
        static const char *const verbs[] = {"GET", "LIST", "WATCH", "PATCH", "POST", "PUT"};
        vs_buf_printf(b,
                      "# TYPE vgpu_sched_api_requests_total counter\n"
                      "vgpu_sched_api_requests_total %llu\n"
                      "# TYPE vgpu_sched_api_connections_total counter\n"
                      "vgpu_sched_api_connections_total %llu\n"
                      "# HELP vgpu_sched_api_pool_waits_total API requests that found every kept "
                      "connection busy and waited for one.\n"
                      "# TYPE vgpu_sched_api_pool_waits_total counter\n"
                      "vgpu_sched_api_pool_waits_total %llu\n"
                      "# HELP vgpu_sched_http_connections_total Connections the extender and "
                      "webhook listener accepted (each HTTPS one a TLS handshake).\n"
                      "# TYPE vgpu_sched_http_connections_total counter\n"
                      "vgpu_sched_http_connections_total %llu\n"
                      "# TYPE vgpu_sched_api_errors_total counter\n",
                      (unsigned long long)x->api_requests, (unsigned long long)x->api_connections,
                      (unsigned long long)x->api_pool_waits,
                      (unsigned long long)x->http_connections);
        for (int i = 0; i < 6; i++)
            vs_buf_printf(b, "vgpu_sched_api_errors_total{verb=\"%s\"} %llu\n", verbs[i],
                          (unsigned long long)x->api_errors[i]);
        vs_buf_printf(b,
                      "# TYPE vgpu_sched_malformed_annotations_total counter\n"
                      "vgpu_sched_malformed_annotations_total{object=\"pod\"} %llu\n"
                      "vgpu_sched_malformed_annotations_total{object=\"node\"} %llu\n"
                      "# TYPE vgpu_sched_reservations_expired_total counter\n"
                      "vgpu_sched_reservations_expired_total %llu\n"
                      "# TYPE vgpu_sched_commit_conflicts_total counter\n"
                      "vgpu_sched_commit_conflicts_total %llu\n"
                      "# TYPE vgpu_sched_relists_total counter\n"
                      "vgpu_sched_relists_total %llu\n"
                      "# TYPE vgpu_sched_leader gauge\nvgpu_sched_leader %d\n"
                      "# TYPE vgpu_sched_synced gauge\nvgpu_sched_synced %d\n"
                      "# TYPE vgpu_sched_binds_waiting gauge\nvgpu_sched_binds_waiting %llu\n"
                      "# TYPE vgpu_sched_node_allocation_seconds gauge\n"
                      "vgpu_sched_node_allocation_seconds %.6f\n"
                      "# TYPE vgpu_sched_events_queued gauge\nvgpu_sched_events_queued %llu\n"
                      "# TYPE vgpu_sched_pod_patches_queued gauge\n"
                      "vgpu_sched_pod_patches_queued %llu\n",
                      (unsigned long long)x->malformed_pods, (unsigned long long)x->malformed_nodes,
                      (unsigned long long)x->reservations_expired,
                      (unsigned long long)x->commit_conflicts, (unsigned long long)x->relists,
                      x->leader ? 1 : 0, x->synced ? 1 : 0, (unsigned long long)x->binds_waiting,
                      x->allocation_s, (unsigned long long)x->events_queued,
                      (unsigned long long)x->patches_queued);
    }
}

enum stage { ST_HEAD, ST_CARDS, ST_QUOTA, ST_PODS, ST_TAIL, ST_EXTRA, ST_DONE };

/* Text is rendered into pend until this much is waiting to be read (or the end). */
#define STREAM_CHUNK (64u << 10)

struct vs_metrics_stream {
    struct vs_metrics *m;
    struct vs_metrics_snap *s;
    struct vs_metrics_extra x;
    bool has_x;
    char *extra;
    enum stage stage;
    int family, old;
    bool typed; /* the family's TYPE line is out */
    size_t i;   /* the next card or pod of the family */
    struct vs_buf pend;
    size_t off;  /* pend's bytes before it were read */
    size_t held; /* the most pend has held (its capacity) */
};

struct vs_metrics_stream *vs_metrics_stream_new(struct vs_metrics *m, struct vs_metrics_snap *snap,
                                                const struct vs_metrics_extra *x, char *extra)
{
    struct vs_metrics_stream *st = snap ? calloc(1, sizeof(*st)) : NULL;
    if (!st) {
        vs_metrics_snap_free(snap);
        free(extra);
        return NULL;
    }
    st->m = m;
    st->s = snap;
    if (x) {
        st->x = *x;
        st->has_x = true;
    }
    st->extra = extra;
    return st;
}

size_t vs_metrics_stream_held(const struct vs_metrics_stream *st)
{
    return st->held;
}

void vs_metrics_stream_free(struct vs_metrics_stream *st)
{
    if (!st)
        return;
    vs_metrics_snap_free(st->s);
    vs_buf_cleanup(&st->pend);
    free(st->extra);
    free(st);
}

/* The family after this one (every family with each name of it: current, then legacy). */
static void next_family(struct vs_metrics_stream *st, int families, enum stage then)
{
    st->typed = false;
    st->i = 0;
    if (++st->old < (st->s->legacy ? 2 : 1))
        return;
    st->old = 0;
    if (++st->family < families)
        return;
    st->family = 0;
    st->stage = then;
}

static bool pend_short(const struct vs_metrics_stream *st)
{
    return st->pend.len - st->off < STREAM_CHUNK;
}

static void stream_fill(struct vs_metrics_stream *st)
{
    struct vs_buf *b = &st->pend;
    const struct vs_metrics_snap *s = st->s;
    while (st->stage != ST_DONE && pend_short(st) && !b->oom) {
        switch (st->stage) {
        case ST_HEAD:
            vs_buf_printf(b,
                          "# HELP hami_build_info Build information.\n# TYPE hami_build_info "
                          "gauge\nhami_build_info{version=\"%s\",compiler=\"gcc\",platform="
                          "\"linux\"} 1\n",
                          VS_VERSION);
            st->stage = s->has_model ? ST_CARDS : ST_TAIL;
            break;
        case ST_CARDS:
            if (!st->typed) {
                vs_buf_printf(b, "# TYPE %s gauge\n", card_names[st->family][st->old]);
                st->typed = true;
                if (st->family == F_MIG) {
                    if (s->mig[st->old].len)
                        vs_buf_append(b, s->mig[st->old].data, s->mig[st->old].len);
                    st->i = s->n_cards;
                }
            }
            while (st->i < s->n_cards && pend_short(st))
                card_line(b, s, st->family, st->old, &s->cards[st->i++]);
            if (st->i == s->n_cards)
                next_family(st, F_CARD_FAMILIES, ST_QUOTA);
            break;
        case ST_QUOTA:
            if (s->quota.len)
                vs_buf_append(b, s->quota.data, s->quota.len);
            st->stage = ST_PODS;
            break;
        case ST_PODS:
            if (!st->typed) {
                vs_buf_printf(b, "# TYPE %s gauge\n", pod_names[st->family][st->old]);
                st->typed = true;
            }
            while (st->i < s->n_pods && pend_short(st))
                pod_lines(b, s, st->family, st->old, &s->pods[st->i++]);
            if (st->i == s->n_pods)
                next_family(st, 2, ST_TAIL);
            break;
        case ST_TAIL:
            render_tail(b, st->m, st->has_x ? &st->x : NULL);
            st->stage = ST_EXTRA;
            break;
        case ST_EXTRA:
            if (st->extra)
                put(b, st->extra);
            st->stage = ST_DONE;
            break;
        case ST_DONE:
            break;
        }
    }
}

long vs_metrics_stream_read(struct vs_metrics_stream *st, char *buf, size_t max)
{
    struct vs_buf *b = &st->pend;
    if (b->len - st->off < max && st->stage != ST_DONE) {
        /* Keep what is unread at the front, so pend stays about a chunk long. */
        if (st->off) {
            memmove(b->data, b->data + st->off, b->len - st->off);
            b->len -= st->off;
            st->off = 0;
        }
        stream_fill(st);
        if (b->cap > st->held)
            st->held = b->cap;
    }
    if (b->oom)
        return -1;
    size_t n = b->len - st->off < max ? b->len - st->off : max;
    if (n)
        memcpy(buf, b->data + st->off, n);
    st->off += n;
    return (long)n;
}

char *vs_metrics_render(struct vs_metrics *m, const struct vs_model *model,
                        const struct vs_metrics_extra *x, bool legacy)
{
    struct vs_metrics_stream *st =
        vs_metrics_stream_new(m, vs_metrics_snap_take(model, legacy), x, NULL);
    if (!st)
        return NULL;
    struct vs_buf b;
    vs_buf_init(&b);
    char *chunk = malloc(STREAM_CHUNK);
    long n = chunk ? 0 : -1;
    while (chunk && (n = vs_metrics_stream_read(st, chunk, STREAM_CHUNK)) > 0)
        vs_buf_append(&b, chunk, (size_t)n);
    free(chunk);
    vs_metrics_stream_free(st);
    if (n < 0 || b.oom) {
        vs_buf_cleanup(&b);
        return NULL;
    }
    return vs_buf_steal(&b);
}
