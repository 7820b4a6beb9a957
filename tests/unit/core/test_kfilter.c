/* test_kfilter: kube-scheduler v1.36's pre-extender filters as simulate runs them: toleration
 * matching, node affinity operators and terms, NodeResourcesFit's joined reasons, and the
 * least-allocated score. Exact reason texts throughout. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "k8s_codec.h"
#include "kfilter.h"
#include "model.h"

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
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    cr_assert_not_null(j, "bad test JSON: %s", je.text);
    struct vs_errbuf eb;
    cr_assert_eq(vs_codec_node_from_json(j, n, &eb), VS_OK, "%s", eb.msg);
    json_decref(j);
}

/* The reason node `node_json` gives pod `pod_json` ("" when it passes), resources unchecked. */
static void expect(const char *pod_json, const char *node_json, const char *want)
{
    struct vs_pod p;
    struct vs_knode kn;
    pod_from(pod_json, &p);
    node_from(node_json, &kn);
    struct vs_podres r;
    struct vs_errbuf eb;
    cr_assert_eq(vs_podres_compute(&p, &r, &eb), VS_OK);
    char buf[VS_KF_REASON_SIZE];
    const char *got = vs_kfilter_node(&p, &r, &kn, NULL, NULL, buf);
    cr_assert_str_eq(got ? got : "", want, "pod %s on node %s", pod_json, node_json);
    vs_pod_cleanup(&p);
    vs_knode_cleanup(&kn);
}

#define NODE(extra)                                                                                \
    "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"zone\":\"a\",\"gen\":\"5\"}}" extra "}"
#define POD(spec) "{\"metadata\":{\"name\":\"p\"},\"spec\":{" spec "}}"
#define AFF(terms)                                                                                 \
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"          \
    "{\"nodeSelectorTerms\":[" terms "]}}}"
#define EXPR(k, op, vals)                                                                          \
    "{\"matchExpressions\":[{\"key\":\"" k "\",\"operator\":\"" op "\"" vals "}]}"

Test(kfilter, unschedulable_unless_tolerated)
{
    const char *n = NODE(",\"spec\":{\"unschedulable\":true}");
    expect(POD(""), n, VS_KF_UNSCHEDULABLE);
    expect(POD("\"tolerations\":[{\"key\":\"node.kubernetes.io/unschedulable\","
               "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]"),
           n, "");
    expect(POD("\"tolerations\":[{\"operator\":\"Exists\"}]"), n, "");
    expect(POD("\"tolerations\":[{\"key\":\"node.kubernetes.io/unschedulable\","
               "\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]"),
           n, VS_KF_UNSCHEDULABLE);
}

Test(kfilter, taints_and_tolerations)
{
    const char *n = NODE(",\"spec\":{\"taints\":[{\"key\":\"gpu\",\"value\":\"yes\",\"effect\":"
                         "\"NoSchedule\"},{\"key\":\"soft\",\"effect\":\"PreferNoSchedule\"}]}");
    expect(POD(""), n, VS_KF_TAINT);
    expect(POD("\"tolerations\":[{\"key\":\"gpu\",\"value\":\"yes\"}]"), n, "");
    expect(POD("\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Equal\",\"value\":\"no\"}]"), n,
           VS_KF_TAINT);
    expect(POD("\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":"
               "\"NoSchedule\"}]"),
           n, "");
    expect(POD("\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":"
               "\"NoExecute\"}]"),
           n, VS_KF_TAINT);
    expect(POD("\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Gt\",\"value\":\"1\"}]"), n,
           VS_KF_TAINT);
    const char *ne = NODE(",\"spec\":{\"taints\":[{\"key\":\"evict\",\"effect\":\"NoExecute\"}]}");
    expect(POD(""), ne, VS_KF_TAINT);
    expect(POD("\"tolerations\":[{\"key\":\"evict\",\"operator\":\"Exists\"}]"), ne, "");
}

Test(kfilter, node_selector_and_affinity_operators)
{
    const char *n = NODE("");
    expect(POD("\"nodeSelector\":{\"zone\":\"a\"}"), n, "");
    expect(POD("\"nodeSelector\":{\"zone\":\"b\"}"), n, VS_KF_AFFINITY);
    expect(POD(AFF(EXPR("zone", "In", ",\"values\":[\"b\",\"a\"]"))), n, "");
    expect(POD(AFF(EXPR("zone", "NotIn", ",\"values\":[\"a\"]"))), n, VS_KF_AFFINITY);
    expect(POD(AFF(EXPR("rack", "NotIn", ",\"values\":[\"a\"]"))), n, ""); /* absent label */
    expect(POD(AFF(EXPR("zone", "Exists", ""))), n, "");
    expect(POD(AFF(EXPR("zone", "DoesNotExist", ""))), n, VS_KF_AFFINITY);
    expect(POD(AFF(EXPR("rack", "DoesNotExist", ""))), n, "");
    expect(POD(AFF(EXPR("gen", "Gt", ",\"values\":[\"4\"]"))), n, "");
    expect(POD(AFF(EXPR("gen", "Gt", ",\"values\":[\"5\"]"))), n, VS_KF_AFFINITY);
    expect(POD(AFF(EXPR("gen", "Lt", ",\"values\":[\"6\"]"))), n, "");
    expect(POD(AFF(EXPR("zone", "Lt", ",\"values\":[\"6\"]"))), n, VS_KF_AFFINITY); /* not int */
    /* Invalid requirements make their term match nothing. */
    expect(POD(AFF(EXPR("gen", "Gt", ",\"values\":[\"x\"]"))), n, VS_KF_AFFINITY);
    expect(POD(AFF(EXPR("zone", "In", ""))), n, VS_KF_AFFINITY);
    expect(POD(AFF(EXPR("zone", "Exists", ",\"values\":[\"a\"]"))), n, VS_KF_AFFINITY);
    expect(POD(AFF(EXPR("zone", "Like", ",\"values\":[\"a\"]"))), n, VS_KF_AFFINITY);
    /* Terms are ORed, an empty term selects nothing, no terms select nothing. */
    expect(POD(AFF(EXPR("zone", "In", ",\"values\":[\"b\"]") "," EXPR("gen", "Exists", ""))), n,
           "");
    expect(POD(AFF("{}")), n, VS_KF_AFFINITY);
    expect(POD(AFF("")), n, VS_KF_AFFINITY);
    /* nodeSelector and affinity must both hold. */
    expect(POD("\"nodeSelector\":{\"zone\":\"b\"}," AFF(EXPR("zone", "Exists", ""))), n,
           VS_KF_AFFINITY);
    /* matchFields: metadata.name only. */
    expect(POD(AFF("{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                   "\"values\":[\"n1\"]}]}")),
           n, "");
    expect(POD(AFF("{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\","
                   "\"values\":[\"n1\"]}]}")),
           n, VS_KF_AFFINITY);
    expect(POD(AFF("{\"matchFields\":[{\"key\":\"metadata.uid\",\"operator\":\"In\","
                   "\"values\":[\"n1\"]}]}")),
           n, VS_KF_AFFINITY);
}

Test(kfilter, first_failing_plugin_wins)
{
    const char *n = NODE(",\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"t\","
                         "\"effect\":\"NoSchedule\"}]}");
    expect(POD("\"nodeSelector\":{\"zone\":\"b\"}"), n, VS_KF_UNSCHEDULABLE);
    expect(POD("\"nodeSelector\":{\"zone\":\"b\"},\"tolerations\":[{\"key\":"
               "\"node.kubernetes.io/unschedulable\",\"operator\":\"Exists\"}]"),
           n, VS_KF_TAINT);
}

static const char *fit(struct vs_model *m, const char *pod_json, char *buf)
{
    struct vs_pod p;
    pod_from(pod_json, &p);
    struct vs_knode kn;
    node_from(NODE(""), &kn);
    struct vs_podres r;
    struct vs_errbuf eb;
    cr_assert_eq(vs_podres_compute(&p, &r, &eb), VS_OK);
    const char *got = vs_kfilter_node(&p, &r, &kn, vs_model_node(m, "n1"), NULL, buf);
    vs_pod_cleanup(&p);
    vs_knode_cleanup(&kn);
    return got ? got : "";
}

Test(kfilter, resources_fit_joins_every_shortfall)
{
    struct vs_model *m = vs_model_new(NULL);
    struct vs_knode kn;
    node_from(NODE(",\"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\","
                   "\"ephemeral-storage\":\"10Gi\",\"pods\":\"2\"}}"),
              &kn);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_node(m, &kn, &eb), VS_OK);
    vs_knode_cleanup(&kn);
    struct vs_podres used = {
        .cpu = 1500, .mem = 3LL << 30, .eph = 0, .nz_cpu = 1500, .nz_mem = 3LL << 30};
    cr_assert_eq(vs_model_account(m, "other", "n1", &used), VS_OK);
    char buf[VS_KF_REASON_SIZE];
    cr_assert_str_eq(fit(m, POD("\"containers\":[{\"name\":\"c\"}]"), buf), "");
    cr_assert_str_eq(fit(m,
                         POD("\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
                             "{\"cpu\":\"500m\",\"memory\":\"1Gi\",\"ephemeral-storage\":"
                             "\"10Gi\"}}}]"),
                         buf),
                     "");
    cr_assert_str_eq(fit(m,
                         POD("\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
                             "{\"cpu\":\"501m\",\"memory\":\"1Gi\",\"ephemeral-storage\":"
                             "\"11Gi\"}}}]"),
                         buf),
                     "Insufficient cpu, Insufficient ephemeral-storage");
    cr_assert_eq(vs_model_account(m, "second", "n1", &(struct vs_podres){0}), VS_OK);
    cr_assert_str_eq(fit(m,
                         POD("\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
                             "{\"cpu\":\"1\",\"memory\":\"2Gi\",\"ephemeral-storage\":"
                             "\"11Gi\"}}}]"),
                         buf),
                     "Too many pods, Insufficient cpu, Insufficient memory, Insufficient "
                     "ephemeral-storage");
    vs_model_free(m);
}

Test(kfilter, least_allocated_score)
{
    struct vs_model *m = vs_model_new(NULL);
    struct vs_knode kn;
    node_from(NODE(",\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\"}}"), &kn);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_node(m, &kn, &eb), VS_OK);
    vs_knode_cleanup(&kn);
    struct vs_podres r = {.nz_cpu = 1000, .nz_mem = 2LL << 30};
    /* cpu (4000-1000)*100/4000 = 75, memory (8-2)*100/8 = 75 */
    cr_assert_eq(vs_kfilter_least_allocated(vs_model_node(m, "n1"), &r), 75);
    struct vs_podres big = {.nz_cpu = 3000, .nz_mem = 7LL << 30};
    cr_assert_eq(vs_model_account(m, "x", "n1", &big), VS_OK);
    /* cpu 0 (over), memory (8-9)<0 -> 0 */
    cr_assert_eq(vs_kfilter_least_allocated(vs_model_node(m, "n1"), &r), 0);
    /* Capped requests (VS_PODRES_MAX) add up without overflow: still 0, no UB. */
    struct vs_podres huge = {.nz_cpu = VS_PODRES_MAX, .nz_mem = VS_PODRES_MAX};
    cr_assert_eq(vs_model_account(m, "y", "n1", &huge), VS_OK);
    cr_assert_eq(vs_kfilter_least_allocated(vs_model_node(m, "n1"), &huge), 0);
    vs_model_free(m);

    m = vs_model_new(NULL);
    node_from(NODE(",\"status\":{\"allocatable\":{\"cpu\":\"3\"}}"), &kn);
    cr_assert_eq(vs_model_upsert_node(m, &kn, &eb), VS_OK);
    vs_knode_cleanup(&kn);
    /* memory not reported: left out of the mean; cpu (3000-1000)*100/3000 = 66 */
    cr_assert_eq(vs_kfilter_least_allocated(vs_model_node(m, "n1"), &r), 66);
    vs_model_free(m);
}
