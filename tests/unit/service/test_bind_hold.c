/* test_bind_hold: a Bind's hold on its pod's reservation (vs_store_bind_begin/_check/_end) against
 * Filters of the same pod, step by step on a store fed directly (no threads, no API): the
 * interleaving e2e burst-large hit (kube-scheduler gave up on a slow Bind and filtered the pod
 * again while that Bind went on) keeps the pod on the Bind's node, a second Bind is refused, a
 * posted binding pins the pod until the watch shows it, and a reservation dropped or replaced
 * under the hold is seen before the binding. */
#include "harness.h"
#include "store.h"

#include "annot.h"
#include "k8s_codec.h"

#include <criterion/criterion.h>

static struct vs_devcfg cfg;
static struct vs_store *s;

static void apply(const char *kind, const char *type, json_t *obj)
{
    struct vs_errbuf eb;
    cr_assert_eq(vs_store_apply(s, kind, type, obj, &eb), VS_OK, "%s", eb.msg);
    json_decref(obj);
}

static json_t *load(char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    free(text);
    cr_assert_not_null(o, "%s", je.text);
    return o;
}

static void setup(void)
{
    vs_devcfg_init(&cfg);
    struct vs_store_opts so = {.cfg = &cfg, .reservation_ttl = 3600};
    struct vs_errbuf eb;
    s = vs_store_new(NULL, &so, &eb);
    cr_assert_not_null(s);
    apply("Node", "ADDED", load(vs_harness_node("n0", 1, 16000)));
    apply("Node", "ADDED", load(vs_harness_node("n1", 1, 16000)));
}

static void teardown(void)
{
    vs_store_free(s);
    vs_devcfg_cleanup(&cfg);
}

TestSuite(bind_hold, .init = setup, .fini = teardown, .timeout = 30);

/* Filters pending pod uid (8000 MiB, 10 cores) on cands into r (cleaned by the caller). */
static void filter(const char *uid, const char *const *cands, size_t n, struct vs_filter_result *r)
{
    json_t *o = load(vs_harness_pod(uid, uid, "8000", "10"));
    struct vs_pod pod;
    struct vs_errbuf eb;
    cr_assert_eq(vs_codec_pod_from_json(o, &pod, &eb), VS_OK, "%s", eb.msg);
    json_decref(o);
    struct vs_sched_opts so = {.cfg = &cfg};
    cr_assert_eq(vs_store_filter(s, &pod, cands, n, &so, 1000, r), VS_OK);
    vs_pod_cleanup(&pod);
}

/* Filters uid on cands and returns the chosen node's name (static buffer, "" for none) and the
 * reservation id in *resv. */
static const char *decide(const char *uid, const char *const *cands, size_t n, uint64_t *resv)
{
    static char node[32];
    struct vs_filter_result r;
    filter(uid, cands, n, &r);
    cr_assert_null(r.bind_node, "Filter found a Bind's hold on %s", r.bind_node);
    snprintf(node, sizeof(node), "%s", r.best >= 0 ? r.nodes[r.best].node : "");
    *resv = r.reservation;
    vs_filter_result_cleanup(&r);
    return node;
}

struct card_use {
    const char *node;
    long long used;
};

static void read_use(void *ctx, const struct vs_model *m)
{
    struct card_use *u = ctx;
    u->used = vs_model_node(m, u->node)->cards[0].usedmem;
}

static long long usedmem(const char *node)
{
    struct card_use u = {.node = node};
    vs_store_read(s, read_use, &u);
    return u.used;
}

/* The interleaving of e2e burst-large: Filter reserves n0, the Bind holds it, kube-scheduler
 * gives up on that Bind (extender timeout) and filters again. The pod is not moved: n0 is the
 * answer when it is a candidate, else the Filter is refused; a second Bind is refused; the first
 * Bind's last check before its binding still passes. Once that Bind ends without binding, Filter
 * may move the pod, and the old hold's check says so. */
Test(bind_hold, filter_again_keeps_the_node_a_bind_holds)
{
    const char *only0[] = {"n0"}, *only1[] = {"n1"}, *both[] = {"n1", "n0"};
    uint64_t r1;
    cr_assert_str_eq(decide("p", only0, 1, &r1), "n0");
    cr_assert_neq(r1, 0);
    uint64_t t;
    char *holder = (char *)"unset";
    cr_assert_eq(vs_store_bind_begin(s, "p", "n0", &t, &holder), VS_RES_OK);
    cr_assert_neq(t, 0);
    cr_assert_null(holder);

    struct vs_filter_result r;
    filter("p", only1, 1, &r);
    cr_assert_str_eq(r.bind_node, "n0");
    cr_assert_not(r.bind_keep);
    cr_assert_not(r.bind_posted);
    cr_assert(r.managed);
    cr_assert_eq(r.best, -1);
    cr_assert_eq(r.n, 0);
    cr_assert_eq(r.reservation, 0);
    cr_assert_null(r.annotations);
    vs_filter_result_cleanup(&r);
    cr_assert_eq(usedmem("n1"), 0, "the refused Filter reserved n1");
    cr_assert_eq(usedmem("n0"), 8000);
    cr_assert_eq(vs_store_reservation_on(s, "p", "n0"), VS_RES_OK);

    filter("p", both, 2, &r);
    cr_assert_str_eq(r.bind_node, "n0");
    cr_assert(r.bind_keep);
    cr_assert_eq(r.best, -1);
    cr_assert_eq(r.reservation, 0);
    vs_filter_result_cleanup(&r);
    cr_assert_eq(usedmem("n1"), 0);

    /* kube-scheduler's retried Bind, while the first still works */
    uint64_t t2 = 99;
    cr_assert_eq(vs_store_bind_begin(s, "p", "n0", &t2, &holder), VS_RES_BUSY);
    cr_assert_eq(t2, 0);
    cr_assert_str_eq(holder, "n0");
    free(holder);
    cr_assert_eq(vs_store_bind_begin(s, "p", "n1", &t2, NULL), VS_RES_BUSY);

    cr_assert_eq(vs_store_bind_check(s, "p", "n0", t), VS_RES_OK); /* the binding may go out */

    /* The first Bind fails: the hold ends, the reservation stays until a Filter moves it. */
    vs_store_bind_end(s, "p", t, false);
    cr_assert_eq(vs_store_reservation_on(s, "p", "n0"), VS_RES_OK);
    uint64_t r2;
    cr_assert_str_eq(decide("p", only1, 1, &r2), "n1");
    cr_assert_gt(r2, r1);
    cr_assert_eq(usedmem("n0"), 0);
    cr_assert_eq(usedmem("n1"), 8000);
    cr_assert_eq(vs_store_bind_check(s, "p", "n0", t), VS_RES_MOVED);
    cr_assert_eq(vs_store_bind_begin(s, "p", "n0", &t2, NULL), VS_RES_MOVED);
    cr_assert_eq(t2, 0);
    vs_store_bind_end(s, "p", t, false); /* an ended hold ends once */
    cr_assert_eq(vs_store_bind_begin(s, "p", "n1", &t2, NULL), VS_RES_OK);
    cr_assert_neq(t2, t);
}

/* A Bind that posted its binding leaves the pod pinned: Filter refuses it (kube-scheduler may
 * filter it again before its own cache shows the binding), Binds see it bound; the pod watch
 * showing it bound or deleted ends the pin. */
Test(bind_hold, posted_binding_pins_until_the_watch_shows_it)
{
    const char *only0[] = {"n0"}, *both[] = {"n0", "n1"};
    uint64_t resv, t, t2;
    cr_assert_str_eq(decide("p", only0, 1, &resv), "n0");
    struct vs_filter_result r;
    filter("p", only0, 1, &r); /* kept while held */
    vs_filter_result_cleanup(&r);
    cr_assert_eq(vs_store_bind_begin(s, "p", "n0", &t, NULL), VS_RES_OK);
    vs_store_bind_end(s, "p", t, true);

    filter("p", both, 2, &r);
    cr_assert_str_eq(r.bind_node, "n0");
    cr_assert(r.bind_posted);
    cr_assert_not(r.bind_keep);
    vs_filter_result_cleanup(&r);
    cr_assert_eq(usedmem("n1"), 0);
    cr_assert_eq(vs_store_reservation_on(s, "p", "n0"), VS_RES_BOUND);
    cr_assert_eq(vs_store_reservation(s, "p"), VS_RES_BOUND);
    cr_assert_eq(vs_store_bind_begin(s, "p", "n0", &t2, NULL), VS_RES_BOUND);
    cr_assert_eq(vs_store_bind_check(s, "p", "n0", t), VS_RES_BOUND);

    /* The watch: the pod bound to n0 with its decision's annotations. */
    json_t *o = load(vs_harness_pod("p", "p", "8000", "10"));
    json_t *md = json_object_get(o, "metadata");
    json_object_set_new(md, "annotations",
                        json_pack("{s:s,s:s}", VS_ANNO_VGPU_NODE, "n0", VS_ANNO_ALLOCATED,
                                  "n0-gpu0,NVIDIA,8000,10:;"));
    json_object_set_new(json_object_get(o, "spec"), "nodeName", json_string("n0"));
    apply("Pod", "MODIFIED", o);
    cr_assert_eq(vs_store_reservation_on(s, "p", "n0"), VS_RES_BOUND); /* from the model now */
    cr_assert_eq(vs_store_bind_check(s, "p", "n0", t), VS_RES_BOUND);
    cr_assert_eq(usedmem("n0"), 8000);
    /* A Filter that arrives after the watch showed the binding (kube-scheduler's retry from a
     * cache without it) does not reserve the bound pod again. */
    filter("p", both, 2, &r);
    cr_assert_str_eq(r.bind_node, "n0");
    cr_assert(r.bind_posted);
    cr_assert_not(r.bind_keep);
    cr_assert_eq(r.best, -1);
    vs_filter_result_cleanup(&r);
    cr_assert_eq(usedmem("n0"), 8000);
    cr_assert_eq(usedmem("n1"), 0);
    cr_assert_eq(vs_store_reservation_on(s, "p", "n0"), VS_RES_BOUND);

    /* Another pod whose posted binding the watch shows as a deletion: unpinned, gone. */
    const char *only1[] = {"n1"};
    cr_assert_str_eq(decide("q", only1, 1, &resv), "n1");
    cr_assert_eq(vs_store_bind_begin(s, "q", "n1", &t, NULL), VS_RES_OK);
    vs_store_bind_end(s, "q", t, true);
    apply("Pod", "DELETED", load(vs_harness_pod("q", "q", "8000", "10")));
    cr_assert_eq(vs_store_reservation(s, "q"), VS_RES_MISSING);
    cr_assert_eq(vs_store_bind_begin(s, "q", "n1", &t2, NULL), VS_RES_MISSING);
    cr_assert_eq(t2, 0);
    /* A Filter of the deleted pod (kube-scheduler began it before it saw the deletion) reserves
     * nothing. */
    filter("q", only1, 1, &r);
    cr_assert(r.gone);
    cr_assert_null(r.bind_node);
    cr_assert_eq(r.best, -1);
    cr_assert_eq(r.reservation, 0);
    vs_filter_result_cleanup(&r);
    cr_assert_eq(usedmem("n1"), 0);
}

/* e2e soak, wave 4: deleting bound pods makes kube-scheduler retry the refused ones, and one
 * of those was deleted in the same wave. Its Filter reached the service after the watch showed
 * the deletion; the reservation it made then had no DELETED event left to free it and counted on
 * the card for the TTL, so pods that fit were refused. A deleted pod is never reserved again:
 * whether its Filter comes after the deletion (refused, gone) or before (the DELETED event frees
 * the reservation), the card ends empty; another pod still fits; a preemption plan for it
 * commits nothing. */
Test(bind_hold, a_filter_after_the_pod_was_deleted_reserves_nothing)
{
    const char *only0[] = {"n0"}, *both[] = {"n0", "n1"};
    uint64_t resv;
    cr_assert_str_eq(decide("late", both, 2, &resv), "n0");
    cr_assert_eq(usedmem("n0"), 8000);
    apply("Pod", "DELETED", load(vs_harness_pod("late", "late", "8000", "10")));
    cr_assert_eq(usedmem("n0"), 0, "the DELETED event frees the reservation");

    struct vs_filter_result r;
    filter("late", both, 2, &r);
    cr_assert(r.gone);
    cr_assert(r.managed);
    cr_assert_null(r.bind_node);
    cr_assert_null(r.error);
    cr_assert_null(r.annotations);
    cr_assert_eq(r.n, 0);
    cr_assert_eq(r.best, -1);
    cr_assert_eq(r.reservation, 0);
    vs_filter_result_cleanup(&r);
    cr_assert_eq(usedmem("n0"), 0);
    cr_assert_eq(usedmem("n1"), 0);
    cr_assert_eq(vs_store_reservation(s, "late"), VS_RES_MISSING);
    cr_assert(vs_store_gone(s, "late"));
    cr_assert_not(vs_store_gone(s, "next"));

    /* A pod deleted before any Filter of it (a pending pod, never reserved) is refused too. */
    apply("Pod", "DELETED", load(vs_harness_pod("never", "never", "8000", "10")));
    filter("never", only0, 1, &r);
    cr_assert(r.gone);
    cr_assert_eq(r.reservation, 0);
    vs_filter_result_cleanup(&r);

    /* Preemption: a bound pod of priority 0 fills n0; a plan evicting it is committed for a
     * pod of priority 100, and not once that pod is deleted. */
    json_t *o = load(vs_harness_pod("low", "low", "16000", "10"));
    json_object_set_new(json_object_get(o, "metadata"), "annotations",
                        json_pack("{s:s,s:s}", VS_ANNO_VGPU_NODE, "n0", VS_ANNO_ALLOCATED,
                                  "n0-gpu0,NVIDIA,16000,10:;"));
    json_object_set_new(json_object_get(o, "spec"), "nodeName", json_string("n0"));
    json_object_set_new(json_object_get(o, "status"), "phase", json_string("Running"));
    apply("Pod", "ADDED", o);
    cr_assert_eq(usedmem("n0"), 16000);
    o = load(vs_harness_pod("high", "high", "8000", "10"));
    json_object_set_new(json_object_get(o, "spec"), "priority", json_integer(100));
    struct vs_pod pod;
    struct vs_errbuf eb;
    cr_assert_eq(vs_codec_pod_from_json(o, &pod, &eb), VS_OK, "%s", eb.msg);
    json_decref(o);
    struct vs_sched_opts so = {.cfg = &cfg};
    struct vs_store_plan plan;
    bool found = false;
    cr_assert_eq(vs_store_preempt(s, &pod, only0, 1, &so, 1000, &plan, &found), VS_OK);
    cr_assert(found);
    cr_assert_neq(plan.reservation, 0);
    cr_assert(vs_store_unreserve(s, "high", plan.reservation));
    vs_store_plan_cleanup(&plan);
    apply("Pod", "DELETED", load(vs_harness_pod("high", "high", "8000", "10")));
    found = true;
    cr_assert_eq(vs_store_preempt(s, &pod, only0, 1, &so, 1000, &plan, &found), VS_OK);
    cr_assert_not(found);
    vs_store_plan_cleanup(&plan);
    vs_pod_cleanup(&pod);
    cr_assert_eq(vs_store_reservation(s, "high"), VS_RES_MISSING);
    cr_assert_eq(usedmem("n0"), 16000);

    /* Other pods are untouched by the remembered deletions. */
    cr_assert_str_eq(decide("next", both, 2, &resv), "n1");
    cr_assert_eq(usedmem("n1"), 8000);
}

/* What the hold does not stop is seen by the check before the binding: the reservation dropped
 * (its patch failed; a term ended) or replaced by another allocation of the pod. */
Test(bind_hold, check_sees_a_dropped_or_replaced_reservation)
{
    const char *only0[] = {"n0"};
    uint64_t resv, t;
    cr_assert_str_eq(decide("p", only0, 1, &resv), "n0");
    cr_assert_eq(vs_store_bind_begin(s, "p", "n0", &t, NULL), VS_RES_OK);
    cr_assert(vs_store_unreserve(s, "p", resv)); /* the decision's patch failed */
    cr_assert_eq(vs_store_bind_check(s, "p", "n0", t), VS_RES_MISSING);
    struct vs_filter_result r;
    filter("p", only0, 1, &r); /* still held: no new decision, and n0 is not kept */
    cr_assert_str_eq(r.bind_node, "n0");
    cr_assert_not(r.bind_keep);
    vs_filter_result_cleanup(&r);
    cr_assert_eq(usedmem("n0"), 0);
    vs_store_bind_end(s, "p", t, false);

    cr_assert_str_eq(decide("p", only0, 1, &resv), "n0");
    cr_assert_eq(vs_store_bind_begin(s, "p", "n0", &t, NULL), VS_RES_OK);
    cr_assert_eq(vs_store_drop_reservations(s), 1); /* a leadership term ended */
    cr_assert_eq(vs_store_bind_check(s, "p", "n0", t), VS_RES_MISSING);
    vs_store_bind_end(s, "p", t, false);

    /* The decision's patch seen by the watch (the reservation confirmed), the Bind holds it,
     * then the pod shows another allocation on the same node. */
    cr_assert_str_eq(decide("p", only0, 1, &resv), "n0");
    json_t *o = load(vs_harness_pod("p", "p", "8000", "10"));
    json_t *an = json_pack("{s:s,s:s}", VS_ANNO_VGPU_NODE, "n0", VS_ANNO_ALLOCATED,
                           "n0-gpu0,NVIDIA,8000,10:;");
    json_object_set(json_object_get(o, "metadata"), "annotations", an);
    apply("Pod", "MODIFIED", json_incref(o));
    cr_assert_eq(vs_store_bind_begin(s, "p", "n0", &t, NULL), VS_RES_OK);
    cr_assert_eq(vs_store_bind_check(s, "p", "n0", t), VS_RES_OK);
    json_object_set_new(an, VS_ANNO_ALLOCATED, json_string("n0-gpu0,NVIDIA,4000,10:;"));
    apply("Pod", "MODIFIED", o);
    json_decref(an);
    cr_assert_eq(vs_store_bind_check(s, "p", "n0", t), VS_RES_CHANGED);
    cr_assert_eq(usedmem("n0"), 4000);
    vs_store_bind_end(s, "p", t, false);
}

/* A pod this process never reserved (Filter passed it through) gets no hold: its Bind goes on to
 * the usual checks, and nothing is left behind. */
Test(bind_hold, no_reservation_no_hold)
{
    uint64_t t = 7;
    cr_assert_eq(vs_store_bind_begin(s, "cpu-only", "n0", &t, NULL), VS_RES_MISSING);
    cr_assert_eq(t, 0);
    vs_store_bind_end(s, "cpu-only", t, true);
    cr_assert_eq(vs_store_reservation(s, "cpu-only"), VS_RES_MISSING);
}

/* Two Filters of one pod: the first decision's patch is stale once the second committed, even
 * when both picked the same node and cards; a pod never reserved, or a patch of the current
 * decision, is not. */
Test(bind_hold, later_decision_supersedes_an_earlier_patch)
{
    const char *only0[] = {"n0"};
    uint64_t r1, r2;
    cr_assert_str_eq(decide("p", only0, 1, &r1), "n0");
    cr_assert_not(vs_store_superseded(s, "p", r1));
    cr_assert_str_eq(decide("p", only0, 1, &r2), "n0");
    cr_assert_gt(r2, r1);
    cr_assert(vs_store_superseded(s, "p", r1));
    cr_assert_not(vs_store_superseded(s, "p", r2));
    cr_assert_not(vs_store_superseded(s, "unknown", r1));
}
