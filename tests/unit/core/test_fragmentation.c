/* test_fragmentation: the fragmentation measure on small cases computed by hand (the numbers
 * in the comments), the workload statistics, and the policy `fragmentation` through Filter. */
#include "builders.h"
#include "frag.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-9

/* A healthy 100-core card of `mem` MiB and 10 slots with the given usage. */
static struct vs_frag_card card(int32_t mem, int64_t used, int64_t usedmem, int64_t usedcores)
{
    struct vs_frag_card c = {.count = 10,
                             .devmem = mem,
                             .devcore = 100,
                             .used = used,
                             .usedmem = usedmem,
                             .usedcores = usedcores,
                             .accept = ~0u,
                             .usable = true};
    return c;
}

static struct vs_frag_req share(int32_t nums, int32_t pct)
{
    struct vs_frag_req r = {.nums = nums, .cores = pct, .mempct = pct};
    return r;
}

Test(frag, idle_counts_cores_and_memory_apart)
{
    /* (70/100 + 8000/16000) / 2 = 0.6 */
    struct vs_frag_card c = card(16000, 1, 8000, 30);
    cr_assert_float_eq(vs_frag_idle(&c), 0.6, EPS);
    /* memory full, cores idle: half a card stranded */
    c = card(16000, 1, 16000, 0);
    cr_assert_float_eq(vs_frag_idle(&c), 0.5, EPS);
    c.usable = false;
    cr_assert_float_eq(vs_frag_idle(&c), 0.0, EPS);
}

Test(frag, card_fits_follows_fit_rules)
{
    struct vs_frag_card c = card(16000, 1, 8000, 30);
    struct vs_frag_req r = share(1, 50);
    cr_assert(vs_frag_card_fits(&c, &r)); /* 70 cores, 8000 MiB free >= 50 %, 8000 */
    r = share(1, 70);
    cr_assert_not(vs_frag_card_fits(&c, &r)); /* 70 % memory = 11200 > 8000 */
    r = share(1, 100);
    struct vs_frag_card e = card(16000, 0, 0, 0);
    cr_assert(vs_frag_card_fits(&e, &r));
    e.used = 1; /* 100 cores on a card in use: exclusive conflict */
    cr_assert_not(vs_frag_card_fits(&e, &r));
    struct vs_frag_req abs = {.nums = 1, .cores = 10, .mempct = -1, .memmib = 9000};
    cr_assert_not(vs_frag_card_fits(&c, &abs));
    abs.memmib = 8000;
    cr_assert(vs_frag_card_fits(&c, &abs));
    c.used = c.count; /* no slot left */
    cr_assert_not(vs_frag_card_fits(&c, &abs));
}

Test(frag, one_shape_node_and_pick)
{
    /* Shape: one card, 50 %. Card A idle (1.0), card B 60 % used (idle 0.4): A hosts the shape,
     * B does not, so the node strands B's 0.4. */
    struct vs_frag_req s = share(1, 50);
    double w = 1;
    struct vs_frag_ctx x;
    vs_frag_ctx_set(&x, &s, &w, 1);
    struct vs_frag_card cs[2] = {card(16000, 0, 0, 0), card(16000, 1, 9600, 60)};
    cr_assert_float_eq(vs_frag_node(&x, cs, 2, INT64_MAX, INT64_MAX), 0.4, EPS);
    /* A 30 % pod: on A the node still strands 0.4 (delta 0); on B it strands B's 0.1 (delta
     * -0.3): B wins. */
    struct vs_frag_req p = share(1, 30);
    cr_assert_float_eq(vs_frag_delta_card(&x, cs, 2, INT64_MAX, INT64_MAX, &p, 0), 0.0, EPS);
    cr_assert_float_eq(vs_frag_delta_card(&x, cs, 2, INT64_MAX, INT64_MAX, &p, 1), -0.3, EPS);
    size_t pick[1];
    double d = vs_frag_pick(&x, cs, 2, INT64_MAX, INT64_MAX, &p, 3, pick);
    cr_assert_float_eq(d, -0.3, EPS);
    cr_assert_eq(pick[0], 1);
    /* B excluded by the caller (Fit refused it): A, delta 0. */
    d = vs_frag_pick(&x, cs, 2, INT64_MAX, INT64_MAX, &p, 1, pick);
    cr_assert_float_eq(d, 0.0, EPS);
    cr_assert_eq(pick[0], 0);
    /* Nothing allowed: NAN. */
    cr_assert(isnan(vs_frag_pick(&x, cs, 2, INT64_MAX, INT64_MAX, &p, 0, pick)));
}

Test(frag, two_shapes_weighted)
{
    /* Shapes: 1 card at 50 % (weight 3), 2 whole cards (weight 1). Card A idle, card B 40 %
     * used (idle 0.6). Shape 1: both cards host it -> 0. Shape 2: only A is whole -> the node
     * cannot host it -> all idle, 1.6. F = 0.75 * 0 + 0.25 * 1.6 = 0.4. */
    struct vs_frag_req s[2] = {share(1, 50), share(2, 100)};
    double w[2] = {3, 1};
    struct vs_frag_ctx x;
    vs_frag_ctx_set(&x, s, w, 2);
    struct vs_frag_card cs[2] = {card(16000, 0, 0, 0), card(16000, 1, 6400, 40)};
    cr_assert_float_eq(vs_frag_node(&x, cs, 2, INT64_MAX, INT64_MAX), 0.4, EPS);
    /* A 50 % pod on A: shape 1 still fits both (0), shape 2 strands 0.5 + 0.6 = 1.1:
     * F = 0.275, delta -0.125. On B: B (idle 0.1) no longer hosts shape 1: 0.1; shape 2: 1.1;
     * F = 0.075 + 0.275 = 0.35, delta -0.05. The emptier card A wins here. */
    struct vs_frag_req p = share(1, 50);
    cr_assert_float_eq(vs_frag_delta_card(&x, cs, 2, INT64_MAX, INT64_MAX, &p, 0), -0.125, EPS);
    cr_assert_float_eq(vs_frag_delta_card(&x, cs, 2, INT64_MAX, INT64_MAX, &p, 1), -0.05, EPS);
    size_t pick[1];
    cr_assert_float_eq(vs_frag_pick(&x, cs, 2, INT64_MAX, INT64_MAX, &p, 3, pick), -0.125, EPS);
    cr_assert_eq(pick[0], 0);
}

Test(frag, multi_card_pick_and_node_cpu)
{
    /* Shape: 1 card at 50 %, needing 8 cpus. Four idle cards. */
    struct vs_frag_req s = share(1, 50);
    s.cpu_milli = 8000;
    double w = 1;
    struct vs_frag_ctx x;
    vs_frag_ctx_set(&x, &s, &w, 1);
    struct vs_frag_card cs[4] = {card(16000, 0, 0, 0), card(16000, 0, 0, 0),
                                 card(16000, 1, 8000, 50), card(16000, 0, 0, 0)};
    /* Enough cpu: every card hosts the shape: 0. Too little cpu: all idle, 3.5. */
    cr_assert_float_eq(vs_frag_node(&x, cs, 4, 16000, INT64_MAX), 0.0, EPS);
    cr_assert_float_eq(vs_frag_node(&x, cs, 4, 4000, INT64_MAX), 3.5, EPS);
    /* Two whole cards for a pod taking 10 of the 16 cpus: afterwards 6 cpus are left, so the
     * node strands all its remaining idle cards (0.5 + 1.0 = 1.5): delta 1.5 - 0 = 1.5, and the
     * picks are the first two idle cards (equal growth, equal idle: lower index). */
    struct vs_frag_req p = share(2, 100);
    p.cpu_milli = 10000;
    size_t pick[2];
    cr_assert_float_eq(vs_frag_pick(&x, cs, 4, 16000, INT64_MAX, &p, 0xf, pick), 1.5, EPS);
    cr_assert_eq(pick[0], 0);
    cr_assert_eq(pick[1], 1);
}

Test(frag, cpu_pod_growth)
{
    /* Shapes: 1 card at 50 % with 8 cpus (weight 3), 1 card at 20 % with 2 cpus (weight 1).
     * Card A idle (1.0), card B 60 % used (idle 0.4), 10 cpus free. Shape 1 fits A only: the
     * node hosts it and strands B's 0.4; shape 2 fits both: 0. F = 0.75 * 0.4 = 0.3. */
    struct vs_frag_req s[2] = {share(1, 50), share(1, 20)};
    s[0].cpu_milli = 8000;
    s[1].cpu_milli = 2000;
    double w[2] = {3, 1};
    struct vs_frag_ctx x;
    vs_frag_ctx_set(&x, s, w, 2);
    struct vs_frag_card cs[2] = {card(16000, 0, 0, 0), card(16000, 1, 9600, 60)};
    cr_assert_float_eq(vs_frag_node(&x, cs, 2, 10000, INT64_MAX), 0.3, EPS);
    /* The node's idle capacity comes with it: 1.0 + 0.4. */
    double idle = -1;
    vs_frag_delta_cpu(&x, cs, 2, 10000, INT64_MAX, 2000, 0, &idle);
    cr_assert_float_eq(idle, 1.4, EPS);
    /* A pod without GPU taking 2 cpus leaves 8: both shapes still fit, growth 0. */
    cr_assert_eq(vs_frag_delta_cpu(&x, cs, 2, 10000, INT64_MAX, 2000, 0, NULL), 0.0);
    /* 3 cpus leave 7: shape 1 is lost, its term goes from 0.4 to all idle 1.4: 0.75 * 1.0. */
    cr_assert_float_eq(vs_frag_delta_cpu(&x, cs, 2, 10000, INT64_MAX, 3000, 0, NULL), 0.75, EPS);
    cr_assert_float_eq(vs_frag_node(&x, cs, 2, 7000, INT64_MAX) -
                           vs_frag_node(&x, cs, 2, 10000, INT64_MAX),
                       0.75, EPS);
    /* 9 cpus leave 1: shape 2 is lost too, 0 -> 1.4: 0.75 + 0.25 * 1.4 = 1.1. */
    cr_assert_float_eq(vs_frag_delta_cpu(&x, cs, 2, 10000, INT64_MAX, 9000, 0, NULL), 1.1, EPS);
    /* A node that hosts neither shape (too little cpu already) loses nothing. */
    cr_assert_eq(vs_frag_delta_cpu(&x, cs, 2, 1000, INT64_MAX, 500, 0, NULL), 0.0);
    /* Memory: a shape asking 4 GiB of node memory, 6 GiB free; a pod taking 3 GiB loses it:
     * its term goes from 0 (both cards fit 20 %) to all idle, 1.4. */
    struct vs_frag_req sm = share(1, 20);
    sm.mem_bytes = 4LL << 30;
    double w1 = 1;
    struct vs_frag_ctx xm;
    vs_frag_ctx_set(&xm, &sm, &w1, 1);
    cr_assert_eq(vs_frag_delta_cpu(&xm, cs, 2, INT64_MAX, 6LL << 30, 0, 2LL << 30, NULL), 0.0);
    cr_assert_float_eq(vs_frag_delta_cpu(&xm, cs, 2, INT64_MAX, 6LL << 30, 0, 3LL << 30, NULL), 1.4,
                       EPS);
    /* Unknown cpu (INT64_MAX) never runs out. */
    cr_assert_eq(vs_frag_delta_cpu(&x, cs, 2, INT64_MAX, INT64_MAX, 9000, 0, NULL), 0.0);
    /* The memo gives the same, and follows a new generation (B freed: shape 1 fits both, so
     * losing it costs all idle 2.0 from 0: 0.75 * 2.0). */
    struct vs_frag_memo *_Atomic slot = NULL;
    double a = vs_frag_delta_cpu(&x, cs, 2, 10000, INT64_MAX, 3000, 0, NULL);
    double b = vs_frag_delta_cpu_memo(&x, &slot, 1, cs, 2, 10000, INT64_MAX, 3000, 0, NULL);
    cr_assert(memcmp(&a, &b, sizeof(a)) == 0);
    cs[1] = card(16000, 0, 0, 0);
    cr_assert_float_eq(vs_frag_delta_cpu_memo(&x, &slot, 2, cs, 2, 10000, INT64_MAX, 3000, 0, NULL),
                       1.5, EPS);
    free(atomic_load(&slot));
}

Test(frag, type_constraints)
{
    struct vs_frag_stats *st = vs_frag_stats_new();
    cr_assert_not_null(st);
    struct vs_frag_req s = share(1, 50);
    cr_assert_eq(vs_frag_stats_add(st, &s, "T4", NULL), VS_OK);
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, st);
    cr_assert_eq(x.k, 1);
    cr_assert_eq(vs_frag_accept(&x, "NVIDIA-Tesla T4"), 1u);
    cr_assert_eq(vs_frag_accept(&x, "NVIDIA-V100"), 0u);
    /* A V100 node strands everything idle for a T4-only workload. */
    struct vs_frag_card cs[2] = {card(16000, 0, 0, 0), card(16000, 1, 8000, 50)};
    cs[0].accept = cs[1].accept = vs_frag_accept(&x, "NVIDIA-V100");
    cr_assert_float_eq(vs_frag_node(&x, cs, 2, INT64_MAX, INT64_MAX), 1.5, EPS);
    vs_frag_stats_free(st);
}

Test(frag, stats_most_frequent_first)
{
    struct vs_frag_stats *st = vs_frag_stats_new();
    struct vs_frag_req a = share(1, 20), b = share(2, 100);
    cr_assert_eq(vs_frag_stats_add(st, &a, NULL, NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &b, NULL, NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &b, "", ""), VS_OK); /* same shape as NULL lists */
    cr_assert_eq(vs_frag_stats_add(st, &b, "A100", NULL), VS_OK);
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, st);
    cr_assert_eq(x.k, 3);
    cr_assert_eq(x.s[0].r.nums, 2);
    cr_assert_float_eq(x.w[0], 0.5, EPS);
    cr_assert_eq(x.s[1].r.nums, 1);
    cr_assert_float_eq(x.w[1], 0.25, EPS);
    cr_assert_eq(x.s[2].use->n, 1);
    cr_assert_str_eq(x.s[2].use->items[0], "A100");
    vs_frag_stats_free(st);
}

Test(frag, stats_keep_the_top_shapes)
{
    struct vs_frag_stats *st = vs_frag_stats_new();
    /* 20 shapes, shape i seen i + 1 times: the context keeps the 16 most frequent. */
    for (int i = 0; i < 20; i++) {
        struct vs_frag_req r = share(1, 5 * (i + 1));
        for (int k = 0; k <= i; k++)
            cr_assert_eq(vs_frag_stats_add(st, &r, NULL, NULL), VS_OK);
    }
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, st);
    cr_assert_eq(x.k, VS_FRAG_K);
    cr_assert_eq(x.s[0].r.cores, 100);
    cr_assert_eq(x.s[VS_FRAG_K - 1].r.cores, 25);
    /* weights: 20/(20+19+...+5) = 20/200 */
    cr_assert_float_eq(x.w[0], 0.1, EPS);
    vs_frag_stats_free(st);
}

Test(frag, stats_keep_shapes_over_many_blocks)
{
    /* 300 distinct shapes (the store keeps them 64 to a block): 1-3 cards x 100 core shares.
     * Shape 250 (3 cards, 51 % cores) naming "A100,H100" is seen 5 times and 130 (2 cards, 31 %)
     * 3 times, the rest once: the context puts them first with their counts and lists. */
    struct vs_frag_stats *st = vs_frag_stats_new();
    for (int i = 0; i < 300; i++) {
        struct vs_frag_req r = share(1 + i / 100, 1 + i % 100);
        const char *use = i == 250 ? "A100,H100" : NULL;
        int times = i == 250 ? 5 : i == 130 ? 3 : 1;
        for (int k = 0; k < times; k++)
            cr_assert_eq(vs_frag_stats_add(st, &r, use, NULL), VS_OK);
    }
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, st);
    cr_assert_eq(x.k, VS_FRAG_K);
    cr_assert_eq(x.s[0].r.nums, 3);
    cr_assert_eq(x.s[0].r.cores, 51);
    cr_assert_eq(x.s[0].use->n, 2);
    cr_assert_str_eq(x.s[0].use->items[1], "H100");
    cr_assert_eq(x.s[1].r.nums, 2);
    cr_assert_eq(x.s[1].r.cores, 31);
    cr_assert_eq(x.s[1].use->n, 0);
    /* The first 14 shapes seen once follow in the order they came: 1 card, 1 % ... 14 %. */
    cr_assert_eq(x.s[2].r.nums, 1);
    cr_assert_eq(x.s[2].r.cores, 1);
    cr_assert_eq(x.s[15].r.cores, 14);
    vs_frag_stats_free(st);
}

/* The cpu-stranding term: 10 cpus per card of GPU capacity. */
Test(frag, strand_is_the_idle_cpu_cannot_feed)
{
    struct vs_frag_ctx x;
    vs_frag_ctx_set(&x, NULL, NULL, 0);
    cr_assert_eq(vs_frag_strand(&x, 2.0, 15000), 0.0); /* cpu per card unknown */
    x.cpu_per_card = 10000;
    /* 15 cpus feed 1.5 cards: 0.5 of 2.0 stranded; of 1.0 nothing. */
    cr_assert_float_eq(vs_frag_strand(&x, 2.0, 15000), 0.5, EPS);
    cr_assert_eq(vs_frag_strand(&x, 1.0, 15000), 0.0);
    cr_assert_float_eq(vs_frag_strand(&x, 2.0, -3000), 2.0, EPS); /* overcommitted: all */
    cr_assert_eq(vs_frag_strand(&x, 2.0, INT64_MAX), 0.0);        /* cpu not reported */
    /* A pod of 1 card and 12 cpus: 1.0 - 0.3 = 0.7 after, 0.5 before: growth 0.2, times the
     * term's weight. One of 1 card and 2 cpus eases it (1.0 - 1.3 < 0): never below 0. */
    cr_assert_float_eq(vs_frag_strand_growth(&x, 2.0, 15000, 1.0, 12000), VS_FRAG_STRAND_W * 0.2,
                       EPS);
    cr_assert_eq(vs_frag_strand_growth(&x, 2.0, 15000, 1.0, 2000), 0.0);
    cr_assert_eq(vs_frag_strand_growth(&x, 2.0, INT64_MAX, 1.0, 12000), 0.0);
    x.cpu_per_card = 0;
    cr_assert_eq(vs_frag_strand_growth(&x, 2.0, 15000, 1.0, 12000), 0.0);
}

Test(frag, req_idle_and_stats_cpu_per_card)
{
    /* 50 % cores, 50 %: half a card; 50 % cores, 4000 of 16000 MiB: (0.5 + 0.25) / 2. */
    struct vs_frag_req half = share(1, 50);
    cr_assert_float_eq(vs_frag_req_idle(&half, 16000, 100), 0.5, EPS);
    struct vs_frag_req mib = {.nums = 1, .cores = 50, .mempct = -1, .memmib = 4000};
    cr_assert_float_eq(vs_frag_req_idle(&mib, 16000, 100), 0.375, EPS);
    cr_assert_eq(vs_frag_req_idle(&mib, 0, 100), 0.0);
    /* 2 x (half a card, 4 cpus) + 1 x (2 whole cards, 16 cpus) + 1 x (6000 MiB at 50 % cores,
     * counted as half a card, 2 cpus) + a pod asking no GPU (not counted): 26 cpus over 3.5
     * cards. */
    struct vs_frag_stats *st = vs_frag_stats_new();
    half.cpu_milli = 4000;
    struct vs_frag_req two = share(2, 100), cpu_only = {.mempct = -1, .cpu_milli = 50000};
    two.cpu_milli = 16000;
    mib.cpu_milli = 2000;
    mib.memmib = 6000;
    cr_assert_eq(vs_frag_stats_add(st, &half, NULL, NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &half, NULL, NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &two, NULL, NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &mib, NULL, NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &cpu_only, NULL, NULL), VS_OK);
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, st);
    cr_assert_float_eq(x.cpu_per_card, 26000.0 / 3.5, 1e-6);
    vs_frag_stats_free(st);
}

/* Each type list's GPU capacity spread over the types it accepts, in proportion to their
 * cards. Types A (10 cards) and B (30): 40 cards. Seen: 6 whole cards without types, 1 on A,
 * 2 on "A or B", a share of 50 % on 2 cards (1 card) that refuses A, and a pod without a GPU
 * (not counted): 10 cards asked. A: 40 / 10 * (1 / 10 + 2 / 40) = 0.6; B: 40 / 10 *
 * (2 / 40 + 1 / 30) = 1 / 3. Three more on A: 40 / 13 * (4 / 10 + 2 / 40) = 1.38, kept at 1;
 * B 40 / 13 * (2 / 40 + 1 / 30) = 0.25641. */
Test(frag, type_pressure_spreads_each_list_over_its_types)
{
    struct vs_frag_stats *st = vs_frag_stats_new();
    struct vs_frag_req one = share(1, 100), half2 = share(2, 50), cpu_only = {.mempct = -1};
    cr_assert_not(vs_frag_stats_typed(st));
    for (int i = 0; i < 6; i++)
        cr_assert_eq(vs_frag_stats_add(st, &one, NULL, ""), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &cpu_only, "NVIDIA-A", NULL), VS_OK);
    cr_assert_not(vs_frag_stats_typed(st));
    cr_assert_eq(vs_frag_stats_add(st, &one, "NVIDIA-A", NULL), VS_OK);
    cr_assert(vs_frag_stats_typed(st));
    cr_assert_eq(vs_frag_stats_add(st, &one, "NVIDIA-A,NVIDIA-B", NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &one, "NVIDIA-A,NVIDIA-B", NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &half2, NULL, "-a"), VS_OK);
    const char *ab[] = {"NVIDIA-A", "NVIDIA-B"}, *ba[] = {"NVIDIA-B", "NVIDIA-A"};
    double caps_ab[] = {10, 30}, caps_ba[] = {30, 10}, p[2];
    vs_frag_type_pressure(st, ab, caps_ab, 2, p);
    cr_assert_float_eq(p[0], 0.6, EPS);
    cr_assert_float_eq(p[1], 1.0 / 3, EPS);
    /* Other types (the cached masks are made again), then three more pods on A. */
    vs_frag_type_pressure(st, ba, caps_ba, 2, p);
    cr_assert_float_eq(p[0], 1.0 / 3, EPS);
    cr_assert_float_eq(p[1], 0.6, EPS);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(vs_frag_stats_add(st, &one, "NVIDIA-A", NULL), VS_OK);
    vs_frag_type_pressure(st, ab, caps_ab, 2, p);
    cr_assert_eq(p[0], 1.0);
    cr_assert_float_eq(p[1], 40.0 / 13 * (2.0 / 40 + 1.0 / 30), EPS);
    /* No cards: nothing is claimed. */
    double none[] = {0, 0};
    vs_frag_type_pressure(st, ab, none, 2, p);
    cr_assert_eq(p[0], 0.0);
    cr_assert_eq(p[1], 0.0);
    vs_frag_stats_free(st);
}

/* ---- the per-node memo ---- */

static uint64_t lcg(uint64_t *st)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return *st >> 33;
}

static void random_ctx(struct vs_frag_ctx *x, uint64_t *rng)
{
    struct vs_frag_req rs[VS_FRAG_K];
    double w[VS_FRAG_K];
    size_t k = 1 + lcg(rng) % VS_FRAG_K;
    for (size_t s = 0; s < k; s++) {
        int32_t pct = (int32_t)(lcg(rng) % 11) * 10;
        rs[s] = share(1 + (int32_t)(lcg(rng) % 3 == 0 ? lcg(rng) % 4 : 0), pct);
        if (lcg(rng) % 3 == 0) {
            rs[s].mempct = -1;
            rs[s].memmib = (int32_t)(lcg(rng) % 16000);
        }
        rs[s].cpu_milli = (int64_t)(lcg(rng) % 4) * 4000;
        w[s] = (double)(1 + lcg(rng) % 50);
    }
    vs_frag_ctx_set(x, rs, w, k);
}

/* x's shapes in another order (keep: how many of them, drop: one to leave out, -1 none; add:
 * a shape x does not have, or NULL), under random weights. */
static void reshaped_ctx(struct vs_frag_ctx *out, const struct vs_frag_ctx *x, long drop,
                         const struct vs_frag_req *add, uint64_t *rng)
{
    struct vs_frag_req rs[VS_FRAG_K];
    double w[VS_FRAG_K];
    size_t k = 0;
    for (size_t s = 0; s < x->k; s++)
        if ((long)s != drop)
            rs[k++] = x->s[s].r;
    if (add && k < VS_FRAG_K)
        rs[k++] = *add;
    for (size_t s = k; s > 1; s--) {
        size_t j = lcg(rng) % s;
        struct vs_frag_req t = rs[s - 1];
        rs[s - 1] = rs[j];
        rs[j] = t;
    }
    for (size_t s = 0; s < k; s++)
        w[s] = (double)(1 + lcg(rng) % 50);
    vs_frag_ctx_set(out, rs, w, k);
}

/* Whether every shape of a is one of b's. */
static bool shapes_within(const struct vs_frag_ctx *a, const struct vs_frag_ctx *b)
{
    for (size_t s = 0; s < a->k; s++) {
        bool found = false;
        for (size_t t = 0; t < b->k && !found; t++)
            found = memcmp(&a->s[s].r, &b->s[t].r, sizeof(a->s[s].r)) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* The memo answers exactly what a direct pick answers (same growth bit for bit, same cards):
 * its sums reused while (gen, shape set) stay, its recorded one-card pick replayed under other
 * weights for the same request, both carried over when the shapes change order or some leave,
 * rebuilt (or completed with the new shapes) when the node or the shapes change. */
Test(frag, memo_matches_direct_pick)
{
    uint64_t rng = 42;
    int carried = 0;
    for (int round = 0; round < 300; round++) {
        struct vs_frag_memo *_Atomic slot = NULL;
        struct vs_frag_ctx x, y, xw, xp, xs, xn, xn2;
        random_ctx(&x, &rng);
        random_ctx(&y, &rng);
        /* xp: x's shapes reordered; xs: one of them left out; xn, xn2: a new one added */
        struct vs_frag_req extra = share(1, 25);
        extra.cpu_milli = 1000;
        reshaped_ctx(&xp, &x, -1, NULL, &rng);
        reshaped_ctx(&xs, &x, x.k > 1 ? (long)(lcg(&rng) % x.k) : -1, NULL, &rng);
        reshaped_ctx(&xn, &x, -1, &extra, &rng);
        xn2 = xn;
        double w2[VS_FRAG_K];
        for (size_t s = 0; s < xn2.k; s++)
            w2[s] = (double)(xn2.k - s);
        vs_frag_ctx_weights(&xn2, w2);
        /* xw: x's shapes under other weights (same signature) */
        xw = x;
        double ww[VS_FRAG_K];
        for (size_t s = 0; s < xw.k; s++)
            ww[s] = (double)(1 + lcg(&rng) % 50);
        vs_frag_ctx_weights(&xw, ww);
        cr_assert_eq(xw.sig, x.sig);
        size_t n = 1 + lcg(&rng) % 8;
        struct vs_frag_card cs[8];
        for (size_t i = 0; i < n; i++) {
            int64_t used = (int64_t)(lcg(&rng) % 3);
            int64_t cores = used ? (int64_t)(lcg(&rng) % 11) * 10 : 0;
            cs[i] = card(16000, used, used ? (int64_t)(lcg(&rng) % 17) * 1000 : 0, cores);
            if (i > 0 && lcg(&rng) % 3 == 0)
                cs[i] = cs[i - 1];
            cs[i].usable = lcg(&rng) % 10 != 0;
        }
        int64_t cpu = (int64_t)(lcg(&rng) % 5) * 4000, mem = INT64_MAX;
        uint64_t gen = 1;
        struct vs_frag_req p = share(1, 30);
        for (int step = 0; step < 12; step++) {
            /* 0: build; 1: same request, other weights (replayed); 2: another request; 3: other
             * shapes, same gen; 4: back; 5: a card changed under a new gen; 6-7: same request
             * twice under the two weightings; 8: the shapes reordered; 9: one left out (both
             * replayed); 10: a new one (its sums added, the pick made again); 11: replayed */
            const struct vs_frag_ctx *const cx[12] = {&x, &xw, &x,  &y,  &x,  &x,
                                                      &x, &xw, &xp, &xs, &xn, &xn2};
            const struct vs_frag_ctx *c = cx[step];
            if (step == 5) {
                cs[0].used++;
                cs[0].usedmem += 1000;
                gen++;
            }
            if (step == 0 || step == 2 || step == 5) {
                p = share(1 + (int32_t)(lcg(&rng) % 4 == 0), (int32_t)(lcg(&rng) % 11) * 10);
                p.cpu_milli = (int64_t)(lcg(&rng) % 3) * 2000;
            }
            uint64_t ok = (1ull << n) - 1;
            size_t pa[8] = {0}, pb[8] = {0};
            double a = vs_frag_pick(c, cs, n, cpu, mem, &p, ok, pa);
            /* what decided ok besides the cards: here the request alone */
            uint64_t rs = (uint64_t)p.cores << 32 | (uint32_t)p.nums;
            size_t pc[8] = {0};
            double c0 = 0;
            bool replayed = vs_frag_memo_replay(c, &slot, gen, n, &p, rs, &c0, pc);
            /* a replay needs this request recorded on this state: never on the first call or
             * right after the shapes or the node changed; always for a one-card request asked
             * again on the same state (under other weights or not) */
            bool want = p.nums == 1 && step != 0 && step != 2 && step != 5 && step != 10;
            if (step == 3)
                want = want && shapes_within(&y, &x);
            if (step == 4)
                want = want && shapes_within(&x, &y);
            if (step == 10)
                want = p.nums == 1 && shapes_within(&xn, &xs);
            if (step != 2) /* another request: replayed when it happens to be the same */
                cr_assert_eq(replayed, want, "round %d step %d: replayed %d", round, step,
                             replayed);
            carried += replayed && (step == 8 || step == 9);
            double b = vs_frag_pick_memo(c, &slot, gen, cs, n, cpu, mem, &p, ok, rs, pb);
            cr_assert(isnan(a) ? isnan(b) : memcmp(&a, &b, sizeof(a)) == 0,
                      "round %d step %d: %.17g vs %.17g", round, step, a, b);
            if (!isnan(a))
                cr_assert_arr_eq(pa, pb, (size_t)p.nums * sizeof(pa[0]), "round %d step %d", round,
                                 step);
            if (replayed) {
                cr_assert(isnan(a) ? isnan(c0) : memcmp(&a, &c0, sizeof(a)) == 0,
                          "round %d step %d: replay %.17g vs %.17g", round, step, c0, a);
                if (!isnan(a))
                    cr_assert_eq(pc[0], pa[0], "round %d step %d", round, step);
            }
            /* the same state under another request key is never replayed */
            cr_assert_not(vs_frag_memo_replay(c, &slot, gen, n, &p, rs ^ 1, &c0, pc));
        }
        free(atomic_load(&slot));
    }
    cr_assert_gt(carried, 100); /* the carried-over memo was exercised */
}

/* Filters share a node's memo: threads picking on one node under shape sets that take turns
 * (reordered, one left out, one added: the memo is carried over back and forth) and requests
 * that take turns (replays and new picks) all get what a direct pick gives. Run under TSan. */
struct shared_memo {
    struct vs_frag_memo *_Atomic slot;
    const struct vs_frag_ctx *ctx[4];
    struct vs_frag_req req[2];
    const struct vs_frag_card *cards;
    size_t n;
    double want[4][2];
    size_t want_pick[4][2];
    atomic_int wrong, replays, seed;
};

static void *memo_user(void *arg)
{
    struct shared_memo *sm = arg;
    uint64_t rng = (uint64_t)atomic_fetch_add(&sm->seed, 1) + 11;
    uint64_t ok = (1ull << sm->n) - 1;
    for (int i = 0; i < 3000; i++) {
        size_t c = lcg(&rng) % 4, q = lcg(&rng) % 2;
        const struct vs_frag_req *r = &sm->req[q];
        double d = 0;
        size_t pk[1] = {0};
        if (vs_frag_memo_replay(sm->ctx[c], &sm->slot, 1, sm->n, r, q, &d, pk)) {
            atomic_fetch_add(&sm->replays, 1);
        } else {
            d = vs_frag_pick_memo(sm->ctx[c], &sm->slot, 1, sm->cards, sm->n, 8000, INT64_MAX, r,
                                  ok, q, pk);
        }
        if (memcmp(&d, &sm->want[c][q], sizeof(d)) != 0 || pk[0] != sm->want_pick[c][q])
            atomic_fetch_add(&sm->wrong, 1);
    }
    return NULL;
}

Test(frag, memo_shared_by_threads)
{
    uint64_t rng = 5;
    struct vs_frag_ctx x, xp, xs, xn;
    do
        random_ctx(&x, &rng);
    while (x.k < 4);
    struct vs_frag_req extra = share(1, 25);
    reshaped_ctx(&xp, &x, -1, NULL, &rng);
    reshaped_ctx(&xs, &x, 1, NULL, &rng);
    reshaped_ctx(&xn, &x, -1, &extra, &rng);
    struct vs_frag_card cs[8];
    for (size_t i = 0; i < 8; i++)
        cs[i] = card(16000, (int64_t)(i % 3), (int64_t)(i % 3) * 3000, (int64_t)(i % 3) * 20);
    struct shared_memo sm = {
        .ctx = {&x, &xp, &xs, &xn}, .req = {share(1, 30), share(1, 10)}, .cards = cs, .n = 8};
    for (size_t c = 0; c < 4; c++)
        for (size_t q = 0; q < 2; q++)
            sm.want[c][q] = vs_frag_pick(sm.ctx[c], cs, 8, 8000, INT64_MAX, &sm.req[q], 0xff,
                                         &sm.want_pick[c][q]);
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, memo_user, &sm), 0);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    free(atomic_load(&sm.slot));
    int wrong = atomic_load(&sm.wrong), replays = atomic_load(&sm.replays);
    cr_assert_eq(wrong, 0, "%d of 12000 answers differ from a direct pick", wrong);
    cr_assert_gt(replays, 0);
}

/* The card policy's growths for all cards at once are vs_frag_delta_card's, bit for bit
 * (HUGE_VAL where one instance does not fit). */
Test(frag, delta_cards_is_delta_card_per_card)
{
    uint64_t rng = 9;
    for (int round = 0; round < 300; round++) {
        struct vs_frag_ctx x;
        random_ctx(&x, &rng);
        size_t n = 1 + lcg(&rng) % 8;
        struct vs_frag_card cs[8];
        for (size_t i = 0; i < n; i++) {
            int64_t used = (int64_t)(lcg(&rng) % 3);
            cs[i] = card(16000, used, used ? (int64_t)(lcg(&rng) % 17) * 1000 : 0,
                         used ? (int64_t)(lcg(&rng) % 11) * 10 : 0);
            cs[i].usable = lcg(&rng) % 10 != 0;
        }
        struct vs_frag_req q = share(1, (int32_t)(lcg(&rng) % 11) * 10);
        int64_t cpu = lcg(&rng) % 2 ? INT64_MAX : (int64_t)(lcg(&rng) % 5) * 4000;
        double d[8];
        vs_frag_delta_cards(&x, cs, n, cpu, INT64_MAX, &q, d);
        for (size_t i = 0; i < n; i++) {
            double want = vs_frag_card_fits(&cs[i], &q)
                              ? vs_frag_delta_card(&x, cs, n, cpu, INT64_MAX, &q, i)
                              : HUGE_VAL;
            cr_assert(memcmp(&d[i], &want, sizeof(want)) == 0, "round %d card %zu: %.17g vs %.17g",
                      round, i, d[i], want);
        }
    }
}

/* The growth for a pod without GPU equals the difference of the node's measure after and
 * before its cpu/memory are taken, on random nodes and workloads; the memo agrees bit for bit,
 * also right after a pick made on the same sums. */
Test(frag, cpu_pod_growth_is_the_difference)
{
    uint64_t rng = 7;
    for (int round = 0; round < 300; round++) {
        struct vs_frag_ctx x;
        random_ctx(&x, &rng);
        size_t n = 1 + lcg(&rng) % 8;
        struct vs_frag_card cs[8];
        for (size_t i = 0; i < n; i++) {
            int64_t used = (int64_t)(lcg(&rng) % 3);
            cs[i] = card(16000, used, used ? (int64_t)(lcg(&rng) % 17) * 1000 : 0,
                         used ? (int64_t)(lcg(&rng) % 11) * 10 : 0);
        }
        int64_t cpu = (int64_t)(lcg(&rng) % 5) * 4000, take = (int64_t)(lcg(&rng) % 9) * 1000;
        double d = vs_frag_delta_cpu(&x, cs, n, cpu, INT64_MAX, take, 0, NULL);
        double diff = vs_frag_node(&x, cs, n, cpu - take, INT64_MAX) -
                      vs_frag_node(&x, cs, n, cpu, INT64_MAX);
        cr_assert_float_eq(d, diff, EPS, "round %d: %.17g vs %.17g", round, d, diff);
        cr_assert_geq(d, 0.0);
        struct vs_frag_memo *_Atomic slot = NULL;
        struct vs_frag_req p = share(1, 30);
        size_t pk[1];
        vs_frag_pick_memo(&x, &slot, 1, cs, n, cpu, INT64_MAX, &p, (1ull << n) - 1, 1, pk);
        double ia = -1, ib = -2;
        double e = vs_frag_delta_cpu_memo(&x, &slot, 1, cs, n, cpu, INT64_MAX, take, 0, &ib);
        cr_assert(memcmp(&d, &e, sizeof(d)) == 0, "round %d", round);
        vs_frag_delta_cpu(&x, cs, n, cpu, INT64_MAX, take, 0, &ia);
        double all = 0;
        for (size_t i = 0; i < n; i++)
            all += vs_frag_idle(&cs[i]);
        cr_assert_float_eq(ia, all, EPS, "round %d", round);
        cr_assert(memcmp(&ia, &ib, sizeof(ia)) == 0, "round %d", round);
        free(atomic_load(&slot));
    }
}

/* ---- the policy through Filter ---- */

static struct vs_model *m;

static void setup(void)
{
    m = vs_model_new(NULL);
}

static void teardown(void)
{
    vs_model_free(m);
    m = NULL;
}

TestSuite(fragpolicy, .init = setup, .fini = teardown);

static void node2(const char *node, const char *a, const char *b)
{
    char c1[256], c2[256], reg[600];
    tb_card(c1, sizeof(c1), a, 0, 0, 10, 10000, 100, 1);
    tb_card(c2, sizeof(c2), b, 1, 0, 10, 10000, 100, 1);
    snprintf(reg, sizeof(reg), "[%s,%s]", c1, c2);
    tb_node(m, node, reg, NULL, NULL);
}

static void filter_with(struct vs_frag_stats *st, const struct vs_pod *p, const char *np,
                        const char *gp, const char *const *cands, size_t n,
                        struct vs_filter_result *r)
{
    struct vs_devcfg cfg;
    vs_devcfg_init(&cfg);
    struct vs_sched_opts o = {.cfg = &cfg, .node_policy = np, .gpu_policy = gp, .frag_stats = st};
    cr_assert_eq(vs_sched_filter(m, p, cands, n, &o, r), VS_OK);
    vs_devcfg_cleanup(&cfg);
}

/* The workload so far: 60 % pods. node1 has a card at 50 % (it cannot take a 60 % pod any
 * more: 0.5 stranded); node2 a card at 30 % (still takes one). A 20 % pod: on node1's used card
 * it brings it to 70 %, stranding 0.3 instead of 0.5; on node2's used card to 50 %, stranding
 * 0.5 instead of 0; on an idle card nothing changes. node1's device1 wins although node2 comes
 * first. */
Test(fragpolicy, picks_least_growth)
{
    node2("node1", "device1", "device2");
    node2("node2", "device3", "device4");
    tb_place(m, "p1", "node1", "device1,NVIDIA,5000,50:;");
    tb_place(m, "p2", "node2", "device3,NVIDIA,3000,30:;");
    struct vs_frag_stats *st = vs_frag_stats_new();
    struct vs_frag_req w = {.nums = 1, .cores = 60, .mempct = -1, .memmib = 6000};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(vs_frag_stats_add(st, &w, NULL, NULL), VS_OK);
    struct vs_pod p;
    tb_pod(&p, "default", "new", "uid-new");
    tb_ctr(&p, 0, "c", "1", "2000", NULL, "20");
    const char *cands[] = {"node2", "node1"};
    struct vs_filter_result r;
    filter_with(st, &p, "Fragmentation", "fragmentation", cands, 2, &r);
    cr_assert_null(r.error);
    cr_assert_eq(r.best, 1);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "device1,NVIDIA,2000,20:;");
    free(d);
    /* workload after counting this pod: 9 x 60 %, 1 x 20 % (weights 0.9, 0.1). node1 before:
     * 0.9 * 0.5 + 0.1 * 0 = 0.45; after (device1 at 70 %): 0.9 * 0.3 + 0.1 * 0 = 0.27. */
    cr_assert_float_eq(r.nodes[1].frag, -0.18, 1e-6);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
    vs_frag_stats_free(st);
}

Test(fragpolicy, card_policy_alone)
{
    node2("node1", "device1", "device2");
    tb_place(m, "p1", "node1", "device2,NVIDIA,5000,50:;");
    struct vs_pod p;
    tb_pod(&p, "default", "new", "uid-new");
    tb_ctr(&p, 0, "c", "1", "5000", NULL, "50");
    const char *cands[] = {"node1"};
    struct vs_filter_result r;
    /* Only the pod's own shape (50 %) known: either card leaves nothing stranded (the used
     * card becomes full, the idle one still takes a 50 % pod); the tie goes to the fuller card
     * as binpack would. */
    filter_with(NULL, &p, "binpack", "FRAGMENTATION", cands, 1, &r);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "device2,NVIDIA,5000,50:;");
    free(d);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

/* A node of n whole cards (10000 MiB, 100 cores) with device ids ids[i] and `cpu` cpus. */
static void node_cards_cpu(const char *node, const char *const *ids, int n, const char *cpu)
{
    char c[8][256], reg[2200] = "[";
    for (int i = 0; i < n; i++) {
        tb_card(c[i], sizeof(c[i]), ids[i], i, 0, 10, 10000, 100, 1);
        strcat(reg, c[i]);
        strcat(reg, i + 1 < n ? "," : "]");
    }
    struct vs_knode k;
    memset(&k, 0, sizeof(k));
    k.name = tb_strdup(node);
    k.resource_version = tb_strdup("1");
    vs_kv_set(&k.annotations, VS_ANNO_REGISTER, reg);
    vs_kv_set(&k.allocatable, "cpu", cpu);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_node(m, &k, &eb), VS_OK);
    vs_knode_cleanup(&k);
}

/* A node with two cards (device ids a, b) and `cpu` allocatable. */
static void node2_cpu(const char *node, const char *a, const char *b, const char *cpu)
{
    const char *ids[] = {a, b};
    node_cards_cpu(node, ids, 2, cpu);
}

/* simulate --cpu-pods fragmentation's measure on the model's nodes. Workload: 3 x (50 %,
 * 4 cpus), 1 x (20 %, 2 cpus): weights 0.75, 0.25. node1 (8 cpus) has device1 at 60 % (idle
 * 0.4): it hosts the 50 % shape on device2 only and strands 0.4 for it. node2 (8 cpus) is
 * idle. node3's cards are full (nothing idle, nothing to strand). */
Test(fragpolicy, cpu_pod_growth_on_nodes)
{
    node2_cpu("node1", "device1", "device2", "8");
    node2_cpu("node2", "device3", "device4", "8");
    node2_cpu("node3", "device5", "device6", "8");
    tb_place(m, "p1", "node1", "device1,NVIDIA,6000,60:;");
    tb_place(m, "p3", "node3", "device5,NVIDIA,10000,100:device6,NVIDIA,10000,100:;");
    struct vs_frag_stats *st = vs_frag_stats_new();
    struct vs_frag_req big = {.nums = 1, .cores = 50, .mempct = 50, .cpu_milli = 4000};
    struct vs_frag_req small = {.nums = 1, .cores = 20, .mempct = 20, .cpu_milli = 2000};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(vs_frag_stats_add(st, &big, NULL, NULL), VS_OK);
    cr_assert_eq(vs_frag_stats_add(st, &small, NULL, NULL), VS_OK);
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, st);
    const struct vs_node *n1 = vs_model_node(m, "node1"), *n2 = vs_model_node(m, "node2"),
                         *n3 = vs_model_node(m, "node3");
    /* 5 cpus leave 3: the 50 % shape is lost. node1: 0.4 -> 1.4, 0.75 * 1.0; node2: 0 -> 2.0,
     * 0.75 * 2.0; node3: nothing idle, 0. So node3 is the pod's place, though least-allocated
     * scores all three alike. */
    cr_assert_float_eq(vs_sched_frag_plain(&x, n1, 5000, 1LL << 30, NULL), 0.75, EPS);
    cr_assert_float_eq(vs_sched_frag_plain(&x, n2, 5000, 1LL << 30, NULL), 1.5, EPS);
    cr_assert_eq(vs_sched_frag_plain(&x, n3, 5000, 1LL << 30, NULL), 0.0);
    /* 7 cpus leave 1: the 20 % shape is lost too. node1: + 0.25 * 1.4; node2: + 0.25 * 2.0. */
    cr_assert_float_eq(vs_sched_frag_plain(&x, n1, 7000, 0, NULL), 1.1, EPS);
    cr_assert_float_eq(vs_sched_frag_plain(&x, n2, 7000, 0, NULL), 2.0, EPS);
    /* 1 cpu leaves 7 on node1: nothing lost. Then 4 cpus accounted there (the node's generation
     * moves): the same pod now leaves 3 and loses the 50 % shape. */
    cr_assert_eq(vs_sched_frag_plain(&x, n1, 1000, 0, NULL), 0.0);
    struct vs_podres r = {.cpu = 4000, .nz_cpu = 4000};
    cr_assert_eq(vs_model_account(m, "cpu-pod", "node1", &r), VS_OK);
    cr_assert_float_eq(vs_sched_frag_plain(&x, n1, 1000, 0, NULL), 0.75, EPS);
    cr_assert_eq(vs_sched_frag_plain(&x, NULL, 1000, 0, NULL), 0.0);
    /* The idle capacity simulate breaks equal growth with: n1 1.0 + 0.4, n2 2.0, n3 0. */
    double idle = -1;
    vs_sched_frag_plain(&x, n1, 0, 0, &idle);
    cr_assert_float_eq(idle, 1.4, EPS);
    vs_sched_frag_plain(&x, n2, 0, 0, &idle);
    cr_assert_float_eq(idle, 2.0, EPS);
    vs_sched_frag_plain(&x, n3, 0, 0, &idle);
    cr_assert_eq(idle, 0.0);
    vs_sched_frag_plain(&x, NULL, 0, 0, &idle);
    cr_assert_eq(idle, 0.0);
    vs_frag_stats_free(st);
}

/* A node of n whole cards named <node>-gpu<i> with `cpu` cpus. */
static void node_n_cpu(const char *node, int n, const char *cpu)
{
    char id[8][64];
    const char *ids[8];
    for (int i = 0; i < n; i++) {
        snprintf(id[i], sizeof(id[i]), "%s-gpu%d", node, i);
        ids[i] = id[i];
    }
    node_cards_cpu(node, ids, n, cpu);
}

/* The cpu-stranding term decides where the measure ties. Workload: 9 x (1 card, 4 cpus), then
 * the pod (1 card, 6 cpus): 42 cpus over 10 cards, 4.2 per card. node1 (4 cards, 12 cpus) and
 * node2 (4 cards, 64 cpus) both still host both shapes after the pod: growth 0 on both. node1
 * strands 4 - 12 / 4.2 = 1.142857 before and 3 - 6 / 4.2 = 1.571429 after: the term grows by
 * 0.1 * 0.428571; node2 strands nothing. node2 wins though node1 comes first. A pod naming its
 * card types goes without the term: node1, the first of equal growth. */
Test(fragpolicy, cpu_strand_breaks_the_tie)
{
    node_n_cpu("node1", 4, "12");
    node_n_cpu("node2", 4, "64");
    struct vs_frag_stats *st = vs_frag_stats_new();
    struct vs_frag_req w = {.nums = 1, .cores = 100, .mempct = 100, .cpu_milli = 4000};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(vs_frag_stats_add(st, &w, NULL, NULL), VS_OK);
    struct vs_pod p;
    tb_pod(&p, "default", "new", "uid-new");
    struct vs_container *c = tb_ctr(&p, 0, "c", "1", NULL, "100", "100");
    vs_kv_set(&c->requests, "cpu", "6");
    const char *cands[] = {"node1", "node2"};
    struct vs_filter_result r;
    filter_with(st, &p, "fragmentation", "fragmentation", cands, 2, &r);
    cr_assert_null(r.error);
    cr_assert_eq(r.best, 1);
    cr_assert_float_eq(r.nodes[0].frag, VS_FRAG_STRAND_W * (3.0 / 7.0), 1e-9);
    cr_assert_eq(r.nodes[1].frag, 0.0);
    vs_filter_result_cleanup(&r);
    tb_anno(&p, VS_ANNO_USE_TYPE, "NVIDIA");
    filter_with(st, &p, "fragmentation", "fragmentation", cands, 2, &r);
    cr_assert_null(r.error);
    cr_assert_eq(r.best, 0);
    cr_assert_eq(r.nodes[0].frag, 0.0);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
    vs_frag_stats_free(st);
}

/* A node of `n` whole cards (10000 MiB, 100 cores) of card type `type`. */
static void node_typed(const char *node, const char *type, int n)
{
    char reg[1200] = "[", c[200];
    for (int i = 0; i < n; i++) {
        snprintf(c, sizeof(c),
                 "{\"id\":\"%s-gpu%d\",\"index\":%d,\"count\":10,\"devmem\":10000,"
                 "\"devcore\":100,\"type\":\"%s\",\"numa\":0,\"health\":true,"
                 "\"mode\":\"hami-core\"}%s",
                 node, i, i, type, i + 1 < n ? "," : "]");
        strcat(reg, c);
    }
    tb_node(m, node, reg, NULL, NULL);
}

/* The model keeps the cards of each type: node1 (2 x T4), node2 (2 x G2), node3 (1 x T4);
 * node1 registers 1 card, node2 goes away: T4 2, G2 0, and the types keep their ids. */
Test(fragpolicy, model_counts_cards_per_type)
{
    node_typed("node1", "NVIDIA-T4", 2);
    node_typed("node2", "NVIDIA-G2", 2);
    node_typed("node3", "NVIDIA-T4", 1);
    const char *const *types;
    const int64_t *cards;
    cr_assert_eq(vs_model_card_types(m, &types, &cards), 2);
    cr_assert_str_eq(types[0], "NVIDIA-T4");
    cr_assert_str_eq(types[1], "NVIDIA-G2");
    cr_assert_eq(cards[0], 3);
    cr_assert_eq(cards[1], 2);
    cr_assert_eq(vs_model_node(m, "node2")->cards[1].type_id, 1);
    node_typed("node1", "NVIDIA-T4", 1);
    vs_model_remove_node(m, "node2");
    cr_assert_eq(vs_model_card_types(m, &types, &cards), 2);
    cr_assert_eq(cards[0], 2);
    cr_assert_eq(cards[1], 0);
    tb_node(m, "node3", "not json", NULL, NULL);
    cr_assert_eq(vs_model_card_types(m, &types, &cards), 2);
    cr_assert_eq(cards[0], 1);
}

/* The type-pressure term. Seen: 1 pod on T4, 3 without types, then the pod (all one whole
 * card): 5 cards asked of 4 (node1: 2 x T4, node2: 2 x G2). T4's pressure: 4 / 5 * 1 / 2 = 0.4.
 * The pod on node1: the measure does not move (both shapes still fit), the term adds
 * VS_FRAG_TYPE_W * 0.4 * 1 card. On node2 the measure falls by the T4 shape's weight (0.2)
 * times the card taken: the idle G2 card it could never use. A pod that names T4 goes without
 * the term; with no typed pod seen there is no term. */
Test(fragpolicy, type_pressure_term)
{
    node_typed("node1", "NVIDIA-T4", 2);
    node_typed("node2", "NVIDIA-G2", 2);
    struct vs_frag_stats *st = vs_frag_stats_new();
    struct vs_frag_req w = {.nums = 1, .cores = 100, .mempct = 100};
    cr_assert_eq(vs_frag_stats_add(st, &w, "T4", NULL), VS_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(vs_frag_stats_add(st, &w, NULL, NULL), VS_OK);
    struct vs_pod p;
    tb_pod(&p, "default", "new", "uid-new");
    tb_ctr(&p, 0, "c", "1", NULL, "100", "100");
    const char *cands[] = {"node1", "node2"};
    struct vs_filter_result r;
    filter_with(st, &p, "fragmentation", "fragmentation", cands, 2, &r);
    cr_assert_null(r.error);
    cr_assert_eq(r.best, 1);
    cr_assert_float_eq(r.nodes[0].frag, VS_FRAG_TYPE_W * 0.4, EPS);
    cr_assert_float_eq(r.nodes[1].frag, -0.2, EPS);
    vs_filter_result_cleanup(&r);
    /* Named T4 (counted too: 6 cards, 2 on T4): only node1 fits, without the term. */
    tb_anno(&p, VS_ANNO_USE_TYPE, "T4");
    filter_with(st, &p, "fragmentation", "fragmentation", cands, 2, &r);
    cr_assert_eq(r.best, 0);
    cr_assert_eq(r.nodes[0].frag, 0.0);
    cr_assert(!r.nodes[1].fit);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
    vs_frag_stats_free(st);
    /* Without types seen: the measure alone, 0 on both nodes (node1 first). */
    st = vs_frag_stats_new();
    for (int i = 0; i < 4; i++)
        cr_assert_eq(vs_frag_stats_add(st, &w, NULL, NULL), VS_OK);
    tb_pod(&p, "default", "new", "uid-new");
    tb_ctr(&p, 0, "c", "1", NULL, "100", "100");
    filter_with(st, &p, "fragmentation", "fragmentation", cands, 2, &r);
    cr_assert_eq(r.best, 0);
    cr_assert_eq(r.nodes[0].frag, 0.0);
    cr_assert_eq(r.nodes[1].frag, 0.0);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
    vs_frag_stats_free(st);
}
