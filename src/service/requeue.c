/* requeue: one mutex over the table of refused pods (uthash by UID) and the one pending nudge
 * round (the latest freeing change not yet handled and when the round is due). The thread sleeps
 * on a monotonic condition variable until the round is due or the window's sweep; nudges are
 * called with the mutex released. */
#include "requeue.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uthash.h>

struct refused {
    char *uid, *ns, *name;
    double t; /* when the newest refusal began reading usage */
    UT_hash_handle hh;
};

struct vs_requeue {
    struct vs_requeue_opts o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, stop;
    struct refused *pods;
    size_t n;
    bool pending;     /* a round is due */
    double freed_at;  /* the latest freeing change of the pending round */
    double due;       /* when the pending round runs */
    double last_done; /* the freeing change of the last round run (0: none) */
    uint64_t nudged;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void refused_free(struct refused *r)
{
    free(r->uid);
    free(r->ns);
    free(r->name);
    free(r);
}

/* Caller holds mu. */
static void arm(struct vs_requeue *q, double freed_at)
{
    if (!q->pending) {
        q->pending = true;
        q->freed_at = freed_at;
        q->due = freed_at + q->o.delay_s;
    } else if (freed_at > q->freed_at) {
        q->freed_at = freed_at;
    }
    pthread_cond_broadcast(&q->cv);
}

static void *loop(void *arg)
{
    struct vs_requeue *q = arg;
    pthread_setname_np(pthread_self(), "vs-requeue");
    pthread_mutex_lock(&q->mu);
    while (!q->stop) {
        double now = mono();
        if (q->pending && now >= q->due) {
            pthread_mutex_unlock(&q->mu);
            vs_requeue_run(q, now);
            pthread_mutex_lock(&q->mu);
            continue;
        }
        /* Sleep until the round is due, or a window later to forget old refusals. */
        double until = q->pending ? q->due : now + q->o.window_s;
        struct timespec ts;
        ts.tv_sec = (time_t)until;
        ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
        if (pthread_cond_timedwait(&q->cv, &q->mu, &ts) != 0 && !q->pending) {
            pthread_mutex_unlock(&q->mu);
            vs_requeue_run(q, mono());
            pthread_mutex_lock(&q->mu);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

struct vs_requeue *vs_requeue_new(const struct vs_requeue_opts *o)
{
    struct vs_requeue *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->o = *o;
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (o->thread) {
        if (pthread_create(&q->thread, NULL, loop, q) != 0) {
            vs_requeue_free(q);
            return NULL;
        }
        q->started = true;
    }
    return q;
}

void vs_requeue_stop(struct vs_requeue *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (q->started)
        pthread_join(q->thread, NULL);
    q->started = false;
}

void vs_requeue_free(struct vs_requeue *q)
{
    if (!q)
        return;
    vs_requeue_stop(q);
    struct refused *r, *t;
    HASH_ITER(hh, q->pods, r, t)
    {
        HASH_DEL(q->pods, r);
        refused_free(r);
    }
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

void vs_requeue_refused(struct vs_requeue *q, const char *uid, const char *ns, const char *name,
                        double t)
{
    if (!q || !uid || !*uid)
        return;
    pthread_mutex_lock(&q->mu);
    struct refused *r = NULL;
    HASH_FIND_STR(q->pods, uid, r);
    if (r) {
        r->t = t;
    } else if (q->n < q->o.max_pods && (r = calloc(1, sizeof(*r)))) {
        r->uid = strdup(uid);
        r->ns = strdup(ns ? ns : "");
        r->name = strdup(name ? name : "");
        if (!r->uid || !r->ns || !r->name) {
            refused_free(r);
            r = NULL;
        } else {
            r->t = t;
            HASH_ADD_KEYPTR(hh, q->pods, r->uid, strlen(r->uid), r);
            q->n++;
        }
    }
    /* A round already ran for a change applied after this Filter began reading: the refusal
     * may be stale and no round is coming for it. */
    if (r && q->last_done > t)
        arm(q, q->last_done);
    pthread_mutex_unlock(&q->mu);
}

void vs_requeue_forget(struct vs_requeue *q, const char *uid)
{
    if (!q || !uid)
        return;
    pthread_mutex_lock(&q->mu);
    struct refused *r = NULL;
    HASH_FIND_STR(q->pods, uid, r);
    if (r) {
        HASH_DEL(q->pods, r);
        q->n--;
        refused_free(r);
    }
    pthread_mutex_unlock(&q->mu);
}

void vs_requeue_freed(struct vs_requeue *q, double t)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    arm(q, t);
    pthread_mutex_unlock(&q->mu);
}

size_t vs_requeue_run(struct vs_requeue *q, double now)
{
    struct refused *due = NULL, *r, *t;
    size_t n = 0;
    pthread_mutex_lock(&q->mu);
    double at = 0;
    bool round = q->pending && now >= q->due;
    if (round) {
        at = q->freed_at;
        q->pending = false;
        if (at > q->last_done)
            q->last_done = at;
    }
    HASH_ITER(hh, q->pods, r, t)
    {
        bool stale = round && r->t < at && r->t >= at - q->o.window_s;
        if (stale || r->t < now - q->o.window_s) {
            HASH_DEL(q->pods, r);
            q->n--;
            if (stale) {
                /* uthash's handle is free once deleted: reuse it for the list of nudges. */
                HASH_ADD_KEYPTR(hh, due, r->uid, strlen(r->uid), r);
                n++;
            } else {
                refused_free(r);
            }
        }
    }
    q->nudged += n;
    pthread_mutex_unlock(&q->mu);
    HASH_ITER(hh, due, r, t)
    {
        HASH_DEL(due, r);
        if (q->o.nudge)
            q->o.nudge(q->o.ctx, r->uid, r->ns, r->name);
        refused_free(r);
    }
    return n;
}

size_t vs_requeue_size(struct vs_requeue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->n;
    pthread_mutex_unlock(&q->mu);
    return n;
}

uint64_t vs_requeue_nudged(struct vs_requeue *q)
{
    pthread_mutex_lock(&q->mu);
    uint64_t n = q->nudged;
    pthread_mutex_unlock(&q->mu);
    return n;
}
