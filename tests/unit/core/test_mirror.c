/* test_mirror: which mirror claims the model calls for (pod x card -> slice devices), the exact
 * bodies written in fence and share mode, decoding an existing mirror, and the reconcile diff;
 * and that mirror claims never count in the DRA ledger. */
#include "builders.h"

#include "mirror.h"

#include <criterion/criterion.h>

static struct vs_model *m;

static void setup(void)
{
    m = vs_model_new(NULL);
}

static void teardown(void)
{
    vs_model_free(m);
    m = NULL;
}

TestSuite(mirror, .init = setup, .fini = teardown);

#define UID1 "0f0e0d0c-0000-4000-8000-00000000000a"
#define UID2 "0f0e0d0c-0000-4000-8000-00000000000b"

/* Node with cards GPU-A and GPU-B (10 slots, 8000 MiB, 100 cores each). */
static void two_cards(const char *node)
{
    char c1[256], c2[256], reg[600];
    tb_card(c1, sizeof(c1), "GPU-A", 0, 0, 10, 8000, 100, 1);
    tb_card(c2, sizeof(c2), "GPU-B", 1, 0, 10, 8000, 100, 1);
    snprintf(reg, sizeof(reg), "[%s,%s]", c1, c2);
    tb_node(m, node, reg, NULL, NULL);
}

/* Driver gpu.nvidia.com, pool = node: gpu-0 = GPU-A (allows multiple allocations), gpu-1 =
 * GPU-B (exclusive), mig-1 a partition of GPU-B. */
static void slice(const char *name, const char *node)
{
    char t[1200];
    snprintf(t, sizeof(t),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"nodeName\":\"%s\",\"driver\":"
             "\"gpu.nvidia.com\",\"pool\":{\"name\":\"%s\"},\"devices\":["
             "{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,\"attributes\":{\"uuid\":{"
             "\"string\":\"GPU-A\"}}},"
             "{\"name\":\"gpu-1\",\"attributes\":{\"gpu.nvidia.com/uuid\":{\"string\":\"GPU-B\"}}},"
             "{\"name\":\"mig-1\",\"attributes\":{\"uuid\":{\"string\":\"MIG-x\"},\"parentUUID\":"
             "{\"string\":\"GPU-B\"}}}]}}",
             name, node, node);
    struct vs_dra_slice s;
    struct vs_errbuf eb;
    cr_assert_eq(vs_dra_slice_from_text(t, strlen(t), &s, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_model_set_slice(m, &s), VS_OK);
}

static char *dump(json_t *j)
{
    cr_assert_not_null(j);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return s;
}

Test(mirror, mode_parse)
{
    enum vs_mirror_mode md;
    struct vs_errbuf eb;
    cr_assert_eq(vs_mirror_mode_parse("Fence", &md, &eb), VS_OK);
    cr_assert_eq(md, VS_MIRROR_FENCE);
    cr_assert_eq(vs_mirror_mode_parse("share", &md, &eb), VS_OK);
    cr_assert_eq(md, VS_MIRROR_SHARE);
    cr_assert_eq(vs_mirror_mode_parse("off", &md, &eb), VS_OK);
    cr_assert_eq(md, VS_MIRROR_OFF);
    cr_assert_eq(vs_mirror_mode_parse("on", &md, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "invalid --dra-mirror \"on\" (want off, fence or share)");
    cr_assert_str_eq(vs_mirror_mode_name(VS_MIRROR_SHARE), "share");
}

Test(mirror, name_is_pod_uid_and_card_hash)
{
    char n[64];
    cr_assert(vs_mirror_name(UID1, "GPU-A", n, sizeof(n)));
    cr_assert_str_eq(n, "vgpu-mirror-" UID1 "-84145eab");
    cr_assert(vs_mirror_name("pod-1", "GPU-B", n, sizeof(n)));
    cr_assert_str_eq(n, "vgpu-mirror-pod-1-8514603e");
    cr_assert_not(vs_mirror_name("Pod_1", "GPU-B", n, sizeof(n)));
    cr_assert_not(vs_mirror_name("", "GPU-B", n, sizeof(n)));
    cr_assert_not(vs_mirror_name(UID1, "GPU-B", n, 20));
}

#define CARD_A "vgpu-mirror-card-0435dc00-84145eab" /* FNV-1a 32 of n1, of GPU-A */
#define CARD_B "vgpu-mirror-card-0435dc00-8514603e"

Test(mirror, desired_maps_pod_card_to_slice_devices)
{
    two_cards("n1");
    two_cards("n2"); /* no slice: nothing to mirror there */
    slice("n1-gpu", "n1");
    tb_use(m, UID1, "n1", "GPU-A", 1, 1000, 10);
    tb_use(m, UID2, "n1", "GPU-B", 2, 3000, 30);
    tb_use(m, "pod-3", "n2", "GPU-A", 1, 1000, 10);
    tb_use(m, "pod-4", "n1", "GPU-B", 1, 500, 5); /* a second pod on B: still one mirror */
    struct vs_mirror_set s;
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_OFF, &s), VS_OK);
    cr_assert_eq(s.n, 0);
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_FENCE, &s), VS_OK);
    cr_assert_eq(s.n, 2);
    const struct vs_mirror *a = &s.items[0], *b = &s.items[1];
    cr_assert_str_eq(a->name, CARD_A);
    cr_assert_null(a->pod);
    cr_assert_null(a->pod_uid);
    cr_assert_str_eq(a->node, "n1");
    cr_assert_str_eq(a->card, "GPU-A");
    cr_assert_eq(a->n, 1);
    cr_assert_str_eq(a->devs[0].device, "gpu-0");
    cr_assert_not(a->devs[0].share);
    cr_assert_str_eq(b->name, CARD_B);
    cr_assert_eq(b->n, 2); /* the card and its partition, in device order */
    cr_assert_str_eq(b->devs[0].device, "gpu-1");
    cr_assert_str_eq(b->devs[1].device, "mig-1");
    vs_mirror_set_cleanup(&s);

    /* share: a device that allows multiple allocations, named by its uuid, is shared in the
     * pod's own mirror; the others stay in the card's */
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_SHARE, &s), VS_OK);
    cr_assert_eq(s.n, 2);
    cr_assert_str_eq(s.items[0].name, "vgpu-mirror-" UID1 "-84145eab");
    cr_assert(s.items[0].devs[0].share);
    cr_assert_str_eq(s.items[0].pod, "default/" UID1);
    cr_assert_eq(s.items[0].mem_mib, 1000);
    cr_assert_eq(s.items[0].cores, 10);
    cr_assert_str_eq(s.items[1].name, CARD_B);
    cr_assert_eq(s.items[1].n, 2);
    cr_assert_not(s.items[1].devs[0].share);
    vs_mirror_set_cleanup(&s);

    /* the pods leave: B's mirror stays while one of them is there */
    vs_model_remove_pod(m, UID1);
    vs_model_remove_pod(m, UID2);
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_FENCE, &s), VS_OK);
    cr_assert_eq(s.n, 1);
    cr_assert_str_eq(s.items[0].name, CARD_B);
    vs_mirror_set_cleanup(&s);
    vs_model_remove_pod(m, "pod-4");
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_FENCE, &s), VS_OK);
    cr_assert_eq(s.n, 0);
    vs_mirror_set_cleanup(&s);
}

Test(mirror, share_needs_a_uuid_shaped_pod_uid)
{
    two_cards("n1");
    slice("n1-gpu", "n1");
    tb_use(m, "pod-1", "n1", "GPU-A", 1, 1000, 10);
    struct vs_mirror_set s;
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_SHARE, &s), VS_OK);
    cr_assert_eq(s.n, 1);
    cr_assert_not(s.items[0].devs[0].share);
    vs_mirror_set_cleanup(&s);
}

Test(mirror, fence_bodies_exact)
{
    two_cards("n1");
    slice("n1-gpu", "n1");
    tb_use(m, UID2, "n1", "GPU-B", 1, 3000, 30);
    struct vs_mirror_set s;
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_FENCE, &s), VS_OK);
    cr_assert_eq(s.n, 1);
    char *c = dump(vs_mirror_claim_json(&s.items[0], "vgpu"));
    cr_assert_str_eq(
        c, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
           "\"annotations\":{\"vgpu-sched.io/mirror-card\":\"GPU-B\",\"vgpu-sched.io/mirror-node\":"
           "\"n1\"},\"labels\":{\"vgpu-sched.io/mirror-of\":\"card\"},\"name\":\"" CARD_B
           "\",\"namespace\":\"vgpu\"},\"spec\":{\"devices\":{\"requests\":["
           "{\"exactly\":{\"allocationMode\":\"ExactCount\",\"count\":1,\"deviceClassName\":"
           "\"gpu.nvidia.com\"},\"name\":\"r0\"},{\"exactly\":{\"allocationMode\":"
           "\"ExactCount\",\"count\":1,\"deviceClassName\":\"gpu.nvidia.com\"},\"name\":\"r1\"}"
           "]}}}");
    free(c);
    c = dump(vs_mirror_status_json(&s.items[0]));
    cr_assert_str_eq(c, "{\"allocation\":{\"devices\":{\"results\":[{\"device\":\"gpu-1\","
                        "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"request\":\"r0\"},{"
                        "\"device\":\"mig-1\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\","
                        "\"request\":\"r1\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{"
                        "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                        "\"values\":[\"n1\"]}]}]}}}");
    free(c);
    vs_mirror_set_cleanup(&s);
}

Test(mirror, share_bodies_exact)
{
    two_cards("n1");
    slice("n1-gpu", "n1");
    tb_use(m, UID1, "n1", "GPU-A", 1, 4096, 25);
    struct vs_mirror_set s;
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_SHARE, &s), VS_OK);
    cr_assert_eq(s.n, 1);
    char *c = dump(vs_mirror_claim_json(&s.items[0], "vgpu"));
    cr_assert_str_eq(
        c, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
           "\"annotations\":{\"vgpu-sched.io/mirror-card\":\"GPU-A\",\"vgpu-sched.io/mirror-node\":"
           "\"n1\",\"vgpu-sched.io/mirror-pod\":\"default/" UID1 "\"},\"labels\":{"
           "\"vgpu-sched.io/mirror-of\":\"" UID1 "\"},\"name\":\"vgpu-mirror-" UID1
           "-84145eab\",\"namespace\":\"vgpu\"},\"spec\":{\"devices\":{\"requests\":["
           "{\"exactly\":{\"allocationMode\":\"ExactCount\",\"capacity\":{\"requests\":{"
           "\"cores\":\"25\",\"memory\":\"4096Mi\"}},\"count\":1,\"deviceClassName\":"
           "\"gpu.nvidia.com\"},\"name\":\"r0\"}]}}}");
    free(c);
    c = dump(vs_mirror_status_json(&s.items[0]));
    cr_assert_str_eq(c, "{\"allocation\":{\"devices\":{\"results\":[{\"consumedCapacity\":{"
                        "\"cores\":\"25\",\"memory\":\"4096Mi\"},\"device\":\"gpu-0\",\"driver\":"
                        "\"gpu.nvidia.com\",\"pool\":\"n1\",\"request\":\"r0\",\"shareID\":\"" UID1
                        "\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
                        "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}");
    free(c);
    vs_mirror_set_cleanup(&s);
}

/* The claim as the API server would return it once created and allocated: the two bodies
 * merged with a uid. */
static json_t *as_stored(const struct vs_mirror *mr, bool allocated)
{
    json_t *c = vs_mirror_claim_json(mr, "vgpu");
    json_object_set_new(json_object_get(c, "metadata"), "uid", json_string("claim-uid"));
    if (allocated)
        json_object_set_new(c, "status", vs_mirror_status_json(mr));
    return c;
}

Test(mirror, decode_round_trip_and_never_in_ledger)
{
    two_cards("n1");
    slice("n1-gpu", "n1");
    tb_use(m, UID1, "n1", "GPU-A", 1, 4096, 25);
    struct vs_mirror_set want;
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_SHARE, &want), VS_OK);
    json_t *j = as_stored(&want.items[0], true);
    struct vs_mirror got;
    struct vs_errbuf eb;
    cr_assert_eq(vs_mirror_from_claim(j, &got, &eb), VS_OK, "%s", eb.msg);
    cr_assert(got.allocated);
    cr_assert_str_eq(got.pod, "default/" UID1);
    cr_assert_eq(got.mem_mib, 4096);
    cr_assert_eq(got.cores, 25);
    cr_assert(vs_mirror_same(&want.items[0], &got));
    /* the ledger ignores it: the card's usage is the pod's alone */
    struct vs_dra_claim dc;
    cr_assert_eq(vs_dra_claim_from_json(j, &dc, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(dc.mirror_of, UID1);
    cr_assert_eq(vs_model_set_claim(m, &dc), VS_OK);
    const struct vs_card *ca = &vs_model_node(m, "n1")->cards[0];
    cr_assert_eq(ca->usedmem, 4096);
    cr_assert_eq(ca->dra_slots, 0);
    size_t ns, nc, nh;
    vs_model_dra_counts(m, &ns, &nc, &nh);
    cr_assert(ns == 1 && nc == 0 && nh == 0);
    vs_mirror_cleanup(&got);
    json_decref(j);

    /* not allocated: never the same */
    j = as_stored(&want.items[0], false);
    cr_assert_eq(vs_mirror_from_claim(j, &got, &eb), VS_OK, "%s", eb.msg);
    cr_assert_not(got.allocated);
    cr_assert_not(vs_mirror_same(&want.items[0], &got));
    vs_mirror_cleanup(&got);
    /* no label: not a mirror */
    json_object_del(json_object_get(j, "metadata"), "labels");
    cr_assert_eq(vs_mirror_from_claim(j, &got, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "ResourceClaim vgpu/vgpu-mirror-" UID1
                             "-84145eab: no vgpu-sched.io/mirror-of label");
    json_decref(j);
    vs_mirror_set_cleanup(&want);
}

Test(mirror, reconcile_diff)
{
    two_cards("n1");
    slice("n1-gpu", "n1");
    tb_use(m, UID1, "n1", "GPU-A", 1, 4096, 25);
    tb_use(m, UID2, "n1", "GPU-B", 1, 1000, 10);
    struct vs_mirror_set want, have = {0};
    cr_assert_eq(vs_mirror_desired(m, VS_MIRROR_SHARE, &want), VS_OK);
    cr_assert_eq(want.n, 2);
    /* want: UID1's own mirror (A allows multiple allocations) and B's card mirror; have:
     * UID1's with other amounts (stale), an orphan, and B's not allocated yet */
    struct vs_mirror stale, orphan, unalloc;
    struct vs_errbuf eb;
    json_t *j = as_stored(&want.items[0], true);
    json_t *cc = json_object_get(
        json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(j, "status"),
                                                                       "allocation"),
                                                       "devices"),
                                       "results"),
                       0),
        "consumedCapacity");
    json_object_set_new(cc, "memory", json_string("1Gi"));
    cr_assert_eq(vs_mirror_from_claim(j, &stale, &eb), VS_OK, "%s", eb.msg);
    json_decref(j);
    j = as_stored(&want.items[0], true);
    json_object_set_new(json_object_get(j, "metadata"), "name", json_string("vgpu-mirror-gone"));
    cr_assert_eq(vs_mirror_from_claim(j, &orphan, &eb), VS_OK, "%s", eb.msg);
    json_decref(j);
    j = as_stored(&want.items[1], false);
    cr_assert_eq(vs_mirror_from_claim(j, &unalloc, &eb), VS_OK, "%s", eb.msg);
    json_decref(j);
    cr_assert(vs_mirror_set_add(&have, &unalloc));
    cr_assert(vs_mirror_set_add(&have, &orphan));
    cr_assert(vs_mirror_set_add(&have, &stale));
    struct vs_mirror_diff d;
    cr_assert_eq(vs_mirror_diff(&want, &have, &d), VS_OK);
    cr_assert_eq(d.n_create, 2);
    cr_assert_eq(d.n_remove, 2); /* the unallocated one is completed, not deleted first */
    cr_assert_str_eq(have.items[d.remove[0]].name, "vgpu-mirror-" UID1 "-84145eab");
    cr_assert_str_eq(have.items[d.remove[1]].name, "vgpu-mirror-gone");
    cr_assert_str_eq(want.items[d.create[1]].name, CARD_B);
    cr_assert_eq(d.create[0], 0);
    cr_assert_eq(d.create[1], 1);
    vs_mirror_diff_cleanup(&d);
    /* in step: nothing to do */
    vs_mirror_set_cleanup(&have);
    for (size_t i = 0; i < want.n; i++)
        cr_assert(vs_mirror_set_add(&have, &want.items[i]));
    cr_assert_eq(vs_mirror_diff(&want, &have, &d), VS_OK);
    cr_assert_eq(d.n_create + d.n_remove, 0);
    vs_mirror_diff_cleanup(&d);
    vs_mirror_cleanup(&stale);
    vs_mirror_cleanup(&orphan);
    vs_mirror_cleanup(&unalloc);
    vs_mirror_set_cleanup(&have);
    vs_mirror_set_cleanup(&want);
}

Test(mirror, taken_when_a_claim_over_commits_the_card)
{
    two_cards("n1");
    slice("n1-gpu", "n1");
    tb_use(m, UID1, "n1", "GPU-A", 1, 4096, 25);
    char why[256];
    cr_assert_not(vs_mirror_taken(m, UID1, why, sizeof(why)));
    /* a share that still fits beside the pod: not taken */
    const char *t = "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"small\",\"uid\":\"c1\"},"
                    "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\","
                    "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\","
                    "\"shareID\":\"s\",\"consumedCapacity\":{\"memory\":\"1Gi\"}}]}}}}";
    struct vs_dra_claim c;
    struct vs_errbuf eb;
    cr_assert_eq(vs_dra_claim_from_text(t, strlen(t), &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_model_set_claim(m, &c), VS_OK);
    cr_assert_not(vs_mirror_taken(m, UID1, why, sizeof(why)));
    /* the whole device: over-committed */
    t = "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"train\",\"uid\":\"c2\"},"
        "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\","
        "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}}}}";
    cr_assert_eq(vs_dra_claim_from_text(t, strlen(t), &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_model_set_claim(m, &c), VS_OK);
    cr_assert(vs_mirror_taken(m, UID1, why, sizeof(why)));
    cr_assert_str_eq(why, "card GPU-A on node n1 is held by DRA (claims ml/small, ml/train), "
                          "taken after Filter");
    cr_assert_not(vs_mirror_taken(m, "no-such-pod", why, sizeof(why)));
}
