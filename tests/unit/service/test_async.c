/* test_async: the Event queue's bounds — one pending Event per pod and reason, at most
 * EVENT_BYTES_MAX (8 MiB) of pending messages — with the API answering slowly so nothing
 * drains during the test; and the per-pod patch states: a deleted pod's goes at once. */
#include "async.h"
#include "fakeapi.h"
#include "kube.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct vs_fakeapi *api;
static struct vs_kube *k;
static struct vs_async *as;

/* The fake API, a client of it with this request timeout, and `as` with this failure hook. */
static void start(int timeout_s, void (*on_failed)(void *ctx, const char *uid, uint64_t r),
                  void *ctx)
{
    struct vs_fakeapi_opts o = {.quiet = true};
    api = vs_fakeapi_start(&o);
    cr_assert_not_null(api);
    struct vs_kube_config cfg = {.server = (char *)vs_fakeapi_url(api)};
    struct vs_kube_opts ko = {.qps = 0, .timeout_s = timeout_s};
    struct vs_errbuf eb;
    k = vs_kube_new(&cfg, &ko, &eb);
    cr_assert_not_null(k, "%s", eb.msg);
    as = vs_async_new(k, on_failed, ctx);
    cr_assert_not_null(as);
}

static void setup(void)
{
    start(10, NULL, NULL);
    /* The worker's first POST blocks for 2 s: everything else stays queued. */
    vs_fakeapi_delay(api, "POST", "/api/v1/namespaces/default/events", 2000);
}

static void teardown(void)
{
    vs_async_free(as);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

TestSuite(async, .init = setup, .fini = teardown, .timeout = 60);

static json_t *event(const char *uid, const char *reason, const char *msg)
{
    return json_pack("{s:s,s:{s:s},s:s,s:s}", "kind", "Event", "involvedObject", "uid", uid,
                     "reason", reason, "message", msg);
}

struct lazy {
    int id;
};

static char *lazy_build(void *ctx)
{
    char *m = malloc(32);
    snprintf(m, 32, "lazy %d", ((struct lazy *)ctx)->id);
    return m;
}

Test(async, pending_events_bounded_in_bytes)
{
    /* 64 KiB messages: 128 of them fill the 8 MiB budget; one more is taken by the (blocked)
     * worker, the rest are dropped. */
    enum { MSG = 64 << 10 };
    char *msg = malloc(MSG + 1);
    memset(msg, 'm', MSG);
    msg[MSG] = '\0';
    for (int i = 0; i < 300; i++) {
        char uid[32];
        snprintf(uid, sizeof(uid), "uid-%d", i);
        vs_async_event(as, "default", event(uid, "FilteringSucceed", msg));
    }
    size_t bytes, n = vs_async_events_pending(as, &bytes);
    cr_assert(n == 128 || n == 127, "pending %zu", n);
    cr_assert_eq(bytes, n * MSG);
    free(msg);
    /* Lazy events count their context's bytes: with the budget full, nothing more fits. */
    struct lazy *l = malloc(sizeof(*l));
    l->id = 1;
    vs_async_event_lazy(as, "default", event("uid-lazy", "FilteringSucceed", ""), "find fit node(",
                        MSG, lazy_build, l, free);
    cr_assert_eq(vs_async_events_pending(as, NULL), n);
}

Test(async, one_pending_event_per_pod_and_reason)
{
    /* The first event goes to the worker (blocked); then the same pod and reason twice more:
     * one queued event, holding the newest wording and its size. */
    vs_async_event(as, "default", event("uid-a", "FilteringFailed", "first"));
    for (int i = 0; i < 1000 && vs_async_events_pending(as, NULL); i++)
        usleep(10 * 1000);
    cr_assert_eq(vs_async_events_pending(as, NULL), 0, "the worker never took the first event");
    vs_async_event(as, "default", event("uid-a", "FilteringFailed", "2 nodes x(n1,n2)"));
    vs_async_event(as, "default", event("uid-a", "FilteringFailed", "3 nodes x(n1,n2,n3)"));
    size_t bytes;
    cr_assert_eq(vs_async_events_pending(as, &bytes), 1);
    cr_assert_eq(bytes, strlen("3 nodes x(n1,n2,n3)"));
    /* Another reason of the same pod is its own event. */
    struct lazy *l = malloc(sizeof(*l));
    l->id = 2;
    vs_async_event_lazy(as, "default", event("uid-a", "FilteringSucceed", ""), "find fit node(",
                        1000, lazy_build, l, free);
    cr_assert_eq(vs_async_events_pending(as, &bytes), 2);
    cr_assert_eq(bytes, strlen("3 nodes x(n1,n2,n3)") + 1000);
}

static void patch(const char *uid, const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
    cr_assert_eq(vs_async_patch_pod(as, uid, path, json_pack("{s:{}}", "metadata"), 1), VS_OK);
}

Test(async, deleted_pods_patch_states_are_dropped)
{
    /* Ten pods filtered (their patches done: the fake API has no such pods, so they failed,
     * which keeps a state like success does), then seven deleted: three states left, whatever
     * the time (the 600 s sweep is not what drops them). */
    char uid[10][16];
    for (int i = 0; i < 10; i++) {
        snprintf(uid[i], sizeof(uid[i]), "uid-%d", i);
        char name[16];
        snprintf(name, sizeof(name), "p-%d", i);
        patch(uid[i], name);
    }
    struct vs_errbuf eb;
    for (int i = 0; i < 10; i++)
        cr_assert_eq(vs_async_wait(as, uid[i], 10000, &eb), VS_ERR_KUBE, "%s", uid[i]);
    cr_assert_eq(vs_async_states(as), 10);
    for (int i = 0; i < 7; i++)
        vs_async_forget(as, uid[i]);
    cr_assert_eq(vs_async_states(as), 3);
    vs_async_forget(as, uid[0]); /* twice, and a pod never patched: nothing happens */
    vs_async_forget(as, "uid-unknown");
    vs_async_forget(as, "");
    vs_async_forget(as, NULL);
    cr_assert_eq(vs_async_states(as), 3);
    /* A forgotten pod has no outcome to wait for. */
    cr_assert_eq(vs_async_wait(as, uid[0], 10000, &eb), VS_OK);
    cr_assert_eq(vs_async_wait(as, uid[9], 10000, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "recording the filter decision on the pod failed: PATCH "
                             "/api/v1/namespaces/default/pods/p-9: 404 pods \"p-9\" not found");
}

Test(async, pod_deleted_while_its_patch_is_in_flight)
{
    /* The API holds the patch for 2 s: the pod is deleted meanwhile. Its state stays while the
     * patch is in flight (a Bind waits for it to be done), then goes with it: the waiter finds
     * nothing to report (the pod is gone; its binding would fail on its own). */
    vs_fakeapi_delay(api, "PATCH", "/api/v1/namespaces/default/pods/slow", 2000);
    patch("uid-slow", "slow");
    vs_async_forget(as, "uid-slow");
    cr_assert_eq(vs_async_states(as), 1);
    struct vs_errbuf eb;
    cr_assert_eq(vs_async_wait(as, "uid-slow", 10000, &eb), VS_OK);
    cr_assert_eq(vs_async_states(as), 0);
}

/* ---- order: patches of different pods overlap, one pod's stay in order; Event classes. The
 * suite's API answers at once unless a test delays a path. */

static void setup_order(void)
{
    start(30, NULL, NULL);
}

TestSuite(async_order, .init = setup_order, .fini = teardown, .timeout = 60);

static json_t *annot_patch(const char *value)
{
    return json_pack("{s:{s:{s:s}}}", "metadata", "annotations", "x", value);
}

static const char *annot_of(const char *pod)
{
    static char v[64];
    json_t *p = vs_fakeapi_get(api, "Pod", "default", pod);
    cr_assert_not_null(p);
    const char *x = json_string_value(
        json_object_get(json_object_get(json_object_get(p, "metadata"), "annotations"), "x"));
    snprintf(v, sizeof(v), "%s", x ? x : "(none)");
    json_decref(p);
    return v;
}

Test(async_order, patches_of_other_pods_overlap_and_one_pods_stay_in_order)
{
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p0\",\"uid\":\"u0\"}}"));
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"uid\":\"u1\"}}"));
    /* Every write of p0 takes 3 s; p1's queued behind p0's first is written meanwhile. */
    vs_fakeapi_delay(api, "PATCH", "/api/v1/namespaces/default/pods/p0", 3000);
    const char *p0 = "/api/v1/namespaces/default/pods/p0",
               *p1 = "/api/v1/namespaces/default/pods/p1";
    cr_assert_eq(vs_async_patch_pod(as, "u0", p0, annot_patch("first"), 1), VS_OK);
    cr_assert_eq(vs_async_patch_pod(as, "u1", p1, annot_patch("one"), 1), VS_OK);
    cr_assert_eq(vs_async_patch_pod(as, "u0", p0, annot_patch("second"), 1), VS_OK);
    struct vs_errbuf eb;
    cr_assert_eq(vs_async_wait(as, "u1", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(annot_of("p1"), "one");
    /* p0's first patch reaches the API on another worker, maybe only after p1's is done (slow
     * under ASan); it is then held there for 3 s. */
    for (int i = 0; i < 1000 && vs_fakeapi_count(api, "PATCH", p0) < 1; i++)
        usleep(10 * 1000);
    cr_assert_str_eq(annot_of("p0"), "(none)");          /* its first patch is still on the wire */
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", p0), 1); /* and the second one waits for it */
    cr_assert_eq(vs_async_wait(as, "u0", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(annot_of("p0"), "second");
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", p0), 2);
}

/* The patch gate: reservation 1 is replaced by 2 (a later Filter of the pod that queued its patch
 * first). */
static bool replaced_by_2(void *ctx, const char *uid, uint64_t reservation)
{
    (void)ctx;
    return strcmp(uid, "u0") == 0 && reservation < 2;
}

/* Two Filters of one pod committed decisions 1 then 2, but 2's patch was queued first: 1's patch
 * is not sent after it (it would leave the older decision on the pod), its wait succeeds, and the
 * pod keeps decision 2's annotation. A patch without a reservation is always sent. */
Test(async_order, a_replaced_decisions_patch_is_not_sent)
{
    vs_async_set_patch_gate(as, replaced_by_2, NULL);
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p0\",\"uid\":\"u0\"}}"));
    const char *p0 = "/api/v1/namespaces/default/pods/p0";
    cr_assert_eq(vs_async_patch_pod(as, "u0", p0, annot_patch("decision 2"), 2), VS_OK);
    cr_assert_eq(vs_async_patch_pod(as, "u0", p0, annot_patch("decision 1"), 1), VS_OK);
    struct vs_errbuf eb;
    cr_assert_eq(vs_async_wait(as, "u0", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(annot_of("p0"), "decision 2");
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", p0), 1);
    json_t *kept = vs_async_take_pod(as, "u0");
    cr_assert_null(kept, "the skipped patch left a pod for Bind");
    cr_assert_eq(vs_async_patch_pod(as, "u0", p0, annot_patch("no decision"), 0), VS_OK);
    cr_assert_eq(vs_async_wait(as, "u0", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(annot_of("p0"), "no decision");
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", p0), 2);
}

static uint64_t pod_rv(const char *pod)
{
    json_t *p = vs_fakeapi_get(api, "Pod", "default", pod);
    cr_assert_not_null(p);
    uint64_t rv = strtoull(
        json_string_value(json_object_get(json_object_get(p, "metadata"), "resourceVersion")), NULL,
        10);
    json_decref(p);
    return rv;
}

Test(async_order, a_waited_for_pods_patches_jump_the_queue)
{
    /* 8 slow patches occupy the 8 workers for 2 s; 20 pods' patches (300 ms each) queue behind
     * them, then t's. A Bind waiting for t moves t's patch to the front: it is written as soon
     * as a worker frees, before most of the 20 (the 7 other freed workers' first ones are still
     * held 300 ms when it lands, unless t's worker is kept off the CPU that long; in queue
     * order it would be the last of the 21, after at least 16 of them). */
    vs_fakeapi_delay(api, "PATCH", "/api/v1/namespaces/default/pods/q", 300);
    char name[16], uid[16], path[64];
    for (int i = 0; i < 8 + 20 + 1; i++) {
        if (i < 8)
            snprintf(name, sizeof(name), "b%d", i);
        else if (i < 28)
            snprintf(name, sizeof(name), "q%d", i - 8);
        else
            snprintf(name, sizeof(name), "t");
        snprintf(uid, sizeof(uid), "u-%s", name);
        char pod[160];
        snprintf(pod, sizeof(pod),
                 "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\"}}", name, uid);
        cr_assert(vs_fakeapi_put(api, pod));
        snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
        if (i < 8)
            vs_fakeapi_delay(api, "PATCH", path, 2000);
        cr_assert_eq(vs_async_patch_pod(as, uid, path, annot_patch("v"), 1), VS_OK);
    }
    struct vs_errbuf eb;
    cr_assert_eq(vs_async_wait(as, "u-t", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(annot_of("t"), "v");
    uint64_t t_rv = pod_rv("t");
    int before = 0;
    for (int i = 0; i < 20; i++) {
        snprintf(uid, sizeof(uid), "u-q%d", i);
        cr_assert_eq(vs_async_wait(as, uid, 20000, &eb), VS_OK, "%s", eb.msg);
        snprintf(name, sizeof(name), "q%d", i);
        before += pod_rv(name) < t_rv;
    }
    cr_assert_lt(before, 8, "%d of the 20 earlier pods were written before t", before);
}

static void post_msg(const char *name, const char *uid, const char *type, const char *reason,
                     const char *msg)
{
    json_t *e =
        json_pack("{s:s,s:{s:s},s:{s:s},s:s,s:s,s:s}", "kind", "Event", "metadata", "name", name,
                  "involvedObject", "uid", uid, "reason", reason, "type", type, "message", msg);
    vs_async_event(as, "default", e);
}

static void post(const char *name, const char *uid, const char *type, const char *reason)
{
    post_msg(name, uid, type, reason, "m");
}

/* The resourceVersion the fake gave the posted Event `name` (waits for it to be stored). */
static uint64_t posted_rv(const char *name)
{
    json_t *e = NULL;
    for (int i = 0; i < 3000 && !(e = vs_fakeapi_get(api, "Event", "default", name)); i++)
        usleep(10 * 1000);
    cr_assert_not_null(e, "event %s not posted", name);
    uint64_t rv = strtoull(
        json_string_value(json_object_get(json_object_get(e, "metadata"), "resourceVersion")), NULL,
        10);
    json_decref(e);
    return rv;
}

static void wait_taken(void)
{
    for (int i = 0; i < 500 && vs_async_events_pending(as, NULL); i++)
        usleep(10 * 1000);
    cr_assert_eq(vs_async_events_pending(as, NULL), 0);
}

Test(async_order, new_warnings_first_then_normal_then_repeated_warnings)
{
    /* Each POST takes 300 ms, so what is queued meanwhile is ordered by class. */
    vs_fakeapi_delay(api, "POST", "/api/v1/namespaces/default/events", 300);
    post("n1", "uid-a", "Normal", "FilteringSucceed");
    wait_taken(); /* on the wire */
    post("n2", "uid-b", "Normal", "FilteringSucceed");
    post("w1", "uid-c", "Warning", "FilteringFailed");
    post("w2", "uid-d", "Warning", "FilteringFailed");
    cr_assert_gt(posted_rv("n2"), 0); /* the last of the four */
    cr_assert_lt(posted_rv("n1"), posted_rv("w1"));
    cr_assert_lt(posted_rv("w1"), posted_rv("w2"));
    cr_assert_lt(posted_rv("w2"), posted_rv("n2"));
    /* uid-c's refusal again: it waits behind a Normal event queued after it. */
    post("n3", "uid-e", "Normal", "BindingSucceed");
    wait_taken();
    post("w1-again", "uid-c", "Warning", "FilteringFailed");
    post("n4", "uid-f", "Normal", "BindingSucceed");
    post("w3", "uid-g", "Warning", "BindingFailed");
    cr_assert_gt(posted_rv("w1-again"), 0);
    cr_assert_lt(posted_rv("n3"), posted_rv("w3"));
    cr_assert_lt(posted_rv("w3"), posted_rv("n4"));
    cr_assert_lt(posted_rv("n4"), posted_rv("w1-again"));
}

Test(async_order, a_refusals_other_wordings_wait_behind_other_pods_first_warnings)
{
    /* HAMi reports one refusal as several FilteringFailed Events (one per reason word, then a
     * summary). Pod a's three and pod b's two are queued while another Event is on the wire
     * (300 ms each): b's first goes right after a's first, and the other wordings of both after
     * the Normal Event queued last. */
    vs_fakeapi_delay(api, "POST", "/api/v1/namespaces/default/events", 300);
    post("n0", "uid-x", "Normal", "BindingSucceed");
    wait_taken();
    post_msg("a1", "uid-a", "Warning", "FilteringFailed", "1 nodes CardInsufficientMemory(n1)");
    post_msg("a2", "uid-a", "Warning", "FilteringFailed",
             "2 nodes CardTimeSlicingExhausted(n1,n2)");
    post_msg("a3", "uid-a", "Warning", "FilteringFailed", "no available node, 2 nodes do not meet");
    post_msg("b1", "uid-b", "Warning", "FilteringFailed", "1 nodes CardInsufficientMemory(n2)");
    post_msg("b2", "uid-b", "Warning", "FilteringFailed", "no available node, 2 nodes do not meet");
    post("n1", "uid-n", "Normal", "BindingSucceed");
    cr_assert_gt(posted_rv("b2"), 0); /* the last of them */
    const char *order[] = {"n0", "a1", "b1", "n1", "a2", "a3", "b2"};
    for (size_t i = 1; i < sizeof(order) / sizeof(order[0]); i++)
        cr_assert_lt(posted_rv(order[i - 1]), posted_rv(order[i]), "%s before %s", order[i - 1],
                     order[i]);
    /* A later refusal of a in a new wording is a repeated Warning too: it waits behind a
     * Normal Event queued after it. */
    post("n2", "uid-y", "Normal", "BindingSucceed");
    wait_taken();
    post_msg("a4", "uid-a", "Warning", "FilteringFailed", "3 nodes CardInsufficientCore(n1,n2,n3)");
    post("n3", "uid-z", "Normal", "BindingSucceed");
    cr_assert_lt(posted_rv("n3"), posted_rv("a4"));
}

/* Waits for the fake to hold Event `name` and returns the number of remembered Warning keys
 * then: `name` must be a Normal event queued after the warnings looked at, so that every one of
 * them (posted first, by class) is remembered or not by then. */
static size_t posted_keys_after(const char *name)
{
    cr_assert_gt(posted_rv(name), 0);
    return vs_async_posted_keys(as);
}

Test(async_order, deleted_pods_posted_warning_keys_are_dropped)
{
    /* Three pods refused (uid-a for two reasons): four keys; a Normal event is not one. */
    post("a1", "uid-a", "Warning", "FilteringFailed");
    post("a2", "uid-a", "Warning", "BindingFailed");
    post("b1", "uid-b", "Warning", "FilteringFailed");
    post("c1", "uid-c", "Warning", "FilteringFailed");
    post("n1", "uid-a", "Normal", "FilteringSucceed");
    cr_assert_eq(posted_keys_after("n1"), 4);
    vs_async_forget(as, "uid-a");
    cr_assert_eq(vs_async_posted_keys(as), 2);
    vs_async_forget(as, "uid-a"); /* twice, a pod never refused, no uid: nothing happens */
    vs_async_forget(as, "uid-unknown");
    vs_async_forget(as, "");
    vs_async_forget(as, NULL);
    cr_assert_eq(vs_async_posted_keys(as), 2);
    vs_async_forget(as, "uid-b");
    cr_assert_eq(vs_async_posted_keys(as), 1);
    /* uid-d is deleted while its Warning is on the wire (each POST held 1 s), uid-e while its
     * Warning and a Normal Event are queued behind it: d's is posted but not remembered, e's
     * are not posted at all (queued Events of a deleted pod are dropped); uid-f's is. */
    vs_fakeapi_delay(api, "POST", "/api/v1/namespaces/default/events", 1000);
    post("d1", "uid-d", "Warning", "FilteringFailed");
    wait_taken();
    post("e1", "uid-e", "Warning", "FilteringFailed");
    post("e2", "uid-e", "Normal", "FilteringSucceed");
    cr_assert_eq(vs_async_events_pending(as, NULL), 2);
    vs_async_forget(as, "uid-d");
    vs_async_forget(as, "uid-e");
    cr_assert_eq(vs_async_events_pending(as, NULL), 0);
    post("f1", "uid-f", "Warning", "FilteringFailed");
    post("n2", "uid-f", "Normal", "FilteringSucceed");
    cr_assert_eq(posted_keys_after("n2"), 2); /* uid-c's and uid-f's */
    cr_assert_gt(posted_rv("d1"), 0);         /* posted all the same */
    json_t *gone = vs_fakeapi_get(api, "Event", "default", "e1");
    cr_assert_null(gone, "e1 posted");
    cr_assert_null((gone = vs_fakeapi_get(api, "Event", "default", "e2")), "e2 posted");
    vs_async_forget(as, "uid-c");
    vs_async_forget(as, "uid-f");
    cr_assert_eq(vs_async_posted_keys(as), 0);
}

Test(async_order, normal_events_slow_down_while_patches_are_pending)
{
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p0\",\"uid\":\"u0\"}}"));
    const char *p0 = "/api/v1/namespaces/default/pods/p0",
               *ev = "/api/v1/namespaces/default/events";
    /* p0's patch stays in flight for 3 s: the burst is on. */
    vs_fakeapi_delay(api, "PATCH", p0, 3000);
    cr_assert_eq(vs_async_patch_pod(as, "u0", p0, annot_patch("v"), 1), VS_OK);
    while (vs_fakeapi_count(api, "PATCH", p0) < 1)
        usleep(1000);
    cr_assert_eq(vs_fakeapi_count(api, "POST", ev), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0); /* before any Event is queued */
    for (int i = 0; i < 6; i++) {
        char name[16], uid[16];
        snprintf(name, sizeof(name), "n%d", i);
        snprintf(uid, sizeof(uid), "un%d", i);
        post(name, uid, "Normal", "FilteringSucceed");
    }
    post("w0", "uw0", "Warning", "FilteringFailed");
    posted_rv("w0"); /* the new Warning goes first, at once */
    /* Normal Events start at least 500 ms apart meanwhile (not every 40 ms): every POST counted
     * below started after t0, so they are the Warning and at most one Normal more than the time
     * since t0 in 500 ms steps (~1.2 s: at most 3 Normals), however long this thread or the
     * Event worker was held up. */
    usleep(1200 * 1000);
    int during = (int)vs_fakeapi_count(api, "POST", ev);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double el = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    int most = 1 + 1 + (int)(el / 0.5);
    cr_assert(during >= 1 && during <= most,
              "%d Events posted while the patch was in flight (%.2f s: at most %d)", during, el,
              most);
    cr_assert_eq(vs_async_wait(as, "u0", 20000, &(struct vs_errbuf){0}), VS_OK);
    wait_taken();
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        posted_rv(name);
    }
    cr_assert_eq(vs_fakeapi_count(api, "POST", ev), 7);
}

/* ---- Events held while Binds are active (vs_async_set_busy). */

static atomic_bool binds;

static bool binds_active(void *ctx)
{
    (void)ctx;
    return atomic_load(&binds);
}

/* Waits until the Event worker holds what is queued (it looked at the queue since). */
static void wait_holding(void)
{
    for (int i = 0; i < 3000 && !vs_async_events_holding(as); i++)
        usleep(1000);
    cr_assert(vs_async_events_holding(as), "the Event worker does not hold the queued Events");
}

Test(async_order, events_wait_while_binds_are_active_and_go_when_they_end)
{
    const char *ev = "/api/v1/namespaces/default/events";
    atomic_store(&binds, true);
    vs_async_set_busy(as, binds_active, NULL);
    vs_async_set_event_hold(as, 600000, 100, 1u << 20); /* no bound reached in the test */
    post("n1", "uid-a", "Normal", "FilteringSucceed");
    post("w1", "uid-b", "Warning", "FilteringFailed");
    /* A refused pod's first Warning is not held: it goes while the Binds are active. */
    cr_assert_gt(posted_rv("w1"), 0);
    wait_holding();
    /* A patch is not held: it is written while the Events wait. */
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p0\",\"uid\":\"u0\"}}"));
    cr_assert_eq(
        vs_async_patch_pod(as, "u0", "/api/v1/namespaces/default/pods/p0", annot_patch("v"), 1),
        VS_OK);
    cr_assert_eq(vs_async_wait(as, "u0", 20000, &(struct vs_errbuf){0}), VS_OK);
    post("n2", "uid-c", "Normal", "BindingSucceed"); /* wakes the worker: it holds again */
    wait_holding();
    cr_assert_eq(vs_fakeapi_count(api, "POST", ev), 1);
    cr_assert_eq(vs_async_events_pending(as, NULL), 2);
    /* uid-b's other wording of its refusal is a repeated Warning: held too. */
    post_msg("w1-again", "uid-b", "Warning", "FilteringFailed", "no available node");
    wait_holding();
    cr_assert_eq(vs_fakeapi_count(api, "POST", ev), 1);
    cr_assert_eq(vs_async_events_pending(as, NULL), 3);
    /* The Binds end: the Normal ones go in their order, then the repeated Warning. */
    atomic_store(&binds, false);
    vs_async_kick(as);
    cr_assert_gt(posted_rv("w1-again"), 0);
    cr_assert_lt(posted_rv("w1"), posted_rv("n1"));
    cr_assert_lt(posted_rv("n2"), posted_rv("w1-again"));
    cr_assert_lt(posted_rv("n1"), posted_rv("n2"));
    cr_assert_eq(vs_fakeapi_count(api, "POST", ev), 4);
    cr_assert(!vs_async_events_holding(as));
}

Test(async_order, a_held_event_goes_once_it_waited_the_hold)
{
    /* The Binds never end: the Event still goes, not before it waited the hold (200 ms). */
    atomic_store(&binds, true);
    vs_async_set_busy(as, binds_active, NULL);
    vs_async_set_event_hold(as, 200, 100, 1u << 20);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    post("n1", "uid-a", "Normal", "FilteringSucceed");
    cr_assert_gt(posted_rv("n1"), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    cr_assert_geq(ms, 200.0, "posted after %.1f ms", ms);
    cr_assert(atomic_load(&binds));
    cr_assert_eq(vs_async_events_pending(as, NULL), 0);
}

Test(async_order, a_backlog_at_the_cap_is_not_held)
{
    /* Hold capped at 3 queued Events: two wait, the third makes all three go, Binds active. */
    atomic_store(&binds, true);
    vs_async_set_busy(as, binds_active, NULL);
    vs_async_set_event_hold(as, 600000, 3, 1u << 20);
    post("n1", "uid-a", "Normal", "FilteringSucceed");
    post("n2", "uid-b", "Normal", "FilteringSucceed");
    wait_holding();
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/events"), 0);
    post("n3", "uid-c", "Normal", "FilteringSucceed");
    cr_assert_gt(posted_rv("n3"), 0);
    cr_assert_lt(posted_rv("n1"), posted_rv("n2"));
    cr_assert_lt(posted_rv("n2"), posted_rv("n3"));
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/events"), 3);
}

Test(async_order, a_backlog_of_large_messages_is_not_held)
{
    /* Hold capped at 1,000 bytes of messages: two Events of 400 wait, the third makes all three
     * go, Binds active. */
    atomic_store(&binds, true);
    vs_async_set_busy(as, binds_active, NULL);
    vs_async_set_event_hold(as, 600000, 100, 1000);
    char msg[401];
    memset(msg, 'm', 400);
    msg[400] = '\0';
    post_msg("n1", "uid-a", "Normal", "FilteringSucceed", msg);
    post_msg("n2", "uid-b", "Normal", "FilteringSucceed", msg);
    wait_holding();
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/events"), 0);
    post_msg("n3", "uid-c", "Normal", "FilteringSucceed", msg);
    cr_assert_gt(posted_rv("n3"), 0);
    cr_assert_lt(posted_rv("n1"), posted_rv("n2"));
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/events"), 3);
}

Test(async_order, a_patchs_answer_is_given_out_once)
{
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p0\",\"uid\":\"u0\"}}"));
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"uid\":\"u1\"}}"));
    const char *p0 = "/api/v1/namespaces/default/pods/p0",
               *p1 = "/api/v1/namespaces/default/pods/p1";
    cr_assert_eq(vs_async_patch_pod(as, "u0", p0, annot_patch("first"), 1), VS_OK);
    cr_assert_eq(vs_async_patch_pod(as, "u1", p1, annot_patch("one"), 1), VS_OK);
    struct vs_errbuf eb;
    cr_assert_eq(vs_async_wait(as, "u0", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_async_wait(as, "u1", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_async_pods_kept(as), 2);
    json_t *pod = vs_async_take_pod(as, "u0");
    cr_assert_not_null(pod);
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(pod, "metadata"), "annotations"), "x")),
                     "first");
    json_decref(pod);
    cr_assert_null(vs_async_take_pod(as, "u0")); /* once */
    cr_assert_eq(vs_async_pods_kept(as), 1);
    vs_async_forget(as, "u1"); /* p1 deleted */
    cr_assert_eq(vs_async_pods_kept(as), 0);
    cr_assert_null(vs_async_take_pod(as, "u1"));
    /* A failed patch leaves nothing to take. */
    vs_fakeapi_fault(api, "PATCH", p0, 500, 1);
    cr_assert_eq(vs_async_patch_pod(as, "u0", p0, annot_patch("second"), 1), VS_OK);
    cr_assert_eq(vs_async_wait(as, "u0", 20000, &eb), VS_ERR_KUBE);
    char want[256];
    snprintf(want, sizeof(want),
             "recording the filter decision on the pod failed: PATCH %s: 500 injected fault", p0);
    cr_assert_str_eq(eb.msg, want);
    cr_assert_null(vs_async_take_pod(as, "u0"));
}

Test(async_order, waited_for_patches_go_in_the_order_of_their_waits)
{
    /* One worker frees after 1 s, the other seven after 6 s: that one worker takes the queue's
     * head, then the next. t1's Bind waits first, t2's second (each gives up after 1 ms, its
     * patches already moved): t1 is written before t2, and both before q0 that no Bind waits
     * for (moving each wait to the very front would write t2 first). */
    const char *names[] = {"b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "q0", "t1", "t2"};
    char uid[16], path[64], pod[160];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(uid, sizeof(uid), "u-%s", names[i]);
        snprintf(pod, sizeof(pod),
                 "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\"}}", names[i], uid);
        cr_assert(vs_fakeapi_put(api, pod));
        snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", names[i]);
        if (i < 8)
            vs_fakeapi_delay(api, "PATCH", path, i == 0 ? 1000 : 6000);
        cr_assert_eq(vs_async_patch_pod(as, uid, path, annot_patch("v"), 1), VS_OK);
    }
    /* Every worker holds its b patch before the waits (no free worker meanwhile). */
    for (int i = 0; i < 8; i++) {
        snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/b%d", i);
        while (vs_fakeapi_count(api, "PATCH", path) < 1)
            usleep(1000);
    }
    struct vs_errbuf eb;
    cr_assert_eq(vs_async_wait(as, "u-t1", 1, &eb), VS_ERR_TIMEOUT);
    cr_assert_eq(vs_async_wait(as, "u-t2", 1, &eb), VS_ERR_TIMEOUT);
    cr_assert_eq(vs_async_wait(as, "u-t2", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_async_wait(as, "u-q0", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_lt(pod_rv("t1"), pod_rv("t2"));
    cr_assert_lt(pod_rv("t2"), pod_rv("q0"));
}

Test(async_order, workers_start_with_work_and_leave_when_idle)
{
    /* No thread before the first job. Eight pods' patches held 1 s each by the API run on eight
     * workers at once (a ninth waits for a free one rather than starting a thread past the
     * limit); with a 100 ms idle time every worker is gone soon after, and the next patch starts
     * one again. */
    size_t started = 99;
    cr_assert_eq(vs_async_threads(as, &started), 0);
    cr_assert_eq(started, 0);
    vs_async_set_idle_ms(as, 100);
    char name[16], uid[16], path[64];
    for (int i = 0; i < 9; i++) {
        snprintf(name, sizeof(name), "w%d", i);
        snprintf(uid, sizeof(uid), "uw%d", i);
        snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
        char pod[128];
        snprintf(pod, sizeof(pod),
                 "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\"}}", name, uid);
        cr_assert(vs_fakeapi_put(api, pod));
        vs_fakeapi_delay(api, "PATCH", path, 1000);
        cr_assert_eq(vs_async_patch_pod(as, uid, path, annot_patch("v"), 1), VS_OK);
    }
    cr_assert_eq(vs_async_threads(as, &started), 8);
    cr_assert_eq(started, 8);
    struct vs_errbuf eb;
    cr_assert_eq(vs_async_wait(as, "uw8", 20000, &eb), VS_OK, "%s", eb.msg);
    for (int i = 0; i < 500 && vs_async_threads(as, NULL) > 0; i++)
        usleep(10 * 1000);
    cr_assert_eq(vs_async_threads(as, &started), 0);
    cr_assert_eq(started, 8);
    cr_assert_str_eq(annot_of("w8"), "v");
    cr_assert_eq(vs_async_patch_pod(as, "uw0", "/api/v1/namespaces/default/pods/w0",
                                    annot_patch("again"), 1),
                 VS_OK);
    cr_assert_eq(vs_async_wait(as, "uw0", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(annot_of("w0"), "again");
    cr_assert_leq(vs_async_threads(as, &started), 1); /* it may have left already */
    cr_assert_eq(started, 9);
}

Test(async_order, a_worker_that_could_not_start_is_started_again_by_the_wait)
{
    /* pthread_create fails for the first patch's worker: nothing runs the patch and no later
     * job comes to start one. The Bind waiting for it starts one again (at once, then every
     * second of its wait), so the patch lands and the wait ends well before its 10 s. */
    vs_async_fail_thread_starts(as, 1);
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"f0\",\"uid\":\"uf0\"}}"));
    cr_assert_eq(
        vs_async_patch_pod(as, "uf0", "/api/v1/namespaces/default/pods/f0", annot_patch("v"), 1),
        VS_OK);
    size_t started = 99;
    cr_assert_eq(vs_async_threads(as, &started), 0);
    cr_assert_eq(started, 0);
    struct vs_errbuf eb;
    cr_assert_eq(vs_async_wait(as, "uf0", 10000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(annot_of("f0"), "v");
    vs_async_threads(as, &started);
    cr_assert_eq(started, 1);
}

struct failed_rec {
    pthread_mutex_t mu;
    char uids[256];
    uint64_t reservations[8];
    int n;
};

static void record_failed(void *ctx, const char *uid, uint64_t reservation)
{
    struct failed_rec *f = ctx;
    pthread_mutex_lock(&f->mu);
    if (f->n < 8) {
        f->reservations[f->n++] = reservation;
        strncat(f->uids, uid, sizeof(f->uids) - strlen(f->uids) - 2);
        strcat(f->uids, ";");
    }
    pthread_mutex_unlock(&f->mu);
}

/* A failed patch hands back the reservation it was queued with (the store drops only that one);
 * a patch that lands calls nothing. */
Test(async_failed, the_failed_patch_names_its_reservation, .timeout = 60)
{
    struct failed_rec f = {.mu = PTHREAD_MUTEX_INITIALIZER};
    start(10, record_failed, &f);
    struct vs_errbuf eb;
    cr_assert(
        vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p0\",\"uid\":\"u0\"}}"));
    cr_assert_eq(
        vs_async_patch_pod(as, "u0", "/api/v1/namespaces/default/pods/p0", annot_patch("v"), 41),
        VS_OK);
    cr_assert_eq(vs_async_patch_pod(as, "ugone", "/api/v1/namespaces/default/pods/gone",
                                    annot_patch("v"), 42),
                 VS_OK);
    cr_assert_eq(vs_async_wait(as, "u0", 20000, &eb), VS_OK, "%s", eb.msg);
    cr_assert_neq(vs_async_wait(as, "ugone", 20000, &eb), VS_OK);
    vs_async_free(as); /* joins the workers: the callback has run */
    as = NULL;
    cr_assert_eq(f.n, 1);
    cr_assert_str_eq(f.uids, "ugone;");
    cr_assert_eq(f.reservations[0], 42);
    teardown();
}
