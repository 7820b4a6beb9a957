/* bench: the scale benchmark of design.md §5. Builds a deterministic synthetic cluster (nodes
 * with mixed GPU models, pods of which a share hold consistent GPU allocations) and measures
 * Filter in-process and over HTTPS, Bind over HTTPS in embedded mode, ingest of the initial pod
 * list, and the resident memory of the cached cluster. Not run by the unit tests. The last
 * output line is the machine-readable summary; every other line is informative. */
#include "annot.h"
#include "buf.h"
#include "dash_json.h"
#include "dash_snap.h"
#include "devcfg.h"
#include "frag.h"
#include "json_text.h"
#include "k8s_codec.h"
#include "kube_internal.h"
#include "log.h"
#include "memapi.h"
#include "metrics.h"
#include "model.h"
#include "pending.h"
#include "slab.h"
#include "sched.h"
#include "serve.h"
#include "store.h"
#include "whatif.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE_ITEMS      500 /* the informer's LIST page size (kube_informer.c INFORMER_PAGE) */
#define RING            256 /* in-process reservations kept outstanding before being dropped */
#define CAND_SETS       32  /* distinct random candidate lists cycled through */
#define WARMUP          20
#define SINGLE_LIST_MAX 200000 /* largest pod count also ingested as one PodList text */
#define SLOTS           10     /* container slots per card ("count") */
#define BASE_TIME       1748779200LL
#define BASE_TIME_S     "2025-06-01T12:00:00Z"
#define FILTER_MEM      "4000"
#define FILTER_CORES    "20"

struct opts {
    long nodes, cards, pods;
    double gpu_share;
    long iters, https_iters;
    bool skip_https;
    bool filter_only; /* --filter-only: build the store, run the in-process Filter, nothing else */
    uint64_t seed;
    bool bind_throughput; /* only the bind-throughput phase */
    long bind_nodes, bind_pods, bind_clients, hold_ms, queue_depth;
    long card_mib;        /* --card-mib: every card this many MiB (0: the models by node) */
    const char *bind_mix; /* --bind-mix: the bind phase's pod shapes (uniform, large, small) */
    const char *policy;   /* --policy: node and card policy of the in-process Filter */
    const char *compare;  /* --compare REF: run this and REF alternately, print the ratios */
    long compare_runs;
    bool dashboard;    /* --dashboard: the dashboard's costs and its effect on Filter */
    bool mixed;        /* --mixed-vendors: a quarter of the nodes Hygon DCU or AMD */
    long dash_seconds; /* --dash-seconds: Filter time with and without polling, in all */
};

struct card_model {
    const char *type;
    int32_t devmem;
};

/* Node i has model i % 4: GPU nodes are homogeneous, the cluster is mixed. */
static const struct card_model models[] = {
    {"NVIDIA-NVIDIA A100-SXM4-80GB", 81920},
    {"NVIDIA-NVIDIA A10", 23028},
    {"NVIDIA-Tesla T4", 15360},
    {"NVIDIA-NVIDIA L4", 23034},
};
#define N_MODELS (sizeof(models) / sizeof(models[0]))

/* The backends of --mixed-vendors: node i is Hygon when i % 8 == 3 and AMD when i % 8 == 7 (a
 * quarter of the cluster), NVIDIA otherwise. Their registers use the same text as NVIDIA's. */
enum vendor { V_NVIDIA, V_HYGON, V_AMD, V_COUNT };
struct vendor_desc {
    const char *word;     /* the backend's HAMi word (vs_device.word) */
    const char *type;     /* the registered card type */
    const char *reg;      /* the node's register annotation */
    const char *prefix;   /* the pod annotations' prefix: <prefix>-devices-allocated */
    const char *res[3];   /* count, memory (MiB), cores (%) */
    const char *capacity; /* the node's capacity resource */
};
static const struct vendor_desc vendors[V_COUNT] = {
    {"NVIDIA",
     NULL,
     "hami.io/node-nvidia-register",
     "hami.io/vgpu",
     {"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores"},
     "nvidia.com/gpu"},
    {"DCU",
     "DCU-Z100L",
     "hami.io/node-dcu-register",
     "hami.io/dcu",
     {"hygon.com/dcunum", "hygon.com/dcumem", "hygon.com/dcucores"},
     "hygon.com/dcunum"},
    {"AMD",
     "AMD Instinct MI210",
     "hami.io/node-amd-register",
     "hami.io/amd",
     {"amd.com/gpu", "amd.com/gpumem", "amd.com/gpucores"},
     "amd.com/gpu"},
};

static enum vendor vendor_of(const struct opts *o, long node)
{
    if (!o->mixed)
        return V_NVIDIA;
    return node % 8 == 3 ? V_HYGON : node % 8 == 7 ? V_AMD : V_NVIDIA;
}

static void die(const char *what)
{
    fprintf(stderr, "vgpu-sched-bench: %s\n", what);
    exit(1);
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p)
        die("out of memory");
    return p;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU time of the calling thread: what a call cost, whatever else the machine runs. */
static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU time (user + system) of the whole process, every thread. */
static double process_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ random numbers */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t rnd(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ULL;
    return mix64(*state);
}

static long rnd_below(uint64_t *state, long n)
{
    return (long)(rnd(state) % (uint64_t)n);
}

/* A UUID-shaped string derived from (salt, i), 36 characters like Kubernetes UIDs. */
static void uuid_of(uint64_t salt, uint64_t i, char out[37])
{
    uint64_t a = mix64(salt * 0x100000001b3ULL ^ i), b = mix64(a ^ 0x5bd1e995);
    snprintf(out, 37, "%08x-%04x-4%03x-a%03x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff, (unsigned)(b >> 52) & 0xfff,
             (unsigned long long)(b & 0xffffffffffffULL));
}

static void card_uuid(long node, long card, char out[41])
{
    char u[37];
    uuid_of(7, (uint64_t)node * 64 + (uint64_t)card, u);
    snprintf(out, 41, "GPU-%s", u);
}

static void node_name(long i, char out[24])
{
    snprintf(out, 24, "node-%05ld", i);
}

/* ------------------------------------------------------------------ synthetic cluster */

/* Generates the cluster's objects in a fixed order from the seed; per-card usage is tracked so
 * no card is ever over its slot, memory or core capacity. Two generators with the same options
 * produce byte-identical objects. */
struct gen {
    const struct opts *o;
    uint64_t rng;
    int32_t *slots, *mem, *cores; /* nodes x cards */
    long next_pod;
    long gpu_pods;
    long gpu_devices;
};

static void gen_init(struct gen *g, const struct opts *o)
{
    memset(g, 0, sizeof(*g));
    g->o = o;
    g->rng = o->seed;
    size_t n = (size_t)o->nodes * (size_t)o->cards;
    g->slots = xcalloc(n, sizeof(int32_t));
    g->mem = xcalloc(n, sizeof(int32_t));
    g->cores = xcalloc(n, sizeof(int32_t));
}

static void gen_cleanup(struct gen *g)
{
    free(g->slots);
    free(g->mem);
    free(g->cores);
}

static int32_t devmem_of(long node)
{
    return models[(size_t)node % N_MODELS].devmem;
}

static int32_t numa_of(const struct opts *o, long node, long card)
{
    /* Odd nodes are two-socket machines: the upper half of their cards is on NUMA node 1. */
    return (node % 2 == 1 && card >= o->cards / 2) ? 1 : 0;
}

/* The register annotation's value of node i (new string; hami.io/node-nvidia-register, or its
 * backend's with --mixed-vendors). */
static char *node_register(const struct opts *o, long i)
{
    struct vs_register reg;
    reg.n = (size_t)o->cards;
    reg.cards = xcalloc(reg.n, sizeof(*reg.cards));
    for (long c = 0; c < o->cards; c++) {
        char u[41];
        card_uuid(i, c, u);
        struct vs_card_reg *r = &reg.cards[c];
        r->uuid = strdup(u);
        const char *vt = vendors[vendor_of(o, i)].type;
        r->type = strdup(vt ? vt : models[(size_t)i % N_MODELS].type);
        r->mode = strdup("hami-core");
        r->index = (uint32_t)c;
        r->count = SLOTS;
        r->devmem = o->card_mib > 0 ? (int32_t)o->card_mib : devmem_of(i);
        r->devcore = 100;
        r->numa = numa_of(o, i, c);
        r->health = true;
        if (!r->uuid || !r->type || !r->mode)
            die("out of memory");
    }
    char *s = vs_annot_format_register(&reg);
    vs_register_cleanup(&reg);
    if (!s)
        die("out of memory");
    return s;
}

static void put_kind(struct vs_buf *b, bool with_kind, const char *kind)
{
    if (with_kind)
        vs_buf_printf(b, "\"kind\":\"%s\",\"apiVersion\":\"v1\",", kind);
}

/* A Node object as the API serves it (list items carry no kind unless with_kind). */
static void gen_node(const struct opts *o, long i, bool with_kind, struct vs_buf *b)
{
    char name[24], uid[37];
    node_name(i, name);
    uuid_of(3, (uint64_t)i, uid);
    char *reg = node_register(o, i);
    const struct vendor_desc *vd = &vendors[vendor_of(o, i)];
    const char *product =
        vd->type ? vd->type : models[(size_t)i % N_MODELS].type + strlen("NVIDIA-");
    vs_buf_puts(b, "{");
    put_kind(b, with_kind, "Node");
    vs_buf_printf(b,
                  "\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"%ld\","
                  "\"creationTimestamp\":\"%s\",\"labels\":{\"kubernetes.io/hostname\":\"%s\","
                  "\"kubernetes.io/os\":\"linux\",\"kubernetes.io/arch\":\"amd64\",\"gpu\":\"on\","
                  "\"nvidia.com/gpu.product\":\"%s\",\"topology.kubernetes.io/zone\":\"zone-%ld\"},"
                  "\"annotations\":{\"hami.io/node-handshake\":\"Reported %s\",\"%s\":",
                  name, uid, 1000 + i, BASE_TIME_S, name, product, i % 3, BASE_TIME_S, vd->reg);
    vs_json_put_string(b, reg);
    vs_buf_printf(b,
                  "}},\"spec\":{\"podCIDR\":\"10.%ld.%ld.0/24\"},\"status\":{\"capacity\":{"
                  "\"cpu\":\"64\",\"memory\":\"528000000Ki\",\"pods\":\"110\","
                  "\"%s\":\"%ld\"},\"allocatable\":{\"cpu\":\"63500m\",\"memory\":"
                  "\"520000000Ki\",\"pods\":\"110\",\"%s\":\"%ld\"},\"addresses\":["
                  "{\"type\":\"InternalIP\",\"address\":\"10.0.%ld.%ld\"}]}}",
                  (i >> 8) & 255, i & 255, vd->capacity, o->cards * SLOTS, vd->capacity,
                  o->cards * SLOTS, (i >> 8) & 255, i & 255);
    free(reg);
}

/* Chooses ngpu distinct cards on one node with room for mem/cores each and books them. */
static bool gen_place(struct gen *g, int ngpu, int32_t mem, int32_t cores, long *node_out,
                      long cards_out[2])
{
    const struct opts *o = g->o;
    for (int tries = 0; tries < 64; tries++) {
        long node = rnd_below(&g->rng, o->nodes);
        long start = rnd_below(&g->rng, o->cards);
        int32_t devmem = devmem_of(node);
        int found = 0;
        for (long k = 0; k < o->cards && found < ngpu; k++) {
            long c = (start + k) % o->cards;
            size_t at = (size_t)node * (size_t)o->cards + (size_t)c;
            if (g->slots[at] < SLOTS && g->mem[at] + mem <= devmem && g->cores[at] + cores <= 100)
                cards_out[found++] = c;
        }
        if (found < ngpu)
            continue;
        for (int k = 0; k < ngpu; k++) {
            size_t at = (size_t)node * (size_t)o->cards + (size_t)cards_out[k];
            g->slots[at]++;
            g->mem[at] += mem;
            g->cores[at] += cores;
        }
        *node_out = node;
        return true;
    }
    return false;
}

static void put_containers(struct vs_buf *b, long i, const char *gpu_limits)
{
    vs_buf_printf(b,
                  "\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/team-%ld/"
                  "app:1.%ld\",\"ports\":[{\"containerPort\":8080,\"protocol\":\"TCP\"}],"
                  "\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"4Gi\"%s},\"requests\":"
                  "{\"cpu\":\"500m\",\"memory\":\"1Gi\"%s}},\"terminationMessagePolicy\":\"File\","
                  "\"imagePullPolicy\":\"IfNotPresent\"}]",
                  i % 40, i % 7, gpu_limits, gpu_limits);
}

/* The next pod of the synthetic cluster: Running, on a node; a gpu_share of them hold a
 * HAMi allocation (hami.io/vgpu-node + hami.io/vgpu-devices-allocated naming real cards). */
static void gen_pod(struct gen *g, bool with_kind, struct vs_buf *b)
{
    const struct opts *o = g->o;
    long i = g->next_pod++;
    bool gpu = (double)(rnd(&g->rng) >> 11) / 9007199254740992.0 < o->gpu_share;
    static const int32_t mems[] = {1024, 2048, 4096, 8192};
    static const int32_t cores_v[] = {0, 10, 20, 30, 50};
    long node = rnd_below(&g->rng, o->nodes), cards[2] = {0, 0};
    int ngpu = o->cards >= 2 && rnd_below(&g->rng, 10) == 0 ? 2 : 1;
    int32_t mem = mems[rnd_below(&g->rng, 4)], cores = cores_v[rnd_below(&g->rng, 5)];
    if (gpu && !gen_place(g, ngpu, mem, cores, &node, cards))
        gpu = false; /* the cluster is full: the pod runs without a GPU */
    char name[32], uid[37], owner[37], nname[24];
    snprintf(name, sizeof(name), "app-%05ld-%06ld", i / 8, i);
    uuid_of(1, (uint64_t)i, uid);
    uuid_of(2, (uint64_t)(i / 8), owner);
    node_name(node, nname);
    vs_buf_puts(b, "{");
    put_kind(b, with_kind, "Pod");
    vs_buf_printf(b,
                  "\"metadata\":{\"name\":\"%s\",\"generateName\":\"app-%05ld-\",\"namespace\":"
                  "\"ns-%02ld\",\"uid\":\"%s\",\"resourceVersion\":\"%ld\",\"creationTimestamp\":"
                  "\"%s\",\"labels\":{\"app\":\"app-%05ld\",\"pod-template-hash\":\"%.10s\"},"
                  "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
                  "\"name\":\"app-%05ld\",\"uid\":\"%s\",\"controller\":true,"
                  "\"blockOwnerDeletion\":true}]",
                  name, i / 8, i % 40, uid, 100000 + i, BASE_TIME_S, i / 8, owner, i / 8, owner);
    char gpu_limits[200] = "";
    if (gpu) {
        const struct vendor_desc *vd = &vendors[vendor_of(o, node)];
        g->gpu_pods++;
        g->gpu_devices += ngpu;
        struct vs_buf a;
        vs_buf_init(&a);
        for (int k = 0; k < ngpu; k++) {
            char cu[41];
            card_uuid(node, cards[k], cu);
            vs_buf_printf(&a, "%s,%s,%d,%d:", cu, vd->word, mem, cores);
        }
        vs_buf_puts(&a, ";");
        vs_buf_printf(b,
                      ",\"annotations\":{\"hami.io/vgpu-node\":\"%s\",\"hami.io/vgpu-time\":"
                      "\"%lld\",\"%s-devices-allocated\":\"%s\","
                      "\"%s-devices-to-allocate\":\";\",\"hami.io/bind-phase\":"
                      "\"success\",\"hami.io/bind-time\":\"%lld\"}",
                      nname, BASE_TIME, vd->prefix, a.data, vd->prefix, BASE_TIME);
        vs_buf_cleanup(&a);
        snprintf(gpu_limits, sizeof(gpu_limits), ",\"%s\":\"%d\",\"%s\":\"%d\",\"%s\":\"%d\"",
                 vd->res[0], ngpu, vd->res[1], mem, vd->res[2], cores);
    }
    vs_buf_printf(b, "},\"spec\":{\"nodeName\":\"%s\",\"schedulerName\":\"%s\",", nname,
                  gpu ? "hami-scheduler" : "default-scheduler");
    put_containers(b, i, gpu_limits);
    vs_buf_printf(b,
                  ",\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,"
                  "\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"default\","
                  "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":"
                  "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]},"
                  "\"status\":{\"phase\":\"Running\",\"hostIP\":\"10.0.%ld.%ld\",\"podIP\":"
                  "\"10.%ld.%ld.%ld\",\"startTime\":\"%s\",\"qosClass\":\"Burstable\","
                  "\"containerStatuses\":[{\"name\":\"main\",\"ready\":true,\"restartCount\":0,"
                  "\"state\":{\"running\":{\"startedAt\":\"%s\"}}}]}}",
                  (node >> 8) & 255, node & 255, 64 + ((i >> 16) & 63), (i >> 8) & 255, i & 255,
                  BASE_TIME_S, BASE_TIME_S);
}

#define FILTER_LIMITS                                                                              \
    ",\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"" FILTER_MEM "\","                          \
    "\"nvidia.com/gpucores\":\"" FILTER_CORES "\""

/* A Pending pod asking for the limits given as JSON members after cpu and memory
 * (",\"k\":\"v\"..."; FILTER_LIMITS: 1 GPU / FILTER_MEM MiB / FILTER_CORES cores, what Filter
 * gets). */
static void gen_pending_pod_limits(const char *ns, const char *name, const char *uid,
                                   bool with_kind, const char *limits, struct vs_buf *b)
{
    vs_buf_puts(b, "{");
    put_kind(b, with_kind, "Pod");
    vs_buf_printf(b,
                  "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","
                  "\"resourceVersion\":\"1\",\"creationTimestamp\":\"%s\",\"labels\":{\"app\":"
                  "\"bench\"}},\"spec\":{\"schedulerName\":\"hami-scheduler\",",
                  name, ns, uid, BASE_TIME_S);
    put_containers(b, 0, limits);
    vs_buf_puts(b, ",\"restartPolicy\":\"Always\",\"dnsPolicy\":\"ClusterFirst\"},"
                   "\"status\":{\"phase\":\"Pending\",\"qosClass\":\"Burstable\"}}");
}

static void gen_pending_pod(const char *ns, const char *name, const char *uid, bool with_kind,
                            struct vs_buf *b)
{
    gen_pending_pod_limits(ns, name, uid, with_kind, FILTER_LIMITS, b);
}

/* ------------------------------------------------------------------ list pages */

/* JSON texts of v1 List pages, as the API answers LIST with limit=PAGE_ITEMS. */
struct pages {
    char **text;
    size_t *len;
    size_t n;
    size_t bytes;
    long items;
};

static void pages_cleanup(struct pages *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->text[i]);
    free(p->text);
    free(p->len);
    memset(p, 0, sizeof(*p));
}

/* One page of `count` objects starting at `first` (nodes) or the generator's next pods. */
static char *gen_page(struct gen *g, bool nodes, long first, long count, size_t *len)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_printf(&b,
                  "{\"kind\":\"%s\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                  "\"%ld\"},\"items\":[",
                  nodes ? "NodeList" : "PodList", 900000L);
    for (long k = 0; k < count; k++) {
        if (k)
            vs_buf_puts(&b, ",");
        if (nodes)
            gen_node(g->o, first + k, false, &b);
        else
            gen_pod(g, false, &b);
    }
    vs_buf_puts(&b, "]}");
    *len = b.len;
    char *s = vs_buf_steal(&b);
    if (!s)
        die("out of memory");
    return s;
}

static void gen_pages(struct gen *g, bool nodes, long total, long per_page, struct pages *p)
{
    memset(p, 0, sizeof(*p));
    size_t n = (size_t)((total + per_page - 1) / per_page);
    p->text = xcalloc(n, sizeof(char *));
    p->len = xcalloc(n, sizeof(size_t));
    for (long at = 0; at < total; at += per_page) {
        long count = total - at < per_page ? total - at : per_page;
        p->text[p->n] = gen_page(g, nodes, at, count, &p->len[p->n]);
        p->bytes += p->len[p->n];
        p->n++;
    }
    p->items = total;
}

/* ------------------------------------------------------------------ ingest */

struct ingest_time {
    double parse, apply;
};

/* Parses one page with jansson and applies every item like an informer's ADDED event. */
static void ingest_page(struct vs_store *s, const char *kind, const char *text, size_t len,
                        struct ingest_time *t)
{
    double t0 = now_s();
    json_error_t je;
    json_t *page = json_loadb(text, len, 0, &je);
    if (!page) {
        fprintf(stderr, "page does not parse: %s\n", je.text);
        exit(1);
    }
    double t1 = now_s();
    size_t i;
    json_t *item;
    struct vs_errbuf eb;
    json_array_foreach(json_object_get(page, "items"), i, item)
    {
        if (vs_store_apply(s, kind, "ADDED", item, &eb) != VS_OK) {
            fprintf(stderr, "apply %s: %s\n", kind, eb.msg);
            exit(1);
        }
    }
    double t2 = now_s();
    json_decref(page);
    double t3 = now_s();
    t->parse += (t1 - t0) + (t3 - t2); /* building and freeing the tree are both jansson's */
    t->apply += t2 - t1;
}

struct apply_ctx {
    struct vs_store *s;
    double apply;
};

static int apply_item(void *ctx, json_t *item)
{
    struct apply_ctx *a = ctx;
    struct vs_errbuf eb;
    double t0 = now_s();
    if (vs_store_apply(a->s, "Pod", "ADDED", item, &eb) != VS_OK) {
        fprintf(stderr, "apply Pod: %s\n", eb.msg);
        exit(1);
    }
    a->apply += now_s() - t0;
    return 0;
}

static int apply_other(void *ctx, const char *text, size_t len)
{
    struct apply_ctx *a = ctx;
    struct vs_errbuf eb;
    double t0 = now_s();
    if (vs_store_apply_pod_text(a->s, text, len, &eb) != VS_OK) {
        fprintf(stderr, "apply Pod text: %s\n", eb.msg);
        exit(1);
    }
    a->apply += now_s() - t0;
    return 0;
}

/* A pod page the way the service's pod informer reads it (kube_list.c, vs_kube_list_kept): the
 * page is scanned for its items; those mentioning vgpu-node are decoded (only the members the
 * pod decoder reads) and applied, the others go to the store's lean requests-only decoder
 * (vs_store_apply_pod_text). */
static void ingest_pod_page_informer(struct vs_store *s, const char *text, size_t len,
                                     struct ingest_time *t)
{
    struct apply_ctx a = {.s = s};
    json_t *meta = NULL;
    enum vs_err rc = VS_OK;
    struct vs_errbuf eb;
    double t0 = now_s();
    int r = vs_kube_list_page_kept(text, len, "vgpu-node", vs_codec_pod_keep, apply_item,
                                   apply_other, &a, &meta, "LIST /api/v1/pods", &rc, &eb);
    json_decref(meta);
    double t1 = now_s();
    if (r != 1) {
        fprintf(stderr, "pod page not taken by the informer's scan (%d): %s\n", r,
                r < 0 ? eb.msg : "unexpected shape");
        exit(1);
    }
    t->parse += (t1 - t0) - a.apply;
    t->apply += a.apply;
}

static struct vs_store *store_new(const struct vs_devcfg *cfg)
{
    struct vs_store_opts so = {.cfg = cfg, .reservation_ttl = 300};
    struct vs_errbuf eb;
    struct vs_store *s = vs_store_new(NULL, &so, &eb);
    if (!s)
        die(eb.msg);
    return s;
}

/* ------------------------------------------------------------------ backends' ledgers */

/* Cards, used slots and used MiB by backend: what the generator booked, and what the model
 * counts after ingest. They must be equal: a vendor's register or allocation annotation the
 * model did not read would make the mixed-vendor figures measure the wrong thing. */
struct ledger {
    long cards[V_COUNT], slots[V_COUNT];
    int64_t mem[V_COUNT];
};

static void gen_ledger(const struct gen *g, struct ledger *l)
{
    memset(l, 0, sizeof(*l));
    for (long n = 0; n < g->o->nodes; n++) {
        enum vendor v = vendor_of(g->o, n);
        for (long c = 0; c < g->o->cards; c++) {
            size_t at = (size_t)n * (size_t)g->o->cards + (size_t)c;
            l->cards[v]++;
            l->slots[v] += g->slots[at];
            l->mem[v] += g->mem[at];
        }
    }
}

struct ledger_ctx {
    struct ledger l;
    const struct vs_devices *set;
};

static void ledger_node(void *ctx, const struct vs_node *n)
{
    struct ledger_ctx *c = ctx;
    for (size_t k = 0; k < n->n_cards; k++) {
        const struct vs_card *card = &n->cards[k];
        const char *word = c->set->dev[card->dev]->word;
        for (int v = 0; v < V_COUNT; v++)
            if (strcmp(word, vendors[v].word) == 0) {
                c->l.cards[v]++;
                c->l.slots[v] += card->used;
                c->l.mem[v] += card->usedmem;
            }
    }
}

static void model_ledger(void *ctx, const struct vs_model *m)
{
    struct ledger_ctx *c = ctx;
    c->set = vs_model_devices(m);
    vs_model_each_node(m, ledger_node, c);
}

/* Prints both ledgers by backend and dies when they differ. */
static void check_ledger(const struct gen *g, struct vs_store *s)
{
    struct ledger want;
    gen_ledger(g, &want);
    struct ledger_ctx got;
    memset(&got, 0, sizeof(got));
    vs_store_read(s, model_ledger, &got);
    bool same = true;
    for (int v = 0; v < V_COUNT; v++) {
        if (!want.cards[v] && !got.l.cards[v])
            continue;
        printf("backend %s: %ld cards, %ld slots and %lld MiB in use (generated: %ld cards, %ld "
               "slots, %lld MiB)\n",
               vendors[v].word, got.l.cards[v], got.l.slots[v], (long long)got.l.mem[v],
               want.cards[v], want.slots[v], (long long)want.mem[v]);
        same = same && want.cards[v] == got.l.cards[v] && want.slots[v] == got.l.slots[v] &&
               want.mem[v] == got.l.mem[v];
    }
    if (!same)
        die("the model's usage by backend differs from the generated cluster's");
}

/* ------------------------------------------------------------------ memory (child process) */

static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    }
    if (f)
        fclose(f);
    return v;
}

/* The names of nodes 0 .. n-1 (node_name), freed with free_names. */
static char **node_names(long n)
{
    char **names = xcalloc((size_t)n, sizeof(char *));
    for (long i = 0; i < n; i++) {
        names[i] = xcalloc(24, 1);
        node_name(i, names[i]);
    }
    return names;
}

static void free_names(char **names, long n)
{
    for (long i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The in-process Filter's options: --policy as node and card policy, reasons worded only when
 * needed, the workload statistics frag. */
static struct vs_sched_opts bench_sched_opts(const struct vs_devcfg *cfg, const struct opts *o,
                                             struct vs_frag_stats *frag)
{
    return (struct vs_sched_opts){.cfg = cfg,
                                  .node_policy = o->policy,
                                  .gpu_policy = o->policy,
                                  .lazy_reasons = true,
                                  .frag_stats = frag};
}

/* The workload statistics of the fragmentation runs: VS_FRAG_K shapes (1, 2, 4 cards; shares
 * 10-90 %), so the measure does its full work on every node. */
static struct vs_frag_stats *bench_frag_stats(void)
{
    struct vs_frag_stats *frag = vs_frag_stats_new();
    if (!frag)
        die("out of memory");
    for (int k = 0; k < VS_FRAG_K; k++) {
        struct vs_frag_req q = {.nums = k < 12 ? 1 : (k < 14 ? 2 : 4),
                                .cores = k < 12 ? 10 + 7 * k : 100,
                                .mempct = k < 12 ? 10 + 7 * k : 100};
        for (int c = 0; c <= VS_FRAG_K - k; c++)
            if (vs_frag_stats_add(frag, &q, NULL, NULL))
                die("out of memory");
    }
    return frag;
}

/* The pod every in-process Filter places (one card's share, as gen_pending_pod makes it). */
static void bench_pod_limits(struct vs_pod *pod, const char *limits)
{
    struct vs_buf pb;
    vs_buf_init(&pb);
    gen_pending_pod_limits("bench", "bench-inproc", "00000000-0000-4000-a000-000000000000", true,
                           limits, &pb);
    json_error_t je;
    json_t *pj = json_loads(pb.data, 0, &je);
    vs_buf_cleanup(&pb);
    struct vs_errbuf eb;
    if (!pj || vs_codec_pod_from_json(pj, pod, &eb))
        die("cannot decode the benchmark pod");
    json_decref(pj);
}

static void bench_pod(struct vs_pod *pod)
{
    bench_pod_limits(pod, FILTER_LIMITS);
}

struct mem_result {
    long base_kib, hwm_kib, rss_kib;
    size_t heap_bytes, heap_nodes_bytes; /* malloc'd bytes in use at the end, after nodes */
    size_t heap_filter_bytes;            /* what one Filter over all nodes left (--policy) */
    size_t model_pods, model_nodes;
    size_t slab_bytes; /* the model's slab (tracked pods' entries and usage), mapped */
};

struct count_ctx {
    size_t pods, nodes, slab_bytes;
};

static void count_model(void *ctx, const struct vs_model *m)
{
    struct count_ctx *c = ctx;
    c->pods = vs_model_pod_count(m);
    c->nodes = vs_model_node_count(m);
    struct vs_slab_stats st;
    vs_model_slab_stats(m, &st);
    c->slab_bytes = st.mapped;
}

/* Runs in a child forked before the benchmark holds any large buffer: builds only the store
 * from the list pages, generated and parsed one page at a time as the informer receives them,
 * and reports the peak resident set. */
static void mem_child(const struct opts *o, const struct vs_devcfg *cfg, int fd)
{
    struct mem_result r;
    memset(&r, 0, sizeof(r));
    r.base_kib = status_kib("VmRSS");
    struct gen g;
    gen_init(&g, o);
    struct vs_store *s = store_new(cfg);
    struct ingest_time t = {0};
    for (int pass = 0; pass < 2; pass++) {
        bool nodes = pass == 0;
        long total = nodes ? o->nodes : o->pods;
        for (long at = 0; at < total; at += PAGE_ITEMS) {
            long count = total - at < PAGE_ITEMS ? total - at : PAGE_ITEMS;
            size_t len;
            char *text = gen_page(&g, nodes, at, count, &len);
            if (nodes)
                ingest_page(s, "Node", text, len, &t);
            else
                ingest_pod_page_informer(s, text, len, &t);
            free(text);
        }
        if (nodes)
            r.heap_nodes_bytes = mallinfo2().uordblks;
    }
    if (o->policy) {
        /* One Filter over every node with the policy, its reservation dropped again: what the
         * policy keeps per node stays (policy fragmentation's memos). */
        size_t before = mallinfo2().uordblks;
        char **names = node_names(o->nodes);
        struct vs_frag_stats *frag = bench_frag_stats();
        struct vs_sched_opts so = bench_sched_opts(cfg, o, frag);
        struct vs_pod pod;
        bench_pod(&pod);
        struct vs_filter_result fr;
        if (vs_store_filter(s, &pod, (const char **)names, (size_t)o->nodes, &so, BASE_TIME + 3600,
                            &fr))
            die("filter: out of memory");
        vs_filter_result_cleanup(&fr);
        vs_store_unreserve(s, pod.uid, 0);
        vs_pod_cleanup(&pod);
        vs_frag_stats_free(frag);
        free_names(names, o->nodes);
        r.heap_filter_bytes = mallinfo2().uordblks - before;
    }
    struct count_ctx cc = {0};
    vs_store_read(s, count_model, &cc);
    r.model_pods = cc.pods;
    r.model_nodes = cc.nodes;
    r.slab_bytes = cc.slab_bytes;
    r.hwm_kib = status_kib("VmHWM");
    r.rss_kib = status_kib("VmRSS");
    r.heap_bytes = mallinfo2().uordblks;
    vs_store_free(s);
    gen_cleanup(&g);
    if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(1);
}

static bool measure_memory(const struct opts *o, const struct vs_devcfg *cfg, struct mem_result *r)
{
    int p[2];
    if (pipe(p) != 0)
        return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        close(p[0]);
        mem_child(o, cfg, p[1]);
        close(p[1]);
        _exit(0);
    }
    close(p[1]);
    ssize_t got = read(p[0], r, sizeof(*r));
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return got == (ssize_t)sizeof(*r) && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ------------------------------------------------------------------ latency samples */

struct lat {
    double *v; /* microseconds */
    size_t n;
};

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile over the sorted samples. */
static double pct(const struct lat *l, double p)
{
    if (!l->n)
        return 0;
    size_t k = (size_t)ceil(p * (double)l->n);
    if (k < 1)
        k = 1;
    return l->v[k - 1];
}

static void lat_sort(struct lat *l)
{
    qsort(l->v, l->n, sizeof(double), dbl_cmp);
}

/* Random candidate lists: each a random subset (in random order) of all node names. */
static const char ***cand_sets(char **names, long n_nodes, size_t n_cand, uint64_t *rng)
{
    const char ***sets = xcalloc(CAND_SETS, sizeof(*sets));
    const char **perm = xcalloc((size_t)n_nodes, sizeof(*perm));
    for (long i = 0; i < n_nodes; i++)
        perm[i] = names[i];
    for (int s = 0; s < CAND_SETS; s++) {
        for (size_t i = 0; i < n_cand; i++) {
            size_t j = i + (size_t)rnd_below(rng, n_nodes - (long)i);
            const char *t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        sets[s] = xcalloc(n_cand, sizeof(char *));
        memcpy(sets[s], perm, n_cand * sizeof(char *));
    }
    free(perm);
    return sets;
}

static void cand_sets_free(const char ***sets)
{
    for (int s = 0; s < CAND_SETS; s++)
        free((void *)sets[s]);
    free(sets);
}

/* ------------------------------------------------------------------ Filter in-process */

struct inproc {
    struct lat lat;
    struct lat cpu; /* the same calls' thread CPU time */
    long fits, misses;
    uint64_t digest; /* FNV-1a of the chosen nodes' names in call order: same placements? */
};

/* vs_store_filter (evaluate under the read lock, commit under the write lock) of a fresh pod
 * UID per call. The RING most recent reservations stay in the model, so usage keeps changing;
 * older ones are dropped again (outside the timing) so the cluster never fills up. */
static void filter_inproc(struct vs_store *s, const struct vs_devcfg *cfg, struct vs_pod *pod,
                          char **names, const struct opts *o, size_t n_cand, struct inproc *out)
{
    uint64_t rng = o->seed ^ (0x1234 + n_cand);
    if (n_cand > (size_t)o->nodes)
        n_cand = (size_t)o->nodes;
    const char ***sets = cand_sets(names, o->nodes, n_cand, &rng);
    char(*uids)[48] = xcalloc(RING, sizeof(*uids));
    bool *held = xcalloc(RING, sizeof(bool));
    for (int k = 0; k < RING; k++)
        snprintf(uids[k], sizeof(uids[k]), "bench-inproc-%zu-%03d", n_cand, k);
    /* As the extender's Filter calls it. With policy fragmentation the workload statistics
     * already hold VS_FRAG_K shapes (1, 2, 4 cards; shares 10-90 %), so the measure does its
     * full work on every node. */
    struct vs_frag_stats *frag = bench_frag_stats();
    struct vs_sched_opts so = bench_sched_opts(cfg, o, frag);
    out->lat.v = xcalloc((size_t)o->iters, sizeof(double));
    out->lat.n = 0;
    out->cpu.v = xcalloc((size_t)o->iters, sizeof(double));
    out->cpu.n = 0;
    out->fits = out->misses = 0;
    out->digest = 0xcbf29ce484222325ULL;
    char *own_uid = pod->uid;
    for (long i = -WARMUP; i < o->iters; i++) {
        int slot = (int)((i + WARMUP) % RING);
        if (held[slot])
            vs_store_unreserve(s, uids[slot], 0);
        held[slot] = false;
        pod->uid = uids[slot];
        struct vs_filter_result r;
        const char **cands = sets[(i + WARMUP) % CAND_SETS];
        double c0 = thread_cpu_s();
        double t0 = now_s();
        enum vs_err err = vs_store_filter(s, pod, cands, n_cand, &so, BASE_TIME + 3600, &r);
        double t1 = now_s();
        double c1 = thread_cpu_s();
        if (err)
            die("filter: out of memory");
        if (r.best >= 0) {
            for (const char *c = r.nodes[r.best].node; *c; c++)
                out->digest = (out->digest ^ (unsigned char)*c) * 0x100000001b3ULL;
            out->digest = (out->digest ^ 0xff) * 0x100000001b3ULL;
            held[slot] = true;
            if (i >= 0)
                out->fits++;
        } else if (i >= 0) {
            out->misses++;
        }
        vs_filter_result_cleanup(&r);
        if (i >= 0) {
            out->lat.v[out->lat.n++] = (t1 - t0) * 1e6;
            out->cpu.v[out->cpu.n++] = (c1 - c0) * 1e6;
        }
    }
    for (int k = 0; k < RING; k++)
        if (held[k])
            vs_store_unreserve(s, uids[k], 0);
    pod->uid = own_uid;
    vs_frag_stats_free(frag);
    free(held);
    free(uids);
    cand_sets_free(sets);
    lat_sort(&out->lat);
    lat_sort(&out->cpu);
}

/* ------------------------------------------------------------------ dashboard */

/* One dashboard snapshot as the service makes it: the copy under the store's read lock (the
 * only part that can hold up a Filter's commit), then the JSON encoding outside it. */
struct dash_copy {
    struct vs_store *s;
    const struct vs_dash_copy_opts *o;
    struct vs_dash_snap *snap;
};

static void dash_copy_locked(void *ctx, const struct vs_model *m)
{
    struct dash_copy *c = ctx;
    if (vs_dash_snap_copy(m, c->o, vs_store_version(c->s), BASE_TIME, &c->snap))
        die("dashboard copy: out of memory");
}

/* ------------------------------------------------------------------ /metrics */

struct metrics_render {
    struct vs_metrics *m;
    bool legacy;
    char *out;
    struct vs_metrics_snap *snap;
};

static void metrics_render_locked(void *ctx, const struct vs_model *m)
{
    struct metrics_render *r = ctx;
    struct vs_metrics_extra x; /* the service's counters: zero here */
    memset(&x, 0, sizeof(x));
    if (r->m)
        r->out = vs_metrics_render(r->m, m, &x, r->legacy);
    else
        r->snap = vs_metrics_snap_take(m, r->legacy);
}

/* What a Prometheus scrape costs the service, METRICS_RENDERS times each with and without the
 * legacy families, fastest of each: the snapshot taken under the store's read lock (writers, a
 * Filter's commit among them, wait meanwhile) and the text streamed from it through a 64 KiB
 * buffer, as /metrics serves it (ms); the text's size and FNV-1a (a change of the renderer alone
 * must leave it as it was). */
#define METRICS_RENDERS 5
struct metrics_cost {
    double lock_ms, stream_ms;
    size_t bytes, snap_bytes;
    uint64_t digest;
};

static void metrics_renders(struct vs_store *s, struct metrics_cost cost[2])
{
    struct vs_metrics *vm = vs_metrics_new();
    struct vs_metrics_extra x;
    memset(&x, 0, sizeof(x));
    char *chunk = malloc(64 << 10);
    if (!vm || !chunk)
        die("out of memory");
    for (int legacy = 0; legacy < 2; legacy++) {
        struct metrics_cost *c = &cost[legacy];
        for (int i = 0; i < METRICS_RENDERS; i++) {
            struct metrics_render r = {.legacy = legacy};
            double t0 = now_s();
            vs_store_read(s, metrics_render_locked, &r);
            double t1 = now_s();
            if (!r.snap)
                die("metrics snapshot: out of memory");
            c->snap_bytes = vs_metrics_snap_bytes(r.snap);
            struct vs_metrics_stream *st = vs_metrics_stream_new(vm, r.snap, &x, NULL);
            if (!st)
                die("metrics snapshot: out of memory");
            long n;
            while ((n = vs_metrics_stream_read(st, chunk, 64 << 10)) > 0)
                ;
            double t2 = now_s();
            vs_metrics_stream_free(st);
            if (n < 0)
                die("metrics stream: out of memory");
            if (i == 0 || (t1 - t0) * 1e3 < c->lock_ms)
                c->lock_ms = (t1 - t0) * 1e3;
            if (i == 0 || (t2 - t1) * 1e3 < c->stream_ms)
                c->stream_ms = (t2 - t1) * 1e3;
        }
        struct metrics_render r = {.m = vm, .legacy = legacy};
        vs_store_read(s, metrics_render_locked, &r);
        if (!r.out)
            die("metrics render: out of memory");
        c->bytes = strlen(r.out);
        c->digest = 0xcbf29ce484222325ULL;
        for (const char *p = r.out; *p; p++)
            c->digest = (c->digest ^ (unsigned char)*p) * 0x100000001b3ULL;
        free(r.out);
    }
    free(chunk);
    vs_metrics_free(vm);
}

/* Filter while another thread scrapes /metrics every SCRAPE_GAP_MS (a scrape, then that pause),
 * the way this build scrapes (snapshot under the lock, text after it) and the way the build
 * before did (the whole text rendered under the lock): a Filter's commit takes the write lock,
 * so it waits for a scrape holding the read lock. SCRAPED_ITERS Filters of 500 candidates each
 * way. */
#define SCRAPED_ITERS 20000
#define SCRAPE_GAP_MS 100
struct scraper {
    struct vs_store *s;
    bool under_lock;
    atomic_bool stop;
    long scrapes;
};

static void *scraper_main(void *arg)
{
    struct scraper *sc = arg;
    struct vs_metrics *vm = vs_metrics_new();
    char *chunk = malloc(64 << 10);
    if (!vm || !chunk)
        die("out of memory");
    while (!atomic_load(&sc->stop)) {
        struct metrics_render r = {.m = sc->under_lock ? vm : NULL};
        vs_store_read(sc->s, metrics_render_locked, &r);
        if (sc->under_lock) {
            free(r.out);
        } else {
            struct vs_metrics_stream *st = vs_metrics_stream_new(vm, r.snap, NULL, NULL);
            while (st && vs_metrics_stream_read(st, chunk, 64 << 10) > 0)
                ;
            vs_metrics_stream_free(st);
        }
        sc->scrapes++;
        for (int i = 0; i < SCRAPE_GAP_MS && !atomic_load(&sc->stop); i++)
            usleep(1000);
    }
    free(chunk);
    vs_metrics_free(vm);
    return NULL;
}

static void filter_scraped(struct vs_store *s, const struct vs_devcfg *cfg, char **names,
                           const struct opts *o, bool under_lock, struct inproc *out, long *scrapes)
{
    struct opts oo = *o;
    oo.iters = SCRAPED_ITERS;
    struct scraper sc = {.s = s, .under_lock = under_lock};
    pthread_t t;
    if (pthread_create(&t, NULL, scraper_main, &sc) != 0)
        die("cannot start the scraper thread");
    struct vs_pod pod;
    bench_pod(&pod);
    filter_inproc(s, cfg, &pod, names, &oo, 500, out);
    vs_pod_cleanup(&pod);
    atomic_store(&sc.stop, true);
    pthread_join(t, NULL);
    *scrapes = sc.scrapes;
}

/* copy_us / encode_us: wall clock; cpu[0] / cpu[1] (may be NULL): the thread's CPU time. */
static void dash_snapshot(struct vs_store *s, double *copy_us, double *encode_us, size_t *bytes,
                          double *cpu)
{
    struct vs_dash_copy_opts o = {.detail_max_nodes = 300, .cards = VS_DASH_CARDS_DETAIL};
    struct dash_copy c = {.s = s, .o = &o};
    double c0 = thread_cpu_s(), t0 = now_s();
    vs_store_read(s, dash_copy_locked, &c);
    double c1 = thread_cpu_s(), t1 = now_s();
    struct vs_dash_meta meta = {.version = "v",
                                .node_policy = "binpack",
                                .gpu_policy = "spread",
                                .leader = true,
                                .synced = true};
    char *text = vs_dash_json_snapshot(c.snap, &meta);
    double c2 = thread_cpu_s(), t2 = now_s();
    if (!text)
        die("dashboard encode: out of memory");
    if (cpu) {
        cpu[0] = (c1 - c0) * 1e6;
        cpu[1] = (c2 - c1) * 1e6;
    }
    *copy_us = (t1 - t0) * 1e6;
    *encode_us = (t2 - t1) * 1e6;
    *bytes = strlen(text);
    free(text);
    vs_dash_snap_free(c.snap);
}

/* The page's polling: a snapshot every interval_s until stopped. Without `snap` the thread
 * wakes the same way and takes none: the blocks without a page run it too, so that the two
 * conditions differ only in the snapshots (a thread waking every 2 ms keeps a VM's vCPUs out of
 * idle and lowers every latency by itself). */
struct dash_poller {
    struct vs_store *s;
    double interval_s;
    bool snap;
    atomic_bool stop;
    long polls;
    double copy_max_us;
};

static void *dash_poll_main(void *arg)
{
    struct dash_poller *p = arg;
    double next = now_s(); /* the page's first poll comes at once */
    while (!atomic_load(&p->stop)) {
        if (now_s() < next) {
            usleep(2000);
            continue;
        }
        next += p->interval_s;
        if (!p->snap)
            continue;
        double cu, eu;
        size_t b;
        dash_snapshot(p->s, &cu, &eu, &b, NULL);
        if (cu > p->copy_max_us)
            p->copy_max_us = cu;
        p->polls++;
    }
    return NULL;
}

struct wi_copy {
    struct vs_whatif_state *st;
};

static void wi_copy_locked(void *ctx, const struct vs_model *m)
{
    struct wi_copy *c = ctx;
    if (vs_whatif_copy(m, &c->st))
        die("what-if copy: out of memory");
}

static void print_lat(const char *what, const struct lat *l);

static void print_ms(const char *what, struct lat *l)
{
    lat_sort(l);
    printf("%-44s p50=%8.2f ms  max=%8.2f ms  (n=%zu)\n", what, pct(l, 0.5) / 1000.0,
           l->n ? l->v[l->n - 1] / 1000.0 : 0.0, l->n);
}

/* The dashboard's costs on the ingested store, then Filter p99 (500 candidates) in rounds
 * without and with a snapshot taken every second, as a page polling the service. */
static void run_dashboard(const struct opts *o, struct vs_store *store, char **names,
                          const struct vs_devcfg *cfg)
{
    enum { ROUNDS = 20 };
    struct lat copy = {xcalloc(ROUNDS, sizeof(double)), 0};
    struct lat enc = {xcalloc(ROUNDS, sizeof(double)), 0};
    struct lat copy_cpu = {xcalloc(ROUNDS, sizeof(double)), 0};
    struct lat enc_cpu = {xcalloc(ROUNDS, sizeof(double)), 0};
    size_t bytes = 0;
    for (int i = 0; i < ROUNDS; i++) {
        double cu, eu, cpu[2];
        dash_snapshot(store, &cu, &eu, &bytes, cpu);
        copy.v[copy.n++] = cu;
        enc.v[enc.n++] = eu;
        copy_cpu.v[copy_cpu.n++] = cpu[0];
        enc_cpu.v[enc_cpu.n++] = cpu[1];
    }
    print_ms("dashboard snapshot: copy under the read lock", &copy);
    print_ms("  thread CPU time of the same copies", &copy_cpu);
    print_ms("dashboard snapshot: JSON encoding", &enc);
    print_ms("  thread CPU time of the same encodings", &enc_cpu);
    printf("  (%.1f MiB of JSON for %ld nodes x %ld cards: node sums only above 300 nodes)\n",
           (double)bytes / 1048576.0, o->nodes, o->cards);
    /* fragmentation and the pending list (500 refused pods, each refused by every node) */
    struct vs_dash_copy_opts co = {0};
    struct dash_copy c = {.s = store, .o = &co};
    vs_store_read(store, dash_copy_locked, &c);
    struct vs_frag_stats *frag = bench_frag_stats();
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, frag);
    double t0 = thread_cpu_s();
    char *ftext = vs_dash_json_frag(c.snap, &x);
    double frag_ms = (thread_cpu_s() - t0) * 1e3;
    struct vs_pending_opts po = {.cfg = cfg, .max_pods = 1000};
    struct vs_pending *pend = vs_pending_new(&po);
    struct vs_node_fit *fits = xcalloc((size_t)o->nodes, sizeof(*fits));
    for (long i = 0; i < o->nodes; i++)
        fits[i] = (struct vs_node_fit){.node = names[i], .reason = "8/8 CardInsufficientMemory"};
    struct vs_filter_result fr = {
        .managed = true, .nodes = fits, .n = (size_t)o->nodes, .best = -1};
    struct vs_pod big;
    bench_pod(&big);
    char uid[48];
    for (int i = 0; i < 500; i++) {
        snprintf(uid, sizeof(uid), "bench-pending-%03d", i);
        char *own = big.uid;
        big.uid = uid;
        vs_pending_refused(pend, &big, &fr, NULL, NULL, NULL, BASE_TIME + i);
        big.uid = own;
    }
    struct vs_pending_entry *pv;
    size_t pn;
    uint64_t pver, pdrop;
    t0 = thread_cpu_s();
    if (vs_pending_list(pend, BASE_TIME + 500, false, &pv, &pn, &pver, &pdrop))
        die("pending: out of memory");
    char *ptext = vs_dash_json_pending(pv, pn, c.snap, 200, pver, pdrop, BASE_TIME + 500);
    double pend_ms = (thread_cpu_s() - t0) * 1e3;
    printf("dashboard (thread CPU time) fragmentation: %.1f ms (%.1f MiB); pending list of %zu "
           "pods with 200 "
           "nearest misses: %.1f ms (%.1f MiB)\n",
           frag_ms, ftext ? (double)strlen(ftext) / 1048576.0 : 0.0, pn, pend_ms,
           ptext ? (double)strlen(ptext) / 1048576.0 : 0.0);
    free(ftext);
    free(ptext);
    vs_pending_list_free(pv, pn);
    vs_pending_free(pend);
    free(fits);
    vs_pod_cleanup(&big);
    vs_dash_snap_free(c.snap);
    vs_frag_stats_free(frag);
    /* a what-if: the private copy under the read lock, then the cluster rebuilt and one pod */
    struct wi_copy wc = {0};
    t0 = thread_cpu_s();
    vs_store_read(store, wi_copy_locked, &wc);
    double wcopy_ms = (thread_cpu_s() - t0) * 1e3;
    struct vs_whatif_req wr;
    struct vs_errbuf eb;
    const char *body = "{\"shape\":{\"cards\":1,\"memMiB\":4000,\"coresPct\":20}}";
    if (vs_whatif_parse(body, strlen(body), cfg, &wr, &eb))
        die(eb.msg);
    struct vs_whatif_opts wo = {.cfg = cfg, .version = "v", .now = BASE_TIME};
    t0 = thread_cpu_s();
    char *wtext = vs_whatif_run(wc.st, &wr, &wo);
    double wrun_ms = (thread_cpu_s() - t0) * 1e3;
    printf("dashboard what-if (thread CPU time): copy under the read lock %.1f ms, cluster rebuilt "
           "and one pod "
           "scheduled %.1f ms\n",
           wcopy_ms, wrun_ms);
    free(wtext);
    vs_whatif_req_cleanup(&wr);
    vs_whatif_state_free(wc.st);
    /* Filter with and without a page polling every second: short blocks of about 2 s, in
     * pairs whose order alternates (AB BA AB ...), so that a change of the machine's load
     * falls on both conditions alike. Each pair's p99 ratio is kept; the median ratio and the
     * pooled p99s are reported. */
    struct opts fo = *o;
    struct vs_pod pod;
    bench_pod(&pod);
    struct inproc probe;
    filter_inproc(store, cfg, &pod, names, &fo, 500, &probe);
    double mean_us = 0;
    for (size_t i = 0; i < probe.lat.n; i++)
        mean_us += probe.lat.v[i];
    mean_us = probe.lat.n ? mean_us / (double)probe.lat.n : 100;
    free(probe.lat.v);
    free(probe.cpu.v);
    fo.iters = (long)(2e6 / (mean_us > 1 ? mean_us : 1));
    if (fo.iters < 500)
        fo.iters = 500;
    long pairs = o->dash_seconds / 4 > 1 ? o->dash_seconds / 4 : 1;
    struct lat quiet = {xcalloc((size_t)(fo.iters * pairs), sizeof(double)), 0};
    struct lat polled = {xcalloc((size_t)(fo.iters * pairs), sizeof(double)), 0};
    double *ratios = xcalloc((size_t)pairs, sizeof(double));
    long polls = 0;
    double copy_max = 0;
    for (long pair = 0; pair < pairs; pair++) {
        double p99[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            int with = (int)((pair + k) % 2);
            struct dash_poller p = {.s = store, .interval_s = 1.0, .snap = with};
            pthread_t t;
            if (pthread_create(&t, NULL, dash_poll_main, &p))
                die("pthread_create");
            struct inproc r;
            filter_inproc(store, cfg, &pod, names, &fo, 500, &r);
            atomic_store(&p.stop, true);
            pthread_join(t, NULL);
            if (with) {
                polls += p.polls;
                if (p.copy_max_us > copy_max)
                    copy_max = p.copy_max_us;
            }
            p99[with] = pct(&r.lat, 0.99);
            struct lat *dst = with ? &polled : &quiet;
            memcpy(dst->v + dst->n, r.lat.v, r.lat.n * sizeof(double));
            dst->n += r.lat.n;
            free(r.lat.v);
            free(r.cpu.v);
        }
        ratios[pair] = p99[0] > 0 ? p99[1] / p99[0] : 1;
    }
    qsort(ratios, (size_t)pairs, sizeof(double), dbl_cmp);
    double median_ratio = ratios[pairs / 2];
    free(ratios);
    vs_pod_cleanup(&pod);
    lat_sort(&quiet);
    lat_sort(&polled);
    print_lat("filter in-process 500 cand, no page", &quiet);
    print_lat("filter in-process 500 cand, polled 1/s", &polled);
    double dp99 = pct(&quiet, 0.99) > 0 ? (pct(&polled, 0.99) / pct(&quiet, 0.99) - 1) * 100 : 0;
    printf("  (%ld pairs of blocks of %ld Filters; %ld snapshots taken while polled, the longest "
           "copy %.2f ms; pooled p99 %+.1f %%, median of the pairs' p99 ratios %+.1f %%)\n",
           pairs, fo.iters, polls, copy_max / 1000.0, dp99, (median_ratio - 1) * 100);
    printf("bench dashboard nodes=%ld cards=%ld pods=%ld snapshot_copy_cpu_ms=%.2f "
           "snapshot_encode_cpu_ms=%.2f snapshot_mib=%.1f filter500_p99_us=%.1f "
           "filter500_polled_p99_us=%.1f p99_change_pct=%.1f p99_median_pair_change_pct=%.1f\n",
           o->nodes, o->cards, o->pods, pct(&copy_cpu, 0.5) / 1000.0, pct(&enc_cpu, 0.5) / 1000.0,
           (double)bytes / 1048576.0, pct(&quiet, 0.99), pct(&polled, 0.99), dp99,
           (median_ratio - 1) * 100);
    free(copy.v);
    free(enc.v);
    free(copy_cpu.v);
    free(enc_cpu.v);
    free(quiet.v);
    free(polled.v);
}

/* ------------------------------------------------------------------ HTTPS (embedded mode) */

struct https {
    struct lat filter, bind;
    /* CPU of the Filter phase's timed calls (warm-up excluded): the whole process (client,
     * service, embedded API server) and the client's thread alone. */
    double filter_proc_cpu_s, filter_client_cpu_s;
    char server_side[512]; /* the service's own Filter histogram after the Filter phase */
    long filter_ok, filter_bad, bind_ok, bind_bad, bind_filter_bad;
    /* New connections: the service's CPU per connection (TLS handshake, one GET, close). */
    double conn_server_cpu_us;
    long conn_n, conn_bad;
    double load_s, sync_s;
    size_t file_bytes;
    char first_error[512];
};

struct body {
    char *data;
    size_t len;
};

static size_t collect(char *p, size_t sz, size_t n, void *ud)
{
    struct body *b = ud;
    char *g = realloc(b->data, b->len + sz * n + 1);
    if (!g)
        return 0;
    b->data = g;
    memcpy(b->data + b->len, p, sz * n);
    b->len += sz * n;
    b->data[b->len] = '\0';
    return sz * n;
}

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return sz * n;
}

struct client {
    CURL *h;
    struct curl_slist *hdr;
    int port;
    struct body resp;
};

/* POSTs body to path on the kept-alive connection; returns the response (borrowed until the
 * next call) and the wall time of curl_easy_perform in *us. */
static const char *post(struct client *c, const char *path, const char *body, size_t len,
                        double *us)
{
    char url[128];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", c->port, path);
    c->resp.len = 0;
    if (c->resp.data)
        c->resp.data[0] = '\0';
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    double t0 = now_s();
    CURLcode rc = curl_easy_perform(c->h);
    double t1 = now_s();
    *us = (t1 - t0) * 1e6;
    long status = 0;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status != 200) {
        fprintf(stderr, "POST %s: %s (HTTP %ld) %s\n", path, curl_easy_strerror(rc), status,
                c->resp.data ? c->resp.data : "");
        return NULL;
    }
    return c->resp.data ? c->resp.data : "";
}

/* The service's Filter latency histogram (handler time: decode, Filter, commit, queueing the
 * patch and event, encode), as cumulative shares of the requests by bucket. */
static void server_histogram(int port, char *out, size_t len)
{
    snprintf(out, len, "unavailable");
    CURL *h = curl_easy_init();
    struct body b = {0};
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(h) == CURLE_OK && b.data) {
        static const char *const les[] = {"0.0005", "0.001", "0.0025", "0.005"};
        double count = 0, sum = 0, in[4] = {0};
        const char *p;
        if ((p = strstr(b.data, "vgpu_sched_filter_duration_seconds_count ")))
            count = atof(p + strlen("vgpu_sched_filter_duration_seconds_count "));
        if ((p = strstr(b.data, "vgpu_sched_filter_duration_seconds_sum ")))
            sum = atof(p + strlen("vgpu_sched_filter_duration_seconds_sum "));
        for (int i = 0; i < 4; i++) {
            char key[96];
            snprintf(key, sizeof(key), "vgpu_sched_filter_duration_seconds_bucket{le=\"%s\"} ",
                     les[i]);
            if ((p = strstr(b.data, key)))
                in[i] = atof(p + strlen(key));
        }
        if (count > 0)
            snprintf(out, len,
                     "%.0f requests, mean %.0f us; <= 0.5 ms %.1f %%, <= 1 ms %.1f %%, "
                     "<= 2.5 ms %.1f %%, <= 5 ms %.1f %%",
                     count, sum / count * 1e6, 100 * in[0] / count, 100 * in[1] / count,
                     100 * in[2] / count, 100 * in[3] / count);
    }
    free(b.data);
    curl_easy_cleanup(h);
}

static bool make_certs(const char *dir)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout ca.key -out ca.pem -days 1 -subj /CN=bench-ca >/dev/null 2>&1 && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout tls.key -out tls.csr "
             "-subj /CN=127.0.0.1 >/dev/null 2>&1 && "
             "printf 'subjectAltName=IP:127.0.0.1\\n' > san.cnf && "
             "openssl x509 -req -in tls.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out tls.pem -days 1 -extfile san.cnf >/dev/null 2>&1",
             dir);
    return system(cmd) == 0;
}

static void bind_pod_ids(long j, char name[40], char uid[37])
{
    snprintf(name, 40, "bench-bind-%05ld", j);
    uuid_of(5, (uint64_t)j, uid);
}

/* The HTTPS Filter phase's k-th pod (warm-up calls included). */
static void filter_pod_ids(long k, char name[40], char uid[37])
{
    snprintf(name, 40, "bench-filter-%06ld", k);
    uuid_of(4, (uint64_t)k, uid);
}

/* The embedded cluster file: a v1 List of the nodes, the pods, n_filter Pending pods in
 * namespace "bench" that the HTTPS Filter measurement filters and n_bind that the Bind
 * measurement schedules. Written one object at a time. */
static bool write_cluster(const struct opts *o, const char *path, long n_filter, long n_bind,
                          size_t *bytes)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    struct gen g;
    gen_init(&g, o);
    struct vs_buf b;
    vs_buf_init(&b);
    fputs("{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[\n", f);
    long total = o->nodes + o->pods + n_filter + n_bind;
    for (long k = 0; k < total; k++) {
        b.len = 0;
        if (k < o->nodes) {
            gen_node(o, k, true, &b);
        } else if (k < o->nodes + o->pods) {
            gen_pod(&g, true, &b);
        } else if (k < o->nodes + o->pods + n_filter) {
            char name[40], uid[37];
            filter_pod_ids(k - o->nodes - o->pods, name, uid);
            gen_pending_pod("bench", name, uid, true, &b);
        } else {
            char name[40], uid[37];
            bind_pod_ids(k - o->nodes - o->pods - n_filter, name, uid);
            gen_pending_pod("bench", name, uid, true, &b);
        }
        if (b.oom)
            die("out of memory");
        fwrite(b.data, 1, b.len, f);
        fputs(k + 1 < total ? ",\n" : "\n", f);
    }
    fputs("]}\n", f);
    *bytes = (size_t)ftell(f);
    vs_buf_cleanup(&b);
    gen_cleanup(&g);
    return fclose(f) == 0;
}

/* A candidate list as the JSON array kube-scheduler sends in NodeNames. */
static char *names_json(const char *const *cands, size_t n)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            vs_buf_puts(&b, ",");
        vs_json_put_string(&b, cands[i]);
    }
    vs_buf_puts(&b, "]");
    char *s = vs_buf_steal(&b);
    if (!s)
        die("out of memory");
    return s;
}

/* {"Pod": <pod>, "Nodes": null, "NodeNames": <names>} as kube-scheduler sends it, names being
 * names_json's array. */
static char *filter_args_of(const char *pod_json, const char *names)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "{\"Pod\":");
    vs_buf_puts(&b, pod_json);
    vs_buf_puts(&b, ",\"Nodes\":null,\"NodeNames\":");
    vs_buf_puts(&b, names);
    vs_buf_puts(&b, "}");
    char *s = vs_buf_steal(&b);
    if (!s)
        die("out of memory");
    return s;
}

static char *filter_args(const char *pod_json, const char *const *cands, size_t n)
{
    char *names = names_json(cands, n);
    char *s = filter_args_of(pod_json, names);
    free(names);
    return s;
}

/* The node name Filter answered with, or NULL (first error kept in h->first_error). */
static bool filter_answer(const char *resp, char *node, size_t len, struct https *h)
{
    json_error_t je;
    json_t *r = resp ? json_loads(resp, 0, &je) : NULL;
    json_t *names = json_object_get(r, "NodeNames");
    bool ok = json_array_size(names) == 1;
    if (ok && node)
        snprintf(node, len, "%s", json_string_value(json_array_get(names, 0)));
    if (!ok && !h->first_error[0])
        snprintf(h->first_error, sizeof(h->first_error), "filter: %.400s",
                 resp ? resp : "(no response)");
    json_decref(r);
    return ok;
}

/* kube-scheduler's extender client keeps a few idle connections per host and opens a new one
 * for each request beyond them (a burst's Binds waiting in the bind queue hold theirs), each
 * with a TLS handshake. Another process (this binary, `--conn-client`) GETs /healthz over a
 * fresh connection CONN_N times, before any other traffic; this process's CPU meanwhile is the
 * service's cost of them. (A client thread here would share the service's allocator, and a
 * fork would make every page the service writes a copy-on-write fault: both skew it.) */
enum { CONN_N = 500 };

extern char **environ;

/* The client side: `vgpu-sched-bench --conn-client PORT CA N`; exit status: failed requests. */
static int conn_client(const char *port, const char *ca, const char *n_s)
{
    long n = atol(n_s);
    CURL *c = curl_easy_init();
    if (!c || n <= 0)
        return 255;
    char url[96];
    snprintf(url, sizeof(url), "https://127.0.0.1:%s/healthz", port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    int bad = 0;
    for (long i = 0; i < n; i++) {
        long status = 0;
        if (curl_easy_perform(c) != CURLE_OK ||
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200)
            bad += bad < 254;
    }
    curl_easy_cleanup(c);
    return bad;
}

static void new_connections(int port, const char *ca, struct https *h)
{
    char port_s[16], n_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    snprintf(n_s, sizeof(n_s), "%d", CONN_N);
    char *argv[] = {"vgpu-sched-bench", "--conn-client", port_s, (char *)ca, n_s, NULL};
    fflush(NULL);
    double p0 = process_cpu_s();
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0)
        die("cannot start the connection client");
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid failed");
    h->conn_server_cpu_us = (process_cpu_s() - p0) * 1e6 / CONN_N;
    h->conn_n = CONN_N;
    h->conn_bad = WIFEXITED(st) ? WEXITSTATUS(st) : CONN_N;
}

static void run_https(const struct opts *o, char **names, struct https *h)
{
    memset(h, 0, sizeof(*h));
    char dir[64] = "/tmp/vs-bench-XXXXXX", path[128], cert[128], key[128], ca[128];
    if (!mkdtemp(dir))
        die("mkdtemp failed");
    snprintf(path, sizeof(path), "%s/cluster.json", dir);
    snprintf(cert, sizeof(cert), "%s/tls.pem", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    if (!make_certs(dir))
        die("openssl failed to make the throwaway certificates");
    long n_bind = o->https_iters < o->nodes ? o->https_iters : o->nodes;
    if (!write_cluster(o, path, o->https_iters + WARMUP, n_bind, &h->file_bytes))
        die("cannot write the cluster file");

    struct vs_service_config c;
    vs_service_config_defaults(&c);
    c.http_bind = "127.0.0.1:0";
    c.metrics_bind = "127.0.0.1:0"; /* its Filter histogram: the service's own share */
    c.cert_file = cert;
    c.key_file = key;
    c.cluster = path;
    c.scheduler_name = "hami-scheduler";
    c.kube_qps = 0; /* no client-side rate limit toward the in-process API server */
    c.lock_retry_ms = 0;
    int rc;
    struct vs_errbuf eb;
    double t0 = now_s();
    struct vs_service *svc = vs_service_start(&c, &rc, &eb);
    if (!svc) {
        fprintf(stderr, "service start: %s\n", eb.msg);
        exit(1);
    }
    double t1 = now_s();
    /* Synced, and the leadership term's one-time node-lock repair (a LIST of every node) done:
     * it would otherwise run beside the first timed Filters. */
    while ((!vs_service_synced(svc) || !vs_service_repairs(svc)) && now_s() - t1 < 1800)
        usleep(20 * 1000);
    if (!vs_service_synced(svc) || !vs_service_repairs(svc))
        die("the embedded service never synced");
    double t2 = now_s();
    h->load_s = t1 - t0;
    h->sync_s = t2 - t1;
    fprintf(stderr, "bench: https: service synced, filtering\n");

    new_connections(vs_service_port(svc), ca, h);

    struct client cl = {.h = curl_easy_init(), .port = vs_service_port(svc)};
    if (!cl.h)
        die("curl_easy_init failed");
    cl.hdr = curl_slist_append(NULL, "Content-Type: application/json");
    cl.hdr = curl_slist_append(cl.hdr, "Expect:"); /* Go clients never send 100-continue */
    curl_easy_setopt(cl.h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(cl.h, CURLOPT_HTTPHEADER, cl.hdr);
    curl_easy_setopt(cl.h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(cl.h, CURLOPT_WRITEDATA, &cl.resp);
    curl_easy_setopt(cl.h, CURLOPT_NOSIGNAL, 1L);

    /* Filter: Pending pods of the cluster file, 5,000 candidates. The service commits a
     * reservation, records its decision and answers; the pod is then deleted (untimed), as if
     * its Bind or its user took it out of the way, so the cluster does not fill up and no
     * reservation or expected Bind outlives its pod (kube-scheduler would bind it). The
     * service's pod watch drops them, beside the next Filter. */
    CURL *api = curl_easy_init();
    if (!api)
        die("curl_easy_init failed");
    curl_easy_setopt(api, CURLOPT_CUSTOMREQUEST, "DELETE");
    curl_easy_setopt(api, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(api, CURLOPT_NOSIGNAL, 1L);
    size_t n_cand = o->nodes < 5000 ? (size_t)o->nodes : 5000;
    uint64_t rng = o->seed ^ 0xabcdef;
    const char ***sets = cand_sets(names, o->nodes, n_cand, &rng);
    /* Each list encoded once: 5,000 names scattered over the heap took the client longer to
     * encode per request than the service took to answer it. */
    char *sets_json[CAND_SETS];
    for (int k = 0; k < CAND_SETS; k++)
        sets_json[k] = names_json(sets[k], n_cand);
    h->filter.v = xcalloc((size_t)o->https_iters, sizeof(double));
    double pc0 = 0, cc0 = 0;
    for (long i = -WARMUP; i < o->https_iters; i++) {
        if (i == 0) {
            pc0 = process_cpu_s();
            cc0 = thread_cpu_s();
        }
        char name[40], uid[37];
        filter_pod_ids(i + WARMUP, name, uid);
        struct vs_buf pb;
        vs_buf_init(&pb);
        gen_pending_pod("bench", name, uid, true, &pb);
        char *args = filter_args_of(pb.data, sets_json[(i + WARMUP) % CAND_SETS]);
        vs_buf_cleanup(&pb);
        double us;
        const char *resp = post(&cl, "/filter", args, strlen(args), &us);
        free(args);
        bool ok = filter_answer(resp, NULL, 0, h);
        char url[256];
        snprintf(url, sizeof(url), "%s/api/v1/namespaces/bench/pods/%s", vs_service_api_url(svc),
                 name);
        curl_easy_setopt(api, CURLOPT_URL, url);
        long status = 0;
        if (curl_easy_perform(api) != CURLE_OK ||
            curl_easy_getinfo(api, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200) {
            fprintf(stderr, "DELETE %s: HTTP %ld\n", url, status);
            die("the embedded API server did not delete a filtered pod");
        }
        if (i < 0)
            continue;
        h->filter.v[h->filter.n++] = us;
        ok ? h->filter_ok++ : h->filter_bad++;
    }
    h->filter_proc_cpu_s = process_cpu_s() - pc0;
    h->filter_client_cpu_s = thread_cpu_s() - cc0;
    curl_easy_cleanup(api);
    for (int k = 0; k < CAND_SETS; k++)
        free(sets_json[k]);
    cand_sets_free(sets);
    fprintf(stderr, "bench: https: filters done\n");
    lat_sort(&h->filter);
    server_histogram(vs_service_metrics_port(svc), h->server_side, sizeof(h->server_side));

    /* Bind: Pending pods that exist in the API, each filtered on its own disjoint slice of
     * `stride` nodes, so every node sees at most one bind: a successful bind keeps the node
     * lock for the device plugin. A pause first lets the Filter phase's dropped reservations
     * come back; all filters, then a pause for their patches to land, then the timed binds. */
    usleep(1000000);
    long stride = o->nodes / (n_bind ? n_bind : 1);
    char(*bnode)[64] = xcalloc((size_t)n_bind, sizeof(*bnode));
    for (long j = 0; j < n_bind; j++) {
        char name[40], uid[37];
        bind_pod_ids(j, name, uid);
        struct vs_buf pb;
        vs_buf_init(&pb);
        gen_pending_pod("bench", name, uid, true, &pb);
        char *args = filter_args(pb.data, (const char *const *)&names[j * stride], (size_t)stride);
        vs_buf_cleanup(&pb);
        double us;
        const char *resp = post(&cl, "/filter", args, strlen(args), &us);
        free(args);
        if (!filter_answer(resp, bnode[j], sizeof(bnode[j]), h)) {
            bnode[j][0] = '\0';
            h->bind_filter_bad++;
        }
    }
    usleep((useconds_t)(1000000 + n_bind * 2000));
    fprintf(stderr, "bench: https: binding\n");
    h->bind.v = xcalloc((size_t)n_bind, sizeof(double));
    for (long j = 0; j < n_bind; j++) {
        if (!bnode[j][0])
            continue;
        char name[40], uid[37];
        bind_pod_ids(j, name, uid);
        char args[512];
        snprintf(args, sizeof(args),
                 "{\"PodName\":\"%s\",\"PodNamespace\":\"bench\",\"PodUID\":\"%s\","
                 "\"Node\":\"%s\"}",
                 name, uid, bnode[j]);
        double us;
        const char *resp = post(&cl, "/bind", args, strlen(args), &us);
        json_error_t je;
        json_t *r = resp ? json_loads(resp, 0, &je) : NULL;
        const char *err = json_string_value(json_object_get(r, "Error"));
        if (err && !*err) {
            h->bind_ok++;
            h->bind.v[h->bind.n++] = us;
        } else {
            h->bind_bad++;
            if (!h->first_error[0])
                snprintf(h->first_error, sizeof(h->first_error), "bind: %.400s",
                         resp ? resp : "(no response)");
        }
        json_decref(r);
    }
    lat_sort(&h->bind);
    free(bnode);
    fprintf(stderr, "bench: https: done\n");

    curl_slist_free_all(cl.hdr);
    curl_easy_cleanup(cl.h);
    free(cl.resp.data);
    vs_service_stop(svc);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* ------------------------------------------------------------------ bind throughput */

/* N clients (kube-scheduler's binding goroutines) filter and bind bind_pods Pending pods over
 * bind_nodes nodes of the embedded service; an emulated device plugin per node releases the
 * node lock hold_ms after each successful Bind (the Bind leaves it held, as in HAMi). The
 * ceiling is one allocation per node per hold: bind_nodes / hold pods/s. */
/* CPU per timed HTTPS Filter call in µs: the whole process, or without the client's thread. */
static double https_cpu_us(const struct https *h, bool server_only)
{
    if (!h->filter.n)
        return 0;
    double cpu = h->filter_proc_cpu_s - (server_only ? h->filter_client_cpu_s : 0);
    return cpu * 1e6 / (double)h->filter.n;
}

static void print_load(const char *when);

/* CPU of the benchmark's own threads (clients, plugins), each adding its own at its end. */
struct own_cpu {
    pthread_mutex_t mu;
    double s;
};

static void own_cpu_add(struct own_cpu *c)
{
    double v = thread_cpu_s();
    pthread_mutex_lock(&c->mu);
    c->s += v;
    pthread_mutex_unlock(&c->mu);
}

struct plugin {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double due[8]; /* release times queued (one per lock taken; at most one is held) */
    int n;
    bool stop;
    const char *node;
    struct vs_kube *k;
    struct own_cpu *cpu;
    pthread_t t;
};

static void *plugin_main(void *arg)
{
    struct plugin *p = arg;
    pthread_setname_np(pthread_self(), "bench-plugin"); /* apart from the service's in profiles */
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", p->node);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->n && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->n)
            break;
        double due = p->due[0];
        memmove(p->due, p->due + 1, (size_t)(p->n - 1) * sizeof(double));
        p->n--;
        pthread_mutex_unlock(&p->mu);
        double wait = due - now_s();
        if (wait > 0)
            usleep((useconds_t)(wait * 1e6));
        json_t *patch = json_pack("{s:{s:{s:n}}}", "metadata", "annotations", VS_ANNO_LOCK);
        struct vs_errbuf eb;
        if (vs_kube_merge_patch(p->k, path, patch, NULL, &eb))
            fprintf(stderr, "bench: release %s: %s\n", p->node, eb.msg);
        json_decref(patch);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    own_cpu_add(p->cpu);
    return NULL;
}

struct bt {
    const struct opts *o;
    int port;
    const char *ca;
    char **names;
    struct plugin *plugins;
    char **limits; /* per pod: its GPU limits (--bind-mix) */
    struct own_cpu *cpu;
    atomic_long next, ok, bad, contention, refused;
    atomic_long *per_node; /* Binds that succeeded, per node */
    char first_error[512];
    pthread_mutex_t err_mu;
    double t_last;
    pthread_mutex_t last_mu;
};

static void bt_pod_ids(long j, char name[40], char uid[37])
{
    snprintf(name, 40, "bt-%05ld", j);
    uuid_of(6, (uint64_t)j, uid);
}

static void bt_error(struct bt *b, const char *what, const char *resp)
{
    pthread_mutex_lock(&b->err_mu);
    if (!b->first_error[0])
        snprintf(b->first_error, sizeof(b->first_error), "%s: %.400s", what,
                 resp ? resp : "(no response)");
    pthread_mutex_unlock(&b->err_mu);
}

/* Whether a Filter answer is a refusal (FailedNodes, no Error): capacity, not a failure. */
static bool filter_refused(const char *resp)
{
    json_error_t je;
    json_t *r = resp ? json_loads(resp, 0, &je) : NULL;
    const char *err = json_string_value(json_object_get(r, "Error"));
    bool refused = json_object_size(json_object_get(r, "FailedNodes")) > 0 && (!err || !*err);
    json_decref(r);
    return refused;
}

static void *bt_client(void *arg)
{
    struct bt *b = arg;
    pthread_setname_np(pthread_self(), "bench-client");
    struct client cl = {.h = curl_easy_init(), .port = b->port};
    cl.hdr = curl_slist_append(NULL, "Content-Type: application/json");
    cl.hdr = curl_slist_append(cl.hdr, "Expect:");
    curl_easy_setopt(cl.h, CURLOPT_CAINFO, b->ca);
    curl_easy_setopt(cl.h, CURLOPT_HTTPHEADER, cl.hdr);
    curl_easy_setopt(cl.h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(cl.h, CURLOPT_WRITEDATA, &cl.resp);
    curl_easy_setopt(cl.h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cl.h, CURLOPT_TIMEOUT, 120L);
    struct https dummy;
    memset(&dummy, 0, sizeof(dummy));
    for (;;) {
        long j = atomic_fetch_add(&b->next, 1);
        if (j >= b->o->bind_pods)
            break;
        char name[40], uid[37], node[64];
        bt_pod_ids(j, name, uid);
        struct vs_buf pb;
        vs_buf_init(&pb);
        gen_pending_pod_limits("bench", name, uid, true, b->limits[j], &pb);
        char *args = filter_args(pb.data, (const char *const *)b->names, (size_t)b->o->bind_nodes);
        vs_buf_cleanup(&pb);
        double us;
        const char *resp = post(&cl, "/filter", args, strlen(args), &us);
        free(args);
        if (!filter_answer(resp, node, sizeof(node), &dummy)) {
            if (filter_refused(resp)) {
                atomic_fetch_add(&b->refused, 1);
                continue;
            }
            atomic_fetch_add(&b->bad, 1);
            bt_error(b, "filter", resp);
            continue;
        }
        char bargs[512];
        snprintf(
            bargs, sizeof(bargs),
            "{\"PodName\":\"%s\",\"PodNamespace\":\"bench\",\"PodUID\":\"%s\",\"Node\":\"%s\"}",
            name, uid, node);
        resp = post(&cl, "/bind", bargs, strlen(bargs), &us);
        json_error_t je;
        json_t *r = resp ? json_loads(resp, 0, &je) : NULL;
        const char *err = json_string_value(json_object_get(r, "Error"));
        if (err && !*err) {
            atomic_fetch_add(&b->ok, 1);
            double t = now_s();
            pthread_mutex_lock(&b->last_mu);
            if (t > b->t_last)
                b->t_last = t;
            pthread_mutex_unlock(&b->last_mu);
            long ni = strtol(node + strlen("node-"), NULL, 10);
            atomic_fetch_add(&b->per_node[ni], 1);
            struct plugin *p = &b->plugins[ni];
            pthread_mutex_lock(&p->mu);
            if (p->n < 8)
                p->due[p->n++] = t + (double)b->o->hold_ms / 1000.0;
            pthread_cond_signal(&p->cv);
            pthread_mutex_unlock(&p->mu);
        } else {
            atomic_fetch_add(&b->bad, 1);
            if (err && strstr(err, "node lock contention"))
                atomic_fetch_add(&b->contention, 1);
            bt_error(b, "bind", resp);
        }
        json_decref(r);
    }
    curl_slist_free_all(cl.hdr);
    curl_easy_cleanup(cl.h);
    free(cl.resp.data);
    own_cpu_add(b->cpu);
    return NULL;
}

/* The GPU limits of each bind-phase pod (new strings): `uniform` FILTER_LIMITS; `large` the
 * e2e burst-large mix (every fifth pod a whole card, the others 1-4 GiB and 5-30 % of the cores
 * from its generator and seed); `small` the issue's fitting burst (700 MiB, 4 %). */
static char **bind_limits(const struct opts *o)
{
    char **v = xcalloc((size_t)o->bind_pods, sizeof(char *));
    uint64_t x = 20261201;
    for (long j = 0; j < o->bind_pods; j++) {
        char buf[192];
        if (strcmp(o->bind_mix, "large") == 0 && (j + 1) % 5 == 0) {
            snprintf(buf, sizeof(buf),
                     ",\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem-percentage\":\"100\","
                     "\"nvidia.com/gpucores\":\"100\"");
        } else if (strcmp(o->bind_mix, "large") == 0) {
            x = (x * 1103515245 + 12345) % 2147483648ULL;
            long mem = 1024 + (long)(x / 65536 % 31) * 1024 / 10;
            x = (x * 1103515245 + 12345) % 2147483648ULL;
            long cores = 5 + (long)(x / 65536 % 26);
            snprintf(buf, sizeof(buf),
                     ",\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"%ld\","
                     "\"nvidia.com/gpucores\":\"%ld\"",
                     mem, cores);
        } else if (strcmp(o->bind_mix, "small") == 0) {
            snprintf(buf, sizeof(buf),
                     ",\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"700\","
                     "\"nvidia.com/gpucores\":\"4\"");
        } else {
            snprintf(buf, sizeof(buf), "%s", FILTER_LIMITS);
        }
        if (!(v[j] = strdup(buf)))
            die("out of memory");
    }
    return v;
}

/* The API server of the bind phase in a child process (so the service's own CPU can be told
 * from it): the embedded API server loaded from path. Its URL into url; closing *ctl ends it. */
static pid_t api_child(const char *path, int *ctl, char *url, size_t len)
{
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0)
        die("pipe failed");
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        struct vs_errbuf eb;
        struct vs_memapi *m = vs_memapi_start(&eb);
        if (!m || vs_memapi_load_file(m, path, NULL, NULL, &eb)) {
            fprintf(stderr, "bench: API server child: %s\n", eb.msg);
            _exit(1);
        }
        dprintf(up[1], "%s\n", vs_memapi_url(m));
        close(up[1]);
        char c;
        while (read(down[0], &c, 1) > 0)
            ;
        vs_memapi_stop(m);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    FILE *f = fdopen(up[0], "r");
    if (!f || !fgets(url, (int)len, f))
        die("the API server child did not start");
    fclose(f);
    url[strcspn(url, "\n")] = '\0';
    *ctl = down[1];
    return pid;
}

/* utime + stime of process pid in seconds (-1: unreadable). */
static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int run_bind_throughput(const struct opts *o0)
{
    struct opts o = *o0;
    o.nodes = o.bind_nodes;
    o.pods = 0;
    char dir[64] = "/tmp/vs-bench-XXXXXX", path[128], cert[128], key[128], ca[128];
    if (!mkdtemp(dir))
        die("mkdtemp failed");
    snprintf(path, sizeof(path), "%s/cluster.json", dir);
    snprintf(cert, sizeof(cert), "%s/tls.pem", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    if (!make_certs(dir))
        die("openssl failed to make the throwaway certificates");
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot write the cluster file");
    struct vs_buf b;
    vs_buf_init(&b);
    char **limits = bind_limits(&o);
    fputs("{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[\n", f);
    long total = o.nodes + o.bind_pods;
    for (long k = 0; k < total; k++) {
        b.len = 0;
        if (k < o.nodes) {
            gen_node(&o, k, true, &b);
        } else {
            char name[40], uid[37];
            bt_pod_ids(k - o.nodes, name, uid);
            gen_pending_pod_limits("bench", name, uid, true, limits[k - o.nodes], &b);
        }
        fwrite(b.data, 1, b.len, f);
        fputs(k + 1 < total ? ",\n" : "\n", f);
    }
    fputs("]}\n", f);
    vs_buf_cleanup(&b);
    if (fclose(f) != 0)
        die("cannot write the cluster file");

    /* The API server runs in a child process, the service reaches it through a kubeconfig as
     * in a cluster: this process's CPU is then the service's and the benchmark's own threads'. */
    char api_url[256], kcpath[128];
    int api_ctl;
    pid_t api_pid = api_child(path, &api_ctl, api_url, sizeof(api_url));
    snprintf(kcpath, sizeof(kcpath), "%s/kubeconfig", dir);
    f = fopen(kcpath, "w");
    if (!f)
        die("cannot write the kubeconfig");
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n    server: "
            "%s\nusers:\n- name: bench\n  user: {}\ncontexts:\n- name: bench\n  context:\n    "
            "cluster: bench\n    user: bench\ncurrent-context: bench\n",
            api_url);
    if (fclose(f) != 0)
        die("cannot write the kubeconfig");

    struct vs_service_config c;
    vs_service_config_defaults(&c);
    c.http_bind = "127.0.0.1:0";
    c.metrics_bind = "";
    c.cert_file = cert;
    c.key_file = key;
    c.kubeconfig = kcpath;
    c.scheduler_name = "hami-scheduler";
    c.kube_qps = 0;
    c.lock_retry_ms = 120000;
    c.bind_queue_depth = o.queue_depth;
    if (o.policy) {
        c.node_policy = o.policy;
        c.gpu_policy = o.policy;
    }
    int rc;
    struct vs_errbuf eb;
    struct vs_service *svc = vs_service_start(&c, &rc, &eb);
    if (!svc) {
        fprintf(stderr, "service start: %s\n", eb.msg);
        return 1;
    }
    while (!vs_service_synced(svc) || !vs_service_repairs(svc))
        usleep(20 * 1000);
    struct vs_kube_config kc = {.server = api_url};
    struct vs_kube_opts ko = {.qps = 0, .timeout_s = 30};
    struct vs_kube *k = vs_kube_new(&kc, &ko, &eb);
    if (!k)
        die("kube client");
    char **names = xcalloc((size_t)o.nodes, sizeof(char *));
    struct plugin *plugins = xcalloc((size_t)o.nodes, sizeof(*plugins));
    struct own_cpu own = {.mu = PTHREAD_MUTEX_INITIALIZER};
    for (long i = 0; i < o.nodes; i++) {
        names[i] = xcalloc(24, 1);
        node_name(i, names[i]);
        pthread_mutex_init(&plugins[i].mu, NULL);
        pthread_cond_init(&plugins[i].cv, NULL);
        plugins[i].node = names[i];
        plugins[i].k = k;
        plugins[i].cpu = &own;
        pthread_create(&plugins[i].t, NULL, plugin_main, &plugins[i]);
    }
    struct bt bt = {.o = &o,
                    .port = vs_service_port(svc),
                    .ca = ca,
                    .names = names,
                    .plugins = plugins,
                    .limits = limits,
                    .cpu = &own};
    bt.per_node = xcalloc((size_t)o.nodes, sizeof(atomic_long));
    pthread_mutex_init(&bt.err_mu, NULL);
    pthread_mutex_init(&bt.last_mu, NULL);
    pthread_t *cl = xcalloc((size_t)o.bind_clients, sizeof(pthread_t));
    print_load("before bind throughput");
    double pc0 = process_cpu_s(), ac0 = proc_cpu_s(api_pid);
    double t0 = now_s();
    for (long i = 0; i < o.bind_clients; i++)
        pthread_create(&cl[i], NULL, bt_client, &bt);
    for (long i = 0; i < o.bind_clients; i++)
        pthread_join(cl[i], NULL);
    double secs = bt.t_last > t0 ? bt.t_last - t0 : now_s() - t0;
    /* The plugins end (adding their CPU) once the last locks they owe are released. */
    for (long i = 0; i < o.nodes; i++) {
        pthread_mutex_lock(&plugins[i].mu);
        plugins[i].stop = true;
        pthread_cond_signal(&plugins[i].cv);
        pthread_mutex_unlock(&plugins[i].mu);
        pthread_join(plugins[i].t, NULL);
    }
    double cpu = process_cpu_s() - pc0, api_cpu = proc_cpu_s(api_pid) - ac0;
    double svc_cpu = cpu - own.s;
    long ok = atomic_load(&bt.ok), refused = atomic_load(&bt.refused);
    double rate = (double)ok / secs;
    double limit = (double)o.nodes / ((double)o.hold_ms / 1000.0);
    printf("bind throughput: %ld pods (%s) over %ld nodes, %ld clients, queue depth %ld, nodes "
           "%s, cards %s, hold %ld ms: %ld bound, %ld refused by Filter, %ld failed (%ld for lock "
           "contention) in %.2f s: %.1f pods/s; limit nodes/hold %.0f pods/s; %.1f %% of it\n",
           o.bind_pods, o.bind_mix, o.nodes, o.bind_clients, o.queue_depth, c.node_policy,
           c.gpu_policy, o.hold_ms, ok, refused, atomic_load(&bt.bad), atomic_load(&bt.contention),
           secs, rate, limit, 100.0 * rate / limit);
    double per = ok ? 1000.0 / (double)ok : 0.0;
    printf("bind throughput: CPU: the service's threads %.2f s = %.2f ms per placed pod (Filter, "
           "Bind, patches, Events, watches); the benchmark's clients and plugins %.2f s; the "
           "API server (a child process) %.2f s = %.2f ms per pod; this process %.2f cores busy "
           "on average\n",
           svc_cpu, svc_cpu * per, own.s, api_cpu, api_cpu * per, secs > 0 ? cpu / secs : 0.0);
    /* One allocation per node per hold: the busiest node's Binds run one after another, so
     * (its pods x hold) is the floor of this placement's time, whatever the number of nodes. */
    long busiest = 0, used = 0;
    for (long i = 0; i < o.nodes; i++) {
        long cnt = atomic_load(&bt.per_node[i]);
        used += cnt > 0;
        if (cnt > busiest)
            busiest = cnt;
    }
    double floor_s = (double)busiest * (double)o.hold_ms / 1000.0;
    printf("bind throughput: placement: %ld of %ld nodes used, the busiest took %ld pods: "
           "%ld x hold = %.2f s is this placement's floor; %.1f %% of it\n",
           used, o.nodes, busiest, busiest, floor_s, secs > 0 ? 100.0 * floor_s / secs : 0.0);
    free(bt.per_node);
    if (bt.first_error[0])
        printf("bind throughput: first error: %s\n", bt.first_error);
    print_load("after bind throughput");
    printf("bench-bind pods=%ld nodes=%ld hold_ms=%ld depth=%ld bound=%ld refused=%ld "
           "failed=%ld busiest=%ld nodes_used=%ld pods_per_s=%.1f service_cpu_ms_per_pod=%.2f "
           "api_cpu_ms_per_pod=%.2f process_cpu_ms_per_pod=%.2f\n",
           o.bind_pods, o.nodes, o.hold_ms, o.queue_depth, ok, refused, atomic_load(&bt.bad),
           busiest, used, rate, svc_cpu * per, api_cpu * per, cpu * per);
    for (long i = 0; i < o.nodes; i++)
        free(names[i]);
    for (long j = 0; j < o.bind_pods; j++)
        free(limits[j]);
    free(limits);
    free(plugins);
    free(names);
    free(cl);
    vs_kube_free(k);
    vs_service_stop(svc);
    close(api_ctl);
    int st;
    waitpid(api_pid, &st, 0);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return ok + refused == o.bind_pods && atomic_load(&bt.bad) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------ --compare */

/* `--compare REF`: runs this binary and the reference binary REF alternately (this/REF, then
 * REF/this, ...) with the same flags, each as a child of this process, reads the summary line
 * (the last stdout line starting with "bench") of every run and prints each figure's median for
 * both and their ratio, with the children's CPU (user + system) and wall time beside them. It
 * reports; it asserts nothing. */

#define CMP_MAX_FIGS 64
#define CMP_MAX_RUNS 32

struct cmp_run {
    size_t n;
    char key[CMP_MAX_FIGS][48];
    double v[CMP_MAX_FIGS];
};

/* Runs bin with args (stdout to a pipe, stderr to /dev/null); the summary's figures plus
 * run_cpu_s and run_wall_s into *r. False when it could not run or printed no summary. */
static bool cmp_child(const char *bin, char **args, struct cmp_run *r, char *line, size_t len)
{
    int fd[2];
    if (pipe(fd) != 0)
        return false;
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        FILE *null = freopen("/dev/null", "w", stderr);
        (void)null;
        args[0] = (char *)bin;
        execv(bin, args);
        _exit(127);
    }
    close(fd[1]);
    FILE *in = fdopen(fd[0], "r");
    char buf[4096];
    line[0] = '\0';
    while (in && fgets(buf, sizeof(buf), in))
        if (strncmp(buf, "bench", 5) == 0 && (buf[5] == ' ' || buf[5] == '-'))
            snprintf(line, len, "%s", buf);
    if (in)
        fclose(in);
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) != pid)
        return false;
    double wall = now_s() - t0;
    line[strcspn(line, "\n")] = '\0';
    if (!line[0])
        return false;
    r->n = 0;
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", line);
    char *save = NULL;
    for (char *tok = strtok_r(tmp, " ", &save); tok && r->n + 2 < CMP_MAX_FIGS;
         tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq - tok >= (long)sizeof(r->key[0]))
            continue;
        char *end;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end)
            continue;
        snprintf(r->key[r->n], sizeof(r->key[0]), "%.*s", (int)(eq - tok), tok);
        r->v[r->n++] = v;
    }
    snprintf(r->key[r->n], sizeof(r->key[0]), "run_cpu_s");
    r->v[r->n++] = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    snprintf(r->key[r->n], sizeof(r->key[0]), "run_wall_s");
    r->v[r->n++] = wall;
    return true;
}

/* Median of key over runs (NAN when no run has it). */
static double cmp_median(const struct cmp_run *runs, size_t n, const char *key)
{
    double v[CMP_MAX_RUNS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i].n; j++)
            if (strcmp(runs[i].key[j], key) == 0)
                v[k++] = runs[i].v[j];
    if (!k)
        return NAN;
    qsort(v, k, sizeof(double), dbl_cmp);
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* Which way is better for a figure, from its name: -1 lower, +1 higher, 0 a setting. */
static int cmp_sense(const char *key)
{
    size_t l = strlen(key);
#define ENDS(s) (l >= sizeof(s) - 1 && strcmp(key + l - (sizeof(s) - 1), s) == 0)
    if (ENDS("_per_s") || ENDS("_share"))
        return 1;
    if (ENDS("_us") || ENDS("_ms") || ENDS("_s") || ENDS("_mib") || ENDS("_per_pod"))
        return -1;
#undef ENDS
    return 0;
}

static int run_compare(int argc, char **argv, const char *ref, long runs)
{
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sl <= 0) {
        fprintf(stderr, "vgpu-sched-bench: cannot read /proc/self/exe\n");
        return 1;
    }
    self[sl] = '\0';
    if (access(ref, X_OK) != 0) {
        fprintf(stderr, "vgpu-sched-bench: --compare %s: not an executable file\n", ref);
        return 2;
    }
    /* The children's flags: ours without --compare and --compare-runs. */
    char **args = xcalloc((size_t)argc + 1, sizeof(char *));
    int na = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--compare") == 0 || strcmp(argv[i], "--compare-runs") == 0) {
            i++;
            continue;
        }
        args[na++] = argv[i];
    }
    args[na] = NULL;
    static struct cmp_run mine[CMP_MAX_RUNS], theirs[CMP_MAX_RUNS];
    size_t nm = 0, nt = 0;
    print_load("before the comparison");
    for (long r = 0; r < runs; r++) {
        for (int k = 0; k < 2; k++) {
            bool ours = (k == 0) == (r % 2 == 0);
            const char *bin = ours ? self : ref;
            char line[4096];
            struct cmp_run *slot = ours ? &mine[nm] : &theirs[nt];
            if (!cmp_child(bin, args, slot, line, sizeof(line))) {
                fprintf(stderr, "vgpu-sched-bench: --compare: %s printed no summary line\n", bin);
                free(args);
                return 1;
            }
            printf("compare: run %ld/%ld %s: %s (cpu %.1f s, wall %.1f s)\n", r + 1, runs,
                   ours ? "this" : "ref ", line, slot->v[slot->n - 2], slot->v[slot->n - 1]);
            ours ? nm++ : nt++;
        }
    }
    print_load("after the comparison");
    printf("compare: this = %s\ncompare: ref  = %s\n", self, ref);
    printf("compare: %-26s %14s %14s %10s\n", "figure (median)", "this", "ref", "this/ref");
    for (size_t j = 0; j < mine[0].n; j++) {
        const char *key = mine[0].key[j];
        double a = cmp_median(mine, nm, key), b = cmp_median(theirs, nt, key);
        int sense = cmp_sense(key);
        char ratio[64] = "";
        if (!isnan(b) && b != 0 && sense != 0)
            snprintf(ratio, sizeof(ratio), "%10.2f  (%s is better)", a / b,
                     sense < 0 ? "lower" : "higher");
        else if (!isnan(b) && sense == 0 && a != b)
            snprintf(ratio, sizeof(ratio), "%10s  (differs)", "");
        char bs[32];
        if (isnan(b))
            snprintf(bs, sizeof(bs), "%14s", "-");
        else
            snprintf(bs, sizeof(bs), "%14.1f", b);
        printf("compare: %-26s %14.1f %s %s\n", key, a, bs, ratio);
    }
    free(args);
    return 0;
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vgpu-sched-bench [--nodes N] [--cards C] [--pods P] [--gpu-share F]\n"
            "                        [--iters N] [--https-iters N] [--skip-https] [--seed S]\n"
            "                        [--policy P] [--filter-only] [--mixed-vendors]\n"
            "       vgpu-sched-bench --dashboard [--dash-seconds 60] [--nodes N] ...\n"
            "       vgpu-sched-bench --bind-throughput [--bind-nodes 50] [--bind-pods 1000]\n"
            "                        [--bind-clients 64] [--hold-ms 20] [--bind-queue-depth 1]\n"
            "                        [--bind-mix uniform|large|small] [--card-mib M] [--cards C]\n"
            "       vgpu-sched-bench --compare REF_BENCH [--compare-runs 3] [any flags above]\n");
}

static bool parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.nodes = 5000,
                       .cards = 8,
                       .pods = 150000,
                       .gpu_share = 0.3,
                       .iters = 2000,
                       .https_iters = 500,
                       .seed = 42,
                       .bind_nodes = 50,
                       .bind_pods = 1000,
                       .bind_clients = 64,
                       .hold_ms = 20,
                       .queue_depth = 1,
                       .dash_seconds = 60,
                       .compare_runs = 3,
                       .bind_mix = "uniform"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;
        long seed = 0;
        if (strcmp(a, "--skip-https") == 0) {
            o->skip_https = true;
            continue;
        } else if (strcmp(a, "--filter-only") == 0) {
            o->filter_only = o->skip_https = true;
            continue;
        } else if (strcmp(a, "--mixed-vendors") == 0) {
            o->mixed = true;
            continue;
        } else if (strcmp(a, "--bind-throughput") == 0) {
            o->bind_throughput = true;
            continue;
        } else if (strcmp(a, "--dashboard") == 0) {
            o->dashboard = o->filter_only = o->skip_https = true;
            continue;
        } else if (strcmp(a, "--dash-seconds") == 0) {
            ok = ok && parse_long(v, 1, 3600, &o->dash_seconds);
        } else if (strcmp(a, "--bind-nodes") == 0) {
            ok = ok && parse_long(v, 1, 100000, &o->bind_nodes);
        } else if (strcmp(a, "--bind-pods") == 0) {
            ok = ok && parse_long(v, 1, 1000000, &o->bind_pods);
        } else if (strcmp(a, "--bind-clients") == 0) {
            ok = ok && parse_long(v, 1, 4096, &o->bind_clients);
        } else if (strcmp(a, "--bind-queue-depth") == 0) {
            ok = ok && parse_long(v, 0, 100000, &o->queue_depth);
        } else if (strcmp(a, "--hold-ms") == 0) {
            ok = ok && parse_long(v, 1, 600000, &o->hold_ms);
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--nodes") == 0) {
            ok = ok && parse_long(v, 1, 1000000, &o->nodes);
        } else if (strcmp(a, "--cards") == 0) {
            ok = ok && parse_long(v, 1, 64, &o->cards);
        } else if (strcmp(a, "--pods") == 0) {
            ok = ok && parse_long(v, 0, 100000000, &o->pods);
        } else if (strcmp(a, "--iters") == 0) {
            ok = ok && parse_long(v, 1, 100000000, &o->iters);
        } else if (strcmp(a, "--https-iters") == 0) {
            ok = ok && parse_long(v, 1, 100000000, &o->https_iters);
        } else if (strcmp(a, "--seed") == 0) {
            ok = ok && parse_long(v, 0, LONG_MAX, &seed);
            o->seed = (uint64_t)seed;
        } else if (strcmp(a, "--policy") == 0) {
            o->policy = v;
        } else if (strcmp(a, "--bind-mix") == 0) {
            o->bind_mix = v;
            ok = ok &&
                 (strcmp(v, "uniform") == 0 || strcmp(v, "large") == 0 || strcmp(v, "small") == 0);
        } else if (strcmp(a, "--card-mib") == 0) {
            ok = ok && parse_long(v, 1024, 1 << 20, &o->card_mib);
        } else if (strcmp(a, "--compare") == 0) {
            o->compare = v;
        } else if (strcmp(a, "--compare-runs") == 0) {
            ok = ok && parse_long(v, 1, CMP_MAX_RUNS, &o->compare_runs);
        } else if (strcmp(a, "--gpu-share") == 0) {
            char *end;
            o->gpu_share = ok ? strtod(v, &end) : -1;
            ok = ok && end != v && !*end && o->gpu_share >= 0 && o->gpu_share <= 1;
        } else {
            fprintf(stderr, "vgpu-sched-bench: unknown flag %s\n", a);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "vgpu-sched-bench: %s needs a valid value\n", a);
            return 2;
        }
        i++;
    }
    return 0;
}

static void print_load(const char *when)
{
    FILE *f = fopen("/proc/loadavg", "r");
    char line[128] = "?";
    if (f) {
        if (!fgets(line, sizeof(line), f))
            strcpy(line, "?");
        fclose(f);
    }
    line[strcspn(line, "\n")] = '\0';
    printf("load %s: %s (nproc %ld)\n", when, line, sysconf(_SC_NPROCESSORS_ONLN));
}

static void print_lat(const char *what, const struct lat *l)
{
    printf("%-34s p50=%9.1f us  p99=%9.1f us  max=%9.1f us  (n=%zu)\n", what, pct(l, 0.50),
           pct(l, 0.99), l->n ? l->v[l->n - 1] : 0.0, l->n);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress is visible when redirected to a file */
    if (argc == 5 && strcmp(argv[1], "--conn-client") == 0) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        return conn_client(argv[2], argv[3], argv[4]);
    }
    struct opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    if (o.compare)
        return run_compare(argc, argv, o.compare, o.compare_runs);
    /* Per-request info lines (and the expected 404 patch warnings of the HTTPS Filter pods)
     * would measure stderr, not the scheduler. */
    vs_log_setup(getenv("VS_BENCH_DEBUG") ? VS_LOG_DEBUG : VS_LOG_ERROR, false, 2);
    if (o.bind_throughput) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        rc = run_bind_throughput(&o);
        curl_global_cleanup();
        return rc;
    }
    struct vs_devcfg cfg;
    if (vs_devcfg_init(&cfg))
        die("out of memory");
    printf("vgpu-sched-bench: nodes=%ld cards=%ld pods=%ld gpu_share=%.2f iters=%ld "
           "https_iters=%ld seed=%llu\n",
           o.nodes, o.cards, o.pods, o.gpu_share, o.iters, o.https_iters,
           (unsigned long long)o.seed);
    print_load("at start");

    /* 5. Memory first, in a child forked while this process is still small. */
    struct mem_result mem;
    memset(&mem, 0, sizeof(mem));
    if (!o.filter_only && !measure_memory(&o, &cfg, &mem))
        die("the memory child failed");
    double rss_mib = (double)mem.hwm_kib / 1024.0;
    if (o.filter_only) {
        printf("memory: skipped (--filter-only)\n");
    } else {
        printf("memory: model of %zu nodes + %zu tracked pods: VmHWM %.1f MiB, VmRSS %.1f MiB "
               "(process baseline %.1f MiB)\n",
               mem.model_nodes, mem.model_pods, rss_mib, (double)mem.rss_kib / 1024.0,
               (double)mem.base_kib / 1024.0);
        if (o.policy)
            printf("memory: one Filter over all nodes with policy %s left %.1f MiB (%.0f B/node)\n",
                   o.policy, (double)mem.heap_filter_bytes / 1048576.0,
                   (double)mem.heap_filter_bytes / (double)o.nodes);
        /* tracked pods: what malloc handed out after the nodes, and the model's slab */
        double pods_bytes = (double)(mem.heap_bytes - mem.heap_nodes_bytes - mem.heap_filter_bytes +
                                     mem.slab_bytes);
        printf("memory: heap in use %.1f MiB + slab %.1f MiB: nodes %.1f MiB (%.0f B/node), "
               "tracked pods %.1f MiB (%.0f B/pod)\n",
               (double)mem.heap_bytes / 1048576.0, (double)mem.slab_bytes / 1048576.0,
               (double)mem.heap_nodes_bytes / 1048576.0,
               mem.model_nodes ? (double)mem.heap_nodes_bytes / (double)mem.model_nodes : 0.0,
               pods_bytes / 1048576.0, mem.model_pods ? pods_bytes / (double)mem.model_pods : 0.0);
    }

    /* 4. Ingest: the pages of the initial lists, as the informer receives them. */
    struct gen g;
    gen_init(&g, &o);
    struct pages np, pp;
    double tg = now_s();
    gen_pages(&g, true, o.nodes, PAGE_ITEMS, &np);
    gen_pages(&g, false, o.pods, PAGE_ITEMS, &pp);
    printf("generated: %ld nodes (%.1f MiB JSON), %ld pods (%.1f MiB JSON, %.0f B/pod), %ld with "
           "GPUs holding %ld devices, in %.1f s\n",
           o.nodes, (double)np.bytes / 1048576.0, o.pods, (double)pp.bytes / 1048576.0,
           o.pods ? (double)pp.bytes / (double)o.pods : 0.0, g.gpu_pods, g.gpu_devices,
           now_s() - tg);
    struct vs_store *store = store_new(&cfg);
    struct ingest_time nt = {0}, pt = {0};
    for (size_t i = 0; i < np.n; i++)
        ingest_page(store, "Node", np.text[i], np.len[i], &nt);
    double ic0 = thread_cpu_s();
    for (size_t i = 0; i < pp.n; i++)
        ingest_pod_page_informer(store, pp.text[i], pp.len[i], &pt);
    double ingest_cpu = thread_cpu_s() - ic0;
    double pod_s = pt.parse + pt.apply;
    double ingest_rate = pod_s > 0 ? (double)o.pods / pod_s : 0;
    double ingest_cpu_rate = ingest_cpu > 0 ? (double)o.pods / ingest_cpu : 0;
    printf("ingest nodes: %ld in %.3f s (parse %.3f s, apply %.3f s), %.0f nodes/s\n", o.nodes,
           nt.parse + nt.apply, nt.parse, nt.apply,
           nt.parse + nt.apply > 0 ? (double)o.nodes / (nt.parse + nt.apply) : 0.0);
    printf("ingest pods (pages of %d, informer path): %ld in %.3f s (scan + decode of GPU pods "
           "%.3f s, store apply %.3f s), %.0f pods/s, %.1f MiB/s; thread CPU %.3f s, %.0f pods/s\n",
           PAGE_ITEMS, o.pods, pod_s, pt.parse, pt.apply, ingest_rate,
           pod_s > 0 ? (double)pp.bytes / 1048576.0 / pod_s : 0.0, ingest_cpu, ingest_cpu_rate);
    if (!o.filter_only) {
        /* For comparison: every item decoded by jansson (the informer before the scan). */
        struct vs_store *s2 = store_new(&cfg);
        struct ingest_time t2 = {0};
        for (size_t i = 0; i < pp.n; i++)
            ingest_page(s2, "Pod", pp.text[i], pp.len[i], &t2);
        printf("ingest pods (pages of %d, every item decoded): %.3f s (jansson parse+free %.3f s, "
               "store apply %.3f s), %.0f pods/s\n",
               PAGE_ITEMS, t2.parse + t2.apply, t2.parse, t2.apply,
               t2.parse + t2.apply > 0 ? (double)o.pods / (t2.parse + t2.apply) : 0.0);
        vs_store_free(s2);
    }
    check_ledger(&g, store);
    pages_cleanup(&np);
    pages_cleanup(&pp);
    gen_cleanup(&g);

    /* The same pod list as one PodList text (what `kubectl get pods -A -o json` prints). Its
     * jansson tree takes ~13 KiB per pod, so very large lists skip this informative line. */
    if (o.filter_only) {
        printf("ingest pods (one PodList): skipped (--filter-only)\n");
    } else if (o.pods > SINGLE_LIST_MAX) {
        printf("ingest pods (one PodList): skipped above %d pods\n", SINGLE_LIST_MAX);
    } else {
        struct gen g1; /* node generation draws no random numbers: same pods as above */
        gen_init(&g1, &o);
        size_t len;
        char *text = gen_page(&g1, false, 0, o.pods, &len);
        struct vs_store *s1 = store_new(&cfg);
        struct ingest_time t1 = {0};
        ingest_page(s1, "Pod", text, len, &t1);
        printf("ingest pods (one %0.1f MiB PodList): %.3f s (parse+free %.3f s, apply %.3f s), "
               "%.0f pods/s\n",
               (double)len / 1048576.0, t1.parse + t1.apply, t1.parse, t1.apply,
               t1.parse + t1.apply > 0 ? (double)o.pods / (t1.parse + t1.apply) : 0.0);
        vs_store_free(s1);
        free(text);
        gen_cleanup(&g1);
    }

    /* 1. Filter in-process on the ingested store. */
    char **names = node_names(o.nodes);
    if (o.dashboard) {
        run_dashboard(&o, store, names, &cfg);
        vs_store_free(store);
        free_names(names, o.nodes);
        print_load("at end");
        vs_devcfg_cleanup(&cfg);
        return 0;
    }
    struct vs_pod pod;
    bench_pod(&pod);
    struct inproc f500, f5000;
    filter_inproc(store, &cfg, &pod, names, &o, 500, &f500);
    filter_inproc(store, &cfg, &pod, names, &o, 5000, &f5000);
    vs_pod_cleanup(&pod);
    /* With --mixed-vendors, the same share of a Hygon card: an eighth of the candidates fit. */
    struct inproc fdcu = {0};
    if (o.mixed) {
        bench_pod_limits(&pod, ",\"hygon.com/dcunum\":\"1\",\"hygon.com/dcumem\":\"" FILTER_MEM
                               "\",\"hygon.com/dcucores\":\"" FILTER_CORES "\"");
        filter_inproc(store, &cfg, &pod, names, &o, 500, &fdcu);
        vs_pod_cleanup(&pod);
    }
    struct metrics_cost mcost[2];
    metrics_renders(store, mcost);
    struct inproc scraped[2];
    long n_scrapes[2];
    for (int way = 0; way < 2; way++)
        filter_scraped(store, &cfg, names, &o, way == 1, &scraped[way], &n_scrapes[way]);
    vs_store_free(store);
    char label[64];
    snprintf(label, sizeof(label), "filter in-process %zu cand",
             o.nodes < 500 ? (size_t)o.nodes : (size_t)500);
    print_lat(label, &f500.lat);
    print_lat("  thread CPU time of the same calls", &f500.cpu);
    printf("  (filter+commit; %ld placed, %ld unschedulable; placements digest %016llx)\n",
           f500.fits, f500.misses, (unsigned long long)f500.digest);
    snprintf(label, sizeof(label), "filter in-process %zu cand",
             o.nodes < 5000 ? (size_t)o.nodes : (size_t)5000);
    print_lat(label, &f5000.lat);
    print_lat("  thread CPU time of the same calls", &f5000.cpu);
    printf("  (filter+commit; %ld placed, %ld unschedulable; placements digest %016llx)\n",
           f5000.fits, f5000.misses, (unsigned long long)f5000.digest);
    if (o.mixed) {
        snprintf(label, sizeof(label), "filter in-process %zu cand, DCU pod",
                 o.nodes < 500 ? (size_t)o.nodes : (size_t)500);
        print_lat(label, &fdcu.lat);
        print_lat("  thread CPU time of the same calls", &fdcu.cpu);
        printf("  (filter+commit; %ld placed, %ld unschedulable; placements digest %016llx)\n",
               fdcu.fits, fdcu.misses, (unsigned long long)fdcu.digest);
    }

    for (int way = 0; way < 2; way++) {
        printf("%-34s p50=%9.1f us  p99=%9.1f us  max=%9.1f us  (n=%zu, %ld scrapes)\n",
               way ? "filter 500 cand, scraped (whole text under the lock)"
                   : "filter 500 cand, scraped (snapshot under the lock)",
               pct(&scraped[way].lat, 0.5), pct(&scraped[way].lat, 0.99),
               scraped[way].lat.n ? scraped[way].lat.v[scraped[way].lat.n - 1] : 0.0,
               scraped[way].lat.n, n_scrapes[way]);
        free(scraped[way].lat.v);
        free(scraped[way].cpu.v);
    }
    for (int legacy = 0; legacy < 2; legacy++)
        printf("metrics scrape%s: store lock held %.1f ms (snapshot of %.1f MiB), text streamed "
               "in %.1f ms, %.1f MiB (digest %016llx); fastest of %d\n",
               legacy ? " with the legacy families" : "", mcost[legacy].lock_ms,
               (double)mcost[legacy].snap_bytes / 1048576.0, mcost[legacy].stream_ms,
               (double)mcost[legacy].bytes / 1048576.0, (unsigned long long)mcost[legacy].digest,
               METRICS_RENDERS);

    /* 2 and 3. HTTPS against the real service in embedded mode. */
    struct https h;
    memset(&h, 0, sizeof(h));
    if (!o.skip_https) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        run_https(&o, names, &h);
        curl_global_cleanup();
        printf("embedded service: cluster file %.1f MiB loaded in %.1f s, informers synced in "
               "%.1f s\n",
               (double)h.file_bytes / 1048576.0, h.load_s, h.sync_s);
        snprintf(label, sizeof(label), "filter HTTPS %zu cand",
                 o.nodes < 5000 ? (size_t)o.nodes : (size_t)5000);
        print_lat(label, &h.filter);
        printf("  (%ld answered with a node, %ld without)\n", h.filter_ok, h.filter_bad);
        printf("  service's own Filter handler (its histogram): %s\n", h.server_side);
        printf("  CPU per call: %.0f us for the process (client, service, embedded API "
               "server), %.0f us without the client's thread\n",
               https_cpu_us(&h, false), https_cpu_us(&h, true));
        print_lat("bind HTTPS", &h.bind);
        printf("  (%ld bound, each on its own node; %ld failed; %ld found no node)\n", h.bind_ok,
               h.bind_bad, h.bind_filter_bad);
        printf("new HTTPS connection (handshake, GET /healthz, close): %.0f us of the service's "
               "CPU each (n=%ld, %ld failed)\n",
               h.conn_server_cpu_us, h.conn_n, h.conn_bad);
        if (h.first_error[0])
            printf("  first error: %s\n", h.first_error);
    } else {
        printf("HTTPS phases skipped (--skip-https): https5000_p99_us=0 below\n");
    }
    free_names(names, o.nodes);
    print_load("at end");
    vs_devcfg_cleanup(&cfg);

    printf(
        "bench nodes=%ld cards=%ld pods=%ld filter500_p99_us=%.1f filter5000_p99_us=%.1f "
        "https5000_p99_us=%.1f ingest_pods_per_s=%.0f rss_mib=%.1f filter500_cpu_p99_us=%.1f "
        "filter5000_cpu_p99_us=%.1f https5000_p50_us=%.1f https5000_cpu_us=%.0f "
        "https5000_server_cpu_us=%.0f ingest_cpu_pods_per_s=%.0f https_conn_server_cpu_us=%.0f\n",
        o.nodes, o.cards, o.pods, pct(&f500.lat, 0.99), pct(&f5000.lat, 0.99), pct(&h.filter, 0.99),
        ingest_rate, rss_mib, pct(&f500.cpu, 0.99), pct(&f5000.cpu, 0.99), pct(&h.filter, 0.50),
        https_cpu_us(&h, false), https_cpu_us(&h, true), ingest_cpu_rate, h.conn_server_cpu_us);
    free(f500.lat.v);
    free(f5000.lat.v);
    free(f500.cpu.v);
    free(f5000.cpu.v);
    free(fdcu.lat.v);
    free(fdcu.cpu.v);
    free(h.filter.v);
    free(h.bind.v);
    return 0;
}
