/* test_loader: the input-file loader and the k8s codec behind it. Every case checks exact
 * decoded values, exact warning texts, or the exact one-line error message. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/redirect.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_codec.h"
#include "loader.h"
#include "testutil.h"

#define DATA "tests/data/loader/"

/* Collects warnings joined by '\n'. */
struct warnings {
    char text[2048];
    int n;
};

static void collect(void *ctx, const char *msg)
{
    struct warnings *w = ctx;
    size_t len = strlen(w->text);
    snprintf(w->text + len, sizeof(w->text) - len, "%s%s", w->n ? "\n" : "", msg);
    w->n++;
}

static enum vs_err load_str(const char *text, struct vs_objset *set, struct warnings *w,
                            struct vs_errbuf *eb)
{
    return vs_loader_load_buf(text, strlen(text), "in.yaml", set, collect, w, eb);
}

Test(loader, json_list_keeps_kinds_in_file_order)
{
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_file(DATA "list.json", &set, collect, &w, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_eq(set.n_nodes, 2);
    cr_assert_eq(set.n_pods, 1);
    cr_assert_eq(set.n_quotas, 1);
    cr_assert_str_eq(w.text, "tests/data/loader/list.json: skipping Service shop/web");
    cr_assert_eq(w.n, 1);

    struct vs_knode *a = &set.nodes[0];
    cr_assert_str_eq(a->name, "node-a");
    cr_assert_str_eq(a->resource_version, "101");
    cr_assert(a->unschedulable);
    cr_assert_eq(a->labels.n, 2);
    cr_assert_str_eq(a->labels.items[0].key, "gpu");
    cr_assert_str_eq(a->labels.items[1].key, "kubernetes.io/hostname");
    cr_assert_str_eq(vs_kv_get(&a->annotations, "hami.io/node-handshake"),
                     "Requesting_2024.01.01 00:00:00");
    cr_assert_eq(a->allocatable.n, 3);
    cr_assert_str_eq(vs_kv_get(&a->allocatable, "memory"), "128Gi");
    cr_assert_str_eq(set.nodes[1].name, "node-b");
    cr_assert_not(set.nodes[1].unschedulable);
    cr_assert_str_eq(set.nodes[1].resource_version, "");
    cr_assert_str_eq(vs_kv_get(&set.nodes[1].allocatable, "nvidia.com/gpu"), "10");

    struct vs_pod *p = &set.pods[0];
    cr_assert_str_eq(p->ns, "team-a");
    cr_assert_str_eq(p->name, "p1");
    cr_assert_str_eq(p->uid, "0d1f7c4e-1111-2222-3333-444455556666");
    cr_assert_str_eq(p->resource_version, "202");
    cr_assert_str_eq(p->node_name, "node-a");
    cr_assert_str_eq(p->scheduler_name, "hami-scheduler");
    cr_assert_str_eq(p->phase, "Running");
    cr_assert_not(p->deleting);
    cr_assert_str_eq(vs_kv_get(&p->annotations, "hami.io/vgpu-node"), "node-a");
    cr_assert_str_eq(vs_kv_get(&p->labels, "app"), "train");
    cr_assert_str_eq(vs_kv_get(&p->node_selector, "gpu"), "on");
    cr_assert_eq(p->n_init, 0);
    cr_assert_null(p->init);
    cr_assert_eq(p->n_ctrs, 1);
    cr_assert_str_eq(p->ctrs[0].name, "main");
    cr_assert_eq(p->ctrs[0].limits.n, 2);
    cr_assert_str_eq(vs_kv_get(&p->ctrs[0].limits, "nvidia.com/gpumem"), "4000");
    cr_assert_str_eq(vs_kv_get(&p->ctrs[0].requests, "cpu"), "500m");
    cr_assert_not(p->ctrs[0].privileged);
    cr_assert_eq(p->n_init_status, 0);

    struct vs_kquota *q = &set.quotas[0];
    cr_assert_str_eq(q->ns, "team-a");
    cr_assert_str_eq(q->name, "gpu-quota");
    cr_assert_eq(q->hard.n, 2);
    cr_assert_str_eq(vs_kv_get(&q->hard, "limits.nvidia.com/gpumem"), "20000");
    vs_objset_cleanup(&set);
    cr_assert_null(set.pods);
    cr_assert_eq(set.n_pods, 0);
}

Test(loader, nodelist_items_without_kind_are_nodes)
{
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_file(DATA "nodelist.json", &set, collect, &w, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_eq(set.n_nodes, 2);
    cr_assert_eq(set.n_pods, 1);
    cr_assert_str_eq(set.nodes[0].name, "n1");
    cr_assert_str_eq(vs_kv_get(&set.nodes[0].labels, "zone"), "a");
    cr_assert_str_eq(set.nodes[1].name, "n2");
    cr_assert_eq(set.nodes[1].annotations.n, 0);
    cr_assert_str_eq(set.pods[0].name, "stray");
    cr_assert_str_eq(set.pods[0].ns, "default");
    cr_assert_eq(w.n, 0);
    vs_objset_cleanup(&set);
}

Test(loader, single_pod_with_init_containers_and_statuses)
{
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_file(DATA "pod-init.json", &set, NULL, NULL, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_eq(set.n_pods, 1);
    cr_assert_eq(set.n_nodes, 0);
    struct vs_pod *p = &set.pods[0];
    cr_assert_str_eq(p->ns, "default");
    cr_assert_str_eq(p->name, "with-init");
    cr_assert_str_eq(p->uid, "");
    cr_assert_str_eq(p->node_name, "");
    cr_assert_str_eq(p->scheduler_name, "");
    cr_assert_str_eq(p->phase, "Pending");
    cr_assert(p->deleting);
    cr_assert_eq(p->n_init, 2);
    cr_assert_str_eq(p->init[0].name, "prep");
    cr_assert_str_eq(vs_kv_get(&p->init[0].limits, "nvidia.com/gpumem-percentage"), "50");
    cr_assert_eq(p->init[0].requests.n, 0);
    cr_assert_str_eq(p->init[1].name, "warm");
    cr_assert_not(p->init[1].privileged);
    cr_assert_eq(p->n_ctrs, 2);
    cr_assert(p->ctrs[0].privileged);
    cr_assert_str_eq(vs_kv_get(&p->ctrs[0].limits, "nvidia.com/gpucores"), "30");
    cr_assert_str_eq(vs_kv_get(&p->ctrs[0].requests, "nvidia.com/gpu"), "2");
    cr_assert_str_eq(p->ctrs[1].name, "sidecar");
    cr_assert_eq(p->ctrs[1].limits.n, 0);
    cr_assert_eq(p->n_init_status, 3);
    cr_assert(p->init_status[0].terminated);
    cr_assert_eq(p->init_status[0].exit_code, 0);
    cr_assert_not(p->init_status[1].terminated);
    cr_assert(p->init_status[2].terminated);
    cr_assert_eq(p->init_status[2].exit_code, 137);
    vs_objset_cleanup(&set);
}

Test(loader, scheduling_fields_of_pods_and_nodes)
{
    const char *text =
        "kind: Node\nmetadata: {name: n1}\nspec:\n  taints:\n  - {key: gpu, value: \"yes\", "
        "effect: NoSchedule}\n  - {key: bare, effect: NoExecute}\n---\n"
        "kind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n"
        "  overhead: {cpu: 250m, memory: 120Mi}\n"
        "  tolerations:\n  - {key: gpu, operator: Equal, value: \"yes\", effect: NoSchedule, "
        "tolerationSeconds: 30}\n  - {operator: Exists}\n"
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        nodeSelectorTerms:\n"
        "        - matchExpressions:\n          - {key: gen, operator: Gt, values: [4]}\n"
        "          - {key: zone, operator: Exists}\n"
        "        - matchFields:\n          - {key: metadata.name, operator: In, values: [n1]}\n"
        "  initContainers:\n  - {name: sc, restartPolicy: Always}\n  - {name: i}\n";
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb;
    cr_assert_eq(load_str(text, &set, &w, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(set.n_nodes, 1);
    const struct vs_knode *n = &set.nodes[0];
    cr_assert_eq(n->n_taints, 2);
    cr_assert_str_eq(n->taints[0].key, "gpu");
    cr_assert_str_eq(n->taints[0].value, "yes");
    cr_assert_str_eq(n->taints[0].effect, "NoSchedule");
    cr_assert_str_eq(n->taints[1].key, "bare");
    cr_assert_str_eq(n->taints[1].value, "");
    cr_assert_str_eq(n->taints[1].effect, "NoExecute");
    cr_assert_eq(set.n_pods, 1);
    const struct vs_pod *p = &set.pods[0];
    cr_assert_str_eq(vs_kv_get(&p->overhead, "cpu"), "250m");
    cr_assert_str_eq(vs_kv_get(&p->overhead, "memory"), "120Mi");
    cr_assert_eq(p->n_tols, 2);
    cr_assert_str_eq(p->tols[0].key, "gpu");
    cr_assert_str_eq(p->tols[0].op, "Equal");
    cr_assert_str_eq(p->tols[0].value, "yes");
    cr_assert_str_eq(p->tols[0].effect, "NoSchedule");
    cr_assert_str_eq(p->tols[1].key, "");
    cr_assert_str_eq(p->tols[1].op, "Exists");
    cr_assert(p->has_required_affinity);
    cr_assert_eq(p->n_aff_terms, 2);
    cr_assert_eq(p->aff_terms[0].n_exprs, 2);
    cr_assert_str_eq(p->aff_terms[0].exprs[0].key, "gen");
    cr_assert_str_eq(p->aff_terms[0].exprs[0].op, "Gt");
    cr_assert_eq(p->aff_terms[0].exprs[0].n_values, 1);
    cr_assert_str_eq(p->aff_terms[0].exprs[0].values[0], "4");
    cr_assert_eq(p->aff_terms[0].exprs[1].n_values, 0);
    cr_assert_eq(p->aff_terms[1].n_exprs, 0);
    cr_assert_eq(p->aff_terms[1].n_fields, 1);
    cr_assert_str_eq(p->aff_terms[1].fields[0].values[0], "n1");
    cr_assert_eq(p->n_init, 2);
    cr_assert(p->init[0].restart_always);
    cr_assert(!p->init[1].restart_always);

    /* Deep copies keep every field. */
    struct vs_pod c;
    cr_assert_eq(vs_pod_copy(&c, p), VS_OK);
    cr_assert_str_eq(c.aff_terms[1].fields[0].key, "metadata.name");
    cr_assert_str_eq(c.tols[0].value, "yes");
    cr_assert_str_eq(vs_kv_get(&c.overhead, "cpu"), "250m");
    cr_assert(c.init[0].restart_always);
    vs_pod_cleanup(&c);
    struct vs_knode kc;
    cr_assert_eq(vs_knode_copy(&kc, n), VS_OK);
    cr_assert_str_eq(kc.taints[1].effect, "NoExecute");
    vs_knode_cleanup(&kc);
    vs_objset_cleanup(&set);
}

/* status.capacity is kept beside allocatable: device backends count their cards from it. */
Test(loader, node_capacity)
{
    static const char y[] = "kind: Node\nmetadata: {name: n}\nstatus:\n"
                            "  allocatable: {kunlunxin.com/xpu: \"7\"}\n"
                            "  capacity: {kunlunxin.com/xpu: 8, enflame.com/gcu: \"2\"}\n";
    struct warnings w = {0};
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_buf(y, sizeof(y) - 1, "cap.yaml", &set, collect, &w, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_eq(set.nodes[0].capacity.n, 2);
    cr_assert_str_eq(vs_kv_get(&set.nodes[0].capacity, "kunlunxin.com/xpu"), "8");
    cr_assert_str_eq(vs_kv_get(&set.nodes[0].capacity, "enflame.com/gcu"), "2");
    cr_assert_str_eq(vs_kv_get(&set.nodes[0].allocatable, "kunlunxin.com/xpu"), "7");
    struct vs_knode copy;
    cr_assert_eq(vs_knode_copy(&copy, &set.nodes[0]), VS_OK);
    cr_assert_str_eq(vs_kv_get(&copy.capacity, "kunlunxin.com/xpu"), "8");
    vs_knode_cleanup(&copy);
    vs_objset_cleanup(&set);
}

Test(loader, yaml_stream_of_two_documents)
{
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_file(DATA "stream.yaml", &set, collect, &w, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_eq(set.n_nodes, 1);
    cr_assert_eq(set.n_pods, 1);
    cr_assert_eq(w.n, 0);
    cr_assert_str_eq(set.nodes[0].name, "yaml-node");
    cr_assert_str_eq(vs_kv_get(&set.nodes[0].labels, "gpu"), "on");
    cr_assert_str_eq(vs_kv_get(&set.nodes[0].allocatable, "nvidia.com/gpu"), "4");
    cr_assert_eq(set.nodes[0].capacity.n, 0);
    cr_assert_str_eq(set.pods[0].ns, "ml");
    cr_assert_str_eq(set.pods[0].name, "yaml-pod");
    cr_assert_str_eq(set.pods[0].scheduler_name, "hami-scheduler");
    cr_assert_str_eq(vs_kv_get(&set.pods[0].ctrs[0].limits, "nvidia.com/gpumem"), "3000");
    vs_objset_cleanup(&set);
}

Test(loader, yaml_scalars_become_map_text)
{
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_file(DATA "scalars.yaml", &set, NULL, NULL, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_eq(set.n_pods, 1);
    const struct vs_kvlist *a = &set.pods[0].annotations;
    static const char *const want[][2] = {
        {"nvidia.com/numa-bind", "true"},
        {"flag-upper", "false"},
        {"count", "3"},
        {"negative", "-2"},
        {"ratio", "1.5"},
        {"sci", "1000"},
        {"tiny", "0.000001"},
        {"quoted-int", "007"},
        {"single-quoted", "1.50"},
        {"plain-zeros", "7"},
        {"empty", ""},
        {"tilde", ""},
        {"tagged", "42"},
        {"huge", "99999999999999999999"},
        {"hex", "0x1F"},
        {"yes-word", "yes"},
        {"text", "hello world"},
        {"block", "line1\nline2\n"},
    };
    cr_assert_eq(a->n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < a->n; i++) {
        cr_assert_str_eq(a->items[i].key, want[i][0]);
        cr_assert_str_eq(a->items[i].val, want[i][1], "%s", want[i][0]);
    }
    vs_objset_cleanup(&set);
}

Test(loader, json_numbers_and_bools_become_map_text)
{
    static const char text[] =
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"n\",\"annotations\":{"
        "\"i\":42,\"neg\":-7,\"r\":1.5,\"whole\":2.0,\"big\":100000000.0,\"small\":1e-7,"
        "\"third\":0.3333333333333333,\"huge\":1e21,\"t\":true,\"f\":false,\"z\":null,"
        "\"max\":9223372036854775807}}}";
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};
    static const char *const want[][2] = {
        {"i", "42"},
        {"neg", "-7"},
        {"r", "1.5"},
        {"whole", "2"},
        {"big", "100000000"},
        {"small", "1e-7"},
        {"third", "0.3333333333333333"},
        {"huge", "1e+21"},
        {"t", "true"},
        {"f", "false"},
        {"z", ""},
        {"max", "9223372036854775807"},
    };

    cr_assert_eq(vs_loader_load_buf(text, strlen(text), "n.json", &set, NULL, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    const struct vs_kvlist *a = &set.pods[0].annotations;
    cr_assert_eq(a->n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < a->n; i++) {
        cr_assert_str_eq(a->items[i].key, want[i][0]);
        cr_assert_str_eq(a->items[i].val, want[i][1], "%s", want[i][0]);
    }
    vs_objset_cleanup(&set);
}

Test(loader, top_level_json_array_is_items)
{
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_file(DATA "array.json", &set, NULL, NULL, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_eq(set.n_nodes, 1);
    cr_assert_eq(set.n_pods, 1);
    cr_assert_str_eq(set.nodes[0].name, "arr-node");
    cr_assert_str_eq(set.pods[0].name, "arr-pod");
    vs_objset_cleanup(&set);
}

Test(loader, typed_lists_in_yaml_and_untyped_items_list)
{
    static const char text[] = "kind: PodList\n"
                               "items:\n"
                               "- metadata: {name: a, namespace: x}\n"
                               "- metadata: {name: b}\n"
                               "---\n"
                               "kind: ResourceQuotaList\n"
                               "items:\n"
                               "- metadata: {name: q}\n"
                               "  spec: {hard: {limits.nvidia.com/gpu: 2}}\n"
                               "---\n"
                               "items:\n"
                               "- {kind: Node, metadata: {name: n}}\n"
                               "- {metadata: {name: anonymous}}\n"
                               "---\n"
                               "kind: DeploymentList\n"
                               "items: []\n"
                               "---\n"
                               "kind: List\n"
                               "items: null\n";
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(load_str(text, &set, &w, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(set.n_pods, 2);
    cr_assert_str_eq(set.pods[0].ns, "x");
    cr_assert_str_eq(set.pods[1].ns, "default");
    cr_assert_eq(set.n_quotas, 1);
    cr_assert_str_eq(set.quotas[0].ns, "default");
    cr_assert_str_eq(vs_kv_get(&set.quotas[0].hard, "limits.nvidia.com/gpu"), "2");
    cr_assert_eq(set.n_nodes, 1);
    cr_assert_str_eq(w.text, "in.yaml: skipping item 5 (no kind)");
    vs_objset_cleanup(&set);
}

Test(loader, list_kind_after_items_as_kubectl_prints_it)
{
    /* kubectl prints apiVersion, items, kind: the item default kind is known only at the end. */
    static const char json[] = "{\"apiVersion\":\"v1\",\"items\":["
                               "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}},"
                               "{\"metadata\":{\"name\":\"b\"}},"
                               "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"c\"}},"
                               "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}}],"
                               "\"kind\":\"PodList\",\"metadata\":{}}";
    static const char yaml[] = "apiVersion: v1\n"
                               "items:\n"
                               "- {kind: Pod, metadata: {name: a}}\n"
                               "- metadata: {name: b}\n"
                               "- {kind: Pod, metadata: {name: c}}\n"
                               "- {kind: Secret, metadata: {name: s}}\n"
                               "kind: PodList\n"
                               "metadata: {}\n";
    const char *texts[] = {json, yaml};
    for (size_t t = 0; t < 2; t++) {
        struct vs_objset set = {0};
        struct warnings w = {0};
        struct vs_errbuf eb = {{0}};
        cr_assert_eq(load_str(texts[t], &set, &w, &eb), VS_OK, "%s", eb.msg);
        cr_assert_eq(set.n_pods, 3);
        cr_assert_str_eq(set.pods[0].name, "a");
        cr_assert_str_eq(set.pods[1].name, "b");
        cr_assert_str_eq(set.pods[2].name, "c");
        cr_assert_str_eq(w.text, "in.yaml: skipping Secret s");
        vs_objset_cleanup(&set);
    }
}

Test(loader, items_of_a_non_list_kind_are_ignored)
{
    /* The kind, seen last, says this is a Pod: its stray items must leave no trace. */
    static const char json[] = "{\"items\":[{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}},"
                               "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}},"
                               "{\"kind\":\"Pod\",\"metadata\":{}}],"
                               "\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"}}";
    static const char yaml[] = "kind: Pod\n"
                               "metadata: {name: x}\n"
                               "items: [{kind: Node, metadata: {name: n}}, {kind: Pod}]\n";
    const char *texts[] = {json, yaml};
    for (size_t t = 0; t < 2; t++) {
        struct vs_objset set = {0};
        struct warnings w = {0};
        struct vs_errbuf eb = {{0}};
        cr_assert_eq(load_str(texts[t], &set, &w, &eb), VS_OK, "%s", eb.msg);
        cr_assert_eq(set.n_nodes, 0);
        cr_assert_eq(set.n_pods, 1);
        cr_assert_str_eq(set.pods[0].name, "x");
        cr_assert_eq(w.n, 0);
        vs_objset_cleanup(&set);
    }
}

Test(loader, repeated_top_level_keys)
{
    /* JSON: the last kind wins, as jansson keeps it. */
    static const char json[] = "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\"}}],"
                               "\"kind\":\"NodeList\"}";
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(load_str(json, &set, &w, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(set.n_pods, 0);
    cr_assert_eq(set.n_nodes, 1);
    cr_assert_str_eq(set.nodes[0].name, "a");
    vs_objset_cleanup(&set);

    /* YAML forbids repeated keys; for kind and items the loader says so. */
    static const char yaml[] = "kind: List\nitems: []\nkind: Pod\n";
    cr_assert_eq(load_str(yaml, &set, &w, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "in.yaml: line 3 column 1: invalid YAML: duplicate key \"kind\"");
    static const char yaml2[] = "items: []\nkind: List\nitems: [{kind: Pod}]\n";
    cr_assert_eq(load_str(yaml2, &set, &w, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "in.yaml: line 3 column 1: invalid YAML: duplicate key \"items\"");
    cr_assert_eq(set.n_nodes + set.n_pods + set.n_quotas, 0);
}

Test(loader, syntax_errors_win_over_earlier_decoding_errors)
{
    static const char json[] = "{\"kind\":\"List\",\"items\":[{\"kind\":\"Secret\"},"
                               "{\"kind\":\"Pod\",\"metadata\":{}},{\"kind\":}]}";
    static const char yaml[] = "kind: List\n"
                               "items:\n"
                               "- {kind: Secret}\n"
                               "- {kind: Pod, metadata: {}}\n"
                               "- {kind: [}\n";
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(load_str(json, &set, &w, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "in.yaml: line 1 column 80: invalid JSON: unexpected token near '}'");
    cr_assert_eq(w.n, 0, "warned: %s", w.text);
    cr_assert_eq(load_str(yaml, &set, &w, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "in.yaml: line 5 column 11: invalid YAML: did not find expected node "
                             "content");
    cr_assert_eq(w.n, 0, "warned: %s", w.text);

    /* Without the syntax error, the decoding error stands and earlier warnings are delivered. */
    static const char ok_syntax[] = "kind: List\n"
                                    "items:\n"
                                    "- {kind: Secret}\n"
                                    "- {kind: Pod, metadata: {}}\n"
                                    "- {kind: Service}\n";
    cr_assert_eq(load_str(ok_syntax, &set, &w, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "in.yaml: item 2 (Pod): metadata.name: missing");
    cr_assert_str_eq(w.text, "in.yaml: skipping item 1 (Secret)");
    cr_assert_eq(set.n_nodes + set.n_pods + set.n_quotas, 0);
}

Test(loader, unknown_kinds_warn_with_exact_text)
{
    static const char text[] = "kind: List\n"
                               "items:\n"
                               "- {kind: Deployment, metadata: {name: web, namespace: shop}}\n"
                               "- {kind: Namespace, metadata: {name: shop}}\n"
                               "- {kind: ConfigMap}\n"
                               "- {kind: PodList, items: [{kind: Pod, metadata: {name: x}}]}\n"
                               "---\n"
                               "kind: Service\n"
                               "metadata: {name: svc}\n";
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(load_str(text, &set, &w, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(set.n_pods + set.n_nodes + set.n_quotas, 0);
    cr_assert_str_eq(w.text, "in.yaml: skipping Deployment shop/web\n"
                             "in.yaml: skipping Namespace shop\n"
                             "in.yaml: skipping item 3 (ConfigMap)\n"
                             "in.yaml: skipping item 4 (PodList)\n"
                             "in.yaml: skipping Service svc");
    vs_objset_cleanup(&set);
}

Test(loader, warnings_go_to_stderr_without_callback, .init = cr_redirect_stderr)
{
    static const char text[] = "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}}";
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_buf(text, strlen(text), "s.json", &set, NULL, NULL, &eb), VS_OK);
    fflush(stderr);
    cr_assert_stderr_eq_str("warning: s.json: skipping Secret s\n");
    vs_objset_cleanup(&set);
}

Test(loader, empty_inputs_load_nothing)
{
    static const char *const inputs[] = {"",
                                         "   \n",
                                         "# only a comment\n",
                                         "---\n---\n",
                                         "null",
                                         "~\n",
                                         "[]",
                                         "{\"kind\":\"List\",\"items\":[]}"};
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        struct vs_objset set = {0};
        struct warnings w = {0};
        struct vs_errbuf eb = {{0}};
        cr_assert_eq(load_str(inputs[i], &set, &w, &eb), VS_OK, "input %zu: %s", i, eb.msg);
        cr_assert_eq(set.n_pods + set.n_nodes + set.n_quotas, 0);
        cr_assert_eq(w.n, 0);
        vs_objset_cleanup(&set);
    }
}

Test(loader, loads_append_and_buffers_need_no_nul)
{
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};
    /* The length excludes the trailing 'X', which would be invalid. */
    static const char text[] = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"m\"}}X";

    cr_assert_eq(vs_loader_load_file(DATA "list.json", &set, collect, &(struct warnings){0}, &eb),
                 VS_OK);
    cr_assert_eq(vs_loader_load_buf(text, strlen(text) - 1, "m.json", &set, NULL, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_eq(vs_loader_load_file(DATA "stream.yaml", &set, NULL, NULL, &eb), VS_OK);
    cr_assert_eq(set.n_nodes, 4);
    cr_assert_str_eq(set.nodes[0].name, "node-a");
    cr_assert_str_eq(set.nodes[1].name, "node-b");
    cr_assert_str_eq(set.nodes[2].name, "m");
    cr_assert_str_eq(set.nodes[3].name, "yaml-node");
    cr_assert_eq(set.n_pods, 2);
    cr_assert_str_eq(set.pods[1].name, "yaml-pod");
    vs_objset_cleanup(&set);
}

Test(loader, nothing_appended_on_error)
{
    static const char text[] = "kind: Node\nmetadata: {name: ok-node}\n"
                               "---\n"
                               "kind: Pod\nmetadata: {name: ok-pod}\n"
                               "---\n"
                               "kind: ResourceQuota\nmetadata: {name: ok-q}\n"
                               "---\n"
                               "kind: Pod\nmetadata: {name: bad}\nspec: {containers: {}}\n";
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_file(DATA "list.json", &set, collect, &(struct warnings){0}, &eb),
                 VS_OK);
    cr_assert_eq(load_str(text, &set, &(struct warnings){0}, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "in.yaml: Pod default/bad: spec.containers: expected an array, got "
                             "object");
    cr_assert_eq(set.n_nodes, 2);
    cr_assert_eq(set.n_pods, 1);
    cr_assert_eq(set.n_quotas, 1);
    cr_assert_str_eq(set.nodes[1].name, "node-b");
    cr_assert_str_eq(set.pods[0].name, "p1");

    struct vs_objset empty = {0};
    cr_assert_eq(load_str(text, &empty, &(struct warnings){0}, &eb), VS_ERR_PARSE);
    cr_assert_null(empty.nodes);
    cr_assert_null(empty.pods);
    cr_assert_null(empty.quotas);
    cr_assert_eq(empty.n_nodes + empty.n_pods + empty.n_quotas, 0);
    vs_objset_cleanup(&set);
}

Test(loader, unreadable_files)
{
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_file(DATA "missing.json", &set, NULL, NULL, &eb), VS_ERR_IO);
    cr_assert_str_eq(eb.msg, "tests/data/loader/missing.json: cannot read: No such file or "
                             "directory");
    cr_assert_eq(vs_loader_load_file("tests/data/loader", &set, NULL, NULL, &eb), VS_ERR_IO);
    cr_assert_str_eq(eb.msg, "tests/data/loader: cannot read: Is a directory");
    cr_assert_eq(set.n_pods + set.n_nodes + set.n_quotas, 0);
}

Test(loader, pod_priority_fields)
{
    char *path = vs_test_write_tmp(
        "kind: Pod\nmetadata: {name: hi, namespace: ml}\n"
        "spec: {priority: -5, preemptionPolicy: Never}\n"
        "status: {startTime: \"2026-01-02T03:04:05Z\", nominatedNodeName: n7}\n"
        "---\nkind: Pod\nmetadata: {name: lo}\nspec: {preemptionPolicy: PreemptLowerPriority}\n");
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_loader_load_file(path, &set, NULL, NULL, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(set.n_pods, 2);
    cr_assert_eq(set.pods[0].priority, -5);
    cr_assert(set.pods[0].preempt_never);
    cr_assert_eq(set.pods[0].start_time, 1767323045);
    cr_assert_str_eq(set.pods[0].nominated_node, "n7");
    cr_assert_eq(set.pods[1].priority, 0);
    cr_assert_not(set.pods[1].preempt_never);
    cr_assert_eq(set.pods[1].start_time, 0);
    cr_assert_str_eq(set.pods[1].nominated_node, "");
    remove(path);
    free(path);
    vs_objset_cleanup(&set);
}

Test(loader, reads_a_written_tmp_file)
{
    char *path = vs_test_write_tmp("kind: Node\nmetadata:\n  name: tmp-node\n");
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_not_null(path);
    cr_assert_eq(vs_loader_load_file(path, &set, NULL, NULL, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(set.n_nodes, 1);
    cr_assert_str_eq(set.nodes[0].name, "tmp-node");
    size_t len = 0;
    char *back = vs_test_read_file(path, &len);
    cr_assert_not_null(back);
    cr_assert_eq(len, strlen("kind: Node\nmetadata:\n  name: tmp-node\n"));
    free(back);
    cr_assert_null(vs_test_read_file(DATA "missing.json", NULL));
    remove(path);
    free(path);
    vs_objset_cleanup(&set);
}

struct err_case {
    const char *name; /* used as the file name */
    const char *text;
    enum vs_err code;
    const char *msg;
};

/* Criterion runs each parameterized test in a fresh process, so parameters (and the strings
 * they point to) must live in its shared memory. */
static char *shared_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = cr_malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

static void free_err_cases(struct criterion_test_params *params)
{
    struct err_case *cases = params->params;
    for (size_t i = 0; i < params->length; i++) {
        cr_free((void *)cases[i].name);
        cr_free((void *)cases[i].text);
        cr_free((void *)cases[i].msg);
    }
    cr_free(cases);
}

ParameterizedTestParameters(loader, errors)
{
    static const struct err_case cases[] = {
        {"bad.json", "{\"kind\": \"Pod\",\n \"metadata\": {\"name\": }}", VS_ERR_PARSE,
         "bad.json: line 2 column 23: invalid JSON: unexpected token near '}'"},
        {"trail.json", "{}\n{}", VS_ERR_PARSE,
         "trail.json: line 2 column 1: invalid JSON: end of file expected near '{'"},
        {"bad.yaml", "kind: Pod\nmetadata: {name: [x}\n", VS_ERR_PARSE,
         "bad.yaml: line 2 column 20: invalid YAML: did not find expected ',' or ']'"},
        {"tab.yaml", "kind: Pod\nmetadata:\n\tname: x\n", VS_ERR_PARSE,
         "tab.yaml: line 3 column 1: invalid YAML: found character that cannot start any token"},
        {"utf8.yaml", "kind: Pod\nmetadata: {name: \xff}\n", VS_ERR_PARSE,
         "utf8.yaml: line 2 column 18: invalid YAML: invalid leading UTF-8 octet"},
        {"alias.yaml", "kind: Pod\nmetadata: &m {name: a}\nspec: *m\n", VS_ERR_PARSE,
         "alias.yaml: line 3 column 7: invalid YAML: aliases are not supported"},
        {"key.yaml", "kind: Pod\n? [a]\n: b\n", VS_ERR_PARSE,
         "key.yaml: line 2 column 3: invalid YAML: mapping keys must be scalars"},
        {"nul.yaml", "kind: Pod\nmetadata: {name: \"a\\0b\"}\n", VS_ERR_PARSE,
         "nul.yaml: line 2 column 18: invalid YAML: NUL character in a scalar"},
        {"limits.json",
         "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"},\"spec\":{\"containers\":[{\"name\":"
         "\"a\"},"
         "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":{\"v\":1}}}}]}}",
         VS_ERR_PARSE,
         "limits.json: Pod default/p1: spec.containers[1].resources.limits[\"nvidia.com/gpu\"]: "
         "expected a string or number, got object"},
        {"req.yaml",
         "kind: Pod\nmetadata: {name: p1, namespace: ns}\nspec:\n  initContainers:\n"
         "  - resources: {requests: {\"we\\\"ird\": [1]}}\n",
         VS_ERR_PARSE,
         "req.yaml: Pod ns/p1: spec.initContainers[0].resources.requests[\"we\\\"ird\"]: expected "
         "a string or number, got array"},
        {"ann.json", "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"annotations\":[]}}",
         VS_ERR_PARSE,
         "ann.json: Pod default/p1: metadata.annotations: expected an object, got "
         "array"},
        {"label.yaml", "kind: Node\nmetadata: {name: n1, labels: {a: {b: c}}}\n", VS_ERR_PARSE,
         "label.yaml: Node n1: metadata.labels[\"a\"]: expected a string or number, got object"},
        {"noname.json",
         "{\"kind\":\"List\",\"items\":[{\"kind\":\"Node\",\"metadata\":"
         "{\"name\":\"n\"}},{\"kind\":\"Pod\",\"metadata\":{}}]}",
         VS_ERR_PARSE, "noname.json: item 2 (Pod): metadata.name: missing"},
        {"nometa.yaml", "kind: Node\n", VS_ERR_PARSE,
         "nometa.yaml: item 1 (Node): metadata.name: missing"},
        {"emptyname.yaml", "kind: Node\nmetadata: {name: \"\"}\n", VS_ERR_PARSE,
         "emptyname.yaml: item 1 (Node): metadata.name: missing"},
        {"objname.yaml", "kind: Pod\nmetadata: {name: {a: b}}\n", VS_ERR_PARSE,
         "objname.yaml: item 1 (Pod): metadata.name: expected a string, got object"},
        {"meta.yaml", "kind: Pod\nmetadata: [a]\n", VS_ERR_PARSE,
         "meta.yaml: item 1 (Pod): metadata: expected an object, got array"},
        {"spec.yaml", "kind: Pod\nmetadata: {name: p}\nspec: 3\n", VS_ERR_PARSE,
         "spec.yaml: Pod default/p: spec: expected an object, got number"},
        {"node.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {nodeName: [a]}\n", VS_ERR_PARSE,
         "node.yaml: Pod default/p: spec.nodeName: expected a string, got array"},
        {"ctr.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {containers: [null]}\n", VS_ERR_PARSE,
         "ctr.yaml: Pod default/p: spec.containers[0]: expected an object, got null"},
        {"priv.yaml",
         "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{securityContext: "
         "{privileged: \"yes\"}}]}\n",
         VS_ERR_PARSE,
         "priv.yaml: Pod default/p: spec.containers[0].securityContext.privileged: expected a "
         "bool, got string"},
        {"res.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{resources: [1]}]}\n",
         VS_ERR_PARSE,
         "res.yaml: Pod default/p: spec.containers[0].resources: expected an object, got array"},
        {"st.yaml",
         "kind: Pod\nmetadata: {name: p}\nstatus: {initContainerStatuses: [{state: "
         "{terminated: {exitCode: \"1\"}}}]}\n",
         VS_ERR_PARSE,
         "st.yaml: Pod default/p: status.initContainerStatuses[0].state.terminated.exitCode: "
         "expected an integer, got string"},
        {"st2.yaml",
         "kind: Pod\nmetadata: {name: p}\nstatus: {initContainerStatuses: [{state: "
         "{terminated: {exitCode: 4294967296}}}]}\n",
         VS_ERR_PARSE,
         "st2.yaml: Pod default/p: status.initContainerStatuses[0].state.terminated.exitCode: "
         "out of int32 range: 4294967296"},
        {"st3.yaml",
         "kind: Pod\nmetadata: {name: p}\nstatus: {initContainerStatuses: [{state: "
         "{terminated: done}}]}\n",
         VS_ERR_PARSE,
         "st3.yaml: Pod default/p: status.initContainerStatuses[0].state.terminated: expected an "
         "object, got string"},
        {"st4.yaml", "kind: Pod\nmetadata: {name: p}\nstatus: {initContainerStatuses: {}}\n",
         VS_ERR_PARSE,
         "st4.yaml: Pod default/p: status.initContainerStatuses: expected an array, got object"},
        {"prio.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {priority: high}\n", VS_ERR_PARSE,
         "prio.yaml: Pod default/p: spec.priority: expected an integer, got string"},
        {"prio2.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {priority: 2147483648}\n",
         VS_ERR_PARSE, "prio2.yaml: Pod default/p: spec.priority: out of int32 range: 2147483648"},
        {"ppol.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {preemptionPolicy: Sometimes}\n",
         VS_ERR_PARSE,
         "ppol.yaml: Pod default/p: spec.preemptionPolicy: expected Never or "
         "PreemptLowerPriority, got \"Sometimes\""},
        {"start.yaml", "kind: Pod\nmetadata: {name: p}\nstatus: {startTime: yesterday}\n",
         VS_ERR_PARSE,
         "start.yaml: Pod default/p: status.startTime: invalid RFC 3339 time \"yesterday\""},
        {"unsched.yaml", "kind: Node\nmetadata: {name: n}\nspec: {unschedulable: 1}\n",
         VS_ERR_PARSE, "unsched.yaml: Node n: spec.unschedulable: expected a bool, got number"},
        {"alloc.json",
         "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":"
         "{\"nvidia.com/gpu\":[]}}}",
         VS_ERR_PARSE,
         "alloc.json: Node n: status.allocatable[\"nvidia.com/gpu\"]: expected a string or "
         "number, got array"},
        {"cap.yaml", "kind: Node\nmetadata: {name: n}\nstatus: {capacity: [8]}\n", VS_ERR_PARSE,
         "cap.yaml: Node n: status.capacity: expected an object, got array"},
        {"cap2.yaml", "kind: Node\nmetadata: {name: n}\nstatus: {capacity: {a.com/x: {b: 1}}}\n",
         VS_ERR_PARSE,
         "cap2.yaml: Node n: status.capacity[\"a.com/x\"]: expected a string or number, "
         "got object"},
        {"quota.yaml", "kind: ResourceQuota\nmetadata: {name: q, namespace: t}\nspec: {hard: x}\n",
         VS_ERR_PARSE, "quota.yaml: ResourceQuota t/q: spec.hard: expected an object, got string"},
        {"tol.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {tolerations: {key: a}}\n",
         VS_ERR_PARSE, "tol.yaml: Pod default/p: spec.tolerations: expected an array, got object"},
        {"tol2.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {tolerations: [{key: a}, 3]}\n",
         VS_ERR_PARSE,
         "tol2.yaml: Pod default/p: spec.tolerations[1]: expected an object, got number"},
        {"tol3.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {tolerations: [{effect: [x]}]}\n",
         VS_ERR_PARSE,
         "tol3.yaml: Pod default/p: spec.tolerations[0].effect: expected a string, got array"},
        {"taint.yaml", "kind: Node\nmetadata: {name: n}\nspec: {taints: [{key: {a: b}}]}\n",
         VS_ERR_PARSE, "taint.yaml: Node n: spec.taints[0].key: expected a string, got object"},
        {"aff.yaml",
         "kind: Pod\nmetadata: {name: p}\nspec: {affinity: {nodeAffinity: "
         "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
         "[{matchExpressions: [{key: z, operator: In, values: [a, [b]]}]}]}}}}\n",
         VS_ERR_PARSE,
         "aff.yaml: Pod default/p: spec.affinity.nodeAffinity."
         "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
         ".values[1]: expected a string, got array"},
        {"aff2.yaml",
         "kind: Pod\nmetadata: {name: p}\nspec: {affinity: {nodeAffinity: "
         "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: "
         "3}]}}}}\n",
         VS_ERR_PARSE,
         "aff2.yaml: Pod default/p: spec.affinity.nodeAffinity."
         "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields: "
         "expected an array, got number"},
        {"aff3.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {affinity: {nodeAffinity: [x]}}\n",
         VS_ERR_PARSE,
         "aff3.yaml: Pod default/p: spec.affinity.nodeAffinity: expected an object, got array"},
        {"oh.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {overhead: {cpu: [1]}}\n", VS_ERR_PARSE,
         "oh.yaml: Pod default/p: spec.overhead[\"cpu\"]: expected a string or number, got array"},
        {"rp.yaml",
         "kind: Pod\nmetadata: {name: p}\nspec: {initContainers: [{restartPolicy: {a: b}}]}\n",
         VS_ERR_PARSE,
         "rp.yaml: Pod default/p: spec.initContainers[0].restartPolicy: expected a string, got "
         "object"},
        {"podres.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {resources: {requests: [1]}}\n",
         VS_ERR_PARSE,
         "podres.yaml: Pod default/p: spec.resources.requests: expected an object, got array"},
        {"kind.yaml", "kind: [Pod]\n", VS_ERR_PARSE,
         "kind.yaml: item 1: kind: expected a string, got array"},
        {"item.json", "[{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}}, 5]", VS_ERR_PARSE,
         "item.json: item 2: expected an object, got number"},
        {"items.yaml", "kind: NodeList\nitems: {a: b}\n", VS_ERR_PARSE,
         "items.yaml: items: expected an array, got object"},
        {"scalar.yaml", "just text\n", VS_ERR_PARSE,
         "scalar.yaml: item 1: expected an object, got string"},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    struct err_case *shared = cr_malloc(n * sizeof(*shared));
    for (size_t i = 0; shared && i < n; i++) {
        shared[i].name = shared_str(cases[i].name);
        shared[i].text = shared_str(cases[i].text);
        shared[i].code = cases[i].code;
        shared[i].msg = shared_str(cases[i].msg);
    }
    return cr_make_param_array(struct err_case, shared, n, free_err_cases);
}

ParameterizedTest(struct err_case *c, loader, errors)
{
    struct vs_objset set = {0};
    struct warnings w = {0};
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_loader_load_buf(c->text, strlen(c->text), c->name, &set, collect, &w, &eb),
                 c->code, "%s: got %s (%s)", c->name, eb.msg, "");
    cr_assert_str_eq(eb.msg, c->msg);
    cr_assert_eq(set.n_pods + set.n_nodes + set.n_quotas, 0);
    cr_assert_null(set.pods);
    cr_assert_null(set.nodes);
    cr_assert_null(set.quotas);
}

Test(loader, yaml_nesting_is_capped)
{
    size_t depth = 300;
    char *text = malloc(depth * 2 + 1);
    cr_assert_not_null(text);
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    text[depth * 2] = '\0';
    /* Starting with '[' makes it JSON; jansson has its own depth cap. */
    struct vs_objset set = {0};
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_loader_load_buf(text, depth * 2, "deep.json", &set, NULL, NULL, &eb),
                 VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "deep.json: item 1: expected an object, got array");

    /* As YAML: a block value holding flow sequences. */
    char *yaml = malloc(depth * 2 + 8);
    cr_assert_not_null(yaml);
    memcpy(yaml, "a: ", 3);
    memcpy(yaml + 3, text, depth * 2);
    yaml[depth * 2 + 3] = '\0';
    cr_assert_eq(vs_loader_load_buf(yaml, strlen(yaml), "deep.yaml", &set, NULL, NULL, &eb),
                 VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "deep.yaml: line 1 column 259: invalid YAML: nesting too deep");
    free(text);
    free(yaml);
}

Test(codec, pod_decoder_direct)
{
    json_error_t jerr;
    json_t *j = json_loads("{\"metadata\":{\"name\":\"d\",\"namespace\":\"\"},\"spec\":{"
                           "\"containers\":[{\"name\":7}]}}",
                           0, &jerr);
    struct vs_pod p;
    struct vs_errbuf eb = {{0}};

    cr_assert_not_null(j);
    cr_assert_eq(vs_codec_pod_from_json(j, &p, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(p.ns, "default");
    cr_assert_str_eq(p.ctrs[0].name, "7");
    vs_pod_cleanup(&p);
    cr_assert_eq(vs_codec_pod_from_json(NULL, &p, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "expected an object, got nothing");
    vs_pod_cleanup(&p);
    json_decref(j);
}

Test(codec, node_and_quota_decoders_direct)
{
    json_error_t jerr;
    json_t *n = json_loads("{\"metadata\":{\"name\":\"x\",\"namespace\":\"ignored\"}}", 0, &jerr);
    json_t *q = json_loads("{\"metadata\":{\"namespace\":\"t\"},\"spec\":{\"hard\":"
                           "{\"limits.nvidia.com/gpu\":3}}}",
                           0, &jerr);
    struct vs_knode node;
    struct vs_kquota quota;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_codec_node_from_json(n, &node, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(node.name, "x");
    cr_assert_eq(node.allocatable.n, 0);
    cr_assert_eq(node.capacity.n, 0);
    vs_knode_cleanup(&node);
    /* status.capacity is kept beside allocatable (vendors derive their cards from it), and a
     * copy carries it. */
    json_decref(n);
    n = json_loads("{\"metadata\":{\"name\":\"y\"},\"status\":{\"allocatable\":{\"cpu\":\"2\"},"
                   "\"capacity\":{\"cpu\":\"4\",\"cambricon.com/mlu.smlu.vcore\":200}}}",
                   0, &jerr);
    cr_assert_eq(vs_codec_node_from_json(n, &node, &eb), VS_OK, "%s", eb.msg);
    struct vs_knode copy;
    cr_assert_eq(vs_knode_copy(&copy, &node), VS_OK);
    vs_knode_cleanup(&node);
    cr_assert_eq(copy.capacity.n, 2);
    cr_assert_str_eq(vs_kv_get(&copy.capacity, "cpu"), "4");
    cr_assert_str_eq(vs_kv_get(&copy.capacity, "cambricon.com/mlu.smlu.vcore"), "200");
    cr_assert_str_eq(vs_kv_get(&copy.allocatable, "cpu"), "2");
    vs_knode_cleanup(&copy);
    /* A quota without a name is accepted: its limits apply per namespace. */
    cr_assert_eq(vs_codec_quota_from_json(q, &quota, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(quota.ns, "t");
    cr_assert_str_eq(quota.name, "");
    cr_assert_str_eq(vs_kv_get(&quota.hard, "limits.nvidia.com/gpu"), "3");
    vs_kquota_cleanup(&quota);
    cr_assert_eq(vs_codec_node_from_json(q, &node, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "metadata.name: missing");
    vs_knode_cleanup(&node);
    json_decref(n);
    json_decref(q);
}
