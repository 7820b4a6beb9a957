/* memtrim: one thread sleeping a second at a time on a monotonic condition variable; `mu`
 * guards the policy, the trim count and the stop flag. */
#include "memtrim.h"

#include "log.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct vs_memtrim {
    struct vs_memtrim_opts o;
    struct vs_memtrim_policy p;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, stop;
    uint64_t trims;
};

void vs_memtrim_policy_init(struct vs_memtrim_policy *p, double quiet_s, double min_interval_s)
{
    *p = (struct vs_memtrim_policy){
        .quiet_s = quiet_s, .min_interval_s = min_interval_s, .trimmed_at = -1};
}

bool vs_memtrim_due(struct vs_memtrim_policy *p, uint64_t activity, double now)
{
    if (!p->started || activity != p->seen) {
        p->started = true;
        p->seen = activity;
        p->changed_at = now;
        return false;
    }
    if (activity == p->trimmed || now - p->changed_at < p->quiet_s ||
        (p->trimmed_at >= 0 && now - p->trimmed_at < p->min_interval_s))
        return false;
    p->trimmed = activity;
    p->trimmed_at = now;
    return true;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void vs_memtrim_tick(struct vs_memtrim *t, double now)
{
    uint64_t a = t->o.activity ? t->o.activity(t->o.ctx) : 0;
    pthread_mutex_lock(&t->mu);
    bool due = vs_memtrim_due(&t->p, a, now);
    if (due)
        t->trims++;
    pthread_mutex_unlock(&t->mu);
    if (due) {
        int released = malloc_trim(0);
        if (vs_log_enabled(VS_LOG_DEBUG))
            vs_log(VS_LOG_DEBUG, "memory_trimmed", "released=%s", released ? "yes" : "no");
    }
}

static void *loop(void *arg)
{
    struct vs_memtrim *t = arg;
    pthread_setname_np(pthread_self(), "vs-memtrim");
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->mu);
        vs_memtrim_tick(t, mono());
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

struct vs_memtrim *vs_memtrim_start(const struct vs_memtrim_opts *o)
{
    struct vs_memtrim *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->o = *o;
    vs_memtrim_policy_init(&t->p, o->quiet_s, o->min_interval_s);
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (o->thread) {
        if (pthread_create(&t->thread, NULL, loop, t) != 0) {
            vs_memtrim_free(t);
            return NULL;
        }
        t->started = true;
    }
    return t;
}

uint64_t vs_memtrim_trims(struct vs_memtrim *t)
{
    pthread_mutex_lock(&t->mu);
    uint64_t n = t->trims;
    pthread_mutex_unlock(&t->mu);
    return n;
}

void vs_memtrim_free(struct vs_memtrim *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (t->started)
        pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
