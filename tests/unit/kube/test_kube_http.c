/* test_kube_http: requests against the in-process fake API (tests/fakeapi): request/response
 * and Status error mapping with exact messages, Retry-After, token-file rotation after a 401,
 * TLS material in memory, and query escaping. Never asserts wall time. */
#include "kubetest.h"
#include "kube_http.h"

#include <pthread.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* requests                                                                                   */

Test(request, create_get_patch, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    json_t *pod =
        json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:[{s:s}]}}", "apiVersion", "v1", "kind", "Pod",
                  "metadata", "name", "p", "labels", "app", "a", "spec", "containers", "name", "c");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods", pod, &out, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_str_eq(jstr(out, "metadata", "namespace"), "ml");
    cr_assert_not_null(jstr(out, "metadata", "uid"));
    char *rv = strdup(jstr(out, "metadata", "resourceVersion"));
    json_decref(out);

    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods", pod, &out, &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg, "POST /api/v1/namespaces/ml/pods: 409 pods \"p\" already exists");
    cr_assert_null(out);
    json_decref(pod);

    cr_assert_eq(vs_kube_get(k, "/api/v1/namespaces/ml/pods/p", &out, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(jstr(out, "metadata", "resourceVersion"), rv);
    json_decref(out);

    json_t *patch = json_pack("{s:{s:{s:s},s:{s:n}}}", "metadata", "annotations",
                              "hami.io/vgpu-node", "n1", "labels", "app");
    cr_assert_eq(vs_kube_merge_patch(k, "/api/v1/namespaces/ml/pods/p", patch, &out, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_str_eq(ann(out, "hami.io/vgpu-node"), "n1");
    cr_assert_null(
        json_object_get(json_object_get(json_object_get(out, "metadata"), "labels"), "app"));
    cr_assert_str_neq(jstr(out, "metadata", "resourceVersion"), rv);
    json_decref(out);
    json_decref(patch);

    /* A merge patch that names the resourceVersion it was based on is conditional. */
    patch =
        json_pack("{s:{s:s,s:{s:s}}}", "metadata", "resourceVersion", rv, "annotations", "x", "y");
    cr_assert_eq(vs_kube_merge_patch(k, "/api/v1/namespaces/ml/pods/p", patch, &out, &eb),
                 VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg,
                     "PATCH /api/v1/namespaces/ml/pods/p: 409 Operation cannot be fulfilled on "
                     "pods \"p\": the object has been modified; please apply your changes to the "
                     "latest version and try again");
    json_decref(patch);
    json_t *cur = vs_fakeapi_get(api, "Pod", "ml", "p");
    cr_assert_null(ann(cur, "x"));
    patch = json_pack("{s:{s:s,s:{s:s}}}", "metadata", "resourceVersion",
                      jstr(cur, "metadata", "resourceVersion"), "annotations", "x", "y");
    cr_assert_eq(vs_kube_merge_patch(k, "/api/v1/namespaces/ml/pods/p/status", patch, NULL, &eb),
                 VS_OK, "%s", eb.msg);
    json_decref(patch);
    json_decref(cur);
    cur = vs_fakeapi_get(api, "Pod", "ml", "p");
    cr_assert_str_eq(ann(cur, "x"), "y");
    cr_assert_str_eq(ann(cur, "hami.io/vgpu-node"), "n1");
    json_decref(cur);

    cr_assert_eq(
        vs_kube_request(k, "DELETE", "/api/v1/namespaces/ml/pods/p", NULL, NULL, NULL, &eb), VS_OK,
        "%s", eb.msg);
    cr_assert_null(vs_fakeapi_get(api, "Pod", "ml", "p"));
    free(rv);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, status_errors_map_with_exact_messages, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    cr_assert_eq(vs_kube_get(k, "/api/v1/namespaces/default/pods/nope", &out, &eb),
                 VS_ERR_NOTFOUND);
    cr_assert_str_eq(eb.msg,
                     "GET /api/v1/namespaces/default/pods/nope: 404 pods \"nope\" not found");
    cr_assert_null(out);

    cr_assert_eq(vs_kube_get(k, "/api/v1/widgets", &out, &eb), VS_ERR_NOTFOUND);
    cr_assert_str_eq(eb.msg,
                     "GET /api/v1/widgets: 404 the server could not find the requested resource");

    vs_fakeapi_fault(api, "GET", "/api/v1/nodes", 410, 1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_GONE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 410 injected fault");

    vs_fakeapi_fault(api, "GET", "/api/v1/nodes", 403, 1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_AUTH);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 403 injected fault");

    vs_fakeapi_fault(api, "PATCH", "/api/v1/nodes/n1", 500, 1);
    json_t *patch = json_object();
    cr_assert_eq(vs_kube_merge_patch(k, "/api/v1/nodes/n1", patch, NULL, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "PATCH /api/v1/nodes/n1: 500 injected fault");
    json_decref(patch);

    /* No Status body: the reason phrase stands in for the message. */
    vs_fakeapi_fault_body(api, "GET", "/api/v1/nodes", 503, 1, "", -1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 503 Service Unavailable");
    vs_fakeapi_fault_body(api, "GET", "/api/v1/nodes", 502, 1, "<html>proxy</html>", -1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 502 Bad Gateway");

    /* A 2xx that is not JSON. */
    vs_fakeapi_fault_body(api, "GET", "/api/v1/nodes", 200, 1, "nope", -1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: invalid JSON in the response at byte 4: "
                             "'[' or '{' expected near 'nope'");

    struct vs_kube_stats st;
    vs_kube_stats(k, &st);
    cr_assert_eq(st.requests, 8);
    cr_assert_eq(st.errors_by_verb[0], 7); /* GET */
    cr_assert_eq(st.errors_by_verb[3], 1); /* PATCH */
    cr_assert_eq(st.errors_by_verb[1] + st.errors_by_verb[2] + st.errors_by_verb[4] +
                     st.errors_by_verb[5],
                 0);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, retry_after_429_is_honoured, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    vs_fakeapi_fault_body(api, "LIST", "/api/v1/nodes", 429, 2, NULL, 0);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(jstr(out, "kind", NULL), "NodeList");
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/nodes"), 3);
    json_decref(out);

    /* Without Retry-After a 429 is an error like any other. */
    vs_fakeapi_fault(api, "GET", "/api/v1/nodes", 429, 1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 429 injected fault");
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, binding_rules, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    put_pod(api, "ml", "trainer-0", NULL, NULL);
    json_t *pod = vs_fakeapi_get(api, "Pod", "ml", "trainer-0");
    const char *uid = jstr(pod, "metadata", "uid");

    json_t *bad = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                            "Binding", "metadata", "name", "trainer-0", "uid", "other-uid",
                            "target", "kind", "Node", "name", "node-a");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods/trainer-0/binding", bad, &out, &eb),
                 VS_ERR_CONFLICT);
    char want[512];
    snprintf(want, sizeof(want),
             "POST /api/v1/namespaces/ml/pods/trainer-0/binding: 409 Operation cannot be "
             "fulfilled on pods/binding \"trainer-0\": Precondition failed: UID in precondition: "
             "other-uid, UID in object meta: %s",
             uid);
    cr_assert_str_eq(eb.msg, want);
    json_decref(bad);

    json_t *b =
        json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                  "Binding", "metadata", "name", "trainer-0", "uid", uid, "annotations",
                  "hami.io/bind-phase", "success", "target", "kind", "Node", "name", "node-a");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods/trainer-0/binding", b, &out, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_str_eq(jstr(out, "status", NULL), "Success");
    json_decref(out);
    json_t *now = vs_fakeapi_get(api, "Pod", "ml", "trainer-0");
    cr_assert_str_eq(jstr(now, "spec", "nodeName"), "node-a");
    cr_assert_str_eq(ann(now, "hami.io/bind-phase"), "success");
    json_decref(now);

    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods/trainer-0/binding", b, &out, &eb),
                 VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg, "POST /api/v1/namespaces/ml/pods/trainer-0/binding: 409 Operation "
                             "cannot be fulfilled on pods/binding \"trainer-0\": pod trainer-0 "
                             "is already assigned to node \"node-a\"");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods/gone/binding", b, &out, &eb),
                 VS_ERR_NOTFOUND);
    cr_assert_str_eq(eb.msg,
                     "POST /api/v1/namespaces/ml/pods/gone/binding: 404 pods \"gone\" not found");
    json_decref(b);
    json_decref(pod);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, lease_put_is_conditional, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;
    const char *coll = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
    const char *item = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vgpu";

    cr_assert_eq(vs_kube_get(k, item, &out, &eb), VS_ERR_NOTFOUND);
    cr_assert_str_eq(eb.msg, "GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
                             "vgpu: 404 leases.coordination.k8s.io \"vgpu\" not found");
    json_t *lease = json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:i}}", "apiVersion",
                              "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "vgpu",
                              "spec", "holderIdentity", "a", "leaseDurationSeconds", 15);
    cr_assert_eq(vs_kube_post(k, coll, lease, &out, &eb), VS_OK, "%s", eb.msg);
    json_t *stale = json_deep_copy(out);
    json_decref(out);
    json_decref(lease);

    json_object_set_new(json_object_get(stale, "spec"), "holderIdentity", json_string("b"));
    cr_assert_eq(vs_kube_put(k, item, stale, &out, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(jstr(out, "spec", "holderIdentity"), "b");
    json_decref(out);
    /* The same resourceVersion again is now stale. */
    cr_assert_eq(vs_kube_put(k, item, stale, &out, &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg,
                     "PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vgpu: 409 "
                     "Operation cannot be fulfilled on leases.coordination.k8s.io \"vgpu\": the "
                     "object has been modified; please apply your changes to the latest version "
                     "and try again");
    json_decref(stale);

    json_t *ev = json_pack("{s:s,s:s,s:{s:s},s:s,s:s}", "apiVersion", "v1", "kind", "Event",
                           "metadata", "name", "p.1", "reason", "GPUAssigned", "type", "Normal");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/events", ev, NULL, &eb), VS_OK, "%s",
                 eb.msg);
    json_decref(ev);
    json_t *got = vs_fakeapi_get(api, "Event", "ml", "p.1");
    cr_assert_str_eq(jstr(got, "reason", NULL), "GPUAssigned");
    json_decref(got);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, transport_errors, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    char url[64];
    snprintf(url, sizeof(url), "%s", vs_fakeapi_url(api));
    vs_fakeapi_delay(api, "GET", "/api/v1/nodes/slow", 3000);
    struct vs_kube_config cfg = {.server = url};
    struct vs_kube *k = client_cfg(&cfg, 1);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes/slow", &out, &eb), VS_ERR_TIMEOUT);
    cr_assert(strncmp(eb.msg, "GET /api/v1/nodes/slow: Operation timed out", 43) == 0, "%s",
              eb.msg);
    vs_fakeapi_stop(api);

    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_KUBE);
    cr_assert(strncmp(eb.msg, "GET /api/v1/nodes: Failed to connect to 127.0.0.1 port", 54) == 0,
              "%s", eb.msg);
    cr_assert_eq(vs_kube_get(k, "api/v1/nodes", &out, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "GET api/v1/nodes: path must start with /");
    vs_kube_free(k);
}

Test(request, new_rejects_bad_server)
{
    struct vs_kube_config cfg = {.server = "ftp://x"};
    struct vs_errbuf eb = {{0}};
    cr_assert_null(vs_kube_new(&cfg, NULL, &eb));
    cr_assert_str_eq(eb.msg, "kube: server \"ftp://x\" is not an http(s) URL");
    cfg.server = "https://x";
    cfg.token_file = "/nonexistent/token";
    cr_assert_null(vs_kube_new(&cfg, NULL, &eb));
    cr_assert_str_eq(eb.msg, "token file /nonexistent/token: No such file or directory");
    vs_kube_free(NULL);
}

/* The first POOL_MAX handles are kept for good, whichever order they come back in; a handle made
 * while they are all out is cleaned up when it comes back (the old pool kept the first ones
 * returned, so a burst's extra handles replaced the long-lived ones). */
Test(request, pool_keeps_the_first_handles_made)
{
    struct vs_kube_config cfg = {.server = "http://127.0.0.1:1"};
    struct vs_errbuf eb = {{0}};
    struct vs_kube *k = vs_kube_new(&cfg, NULL, &eb);
    cr_assert_not_null(k, "%s", eb.msg);
    cr_assert_eq(k->pool_wait_ms, POOL_WAIT_MS);
    k->pool_wait_ms = 0; /* no wait for a kept handle: see the next test */
    enum { N = POOL_MAX + 4 };
    CURL *h[N];
    for (int i = 0; i < N; i++)
        cr_assert_not_null(h[i] = vs_kube_handle_get(k));
    for (int i = N - 1; i >= 0; i--) /* the extra ones come back first */
        vs_kube_handle_put(k, h[i]);
    cr_assert_eq(k->n_owned, POOL_MAX);
    cr_assert_eq(k->n_pool, POOL_MAX);
    CURL *g[POOL_MAX];
    for (int i = 0; i < POOL_MAX; i++) {
        g[i] = vs_kube_handle_get(k);
        cr_assert_eq(g[i], h[i], "get %d: not the %d-th handle made", i, i);
    }
    CURL *extra = vs_kube_handle_get(k); /* all owned ones are out: a new one */
    cr_assert_not_null(extra);
    for (int i = 0; i < POOL_MAX; i++)
        cr_assert_neq(extra, g[i]);
    vs_kube_handle_put(k, extra);
    cr_assert_eq(k->n_pool, 0);
    for (int i = 0; i < POOL_MAX; i++)
        vs_kube_handle_put(k, g[i]);
    cr_assert_eq(k->n_pool, POOL_MAX);
    cr_assert_eq(k->n_owned, POOL_MAX);
    vs_kube_free(k);
}

struct getter {
    struct vs_kube *k;
    CURL *got;
};

static void *get_one(void *arg)
{
    struct getter *g = arg;
    g->got = vs_kube_handle_get(g->k);
    return NULL;
}

/* Once every kept handle is made and out, a request waits for one to come back (no connection
 * of its own), and only past pool_wait_ms makes a handle of its own; both waits are counted. */
Test(request, a_request_waits_for_a_kept_handle)
{
    struct vs_kube_config cfg = {.server = "http://127.0.0.1:1"};
    struct vs_errbuf eb = {{0}};
    struct vs_kube *k = vs_kube_new(&cfg, NULL, &eb);
    cr_assert_not_null(k, "%s", eb.msg);
    k->pool_wait_ms = 60000;
    CURL *h[POOL_MAX];
    for (int i = 0; i < POOL_MAX; i++)
        cr_assert_not_null(h[i] = vs_kube_handle_get(k)); /* made, no waiting */
    struct vs_kube_stats st;
    vs_kube_stats(k, &st);
    cr_assert_eq(st.pool_waits, 0);
    struct getter g = {.k = k};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, get_one, &g), 0);
    do { /* until it waits */
        vs_kube_stats(k, &st);
        if (st.pool_waits == 0)
            usleep(1000);
    } while (st.pool_waits == 0);
    vs_kube_handle_put(k, h[5]);
    pthread_join(t, NULL);
    cr_assert_eq(g.got, h[5], "the waiting request did not get the kept handle back");
    cr_assert_eq(k->n_owned, POOL_MAX);
    cr_assert_eq(k->n_pool, 0);

    k->pool_wait_ms = 20; /* every kept one still out: past the bound, one of its own */
    CURL *own = vs_kube_handle_get(k);
    cr_assert_not_null(own);
    for (int i = 0; i < POOL_MAX; i++)
        cr_assert_neq(own, h[i]);
    vs_kube_stats(k, &st);
    cr_assert_eq(st.pool_waits, 2);
    vs_kube_handle_put(k, own); /* cleaned up, not kept */
    cr_assert_eq(k->n_pool, 0);
    for (int i = 0; i < POOL_MAX; i++)
        vs_kube_handle_put(k, h[i]);
    cr_assert_eq(k->n_pool, POOL_MAX);
    vs_kube_free(k);
}

/* The client counts the connections it opens (vgpu_sched_api_connections_total): requests on a
 * kept handle share one; a handle made while every kept one is out opens its own. */
Test(request, connections_opened_are_counted, .timeout = 30)
{
    struct vs_fakeapi_opts o = {.quiet = true};
    struct vs_fakeapi *api = fake(&o);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
        json_decref(out);
    }
    struct vs_kube_stats st;
    vs_kube_stats(k, &st);
    cr_assert_eq(st.requests, 3);
    cr_assert_eq(st.connections, 1);
    cr_assert_eq(vs_fakeapi_connections(api), 1);

    CURL *held[POOL_MAX];
    for (int i = 0; i < POOL_MAX; i++)
        cr_assert_not_null(held[i] = vs_kube_handle_get(k));
    k->pool_wait_ms = 10; /* the request waits that long for a kept handle, then opens its own */
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    json_decref(out);
    for (int i = 0; i < POOL_MAX; i++)
        vs_kube_handle_put(k, held[i]);
    vs_kube_stats(k, &st);
    cr_assert_eq(st.requests, 4);
    cr_assert_eq(st.connections, 2);
    cr_assert_eq(vs_fakeapi_connections(api), 2);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

/* ------------------------------------------------------------------------------------------ */
/* bearer tokens                                                                              */

Test(token, rotation_is_picked_up_after_a_401, .timeout = 30)
{
    struct vs_fakeapi_opts o = {.quiet = true, .token = "token-A"};
    struct vs_fakeapi *api = fake(&o);
    char *dir = mkdir_tmp();
    char *tf = write_at(dir, "token", "token-A\n");
    struct vs_kube *k = client(api, NULL, tf);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    json_decref(out);

    /* The kubelet rotates the token: the server accepts only B, the file now holds B. */
    vs_fakeapi_set_token(api, "token-B");
    free(write_at(dir, "token", "token-B\n"));
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    json_decref(out);
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes"), 3); /* 200, 401, 200 */

    /* Watches re-read too. */
    vs_fakeapi_set_token(api, "token-C");
    free(write_at(dir, "token", "token-C"));
    char *rv = NULL;
    cr_assert_eq(vs_kube_watch(k, "/api/v1/nodes", NULL, &rv, 1, NULL, NULL, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_eq(vs_fakeapi_count(api, "WATCH", "/api/v1/nodes"), 2);
    free(rv);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
    free(tf);
    rm_tree(dir);
}

Test(token, auth_failure_is_clear, .timeout = 30)
{
    struct vs_fakeapi_opts o = {.quiet = true, .token = "right"};
    struct vs_fakeapi *api = fake(&o);
    char *dir = mkdir_tmp();
    char *tf = write_at(dir, "token", "wrong");
    struct vs_kube *k = client(api, NULL, tf);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_AUTH);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 401 Unauthorized");
    /* The file did not change, so the request is not repeated. */
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes"), 1);
    char *rv = NULL;
    cr_assert_eq(vs_kube_watch(k, "/api/v1/pods", NULL, &rv, 1, NULL, NULL, NULL, &eb),
                 VS_ERR_AUTH);
    cr_assert_str_eq(eb.msg, "WATCH /api/v1/pods: 401 Unauthorized");
    cr_assert_null(rv);
    vs_kube_free(k);

    k = client(api, "static-wrong", NULL);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_AUTH);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 401 Unauthorized");
    vs_kube_free(k);
    k = client(api, "right", NULL);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    json_decref(out);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
    free(tf);
    rm_tree(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* TLS with PEM material in memory                                                            */

/* A self-signed P-256 certificate for 127.0.0.1 (it is its own CA). */
static void make_cert(const char *cn, char **cert_pem, char **key_pem)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509V3_CTX ctx;
    cr_assert_not_null(pk);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pk);
    X509_NAME *nm = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, nm);
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *e =
        X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    cr_assert(X509_sign(x, pk, EVP_sha256()) > 0);

    BIO *b = BIO_new(BIO_s_mem());
    char *p;
    PEM_write_bio_X509(b, x);
    long n = BIO_get_mem_data(b, &p);
    *cert_pem = strndup(p, (size_t)n);
    BIO_free(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, pk, NULL, NULL, 0, NULL, NULL);
    n = BIO_get_mem_data(b, &p);
    *key_pem = strndup(p, (size_t)n);
    BIO_free(b);
    X509_free(x);
    EVP_PKEY_free(pk);
}

struct tls_env {
    char *dir, *srv_cert, *srv_key, *cli_cert, *cli_key, *cert_path, *key_path;
    struct vs_fakeapi *api;
};

static void tls_up(struct tls_env *t)
{
    memset(t, 0, sizeof(*t));
    t->dir = mkdir_tmp();
    make_cert("127.0.0.1", &t->srv_cert, &t->srv_key);
    make_cert("client", &t->cli_cert, &t->cli_key);
    t->cert_path = write_at(t->dir, "srv.crt", t->srv_cert);
    t->key_path = write_at(t->dir, "srv.key", t->srv_key);
    struct vs_fakeapi_opts o = {
        .quiet = true, .tls_cert_file = t->cert_path, .tls_key_file = t->key_path};
    t->api = fake(&o);
    cr_assert_eq(strncmp(vs_fakeapi_url(t->api), "https://127.0.0.1:", 18), 0);
}

static void tls_down(struct tls_env *t)
{
    vs_fakeapi_stop(t->api);
    free(t->srv_cert);
    free(t->srv_key);
    free(t->cli_cert);
    free(t->cli_key);
    free(t->cert_path);
    free(t->key_path);
    rm_tree(t->dir);
}

static enum vs_err tls_get(struct tls_env *t, struct vs_kube_config *cfg, struct vs_errbuf *eb)
{
    json_t *out = NULL;
    cfg->server = (char *)vs_fakeapi_url(t->api);
    struct vs_kube *k = client_cfg(cfg, 10);
    enum vs_err rc = vs_kube_get(k, "/api/v1/nodes", &out, eb);
    if (rc == VS_OK)
        cr_assert_str_eq(jstr(out, "kind", NULL), "NodeList");
    json_decref(out);
    vs_kube_free(k);
    return rc;
}

Test(tls, ca_and_client_certificate_from_memory, .timeout = 30)
{
    struct tls_env t;
    struct vs_errbuf eb = {{0}};
    tls_up(&t);
    struct vs_kube_config cfg = {
        .ca_data = t.srv_cert, .cert_data = t.cli_cert, .key_data = t.cli_key};
    cr_assert_eq(tls_get(&t, &cfg, &eb), VS_OK, "%s", eb.msg);

    struct vs_kube_config by_file = {.ca_file = t.cert_path};
    cr_assert_eq(tls_get(&t, &by_file, &eb), VS_OK, "%s", eb.msg);

    struct vs_kube_config insecure = {.insecure = true};
    cr_assert_eq(tls_get(&t, &insecure, &eb), VS_OK, "%s", eb.msg);
    tls_down(&t);
}

Test(tls, failures_are_tls_errors, .timeout = 30)
{
    struct tls_env t;
    struct vs_errbuf eb = {{0}};
    tls_up(&t);

    struct vs_kube_config untrusted = {.ca_data = t.cli_cert};
    cr_assert_eq(tls_get(&t, &untrusted, &eb), VS_ERR_TLS);
    cr_assert(strncmp(eb.msg, "GET /api/v1/nodes: SSL certificate problem", 42) == 0, "%s", eb.msg);

    /* A key that does not belong to the certificate. */
    struct vs_kube_config mismatched = {
        .ca_data = t.srv_cert, .cert_data = t.cli_cert, .key_data = t.srv_key};
    cr_assert_eq(tls_get(&t, &mismatched, &eb), VS_ERR_TLS);
    cr_assert(strncmp(eb.msg, "GET /api/v1/nodes: ", 19) == 0, "%s", eb.msg);
    tls_down(&t);
}

/* ------------------------------------------------------------------------------------------ */

Test(escape, query_values)
{
    char *s = vs_kube_escape("env in (prod,staging),app=a b/c~_.-");
    cr_assert_str_eq(s, "env%20in%20%28prod%2Cstaging%29%2Capp%3Da%20b%2Fc~_.-");
    free(s);
    s = vs_kube_escape("");
    cr_assert_str_eq(s, "");
    free(s);
}
