/* test_ledger: DRA claims as usage on HAMi cards (model.h "DRA ledger"): the uuid/parentUUID
 * mapping, whole-card and consumedCapacity holdings, exact removal, re-application when slices
 * or a node's cards change, the clone's copy, and Filter's placement and refusal naming the
 * claim. */
#include "builders.h"

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

TestSuite(ledger, .init = setup, .fini = teardown);

/* Node `node` with cards GPU-A and GPU-B: 10 slots, mem MiB, 100 cores each. */
static void two_cards(const char *node, int mem)
{
    char c1[256], c2[256], reg[600];
    tb_card(c1, sizeof(c1), "GPU-A", 0, 0, 10, mem, 100, 1);
    tb_card(c2, sizeof(c2), "GPU-B", 1, 0, 10, mem, 100, 1);
    snprintf(reg, sizeof(reg), "[%s,%s]", c1, c2);
    tb_node(m, node, reg, NULL, NULL);
}

/* A slice of driver gpu.nvidia.com, pool `pool`, on `node`: gpu-0 = GPU-A, gpu-1 = GPU-B
 * (qualified attribute name), mig-0 a MIG device whose parent is GPU-B. */
static void slice(const char *name, const char *node, const char *pool)
{
    char t[1024];
    snprintf(t, sizeof(t),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"nodeName\":\"%s\",\"driver\":"
             "\"gpu.nvidia.com\",\"pool\":{\"name\":\"%s\"},\"devices\":["
             "{\"name\":\"gpu-0\",\"attributes\":{\"uuid\":{\"string\":\"GPU-A\"}}},"
             "{\"name\":\"gpu-1\",\"attributes\":{\"gpu.nvidia.com/uuid\":{\"string\":\"GPU-B\"}}},"
             "{\"name\":\"mig-0\",\"attributes\":{\"uuid\":{\"string\":\"MIG-x\"},\"parentUUID\":"
             "{\"string\":\"GPU-B\"}}}]}}",
             name, node, pool);
    struct vs_dra_slice s;
    struct vs_errbuf eb;
    cr_assert_eq(vs_dra_slice_from_text(t, strlen(t), &s, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_model_set_slice(m, &s), VS_OK);
    cr_assert_null(s.name);
}

/* Claim ns/name (uid) with one result on device `dev` of pool `pool`; extra: more result
 * fields. */
static void claim(const char *name, const char *uid, const char *pool, const char *dev,
                  const char *extra)
{
    char t[1024];
    snprintf(t, sizeof(t),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"%s\"},\"status\":{"
             "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":"
             "\"gpu.nvidia.com\",\"pool\":\"%s\",\"device\":\"%s\"%s}]}}}}",
             name, uid, pool, dev, extra);
    struct vs_dra_claim c;
    struct vs_errbuf eb;
    cr_assert_eq(vs_dra_claim_from_text(t, strlen(t), &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_model_set_claim(m, &c), VS_OK);
}

static const struct vs_card *card(const struct vs_model *mm, const char *node, size_t i)
{
    const struct vs_node *n = vs_model_node(mm, node);
    cr_assert_not_null(n);
    cr_assert_lt(i, n->n_cards);
    return &n->cards[i];
}

static void assert_card(const struct vs_model *mm, const char *node, size_t i, int64_t used,
                        int64_t mem, int64_t cores)
{
    const struct vs_card *c = card(mm, node, i);
    cr_assert_eq(c->used, used, "%s card %zu used %ld", node, i, (long)c->used);
    cr_assert_eq(c->usedmem, mem, "%s card %zu usedmem %ld", node, i, (long)c->usedmem);
    cr_assert_eq(c->usedcores, cores, "%s card %zu usedcores %ld", node, i, (long)c->usedcores);
}

Test(ledger, whole_card_without_share_id_and_exact_removal)
{
    two_cards("n1", 8000);
    slice("n1-gpu", "n1", "n1");
    tb_use(m, "pod-1", "n1", "GPU-A", 1, 1000, 10);
    claim("train", "u1", "n1", "gpu-0", "");
    assert_card(m, "n1", 0, 11, 9000, 110);
    assert_card(m, "n1", 1, 0, 0, 0);
    const struct vs_node *n = vs_model_node(m, "n1");
    cr_assert_str_eq(n->dra_holders, "ml/train");
    cr_assert_eq(n->n_dra_holders, 1);
    cr_assert_eq(n->sums.usedmem, 9000);
    size_t ns, nc, nh;
    vs_model_dra_counts(m, &ns, &nc, &nh);
    cr_assert(ns == 1 && nc == 1 && nh == 1);
    vs_model_remove_claim(m, "u1");
    assert_card(m, "n1", 0, 1, 1000, 10);
    cr_assert_null(vs_model_node(m, "n1")->dra_holders);
}

Test(ledger, share_id_consumes_memory_and_cores_else_whole_card)
{
    two_cards("n1", 8000);
    slice("n1-gpu", "n1", "n1");
    claim("infer", "u1", "n1", "gpu-1",
          ",\"shareID\":\"s1\",\"consumedCapacity\":{\"memory\":\"3000Mi\",\"gpu.nvidia.com/"
          "cores\":\"30\"}");
    assert_card(m, "n1", 1, 1, 3000, 30);
    /* changed: memory only */
    claim("infer", "u1", "n1", "gpu-1",
          ",\"shareID\":\"s1\",\"consumedCapacity\":{\"memory\":\"1Gi\",\"shares\":\"5\"}");
    assert_card(m, "n1", 1, 1, 1024, 0);
    /* a share consuming neither memory nor cores: the whole card */
    claim("infer", "u1", "n1", "gpu-1", ",\"shareID\":\"s1\"");
    assert_card(m, "n1", 1, 10, 8000, 100);
    vs_model_remove_claim(m, "u1");
    assert_card(m, "n1", 1, 0, 0, 0);
}

Test(ledger, parent_uuid_admin_access_and_unresolved_results)
{
    two_cards("n1", 8000);
    slice("n1-gpu", "n1", "n1");
    claim("mig", "u1", "n1", "mig-0", ""); /* MIG child: its parent card GPU-B */
    assert_card(m, "n1", 1, 10, 8000, 100);
    claim("admin", "u2", "n1", "gpu-0", ",\"adminAccess\":true");
    claim("elsewhere", "u3", "other-pool", "gpu-0", "");
    claim("nodev", "u4", "n1", "gpu-9", "");
    assert_card(m, "n1", 0, 0, 0, 0);
    cr_assert_str_eq(vs_model_node(m, "n1")->dra_holders, "ml/mig");
    size_t ns, nc, nh;
    vs_model_dra_counts(m, &ns, &nc, &nh);
    cr_assert(ns == 1 && nc == 4 && nh == 1);
}

Test(ledger, order_independent_and_reapplied_on_slice_and_node_changes)
{
    /* claim first, then the slice, then the node */
    claim("train", "u1", "n1", "gpu-0", "");
    claim("b", "u2", "n1", "gpu-1", ",\"shareID\":\"s\",\"consumedCapacity\":{\"memory\":\"1Gi\"}");
    slice("n1-gpu", "n1", "n1");
    two_cards("n1", 8000);
    assert_card(m, "n1", 0, 10, 8000, 100);
    assert_card(m, "n1", 1, 1, 1024, 0);
    cr_assert_str_eq(vs_model_node(m, "n1")->dra_holders, "ml/b, ml/train");
    cr_assert_eq(vs_model_node(m, "n1")->n_dra_holders, 2);
    /* the node re-registers bigger cards: the whole-card claim follows */
    two_cards("n1", 16000);
    assert_card(m, "n1", 0, 10, 16000, 100);
    assert_card(m, "n1", 1, 1, 1024, 0);
    /* the slice goes: nothing resolves */
    vs_model_remove_slice(m, "n1-gpu");
    assert_card(m, "n1", 0, 0, 0, 0);
    assert_card(m, "n1", 1, 0, 0, 0);
    cr_assert_null(vs_model_node(m, "n1")->dra_holders);
    /* back, now published for node n2 (same pool name): n1 stays free */
    two_cards("n2", 8000);
    slice("n1-gpu", "n2", "n1");
    assert_card(m, "n1", 0, 0, 0, 0);
    assert_card(m, "n2", 0, 10, 8000, 100);
    /* n2 goes: its holdings go with it, and come back with the node */
    vs_model_remove_node(m, "n2");
    cr_assert_null(vs_model_node(m, "n2"));
    two_cards("n2", 8000);
    assert_card(m, "n2", 0, 10, 8000, 100);
    vs_model_remove_claim(m, "u1");
    vs_model_remove_claim(m, "u2");
    assert_card(m, "n2", 0, 0, 0, 0);
    assert_card(m, "n2", 1, 0, 0, 0);
}

Test(ledger, clone_copies_the_ledger)
{
    two_cards("n1", 8000);
    slice("n1-gpu", "n1", "n1");
    tb_use(m, "pod-1", "n1", "GPU-A", 1, 1000, 10);
    claim("train", "u1", "n1", "gpu-0", "");
    struct vs_model *c = vs_model_clone(m);
    cr_assert_not_null(c);
    assert_card(c, "n1", 0, 11, 9000, 110);
    cr_assert_str_eq(vs_model_node(c, "n1")->dra_holders, "ml/train");
    /* the copy's claim comes off exactly, the original keeps its own */
    struct vs_model *orig = m;
    m = c;
    vs_model_remove_claim(m, "u1");
    assert_card(c, "n1", 0, 1, 1000, 10);
    slice("n1-gpu", "n1", "n1"); /* the copy's slice can be replaced */
    m = orig;
    assert_card(m, "n1", 0, 11, 9000, 110);
    vs_model_free(c);
}

Test(ledger, filter_avoids_held_card_and_names_the_claim)
{
    two_cards("n1", 8000);
    slice("n1-gpu", "n1", "n1");
    claim("train", "u1", "n1", "gpu-0", "");
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", "4000", NULL, "30");
    const char *cands[] = {"n1"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "binpack", cands, 1, &r);
    cr_assert_eq(r.best, 0, "%s", r.nodes[0].reason ? r.nodes[0].reason : "");
    char *devs = tb_devices(&r);
    cr_assert_str_eq(devs, "GPU-B,NVIDIA,4000,30:;");
    free(devs);
    vs_filter_result_cleanup(&r);
    /* B nearly full: refused, and the reason names the claim on A */
    tb_use(m, "pod-1", "n1", "GPU-B", 1, 6000, 10);
    tb_filter(m, &p, "binpack", "binpack", cands, 1, &r);
    cr_assert_eq(r.best, -1);
    cr_assert_str_eq(r.nodes[0].reason,
                     "1/2 CardInsufficientMemory, 1/2 CardTimeSlicingExhausted (held by DRA claim "
                     "ml/train)");
    vs_filter_result_cleanup(&r);
    /* the claim released: A takes the pod */
    vs_model_remove_claim(m, "u1");
    tb_filter(m, &p, "binpack", "binpack", cands, 1, &r);
    cr_assert_eq(r.best, 0);
    devs = tb_devices(&r);
    cr_assert_str_eq(devs, "GPU-A,NVIDIA,4000,30:;");
    free(devs);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
}

/* Filter for pod default/p asking one card of mem MiB and 10 cores on n1; the refusal (best -1
 * expected). New string. */
static char *refusal(int mem)
{
    char ms[16];
    snprintf(ms, sizeof(ms), "%d", mem);
    struct vs_pod p;
    tb_pod(&p, "default", "p", "uid-p");
    tb_ctr(&p, 0, "c", "1", ms, NULL, "10");
    const char *cands[] = {"n1"};
    struct vs_filter_result r;
    tb_filter(m, &p, "binpack", "binpack", cands, 1, &r);
    cr_assert_eq(r.best, -1);
    char *out = strdup(r.nodes[0].reason);
    vs_filter_result_cleanup(&r);
    vs_pod_cleanup(&p);
    return out;
}

/* Each card names the claims that hold it; a refusal names only the claims on the cards it
 * refused for slots, memory or cores that the card would have without them. */
Test(ledger, refusal_names_only_the_claims_to_blame)
{
    two_cards("n1", 8000);
    slice("n1-gpu", "n1", "n1");
    claim("whole", "u1", "n1", "gpu-0", "");
    claim("part", "u2", "n1", "gpu-1",
          ",\"shareID\":\"s1\",\"consumedCapacity\":{\"memory\":\"500Mi\"}");
    cr_assert_str_eq(card(m, "n1", 0)->dra_holders, "ml/whole");
    cr_assert_str_eq(card(m, "n1", 1)->dra_holders, "ml/part");
    cr_assert_str_eq(vs_model_node(m, "n1")->dra_holders, "ml/part, ml/whole");
    /* both claims keep the pod off: named, in byte order */
    char *why = refusal(7600);
    cr_assert_str_eq(why, "1/2 CardInsufficientMemory, 1/2 CardTimeSlicingExhausted (held by DRA "
                          "claims ml/part, ml/whole)");
    free(why);
    /* B is short even without ml/part's 500 MiB: only ml/whole is to blame */
    tb_use(m, "pod-1", "n1", "GPU-B", 1, 7000, 10);
    why = refusal(4000);
    cr_assert_str_eq(why, "1/2 CardInsufficientMemory, 1/2 CardTimeSlicingExhausted (held by DRA "
                          "claim ml/whole)");
    free(why);
    /* more than any card has: no claim is to blame */
    why = refusal(9000);
    cr_assert_str_eq(why, "1/2 CardInsufficientMemory, 1/2 CardTimeSlicingExhausted");
    free(why);
    /* a clone keeps each card's holders */
    struct vs_model *c = vs_model_clone(m);
    cr_assert_not_null(c);
    cr_assert_str_eq(card(c, "n1", 0)->dra_holders, "ml/whole");
    cr_assert_str_eq(card(c, "n1", 1)->dra_holders, "ml/part");
    vs_model_free(c);
    /* ml/whole gone: A takes 4000, nothing is refused; its holders are cleared */
    vs_model_remove_claim(m, "u1");
    cr_assert_null(card(m, "n1", 0)->dra_holders);
    cr_assert_str_eq(card(m, "n1", 1)->dra_holders, "ml/part");
    vs_model_remove_claim(m, "u2");
    cr_assert_null(card(m, "n1", 1)->dra_holders);
    cr_assert_null(vs_model_node(m, "n1")->dra_holders);
}
