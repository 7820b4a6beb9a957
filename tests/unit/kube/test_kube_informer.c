/* test_kube_informer: the informer's list-then-watch loop against the fake API: initial sync,
 * resume after a dropped watch without loss, relist on 410 and after two failed watches,
 * reported and retried list failures. Never asserts wall time. */
#include "kubetest.h"

/* ------------------------------------------------------------------------------------------ */
/* informer                                                                                   */

struct inf_run {
    struct vs_kube *k;
    const char *path;
    struct rec rec;
    volatile int stop;
    pthread_t th;
};

static void h_begin(void *ctx)
{
    rec_add(&((struct inf_run *)ctx)->rec, "BEGIN");
}

static void h_object(void *ctx, const char *type, json_t *o)
{
    char key[600];
    rec_add(&((struct inf_run *)ctx)->rec, "%s %s", type, obj_key(o, key, sizeof(key)));
}

static void h_synced(void *ctx)
{
    rec_add(&((struct inf_run *)ctx)->rec, "SYNCED");
}

static void h_error(void *ctx, enum vs_err err, const char *msg)
{
    rec_add(&((struct inf_run *)ctx)->rec, "ERROR %s %s", vs_err_name(err), msg);
}

static void *inf_main(void *p)
{
    struct inf_run *r = p;
    static const struct vs_informer_handlers h = {
        .begin = h_begin, .object = h_object, .synced = h_synced, .error = h_error};
    vs_kube_informer_run(r->k, r->path, NULL, &h, r, &r->stop);
    return NULL;
}

static void inf_start(struct inf_run *r, struct vs_kube *k, const char *path)
{
    memset(r, 0, sizeof(*r));
    r->k = k;
    r->path = path;
    rec_init(&r->rec);
    cr_assert_eq(pthread_create(&r->th, NULL, inf_main, r), 0);
}

static void inf_stop(struct inf_run *r)
{
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
    pthread_join(r->th, NULL);
    rec_cleanup(&r->rec);
}

static void assert_rec(struct rec *r, const char *skip, const char *want)
{
    char *got = rec_join(r, skip);
    cr_assert_str_eq(got, want);
    free(got);
}

Test(informer, initial_sync_then_changes, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;

    put_pod(api, "default", "c", NULL, NULL);
    put_pod(api, "default", "a", NULL, NULL);
    put_pod(api, "default", "b", NULL, NULL);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 1));
    assert_rec(&r.rec, NULL, "BEGIN\nADDED default/a\nADDED default/b\nADDED default/c\nSYNCED");
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    put_pod(api, "default", "d", NULL, NULL);
    put_pod(api, "default", "a", "{\"x\":\"y\"}", NULL);
    vs_fakeapi_delete(api, "pods", "default", "b");
    cr_assert(rec_wait(&r.rec, "DELETED", 1));
    assert_rec(&r.rec, NULL,
               "BEGIN\nADDED default/a\nADDED default/b\nADDED default/c\nSYNCED\n"
               "ADDED default/d\nMODIFIED default/a\nDELETED default/b");
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(informer, dropped_watch_resumes_without_relist_or_loss, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;

    put_pod(api, "default", "a", NULL, NULL);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 1));
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    vs_fakeapi_drop_watches(api);
    put_pod(api, "default", "e", NULL, NULL); /* while no watch is open */
    put_pod(api, "default", "f", NULL, NULL);
    cr_assert(rec_wait(&r.rec, "ADDED default/f", 1));
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    put_pod(api, "default", "g", NULL, NULL);
    cr_assert(rec_wait(&r.rec, "ADDED default/g", 1));
    assert_rec(&r.rec, "ERROR",
               "BEGIN\nADDED default/a\nSYNCED\nADDED default/e\nADDED default/f\nADDED default/g");
    cr_assert_eq(rec_count(&r.rec, "ERROR VS_ERR_KUBE WATCH /api/v1/pods: "), 1);
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/pods"), 1);
    cr_assert_eq(vs_fakeapi_count(api, "WATCH", "/api/v1/pods"), 2);
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

static void informer_relists_on_gone(bool as_event)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;
    char want[256];

    put_pod(api, "default", "a", NULL, NULL);
    uint64_t rv = put_pod(api, "default", "b", NULL, NULL);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 1));
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    if (as_event) {
        vs_fakeapi_expire_event(api, "pods");
    } else {
        vs_fakeapi_expire(api, "pods");
        vs_fakeapi_drop_watches(api); /* the resumed watch then meets the 410 */
    }
    cr_assert(rec_wait(&r.rec, "SYNCED", 2));
    assert_rec(&r.rec, "ERROR",
               "BEGIN\nADDED default/a\nADDED default/b\nSYNCED\n"
               "BEGIN\nADDED default/a\nADDED default/b\nSYNCED");
    snprintf(want, sizeof(want),
             "ERROR VS_ERR_GONE WATCH /api/v1/pods: 410 too old resource version: %" PRIu64
             " (%" PRIu64 ")",
             rv, rv + 1);
    cr_assert_eq(rec_count(&r.rec, want), 1);
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/pods"), 2);
    /* After the relist the watch works again. */
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    put_pod(api, "default", "c", NULL, NULL);
    cr_assert(rec_wait(&r.rec, "ADDED default/c", 1));
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(informer, gone_as_http_status_relists, .timeout = 30)
{
    informer_relists_on_gone(false);
}

Test(informer, gone_as_error_event_relists, .timeout = 30)
{
    informer_relists_on_gone(true);
}

Test(informer, list_failures_are_reported_and_retried, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;

    put_pod(api, "default", "a", NULL, NULL);
    vs_fakeapi_fault(api, "LIST", "/api/v1/pods", 500, 2);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 1));
    assert_rec(&r.rec, NULL,
               "BEGIN\nERROR VS_ERR_KUBE LIST /api/v1/pods: 500 injected fault\n"
               "BEGIN\nERROR VS_ERR_KUBE LIST /api/v1/pods: 500 injected fault\n"
               "BEGIN\nADDED default/a\nSYNCED");
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(informer, two_failed_watches_in_a_row_relist, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;

    put_pod(api, "default", "a", NULL, NULL);
    vs_fakeapi_fault(api, "WATCH", "/api/v1/pods", 500, 2);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 2));
    assert_rec(&r.rec, NULL,
               "BEGIN\nADDED default/a\nSYNCED\n"
               "ERROR VS_ERR_KUBE WATCH /api/v1/pods: 500 injected fault\n"
               "ERROR VS_ERR_KUBE WATCH /api/v1/pods: 500 injected fault\n"
               "BEGIN\nADDED default/a\nSYNCED");
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}
