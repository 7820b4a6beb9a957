/* test_nominated: a Pending pod kube-scheduler nominated to a node (status.nominatedNodeName)
 * holds its GPU request there for the Filters of pods with lower or equal priority — placed on
 * the node as if its terminating victims were gone — and not for pods of higher priority, not
 * for itself; the hold moves or ends with the nomination, the pod's deletion or its binding. */
#include "harness.h"
#include "store.h"

#include "annot.h"
#include "k8s_codec.h"

#include <criterion/criterion.h>

static struct vs_devcfg cfg;
static struct vs_store *s;
static int freed_calls;

static void on_freed(void *ctx)
{
    (void)ctx;
    freed_calls++;
}

static void apply(const char *kind, const char *type, json_t *obj)
{
    struct vs_errbuf eb;
    cr_assert_eq(vs_store_apply(s, kind, type, obj, &eb), VS_OK, "%s", eb.msg);
    json_decref(obj);
}

static void setup(void)
{
    vs_devcfg_init(&cfg);
    struct vs_store_opts so = {.cfg = &cfg, .reservation_ttl = 3600};
    struct vs_errbuf eb;
    s = vs_store_new(NULL, &so, &eb);
    cr_assert_not_null(s);
    vs_store_set_hooks(s, &(struct vs_store_hooks){.freed = on_freed});
    freed_calls = 0;
    for (int i = 0; i < 2; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%d", i);
        char *j = vs_harness_node(name, 1, 16000);
        json_error_t je;
        json_t *o = json_loads(j, 0, &je);
        free(j);
        cr_assert_not_null(o, "%s", je.text);
        apply("Node", "ADDED", o);
    }
}

static void teardown(void)
{
    vs_store_free(s);
    vs_devcfg_cleanup(&cfg);
}

TestSuite(nominated, .init = setup, .fini = teardown, .timeout = 30);

/* A pod asking one card with `mem` MiB; `nominated` and `node` may be NULL. */
static json_t *gpu_pod(const char *name, int priority, int mem, const char *nominated,
                       const char *node)
{
    char m[16];
    snprintf(m, sizeof(m), "%d", mem);
    json_t *p =
        json_pack("{s:{s:s,s:s,s:s,s:{}},s:{s:i,s:[{s:s,s:{s:{s:s,s:s}}}]},s:{s:s}}", "metadata",
                  "name", name, "namespace", "default", "uid", name, "annotations", "spec",
                  "priority", priority, "containers", "name", "c", "resources", "limits",
                  "nvidia.com/gpu", "1", "nvidia.com/gpumem", m, "status", "phase", "Pending");
    if (nominated)
        json_object_set_new(json_object_get(p, "status"), "nominatedNodeName",
                            json_string(nominated));
    if (node)
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
    return p;
}

/* A running pod holding `mem` MiB of n0's card, terminating when `deleting`. */
static json_t *victim(const char *name, int mem, bool deleting)
{
    char alloc[64];
    snprintf(alloc, sizeof(alloc), "n0-gpu0,NVIDIA,%d,0:;", mem);
    json_t *p = gpu_pod(name, 0, mem, NULL, "n0");
    json_t *md = json_object_get(p, "metadata");
    json_t *an = json_object_get(md, "annotations");
    json_object_set_new(an, VS_ANNO_VGPU_NODE, json_string("n0"));
    json_object_set_new(an, VS_ANNO_ALLOCATED, json_string(alloc));
    json_object_set_new(json_object_get(p, "status"), "phase", json_string("Running"));
    if (deleting)
        json_object_set_new(md, "deletionTimestamp", json_string("2026-12-02T00:00:00Z"));
    return p;
}

/* The GPU pod uid (priority, mem MiB) decoded into pod and filtered on n0 through the store into
 * r (the caller cleans up both). */
static void store_filter_n0(const char *uid, int priority, int mem, struct vs_pod *pod,
                            struct vs_filter_result *r)
{
    json_t *o = gpu_pod(uid, priority, mem, NULL, NULL);
    struct vs_errbuf eb;
    cr_assert_eq(vs_codec_pod_from_json(o, pod, &eb), VS_OK, "%s", eb.msg);
    json_decref(o);
    const char *cands[] = {"n0"};
    struct vs_sched_opts so = {.cfg = &cfg};
    cr_assert_eq(vs_store_filter(s, pod, cands, 1, &so, 1000, r), VS_OK);
}

/* Filter of a pod through the store (which adds the holds): "" when it fits on n0, else n0's
 * reason. A fitting pod's reservation is dropped again, so every call sees the same usage. */
static char *filter_n0(int priority, int mem, const char *uid)
{
    struct vs_pod pod;
    struct vs_filter_result r;
    store_filter_n0(uid, priority, mem, &pod, &r);
    cr_assert(r.managed);
    char *out = strdup(r.best == 0 ? "" : r.nodes[0].reason ? r.nodes[0].reason : "?");
    if (r.best == 0) {
        int calls = freed_calls; /* the unreservation's own call is not the nominations' */
        vs_store_unreserve(s, uid, r.reservation);
        freed_calls = calls;
    }
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&pod);
    return out;
}

static void expect(int priority, int mem, const char *uid, const char *want)
{
    char *got = filter_n0(priority, mem, uid);
    cr_assert_str_eq(got, want, "priority %d, %d MiB: got \"%s\", want \"%s\"", priority, mem, got,
                     want);
    free(got);
}

#define NO_MEM "1/1 CardInsufficientMemory"

Test(nominated, held_for_lower_and_equal_priority_only)
{
    apply("Pod", "ADDED", victim("v", 10000, true)); /* being preempted: still counted */
    expect(0, 6000, "p0", "");                       /* 6,000 MiB free before any nomination */
    apply("Pod", "ADDED", gpu_pod("q", 1000, 12000, "n0", NULL));
    cr_assert_eq(freed_calls, 0);
    /* q will take 12,000 of the 16,000 once v is gone: 10,000 + 12,000 already exceed it. */
    expect(0, 1000, "p1", NO_MEM);
    expect(1000, 1000, "p2", NO_MEM); /* equal priority: held too */
    expect(1001, 6000, "p3", "");     /* higher priority: q's nomination does not count */
    /* q itself is not held against itself (and still waits for v). */
    expect(1000, 12000, "q", NO_MEM);
    apply("Pod", "DELETED", victim("v", 10000, true));
    expect(1000, 12000, "q", "");
    expect(0, 4000, "p4", ""); /* 16,000 - 12,000 */
    expect(0, 4001, "p5", NO_MEM);
}

Test(nominated, hold_ends_with_the_nomination)
{
    apply("Pod", "ADDED", gpu_pod("q", 1000, 12000, "n0", NULL));
    expect(0, 4001, "p1", NO_MEM);
    /* Nomination cleared: the capacity is free again (and the requeue hook hears it). */
    apply("Pod", "MODIFIED", gpu_pod("q", 1000, 12000, NULL, NULL));
    cr_assert_eq(freed_calls, 1);
    expect(0, 16000, "p2", "");
    /* Nominated elsewhere: held on n1, not n0. */
    apply("Pod", "MODIFIED", gpu_pod("q", 1000, 12000, "n1", NULL));
    expect(0, 16000, "p3", "");
    apply("Pod", "MODIFIED", gpu_pod("q", 1000, 12000, "n0", NULL));
    cr_assert_eq(freed_calls, 2); /* moved away from n1 */
    expect(0, 4001, "p4", NO_MEM);
    /* Bound (spec.nodeName): no longer a nomination. */
    apply("Pod", "MODIFIED", gpu_pod("q", 1000, 12000, "n0", "n0"));
    cr_assert_eq(freed_calls, 3);
    expect(0, 16000, "p5", "");
    apply("Pod", "MODIFIED", gpu_pod("q", 1000, 12000, "n0", NULL));
    apply("Pod", "DELETED", gpu_pod("q", 1000, 12000, "n0", NULL));
    cr_assert_eq(freed_calls, 4);
    expect(0, 16000, "p6", "");
}

Test(nominated, two_nominees_on_one_node_stack_by_priority)
{
    apply("Pod", "ADDED", gpu_pod("low", 500, 6000, "n0", NULL));
    apply("Pod", "ADDED", gpu_pod("high", 900, 8000, "n0", NULL));
    expect(0, 2000, "p1", "");
    expect(0, 2001, "p2", NO_MEM);
    /* Between the two: only `high` holds. */
    expect(700, 8000, "p3", "");
    expect(700, 8001, "p4", NO_MEM);
    /* A nominee that cannot fit even with the node's terminating pods gone holds nothing. */
    apply("Pod", "ADDED", gpu_pod("huge", 950, 20000, "n0", NULL));
    expect(0, 2000, "p5", "");
}

static void has_pod(void *ctx, const struct vs_model *m)
{
    bool *b = ctx;
    *b = vs_model_pod(m, "uid-r") != NULL;
}

/* vs_store_unreserve drops a reservation only when it is the one named (a patch that failed for
 * an earlier Filter decision must not free the current one, even when both decisions are the
 * same devices on the same node: the soak double-booked a card that way), or any with 0. */
Test(nominated, unreserve_only_the_same_reservation)
{
    struct vs_pod pod;
    struct vs_filter_result r;
    store_filter_n0("uid-r", 0, 1000, &pod, &r);
    cr_assert_eq(r.best, 0);
    cr_assert_neq(r.reservation, 0);
    char *first_alloc = vs_annot_format_devices(&r.nodes[0].allocs[0].devs);
    uint64_t first = r.reservation;
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&pod);
    /* kube-scheduler filters the pod again (its Bind timed out): the same decision */
    store_filter_n0("uid-r", 0, 1000, &pod, &r);
    cr_assert_eq(r.best, 0);
    char *alloc = vs_annot_format_devices(&r.nodes[0].allocs[0].devs);
    cr_assert_str_eq(alloc, first_alloc);
    cr_assert_neq(r.reservation, first);
    bool held = false;
    vs_store_unreserve(s, "uid-r", first); /* the first decision's patch failed late */
    vs_store_read(s, has_pod, &held);
    cr_assert(held, "the first decision's failure freed the second one (%s)", alloc);
    vs_store_unreserve(s, "uid-r", r.reservation);
    vs_store_read(s, has_pod, &held);
    cr_assert_not(held);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&pod);
    store_filter_n0("uid-r", 0, 1000, &pod, &r);
    vs_store_read(s, has_pod, &held);
    cr_assert(held);
    vs_store_unreserve(s, "uid-r", 0);
    vs_store_read(s, has_pod, &held);
    cr_assert_not(held);
    free(first_alloc);
    free(alloc);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&pod);
}
