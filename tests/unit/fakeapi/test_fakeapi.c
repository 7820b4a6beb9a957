/* test_fakeapi: the fake kube-apiserver's own store, LIST paging and watch history, called over
 * plain HTTP with libcurl: lookups by kind/namespace/name among many objects, pages in key order
 * while objects come and go between pages, continue tokens (also of deleted objects, malformed
 * or expired) and watches resumed from the bounded history. Every assertion is an exact value. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakeapi.h"

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                    */

static struct vs_fakeapi *fake(size_t history)
{
    struct vs_fakeapi_opts o = {.quiet = true, .history = history};
    struct vs_fakeapi *api = vs_fakeapi_start(&o);
    cr_assert_not_null(api);
    return api;
}

static uint64_t put_pod(struct vs_fakeapi *api, const char *ns, const char *name, const char *node)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
             "\"spec\":{\"nodeName\":\"%s\"}}",
             name, ns, node ? node : "");
    uint64_t rv = vs_fakeapi_put(api, text);
    cr_assert_gt(rv, 0, "put %s/%s", ns, name);
    return rv;
}

static uint64_t put_node(struct vs_fakeapi *api, const char *name)
{
    char text[512];
    snprintf(text, sizeof(text), "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"}}", name);
    uint64_t rv = vs_fakeapi_put(api, text);
    cr_assert_gt(rv, 0, "put node %s", name);
    return rv;
}

struct sink {
    char *data;
    size_t len;
};

static size_t sink_write(char *p, size_t size, size_t n, void *ctx)
{
    struct sink *s = ctx;
    char *g = realloc(s->data, s->len + size * n + 1);
    cr_assert_not_null(g);
    memcpy(g + s->len, p, size * n);
    s->len += size * n;
    g[s->len] = '\0';
    s->data = g;
    return size * n;
}

/* One request with a body of content type ct; returns the body as a new string ("" when
 * empty), the status in *code. */
static char *call_ct(struct vs_fakeapi *api, const char *method, const char *path, const char *body,
                     const char *ct, long *code)
{
    char url[8192];
    struct sink s = {0};
    struct curl_slist *h = NULL;
    CURL *c = curl_easy_init();
    cr_assert_not_null(c);
    snprintf(url, sizeof(url), "%s%s", vs_fakeapi_url(api), path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    if (body) {
        char hdr[128];
        snprintf(hdr, sizeof(hdr), "Content-Type: %s", ct);
        h = curl_slist_append(h, hdr);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    cr_assert_eq(curl_easy_perform(c), CURLE_OK, "%s %s", method, path);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return s.data ? s.data : strdup("");
}

/* A merge patch, or any other request. */
static char *call(struct vs_fakeapi *api, const char *method, const char *path, const char *body,
                  long *code)
{
    return call_ct(api, method, path, body, "application/merge-patch+json", code);
}

static json_t *call_json(struct vs_fakeapi *api, const char *method, const char *path,
                         const char *body, long *code)
{
    char *text = call(api, method, path, body, code);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    cr_assert_not_null(j, "%s %s: %s: %s", method, path, je.text, text);
    free(text);
    return j;
}

/* One LIST page of path (which may hold a query) with limit and continue token (NULL = none);
 * asserts 200. */
static json_t *page(struct vs_fakeapi *api, const char *path, int limit, const char *cont)
{
    char p[8192];
    long code;
    char *esc = cont ? curl_easy_escape(NULL, cont, 0) : NULL;
    snprintf(p, sizeof(p), "%s%climit=%d%s%s", path, strchr(path, '?') ? '&' : '?', limit,
             esc ? "&continue=" : "", esc ? esc : "");
    curl_free(esc);
    json_t *j = call_json(api, "GET", p, NULL, &code);
    cr_assert_eq(code, 200, "GET %s: %ld", p, code);
    return j;
}

static const char *meta(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

/* "ns/name ns/name ..." of a page's items (ns empty for cluster-scoped). New string. */
static char *page_keys(const json_t *list)
{
    size_t i, len = 0;
    json_t *it;
    char *out = calloc(1, 1);
    json_array_foreach(json_object_get(list, "items"), i, it)
    {
        const char *ns = meta(it, "namespace"), *name = meta(it, "name");
        size_t add = strlen(ns ? ns : "") + strlen(name) + 2;
        out = realloc(out, len + add + 1);
        len += (size_t)sprintf(out + len, "%s%s/%s", len ? " " : "", ns ? ns : "", name);
    }
    return out;
}

/* Appends the page's keys to all (space separated), returns the continue token (new string or
 * NULL) and frees the page. */
static char *take_page(json_t *list, char **all)
{
    char *keys = page_keys(list);
    const char *c = meta(list, "continue");
    char *cont = c ? strdup(c) : NULL;
    size_t n = strlen(*all);
    *all = realloc(*all, n + strlen(keys) + 2);
    sprintf(*all + n, "%s%s", n && *keys ? " " : "", keys);
    free(keys);
    json_decref(list);
    return cont;
}

static char *rv_str(uint64_t rv)
{
    char *s;
    cr_assert_geq(asprintf(&s, "%" PRIu64, rv), 0);
    return s;
}

/* The watch stream of path until its timeoutSeconds=1 ends it: "TYPE ns/name rv" per event
 * (for ERROR: "ERROR code message"). New string. */
static char *watch_lines(struct vs_fakeapi *api, const char *path)
{
    long code;
    char *body = call(api, "GET", path, NULL, &code);
    cr_assert_eq(code, 200, "%s: %ld %s", path, code, body);
    char *out = calloc(1, 1);
    size_t len = 0;
    for (char *line = strtok(body, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *ev = json_loads(line, 0, NULL);
        cr_assert_not_null(ev, "%s", line);
        const char *type = json_string_value(json_object_get(ev, "type"));
        const json_t *o = json_object_get(ev, "object");
        char buf[512];
        if (strcmp(type, "ERROR") == 0)
            snprintf(buf, sizeof(buf), "ERROR %" JSON_INTEGER_FORMAT " %s",
                     json_integer_value(json_object_get(o, "code")),
                     json_string_value(json_object_get(o, "message")));
        else
            snprintf(buf, sizeof(buf), "%s %s/%s %s", type,
                     meta(o, "namespace") ? meta(o, "namespace") : "", meta(o, "name"),
                     meta(o, "resourceVersion"));
        out = realloc(out, len + strlen(buf) + 2);
        len += (size_t)sprintf(out + len, "%s%s", len ? "\n" : "", buf);
        json_decref(ev);
    }
    free(body);
    return out;
}

/* Asserts the lines watch_lines reads from path. */
static void expect_watch(struct vs_fakeapi *api, const char *path, const char *want)
{
    char *got = watch_lines(api, path);
    cr_assert_str_eq(got, want, "%s", path);
    free(got);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ------------------------------------------------------------------------------------------ */
/* store                                                                                      */

Test(store, get_put_delete_by_name_among_many, .timeout = 60)
{
    struct vs_fakeapi *api = fake(0);
    char ns[16], name[32], want[64];

    /* Names repeat across namespaces and kinds: every (kind, namespace, name) is its own. */
    for (int i = 0; i < 4000; i++) {
        snprintf(ns, sizeof(ns), "ns-%02d", i % 40);
        snprintf(name, sizeof(name), "pod-%04d", i / 2);
        put_pod(api, ns, name, NULL);
    }
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "pod-%04d", i);
        put_node(api, name);
    }
    cr_assert_eq(vs_fakeapi_rv(api), 4300);

    json_t *o = vs_fakeapi_get(api, "Pod", "ns-07", "pod-1003");
    cr_assert_not_null(o);
    cr_assert_str_eq(meta(o, "namespace"), "ns-07");
    cr_assert_str_eq(meta(o, "name"), "pod-1003");
    cr_assert_str_eq(meta(o, "resourceVersion"), "2008"); /* put number 2007 + 1 */
    cr_assert_str_eq(meta(o, "uid"), "00000000-0000-4000-8000-0000000007d8");
    json_decref(o);
    o = vs_fakeapi_get(api, "nodes", NULL, "pod-0002");
    cr_assert_not_null(o);
    cr_assert_null(meta(o, "namespace"));
    cr_assert_str_eq(meta(o, "resourceVersion"), "4003");
    json_decref(o);
    cr_assert_null(vs_fakeapi_get(api, "Pod", "ns-08", "pod-1003")); /* 1003*2 % 40 = 6, 7 */
    cr_assert_null(vs_fakeapi_get(api, "Node", NULL, "pod-0300"));
    cr_assert_null(vs_fakeapi_get(api, "Pod", NULL, "pod-0000")); /* namespace "default" */

    /* A replaced object keeps its uid and gets the next resourceVersion. */
    cr_assert_eq(vs_fakeapi_put(api, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-1003\","
                                     "\"namespace\":\"ns-07\",\"labels\":{\"v\":\"2\"}}}"),
                 4301);
    o = vs_fakeapi_get(api, "pods", "ns-07", "pod-1003");
    cr_assert_str_eq(meta(o, "uid"), "00000000-0000-4000-8000-0000000007d8");
    cr_assert_str_eq(meta(o, "resourceVersion"), "4301");
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(o, "metadata"), "labels"), "v")),
                     "2");
    json_decref(o);

    /* Delete every other pod of ns-00; the rest and the other kind stay. */
    for (int i = 0; i < 4000; i += 40) {
        snprintf(name, sizeof(name), "pod-%04d", i / 2);
        if (i % 80 == 0)
            cr_assert_eq(vs_fakeapi_delete(api, "Pod", "ns-00", name), 0, "%s", name);
    }
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "ns-00", "pod-0000"), -1);
    cr_assert_null(vs_fakeapi_get(api, "Pod", "ns-00", "pod-0040"));
    o = vs_fakeapi_get(api, "Pod", "ns-00", "pod-0020");
    cr_assert_not_null(o);
    json_decref(o);
    o = vs_fakeapi_get(api, "Pod", "ns-01", "pod-0000");
    cr_assert_not_null(o);
    json_decref(o);
    o = vs_fakeapi_get(api, "Node", NULL, "pod-0000");
    cr_assert_not_null(o);
    json_decref(o);

    /* Over HTTP: a deleted name is 404, a present one is served, and put brings a name back
     * with a new uid. */
    long code;
    char *body = call(api, "GET", "/api/v1/namespaces/ns-00/pods/pod-0040", NULL, &code);
    cr_assert_eq(code, 404);
    cr_assert(strstr(body, "\"message\":\"pods \\\"pod-0040\\\" not found\"") != NULL, "%s", body);
    free(body);
    o = call_json(api, "GET", "/api/v1/namespaces/ns-00/pods/pod-0060", NULL, &code);
    cr_assert_eq(code, 200);
    cr_assert_str_eq(meta(o, "name"), "pod-0060");
    cr_assert_str_eq(meta(o, "namespace"), "ns-00");
    json_decref(o);
    uint64_t rv = put_pod(api, "ns-00", "pod-0040", NULL);
    o = vs_fakeapi_get(api, "Pod", "ns-00", "pod-0040");
    snprintf(want, sizeof(want), "00000000-0000-4000-8000-%012" PRIx64, (uint64_t)4301);
    cr_assert_str_eq(meta(o, "uid"), want);
    char *rvs = rv_str(rv);
    cr_assert_str_eq(meta(o, "resourceVersion"), rvs);
    free(rvs);
    json_decref(o);

    /* ns-00 held pod-0000..pod-1980 step 20 (100 pods); 50 deleted, one put back. */
    json_t *list = page(api, "/api/v1/namespaces/ns-00/pods", 0, NULL);
    cr_assert_eq(json_array_size(json_object_get(list, "items")), 51);
    cr_assert_null(meta(list, "continue"));
    char *keys = page_keys(list), expect[51 * 15] = "";
    for (int k = 0; k < 100; k++) {
        if (k % 2 == 0 && k != 2)
            continue;
        snprintf(name, sizeof(name), "%sns-00/pod-%04d", *expect ? " " : "", k * 20);
        strcat(expect, name);
    }
    cr_assert_str_eq(keys, expect);
    free(keys);
    json_decref(list);
    vs_fakeapi_stop(api);
}

Test(store, keys_do_not_collide)
{
    struct vs_fakeapi *api = fake(0);
    put_pod(api, "a", "bc", "first");
    put_pod(api, "ab", "c", "second");
    put_node(api, "c");
    json_t *o = vs_fakeapi_get(api, "Pod", "a", "bc");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "spec"), "nodeName")),
                     "first");
    json_decref(o);
    o = vs_fakeapi_get(api, "Pod", "ab", "c");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "spec"), "nodeName")),
                     "second");
    json_decref(o);
    cr_assert_eq(vs_fakeapi_delete(api, "Node", NULL, "c"), 0);
    cr_assert_eq(vs_fakeapi_delete(api, "Node", NULL, "c"), -1);
    o = vs_fakeapi_get(api, "Pod", "ab", "c");
    cr_assert_not_null(o);
    json_decref(o);
    vs_fakeapi_stop(api);
}

Test(store, names_longer_than_any_route)
{
    struct vs_fakeapi *api = fake(0);
    char name[701], ns[301];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    memset(ns, 's', sizeof(ns) - 1);
    ns[sizeof(ns) - 1] = '\0';
    put_pod(api, ns, name, "n1");
    name[699] = 'm'; /* differs in the last byte only */
    put_pod(api, ns, name, "n2");
    json_t *o = vs_fakeapi_get(api, "Pod", ns, name);
    cr_assert_not_null(o);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "spec"), "nodeName")),
                     "n2");
    json_decref(o);
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", ns, name), 0);
    cr_assert_null(vs_fakeapi_get(api, "Pod", ns, name));
    name[699] = 'n';
    o = vs_fakeapi_get(api, "Pod", ns, name);
    cr_assert_not_null(o);
    json_decref(o);

    /* Its continue token carries the whole key. */
    put_pod(api, ns, "z", NULL);
    json_t *list = page(api, "/api/v1/pods", 1, NULL);
    cr_assert_str_eq(meta(json_array_get(json_object_get(list, "items"), 0), "name"), name);
    char *cont = strdup(meta(list, "continue"));
    json_decref(list);
    cr_assert_eq(strlen(cont), strlen("4:") + 2 * 300 + 1 + 2 * 700);
    list = page(api, "/api/v1/pods", 1, cont);
    cr_assert_str_eq(meta(json_array_get(json_object_get(list, "items"), 0), "name"), "z");
    cr_assert_null(meta(list, "continue"));
    json_decref(list);
    free(cont);
    vs_fakeapi_stop(api);
}

/* ------------------------------------------------------------------------------------------ */
/* LIST paging                                                                                */

Test(list, pages_follow_key_order, .timeout = 60)
{
    struct vs_fakeapi *api = fake(0);
    char *want[300];
    static const char *const nss[] = {"b", "c", "a"};

    /* Inserted scrambled, across namespaces, with nodes in between. */
    for (int k = 0; k < 300; k++) {
        int i = (k * 7) % 300;
        char name[16];
        snprintf(name, sizeof(name), "p%03d", i);
        put_pod(api, nss[i % 3], name, NULL);
        cr_assert_geq(asprintf(&want[k], "%s/%s", nss[i % 3], name), 0);
        if (k % 50 == 0)
            put_node(api, name);
    }
    qsort(want, 300, sizeof(want[0]), cmp_str);
    char *rv = rv_str(vs_fakeapi_rv(api));
    char *all = calloc(1, 1), *cont = NULL;
    int pages = 0;
    do {
        json_t *list = page(api, "/api/v1/pods", 7, cont);
        cr_assert_str_eq(meta(list, "resourceVersion"), rv);
        size_t n = json_array_size(json_object_get(list, "items"));
        free(cont);
        cont = take_page(list, &all);
        cr_assert_eq(n, cont ? 7 : 300 % 7, "page %d", pages);
        pages++;
    } while (cont);
    cr_assert_eq(pages, 43);
    char *p = all;
    for (int k = 0; k < 300; k++) {
        size_t n = strlen(want[k]);
        cr_assert(strncmp(p, want[k], n) == 0 && (p[n] == ' ' || p[n] == '\0'),
                  "item %d: want %s at %.40s", k, want[k], p);
        p += n + (p[n] == ' ');
        free(want[k]);
    }
    cr_assert_str_eq(p, "");
    free(all);
    free(rv);
    vs_fakeapi_stop(api);
}

Test(list, a_full_last_page_has_no_continue)
{
    struct vs_fakeapi *api = fake(0);
    put_pod(api, "default", "a", NULL);
    put_pod(api, "default", "b", NULL);
    put_pod(api, "default", "c", NULL);
    put_pod(api, "default", "d", NULL);
    json_t *list = page(api, "/api/v1/pods", 2, NULL);
    char *all = calloc(1, 1), *cont = take_page(list, &all);
    cr_assert_str_eq(cont, "4:64656661756c74:62"); /* rv 4, "default", "b" */
    list = page(api, "/api/v1/pods", 2, cont);
    free(cont);
    cont = take_page(list, &all);
    cr_assert_null(cont);
    cr_assert_str_eq(all, "default/a default/b default/c default/d");
    free(all);

    /* No limit, or limit 0: everything in one page. */
    long code;
    list = call_json(api, "GET", "/api/v1/pods", NULL, &code);
    cr_assert_eq(code, 200);
    cr_assert_null(meta(list, "continue"));
    cr_assert_eq(json_array_size(json_object_get(list, "items")), 4);
    json_decref(list);
    list = page(api, "/api/v1/pods", 0, NULL);
    cr_assert_null(meta(list, "continue"));
    cr_assert_eq(json_array_size(json_object_get(list, "items")), 4);
    json_decref(list);
    vs_fakeapi_stop(api);
}

Test(list, inserts_updates_and_deletes_between_pages, .timeout = 30)
{
    struct vs_fakeapi *api = fake(0);
    char name[16];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "p%02d", i);
        put_pod(api, "default", name, NULL);
    }
    char *rv = rv_str(vs_fakeapi_rv(api));
    char *all = calloc(1, 1), *last;
    char *cont = take_page(page(api, "/api/v1/pods", 5, NULL), &all);
    cr_assert_str_eq(all, "default/p00 default/p01 default/p02 default/p03 default/p04");

    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "p02"), 0); /* already served */
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "p07"), 0); /* not yet served */
    put_pod(api, "default", "p01a", NULL);                            /* before the token */
    put_pod(api, "default", "p04a", NULL);                            /* right after it */
    put_pod(api, "default", "p10a", NULL);                            /* further on */
    put_pod(api, "other", "p00", NULL);                               /* another namespace */
    long code;
    json_t *o = call_json(api, "PATCH", "/api/v1/namespaces/default/pods/p08",
                          "{\"metadata\":{\"labels\":{\"v\":\"2\"}}}", &code);
    cr_assert_eq(code, 200);
    char *p08rv = strdup(meta(o, "resourceVersion"));
    json_decref(o);

    json_t *list = page(api, "/api/v1/pods", 5, cont);
    cr_assert_str_eq(meta(list, "resourceVersion"), rv); /* the token's version */
    cr_assert_str_eq(meta(json_array_get(json_object_get(list, "items"), 3), "name"), "p08");
    cr_assert_str_eq(meta(json_array_get(json_object_get(list, "items"), 3), "resourceVersion"),
                     p08rv);
    free(cont);
    cont = take_page(list, &all);
    last = cont;
    cont = take_page(page(api, "/api/v1/pods", 5, last), &all);
    free(last);

    /* The token's own object and the next one go away before the next page. */
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "p13"), 0);
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "p14"), 0);
    last = cont;
    cont = take_page(page(api, "/api/v1/pods", 5, last), &all);
    free(last);
    cr_assert_not_null(cont); /* other/p00 is still to come */
    last = cont;
    cont = take_page(page(api, "/api/v1/pods", 5, last), &all);
    free(last);
    cr_assert_null(cont);
    cr_assert_str_eq(all, "default/p00 default/p01 default/p02 default/p03 default/p04 "
                          "default/p04a default/p05 default/p06 default/p08 default/p09 "
                          "default/p10 default/p10a default/p11 default/p12 default/p13 "
                          "default/p15 default/p16 default/p17 default/p18 default/p19 "
                          "other/p00");
    free(all);
    free(p08rv);
    free(rv);
    vs_fakeapi_stop(api);
}

Test(list, token_of_a_deleted_object_continues_after_its_key)
{
    struct vs_fakeapi *api = fake(0);
    const char *names[] = {"a", "b", "c", "d", "e", "f"};
    for (int i = 0; i < 6; i++)
        put_node(api, names[i]);
    char *all = calloc(1, 1);
    char *cont = take_page(page(api, "/api/v1/nodes", 2, NULL), &all);
    cr_assert_str_eq(cont, "6::62"); /* cluster-scoped: empty namespace */
    cr_assert_eq(vs_fakeapi_delete(api, "Node", NULL, "b"), 0);
    char *last = cont;
    cont = take_page(page(api, "/api/v1/nodes", 2, last), &all);
    free(last);
    cr_assert_eq(vs_fakeapi_delete(api, "Node", NULL, "d"), 0);
    cr_assert_eq(vs_fakeapi_delete(api, "Node", NULL, "e"), 0);
    last = cont;
    cont = take_page(page(api, "/api/v1/nodes", 2, last), &all);
    free(last);
    cr_assert_null(cont);
    cr_assert_str_eq(all, "/a /b /c /d /f");

    /* Everything after the token gone: an empty last page. */
    cont = take_page(page(api, "/api/v1/nodes", 1, NULL), &all);
    cr_assert_eq(vs_fakeapi_delete(api, "Node", NULL, "c"), 0);
    cr_assert_eq(vs_fakeapi_delete(api, "Node", NULL, "f"), 0);
    json_t *list = page(api, "/api/v1/nodes", 1, cont);
    cr_assert_eq(json_array_size(json_object_get(list, "items")), 0);
    cr_assert_null(meta(list, "continue"));
    json_decref(list);
    free(cont);
    free(all);
    vs_fakeapi_stop(api);
}

Test(list, namespace_and_selectors_page_over_matches_only)
{
    struct vs_fakeapi *api = fake(0);
    put_pod(api, "a", "x1", "n1");
    put_pod(api, "b", "x1", "n1");
    put_pod(api, "b", "x2", "n2");
    put_pod(api, "b", "x3", "n1");
    put_pod(api, "b", "x4", "n1");
    put_pod(api, "b", "x5", "n2");
    put_pod(api, "c", "x0", "n1");

    char *all = calloc(1, 1);
    char *cont = take_page(page(api, "/api/v1/namespaces/b/pods", 2, NULL), &all);
    char *last = cont;
    cont = take_page(page(api, "/api/v1/namespaces/b/pods", 2, last), &all);
    free(last);
    last = cont;
    cont = take_page(page(api, "/api/v1/namespaces/b/pods", 2, last), &all);
    free(last);
    cr_assert_null(cont);
    cr_assert_str_eq(all, "b/x1 b/x2 b/x3 b/x4 b/x5");
    free(all);

    /* Pages count matching objects; no token when nothing after the page matches. */
    all = calloc(1, 1);
    const char *path = "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1";
    cont = take_page(page(api, path, 2, NULL), &all);
    last = cont;
    cont = take_page(page(api, path, 2, last), &all);
    free(last);
    last = cont;
    cont = take_page(page(api, path, 2, last), &all);
    free(last);
    cr_assert_null(cont);
    cr_assert_str_eq(all, "a/x1 b/x1 b/x3 b/x4 c/x0");
    free(all);

    all = calloc(1, 1);
    path = "/api/v1/namespaces/b/pods?fieldSelector=spec.nodeName%3Dn1";
    cont = take_page(page(api, path, 1, NULL), &all);
    last = cont;
    cont = take_page(page(api, path, 2, last), &all);
    free(last);
    cr_assert_null(cont); /* b/x5 follows but does not match */
    cr_assert_str_eq(all, "b/x1 b/x3 b/x4");
    free(all);
    vs_fakeapi_stop(api);
}

Test(list, bad_and_expired_continue_tokens)
{
    struct vs_fakeapi *api = fake(0);
    put_pod(api, "default", "a", NULL);
    put_pod(api, "default", "b", NULL);
    put_node(api, "n1");
    put_node(api, "n2");
    static const char *const bad[] = {
        "abc",      "3:61",    "3:61:",     ":61:62",   "3x:61:62", "3:6:62",
        "3:zz:62",  "3:61:6",  "3:61:0062", "-1:61:62", "3:61:62:", "99999999999999999999:61:62",
        "3::62:63", "3:61 :62"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char path[256];
        long code;
        char *esc = curl_easy_escape(NULL, bad[i], 0);
        snprintf(path, sizeof(path), "/api/v1/pods?limit=1&continue=%s", esc);
        curl_free(esc);
        json_t *st = call_json(api, "GET", path, NULL, &code);
        cr_assert_eq(code, 400, "%s: %ld", bad[i], code);
        cr_assert_str_eq(json_string_value(json_object_get(st, "message")),
                         "invalid continue token", "%s", bad[i]);
        json_decref(st);
    }

    json_t *list = page(api, "/api/v1/pods", 1, NULL);
    char *pod_cont = strdup(meta(list, "continue"));
    json_decref(list);
    list = page(api, "/api/v1/nodes", 1, NULL);
    char *node_cont = strdup(meta(list, "continue"));
    json_decref(list);

    vs_fakeapi_expire(api, "pods");
    char path[256];
    long code;
    snprintf(path, sizeof(path), "/api/v1/pods?limit=1&continue=%s", pod_cont);
    json_t *st = call_json(api, "GET", path, NULL, &code);
    cr_assert_eq(code, 410);
    cr_assert_str_eq(json_string_value(json_object_get(st, "reason")), "Expired");
    cr_assert_str_eq(json_string_value(json_object_get(st, "message")),
                     "The provided continue parameter is too old to display a consistent list "
                     "result. You can start a new list without the continue parameter.");
    json_decref(st);

    /* Compaction is per resource: the node token still works. */
    list = page(api, "/api/v1/nodes", 1, node_cont);
    char *keys = page_keys(list);
    cr_assert_str_eq(keys, "/n2");
    cr_assert_str_eq(meta(list, "resourceVersion"), "4");
    free(keys);
    json_decref(list);

    /* A fresh list reports the compaction point and its tokens work again. */
    list = page(api, "/api/v1/pods", 1, NULL);
    cr_assert_str_eq(meta(list, "resourceVersion"), "5");
    free(pod_cont);
    pod_cont = strdup(meta(list, "continue"));
    json_decref(list);
    list = page(api, "/api/v1/pods", 1, pod_cont);
    keys = page_keys(list);
    cr_assert_str_eq(keys, "default/b");
    free(keys);
    json_decref(list);
    free(pod_cont);
    free(node_cont);
    vs_fakeapi_stop(api);
}

/* ------------------------------------------------------------------------------------------ */
/* watch history                                                                              */

Test(watch, resumes_from_history_or_expires, .timeout = 30)
{
    struct vs_fakeapi *api = fake(8);
    char name[16];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof(name), "p%02d", i);
        if (i % 4 == 3)
            put_node(api, name);
        else
            put_pod(api, i % 2 ? "b" : "a", name, NULL);
    }
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "a", "p12"), 0);
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "b", "p13"), 0);
    /* rv 1..16 are the puts, 17 and 18 the deletes; the ring keeps 11..18. */

    expect_watch(api, "/api/v1/pods?watch=true&resourceVersion=12&timeoutSeconds=1",
                 "ADDED a/p12 13\n"
                 "ADDED b/p13 14\n"
                 "ADDED a/p14 15\n"
                 "DELETED a/p12 17\n"
                 "DELETED b/p13 18");
    expect_watch(api,
                 "/api/v1/namespaces/b/pods?watch=true&resourceVersion=10&"
                 "timeoutSeconds=1",
                 "ADDED b/p13 14\nDELETED b/p13 18");
    expect_watch(api, "/api/v1/nodes?watch=true&resourceVersion=14&timeoutSeconds=1",
                 "ADDED /p15 16");
    expect_watch(api, "/api/v1/pods?watch=true&resourceVersion=18&timeoutSeconds=1", "");

    /* Older than the ring: 200 with a 410 ERROR event, and the stream ends. */
    expect_watch(api, "/api/v1/pods?watch=true&resourceVersion=9&timeoutSeconds=5",
                 "ERROR 410 too old resource version: 9 (18)");

    /* Without a version: the current objects in key order, then nothing new. */
    expect_watch(api, "/api/v1/namespaces/a/pods?watch=true&timeoutSeconds=1",
                 "ADDED a/p00 1\n"
                 "ADDED a/p02 3\n"
                 "ADDED a/p04 5\n"
                 "ADDED a/p06 7\n"
                 "ADDED a/p08 9\n"
                 "ADDED a/p10 11\n"
                 "ADDED a/p14 15");
    vs_fakeapi_stop(api);
}

/* The ring is shared, expiry is per kind (kube-apiserver keeps a watch cache per resource): a
 * watch is expired only when an event of its own kind newer than its version has left. */
Test(watch, events_of_other_kinds_leaving_the_ring_expire_no_watch, .timeout = 30)
{
    struct vs_fakeapi *api = fake(4);
    put_pod(api, "a", "p0", NULL); /* rv 1 */
    char name[16];
    for (int i = 0; i < 6; i++) { /* rv 2..7: the ring keeps 4..7 */
        snprintf(name, sizeof(name), "n%d", i);
        put_node(api, name);
    }
    expect_watch(api, "/api/v1/pods?watch=true&resourceVersion=1&timeoutSeconds=1", "");
    expect_watch(api, "/api/v1/nodes?watch=true&resourceVersion=2&timeoutSeconds=5",
                 "ERROR 410 too old resource version: 2 (7)");
    expect_watch(api, "/api/v1/nodes?watch=true&resourceVersion=3&timeoutSeconds=1",
                 "ADDED /n2 4\nADDED /n3 5\nADDED /n4 6\nADDED /n5 7");
    vs_fakeapi_stop(api);
}

/* The request record: kept by default (tests count requests with it), not kept at all when
 * asked (embedded mode, a long-running server). */
Test(store, request_record_optional)
{
    for (int off = 0; off <= 1; off++) {
        struct vs_fakeapi_opts o = {.quiet = true, .no_request_log = off};
        struct vs_fakeapi *api = vs_fakeapi_start(&o);
        cr_assert_not_null(api);
        put_node(api, "n1");
        long code;
        for (int i = 0; i < 3; i++)
            free(call(api, "GET", "/api/v1/nodes/n1", NULL, &code));
        cr_assert_eq(code, 200);
        cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes"), off ? 0u : 3u);
        vs_fakeapi_stop(api);
    }
}

/* JSON patches (RFC 6902) as kube-apiserver applies them: in order, all or none; a null test
 * matches a missing member; "~1" is "/" in a path; a failure is 422 and changes nothing. */
Test(store, json_patch_tests_and_sets_members)
{
    struct vs_fakeapi_opts o = {.quiet = true};
    struct vs_fakeapi *api = vs_fakeapi_start(&o);
    cr_assert_not_null(api);
    uint64_t rv0 = vs_fakeapi_put(api, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\","
                                       "\"annotations\":{\"a\":\"1\"}}}");
    cr_assert_gt(rv0, 0);
    const char *jp = "application/json-patch+json", *path = "/api/v1/nodes/n1";
    long code;
    char *text =
        call_ct(api, "PATCH", path,
                "[{\"op\":\"test\",\"path\":\"/metadata/annotations/x~1lock\",\"value\":null},"
                "{\"op\":\"add\",\"path\":\"/metadata/annotations/x~1lock\",\"value\":\"v1\"},"
                "{\"op\":\"replace\",\"path\":\"/metadata/annotations/a\",\"value\":\"2\"}]",
                jp, &code);
    cr_assert_eq(code, 200, "%s", text);
    json_t *n = json_loads(text, 0, NULL);
    free(text);
    json_t *an = json_object_get(json_object_get(n, "metadata"), "annotations");
    cr_assert_str_eq(json_string_value(json_object_get(an, "x/lock")), "v1");
    cr_assert_str_eq(json_string_value(json_object_get(an, "a")), "2");
    cr_assert_str_neq(meta(n, "resourceVersion"), "");
    json_decref(n);
    /* A failed test: 422, and the replace before it is not applied. */
    char *out = call_ct(api, "PATCH", path,
                        "[{\"op\":\"replace\",\"path\":\"/metadata/annotations/a\","
                        "\"value\":\"3\"},{\"op\":\"test\",\"path\":"
                        "\"/metadata/annotations/x~1lock\",\"value\":\"v0\"}]",
                        jp, &code);
    cr_assert_eq(code, 422);
    cr_assert(strstr(out, "\"reason\":\"Invalid\""), "%s", out);
    cr_assert(strstr(out, "testing value failed"), "%s", out);
    free(out);
    /* A null test against a present member, replace and remove of a missing one, a path through
     * a missing object: each refused. */
    const char *bad[] = {
        "[{\"op\":\"test\",\"path\":\"/metadata/annotations/a\",\"value\":null}]",
        "[{\"op\":\"replace\",\"path\":\"/metadata/annotations/b\",\"value\":\"1\"}]",
        "[{\"op\":\"remove\",\"path\":\"/metadata/annotations/b\"}]",
        "[{\"op\":\"add\",\"path\":\"/metadata/labels/b\",\"value\":\"1\"}]",
        "[{\"op\":\"move\",\"from\":\"/metadata/annotations/a\",\"path\":\"/metadata/x\"}]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        free(call_ct(api, "PATCH", path, bad[i], jp, &code));
        cr_assert_eq(code, 422, "%s", bad[i]);
    }
    free(call_ct(api, "PATCH", path, "{\"op\":\"test\"}", jp, &code));
    cr_assert_eq(code, 400);
    /* remove, and a test of the value that is there. */
    free(call_ct(api, "PATCH", path,
                 "[{\"op\":\"test\",\"path\":\"/metadata/annotations/x~1lock\",\"value\":\"v1\"},"
                 "{\"op\":\"remove\",\"path\":\"/metadata/annotations/x~1lock\"}]",
                 jp, &code));
    cr_assert_eq(code, 200);
    json_t *got = vs_fakeapi_get(api, "Node", NULL, "n1");
    an = json_object_get(json_object_get(got, "metadata"), "annotations");
    cr_assert_null(json_object_get(an, "x/lock"));
    cr_assert_str_eq(json_string_value(json_object_get(an, "a")), "2");
    json_decref(got);
    vs_fakeapi_stop(api);
}

/* ------------------------------------------------------------------------------------------ */
/* authorization                                                                              */

static char *ssar_body(const char *verb, const char *group, const char *resource, const char *sub,
                       const char *ns)
{
    char *b = malloc(512);
    cr_assert_not_null(b);
    snprintf(b, 512,
             "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\","
             "\"spec\":{\"resourceAttributes\":{\"verb\":\"%s\",\"group\":\"%s\",\"resource\":"
             "\"%s\",\"subresource\":\"%s\",\"namespace\":\"%s\"}}}",
             verb, group, resource, sub, ns);
    return b;
}

/* status.allowed of a SelfSubjectAccessReview, asserting the 201. */
static bool reviewed(struct vs_fakeapi *api, const char *verb, const char *group,
                     const char *resource, const char *sub, const char *ns)
{
    long code = 0;
    char *b = ssar_body(verb, group, resource, sub, ns);
    char *out =
        call(api, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", b, &code);
    cr_assert_eq(code, 201, "%s", out);
    json_t *o = json_loads(out, 0, NULL);
    cr_assert(json_is_boolean(json_object_get(json_object_get(o, "status"), "allowed")), "%s", out);
    bool r = json_is_true(json_object_get(json_object_get(o, "status"), "allowed"));
    json_decref(o);
    free(out);
    free(b);
    return r;
}

Test(authz, everything_allowed_until_the_first_grant)
{
    struct vs_fakeapi *api = fake(0);
    long code = 0;
    put_node(api, "n1");
    free(call(api, "GET", "/apis/policy/v1/poddisruptionbudgets", NULL, &code));
    cr_assert_eq(code, 200);
    cr_assert(reviewed(api, "patch", "", "pods", "", ""));
    cr_assert(reviewed(api, "create", "", "pods", "eviction", "default"));
    vs_fakeapi_stop(api);
}

Test(authz, forbidden_requests_get_kube_apiservers_status)
{
    struct vs_fakeapi *api = fake(0);
    long code = 0;
    put_node(api, "n1");
    put_pod(api, "default", "p", NULL);
    vs_fakeapi_set_user(api, "system:serviceaccount:kube-system:hami-scheduler");
    cr_assert(vs_fakeapi_allow(api, "", "pods", "get, list,watch", NULL));
    cr_assert(vs_fakeapi_allow(api, "", "nodes", "*", NULL));
    cr_assert(
        vs_fakeapi_allow(api, "coordination.k8s.io", "leases", "get,list,watch", "kube-system"));

    char *out = call(api, "GET", "/apis/policy/v1/poddisruptionbudgets", NULL, &code);
    cr_assert_eq(code, 403);
    cr_assert_str_eq(out,
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"poddisruptionbudgets.policy is forbidden: User "
                     "\\\"system:serviceaccount:kube-system:hami-scheduler\\\" cannot list "
                     "resource \\\"poddisruptionbudgets\\\" in API group \\\"policy\\\" at the "
                     "cluster scope\",\"reason\":\"Forbidden\",\"details\":{\"group\":"
                     "\"policy\",\"kind\":\"poddisruptionbudgets\"},\"code\":403}");
    free(out);
    out = call(api, "PATCH", "/api/v1/namespaces/default/pods/p", "{}", &code);
    cr_assert_eq(code, 403);
    cr_assert_str_eq(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                          "\"Failure\",\"message\":\"pods \\\"p\\\" is forbidden: User "
                          "\\\"system:serviceaccount:kube-system:hami-scheduler\\\" cannot patch "
                          "resource \\\"pods\\\" in API group \\\"\\\" in the namespace "
                          "\\\"default\\\"\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"p\","
                          "\"kind\":\"pods\"},\"code\":403}");
    free(out);
    out = call(api, "POST", "/api/v1/namespaces/default/pods/p/eviction",
               "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":"
               "\"p\"}}",
               &code);
    cr_assert_eq(code, 403);
    cr_assert(strstr(out, "cannot create resource \\\"pods/eviction\\\" in API group \\\"\\\" in "
                          "the namespace \\\"default\\\""),
              "%s", out);
    free(out);
    /* Granted: the same requests go through. */
    free(call(api, "GET", "/api/v1/pods?watch=false", NULL, &code));
    cr_assert_eq(code, 200);
    free(call(api, "PATCH", "/api/v1/nodes/n1", "{}", &code));
    cr_assert_eq(code, 200);
    /* A Role grants only in its namespace. */
    free(call(api, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", NULL,
              &code));
    cr_assert_eq(code, 200);
    free(call(api, "GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases", NULL, &code));
    cr_assert_eq(code, 403);
    free(call(api, "GET", "/apis/coordination.k8s.io/v1/leases", NULL, &code));
    cr_assert_eq(code, 403);
    /* Requests that name no object are allowed. */
    free(call(api, "GET", "/version", NULL, &code));
    cr_assert_eq(code, 200);
    vs_fakeapi_allow_all(api);
    free(call(api, "GET", "/apis/policy/v1/poddisruptionbudgets", NULL, &code));
    cr_assert_eq(code, 200);
    vs_fakeapi_stop(api);
}

Test(authz, access_reviews_answer_from_the_grants)
{
    struct vs_fakeapi *api = fake(0);
    vs_fakeapi_allow(api, "", "pods", "get,list,watch,patch", NULL);
    vs_fakeapi_allow(api, "", "pods/binding", "create", NULL);
    vs_fakeapi_allow(api, "coordination.k8s.io", "leases", "get,list,watch", "kube-system");
    cr_assert(reviewed(api, "patch", "", "pods", "", ""));
    cr_assert(reviewed(api, "create", "", "pods", "binding", ""));
    cr_assert_not(reviewed(api, "create", "", "pods", "eviction", ""));
    cr_assert_not(reviewed(api, "delete", "", "pods", "", ""));
    cr_assert_not(reviewed(api, "list", "policy", "poddisruptionbudgets", "", ""));
    cr_assert(reviewed(api, "watch", "coordination.k8s.io", "leases", "", "kube-system"));
    cr_assert_not(reviewed(api, "watch", "coordination.k8s.io", "leases", "", ""));
    long code = 0;
    char *out = call(api, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                     "{\"kind\":\"SelfSubjectAccessReview\",\"spec\":{}}", &code);
    cr_assert_eq(code, 422, "%s", out);
    free(out);
    vs_fakeapi_set_user(api, "system:serviceaccount:ns:sa");
    out =
        call(api, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
             "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}", &code);
    cr_assert_eq(code, 201);
    cr_assert_str_eq(out, "{\"kind\":\"SelfSubjectReview\",\"apiVersion\":\"authentication.k8s.io/"
                          "v1\",\"metadata\":{\"creationTimestamp\":null},\"status\":{\"userInfo\":"
                          "{\"username\":\"system:serviceaccount:ns:sa\",\"groups\":[\"system:"
                          "authenticated\"]}}}");
    free(out);
    vs_fakeapi_stop(api);
}

Test(authz, unserved_kinds_answer_404_after_authorization)
{
    struct vs_fakeapi *api = fake(0);
    long code = 0;
    cr_assert_eq(vs_fakeapi_unserve(api, "PodDisruptionBudget", true), 0);
    cr_assert_eq(vs_fakeapi_unserve(api, "widgets", true), -1);
    char *out = call(api, "GET", "/apis/policy/v1/poddisruptionbudgets", NULL, &code);
    cr_assert_eq(code, 404);
    cr_assert_str_eq(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                          "\"Failure\",\"message\":\"the server could not find the requested "
                          "resource\",\"reason\":\"NotFound\",\"code\":404}");
    free(out);
    vs_fakeapi_allow(api, "", "pods", "list", NULL);
    free(call(api, "GET", "/apis/policy/v1/poddisruptionbudgets", NULL, &code));
    cr_assert_eq(code, 403);
    vs_fakeapi_unserve(api, "poddisruptionbudgets", false);
    vs_fakeapi_allow(api, "policy", "poddisruptionbudgets", "list", NULL);
    free(call(api, "GET", "/apis/policy/v1/poddisruptionbudgets", NULL, &code));
    cr_assert_eq(code, 200);
    vs_fakeapi_stop(api);
}
