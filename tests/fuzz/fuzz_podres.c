/* fuzz_podres: a pod's requests read from arbitrary bytes through the pruned reader
 * (vs_codec_pod_res_load, vs_json_load_pruned), as a LIST page's pods without a GPU allocation
 * are. Besides crashes, leaks and sanitizer reports: whenever the bytes also decode whole with
 * json_loadb, the pruned tree must decode (vs_codec_pod_res_from_json) to the same result as
 * the whole tree: the same error, or the same namespace, name, uid, node, phase, containers,
 * requests, limits and overhead, and the same status.nominatedNodeName. And the generic reader
 * with a table of every kind of entry (members, each, all) must give exactly the whole tree cut
 * down to that table. And the pod cut down to vs_codec_pod_keep must decode with
 * vs_codec_pod_from_json to what the whole pod decodes to (every field, or the same error),
 * and with vs_codec_pod_res_from_json to the same requests (a watch event's pod the store only
 * counts),
 * and the bytes read as a Node cut down to vs_codec_node_keep must decode with
 * vs_codec_node_from_json to what the whole node decodes to.
 * Text the reader skips is not validated, so the pruned side may accept
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

static int same_tols(const struct vs_pod *a, const struct vs_pod *b)
{
    if (a->n_tols != b->n_tols)
        return 0;
    for (size_t i = 0; i < a->n_tols; i++)
        if (!same_str(a->tols[i].key, b->tols[i].key) || !same_str(a->tols[i].op, b->tols[i].op) ||
            !same_str(a->tols[i].value, b->tols[i].value) ||
            !same_str(a->tols[i].effect, b->tols[i].effect))
            return 0;
    return 1;
}

static int same_nsreqs(const struct vs_nsreq *a, const struct vs_nsreq *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!same_str(a[i].key, b[i].key) || !same_str(a[i].op, b[i].op) ||
            a[i].n_values != b[i].n_values)
            return 0;
        for (size_t j = 0; j < a[i].n_values; j++)
            if (!same_str(a[i].values[j], b[i].values[j]))
                return 0;
    }
    return 1;
}

/* vs_codec_pod_from_json of the whole pod and of the pod cut to vs_codec_pod_keep agree. */
static void full_equal(const json_t *whole, const json_t *kept)
{
    struct vs_pod a, b;
    struct vs_errbuf ea = {0}, eb = {0};
    enum vs_err ra = vs_codec_pod_from_json(whole, &a, &ea);
    enum vs_err rb = vs_codec_pod_from_json(kept, &b, &eb);
    if (ra != rb || strcmp(ea.msg, eb.msg) != 0)
        abort();
    if (ra == VS_OK) {
        int same = same_str(a.ns, b.ns) && same_str(a.name, b.name) && same_str(a.uid, b.uid) &&
                   same_str(a.node_name, b.node_name) &&
                   same_str(a.scheduler_name, b.scheduler_name) && same_str(a.phase, b.phase) &&
                   same_str(a.resource_version, b.resource_version) && a.deleting == b.deleting &&
                   a.priority == b.priority && a.preempt_never == b.preempt_never &&
                   a.start_time == b.start_time && same_str(a.nominated_node, b.nominated_node) &&
                   same_kv(&a.annotations, &b.annotations) && same_kv(&a.labels, &b.labels) &&
                   same_kv(&a.node_selector, &b.node_selector) && a.n_ctrs == b.n_ctrs &&
                   a.n_init == b.n_init && same_ctrs(a.ctrs, b.ctrs, a.n_ctrs) &&
                   same_ctrs(a.init, b.init, a.n_init) && same_kv(&a.overhead, &b.overhead) &&
                   same_kv(&a.pod_requests, &b.pod_requests) &&
                   same_kv(&a.pod_limits, &b.pod_limits) && same_tols(&a, &b) &&
                   a.has_required_affinity == b.has_required_affinity &&
                   a.n_aff_terms == b.n_aff_terms && a.n_init_status == b.n_init_status;
        for (size_t i = 0; same && i < a.n_aff_terms; i++)
            same =
                a.aff_terms[i].n_exprs == b.aff_terms[i].n_exprs &&
                a.aff_terms[i].n_fields == b.aff_terms[i].n_fields &&
                same_nsreqs(a.aff_terms[i].exprs, b.aff_terms[i].exprs, a.aff_terms[i].n_exprs) &&
                same_nsreqs(a.aff_terms[i].fields, b.aff_terms[i].fields, a.aff_terms[i].n_fields);
        for (size_t i = 0; same && i < a.n_init_status; i++)
            same = a.init_status[i].terminated == b.init_status[i].terminated &&
                   a.init_status[i].exit_code == b.init_status[i].exit_code;
        if (!same)
            abort();
    }
    vs_pod_cleanup(&a);
    vs_pod_cleanup(&b);
}

/* vs_codec_node_from_json of the whole node and of the node cut to vs_codec_node_keep agree. */
static void node_equal(const json_t *whole, const json_t *kept)
{
    struct vs_knode a, b;
    struct vs_errbuf ea = {0}, eb = {0};
    enum vs_err ra = vs_codec_node_from_json(whole, &a, &ea);
    enum vs_err rb = vs_codec_node_from_json(kept, &b, &eb);
    if (ra != rb || strcmp(ea.msg, eb.msg) != 0)
        abort();
    if (ra == VS_OK) {
        int same = same_str(a.name, b.name) && same_str(a.resource_version, b.resource_version) &&
                   a.unschedulable == b.unschedulable && same_kv(&a.annotations, &b.annotations) &&
                   same_kv(&a.labels, &b.labels) && same_kv(&a.allocatable, &b.allocatable) &&
                   same_kv(&a.capacity, &b.capacity) && a.n_taints == b.n_taints;
        for (size_t i = 0; same && i < a.n_taints; i++)
            same = same_str(a.taints[i].key, b.taints[i].key) &&
                   same_str(a.taints[i].value, b.taints[i].value) &&
                   same_str(a.taints[i].effect, b.taints[i].effect);
        if (!same)
            abort();
    }
    vs_knode_cleanup(&a);
    vs_knode_cleanup(&b);
}

static const char *nominated(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "status"), "nominatedNodeName"));
}

/* vs_codec_pod_res_from_json of the whole pod and of a tree cut down from it agree: the same
 * error, or the same names, node, phase, annotations, containers, requests, limits and overhead,
 * and the same status.nominatedNodeName. */
static void res_equal(const json_t *whole, const json_t *cut_down)
{
    struct vs_pod a, b;
    struct vs_errbuf ea = {0}, eb = {0};
    enum vs_err ra = vs_codec_pod_res_from_json(whole, &a, &ea);
    enum vs_err rb = vs_codec_pod_res_from_json(cut_down, &b, &eb);
    if (ra != rb || strcmp(ea.msg, eb.msg) != 0)
        abort();
    if (ra == VS_OK &&
        (!same_str(a.ns, b.ns) || !same_str(a.name, b.name) || !same_str(a.uid, b.uid) ||
         !same_str(a.node_name, b.node_name) || !same_str(a.phase, b.phase) ||
         !same_kv(&a.annotations, &b.annotations) || a.n_ctrs != b.n_ctrs || a.n_init != b.n_init ||
         !same_ctrs(a.ctrs, b.ctrs, a.n_ctrs) || !same_ctrs(a.init, b.init, a.n_init) ||
         !same_kv(&a.overhead, &b.overhead) || !same_kv(&a.pod_requests, &b.pod_requests) ||
         !same_kv(&a.pod_limits, &b.pod_limits)))
        abort();
    if (!same_str(nominated(whole), nominated(cut_down)))
        abort();
    vs_pod_cleanup(&a);
    vs_pod_cleanup(&b);
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

        res_equal(whole, pruned);
        json_t *kept = vs_json_load_pruned(text, size, vs_codec_pod_keep);
        if (!kept)
            abort();
        full_equal(whole, kept);
        /* A watch event's pod (cut to vs_codec_pod_keep) may be one the store only counts:
         * its requests read from that tree are the whole pod's. */
        res_equal(whole, kept);
        json_decref(kept);
        if (!(kept = vs_json_load_pruned(text, size, vs_codec_node_keep)))
            abort();
        node_equal(whole, kept);
        json_decref(kept);
    }
    json_decref(whole);
    json_decref(pruned);
    json_decref(generic);
    return 0;
}
