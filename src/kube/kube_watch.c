/* kube_watch: WATCH streams (spec/k8s-protocols.md §5): the incremental decoder of
 * newline-delimited events (split anywhere, one event capped at VS_WATCH_MAX_EVENT) and one
 * watch request run on a multi handle so a stop flag ends even an idle stream. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "kube.h"
#include "kube_http.h"
#include "kube_internal.h"

#define ERROR_BODY_MAX (1u << 20) /* body of a failed watch request */
#define WATCH_GRACE_S  30         /* client-side cap beyond the server's timeoutSeconds */
#define STOP_POLL_MS   100        /* how often a watch looks at *stop */

/* ------------------------------------------------------------------------------------------ */
/* watch stream decoder                                                                       */

void vs_watch_decoder_init(struct vs_watch_decoder *d,
                           int (*on_event)(void *ctx, const char *type, json_t *obj), void *ctx,
                           size_t max_event)
{
    memset(d, 0, sizeof(*d));
    d->on_event = on_event;
    d->ctx = ctx;
    d->max_event = max_event ? max_event : VS_WATCH_MAX_EVENT;
}

/* Whether keep names metadata.resourceVersion, which the decoder tracks (note_rv). */
static bool keeps_rv(const struct vs_json_keep *keep)
{
    for (const struct vs_json_keep *e = keep; e && e->key; e++) {
        if (strcmp(e->key, "metadata") != 0)
            continue;
        if (!e->members)
            return true; /* kept whole */
        for (const struct vs_json_keep *m = e->members; m->key; m++)
            if (strcmp(m->key, "resourceVersion") == 0)
                return true;
    }
    return false;
}

void vs_watch_decoder_keep(struct vs_watch_decoder *d, const struct vs_json_keep *keep)
{
    memset(d->ev_keep, 0, sizeof(d->ev_keep));
    if (keeps_rv(keep)) {
        d->ev_keep[0] = (struct vs_json_keep){.key = "type"};
        d->ev_keep[1] = (struct vs_json_keep){.key = "object", .members = keep};
    }
}

void vs_watch_decoder_cleanup(struct vs_watch_decoder *d)
{
    free(d->buf);
    free(d->rv);
    memset(d, 0, sizeof(*d));
}

static enum vs_err note_rv(struct vs_watch_decoder *d, const json_t *obj, struct vs_errbuf *eb)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (!rv || !*rv || (d->rv && strcmp(d->rv, rv) == 0))
        return VS_OK;
    char *copy = strdup(rv);
    if (!copy)
        return vs_err_set(eb, VS_ERR_NOMEM, "watch: out of memory");
    free(d->rv);
    d->rv = copy;
    return VS_OK;
}

static enum vs_err decode_line(struct vs_watch_decoder *d, const char *line, size_t n,
                               struct vs_errbuf *eb)
{
    json_error_t je;
    enum vs_err rc = VS_OK;

    while (n > 0 && (*line == ' ' || *line == '\t' || *line == '\r')) {
        line++;
        n--;
    }
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
        n--;
    if (n == 0)
        return VS_OK;
    /* Cut down when the handler says what it reads; whole when the pruned reader refuses the
     * text (for jansson's error) and for an ERROR event (its Status is read here). */
    json_t *ev = d->ev_keep[0].key ? vs_json_load_pruned(line, n, d->ev_keep) : NULL;
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (ev && type && strcmp(type, "ERROR") == 0) {
        json_decref(ev);
        ev = NULL;
    }
    if (!ev && !(ev = json_loadb(line, n, 0, &je)))
        return vs_err_set(eb, VS_ERR_PARSE, "invalid watch event at byte %d: %s", je.position,
                          je.text);
    type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        rc = vs_err_set(eb, VS_ERR_PARSE, "watch event without a type and an object");
        goto out;
    }
    if (strcmp(type, "ERROR") == 0) {
        json_t *code = json_object_get(obj, "code");
        const char *msg = vs_kube_status_message(obj);
        json_int_t c = json_is_integer(code) ? json_integer_value(code) : 0;
        if (c < 100 || c > 599)
            rc = vs_err_set(eb, VS_ERR_KUBE, "ERROR event: %s", msg ? msg : "no message");
        else
            rc = vs_err_set(eb, vs_kube_status_err((long)c), "%d %s", (int)c,
                            msg ? msg : vs_kube_reason_phrase((long)c));
        goto out;
    }
    bool bookmark = strcmp(type, "BOOKMARK") == 0;
    if (!bookmark && strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0 &&
        strcmp(type, "DELETED") != 0) {
        rc = vs_err_set(eb, VS_ERR_PARSE, "unknown watch event type \"%.32s\"", type);
        goto out;
    }
    if ((rc = note_rv(d, obj, eb)) != VS_OK)
        goto out;
    d->events++;
    if (!bookmark && d->on_event && d->on_event(d->ctx, type, obj) != 0)
        rc = vs_err_set(eb, VS_ERR_INVAL, "stopped by the event handler");
out:
    json_decref(ev);
    return rc;
}

static enum vs_err buffer_append(struct vs_watch_decoder *d, const char *p, size_t n,
                                 struct vs_errbuf *eb)
{
    if (n > d->max_event || d->len > d->max_event - n)
        return vs_err_set(eb, VS_ERR_PARSE, "watch event larger than %zu bytes", d->max_event);
    if (d->len + n > d->cap) {
        size_t cap = d->cap ? d->cap : 4096;
        while (cap < d->len + n)
            cap *= 2;
        if (cap > d->max_event)
            cap = d->max_event;
        char *g = realloc(d->buf, cap);
        if (!g)
            return vs_err_set(eb, VS_ERR_NOMEM, "watch: out of memory");
        d->buf = g;
        d->cap = cap;
    }
    memcpy(d->buf + d->len, p, n);
    d->len += n;
    return VS_OK;
}

enum vs_err vs_watch_decoder_feed(struct vs_watch_decoder *d, const char *data, size_t len,
                                  struct vs_errbuf *eb)
{
    enum vs_err rc;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        if (!nl)
            return buffer_append(d, data, len, eb);
        size_t seg = (size_t)(nl - data);
        if (d->len == 0) {
            if (seg > d->max_event)
                return vs_err_set(eb, VS_ERR_PARSE, "watch event larger than %zu bytes",
                                  d->max_event);
            rc = decode_line(d, data, seg, eb);
        } else if ((rc = buffer_append(d, data, seg, eb)) == VS_OK) {
            rc = decode_line(d, d->buf, d->len, eb);
            d->len = 0;
        }
        if (rc != VS_OK)
            return rc;
        data = nl + 1;
        len -= seg + 1;
    }
    return VS_OK;
}

enum vs_err vs_watch_decoder_finish(struct vs_watch_decoder *d, struct vs_errbuf *eb)
{
    if (d->len == 0)
        return VS_OK;
    size_t n = d->len;
    d->len = 0;
    enum vs_err rc = decode_line(d, d->buf, n, eb);
    if (rc == VS_ERR_PARSE)
        vs_err_prefix(eb, rc, "watch stream ended inside an event");
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* WATCH                                                                                      */

struct watch_io {
    CURL *h;
    struct vs_watch_decoder dec;
    enum vs_err dec_rc;
    struct vs_errbuf dec_eb;
    int mode; /* 0 = status not looked at yet, 1 = event stream, 2 = error body */
    struct vs_kube_body err;
};

static size_t on_watch_data(char *p, size_t sz, size_t nm, void *ud)
{
    struct watch_io *w = ud;
    size_t n = sz * nm;
    if (w->mode == 0) {
        long status = 0;
        curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &status);
        w->mode = status >= 200 && status <= 299 ? 1 : 2;
    }
    if (w->mode == 2) {
        if (!vs_kube_body_append(&w->err, p, n)) /* keep what fits; the Status is at the start */
            w->err.too_big = false;
        return n;
    }
    w->dec_rc = vs_watch_decoder_feed(&w->dec, p, n, &w->dec_eb);
    return w->dec_rc == VS_OK ? n : 0;
}

/* Runs the transfer on a multi handle so *stop is looked at every STOP_POLL_MS even when the
 * stream is idle: the caller's *keep (made here on first use) or, when keep is NULL, one for
 * this transfer only, which closes the connection with it. Returns the transfer's result;
 * *was_stopped when *stop ended it. */
static CURLcode run_stoppable(CURL *h, CURLM **keep, volatile int *stop, bool *was_stopped)
{
    CURLM *m = keep ? *keep : NULL;
    CURLcode cc = CURLE_OK;
    int running = 1;

    *was_stopped = false;
    if (!m && !(m = curl_multi_init()))
        return CURLE_OUT_OF_MEMORY;
    if (keep)
        *keep = m;
    if (curl_multi_add_handle(m, h) != CURLM_OK) {
        if (!keep)
            curl_multi_cleanup(m);
        return CURLE_FAILED_INIT;
    }
    for (;;) {
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            cc = CURLE_RECV_ERROR;
            break;
        }
        if (!running) {
            int left;
            CURLMsg *msg;
            while ((msg = curl_multi_info_read(m, &left)))
                if (msg->msg == CURLMSG_DONE && msg->easy_handle == h)
                    cc = msg->data.result;
            break;
        }
        if (vs_kube_stopped(stop)) {
            *was_stopped = true;
            break;
        }
        if (curl_multi_poll(m, NULL, 0, STOP_POLL_MS, NULL) != CURLM_OK) {
            cc = CURLE_RECV_ERROR;
            break;
        }
    }
    curl_multi_remove_handle(m, h); /* a stream cut short closes its connection */
    if (!keep)
        curl_multi_cleanup(m);
    return cc;
}

enum vs_err vs_kube_watch_counted(struct vs_kube *k, const char *path, const char *label_selector,
                                  char **rv_io, int timeout_s,
                                  int (*on_event)(void *ctx, const char *type, json_t *obj),
                                  void *ctx, const struct vs_json_keep *keep, volatile int *stop,
                                  CURLM **multi, uint64_t *events_out, struct vs_errbuf *eb)
{
    char who[320];
    bool auth_retried = false;
    enum vs_err rc = VS_OK;
    char *url = NULL;

    if (events_out)
        *events_out = 0;
    snprintf(who, sizeof(who), "WATCH %s", path);
    if (!path || path[0] != '/')
        return vs_err_set(eb, VS_ERR_INVAL, "%s: path must start with /", who);
    {
        struct vs_buf u;
        vs_buf_init(&u);
        vs_buf_printf(&u, "%s%s%cwatch=1&allowWatchBookmarks=true", k->server, path,
                      strchr(path, '?') ? '&' : '?');
        if (rv_io && *rv_io && **rv_io)
            vs_kube_url_param(&u, "resourceVersion", *rv_io);
        if (timeout_s > 0)
            vs_buf_printf(&u, "&timeoutSeconds=%d", timeout_s);
        if (label_selector && *label_selector)
            vs_kube_url_param(&u, "labelSelector", label_selector);
        if (!(url = vs_buf_steal(&u)))
            return vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
    }

    for (;;) {
        char errbuf[CURL_ERROR_SIZE];
        struct curl_slist *hdrs = NULL;
        struct vs_kube_head head = {.retry_after = -1};
        struct watch_io w = {.err = {.max = ERROR_BODY_MAX}};
        char *token = NULL;
        bool was_stopped = false;
        long status = 0;
        CURLcode cc;

        if ((rc = vs_kube_token(k, false, &token, NULL, eb)) != VS_OK) {
            vs_err_prefix(eb, rc, "%s", who);
            break;
        }
        vs_kube_throttle(k, stop);
        if (vs_kube_stopped(stop)) {
            vs_kube_free_secret(token);
            break;
        }
        if (!(w.h = vs_kube_handle_get(k))) {
            vs_kube_free_secret(token);
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: cannot create a curl handle", who);
            break;
        }
        rc = vs_kube_setup_handle(k, w.h, url, token, NULL, &hdrs, errbuf, &head, eb);
        vs_kube_free_secret(token);
        if (rc != VS_OK) {
            vs_kube_handle_put(k, w.h);
            vs_err_prefix(eb, rc, "%s", who);
            break;
        }
        vs_watch_decoder_init(&w.dec, on_event, ctx, 0);
        vs_watch_decoder_keep(&w.dec, keep);
        if (rv_io && *rv_io && **rv_io)
            w.dec.rv = strdup(*rv_io);
        curl_easy_setopt(w.h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(w.h, CURLOPT_WRITEFUNCTION, on_watch_data);
        curl_easy_setopt(w.h, CURLOPT_WRITEDATA, &w);
        if (timeout_s > 0)
            curl_easy_setopt(w.h, CURLOPT_TIMEOUT, (long)(timeout_s + WATCH_GRACE_S));

        cc = run_stoppable(w.h, multi, stop, &was_stopped);
        vs_kube_count_request(k, w.h);
        curl_easy_getinfo(w.h, CURLINFO_RESPONSE_CODE, &status);
        vs_kube_free_headers(hdrs);
        vs_kube_handle_put(k, w.h);
        bool clean =
            !was_stopped && w.dec_rc == VS_OK && cc == CURLE_OK && status >= 200 && status <= 299;
        if (clean)
            w.dec_rc = vs_watch_decoder_finish(&w.dec, &w.dec_eb);
        if (events_out)
            *events_out += w.dec.events;
        if (rv_io && w.dec.rv && (!*rv_io || strcmp(*rv_io, w.dec.rv) != 0)) {
            free(*rv_io);
            *rv_io = w.dec.rv;
            w.dec.rv = NULL;
        }

        bool retry = false;
        if (was_stopped) {
            rc = VS_OK;
        } else if (w.dec_rc != VS_OK) {
            rc = w.dec_rc;
            if (eb)
                *eb = w.dec_eb;
            vs_err_prefix(eb, rc, "%s", who);
        } else if (cc != CURLE_OK) {
            rc = vs_kube_curl_error(who, cc, errbuf, eb);
        } else if (status == 401 && k->token_file && !auth_retried) {
            bool changed = false;
            char *t = NULL;
            if (vs_kube_token(k, true, &t, &changed, NULL) == VS_OK && changed) {
                auth_retried = true;
                retry = true;
            } else {
                rc = vs_kube_status_error(who, status, head.phrase, w.err.data, w.err.len, eb);
            }
            vs_kube_free_secret(t);
        } else if (!clean) {
            rc = vs_kube_status_error(who, status, head.phrase, w.err.data, w.err.len, eb);
        }
        vs_watch_decoder_cleanup(&w.dec);
        free(w.err.data);
        if (!retry)
            break;
    }
    if (rc != VS_OK)
        vs_kube_count_error(k, VS_VERB_WATCH);
    free(url);
    return rc;
}

enum vs_err vs_kube_watch(struct vs_kube *k, const char *path, const char *label_selector,
                          char **rv_io, int timeout_s,
                          int (*on_event)(void *ctx, const char *type, json_t *obj), void *ctx,
                          volatile int *stop, struct vs_errbuf *eb)
{
    return vs_kube_watch_counted(k, path, label_selector, rv_io, timeout_s, on_event, ctx, NULL,
                                 stop, NULL, NULL, eb);
}
