/* dash_json: a small JSON writer (commas by depth, integers formatted by hand: a snapshot holds
 * hundreds of thousands of them) and the dashboard documents built with it. */
#include "dash_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vs_jw_init(struct vs_jw *w, struct vs_buf *b)
{
    memset(w, 0, sizeof(*w));
    w->b = b;
}

static void sep(struct vs_jw *w)
{
    if (w->comma[w->depth])
        vs_buf_append(w->b, ",", 1);
    w->comma[w->depth] = true;
}

static void open_(struct vs_jw *w, char c)
{
    sep(w);
    vs_buf_append(w->b, &c, 1);
    if (w->depth < 63)
        w->depth++;
    w->comma[w->depth] = false;
}

static void close_(struct vs_jw *w, char c)
{
    vs_buf_append(w->b, &c, 1);
    if (w->depth > 0)
        w->depth--;
}

void vs_jw_obj(struct vs_jw *w)
{
    open_(w, '{');
}

void vs_jw_end_obj(struct vs_jw *w)
{
    close_(w, '}');
}

void vs_jw_arr(struct vs_jw *w)
{
    open_(w, '[');
}

void vs_jw_end_arr(struct vs_jw *w)
{
    close_(w, ']');
}

/* The number of bytes of the valid UTF-8 sequence at s (n bytes available), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void vs_dash_json_string(struct vs_buf *b, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    vs_buf_append(b, "\"", 1);
    size_t run = 0; /* start of the bytes not yet written */
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        const char *esc = NULL;
        char u[8];
        size_t adv = 1;
        if (c >= 0x80) {
            adv = utf8_len(s + i, n - i);
            if (adv == 0) {
                esc = "\\ufffd";
                adv = 1;
            } else if (adv == 3 && c == 0xe2 && s[i + 1] == 0x80 &&
                       (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
                esc = s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
            }
        } else if (c == '"') {
            esc = "\\\"";
        } else if (c == '\\') {
            esc = "\\\\";
        } else if (c == '\n') {
            esc = "\\n";
        } else if (c == '\t') {
            esc = "\\t";
        } else if (c == '\r') {
            esc = "\\r";
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
            u[0] = '\\';
            u[1] = 'u';
            u[2] = '0';
            u[3] = '0';
            u[4] = hex[c >> 4];
            u[5] = hex[c & 15];
            u[6] = '\0';
            esc = u;
        }
        if (esc) {
            if (i > run)
                vs_buf_append(b, str + run, i - run);
            vs_buf_puts(b, esc);
            run = i + adv;
        }
        i += adv;
    }
    if (n > run)
        vs_buf_append(b, str + run, n - run);
    vs_buf_append(b, "\"", 1);
}

void vs_jw_key(struct vs_jw *w, const char *k)
{
    sep(w);
    vs_buf_append(w->b, "\"", 1);
    vs_buf_puts(w->b, k);
    vs_buf_append(w->b, "\":", 2);
    w->comma[w->depth] = false;
}

void vs_jw_str(struct vs_jw *w, const char *s)
{
    sep(w);
    if (s)
        vs_dash_json_string(w->b, s);
    else
        vs_buf_append(w->b, "null", 4);
}

void vs_jw_int(struct vs_jw *w, int64_t v)
{
    sep(w);
    char buf[24], *p = buf + sizeof(buf);
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    vs_buf_append(w->b, p, (size_t)(buf + sizeof(buf) - p));
}

void vs_jw_num(struct vs_jw *w, double v)
{
    if (!isfinite(v)) {
        vs_jw_null(w);
        return;
    }
    sep(w);
    char buf[40];
    /* six significant digits are plenty for a picture; integers stay integers */
    int n = snprintf(buf, sizeof(buf), "%.6g", v);
    vs_buf_append(w->b, buf, (size_t)n);
}

void vs_jw_bool(struct vs_jw *w, bool v)
{
    sep(w);
    vs_buf_puts(w->b, v ? "true" : "false");
}

void vs_jw_null(struct vs_jw *w)
{
    sep(w);
    vs_buf_append(w->b, "null", 4);
}

static void kstr(struct vs_jw *w, const char *k, const char *v)
{
    vs_jw_key(w, k);
    vs_jw_str(w, v);
}

static void kint(struct vs_jw *w, const char *k, int64_t v)
{
    vs_jw_key(w, k);
    vs_jw_int(w, v);
}

static void knum(struct vs_jw *w, const char *k, double v)
{
    vs_jw_key(w, k);
    vs_jw_num(w, v);
}

static void kbool(struct vs_jw *w, const char *k, bool v)
{
    vs_jw_key(w, k);
    vs_jw_bool(w, v);
}

static void knull(struct vs_jw *w, const char *k)
{
    vs_jw_key(w, k);
    vs_jw_null(w);
}

static char *finish(struct vs_buf *b)
{
    return vs_buf_steal(b);
}

static void units(struct vs_jw *w)
{
    vs_jw_key(w, "units");
    vs_jw_obj(w);
    kstr(w, "MiB", "mebibytes of GPU memory");
    kstr(w, "Pct", "percent of one card's compute (100 = a whole card)");
    kstr(w, "slots", "containers sharing a card");
    kstr(w, "At", "Unix time in seconds");
    vs_jw_end_obj(w);
}

static void meta_fields(struct vs_jw *w, const struct vs_dash_meta *m, const struct vs_dash_snap *s)
{
    kstr(w, "apiVersion", "v1");
    kstr(w, "version", m->version);
    kint(w, "generatedAt", s->taken_at);
    units(w);
    vs_jw_key(w, "service");
    vs_jw_obj(w);
    kstr(w, "version", VS_VERSION);
    kstr(w, "nodePolicy", m->node_policy);
    kstr(w, "gpuPolicy", m->gpu_policy);
    kbool(w, "leader", m->leader);
    kbool(w, "synced", m->synced);
    vs_jw_end_obj(w);
}

static void card_json(struct vs_jw *w, const struct vs_dash_snap *s, const struct vs_dash_card *c,
                      bool shares)
{
    vs_jw_obj(w);
    kstr(w, "uuid", c->uuid);
    kint(w, "index", c->index);
    kstr(w, "vendor", c->vendor);
    kstr(w, "type", c->type);
    kstr(w, "mode", c->mode);
    kint(w, "numa", c->numa);
    kbool(w, "health", c->health);
    kbool(w, "cordoned", c->cordoned);
    kbool(w, "migUnhealthy", c->mig_unhealthy);
    kint(w, "memTotalMiB", c->devmem);
    kint(w, "memUsedMiB", c->usedmem);
    kint(w, "coresTotalPct", c->devcore);
    kint(w, "coresUsedPct", c->usedcores);
    kint(w, "slotsTotal", c->count);
    kint(w, "slotsUsed", c->used);
    if (shares) {
        vs_jw_key(w, "pods");
        vs_jw_arr(w);
        for (uint32_t k = 0; k < c->n_shares; k++) {
            const struct vs_dash_share *sh = &s->shares[c->first_share + k];
            const struct vs_dash_pod *p = &s->pods[sh->pod];
            vs_jw_obj(w);
            kstr(w, "namespace", p->ns);
            kstr(w, "name", p->name);
            kstr(w, "uid", p->uid);
            kstr(w, "state", vs_dash_state_name(p->state));
            kint(w, "memMiB", sh->mem);
            kint(w, "coresPct", sh->cores);
            kint(w, "slots", sh->slots);
            vs_jw_end_obj(w);
        }
        vs_jw_end_arr(w);
    }
    vs_jw_end_obj(w);
}

static void node_json(struct vs_jw *w, const struct vs_dash_snap *s, size_t i, bool shares)
{
    const struct vs_dash_node *n = &s->nodes[i];
    vs_jw_obj(w);
    kstr(w, "name", n->name);
    kbool(w, "registered", n->registered);
    kbool(w, "schedulable", !n->unschedulable);
    kstr(w, "error", n->error);
    kint(w, "pods", n->n_pods);
    kint(w, "cardCount", n->n_cards);
    kint(w, "cardsUsed", n->cards_used);
    kint(w, "cardsUnusable", n->cards_unusable);
    kint(w, "memTotalMiB", n->mem_total);
    kint(w, "memUsedMiB", n->mem_used);
    kint(w, "coresTotalPct", n->cores_total);
    kint(w, "coresUsedPct", n->cores_used);
    kint(w, "slotsTotal", n->slots_total);
    kint(w, "slotsUsed", n->slots_used);
    if (n->n_copied == n->n_cards) {
        vs_jw_key(w, "cards");
        vs_jw_arr(w);
        for (uint32_t k = 0; k < n->n_cards; k++)
            card_json(w, s, &s->cards[n->first_card + k], shares);
        vs_jw_end_arr(w);
    }
    vs_jw_end_obj(w);
}

static void totals_json(struct vs_jw *w, const struct vs_dash_snap *s, const struct vs_dash_meta *m)
{
    struct vs_dash_totals t;
    vs_dash_totals(s, &t);
    vs_jw_key(w, "summary");
    vs_jw_obj(w);
    kint(w, "nodes", (int64_t)t.nodes);
    kint(w, "gpuNodes", (int64_t)t.gpu_nodes);
    kint(w, "cards", (int64_t)t.cards);
    kint(w, "cardsUsed", (int64_t)t.cards_used);
    kint(w, "cardsIdle", (int64_t)t.cards_idle);
    kint(w, "cardsUnusable", (int64_t)t.unusable_cards);
    kint(w, "memTotalMiB", t.mem_total);
    kint(w, "memUsedMiB", t.mem_used);
    kint(w, "coresTotalPct", t.cores_total);
    kint(w, "coresUsedPct", t.cores_used);
    kint(w, "slotsTotal", t.slots_total);
    kint(w, "slotsUsed", t.slots_used);
    kint(w, "pods", (int64_t)s->tracked_pods);
    kint(w, "pending", (int64_t)m->pending);
    vs_jw_end_obj(w);
}

char *vs_dash_json_snapshot(const struct vs_dash_snap *s, const struct vs_dash_meta *meta)
{
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    meta_fields(&w, meta, s);
    kstr(&w, "detail", s->detail ? "pods" : "nodes");
    totals_json(&w, s, meta);
    vs_jw_key(&w, "namespaces");
    vs_jw_arr(&w);
    for (size_t i = 0; i < s->n_nss; i++) {
        const struct vs_dash_ns *q = &s->nss[i];
        vs_jw_obj(&w);
        kstr(&w, "name", q->ns);
        vs_jw_key(&w, "pods");
        if (q->pods < 0)
            vs_jw_null(&w);
        else
            vs_jw_int(&w, q->pods);
        kint(&w, "memUsedMiB", q->mem_used);
        kint(&w, "coresUsedPct", q->cores_used);
        vs_jw_key(&w, "memLimitMiB");
        if (q->has_mem)
            vs_jw_int(&w, q->mem_limit);
        else
            vs_jw_null(&w);
        vs_jw_key(&w, "coresLimitPct");
        if (q->has_cores)
            vs_jw_int(&w, q->cores_limit);
        else
            vs_jw_null(&w);
        vs_jw_end_obj(&w);
    }
    vs_jw_end_arr(&w);
    vs_jw_key(&w, "nodes");
    vs_jw_arr(&w);
    for (size_t i = 0; i < s->n_nodes; i++)
        node_json(&w, s, i, s->detail);
    vs_jw_end_arr(&w);
    vs_jw_end_obj(&w);
    return finish(&b);
}

char *vs_dash_json_node(const struct vs_dash_snap *s, const struct vs_dash_meta *meta)
{
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    meta_fields(&w, meta, s);
    vs_jw_key(&w, "node");
    node_json(&w, s, 0, true);
    vs_jw_end_obj(&w);
    return finish(&b);
}

static void slice_json(struct vs_jw *w, const struct vs_dash_snap *s, size_t i)
{
    size_t card;
    int64_t mem, cores;
    vs_jw_key(w, "largestSlice");
    if (!vs_dash_largest_slice(s, i, &card, &mem, &cores)) {
        vs_jw_null(w);
        return;
    }
    vs_jw_obj(w);
    kint(w, "card", s->cards[card].index);
    kstr(w, "uuid", s->cards[card].uuid);
    kint(w, "memMiB", mem);
    kint(w, "coresPct", cores);
    vs_jw_end_obj(w);
}

char *vs_dash_json_frag(const struct vs_dash_snap *s, struct vs_frag_ctx *x)
{
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    kint(&w, "generatedAt", s->taken_at);
    kstr(&w, "unit",
         "cards: a card's idle capacity is half its free share of cores plus half its "
         "free share of memory");
    vs_jw_key(&w, "workload");
    vs_jw_arr(&w);
    for (size_t k = 0; k < x->k; k++) {
        const struct vs_frag_req *r = &x->s[k].r;
        vs_jw_obj(&w);
        kint(&w, "cards", r->nums);
        vs_jw_key(&w, "memMiB");
        if (r->mempct < 0)
            vs_jw_int(&w, r->memmib);
        else
            vs_jw_null(&w);
        vs_jw_key(&w, "memPct");
        if (r->mempct >= 0)
            vs_jw_int(&w, r->mempct);
        else
            vs_jw_null(&w);
        kint(&w, "coresPct", r->cores);
        knum(&w, "weight", x->w[k]);
        vs_jw_end_obj(&w);
    }
    vs_jw_end_arr(&w);
    double idle_total = 0, stranded_total = 0;
    bool measured = false;
    vs_jw_key(&w, "nodes");
    vs_jw_arr(&w);
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct vs_dash_node *n = &s->nodes[i];
        if (!n->n_cards)
            continue;
        double idle = 0, stranded = 0;
        bool ok = vs_dash_frag_node(s, x, i, &idle, &stranded);
        size_t free_cards = 0;
        for (uint32_t k = 0; k < n->n_copied; k++) {
            const struct vs_dash_card *c = &s->cards[n->first_card + k];
            free_cards += vs_dash_card_usable(c) && c->used == 0;
        }
        vs_jw_obj(&w);
        kstr(&w, "name", n->name);
        kint(&w, "cards", n->n_cards);
        kint(&w, "freeCards", (int64_t)free_cards);
        slice_json(&w, s, i);
        vs_jw_key(&w, "idleCards");
        if (ok)
            vs_jw_num(&w, idle);
        else
            vs_jw_null(&w);
        vs_jw_key(&w, "strandedCards");
        if (ok)
            vs_jw_num(&w, stranded);
        else
            vs_jw_null(&w);
        vs_jw_end_obj(&w);
        if (ok) {
            measured = true;
            idle_total += idle;
            stranded_total += stranded;
        }
    }
    vs_jw_end_arr(&w);
    vs_jw_key(&w, "total");
    vs_jw_obj(&w);
    if (measured) {
        knum(&w, "idleCards", idle_total);
        knum(&w, "strandedCards", stranded_total);
    } else {
        knull(&w, "idleCards");
        knull(&w, "strandedCards");
    }
    vs_jw_end_obj(&w);
    vs_jw_end_obj(&w);
    return finish(&b);
}

static void req_json(struct vs_jw *w, const struct vs_pending_entry *e)
{
    vs_jw_key(w, "containers");
    vs_jw_arr(w);
    for (size_t i = 0; i < e->n_ctrs; i++) {
        const struct vs_pending_ctr *c = &e->ctrs[i];
        vs_jw_obj(w);
        kstr(w, "name", c->name);
        kbool(w, "init", c->init);
        kint(w, "cards", c->req.nums);
        vs_jw_key(w, "memMiB");
        if (c->req.nums > 0 && c->req.memreq > 0)
            vs_jw_int(w, c->req.memreq);
        else
            vs_jw_null(w);
        vs_jw_key(w, "memPct");
        if (c->req.nums > 0 && c->req.memreq == 0 && c->req.pct != VS_PCT_UNSET)
            vs_jw_int(w, c->req.pct);
        else
            vs_jw_null(w);
        vs_jw_key(w, "coresPct");
        if (c->req.nums > 0)
            vs_jw_int(w, c->req.cores);
        else
            vs_jw_null(w);
        vs_jw_end_obj(w);
    }
    vs_jw_end_arr(w);
}

void vs_dash_json_pending_entry(struct vs_jw *w, const struct vs_pending_entry *e,
                                const struct vs_dash_snap *s, bool detail)
{
    vs_jw_obj(w);
    kstr(w, "namespace", e->ns);
    kstr(w, "name", e->name);
    kstr(w, "uid", e->uid);
    kint(w, "firstRefusedAt", e->first_at);
    kint(w, "lastRefusedAt", e->last_at);
    kint(w, "attempts", (int64_t)e->attempts);
    kstr(w, "error", e->error);
    kstr(w, "useGpuType", *e->use_type ? e->use_type : NULL);
    kstr(w, "nouseGpuType", *e->nouse_type ? e->nouse_type : NULL);
    req_json(w, e);
    kint(w, "nodesRefused", (int64_t)e->n_nodes);
    vs_jw_key(w, "reasons");
    vs_jw_arr(w);
    for (size_t i = 0; i < e->n_words; i++) {
        vs_jw_obj(w);
        kstr(w, "reason", e->words[i].word);
        kint(w, "nodes", (int64_t)e->words[i].nodes);
        vs_jw_end_obj(w);
    }
    vs_jw_end_arr(w);
    struct vs_dash_miss miss;
    bool found = s && vs_dash_nearest_miss(s, e, &miss);
    /* none: worked out, no usable card of an accepted type comes near (or a pod-level error) */
    kstr(w, "nearestMissStatus", found ? "found" : s || e->error ? "none" : "notComputed");
    vs_jw_key(w, "nearestMiss");
    if (found) {
        const struct vs_dash_card *c = &s->cards[miss.card];
        vs_jw_obj(w);
        kstr(w, "node", s->nodes[miss.node].name);
        kint(w, "card", c->index);
        kstr(w, "uuid", c->uuid);
        kint(w, "lacksMemMiB", miss.mem);
        kint(w, "lacksCoresPct", miss.cores);
        kbool(w, "lacksSlot", miss.slot);
        kstr(w, "text", miss.text);
        vs_jw_end_obj(w);
    } else {
        vs_jw_null(w);
    }
    vs_jw_key(w, "preemption");
    if (e->preempt_node) {
        vs_jw_obj(w);
        kstr(w, "node", e->preempt_node);
        vs_jw_key(w, "victims");
        vs_jw_arr(w);
        const char *v = e->preempt_victims ? e->preempt_victims : "";
        while (*v) {
            const char *end = strstr(v, ", ");
            size_t len = end ? (size_t)(end - v) : strlen(v);
            char *one = strndup(v, len);
            vs_jw_str(w, one ? one : "");
            free(one);
            v += len + (end ? 2 : 0);
        }
        vs_jw_end_arr(w);
        vs_jw_end_obj(w);
    } else {
        vs_jw_null(w);
    }
    if (detail) {
        vs_jw_key(w, "nodes");
        vs_jw_arr(w);
        for (size_t i = 0; i < e->n_detail; i++) {
            vs_jw_obj(w);
            kstr(w, "node", e->detail[i].node);
            kstr(w, "reason", e->detail[i].reason);
            vs_jw_end_obj(w);
        }
        vs_jw_end_arr(w);
        kint(w, "nodesNotKept", (int64_t)(e->n_nodes - e->n_detail));
    }
    vs_jw_end_obj(w);
}

char *vs_dash_json_pending(const struct vs_pending_entry *v, size_t n, const struct vs_dash_snap *s,
                           size_t miss_max, uint64_t version, uint64_t dropped, int64_t now)
{
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    char ver[32];
    snprintf(ver, sizeof(ver), "%llu", (unsigned long long)version);
    kstr(&w, "version", ver);
    kint(&w, "generatedAt", now);
    kint(&w, "dropped", (int64_t)dropped);
    vs_jw_key(&w, "pods");
    vs_jw_arr(&w);
    for (size_t i = 0; i < n; i++)
        vs_dash_json_pending_entry(&w, &v[i], i < miss_max ? s : NULL, false);
    vs_jw_end_arr(&w);
    vs_jw_end_obj(&w);
    return finish(&b);
}

char *vs_dash_json_pending_one(const struct vs_pending_entry *e, const struct vs_dash_snap *s,
                               int64_t now)
{
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    kint(&w, "generatedAt", now);
    vs_jw_key(&w, "pod");
    vs_dash_json_pending_entry(&w, e, s, true);
    vs_jw_end_obj(&w);
    return finish(&b);
}

char *vs_dash_json_search(const char *q, const struct vs_dash_snap *s, bool more,
                          const struct vs_pending_entry *pend, size_t n_pend)
{
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    kstr(&w, "query", q);
    kbool(&w, "truncated", more);
    vs_jw_key(&w, "pods");
    vs_jw_arr(&w);
    for (size_t i = 0; s && i < s->n_pods; i++) {
        const struct vs_dash_pod *p = &s->pods[i];
        vs_jw_obj(&w);
        kstr(&w, "namespace", p->ns);
        kstr(&w, "name", p->name);
        kstr(&w, "uid", p->uid);
        kstr(&w, "node", *p->node_name ? p->node_name : NULL);
        kstr(&w, "state", vs_dash_state_name(p->state));
        vs_jw_end_obj(&w);
    }
    for (size_t i = 0; i < n_pend; i++) {
        vs_jw_obj(&w);
        kstr(&w, "namespace", pend[i].ns);
        kstr(&w, "name", pend[i].name);
        kstr(&w, "uid", pend[i].uid);
        knull(&w, "node");
        kstr(&w, "state", "pending");
        vs_jw_end_obj(&w);
    }
    vs_jw_end_arr(&w);
    vs_jw_end_obj(&w);
    return finish(&b);
}
