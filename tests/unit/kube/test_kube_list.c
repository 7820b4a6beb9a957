/* test_kube_list: paginated LIST against the fake API: every item once across pages, label
 * and field selectors, an expired continue token, and the needle scan (matching items only,
 * whole-page decoding when the page has an unexpected shape). */
#include "kubetest.h"

/* ------------------------------------------------------------------------------------------ */
/* LIST                                                                                       */

struct seen {
    char **names;
    size_t n, cap;
    struct vs_fakeapi *expire_on_first;
    int stop_after;
};

static int on_item(void *ctx, json_t *item)
{
    struct seen *s = ctx;
    char key[600];
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->names = realloc(s->names, s->cap * sizeof(*s->names));
    }
    s->names[s->n++] = strdup(obj_key(item, key, sizeof(key)));
    if (s->expire_on_first && s->n == 1)
        vs_fakeapi_expire(s->expire_on_first, "pods");
    return s->stop_after && (int)s->n >= s->stop_after;
}

static void seen_free(struct seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
}

/* LIST with a needle: across pages only the items whose text holds it are decoded and handed
 * over, in order, with the list's resourceVersion; the item handler can still stop the list. */
Test(list, matching_items_only, .timeout = 60)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL, name[32], want[64];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "p%03d", i);
        /* every third pod carries the needle, once in a label value with a quote before it */
        put_pod(api, "a", name, i % 3 == 0 ? "{\"x\":\"\\\"gpu-node-7\"}" : NULL, NULL);
    }
    cr_assert_eq(
        vs_kube_list_matching(k, "/api/v1/pods", NULL, 40, "gpu-node", on_item, NULL, &s, &rv, &eb),
        VS_OK, "%s", eb.msg);
    cr_assert_eq(s.n, 100, "%zu", s.n);
    for (size_t i = 0; i < s.n; i++) {
        snprintf(want, sizeof(want), "a/p%03zu", i * 3);
        cr_assert_str_eq(s.names[i], want);
    }
    snprintf(want, sizeof(want), "%" PRIu64, vs_fakeapi_rv(api));
    cr_assert_str_eq(rv, want);
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/pods"), 8);
    free(rv);
    seen_free(&s);
    struct seen t = {.stop_after = 5};
    rv = NULL;
    cr_assert_eq(
        vs_kube_list_matching(k, "/api/v1/pods", NULL, 40, "gpu-node", on_item, NULL, &t, &rv, &eb),
        VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "LIST /api/v1/pods: stopped by the item handler");
    cr_assert_eq(t.n, 5);
    seen_free(&t);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

static int on_other(void *ctx, const char *text, size_t len)
{
    struct seen *s = ctx;
    json_t *item = json_loadb(text, len, 0, NULL);
    cr_assert_not_null(item, "not one JSON value: %.*s", (int)len, text);
    char key[600], tagged[640];
    snprintf(tagged, sizeof(tagged), "other:%s", obj_key(item, key, sizeof(key)));
    json_decref(item);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->names = realloc(s->names, s->cap * sizeof(*s->names));
    }
    s->names[s->n++] = strdup(tagged);
    return 0;
}

/* With on_other, the items the needle skips arrive as their exact JSON text, each page's
 * matching items first, then the others in order. */
Test(list, skipped_items_reach_on_other_as_text, .timeout = 60)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL, name[32];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        put_pod(api, "a", name, i % 3 == 0 ? "{\"x\":\"gpu-node\"}" : NULL, NULL);
    }
    cr_assert_eq(vs_kube_list_matching(k, "/api/v1/pods", NULL, 3, "gpu-node", on_item, on_other,
                                       &s, &rv, &eb),
                 VS_OK, "%s", eb.msg);
    static const char *const want[] = {"a/p0", "other:a/p1", "other:a/p2",
                                       "a/p3", "other:a/p4", "other:a/p5"};
    cr_assert_eq(s.n, 6, "%zu", s.n);
    for (size_t i = 0; i < 6; i++)
        cr_assert_str_eq(s.names[i], want[i]);
    free(rv);
    seen_free(&s);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

/* Pages of a shape the scan does not expect are decoded whole (every item handed over); a
 * malformed page is an error either way. */
Test(list, matching_falls_back_on_unexpected_pages)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL;
    /* An escaped key: the scan does not recognise "items". */
    vs_fakeapi_fault_body(api, "GET", "/api/v1/pods", 200, 1,
                          "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"77\"},"
                          "\"it\\u0065ms\":[{\"metadata\":{\"namespace\":\"a\",\"name\":\"p1\"}}]}",
                          -1);
    cr_assert_eq(
        vs_kube_list_matching(k, "/api/v1/pods", NULL, 0, "gpu-node", on_item, NULL, &s, &rv, &eb),
        VS_OK, "%s", eb.msg);
    cr_assert_eq(s.n, 1, "%zu", s.n);
    cr_assert_str_eq(s.names[0], "a/p1");
    cr_assert_str_eq(rv, "77");
    free(rv);
    seen_free(&s);
    /* Truncated: both ways fail, with the decoder's message. */
    vs_fakeapi_fault_body(api, "GET", "/api/v1/pods", 200, 1,
                          "{\"metadata\":{},\"items\":[{\"gpu-node\":1}", -1);
    struct seen t = {0};
    rv = NULL;
    cr_assert_eq(
        vs_kube_list_matching(k, "/api/v1/pods", NULL, 0, "gpu-node", on_item, NULL, &t, &rv, &eb),
        VS_ERR_PARSE);
    cr_assert(strncmp(eb.msg, "LIST /api/v1/pods: invalid JSON in the response at byte ", 56) == 0,
              "%s", eb.msg);
    cr_assert_eq(t.n, 0);
    seen_free(&t);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(list, pagination_sees_every_item_once, .timeout = 60)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL, name[32], want[64];

    for (int i = 0; i < 1200; i++) {
        snprintf(name, sizeof(name), "p%04d", (i * 7919) % 1200); /* stored out of order */
        put_pod(api, i % 2 ? "a" : "b", name, NULL, NULL);
    }
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods", NULL, 500, on_item, &s, &rv, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_eq(s.n, 1200);
    /* Sorted by namespace/name, so "seen once" is "strictly increasing". */
    for (size_t i = 1; i < s.n; i++)
        cr_assert(strcmp(s.names[i - 1], s.names[i]) < 0, "%s then %s", s.names[i - 1], s.names[i]);
    snprintf(want, sizeof(want), "%" PRIu64, vs_fakeapi_rv(api));
    cr_assert_str_eq(rv, want);
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/pods"), 3);
    free(rv);
    seen_free(&s);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(list, selectors, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL;

    put_pod(api, "x", "a1", "{\"app\":\"a\",\"tier\":\"gpu\"}", "n1");
    put_pod(api, "x", "a2", "{\"app\":\"a\"}", "n2");
    put_pod(api, "y", "b1", "{\"app\":\"b\",\"tier\":\"gpu\"}", "n1");
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods", "app=a,tier=gpu", 0, on_item, &s, &rv, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_eq(s.n, 1, "%zu", s.n);
    cr_assert_str_eq(s.names[0], "x/a1");
    seen_free(&s);
    free(rv);

    memset(&s, 0, sizeof(s));
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", NULL, 1, on_item,
                              &s, &rv, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_eq(s.n, 2);
    cr_assert_str_eq(s.names[0], "x/a1");
    cr_assert_str_eq(s.names[1], "y/b1");
    seen_free(&s);
    free(rv);

    memset(&s, 0, sizeof(s));
    cr_assert_eq(
        vs_kube_list(k, "/api/v1/namespaces/x/pods", "tier!=gpu", 0, on_item, &s, &rv, &eb), VS_OK,
        "%s", eb.msg);
    cr_assert_eq(s.n, 1, "%zu", s.n);
    cr_assert_str_eq(s.names[0], "x/a2");
    seen_free(&s);
    free(rv);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(list, expired_continue_token_is_gone, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {.expire_on_first = api};
    char *rv = (char *)"untouched";

    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "p%d", i);
        put_pod(api, "default", name, NULL, NULL);
    }
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods", NULL, 2, on_item, &s, &rv, &eb), VS_ERR_GONE);
    cr_assert_str_eq(eb.msg, "LIST /api/v1/pods: 410 The provided continue parameter is too old "
                             "to display a consistent list result. You can start a new list "
                             "without the continue parameter.");
    cr_assert_null(rv);
    cr_assert_eq(s.n, 2);
    seen_free(&s);

    memset(&s, 0, sizeof(s));
    s.stop_after = 3;
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods", NULL, 2, on_item, &s, &rv, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "LIST /api/v1/pods: stopped by the item handler");
    cr_assert_eq(s.n, 3);
    seen_free(&s);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}
