/* test_requeue: the table of refused pods (requeue.h) with an explicit clock — who is nudged
 * after a freeing change, once, and who is not (placed, refused again after the change, older
 * than the window, deleted) — and through the real service against the fake API: a pod Filter
 * refused gets the vgpu-sched.io/requeue annotation after the pod holding its card is deleted,
 * and a pod it placed does not. */
#include "fakeapi.h"
#include "harness.h"
#include "requeue.h"
#include "serve.h"

#include "annot.h"

#include <criterion/criterion.h>

/* ---------------------------------------------------------------- the table, explicit clock */

static char nudged[16][64];
static size_t n_nudged;

static void record(void *ctx, const char *uid, const char *ns, const char *name)
{
    (void)ctx;
    cr_assert_lt(n_nudged, 16);
    snprintf(nudged[n_nudged++], sizeof(nudged[0]), "%s %s/%s", uid, ns, name);
}

static struct vs_requeue *table(size_t max)
{
    n_nudged = 0;
    struct vs_requeue_opts o = {
        .delay_s = 1.0, .window_s = 300.0, .max_pods = max, .nudge = record};
    struct vs_requeue *q = vs_requeue_new(&o);
    cr_assert_not_null(q);
    return q;
}

Test(requeue, refusal_before_the_change_is_nudged_once_after_the_delay)
{
    struct vs_requeue *q = table(8);
    vs_requeue_refused(q, "u1", "default", "a", 100.0);
    vs_requeue_freed(q, 100.5);
    cr_assert_eq(vs_requeue_run(q, 101.4), 0, "not before the delay");
    cr_assert_eq(vs_requeue_run(q, 101.5), 1);
    cr_assert_str_eq(nudged[0], "u1 default/a");
    cr_assert_eq(vs_requeue_size(q), 0);
    vs_requeue_freed(q, 102.0);
    cr_assert_eq(vs_requeue_run(q, 103.0), 0, "a nudge is spent once per refusal");
    cr_assert_eq(vs_requeue_nudged(q), 1);
    vs_requeue_free(q);
}

Test(requeue, placed_deleted_or_refused_after_the_change_is_not_nudged)
{
    struct vs_requeue *q = table(8);
    vs_requeue_refused(q, "placed", "ns", "p", 10.0);
    vs_requeue_refused(q, "gone", "ns", "g", 10.0);
    vs_requeue_refused(q, "fresh", "ns", "f", 10.0);
    vs_requeue_refused(q, "stale", "ns", "s", 10.0);
    vs_requeue_freed(q, 11.0);
    vs_requeue_forget(q, "placed");
    vs_requeue_forget(q, "gone");
    vs_requeue_refused(q, "fresh", "ns", "f", 11.2); /* read the freed usage: a real refusal */
    cr_assert_eq(vs_requeue_run(q, 12.0), 1);
    cr_assert_str_eq(nudged[0], "stale ns/s");
    cr_assert_eq(vs_requeue_size(q), 1, "fresh stays recorded for the next change");
    vs_requeue_freed(q, 13.0);
    cr_assert_eq(vs_requeue_run(q, 14.0), 1);
    cr_assert_str_eq(nudged[1], "fresh ns/f");
    vs_requeue_free(q);
}

Test(requeue, changes_pending_together_use_the_latest)
{
    struct vs_requeue *q = table(8);
    vs_requeue_freed(q, 20.0);
    vs_requeue_refused(q, "between", "ns", "b", 20.3); /* after the first change, before the 2nd */
    vs_requeue_freed(q, 20.6);
    cr_assert_eq(vs_requeue_run(q, 20.9), 0, "due 1 s after the first change");
    cr_assert_eq(vs_requeue_run(q, 21.0), 1);
    cr_assert_str_eq(nudged[0], "between ns/b");
    vs_requeue_free(q);
}

Test(requeue, refusal_reported_after_its_round_ran_arms_another)
{
    struct vs_requeue *q = table(8);
    vs_requeue_freed(q, 30.0);
    cr_assert_eq(vs_requeue_run(q, 31.0), 0);
    /* A slow Filter that began reading at 29.9 reports its refusal after the round. */
    vs_requeue_refused(q, "slow", "ns", "s", 29.9);
    cr_assert_eq(vs_requeue_run(q, 31.1), 1);
    cr_assert_str_eq(nudged[0], "slow ns/s");
    vs_requeue_free(q);
}

Test(requeue, refusals_older_than_the_window_are_left_to_kube_scheduler)
{
    struct vs_requeue *q = table(8);
    vs_requeue_refused(q, "old", "ns", "o", 0.0);
    vs_requeue_refused(q, "recent", "ns", "r", 250.0);
    vs_requeue_freed(q, 301.0);
    cr_assert_eq(vs_requeue_run(q, 302.0), 1);
    cr_assert_str_eq(nudged[0], "recent ns/r");
    cr_assert_eq(vs_requeue_size(q), 0, "the old record was dropped as well");
    vs_requeue_free(q);
}

Test(requeue, table_is_bounded)
{
    struct vs_requeue *q = table(2);
    vs_requeue_refused(q, "a", "ns", "a", 1.0);
    vs_requeue_refused(q, "b", "ns", "b", 1.0);
    vs_requeue_refused(q, "c", "ns", "c", 1.0);
    vs_requeue_refused(q, "a", "ns", "a", 1.5); /* an update, not a new record */
    cr_assert_eq(vs_requeue_size(q), 2);
    vs_requeue_freed(q, 2.0);
    cr_assert_eq(vs_requeue_run(q, 3.0), 2);
    cr_assert_str_eq(nudged[0], "a ns/a");
    cr_assert_str_eq(nudged[1], "b ns/b");
    vs_requeue_free(q);
}

/* ------------------------------------------------------------------ through the service */

static struct vs_fakeapi *api;
static struct vs_service *svc;
static struct vs_harness h;

static void put(char *json)
{
    cr_assert_neq(vs_fakeapi_put(api, json), 0, "fake API refused %s", json);
    free(json);
}

static void setup(void)
{
    api = vs_harness_fakeapi(&h);
    put(vs_harness_node("n1", 1, 15360));
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    struct vs_errbuf eb;
    svc = vs_harness_service_start(&c, &eb);
    cr_assert_not_null(svc, "service start: %s", eb.msg);
}

static void teardown(void)
{
    vs_service_stop(svc);
    svc = NULL;
    vs_fakeapi_stop(api);
    api = NULL;
    vs_harness_cleanup(&h);
}

/* The NodeNames (or FailedNodes) of a Filter of the stored pod on n1, as compact JSON. */
static char *filter(const char *name)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", name);
    cr_assert_not_null(pod);
    json_t *req = json_pack("{s:o,s:n,s:[s]}", "Pod", pod, "Nodes", "NodeNames", "n1");
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char *out;
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", "/filter", "application/json", text,
                              strlen(text), &out);
    free(text);
    cr_assert_eq(st, 200, "%s", out);
    json_t *r = json_loads(out, 0, NULL);
    free(out);
    json_t *f = json_object_get(r, "FailedNodes");
    char *s = json_dumps(json_is_null(f) ? json_object_get(r, "NodeNames") : f,
                         JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(r);
    return s;
}

static const char *annotation(json_t *pod, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"), key));
}

/* Waits until the stored pod's annotation key is set (true) or timeout_ms passed (false). */
static bool wait_annotation(const char *name, const char *key, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        json_t *p = vs_fakeapi_get(api, "Pod", "default", name);
        bool set = p && annotation(p, key);
        json_decref(p);
        if (set)
            return true;
        usleep(50 * 1000);
    }
    return false;
}

TestSuite(requeue_service, .init = setup, .fini = teardown, .timeout = 60);

Test(requeue_service, refused_pod_is_nudged_when_the_holder_is_deleted)
{
    put(vs_harness_pod("holder", "uid-holder", "15000", "10"));
    put(vs_harness_pod("waiter", "uid-waiter", "8000", "10"));
    char *got = filter("holder");
    cr_assert_str_eq(got, "[\"n1\"]");
    free(got);
    got = filter("waiter");
    cr_assert_str_eq(got, "{\"n1\":\"1/1 CardInsufficientMemory\"}");
    free(got);
    cr_assert_not(wait_annotation("waiter", VS_ANNO_REQUEUE, 1500),
                  "nudged while nothing was freed");
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "holder"), 0);
    cr_assert(wait_annotation("waiter", VS_ANNO_REQUEUE, 10000), "waiter was never nudged");
    json_t *p = vs_fakeapi_get(api, "Pod", "default", "holder");
    cr_assert_null(p);
    /* Once: the record is spent, and the waiter now fits. */
    got = filter("waiter");
    cr_assert_str_eq(got, "[\"n1\"]");
    free(got);
    /* The nudge is counted after its patch is queued, so the patch (seen above) may land
     * before the count: wait for the count itself. */
    struct vs_harness plain = h;
    plain.scheme = "http";
    char *m = NULL;
    for (int waited = 0; waited <= 5000; waited += 20) {
        free(m);
        cr_assert_eq(vs_harness_call(&plain, vs_service_metrics_port(svc), "GET", "/metrics", NULL,
                                     NULL, 0, &m),
                     200);
        if (strstr(m, "\nvgpu_sched_requeue_nudges_total 1\n"))
            break;
        usleep(20 * 1000);
    }
    cr_assert_not_null(strstr(m, "\nvgpu_sched_requeue_nudges_total 1\n"), "%s", m);
    free(m);
}
