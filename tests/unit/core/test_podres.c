/* test_podres: kube-scheduler's effective pod request (NodeResourcesFit, v1.36) and the model's
 * per-node accounting of it (vs_node.res): app containers summed, the largest init container,
 * sidecars counted with the app side, overhead, limits as requests, the scoring defaults, and
 * exact errors for quantities that do not parse. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_codec.h"
#include "model.h"
#include "podres.h"

static void pod_from(const char *text, struct vs_pod *p)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    cr_assert_not_null(j, "bad test JSON: %s", je.text);
    struct vs_errbuf eb;
    cr_assert_eq(vs_codec_pod_from_json(j, p, &eb), VS_OK, "%s", eb.msg);
    json_decref(j);
}

static void node_from(const char *text, struct vs_knode *n)
{
    json_t *j = json_loads(text, 0, NULL);
    cr_assert_not_null(j);
    struct vs_errbuf eb;
    cr_assert_eq(vs_codec_node_from_json(j, n, &eb), VS_OK, "%s", eb.msg);
    json_decref(j);
}

static struct vs_podres res_of(const char *text)
{
    struct vs_pod p;
    pod_from(text, &p);
    struct vs_podres r;
    struct vs_errbuf eb;
    cr_assert_eq(vs_podres_compute(&p, &r, &eb), VS_OK, "%s", eb.msg);
    vs_pod_cleanup(&p);
    return r;
}

#define MI (1024LL * 1024)

Test(podres, app_containers_add_up)
{
    struct vs_podres r = res_of(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\","
        "\"ephemeral-storage\":\"2Gi\"}}},"
        "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"1.5\",\"memory\":\"512Mi\"}}}]}}");
    cr_assert_eq(r.cpu, 2000);
    cr_assert_eq(r.mem, 1536 * MI);
    cr_assert_eq(r.eph, 2048 * MI);
    cr_assert_eq(r.nz_cpu, 2000);
    cr_assert_eq(r.nz_mem, 1536 * MI);
}

Test(podres, limits_stand_in_for_missing_requests)
{
    struct vs_podres r = res_of(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":"
        "{\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"},"
        "\"requests\":{\"cpu\":\"1\"}}}]}}");
    cr_assert_eq(r.cpu, 1000); /* the request wins over the limit */
    cr_assert_eq(r.mem, 1024 * MI);
    cr_assert_eq(r.eph, 0);
}

Test(podres, scoring_defaults_only_for_missing_requests)
{
    struct vs_podres r = res_of(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
        "{\"name\":\"a\"},"
        "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"0\",\"memory\":\"64Mi\"}}}]}}");
    cr_assert_eq(r.cpu, 0);
    cr_assert_eq(r.mem, 64 * MI);
    cr_assert_eq(r.nz_cpu, 100);                /* a: default; b: an explicit 0 stays 0 */
    cr_assert_eq(r.nz_mem, 200 * MI + 64 * MI); /* a: default 200Mi */
}

Test(podres, largest_init_container_wins_over_a_smaller_app_side)
{
    struct vs_podres r =
        res_of("{\"metadata\":{\"name\":\"p\"},\"spec\":{"
               "\"initContainers\":[{\"name\":\"i1\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}},"
               "{\"name\":\"i2\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"4Gi\"}}}],"
               "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"2\","
               "\"memory\":\"1Gi\"}}}]}}");
    cr_assert_eq(r.cpu, 3000);      /* max(3, 1, app 2) */
    cr_assert_eq(r.mem, 4096 * MI); /* max(0, 4Gi, app 1Gi) */
}

Test(podres, sidecars_count_with_the_app_side_and_later_init_steps)
{
    /* sc (sidecar, 1 cpu) then i (2 cpu): i runs beside sc, 3; the app side is a 1 + sc 1 = 2. */
    struct vs_podres r = res_of(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":["
        "{\"name\":\"sc\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":\"1\","
        "\"memory\":\"1Gi\"}}},"
        "{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}],"
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\","
        "\"memory\":\"2Gi\"}}}]}}");
    cr_assert_eq(r.cpu, 3000);
    cr_assert_eq(r.mem, 3072 * MI); /* app 2Gi + sidecar 1Gi */
}

Test(podres, overhead_is_added)
{
    struct vs_podres r =
        res_of("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"overhead\":{\"cpu\":\"250m\","
               "\"memory\":\"120Mi\"},\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
               "{\"cpu\":\"1\"}}}]}}");
    cr_assert_eq(r.cpu, 1250);
    cr_assert_eq(r.mem, 120 * MI);
    cr_assert_eq(r.nz_mem, 320 * MI);
}

Test(podres, bad_quantities_are_errors_naming_the_field)
{
    static const struct {
        const char *pod;
        const char *msg;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":"
         "\"b\",\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}",
         "spec.containers[1].resources.requests[\"cpu\"]: invalid quantity \"lots\""},
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":[{\"name\":\"i\","
         "\"resources\":{\"limits\":{\"memory\":\"-1Gi\"}}}]}}",
         "spec.initContainers[0].resources.limits[\"memory\"]: invalid quantity \"-1Gi\""},
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"overhead\":{\"ephemeral-storage\":\"1X\"}}}",
         "spec.overhead[\"ephemeral-storage\"]: invalid quantity \"1X\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vs_pod p;
        pod_from(cases[i].pod, &p);
        struct vs_podres r;
        struct vs_errbuf eb;
        cr_assert_eq(vs_podres_compute(&p, &r, &eb), VS_ERR_PARSE);
        cr_assert_str_eq(eb.msg, cases[i].msg);
        vs_pod_cleanup(&p);
    }
}

Test(podres, model_reads_allocatable_and_sums_pods)
{
    struct vs_model *m = vs_model_new(NULL);
    struct vs_knode kn;
    node_from("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"7910m\","
              "\"memory\":\"31Gi\",\"ephemeral-storage\":\"100Gi\",\"pods\":\"110\"}}}",
              &kn);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_node(m, &kn, &eb), VS_OK);
    vs_knode_cleanup(&kn);
    const struct vs_node *n = vs_model_node(m, "n1");
    cr_assert_eq(n->res.alloc_cpu, 7910);
    cr_assert_eq(n->res.alloc_mem, 31 * 1024 * MI);
    cr_assert_eq(n->res.alloc_eph, 100 * 1024 * MI);
    cr_assert_eq(n->res.alloc_pods, 110);
    uint64_t gen = n->gen;

    struct vs_pod a, b, done;
    pod_from("{\"metadata\":{\"name\":\"a\",\"uid\":\"u-a\"},\"spec\":{\"nodeName\":\"n1\","
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\","
             "\"memory\":\"1Gi\"}}}]}}",
             &a);
    /* Not bound yet but placed by the extender: counted on hami.io/vgpu-node. */
    pod_from("{\"metadata\":{\"name\":\"b\",\"uid\":\"u-b\",\"annotations\":"
             "{\"hami.io/vgpu-node\":\"n1\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
             &b);
    pod_from("{\"metadata\":{\"name\":\"a\",\"uid\":\"u-a\"},\"spec\":{\"nodeName\":\"n1\"},"
             "\"status\":{\"phase\":\"Succeeded\"}}",
             &done);
    cr_assert_eq(vs_model_account_pod(m, &a, &eb), VS_OK);
    cr_assert_eq(vs_model_account_pod(m, &b, &eb), VS_OK);
    cr_assert_eq(vs_model_account_pod(m, &a, &eb), VS_OK); /* an update replaces, never adds */
    n = vs_model_node(m, "n1");
    cr_assert_gt(n->gen, gen);
    cr_assert_eq(n->res.cpu, 1000);
    cr_assert_eq(n->res.mem, 1024 * MI);
    cr_assert_eq(n->res.nz_cpu, 1100);
    cr_assert_eq(n->res.nz_mem, 1224 * MI);
    cr_assert_eq(n->res.pods, 2);
    cr_assert_eq(vs_model_account_count(m), 2);

    cr_assert_eq(vs_model_account_pod(m, &done, &eb), VS_OK); /* Succeeded: counted nowhere */
    n = vs_model_node(m, "n1");
    cr_assert_eq(n->res.cpu, 0);
    cr_assert_eq(n->res.nz_cpu, 100);
    cr_assert_eq(n->res.pods, 1);

    /* A pod on a node the model has no Node object for keeps a bucket until it goes. */
    struct vs_podres r = {.cpu = 5, .mem = 6, .eph = 7, .nz_cpu = 8, .nz_mem = 9};
    cr_assert_eq(vs_model_account(m, "u-b", "ghost", &r), VS_OK); /* moves b */
    cr_assert_eq(vs_model_node(m, "n1")->res.pods, 0);
    cr_assert_eq(vs_model_node(m, "ghost")->res.eph, 7);
    vs_model_unaccount(m, "u-b");
    cr_assert_null(vs_model_node(m, "ghost"));
    cr_assert_eq(vs_model_account_count(m), 0);

    vs_pod_cleanup(&a);
    vs_pod_cleanup(&b);
    vs_pod_cleanup(&done);
    vs_model_free(m);
}

Test(podres, node_without_allocatable_reports_minus_one)
{
    struct vs_model *m = vs_model_new(NULL);
    struct vs_knode kn;
    node_from("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"4\","
              "\"memory\":\"many\"}}}",
              &kn);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_node(m, &kn, &eb), VS_OK);
    cr_assert_str_eq(eb.msg, "node n1: status.allocatable[\"memory\"]: invalid quantity \"many\" "
                             "(not checked)");
    vs_knode_cleanup(&kn);
    const struct vs_node *n = vs_model_node(m, "n1");
    cr_assert_eq(n->res.alloc_cpu, 4000);
    cr_assert_eq(n->res.alloc_mem, -1);
    cr_assert_eq(n->res.alloc_eph, -1);
    cr_assert_eq(n->res.alloc_pods, -1);
    vs_model_free(m);
}

Test(podres, many_pods_grow_and_shrink_the_table)
{
    struct vs_model *m = vs_model_new(NULL);
    char uid[32];
    struct vs_podres r = {.cpu = 10, .mem = 1, .eph = 0, .nz_cpu = 10, .nz_mem = 1};
    for (int i = 0; i < 5000; i++) {
        snprintf(uid, sizeof(uid), "uid-%d", i);
        cr_assert_eq(vs_model_account(m, uid, i % 2 ? "odd" : "even", &r), VS_OK);
    }
    for (int i = 0; i < 5000; i += 3) {
        snprintf(uid, sizeof(uid), "uid-%d", i);
        vs_model_unaccount(m, uid);
    }
    int64_t left_even = 0, left_odd = 0;
    for (int i = 0; i < 5000; i++)
        if (i % 3 && i % 2)
            left_odd++;
        else if (i % 3)
            left_even++;
    cr_assert_eq(vs_model_node(m, "even")->res.pods, left_even);
    cr_assert_eq(vs_model_node(m, "odd")->res.cpu, 10 * left_odd);
    cr_assert_eq(vs_model_account_count(m), (size_t)(left_even + left_odd));
    for (int i = 0; i < 5000; i++) { /* every remaining one is still found */
        snprintf(uid, sizeof(uid), "uid-%d", i);
        vs_model_unaccount(m, uid);
    }
    cr_assert_eq(vs_model_account_count(m), 0);
    cr_assert_null(vs_model_node(m, "even"));
    vs_model_free(m);
}

Test(podres, pod_level_requests_replace_cpu_and_memory)
{
    struct vs_podres r = res_of(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"resources\":{\"requests\":{\"cpu\":\"2\","
        "\"memory\":\"3Gi\"},\"limits\":{\"cpu\":\"4\"}},\"overhead\":{\"cpu\":\"100m\"},"
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
        "\"ephemeral-storage\":\"1Gi\"}}},{\"name\":\"b\"}]}}");
    cr_assert_eq(r.cpu, 2100); /* pod-level 2 + overhead */
    cr_assert_eq(r.mem, 3072 * MI);
    cr_assert_eq(r.eph, 1024 * MI); /* not a pod-level resource */
    cr_assert_eq(r.nz_cpu, 2100);   /* the defaults of b are replaced too */
    cr_assert_eq(r.nz_mem, 3072 * MI);
    struct vs_pod p;
    pod_from("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"resources\":{\"requests\":{\"memory\":"
             "\"lots\"}}}}",
             &p);
    struct vs_errbuf eb;
    cr_assert_eq(vs_podres_compute(&p, &r, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "spec.resources.requests[\"memory\"]: invalid quantity \"lots\"");
    vs_pod_cleanup(&p);
}

Test(podres, a_request_beyond_a_petabyte_is_capped)
{
    /* Found by fuzz_loader: two such requests on one node overflowed the score's sum. */
    struct vs_podres r = res_of(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"9223372036854775807\","
        "\"memory\":\"9223372036854775807\"}}},"
        "{\"name\":\"b\",\"resources\":{\"requests\":{\"memory\":\"9223372036854775807\"}}}]}}");
    cr_assert_eq(r.cpu, VS_PODRES_MAX);
    cr_assert_eq(r.mem, VS_PODRES_MAX);
    cr_assert_eq(r.nz_mem, VS_PODRES_MAX);
    cr_assert_eq(r.eph, 0);
}

static bool skip_gpu(void *ctx, const char *name)
{
    return strcmp(name, (const char *)ctx) == 0;
}

/* The scalar resources NodeResourcesFit counts: domain-prefixed ones, hugepages, by name; the
 * app side (with sidecars) against the largest init step, plus overhead; a managed one left
 * out; cpu and memory are not scalar. */
Test(podres, scalar_resources)
{
    struct vs_pod p;
    pod_from(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{"
        "\"overhead\":{\"example.com/fpga\":\"1\"},"
        "\"initContainers\":["
        "{\"name\":\"i\",\"resources\":{\"limits\":{\"example.com/fpga\":\"5\"}}},"
        "{\"name\":\"s\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":"
        "{\"example.com/fpga\":\"1\",\"hugepages-2Mi\":\"4Mi\"}}}],"
        "\"containers\":["
        "{\"name\":\"a\",\"resources\":{\"requests\":{\"example.com/fpga\":\"2\",\"cpu\":\"1\","
        "\"nvidia.com/gpu\":\"1\"}}},"
        "{\"name\":\"b\",\"resources\":{\"limits\":{\"example.com/fpga\":\"1\"}}}]}}",
        &p);
    struct vs_kvlist out;
    struct vs_errbuf eb;
    cr_assert_eq(vs_podres_scalar(&p, skip_gpu, "nvidia.com/gpu", &out, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(out.n, 2);
    /* app 2 + 1 + sidecar 1 = 4 against init 5 (before the sidecar starts): 5, + overhead 1 */
    cr_assert_str_eq(out.items[0].key, "example.com/fpga");
    cr_assert_str_eq(out.items[0].val, "6");
    cr_assert_str_eq(out.items[1].key, "hugepages-2Mi");
    cr_assert_str_eq(out.items[1].val, "4194304");
    vs_kv_cleanup(&out);
    cr_assert(vs_podres_is_scalar("example.com/fpga"));
    cr_assert(vs_podres_is_scalar("kubernetes.io/batch"));
    cr_assert_not(vs_podres_is_scalar("cpu"));
    cr_assert_not(vs_podres_is_scalar("requests.example.com/x"));
    free(p.ctrs[0].requests.items[0].val);
    p.ctrs[0].requests.items[0].val = strdup("two");
    cr_assert_eq(vs_podres_scalar(&p, NULL, NULL, &out, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(
        eb.msg, "spec.containers[0].resources.requests[\"example.com/fpga\"]: invalid quantity "
                "\"two\"");
    vs_pod_cleanup(&p);
}
