/* kube_http: the kube-apiserver client's requests (spec/k8s-protocols.md §5): the client
 * handle, a pool of curl easy handles (libcurl with OpenSSL, PEM material handed over in
 * memory), bearer tokens, one request with its 401 and Retry-After retries, and the mapping of
 * HTTP and Kubernetes Status errors. Invariants: every request first takes a token from the
 * shared limiter; a bearer token read from a file is never older than 60 s and is re-read once
 * after a 401; tokens and keys never reach a message; every response body has a hard cap. */
#include "kube_http.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "kube.h"
#include "kube_internal.h"

#define RESPONSE_MAX      (256u << 20) /* one non-watch response body */
#define TOKEN_MAX_AGE     60.0         /* seconds before a token file is re-read */
#define CONNECT_TIMEOUT_S 10L
#define RETRY_AFTER_MAX_S 10L /* longest Retry-After we honour */
#define RETRY_AFTER_TRIES 3

/* ------------------------------------------------------------------------------------------ */
/* small helpers                                                                              */

double vs_kube_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool vs_kube_stopped(volatile int *stop)
{
    return stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE) != 0;
}

/* Sleeps `s` seconds in steps of at most 50 ms, returning early once *stop is set. */
void vs_kube_sleep(double s, volatile int *stop)
{
    double end = vs_kube_now() + s;
    for (;;) {
        if (vs_kube_stopped(stop))
            return;
        double left = end - vs_kube_now();
        if (left <= 0)
            return;
        if (left > 0.05)
            left = 0.05;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* status mapping                                                                             */

enum vs_err vs_kube_status_err(long code)
{
    switch (code) {
    case 401:
    case 403:
        return VS_ERR_AUTH;
    case 404:
        return VS_ERR_NOTFOUND;
    case 409:
        return VS_ERR_CONFLICT;
    case 410:
        return VS_ERR_GONE;
    default:
        return VS_ERR_KUBE;
    }
}

const char *vs_kube_reason_phrase(long code)
{
    switch (code) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Payload Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    }
    return "";
}

/* The Status.message of an error body, if it has one. Borrowed from `st`. */
const char *vs_kube_status_message(const json_t *st)
{
    const char *m = json_string_value(json_object_get(st, "message"));
    return m && *m ? m : NULL;
}

/* Formats "<who>: <code> <message|reason phrase>" from an error response. */
enum vs_err vs_kube_status_error(const char *who, long code, const char *phrase, const char *body,
                                 size_t len, struct vs_errbuf *eb)
{
    json_t *st = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *msg = vs_kube_status_message(st);
    if (!msg)
        msg = phrase && *phrase ? phrase : vs_kube_reason_phrase(code);
    enum vs_err rc =
        vs_err_set(eb, vs_kube_status_err(code), "%s: %ld%s%s", who, code, *msg ? " " : "", msg);
    json_decref(st);
    return rc;
}

enum vs_err vs_kube_curl_error(const char *who, CURLcode cc, const char *errbuf,
                               struct vs_errbuf *eb)
{
    enum vs_err rc;
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        rc = VS_ERR_TIMEOUT;
        break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
        rc = VS_ERR_TLS;
        break;
    case CURLE_OUT_OF_MEMORY:
        rc = VS_ERR_NOMEM;
        break;
    default:
        rc = VS_ERR_KUBE;
    }
    return vs_err_set(eb, rc, "%s: %s", who, errbuf && *errbuf ? errbuf : curl_easy_strerror(cc));
}

/* ------------------------------------------------------------------------------------------ */
/* client                                                                                     */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = true;
    return d;
}

struct vs_kube *vs_kube_new(const struct vs_kube_config *cfg, const struct vs_kube_opts *o,
                            struct vs_errbuf *eb)
{
    bool oom = false;
    struct vs_kube *k;

    pthread_once(&curl_once, curl_init_once);
    if (!cfg || !cfg->server ||
        (strncmp(cfg->server, "https://", 8) != 0 && strncmp(cfg->server, "http://", 7) != 0)) {
        vs_err_set(eb, VS_ERR_INVAL, "kube: server \"%.200s\" is not an http(s) URL",
                   cfg && cfg->server ? cfg->server : "");
        return NULL;
    }
    if (!(k = calloc(1, sizeof(*k)))) {
        vs_err_set(eb, VS_ERR_NOMEM, "kube: out of memory");
        return NULL;
    }
    pthread_mutex_init(&k->tok_mu, NULL);
    pthread_mutex_init(&k->pool_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->pool_cv, &ca);
    pthread_condattr_destroy(&ca);
    k->pool_wait_ms = POOL_WAIT_MS;
    vs_kube_limiter_init(&k->lim, o ? o->qps : 0, o ? o->burst : 1);
    k->timeout_s = o && o->timeout_s > 0 ? o->timeout_s : 0;
    k->server = dup_or_null(cfg->server, &oom);
    k->ca_file = dup_or_null(cfg->ca_file, &oom);
    k->ca_pem = dup_or_null(cfg->ca_data, &oom);
    k->cert_file = dup_or_null(cfg->cert_file, &oom);
    k->cert_pem = dup_or_null(cfg->cert_data, &oom);
    k->key_file = dup_or_null(cfg->key_file, &oom);
    k->key_pem = dup_or_null(cfg->key_data, &oom);
    k->insecure = cfg->insecure;
    k->user_agent =
        dup_or_null(o && o->user_agent ? o->user_agent : "vgpu-sched/" VS_VERSION, &oom);
    if (cfg->token)
        k->token = dup_or_null(cfg->token, &oom);
    else
        k->token_file = dup_or_null(cfg->token_file, &oom);
    if (oom) {
        vs_err_set(eb, VS_ERR_NOMEM, "kube: out of memory");
        goto fail;
    }
    for (size_t n = strlen(k->server); n > 0 && k->server[n - 1] == '/'; n--)
        k->server[n - 1] = '\0';
    if (k->token_file) {
        if (vs_kube_read_token_file(k->token_file, &k->token, eb) != VS_OK)
            goto fail;
        k->token_read = vs_kube_now();
    }
    return k;
fail:
    vs_kube_free(k);
    return NULL;
}

void vs_kube_free(struct vs_kube *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->n_pool; i++)
        curl_easy_cleanup(k->pool[i]);
    free(k->server);
    free(k->ca_file);
    free(k->ca_pem);
    free(k->cert_file);
    free(k->cert_pem);
    free(k->key_file);
    vs_kube_free_secret(k->key_pem);
    free(k->user_agent);
    vs_kube_free_secret(k->token);
    free(k->token_file);
    vs_kube_limiter_cleanup(&k->lim);
    pthread_mutex_destroy(&k->tok_mu);
    pthread_mutex_destroy(&k->pool_mu);
    pthread_cond_destroy(&k->pool_cv);
    free(k);
}

void vs_kube_stats(const struct vs_kube *k, struct vs_kube_stats *out)
{
    out->requests = __atomic_load_n(&k->requests, __ATOMIC_RELAXED);
    out->connections = __atomic_load_n(&k->connections, __ATOMIC_RELAXED);
    out->pool_waits = __atomic_load_n(&k->pool_waits, __ATOMIC_RELAXED);
    for (int i = 0; i < 6; i++)
        out->errors_by_verb[i] = __atomic_load_n(&k->errors[i], __ATOMIC_RELAXED);
}

void vs_kube_count_request(struct vs_kube *k, CURL *h)
{
    long made = 0;
    __atomic_add_fetch(&k->requests, 1, __ATOMIC_RELAXED);
    if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &made) == CURLE_OK && made > 0)
        __atomic_add_fetch(&k->connections, (uint64_t)made, __ATOMIC_RELAXED);
}

void vs_kube_count_error(struct vs_kube *k, enum vs_kube_verb v)
{
    if (v < VS_VERB_OTHER)
        __atomic_add_fetch(&k->errors[v], 1, __ATOMIC_RELAXED);
}

/* Returns a copy of the current token (NULL when there is none), re-reading the token file
 * when it is older than TOKEN_MAX_AGE or `force`. *changed tells whether a forced re-read
 * produced a different token. A failed re-read keeps the cached token (the kubelet may be in
 * the middle of swapping the file) and is retried on the next call. */
enum vs_err vs_kube_token(struct vs_kube *k, bool force, char **out, bool *changed,
                          struct vs_errbuf *eb)
{
    enum vs_err rc = VS_OK;
    *out = NULL;
    if (changed)
        *changed = false;
    pthread_mutex_lock(&k->tok_mu);
    double now = vs_kube_now();
    if (k->token_file && (force || !k->token || now - k->token_read >= TOKEN_MAX_AGE)) {
        char *fresh = NULL;
        struct vs_errbuf reb;
        rc = vs_kube_read_token_file(k->token_file, &fresh, &reb);
        if (rc == VS_OK) {
            if (changed)
                *changed = !k->token || strcmp(k->token, fresh) != 0;
            vs_kube_free_secret(k->token);
            k->token = fresh;
            k->token_read = now;
        } else if (!k->token) {
            if (eb)
                *eb = reb;
            pthread_mutex_unlock(&k->tok_mu);
            return rc;
        }
        rc = VS_OK;
    }
    if (k->token && !(*out = strdup(k->token)))
        rc = vs_err_set(eb, VS_ERR_NOMEM, "kube: out of memory");
    pthread_mutex_unlock(&k->tok_mu);
    return rc;
}

CURL *vs_kube_handle_get(struct vs_kube *k)
{
    CURL *h = NULL;
    pthread_mutex_lock(&k->pool_mu);
    if (k->n_pool == 0 && k->n_owned == POOL_MAX && k->pool_wait_ms > 0) {
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        long long ns = (long long)dl.tv_nsec + (long long)k->pool_wait_ms * 1000000LL;
        dl.tv_sec += (time_t)(ns / 1000000000LL);
        dl.tv_nsec = (long)(ns % 1000000000LL);
        __atomic_add_fetch(&k->pool_waits, 1, __ATOMIC_RELAXED);
        while (k->n_pool == 0 && pthread_cond_timedwait(&k->pool_cv, &k->pool_mu, &dl) == 0)
            ;
    }
    if (k->n_pool > 0) {
        h = k->pool[--k->n_pool];
    } else if ((h = curl_easy_init()) && k->n_owned < POOL_MAX) {
        k->owned[k->n_owned++] = h; /* one of the first POOL_MAX: pooled for good */
    }
    pthread_mutex_unlock(&k->pool_mu);
    return h;
}

void vs_kube_handle_put(struct vs_kube *k, CURL *h)
{
    if (!h)
        return;
    curl_easy_reset(h); /* drops every pointer into our buffers, keeps the connections */
    pthread_mutex_lock(&k->pool_mu);
    for (int i = 0; i < k->n_owned; i++) {
        if (k->owned[i] == h) {
            k->pool[k->n_pool++] = h;
            h = NULL;
            pthread_cond_signal(&k->pool_cv);
            break;
        }
    }
    pthread_mutex_unlock(&k->pool_mu);
    if (h)
        curl_easy_cleanup(h); /* made while every owned handle was out: this request's only */
}

void vs_kube_free_headers(struct curl_slist *l)
{
    for (struct curl_slist *p = l; p; p = p->next)
        explicit_bzero(p->data, strlen(p->data)); /* one of them is the bearer token */
    curl_slist_free_all(l);
}

bool vs_kube_body_append(struct vs_kube_body *b, const char *p, size_t n)
{
    if (n > b->max || b->len > b->max - n) {
        b->too_big = true;
        return false;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *g = realloc(b->data, cap);
        if (!g)
            return false;
        b->data = g;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
    return vs_kube_body_append(ud, p, sz * nm) ? sz * nm : 0;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
    struct vs_kube_head *h = ud;
    size_t n = sz * nm;
    if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        /* A new response (after 100-continue or a retry): forget the previous one. */
        h->phrase[0] = '\0';
        h->retry_after = -1;
        const char *sp = memchr(p, ' ', n);
        if (sp) {
            const char *end = p + n;
            const char *q = sp + 1;
            while (q < end && *q >= '0' && *q <= '9')
                q++;
            while (q < end && *q == ' ')
                q++;
            size_t len = (size_t)(end - q);
            while (len > 0 && (q[len - 1] == '\r' || q[len - 1] == '\n'))
                len--;
            if (len >= sizeof(h->phrase))
                len = sizeof(h->phrase) - 1;
            memcpy(h->phrase, q, len);
            h->phrase[len] = '\0';
        }
    } else if (n > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        long v = 0;
        size_t i = 12;
        while (i < n && p[i] == ' ')
            i++;
        if (i < n && p[i] >= '0' && p[i] <= '9') {
            while (i < n && p[i] >= '0' && p[i] <= '9' && v < 1000000)
                v = v * 10 + (p[i++] - '0');
            h->retry_after = v;
        }
    }
    return n;
}

/* libcurl sets SSL_MODE_RELEASE_BUFFERS: each connection's TLS read buffer (about 17 KiB) is
 * freed when a record has been read and allocated again for the next, on every watch event.
 * Allocations that size make glibc consolidate its small free chunks each time (a tenth of an
 * informer thread's CPU in a burst's profile); the few connections keep theirs instead. */
static CURLcode keep_tls_buffers(CURL *h, void *ssl_ctx, void *arg)
{
    (void)h;
    (void)arg;
    SSL_CTX_clear_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    return CURLE_OK;
}

/* Options every request shares: URL, TLS material, identity, headers. *hdrs is set to the
 * header list the caller frees with vs_kube_free_headers() after the transfer. */
enum vs_err vs_kube_setup_handle(struct vs_kube *k, CURL *h, const char *url, const char *token,
                                 const char *content_type, struct curl_slist **hdrs, char *errbuf,
                                 struct vs_kube_head *head, struct vs_errbuf *eb)
{
    struct curl_slist *l = NULL, *t;
    char *auth = NULL;
    bool ok = true;

    errbuf[0] = '\0';
    ok &= curl_easy_setopt(h, CURLOPT_URL, url) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf) == CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075500
    ok &= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
#else
    ok &= curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) ==
          CURLE_OK;
#endif
    ok &= curl_easy_setopt(h, CURLOPT_USERAGENT, k->user_agent) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HEADERDATA, head) == CURLE_OK;
    if (k->ca_pem) {
        struct curl_blob b = {k->ca_pem, strlen(k->ca_pem), CURL_BLOB_COPY};
        ok &= curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_CAPATH, NULL) == CURLE_OK; /* only the cluster CA */
    } else if (k->ca_file) {
        ok &= curl_easy_setopt(h, CURLOPT_CAINFO, k->ca_file) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_CAPATH, NULL) == CURLE_OK;
    }
    if (k->cert_pem) {
        struct curl_blob b = {k->cert_pem, strlen(k->cert_pem), CURL_BLOB_COPY};
        ok &= curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM") == CURLE_OK;
    } else if (k->cert_file) {
        ok &= curl_easy_setopt(h, CURLOPT_SSLCERT, k->cert_file) == CURLE_OK;
    }
    if (k->key_pem) {
        struct curl_blob b = {k->key_pem, strlen(k->key_pem), CURL_BLOB_COPY};
        ok &= curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM") == CURLE_OK;
    } else if (k->key_file) {
        ok &= curl_easy_setopt(h, CURLOPT_SSLKEY, k->key_file) == CURLE_OK;
    }
    /* Not with every TLS backend (CURLE_NOT_BUILT_IN): then the buffers are released as before. */
    curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, keep_tls_buffers);
    if (k->insecure) {
        ok &= curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK;
    }
    if (!ok)
        return vs_err_set(eb, VS_ERR_TLS, "kube: libcurl rejected an option (needs 7.77+)");

    /* "Expect:" stops curl from waiting for 100-continue on large bodies. */
    const char *fixed[] = {"Accept: application/json", "Expect:"};
    for (size_t i = 0; i < 2; i++) {
        if (!(t = curl_slist_append(l, fixed[i])))
            goto nomem;
        l = t;
    }
    if (content_type) {
        char ct[128];
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        if (!(t = curl_slist_append(l, ct)))
            goto nomem;
        l = t;
    }
    if (token) {
        if (asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
            auth = NULL;
            goto nomem;
        }
        t = curl_slist_append(l, auth);
        vs_kube_free_secret(auth);
        if (!t)
            goto nomem;
        l = t;
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
    *hdrs = l;
    return VS_OK;
nomem:
    vs_kube_free_headers(l);
    return vs_err_set(eb, VS_ERR_NOMEM, "kube: out of memory");
}

/* Appends "?" or "&" then key=escaped(value) to a URL being built. */
void vs_kube_url_param(struct vs_buf *u, const char *key, const char *value)
{
    char *esc = vs_kube_escape(value);
    if (!esc) {
        u->oom = true;
        return;
    }
    vs_buf_printf(u, "%c%s=%s", strchr(u->data ? u->data : "", '?') ? '&' : '?', key, esc);
    free(esc);
}

void vs_kube_throttle(struct vs_kube *k, volatile int *stop)
{
    double wait = vs_kube_limiter_reserve(&k->lim, vs_kube_now());
    if (wait > 0)
        vs_kube_sleep(wait, stop);
}

enum vs_err vs_kube_perform(struct vs_kube *k, enum vs_kube_verb verb, const char *method,
                            const char *who, const char *url, const char *content_type,
                            const char *body, json_t **out, struct vs_kube_raw *raw,
                            struct vs_errbuf *eb)
{
    bool auth_retried = false;
    int throttled = 0;
    enum vs_err rc;

    if (out)
        *out = NULL;
    for (;;) {
        char errbuf[CURL_ERROR_SIZE];
        struct curl_slist *hdrs = NULL;
        struct vs_kube_body resp = {.max = RESPONSE_MAX};
        struct vs_kube_head head = {.retry_after = -1};
        char *token = NULL;
        long status = 0;
        CURLcode cc;
        CURL *h = NULL;

        if ((rc = vs_kube_token(k, false, &token, NULL, eb)) != VS_OK) {
            vs_err_prefix(eb, rc, "%s", who);
            goto done;
        }
        vs_kube_throttle(k, NULL);
        if (!(h = vs_kube_handle_get(k))) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: cannot create a curl handle", who);
            goto done;
        }
        rc = vs_kube_setup_handle(k, h, url, token, body ? content_type : NULL, &hdrs, errbuf,
                                  &head, eb);
        vs_kube_free_secret(token);
        if (rc != VS_OK) {
            vs_err_prefix(eb, rc, "%s", who);
            goto done;
        }
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)k->timeout_s);
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
            if (strcmp(method, "POST") != 0)
                curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        } else if (strcmp(method, "GET") == 0) {
            curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        } else {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        }

        cc = curl_easy_perform(h);
        vs_kube_count_request(k, h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        vs_kube_free_headers(hdrs);
        vs_kube_handle_put(k, h);

        if (cc != CURLE_OK) {
            if (resp.too_big)
                rc = vs_err_set(eb, VS_ERR_KUBE, "%s: response larger than %u MiB", who,
                                RESPONSE_MAX >> 20);
            else
                rc = vs_kube_curl_error(who, cc, errbuf, eb);
        } else if (status == 401 && k->token_file && !auth_retried) {
            bool changed = false;
            char *t = NULL;
            if (vs_kube_token(k, true, &t, &changed, NULL) == VS_OK && changed) {
                vs_kube_free_secret(t);
                free(resp.data);
                auth_retried = true;
                continue;
            }
            vs_kube_free_secret(t);
            rc = vs_kube_status_error(who, status, head.phrase, resp.data, resp.len, eb);
        } else if (status == 429 && head.retry_after >= 0 && throttled < RETRY_AFTER_TRIES) {
            throttled++;
            free(resp.data);
            vs_kube_sleep((double)(head.retry_after < RETRY_AFTER_MAX_S ? head.retry_after
                                                                        : RETRY_AFTER_MAX_S),
                          NULL);
            continue;
        } else if (status < 200 || status > 299) {
            rc = vs_kube_status_error(who, status, head.phrase, resp.data, resp.len, eb);
        } else if (raw) {
            raw->data = resp.data;
            raw->len = resp.len;
            resp.data = NULL;
        } else if (out && resp.len > 0) {
            json_error_t je;
            if (!(*out = json_loadb(resp.data, resp.len, 0, &je)))
                rc = vs_err_set(eb, VS_ERR_PARSE, "%s: invalid JSON in the response at byte %d: %s",
                                who, je.position, je.text);
        }
        free(resp.data);
    done:
        if (rc != VS_OK)
            vs_kube_count_error(k, verb);
        return rc;
    }
}

static enum vs_kube_verb verb_of(const char *method)
{
    if (strcmp(method, "GET") == 0)
        return VS_VERB_GET;
    if (strcmp(method, "PATCH") == 0)
        return VS_VERB_PATCH;
    if (strcmp(method, "POST") == 0)
        return VS_VERB_POST;
    if (strcmp(method, "PUT") == 0)
        return VS_VERB_PUT;
    return VS_VERB_OTHER;
}

static char *make_url(struct vs_kube *k, const char *path)
{
    char *u;
    return asprintf(&u, "%s%s", k->server, path) < 0 ? NULL : u;
}

enum vs_err vs_kube_request(struct vs_kube *k, const char *method, const char *path,
                            const char *content_type, const json_t *body, json_t **out,
                            struct vs_errbuf *eb)
{
    char who[320];
    char *url = NULL, *text = NULL;
    enum vs_err rc;

    if (out)
        *out = NULL;
    snprintf(who, sizeof(who), "%s %s", method, path);
    if (!path || path[0] != '/')
        return vs_err_set(eb, VS_ERR_INVAL, "%s: path must start with /", who);
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: cannot serialize the body", who);
        goto out;
    }
    if (!(url = make_url(k, path))) {
        rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
        goto out;
    }
    rc = vs_kube_perform(k, verb_of(method), method, who, url,
                         content_type ? content_type : "application/json", text, out, NULL, eb);
out:
    free(url);
    free(text);
    return rc;
}

enum vs_err vs_kube_get(struct vs_kube *k, const char *path, json_t **out, struct vs_errbuf *eb)
{
    return vs_kube_request(k, "GET", path, NULL, NULL, out, eb);
}

enum vs_err vs_kube_merge_patch(struct vs_kube *k, const char *path, const json_t *patch,
                                json_t **out, struct vs_errbuf *eb)
{
    return vs_kube_request(k, "PATCH", path, "application/merge-patch+json", patch, out, eb);
}

enum vs_err vs_kube_json_patch(struct vs_kube *k, const char *path, const json_t *ops, json_t **out,
                               struct vs_errbuf *eb)
{
    return vs_kube_request(k, "PATCH", path, "application/json-patch+json", ops, out, eb);
}

enum vs_err vs_kube_post(struct vs_kube *k, const char *path, const json_t *body, json_t **out,
                         struct vs_errbuf *eb)
{
    return vs_kube_request(k, "POST", path, "application/json", body, out, eb);
}

enum vs_err vs_kube_put(struct vs_kube *k, const char *path, const json_t *body, json_t **out,
                        struct vs_errbuf *eb)
{
    return vs_kube_request(k, "PUT", path, "application/json", body, out, eb);
}

/* ------------------------------------------------------------------------------------------ */

char *vs_kube_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1), *p = out;
    if (!out)
        return NULL;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '.' || *c == '_' || *c == '~') {
            *p++ = (char)*c;
        } else {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    }
    *p = '\0';
    return out;
}
