/* metrics: atomic counters and fixed-bucket histograms; HAMi gauges are derived from the model
 * under the store's read lock when /metrics is scraped (never on the Filter path). */
#include "metrics.h"

#include "buf.h"
#include "sched.h"

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
    struct hist filter_h, bind_h;
    atomic_uint_fast64_t outcomes[VS_FILTER_OUTCOMES];
    atomic_uint_fast64_t reasons[NR];
    atomic_uint_fast64_t binds_ok, binds_failed;
};

struct vs_metrics *vs_metrics_new(void)
{
    return calloc(1, sizeof(struct vs_metrics));
}

void vs_metrics_free(struct vs_metrics *m)
{
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

struct gauge_ctx {
    struct vs_buf *b;
    bool legacy;
    int pass;
};

static void card_gauges(void *ctx, const struct vs_node *n)
{
    struct gauge_ctx *g = ctx;
    char nn[256], id[256], ty[256];
    lv(n->name, nn, sizeof(nn));
    for (size_t i = 0; i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        lv(c->uuid, id, sizeof(id));
        lv(c->type, ty, sizeof(ty));
        const char *fmt_base = "node=\"%s\",device_uuid=\"%s\",device_index=\"%u\"";
        char base[900];
        snprintf(base, sizeof(base), fmt_base, nn, id, c->index);
        switch (g->pass) {
        case 0:
            vs_buf_printf(g->b,
                          "hami_gpu_memory_limit_bytes{%s,device_type=\"%s\",zone=\"vGPU\"} %lld\n",
                          base, ty, (long long)c->devmem * 1048576LL);
            break;
        case 1:
            vs_buf_printf(g->b,
                          "hami_gpu_core_limit_ratio{%s,device_type=\"%s\",zone=\"vGPU\"} %d\n",
                          base, ty, c->devcore);
            break;
        case 2:
            vs_buf_printf(
                g->b,
                "hami_gpu_memory_allocated_bytes{%s,device_cores=\"%d\",device_type=\"%s\","
                "zone=\"vGPU\"} %lld\n",
                base, c->devcore, ty, (long long)c->usedmem * 1048576LL);
            break;
        case 3:
            vs_buf_printf(g->b, "hami_gpu_shared_count{%s,device_type=\"%s\",zone=\"vGPU\"} %lld\n",
                          base, ty, (long long)c->used);
            break;
        case 4:
            vs_buf_printf(
                g->b, "hami_gpu_core_allocated_ratio{%s,device_type=\"%s\",zone=\"vGPU\"} %lld\n",
                base, ty, (long long)c->usedcores);
            break;
        case 5:
            vs_buf_printf(
                g->b,
                "hami_node_gpu_overview{%s,device_cores=\"%d\",device_memory_limit=\"%d\","
                "device_type=\"%s\",zone=\"vGPU\"} %lld\n",
                base, c->devcore, c->devmem, ty, (long long)c->usedmem * 1048576LL);
            break;
        case 6:
            if (c->devmem > 0)
                vs_buf_printf(g->b,
                              "hami_node_gpu_memory_allocated_ratio{%s,device_type=\"%s\",zone="
                              "\"vGPU\"} %g\n",
                              base, ty, (double)c->usedmem / c->devmem);
            break;
        default:
            break;
        }
    }
}

static void pod_gauges(void *ctx, const struct vs_podent *pe)
{
    struct gauge_ctx *g = ctx;
    char ns[256], nn[256], pn[256], id[256];
    lv(pe->ns, ns, sizeof(ns));
    lv(pe->node, nn, sizeof(nn));
    lv(pe->name, pn, sizeof(pn));
    for (size_t i = 0; i < pe->n_usage; i++) {
        lv(pe->usage[i].uuid, id, sizeof(id));
        if (g->pass == 0)
            vs_buf_printf(
                g->b,
                "hami_vgpu_memory_allocated_bytes{namespace=\"%s\",node=\"%s\",pod=\"%s\","
                "container_index=\"0\",device_uuid=\"%s\",zone=\"vGPU\"} %lld\n",
                ns, nn, pn, id, (long long)pe->usage[i].mem * 1048576LL);
        else
            vs_buf_printf(g->b,
                          "hami_vgpu_core_allocated_ratio{namespace=\"%s\",node=\"%s\",pod=\"%s\","
                          "container_index=\"0\",device_uuid=\"%s\",zone=\"vGPU\"} %lld\n",
                          ns, nn, pn, id, (long long)pe->usage[i].cores);
    }
}

char *vs_metrics_render(struct vs_metrics *m, const struct vs_model *model,
                        const struct vs_metrics_extra *x, bool legacy)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_printf(&b,
                  "# HELP hami_build_info Build information.\n# TYPE hami_build_info gauge\n"
                  "hami_build_info{version=\"%s\",compiler=\"gcc\",platform=\"linux\"} 1\n",
                  VS_VERSION);
    static const char *const names[] = {
        "hami_gpu_memory_limit_bytes",         "hami_gpu_core_limit_ratio",
        "hami_gpu_memory_allocated_bytes",     "hami_gpu_shared_count",
        "hami_gpu_core_allocated_ratio",       "hami_node_gpu_overview",
        "hami_node_gpu_memory_allocated_ratio"};
    for (int pass = 0; model && pass < 7; pass++) {
        vs_buf_printf(&b, "# TYPE %s gauge\n", names[pass]);
        struct gauge_ctx g = {.b = &b, .legacy = legacy, .pass = pass};
        vs_model_each_node(model, card_gauges, &g);
    }
    for (int pass = 0; model && pass < 2; pass++) {
        vs_buf_printf(&b, "# TYPE %s gauge\n",
                      pass ? "hami_vgpu_core_allocated_ratio" : "hami_vgpu_memory_allocated_bytes");
        struct gauge_ctx g = {.b = &b, .legacy = legacy, .pass = pass};
        vs_model_each_pod(model, pod_gauges, &g);
    }
    render_hist(&b, "vgpu_sched_filter_duration_seconds", "Filter latency.", &m->filter_h);
    render_hist(&b, "vgpu_sched_bind_duration_seconds", "Bind latency.", &m->bind_h);
    static const char *const oc[] = {"scheduled", "unschedulable", "error", "passthrough"};
    vs_buf_puts(&b, "# TYPE vgpu_sched_filter_total counter\n");
    for (int i = 0; i < VS_FILTER_OUTCOMES; i++)
        vs_buf_printf(&b, "vgpu_sched_filter_total{result=\"%s\"} %llu\n", oc[i],
                      (unsigned long long)atomic_load(&m->outcomes[i]));
    vs_buf_puts(&b, "# TYPE vgpu_sched_filter_node_rejections_total counter\n");
    for (size_t i = 0; i < NR; i++)
        vs_buf_printf(&b, "vgpu_sched_filter_node_rejections_total{reason=\"%s\"} %llu\n",
                      reason_word(i), (unsigned long long)atomic_load(&m->reasons[i]));
    vs_buf_printf(&b,
                  "# TYPE vgpu_sched_bind_total counter\n"
                  "vgpu_sched_bind_total{result=\"ok\"} %llu\n"
                  "vgpu_sched_bind_total{result=\"error\"} %llu\n",
                  (unsigned long long)atomic_load(&m->binds_ok),
                  (unsigned long long)atomic_load(&m->binds_failed));
    if (x) {
        vs_buf_printf(&b,
                      "# TYPE vgpu_sched_node_lock_total counter\n"
                      "vgpu_sched_node_lock_total{event=\"acquired\"} %llu\n"
                      "vgpu_sched_node_lock_total{event=\"contended\"} %llu\n"
                      "vgpu_sched_node_lock_total{event=\"broken\"} %llu\n"
                      "vgpu_sched_node_lock_total{event=\"released\"} %llu\n",
                      (unsigned long long)x->lock_acquired, (unsigned long long)x->lock_contended,
                      (unsigned long long)x->lock_broken, (unsigned long long)x->lock_released);
        static const char *const verbs[] = {"GET", "LIST", "WATCH", "PATCH", "POST", "PUT"};
        vs_buf_printf(&b,
                      "# TYPE vgpu_sched_api_requests_total counter\n"
                      "vgpu_sched_api_requests_total %llu\n"
                      "# TYPE vgpu_sched_api_errors_total counter\n",
                      (unsigned long long)x->api_requests);
        for (int i = 0; i < 6; i++)
            vs_buf_printf(&b, "vgpu_sched_api_errors_total{verb=\"%s\"} %llu\n", verbs[i],
                          (unsigned long long)x->api_errors[i]);
        vs_buf_printf(&b,
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
                      "# TYPE vgpu_sched_synced gauge\nvgpu_sched_synced %d\n",
                      (unsigned long long)x->malformed_pods, (unsigned long long)x->malformed_nodes,
                      (unsigned long long)x->reservations_expired,
                      (unsigned long long)x->commit_conflicts, (unsigned long long)x->relists,
                      x->leader ? 1 : 0, x->synced ? 1 : 0);
    }
    return vs_buf_steal(&b);
}
