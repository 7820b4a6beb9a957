/* test_sched: the Filter engine against spec/hami-compat.md Appendix A (A.1–A.5) and our own
 * cases for each reason word, each policy and each selector. Every test asserts the exact chosen
 * node, device string or reason text. */
#include "builders.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

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

TestSuite(sched, .init = setup, .fini = teardown);

/* Two idle-or-used cards per node as in A.1: 8000 MiB, 100 cores, 10 slots. */
static void two_cards(const char *node, const char *a, const char *b, int mem)
{
    char c1[256], c2[256], reg[600];
    tb_card(c1, sizeof(c1), a, 0, 0, 10, mem, 100, 1);
    tb_card(c2, sizeof(c2), b, 1, 0, 10, mem, 100, 1);
    snprintf(reg, sizeof(reg), "[%s,%s]", c1, c2);
    tb_node(m, node, reg, NULL, NULL);
}

static void a1_cluster(void)
{
    two_cards("node1", "device1", "device2", 8000);
    two_cards("node2", "device3", "device4", 8000);
    tb_place(m, "pod1", "node1", "device1,NVIDIA,2000,25:;");
    tb_place(m, "pod2", "node2", "device4,NVIDIA,6000,75:;");
}

/* Criterion copies parameters into the test process: keep them free of pointers. */
struct a1_case {
    char node_policy[16], gpu_policy[16], node[16], devices[64];
};

ParameterizedTestParameters(sched, a1_policies)
{
    static struct a1_case cases[] = {
        {"binpack", "binpack", "node2", "device4,NVIDIA,1000,20:;"},
        {"binpack", "spread", "node2", "device3,NVIDIA,1000,20:;"},
        {"spread", "binpack", "node1", "device1,NVIDIA,1000,20:;"},
        {"spread", "spread", "node1", "device2,NVIDIA,1000,20:;"},
    };
    return cr_make_param_array(struct a1_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct a1_case *c, sched, a1_policies)
{
    a1_cluster();
    struct vs_pod p;
    tb_pod(&p, "default", "new", "uid-new");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "20");
    const char *cands[] = {"node1", "node2"};
    struct vs_filter_result r;
    tb_filter(m, &p, c->node_policy, c->gpu_policy, cands, 2, &r);
    cr_assert_null(r.error);
    cr_assert_geq(r.best, 0);
    cr_assert_str_eq(r.nodes[r.best].node, c->node);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, c->devices);
    free(d);
    /* Node scores of A.1: node1 3.0, node2 8.0 (float32). */
    cr_assert_float_eq(r.nodes[0].score, 3.0f, 1e-5);
    cr_assert_float_eq(r.nodes[1].score, 8.0f, 1e-5);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a1_5_init_and_app_containers)
{
    a1_cluster();
    struct vs_pod p;
    tb_pod(&p, "default", "new", "uid-new");
    tb_ctr(&p, 1, "init", "1", "5000", NULL, "20");
    tb_ctr(&p, 0, "app", "1", "4000", NULL, "20");
    const char *cands[] = {"node1", "node2"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "binpack", cands, 2, &r);
    cr_assert_str_eq(r.nodes[r.best].node, "node2");
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "device3,NVIDIA,5000,20:;device3,NVIDIA,4000,20:;");
    free(d);
    struct vs_errbuf eb;
    cr_assert_eq(vs_sched_commit(m, &p, &r, 100, &eb), VS_OK);
    /* Effective footprint: max(init, app) per dimension, one slot. */
    const struct vs_node *n = vs_model_node(m, "node2");
    cr_assert_eq(n->cards[0].usedmem, 5000);
    cr_assert_eq(n->cards[0].usedcores, 20);
    cr_assert_eq(n->cards[0].used, 1);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

/* ---- A.2 ---- */

static void one_card_node(const char *node, const char *uuid, int mem)
{
    char c[256], reg[300];
    tb_card(c, sizeof(c), uuid, 0, 0, 10, mem, 100, 1);
    snprintf(reg, sizeof(reg), "[%s]", c);
    tb_node(m, node, reg, NULL, NULL);
}

static void run1(const char *node_policy, const char *gpu_policy, struct vs_pod *p,
                 const char *const *cands, size_t n, struct vs_filter_result *r)
{
    tb_filter(m, p, node_policy, gpu_policy, cands, n, r);
    cr_assert_null(r->error, "unexpected pod error: %s", r->error);
}

Test(sched, a2_2_node_score_15)
{
    one_card_node("n", "uuid1", 8000);
    tb_use(m, "u", "n", "uuid1", 5, 4000, 50);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "30");
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", "spread", &p, cands, 1, &r);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "uuid1,NVIDIA,1000,30:;");
    cr_assert_float_eq(r.nodes[0].score, 15.0f, 1e-5);
    free(d);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a2_3_tie_later_card_first)
{
    two_cards("n", "uuid1", "uuid2", 8000);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "30");
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", "spread", &p, cands, 1, &r);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "uuid2,NVIDIA,1000,30:;");
    cr_assert_float_eq(r.nodes[0].score, 0.0f, 1e-6);
    free(d);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a2_4_spread_prefers_idle_card)
{
    two_cards("n", "uuid1", "uuid2", 8000);
    tb_use(m, "u", "n", "uuid2", 5, 4000, 50);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "30");
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", "spread", &p, cands, 1, &r);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "uuid1,NVIDIA,1000,30:;");
    cr_assert_float_eq(r.nodes[0].score, 7.5f, 1e-5);
    free(d);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a2_5_node_policy_choice)
{
    one_card_node("node1", "uuid1", 8000);
    one_card_node("node2", "uuid2", 8000);
    tb_use(m, "u", "node1", "uuid1", 5, 4000, 50);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "30");
    const char *cands[] = {"node1", "node2"};
    struct vs_filter_result r;
    run1("binpack", "spread", &p, cands, 2, &r);
    cr_assert_str_eq(r.nodes[r.best].node, "node1");
    cr_assert_float_eq(r.nodes[0].score, 15.0f, 1e-5);
    cr_assert_float_eq(r.nodes[1].score, 0.0f, 1e-6);
    vs_filter_result_cleanup(&r);
    run1("spread", "spread", &p, cands, 2, &r);
    cr_assert_str_eq(r.nodes[r.best].node, "node2");
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "uuid2,NVIDIA,1000,30:;");
    free(d);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a2_6_two_containers)
{
    two_cards("n", "uuid1", "uuid2", 8000);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c1", "1", "8000", NULL, "30");
    tb_ctr(&p, 0, "c2", "1", "1000", NULL, "30");
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", "spread", &p, cands, 1, &r);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "uuid2,NVIDIA,8000,30:;uuid1,NVIDIA,1000,30:;");
    free(d);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a2_7_entry_per_container_init_first)
{
    one_card_node("n", "uuid1", 8000);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 1, "init0", NULL, NULL, NULL, NULL);
    tb_ctr(&p, 1, "init1", "1", "1000", NULL, "30");
    tb_ctr(&p, 0, "app0", "1", "1000", NULL, "30");
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", "spread", &p, cands, 1, &r);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, ";uuid1,NVIDIA,1000,30:;uuid1,NVIDIA,1000,30:;");
    free(d);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a2_8_app_does_not_see_init)
{
    two_cards("n", "uuid1", "uuid2", 8000);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 1, "init", "1", "1000", NULL, "30");
    tb_ctr(&p, 0, "app", "1", "1000", NULL, "30");
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", "binpack", &p, cands, 1, &r);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "uuid2,NVIDIA,1000,30:;uuid2,NVIDIA,1000,30:;");
    free(d);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a2_9_no_fit_reasons)
{
    one_card_node("node1", "uuid1", 50);
    one_card_node("node2", "uuid2", 50);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "30");
    const char *cands[] = {"node1", "node2", "node3"};
    struct vs_filter_result r;
    run1("binpack", "spread", &p, cands, 3, &r);
    cr_assert_eq(r.best, -1);
    cr_assert_str_eq(r.nodes[0].reason, "1/1 CardInsufficientMemory");
    cr_assert_str_eq(r.nodes[1].reason, "1/1 CardInsufficientMemory");
    cr_assert_str_eq(r.nodes[2].reason, "node unregistered");
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

/* ---- A.3 fit matrix: cards of count 100 ----
 * HAMi's A3.11/A3.12 call Fit directly; through Filter the node-level device-count check
 * (§4.3 step 4) answers first, so those rows expect NodeInsufficientDevice here and the
 * AllocatedCardsInsufficientRequest count is covered by "insufficient-request". */

static void cards100(const char *node, int n, int mem, int health, const char *cordon)
{
    char reg[2048] = "[";
    for (int i = 0; i < n; i++) {
        char c[256], id[16];
        snprintf(id, sizeof(id), "dev-%d", i);
        tb_card(c, sizeof(c), id, i, 0, 100, mem, 100, health);
        if (i)
            strcat(reg, ",");
        strcat(reg, c);
    }
    strcat(reg, "]");
    tb_node(m, node, reg, NULL, cordon);
}

struct fit_case {
    char name[24];
    int cards, mem, health;
    char cordon[32];
    int used, usedmem, usedcores;             /* existing usage on dev-0 */
    char gpu[8], gpumem[8], pct[8], cores[8]; /* "" = absent */
    char anno_key[40], anno_val[24];
    char want_devices[48]; /* "" when no fit */
    char want_reason[96];
};

#define OPT(s) ((s)[0] ? (s) : NULL)

ParameterizedTestParameters(sched, a3_fit_matrix)
{
    static struct fit_case cases[] = {
        {"A3.1", 2, 128, 1, "", 0, 0, 0, "1", "64", "", "50", "", "", "dev-1,NVIDIA,64,50:;", ""},
        {"A3.2", 1, 128, 1, "", 0, 0, 0, "1", "512", "", "50", "", "", "",
         "1/1 CardInsufficientMemory"},
        {"A3.3", 1, 1024, 1, "", 1, 0, 100, "1", "512", "", "50", "", "", "",
         "1/1 CardInsufficientCore"},
        {"A3.5", 1, 1024, 1, "", 0, 0, 0, "2", "512", "", "50", "nvidia.com/use-gpuuuid", "dev-9",
         "", "NodeInsufficientDevice"},
        {"A3.5b", 2, 1024, 1, "", 0, 0, 0, "1", "512", "", "50", "nvidia.com/use-gpuuuid", "dev-9",
         "", "2/2 CardUuidMismatch"},
        {"A3.6", 1, 1024, 1, "", 0, 0, 0, "1", "512", "", "50", "nvidia.com/nouse-gpuuuid", "dev-0",
         "", "1/1 CardUuidMismatch"},
        {"A3.7", 1, 1024, 1, "", 100, 0, 0, "1", "512", "", "50", "", "", "",
         "1/1 CardTimeSlicingExhausted"},
        {"A3.8", 1, 1280, 1, "", 0, 0, 0, "1", "512", "", "120", "", "", "dev-0,NVIDIA,512,100:;",
         ""},
        {"A3.9", 1, 1280, 1, "", 20, 0, 0, "1", "512", "", "100", "", "", "",
         "1/1 ExclusiveDeviceAllocateConflict"},
        {"A3.10", 1, 1280, 1, "", 20, 0, 100, "1", "512", "", "0", "", "", "",
         "1/1 CardComputeUnitsExhausted"},
        {"A3.11", 1, 1280, 1, "", 20, 0, 10, "2", "512", "", "20", "nvidia.com/vgpu-mode",
         "hami-core", "", "NodeInsufficientDevice"},
        {"A3.12", 2, 1280, 1, "", 0, 0, 0, "3", "512", "", "20", "", "", "",
         "NodeInsufficientDevice"},
        {"A3.13", 1, 1280, 1, "", 20, 0, 10, "1", "", "10", "20", "", "", "dev-0,NVIDIA,128,20:;",
         ""},
        {"A3.14", 1, 1280, 0, "", 20, 0, 10, "1", "", "10", "20", "", "", "", "1/1 CardNotHealth"},
        {"A3.15", 2, 128, 1, "dev-0,dev-1", 0, 0, 0, "1", "64", "", "50", "", "", "",
         "2/2 CardCordoned"},
        {"A3.16", 2, 128, 1, "dev-1, ", 0, 0, 0, "1", "64", "", "50", "", "",
         "dev-0,NVIDIA,64,50:;", ""},
        {"A3.17", 1, 11264, 1, "", 0, 0, 0, "1", "", "0", "", "", "", "dev-0,NVIDIA,11264,0:;", ""},
        {"A3.18", 1, 11264, 1, "", 1, 11260, 0, "1", "", "0", "", "", "", "",
         "1/1 CardInsufficientMemory"},
        {"A3.19", 1, 8000, 1, "", 0, 0, 0, "2", "4000", "", "0", "nvidia.com/vgpu-mode",
         "hami-core", "", "NodeInsufficientDevice"},
        {"type-mismatch", 1, 8000, 1, "", 0, 0, 0, "1", "100", "", "", "nvidia.com/use-gputype",
         "V100", "", "1/1 CardTypeMismatch"},
        {"mode-mismatch", 1, 8000, 1, "", 0, 0, 0, "1", "100", "", "", "nvidia.com/vgpu-mode",
         "mig", "", "1/1 CardTypeMismatch"},
        {"insufficient-request", 2, 1280, 1, "", 0, 0, 0, "2", "1000", "", "",
         "nvidia.com/nouse-gpuuuid", "dev-0", "",
         "1/2 AllocatedCardsInsufficientRequest, 1/2 CardUuidMismatch"},
    };
    return cr_make_param_array(struct fit_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct fit_case *c, sched, a3_fit_matrix)
{
    cards100("n", c->cards, c->mem, c->health, OPT(c->cordon));
    if (c->used)
        tb_use(m, "existing", "n", "dev-0", c->used, c->usedmem, c->usedcores);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", OPT(c->gpu), OPT(c->gpumem), OPT(c->pct), OPT(c->cores));
    if (c->anno_key[0])
        tb_anno(&p, c->anno_key, c->anno_val);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", "spread", &p, cands, 1, &r);
    if (c->want_devices[0]) {
        cr_assert_geq(r.best, 0, "%s: no fit: %s", c->name, r.nodes[0].reason);
        char *d = tb_devices(&r);
        cr_assert_str_eq(d, c->want_devices, "%s", c->name);
        free(d);
    } else {
        cr_assert_eq(r.best, -1, "%s", c->name);
        cr_assert_str_eq(r.nodes[0].reason, c->want_reason, "%s", c->name);
    }
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

/* ---- A.4 NUMA, mutex, topology, weights ---- */

static void numa_node(const char *node, const char *const *ids, const int *numa, size_t n, int mem,
                      const char *score)
{
    char reg[4096] = "[";
    for (size_t i = 0; i < n; i++) {
        char c[256];
        tb_card(c, sizeof(c), ids[i], (int)i, numa[i], 10, mem, 100, 1);
        if (i)
            strcat(reg, ",");
        strcat(reg, c);
    }
    strcat(reg, "]");
    tb_node(m, node, reg, score, NULL);
}

static char *place_one(const char *gpu_policy, const char *numa_bind, const char *nums,
                       const char *mem, const char *pct, const char *cores, char **reason)
{
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", nums, mem, pct, cores);
    if (numa_bind)
        tb_anno(&p, VS_ANNO_NUMA_BIND, numa_bind);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", gpu_policy, &p, cands, 1, &r);
    char *d = tb_devices(&r);
    if (reason)
        *reason = r.best < 0 ? tb_strdup(r.nodes[0].reason) : NULL;
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
    return d;
}

Test(sched, a4_1_numa_bind_same_node)
{
    const char *ids[] = {"dev-0", "dev-1", "dev-2"};
    int numa[] = {1, 1, 0};
    numa_node("n", ids, numa, 3, 8192, NULL);
    char *d = place_one("spread", "true", "2", "100", NULL, "10", NULL);
    cr_assert_str_eq(d, "dev-1,NVIDIA,100,10:dev-0,NVIDIA,100,10:;");
    free(d);
}

Test(sched, a4_2_numa_bind_groups_cards)
{
    /* Scores A 5 > C 3 > B 1 via existing slots (count 10). */
    const char *ids[] = {"A", "B", "C"};
    int numa[] = {0, 0, 1};
    numa_node("n", ids, numa, 3, 8192, NULL);
    tb_use(m, "ua", "n", "A", 5, 0, 0);
    tb_use(m, "uc", "n", "C", 3, 0, 0);
    tb_use(m, "ub", "n", "B", 1, 0, 0);
    char *d = place_one("spread", "true", "2", "100", NULL, "10", NULL);
    cr_assert_str_eq(d, "B,NVIDIA,100,10:A,NVIDIA,100,10:;");
    free(d);
}

Test(sched, a4_3_spread_ignores_numa_without_bind)
{
    const char *ids[] = {"P", "Q", "R"};
    int numa[] = {0, 1, 1};
    numa_node("n", ids, numa, 3, 8192, NULL);
    tb_use(m, "uq", "n", "Q", 8, 0, 0);
    tb_use(m, "ur", "n", "R", 5, 0, 0);
    tb_use(m, "up", "n", "P", 1, 0, 0);
    char *d = place_one("spread", NULL, "1", "100", NULL, "10", NULL);
    cr_assert_str_eq(d, "P,NVIDIA,100,10:;");
    free(d);
}

Test(sched, a4_4_mutex)
{
    const char *ids[] = {"used", "idle"};
    int numa[] = {0, 0};
    numa_node("n", ids, numa, 2, 8192, NULL);
    tb_use(m, "u", "n", "used", 1, 0, 0);
    char *reason;
    char *d = place_one("mutex", NULL, "1", "100", NULL, "10", &reason);
    cr_assert_str_eq(d, "idle,NVIDIA,100,10:;");
    free(d);
    d = place_one("mutex", NULL, "2", "100", NULL, "10", &reason);
    cr_assert_str_eq(d, "");
    cr_assert_str_eq(reason, "1/2 AllocatedCardsInsufficientRequest, 1/2 "
                             "ExclusiveDeviceAllocateConflict");
    free(reason);
    free(d);
}

static void six_cards(const char *score)
{
    const char *ids[] = {"a", "b", "c", "d", "e", "f"};
    int numa[] = {0, 0, 1, 1, 1, 1};
    char reg[4096] = "[";
    for (size_t i = 0; i < 6; i++) {
        char c[256];
        tb_card(c, sizeof(c), ids[i], (int)i, numa[i], 4, 8192, 100, 1);
        if (i)
            strcat(reg, ",");
        strcat(reg, c);
    }
    strcat(reg, "]");
    tb_node(m, "n", reg, score, NULL);
    for (size_t i = 0; i < 6; i++) {
        char uid[8];
        snprintf(uid, sizeof(uid), "u%s", ids[i]);
        tb_use(m, uid, "n", ids[i], 1, 2048, 1);
    }
}

/* Pair-score annotation where every listed pair scores `hi` and the rest `lo`. */
static char *pair_scores(const char *const *hi_pairs, size_t n_hi, int hi, int lo)
{
    const char *ids[] = {"a", "b", "c", "d", "e", "f"};
    static char buf[4096];
    strcpy(buf, "[");
    for (size_t i = 0; i < 6; i++) {
        char e[512];
        snprintf(e, sizeof(e), "%s{\"uuid\":\"%s\",\"score\":{", i ? "," : "", ids[i]);
        strcat(buf, e);
        int first = 1;
        for (size_t j = 0; j < 6; j++) {
            if (i == j)
                continue;
            int s = lo;
            for (size_t k = 0; k < n_hi; k++)
                if ((hi_pairs[k][0] == ids[i][0] && hi_pairs[k][1] == ids[j][0]) ||
                    (hi_pairs[k][1] == ids[i][0] && hi_pairs[k][0] == ids[j][0]))
                    s = hi;
            snprintf(e, sizeof(e), "%s\"%s\":%d", first ? "" : ",", ids[j], s);
            strcat(buf, e);
            first = 0;
        }
        strcat(buf, "}}");
    }
    strcat(buf, "]");
    return buf;
}

Test(sched, a4_5_topology_best_connected_subset)
{
    const char *hi[] = {"fa", "fc"};
    six_cards(pair_scores(hi, 2, 100, 1));
    char *d = place_one("topology-aware", NULL, "3", "1024", NULL, "20", NULL);
    cr_assert_str_eq(d, "f,NVIDIA,1024,20:c,NVIDIA,1024,20:a,NVIDIA,1024,20:;");
    free(d);
}

Test(sched, a4_6_topology_worst_connected_single)
{
    const char *hi[] = {"ab", "ac", "ad", "ae", "bc", "bd", "be", "cd", "ce", "de"};
    six_cards(pair_scores(hi, 10, 100, 1));
    char *d = place_one("topology-aware", NULL, "1", "1024", NULL, "20", NULL);
    cr_assert_str_eq(d, "f,NVIDIA,1024,20:;");
    free(d);
}

static void three_topo(const char *score)
{
    const char *ids[] = {"dev-0", "dev-1", "dev-2"};
    int numa[] = {0, 0, 0};
    numa_node("n", ids, numa, 3, 8192, score);
}

Test(sched, a4_7_8_topology_sums)
{
    three_topo("[{\"uuid\":\"dev-0\",\"score\":{\"dev-1\":100,\"dev-2\":200}},"
               "{\"uuid\":\"dev-1\",\"score\":{\"dev-0\":100,\"dev-2\":150}},"
               "{\"uuid\":\"dev-2\",\"score\":{\"dev-0\":200,\"dev-1\":150}}]");
    char *d = place_one("topology-aware", NULL, "1", "100", NULL, "10", NULL);
    cr_assert_str_eq(d, "dev-1,NVIDIA,100,10:;");
    free(d);
    d = place_one("topology-aware", NULL, "2", "100", NULL, "10", NULL);
    /* Collection order is tail first (dev-2, dev-1, dev-0); {dev-2, dev-0} scores 200. */
    cr_assert_str_eq(d, "dev-2,NVIDIA,100,10:dev-0,NVIDIA,100,10:;");
    free(d);
}

Test(sched, a4_9_topology_negative_scores)
{
    three_topo("[{\"uuid\":\"dev-0\",\"score\":{\"dev-1\":-5,\"dev-2\":-3}},"
               "{\"uuid\":\"dev-1\",\"score\":{\"dev-0\":-5,\"dev-2\":-1}},"
               "{\"uuid\":\"dev-2\",\"score\":{\"dev-0\":-3,\"dev-1\":-1}}]");
    char *d = place_one("topology-aware", NULL, "1", "100", NULL, "10", NULL);
    cr_assert_str_eq(d, "dev-0,NVIDIA,100,10:;");
    free(d);
    d = place_one("topology-aware", NULL, "2", "100", NULL, "10", NULL);
    cr_assert_str_eq(d, "dev-2,NVIDIA,100,10:dev-1,NVIDIA,100,10:;");
    free(d);
}

static void weights_cards(const char *score)
{
    char c1[256], c2[256], reg[600];
    tb_card(c1, sizeof(c1), "gpu-a", 0, 0, 10, 100, 100, 1);
    tb_card(c2, sizeof(c2), "gpu-b", 1, 0, 10, 100, 100, 1);
    snprintf(reg, sizeof(reg), "[%s,%s]", c1, c2);
    tb_node(m, "n", reg, score, NULL);
    tb_use(m, "ua", "n", "gpu-a", 1, 10, 90);
    tb_use(m, "ub", "n", "gpu-b", 7, 20, 10);
}

static char *weighted(const char *policy, const char *weights)
{
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", NULL, "40", NULL);
    if (weights)
        tb_anno(&p, VS_ANNO_WEIGHTS, weights);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    run1("binpack", policy, &p, cands, 1, &r);
    char *d = tb_devices(&r);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
    return d;
}

Test(sched, a4_10_weights_binpack)
{
    weights_cards(NULL);
    char *d = weighted("binpack", NULL);
    cr_assert_str_eq(d, "gpu-a,NVIDIA,40,0:;");
    free(d);
    d = weighted("binpack", "slot=1,core=1,memory=3");
    cr_assert_str_eq(d, "gpu-b,NVIDIA,40,0:;");
    free(d);
}

Test(sched, a4_11_weights_topology)
{
    weights_cards("[{\"uuid\":\"gpu-a\",\"score\":{\"gpu-b\":1}},"
                  "{\"uuid\":\"gpu-b\",\"score\":{\"gpu-a\":1}}]");
    char *d = weighted("topology-aware", NULL);
    cr_assert_str_eq(d, "gpu-b,NVIDIA,40,0:;");
    free(d);
    d = weighted("topology-aware", "slot=1,core=1,memory=3");
    cr_assert_str_eq(d, "gpu-a,NVIDIA,40,0:;");
    free(d);
}

Test(sched, chain_binpack_numa)
{
    /* binpack,numa: lower score first, then lower NUMA; tail first = highest score. */
    const char *ids[] = {"x0", "y1", "z1"};
    int numa[] = {0, 1, 1};
    numa_node("n", ids, numa, 3, 8192, NULL);
    tb_use(m, "uz", "n", "z1", 2, 0, 0);
    tb_use(m, "ux", "n", "x0", 2, 0, 0);
    char *d = place_one("binpack,numa", NULL, "1", "100", NULL, "10", NULL);
    /* x0 and z1 tie on score; numa key puts x0 first, so z1 (numa 1) is tried first. */
    cr_assert_str_eq(d, "z1,NVIDIA,100,10:;");
    free(d);
    d = place_one("numa", NULL, "1", "100", NULL, "10", NULL);
    /* numa alone: lower NUMA first, then card index: order x0, y1, z1; z1 tried first. */
    cr_assert_str_eq(d, "z1,NVIDIA,100,10:;");
    free(d);
}

Test(sched, policy_names_are_case_insensitive_and_validated)
{
    one_card_node("n", "uuid1", 8000);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "30");
    tb_anno(&p, VS_ANNO_GPU_POLICY, "Binpack");
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_null(r.error);
    cr_assert_eq(r.best, 0);
    vs_filter_result_cleanup(&r);
    tb_anno(&p, VS_ANNO_GPU_POLICY, "fastest");
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_str_eq(r.error, "invalid hami.io/gpu-scheduler-policy \"fastest\": unknown policy "
                              "\"fastest\" (want binpack, spread, topology-aware, mutex, numa, "
                              "fragmentation or a comma list of them)");
    vs_filter_result_cleanup(&r);
    tb_anno(&p, VS_ANNO_GPU_POLICY, "spread");
    tb_anno(&p, VS_ANNO_NODE_POLICY, "packed");
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_str_eq(r.error, "invalid hami.io/node-scheduler-policy \"packed\": unknown policy "
                              "\"packed\" (want binpack, spread or fragmentation)");
    vs_filter_result_cleanup(&r);
    vs_kv_del(&p.annotations, VS_ANNO_NODE_POLICY);
    tb_anno(&p, VS_ANNO_WEIGHTS, "x");
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_str_eq(r.error, "calcScore failed invalid hami.io/device-scoring-weights annotation "
                              "\"x\": expected slot, core, and memory weights for pod p");
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, unmanaged_pod_passes_through)
{
    one_card_node("n", "uuid1", 8000);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", NULL, "1000", NULL, NULL);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_not(r.managed);
    cr_assert_eq(r.n, 0);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, bad_quantity_is_pod_error)
{
    one_card_node("n", "uuid1", 8000);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "main", "1", "8Gi", NULL, NULL);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert(r.managed);
    cr_assert_str_eq(r.error, "invalid nvidia.com/gpumem \"8Gi\" in container main: must be a "
                              "whole number of MiB between 0 and 2147483647");
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, malformed_register_reason)
{
    tb_node(m, "n", "[{\"id\":\"GPU-0\",\"count\":10.0}]", NULL, NULL);
    tb_node(m, "bare", NULL, NULL, NULL);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, NULL);
    const char *cands[] = {"n", "bare"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 2, &r);
    cr_assert_str_eq(r.nodes[0].reason,
                     "node unregistered: invalid hami.io/node-nvidia-register "
                     "\"[{\"id\":\"GPU-0\",\"count\":10.0}]\": device 0: field count: expected an "
                     "integer, got 10.0");
    cr_assert_str_eq(r.nodes[1].reason, "node unregistered");
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, malformed_allocation_fails_node_closed)
{
    one_card_node("n", "uuid1", 8000);
    tb_place(m, "bad", "n", "uuid1,NVIDIA,100:;");
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, NULL);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_str_eq(r.nodes[0].reason,
                     "node usage unavailable: pod default/bad: invalid "
                     "hami.io/vgpu-devices-allocated \"uuid1,NVIDIA,100:;\": device "
                     "\"uuid1,NVIDIA,100\" has 3 fields, want uuid,type,mem,cores");
    vs_filter_result_cleanup(&r);
    /* Fixing the pod's annotation makes the node usable again, with its usage counted. */
    tb_place(m, "bad", "n", "uuid1,NVIDIA,100,0:;");
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_eq(r.best, 0);
    cr_assert_eq(vs_model_node(m, "n")->cards[0].usedmem, 100);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, quota_not_fit)
{
    one_card_node("n", "uuid1", 8000);
    struct vs_kquota q = {0};
    q.ns = tb_strdup("team");
    q.name = tb_strdup("gpu");
    vs_kv_set(&q.hard, "limits.nvidia.com/gpumem", "3000");
    cr_assert_eq(vs_model_set_quota(m, &q), VS_OK);
    vs_kquota_cleanup(&q);
    struct vs_pod p;
    tb_pod(&p, "team", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "2000", NULL, NULL);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_eq(r.best, 0);
    struct vs_errbuf eb;
    cr_assert_eq(vs_sched_commit(m, &p, &r, 1, &eb), VS_OK);
    vs_filter_result_cleanup(&r);
    /* Re-filtering the same pod does not count its own reservation. */
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_eq(r.best, 0);
    vs_filter_result_cleanup(&r);
    struct vs_pod p2;
    tb_pod(&p2, "team", "p2", "uid-p2");
    tb_ctr(&p2, 0, "c", "1", "2000", NULL, NULL);
    tb_filter(m, &p2, "binpack", "spread", cands, 1, &r);
    cr_assert_str_eq(r.nodes[0].reason, "1/1 ResourceQuotaNotFit");
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
    vs_pod_cleanup(&p2);
}

Test(sched, commit_detects_concurrent_change)
{
    one_card_node("n", "uuid1", 8000);
    struct vs_pod a, b;
    tb_pod(&a, "default", "a", "uid-a");
    tb_ctr(&a, 0, "c", "1", "6000", NULL, NULL);
    tb_pod(&b, "default", "b", "uid-b");
    tb_ctr(&b, 0, "c", "1", "6000", NULL, NULL);
    const char *cands[] = {"n"};
    struct vs_filter_result ra, rb;
    tb_filter(m, &a, "binpack", "spread", cands, 1, &ra);
    tb_filter(m, &b, "binpack", "spread", cands, 1, &rb);
    struct vs_errbuf eb;
    cr_assert_eq(vs_sched_commit(m, &a, &ra, 1, &eb), VS_OK);
    cr_assert_eq(vs_sched_commit(m, &b, &rb, 1, &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg, "node n changed during filter");
    vs_filter_result_cleanup(&rb);
    tb_filter(m, &b, "binpack", "spread", cands, 1, &rb);
    cr_assert_eq(rb.best, -1);
    cr_assert_str_eq(rb.nodes[0].reason, "1/1 CardInsufficientMemory");
    vs_filter_result_cleanup(&ra);
    vs_filter_result_cleanup(&rb);
    vs_pod_cleanup(&a);
    vs_pod_cleanup(&b);
}

Test(sched, gputype_selectors)
{
    const char *reg = "[{\"id\":\"g0\",\"count\":10,\"devmem\":40960,\"devcore\":100,"
                      "\"type\":\"NVIDIA A100-SXM4-40GB\",\"health\":true},"
                      "{\"id\":\"g1\",\"index\":1,\"count\":10,\"devmem\":16384,\"devcore\":100,"
                      "\"type\":\"NVIDIA-Tesla T4\",\"health\":true}]";
    tb_node(m, "n", reg, NULL, NULL);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, NULL);
    tb_anno(&p, VS_ANNO_USE_TYPE, "a10");
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "g0,NVIDIA,1000,0:;"); /* substring: A10 matches A100 */
    free(d);
    vs_filter_result_cleanup(&r);
    vs_kv_del(&p.annotations, VS_ANNO_USE_TYPE);
    tb_anno(&p, VS_ANNO_NOUSE_TYPE, "A100");
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    d = tb_devices(&r);
    cr_assert_str_eq(d, "g1,NVIDIA,1000,0:;");
    free(d);
    vs_filter_result_cleanup(&r);
    tb_anno(&p, VS_ANNO_USE_UUID, "g0");
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_str_eq(r.nodes[0].reason, "1/2 CardTypeMismatch, 1/2 CardUuidMismatch");
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

/* ---- A.5 MIG ---- */

static void mig_node(const char *placements)
{
    char reg[1024];
    snprintf(reg, sizeof(reg),
             "[{\"id\":\"GPU-a\",\"count\":7,\"devmem\":40960,\"devcore\":100,"
             "\"type\":\"NVIDIA-A100-SXM4-40GB\",\"health\":true,\"mode\":\"mig\","
             "\"migProfiles\":[{\"name\":\"1g.5gb\",\"memoryMB\":5120,\"core\":14,"
             "\"sliceCount\":1,\"placements\":[%s]}]}]",
             placements);
    tb_node(m, "n", reg, NULL, NULL);
}

static void mig_pod(struct vs_pod *p)
{
    tb_pod(p, "default", "p", "uid-p");
    tb_ctr(p, 0, "c", "2", "4000", NULL, NULL);
    tb_anno(p, VS_ANNO_VGPU_MODE, "mig");
}

Test(sched, a5_1_two_instances_on_one_card)
{
    mig_node("{\"start\":0,\"size\":1},{\"start\":1,\"size\":1},{\"start\":2,\"size\":1},"
             "{\"start\":3,\"size\":1},{\"start\":4,\"size\":1},{\"start\":5,\"size\":1},"
             "{\"start\":6,\"size\":1}");
    struct vs_pod p;
    mig_pod(&p);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_eq(r.best, 0, "%s", r.nodes[0].reason);
    char *d = tb_devices(&r);
    cr_assert_str_eq(d, "GPU-a,NVIDIA,5120,14:GPU-a,NVIDIA,5120,14:;");
    free(d);
    char *mj = vs_annot_format_mig(&r.nodes[0].mig);
    cr_assert_str_eq(mj, "[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\","
                         "\"profile\":\"1g.5gb\",\"placement\":{\"start\":6,\"size\":1}},"
                         "{\"containerIndex\":0,\"deviceIndex\":1,\"gpuUUID\":\"GPU-a\","
                         "\"profile\":\"1g.5gb\",\"placement\":{\"start\":5,\"size\":1}}]");
    free(mj);
    /* After commit the card holds both placements; a third pod gets starts 4 and 3. */
    struct vs_errbuf eb;
    cr_assert_eq(vs_sched_commit(m, &p, &r, 1, &eb), VS_OK);
    const struct vs_card *c = &vs_model_node(m, "n")->cards[0];
    cr_assert_eq(c->n_occ, 2);
    cr_assert_not(c->mig_unhealthy);
    vs_filter_result_cleanup(&r);
    struct vs_pod q;
    mig_pod(&q);
    free(q.uid);
    q.uid = tb_strdup("uid-q");
    tb_filter(m, &q, "binpack", "spread", cands, 1, &r);
    mj = vs_annot_format_mig(&r.nodes[0].mig);
    cr_assert(strstr(mj, "\"start\":4") && strstr(mj, "\"start\":3"), "%s", mj);
    free(mj);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&q);
    vs_pod_cleanup(&p);
}

/* A pod annotated with a MIG placement but never bound: after the reservation TTL its
 * placement is free again (like its usage), and it counts again once the pod is bound. */
Test(sched, a5_expired_unbound_pod_frees_its_placement)
{
    mig_node("{\"start\":0,\"size\":1},{\"start\":6,\"size\":1}");
    struct vs_pod p;
    tb_pod(&p, "default", "late", "uid-late");
    tb_anno(&p, VS_ANNO_VGPU_NODE, "n");
    tb_anno(&p, VS_ANNO_VGPU_TIME, "100");
    tb_anno(&p, VS_ANNO_ALLOCATED, "GPU-a,NVIDIA,5120,14:;");
    tb_anno(&p, VS_ANNO_MIG_ALLOC,
            "[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\",\"profile\":\"1g."
            "5gb\",\"placement\":{\"start\":6,\"size\":1}}]");
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK);
    const struct vs_card *c = &vs_model_node(m, "n")->cards[0];
    cr_assert_eq(c->n_occ, 1);
    cr_assert_eq(vs_model_expire(m, 1000, 300), 1);
    cr_assert_eq(c->n_occ, 0);
    cr_assert_eq(c->used, 0);
    free(p.node_name);
    p.node_name = tb_strdup("n");
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK);
    cr_assert_eq(c->n_occ, 1);
    cr_assert_eq(c->occ[0].placement.start, 6);
    cr_assert_eq(c->used, 1);
    vs_pod_cleanup(&p);
}

Test(sched, a5_2_fragmentation)
{
    mig_node("{\"start\":6,\"size\":1}");
    struct vs_pod p;
    mig_pod(&p);
    const char *cands[] = {"n"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "spread", cands, 1, &r);
    cr_assert_eq(r.best, -1);
    cr_assert_str_eq(r.nodes[0].reason,
                     "1/1 AllocatedCardsInsufficientRequest, 1/1 CardMigTopologyInfeasible");
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

Test(sched, a5_3_a5_4_occupancy_from_pods)
{
    mig_node("{\"start\":0,\"size\":1},{\"start\":6,\"size\":1}");
    struct vs_pod p;
    tb_pod(&p, "default", "old", "uid-old");
    free(p.phase);
    p.phase = tb_strdup("Running");
    tb_anno(&p, VS_ANNO_VGPU_NODE, "n");
    tb_anno(&p, VS_ANNO_ALLOCATED, "GPU-a,NVIDIA,5120,14:;");
    tb_anno(&p, VS_ANNO_MIG_ALLOC,
            "[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\",\"profile\":\"1g."
            "5gb\",\"placement\":{\"start\":6,\"size\":1},\"migUUID\":\"MIG-a\","
            "\"gpuInstanceID\":7,\"computeInstanceID\":0}]");
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK);
    const struct vs_card *c = &vs_model_node(m, "n")->cards[0];
    cr_assert_eq(c->n_occ, 1);
    cr_assert_eq(c->occ[0].placement.start, 6);
    cr_assert_not(c->mig_unhealthy);
    /* Without the MIG annotation the card fails closed (A5.4). */
    vs_kv_del(&p.annotations, VS_ANNO_MIG_ALLOC);
    tb_anno(&p, VS_ANNO_ALLOCATED, "GPU-a,NVIDIA,5120,14:;GPU-a,NVIDIA,0,0:;");
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK);
    c = &vs_model_node(m, "n")->cards[0];
    cr_assert(c->mig_unhealthy);
    vs_pod_cleanup(&p);
}

/* --bind-queue-depth: a busy node that fits ranks after every fitting node that is not busy;
 * among busy nodes (and among the others) the node policy decides; none busy = the policy. */
/* wanted: vs_sched_opts.idle_cards_wanted (pods taking whole cards on their way). */
static void filter_ranked_cards(const char *policy, const char *cards, bool wanted,
                                const char *const *busy, const unsigned *rank, size_t n_busy,
                                const char *want)
{
    static struct vs_devcfg cfg;
    static int init;
    if (!init) {
        vs_devcfg_init(&cfg);
        init = 1;
    }
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "30");
    const char *cands[] = {"node1", "node2", "node3"};
    struct vs_sched_opts o = {.cfg = &cfg,
                              .node_policy = policy,
                              .gpu_policy = cards,
                              .busy = busy,
                              .busy_rank = rank,
                              .n_busy = n_busy,
                              .idle_cards_wanted = wanted};
    struct vs_filter_result r;
    cr_assert_eq(vs_sched_filter(m, &p, cands, 3, &o, &r), VS_OK);
    cr_assert_geq(r.best, 0);
    cr_assert_str_eq(r.nodes[r.best].node, want, "%s/%s wanted=%d busy=%zu: %s", policy, cards,
                     wanted, n_busy, r.nodes[r.best].node);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

static void filter_ranked(const char *policy, const char *const *busy, const unsigned *rank,
                          size_t n_busy, const char *want)
{
    filter_ranked_cards(policy, "spread", true, busy, rank, n_busy, want);
}

static void filter_busy(const char *policy, const char *const *busy, size_t n_busy,
                        const char *want)
{
    filter_ranked(policy, busy, NULL, n_busy, want);
}

/* node1 the most used, node2 less, node3 idle: binpack prefers node1, spread node3. */
static void three_nodes_two_used(void)
{
    one_card_node("node1", "uuid1", 8000);
    one_card_node("node2", "uuid2", 8000);
    one_card_node("node3", "uuid3", 8000);
    tb_use(m, "u1", "node1", "uuid1", 5, 4000, 50); /* most used */
    tb_use(m, "u2", "node2", "uuid2", 2, 2000, 20);
}

Test(sched, busy_nodes_rank_after_the_others)
{
    three_nodes_two_used();
    const char *n1[] = {"node1"}, *n12[] = {"node1", "node2"}, *all[] = {"node1", "node2", "node3"};
    const char *n3[] = {"node3"};
    filter_busy("binpack", NULL, 0, "node1");
    filter_busy("binpack", n1, 1, "node2");
    filter_busy("binpack", n12, 2, "node3");
    filter_busy("binpack", all, 3, "node1");
    filter_busy("spread", NULL, 0, "node3");
    filter_busy("spread", n3, 1, "node2");
    /* a busy node that does not fit changes nothing */
    const char *ghost[] = {"node0"};
    filter_busy("binpack", ghost, 1, "node1");
}

/* Saturated nodes (vs_bindq_busy's rank SATURATED + Binds) rank after busy ones (their
 * layer), and among themselves by their rank; equal ranks leave it to the policy. */
Test(sched, saturated_nodes_rank_by_their_queue)
{
    three_nodes_two_used();
    const char *all[] = {"node1", "node2", "node3"};
    const unsigned S = VS_SCHED_RANK_SATURATED;
    const unsigned busy3[] = {1, 1, 1}, sat1[] = {S + 9, 1, 1}, sat12[] = {S + 9, S + 7, 1},
                   sat_all[] = {S + 9, S + 7, S + 8}, tie[] = {S + 7, S + 7, S + 7};
    filter_ranked("binpack", all, busy3, 3, "node1");
    filter_ranked("binpack", all, sat1, 3, "node2");
    filter_ranked("binpack", all, sat12, 3, "node3");
    filter_ranked("binpack", all, sat_all, 3, "node2");
    filter_ranked("binpack", all, tie, 3, "node1");
    filter_ranked("spread", all, tie, 3, "node3");
}

/* Busy nodes rank by their layer (Binds / depth) for a pod whose card policy packs, so a burst
 * fills every node to the depth before any gets more; for one whose card policy spreads shares
 * (HAMi's default) every layer is 1 and binpack keeps the fullest busy node. Saturation ranks
 * after every layer either way. */
/* Busy nodes rank by layer; for a pod whose cards spread shares, only while no pod taking whole
 * cards is on its way: then every layer counts as 1 and the node policy piles (binpack: node1,
 * the fullest), so the shares leave the other nodes' idle cards alone. */
Test(sched, busy_layers_count_unless_spread_shares_would_take_idle_cards_whole_ones_wait_for)
{
    three_nodes_two_used();
    const char *all[] = {"node1", "node2", "node3"}, *n12[] = {"node1", "node2"};
    const unsigned S = VS_SCHED_RANK_SATURATED;
    const unsigned l211[] = {2, 1, 1}, l221[] = {2, 2, 1}, l12[] = {2, 1}, sat[] = {S + 4, 3, 3};
    for (int w = 0; w < 2; w++) {
        filter_ranked_cards("binpack", "binpack", w, all, l211, 3, "node2");
        filter_ranked_cards("binpack", "binpack", w, all, l221, 3, "node3");
        filter_ranked_cards("binpack", "binpack", w, n12, l12, 2, "node3"); /* not busy: rank 0 */
        filter_ranked_cards("binpack", "fragmentation", w, all, l211, 3, "node2");
        filter_ranked_cards("binpack", "binpack,numa", w, all, l211, 3, "node2");
        filter_ranked_cards("binpack", "numa", w, all, l211, 3, "node2");
        filter_ranked_cards("binpack", "spread", w, n12, l12, 2, "node3");
        filter_ranked_cards("binpack", "spread", w, all, sat, 3, "node2");
        filter_ranked_cards("binpack", "binpack", w, all, sat, 3, "node2");
        filter_ranked_cards("spread", "binpack", w, all, l221, 3, "node3");
    }
    /* Spread shares while whole-card pods wait: every busy node alike, binpack piles. */
    filter_ranked_cards("binpack", "spread", true, all, l211, 3, "node1");
    filter_ranked_cards("binpack", "spread", true, all, l221, 3, "node1");
    filter_ranked_cards("binpack", "numa,spread", true, all, l211, 3, "node1");
    filter_ranked_cards("binpack", "topology-aware", true, all, l211, 3, "node1");
    /* ... and with none waiting they take the lowest layer like any other pod. */
    filter_ranked_cards("binpack", "spread", false, all, l211, 3, "node2");
    filter_ranked_cards("binpack", "spread", false, all, l221, 3, "node3");
    filter_ranked_cards("binpack", "numa,spread", false, all, l211, 3, "node2");
    filter_ranked_cards("binpack", "topology-aware", false, all, l211, 3, "node2");
}
