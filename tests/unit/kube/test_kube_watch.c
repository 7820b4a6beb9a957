/* test_kube_watch: WATCH streams against the fake API (order, bookmarks, 410 as a status or an
 * event, stop, dropped streams) and the incremental event decoder fed split anywhere. Waits for
 * asynchronous effects with generous deadlines; never asserts wall time. */
#include "kubetest.h"
#include "kube_http.h"

/* ------------------------------------------------------------------------------------------ */
/* WATCH                                                                                      */

struct watch_run {
    struct vs_kube *k;
    const char *path;
    char *rv;
    int timeout_s;
    struct rec rec;
    size_t stop_after; /* set *stop after this many events (0 = never) */
    volatile int stop;
    enum vs_err rc;
    struct vs_errbuf eb;
    pthread_t th;
};

static int on_watch_event(void *ctx, const char *type, json_t *obj)
{
    struct watch_run *w = ctx;
    char key[600];
    rec_add(&w->rec, "%s %s %s", type, obj_key(obj, key, sizeof(key)),
            jstr(obj, "metadata", "resourceVersion"));
    if (w->stop_after && rec_count(&w->rec, "") >= w->stop_after)
        __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    return 0;
}

static void *watch_main(void *p)
{
    struct watch_run *w = p;
    w->rc = vs_kube_watch(w->k, w->path, NULL, &w->rv, w->timeout_s, on_watch_event, w, &w->stop,
                          &w->eb);
    return NULL;
}

static void watch_start(struct watch_run *w, struct vs_kube *k, const char *path, uint64_t rv,
                        size_t stop_after)
{
    memset(w, 0, sizeof(*w));
    w->k = k;
    w->stop_after = stop_after;
    w->path = path;
    w->timeout_s = 60;
    rec_init(&w->rec);
    if (rv)
        cr_assert_geq(asprintf(&w->rv, "%" PRIu64, rv), 0);
    cr_assert_eq(pthread_create(&w->th, NULL, watch_main, w), 0);
}

static void watch_join(struct watch_run *w)
{
    pthread_join(w->th, NULL);
}

static void watch_cleanup(struct watch_run *w)
{
    free(w->rv);
    rec_cleanup(&w->rec);
}

Test(watch, events_arrive_in_order, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct watch_run w;
    char want[512];

    uint64_t rv0 = put_pod(api, "default", "old", NULL, NULL);
    watch_start(&w, k, "/api/v1/namespaces/default/pods", rv0, 4);
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    uint64_t r1 = put_pod(api, "default", "p", NULL, NULL);
    put_pod(api, "other", "ignored", NULL, NULL);
    uint64_t r2 = put_pod(api, "default", "p", "{\"v\":\"2\"}", NULL);
    vs_fakeapi_put(api, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}");
    cr_assert_eq(vs_fakeapi_delete(api, "pods", "default", "p"), 0);
    uint64_t r3 = vs_fakeapi_rv(api);
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "old"), 0);
    uint64_t r4 = vs_fakeapi_rv(api);
    watch_join(&w);
    cr_assert_eq(w.rc, VS_OK, "%s", w.eb.msg);
    char *got = rec_join(&w.rec, NULL);
    snprintf(want, sizeof(want),
             "ADDED default/p %" PRIu64 "\nMODIFIED default/p %" PRIu64 "\nDELETED default/p "
             "%" PRIu64 "\nDELETED default/old %" PRIu64,
             r1, r2, r3, r4);
    cr_assert_str_eq(got, want);
    snprintf(want, sizeof(want), "%" PRIu64, r4);
    cr_assert_str_eq(w.rv, want);
    free(got);
    watch_cleanup(&w);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(watch, without_resource_version_starts_with_synthetic_adds, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct watch_run w;

    put_pod(api, "default", "b", NULL, NULL);
    put_pod(api, "default", "a", NULL, NULL);
    watch_start(&w, k, "/api/v1/pods", 0, 2);
    watch_join(&w);
    cr_assert_eq(w.rc, VS_OK, "%s", w.eb.msg);
    char *got = rec_join(&w.rec, NULL);
    cr_assert_str_eq(got, "ADDED default/a 2\nADDED default/b 1");
    free(got);
    watch_cleanup(&w);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(watch, bookmarks_advance_the_resource_version, .timeout = 30)
{
    struct vs_fakeapi_opts o = {.quiet = true, .bookmark_ms = 50};
    struct vs_fakeapi *api = fake(&o);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct rec r;
    char want[32];

    rec_init(&r);
    uint64_t rv = put_pod(api, "default", "p", NULL, NULL);
    vs_fakeapi_put(api, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}");
    char *rvs;
    cr_assert_geq(asprintf(&rvs, "%" PRIu64, rv), 0);
    /* The server ends the stream after 1 s; meanwhile only bookmarks arrive. */
    cr_assert_eq(vs_kube_watch(k, "/api/v1/pods", NULL, &rvs, 1, NULL, NULL, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    snprintf(want, sizeof(want), "%" PRIu64, vs_fakeapi_rv(api));
    cr_assert_str_eq(rvs, want);
    free(rvs);
    rec_cleanup(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

/* A watch that ends at its timeoutSeconds leaves its connection in the caller's multi handle
 * for the next watch (the informer's case); without one, each watch makes its own connection. */
Test(watch, the_next_watch_reuses_the_connection, .timeout = 30)
{
    struct vs_fakeapi_opts o = {.quiet = true, .bookmark_ms = 50};
    struct vs_fakeapi *api = fake(&o);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    CURLM *multi = NULL;

    unsigned before = vs_fakeapi_connections(api);
    for (int i = 0; i < 3; i++) {
        char *rvs = NULL;
        cr_assert_eq(vs_kube_watch_counted(k, "/api/v1/pods", NULL, &rvs, 1, NULL, NULL, NULL, NULL,
                                           &multi, NULL, &eb),
                     VS_OK, "%s", eb.msg);
        free(rvs);
        cr_assert_eq(vs_fakeapi_connections(api), before + 1, "after watch %d: %u connections",
                     i + 1, vs_fakeapi_connections(api) - before);
    }
    cr_assert_not_null(multi);
    curl_multi_cleanup(multi);
    for (int i = 0; i < 2; i++) { /* no multi kept: a connection per watch */
        char *rvs = NULL;
        cr_assert_eq(vs_kube_watch(k, "/api/v1/pods", NULL, &rvs, 1, NULL, NULL, NULL, &eb), VS_OK,
                     "%s", eb.msg);
        free(rvs);
    }
    cr_assert_eq(vs_fakeapi_connections(api), before + 3);
    cr_assert_eq(vs_fakeapi_count(api, "WATCH", "/api/v1/pods"), 5);
    struct vs_kube_stats st; /* the client's own count agrees */
    vs_kube_stats(k, &st);
    cr_assert_eq(st.connections, vs_fakeapi_connections(api));
    cr_assert_eq(st.requests, 5);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

static void expect_gone(bool as_event)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    char want[128];

    uint64_t rv = put_pod(api, "default", "p", NULL, NULL);
    if (as_event)
        vs_fakeapi_expire_event(api, "pods");
    else
        vs_fakeapi_expire(api, "Pod");
    char *rvs;
    cr_assert_geq(asprintf(&rvs, "%" PRIu64, rv), 0);
    cr_assert_eq(vs_kube_watch(k, "/api/v1/pods", NULL, &rvs, 10, NULL, NULL, NULL, &eb),
                 VS_ERR_GONE);
    snprintf(want, sizeof(want),
             "WATCH /api/v1/pods: 410 too old resource version: %" PRIu64 " (%" PRIu64 ")", rv,
             rv + 1);
    cr_assert_str_eq(eb.msg, want);
    /* Other resources are not affected. */
    char *nrv = NULL;
    cr_assert_eq(vs_kube_list(k, "/api/v1/nodes", NULL, 0, NULL, NULL, &nrv, &eb), VS_OK);
    free(rvs);
    rvs = NULL;
    cr_assert_geq(asprintf(&rvs, "%" PRIu64, rv), 0);
    cr_assert_eq(vs_kube_watch(k, "/api/v1/nodes", NULL, &rvs, 1, NULL, NULL, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    free(nrv);
    free(rvs);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(watch, gone_as_http_status, .timeout = 30)
{
    expect_gone(false);
}

Test(watch, gone_as_error_event, .timeout = 30)
{
    expect_gone(true);
}

Test(watch, stop_ends_an_idle_watch, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct watch_run w;

    watch_start(&w, k, "/api/v1/pods", put_pod(api, "default", "p", NULL, NULL), 0);
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    watch_join(&w);
    cr_assert_eq(w.rc, VS_OK, "%s", w.eb.msg);
    cr_assert_eq(rec_count(&w.rec, ""), 0);
    watch_cleanup(&w);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(watch, dropped_stream_is_an_error_and_keeps_the_last_version, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct watch_run w;
    char want[32];

    watch_start(&w, k, "/api/v1/pods", put_pod(api, "default", "p", NULL, NULL), 0);
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    uint64_t rv = put_pod(api, "default", "q", NULL, NULL);
    cr_assert(rec_wait(&w.rec, "ADDED", 1));
    vs_fakeapi_drop_watches(api);
    watch_join(&w);
    cr_assert_eq(w.rc, VS_ERR_KUBE, "%s", w.eb.msg);
    cr_assert(strncmp(w.eb.msg, "WATCH /api/v1/pods: ", 20) == 0, "%s", w.eb.msg);
    snprintf(want, sizeof(want), "%" PRIu64, rv);
    cr_assert_str_eq(w.rv, want);
    watch_cleanup(&w);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

/* ------------------------------------------------------------------------------------------ */
/* watch decoder                                                                              */

struct dec_log {
    char text[4096];
};

static int dec_event(void *ctx, const char *type, json_t *obj)
{
    struct dec_log *l = ctx;
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof(l->text) - n, "%s%s:%s", n ? "," : "", type,
             jstr(obj, "metadata", "name"));
    return strcmp(type, "DELETED") == 0 && strcmp(jstr(obj, "metadata", "name"), "stop") == 0;
}

static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\"}}}\n"
    "\r\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"10\"}}}"
    "\r\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"11\"}}}"
    "\n";

Test(decoder, events_split_at_every_byte)
{
    struct vs_watch_decoder d;
    struct dec_log l = {{0}};
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, dec_event, &l, 0);
    for (size_t i = 0; i < sizeof(STREAM) - 1; i++)
        cr_assert_eq(vs_watch_decoder_feed(&d, STREAM + i, 1, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_watch_decoder_finish(&d, &eb), VS_OK);
    cr_assert_str_eq(l.text, "ADDED:a,MODIFIED:a,DELETED:b");
    cr_assert_str_eq(d.rv, "11");
    cr_assert_eq(d.events, 4);
    vs_watch_decoder_cleanup(&d);
}

Test(decoder, many_events_per_chunk_and_a_last_line_without_newline)
{
    struct vs_watch_decoder d;
    struct dec_log l = {{0}};
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, dec_event, &l, 0);
    cr_assert_eq(vs_watch_decoder_feed(&d, STREAM, sizeof(STREAM) - 1, &eb), VS_OK, "%s", eb.msg);
    const char *tail =
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}";
    cr_assert_eq(vs_watch_decoder_feed(&d, tail, strlen(tail), &eb), VS_OK);
    cr_assert_str_eq(d.rv, "11");
    cr_assert_eq(vs_watch_decoder_finish(&d, &eb), VS_OK);
    cr_assert_str_eq(d.rv, "12");
    vs_watch_decoder_cleanup(&d);
}

struct deccase {
    const char *input;
    enum vs_err code;
    const char *msg;
};

static void free_deccases(struct criterion_test_params *p)
{
    struct deccase *c = p->params;
    for (size_t i = 0; i < p->length; i++) {
        cr_free((void *)c[i].input);
        cr_free((void *)c[i].msg);
    }
    cr_free(c);
}

ParameterizedTestParameters(decoder, errors)
{
    static const struct deccase cases[] = {
        {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
         "\"message\":\"too old resource version: 1 (5)\"}}\n",
         VS_ERR_GONE, "410 too old resource version: 1 (5)"},
        {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500}}\n", VS_ERR_KUBE,
         "500 Internal Server Error"},
        {"{\"type\":\"ERROR\",\"object\":{\"message\":\"odd\"}}\n", VS_ERR_KUBE,
         "ERROR event: odd"},
        {"{\"type\":\"ERROR\",\"object\":{\"code\":403,\"message\":\"no\"}}\n", VS_ERR_AUTH,
         "403 no"},
        {"not json\n", VS_ERR_PARSE,
         "invalid watch event at byte 3: '[' or '{' expected near 'not'"},
        {"{\"type\":\"ADDED\"}\n", VS_ERR_PARSE, "watch event without a type and an object"},
        {"{\"type\":\"ADDED\",\"object\":[]}\n", VS_ERR_PARSE,
         "watch event without a type and an object"},
        {"{\"type\":\"RENAMED\",\"object\":{}}\n", VS_ERR_PARSE,
         "unknown watch event type \"RENAMED\""},
        {"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"stop\"}}}\n", VS_ERR_INVAL,
         "stopped by the event handler"},
        {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a name that makes this "
         "event longer than the 160 bytes the decoder accepts in these cases .................."
         "......\"}}}\n",
         VS_ERR_PARSE, "watch event larger than 160 bytes"},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    struct deccase *shared = cr_malloc(n * sizeof(*shared));
    for (size_t i = 0; shared && i < n; i++) {
        shared[i].input = shared_str(cases[i].input);
        shared[i].code = cases[i].code;
        shared[i].msg = shared_str(cases[i].msg);
    }
    return cr_make_param_array(struct deccase, shared, n, free_deccases);
}

static const struct vs_json_keep KEEP_META[] = {
    {.key = "name"}, {.key = "resourceVersion"}, {.key = NULL}};
static const struct vs_json_keep KEEP_NO_RV[] = {{.key = "kind"}, {.key = NULL}};
static const struct vs_json_keep KEEP[] = {{.key = "metadata", .members = KEEP_META},
                                           {.key = NULL}};

/* The same errors whether the objects are cut down (vs_watch_decoder_keep) or not. */
ParameterizedTest(struct deccase *tc, decoder, errors)
{
    for (int pruned = 0; pruned < 2; pruned++) {
        struct vs_watch_decoder d;
        struct dec_log l = {{0}};
        struct vs_errbuf eb = {{0}};
        vs_watch_decoder_init(&d, dec_event, &l, 160);
        vs_watch_decoder_keep(&d, pruned ? KEEP : NULL);
        cr_assert_eq(vs_watch_decoder_feed(&d, tc->input, strlen(tc->input), &eb), tc->code,
                     "pruned %d: %s", pruned, eb.msg);
        cr_assert_str_eq(eb.msg, tc->msg, "pruned %d", pruned);
        vs_watch_decoder_cleanup(&d);
    }
}

static int dump_event(void *ctx, const char *type, json_t *obj)
{
    struct dec_log *l = ctx;
    char *j = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof(l->text) - n, "%s%s %s", n ? "\n" : "", type, j ? j : "?");
    free(j);
    return 0;
}

/* With a keep table on_event sees the object cut down to it; the resourceVersion advances and
 * a bookmark counts. */
Test(decoder, kept_members_only)
{
    struct vs_watch_decoder d;
    struct dec_log l = {{0}};
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, dump_event, &l, 0);
    vs_watch_decoder_keep(&d, KEEP);
    const char *in =
        "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
        "\"managedFields\":[{\"manager\":\"x\"}],\"resourceVersion\":\"7\"},\"spec\":{}}}\n"
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n";
    cr_assert_eq(vs_watch_decoder_feed(&d, in, strlen(in), &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(l.text, "ADDED {\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"}}");
    cr_assert_str_eq(d.rv, "9");
    cr_assert_eq(d.events, 2);
    vs_watch_decoder_cleanup(&d);
}

/* A table that does not keep metadata.resourceVersion is ignored: whole objects. */
Test(decoder, keep_without_resource_version_is_ignored)
{
    struct vs_watch_decoder d;
    struct dec_log l = {{0}};
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, dump_event, &l, 0);
    vs_watch_decoder_keep(&d, KEEP_NO_RV);
    const char *in = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":"
                     "\"a\",\"resourceVersion\":\"7\"}}}\n";
    cr_assert_eq(vs_watch_decoder_feed(&d, in, strlen(in), &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(
        l.text, "ADDED {\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"}}");
    cr_assert_str_eq(d.rv, "7");
    vs_watch_decoder_cleanup(&d);
}

Test(decoder, oversized_event_split_across_chunks)
{
    struct vs_watch_decoder d;
    struct vs_errbuf eb = {{0}};
    char chunk[40];
    memset(chunk, 'x', sizeof(chunk));
    vs_watch_decoder_init(&d, NULL, NULL, 64);
    cr_assert_eq(vs_watch_decoder_feed(&d, chunk, sizeof(chunk), &eb), VS_OK);
    cr_assert_eq(vs_watch_decoder_feed(&d, chunk, sizeof(chunk), &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "watch event larger than 64 bytes");
    vs_watch_decoder_cleanup(&d);
}

Test(decoder, stream_ending_inside_an_event)
{
    struct vs_watch_decoder d;
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, NULL, NULL, 0);
    cr_assert_eq(vs_watch_decoder_feed(&d, "{\"type\":\"ADD", 12, &eb), VS_OK);
    cr_assert_eq(vs_watch_decoder_finish(&d, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "watch stream ended inside an event: invalid watch event at byte "
                             "12: premature end of input near '\"ADD'");
    vs_watch_decoder_cleanup(&d);
}
