/* access: SelfSubjectAccessReviews at start-up and for the re-checks, and the state of the
 * optional APIs. `mu` guards the states' transitions (so each is logged once, in order) and the
 * re-check thread's sleep; `avail` is also read without it (atomics) on the request paths. */
#include "access.h"

#include "buf.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_RETRY_S 60.0
#define MAX_VERBS       4

/* A permission: verbs on group/resource[/subresource]. */
struct perm {
    const char *group, *resource, *sub;
    const char *verbs[MAX_VERBS + 1]; /* NULL-terminated */
};

/* What Filter, Bind and the caches need; all cluster-wide. */
static const struct perm REQUIRED[] = {
    {"", "nodes", "", {"get", "list", "watch", "patch"}},
    {"", "pods", "", {"get", "list", "watch", "patch"}},
    {"", "pods", "binding", {"create"}},
    {"", "resourcequotas", "", {"list", "watch"}},
};

struct optdef {
    const char *api;     /* label value: the resource as `kubectl auth can-i` names it */
    const char *feature; /* label value */
    const char *effect;  /* how the feature degrades while the API is missing */
    struct perm p;
    bool in_lease_ns; /* a namespaced permission (the Lease's namespace) */
    bool informer;    /* an informer reads it (and re-tries it itself) */
};

static const struct optdef OPT[VS_API_COUNT] = {
    [VS_API_PDB] = {"poddisruptionbudgets.policy",
                    "pdb-aware-preemption",
                    "preemption ignores PodDisruptionBudgets",
                    {"policy", "poddisruptionbudgets", "", {"list", "watch"}},
                    false,
                    true},
    [VS_API_EVICTION] = {"pods/eviction",
                         "filter-preemption",
                         "filter-mode preemption is off",
                         {"", "pods", "eviction", {"create"}},
                         false,
                         false},
    [VS_API_LEASE] = {"leases.coordination.k8s.io",
                      "leader-election",
                      "the Lease is not followed: this replica acts as the leader",
                      {"coordination.k8s.io", "leases", "", {"get", "list", "watch"}},
                      true,
                      true},
    [VS_API_EVENTS] =
        {"events", "events", "Events are not posted", {"", "events", "", {"create"}}, false, false},
    [VS_API_DRA_CLASSES] = {"deviceclasses.resource.k8s.io",
                            "dra-guard",
                            "DeviceClasses that map a GPU resource to DRA are not reported",
                            {"resource.k8s.io", "deviceclasses", "", {"list", "watch"}},
                            false,
                            true},
    [VS_API_DRA_SLICES] = {"resourceslices.resource.k8s.io",
                           "dra-ledger",
                           "DRA claims on HAMi cards are not counted",
                           {"resource.k8s.io", "resourceslices", "", {"list", "watch"}},
                           false,
                           true},
    [VS_API_DRA_CLAIMS] = {"resourceclaims.resource.k8s.io",
                           "dra-ledger",
                           "DRA claims on HAMi cards are not counted",
                           {"resource.k8s.io", "resourceclaims", "", {"list", "watch"}},
                           false,
                           true},
};

struct vs_access {
    struct vs_kube *k;
    bool use[VS_API_COUNT];
    char *lease_ns;
    double retry_s;
    atomic_bool avail[VS_API_COUNT];
    pthread_mutex_t mu;            /* guards why, ssar_ok, stop and the transitions of avail */
    pthread_cond_t cv;             /* wakes the re-check thread on stop */
    enum vs_err why[VS_API_COUNT]; /* VS_ERR_AUTH or VS_ERR_NOTFOUND while missing */
    bool ssar_ok;                  /* SelfSubjectAccessReviews work */
    bool stop;
    pthread_t thread;
    bool started;
};

struct vs_access *vs_access_new(struct vs_kube *k, const struct vs_access_opts *o)
{
    struct vs_access *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->k = k;
    memcpy(a->use, o->use, sizeof(a->use));
    a->lease_ns = strdup(o->lease_ns ? o->lease_ns : "");
    a->retry_s = o->retry_s > 0 ? o->retry_s : DEFAULT_RETRY_S;
    a->ssar_ok = true;
    for (int i = 0; i < VS_API_COUNT; i++)
        atomic_init(&a->avail[i], true);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&a->mu, NULL);
    if (!a->lease_ns) {
        vs_access_free(a);
        return NULL;
    }
    return a;
}

void vs_access_free(struct vs_access *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (a->started)
        pthread_join(a->thread, NULL);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a->lease_ns);
    free(a);
}

double vs_access_retry_s(const struct vs_access *a)
{
    return a ? a->retry_s : DEFAULT_RETRY_S;
}

bool vs_access_available(const struct vs_access *a, enum vs_api api)
{
    return !a || api < 0 || api >= VS_API_COUNT || !a->use[api] ||
           atomic_load(&((struct vs_access *)a)->avail[api]);
}

/* "list, watch" */
static void verbs_text(const struct perm *p, const bool *missing, char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; p->verbs[i] && o < n; i++)
        if (!missing || missing[i])
            o += (size_t)snprintf(out + o, n - o, "%s%s", o ? ", " : "", p->verbs[i]);
}

/* ["list", "watch"] */
static void verbs_yaml(const struct perm *p, const bool *missing, char *out, size_t n)
{
    size_t o = (size_t)snprintf(out, n, "[");
    bool first = true;
    for (int i = 0; p->verbs[i] && o < n; i++) {
        if (missing && !missing[i])
            continue;
        o += (size_t)snprintf(out + o, n - o, "%s\"%s\"", first ? "" : ", ", p->verbs[i]);
        first = false;
    }
    if (o < n)
        snprintf(out + o, n - o, "]");
}

/* "pods/binding", "poddisruptionbudgets.policy": the resource as RBAC and kubectl name it. */
static void resource_name(const struct perm *p, bool qualified, char *out, size_t n)
{
    snprintf(out, n, "%s%s%s%s%s", p->resource, *p->sub ? "/" : "", p->sub,
             qualified && *p->group ? "." : "", qualified ? p->group : "");
}

static const char *reason_word(enum vs_err why)
{
    return why == VS_ERR_NOTFOUND ? "not_served" : "forbidden";
}

void vs_access_report(struct vs_access *a, enum vs_api api, enum vs_err err)
{
    if (!a || api < 0 || api >= VS_API_COUNT || !a->use[api])
        return;
    if (err != VS_OK && err != VS_ERR_AUTH && err != VS_ERR_NOTFOUND)
        return; /* a transient failure says nothing about access */
    bool avail = err == VS_OK;
    pthread_mutex_lock(&a->mu);
    bool was = atomic_load(&a->avail[api]);
    if (!avail)
        a->why[api] = err;
    atomic_store(&a->avail[api], avail);
    const struct optdef *d = &OPT[api];
    char verbs[64], res[96];
    verbs_text(&d->p, NULL, verbs, sizeof(verbs));
    resource_name(&d->p, true, res, sizeof(res));
    if (was && !avail) {
        char perm[256], qp[300], qe[200];
        if (d->in_lease_ns)
            snprintf(perm, sizeof(perm), "%s %s in namespace %s", verbs, res, a->lease_ns);
        else
            snprintf(perm, sizeof(perm), "%s %s", verbs, res);
        vs_log(VS_LOG_WARN, "optional_api_missing",
               "api=%s permission=%s reason=%s feature=%s effect=%s retry_s=%g", d->api,
               vs_log_quote(perm, qp, sizeof(qp)), reason_word(err), d->feature,
               vs_log_quote(d->effect, qe, sizeof(qe)), a->retry_s);
    } else if (!was && avail) {
        vs_log(VS_LOG_INFO, "optional_api_available", "api=%s feature=%s", d->api, d->feature);
    }
    pthread_mutex_unlock(&a->mu);
}

/* One SelfSubjectAccessReview. VS_OK with *allowed, or the request's error. */
static enum vs_err ssar(struct vs_kube *k, const char *ns, const char *verb, const struct perm *p,
                        bool *allowed, struct vs_errbuf *eb)
{
    json_t *ra =
        json_pack("{s:s,s:s,s:s}", "verb", verb, "group", p->group, "resource", p->resource);
    if (ra && *p->sub)
        json_object_set_new(ra, "subresource", json_string(p->sub));
    if (ra && ns && *ns)
        json_object_set_new(ra, "namespace", json_string(ns));
    json_t *body =
        ra ? json_pack("{s:s,s:s,s:{s:o}}", "apiVersion", "authorization.k8s.io/v1", "kind",
                       "SelfSubjectAccessReview", "spec", "resourceAttributes", ra)
           : NULL;
    if (!body)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    json_t *out = NULL;
    enum vs_err err =
        vs_kube_post(k, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body, &out, eb);
    json_decref(body);
    if (!err) {
        json_t *st = json_object_get(json_object_get(out, "status"), "allowed");
        if (json_is_boolean(st))
            *allowed = json_is_true(st);
        else
            err = vs_err_set(eb, VS_ERR_KUBE,
                             "POST selfsubjectaccessreviews: the answer has no status.allowed");
    }
    json_decref(out);
    return err;
}

/* Checks every verb of p; missing[i] set for the denied ones. Returns how many are missing, -1
 * when a review failed (eb). */
static int check_perm(struct vs_access *a, const struct perm *p, const char *ns, bool *missing,
                      struct vs_errbuf *eb)
{
    int n = 0;
    for (int i = 0; p->verbs[i]; i++) {
        bool ok = false;
        if (ssar(a->k, ns, p->verbs[i], p, &ok, eb))
            return -1;
        missing[i] = !ok;
        n += !ok;
    }
    return n;
}

/* The user the API server sees (a SelfSubjectReview), new string; NULL when it cannot say. */
static char *whoami(struct vs_kube *k)
{
    json_t *body = json_pack("{s:s,s:s}", "apiVersion", "authentication.k8s.io/v1", "kind",
                             "SelfSubjectReview");
    json_t *out = NULL;
    struct vs_errbuf eb;
    char *user = NULL;
    if (body &&
        !vs_kube_post(k, "/apis/authentication.k8s.io/v1/selfsubjectreviews", body, &out, &eb)) {
        const char *u = json_string_value(json_object_get(
            json_object_get(json_object_get(out, "status"), "userInfo"), "username"));
        if (u && *u)
            user = strdup(u);
    }
    json_decref(body);
    json_decref(out);
    return user;
}

static void ssar_failed(struct vs_access *a, const struct vs_errbuf *eb)
{
    char q[VS_ERRBUF_SIZE + 8];
    pthread_mutex_lock(&a->mu);
    a->ssar_ok = false;
    pthread_mutex_unlock(&a->mu);
    vs_log(VS_LOG_WARN, "access_review_failed",
           "error=%s note=\"permissions are not checked at start-up; a missing one shows as the "
           "API's errors\"",
           vs_log_quote(eb->msg, q, sizeof(q)));
}

enum vs_err vs_access_check(struct vs_access *a, struct vs_errbuf *eb)
{
    struct vs_errbuf e;
    struct vs_buf msg;
    vs_buf_init(&msg);
    char *user = NULL;
    int missing_rules = 0, shown = 0;
    for (size_t r = 0; r < sizeof(REQUIRED) / sizeof(REQUIRED[0]); r++) {
        const struct perm *p = &REQUIRED[r];
        bool missing[MAX_VERBS] = {false};
        int n = check_perm(a, p, NULL, missing, &e);
        if (n < 0) {
            ssar_failed(a, &e);
            free(user);
            vs_buf_cleanup(&msg);
            return VS_OK;
        }
        if (!n)
            continue;
        if (!user && !(user = whoami(a->k)))
            user = strdup("vgpu-sched's user");
        char verbs[64], yaml[96], res[96], text[VS_ERRBUF_SIZE];
        verbs_text(p, missing, verbs, sizeof(verbs));
        verbs_yaml(p, missing, yaml, sizeof(yaml));
        resource_name(p, false, res, sizeof(res));
        snprintf(text, sizeof(text),
                 "missing permission: %s %s (add rule apiGroups [\"%s\"] resources [\"%s\"] "
                 "verbs %s to the ClusterRole bound to %s)",
                 verbs, res, p->group, res, yaml, user ? user : "vgpu-sched's user");
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_ERROR, "missing_permission", "msg=%s", vs_log_quote(text, q, sizeof(q)));
        missing_rules++;
        /* The error line keeps what fits its buffer (the log has every rule). */
        if (msg.len + strlen(text) + 2 < VS_ERRBUF_SIZE - 32) {
            vs_buf_printf(&msg, "%s%s", msg.len ? "; " : "", text);
            shown++;
        }
    }
    free(user);
    if (missing_rules) {
        if (shown < missing_rules)
            vs_buf_printf(&msg, "; and %d more (see the log)", missing_rules - shown);
        vs_err_set(eb, VS_ERR_AUTH, "%s", msg.data ? msg.data : "missing permissions");
        vs_buf_cleanup(&msg);
        return VS_ERR_AUTH;
    }
    vs_buf_cleanup(&msg);
    for (int api = 0; api < VS_API_COUNT; api++) {
        if (!a->use[api])
            continue;
        bool missing[MAX_VERBS] = {false};
        int n = check_perm(a, &OPT[api].p, OPT[api].in_lease_ns ? a->lease_ns : NULL, missing, &e);
        if (n < 0) {
            ssar_failed(a, &e);
            return VS_OK;
        }
        if (n)
            vs_access_report(a, (enum vs_api)api, VS_ERR_AUTH);
    }
    return VS_OK;
}

/* The re-checks of the missing optional permissions no informer reads. */
static void *recheck_main(void *arg)
{
    struct vs_access *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long ns = (long long)ts.tv_nsec + (long long)(a->retry_s * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        while (!a->stop && pthread_cond_timedwait(&a->cv, &a->mu, &ts) != ETIMEDOUT)
            ;
        if (a->stop)
            break;
        bool due[VS_API_COUNT] = {false};
        for (int api = 0; api < VS_API_COUNT; api++)
            due[api] =
                a->ssar_ok && a->use[api] && !OPT[api].informer && !atomic_load(&a->avail[api]);
        pthread_mutex_unlock(&a->mu);
        for (int api = 0; api < VS_API_COUNT; api++) {
            if (!due[api])
                continue;
            bool missing[MAX_VERBS] = {false};
            struct vs_errbuf e;
            int n =
                check_perm(a, &OPT[api].p, OPT[api].in_lease_ns ? a->lease_ns : NULL, missing, &e);
            if (n >= 0)
                vs_access_report(a, (enum vs_api)api, n ? VS_ERR_AUTH : VS_OK);
        }
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

enum vs_err vs_access_start(struct vs_access *a, struct vs_errbuf *eb)
{
    if (pthread_create(&a->thread, NULL, recheck_main, a) != 0)
        return vs_err_set(eb, VS_ERR_NOMEM, "cannot start the access re-check thread");
    a->started = true;
    return VS_OK;
}

char *vs_access_metrics(const struct vs_access *a)
{
    struct vs_buf b;
    vs_buf_init(&b);
    bool any = false;
    for (int api = 0; a && api < VS_API_COUNT; api++) {
        if (!a->use[api])
            continue;
        if (!any)
            vs_buf_puts(&b, "# HELP vgpu_sched_optional_api_available 1 when an optional API "
                            "vgpu-sched uses is allowed and served, 0 when it is not and the "
                            "feature is degraded.\n"
                            "# TYPE vgpu_sched_optional_api_available gauge\n");
        any = true;
        vs_buf_printf(&b, "vgpu_sched_optional_api_available{api=\"%s\",feature=\"%s\"} %d\n",
                      OPT[api].api, OPT[api].feature, vs_access_available(a, (enum vs_api)api));
    }
    if (!any)
        return strdup("");
    return vs_buf_steal(&b);
}

json_t *vs_access_degraded(const struct vs_access *ca)
{
    struct vs_access *a = (struct vs_access *)ca;
    json_t *arr = json_array();
    for (int api = 0; a && arr && api < VS_API_COUNT; api++) {
        if (vs_access_available(a, (enum vs_api)api))
            continue;
        pthread_mutex_lock(&a->mu);
        enum vs_err why = a->why[api];
        pthread_mutex_unlock(&a->mu);
        json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s}", "api", OPT[api].api, "feature",
                                             OPT[api].feature, "effect", OPT[api].effect, "reason",
                                             reason_word(why)));
    }
    return arr;
}
