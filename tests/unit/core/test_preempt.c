/* test_preempt: victim selection and plan ranking. Every test asserts the exact victims (by
 * name, in the plan's order) or that no plan exists. */
#include "builders.h"
#include "extargs.h"
#include "extender.h"
#include "frag.h"
#include "k8s_codec.h"
#include "preempt.h"

#include <criterion/criterion.h>

static struct vs_model *m;
static struct vs_devcfg cfg;
static struct vs_sched_opts so;
static struct vs_preempt_opts po;

static void setup(void)
{
    m = vs_model_new(NULL);
    vs_devcfg_init(&cfg);
    so = (struct vs_sched_opts){.cfg = &cfg, .node_policy = "binpack", .gpu_policy = "spread"};
    po = (struct vs_preempt_opts){.sched = &so};
}

static void teardown(void)
{
    vs_model_free(m);
    vs_devcfg_cleanup(&cfg);
    m = NULL;
}

TestSuite(preempt, .init = setup, .fini = teardown);

/* A node with `n` cards GPU-<node>-<i> of 8000 MiB, 100 cores, 10 slots. */
static void node(const char *name, int n)
{
    char reg[2048] = "[", c[256], id[64];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "GPU-%s-%d", name, i);
        tb_card(c, sizeof(c), id, i, 0, 10, 8000, 100, 1);
        strcat(reg, i ? "," : "");
        strcat(reg, c);
    }
    strcat(reg, "]");
    tb_node(m, name, reg, NULL, NULL);
}

/* A running pod ns "team", uid = name, bound to node, holding alloc. */
static void placed(const char *name, const char *nodename, const char *alloc, int32_t prio,
                   int64_t start, const char *label)
{
    struct vs_pod p;
    tb_pod(&p, "team", name, name);
    free(p.phase);
    p.phase = tb_strdup("Running");
    free(p.node_name);
    p.node_name = tb_strdup(nodename);
    p.priority = prio;
    p.start_time = start;
    if (label)
        vs_kv_set(&p.labels, "app", label);
    tb_anno(&p, VS_ANNO_VGPU_NODE, nodename);
    tb_anno(&p, VS_ANNO_ALLOCATED, alloc);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK, "%s", eb.msg);
    vs_pod_cleanup(&p);
}

/* `mem` MiB and `cores` on card i of node. */
static void on_card(const char *name, const char *nodename, int card, int mem, int cores,
                    int32_t prio, int64_t start)
{
    char alloc[128];
    snprintf(alloc, sizeof(alloc), "GPU-%s-%d,NVIDIA,%d,%d:;", nodename, card, mem, cores);
    placed(name, nodename, alloc, prio, start, NULL);
}

static void preemptor(struct vs_pod *p, int32_t prio, const char *gpus, const char *mem,
                      const char *cores)
{
    tb_pod(p, "team", "hi", "uid-hi");
    p->priority = prio;
    tb_ctr(p, 0, "c", gpus, mem, NULL, cores);
}

/* "a,b,c" of the plan's victims. */
static char *victims(const struct vs_preempt_plan *pl)
{
    static char buf[512];
    buf[0] = '\0';
    for (size_t i = 0; i < pl->n; i++) {
        strcat(buf, i ? "," : "");
        strcat(buf, pl->victims[i]->name);
    }
    return buf;
}

static char *plan_on(const struct vs_pod *p, const char *nodename, bool *found,
                     struct vs_preempt_plan *pl)
{
    cr_assert_eq(vs_preempt_node(m, p, nodename, NULL, 0, &po, pl, found), VS_OK);
    return *found ? victims(pl) : NULL;
}

Test(preempt, minimal_set_is_the_cheaper_card)
{
    node("n1", 2);
    on_card("a1", "n1", 0, 3000, 10, 0, 100);
    on_card("a2", "n1", 0, 3000, 10, 0, 200);
    on_card("b1", "n1", 1, 2000, 10, 0, 100);
    on_card("b2", "n1", 1, 2000, 10, 0, 200);
    on_card("b3", "n1", 1, 2000, 10, 0, 300);
    struct vs_pod p;
    preemptor(&p, 100, "1", "8000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "a1,a2");
    cr_assert_eq(pl.pdb_violations, 0);
    cr_assert_eq(pl.max_priority, 0);
    cr_assert_eq(pl.priority_sum, 2 * ((int64_t)INT32_MAX + 1));
    cr_assert_eq(pl.earliest_top, 100);
    /* The fit with the victims gone places the pod on the freed card. */
    char *d = tb_devices(&pl.fit);
    cr_assert_str_eq(d, "GPU-n1-0,NVIDIA,8000,0:;");
    free(d);
    vs_preempt_plan_cleanup(&pl);
    /* Half a card: the one pod of card 0 that frees enough, the least important one. */
    vs_pod_cleanup(&p);
    preemptor(&p, 100, "1", "4000", NULL);
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "b3");
    vs_preempt_plan_cleanup(&pl);
    vs_pod_cleanup(&p);
}

Test(preempt, equal_or_higher_priority_never_a_victim)
{
    node("n1", 1);
    on_card("same", "n1", 0, 4000, 10, 100, 100);
    on_card("low", "n1", 0, 4000, 10, 5, 100);
    struct vs_pod p;
    preemptor(&p, 100, "1", "8000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_null(plan_on(&p, "n1", &found, &pl));
    cr_assert_not(found);
    /* 4000 MiB: evicting the lower one is enough. */
    vs_pod_cleanup(&p);
    preemptor(&p, 100, "1", "4000", NULL);
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "low");
    vs_preempt_plan_cleanup(&pl);
    /* Priority 5 cannot evict priority 5. */
    vs_pod_cleanup(&p);
    preemptor(&p, 5, "1", "4000", NULL);
    cr_assert_null(plan_on(&p, "n1", &found, &pl));
    vs_pod_cleanup(&p);
}

Test(preempt, policy_never_gives_no_plan)
{
    node("n1", 1);
    on_card("low", "n1", 0, 8000, 10, 0, 100);
    struct vs_pod p;
    preemptor(&p, 100, "1", "4000", NULL);
    p.preempt_never = true;
    cr_assert_not(vs_preempt_allowed(&p));
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_null(plan_on(&p, "n1", &found, &pl));
    const char *cands[] = {"n1"};
    struct vs_preempt_plan *plans;
    size_t n;
    cr_assert_eq(vs_preempt_plans(m, &p, cands, 1, &po, &plans, &n), VS_OK);
    cr_assert_eq(n, 0);
    vs_preempt_plans_free(plans, n);
    vs_pod_cleanup(&p);
}

Test(preempt, nothing_fits_even_with_everything_gone)
{
    node("n1", 1);
    on_card("low", "n1", 0, 2000, 10, 0, 100);
    struct vs_pod p;
    preemptor(&p, 100, "1", "9000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_null(plan_on(&p, "n1", &found, &pl));
    vs_pod_cleanup(&p);
}

Test(preempt, exclusive_request_needs_an_empty_card)
{
    node("n1", 2);
    on_card("a", "n1", 0, 1000, 10, 0, 100);
    on_card("b1", "n1", 1, 500, 5, 0, 100);
    on_card("b2", "n1", 1, 500, 5, 0, 100);
    struct vs_pod p;
    preemptor(&p, 10, "1", "1000", "100");
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "a");
    char *d = tb_devices(&pl.fit);
    cr_assert_str_eq(d, "GPU-n1-0,NVIDIA,1000,100:;");
    free(d);
    vs_preempt_plan_cleanup(&pl);
    vs_pod_cleanup(&p);
}

Test(preempt, multi_gpu_pod)
{
    node("n1", 3);
    on_card("x", "n1", 0, 6000, 10, 3, 100);
    on_card("y", "n1", 1, 6000, 10, 1, 100);
    on_card("z", "n1", 2, 6000, 10, 2, 100);
    struct vs_pod p;
    preemptor(&p, 10, "2", "8000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    /* Two whole cards: the two lowest priorities, most important first. */
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "z,y");
    cr_assert_eq(pl.max_priority, 2);
    vs_preempt_plan_cleanup(&pl);
    vs_pod_cleanup(&p);
    /* A pod spread over two cards is one victim that frees both. */
    node("n2", 2);
    placed("wide", "n2", "GPU-n2-0,NVIDIA,7000,10:GPU-n2-1,NVIDIA,7000,10:;", 1, 100, NULL);
    preemptor(&p, 10, "2", "8000", NULL);
    cr_assert_str_eq(plan_on(&p, "n2", &found, &pl), "wide");
    vs_preempt_plan_cleanup(&pl);
    vs_pod_cleanup(&p);
}

Test(preempt, lower_highest_priority_beats_fewer_victims)
{
    node("n1", 2);
    on_card("mid", "n1", 0, 8000, 10, 50, 100);
    on_card("l1", "n1", 1, 4000, 10, 10, 100);
    on_card("l2", "n1", 1, 4000, 10, 10, 200);
    struct vs_pod p;
    preemptor(&p, 100, "1", "8000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "l1,l2");
    vs_preempt_plan_cleanup(&pl);
    vs_pod_cleanup(&p);
}

static struct vs_pdb pdb_for(const char *app, int32_t allowed)
{
    struct vs_pdb d = {0};
    d.ns = tb_strdup("team");
    d.name = tb_strdup(app);
    d.has_selector = true;
    vs_kv_set(&d.match_labels, "app", app);
    d.allowed = allowed;
    return d;
}

Test(preempt, pdb_protected_pods_spared_when_another_plan_exists)
{
    node("n1", 2);
    placed("guarded", "n1", "GPU-n1-0,NVIDIA,8000,10:;", 0, 100, "db");
    placed("free1", "n1", "GPU-n1-1,NVIDIA,4000,10:;", 0, 100, "nb");
    placed("free2", "n1", "GPU-n1-1,NVIDIA,4000,10:;", 0, 200, "nb");
    struct vs_pdb pdbs[2] = {pdb_for("db", 0), pdb_for("nb", 5)};
    po.pdbs = pdbs;
    po.n_pdbs = 2;
    struct vs_pod p;
    preemptor(&p, 100, "1", "8000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "free1,free2");
    cr_assert_eq(pl.pdb_violations, 0);
    vs_preempt_plan_cleanup(&pl);
    /* With one disruption of "nb" allowed, evicting both violates once, as does evicting the
     * guarded pod: equal violations, and the smaller priority sum (one victim) wins. */
    pdbs[1].allowed = 1;
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "guarded");
    cr_assert_eq(pl.pdb_violations, 1);
    vs_preempt_plan_cleanup(&pl);
    /* Across nodes: a node whose plan violates nothing ranks first. */
    node("n2", 1);
    placed("other", "n2", "GPU-n2-0,NVIDIA,8000,10:;", 0, 100, "x");
    const char *cands[] = {"n1", "n2"};
    struct vs_preempt_plan *plans;
    size_t n;
    cr_assert_eq(vs_preempt_plans(m, &p, cands, 2, &po, &plans, &n), VS_OK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(plans[0].node, "n2");
    cr_assert_str_eq(victims(&plans[0]), "other");
    cr_assert_str_eq(plans[1].node, "n1");
    vs_preempt_plans_free(plans, n);
    vs_pdb_cleanup(&pdbs[0]);
    vs_pdb_cleanup(&pdbs[1]);
    vs_pod_cleanup(&p);
}

Test(preempt, plans_ranked_across_nodes)
{
    node("n1", 1);
    node("n2", 1);
    node("n3", 1);
    on_card("p10", "n1", 0, 8000, 10, 10, 100);
    on_card("p5", "n2", 0, 8000, 10, 5, 100);
    on_card("free", "n3", 0, 1000, 10, 0, 100);
    struct vs_pod p;
    preemptor(&p, 100, "1", "8000", NULL);
    const char *cands[] = {"n1", "n2", "n3"};
    struct vs_preempt_plan *plans;
    size_t n;
    cr_assert_eq(vs_preempt_plans(m, &p, cands, 3, &po, &plans, &n), VS_OK);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(plans[0].node, "n3");
    cr_assert_str_eq(plans[1].node, "n2");
    cr_assert_str_eq(plans[2].node, "n1");
    vs_preempt_plans_free(plans, n);
    /* Same priorities: the node whose top victim started last ranks first. */
    vs_pod_cleanup(&p);
    preemptor(&p, 100, "1", "8000", NULL);
    on_card("p5b", "n1", 0, 8000, 10, 5, 500);
    vs_model_remove_pod(m, "p10");
    vs_model_remove_pod(m, "free");
    on_card("free", "n3", 0, 8000, 10, 7, 100);
    cr_assert_eq(vs_preempt_plans(m, &p, cands, 3, &po, &plans, &n), VS_OK);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(plans[0].node, "n1");
    cr_assert_str_eq(plans[1].node, "n2");
    cr_assert_str_eq(plans[2].node, "n3");
    vs_preempt_plans_free(plans, n);
    vs_pod_cleanup(&p);
}

Test(preempt, terminating_pods_are_never_victims)
{
    node("n1", 1);
    on_card("going", "n1", 0, 4000, 10, 0, 100);
    on_card("staying", "n1", 0, 4000, 10, 0, 100);
    struct vs_pod t;
    tb_pod(&t, "team", "going", "going");
    t.deleting = true;
    tb_anno(&t, VS_ANNO_VGPU_NODE, "n1");
    tb_anno(&t, VS_ANNO_ALLOCATED, "GPU-n1-0,NVIDIA,4000,10:;");
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &t, &eb), VS_OK);
    vs_pod_cleanup(&t);
    struct vs_pod p;
    preemptor(&p, 100, "1", "4000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "staying");
    vs_preempt_plan_cleanup(&pl);
    /* The terminating pod still counts: 8000 MiB needs both, and it cannot be chosen. */
    vs_pod_cleanup(&p);
    preemptor(&p, 100, "1", "8000", NULL);
    cr_assert_null(plan_on(&p, "n1", &found, &pl));
    vs_pod_cleanup(&p);
}

Test(preempt, forced_victims_kept_and_completed)
{
    node("n1", 2);
    on_card("a1", "n1", 0, 4000, 10, 0, 100);
    on_card("a2", "n1", 0, 4000, 10, 0, 200);
    on_card("b1", "n1", 1, 8000, 10, 0, 50);
    struct vs_pod p;
    preemptor(&p, 100, "1", "8000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    /* kube-scheduler's a1 is not enough: a2 completes card 0 (adding b1 instead would rank
     * after it: b1 started earlier). */
    const struct vs_podent *f1[] = {vs_model_pod(m, "a1")};
    cr_assert_eq(vs_preempt_node(m, &p, "n1", f1, 1, &po, &pl, &found), VS_OK);
    cr_assert(found);
    cr_assert_str_eq(victims(&pl), "a1,a2");
    cr_assert_eq(pl.n_forced, 1);
    vs_preempt_plan_cleanup(&pl);
    /* b1 alone frees card 1: nothing is added. */
    const struct vs_podent *f2[] = {vs_model_pod(m, "b1")};
    cr_assert_eq(vs_preempt_node(m, &p, "n1", f2, 1, &po, &pl, &found), VS_OK);
    cr_assert_str_eq(victims(&pl), "b1");
    vs_preempt_plan_cleanup(&pl);
    /* A placeholder (no victims) where the pod already fits: a plan with no victim. */
    vs_pod_cleanup(&p);
    preemptor(&p, 100, "1", "100", NULL);
    on_card("a1", "n1", 0, 3000, 10, 0, 100);
    cr_assert_eq(vs_preempt_node(m, &p, "n1", NULL, 0, &po, &pl, &found), VS_OK);
    cr_assert(found);
    cr_assert_eq(pl.n, 0);
    vs_preempt_plan_cleanup(&pl);
    vs_pod_cleanup(&p);
}

static void mig_node(void)
{
    tb_node(m, "n",
            "[{\"id\":\"GPU-a\",\"count\":7,\"devmem\":40960,\"devcore\":100,"
            "\"type\":\"NVIDIA-A100-SXM4-40GB\",\"health\":true,\"mode\":\"mig\","
            "\"migProfiles\":[{\"name\":\"1g.5gb\",\"memoryMB\":5120,\"core\":14,"
            "\"sliceCount\":1,\"placements\":[{\"start\":0,\"size\":1},{\"start\":6,"
            "\"size\":1}]}]}]",
            NULL, NULL);
}

static void mig_holder(const char *name, int start_slice, int32_t prio, int64_t start)
{
    struct vs_pod p;
    tb_pod(&p, "team", name, name);
    free(p.phase);
    p.phase = tb_strdup("Running");
    free(p.node_name);
    p.node_name = tb_strdup("n");
    p.priority = prio;
    p.start_time = start;
    tb_anno(&p, VS_ANNO_VGPU_NODE, "n");
    tb_anno(&p, VS_ANNO_ALLOCATED, "GPU-a,NVIDIA,5120,14:;");
    char mig[256];
    snprintf(mig, sizeof(mig),
             "[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\",\"profile\":"
             "\"1g.5gb\",\"placement\":{\"start\":%d,\"size\":1}}]",
             start_slice);
    tb_anno(&p, VS_ANNO_MIG_ALLOC, mig);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK, "%s", eb.msg);
    vs_pod_cleanup(&p);
}

Test(preempt, mig_slice_freed_by_one_victim)
{
    mig_node();
    mig_holder("s0", 0, 1, 100);
    mig_holder("s6", 6, 1, 200);
    struct vs_pod p;
    tb_pod(&p, "team", "hi", "uid-hi");
    p.priority = 10;
    tb_ctr(&p, 0, "c", "1", "4000", NULL, NULL);
    tb_anno(&p, VS_ANNO_VGPU_MODE, "mig");
    struct vs_preempt_plan pl;
    bool found;
    /* One slice is enough; the later-started holder is the less important one. */
    cr_assert_str_eq(plan_on(&p, "n", &found, &pl), "s6");
    char *mj = vs_annot_format_mig(&pl.fit.nodes[0].mig);
    cr_assert_str_eq(mj, "[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\","
                         "\"profile\":\"1g.5gb\",\"placement\":{\"start\":6,\"size\":1}}]");
    free(mj);
    vs_preempt_plan_cleanup(&pl);
    vs_pod_cleanup(&p);
}

Test(preempt, pdb_selector)
{
    struct vs_pdb d = pdb_for("db", 0);
    struct vs_kvlist l = {0};
    vs_kv_set(&l, "app", "db");
    cr_assert(vs_pdb_selects(&d, "team", &l));
    cr_assert_not(vs_pdb_selects(&d, "other", &l));
    struct vs_sel_expr e = {.key = tb_strdup("tier"), .op = VS_SEL_NOT_EXISTS};
    d.exprs = &e;
    d.n_exprs = 1;
    cr_assert(vs_pdb_selects(&d, "team", &l));
    vs_kv_set(&l, "tier", "gold");
    cr_assert_not(vs_pdb_selects(&d, "team", &l));
    d.exprs = NULL;
    d.n_exprs = 0;
    free(e.key);
    /* An empty selector protects nothing (kube-scheduler's preemption skips it). */
    vs_kv_cleanup(&d.match_labels);
    cr_assert_not(vs_pdb_selects(&d, "team", &l));
    vs_kv_cleanup(&l);
    vs_pdb_cleanup(&d);
}

/* Two preemptors at once: a plan computed before the other's hold was committed cannot be
 * committed (the node changed), and a plan computed after it frees other capacity. */
Test(preempt, two_preemptors_never_take_the_same_capacity)
{
    node("n1", 2);
    on_card("x", "n1", 0, 8000, 10, 0, 100);
    on_card("y", "n1", 1, 8000, 10, 0, 200);
    struct vs_pod a, b;
    preemptor(&a, 100, "1", "8000", NULL);
    tb_pod(&b, "team", "hi2", "uid-hi2");
    b.priority = 100;
    tb_ctr(&b, 0, "c", "1", "8000", NULL, NULL);
    const char *cands[] = {"n1"};
    struct vs_preempt_plan *pa, *pb;
    size_t na, nb;
    cr_assert_eq(vs_preempt_plans(m, &a, cands, 1, &po, &pa, &na), VS_OK);
    cr_assert_eq(vs_preempt_plans(m, &b, cands, 1, &po, &pb, &nb), VS_OK);
    cr_assert_eq(na, 1);
    cr_assert_eq(nb, 1);
    cr_assert_str_eq(victims(&pa[0]), "y");
    cr_assert_str_eq(victims(&pb[0]), "y");
    struct vs_errbuf eb;
    cr_assert_eq(vs_sched_commit(m, &a, &pa[0].fit, 1, &eb), VS_OK);
    /* The victim still counts and a's hold sits on card 1: b's stale plan is refused... */
    cr_assert_eq(vs_sched_commit(m, &b, &pb[0].fit, 1, &eb), VS_ERR_CONFLICT);
    vs_preempt_plans_free(pb, nb);
    /* ... and planning again evicts x, not y a second time. */
    cr_assert_eq(vs_preempt_plans(m, &b, cands, 1, &po, &pb, &nb), VS_OK);
    cr_assert_eq(nb, 1);
    cr_assert_str_eq(victims(&pb[0]), "x");
    char *d = tb_devices(&pb[0].fit);
    cr_assert_str_eq(d, "GPU-n1-0,NVIDIA,8000,0:;");
    free(d);
    vs_preempt_plans_free(pa, na);
    vs_preempt_plans_free(pb, nb);
    vs_pod_cleanup(&a);
    vs_pod_cleanup(&b);
}

/* ---- /preempt (ExtenderPreemptionArgs in node-cache mode) ---- */

static char *answer(const char *body)
{
    struct vs_preempt_args pa;
    struct vs_errbuf eb;
    cr_assert_eq(vs_extargs_preempt(body, strlen(body), &pa, &eb), VS_OK, "%s", eb.msg);
    json_t *res = vs_ext_preempt_answer(m, &pa, &so, NULL, 0);
    cr_assert_not_null(res);
    char *s = json_dumps(res, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_SORT_KEYS);
    json_decref(res);
    vs_preempt_args_cleanup(&pa);
    return s;
}

#define HI_POD                                                                                     \
    "{\"metadata\":{\"name\":\"hi\",\"namespace\":\"team\",\"uid\":\"uid-hi\"},\"spec\":{"         \
    "\"priority\":100,\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"                 \
    "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"8000\"}}}]}}"

Test(preempt, answer_placeholders_get_victims_or_are_omitted)
{
    node("n1", 1);
    node("n2", 1);
    node("n3", 1);
    on_card("a1", "n1", 0, 4000, 10, 0, 100);
    on_card("a2", "n1", 0, 4000, 10, 0, 200);
    on_card("eq", "n2", 0, 4000, 10, 100, 100);
    on_card("small", "n3", 0, 0, 0, 0, 100);
    char *s = answer("{\"Pod\":" HI_POD ",\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":{"
                     "\"n1\":{\"Pods\":[],\"NumPDBViolations\":0},\"n2\":{\"Pods\":null},"
                     "\"n3\":null}}");
    /* n3: the pod fits as it is (kube-scheduler's Filter saw older usage): nothing is evicted
     * anywhere, the pod is retried. */
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{}}");
    free(s);
    /* Without n3: n1, both pods of its card; n2, only an equal-priority pod, omitted. */
    s = answer("{\"Pod\":" HI_POD ",\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":{"
               "\"n1\":{\"Pods\":[],\"NumPDBViolations\":0},\"n2\":{\"Pods\":null}}}");
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n1\":{\"NumPDBViolations\":0,\"Pods\":["
                        "{\"UID\":\"a1\"},{\"UID\":\"a2\"}]}}}");
    free(s);
}

Test(preempt, answer_keeps_kube_victims_and_completes_them)
{
    node("n1", 2);
    on_card("a1", "n1", 0, 4000, 10, 0, 100);
    on_card("a2", "n1", 0, 4000, 10, 0, 200);
    on_card("b1", "n1", 1, 8000, 10, 0, 50);
    /* kube-scheduler chose a1 and a CPU pod we do not track: a2 is added. */
    char *s = answer("{\"Pod\":" HI_POD ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":["
                     "{\"UID\":\"a1\"},{\"UID\":\"cpu-only\"}],\"NumPDBViolations\":1}}}");
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n1\":{\"NumPDBViolations\":1,\"Pods\":["
                        "{\"UID\":\"a1\"},{\"UID\":\"cpu-only\"},{\"UID\":\"a2\"}]}}}");
    free(s);
    /* kube-scheduler's b1 already frees a card: nothing is added. */
    s = answer("{\"Pod\":" HI_POD ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":["
               "{\"UID\":\"b1\"}]}}}");
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n1\":{\"NumPDBViolations\":0,\"Pods\":["
                        "{\"UID\":\"b1\"}]}}}");
    free(s);
    /* Full victim Pods (not node-cache mode) are read by metadata.uid. */
    s = answer("{\"Pod\":" HI_POD ",\"NodeNameToVictims\":{\"n1\":{\"Pods\":[{\"metadata\":{"
               "\"name\":\"a1\",\"uid\":\"a1\"}}]}}}");
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n1\":{\"NumPDBViolations\":0,\"Pods\":["
                        "{\"UID\":\"a1\"},{\"UID\":\"a2\"}]}}}");
    free(s);
}

/* n1's only card held by pod `going`, terminating (an earlier preemption's victim); n2's by b1. */
static void going_on_n1_b1_on_n2(void)
{
    node("n1", 1);
    node("n2", 1);
    on_card("b1", "n2", 0, 8000, 10, 0, 100);
    struct vs_pod t;
    tb_pod(&t, "team", "going", "going");
    t.deleting = true;
    tb_anno(&t, VS_ANNO_VGPU_NODE, "n1");
    tb_anno(&t, VS_ANNO_ALLOCATED, "GPU-n1-0,NVIDIA,8000,10:;");
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &t, &eb), VS_OK);
    vs_pod_cleanup(&t);
}

/* n1's card is being freed by a terminating pod (an earlier preemption's victim): /preempt keeps
 * no node, so nothing more is evicted on n2 while the pod waits. */
Test(preempt, answer_waits_for_terminating_pods_that_free_room)
{
    going_on_n1_b1_on_n2();
    const char *body = "{\"Pod\":" HI_POD ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[]},"
                       "\"n2\":{\"Pods\":[]}}}";
    char *s = answer(body);
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{}}");
    free(s);
    /* With another pod on n1's card the terminating one's going is not enough: no waiting, and
     * n1 has no plan (the terminating pod still counts and is no victim), n2 has one. */
    on_card("small", "n1", 0, 4000, 10, 0, 100);
    s = answer(body);
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n2\":{\"NumPDBViolations\":0,\"Pods\":["
                        "{\"UID\":\"b1\"}]}}}");
    free(s);
}

/* kube-scheduler saw the earlier victims on the preemptor's nominated node deleted before
 * vgpu-sched did: it passes only the other node (no victim left on n1 in its view). The
 * nominated node is checked too: the pod fits there once the terminating pod is gone, so
 * nothing more is evicted anywhere (seen with kube-scheduler v1.38: a second preemption of
 * PDB-protected pods on another node). */
Test(preempt, answer_waits_for_the_nominated_node_it_was_not_passed)
{
    going_on_n1_b1_on_n2();
#define HI_POD_NOMINATED(node)                                                                     \
    "{\"metadata\":{\"name\":\"hi\",\"namespace\":\"team\",\"uid\":\"uid-hi\"},\"spec\":{"         \
    "\"priority\":100,\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"                 \
    "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"8000\"}}}]},\"status\":{"                    \
    "\"nominatedNodeName\":\"" node "\"}}"
    char *s = answer("{\"Pod\":" HI_POD_NOMINATED("n1") ",\"NodeNameToMetaVictims\":{\"n2\":{"
                                                        "\"Pods\":[]}}}");
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{}}");
    free(s);
    /* Nominated elsewhere (or not at all): n2's plan as before. */
    s = answer("{\"Pod\":" HI_POD_NOMINATED("n2") ",\"NodeNameToMetaVictims\":{\"n2\":{"
                                                  "\"Pods\":[]}}}");
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n2\":{\"NumPDBViolations\":0,\"Pods\":["
                        "{\"UID\":\"b1\"}]}}}");
    free(s);
    s = answer("{\"Pod\":" HI_POD ",\"NodeNameToMetaVictims\":{\"n2\":{\"Pods\":[]}}}");
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n2\":{\"NumPDBViolations\":0,\"Pods\":["
                        "{\"UID\":\"b1\"}]}}}");
    free(s);
#undef HI_POD_NOMINATED
}

Test(preempt, answer_never_policy_omits_every_node)
{
    node("n1", 1);
    on_card("a1", "n1", 0, 8000, 10, 0, 100);
    char *s = answer("{\"Pod\":{\"metadata\":{\"name\":\"hi\",\"uid\":\"u\"},\"spec\":{"
                     "\"priority\":100,\"preemptionPolicy\":\"Never\",\"containers\":[{"
                     "\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}},"
                     "\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[]}}}");
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{}}");
    free(s);
}

Test(preempt, args_errors)
{
    static const struct {
        const char *body, *msg;
    } cases[] = {
        {"{\"Pod\":[", "invalid ExtenderPreemptionArgs: ']' expected near end of file"},
        {"[]", "invalid ExtenderPreemptionArgs: not a JSON object"},
        {"{}", "extender args missing pod"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNameToMetaVictims\":[1]}",
         "NodeNameToMetaVictims must be an object"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNameToMetaVictims\":{\"n\":{\"Pods\":["
         "{\"UID\":\"\"}]}}}",
         "victims of node n: Pods must be an array of objects with a string UID"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNameToVictims\":{\"n\":{\"Pods\":[{}]}}}",
         "victims of node n: Pods must be an array of objects with a string metadata.uid"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNameToMetaVictims\":{\"n\":{"
         "\"NumPDBViolations\":\"2\"}}}",
         "victims of node n: NumPDBViolations must be an integer"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"priority\":\"x\"}}}",
         "invalid Pod in ExtenderPreemptionArgs: spec.priority: expected an integer, got string"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vs_preempt_args pa;
        struct vs_errbuf eb;
        cr_assert_eq(vs_extargs_preempt(cases[i].body, strlen(cases[i].body), &pa, &eb),
                     VS_ERR_PARSE, "%s", cases[i].body);
        cr_assert_str_eq(eb.msg, cases[i].msg);
        vs_preempt_args_cleanup(&pa);
    }
}

Test(preempt, pdb_codec)
{
    json_t *o = json_loads(
        "{\"metadata\":{\"name\":\"db\",\"namespace\":\"ml\"},\"spec\":{\"selector\":{"
        "\"matchLabels\":{\"app\":\"db\"},\"matchExpressions\":[{\"key\":\"tier\",\"operator\":"
        "\"In\",\"values\":[\"gold\",\"silver\"]}]}},\"status\":{\"disruptionsAllowed\":2,"
        "\"disruptedPods\":{\"db-0\":\"2026-01-01T00:00:00Z\"}}}",
        0, NULL);
    struct vs_pdb d;
    struct vs_errbuf eb;
    cr_assert_eq(vs_codec_pdb_from_json(o, &d, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(d.ns, "ml");
    cr_assert_str_eq(d.name, "db");
    cr_assert_eq(d.allowed, 2);
    cr_assert_not_null(vs_kv_get(&d.disrupted, "db-0"));
    struct vs_kvlist l = {0};
    vs_kv_set(&l, "app", "db");
    vs_kv_set(&l, "tier", "silver");
    cr_assert(vs_pdb_selects(&d, "ml", &l));
    vs_kv_set(&l, "tier", "bronze");
    cr_assert_not(vs_pdb_selects(&d, "ml", &l));
    vs_kv_cleanup(&l);
    vs_pdb_cleanup(&d);
    json_decref(o);
    o = json_loads("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"selector\":{\"matchExpressions\":"
                   "[{\"key\":\"a\",\"operator\":\"Gt\"}]}}}",
                   0, NULL);
    cr_assert_eq(vs_codec_pdb_from_json(o, &d, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "spec.selector.matchExpressions[0].operator: unknown operator \"Gt\"");
    vs_pdb_cleanup(&d);
    json_decref(o);
}

/* The counting precheck and the candidate cut only skip sets Fit would refuse or that cannot
 * rank better: on random small nodes (every set within budget) the plans equal those of the
 * plain enumeration, victim for victim. */
static unsigned seed = 12345;

static int rnd(int n)
{
    seed = seed * 1103515245u + 12345u;
    return (int)((seed >> 16) % (unsigned)n);
}

Test(preempt, precheck_equals_plain_enumeration)
{
    int planned = 0;
    for (int round = 0; round < 60; round++) {
        vs_model_free(m);
        m = vs_model_new(NULL);
        char name[32];
        snprintf(name, sizeof(name), "r%d", round);
        int cards = 1 + rnd(3);
        node(name, cards);
        int pods = 1 + rnd(7);
        for (int i = 0; i < pods; i++) {
            char pn[32];
            snprintf(pn, sizeof(pn), "v%d", i);
            on_card(pn, name, rnd(cards), 1000 * (1 + rnd(5)), 10 * rnd(4), rnd(4), 100 + rnd(3));
        }
        struct vs_pod p;
        char gpus[8], mem[16], cores[16];
        snprintf(gpus, sizeof(gpus), "%d", 1 + rnd(cards));
        snprintf(mem, sizeof(mem), "%d", 1000 * (1 + rnd(8)));
        snprintf(cores, sizeof(cores), "%d", rnd(3) == 0 ? 100 : 10 * rnd(5));
        preemptor(&p, 3, gpus, mem, cores);
        struct vs_preempt_plan a, b;
        bool fa, fb;
        po.no_precheck = false;
        cr_assert_eq(vs_preempt_node(m, &p, name, NULL, 0, &po, &a, &fa), VS_OK);
        po.no_precheck = true;
        cr_assert_eq(vs_preempt_node(m, &p, name, NULL, 0, &po, &b, &fb), VS_OK);
        cr_assert_eq(fa, fb, "round %d", round);
        if (fa) {
            planned++;
            char va[512];
            snprintf(va, sizeof(va), "%s", victims(&a));
            cr_assert_str_eq(va, victims(&b), "round %d", round);
            vs_preempt_plan_cleanup(&a);
            vs_preempt_plan_cleanup(&b);
        }
        vs_pod_cleanup(&p);
    }
    cr_assert_geq(planned, 20, "only %d of 60 rounds had a plan", planned);
}

Test(preempt, plan_search_does_not_count_the_pod_in_the_workload)
{
    node("n1", 2);
    on_card("a1", "n1", 0, 3000, 10, 0, 100);
    on_card("a2", "n1", 0, 3000, 10, 0, 200);
    on_card("b1", "n1", 1, 2000, 10, 0, 100);
    on_card("b2", "n1", 1, 2000, 10, 0, 200);
    struct vs_frag_stats *st = vs_frag_stats_new();
    cr_assert_not_null(st);
    so.frag_stats = st;
    struct vs_pod p;
    preemptor(&p, 100, "1", "8000", NULL);
    struct vs_preempt_plan pl;
    bool found;
    cr_assert_str_eq(plan_on(&p, "n1", &found, &pl), "b1,b2");
    vs_preempt_plan_cleanup(&pl);
    /* Every set tried was a what-if: the shapes seen are still none. */
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, st);
    cr_assert_eq(x.k, 0);
    so.frag_stats = NULL;
    vs_frag_stats_free(st);
    vs_pod_cleanup(&p);
}
