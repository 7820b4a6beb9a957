/* kube_http: what the files of the kube client share (kube_http.c, kube_config.c,
 * kube_list.c, kube_watch.c, kube_informer.c): the client handle's fields, one request with its
 * retries, curl handle setup and pooling, error formatting, and clock helpers. Private: only
 * those files include it; callers use kube.h. */
#ifndef VS_KUBE_HTTP_H
#define VS_KUBE_HTTP_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "kube_internal.h"
#include "kube_secret.h"

/* The client owns the first POOL_MAX curl handles it makes and keeps them (and their
 * connections) for good. Once all are made, a request finding every one out waits for one to
 * come back, up to pool_wait_ms (POOL_WAIT_MS); only then is a handle made that serves one
 * request and is cleaned up. The bound keeps a stuck request from stopping the others (a Lease
 * renewal among them). Keeping the first ones rather than whichever comes back first means the
 * connections' TLS state (an OpenSSL SSL_CTX per connection, ~500 small allocations) is made
 * once at start and never re-made among a burst's short-lived memory, where its chunks would
 * keep pages resident after the burst is freed (docs/reliability.md "API connections kept, not
 * re-made"). A burst has a Bind per busy node plus the patch and Event workers talking at once:
 * with 8 kept, a 200-pod burst on 10 nodes opened ~500 TLS connections (each a handshake on both
 * sides: half of vgpu-sched's CPU); 32 opened 33 in the first burst and none after. At 1,000
 * nodes a GPU wave's Binds (one thread each) keep hundreds of requests in flight: with 32 kept
 * and no waiting, each one beyond them opened a connection of its own (a handshake, and libcurl
 * parsing the PEM material again: over a third of vgpu-sched's CPU); with 32 kept and the wait,
 * a wave still opened 1,000-1,700 (the waits ran out); with 64 kept, 337 in the first wave and
 * none in the second, and vgpu-sched's CPU per GPU pod fell from 13.0 / 9.5 ms to 7.2 / 5.5 ms
 * (docs/benchmarks.md "e2e scale-waves"). Each kept connection holds ~100-170 KiB, made only
 * once that many requests were in flight together. */
#define POOL_MAX     64
#define POOL_WAIT_MS 1000

/* The verbs counted in vs_kube_stats.errors_by_verb, in that order. */
enum vs_kube_verb {
    VS_VERB_GET,
    VS_VERB_LIST,
    VS_VERB_WATCH,
    VS_VERB_PATCH,
    VS_VERB_POST,
    VS_VERB_PUT,
    VS_VERB_OTHER
};

struct vs_kube {
    char *server;
    char *ca_file, *cert_file, *key_file;
    char *ca_pem, *cert_pem, *key_pem; /* in-memory PEM, handed to curl as blobs */
    bool insecure;
    char *user_agent;
    int timeout_s;

    pthread_mutex_t tok_mu; /* guards token and token_read */
    char *token;            /* current bearer token or NULL */
    char *token_file;       /* NULL: token is static */
    double token_read;      /* monotonic time of the last successful read */

    struct vs_kube_limiter lim;

    pthread_mutex_t pool_mu; /* guards owned, n_owned, pool and n_pool */
    pthread_cond_t pool_cv;  /* signalled when a kept handle comes back */
    CURL *owned[POOL_MAX];   /* the handles kept for good, idle or out */
    int n_owned;
    CURL *pool[POOL_MAX]; /* the idle ones among them */
    int n_pool;
    int pool_wait_ms;    /* POOL_WAIT_MS; tests may lower it */
    uint64_t pool_waits; /* requests that waited for a kept handle (__atomic) */

    /* Counters, updated and read with __atomic builtins. */
    uint64_t requests;
    uint64_t connections;
    uint64_t errors[6];
};

/* Body of a response, capped. */
struct vs_kube_body {
    char *data;
    size_t len, cap, max;
    bool too_big;
};

/* What we keep from the response headers: the status line's reason phrase and Retry-After. */
struct vs_kube_head {
    char phrase[64];
    long retry_after; /* seconds, -1 when absent */
};

/* The response body undecoded (perform's `raw`): owned by the caller. */
struct vs_kube_raw {
    char *data;
    size_t len;
};

/* Monotonic clock, seconds. */
double vs_kube_now(void);
/* True once *stop (may be NULL) is non-zero. */
bool vs_kube_stopped(volatile int *stop);
/* Sleeps `s` seconds in steps of at most 50 ms, returning early once *stop is set. */
void vs_kube_sleep(double s, volatile int *stop);

/* The Status.message of an error body, if it has one. Borrowed from `st`. */
const char *vs_kube_status_message(const json_t *st);
/* The standard reason phrase of an HTTP status ("" for unknown codes). */
const char *vs_kube_reason_phrase(long code);
/* Formats "<who>: <code> <message|reason phrase>" from an error response. */
enum vs_err vs_kube_status_error(const char *who, long code, const char *phrase, const char *body,
                                 size_t len, struct vs_errbuf *eb);
/* Formats "<who>: <curl error>" and maps the transport error (timeout, TLS, memory). */
enum vs_err vs_kube_curl_error(const char *who, CURLcode cc, const char *errbuf,
                               struct vs_errbuf *eb);

void vs_kube_count_error(struct vs_kube *k, enum vs_kube_verb v);
/* Counts a finished transfer of h: one request, and the connections it opened. */
void vs_kube_count_request(struct vs_kube *k, CURL *h);

/* Returns a copy of the current token (NULL when there is none), re-reading the token file
 * when it is older than TOKEN_MAX_AGE or `force`. *changed tells whether a forced re-read
 * produced a different token. */
enum vs_err vs_kube_token(struct vs_kube *k, bool force, char **out, bool *changed,
                          struct vs_errbuf *eb);

/* An easy handle from the pool (or a new one; NULL when out of memory), and its return. */
CURL *vs_kube_handle_get(struct vs_kube *k);
void vs_kube_handle_put(struct vs_kube *k, CURL *h);

/* Options every request shares: URL, TLS material, identity, headers. *hdrs is set to the
 * header list the caller frees with vs_kube_free_headers() after the transfer. */
enum vs_err vs_kube_setup_handle(struct vs_kube *k, CURL *h, const char *url, const char *token,
                                 const char *content_type, struct curl_slist **hdrs, char *errbuf,
                                 struct vs_kube_head *head, struct vs_errbuf *eb);
void vs_kube_free_headers(struct curl_slist *l);

/* Appends to a capped body; false when the cap is passed (too_big set) or out of memory. */
bool vs_kube_body_append(struct vs_kube_body *b, const char *p, size_t n);

/* Appends "?" or "&" then key=escaped(value) to a URL being built. */
void vs_kube_url_param(struct vs_buf *u, const char *key, const char *value);

/* Takes a token from the client's limiter and waits out its debt (early once *stop is set). */
void vs_kube_throttle(struct vs_kube *k, volatile int *stop);

/* One non-streaming request with the 401 and Retry-After retries. `who` is the
 * "<METHOD> <path>" prefix of messages. On 2xx: *out the decoded body (when out is set and
 * the body is not empty), or *raw the undecoded body when raw is set. */
enum vs_err vs_kube_perform(struct vs_kube *k, enum vs_kube_verb verb, const char *method,
                            const char *who, const char *url, const char *content_type,
                            const char *body, json_t **out, struct vs_kube_raw *raw,
                            struct vs_errbuf *eb);

/* vs_kube_watch that also counts the events decoded (bookmarks included) into *events_out,
 * hands on_event objects cut down to the members keep names (vs_watch_decoder_keep; NULL:
 * whole),
 * and runs on the caller's curl multi handle *multi (made on first use; the caller frees it
 * with curl_multi_cleanup and uses it from one thread at a time). A watch that ends cleanly
 * leaves its connection in that multi for the next watch; a multi made per watch (multi NULL)
 * closes it, so every restart of a long-running watch would make a new TLS connection, whose
 * ~500 small OpenSSL allocations then sit among a burst's short-lived memory and keep its pages
 * resident (docs/reliability.md "API connections kept, not re-made"). */
enum vs_err vs_kube_watch_counted(struct vs_kube *k, const char *path, const char *label_selector,
                                  char **rv_io, int timeout_s,
                                  int (*on_event)(void *ctx, const char *type, json_t *obj),
                                  void *ctx, const struct vs_json_keep *keep, volatile int *stop,
                                  CURLM **multi, uint64_t *events_out, struct vs_errbuf *eb);

#endif
