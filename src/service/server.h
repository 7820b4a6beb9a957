/* server: the HTTP(S) front of vgpu-sched on libmicrohttpd with its internal thread pool.
 * HTTPS from a certificate/key pair that is reloaded when the files change (a rotated Secret),
 * optional client-certificate verification, a request body cap (413 past it), method checks
 * (405), content-type checks (415), JSON error bodies, and a route table. */
#ifndef VS_SERVER_H
#define VS_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct vs_http_req {
    const char *method;
    const char *path;
    const char *query; /* raw query string without '?', "" when none */
    const char *body;  /* NUL-terminated copy of the body ("" when none) */
    size_t len;
    void *conn; /* the server's connection (vs_http_req_header, vs_http_req_arg); NULL in tests */
};

/* A request header's value (case-insensitive name), or a query argument's (decoded); borrowed
 * for the handler's call, NULL when absent or when req has no connection. */
const char *vs_http_req_header(const struct vs_http_req *req, const char *name);
const char *vs_http_req_arg(const struct vs_http_req *req, const char *name);

#define VS_HTTP_MAX_HEADERS 8

struct vs_http_resp {
    int status;
    char *body;               /* owned: freed by the server after sending */
    const char *content_type; /* static; defaults to application/json */
    /* Instead of body: static bytes sent as they are (compiled-in assets). */
    const char *static_body;
    size_t static_len;
    /* Instead of body: a body made as the client reads it (sent chunked). stream_read puts up
     * to max bytes into buf and returns how many, 0 at the end, -1 on failure (the connection
     * is then closed); stream_free(stream_ctx) runs once the server is done with it, sent or
     * not. */
    long (*stream_read)(void *ctx, char *buf, size_t max);
    void (*stream_free)(void *ctx);
    void *stream_ctx;
    /* Extra response headers: names static, values owned (freed by the server). */
    struct vs_http_header {
        const char *name;
        char *value;
    } headers[VS_HTTP_MAX_HEADERS];
    size_t n_headers;
};

/* Adds a response header (value copied); false when out of memory or the table is full. */
bool vs_http_add_header(struct vs_http_resp *resp, const char *name, const char *value);

typedef void (*vs_handler_fn)(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp);

struct vs_route {
    const char *method; /* "GET" / "POST" */
    /* exact path; one ending in '/' also matches every path beneath it (an exact route wins,
     * then the longest such prefix) */
    const char *path;
    vs_handler_fn fn;
    void *ctx;
    bool json_body; /* POST bodies must be application/json (415 otherwise) */
    /* The handler may block for long (Bind waiting for a node lock): it runs on a thread of its
     * own while the connection is suspended, so it never holds up a pool thread and the other
     * connections that thread serves. */
    bool own_thread;
};

struct vs_server_opts {
    const char *bind;      /* "host:port", ":port", "[v6]:port"; port 0 = any */
    const char *cert_file; /* both set => HTTPS */
    const char *key_file;
    const char *client_ca_file;    /* require and verify client certificates */
    const char *tls_min_version;   /* --tls-min-version: NULL = VersionTLS12 */
    const char *tls_cipher_suites; /* --tls-cipher-suites (Go names, comma-separated) */
    size_t max_body;               /* default 8 MiB */
    unsigned threads;              /* thread pool size, default 8 */
    unsigned max_own_threads; /* own_thread handlers running at once (default 4096); 503 past it */
    /* Seconds a connection may sit idle (or stall) before the server closes it; 0 =
     * VS_SERVER_IDLE_TIMEOUT_S. */
    unsigned idle_timeout_s;
    const struct vs_route *routes;
    size_t n_routes;
    const char *name; /* for logs: "main" / "metrics" */
    /* Counts every connection accepted (TLS or not) when set; read with atomic loads. */
    _Atomic unsigned long long *accepted;
};

/* Longer than the 90 s after which Go's HTTP clients (kube-apiserver calling the webhook,
 * kube-scheduler calling the extender: IdleConnTimeout of k8s.io/apimachinery's transport
 * defaults) drop an idle keep-alive connection themselves. A server that closes first races the
 * client reusing that connection: a POST written into it fails with "broken pipe" and is not
 * retried (not idempotent) — a pod creation refused by the webhook's failurePolicy, a failed
 * Filter or Bind. With 60 s, an e2e soak whose waves came every 30 s hit it after 72 waves. */
#define VS_SERVER_IDLE_TIMEOUT_S 120
_Static_assert(VS_SERVER_IDLE_TIMEOUT_S > 90, "idle timeout must outlast Go clients' 90 s");
/* Connections served at once (poll, not select: descriptors past FD_SETSIZE are fine). */
#define VS_SERVER_MAX_CONNECTIONS 16384

struct vs_server;

/* Starts listening. Routes are borrowed for the server's lifetime. */
struct vs_server *vs_server_start(const struct vs_server_opts *o, struct vs_errbuf *eb);
int vs_server_port(const struct vs_server *s);
void vs_server_stop(struct vs_server *s);

/* Helpers for handlers: a JSON error body {"error":"msg"} with status. */
void vs_http_error(struct vs_http_resp *resp, int status, const char *msg);

#endif
