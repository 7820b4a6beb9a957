/* loader: reads cluster/pod input files (JSON via jansson, YAML streams via libyaml events) and
 * decodes their Nodes, Pods and ResourceQuotas with k8s_codec. List items are parsed and decoded
 * one at a time, so memory holds the decoded structs and one item's JSON, never a whole tree.
 * Results, warnings and errors equal those of decoding the whole parsed tree (the reference
 * semantics); objects are appended to the caller's set only when the whole file decoded. */
#include "loader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "buf.h"
#include "k8s_codec.h"

/* Deeper YAML nesting is refused: conversion recurses, and so does json_decref. */
#define YAML_MAX_DEPTH 256
#define MSG_SIZE       512

/* Growable arrays behind a private objset (the public struct has no capacities). */
struct builder {
    struct vs_objset set;
    size_t cap_nodes, cap_pods, cap_quotas, cap_slices, cap_claims;
};

struct load_ctx {
    const char *name; /* file name for messages */
    vs_warn_fn warn;
    void *warn_ctx;
    struct vs_errbuf *eb;
    vs_object_fn raw; /* optional: sees every accepted object as JSON */
    void *raw_ctx;
    struct builder b;
    size_t item; /* 1-based index of the current object across the whole file */
    /* Warnings of the current document, held back until it is known to parse: a syntax error
     * later in the document means it was never decoded, so it must not have warned. */
    char **warns;
    size_t n_warns, cap_warns;
};

static void warnf(struct load_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warnf(struct load_ctx *c, const char *fmt, ...)
{
    char msg[MSG_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->n_warns == c->cap_warns) {
        size_t ncap = c->cap_warns ? c->cap_warns * 2 : 8;
        char **grown = realloc(c->warns, ncap * sizeof(*grown));
        if (!grown)
            return; /* a warning is not worth failing the load for */
        c->warns = grown;
        c->cap_warns = ncap;
    }
    char *copy = strdup(msg);
    if (copy)
        c->warns[c->n_warns++] = copy;
}

/* Forgets the held-back warnings after the first keep. */
static void drop_warnings(struct load_ctx *c, size_t keep)
{
    while (c->n_warns > keep)
        free(c->warns[--c->n_warns]);
}

/* Delivers the held-back warnings in order. */
static void flush_warnings(struct load_ctx *c)
{
    for (size_t i = 0; i < c->n_warns; i++) {
        if (c->warn)
            c->warn(c->warn_ctx, c->warns[i]);
        else
            fprintf(stderr, "warning: %s\n", c->warns[i]);
        free(c->warns[i]);
    }
    c->n_warns = 0;
}

static void builder_cleanup(struct builder *b)
{
    vs_objset_cleanup(&b->set);
    b->cap_nodes = b->cap_pods = b->cap_quotas = b->cap_slices = b->cap_claims = 0;
}

/* Drops the objects built after the first nodes/pods/quotas/slices/claims ones. */
static void builder_truncate(struct builder *b, size_t nodes, size_t pods, size_t quotas,
                             size_t slices, size_t claims)
{
    while (b->set.n_slices > slices)
        vs_dra_slice_cleanup(&b->set.slices[--b->set.n_slices]);
    while (b->set.n_claims > claims)
        vs_dra_claim_cleanup(&b->set.claims[--b->set.n_claims]);
    while (b->set.n_nodes > nodes)
        vs_knode_cleanup(&b->set.nodes[--b->set.n_nodes]);
    while (b->set.n_pods > pods)
        vs_pod_cleanup(&b->set.pods[--b->set.n_pods]);
    while (b->set.n_quotas > quotas)
        vs_kquota_cleanup(&b->set.quotas[--b->set.n_quotas]);
}

/* Makes room in *arr (holding n elements) for add more; a no-op when *arr will be replaced. */
static bool make_room(void **arr, size_t n, size_t add, size_t sz)
{
    if (n == 0 || add == 0)
        return true;
    void *grown = realloc(*arr, (n + add) * sz);
    if (!grown)
        return false;
    *arr = grown;
    return true;
}

/* Moves src[0..*sn) to the end of *dst (holding *dn elements, with room made by make_room). */
static void move_into(void **dst, size_t *dn, void **src, size_t *sn, size_t sz)
{
    if (*sn == 0)
        return;
    if (*dn == 0) {
        free(*dst);
        *dst = *src;
    } else {
        memcpy((char *)*dst + *dn * sz, *src, *sn * sz);
        free(*src);
    }
    *dn += *sn;
    *src = NULL;
    *sn = 0;
}

/* Appends everything built to set. All room is made before anything moves, so a failure leaves
 * set unchanged (apart from spare capacity). */
static enum vs_err builder_commit(struct builder *b, struct vs_objset *set)
{
    struct vs_objset *t = &b->set;
    if (!make_room((void **)&set->nodes, set->n_nodes, t->n_nodes, sizeof(*t->nodes)) ||
        !make_room((void **)&set->pods, set->n_pods, t->n_pods, sizeof(*t->pods)) ||
        !make_room((void **)&set->quotas, set->n_quotas, t->n_quotas, sizeof(*t->quotas)) ||
        !make_room((void **)&set->slices, set->n_slices, t->n_slices, sizeof(*t->slices)) ||
        !make_room((void **)&set->claims, set->n_claims, t->n_claims, sizeof(*t->claims)))
        return VS_ERR_NOMEM;
    move_into((void **)&set->slices, &set->n_slices, (void **)&t->slices, &t->n_slices,
              sizeof(*t->slices));
    move_into((void **)&set->claims, &set->n_claims, (void **)&t->claims, &t->n_claims,
              sizeof(*t->claims));
    move_into((void **)&set->nodes, &set->n_nodes, (void **)&t->nodes, &t->n_nodes,
              sizeof(*t->nodes));
    move_into((void **)&set->pods, &set->n_pods, (void **)&t->pods, &t->n_pods, sizeof(*t->pods));
    move_into((void **)&set->quotas, &set->n_quotas, (void **)&t->quotas, &t->n_quotas,
              sizeof(*t->quotas));
    builder_cleanup(b);
    return VS_OK;
}

/* How a kind's objects are named in messages. */
enum ns_rule {
    NS_NEVER,     /* cluster-scoped: "name" */
    NS_DEFAULTED, /* namespaced: "ns/name", ns "default" when absent */
    NS_IF_GIVEN,  /* unknown kinds: "ns/name" when a namespace is given, else "name" */
};

/* The message name of obj ("" when it has none) per rule. */
static void object_name(const json_t *obj, enum ns_rule rule, char *out, size_t n)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));

    out[0] = '\0';
    if (!name || !*name)
        return;
    if (rule == NS_DEFAULTED && (!ns || !*ns))
        ns = "default";
    if (rule != NS_NEVER && ns && *ns)
        snprintf(out, n, "%s/%s", ns, name);
    else
        snprintf(out, n, "%s", name);
}

/* Prefixes eb with "<file>: <Kind> <name>" or "<file>: item N (<Kind>)". */
static enum vs_err object_err(struct load_ctx *c, enum vs_err rc, const json_t *obj,
                              const char *kind, enum ns_rule rule)
{
    char name[256];
    if (rc == VS_ERR_NOMEM)
        return vs_err_set(c->eb, rc, "%s: out of memory", c->name);
    object_name(obj, rule, name, sizeof(name));
    if (*name)
        return vs_err_prefix(c->eb, rc, "%s: %s %s", c->name, kind, name);
    return vs_err_prefix(c->eb, rc, "%s: item %zu (%s)", c->name, c->item, kind);
}

/* Returns a constant so the static analyzer can follow it (it cannot see vs_err_set's). */
static enum vs_err nomem(struct load_ctx *c)
{
    vs_err_set(c->eb, VS_ERR_NOMEM, "%s: out of memory", c->name);
    return VS_ERR_NOMEM;
}

static enum vs_err add_pod(struct load_ctx *c, const json_t *obj)
{
    struct builder *b = &c->b;
    struct vs_pod p;
    enum vs_err rc = vs_codec_pod_from_json(obj, &p, c->eb);
    if (rc != VS_OK) {
        vs_pod_cleanup(&p);
        return object_err(c, rc, obj, "Pod", NS_DEFAULTED);
    }
    if (!vs_grow_one((void **)&b->set.pods, b->set.n_pods, &b->cap_pods, sizeof(p))) {
        vs_pod_cleanup(&p);
        return nomem(c);
    }
    b->set.pods[b->set.n_pods++] = p;
    return VS_OK;
}

static enum vs_err add_node(struct load_ctx *c, const json_t *obj)
{
    struct builder *b = &c->b;
    struct vs_knode n;
    enum vs_err rc = vs_codec_node_from_json(obj, &n, c->eb);
    if (rc != VS_OK) {
        vs_knode_cleanup(&n);
        return object_err(c, rc, obj, "Node", NS_NEVER);
    }
    if (!vs_grow_one((void **)&b->set.nodes, b->set.n_nodes, &b->cap_nodes, sizeof(n))) {
        vs_knode_cleanup(&n);
        return nomem(c);
    }
    b->set.nodes[b->set.n_nodes++] = n;
    return VS_OK;
}

static enum vs_err add_quota(struct load_ctx *c, const json_t *obj)
{
    struct builder *b = &c->b;
    struct vs_kquota q;
    enum vs_err rc = vs_codec_quota_from_json(obj, &q, c->eb);
    if (rc != VS_OK) {
        vs_kquota_cleanup(&q);
        return object_err(c, rc, obj, "ResourceQuota", NS_DEFAULTED);
    }
    if (!vs_grow_one((void **)&b->set.quotas, b->set.n_quotas, &b->cap_quotas, sizeof(q))) {
        vs_kquota_cleanup(&q);
        return nomem(c);
    }
    b->set.quotas[b->set.n_quotas++] = q;
    return VS_OK;
}

static enum vs_err add_slice(struct load_ctx *c, const json_t *obj)
{
    struct builder *b = &c->b;
    struct vs_dra_slice sl;
    enum vs_err rc = vs_dra_slice_from_json(obj, &sl, c->eb);
    if (rc != VS_OK)
        return rc == VS_ERR_NOMEM ? nomem(c) : vs_err_prefix(c->eb, rc, "%s", c->name);
    if (!vs_grow_one((void **)&b->set.slices, b->set.n_slices, &b->cap_slices, sizeof(sl))) {
        vs_dra_slice_cleanup(&sl);
        return nomem(c);
    }
    b->set.slices[b->set.n_slices++] = sl;
    return VS_OK;
}

static enum vs_err add_claim(struct load_ctx *c, const json_t *obj)
{
    struct builder *b = &c->b;
    struct vs_dra_claim cl;
    enum vs_err rc = vs_dra_claim_from_json(obj, &cl, c->eb);
    if (rc != VS_OK)
        return rc == VS_ERR_NOMEM ? nomem(c) : vs_err_prefix(c->eb, rc, "%s", c->name);
    if (!vs_grow_one((void **)&b->set.claims, b->set.n_claims, &b->cap_claims, sizeof(cl))) {
        vs_dra_claim_cleanup(&cl);
        return nomem(c);
    }
    b->set.claims[b->set.n_claims++] = cl;
    return VS_OK;
}

/* A DeviceClass is checked with the guard's decoder; only the raw callback keeps it. */
static enum vs_err check_class(struct load_ctx *c, const json_t *obj)
{
    struct vs_dra_class dc;
    enum vs_err rc = vs_dra_class_from_json(obj, &dc, c->eb);
    if (rc != VS_OK)
        return rc == VS_ERR_NOMEM ? nomem(c) : vs_err_prefix(c->eb, rc, "%s", c->name);
    vs_dra_class_cleanup(&dc);
    return VS_OK;
}

/* One object of a document or list; default_kind applies when it has no kind of its own. */
static enum vs_err add_object(struct load_ctx *c, const json_t *obj, const char *default_kind)
{
    c->item++;
    if (!json_is_object(obj))
        return vs_err_set(c->eb, VS_ERR_PARSE, "%s: item %zu: expected an object, got %s", c->name,
                          c->item, vs_codec_type_name(obj));

    const json_t *k = json_object_get(obj, "kind");
    const char *kind = default_kind;
    if (k && !json_is_null(k)) {
        if (!json_is_string(k))
            return vs_err_set(c->eb, VS_ERR_PARSE, "%s: item %zu: kind: expected a string, got %s",
                              c->name, c->item, vs_codec_type_name(k));
        kind = json_string_value(k);
    }
    if (!kind || !*kind) {
        warnf(c, "%s: skipping item %zu (no kind)", c->name, c->item);
        return VS_OK;
    }
    enum vs_err rc = VS_ERR_NOTFOUND;
    if (strcmp(kind, "Pod") == 0)
        rc = add_pod(c, obj);
    else if (strcmp(kind, "Node") == 0)
        rc = add_node(c, obj);
    else if (strcmp(kind, "ResourceQuota") == 0)
        rc = add_quota(c, obj);
    else if (strcmp(kind, "ResourceSlice") == 0)
        rc = add_slice(c, obj);
    else if (strcmp(kind, "ResourceClaim") == 0)
        rc = add_claim(c, obj);
    else if (strcmp(kind, "DeviceClass") == 0 && c->raw)
        rc = check_class(c, obj); /* for the guard of serve --cluster; simulate has none */
    if (rc == VS_OK && c->raw)
        rc = c->raw(c->raw_ctx, kind, obj, c->eb);
    if (rc != VS_ERR_NOTFOUND)
        return rc;

    char name[256];
    object_name(obj, NS_IF_GIVEN, name, sizeof(name));
    if (*name)
        warnf(c, "%s: skipping %s %s", c->name, kind, name);
    else
        warnf(c, "%s: skipping item %zu (%s)", c->name, c->item, kind);
    return VS_OK;
}

/* Decodes each element of arr, releasing it once decoded so the decoded structs replace the
 * JSON tree instead of adding to it. */
static enum vs_err add_items(struct load_ctx *c, json_t *arr, const char *default_kind)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        enum vs_err rc = add_object(c, json_array_get(arr, i), default_kind);
        if (rc != VS_OK)
            return rc;
        if (json_array_set_new(arr, i, json_null()) != 0)
            return nomem(c);
    }
    return VS_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The reference rule for an object document: it is a list when its kind ends in "List", or when
 * it has no kind but has items. Typed lists give their items a default kind. */
static bool is_list_doc(const json_t *kind_v, bool has_items, const char **item_kind)
{
    const char *kind = json_string_value(kind_v);
    bool has_kind = kind_v && !json_is_null(kind_v);

    *item_kind = NULL;
    if (!(kind && ends_with(kind, "List")) && (has_kind || !has_items))
        return false;
    if (kind && strcmp(kind, "PodList") == 0)
        *item_kind = "Pod";
    else if (kind && strcmp(kind, "NodeList") == 0)
        *item_kind = "Node";
    else if (kind && strcmp(kind, "ResourceQuotaList") == 0)
        *item_kind = "ResourceQuota";
    else if (kind && strcmp(kind, "ResourceSliceList") == 0)
        *item_kind = "ResourceSlice";
    else if (kind && strcmp(kind, "ResourceClaimList") == 0)
        *item_kind = "ResourceClaim";
    return true;
}

/* One whole top-level document: a list, a single object, or an array of objects. Takes doc.
 * This is the reference semantics; the streaming path below reproduces it item by item. */
static enum vs_err add_document(struct load_ctx *c, json_t *doc)
{
    enum vs_err rc = VS_OK;

    if (json_is_array(doc)) {
        rc = add_items(c, doc, NULL);
    } else if (json_is_object(doc)) {
        json_t *items = json_object_get(doc, "items");
        const char *item_kind;
        if (!is_list_doc(json_object_get(doc, "kind"), items && !json_is_null(items), &item_kind))
            rc = add_object(c, doc, NULL);
        else if (items && !json_is_null(items) && !json_is_array(items))
            rc = vs_err_set(c->eb, VS_ERR_PARSE, "%s: items: expected an array, got %s", c->name,
                            vs_codec_type_name(items));
        else
            rc = add_items(c, items, item_kind);
    } else if (!json_is_null(doc)) {
        c->item++;
        rc = vs_err_set(c->eb, VS_ERR_PARSE, "%s: item %zu: expected an object, got %s", c->name,
                        c->item, vs_codec_type_name(doc));
    }
    json_decref(doc);
    return rc;
}

/* ---- streaming documents ------------------------------------------------------------------
 * A parser feeds a document's top-level members to doc_member and the elements of its items
 * array (or of a top-level array) to doc_item, then calls doc_end. Whether the document is a list
 * depends on its kind, which kubectl prints after items. Until the kind is known, items with a
 * kind of their own are decoded speculatively (undone by rollback if the document turns out not
 * to be a list) and items without one are kept as JSON until the list's item kind is known. */

enum item_mode {
    ITEMS_LIST,        /* a list: decode each item now */
    ITEMS_IGNORE,      /* not a list: items are just an unused member */
    ITEMS_SPECULATIVE, /* kind not seen yet */
};

struct doc {
    json_t *rest;    /* the members other than a streamed items array; NULL for array documents */
    bool seen_kind;  /* rest has a kind member */
    bool seen_items; /* an items member was seen (streamed or in rest) */
    bool streamed;   /* items arrived through doc_item */
    enum item_mode mode;
    const char *item_kind; /* ITEMS_LIST: the default kind of items */
    enum vs_err err;       /* the first decoding error among the items; later items are dropped */
    /* ITEMS_SPECULATIVE: where the items started, to roll back */
    size_t item0, nodes0, pods0, quotas0, slices0, claims0, warns0;
    json_t *pending; /* items kept as JSON: the first kindless one and all after it */
};

static void doc_init_object(struct doc *d, json_t *rest)
{
    memset(d, 0, sizeof(*d));
    d->rest = rest;
}

static void doc_init_array(struct doc *d)
{
    memset(d, 0, sizeof(*d));
    d->mode = ITEMS_LIST;
    d->streamed = true;
}

static void doc_cleanup(struct doc *d)
{
    json_decref(d->rest);
    json_decref(d->pending);
    d->rest = d->pending = NULL;
}

/* Adds a member other than a streamed items array. Takes value. The caller has checked that kind
 * and items are not repeated (the reference semantics would let the last one win). */
static enum vs_err doc_member(struct load_ctx *c, struct doc *d, const char *key, json_t *value)
{
    if (strcmp(key, "kind") == 0)
        d->seen_kind = true;
    else if (strcmp(key, "items") == 0)
        d->seen_items = true;
    if (json_object_set_new_nocheck(d->rest, key, value) != 0)
        return nomem(c);
    return VS_OK;
}

/* The items array of an object document starts. */
static void doc_items_begin(struct load_ctx *c, struct doc *d)
{
    d->seen_items = d->streamed = true;
    if (d->seen_kind) {
        const char *item_kind;
        bool list = is_list_doc(json_object_get(d->rest, "kind"), true, &item_kind);
        d->mode = list ? ITEMS_LIST : ITEMS_IGNORE;
        d->item_kind = item_kind;
        return;
    }
    d->mode = ITEMS_SPECULATIVE;
    d->item0 = c->item;
    d->nodes0 = c->b.set.n_nodes;
    d->pods0 = c->b.set.n_pods;
    d->quotas0 = c->b.set.n_quotas;
    d->slices0 = c->b.set.n_slices;
    d->claims0 = c->b.set.n_claims;
    d->warns0 = c->n_warns;
}

/* An object item whose kind comes from the list (it has none of its own). */
static bool needs_list_kind(const json_t *item)
{
    const json_t *k = json_object_get(item, "kind");
    return json_is_object(item) && (!k || json_is_null(k));
}

/* One element of the items array. Takes item. */
static enum vs_err doc_item(struct load_ctx *c, struct doc *d, json_t *item)
{
    enum vs_err rc = VS_OK;

    if (d->err != VS_OK || d->mode == ITEMS_IGNORE) {
        json_decref(item);
        return VS_OK;
    }
    if (d->mode == ITEMS_SPECULATIVE && (d->pending || needs_list_kind(item))) {
        if (!d->pending && !(d->pending = json_array())) {
            json_decref(item);
            return nomem(c);
        }
        if (json_array_append_new(d->pending, item) != 0)
            return nomem(c);
        return VS_OK;
    }
    rc = add_object(c, item, d->item_kind);
    json_decref(item);
    if (rc == VS_ERR_NOMEM)
        return rc;
    d->err = rc; /* decoding errors wait for the end: a syntax error later takes precedence */
    return VS_OK;
}

/* Undoes the speculative decoding of items. */
static void doc_rollback(struct load_ctx *c, struct doc *d)
{
    builder_truncate(&c->b, d->nodes0, d->pods0, d->quotas0, d->slices0, d->claims0);
    drop_warnings(c, d->warns0);
    c->item = d->item0;
    d->err = VS_OK;
}

/* The document parsed completely: settle what it was and decode what is left. */
static enum vs_err doc_end(struct load_ctx *c, struct doc *d)
{
    if (!d->rest) /* an array document */
        return d->err;

    json_t *items = json_object_get(d->rest, "items");
    const char *item_kind;
    bool list = is_list_doc(json_object_get(d->rest, "kind"),
                            d->streamed || (items && !json_is_null(items)), &item_kind);

    if (d->mode == ITEMS_SPECULATIVE) {
        if (list) {
            if (d->err != VS_OK)
                return d->err;
            return add_items(c, d->pending, item_kind);
        }
        doc_rollback(c, d);
    }
    if (!list)
        return add_object(c, d->rest, NULL);
    if (d->streamed)
        return d->err;
    if (items && !json_is_null(items) && !json_is_array(items))
        return vs_err_set(c->eb, VS_ERR_PARSE, "%s: items: expected an array, got %s", c->name,
                          vs_codec_type_name(items));
    return add_items(c, items, item_kind);
}

/* ---- JSON ------------------------------------------------------------------------------- */

/* Walks the top level of a JSON text by hand and hands each member or item to jansson on its
 * own. Any irregularity (a syntax error, a repeated kind or items) makes it give up with
 * *give_up set; the caller then parses the whole text with jansson, for its exact error message
 * or, if the text is valid after all, to decode it the reference way. */
struct jwalk {
    const char *buf;
    size_t len, pos;
};

static void jskip_ws(struct jwalk *w)
{
    while (w->pos < w->len && (w->buf[w->pos] == ' ' || w->buf[w->pos] == '\t' ||
                               w->buf[w->pos] == '\n' || w->buf[w->pos] == '\r'))
        w->pos++;
}

/* Is the next byte (after white space) ch? Consumes it if so. */
static bool jaccept(struct jwalk *w, char ch)
{
    jskip_ws(w);
    if (w->pos < w->len && w->buf[w->pos] == ch) {
        w->pos++;
        return true;
    }
    return false;
}

static json_t *jvalue(struct jwalk *w)
{
    json_error_t jerr;
    jskip_ws(w);
    json_t *v = json_loadb(w->buf + w->pos, w->len - w->pos,
                           JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &jerr);
    if (v && jerr.position < 0) { /* an int position overflowed: let the whole parse decide */
        json_decref(v);
        return NULL;
    }
    if (v)
        w->pos += (size_t)jerr.position;
    return v;
}

/* Elements of an array whose '[' was consumed, until its ']'. */
static enum vs_err jitems(struct load_ctx *c, struct jwalk *w, struct doc *d, bool *give_up)
{
    if (jaccept(w, ']'))
        return VS_OK;
    do {
        json_t *item = jvalue(w);
        enum vs_err rc;
        if (!item) {
            *give_up = true;
            return VS_OK;
        }
        if ((rc = doc_item(c, d, item)) != VS_OK)
            return rc;
    } while (jaccept(w, ','));
    if (!jaccept(w, ']'))
        *give_up = true;
    return VS_OK;
}

/* Members of an object whose '{' was consumed, until its '}'. */
static enum vs_err jmembers(struct load_ctx *c, struct jwalk *w, struct doc *d, bool *give_up)
{
    if (jaccept(w, '}'))
        return VS_OK;
    do {
        json_t *key, *value;
        const char *k;
        enum vs_err rc;

        jskip_ws(w);
        if (w->pos >= w->len || w->buf[w->pos] != '"' || !(key = jvalue(w))) {
            *give_up = true;
            return VS_OK;
        }
        k = json_string_value(key);
        if ((strcmp(k, "kind") == 0 && d->seen_kind) ||
            (strcmp(k, "items") == 0 && d->seen_items) || !jaccept(w, ':')) {
            json_decref(key);
            *give_up = true;
            return VS_OK;
        }
        if (strcmp(k, "items") == 0 && jaccept(w, '[')) {
            json_decref(key);
            doc_items_begin(c, d);
            if ((rc = jitems(c, w, d, give_up)) != VS_OK || *give_up)
                return rc;
            continue;
        }
        if (!(value = jvalue(w))) {
            json_decref(key);
            *give_up = true;
            return VS_OK;
        }
        rc = doc_member(c, d, k, value);
        json_decref(key);
        if (rc != VS_OK)
            return rc;
    } while (jaccept(w, ','));
    if (!jaccept(w, '}'))
        *give_up = true;
    return VS_OK;
}

static enum vs_err json_stream(struct load_ctx *c, const char *buf, size_t len, bool *give_up)
{
    struct jwalk w = {.buf = buf, .len = len};
    struct doc d;
    enum vs_err rc;

    if (jaccept(&w, '[')) {
        doc_init_array(&d);
        rc = jitems(c, &w, &d, give_up);
    } else if (jaccept(&w, '{')) {
        json_t *rest = json_object();
        if (!rest)
            return nomem(c);
        doc_init_object(&d, rest);
        rc = jmembers(c, &w, &d, give_up);
    } else {
        *give_up = true;
        return VS_OK;
    }
    jskip_ws(&w);
    if (w.pos != w.len)
        *give_up = true;
    if (rc == VS_OK && !*give_up)
        rc = doc_end(c, &d);
    doc_cleanup(&d);
    return rc;
}

static enum vs_err load_json(struct load_ctx *c, const char *buf, size_t len)
{
    bool give_up = false;
    enum vs_err rc = json_stream(c, buf, len, &give_up);
    if (!give_up)
        return rc;

    /* Start over with the whole text: the error message, or the reference decoding. */
    builder_cleanup(&c->b);
    drop_warnings(c, 0);
    c->item = 0;
    json_error_t jerr;
    json_t *doc = json_loadb(buf, len, 0, &jerr);
    if (!doc) {
        if (json_error_code(&jerr) == json_error_out_of_memory)
            return nomem(c);
        if (jerr.line > 0)
            return vs_err_set(c->eb, VS_ERR_PARSE, "%s: line %d column %d: invalid JSON: %s",
                              c->name, jerr.line, jerr.column, jerr.text);
        return vs_err_set(c->eb, VS_ERR_PARSE, "%s: invalid JSON: %s", c->name, jerr.text);
    }
    return add_document(c, doc);
}

/* ---- YAML ------------------------------------------------------------------------------- */

struct yaml_ctx {
    yaml_parser_t parser;
    struct load_ctx *c;
    const char *buf; /* the input, to turn a byte offset into line and column */
    size_t len;
    bool invalid; /* the error is in the text (not in decoding it) */
};

static enum vs_err yaml_err_at(struct yaml_ctx *y, yaml_mark_t mark, const char *problem)
{
    y->invalid = true;
    return vs_err_set(y->c->eb, VS_ERR_PARSE, "%s: line %zu column %zu: invalid YAML: %s",
                      y->c->name, mark.line + 1, mark.column + 1, problem);
}

static enum vs_err yaml_parser_err(struct yaml_ctx *y)
{
    const yaml_parser_t *p = &y->parser;
    const char *problem = p->problem ? p->problem : "unknown error";
    yaml_mark_t mark = p->problem_mark;

    if (p->error == YAML_MEMORY_ERROR)
        return nomem(y->c);
    if (p->error == YAML_READER_ERROR) {
        /* Reader errors (bad encoding) carry only a byte offset. */
        memset(&mark, 0, sizeof(mark));
        for (size_t i = 0; i < p->problem_offset && i < y->len; i++) {
            if (y->buf[i] == '\n') {
                mark.line++;
                mark.column = 0;
            } else if (((unsigned char)y->buf[i] & 0xC0) != 0x80) {
                mark.column++;
            }
        }
    }
    return yaml_err_at(y, mark, problem);
}

static enum vs_err next_event(struct yaml_ctx *y, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&y->parser, ev))
        return yaml_parser_err(y);
    return VS_OK;
}

static bool is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

/* [-+]?[0-9]+ */
static bool is_int_text(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?  (the YAML 1.2 core schema float) */
static bool is_float_text(const char *s)
{
    size_t digits = 0;
    if (*s == '-' || *s == '+')
        s++;
    for (; *s >= '0' && *s <= '9'; s++)
        digits++;
    if (*s == '.') {
        s++;
        for (; *s >= '0' && *s <= '9'; s++)
            digits++;
    }
    if (!digits)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

/* Resolves a scalar the way Kubernetes' YAML reader would for the types we care about. */
static json_t *scalar_json(const yaml_event_t *ev)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;

    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || (tag && strcmp(tag, YAML_STR_TAG) == 0))
        return json_stringn_nocheck(s, n);
    if (is_one_of(s, nulls))
        return json_null();
    if (is_one_of(s, trues))
        return json_true();
    if (is_one_of(s, falses))
        return json_false();
    if (is_int_text(s)) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno != ERANGE)
            return json_integer(v);
    } else if (is_float_text(s)) {
        double d = strtod(s, NULL);
        if (isfinite(d))
            return json_real(d);
    }
    /* Text that does not fit a number type stays text, unchanged. */
    return json_stringn_nocheck(s, n);
}

/* The key of a mapping entry from its event ev (consumed): a new string in *key. */
static enum vs_err yaml_key(struct yaml_ctx *y, yaml_event_t *ev, char **key)
{
    enum vs_err rc = VS_OK;
    *key = NULL;
    if (ev->type != YAML_SCALAR_EVENT || memchr(ev->data.scalar.value, 0, ev->data.scalar.length))
        rc = yaml_err_at(y, ev->start_mark,
                         ev->type == YAML_ALIAS_EVENT    ? "aliases are not supported"
                         : ev->type == YAML_SCALAR_EVENT ? "NUL character in a scalar"
                                                         : "mapping keys must be scalars");
    else if (!(*key = strdup((const char *)ev->data.scalar.value)))
        rc = nomem(y->c);
    yaml_event_delete(ev);
    return rc;
}

/* Converts the node starting with event ev (consumed) into *out. */
static enum vs_err yaml_node(struct yaml_ctx *y, yaml_event_t *ev, int depth, json_t **out)
{
    enum vs_err rc = VS_OK;
    json_t *v = NULL;
    yaml_event_t child;
    bool is_map = ev->type == YAML_MAPPING_START_EVENT;

    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        rc = yaml_err_at(y, ev->start_mark, "aliases are not supported");
        goto out;
    case YAML_SCALAR_EVENT:
        if (memchr(ev->data.scalar.value, 0, ev->data.scalar.length)) {
            rc = yaml_err_at(y, ev->start_mark, "NUL character in a scalar");
            goto out;
        }
        v = scalar_json(ev);
        if (!v)
            rc = nomem(y->c);
        goto out;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (depth >= YAML_MAX_DEPTH) {
            rc = yaml_err_at(y, ev->start_mark, "nesting too deep");
            goto out;
        }
        break;
    default:
        rc = yaml_err_at(y, ev->start_mark, "unexpected event");
        goto out;
    }

    v = is_map ? json_object() : json_array();
    if (!v) {
        rc = nomem(y->c);
        goto out;
    }
    for (;;) {
        json_t *item;
        if ((rc = next_event(y, &child)) != VS_OK)
            goto out;
        if (child.type == YAML_SEQUENCE_END_EVENT || child.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&child);
            break;
        }
        if (!is_map) {
            if ((rc = yaml_node(y, &child, depth + 1, &item)) != VS_OK)
                goto out;
            if (json_array_append_new(v, item) != 0) {
                rc = nomem(y->c);
                goto out;
            }
            continue;
        }
        char *key;
        if ((rc = yaml_key(y, &child, &key)) != VS_OK)
            goto out;
        if ((rc = next_event(y, &child)) != VS_OK ||
            (rc = yaml_node(y, &child, depth + 1, &item)) != VS_OK) {
            free(key);
            goto out;
        }
        int set = json_object_set_new_nocheck(v, key, item);
        free(key);
        if (set != 0) {
            rc = nomem(y->c);
            goto out;
        }
    }
out:
    yaml_event_delete(ev);
    if (rc != VS_OK) {
        json_decref(v);
        v = NULL;
    }
    *out = v;
    return rc;
}

/* Streams the elements of a sequence whose start event was consumed, at the given depth. */
static enum vs_err yaml_items(struct yaml_ctx *y, struct doc *d, int depth)
{
    for (;;) {
        yaml_event_t ev;
        json_t *item;
        enum vs_err rc;
        if ((rc = next_event(y, &ev)) != VS_OK)
            return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return VS_OK;
        }
        if ((rc = yaml_node(y, &ev, depth, &item)) != VS_OK ||
            (rc = doc_item(y->c, d, item)) != VS_OK)
            return rc;
    }
}

/* A document whose root mapping start was consumed: members go to the streaming document, an
 * items sequence item by item. */
static enum vs_err yaml_members(struct yaml_ctx *y, struct doc *d)
{
    for (;;) {
        yaml_event_t ev;
        yaml_mark_t mark;
        json_t *value;
        char *key;
        enum vs_err rc;

        if ((rc = next_event(y, &ev)) != VS_OK)
            return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return VS_OK;
        }
        mark = ev.start_mark;
        if ((rc = yaml_key(y, &ev, &key)) != VS_OK)
            return rc;
        bool is_kind = strcmp(key, "kind") == 0, is_items = strcmp(key, "items") == 0;
        if ((is_kind && d->seen_kind) || (is_items && d->seen_items)) {
            /* The last one would win in a tree; streaming cannot take the first one back. */
            rc = yaml_err_at(y, mark,
                             is_kind ? "duplicate key \"kind\"" : "duplicate key \"items\"");
        } else if ((rc = next_event(y, &ev)) == VS_OK) {
            if (is_items && ev.type == YAML_SEQUENCE_START_EVENT) {
                yaml_event_delete(&ev);
                doc_items_begin(y->c, d);
                rc = yaml_items(y, d, 2);
            } else if ((rc = yaml_node(y, &ev, 1, &value)) == VS_OK) {
                rc = doc_member(y->c, d, key, value);
            }
        }
        free(key);
        if (rc != VS_OK)
            return rc;
    }
}

/* One document from the event after its start: mappings and sequences stream, scalars go the
 * reference way. */
static enum vs_err yaml_document(struct yaml_ctx *y)
{
    yaml_event_t ev;
    struct doc d;
    json_t *doc;
    enum vs_err rc;

    if ((rc = next_event(y, &ev)) != VS_OK)
        return rc;
    if (ev.type == YAML_MAPPING_START_EVENT) {
        json_t *rest = json_object();
        yaml_event_delete(&ev);
        if (!rest)
            return nomem(y->c);
        doc_init_object(&d, rest);
        rc = yaml_members(y, &d);
    } else if (ev.type == YAML_SEQUENCE_START_EVENT) {
        yaml_event_delete(&ev);
        doc_init_array(&d);
        rc = yaml_items(y, &d, 1);
    } else {
        if ((rc = yaml_node(y, &ev, 0, &doc)) != VS_OK)
            return rc;
        return add_document(y->c, doc);
    }
    if (rc == VS_OK)
        rc = doc_end(y->c, &d);
    doc_cleanup(&d);
    return rc;
}

static enum vs_err load_yaml(struct load_ctx *c, const char *buf, size_t len)
{
    struct yaml_ctx y = {.c = c, .buf = buf, .len = len};
    yaml_event_t ev;
    enum vs_err rc = VS_OK;

    if (!yaml_parser_initialize(&y.parser))
        return nomem(c);
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)buf, len);
    for (;;) {
        if ((rc = next_event(&y, &ev)) != VS_OK)
            break;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        bool start = ev.type == YAML_DOCUMENT_START_EVENT;
        /* STREAM_START and DOCUMENT_END carry nothing we need. */
        yaml_event_delete(&ev);
        if (!start)
            continue;
        rc = yaml_document(&y);
        /* A document that does not parse was never decoded, so it has nothing to warn about. */
        if (y.invalid)
            drop_warnings(c, 0);
        flush_warnings(c);
        if (rc != VS_OK)
            break;
    }
    yaml_parser_delete(&y.parser);
    return rc;
}

/* ---- entry points ----------------------------------------------------------------------- */

static bool looks_like_json(const char *buf, size_t len, size_t *start)
{
    size_t i = 0;
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    *start = i;
    for (; i < len; i++) {
        if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n')
            continue;
        return buf[i] == '{' || buf[i] == '[';
    }
    return false;
}

static enum vs_err load(const char *buf, size_t len, const char *name, struct vs_objset *set,
                        vs_object_fn raw, void *raw_ctx, vs_warn_fn warn, void *warn_ctx,
                        struct vs_errbuf *eb)
{
    struct load_ctx c = {
        .name = name, .warn = warn, .warn_ctx = warn_ctx, .eb = eb, .raw = raw, .raw_ctx = raw_ctx};
    size_t start;
    enum vs_err rc;

    if (looks_like_json(buf, len, &start)) {
        rc = load_json(&c, buf + start, len - start);
        flush_warnings(&c);
    } else {
        rc = load_yaml(&c, buf, len);
    }
    if (rc == VS_OK && builder_commit(&c.b, set) != VS_OK)
        rc = nomem(&c);
    builder_cleanup(&c.b);
    drop_warnings(&c, 0);
    free(c.warns);
    return rc;
}

enum vs_err vs_loader_load_buf(const char *buf, size_t len, const char *name, struct vs_objset *set,
                               vs_warn_fn warn, void *warn_ctx, struct vs_errbuf *eb)
{
    return load(buf ? buf : "", buf ? len : 0, name ? name : "<input>", set, NULL, NULL, warn,
                warn_ctx, eb);
}

/* Reads the whole file; returns a new buffer (free with free()) or NULL with errno set. */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *grown = cap < (SIZE_MAX >> 1) ? realloc(buf, cap * 2) : NULL;
            if (!grown) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno ? errno : EIO;
                free(buf);
                errno = e;
                return NULL;
            }
            break;
        }
    }
    *len = n;
    return buf;
}

enum vs_err vs_loader_load_file(const char *path, struct vs_objset *set, vs_warn_fn warn,
                                void *warn_ctx, struct vs_errbuf *eb)
{
    return vs_loader_load_file_raw(path, set, NULL, NULL, warn, warn_ctx, eb);
}

enum vs_err vs_loader_load_file_raw(const char *path, struct vs_objset *set, vs_object_fn raw,
                                    void *raw_ctx, vs_warn_fn warn, void *warn_ctx,
                                    struct vs_errbuf *eb)
{
    size_t len = 0;
    char *buf = NULL;
    FILE *f = fopen(path, "rb");

    if (f) {
        errno = 0;
        buf = read_all(f, &len);
        int e = errno;
        fclose(f);
        errno = e;
    }
    if (!buf) {
        if (errno == ENOMEM)
            return vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", path);
        return vs_err_set(eb, VS_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    }
    enum vs_err rc = load(buf, len, path, set, raw, raw_ctx, warn, warn_ctx, eb);
    free(buf);
    return rc;
}

void vs_objset_cleanup(struct vs_objset *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n_nodes; i++)
        vs_knode_cleanup(&set->nodes[i]);
    for (size_t i = 0; i < set->n_pods; i++)
        vs_pod_cleanup(&set->pods[i]);
    for (size_t i = 0; i < set->n_quotas; i++)
        vs_kquota_cleanup(&set->quotas[i]);
    free(set->nodes);
    free(set->pods);
    free(set->quotas);
    for (size_t i = 0; i < set->n_slices; i++)
        vs_dra_slice_cleanup(&set->slices[i]);
    for (size_t i = 0; i < set->n_claims; i++)
        vs_dra_claim_cleanup(&set->claims[i]);
    free(set->slices);
    free(set->claims);
    memset(set, 0, sizeof(*set));
}
