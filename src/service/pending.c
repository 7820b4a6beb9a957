/* pending: the refused pods by UID (uthash) under one mutex; entries are built outside it and
 * swapped in, so the mutex is held only for the table operations and copies. */
#include "pending.h"

#include "annot.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

struct item {
    struct vs_pending_entry e;
    UT_hash_handle hh;
};

struct vs_pending {
    struct vs_pending_opts o;
    pthread_mutex_t mu; /* guards items, version, dropped */
    struct item *items;
    uint64_t version;
    uint64_t dropped;
};

struct vs_pending *vs_pending_new(const struct vs_pending_opts *o)
{
    struct vs_pending *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->o = *o;
    if (!p->o.max_pods)
        p->o.max_pods = 2000;
    if (!p->o.max_detail)
        p->o.max_detail = 256;
    if (!p->o.stale_s)
        p->o.stale_s = 3600;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void vs_pending_entry_cleanup(struct vs_pending_entry *e)
{
    if (!e)
        return;
    free(e->uid);
    free(e->ns);
    free(e->name);
    free(e->error);
    for (size_t i = 0; i < e->n_ctrs; i++)
        free(e->ctrs[i].name);
    free(e->ctrs);
    free(e->use_type);
    free(e->nouse_type);
    for (size_t i = 0; i < e->n_words; i++)
        free(e->words[i].word);
    free(e->words);
    for (size_t i = 0; i < e->n_detail; i++) {
        free(e->detail[i].node);
        free(e->detail[i].reason);
    }
    free(e->detail);
    free(e->preempt_node);
    free(e->preempt_victims);
    memset(e, 0, sizeof(*e));
}

void vs_pending_list_free(struct vs_pending_entry *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        vs_pending_entry_cleanup(&v[i]);
    free(v);
}

void vs_pending_free(struct vs_pending *p)
{
    if (!p)
        return;
    struct item *it, *t;
    HASH_ITER(hh, p->items, it, t)
    {
        HASH_DEL(p->items, it);
        vs_pending_entry_cleanup(&it->e);
        free(it);
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static enum vs_err add_word(struct vs_pending_word **words, size_t *n, const char *w, size_t len)
{
    for (size_t i = 0; i < *n; i++) {
        if (strlen((*words)[i].word) == len && memcmp((*words)[i].word, w, len) == 0) {
            (*words)[i].nodes++;
            return VS_OK;
        }
    }
    struct vs_pending_word *g = realloc(*words, (*n + 1) * sizeof(*g));
    if (!g)
        return VS_ERR_NOMEM;
    *words = g;
    char *d = strndup(w, len);
    if (!d)
        return VS_ERR_NOMEM;
    g[*n] = (struct vs_pending_word){d, 1};
    (*n)++;
    return VS_OK;
}

/* "12/34 " at the start of a part: its length, 0 when there is none. */
static size_t fraction_len(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == 0 || i >= len || s[i] != '/')
        return 0;
    size_t j = i + 1;
    while (j < len && s[j] >= '0' && s[j] <= '9')
        j++;
    return j > i + 1 && j < len && s[j] == ' ' ? j + 1 : 0;
}

enum vs_err vs_pending_count_reason(struct vs_pending_word **words, size_t *n, const char *reason)
{
    if (!reason || !*reason)
        return add_word(words, n, "unknown", 7);
    if (!fraction_len(reason, strlen(reason))) {
        /* a node-level string: one word, its text up to ':' */
        const char *colon = strchr(reason, ':');
        return add_word(words, n, reason, colon ? (size_t)(colon - reason) : strlen(reason));
    }
    for (const char *s = reason;;) {
        const char *comma = strstr(s, ", ");
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        size_t f = fraction_len(s, len);
        if (len > f && add_word(words, n, s + f, len - f))
            return VS_ERR_NOMEM;
        if (!comma)
            return VS_OK;
        s = comma + 2;
    }
}

static int word_cmp(const void *a, const void *b)
{
    const struct vs_pending_word *x = a, *y = b;
    if (x->nodes != y->nodes)
        return x->nodes > y->nodes ? -1 : 1;
    return strcmp(x->word, y->word);
}

static enum vs_err ctrs_of(const struct vs_pending *p, const struct vs_pod *pod,
                           struct vs_pending_entry *e)
{
    struct vs_pod_req r;
    struct vs_errbuf eb;
    size_t n = pod->n_init + pod->n_ctrs;
    if (!n)
        return VS_OK;
    if (!(e->ctrs = calloc(n, sizeof(*e->ctrs))))
        return VS_ERR_NOMEM;
    bool have = p->o.cfg && vs_request_build(pod, p->o.cfg, &r, &eb) == VS_OK;
    for (size_t i = 0; i < n; i++) {
        bool init = i < pod->n_init;
        const struct vs_container *c = init ? &pod->init[i] : &pod->ctrs[i - pod->n_init];
        struct vs_pending_ctr *d = &e->ctrs[e->n_ctrs++];
        d->init = init;
        if (!(d->name = strdup(c->name ? c->name : ""))) {
            if (have)
                vs_pod_req_cleanup(&r);
            return VS_ERR_NOMEM;
        }
        /* The container's first backend's request (the nearest miss is worded for it). */
        const struct vs_ctr_req *cr = have ? (init ? &r.init[i] : &r.ctrs[i - pod->n_init]) : NULL;
        if (cr && cr->n)
            d->req = cr->r[0];
    }
    if (have)
        vs_pod_req_cleanup(&r);
    return VS_OK;
}

/* The new entry for pod's refusal (outside the mutex). */
static enum vs_err build(const struct vs_pending *p, const struct vs_pod *pod,
                         const struct vs_filter_result *r, const char *error,
                         const char *preempt_node, const char *preempt_victims, int64_t now,
                         struct vs_pending_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->first_at = e->last_at = now;
    e->attempts = 1;
    const char *use = vs_kv_get(&pod->annotations, VS_ANNO_USE_TYPE);
    const char *nouse = vs_kv_get(&pod->annotations, VS_ANNO_NOUSE_TYPE);
    if (!(e->uid = strdup(pod->uid)) || !(e->ns = strdup(pod->ns ? pod->ns : "")) ||
        !(e->name = strdup(pod->name ? pod->name : "")) ||
        !(e->use_type = strdup(use ? use : "")) || !(e->nouse_type = strdup(nouse ? nouse : "")) ||
        (error && !(e->error = strdup(error))) ||
        (preempt_node && !(e->preempt_node = strdup(preempt_node))) ||
        (preempt_victims && !(e->preempt_victims = strdup(preempt_victims))))
        return VS_ERR_NOMEM;
    if (ctrs_of(p, pod, e))
        return VS_ERR_NOMEM;
    if (!r || error)
        return VS_OK;
    e->n_nodes = r->n;
    size_t nd = r->n < p->o.max_detail ? r->n : p->o.max_detail;
    if (nd && !(e->detail = calloc(nd, sizeof(*e->detail))))
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < r->n; i++) {
        const char *why = r->nodes[i].reason;
        if (vs_pending_count_reason(&e->words, &e->n_words, why))
            return VS_ERR_NOMEM;
        if (i < nd) {
            struct vs_pending_node *d = &e->detail[e->n_detail++];
            if (!(d->node = strdup(r->nodes[i].node)) || !(d->reason = strdup(why ? why : "")))
                return VS_ERR_NOMEM;
        }
    }
    if (e->n_words > 1)
        qsort(e->words, e->n_words, sizeof(*e->words), word_cmp);
    return VS_OK;
}

/* Drops entries no Filter refreshed for stale_s (mutex held). */
static void sweep(struct vs_pending *p, int64_t now)
{
    struct item *it, *t;
    HASH_ITER(hh, p->items, it, t)
    {
        if (now - it->e.last_at <= p->o.stale_s)
            continue;
        HASH_DEL(p->items, it);
        vs_pending_entry_cleanup(&it->e);
        free(it);
        p->version++;
    }
}

void vs_pending_refused(struct vs_pending *p, const struct vs_pod *pod,
                        const struct vs_filter_result *r, const char *error,
                        const char *preempt_node, const char *preempt_victims, int64_t now)
{
    if (!p || !pod->uid || !*pod->uid)
        return;
    struct item *n = calloc(1, sizeof(*n));
    if (!n)
        return;
    if (build(p, pod, r, error, preempt_node, preempt_victims, now, &n->e)) {
        vs_pending_entry_cleanup(&n->e);
        free(n);
        return;
    }
    pthread_mutex_lock(&p->mu);
    struct item *old;
    HASH_FIND_STR(p->items, n->e.uid, old);
    if (old) {
        n->e.first_at = old->e.first_at;
        n->e.attempts = old->e.attempts + 1;
        HASH_DEL(p->items, old);
    } else if (HASH_COUNT(p->items) >= p->o.max_pods) {
        sweep(p, now);
        if (HASH_COUNT(p->items) >= p->o.max_pods) {
            struct item *oldest = NULL, *it, *t;
            HASH_ITER(hh, p->items, it, t)
            {
                if (!oldest || it->e.last_at < oldest->e.last_at)
                    oldest = it;
            }
            HASH_DEL(p->items, oldest);
            vs_pending_entry_cleanup(&oldest->e);
            free(oldest);
            p->dropped++;
        }
    }
    HASH_ADD_KEYPTR(hh, p->items, n->e.uid, strlen(n->e.uid), n);
    p->version++;
    pthread_mutex_unlock(&p->mu);
    if (old) {
        vs_pending_entry_cleanup(&old->e);
        free(old);
    }
}

void vs_pending_forget(struct vs_pending *p, const char *uid)
{
    if (!p || !uid)
        return;
    pthread_mutex_lock(&p->mu);
    struct item *it = NULL;
    if (p->items)
        HASH_FIND_STR(p->items, uid, it);
    if (it) {
        HASH_DEL(p->items, it);
        p->version++;
    }
    pthread_mutex_unlock(&p->mu);
    if (it) {
        vs_pending_entry_cleanup(&it->e);
        free(it);
    }
}

uint64_t vs_pending_version(struct vs_pending *p)
{
    pthread_mutex_lock(&p->mu);
    uint64_t v = p->version;
    pthread_mutex_unlock(&p->mu);
    return v;
}

size_t vs_pending_count(struct vs_pending *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = HASH_COUNT(p->items);
    pthread_mutex_unlock(&p->mu);
    return n;
}

static char *dup0(const char *s)
{
    return s ? strdup(s) : NULL;
}

static enum vs_err entry_copy(const struct vs_pending_entry *s, bool detail,
                              struct vs_pending_entry *d)
{
    memset(d, 0, sizeof(*d));
    d->first_at = s->first_at;
    d->last_at = s->last_at;
    d->attempts = s->attempts;
    d->n_nodes = s->n_nodes;
    if (!(d->uid = dup0(s->uid)) || !(d->ns = dup0(s->ns)) || !(d->name = dup0(s->name)) ||
        !(d->use_type = dup0(s->use_type)) || !(d->nouse_type = dup0(s->nouse_type)) ||
        (s->error && !(d->error = dup0(s->error))) ||
        (s->preempt_node && !(d->preempt_node = dup0(s->preempt_node))) ||
        (s->preempt_victims && !(d->preempt_victims = dup0(s->preempt_victims))))
        return VS_ERR_NOMEM;
    if (s->n_ctrs && !(d->ctrs = calloc(s->n_ctrs, sizeof(*d->ctrs))))
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < s->n_ctrs; i++, d->n_ctrs++) {
        d->ctrs[i] = s->ctrs[i];
        if (!(d->ctrs[i].name = dup0(s->ctrs[i].name)))
            return VS_ERR_NOMEM;
    }
    if (s->n_words && !(d->words = calloc(s->n_words, sizeof(*d->words))))
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < s->n_words; i++, d->n_words++) {
        d->words[i].nodes = s->words[i].nodes;
        if (!(d->words[i].word = dup0(s->words[i].word)))
            return VS_ERR_NOMEM;
    }
    if (!detail || !s->n_detail)
        return VS_OK;
    if (!(d->detail = calloc(s->n_detail, sizeof(*d->detail))))
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < s->n_detail; i++, d->n_detail++) {
        if (!(d->detail[i].node = dup0(s->detail[i].node)) ||
            !(d->detail[i].reason = dup0(s->detail[i].reason)))
            return VS_ERR_NOMEM;
    }
    return VS_OK;
}

static int entry_cmp(const void *a, const void *b)
{
    const struct vs_pending_entry *x = a, *y = b;
    if (x->first_at != y->first_at)
        return x->first_at < y->first_at ? -1 : 1;
    int c = strcmp(x->ns, y->ns);
    return c ? c : strcmp(x->name, y->name);
}

enum vs_err vs_pending_list(struct vs_pending *p, int64_t now, bool with_detail,
                            struct vs_pending_entry **out, size_t *n, uint64_t *version,
                            uint64_t *dropped)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&p->mu);
    sweep(p, now);
    size_t cnt = HASH_COUNT(p->items);
    struct vs_pending_entry *v = calloc(cnt ? cnt : 1, sizeof(*v));
    enum vs_err err = v ? VS_OK : VS_ERR_NOMEM;
    size_t k = 0;
    struct item *it, *t;
    HASH_ITER(hh, p->items, it, t)
    {
        if (err)
            break;
        err = entry_copy(&it->e, with_detail, &v[k++]);
    }
    if (version)
        *version = p->version;
    if (dropped)
        *dropped = p->dropped;
    pthread_mutex_unlock(&p->mu);
    if (err) {
        vs_pending_list_free(v, k);
        return err;
    }
    qsort(v, k, sizeof(*v), entry_cmp);
    *out = v;
    *n = k;
    return VS_OK;
}

bool vs_pending_get(struct vs_pending *p, const char *ns, const char *name, int64_t now,
                    struct vs_pending_entry *out)
{
    bool found = false;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&p->mu);
    sweep(p, now);
    struct item *it, *t, *best = NULL; /* a pod made again under the same name: the newest */
    HASH_ITER(hh, p->items, it, t)
    {
        if (strcmp(it->e.ns, ns) == 0 && strcmp(it->e.name, name) == 0 &&
            (!best || it->e.last_at > best->e.last_at))
            best = it;
    }
    if (best)
        found = entry_copy(&best->e, true, out) == VS_OK;
    pthread_mutex_unlock(&p->mu);
    if (!found)
        vs_pending_entry_cleanup(out);
    return found;
}
