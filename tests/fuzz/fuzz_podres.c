/* fuzz_podres: a pod's requests read from arbitrary bytes through the pruned reader
 * (vs_codec_pod_res_load, vs_json_load_pruned), as a LIST page's pods without a GPU allocation
 * are. Besides crashes, leaks and sanitizer reports: whenever the bytes also decode whole with
 * json_loadb, the pruned tree must decode (vs_codec_pod_res_from_json) to the same result as
 * the whole tree: the same error, or the same namespace, name, uid, node, phase, containers,
 * requests, limits and overhead, and the same status.nominatedNodeName. And the generic reader
 * with a table of every kind of entry (members, each, all) must give exactly the whole tree cut
 * down to that table. Text the reader skips is not validated, so the pruned side may accept
 * bytes json_loadb refuses; the reverse is a failure. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_prune.h"
#include "k8s_codec.h"

static const struct vs_json_keep t_leaf[] = {
    {.key = "a"}, {.key = "b", .all = true}, {.key = NULL}};
static const struct vs_json_keep t_root[] = {{.key = "x", .members = t_leaf},
                                             {.key = "y", .members = t_leaf, .each = true},
                                             {.key = "m", .all = true},
                                             {.key = "s"},
                                             {.key = "\xc3\xa9"},
                                             {.key = NULL}};

/* v cut down to keep, the way vs_json_load_pruned reads it. */
static json_t *cut(json_t *v, const struct vs_json_keep *m)
{
    if ((m->members || m->all) && json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        size_t klen;
        json_t *x;
        json_object_keylen_foreach(v, k, klen, x)
        {
            if (!m->members) {
                json_object_setn_new_nocheck(o, k, klen, json_deep_copy(x));
                continue;
            }
            for (const struct vs_json_keep *e = m->members; e->key; e++)
                if (strlen(e->key) == klen && memcmp(e->key, k, klen) == 0)
                    json_object_setn_new_nocheck(o, k, klen, cut(x, e));
        }
        return o;
    }
    if (m->members && m->each && json_is_array(v)) {
        struct vs_json_keep elem = {.key = m->key, .members = m->members, .all = m->all};
        json_t *a = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) json_array_append_new(a, cut(x, &elem));
        return a;
    }
    return json_deep_copy(v);
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_kv(const struct vs_kvlist *a, const struct vs_kvlist *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (!same_str(a->items[i].key, b->items[i].key) ||
            !same_str(a->items[i].val, b->items[i].val))
            return 0;
    return 1;
}

static int same_ctrs(const struct vs_container *a, const struct vs_container *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!same_str(a[i].name, b[i].name) || !same_kv(&a[i].limits, &b[i].limits) ||
            !same_kv(&a[i].requests, &b[i].requests) || a[i].privileged != b[i].privileged ||
            a[i].restart_always != b[i].restart_always)
            return 0;
    return 1;
}

static const char *nominated(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "status"), "nominatedNodeName"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    json_t *whole = json_loadb(text, size, 0, NULL);
    json_t *pruned = vs_codec_pod_res_load(text, size);
    json_t *generic = vs_json_load_pruned(text, size, t_root);
    if (!json_is_object(whole)) { /* the pruned reader takes objects only */
        json_decref(whole);
        whole = NULL;
    }
    if (whole && (!pruned || !generic))
        abort();
    if (whole) {
        struct vs_json_keep root = {.key = "", .members = t_root};
        json_t *want = cut(whole, &root);
        if (!json_equal(want, generic))
            abort();
        json_decref(want);

        struct vs_pod a, b;
        struct vs_errbuf ea = {0}, eb = {0};
        enum vs_err ra = vs_codec_pod_res_from_json(whole, &a, &ea);
        enum vs_err rb = vs_codec_pod_res_from_json(pruned, &b, &eb);
        if (ra != rb || strcmp(ea.msg, eb.msg) != 0)
            abort();
        if (ra == VS_OK &&
            (!same_str(a.ns, b.ns) || !same_str(a.name, b.name) || !same_str(a.uid, b.uid) ||
             !same_str(a.node_name, b.node_name) || !same_str(a.phase, b.phase) ||
             !same_kv(&a.annotations, &b.annotations) || a.n_ctrs != b.n_ctrs ||
             a.n_init != b.n_init || !same_ctrs(a.ctrs, b.ctrs, a.n_ctrs) ||
             !same_ctrs(a.init, b.init, a.n_init) || !same_kv(&a.overhead, &b.overhead) ||
             !same_kv(&a.pod_requests, &b.pod_requests) || !same_kv(&a.pod_limits, &b.pod_limits)))
            abort();
        if (!same_str(nominated(whole), nominated(pruned)))
            abort();
        vs_pod_cleanup(&a);
        vs_pod_cleanup(&b);
    }
    json_decref(whole);
    json_decref(pruned);
    json_decref(generic);
    return 0;
}
