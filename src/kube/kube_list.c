/* kube_list: paginated LIST (spec/k8s-protocols.md §5): follows `continue` tokens to the last
 * page and hands every item to the caller; with a needle, pages are scanned as bytes and only
 * items whose text holds the needle are decoded (the page is taken whole or decoded whole). */
#include "json_prune.h"
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json_text.h"
#include "kube.h"
#include "kube_http.h"
#include "kube_internal.h"

/* ---- LIST pages read without decoding every item (vs_kube_list_matching) ----
 * A page is {"kind":..,"apiVersion":..,"metadata":{..},"items":[{..},..]}. With a needle, the
 * page is scanned (strings and brackets only) for its members and its items' extents; only
 * items whose text contains the needle are decoded, and `metadata` is decoded on its own.
 * Anything the scan does not expect makes the caller decode the whole page instead. */

struct page_scan {
    const char *p, *end;
};

static void ps_ws(struct page_scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool ps_eat(struct page_scan *s, char c)
{
    ps_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* Skips one JSON value (any type) at s->p (vs_json_skip); jansson validates what is decoded. */
static bool ps_skip_value(struct page_scan *s)
{
    ps_ws(s);
    const char *e = vs_json_skip(s->p, s->end, SIZE_MAX);
    if (!e)
        return false;
    s->p = e;
    return true;
}

/* See kube_internal.h. Items are handed over only once the whole page has been scanned and
 * every matching item decoded, so a page is taken whole or not at all. */
int vs_kube_list_page_kept(const char *data, size_t len, const char *needle,
                           const struct vs_json_keep *keep, int (*on_item)(void *ctx, json_t *item),
                           int (*on_other)(void *ctx, const char *text, size_t len), void *ctx,
                           json_t **meta_out, const char *who, enum vs_err *rc,
                           struct vs_errbuf *eb)
{
    struct page_scan s = {data, data + len};
    size_t nlen = strlen(needle), n = 0, cap = 0, n_other = 0, cap_other = 0;
    struct span {
        const char *b;
        size_t len;
        json_t *item;
    } *spans = NULL, *others = NULL;
    int result = 0;
    bool saw_items = false;
    *meta_out = NULL;
    if (!ps_eat(&s, '{') || ps_eat(&s, '}'))
        goto out;
    do {
        ps_ws(&s);
        const char *k = s.p;
        if (!ps_skip_value(&s) || *k != '"')
            goto out;
        size_t kl = (size_t)(s.p - k);
        if (!ps_eat(&s, ':'))
            goto out;
        ps_ws(&s);
        bool is_items = kl == 7 && memcmp(k, "\"items\"", 7) == 0;
        bool is_meta = kl == 10 && memcmp(k, "\"metadata\"", 10) == 0;
        if ((is_items && saw_items) || (is_meta && *meta_out))
            goto out; /* a repeated member: the decoder keeps the last one, leave it to it */
        if (is_items && s.p < s.end && *s.p == '[') {
            saw_items = true;
            s.p++;
            if (ps_eat(&s, ']'))
                continue;
            do {
                ps_ws(&s);
                const char *b = s.p;
                if (s.p >= s.end || *s.p != '{' || !ps_skip_value(&s))
                    goto out;
                if (!memmem(b, (size_t)(s.p - b), needle, nlen)) {
                    if (!on_other)
                        continue;
                    if (n_other == cap_other) {
                        size_t nc = cap_other ? cap_other * 2 : 256;
                        struct span *g = realloc(others, nc * sizeof(*g));
                        if (!g) {
                            *rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
                            result = -1;
                            goto out;
                        }
                        others = g;
                        cap_other = nc;
                    }
                    others[n_other++] = (struct span){b, (size_t)(s.p - b), NULL};
                    continue;
                }
                if (n == cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    struct span *g = realloc(spans, nc * sizeof(*g));
                    if (!g) {
                        *rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
                        result = -1;
                        goto out;
                    }
                    spans = g;
                    cap = nc;
                }
                spans[n++] = (struct span){b, (size_t)(s.p - b), NULL};
            } while (ps_eat(&s, ','));
            if (!ps_eat(&s, ']'))
                goto out;
        } else if (is_meta && s.p < s.end && *s.p == '{') {
            const char *b = s.p;
            if (!ps_skip_value(&s) || !(*meta_out = json_loadb(b, (size_t)(s.p - b), 0, NULL)))
                goto out;
        } else if (!ps_skip_value(&s)) {
            goto out;
        }
    } while (ps_eat(&s, ','));
    if (!ps_eat(&s, '}'))
        goto out;
    ps_ws(&s);
    if (s.p != s.end || !saw_items) /* no items member: let the decoder judge the page */
        goto out;
    for (size_t i = 0; i < n; i++) {
        json_error_t je;
        /* A cut-down tree when the handler says what it reads; whole when that is refused
         * (the decoder's error, or an item of a shape the pruned reader leaves to jansson). */
        if (keep)
            spans[i].item = vs_json_load_pruned(spans[i].b, spans[i].len, keep);
        if (!spans[i].item && !(spans[i].item = json_loadb(spans[i].b, spans[i].len, 0, &je))) {
            *rc = vs_err_set(eb, VS_ERR_PARSE, "%s: invalid JSON in an item: %s", who, je.text);
            result = -1;
            goto out;
        }
    }
    result = 1;
    for (size_t i = 0; i < n; i++) {
        if (on_item && on_item(ctx, spans[i].item) != 0) {
            *rc = vs_err_set(eb, VS_ERR_INVAL, "%s: stopped by the item handler", who);
            result = -1;
            break;
        }
    }
    for (size_t i = 0; result == 1 && i < n_other; i++) {
        if (on_other(ctx, others[i].b, others[i].len) != 0) {
            *rc = vs_err_set(eb, VS_ERR_INVAL, "%s: stopped by the item handler", who);
            result = -1;
        }
    }
out:
    free(others);
    for (size_t i = 0; i < n; i++)
        json_decref(spans[i].item);
    free(spans);
    if (result != 1) {
        json_decref(*meta_out);
        *meta_out = NULL;
    }
    return result;
}

int vs_kube_list_page_matching(const char *data, size_t len, const char *needle,
                               int (*on_item)(void *ctx, json_t *item),
                               int (*on_other)(void *ctx, const char *text, size_t len), void *ctx,
                               json_t **meta_out, const char *who, enum vs_err *rc,
                               struct vs_errbuf *eb)
{
    return vs_kube_list_page_kept(data, len, needle, NULL, on_item, on_other, ctx, meta_out, who,
                                  rc, eb);
}

enum vs_err vs_kube_list(struct vs_kube *k, const char *path, const char *label_selector, int limit,
                         int (*on_item)(void *ctx, json_t *item), void *ctx, char **rv_out,
                         struct vs_errbuf *eb)
{
    return vs_kube_list_matching(k, path, label_selector, limit, NULL, on_item, NULL, ctx, rv_out,
                                 eb);
}

enum vs_err vs_kube_list_matching(struct vs_kube *k, const char *path, const char *label_selector,
                                  int limit, const char *needle,
                                  int (*on_item)(void *ctx, json_t *item),
                                  int (*on_other)(void *ctx, const char *text, size_t len),
                                  void *ctx, char **rv_out, struct vs_errbuf *eb)
{
    return vs_kube_list_kept(k, path, label_selector, limit, needle, NULL, on_item, on_other, ctx,
                             rv_out, eb);
}

enum vs_err vs_kube_list_kept(struct vs_kube *k, const char *path, const char *label_selector,
                              int limit, const char *needle, const struct vs_json_keep *keep,
                              int (*on_item)(void *ctx, json_t *item),
                              int (*on_other)(void *ctx, const char *text, size_t len), void *ctx,
                              char **rv_out, struct vs_errbuf *eb)
{
    char who[320];
    char *cont = NULL, *rv = NULL;
    json_t *page = NULL;
    enum vs_err rc = VS_OK;

    if (rv_out)
        *rv_out = NULL;
    snprintf(who, sizeof(who), "LIST %s", path);
    if (!path || path[0] != '/')
        return vs_err_set(eb, VS_ERR_INVAL, "%s: path must start with /", who);
    do {
        struct vs_buf u;
        vs_buf_init(&u);
        vs_buf_printf(&u, "%s%s", k->server, path);
        if (limit > 0)
            vs_buf_printf(&u, "%climit=%d", strchr(path, '?') ? '&' : '?', limit);
        if (label_selector && *label_selector)
            vs_kube_url_param(&u, "labelSelector", label_selector);
        if (cont)
            vs_kube_url_param(&u, "continue", cont);
        char *url = vs_buf_steal(&u);
        if (!url) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
            break;
        }
        struct vs_kube_raw raw = {0};
        rc = vs_kube_perform(k, VS_VERB_LIST, "GET", who, url, NULL, NULL, needle ? NULL : &page,
                             needle ? &raw : NULL, eb);
        free(url);
        if (rc != VS_OK)
            break;
        json_t *items, *meta;
        bool items_done = false;
        if (needle) {
            int r = raw.data ? vs_kube_list_page_kept(raw.data, raw.len, needle, keep, on_item,
                                                      on_other, ctx, &page, who, &rc, eb)
                             : 0;
            if (r < 0) {
                free(raw.data);
                break;
            }
            if (r > 0) {
                items_done = true; /* `page` holds the decoded metadata only */
                meta = page;
                items = NULL;
            } else {
                json_error_t je;
                page = raw.len ? json_loadb(raw.data, raw.len, 0, &je) : NULL;
                if (raw.len && !page) {
                    rc = vs_err_set(eb, VS_ERR_PARSE,
                                    "%s: invalid JSON in the response at byte %d: %s", who,
                                    je.position, je.text);
                    free(raw.data);
                    break;
                }
            }
            free(raw.data);
        }
        if (!items_done) {
            items = json_object_get(page, "items");
            meta = json_object_get(page, "metadata");
            if (!json_is_object(page) || !(json_is_array(items) || json_is_null(items) || !items)) {
                rc = vs_err_set(eb, VS_ERR_PARSE, "%s: the response is not a list", who);
                break;
            }
        }
        const char *prv = json_string_value(json_object_get(meta, "resourceVersion"));
        if (!rv && prv && !(rv = strdup(prv))) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
            break;
        }
        size_t i;
        json_t *item;
        json_array_foreach(items, i, item)
        {
            if (on_item && on_item(ctx, item) != 0) {
                rc = vs_err_set(eb, VS_ERR_INVAL, "%s: stopped by the item handler", who);
                break;
            }
        }
        if (rc != VS_OK)
            break;
        const char *c = json_string_value(json_object_get(meta, "continue"));
        free(cont);
        cont = NULL;
        if (c && *c && !(cont = strdup(c))) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
            break;
        }
        json_decref(page);
        page = NULL;
    } while (cont);

    json_decref(page);
    free(cont);
    if (rc == VS_OK && rv_out)
        *rv_out = rv;
    else
        free(rv);
    return rc;
}
