/* leader: a Lease watcher thread, a term monitor thread and a role-labelling thread. `mu`
 * guards holder, duration, observed_at and the term fields; hooks run without it, only on the
 * monitor thread (term_mu serialises vs_leader_tick callers, so hooks never overlap). */
#include "leader.h"

#include "access.h"
#include "annot.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct vs_leader {
    struct vs_kube *k;
    struct vs_leader_opts o;
    char *lease_name, *lease_ns, *pod_name, *pod_ns;
    pthread_mutex_t mu;
    char *holder;
    long long duration;
    long long observed_at;
    volatile int stop;
    pthread_t watch_thread, label_thread;
    bool watching, labelling;
    int last_role; /* -1 unknown, 0 follower, 1 leader (as last labelled) */
    struct vs_leader_hooks hooks;
    pthread_mutex_t term_mu; /* one tick at a time */
    uint64_t term;           /* current or last term number */
    bool in_term, ready, served;
    pthread_t monitor_thread;
    bool monitoring;
};

bool vs_leader_decide(const char *holder, const char *pod_name, long long observed_at,
                      long long duration_s, long long now)
{
    if (!holder || !pod_name || !*pod_name)
        return false;
    size_t n = strlen(pod_name);
    if (strncmp(holder, pod_name, n) != 0 || (holder[n] != '_' && holder[n] != '\0'))
        return false;
    return observed_at + duration_s > now;
}

static char *dup0(const char *s)
{
    return strdup(s ? s : "");
}

struct vs_leader *vs_leader_new(struct vs_kube *k, const struct vs_leader_opts *o,
                                struct vs_errbuf *eb)
{
    struct vs_leader *l = calloc(1, sizeof(*l));
    if (!l) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    l->k = k;
    l->o = *o;
    l->lease_name = dup0(o->lease_name);
    l->lease_ns = dup0(o->lease_ns);
    l->pod_name = dup0(o->pod_name);
    l->pod_ns = dup0(o->pod_ns);
    l->last_role = -1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->term_mu, NULL);
    if (o->enabled && (!*l->lease_name || !*l->lease_ns || !*l->pod_name)) {
        vs_err_set(eb, VS_ERR_INVAL,
                   "--leader-elect needs --leader-elect-resource-name, "
                   "--leader-elect-resource-namespace and the POD_NAME environment variable");
        vs_leader_free(l);
        return NULL;
    }
    return l;
}

/* With --leader-elect: the Lease cannot be read, so it is not followed (leader.h). */
static bool lease_blind(const struct vs_leader *l)
{
    return !vs_access_available(l->o.access, VS_API_LEASE);
}

bool vs_leader_is(struct vs_leader *l)
{
    if (!l || !l->o.enabled || lease_blind(l))
        return true;
    pthread_mutex_lock(&l->mu);
    bool r = vs_leader_decide(l->holder, l->pod_name, l->observed_at, l->duration,
                              (long long)time(NULL));
    pthread_mutex_unlock(&l->mu);
    return r;
}

static bool leads_at(struct vs_leader *l, long long now)
{
    if (!l->o.enabled || lease_blind(l))
        return true;
    return vs_leader_decide(l->holder, l->pod_name, l->observed_at, l->duration, now);
}

uint64_t vs_leader_term(struct vs_leader *l, enum vs_term_state *state)
{
    if (!l) {
        if (state)
            *state = VS_TERM_SERVING;
        return 1;
    }
    pthread_mutex_lock(&l->mu);
    enum vs_term_state st = !l->in_term || !leads_at(l, (long long)time(NULL)) ? VS_TERM_FOLLOWER
                            : l->ready                                         ? VS_TERM_SERVING
                                                                               : VS_TERM_STARTING;
    uint64_t t = st == VS_TERM_SERVING ? l->term : 0;
    pthread_mutex_unlock(&l->mu);
    if (state)
        *state = st;
    return t;
}

void vs_leader_set_hooks(struct vs_leader *l, const struct vs_leader_hooks *h)
{
    l->hooks = *h;
}

void vs_leader_tick(struct vs_leader *l, long long now)
{
    pthread_mutex_lock(&l->term_mu);
    pthread_mutex_lock(&l->mu);
    bool lead = leads_at(l, now), was = l->in_term, ready = l->ready;
    uint64_t term = l->term;
    if (was && !lead) {
        l->in_term = l->ready = false;
    }
    pthread_mutex_unlock(&l->mu);
    if (was && !lead) {
        vs_log(VS_LOG_WARN, "leader_term_end", "term=%llu", (unsigned long long)term);
        if (l->hooks.end)
            l->hooks.end(l->hooks.ctx, term);
    } else if (!was && lead) {
        pthread_mutex_lock(&l->mu);
        term = ++l->term;
        l->served = false;
        pthread_mutex_unlock(&l->mu);
        vs_log(VS_LOG_INFO, "leader_term_start", "term=%llu", (unsigned long long)term);
        if (l->hooks.start)
            l->hooks.start(l->hooks.ctx, term);
        /* in_term only after start ran: a Filter never sees a term whose old state is not
         * dropped yet. */
        pthread_mutex_lock(&l->mu);
        l->in_term = true;
        pthread_mutex_unlock(&l->mu);
    } else if (was && !ready) {
        if (!l->hooks.ready || l->hooks.ready(l->hooks.ctx, term)) {
            pthread_mutex_lock(&l->mu);
            l->ready = true;
            pthread_mutex_unlock(&l->mu);
            vs_log(VS_LOG_INFO, "leader_term_serving", "term=%llu", (unsigned long long)term);
        }
    } else if (was && ready && !l->served) {
        l->served = true;
        if (l->hooks.serving)
            l->hooks.serving(l->hooks.ctx, term);
    }
    pthread_mutex_unlock(&l->term_mu);
}

void vs_leader_observe(struct vs_leader *l, const char *holder, long long duration_s,
                       long long observed_at)
{
    pthread_mutex_lock(&l->mu);
    free(l->holder);
    l->holder = holder ? strdup(holder) : NULL;
    l->duration = duration_s > 0 ? duration_s : 15;
    l->observed_at = observed_at;
    pthread_mutex_unlock(&l->mu);
}

static void on_lease(void *ctx, const char *type, json_t *obj)
{
    struct vs_leader *l = ctx;
    json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!name || strcmp(name, l->lease_name) != 0)
        return;
    json_t *spec = json_object_get(obj, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    json_int_t dur = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    vs_leader_observe(l, strcmp(type, "DELETED") == 0 ? NULL : holder, dur, (long long)time(NULL));
}

static void *monitor_main(void *arg)
{
    struct vs_leader *l = arg;
    while (!__atomic_load_n(&l->stop, __ATOMIC_SEQ_CST)) {
        vs_leader_tick(l, (long long)time(NULL));
        usleep(50 * 1000);
    }
    return NULL;
}

/* The Lease informer's refusals and successes tell access whether the Lease can be followed. */
static void on_lease_error(void *ctx, enum vs_err err, const char *msg)
{
    struct vs_leader *l = ctx;
    if (err == VS_ERR_AUTH || err == VS_ERR_NOTFOUND) {
        vs_access_report(l->o.access, VS_API_LEASE, err);
        return;
    }
    char q[VS_ERRBUF_SIZE + 8];
    vs_log(err == VS_ERR_GONE ? VS_LOG_INFO : VS_LOG_WARN, "watch_error", "kind=Lease error=%s",
           vs_log_quote(msg, q, sizeof(q)));
}

static void on_lease_synced(void *ctx)
{
    struct vs_leader *l = ctx;
    vs_access_report(l->o.access, VS_API_LEASE, VS_OK);
}

static void *watch_main(void *arg)
{
    struct vs_leader *l = arg;
    char path[512];
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->lease_ns);
    struct vs_informer_handlers h = {.object = on_lease,
                                     .synced = on_lease_synced,
                                     .error = on_lease_error,
                                     .denied_retry_s = vs_access_retry_s(l->o.access)};
    vs_kube_informer_run(l->k, path, NULL, &h, l, &l->stop);
    return NULL;
}

static void label_pod(struct vs_leader *l, const char *name, const char *role)
{
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", l->pod_ns, name);
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", VS_LABEL_SCHED_ROLE, role);
    struct vs_errbuf eb;
    if (patch && vs_kube_merge_patch(l->k, path, patch, NULL, &eb)) {
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_WARN, "role_label_failed", "pod=%s role=%s error=%s", name, role,
               vs_log_quote(eb.msg, q, sizeof(q)));
    }
    json_decref(patch);
}

struct follower_ctx {
    struct vs_leader *l;
};

static int label_follower(void *ctx, json_t *item)
{
    struct vs_leader *l = ctx;
    json_t *md = json_object_get(item, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *role =
        json_string_value(json_object_get(json_object_get(md, "labels"), VS_LABEL_SCHED_ROLE));
    if (name && strcmp(name, l->pod_name) != 0 && (!role || strcmp(role, "follower") != 0))
        label_pod(l, name, "follower");
    return 0;
}

static void *label_main(void *arg)
{
    struct vs_leader *l = arg;
    int ticks = 0;
    while (!__atomic_load_n(&l->stop, __ATOMIC_SEQ_CST)) {
        int role = vs_leader_is(l) ? 1 : 0;
        if (role != l->last_role || ticks >= 100) {
            ticks = 0;
            label_pod(l, l->pod_name, role ? "leader" : "follower");
            if (role) {
                char path[600];
                snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", l->pod_ns);
                char *rv = NULL;
                struct vs_errbuf eb;
                vs_kube_list(l->k, path, "app.kubernetes.io/component=hami-scheduler", 100,
                             label_follower, l, &rv, &eb);
                free(rv);
            }
            if (role != l->last_role)
                vs_log(VS_LOG_INFO, "leader_role", "role=%s", role ? "leader" : "follower");
            l->last_role = role;
        }
        usleep(100 * 1000);
        ticks++;
    }
    return NULL;
}

enum vs_err vs_leader_start(struct vs_leader *l, struct vs_errbuf *eb)
{
    if (l->o.enabled) {
        if (pthread_create(&l->watch_thread, NULL, watch_main, l) != 0)
            return vs_err_set(eb, VS_ERR_NOMEM, "cannot start the lease watcher");
        l->watching = true;
    }
    if (pthread_create(&l->monitor_thread, NULL, monitor_main, l) != 0)
        return vs_err_set(eb, VS_ERR_NOMEM, "cannot start the term monitor");
    l->monitoring = true;
    if (*l->pod_name && *l->pod_ns) {
        if (pthread_create(&l->label_thread, NULL, label_main, l) != 0)
            return vs_err_set(eb, VS_ERR_NOMEM, "cannot start the role labeller");
        l->labelling = true;
    }
    return VS_OK;
}

void vs_leader_free(struct vs_leader *l)
{
    if (!l)
        return;
    __atomic_store_n(&l->stop, 1, __ATOMIC_SEQ_CST);
    if (l->watching)
        pthread_join(l->watch_thread, NULL);
    if (l->labelling)
        pthread_join(l->label_thread, NULL);
    if (l->monitoring)
        pthread_join(l->monitor_thread, NULL);
    free(l->holder);
    free(l->lease_name);
    free(l->lease_ns);
    free(l->pod_name);
    free(l->pod_ns);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->term_mu);
    free(l);
}
