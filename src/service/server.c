/* server: libmicrohttpd glue. One thread accepts connections and hands each to one of the
 * pool's workers; each connection accumulates its body (capped) in a per-request context; the
 * handler runs once the body is complete. TLS material is served through a GnuTLS
 * certificate callback so a rotated certificate is picked up without a restart: the files are
 * checked at most once a second and old credentials are kept until the server stops (a
 * handshake in progress may still hold them). */
#include "server.h"

#include "log.h"
#include "tlsconf.h"

#include <pthread.h>
#include <stdatomic.h>

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY (8u << 20)
#define PREALLOC_MAX     (1u << 20) /* request bytes allocated up front from Content-Length */
/* Each connection's memory: libmicrohttpd mallocs up to 32 KiB and maps more (see
 * vs_server_start). */
#define CONN_POOL_BYTES (32u << 10)

struct creds {
    gnutls_pcert_st pcert[8];
    unsigned n;
    gnutls_privkey_t key;
    struct creds *older; /* kept alive until stop */
};

struct vs_server {
    struct MHD_Daemon *d;
    /* The listening socket is ours: one thread accepts and hands each connection to a worker
     * (MHD_add_connection), instead of every worker polling it and all of them waking for each
     * connection, one of them to win the accept. */
    int lfd;
    pthread_t acceptor;
    bool acceptor_started;
    atomic_bool stopping;
    struct vs_server_opts o;
    int port;
    bool tls;
    char *client_ca;
    struct vs_tlsconf tlsc; /* read-only after start */
    pthread_mutex_t tls_mu; /* guards cur, mtimes, last_check */
    struct creds *cur;
    struct timespec cert_mtime, key_mtime;
    time_t last_check;
    pthread_mutex_t job_mu; /* guards jobs */
    pthread_cond_t job_cv;  /* signalled when jobs drops */
    unsigned jobs;          /* own_thread handlers running */
};

struct req_ctx {
    char *body;
    size_t len, cap;
    bool too_large;
    /* own_thread routes: 1 = handler running on its thread (connection suspended), 2 = its
     * response is in resp */
    int job;
    struct vs_http_resp resp;
};

struct job {
    struct vs_server *s;
    struct MHD_Connection *c;
    const struct vs_route *route;
    struct req_ctx *rc;
    char *method, *path;
};

void vs_http_error(struct vs_http_resp *resp, int status, const char *msg)
{
    size_t n = strlen(msg) * 2 + 16;
    char *b = malloc(n);
    resp->status = status;
    resp->content_type = "application/json";
    resp->body = b;
    if (!b)
        return;
    size_t o = 0;
    o += (size_t)snprintf(b, n, "{\"error\":\"");
    for (const char *s = msg; *s && o + 4 < n; s++) {
        if (*s == '"' || *s == '\\')
            b[o++] = '\\';
        b[o++] = (unsigned char)*s < 0x20 ? ' ' : *s;
    }
    snprintf(b + o, n - o, "\"}");
}

/* ------------------------------------------------------------------ TLS credentials */

/* Reads a whole file (certificates and private keys): unbuffered, and a grown buffer's old
 * copy is wiped before it is freed, so the only copy of a key is the returned one, which the
 * caller wipes (explicit_bzero) before freeing. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    setvbuf(f, NULL, _IONBF, 0);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
        if (n + 1 == cap) {
            char *g = cap > (16u << 20) ? NULL : malloc(cap * 2);
            if (g)
                memcpy(g, buf, n);
            explicit_bzero(buf, n);
            free(buf);
            buf = g;
            if (!g)
                break;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

static void creds_free(struct creds *c)
{
    while (c) {
        struct creds *o = c->older;
        for (unsigned i = 0; i < c->n; i++)
            gnutls_pcert_deinit(&c->pcert[i]);
        if (c->key)
            gnutls_privkey_deinit(c->key);
        free(c);
        c = o;
    }
}

static enum vs_err creds_load(const char *cert_file, const char *key_file, struct creds **out,
                              struct vs_errbuf *eb)
{
    size_t cl, kl;
    char *cert = read_file(cert_file, &cl), *key = read_file(key_file, &kl);
    struct creds *c = calloc(1, sizeof(*c));
    enum vs_err err = VS_OK;
    if (!cert || !key || !c) {
        err = vs_err_set(eb, VS_ERR_IO, "cannot read %s: %s", !cert ? cert_file : key_file,
                         strerror(errno));
        goto out;
    }
    gnutls_datum_t cd = {(unsigned char *)cert, (unsigned)cl};
    gnutls_datum_t kd = {(unsigned char *)key, (unsigned)kl};
    c->n = 8;
    int rc = gnutls_pcert_list_import_x509_raw(c->pcert, &c->n, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0) {
        c->n = 0;
        err = vs_err_set(eb, VS_ERR_TLS, "%s: %s", cert_file, gnutls_strerror(rc));
        goto out;
    }
    if ((rc = gnutls_privkey_init(&c->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(c->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        err = vs_err_set(eb, VS_ERR_TLS, "%s: %s", key_file, gnutls_strerror(rc));
        goto out;
    }
    *out = c;
    c = NULL;
out:
    creds_free(c);
    free(cert);
    if (key) /* the private key's PEM: no copy left in freed memory */
        explicit_bzero(key, kl);
    free(key);
    return err;
}

static bool mtime_of(const char *path, struct timespec *ts)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return false;
    *ts = st.st_mtim;
    return true;
}

static void maybe_reload(struct vs_server *s)
{
    time_t now = time(NULL);
    if (now == s->last_check)
        return;
    s->last_check = now;
    struct timespec cm, km;
    if (!mtime_of(s->o.cert_file, &cm) || !mtime_of(s->o.key_file, &km))
        return;
    if (cm.tv_sec == s->cert_mtime.tv_sec && cm.tv_nsec == s->cert_mtime.tv_nsec &&
        km.tv_sec == s->key_mtime.tv_sec && km.tv_nsec == s->key_mtime.tv_nsec)
        return;
    struct creds *c;
    struct vs_errbuf eb;
    if (creds_load(s->o.cert_file, s->o.key_file, &c, &eb)) {
        /* A half-written pair during rotation: keep serving the old one, retry later. */
        vs_log(VS_LOG_WARN, "tls_reload_failed", "error=%s", eb.msg);
        return;
    }
    c->older = s->cur;
    s->cur = c;
    s->cert_mtime = cm;
    s->key_mtime = km;
    vs_log(VS_LOG_INFO, "tls_reloaded", "cert=%s", s->o.cert_file);
}

static int cert_cb(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                   gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    struct vs_server *s = gnutls_session_get_ptr(session);
    if (!s)
        return -1;
    pthread_mutex_lock(&s->tls_mu);
    maybe_reload(s);
    *pcert = s->cur->pcert;
    *pcert_length = s->cur->n;
    *pkey = s->cur->key;
    pthread_mutex_unlock(&s->tls_mu);
    return 0;
}

/* ------------------------------------------------------------------ requests */

static void resp_headers_free(struct vs_http_resp *r)
{
    for (size_t i = 0; i < r->n_headers; i++)
        free(r->headers[i].value);
    r->n_headers = 0;
}

bool vs_http_add_header(struct vs_http_resp *resp, const char *name, const char *value)
{
    if (resp->n_headers >= VS_HTTP_MAX_HEADERS)
        return false;
    char *v = strdup(value);
    if (!v)
        return false;
    resp->headers[resp->n_headers].name = name;
    resp->headers[resp->n_headers++].value = v;
    return true;
}

const char *vs_http_req_header(const struct vs_http_req *req, const char *name)
{
    return req->conn ? MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name) : NULL;
}

const char *vs_http_req_arg(const struct vs_http_req *req, const char *name)
{
    return req->conn ? MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name) : NULL;
}

struct stream {
    long (*read)(void *ctx, char *buf, size_t max);
    void (*free)(void *ctx);
    void *ctx;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct stream *st = cls;
    long n = st->read(st->ctx, buf, max);
    return n > 0    ? (ssize_t)n
           : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
                    : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls)
{
    struct stream *st = cls;
    st->free(st->ctx);
    free(st);
}

/* The chunk size of a streamed body (libmicrohttpd's buffer for the reader). */
#define STREAM_BLOCK (64u << 10)

static struct MHD_Response *stream_response(struct vs_http_resp *r)
{
    struct stream *st = malloc(sizeof(*st));
    struct MHD_Response *resp = NULL;
    if (st) {
        *st = (struct stream){r->stream_read, r->stream_free, r->stream_ctx};
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, st,
                                                 stream_free);
    }
    if (!resp) {
        free(st);
        r->stream_free(r->stream_ctx);
    }
    r->stream_read = NULL;
    r->stream_ctx = NULL;
    return resp;
}

static enum MHD_Result send_resp(struct MHD_Connection *c, struct vs_http_resp *r)
{
    const char *body = r->body ? r->body : "";
    struct MHD_Response *resp =
        r->stream_read ? stream_response(r)
        : r->static_body
            ? MHD_create_response_from_buffer(r->static_len, (void *)r->static_body,
                                              MHD_RESPMEM_PERSISTENT)
            : MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    free(r->body);
    r->body = NULL;
    if (!resp) {
        resp_headers_free(r);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type",
                            r->content_type ? r->content_type : "application/json");
    for (size_t i = 0; i < r->n_headers; i++)
        MHD_add_response_header(resp, r->headers[i].name, r->headers[i].value);
    resp_headers_free(r);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *msg)
{
    struct vs_http_resp r = {0};
    vs_http_error(&r, status, msg);
    return send_resp(c, &r);
}

static bool client_cert_ok(struct vs_server *s, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session)
        return false;
    gnutls_session_t sess = (gnutls_session_t)ci->tls_session;
    unsigned status = 0;
    if (gnutls_certificate_type_get(sess) != GNUTLS_CRT_X509)
        return false;
    unsigned n = 0;
    if (!gnutls_certificate_get_peers(sess, &n) || n == 0)
        return false;
    if (gnutls_certificate_verify_peers2(sess, &status) < 0)
        return false;
    return status == 0;
}

static void *job_main(void *arg)
{
    struct job *j = arg;
    struct vs_server *s = j->s;
    pthread_setname_np(pthread_self(), "vs-request"); /* top -H, perf: not libmicrohttpd's */
    struct vs_http_req req = {.method = j->method,
                              .path = j->path,
                              .query = "",
                              .body = j->rc->body ? j->rc->body : "",
                              .len = j->rc->len,
                              .conn = NULL}; /* suspended: not read from another thread */
    struct vs_http_resp resp = {.status = 200, .body = NULL, .content_type = NULL};
    j->route->fn(j->route->ctx, &req, &resp);
    j->rc->resp = resp;
    j->rc->job = 2;
    /* The count drops before the resume: vs_server_stop waits for it, then stops the daemon,
     * which needs no connection suspended; MHD_resume_connection is safe until then. */
    struct MHD_Connection *c = j->c;
    free(j->method);
    free(j->path);
    free(j);
    pthread_mutex_lock(&s->job_mu);
    MHD_resume_connection(c);
    s->jobs--;
    pthread_cond_broadcast(&s->job_cv);
    pthread_mutex_unlock(&s->job_mu);
    return NULL;
}

static enum MHD_Result start_job(struct vs_server *s, struct MHD_Connection *c,
                                 const struct vs_route *route, struct req_ctx *rc,
                                 const char *method, const char *url)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j || !(j->method = strdup(method)) || !(j->path = strdup(url))) {
        if (j)
            free(j->method);
        free(j);
        return send_error(c, 500, "out of memory");
    }
    j->s = s;
    j->c = c;
    j->route = route;
    j->rc = rc;
    pthread_mutex_lock(&s->job_mu);
    if (s->jobs >= s->o.max_own_threads) {
        pthread_mutex_unlock(&s->job_mu);
        free(j->method);
        free(j->path);
        free(j);
        return send_error(c, 503, "too many requests in progress");
    }
    rc->job = 1;
    MHD_suspend_connection(c);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 512 * 1024);
    pthread_t t;
    int rc_create = pthread_create(&t, &at, job_main, j);
    pthread_attr_destroy(&at);
    if (rc_create != 0) {
        MHD_resume_connection(c);
        pthread_mutex_unlock(&s->job_mu);
        rc->job = 0;
        free(j->method);
        free(j->path);
        free(j);
        return send_error(c, 503, "cannot start a request thread");
    }
    s->jobs++;
    pthread_mutex_unlock(&s->job_mu);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct vs_server *s = cls;
    struct req_ctx *rc = *con_cls;
    if (!rc) {
        rc = calloc(1, sizeof(*rc));
        if (!rc)
            return MHD_NO;
        *con_cls = rc;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        unsigned long long want = cl ? strtoull(cl, NULL, 10) : 0;
        if (want > s->o.max_body) {
            rc->too_large = true;
            return send_error(c, 413, "request body too large");
        }
        /* One allocation for the announced body (up to PREALLOC_MAX: a larger announcement
         * still grows as it arrives, so a header alone cannot pin megabytes). */
        if (want && want <= PREALLOC_MAX) {
            rc->body = malloc((size_t)want + 1);
            if (!rc->body)
                return MHD_NO;
            rc->cap = (size_t)want + 1;
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!rc->too_large) {
            size_t n = *upload_data_size;
            if (rc->len + n > s->o.max_body) {
                rc->too_large = true;
            } else {
                if (rc->len + n + 1 > rc->cap) {
                    size_t cap = rc->cap ? rc->cap : 4096;
                    while (cap < rc->len + n + 1)
                        cap *= 2;
                    char *g = realloc(rc->body, cap);
                    if (!g)
                        return MHD_NO;
                    rc->body = g;
                    rc->cap = cap;
                }
                memcpy(rc->body + rc->len, upload_data, n);
                rc->len += n;
                rc->body[rc->len] = '\0';
            }
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (rc->job == 2) {
        struct vs_http_resp resp = rc->resp;
        rc->resp.body = NULL;
        rc->resp.stream_read = NULL;
        rc->job = 0;
        return send_resp(c, &resp);
    }
    if (rc->job)
        return MHD_YES; /* resumed early: still running */
    if (rc->too_large)
        return send_error(c, 413, "request body too large");
    if (s->client_ca && !client_cert_ok(s, c))
        return send_error(c, 403, "a valid client certificate is required");
    /* The routes of the best path (exact, else the longest prefix) decide; then the method. */
    const struct vs_route *match = NULL;
    bool path_known = false;
    size_t best = 0; /* SIZE_MAX: exact */
    for (size_t i = 0; i < s->o.n_routes; i++) {
        const struct vs_route *r = &s->o.routes[i];
        size_t len = SIZE_MAX;
        if (strcmp(r->path, url) != 0) {
            len = strlen(r->path);
            if (!len || r->path[len - 1] != '/' || strncmp(r->path, url, len) != 0)
                continue;
        }
        if (!path_known || len > best) {
            path_known = true;
            best = len;
            match = NULL;
        } else if (len < best) {
            continue;
        }
        if (strcmp(r->method, method) == 0 ||
            (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0))
            match = r;
    }
    if (!match) {
        char msg[300];
        if (path_known) {
            snprintf(msg, sizeof(msg), "method %s not allowed on %s", method, url);
            return send_error(c, 405, msg);
        }
        snprintf(msg, sizeof(msg), "no such path: %.200s", url);
        return send_error(c, 404, msg);
    }
    if (match->json_body) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (!ct || strncasecmp(ct, "application/json", 16) != 0)
            return send_error(c, 415, "Content-Type must be application/json");
    }
    if (match->own_thread)
        return start_job(s, c, match, rc, method, url);
    struct vs_http_req req = {.method = method,
                              .path = url,
                              .query = "",
                              .body = rc->body ? rc->body : "",
                              .len = rc->len,
                              .conn = c};
    struct vs_http_resp resp = {.status = 200, .body = NULL, .content_type = NULL};
    match->fn(match->ctx, &req, &resp);
    return send_resp(c, &resp);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct req_ctx *rc = *con_cls;
    if (rc) {
        free(rc->body);
        free(rc->resp.body);
        if (rc->resp.stream_read)
            rc->resp.stream_free(rc->resp.stream_ctx);
        resp_headers_free(&rc->resp);
        free(rc);
    }
    *con_cls = NULL;
}

/* GnuTLS enables suites by their parts; a TLS 1.2 suite chosen from an unlisted combination
 * of listed parts ends the handshake here, when the client's Finished has arrived (the first
 * point where GnuTLS reports the negotiated cipher and MAC), before any request is read. */
static int suite_hook(gnutls_session_t sess, unsigned htype, unsigned when, unsigned incoming,
                      const gnutls_datum_t *msg)
{
    struct vs_server *s = gnutls_session_get_ptr(sess);
    if (!s || !incoming || gnutls_protocol_get_version(sess) == GNUTLS_TLS1_3)
        return 0;
    if (vs_tlsconf_allows(&s->tlsc, (int)gnutls_kx_get(sess), (int)gnutls_cipher_get(sess),
                          (int)gnutls_mac_get(sess)))
        return 0;
    return GNUTLS_E_NO_CIPHER_SUITES;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    struct vs_server *s = cls;
    if (code != MHD_CONNECTION_NOTIFY_STARTED)
        return;
    if (s->o.accepted)
        atomic_fetch_add_explicit(s->o.accepted, 1, memory_order_relaxed);
    if (!s->tls)
        return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (ci && ci->tls_session) {
        gnutls_session_set_ptr((gnutls_session_t)ci->tls_session, s);
        if (s->tlsc.n_suites)
            gnutls_handshake_set_hook_function((gnutls_session_t)ci->tls_session,
                                               GNUTLS_HANDSHAKE_FINISHED, GNUTLS_HOOK_POST,
                                               suite_hook);
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    char q[600];
    vs_log(VS_LOG_DEBUG, "http_server", "msg=%s", vs_log_quote(buf, q, sizeof(q)));
}

/* ------------------------------------------------------------------ lifecycle */

/* host:port, [v6]:port, :port. *wildcard: the host is empty or 0.0.0.0 ("every address", as Go
 * reads it for HAMi's --http_bind=0.0.0.0:443 and --metrics-bind-address=:9395): ss is then
 * IPv4's INADDR_ANY, which the caller may widen to IPv6 too. */
static enum vs_err parse_bind(const char *bind, struct sockaddr_storage *ss, bool *wildcard,
                              struct vs_errbuf *eb)
{
    memset(ss, 0, sizeof(*ss));
    *wildcard = false;
    const char *colon = strrchr(bind, ':');
    if (!colon)
        return vs_err_set(eb, VS_ERR_INVAL, "invalid bind address \"%s\": want host:port", bind);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || colon[1] == '\0')
        return vs_err_set(eb, VS_ERR_INVAL, "invalid port in bind address \"%s\"", bind);
    char host[128];
    size_t hl = (size_t)(colon - bind);
    if (hl >= sizeof(host))
        return vs_err_set(eb, VS_ERR_INVAL, "invalid bind address \"%s\"", bind);
    memcpy(host, bind, hl);
    host[hl] = '\0';
    if (host[0] == '[') {
        size_t l = strlen(host);
        if (l < 2 || host[l - 1] != ']')
            return vs_err_set(eb, VS_ERR_INVAL, "invalid bind address \"%s\"", bind);
        host[l - 1] = '\0';
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
            return vs_err_set(eb, VS_ERR_INVAL, "invalid IPv6 address in \"%s\"", bind);
        return VS_OK;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0) {
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
        *wildcard = true;
        return VS_OK;
    }
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
        return vs_err_set(eb, VS_ERR_INVAL, "invalid IPv4 address in \"%s\"", bind);
    return VS_OK;
}

/* A listening socket on ss, or -1 with errno set. */
static int listen_on(const struct sockaddr_storage *ss)
{
    int fam = ss->ss_family;
    int fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        (fam == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) != 0) ||
        bind(fd, (const struct sockaddr *)ss,
             fam == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static void *accept_main(void *arg)
{
    struct vs_server *s = arg;
    pthread_setname_np(pthread_self(), "vs-accept");
    unsigned long failures = 0;
    while (!atomic_load_explicit(&s->stopping, memory_order_acquire)) {
        struct sockaddr_storage peer;
        socklen_t pl = sizeof(peer);
        int fd = accept4(s->lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            failures = 0;
            /* Closed by libmicrohttpd when it cannot take it (connection limit, memory). */
            if (MHD_add_connection(s->d, fd, (struct sockaddr *)&peer, pl) != MHD_YES)
                vs_log(VS_LOG_DEBUG, "http_server", "msg=\"connection refused: %s\"",
                       strerror(errno));
            continue;
        }
        int e = errno;
        if (atomic_load_explicit(&s->stopping, memory_order_acquire))
            break;
        if (e == EINTR || e == EAGAIN || e == ECONNABORTED || e == EPROTO)
            continue;
        /* Out of descriptors or memory: the pending connection stays queued; try again shortly
         * instead of spinning. Logged once per run of failures. */
        if (!failures++)
            vs_log(VS_LOG_WARN, "http_accept_failed", "server=%s error=\"%s\"",
                   s->o.name ? s->o.name : "http", strerror(e));
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

struct vs_server *vs_server_start(const struct vs_server_opts *o, struct vs_errbuf *eb)
{
    struct vs_server *s = calloc(1, sizeof(*s));
    if (!s) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->o = *o;
    s->lfd = -1;
    if (!s->o.max_body)
        s->o.max_body = DEFAULT_MAX_BODY;
    if (!s->o.threads)
        s->o.threads = 8;
    if (!s->o.max_own_threads)
        s->o.max_own_threads = 4096;
    if (!s->o.idle_timeout_s)
        s->o.idle_timeout_s = VS_SERVER_IDLE_TIMEOUT_S;
    pthread_mutex_init(&s->tls_mu, NULL);
    pthread_mutex_init(&s->job_mu, NULL);
    pthread_cond_init(&s->job_cv, NULL);
    struct sockaddr_storage ss;
    bool wildcard;
    if (parse_bind(o->bind, &ss, &wildcard, eb))
        goto fail;
    bool have_cert = o->cert_file && *o->cert_file, have_key = o->key_file && *o->key_file;
    if (have_cert != have_key) {
        vs_err_set(eb, VS_ERR_INVAL, "--cert_file and --key_file must be given together");
        goto fail;
    }
    s->tls = have_cert;
    /* Checked also without a certificate: a bad flag value is an error either way. */
    if (vs_tlsconf_build(o->tls_min_version, o->tls_cipher_suites, &s->tlsc, eb))
        goto fail;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    /* poll(), never select(): select cannot watch a descriptor >= FD_SETSIZE (1024), and
     * libmicrohttpd closes such a connection at once, before the TLS handshake. Not epoll
     * either: with its edge-triggered epoll, libmicrohttpd spins (recv EAGAIN, epoll_wait with
     * no timeout, again) while a TLS handshake waits for the peer; a worker's
     * poll() blocks until its connections have data. Server CPU per new TLS connection
     * (openssl s_time, P-256): 0.26-0.30 ms with poll, 0.72-0.89 ms with epoll; a kept-alive
     * request costs the same either way. poll() costs a pass over the worker's connections per
     * wake-up, which at the connection limit is ~2,000 descriptors a worker. MHD_USE_POLL is an
     * enum constant, not a macro, so the library is asked at run time. */
    bool poll_ok = MHD_is_feature_supported(MHD_FEATURE_POLL) == MHD_YES;
    flags |= poll_ok ? MHD_USE_POLL : MHD_USE_EPOLL;
    struct MHD_OptionItem opts[16];
    size_t n = 0;
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, s->o.threads, NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->o.idle_timeout_s, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s};
    /* Each connection's memory pool (headers, read buffer) lives as long as the connection.
     * libmicrohttpd mallocs a pool of up to 32 KiB (its default size) and maps a larger one
     * with mmap. Malloc'd, a new connection costs the service about half the CPU of a mapped
     * one here (no mmap and munmap, no page faults on fresh pages: every Bind kube-scheduler
     * has in flight beyond two opens one); with serve's eight arenas the soak's RSS stays
     * within its limits, about 1 MiB above mapped pools (docs/reliability.md "Eight malloc
     * arenas"). */
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_POOL_BYTES, NULL};
    /* Waiting Binds keep their connections open: with poll there is no FD_SETSIZE cap
     * (the process's descriptor limit still is one: `serve` raises it to the hard limit). */
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, VS_SERVER_MAX_CONNECTIONS, NULL};
    if (s->tls) {
        flags |= MHD_USE_TLS;
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, s->tlsc.priority};
        if (creds_load(o->cert_file, o->key_file, &s->cur, eb))
            goto fail;
        mtime_of(o->cert_file, &s->cert_mtime);
        mtime_of(o->key_file, &s->key_mtime);
        s->last_check = time(NULL);
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)cert_cb};
        if (o->client_ca_file && *o->client_ca_file) {
            s->client_ca = read_file(o->client_ca_file, NULL);
            if (!s->client_ca) {
                vs_err_set(eb, VS_ERR_IO, "cannot read --client-ca-file %s: %s", o->client_ca_file,
                           strerror(errno));
                goto fail;
            }
            opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, s->client_ca};
        }
    } else if (o->client_ca_file && *o->client_ca_file) {
        vs_err_set(eb, VS_ERR_INVAL, "--client-ca-file needs --cert_file and --key_file");
        goto fail;
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    if (wildcard) {
        /* Every address, IPv6 too (one dual-stack socket), as a Go server listens for the same
         * flag: an IPv6 pod IP is reached through HAMi's Service as well. A host without IPv6
         * gets the IPv4 socket below. */
        struct sockaddr_storage v6;
        memset(&v6, 0, sizeof(v6));
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&v6;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = ((struct sockaddr_in *)&ss)->sin_port;
        a6->sin6_addr = in6addr_any;
        s->lfd = listen_on(&v6);
    }
    if (s->lfd < 0)
        s->lfd = listen_on(&ss);
    if (s->lfd < 0) {
        int e = errno;
        uint16_t port = ((struct sockaddr_in *)&ss)->sin_port; /* same place in sockaddr_in6 */
        vs_err_set(eb, VS_ERR_IO, "cannot listen on %s (%s server): %s%s", o->bind,
                   o->name ? o->name : "http", e ? strerror(e) : "unknown error",
                   e == EACCES && ntohs(port) < 1024
                       ? " (a port below 1024 needs root or CAP_NET_BIND_SERVICE: the image's "
                         "`scheduler` command has it)"
                       : "");
        goto fail;
    }
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
    if (!s->d) {
        int e = errno;
        vs_err_set(eb, VS_ERR_IO, "cannot start the %s server on %s: %s",
                   o->name ? o->name : "http", o->bind, e ? strerror(e) : "unknown error");
        goto fail;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof(bound);
    if (getsockname(s->lfd, (struct sockaddr *)&bound, &bl) == 0)
        s->port = ntohs(((struct sockaddr_in *)&bound)->sin_port); /* same place in _in6 */
    if (pthread_create(&s->acceptor, NULL, accept_main, s) != 0) {
        vs_err_set(eb, VS_ERR_IO, "cannot start the %s server's accept thread",
                   o->name ? o->name : "http");
        goto fail;
    }
    s->acceptor_started = true;
    return s;
fail:
    vs_server_stop(s);
    return NULL;
}

int vs_server_port(const struct vs_server *s)
{
    return s->port;
}

void vs_server_stop(struct vs_server *s)
{
    if (!s)
        return;
    /* Handlers on their own threads finish first (callers make them leave any wait): the
     * daemon must not stop with a connection suspended. */
    pthread_mutex_lock(&s->job_mu);
    while (s->jobs)
        pthread_cond_wait(&s->job_cv, &s->job_mu);
    pthread_mutex_unlock(&s->job_mu);
    /* No new connection first: shutdown() wakes the thread blocked in accept. */
    atomic_store_explicit(&s->stopping, true, memory_order_release);
    if (s->lfd >= 0)
        shutdown(s->lfd, SHUT_RDWR);
    if (s->acceptor_started)
        pthread_join(s->acceptor, NULL);
    if (s->d)
        MHD_stop_daemon(s->d);
    if (s->lfd >= 0)
        close(s->lfd);
    creds_free(s->cur);
    free(s->client_ca);
    vs_tlsconf_cleanup(&s->tlsc);
    pthread_mutex_destroy(&s->tls_mu);
    pthread_mutex_destroy(&s->job_mu);
    pthread_cond_destroy(&s->job_cv);
    free(s);
}
