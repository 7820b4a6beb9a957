/* test_access: vgpu-sched under HAMi v2.10's scheduler RBAC (the fake API's authorization table
 * holds what HAMi's chart grants: its ClusterRole, and its Role for the Lease). Each optional API
 * refused (403) or not served (404) — PodDisruptionBudgets, pods/eviction, the Lease, events —
 * leaves /readyz 200 with the feature named in "degraded", Filter and Bind working, exactly one
 * log line naming the permission, the feature and how it degrades, and
 * vgpu_sched_optional_api_available 0; a grant later brings it back (one line, metric 1). A
 * missing permission Filter or Bind needs stops the start (exit 2) with the rule to add;
 * SelfSubjectAccessReviews that cannot be made only warn; embedded mode allows everything. */
#include "fakeapi.h"
#include "harness.h"
#include "log.h"
#include "serve.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <sys/socket.h>

#define USER "system:serviceaccount:kube-system:hami-scheduler"

static struct vs_fakeapi *api;
static struct vs_service *svc;
static struct vs_harness h;
static char logpath[200];

static void put(char *json)
{
    cr_assert_neq(vs_fakeapi_put(api, json), 0, "fake API refused %s", json);
    free(json);
}

static void setup(void)
{
    api = vs_harness_fakeapi(&h);
    snprintf(logpath, sizeof(logpath), "%s/service.log", h.dir);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    cr_assert_geq(fd, 0);
    vs_log_setup(VS_LOG_INFO, false, fd);
    put(vs_harness_node("n1", 1, 15360));
    put(vs_harness_pod("p", "uid-p", "1000", "10"));
}

static void teardown(void)
{
    vs_service_stop(svc);
    svc = NULL;
    vs_fakeapi_stop(api);
    api = NULL;
    vs_harness_cleanup(&h);
}

TestSuite(access, .init = setup, .fini = teardown, .timeout = 120);

/* What HAMi v2.10's chart grants its scheduler's ServiceAccount: the ClusterRole
 * (charts/hami/templates/scheduler/clusterrole.yaml) and, in the release namespace, the Role for
 * the Lease (role.yaml). */
static void grant_hami_clusterrole(void)
{
    vs_fakeapi_set_user(api, USER);
    cr_assert(vs_fakeapi_allow(api, "", "pods", "get,list,watch,patch", NULL));
    cr_assert(vs_fakeapi_allow(api, "", "configmaps", "get,list,watch,patch", NULL));
    cr_assert(vs_fakeapi_allow(api, "", "pods/binding", "create", NULL));
    cr_assert(vs_fakeapi_allow(api, "", "nodes", "get,list,patch,watch", NULL));
    cr_assert(vs_fakeapi_allow(api, "", "events", "create,get,list", NULL));
    cr_assert(vs_fakeapi_allow(api, "", "resourcequotas", "get,list,watch", NULL));
}

/* What vgpu-sched's own chart adds for the DRA guard and the DRA ledger (not in HAMi's). */
static void grant_dra(void)
{
    cr_assert(vs_fakeapi_allow(api, "resource.k8s.io", "deviceclasses", "list,watch", NULL));
    cr_assert(vs_fakeapi_allow(api, "resource.k8s.io", "resourceslices", "list,watch", NULL));
    cr_assert(vs_fakeapi_allow(api, "resource.k8s.io", "resourceclaims", "list,watch", NULL));
}

static void grant_hami_role(void)
{
    cr_assert(vs_fakeapi_allow(api, "coordination.k8s.io", "leases",
                               "create,list,watch,get,update,patch", "kube-system"));
}

/* The lines of the service's log, each from "level=" on (the timestamp cut), that contain
 * `what`, joined with '\n'; "" when none. New string. */
static char *log_lines(const char *what)
{
    return vs_harness_log_lines(logpath, what);
}

/* Waits (10 s at most) until the log has a line containing `what`. */
static void wait_log(const char *what)
{
    for (int i = 0; i < 500; i++) {
        char *l = log_lines(what);
        bool found = *l != '\0';
        free(l);
        if (found)
            return;
        usleep(20 * 1000);
    }
    cr_assert_fail("no log line with %s", what);
}

static long get(int port, bool plain, const char *path, char **out)
{
    struct vs_harness hh = h;
    if (plain)
        hh.scheme = "http";
    long st = vs_harness_call(&hh, port, "GET", path, NULL, NULL, 0, out);
    cr_assert_neq(st, 0, "GET %s: %s", path, *out);
    return st;
}

/* Waits (10 s at most) for /readyz 200 and returns its body (new string). */
static char *wait_ready(void)
{
    char *out = NULL;
    for (int i = 0; i < 500; i++) {
        if (get(vs_service_port(svc), false, "/readyz", &out) == 200)
            return out;
        free(out);
        usleep(20 * 1000);
    }
    cr_assert_fail("/readyz never 200");
    return NULL;
}

/* The lines of /metrics that start with `prefix`, joined with '\n'. New string. */
static char *metric_lines(const char *prefix)
{
    char *m;
    cr_assert_eq(get(vs_service_metrics_port(svc), true, "/metrics", &m), 200);
    char *out = calloc(1, strlen(m) + 1);
    size_t len = 0;
    for (char *l = strtok(m, "\n"); l; l = strtok(NULL, "\n")) {
        if (strncmp(l, prefix, strlen(prefix)) != 0)
            continue;
        len += (size_t)sprintf(out + len, "%s%s", len ? "\n" : "", l);
    }
    free(m);
    return out;
}

static void start(const char *preemption, bool leader_elect, long long retry_ms)
{
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.gpu_preemption = preemption;
    if (retry_ms)
        c.optional_retry_ms = retry_ms;
    if (leader_elect) {
        c.leader_elect = true;
        c.lease_name = "hami-scheduler";
        c.lease_ns = "kube-system";
        c.pod_name = "hami-scheduler-0";
        c.pod_ns = "kube-system";
    }
    int rc = 0;
    struct vs_errbuf eb;
    svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "service start (exit %d): %s", rc, eb.msg);
}

/* Filter then Bind pod p: n1 chosen, bound, no error. */
static void filter_and_bind(void)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "p");
    cr_assert_not_null(pod);
    json_t *req = json_pack("{s:o,s:n,s:[s]}", "Pod", pod, "Nodes", "NodeNames", "n1");
    char *text = json_dumps(req, JSON_COMPACT), *out;
    json_decref(req);
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", "/filter", "application/json", text,
                              strlen(text), &out);
    free(text);
    cr_assert_eq(st, 200, "%s", out);
    cr_assert_str_eq(out, "{\"Nodes\":null,\"NodeNames\":[\"n1\"],\"FailedNodes\":null,"
                          "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    free(out);
    const char *bind = "{\"PodName\":\"p\",\"PodNamespace\":\"default\",\"PodUID\":\"uid-p\","
                       "\"Node\":\"n1\"}";
    st = vs_harness_call(&h, vs_service_port(svc), "POST", "/bind", "application/json", bind,
                         strlen(bind), &out);
    cr_assert_eq(st, 200, "%s", out);
    cr_assert_str_eq(out, "{\"Error\":\"\"}");
    free(out);
    pod = vs_fakeapi_get(api, "Pod", "default", "p");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
                     "n1");
    json_decref(pod);
}

/* ------------------------------------------------------------------------------------------ */
/* one optional API missing at a time                                                         */

enum missing { M_PDB, M_EVICTION, M_LEASE, M_EVENTS, M_DRA, M_CLAIMS };

/* Criterion copies parameters into the test process: no pointers in them. */
struct optcase {
    enum missing what;
    int status; /* 403 refused, 404 not served */
    char preemption[8];
    bool leader_elect;
    char line[400];    /* the one log line, from "level=" on */
    char metrics[800]; /* vgpu_sched_optional_api_available samples */
    char readyz[400];  /* the /readyz body */
};

#define PDB_SAMPLE                                                                                 \
    "vgpu_sched_optional_api_available{api=\"poddisruptionbudgets.policy\",feature=\"pdb-aware-"   \
    "preemption\"} "
#define EVICT_SAMPLE                                                                               \
    "vgpu_sched_optional_api_available{api=\"pods/eviction\",feature=\"filter-preemption\"} "
#define LEASE_SAMPLE                                                                               \
    "vgpu_sched_optional_api_available{api=\"leases.coordination.k8s.io\",feature=\"leader-"       \
    "election\"} "
#define EVENTS_SAMPLE "vgpu_sched_optional_api_available{api=\"events\",feature=\"events\"} "
#define DRA_SAMPLE                                                                                 \
    "vgpu_sched_optional_api_available{api=\"deviceclasses.resource.k8s.io\",feature=\"dra-"       \
    "guard\"} "
#define SLICES_SAMPLE                                                                              \
    "vgpu_sched_optional_api_available{api=\"resourceslices.resource.k8s.io\",feature=\"dra-"      \
    "ledger\"} "
#define CLAIMS_SAMPLE                                                                              \
    "vgpu_sched_optional_api_available{api=\"resourceclaims.resource.k8s.io\",feature=\"dra-"      \
    "ledger\"} "
#define LEDGER_OK SLICES_SAMPLE "1\n" CLAIMS_SAMPLE "1"

static struct optcase cases[] = {
    {M_PDB, 403, "filter", false,
     "level=warn event=optional_api_missing api=poddisruptionbudgets.policy permission=\"list, "
     "watch poddisruptionbudgets.policy\" reason=forbidden feature=pdb-aware-preemption "
     "effect=\"preemption ignores PodDisruptionBudgets\" retry_s=60",
     PDB_SAMPLE "0\n" EVICT_SAMPLE "1\n" EVENTS_SAMPLE "1\n" DRA_SAMPLE "1\n" LEDGER_OK,
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"poddisruptionbudgets.policy\",\"feature\":\"pdb-"
     "aware-preemption\",\"effect\":\"preemption ignores PodDisruptionBudgets\",\"reason\":"
     "\"forbidden\"}]}"},
    {M_PDB, 404, "verb", false,
     "level=warn event=optional_api_missing api=poddisruptionbudgets.policy permission=\"list, "
     "watch poddisruptionbudgets.policy\" reason=not_served feature=pdb-aware-preemption "
     "effect=\"preemption ignores PodDisruptionBudgets\" retry_s=60",
     PDB_SAMPLE "0\n" EVENTS_SAMPLE "1\n" DRA_SAMPLE "1\n" LEDGER_OK,
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"poddisruptionbudgets.policy\",\"feature\":\"pdb-"
     "aware-preemption\",\"effect\":\"preemption ignores PodDisruptionBudgets\",\"reason\":"
     "\"not_served\"}]}"},
    {M_EVICTION, 403, "filter", false,
     "level=warn event=optional_api_missing api=pods/eviction permission=\"create pods/eviction\" "
     "reason=forbidden feature=filter-preemption effect=\"filter-mode preemption is off\" "
     "retry_s=60",
     PDB_SAMPLE "1\n" EVICT_SAMPLE "0\n" EVENTS_SAMPLE "1\n" DRA_SAMPLE "1\n" LEDGER_OK,
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"pods/eviction\",\"feature\":\"filter-"
     "preemption\",\"effect\":\"filter-mode preemption is off\",\"reason\":\"forbidden\"}]}"},
    {M_LEASE, 403, "off", true,
     "level=warn event=optional_api_missing api=leases.coordination.k8s.io permission=\"get, list, "
     "watch leases.coordination.k8s.io in namespace kube-system\" reason=forbidden "
     "feature=leader-election effect=\"the Lease is not followed: this replica acts as the "
     "leader\" retry_s=60",
     LEASE_SAMPLE "0\n" EVENTS_SAMPLE "1\n" DRA_SAMPLE "1\n" LEDGER_OK,
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"leases.coordination.k8s.io\",\"feature\":"
     "\"leader-election\",\"effect\":\"the Lease is not followed: this replica acts as the "
     "leader\",\"reason\":\"forbidden\"}]}"},
    {M_LEASE, 404, "off", true,
     "level=warn event=optional_api_missing api=leases.coordination.k8s.io permission=\"get, list, "
     "watch leases.coordination.k8s.io in namespace kube-system\" reason=not_served "
     "feature=leader-election effect=\"the Lease is not followed: this replica acts as the "
     "leader\" retry_s=60",
     LEASE_SAMPLE "0\n" EVENTS_SAMPLE "1\n" DRA_SAMPLE "1\n" LEDGER_OK,
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"leases.coordination.k8s.io\",\"feature\":"
     "\"leader-election\",\"effect\":\"the Lease is not followed: this replica acts as the "
     "leader\",\"reason\":\"not_served\"}]}"},
    {M_EVENTS, 403, "off", false,
     "level=warn event=optional_api_missing api=events permission=\"create events\" "
     "reason=forbidden feature=events effect=\"Events are not posted\" retry_s=60",
     EVENTS_SAMPLE "0\n" DRA_SAMPLE "1\n" LEDGER_OK,
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"events\",\"feature\":\"events\",\"effect\":"
     "\"Events are not posted\",\"reason\":\"forbidden\"}]}"},
    {M_DRA, 403, "off", false,
     "level=warn event=optional_api_missing api=deviceclasses.resource.k8s.io permission=\"list, "
     "watch deviceclasses.resource.k8s.io\" reason=forbidden feature=dra-guard "
     "effect=\"DeviceClasses that map a GPU resource to DRA are not reported\" retry_s=60",
     EVENTS_SAMPLE "1\n" DRA_SAMPLE "0\n" LEDGER_OK,
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"deviceclasses.resource.k8s.io\",\"feature\":"
     "\"dra-guard\",\"effect\":\"DeviceClasses that map a GPU resource to DRA are not "
     "reported\",\"reason\":\"forbidden\"}]}"},
    {M_DRA, 404, "off", false,
     "level=warn event=optional_api_missing api=deviceclasses.resource.k8s.io permission=\"list, "
     "watch deviceclasses.resource.k8s.io\" reason=not_served feature=dra-guard "
     "effect=\"DeviceClasses that map a GPU resource to DRA are not reported\" retry_s=60",
     EVENTS_SAMPLE "1\n" DRA_SAMPLE "0\n" LEDGER_OK,
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"deviceclasses.resource.k8s.io\",\"feature\":"
     "\"dra-guard\",\"effect\":\"DeviceClasses that map a GPU resource to DRA are not "
     "reported\",\"reason\":\"not_served\"}]}"},
    {M_CLAIMS, 403, "off", false,
     "level=warn event=optional_api_missing api=resourceclaims.resource.k8s.io permission=\"list, "
     "watch resourceclaims.resource.k8s.io\" reason=forbidden feature=dra-ledger "
     "effect=\"DRA claims on HAMi cards are not counted\" retry_s=60",
     EVENTS_SAMPLE "1\n" DRA_SAMPLE "1\n" SLICES_SAMPLE "1\n" CLAIMS_SAMPLE "0",
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"resourceclaims.resource.k8s.io\",\"feature\":"
     "\"dra-ledger\",\"effect\":\"DRA claims on HAMi cards are not counted\",\"reason\":"
     "\"forbidden\"}]}"},
    {M_CLAIMS, 404, "off", false,
     "level=warn event=optional_api_missing api=resourceclaims.resource.k8s.io permission=\"list, "
     "watch resourceclaims.resource.k8s.io\" reason=not_served feature=dra-ledger "
     "effect=\"DRA claims on HAMi cards are not counted\" retry_s=60",
     EVENTS_SAMPLE "1\n" DRA_SAMPLE "1\n" SLICES_SAMPLE "1\n" CLAIMS_SAMPLE "0",
     "{\"status\":\"ok\",\"degraded\":[{\"api\":\"resourceclaims.resource.k8s.io\",\"feature\":"
     "\"dra-ledger\",\"effect\":\"DRA claims on HAMi cards are not counted\",\"reason\":"
     "\"not_served\"}]}"},
};

ParameterizedTestParameters(access, optional_missing)
{
    return cr_make_param_array(struct optcase, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct optcase *tc, access, optional_missing)
{
    /* Everything HAMi grants, plus every optional API but the one under test. */
    grant_hami_clusterrole();
    if (tc->what != M_LEASE || tc->status == 404)
        grant_hami_role();
    if (tc->what != M_PDB || tc->status == 404)
        cr_assert(vs_fakeapi_allow(api, "policy", "poddisruptionbudgets", "list,watch", NULL));
    if (tc->what != M_EVICTION)
        cr_assert(vs_fakeapi_allow(api, "", "pods/eviction", "create", NULL));
    if (tc->what != M_DRA || tc->status == 404)
        cr_assert(vs_fakeapi_allow(api, "resource.k8s.io", "deviceclasses", "list,watch", NULL));
    cr_assert(vs_fakeapi_allow(api, "resource.k8s.io", "resourceslices", "list,watch", NULL));
    if (tc->what != M_CLAIMS || tc->status == 404)
        cr_assert(vs_fakeapi_allow(api, "resource.k8s.io", "resourceclaims", "list,watch", NULL));
    if (tc->what == M_EVENTS) {
        vs_fakeapi_allow_all(api); /* the same grants without events */
        vs_fakeapi_set_user(api, USER);
        vs_fakeapi_allow(api, "", "pods", "get,list,watch,patch", NULL);
        vs_fakeapi_allow(api, "", "pods/binding", "create", NULL);
        vs_fakeapi_allow(api, "", "nodes", "get,list,patch,watch", NULL);
        vs_fakeapi_allow(api, "", "resourcequotas", "get,list,watch", NULL);
        grant_dra();
    }
    if (tc->status == 404)
        cr_assert_eq(vs_fakeapi_unserve(api,
                                        tc->what == M_PDB      ? "PodDisruptionBudget"
                                        : tc->what == M_DRA    ? "DeviceClass"
                                        : tc->what == M_CLAIMS ? "ResourceClaim"
                                                               : "Lease",
                                        true),
                     0);
    start(tc->preemption, tc->leader_elect, 0);
    char *body = wait_ready();
    if (tc->status == 404) /* found by the informer's LIST, after the start */
        wait_log("event=optional_api_missing");
    free(body);
    body = wait_ready();
    cr_assert_str_eq(body, tc->readyz);
    free(body);
    filter_and_bind();

    char *l = log_lines("optional_api");
    cr_assert_str_eq(l, tc->line);
    free(l);
    l = log_lines("watch_error");
    cr_assert_str_eq(l, "", "refusals are not logged one by one: %s", l);
    free(l);
    l = metric_lines("vgpu_sched_optional_api_available");
    cr_assert_str_eq(l, tc->metrics);
    free(l);
    if (tc->what == M_PDB) /* one LIST, the next one only after --optional-api-retry (60 s) */
        cr_assert_eq(vs_fakeapi_count(api, "LIST", "/apis/policy/v1/poddisruptionbudgets"), 1);
    if (tc->what == M_DRA) /* one LIST, the next one only after --optional-api-retry (60 s) */
        cr_assert_eq(vs_fakeapi_count(api, "LIST", "/apis/resource.k8s.io/v1/deviceclasses"), 1);
    if (tc->what == M_CLAIMS) /* one LIST, the next one only after --optional-api-retry */
        cr_assert_eq(vs_fakeapi_count(api, "LIST", "/apis/resource.k8s.io/v1/resourceclaims"), 1);
    if (tc->what == M_EVENTS) /* not even tried */
        cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/events"), 0);
}

/* Filter-mode preemption without pods/eviction: a high-priority pod that only an eviction could
 * place is refused plainly, and nothing is evicted. */
Test(access, no_eviction_no_filter_preemption)
{
    grant_hami_clusterrole();
    put(strdup("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"low\",\"namespace\":\"default\","
               "\"uid\":\"low\",\"annotations\":{\"hami.io/vgpu-node\":\"n1\","
               "\"hami.io/vgpu-devices-allocated\":\"n1-gpu0,NVIDIA,15360,10:;\"}},"
               "\"spec\":{\"nodeName\":\"n1\",\"priority\":0,\"containers\":[{\"name\":\"c\"}]},"
               "\"status\":{\"phase\":\"Running\"}}"));
    put(strdup("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"boss\",\"namespace\":\"default\","
               "\"uid\":\"boss\"},\"spec\":{\"schedulerName\":\"hami-scheduler\",\"priority\":1000,"
               "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
               "\"1\",\"nvidia.com/gpumem\":\"15360\"}}}]},\"status\":{\"phase\":\"Pending\"}}"));
    start("filter", false, 0);
    free(wait_ready());
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "boss");
    json_t *req = json_pack("{s:o,s:n,s:[s]}", "Pod", pod, "Nodes", "NodeNames", "n1");
    char *text = json_dumps(req, JSON_COMPACT), *out;
    json_decref(req);
    cr_assert_eq(vs_harness_call(&h, vs_service_port(svc), "POST", "/filter", "application/json",
                                 text, strlen(text), &out),
                 200);
    free(text);
    cr_assert_str_eq(out, "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{\"n1\":\"1/1 "
                          "CardInsufficientMemory\"},\"FailedAndUnresolvableNodes\":null,"
                          "\"Error\":\"\"}");
    free(out);
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/pods/low/eviction"), 0);
}

/* ------------------------------------------------------------------------------------------ */
/* granted later                                                                              */

Test(access, pdbs_granted_later_are_watched)
{
    grant_hami_clusterrole();
    grant_dra();
    cr_assert(vs_fakeapi_allow(api, "", "pods/eviction", "create", NULL));
    start("filter", false, 200);
    char *body = wait_ready();
    cr_assert_str_eq(body, "{\"status\":\"ok\",\"degraded\":[{\"api\":\"poddisruptionbudgets."
                           "policy\",\"feature\":\"pdb-aware-preemption\",\"effect\":\"preemption "
                           "ignores PodDisruptionBudgets\",\"reason\":\"forbidden\"}]}");
    free(body);
    cr_assert(vs_fakeapi_allow(api, "policy", "poddisruptionbudgets", "list,watch", NULL));
    wait_log("event=optional_api_available");
    char *l = log_lines("optional_api");
    cr_assert_str_eq(l, "level=warn event=optional_api_missing api=poddisruptionbudgets.policy "
                        "permission=\"list, watch poddisruptionbudgets.policy\" reason=forbidden "
                        "feature=pdb-aware-preemption effect=\"preemption ignores "
                        "PodDisruptionBudgets\" retry_s=0.2\n"
                        "level=info event=optional_api_available api=poddisruptionbudgets.policy "
                        "feature=pdb-aware-preemption");
    free(l);
    l = metric_lines(PDB_SAMPLE);
    cr_assert_str_eq(l, PDB_SAMPLE "1");
    free(l);
    body = wait_ready();
    cr_assert_str_eq(body, "{\"status\":\"ok\",\"degraded\":[]}");
    free(body);
    cr_assert(vs_fakeapi_wait_watchers(api, 5, 5000), "the PDB informer does not watch");
}

Test(access, eviction_granted_later_turns_filter_preemption_on)
{
    grant_hami_clusterrole();
    cr_assert(vs_fakeapi_allow(api, "policy", "poddisruptionbudgets", "list,watch", NULL));
    start("filter", false, 200);
    free(wait_ready());
    char *l = metric_lines(EVICT_SAMPLE);
    cr_assert_str_eq(l, EVICT_SAMPLE "0");
    free(l);
    cr_assert(vs_fakeapi_allow(api, "", "pods/eviction", "create", NULL));
    wait_log("event=optional_api_available");
    l = log_lines("optional_api_available");
    cr_assert_str_eq(l, "level=info event=optional_api_available api=pods/eviction "
                        "feature=filter-preemption");
    free(l);
    l = metric_lines(EVICT_SAMPLE);
    cr_assert_str_eq(l, EVICT_SAMPLE "1");
    free(l);
}

/* ------------------------------------------------------------------------------------------ */
/* required permissions                                                                       */

/* Starts with HAMi's grants minus what `drop` names; returns the exit code and eb. */
static int start_failing(struct vs_errbuf *eb)
{
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    int rc = 0;
    svc = vs_service_start(&c, &rc, eb);
    cr_assert_null(svc, "the service started");
    return rc;
}

Test(access, pods_patch_forbidden_stops_the_start)
{
    vs_fakeapi_set_user(api, USER);
    vs_fakeapi_allow(api, "", "pods", "get,list,watch", NULL);
    vs_fakeapi_allow(api, "", "pods/binding", "create", NULL);
    vs_fakeapi_allow(api, "", "nodes", "get,list,patch,watch", NULL);
    vs_fakeapi_allow(api, "", "events", "create", NULL);
    vs_fakeapi_allow(api, "", "resourcequotas", "get,list,watch", NULL);
    struct vs_errbuf eb;
    cr_assert_eq(start_failing(&eb), 2);
    cr_assert_str_eq(eb.msg, "missing permission: patch pods (add rule apiGroups [\"\"] resources "
                             "[\"pods\"] verbs [\"patch\"] to the ClusterRole bound to "
                             "system:serviceaccount:kube-system:hami-scheduler)");
    char *l = log_lines("missing_permission");
    cr_assert_str_eq(l, "level=error event=missing_permission msg=\"missing permission: patch pods "
                        "(add rule apiGroups [\\\"\\\"] resources [\\\"pods\\\"] verbs "
                        "[\\\"patch\\\"] to the ClusterRole bound to "
                        "system:serviceaccount:kube-system:hami-scheduler)\"");
    free(l);
    /* Nothing was listed, watched or written. */
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/"), 0);
}

Test(access, several_missing_permissions_each_named)
{
    vs_fakeapi_set_user(api, USER);
    vs_fakeapi_allow(api, "", "pods", "get,list,watch,patch", NULL);
    vs_fakeapi_allow(api, "", "nodes", "get,list,watch", NULL);
    vs_fakeapi_allow(api, "", "resourcequotas", "get,list,watch", NULL);
    struct vs_errbuf eb;
    cr_assert_eq(start_failing(&eb), 2);
    cr_assert_str_eq(eb.msg,
                     "missing permission: patch nodes (add rule apiGroups [\"\"] resources "
                     "[\"nodes\"] verbs [\"patch\"] to the ClusterRole bound to " USER
                     "); missing permission: create pods/binding (add rule apiGroups [\"\"] "
                     "resources [\"pods/binding\"] verbs [\"create\"] to the ClusterRole bound "
                     "to " USER ")");
}

Test(access, nothing_granted_names_what_fits_and_counts_the_rest)
{
    vs_fakeapi_set_user(api, USER);
    vs_fakeapi_allow(api, "", "configmaps", "get", NULL);
    struct vs_errbuf eb;
    cr_assert_eq(start_failing(&eb), 2);
    cr_assert_str_eq(eb.msg,
                     "missing permission: get, list, watch, patch nodes (add rule apiGroups [\"\"] "
                     "resources [\"nodes\"] verbs [\"get\", \"list\", \"watch\", \"patch\"] to the "
                     "ClusterRole bound to " USER
                     "); missing permission: get, list, watch, patch pods (add rule apiGroups "
                     "[\"\"] resources [\"pods\"] verbs [\"get\", \"list\", \"watch\", \"patch\"] "
                     "to the ClusterRole bound to " USER "); and 2 more (see the log)");
    char *l = log_lines("missing_permission");
    cr_assert(strstr(l, "missing permission: create pods/binding (add rule apiGroups [\\\"\\\"] "
                        "resources [\\\"pods/binding\\\"] verbs [\\\"create\\\"]"),
              "%s", l);
    cr_assert(strstr(l, "missing permission: list, watch resourcequotas (add rule apiGroups "
                        "[\\\"\\\"] resources [\\\"resourcequotas\\\"] verbs [\\\"list\\\", "
                        "\\\"watch\\\"]"),
              "%s", l);
    free(l);
}

/* The API server does not tell who we are: the message says so instead of a name. */
Test(access, unknown_user)
{
    vs_fakeapi_allow(api, "", "pods", "get,list,watch", NULL);
    vs_fakeapi_allow(api, "", "pods/binding", "create", NULL);
    vs_fakeapi_allow(api, "", "nodes", "get,list,patch,watch", NULL);
    vs_fakeapi_allow(api, "", "resourcequotas", "list,watch", NULL);
    vs_fakeapi_fault(api, "POST", "/apis/authentication.k8s.io", 404, 10);
    struct vs_errbuf eb;
    cr_assert_eq(start_failing(&eb), 2);
    cr_assert_str_eq(eb.msg, "missing permission: patch pods (add rule apiGroups [\"\"] resources "
                             "[\"pods\"] verbs [\"patch\"] to the ClusterRole bound to "
                             "vgpu-sched's user)");
}

/* SelfSubjectAccessReviews refused: one warning, and the start goes on. */
Test(access, reviews_refused_only_warn)
{
    grant_hami_clusterrole();
    grant_dra();
    vs_fakeapi_fault(api, "POST", "/apis/authorization.k8s.io", 403, 1);
    start("off", false, 0);
    char *body = wait_ready();
    cr_assert_str_eq(body, "{\"status\":\"ok\",\"degraded\":[]}");
    free(body);
    char *l = log_lines("access_review_failed");
    cr_assert_str_eq(l, "level=warn event=access_review_failed error=\"POST "
                        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews: 403 injected "
                        "fault\" note=\"permissions are not checked at start-up; a missing one "
                        "shows as the API's errors\"");
    free(l);
    filter_and_bind();
}

/* Embedded mode (--cluster): the in-process API allows everything. */
Test(access, embedded_mode_has_everything)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/cluster.json", h.dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    char *node = vs_harness_node("n1", 1, 15360);
    fprintf(f, "{\"kind\":\"List\",\"items\":[%s]}", node);
    free(node);
    fclose(f);
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.kubeconfig = NULL;
    c.cluster = path;
    c.gpu_preemption = "filter";
    int rc = 0;
    struct vs_errbuf eb;
    svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
    char *body = wait_ready();
    cr_assert_str_eq(body, "{\"status\":\"ok\",\"degraded\":[]}");
    free(body);
    char *l = metric_lines("vgpu_sched_optional_api_available");
    cr_assert_str_eq(l, PDB_SAMPLE "1\n" EVICT_SAMPLE "1\n" EVENTS_SAMPLE "1\n" DRA_SAMPLE
                                   "1\n" LEDGER_OK);
    free(l);
    l = log_lines("optional_api");
    cr_assert_str_eq(l, "");
    free(l);
}

/* ------------------------------------------------------------------------------------------ */
/* HAMi's listener flags                                                                      */

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return sz * n;
}

/* HAMi's chart passes --http_bind=0.0.0.0:443 and --metrics-bind-address=:9395, which a Go
 * server reads as every address, IPv6 included (its Service may reach an IPv6 pod IP): both
 * listeners answer on 127.0.0.1 and on [::1]. */
Test(access, hami_bind_forms_listen_on_ipv4_and_ipv6)
{
    int probe = socket(AF_INET6, SOCK_STREAM, 0);
    if (probe < 0)
        cr_skip_test("no IPv6 on this host");
    close(probe);
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.http_bind = "0.0.0.0:0";
    c.metrics_bind = ":0";
    c.gpu_preemption = "off";
    int rc = 0;
    struct vs_errbuf eb;
    svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
    free(wait_ready());
    char *out;
    cr_assert_eq(get(vs_service_metrics_port(svc), true, "/healthz", &out), 200);
    free(out);
    const int ports[] = {vs_service_metrics_port(svc), vs_service_port(svc)};
    for (int i = 0; i < 2; i++) {
        char url[128];
        snprintf(url, sizeof(url), "%s://[::1]:%d/healthz", i ? "https" : "http", ports[i]);
        CURL *cu = curl_easy_init();
        curl_easy_setopt(cu, CURLOPT_URL, url);
        curl_easy_setopt(cu, CURLOPT_CAINFO, h.ca);
        curl_easy_setopt(cu, CURLOPT_SSL_VERIFYHOST, 0L); /* the certificate names 127.0.0.1 */
        curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(cu, CURLOPT_TIMEOUT, 10L);
        CURLcode cc = curl_easy_perform(cu);
        long code = 0;
        curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(cu);
        cr_assert_eq(cc, CURLE_OK, "%s: %s", url, curl_easy_strerror(cc));
        cr_assert_eq(code, 200, "%s", url);
    }
}
