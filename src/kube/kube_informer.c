/* kube_informer: list, then watch from the list's resourceVersion until stopped
 * (spec/k8s-protocols.md §5). Relists on 410 and after two failed watches in a row; resumes
 * a watch that ended cleanly without relisting; backs off 200 ms doubling to 30 s (+-20%), or
 * waits denied_retry_s after a refusal when the handlers ask for it. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "kube.h"
#include "kube_http.h"

#define BACKOFF_MIN     0.2
#define BACKOFF_MAX     30.0
#define INFORMER_PAGE   500
#define HEALTHY_WATCH_S 1.0 /* a clean watch end after this long counts as healthy */

struct informer {
    const struct vs_informer_handlers *h;
    void *ctx;
};

static int informer_item(void *ctx, json_t *item)
{
    struct informer *in = ctx;
    if (in->h->object)
        in->h->object(in->ctx, "ADDED", item);
    return 0;
}

static int informer_other(void *ctx, const char *text, size_t len)
{
    struct informer *in = ctx;
    in->h->list_other(in->ctx, text, len);
    return 0;
}

static int informer_event(void *ctx, const char *type, json_t *obj)
{
    struct informer *in = ctx;
    if (in->h->object)
        in->h->object(in->ctx, type, obj);
    return 0;
}

struct backoff {
    double cur;
    unsigned seed;
};

static void backoff_sleep(struct backoff *b, volatile int *stop)
{
    double jitter = 0.8 + 0.4 * ((double)rand_r(&b->seed) / RAND_MAX);
    vs_kube_sleep(b->cur * jitter, stop);
    b->cur *= 2;
    if (b->cur > BACKOFF_MAX)
        b->cur = BACKOFF_MAX;
}

/* A refusal an optional informer waits out at its slow pace (denied_retry_s). */
static bool denied(const struct vs_informer_handlers *h, enum vs_err rc)
{
    return h->denied_retry_s > 0 && (rc == VS_ERR_AUTH || rc == VS_ERR_NOTFOUND);
}

static void denied_sleep(const struct vs_informer_handlers *h, struct backoff *b,
                         volatile int *stop)
{
    double jitter = 0.8 + 0.4 * ((double)rand_r(&b->seed) / RAND_MAX);
    vs_kube_sleep(h->denied_retry_s * jitter, stop);
    b->cur = BACKOFF_MIN;
}

static void report(const struct vs_informer_handlers *h, void *ctx, enum vs_err rc,
                   const struct vs_errbuf *eb)
{
    if (h->error)
        h->error(ctx, rc, eb->msg);
}

void vs_kube_informer_run(struct vs_kube *k, const char *path, const char *label_selector,
                          const struct vs_informer_handlers *h, void *ctx, volatile int *stop)
{
    struct informer in = {.h = h, .ctx = ctx};
    struct backoff bo = {.cur = BACKOFF_MIN};
    struct vs_errbuf eb;
    bool need_list = true;
    int watch_failures = 0;
    char *rv = NULL;
    CURLM *multi = NULL; /* the watches' connection outlives each watch (vs_kube_watch_counted) */

    bo.seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&bo ^ (unsigned)(uintptr_t)pthread_self();
    while (!vs_kube_stopped(stop)) {
        if (need_list) {
            if (h->begin)
                h->begin(ctx);
            free(rv);
            rv = NULL;
            enum vs_err rc = vs_kube_list_kept(
                k, path, label_selector, INFORMER_PAGE, h->list_needle, h->list_keep, informer_item,
                h->list_other ? informer_other : NULL, &in, &rv, &eb);
            if (vs_kube_stopped(stop))
                break;
            if (rc != VS_OK) {
                report(h, ctx, rc, &eb);
                if (denied(h, rc))
                    denied_sleep(h, &bo, stop);
                else
                    backoff_sleep(&bo, stop);
                continue;
            }
            if (h->synced)
                h->synced(ctx);
            bo.cur = BACKOFF_MIN;
            need_list = false;
            watch_failures = 0;
        }

        /* Like client-go: a random 5-10 minute server-side timeout spreads reconnects. */
        int timeout_s = 300 + rand_r(&bo.seed) % 300;
        uint64_t events = 0;
        double t0 = vs_kube_now();
        enum vs_err rc =
            vs_kube_watch_counted(k, path, label_selector, &rv, timeout_s, informer_event, &in,
                                  h->watch_keep, stop, &multi, &events, &eb);
        if (vs_kube_stopped(stop))
            break;
        if (events > 0) {
            bo.cur = BACKOFF_MIN;
            watch_failures = 0;
        }
        if (rc == VS_OK) {
            if (events == 0 && vs_kube_now() - t0 < HEALTHY_WATCH_S)
                backoff_sleep(&bo, stop); /* a server that ends watches at once: no hot loop */
            else {
                bo.cur = BACKOFF_MIN;
                watch_failures = 0;
            }
            continue;
        }
        report(h, ctx, rc, &eb);
        if (denied(h, rc)) {
            need_list = true;
            denied_sleep(h, &bo, stop);
            continue;
        }
        if (rc == VS_ERR_GONE) {
            need_list = true;
            if (events == 0)
                backoff_sleep(&bo, stop);
            continue;
        }
        /* First failure: resume from the last resourceVersion; a second in a row: relist. */
        if (++watch_failures > 1)
            need_list = true;
        backoff_sleep(&bo, stop);
    }
    if (multi)
        curl_multi_cleanup(multi);
    free(rv);
}
