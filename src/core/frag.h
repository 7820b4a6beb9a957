/* frag: the fragmentation measure behind the node and card policies `fragmentation`
 * (policies/fragmentation.c), which place a pod where the expected fragmentation of the cluster
 * grows least (after FGD, Weng et al., USENIX ATC '23).
 *
 * The workload is the request shapes the scheduler has seen (vs_frag_stats: every pod Filter
 * evaluated, weighted by how often its shape came), never the pods still to come. A node's
 * fragmentation under a shape s is the idle GPU capacity s cannot use there: all of the node's
 * idle capacity when s cannot be placed on the node at all (too few cards fit one instance of
 * it, or the node lacks the cpu or memory s asks for), else the idle capacity of the cards that
 * cannot host one instance of s. The node's fragmentation is the weighted mean over the most
 * frequent shapes. A card's idle capacity counts its two dimensions apart: half its free share
 * of cores plus half its free share of memory, so a card whose memory is full but whose cores
 * are idle strands half a card, and cards of different sizes count as one card each (the unit
 * the benchmark's "allocated GPUs" uses). Unhealthy or cordoned cards count nothing.
 *
 * A second term (vs_frag_strand_growth, ours): the idle capacity a node's free cpu cannot feed
 * at the workload's cpu per card; the node policy adds its growth, weighted, for GPU pods that
 * name no card type.
 *
 * The measure is pure: the caller hands in the cards' state (vs_frag_card) and the node's free
 * cpu and memory. */
#ifndef VS_FRAG_H
#define VS_FRAG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "annot.h"
#include "err.h"

#ifndef VS_FRAG_K
#define VS_FRAG_K 16 /* shapes the measure uses at most (the most frequent), <= 32 */
#endif
#define VS_FRAG_MAX_SHAPES 4096 /* distinct shapes remembered; later new ones are not */
#define VS_FRAG_MAX_CARDS  64   /* nodes with more cards are scored without the measure */
#define VS_FRAG_MAX_GROUPS 64   /* distinct type lists whose demand is kept (type pressure) */
/* Growths (and idle capacities) closer than this are equal: the policy's tie, everywhere the
 * measure ranks nodes or cards (Filter, simulate --cpu-pods, /prioritize). */
#define VS_FRAG_TIE 1e-9
/* Weight of the cpu-stranding term against the measure (both in cards); see
 * vs_frag_strand_growth and docs/benchmarks.md "The cpu-stranding term" for how it was chosen. */
#define VS_FRAG_STRAND_W 0.1
/* Weight of the type-pressure term (ours; vs_frag_type_pressure) against the measure, for GPU
 * pods that name no card type; docs/benchmarks.md "The type-pressure term" for how it was
 * chosen. */
#define VS_FRAG_TYPE_W 0.03

/* What one pod asks of one node: `nums` cards each with `cores` % of the cores and either
 * `mempct` % of the memory or `memmib` MiB (mempct < 0), plus node cpu and memory. */
struct vs_frag_req {
    int32_t nums;
    int32_t cores;  /* clamped to 100 as Fit does */
    int32_t mempct; /* -1: memmib is absolute */
    int32_t memmib;
    int64_t cpu_milli; /* 0 = none asked */
    int64_t mem_bytes;
};

/* A request shape with its GPU type constraint (nvidia.com/use-gputype, nouse-gputype). */
struct vs_frag_shape {
    struct vs_frag_req r;
    char *use_raw; /* the annotation values as given ("" = none) */
    char *nouse_raw;
    struct vs_strlist use, nouse;
    uint64_t count;
};

/* The shapes seen so far, most frequent first. Thread-safe. */
struct vs_frag_stats;

struct vs_frag_stats *vs_frag_stats_new(void); /* NULL: out of memory */
void vs_frag_stats_free(struct vs_frag_stats *st);
/* Counts one pod of shape r (use/nouse: its type annotations, NULL = none). */
enum vs_err vs_frag_stats_add(struct vs_frag_stats *st, const struct vs_frag_req *r,
                              const char *use, const char *nouse);

/* Whether any pod seen named card types (then vs_frag_type_pressure can be > 0). */
bool vs_frag_stats_typed(struct vs_frag_stats *st);

/* The type pressure (ours): for each of n card types (types[t], caps[t] cards of it in the
 * cluster), the share of that type's cards the pods naming types would claim if the workload
 * seen so far filled the cluster: each type list's GPU capacity asked, spread over the types
 * it accepts in proportion to their cards, scaled by all cards over all GPU capacity asked,
 * over the type's cards; at most 1. n <= VS_FRAG_MAX_TYPES (more: all 0). Which types each
 * list accepts is kept in st between calls with the same types. */
#define VS_FRAG_MAX_TYPES 32 /* card types the type pressure tells apart (bits of a uint32_t) */
void vs_frag_type_pressure(struct vs_frag_stats *st, const char *const *types, const double *caps,
                           size_t n, double *out);

/* One card as the measure sees it. `accept` has bit s set when shape s of the context may use
 * the card's type (vs_frag_accept). */
struct vs_frag_card {
    int32_t count, devmem, devcore;
    int64_t used, usedmem, usedcores;
    uint32_t accept;
    bool usable; /* healthy and not cordoned */
};

/* Two doubles side by side (a GCC/Clang vector). */
typedef double vs_frag_v2d __attribute__((vector_size(16)));

/* A Filter's view of the workload: the most frequent shapes with normalized weights. The
 * shapes' type lists are borrowed from the stats (entries are never freed before the stats). */
struct vs_frag_ctx {
    size_t k;
    struct {
        struct vs_frag_req r;
        const struct vs_strlist *use, *nouse;
    } s[VS_FRAG_K];
    /* The shapes' weights (set by vs_frag_ctx_init/_set/_weights), apart so a weighted sum
     * reads them in a row, and each twice side by side (0 past k) for two sums at once. */
    double w[VS_FRAG_K];
    vs_frag_v2d w2[VS_FRAG_K];
    uint32_t typed; /* shapes with a type constraint (bit s) */
    /* Each shape without its weight (request and type lists) hashed, and the shapes in order
     * (k, sh[]) hashed: what a node's memo (vs_frag_memo) was computed against. sig is never
     * 0. A memo made for other shapes is carried over shape by shape (sh[]). */
    uint64_t sh[VS_FRAG_K];
    uint64_t sig;
    /* The shapes' card checks laid out for fitmask(): cores (clamped), memory as a percentage
     * (0 when absolute) and in MiB (0 when a percentage); shapes asking 100 / 0 cores. */
    int64_t f_cores[VS_FRAG_K], f_pct[VS_FRAG_K], f_mib[VS_FRAG_K];
    uint32_t c100, c0;
    /* card type -> accept mask, for the types met in this Filter */
    const char *tc_type[16];
    uint32_t tc_mask[16];
    size_t tc_n;
    /* The workload's cpu (milli) per card of GPU capacity asked (vs_frag_stats: all GPU pods
     * seen, cpu over vs_frag_idle units); 0: unknown, vs_frag_strand is then 0. */
    double cpu_per_card;
};

/* Snapshot of the top shapes of st (the VS_FRAG_K most frequent); an empty stats gives k = 0
 * (then every fragmentation is 0 and the policies fall back to their tie-breaks). */
void vs_frag_ctx_init(struct vs_frag_ctx *x, struct vs_frag_stats *st);
/* A context over explicit shapes (tests): n <= VS_FRAG_K, weights normalized here. */
void vs_frag_ctx_set(struct vs_frag_ctx *x, const struct vs_frag_req *rs, const double *weights,
                     size_t n);

/* New weights for x's shapes (x->k of them, normalized here), the shapes kept. */
void vs_frag_ctx_weights(struct vs_frag_ctx *x, const double *weights);

/* Which shapes may use a card of this type (bit s). */
uint32_t vs_frag_accept(struct vs_frag_ctx *x, const char *type);

/* Whether one instance of r fits card c alone (the per-card checks of Fit). */
bool vs_frag_card_fits(const struct vs_frag_card *c, const struct vs_frag_req *r);

/* Idle capacity of a card in cards: (free cores / cores + free memory / memory) / 2. */
double vs_frag_idle(const struct vs_frag_card *c);

/* The node's fragmentation in cards under the context's workload. cpu_free / mem_free: what
 * the node has left (INT64_MAX when unknown). */
double vs_frag_node(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                    int64_t cpu_free, int64_t mem_free);

/* Chooses r->nums cards for r among those with bit i of `ok` set (i < n <= VS_FRAG_MAX_CARDS),
 * one at a time, each where the node's fragmentation grows least (ties: the card with the
 * least idle capacity, then the lower index). Writes the card indices to picks (r->nums of
 * them, may repeat a card only if it fits again) and returns the growth of the node's
 * fragmentation; returns NAN when fewer than r->nums cards can be found. */
double vs_frag_pick(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                    int64_t cpu_free, int64_t mem_free, const struct vs_frag_req *r, uint64_t ok,
                    size_t *picks);

/* A node's memo: the measure's per-shape sums over the node's own cards, computed once per
 * (node generation, shape set) and reused by every Filter until either changes. Owned by the
 * node (vs_node.frag_memo), a plain block: free with free(). Filters evaluate under the
 * model's read lock, so a memo is taken with a try-lock; a Filter that finds it busy computes
 * the sums itself. */
struct vs_frag_memo;

/* vs_frag_pick for a node's own cards (the same result, bit for bit), with the sums taken from
 * or stored in *slot when they are for (gen, x->sig). The memo is created on first use (NULL
 * slot; the node frees it). `gen` must change whenever any card or the node's cpu/memory does. */
double vs_frag_pick_memo(const struct vs_frag_ctx *x, struct vs_frag_memo *_Atomic *slot,
                         uint64_t gen, const struct vs_frag_card *cards, size_t n, int64_t cpu_free,
                         int64_t mem_free, const struct vs_frag_req *r, uint64_t ok,
                         uint64_t req_sig, size_t *picks);

/* The node's recorded one-card pick replayed under x's weights, without the cards: true (with
 * *d and picks[0] as vs_frag_pick_memo would give them) when the memo holds a pick for
 * (gen, x's shapes, n cards) made for a request with the same req_sig and cpu/memory effect.
 * req_sig is the caller's name for everything that decided `ok` besides the cards (the
 * request's card part and the pod's card selectors): equal req_sig and gen must mean equal
 * `ok`. False: call vs_frag_pick_memo. */
bool vs_frag_memo_replay(const struct vs_frag_ctx *x, struct vs_frag_memo *_Atomic *slot,
                         uint64_t gen, size_t n, const struct vs_frag_req *r, uint64_t req_sig,
                         double *d, size_t *picks);

/* Asks for the start of the node's memo (what vs_frag_memo_replay reads), a few nodes before
 * the Filter gets to it: with thousands of nodes the memos are not in the cache. */
void vs_frag_memo_prefetch(struct vs_frag_memo *_Atomic *slot);

/* Growth of the node's fragmentation when a pod asking no GPU takes `cpu` (milli) and `mem`
 * (bytes) of the node's free cpu and memory (cpu_free, mem_free as for vs_frag_node). The cards
 * do not change, so only the shapes the node hosted before and no longer can (their cpu or
 * memory does not fit any more) change their term, from the idle capacity of the cards too
 * small for them to all the node's idle capacity: the growth is the weighted sum of those
 * differences, 0 when no shape is lost (always >= 0). *idle (may be NULL) receives the node's idle
 * capacity in cards (vs_frag_idle summed over the cards, 0 past VS_FRAG_MAX_CARDS). */
double vs_frag_delta_cpu(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                         int64_t cpu_free, int64_t mem_free, int64_t cpu, int64_t mem,
                         double *idle);

/* vs_frag_delta_cpu for a node's own cards (the same result, bit for bit), with the sums taken
 * from or stored in the node's memo as vs_frag_pick_memo does. */
double vs_frag_delta_cpu_memo(const struct vs_frag_ctx *x, struct vs_frag_memo *_Atomic *slot,
                              uint64_t gen, const struct vs_frag_card *cards, size_t n,
                              int64_t cpu_free, int64_t mem_free, int64_t cpu, int64_t mem,
                              double *idle);

/* The idle capacity (cards) a node's free cpu cannot feed at the workload's cpu per card:
 * max(0, idle - cpu_free / x->cpu_per_card); 0 when either is unknown (cpu_free INT64_MAX,
 * cpu_per_card 0). */
double vs_frag_strand(const struct vs_frag_ctx *x, double idle, int64_t cpu_free);

/* The cpu-stranding term of the policy (ours, not FGD's): how much vs_frag_strand grows when a
 * pod taking `cards` of GPU capacity and `cpu` (milli) goes on a node with `idle` capacity and
 * cpu_free left, times VS_FRAG_STRAND_W; never below 0 (a pod that eases a node's stranding
 * is not drawn to it: that pulled pods onto the cards typed pods needed). */
double vs_frag_strand_growth(const struct vs_frag_ctx *x, double idle, int64_t cpu_free,
                             double cards, int64_t cpu);

/* The idle capacity one instance of r takes from a card with devmem MiB and devcore cores
 * (what vs_frag_idle loses, if it fits). */
double vs_frag_req_idle(const struct vs_frag_req *r, int32_t devmem, int32_t devcore);

/* Growth of the node's fragmentation when one instance of r goes on card i. */
double vs_frag_delta_card(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                          int64_t cpu_free, int64_t mem_free, const struct vs_frag_req *r,
                          size_t i);

/* vs_frag_delta_card for every card i that one instance of r fits (vs_frag_card_fits), the sums
 * built once: out[i] (n of them) is the growth, HUGE_VAL where r does not fit. */
void vs_frag_delta_cards(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                         int64_t cpu_free, int64_t mem_free, const struct vs_frag_req *r,
                         double *out);

#endif
