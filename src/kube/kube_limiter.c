/* kube_limiter: the client-side token bucket behind --kube-qps and --kube-burst. Pure clock
 * math (the caller passes the time), shared by every thread of one client under its mutex. */
#include <pthread.h>
#include <string.h>

#include "kube_internal.h"

void vs_kube_limiter_init(struct vs_kube_limiter *l, double qps, int burst)
{
    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->mu, NULL);
    l->qps = qps;
    l->burst = burst < 1 ? 1 : burst;
}

void vs_kube_limiter_cleanup(struct vs_kube_limiter *l)
{
    pthread_mutex_destroy(&l->mu);
}

double vs_kube_limiter_reserve(struct vs_kube_limiter *l, double now)
{
    double wait = 0;
    if (l->qps <= 0)
        return 0;
    pthread_mutex_lock(&l->mu);
    if (!l->started) {
        l->started = true;
        l->tokens = l->burst;
        l->last = now;
    }
    if (now > l->last) {
        l->tokens += (now - l->last) * l->qps;
        if (l->tokens > l->burst)
            l->tokens = l->burst;
        l->last = now;
    }
    l->tokens -= 1;
    if (l->tokens < 0)
        wait = -l->tokens / l->qps;
    pthread_mutex_unlock(&l->mu);
    return wait;
}
