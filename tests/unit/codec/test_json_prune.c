/* test_json_prune: vs_json_load_pruned and vs_codec_pod_res_load. Every case checks the exact
 * tree kept (as compact JSON with sorted keys) or that the text is refused. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_prune.h"
#include "k8s_codec.h"

static const struct vs_json_keep leaf[] = {{.key = "a"}, {.key = "m", .all = true}, {.key = NULL}};
static const struct vs_json_keep root[] = {{.key = "x", .members = leaf},
                                           {.key = "y", .members = leaf, .each = true},
                                           {.key = "s"},
                                           {.key = NULL}};

/* The pruned tree of text as compact JSON with sorted keys; NULL when refused. */
static char *pruned(const char *text, const struct vs_json_keep *keep)
{
    json_t *t = vs_json_load_pruned(text, strlen(text), keep);
    if (!t)
        return NULL;
    char *s = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(t);
    return s;
}

static void expect(const char *text, const char *want)
{
    char *got = pruned(text, root);
    cr_assert_not_null(got, "refused: %s", text);
    cr_assert_str_eq(got, want, "for %s", text);
    free(got);
}

static void refused(const char *text)
{
    char *got = pruned(text, root);
    cr_assert_null(got, "%s kept as %s", text, got);
}

Test(json_prune, keeps_only_the_listed_members)
{
    expect("{\"x\":{\"a\":1,\"b\":2,\"m\":{\"k\":\"v\",\"n\":[1]}},\"z\":{\"deep\":[[{}]]},\"s\":"
           "\"t\"}",
           "{\"s\":\"t\",\"x\":{\"a\":1,\"m\":{\"k\":\"v\",\"n\":[1]}}}");
    expect(" { } ", "{}");
}

Test(json_prune, each_element_of_a_listed_array)
{
    expect("{\"y\":[{\"a\":\"1\",\"b\":0},7,[{\"b\":1}],{}]}",
           "{\"y\":[{\"a\":\"1\"},7,[{\"b\":1}],{}]}");
    /* without each, an array is kept whole */
    expect("{\"x\":[{\"a\":1,\"b\":2}]}", "{\"x\":[{\"a\":1,\"b\":2}]}");
}

Test(json_prune, other_types_kept_whole_for_the_decoder_to_refuse)
{
    expect("{\"x\":\"text\",\"y\":{\"a\":1,\"b\":2},\"s\":{\"any\":[true,null,1.5]}}",
           "{\"s\":{\"any\":[true,null,1.5]},\"x\":\"text\",\"y\":{\"a\":1}}");
}

Test(json_prune, keys_and_strings_decoded_as_jansson_does)
{
    expect("{\"\\u0078\":{\"a\":\"caf\\u00e9\\n\"},\"s\":\"\xc3\xa9\"}",
           "{\"s\":\"\xc3\xa9\",\"x\":{\"a\":\"caf\xc3\xa9\\n\"}}");
    /* a later duplicate replaces the earlier one */
    expect("{\"s\":1,\"x\":{\"a\":1},\"s\":2,\"x\":{\"b\":1}}", "{\"s\":2,\"x\":{}}");
}

Test(json_prune, refuses_what_does_not_balance_or_decode)
{
    refused("");
    refused("[1]");
    refused("{\"x\":{\"a\":1}");
    refused("{\"x\":{\"a\":1}} x");
    refused("{\"s\":\"\xff\"}");       /* a kept string that is not UTF-8 */
    refused("{\"s\":tru}");            /* a kept scalar jansson refuses */
    refused("{\"s\" 1}");              /* no colon */
    refused("{\"z\":1,}");             /* trailing comma */
    refused("{\"z\":\"unterminated}"); /* a skipped string that never ends */
    /* Skipped members are only stepped over: bad JSON there is not noticed. */
    expect("{\"z\":[tru, \"\xff\"],\"s\":0}", "{\"s\":0}");
}

Test(json_prune, pod_res_keeps_what_the_requests_decoder_reads)
{
    const char *pod =
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u\","
        "\"labels\":{\"a\":\"b\"},\"annotations\":{\"x\":\"y\",\"hami.io/vgpu-node\":\"n1\"},"
        "\"ownerReferences\":[{\"kind\":\"ReplicaSet\"}]},\"spec\":{\"nodeName\":\"n1\","
        "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":"
        "\"1\"},\"limits\":{\"memory\":\"1Gi\"},\"claims\":[]},\"securityContext\":{\"privileged\":"
        "true,\"runAsUser\":0},\"restartPolicy\":\"Always\"}],\"initContainers\":[],\"overhead\":"
        "{\"cpu\":\"10m\"},\"resources\":{\"requests\":{\"memory\":\"2Gi\"}},\"tolerations\":[]},"
        "\"status\":{\"phase\":\"Running\",\"nominatedNodeName\":\"n2\",\"conditions\":[]}}";
    json_t *t = vs_codec_pod_res_load(pod, strlen(pod));
    cr_assert_not_null(t);
    char *s = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(
        s, "{\"metadata\":{\"annotations\":{\"hami.io/vgpu-node\":\"n1\"},\"name\":\"p\","
           "\"namespace\":\"ns\",\"uid\":\"u\"},\"spec\":{\"containers\":[{\"name\":\"c\","
           "\"resources\":{\"limits\":{\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"1\"}},"
           "\"restartPolicy\":\"Always\",\"securityContext\":{\"privileged\":true}}],"
           "\"initContainers\":[],\"nodeName\":\"n1\",\"overhead\":{\"cpu\":\"10m\"},"
           "\"resources\":{\"requests\":{\"memory\":\"2Gi\"}}},\"status\":{\"nominatedNodeName\":"
           "\"n2\",\"phase\":\"Running\"}}");
    free(s);
    json_decref(t);
}
