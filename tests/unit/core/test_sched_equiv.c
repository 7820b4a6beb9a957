/* test_sched_equiv: Filter evaluates a candidate that cannot become the choice on a shorter path
 * (no device list, and for a plain one-container request only a count of the cards that pass).
 * These tests check, on randomly generated clusters and requests, that every node's verdict and
 * reason in a many-candidate Filter are exactly those of a Filter with that node alone taking
 * the full path (full_walk), and that the chosen node's devices are the ones it gets alone;
 * and that lazy reasons (vs_sched_opts.lazy_reasons) change only the reason texts of refused
 * nodes when another node fits. */
#include "builders.h"

#include <criterion/criterion.h>

#include <stdint.h>

#define N_NODES 24

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % n;
}

static const char *const TYPES[] = {"NVIDIA-A100", "NVIDIA-T4", "NVIDIA-L4"};

/* A node of 1–8 cards of one type with random size, slots, health and NUMA; half of the nodes
 * carry a topology score annotation. */
static void random_node(struct vs_model *m, int idx, char names[][16])
{
    snprintf(names[idx], 16, "n%02d", idx);
    int cards = 1 + (int)rnd(8);
    const char *type = TYPES[rnd(3)];
    char reg[8192] = "[", score[8192] = "[";
    for (int c = 0; c < cards; c++) {
        char card[400];
        snprintf(card, sizeof(card),
                 "%s{\"id\":\"GPU-%d-%d\",\"index\":%d,\"count\":%d,\"devmem\":%d,\"devcore\":100,"
                 "\"type\":\"%s\",\"numa\":%d,\"health\":%s,\"mode\":\"hami-core\"}",
                 c ? "," : "", idx, c, c, 1 + (int)rnd(4), 4000 * (1 + (int)rnd(4)), type,
                 c * 2 >= cards, rnd(10) ? "true" : "false");
        strcat(reg, card);
        for (int d = 0; d < cards; d++) {
            if (d == c)
                continue;
            char pair[200];
            snprintf(pair, sizeof(pair), "%s{\"uuid\":\"GPU-%d-%d\",\"score\":{\"GPU-%d-%d\":%d}}",
                     strlen(score) > 1 ? "," : "", idx, c, idx, d, (int)rnd(100));
            strcat(score, pair);
        }
    }
    strcat(reg, "]");
    strcat(score, "]");
    tb_node(m, names[idx], reg, rnd(2) ? score : NULL, NULL);
    /* Usage: up to three pods, each with one device on a random card. */
    int pods = (int)rnd(4);
    for (int p = 0; p < pods; p++) {
        char uid[32];
        snprintf(uid, sizeof(uid), "use-%d-%d", idx, p);
        int card = (int)rnd((uint32_t)cards);
        char uuid[32];
        snprintf(uuid, sizeof(uuid), "GPU-%d-%d", idx, card);
        tb_use(m, uid, names[idx], uuid, 1, 1000 * (int)rnd(5), 25 * (int)rnd(5));
    }
}

/* A random pod: one GPU container (sometimes two, or an init container, which take the full
 * path everywhere), random amounts, policies, selectors. */
static void random_pod(struct vs_pod *p, int k, const char **node_policy, const char **gpu_policy)
{
    static const char *const NODE_POL[] = {"binpack", "spread"};
    static const char *const GPU_POL[] = {"binpack", "spread", "topology-aware", "mutex", "numa"};
    char uid[32], nums[8], mem[16], pct[8], cores[8];
    snprintf(uid, sizeof(uid), "uid-%d", k);
    tb_pod(p, "default", uid, uid);
    snprintf(nums, sizeof(nums), "%d", 1 + (int)rnd(3));
    /* One in eight asks more memory than any card has: refused everywhere. */
    snprintf(mem, sizeof(mem), "%d", rnd(8) ? 500 * (int)rnd(12) : 17000);
    snprintf(pct, sizeof(pct), "%d", 10 * (1 + (int)rnd(10)));
    snprintf(cores, sizeof(cores), "%d", 10 * (int)rnd(11));
    uint32_t amount = rnd(3);
    tb_ctr(p, 0, "main", nums, amount == 0 ? mem : NULL, amount == 1 ? pct : NULL,
           rnd(2) ? cores : NULL);
    uint32_t shape = rnd(8);
    if (shape == 0)
        tb_ctr(p, 0, "second", "1", "1000", NULL, NULL);
    else if (shape == 1)
        tb_ctr(p, 1, "init", "1", "2000", NULL, "50");
    else if (shape == 2)
        tb_ctr(p, 0, "no-gpu", NULL, NULL, NULL, NULL);
    uint32_t sel = rnd(6);
    if (sel == 0)
        tb_anno(p, VS_ANNO_USE_TYPE, TYPES[rnd(3)]);
    else if (sel == 1)
        tb_anno(p, VS_ANNO_NOUSE_TYPE, TYPES[rnd(3)]);
    else if (sel == 2)
        tb_anno(p, VS_ANNO_NUMA_BIND, "true");
    *node_policy = NODE_POL[rnd(2)];
    *gpu_policy = GPU_POL[rnd(5)];
}

/* Filter with lazy reasons (the extender's and simulate's setting) or the long way for every
 * node (full_walk: the reference). */
static void filter_words(const struct vs_model *m, const struct vs_pod *p, const char *np,
                         const char *gp, const char *const *cands, size_t n, bool lazy, bool full,
                         bool words, struct vs_filter_result *r)
{
    static struct vs_devcfg cfg;
    static int init;
    if (!init) {
        vs_devcfg_init(&cfg);
        init = 1;
    }
    struct vs_sched_opts o = {.cfg = &cfg,
                              .node_policy = np,
                              .gpu_policy = gp,
                              .lazy_reasons = lazy,
                              .full_walk = full,
                              .reason_words = words};
    if (vs_sched_filter(m, p, cands, n, &o, r))
        abort();
}

static void filter_opts(const struct vs_model *m, const struct vs_pod *p, const char *np,
                        const char *gp, const char *const *cands, size_t n, bool lazy, bool full,
                        struct vs_filter_result *r)
{
    filter_words(m, p, np, gp, cands, n, lazy, full, false, r);
}

/* The word bits a reason text names ("k/n Word, ..." or "NodeInsufficientDevice"). */
static uint32_t words_of(const char *reason)
{
    uint32_t w = 0;
    if (strcmp(reason, "NodeInsufficientDevice") == 0)
        return VS_REASON_NO_DEVICE_BIT;
    for (int i = 0; i < VS_REASON_COUNT; i++) {
        const char *at = strstr(reason, vs_reason_words[i]);
        size_t l = strlen(vs_reason_words[i]);
        if (at && at > reason && at[-1] == ' ' && (at[l] == '\0' || at[l] == ','))
            w |= 1u << i;
    }
    return w;
}

/* reason_words: a refusal's words as bits, exactly those of the text reason (or the text). */
static void check_words(const struct vs_filter_result *all, const struct vs_filter_result *wr,
                        uint64_t seed, int k)
{
    cr_assert_eq(wr->best, all->best);
    for (size_t i = 0; all->best < 0 && i < all->n; i++) {
        const struct vs_node_fit *a = &all->nodes[i], *w = &wr->nodes[i];
        if (w->reason) {
            cr_assert_eq(w->words, 0);
            cr_assert_str_eq(w->reason, a->reason);
            continue;
        }
        cr_assert_neq(w->words, 0, "seed %llu pod %d node %zu: neither words nor text",
                      (unsigned long long)seed, k, i);
        cr_assert_eq(w->words, words_of(a->reason), "seed %llu pod %d node %zu: %s",
                     (unsigned long long)seed, k, i, a->reason);
    }
}

/* Lazy reasons change nothing but the reason texts of refused nodes when some node fits. */
static void check_lazy(const struct vs_filter_result *all, const struct vs_filter_result *lazy,
                       uint64_t seed, int k)
{
    cr_assert_eq(lazy->best, all->best, "seed %llu pod %d", (unsigned long long)seed, k);
    for (size_t i = 0; i < all->n; i++) {
        const struct vs_node_fit *a = &all->nodes[i], *l = &lazy->nodes[i];
        cr_assert_eq(l->fit, a->fit, "seed %llu pod %d node %zu", (unsigned long long)seed, k, i);
        if (a->fit)
            cr_assert(l->score == a->score);
        else if (all->best < 0 || l->reason)
            cr_assert_str_eq(l->reason ? l->reason : "(none)", a->reason, "seed %llu pod %d",
                             (unsigned long long)seed, k);
    }
    if (all->best >= 0) {
        char *da = vs_annot_format_devices(&all->nodes[all->best].allocs[0].devs);
        char *dl = vs_annot_format_devices(&lazy->nodes[lazy->best].allocs[0].devs);
        cr_assert_str_eq(dl, da);
        free(da);
        free(dl);
    }
}

/* A model of N_NODES random nodes from the seed; cands[i] names node i (in names). */
static struct vs_model *random_cluster(uint64_t seed, char names[][16], const char **cands)
{
    rng_state = seed;
    struct vs_model *m = vs_model_new(NULL);
    for (int i = 0; i < N_NODES; i++) {
        random_node(m, i, names);
        cands[i] = names[i];
    }
    return m;
}

/* What the random cases covered: node verdicts, and pods placed or refused everywhere. */
struct coverage {
    size_t fits, refusals, chosen, none;
};

static void check_round(uint64_t seed, struct coverage *cov)
{
    char names[N_NODES][16];
    const char *cands[N_NODES];
    struct vs_model *m = random_cluster(seed, names, cands);
    for (int k = 0; k < 40; k++) {
        struct vs_pod p;
        const char *np, *gp;
        random_pod(&p, k, &np, &gp);
        struct vs_filter_result all;
        tb_filter(m, &p, np, gp, cands, N_NODES, &all);
        cr_assert_null(all.error, "seed %llu pod %d: %s", (unsigned long long)seed, k, all.error);
        for (size_t i = 0; i < all.n; i++)
            all.nodes[i].fit ? cov->fits++ : cov->refusals++;
        cov->chosen += all.best >= 0;
        cov->none += all.best < 0;
        struct vs_filter_result lazy;
        filter_opts(m, &p, np, gp, cands, N_NODES, true, false, &lazy);
        check_lazy(&all, &lazy, seed, k);
        vs_filter_result_cleanup(&lazy);
        struct vs_filter_result wr;
        filter_words(m, &p, np, gp, cands, N_NODES, true, false, true, &wr);
        check_words(&all, &wr, seed, k);
        vs_filter_result_cleanup(&wr);
        for (int i = 0; i < N_NODES; i++) {
            struct vs_filter_result one;
            filter_opts(m, &p, np, gp, &cands[i], 1, false, true, &one);
            const struct vs_node_fit *a = &all.nodes[i], *o = &one.nodes[0];
            cr_assert_eq(a->fit, o->fit, "seed %llu pod %d node %s: fit %d alone %d",
                         (unsigned long long)seed, k, cands[i], a->fit, o->fit);
            cr_assert_str_eq(a->reason ? a->reason : "", o->reason ? o->reason : "",
                             "seed %llu pod %d node %s", (unsigned long long)seed, k, cands[i]);
            if (a->fit)
                cr_assert(a->score == o->score, "score %f alone %f", a->score, o->score);
            if (all.best == i) {
                char *da = vs_annot_format_devices(&a->allocs[0].devs);
                char *dO = vs_annot_format_devices(&o->allocs[0].devs);
                cr_assert_str_eq(da, dO, "seed %llu pod %d node %s", (unsigned long long)seed, k,
                                 cands[i]);
                free(da);
                free(dO);
            }
            vs_filter_result_cleanup(&one);
        }
        /* Usage keeps changing: every other placement is committed as a reservation, and now
         * and then a running pod goes away. */
        struct vs_errbuf eb;
        if (all.best >= 0 && k % 2 == 0)
            cr_assert_eq(vs_sched_commit(m, &p, &all, 0, &eb), VS_OK, "%s", eb.msg);
        if (k % 5 == 4) {
            char uid[32];
            snprintf(uid, sizeof(uid), "use-%d-0", (int)rnd(N_NODES));
            vs_model_remove_pod(m, uid);
        }
        vs_filter_result_cleanup(&all);
        vs_pod_cleanup(&p);
    }
    vs_model_free(m);
}

Test(sched_equiv, every_verdict_matches_the_node_alone)
{
    struct coverage cov = {0};
    for (uint64_t seed = 1; seed <= 25; seed++)
        check_round(seed, &cov);
    /* The generator must exercise every outcome, or the comparison proves nothing. */
    cr_assert_gt(cov.fits, 2000, "fits %zu", cov.fits);
    cr_assert_gt(cov.refusals, 2000, "refusals %zu", cov.refusals);
    cr_assert_gt(cov.chosen, 500, "pods placed %zu", cov.chosen);
    cr_assert_gt(cov.none, 30, "pods refused everywhere %zu", cov.none);
}
