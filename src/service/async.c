/* async: API writes nobody answers for — pod patches (what Bind waits for) on up to
 * PATCH_WORKERS worker threads (started when work comes, gone when idle) that keep the writes of
 * one pod (one path) in order, and Events on one worker (best effort: paced, one pending event per
 * pod and reason, bounded, so a storm of refusals can never delay a patch and every refused pod
 * still gets its events) — and a table of per-pod patch states (in flight / ok / failed) that Bind
 * waits on. Events go out in three classes: a Warning whose pod and reason were not posted before
 * (a refused pod's first FilteringFailed: what its user looks for), then Normal ones, then Warnings
 * posted before (newer wording of a refusal already reported); FIFO within a class. Lock: `mu`
 * guards the queues and the tables; each kind of waiter has its own condition variable (patch
 * workers, the Event worker, Binds waiting for a patch), signalled only when there is something
 * for it, so a queued job wakes one thread, not all of them. Finished states are
 * kept for a while (STATE_TTL) for a Bind that comes later, then swept, as is the memory of posted
 * Warning keys; a deleted pod's state and posted keys go at once (vs_async_forget, from the pod
 * watch). */
#include "async.h"

#include "log.h"
#include "slab.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <uthash.h>

#define STATE_TTL       600
#define POD_TTL         60 /* a patch's answer kept for the pod's Bind: 60-120 s (swept every 60) */
#define EVENT_QUEUE_MAX 4096
#define EVENT_BYTES_MAX                                                                            \
    (8u << 20)              /* pending Events' messages: FilteringSucceed over 5,000               \
                             * nodes is ~70 KiB, so 4,096 of them would pin 280 MiB */
#define EVENT_PACE_US 40000 /* at most 25 Events/s (one starts every 40 ms at most) */
/* While pod patches are queued or in flight (a burst: Binds wait for them, and the API server
 * serves Filter, Bind and the device plugins), only new Warnings keep that pace; Normal Events
 * and repeated Warnings start at most every 500 ms and catch up once the burst is over. */
#define EVENT_BUSY_PACE_US 500000
/* While Binds are active (vs_async_set_busy: a Bind waits for a node lock or holds one), Events
 * are held so the allocation chain has the API server to itself, except new Warnings (a refused
 * pod's first FilteringFailed: its user, and a settle check, wait for it); an Event still goes once
 * it waited EVENT_HOLD_MS, then at most every EVENT_BUSY_PACE_US, and the queue drains at the usual
 * pace once EVENT_HOLD_MAX are queued or their messages reach half of EVENT_BYTES_MAX (so none is
 * dropped for a full queue), or the Binds end. The cap is above a 1,000-pod burst's two Normal
 * Events per pod: a burst's Events wait for its allocations instead of sharing the API server
 * with them once a few hundred are queued. */
#define EVENT_HOLD_MS    1000
#define EVENT_HOLD_MAX   (EVENT_QUEUE_MAX / 2)
#define EVENT_HOLD_BYTES (EVENT_BYTES_MAX / 2)
#define EVENT_NICE       10
/* Pod patches in flight at once: Filter answers at once and queues its patch; a burst's Binds
 * wait for them, so one patch per API round trip would pace the whole burst. */
#define PATCH_WORKERS 8

/* Q_EV_*: the Event classes, in the order they are posted. */
enum { Q_PATCH, Q_EV_NEW_WARNING, Q_EV_NORMAL, Q_EV_WARNING_AGAIN, Q_COUNT };
#define Q_EVENT_FIRST Q_EV_NEW_WARNING

struct vs_async;

struct job;

struct queue {
    struct job *head, *tail;
    size_t len;
};

/* Workers start when a job is queued and none is free, and exit once idle for
 * WORKER_IDLE_MS: glibc keeps a per-thread cache of freed chunks (up to ~240 KiB a thread)
 * that only the thread's exit gives back, so a thread that stays between bursts pins that
 * memory for good (the soak's slow RSS growth). The default is below memtrim's quiet time,
 * so the trim after a burst finds their caches returned. */
#define WORKER_IDLE_MS 500

struct worker_ctx {
    struct vs_async *a;
    int slot; /* patch workers: 0..PATCH_WORKERS-1; the Event worker: -1 */
    pthread_t thread;
    bool started; /* a thread was created and not yet joined */
    bool alive;   /* it has not decided to exit (guarded by mu) */
};

/* A Warning key's reason and message shape, posted at `at`. */
struct posted {
    char *key;
    time_t at;
    UT_hash_handle hh;
};

/* The Warning keys posted for one pod (by uid), so a deleted pod's go with it. */
struct posted_pod {
    char *uid;
    struct posted *keys;
    UT_hash_handle hh;
};

struct job {
    bool is_event;
    bool warn;    /* vs_async_patch_quiet's: a failure is logged as a warning */
    bool warning; /* events: type Warning */
    char *key;    /* events: pod uid, reason and message shape; a newer one replaces a queued one */
    bool forgotten;    /* events: the pod was deleted since: its key is not remembered as posted */
    bool waited;       /* patches: a Bind waits for it (promote) */
    double queued_us;  /* events: when it was queued (mono_us), for the hold's bound */
    UT_hash_handle hh; /* events: in vs_async.pending_events by key while queued */
    size_t bytes;      /* events: message size (or its lazy context's), for the budget */
    char *(*build)(void *ctx); /* events: writes the message when posted (NULL: it is set) */
    void *build_ctx;
    void (*build_free)(void *ctx);
    char *uid;
    char *path;
    uint64_t reservation; /* the Filter decision the patch writes (on_failed) */
    json_t *body;
    struct job *next;
};

struct state {
    char *uid;
    int in_flight; /* queued or running patches */
    bool failed;
    bool gone;   /* the pod was deleted: dropped when its last patch is done */
    char *err;   /* the last failed patch's error (slab; NULL when none or out of memory): a
                  * state stays a small slab object, not a mapping of its own */
    json_t *pod; /* the pod as the last patch's answer showed it, until a Bind takes it */
    time_t done_at;
    UT_hash_handle hh;
};

_Static_assert(sizeof(struct state) <= VS_SLAB_MAX_SMALL, "a patch's state is a small slab object");

struct vs_async {
    struct vs_kube *k;
    void (*on_failed)(void *ctx, const char *uid, uint64_t reservation);
    void *ctx;
    bool (*events_allowed)(void *ctx); /* vs_async_set_event_gate; set before any event */
    /* vs_async_set_patch_gate; set before any patch */
    bool (*superseded)(void *ctx, const char *uid, uint64_t reservation);
    void *superseded_ctx;
    void *events_ctx;
    bool (*busy)(void *ctx); /* vs_async_set_busy; set before any event; called under mu */
    void *busy_ctx;
    int hold_ms;       /* EVENT_HOLD_MS unless a test set it */
    size_t hold_max;   /* EVENT_HOLD_MAX unless a test set it */
    size_t hold_bytes; /* EVENT_HOLD_BYTES unless a test set it */
    bool holding;      /* the Event worker holds queued Events for the Binds (tests) */
    bool flushing;     /* a hold bound was reached: none is held until the queue is empty */
    pthread_mutex_t mu;
    pthread_cond_t patch_cv; /* an idle patch worker: a patch was queued or may go now */
    pthread_cond_t event_cv; /* the Event worker: an Event was queued or the burst is over */
    pthread_cond_t done_cv;  /* Binds in vs_async_wait: a patch finished */
    int waiters;             /* threads in vs_async_wait */
    struct queue q[Q_COUNT];
    struct worker_ctx w[PATCH_WORKERS + 1];
    const char *running[PATCH_WORKERS]; /* the path each patch worker writes */
    struct posted_pod *posted;          /* posted Warning keys by pod */
    size_t n_posted;                    /* keys in posted */
    struct job *event_job;              /* the Event being posted */
    struct state *states;
    struct job *pending_events; /* queued events by key */
    size_t event_bytes;         /* sum of the queued events' bytes */
    bool stop;
    int idle_patch;   /* patch workers waiting for a job */
    int idle_ms;      /* WORKER_IDLE_MS unless a test set it */
    size_t started_n; /* threads started in total (tests) */
    int fail_starts;  /* the next this many thread starts fail (tests) */
    time_t last_sweep;
    double last_event_us; /* when the last Event POST started (mono_us) */
    /* states and posted keys with their strings: they outlive the requests (slab.h); used
     * under mu */
    struct vs_slab *slab;
};

static void job_free(struct job *j)
{
    if (j->build_free)
        j->build_free(j->build_ctx);
    free(j->key);
    free(j->uid);
    free(j->path);
    json_decref(j->body);
    free(j);
}

/* Caller holds mu. */
static void state_del(struct vs_async *a, struct state *s)
{
    HASH_DEL(a->states, s);
    json_decref(s->pod);
    vs_slab_put(a->slab, s->uid);
    vs_slab_put(a->slab, s->err);
    vs_slab_put(a->slab, s);
}

/* Caller holds mu. Drops the pod's posted keys older than STATE_TTL at `now` (all of them with
 * `all`), and the pod's entry when none is left. */
static void posted_drop(struct vs_async *a, struct posted_pod *pp, bool all, time_t now)
{
    struct posted *p, *pt;
    HASH_ITER(hh, pp->keys, p, pt)
    {
        if (all || now - p->at > STATE_TTL) {
            HASH_DEL(pp->keys, p);
            vs_slab_put(a->slab, p->key);
            vs_slab_put(a->slab, p);
            a->n_posted--;
        }
    }
    if (!pp->keys) {
        HASH_DEL(a->posted, pp);
        vs_slab_put(a->slab, pp->uid);
        vs_slab_put(a->slab, pp);
    }
}

/* An Event key is "uid|reason|shape": its uid's length (up to the first '|'). */
static size_t key_uid_len(const char *key)
{
    const char *bar = strchr(key, '|');
    return bar ? (size_t)(bar - key) : strlen(key);
}

/* Caller holds mu. The pod's entry for the key's uid; NULL when none. */
static struct posted_pod *posted_pod_of(struct vs_async *a, const char *key)
{
    struct posted_pod *pp = NULL;
    HASH_FIND(hh, a->posted, key, key_uid_len(key), pp);
    return pp;
}

/* Caller holds mu. Whether a Warning of the key's pod and reason was posted before, in any
 * wording: HAMi reports one refusal as several FilteringFailed Events (one per reason word and
 * a summary), and only the first of them is what the pod's user waits for. */
static bool posted_has(struct vs_async *a, const char *key)
{
    struct posted_pod *pp = posted_pod_of(a, key);
    if (!pp)
        return false;
    const char *reason = key + key_uid_len(key), *bar = strchr(reason + 1, '|');
    size_t n = bar ? (size_t)(bar - reason) + 1 : strlen(reason); /* "|reason|" */
    for (struct posted *p = pp->keys; p; p = p->hh.next)
        if (strncmp(p->key, reason, n) == 0)
            return true;
    return false;
}

static void sweep(struct vs_async *a, time_t now)
{
    if (now - a->last_sweep < 60)
        return;
    a->last_sweep = now;
    struct state *s, *t;
    HASH_ITER(hh, a->states, s, t)
    {
        if (s->in_flight == 0 && now - s->done_at > STATE_TTL) {
            state_del(a, s);
        } else if (s->pod && s->in_flight == 0 && now - s->done_at > POD_TTL) {
            json_decref(s->pod); /* no Bind came for it */
            s->pod = NULL;
        }
    }
    struct posted_pod *pp, *ppt;
    HASH_ITER(hh, a->posted, pp, ppt)
    {
        posted_drop(a, pp, false, now);
    }
}

/* The first queued patch whose path (pod) no other worker is writing: a later patch of the
 * same pod waits for the earlier one, so each pod's writes land in order. */
static struct job *take_patch(struct vs_async *a, int slot)
{
    struct queue *q = &a->q[Q_PATCH];
    struct job *prev = NULL;
    for (struct job *j = q->head; j; prev = j, j = j->next) {
        const char *k = j->path;
        bool busy = false;
        for (int i = 0; i < PATCH_WORKERS && !busy; i++)
            busy = a->running[i] && strcmp(a->running[i], k) == 0;
        if (busy)
            continue;
        if (prev)
            prev->next = j->next;
        else
            q->head = j->next;
        if (q->tail == j)
            q->tail = prev;
        j->next = NULL;
        q->len--;
        a->running[slot] = k;
        return j;
    }
    return NULL;
}

static void queue_push(struct queue *q, struct job *j)
{
    j->next = NULL;
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    q->len++;
}

static struct job *queue_pop(struct queue *q)
{
    struct job *j = q->head;
    if (j) {
        q->head = j->next;
        if (!q->head)
            q->tail = NULL;
        q->len--;
        j->next = NULL;
    }
    return j;
}

/* Caller holds mu. A new Warning whose pod and reason were posted while it waited (another
 * wording of the same refusal, queued with it) is new no more: it goes behind the Normal
 * Events, so every refused pod's first Warning is out before any pod's second. */
static void demote_posted(struct vs_async *a)
{
    struct job *j;
    while ((j = a->q[Q_EV_NEW_WARNING].head) && posted_has(a, j->key))
        queue_push(&a->q[Q_EV_WARNING_AGAIN], queue_pop(&a->q[Q_EV_NEW_WARNING]));
}

static struct job *take_event(struct vs_async *a, size_t *left)
{
    *left = 0;
    struct job *j = NULL;
    for (int c = Q_EVENT_FIRST; c < Q_COUNT; c++) {
        struct queue *q = &a->q[c];
        if (!j)
            j = queue_pop(q);
        *left += q->len;
    }
    return j;
}

static size_t events_queued(const struct vs_async *a)
{
    size_t n = 0;
    for (int c = Q_EVENT_FIRST; c < Q_COUNT; c++)
        n += a->q[c].len;
    return n;
}

/* Caller holds mu. */
static bool patches_busy(const struct vs_async *a)
{
    if (a->q[Q_PATCH].len)
        return true;
    for (int i = 0; i < PATCH_WORKERS; i++)
        if (a->running[i])
            return true;
    return false;
}

static double mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Caller holds mu. When the longest-queued Event was queued (a scan: demoted Warnings join
 * their class's tail, so a class is not ordered by age). */
static double oldest_event_us(const struct vs_async *a)
{
    double oldest = 0;
    for (int c = Q_EVENT_FIRST; c < Q_COUNT; c++)
        for (const struct job *j = a->q[c].head; j; j = j->next)
            if (oldest == 0 || j->queued_us < oldest)
                oldest = j->queued_us;
    return oldest;
}

/* Caller holds mu. The next Event, unless it has to wait: then *wait_us is how long. */
static struct job *next_event(struct vs_async *a, size_t *left, double *wait_us)
{
    *wait_us = 0;
    *left = 0;
    demote_posted(a);
    size_t queued = events_queued(a);
    a->holding = false;
    if (queued >= a->hold_max || a->event_bytes >= a->hold_bytes)
        a->flushing = true;
    else if (queued == 0)
        a->flushing = false;
    if (queued && !a->flushing && !a->q[Q_EV_NEW_WARNING].head && a->busy && a->busy(a->busy_ctx)) {
        double now = mono_us(), rest = oldest_event_us(a) + a->hold_ms * 1000.0 - now;
        if (rest <= 0) /* held long enough: at the burst's pace while the Binds go on */
            rest = a->last_event_us + EVENT_BUSY_PACE_US - now;
        if (rest > 0) {
            a->holding = true;
            *wait_us = rest;
            return NULL;
        }
    }
    if (!a->q[Q_EV_NEW_WARNING].head && patches_busy(a)) {
        double rest = a->last_event_us + EVENT_BUSY_PACE_US - mono_us();
        if (rest > 0 && (a->q[Q_EV_NORMAL].head || a->q[Q_EV_WARNING_AGAIN].head)) {
            *wait_us = rest;
            *left = 0;
            return NULL;
        }
    }
    return take_event(a, left);
}

static void remember_posted(struct vs_async *a, const char *key, time_t now)
{
    struct posted_pod *pp = posted_pod_of(a, key);
    if (!pp) {
        size_t n = key_uid_len(key);
        pp = vs_slab_calloc(a->slab, sizeof(*pp));
        if (!pp || !(pp->uid = vs_slab_strndup(a->slab, key, n))) {
            vs_slab_put(a->slab, pp);
            return; /* only the Event's class later depends on it */
        }
        HASH_ADD_KEYPTR(hh, a->posted, pp->uid, n, pp);
    }
    const char *rest = key + key_uid_len(key);
    struct posted *p = NULL;
    HASH_FIND_STR(pp->keys, rest, p);
    if (!p) {
        p = vs_slab_calloc(a->slab, sizeof(*p));
        if (!p || !(p->key = vs_slab_strdup(a->slab, rest))) {
            vs_slab_put(a->slab, p);
            if (!pp->keys)
                posted_drop(a, pp, true, now);
            return;
        }
        HASH_ADD_KEYPTR(hh, pp->keys, p->key, strlen(p->key), p);
        a->n_posted++;
    }
    p->at = now;
}

static void *worker(void *arg)
{
    struct worker_ctx *w = arg;
    struct vs_async *a = w->a;
    bool events = w->slot < 0;
    pthread_setname_np(pthread_self(), events ? "vs-events" : "vs-patches");
    /* Events are best effort: their worker (which writes FilteringSucceed's node list) yields
     * the CPU to Filter and Bind (Linux: a thread's nice value is its own). */
    if (events)
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), EVENT_NICE);
    pthread_mutex_lock(&a->mu);
    for (;;) {
        struct job *j = NULL;
        size_t left = 0;
        double wait_us = 0;
        bool idle_out = false;
        while (!a->stop &&
               !(j = events ? next_event(a, &left, &wait_us) : take_patch(a, w->slot))) {
            if (idle_out)
                break;
            bool idle = wait_us <= 0;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ns =
                (long long)ts.tv_nsec + (long long)(idle ? a->idle_ms * 1000.0 : wait_us) * 1000;
            ts.tv_sec += (time_t)(ns / 1000000000LL);
            ts.tv_nsec = (long)(ns % 1000000000LL);
            if (idle && !events)
                a->idle_patch++;
            int rc = pthread_cond_timedwait(events ? &a->event_cv : &a->patch_cv, &a->mu, &ts);
            if (idle && !events)
                a->idle_patch--;
            idle_out = idle && rc == ETIMEDOUT; /* one more look for a job, then go */
        }
        if (a->stop || !j) {
            w->alive = false; /* joined by the next start in this slot, or by stop */
            break;
        }
        if (events)
            a->last_event_us = mono_us();
        if (j->is_event && j->key) {
            HASH_DEL(a->pending_events, j);
            a->event_bytes -= j->bytes;
        }
        if (j->is_event)
            a->event_job = j;
        pthread_mutex_unlock(&a->mu);
        double started = events ? mono_us() : 0;
        json_t *answer = NULL; /* a patch's answer: the pod as it left it */
        struct vs_errbuf eb;
        enum vs_err err;
        if (j->is_event && j->build) {
            char *msg = j->build(j->build_ctx);
            json_object_set_new(j->body, "message", json_string(msg ? msg : ""));
            free(msg);
        }
        if (j->is_event) {
            err = vs_kube_post(a->k, j->path, j->body, NULL, &eb);
            if (vs_log_enabled(VS_LOG_DEBUG))
                vs_log(VS_LOG_DEBUG, "event_posted", "reason=%s pod=%s queued=%zu",
                       json_string_value(json_object_get(j->body, "reason")),
                       json_string_value(
                           json_object_get(json_object_get(j->body, "involvedObject"), "name")),
                       left);
        } else if (j->uid && j->reservation && a->superseded &&
                   a->superseded(a->superseded_ctx, j->uid, j->reservation)) {
            err = VS_OK; /* a later decision's patch writes the pod (or has written it) */
            vs_log(VS_LOG_DEBUG, "pod_patch_superseded", "path=%s reservation=%llu", j->path,
                   (unsigned long long)j->reservation);
        } else {
            err = vs_kube_merge_patch(a->k, j->path, j->body, j->uid ? &answer : NULL, &eb);
        }
        if (err) {
            char qt[VS_ERRBUF_SIZE + 8];
            vs_log((j->is_event || !j->uid) && !j->warn ? VS_LOG_DEBUG : VS_LOG_WARN,
                   j->is_event ? "event_post_failed" : "pod_patch_failed", "path=%s error=%s",
                   j->path, vs_log_quote(eb.msg, qt, sizeof(qt)));
            if (!j->is_event && j->uid && a->on_failed)
                a->on_failed(a->ctx, j->uid, j->reservation);
        }
        if (events) {
            /* The pace bounds the rate, not the gap: a slow POST counts toward it. */
            double rest = EVENT_PACE_US - (mono_us() - started);
            if (rest > 0)
                usleep((useconds_t)rest);
        }
        pthread_mutex_lock(&a->mu);
        if (j->is_event) {
            a->event_job = NULL;
            if (j->warning && j->key && !j->forgotten)
                remember_posted(a, j->key, time(NULL));
        }
        if (!j->is_event) {
            a->running[w->slot] = NULL;
            if (j->uid) {
                struct state *s = NULL;
                HASH_FIND_STR(a->states, j->uid, s);
                if (s) {
                    s->in_flight--;
                    s->failed = err != VS_OK;
                    json_decref(s->pod);
                    s->pod = err || s->gone ? NULL : answer;
                    if (s->pod)
                        answer = NULL;
                    if (err) {
                        vs_slab_put(a->slab, s->err);
                        s->err = vs_slab_strdup(a->slab, eb.msg);
                    }
                    s->done_at = time(NULL);
                    if (s->gone && s->in_flight == 0)
                        state_del(a, s);
                }
            }
            /* Binds waiting for a patch; an idle worker for a patch that waited for this one
             * (same pod) while this worker takes the next; the Event worker once no patch is
             * left (its burst pace ends). */
            if (a->waiters)
                pthread_cond_broadcast(&a->done_cv);
            if (a->q[Q_PATCH].len && a->idle_patch)
                pthread_cond_signal(&a->patch_cv);
            if (!patches_busy(a) && events_queued(a))
                pthread_cond_signal(&a->event_cv);
        }
        json_decref(answer);
        sweep(a, time(NULL));
        job_free(j);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

struct vs_async *
vs_async_new(struct vs_kube *k,
             void (*on_patch_failed)(void *ctx, const char *uid, uint64_t reservation), void *ctx)
{
    struct vs_async *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    if (!(a->slab = vs_slab_new())) {
        free(a);
        return NULL;
    }
    a->k = k;
    a->on_failed = on_patch_failed;
    a->ctx = ctx;
    a->idle_ms = WORKER_IDLE_MS;
    a->hold_ms = EVENT_HOLD_MS;
    a->hold_max = EVENT_HOLD_MAX;
    a->hold_bytes = EVENT_HOLD_BYTES;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->patch_cv, NULL);
    pthread_cond_init(&a->event_cv, NULL);
    pthread_cond_init(&a->done_cv, NULL);
    for (int i = 0; i <= PATCH_WORKERS; i++) {
        a->w[i].a = a;
        a->w[i].slot = i < PATCH_WORKERS ? i : -1;
    }
    return a;
}

void vs_async_stop(struct vs_async *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->patch_cv);
    pthread_cond_broadcast(&a->event_cv);
    pthread_cond_broadcast(&a->done_cv);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i <= PATCH_WORKERS; i++) {
        if (a->w[i].started)
            pthread_join(a->w[i].thread, NULL);
        a->w[i].started = false;
    }
}

void vs_async_free(struct vs_async *a)
{
    if (!a)
        return;
    vs_async_stop(a);
    HASH_CLEAR(hh, a->pending_events); /* the table only; the jobs are freed below */
    for (int i = 0; i < Q_COUNT; i++) {
        while (a->q[i].head) {
            struct job *j = a->q[i].head;
            a->q[i].head = j->next;
            job_free(j);
        }
    }
    struct state *s, *t;
    HASH_ITER(hh, a->states, s, t)
    {
        state_del(a, s);
    }
    struct posted_pod *pp, *ppt;
    HASH_ITER(hh, a->posted, pp, ppt)
    {
        posted_drop(a, pp, true, 0);
    }
    pthread_cond_destroy(&a->patch_cv);
    pthread_cond_destroy(&a->event_cv);
    pthread_cond_destroy(&a->done_cv);
    pthread_mutex_destroy(&a->mu);
    vs_slab_free(a->slab);
    free(a);
}

/* Caller holds mu. Starts a thread in slot w (joining the one that left it). */
static void start_worker(struct vs_async *a, struct worker_ctx *w)
{
    if (w->started)
        pthread_join(w->thread, NULL); /* it left: it cleared alive, its last act under mu */
    w->started = false;
    bool injected = a->fail_starts > 0;
    if (injected)
        a->fail_starts--;
    if (injected || pthread_create(&w->thread, NULL, worker, w) != 0) {
        vs_log(VS_LOG_ERROR, "async_worker_start_failed", "slot=%d", w->slot);
        return;
    }
    w->started = w->alive = true;
    a->started_n++;
}

/* Caller holds mu: a worker for a job of this kind, unless one is free or all are busy. */
static void ensure_worker(struct vs_async *a, bool event)
{
    if (a->stop)
        return;
    if (event) {
        if (!a->w[PATCH_WORKERS].alive)
            start_worker(a, &a->w[PATCH_WORKERS]);
        return;
    }
    if ((int)a->q[Q_PATCH].len <= a->idle_patch)
        return; /* each queued patch has a waiting worker to wake */
    for (int i = 0; i < PATCH_WORKERS; i++) {
        if (!a->w[i].alive) {
            start_worker(a, &a->w[i]);
            return;
        }
    }
}

/* Events: the class (queue) by kind and by whether a Warning of the pod and reason was posted
 * before (demote_posted moves the ones that became so while queued). */
static void enqueue(struct vs_async *a, struct job *j)
{
    int c = Q_PATCH;
    if (j->is_event)
        c = !j->warning             ? Q_EV_NORMAL
            : posted_has(a, j->key) ? Q_EV_WARNING_AGAIN
                                    : Q_EV_NEW_WARNING;
    queue_push(&a->q[c], j);
    ensure_worker(a, j->is_event);
    if (j->is_event)
        pthread_cond_signal(&a->event_cv);
    else if (a->idle_patch)
        pthread_cond_signal(&a->patch_cv);
}

enum vs_err vs_async_patch_pod(struct vs_async *a, const char *uid, const char *path, json_t *patch,
                               uint64_t reservation)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j) {
        json_decref(patch);
        return VS_ERR_NOMEM;
    }
    j->uid = strdup(uid);
    j->path = strdup(path);
    j->reservation = reservation;
    j->body = patch;
    if (!j->uid || !j->path) {
        job_free(j);
        return VS_ERR_NOMEM;
    }
    pthread_mutex_lock(&a->mu);
    struct state *s = NULL;
    HASH_FIND_STR(a->states, uid, s);
    if (!s) {
        s = vs_slab_calloc(a->slab, sizeof(*s));
        if (!s || !(s->uid = vs_slab_strdup(a->slab, uid))) {
            vs_slab_put(a->slab, s);
            pthread_mutex_unlock(&a->mu);
            job_free(j);
            return VS_ERR_NOMEM;
        }
        HASH_ADD_KEYPTR(hh, a->states, s->uid, strlen(s->uid), s);
    }
    s->in_flight++;
    enqueue(a, j);
    pthread_mutex_unlock(&a->mu);
    return VS_OK;
}

void vs_async_forget(struct vs_async *a, const char *uid)
{
    if (!a || !uid || !*uid)
        return;
    pthread_mutex_lock(&a->mu);
    struct state *s = NULL;
    HASH_FIND_STR(a->states, uid, s);
    if (s) {
        if (s->in_flight == 0)
            state_del(a, s);
        else
            s->gone = true;
    }
    /* Its posted Warning keys; its queued Events are dropped (Events about a pod that is gone
     * would only load the API server: a burst's pods deleted right after it left hundreds of
     * Normal ones to be posted during the next burst); the one being posted is not remembered
     * once posted. */
    size_t n = strlen(uid);
    struct posted_pod *pp = NULL;
    HASH_FIND(hh, a->posted, uid, n, pp);
    if (pp)
        posted_drop(a, pp, true, 0);
    struct job *j;
    for (int c = Q_EVENT_FIRST; c < Q_COUNT; c++) {
        struct queue *q = &a->q[c];
        struct job **at = &q->head, *prev = NULL;
        while ((j = *at)) {
            if (key_uid_len(j->key) == n && memcmp(j->key, uid, n) == 0) {
                *at = j->next;
                if (q->tail == j)
                    q->tail = prev;
                q->len--;
                HASH_DEL(a->pending_events, j);
                a->event_bytes -= j->bytes;
                job_free(j);
            } else {
                prev = j;
                at = &j->next;
            }
        }
    }
    j = a->event_job;
    if (j && j->key && key_uid_len(j->key) == n && memcmp(j->key, uid, n) == 0)
        j->forgotten = true;
    pthread_mutex_unlock(&a->mu);
}

size_t vs_async_states(struct vs_async *a)
{
    pthread_mutex_lock(&a->mu);
    size_t n = HASH_COUNT(a->states);
    pthread_mutex_unlock(&a->mu);
    return n;
}

void vs_async_set_idle_ms(struct vs_async *a, int ms)
{
    pthread_mutex_lock(&a->mu);
    a->idle_ms = ms;
    pthread_mutex_unlock(&a->mu);
}

void vs_async_fail_thread_starts(struct vs_async *a, int n)
{
    pthread_mutex_lock(&a->mu);
    a->fail_starts = n;
    pthread_mutex_unlock(&a->mu);
}

size_t vs_async_threads(struct vs_async *a, size_t *started)
{
    size_t n = 0;
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i <= PATCH_WORKERS; i++)
        n += a->w[i].alive;
    if (started)
        *started = a->started_n;
    pthread_mutex_unlock(&a->mu);
    return n;
}

size_t vs_async_posted_keys(struct vs_async *a)
{
    pthread_mutex_lock(&a->mu);
    size_t n = a->n_posted;
    pthread_mutex_unlock(&a->mu);
    return n;
}

enum vs_err vs_async_patch_quiet(struct vs_async *a, const char *path, json_t *patch, bool warn)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j || !(j->path = strdup(path))) {
        free(j);
        json_decref(patch);
        return VS_ERR_NOMEM;
    }
    j->body = patch;
    j->warn = warn;
    pthread_mutex_lock(&a->mu);
    enqueue(a, j);
    pthread_mutex_unlock(&a->mu);
    return VS_OK;
}

void vs_async_event(struct vs_async *a, const char *ns, json_t *event)
{
    vs_async_event_lazy(a, ns, event, NULL, 0, NULL, NULL, NULL);
}

void vs_async_set_patch_gate(struct vs_async *a,
                             bool (*superseded)(void *ctx, const char *uid, uint64_t reservation),
                             void *ctx)
{
    a->superseded = superseded;
    a->superseded_ctx = ctx;
}

void vs_async_set_event_gate(struct vs_async *a, bool (*allowed)(void *ctx), void *ctx)
{
    a->events_allowed = allowed;
    a->events_ctx = ctx;
}

void vs_async_set_busy(struct vs_async *a, bool (*busy)(void *ctx), void *ctx)
{
    a->busy = busy;
    a->busy_ctx = ctx;
}

void vs_async_kick(struct vs_async *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    if (a->holding)
        pthread_cond_signal(&a->event_cv);
    pthread_mutex_unlock(&a->mu);
}

void vs_async_set_event_hold(struct vs_async *a, int ms, size_t max, size_t max_bytes)
{
    pthread_mutex_lock(&a->mu);
    a->hold_ms = ms;
    a->hold_max = max;
    a->hold_bytes = max_bytes;
    pthread_cond_signal(&a->event_cv);
    pthread_mutex_unlock(&a->mu);
}

bool vs_async_events_holding(struct vs_async *a)
{
    pthread_mutex_lock(&a->mu);
    bool h = a->holding;
    pthread_mutex_unlock(&a->mu);
    return h;
}

void vs_async_event_lazy(struct vs_async *a, const char *ns, json_t *event, const char *shape,
                         size_t ctx_bytes, char *(*build)(void *ctx), void *ctx,
                         void (*ctx_free)(void *ctx))
{
    struct job *j =
        a->events_allowed && !a->events_allowed(a->events_ctx) ? NULL : calloc(1, sizeof(*j));
    if (!j) {
        json_decref(event);
        if (ctx_free)
            ctx_free(ctx);
        return;
    }
    j->is_event = true;
    const char *type = json_string_value(json_object_get(event, "type"));
    j->warning = type && strcmp(type, "Warning") == 0;
    j->build = build;
    j->build_ctx = ctx;
    j->build_free = ctx_free;
    size_t n = strlen(ns) + 40;
    j->path = malloc(n);
    j->body = event;
    if (!j->path) {
        job_free(j);
        return;
    }
    snprintf(j->path, n, "/api/v1/namespaces/%s/events", ns);
    /* Key: the pod, the reason and the message without its numbers and node list, so a pod
     * refused again and again keeps one pending event per reason (the newest), and every pod's
     * events get out however many refusals kube-scheduler's retries produce. */
    const char *uid =
        json_string_value(json_object_get(json_object_get(event, "involvedObject"), "uid"));
    const char *reason = json_string_value(json_object_get(event, "reason"));
    const char *msg = shape ? shape : json_string_value(json_object_get(event, "message"));
    j->bytes = build ? ctx_bytes : msg ? strlen(msg) : 0;
    char key[512];
    size_t k = (size_t)snprintf(key, sizeof(key), "%s|%s|", uid ? uid : "", reason ? reason : "");
    for (const char *m = msg; m && *m && *m != '(' && k + 1 < sizeof(key); m++)
        if (*m < '0' || *m > '9')
            key[k++] = *m;
    key[k < sizeof(key) ? k : sizeof(key) - 1] = '\0';
    pthread_mutex_lock(&a->mu);
    struct job *q = NULL;
    HASH_FIND_STR(a->pending_events, key, q);
    if (q) {
        /* The newest wording of the same event replaces the queued one. */
        json_t *old = q->body;
        q->body = j->body;
        j->body = old;
        char *(*b)(void *) = q->build;
        void *c = q->build_ctx;
        void (*f)(void *) = q->build_free;
        q->build = j->build;
        q->build_ctx = j->build_ctx;
        q->build_free = j->build_free;
        a->event_bytes = a->event_bytes - q->bytes + j->bytes;
        size_t qb = q->bytes;
        q->bytes = j->bytes;
        j->bytes = qb;
        j->build = b;
        j->build_ctx = c;
        j->build_free = f;
        pthread_mutex_unlock(&a->mu);
        job_free(j);
        return;
    }
    j->key = strdup(key);
    if (!j->key || events_queued(a) >= EVENT_QUEUE_MAX ||
        a->event_bytes + j->bytes > EVENT_BYTES_MAX) {
        pthread_mutex_unlock(&a->mu);
        job_free(j); /* Events are best effort; scheduling never waits for them */
        return;
    }
    HASH_ADD_KEYPTR(hh, a->pending_events, j->key, strlen(j->key), j);
    a->event_bytes += j->bytes;
    j->queued_us = mono_us();
    enqueue(a, j);
    pthread_mutex_unlock(&a->mu);
}

size_t vs_async_events_pending(struct vs_async *a, size_t *bytes)
{
    pthread_mutex_lock(&a->mu);
    size_t n = events_queued(a);
    if (bytes)
        *bytes = a->event_bytes;
    pthread_mutex_unlock(&a->mu);
    return n;
}

size_t vs_async_patches_pending(struct vs_async *a)
{
    pthread_mutex_lock(&a->mu);
    size_t n = a->q[Q_PATCH].len;
    pthread_mutex_unlock(&a->mu);
    return n;
}

/* Caller holds mu. A Bind is waiting for this pod's patches: they move ahead of every patch no
 * Bind waits for, behind the ones moved earlier (waited-for patches form the head of the queue,
 * in the order their Binds came: under overload the oldest Bind is served first); the order of
 * one pod's patches and of everything else is kept. */
static void promote(struct vs_async *a, const char *uid)
{
    struct queue *q = &a->q[Q_PATCH];
    struct job *mine = NULL, **mine_end = &mine;
    struct job **at = &q->head; /* where they go: after the waited-for prefix */
    while (*at && (*at)->waited)
        at = &(*at)->next;
    struct job **pp = at;
    while (*pp) {
        struct job *j = *pp;
        if (j->uid && strcmp(j->uid, uid) == 0) {
            *pp = j->next;
            j->next = NULL;
            j->waited = true;
            *mine_end = j;
            mine_end = &j->next;
        } else {
            pp = &j->next;
        }
    }
    if (!mine)
        return;
    *mine_end = *at;
    *at = mine;
    q->tail = q->head;
    while (q->tail && q->tail->next)
        q->tail = q->tail->next;
}

json_t *vs_async_take_pod(struct vs_async *a, const char *uid)
{
    json_t *pod = NULL;
    pthread_mutex_lock(&a->mu);
    struct state *s = NULL;
    HASH_FIND_STR(a->states, uid, s);
    if (s && s->in_flight == 0 && !s->failed) {
        pod = s->pod;
        s->pod = NULL;
    }
    pthread_mutex_unlock(&a->mu);
    return pod;
}

size_t vs_async_pods_kept(struct vs_async *a)
{
    size_t n = 0;
    pthread_mutex_lock(&a->mu);
    struct state *s, *t;
    HASH_ITER(hh, a->states, s, t)
    n += s->pod != NULL;
    pthread_mutex_unlock(&a->mu);
    return n;
}

enum vs_err vs_async_wait(struct vs_async *a, const char *uid, int timeout_ms, struct vs_errbuf *eb)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    enum vs_err err = VS_OK;
    pthread_mutex_lock(&a->mu);
    promote(a, uid);
    for (;;) {
        struct state *s = NULL;
        HASH_FIND_STR(a->states, uid, s);
        if (!s)
            break;
        if (s->in_flight == 0) {
            if (s->failed)
                err = vs_err_set(eb, VS_ERR_KUBE,
                                 "recording the filter decision on the pod "
                                 "failed: %s",
                                 s->err ? s->err : "out of memory");
            break;
        }
        /* The patch is queued or being written. If no worker could be started for it
         * (pthread_create failed: threads or memory short), nobody would wake this wait before
         * the next job is queued: with no patch worker alive, start one now and then every
         * second of the wait (a live worker takes every queued job before it leaves). */
        bool any = false;
        for (int i = 0; i < PATCH_WORKERS && !any; i++)
            any = a->w[i].alive;
        if (!any)
            ensure_worker(a, false);
        struct timespec slice;
        clock_gettime(CLOCK_REALTIME, &slice);
        slice.tv_sec += 1;
        bool last = slice.tv_sec > deadline.tv_sec ||
                    (slice.tv_sec == deadline.tv_sec && slice.tv_nsec >= deadline.tv_nsec);
        a->waiters++;
        int rc = pthread_cond_timedwait(&a->done_cv, &a->mu, last ? &deadline : &slice);
        a->waiters--;
        if (rc != 0 && last) {
            err = vs_err_set(eb, VS_ERR_TIMEOUT,
                             "timed out waiting for the filter decision to be recorded on the pod");
            break;
        }
    }
    pthread_mutex_unlock(&a->mu);
    return err;
}
