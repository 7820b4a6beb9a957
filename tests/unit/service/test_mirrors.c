/* test_mirrors: --dra-mirror against the real service and the fake API. Bind makes the pod's
 * mirror claim (created, then allocated through the status subresource) before it binds; the
 * claim goes when the pod does; a Bind whose card a DRA claim took after Filter fails cleanly
 * (no mirror, no binding, no node lock); the start-up reconcile deletes orphans and creates
 * what is missing; with the flag off nothing is written. */
#include "fakeapi.h"
#include "harness.h"
#include "log.h"
#include "mirrors.h"
#include "serve.h"

#include <criterion/criterion.h>
#include <fcntl.h>

#define UID "0f0e0d0c-0000-4000-8000-000000000001"
/* The card's mirror (fence), FNV-1a 32 of n1 and of n1-gpu0; the pod's own (share). */
#define MIRROR       "vgpu-mirror-card-0435dc00-9450406d"
#define MIRROR_SHARE "vgpu-mirror-" UID "-9450406d"

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
    put(strdup("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{"
               "\"name\":\"n1-gpu\"},\"spec\":{\"nodeName\":\"n1\",\"driver\":\"gpu.nvidia.com\","
               "\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":"
               "[{\"name\":\"gpu-0\",\"attributes\":{\"uuid\":{\"string\":\"n1-gpu0\"}}}]}}"));
}

static void teardown(void)
{
    vs_service_stop(svc);
    svc = NULL;
    vs_fakeapi_stop(api);
    api = NULL;
    vs_harness_cleanup(&h);
}

TestSuite(mirrors, .init = setup, .fini = teardown, .timeout = 120);

static void start(const char *mode)
{
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.dra_mirror = mode;
    c.dra_mirror_ns = "vgpu";
    struct vs_errbuf eb;
    svc = vs_harness_service_start(&c, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
    if (strcmp(mode, "off") == 0)
        return;
    /* The start-up reconcile runs about a second after the start (its first try comes before
     * the term): done before the test's Filter and Bind, it cannot race Bind's writes of the
     * mirror (a status PUT refused with 409 would count as a second one). */
    char *l = NULL;
    for (int i = 0; i < 500; i++) {
        free(l);
        l = vs_harness_log_lines(logpath, "event=dra_mirror_reconcile ");
        if (*l)
            break;
        usleep(20 * 1000);
    }
    cr_assert_neq(*l, '\0', "the start-up reconcile never ran");
    free(l);
}

static char *filter(const char *pod_name)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", pod_name);
    cr_assert_not_null(pod);
    json_t *req = json_pack("{s:o,s:n,s:[s]}", "Pod", pod, "Nodes", "NodeNames", "n1");
    char *text = json_dumps(req, JSON_COMPACT), *out;
    json_decref(req);
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", "/filter", "application/json", text,
                              strlen(text), &out);
    free(text);
    cr_assert_eq(st, 200, "%s", out);
    return out;
}

static char *filter_get(void *pod_name)
{
    return filter(pod_name);
}

static char *bind_p(void)
{
    const char *b = "{\"PodName\":\"p\",\"PodNamespace\":\"default\",\"PodUID\":\"" UID "\","
                    "\"Node\":\"n1\"}";
    char *out;
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", "/bind", "application/json", b,
                              strlen(b), &out);
    cr_assert_eq(st, 200, "%s", out);
    return out;
}

#define FILTER_OK                                                                                  \
    "{\"Nodes\":null,\"NodeNames\":[\"n1\"],\"FailedNodes\":null,"                                 \
    "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}"

/* The mirror's labels, annotations and status as compact sorted JSON, or "none". */
static char *mirror_text(void)
{
    json_t *c = vs_fakeapi_get(api, "ResourceClaim", "vgpu", MIRROR);
    if (!c)
        return strdup("none");
    json_t *md = json_object_get(c, "metadata");
    /* "O?": a claim caught between its create and its status update has no status yet */
    json_t *v =
        json_pack("{s:O?,s:O?,s:O?}", "labels", json_object_get(md, "labels"), "annotations",
                  json_object_get(md, "annotations"), "status", json_object_get(c, "status"));
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(v);
    json_decref(c);
    return s;
}

static char *mirror_text_get(void *ctx)
{
    (void)ctx;
    return mirror_text();
}

/* Waits (10 s at most) until the mirror's text is `want`. */
static void wait_mirror(const char *want)
{
    char *got = vs_harness_poll(mirror_text_get, NULL, want);
    cr_assert_str_eq(got, want);
    free(got);
}

#define MIRROR_FENCE                                                                               \
    "{\"annotations\":{\"vgpu-sched.io/mirror-card\":\"n1-gpu0\",\"vgpu-sched.io/mirror-node\":"   \
    "\"n1\"},\"labels\":{\"vgpu-sched.io/"                                                         \
    "mirror-of\":\"card\"},\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"device\":"     \
    "\"gpu-0\","                                                                                   \
    "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"request\":\"r0\"}]},\"nodeSelector\":{"       \
    "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","     \
    "\"values\":[\"n1\"]}]}]}}}}"

static const char *node_of_p(void)
{
    static char node[64];
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "p");
    const char *n = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    snprintf(node, sizeof(node), "%s", n ? n : "");
    json_decref(pod);
    return node;
}

Test(mirrors, bind_makes_the_mirror_and_the_pod_leaving_deletes_it)
{
    put(vs_harness_pod("p", UID, "1000", "10"));
    start("fence");
    char *out = filter("p");
    cr_assert_str_eq(out, FILTER_OK);
    free(out);
    out = bind_p();
    cr_assert_str_eq(out, "{\"Error\":\"\"}");
    free(out);
    cr_assert_str_eq(node_of_p(), "n1");
    /* written by Bind itself: there when Bind answers */
    char *m = mirror_text();
    cr_assert_str_eq(m, MIRROR_FENCE);
    free(m);
    const char *st = "/apis/resource.k8s.io/v1/namespaces/vgpu/resourceclaims/" MIRROR "/status";
    cr_assert_eq(vs_fakeapi_count(api, "PUT", st), 1); /* allocated */
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "p"), 0);
    wait_mirror("none");
    /* deallocated before the delete (kube-scheduler requeues its DRA pods on that) */
    cr_assert_eq(vs_fakeapi_count(api, "PUT", st), 2);
    /* logged after the delete the wait saw */
    const char *want =
        "level=info event=dra_mirror_deleted claim=vgpu/" MIRROR " pod_uid=- reason=orphan";
    char *l = vs_harness_wait_log_lines(logpath, "dra_mirror_deleted", want);
    cr_assert_str_eq(l, want);
    free(l);
}

Test(mirrors, share_mode_consumes_the_pods_memory_and_cores)
{
    put(strdup("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{"
               "\"name\":\"n1-gpu\"},\"spec\":{\"nodeName\":\"n1\",\"driver\":\"gpu.nvidia.com\","
               "\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":"
               "[{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,\"attributes\":{\"uuid\":{"
               "\"string\":\"n1-gpu0\"}}}]}}"));
    put(vs_harness_pod("p", UID, "1000", "10"));
    start("share");
    char *out = filter("p");
    cr_assert_str_eq(out, FILTER_OK);
    free(out);
    out = bind_p();
    cr_assert_str_eq(out, "{\"Error\":\"\"}");
    free(out);
    json_t *c = vs_fakeapi_get(api, "ResourceClaim", "vgpu", MIRROR_SHARE);
    cr_assert_not_null(c);
    cr_assert_null(vs_fakeapi_get(api, "ResourceClaim", "vgpu", MIRROR)); /* nothing whole */
    char *s = json_dumps(json_object_get(c, "status"), JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(s, "{\"allocation\":{\"devices\":{\"results\":[{\"consumedCapacity\":{"
                        "\"cores\":\"10\",\"memory\":\"1000Mi\"},\"device\":\"gpu-0\",\"driver\":"
                        "\"gpu.nvidia.com\",\"pool\":\"n1\",\"request\":\"r0\",\"shareID\":\"" UID
                        "\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
                        "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}");
    free(s);
    json_decref(c);
}

/* A claim allocated on the card after Filter chose it: Bind fails naming the claim, and leaves
 * no mirror, no binding and no node lock. */
Test(mirrors, bind_refused_when_a_claim_took_the_card_after_filter)
{
    put(vs_harness_pod("p", UID, "1000", "10"));
    put(vs_harness_pod("q", "uid-q", "14000", "10"));
    put(vs_harness_pod("r", "uid-r", "15000", "10"));
    start("fence");
    char *out = filter("p");
    cr_assert_str_eq(out, FILTER_OK);
    free(out);
    put(strdup("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
               "\"name\":\"train\",\"namespace\":\"ml\",\"uid\":\"uid-claim\"},\"spec\":{},"
               "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
               "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}}}}"));
    /* The ledger has the claim once the probe r (more memory than the card has beside p:
     * refused with or without the claim, never reserved) is refused for the card's slots
     * instead of its memory. Only then is q filtered: it fits beside p on the 15360 MiB card,
     * so the claim alone is to blame and named (filtered before the claim's event came, q
     * would have been placed). */
    const char *held = "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{\"n1\":\"1/1 "
                       "CardTimeSlicingExhausted\"},\"FailedAndUnresolvableNodes\":null,"
                       "\"Error\":\"\"}";
    char r[] = "r";
    out = vs_harness_poll(filter_get, r, held);
    cr_assert_str_eq(out, held);
    free(out);
    const char *want = "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{\"n1\":\"1/1 "
                       "CardTimeSlicingExhausted (held by DRA claim ml/train)\"},"
                       "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}";
    out = filter("q");
    cr_assert_str_eq(out, want);
    free(out);
    out = bind_p();
    cr_assert_str_eq(out, "{\"Error\":\"pod default/p: card n1-gpu0 on node n1 is held by DRA "
                          "(claim ml/train), taken after Filter\"}");
    free(out);
    /* The card's mirror stays while the claim shares its device (deleting it would make
     * kube-scheduler forget the claim's device too). */
    char *m = mirror_text();
    cr_assert_str_eq(m, MIRROR_FENCE);
    free(m);
    cr_assert_str_eq(node_of_p(), "");
    json_t *n = vs_fakeapi_get(api, "Node", NULL, "n1");
    cr_assert_null(json_object_get(json_object_get(json_object_get(n, "metadata"), "annotations"),
                                   "hami.io/mutex.lock"));
    json_decref(n);
}

/* At start: a mirror whose pod is gone is deleted; a pod bound before (by an earlier process)
 * gets its mirror. */
Test(mirrors, start_up_reconcile_deletes_orphans_and_creates_missing)
{
    put(strdup("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
               "\"namespace\":\"default\",\"uid\":\"" UID "\",\"annotations\":{"
               "\"hami.io/vgpu-node\":\"n1\",\"hami.io/vgpu-devices-allocated\":"
               "\"n1-gpu0,NVIDIA,1000,10:;\",\"hami.io/bind-phase\":\"success\"}},\"spec\":{"
               "\"nodeName\":\"n1\",\"schedulerName\":\"hami-scheduler\",\"containers\":[{"
               "\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
               "\"status\":{\"phase\":\"Running\"}}"));
    put(strdup("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
               "\"name\":\"vgpu-mirror-gone\",\"namespace\":\"vgpu\",\"uid\":\"uid-m\","
               "\"labels\":{\"vgpu-sched.io/mirror-of\":\"uid-gone\"}},\"spec\":{},\"status\":{"
               "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r0\",\"driver\":"
               "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}}}}"));
    start("fence");
    wait_mirror(MIRROR_FENCE);
    json_t *gone = NULL;
    for (int i = 0; i < 500; i++) {
        json_decref(gone);
        if (!(gone = vs_fakeapi_get(api, "ResourceClaim", "vgpu", "vgpu-mirror-gone")))
            break;
        usleep(20 * 1000);
    }
    cr_assert_null(gone);
    /* the mirror never counted as a DRA claim: the card holds only the pod */
    /* logged after the status write the wait saw */
    const char *want = "level=info event=dra_mirror_created claim=vgpu/" MIRROR
                       " pod=- node=n1 card=n1-gpu0 source=reconcile new=1";
    char *l = vs_harness_wait_log_lines(logpath, "dra_mirror_created", want);
    cr_assert_str_eq(l, want);
    free(l);
}

Test(mirrors, off_writes_nothing)
{
    put(vs_harness_pod("p", UID, "1000", "10"));
    start("off");
    char *out = filter("p");
    cr_assert_str_eq(out, FILTER_OK);
    free(out);
    out = bind_p();
    cr_assert_str_eq(out, "{\"Error\":\"\"}");
    free(out);
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/apis/resource.k8s.io/v1/namespaces/vgpu"), 0);
    char *m = mirror_text();
    cr_assert_str_eq(m, "none");
    free(m);
}

/* The uninstall sweep deletes the labelled claims of its namespace and nothing else. */
Test(mirrors, sweep_deletes_only_mirrors)
{
    const char *fmt = "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                      "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"u-%s-%s\"%s},"
                      "\"spec\":{}}";
    const char *lab = ",\"labels\":{\"vgpu-sched.io/mirror-of\":\"x\"}";
    const struct {
        const char *name, *ns, *labels;
    } cl[] = {{"m1", "vgpu", lab}, {"m2", "vgpu", lab}, {"keep", "vgpu", ""}, {"m3", "other", lab}};
    for (size_t i = 0; i < 4; i++) {
        char *j = malloc(1024);
        snprintf(j, 1024, fmt, cl[i].name, cl[i].ns, cl[i].ns, cl[i].name, cl[i].labels);
        put(j);
    }
    char *out = NULL, *err = NULL;
    size_t ol = 0, el = 0;
    FILE *fo = open_memstream(&out, &ol), *fe = open_memstream(&err, &el);
    char kc[300];
    snprintf(kc, sizeof(kc), "--kubeconfig=%s", h.kubeconfig);
    char *argv[] = {kc, "--namespace", "vgpu", NULL};
    int rc = vs_mirrors_sweep_main(3, argv, fo, fe);
    fclose(fo);
    fclose(fe);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(out, "deleted 2 mirror ResourceClaims in vgpu\n");
    cr_assert_str_eq(err, "");
    free(out);
    free(err);
    json_t *k = vs_fakeapi_get(api, "ResourceClaim", "vgpu", "keep");
    json_t *o = vs_fakeapi_get(api, "ResourceClaim", "other", "m3");
    json_t *m = vs_fakeapi_get(api, "ResourceClaim", "vgpu", "m1");
    cr_assert(k && o && !m);
    json_decref(k);
    json_decref(o);
}
