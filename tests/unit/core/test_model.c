/* test_model: the incremental usage index — pod tracking rules of spec §3.2 (A.6.5, A.6.6),
 * node re-registration, reservations (confirm, stale events, expiry) and quota usage. After
 * every sequence the per-card counters must equal a fresh rebuild from the same pods. */
#include "builders.h"

#include <criterion/criterion.h>

static struct vs_model *m;

static void setup(void)
{
    m = vs_model_new(NULL);
    char c0[256], c1[256], reg[600];
    tb_card(c0, sizeof(c0), "GPU0", 0, 0, 10, 40000, 100, 1);
    tb_card(c1, sizeof(c1), "GPU1", 1, 0, 10, 40000, 100, 1);
    snprintf(reg, sizeof(reg), "[%s,%s]", c0, c1);
    tb_node(m, "n1", reg, NULL, NULL);
}

static void teardown(void)
{
    vs_model_free(m);
    m = NULL;
}

TestSuite(model, .init = setup, .fini = teardown);

static const struct vs_card *card(const char *node, size_t i)
{
    const struct vs_node *n = vs_model_node(m, node);
    cr_assert_not_null(n);
    cr_assert_lt(i, n->n_cards);
    return &n->cards[i];
}

static void assert_card(const char *node, size_t i, int64_t used, int64_t mem, int64_t cores)
{
    const struct vs_card *c = card(node, i);
    cr_assert_eq(c->used, used, "%s card %zu used %lld want %lld", node, i, (long long)c->used,
                 (long long)used);
    cr_assert_eq(c->usedmem, mem, "%s card %zu mem %lld want %lld", node, i, (long long)c->usedmem,
                 (long long)mem);
    cr_assert_eq(c->usedcores, cores, "%s card %zu cores %lld want %lld", node, i,
                 (long long)c->usedcores, (long long)cores);
}

static void running(struct vs_pod *p, const char *uid, const char *node, const char *alloc)
{
    tb_pod(p, "team", uid, uid);
    free(p->phase);
    p->phase = tb_strdup("Running");
    tb_anno(p, VS_ANNO_VGPU_NODE, node);
    if (alloc)
        tb_anno(p, VS_ANNO_ALLOCATED, alloc);
}

static void upsert(struct vs_pod *p)
{
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, p, &eb), VS_OK, "%s", eb.msg);
}

Test(model, a6_5_init_release)
{
    struct vs_pod p;
    running(&p, "p", "n1", "GPU0,NVIDIA,20000,10:;GPU0,NVIDIA,10000,5:;");
    tb_ctr(&p, 1, "init", "1", "20000", NULL, "10");
    tb_ctr(&p, 0, "app", "1", "10000", NULL, "5");
    upsert(&p);
    assert_card("n1", 0, 1, 20000, 10);
    cr_assert_eq(tb_quota(m, "team")->mem_used, 20000);
    /* The init container exits 0: only the app part is counted from now on. */
    p.init_status = calloc(1, sizeof(*p.init_status));
    p.n_init_status = 1;
    p.init_status[0].terminated = true;
    p.init_status[0].exit_code = 0;
    upsert(&p);
    assert_card("n1", 0, 1, 10000, 5);
    cr_assert_eq(tb_quota(m, "team")->mem_used, 10000);
    cr_assert_eq(tb_quota(m, "team")->cores_used, 5);
    vs_pod_cleanup(&p);
}

Test(model, a6_5_init_failed_keeps_peak)
{
    struct vs_pod p;
    running(&p, "p", "n1", "GPU0,NVIDIA,20000,10:;GPU0,NVIDIA,10000,5:;");
    tb_ctr(&p, 1, "init", "1", "20000", NULL, "10");
    tb_ctr(&p, 0, "app", "1", "10000", NULL, "5");
    p.init_status = calloc(1, sizeof(*p.init_status));
    p.n_init_status = 1;
    p.init_status[0].terminated = true;
    p.init_status[0].exit_code = 1;
    upsert(&p);
    assert_card("n1", 0, 1, 20000, 10);
    vs_pod_cleanup(&p);
}

Test(model, a6_6_two_app_containers_two_slots)
{
    struct vs_pod p;
    running(&p, "p", "n1", "GPU0,NVIDIA,10000,5:;GPU0,NVIDIA,10000,5:;");
    upsert(&p);
    assert_card("n1", 0, 2, 20000, 10);
    vs_pod_cleanup(&p);
}

Test(model, add_modify_delete)
{
    struct vs_pod p;
    running(&p, "p", "n1", "GPU0,NVIDIA,1000,10:GPU1,NVIDIA,1000,10:;");
    upsert(&p);
    assert_card("n1", 0, 1, 1000, 10);
    assert_card("n1", 1, 1, 1000, 10);
    tb_anno(&p, VS_ANNO_ALLOCATED, "GPU1,NVIDIA,3000,30:;");
    upsert(&p);
    assert_card("n1", 0, 0, 0, 0);
    assert_card("n1", 1, 1, 3000, 30);
    /* Status-only updates do not change anything. */
    uint64_t gen = vs_model_node(m, "n1")->gen;
    upsert(&p);
    cr_assert_eq(vs_model_node(m, "n1")->gen, gen);
    vs_model_remove_pod(m, "p");
    assert_card("n1", 1, 0, 0, 0);
    cr_assert_eq(vs_model_pod_count(m), 0);
    cr_assert_eq(tb_quota(m, "team")->mem_used, 0);
    vs_pod_cleanup(&p);
}

Test(model, labels_follow_updates_of_a_placed_pod)
{
    struct vs_pod p;
    running(&p, "p", "n1", "GPU0,NVIDIA,1000,10:;");
    vs_kv_set(&p.labels, "app", "nb");
    upsert(&p);
    uint64_t gen = vs_model_node(m, "n1")->gen;
    /* Labelled after placement (PodDisruptionBudgets select victims by labels). */
    vs_kv_set(&p.labels, "protect", "yes");
    vs_kv_del(&p.labels, "app");
    upsert(&p);
    const struct vs_podent *pe = vs_model_pod(m, "p");
    cr_assert_not_null(pe);
    cr_assert_eq(vs_podent_labels(pe)->n, 1);
    cr_assert_str_eq(vs_kv_get(vs_podent_labels(pe), "protect"), "yes");
    cr_assert_null(vs_kv_get(vs_podent_labels(pe), "app"));
    /* Usage unchanged. */
    assert_card("n1", 0, 1, 1000, 10);
    cr_assert_eq(vs_model_node(m, "n1")->gen, gen);
    /* The old set was dropped with its last user. */
    cr_assert_eq(vs_model_labelset_count(m), 1);
    vs_pod_cleanup(&p);
}

Test(model, pods_with_equal_labels_share_one_set)
{
    struct vs_pod a, b, c, d;
    running(&a, "a", "n1", "GPU0,NVIDIA,1000,10:;");
    running(&b, "b", "n1", "GPU0,NVIDIA,1000,10:;");
    running(&c, "c", "n1", "GPU0,NVIDIA,1000,10:;");
    running(&d, "d", "n1", "GPU0,NVIDIA,1000,10:;");
    vs_kv_set(&a.labels, "app", "web");
    vs_kv_set(&a.labels, "pod-template-hash", "5d8f");
    vs_kv_set(&b.labels, "app", "web");
    vs_kv_set(&b.labels, "pod-template-hash", "5d8f");
    vs_kv_set(&c.labels, "app", "web"); /* a prefix of a's labels: another set */
    upsert(&a);
    upsert(&b);
    upsert(&c);
    upsert(&d); /* no labels: no set */
    cr_assert_eq(vs_model_labelset_count(m), 2);
    const struct vs_podent *pa = vs_model_pod(m, "a"), *pb = vs_model_pod(m, "b");
    cr_assert_eq(pa->labels, pb->labels);
    cr_assert_eq(pa->labels->refs, 2);
    cr_assert_str_eq(vs_kv_get(vs_podent_labels(pb), "pod-template-hash"), "5d8f");
    cr_assert_eq(vs_podent_labels(vs_model_pod(m, "d"))->n, 0);
    cr_assert_null(vs_kv_get(vs_podent_labels(vs_model_pod(m, "d")), "app"));
    /* b relabelled: leaves the shared set, which a still holds. */
    vs_kv_set(&b.labels, "pod-template-hash", "77aa");
    upsert(&b);
    cr_assert_eq(vs_model_labelset_count(m), 3);
    cr_assert_eq(vs_model_pod(m, "a")->labels->refs, 1);
    cr_assert_str_eq(vs_kv_get(vs_podent_labels(vs_model_pod(m, "a")), "pod-template-hash"),
                     "5d8f");
    vs_model_remove_pod(m, "a");
    vs_model_remove_pod(m, "c");
    cr_assert_eq(vs_model_labelset_count(m), 1);
    vs_model_remove_pod(m, "b");
    cr_assert_eq(vs_model_labelset_count(m), 0);
    vs_pod_cleanup(&a);
    vs_pod_cleanup(&b);
    vs_pod_cleanup(&c);
    vs_pod_cleanup(&d);
}

Test(model, untracked_and_terminal_pods)
{
    struct vs_pod p;
    tb_pod(&p, "team", "plain", "plain");
    tb_anno(&p, VS_ANNO_ALLOCATED, "GPU0,NVIDIA,1000,10:;");
    upsert(&p); /* no hami.io/vgpu-node: ignored */
    cr_assert_eq(vs_model_pod_count(m), 0);
    vs_pod_cleanup(&p);
    running(&p, "p", "n1", "GPU0,NVIDIA,1000,10:;");
    upsert(&p);
    free(p.phase);
    p.phase = tb_strdup("Succeeded");
    upsert(&p);
    assert_card("n1", 0, 0, 0, 0);
    cr_assert_eq(vs_model_pod_count(m), 0);
    vs_pod_cleanup(&p);
    /* A terminating pod counts until its delete event, also when first seen terminating (HAMi
     * skips those; their containers still hold the card for the grace period). */
    running(&p, "q", "n1", "GPU0,NVIDIA,1000,10:;");
    p.deleting = true;
    upsert(&p);
    cr_assert_eq(vs_model_pod_count(m), 1);
    assert_card("n1", 0, 1, 1000, 10);
    cr_assert(vs_model_pod(m, p.uid)->terminating);
    vs_model_remove_pod(m, p.uid);
    assert_card("n1", 0, 0, 0, 0);
    p.deleting = false;
    upsert(&p);
    cr_assert_not(vs_model_pod(m, p.uid)->terminating);
    p.deleting = true;
    upsert(&p);
    assert_card("n1", 0, 1, 1000, 10);
    cr_assert(vs_model_pod(m, p.uid)->terminating);
    vs_pod_cleanup(&p);
}

Test(model, pod_before_node_and_node_reregister)
{
    struct vs_pod p;
    running(&p, "p", "n2", "GPU9,NVIDIA,500,5:;");
    upsert(&p);
    cr_assert_null(vs_model_node(m, "n2") && vs_model_node(m, "n2")->present ? "x" : NULL);
    char c[256], reg[300];
    tb_card(c, sizeof(c), "GPU9", 0, 0, 10, 8000, 100, 1);
    snprintf(reg, sizeof(reg), "[%s]", c);
    tb_node(m, "n2", reg, NULL, NULL);
    assert_card("n2", 0, 1, 500, 5);
    /* Re-registration with another card order and a new card keeps the usage on GPU9. */
    char c2[256], reg2[600];
    tb_card(c2, sizeof(c2), "GPU8", 1, 0, 10, 8000, 100, 1);
    snprintf(reg2, sizeof(reg2), "[%s,%s]", c2, c);
    tb_node(m, "n2", reg2, NULL, NULL);
    assert_card("n2", 0, 0, 0, 0);
    assert_card("n2", 1, 1, 500, 5);
    /* A broken annotation makes the node unusable but keeps its pods; fixing it restores. */
    tb_node(m, "n2", "[{\"id\":", NULL, NULL);
    cr_assert_not_null(vs_model_node(m, "n2")->error);
    tb_node(m, "n2", reg, NULL, NULL);
    cr_assert_null(vs_model_node(m, "n2")->error);
    assert_card("n2", 0, 1, 500, 5);
    vs_model_remove_node(m, "n2");
    cr_assert_eq(vs_model_node_count(m), 1);
    vs_pod_cleanup(&p);
}

/* vs_model_expire_keep's callback: keeps pod "p". */
static bool keep_p(void *ctx, const struct vs_podent *pe)
{
    (void)ctx;
    return strcmp(pe->uid, "p") == 0;
}

Test(model, reservation_lifecycle)
{
    struct vs_pod p;
    tb_pod(&p, "team", "p", "p");
    tb_ctr(&p, 0, "c", "1", "1000", NULL, "10");
    struct vs_pod_devs devs;
    struct vs_errbuf eb;
    cr_assert_eq(vs_annot_parse_devices("x", "GPU1,NVIDIA,1000,10:;", &devs, &eb), VS_OK);
    cr_assert_eq(tb_reserve(m, &p, "n1", &devs, 100), VS_OK);
    assert_card("n1", 1, 1, 1000, 10);
    /* An API event from before the patch (no annotation yet) does not undo the reservation. */
    upsert(&p);
    assert_card("n1", 1, 1, 1000, 10);
    /* A stale event with an older allocation does not either. */
    tb_anno(&p, VS_ANNO_VGPU_NODE, "n1");
    tb_anno(&p, VS_ANNO_ALLOCATED, "GPU0,NVIDIA,7000,70:;");
    upsert(&p);
    assert_card("n1", 0, 0, 0, 0);
    assert_card("n1", 1, 1, 1000, 10);
    /* Expiry applies only to unconfirmed reservations, and not to those a caller keeps (a Bind
     * holds them: store.c). */
    cr_assert_eq(vs_model_expire(m, 200, 300), 0);
    cr_assert_eq(vs_model_expire_keep(m, 401, 300, keep_p, NULL), 0);
    assert_card("n1", 1, 1, 1000, 10);
    cr_assert_eq(vs_model_expire(m, 401, 300), 1);
    assert_card("n1", 1, 0, 0, 0);
    /* Reserve again, then the patched pod arrives: confirmed. */
    cr_assert_eq(tb_reserve(m, &p, "n1", &devs, 500), VS_OK);
    tb_anno(&p, VS_ANNO_ALLOCATED, "GPU1,NVIDIA,1000,10:;");
    tb_anno(&p, VS_ANNO_VGPU_TIME, "500");
    upsert(&p);
    cr_assert_not(vs_model_pod(m, "p")->reservation);
    /* Annotated but never bound: after the TTL its usage stops counting ... */
    cr_assert_eq(vs_model_expire(m, 801, 300), 1);
    assert_card("n1", 1, 0, 0, 0);
    cr_assert(vs_model_pod(m, "p")->expired);
    upsert(&p); /* a status update does not bring it back */
    assert_card("n1", 1, 0, 0, 0);
    /* ... until it is bound after all (it will run, so it counts), and then it never expires. */
    free(p.node_name);
    p.node_name = tb_strdup("n1");
    upsert(&p);
    assert_card("n1", 1, 1, 1000, 10);
    cr_assert_eq(vs_model_expire(m, 100000, 300), 0);
    assert_card("n1", 1, 1, 1000, 10);
    vs_pod_devs_cleanup(&devs);
    vs_pod_cleanup(&p);
}

Test(model, malformed_allocation_tracked_fail_closed)
{
    struct vs_pod p;
    running(&p, "p", "n1", "GPU0,NVIDIA,x,1:;");
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "pod team/p: invalid hami.io/vgpu-devices-allocated "
                             "\"GPU0,NVIDIA,x,1:;\": memory \"x\" is not an int32");
    cr_assert_eq(vs_model_node(m, "n1")->n_bad_pods, 1);
    vs_model_remove_pod(m, "p");
    cr_assert_eq(vs_model_node(m, "n1")->n_bad_pods, 0);
    vs_pod_cleanup(&p);
}

Test(model, collapse_rules)
{
    struct vs_pod_devs d;
    struct vs_errbuf eb;
    cr_assert_eq(vs_annot_parse_devices("x",
                                        "A,NVIDIA,100,10:;A,NVIDIA,300,5:B,NVIDIA,1,1:;"
                                        "A,NVIDIA,50,2:;A,NVIDIA,60,3:;",
                                        &d, &eb),
                 VS_OK);
    struct vs_usage *u;
    size_t n;
    /* Two init containers (max per card), two app containers (sum per card). */
    cr_assert_eq(vs_usage_collapse(tb_nv(m), &d, 2, false, &u, &n), VS_OK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(u[0].uuid, "A");
    cr_assert_eq(u[0].mem, 300);
    cr_assert_eq(u[0].cores, 10);
    cr_assert_eq(u[0].slots, 2);
    cr_assert_str_eq(u[1].uuid, "B");
    cr_assert_eq(u[1].slots, 1);
    vs_usage_free(u, n);
    cr_assert_eq(vs_usage_collapse(tb_nv(m), &d, 2, true, &u, &n), VS_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(u[0].mem, 110);
    cr_assert_eq(u[0].cores, 5);
    vs_usage_free(u, n);
    vs_pod_devs_cleanup(&d);
}

/* Random churn of pods; at the end the counters must equal a rebuild from scratch. */
Test(model, incremental_equals_rebuild)
{
    unsigned seed = 12345;
    for (int step = 0; step < 2000; step++) {
        seed = seed * 1103515245u + 12345u;
        int id = (int)(seed >> 16) % 40;
        char uid[16];
        snprintf(uid, sizeof(uid), "p%d", id);
        if ((seed >> 8) % 4 == 0) {
            vs_model_remove_pod(m, uid);
            continue;
        }
        char alloc[128];
        snprintf(alloc, sizeof(alloc), "GPU%d,NVIDIA,%u,%u:;", (int)((seed >> 4) % 2),
                 (seed >> 10) % 1000, (seed >> 12) % 20);
        struct vs_pod p;
        running(&p, uid, "n1", alloc);
        upsert(&p);
        vs_pod_cleanup(&p);
    }
    int64_t used[2], mem[2], cores[2];
    for (int i = 0; i < 2; i++) {
        used[i] = card("n1", (size_t)i)->used;
        mem[i] = card("n1", (size_t)i)->usedmem;
        cores[i] = card("n1", (size_t)i)->usedcores;
    }
    /* Rebuild: re-register the node with a changed annotation string (forces a rebuild). */
    char c0[256], c1[256], reg[620];
    tb_card(c0, sizeof(c0), "GPU0", 0, 0, 10, 40000, 100, 1);
    tb_card(c1, sizeof(c1), "GPU1", 1, 0, 10, 40000, 100, 1);
    snprintf(reg, sizeof(reg), " [%s,%s]", c0, c1);
    tb_node(m, "n1", reg, NULL, NULL);
    for (int i = 0; i < 2; i++)
        assert_card("n1", (size_t)i, used[i], mem[i], cores[i]);
}

/* The node index (open addressing, backward-shift deletion) under many inserts and removals in
 * a scrambled order: every present node is found, every removed one is not. */
Test(model, node_index_inserts_and_removals)
{
    struct vs_model *mm = vs_model_new(NULL);
    enum { N = 3000 };
    static char present[N];
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "node-%d", i);
        tb_node(mm, name, "[]", NULL, NULL);
        present[i] = 1;
    }
    /* Remove two thirds in a scrambled order, re-add some, remove again. */
    for (int k = 0; k < 3 * N; k++) {
        int i = (int)(((unsigned)k * 2654435761u) % N);
        snprintf(name, sizeof(name), "node-%d", i);
        if (k % 3 == 2) {
            tb_node(mm, name, "[]", NULL, NULL);
            present[i] = 1;
        } else {
            vs_model_remove_node(mm, name);
            present[i] = 0;
        }
    }
    size_t n_present = 0;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "node-%d", i);
        const struct vs_node *n = vs_model_node(mm, name);
        cr_assert_eq(n != NULL, present[i] != 0, "%s", name);
        if (n)
            cr_assert_str_eq(n->name, name);
        n_present += present[i] != 0;
    }
    cr_assert(n_present > 0 && n_present < N, "%zu", n_present);
    cr_assert_null(vs_model_node(mm, "node-x"));
    /* The batched lookup answers the same, unknown names included. */
    static char names[N + 1][32];
    static const char *ptrs[N + 1];
    static const struct vs_node *got[N + 1];
    for (int i = 0; i <= N; i++) {
        snprintf(names[i], sizeof(names[i]), "node-%d", (i * 7) % (N + 1));
        ptrs[i] = names[i];
    }
    vs_model_nodes(mm, ptrs, N + 1, got);
    for (int i = 0; i <= N; i++)
        cr_assert_eq(got[i], vs_model_node(mm, ptrs[i]), "%s", ptrs[i]);
    vs_model_free(mm);
}

static void quota_line(void *ctx, const struct vs_quota *q)
{
    char *out = ctx;
    size_t len = strlen(out);
    const struct vs_quota_res *r = &q->res[tb_nv(m)];
    snprintf(out + len, 512 - len, "%s:%d:%lld:%lld:%lld;", q->ns, r->has_mem,
             (long long)r->mem_limit, (long long)r->mem_used, (long long)r->cores_used);
}

Test(model, each_quota_in_namespace_order)
{
    struct vs_kquota q = {0};
    q.ns = tb_strdup("zeta");
    q.name = tb_strdup("gpu");
    vs_kv_set(&q.hard, "limits.nvidia.com/gpumem", "30000");
    cr_assert_eq(vs_model_set_quota(m, &q), VS_OK);
    vs_kquota_cleanup(&q);
    struct vs_pod p;
    running(&p, "p", "n1", "GPU0,NVIDIA,1000,10:;");
    upsert(&p);
    vs_pod_cleanup(&p);
    char out[512] = "";
    vs_model_each_quota(m, quota_line, out);
    cr_assert_str_eq(out, "team:0:0:1000:10;zeta:1:30000:0:0;");
    /* The entry stays, with zero usage, once the pod is gone. */
    vs_model_remove_pod(m, "p");
    out[0] = '\0';
    vs_model_each_quota(m, quota_line, out);
    cr_assert_str_eq(out, "team:0:0:0:0;zeta:1:30000:0:0;");
}

/* A card dropped from the register (its device plugin re-registered without it): the pods on it
 * keep their usage, which counts on no card (the remaining cards and the node's sums hold only
 * their own pods); when the card comes back its pods count on it again. */
Test(model, removed_card_keeps_its_pods_usage_for_its_return)
{
    struct vs_pod a, b;
    running(&a, "a", "n1", "GPU1,NVIDIA,1000,10:;");
    running(&b, "b", "n1", "GPU0,NVIDIA,2000,20:;");
    upsert(&a);
    upsert(&b);
    char c0[256], c1[256], one[300], both[600];
    tb_card(c0, sizeof(c0), "GPU0", 0, 0, 10, 40000, 100, 1);
    tb_card(c1, sizeof(c1), "GPU1", 1, 0, 10, 40000, 100, 1);
    snprintf(one, sizeof(one), "[%s]", c0);
    snprintf(both, sizeof(both), "[%s,%s]", c0, c1);
    tb_node(m, "n1", one, NULL, NULL);
    const struct vs_node *n = vs_model_node(m, "n1");
    cr_assert_eq(n->n_cards, 1);
    assert_card("n1", 0, 1, 2000, 20);
    cr_assert_eq(n->sums.used, 1);
    cr_assert_eq(n->sums.usedmem, 2000);
    cr_assert_eq(n->sums.devmem, 40000);
    /* A pod that names the missing card (placed before the change) counts nowhere either. */
    struct vs_pod c;
    running(&c, "c", "n1", "GPU1,NVIDIA,500,5:;");
    upsert(&c);
    assert_card("n1", 0, 1, 2000, 20);
    cr_assert_eq(vs_model_node(m, "n1")->sums.usedmem, 2000);
    tb_node(m, "n1", both, NULL, NULL);
    assert_card("n1", 0, 1, 2000, 20);
    assert_card("n1", 1, 2, 1500, 15);
    vs_pod_cleanup(&a);
    vs_pod_cleanup(&b);
    vs_pod_cleanup(&c);
}

static void count_pod(void *ctx, const struct vs_podent *pe)
{
    (void)pe;
    (*(size_t *)ctx)++;
}

/* The pod index through growth and deletions in scattered order: 3,000 pods on n1 (1 MiB and
 * 1 core each), two of every three removed; every survivor is found, no removed one is, and
 * the counts and the card's usage agree. */
Test(model, pod_index_survives_growth_and_deletions)
{
    char uid[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(uid, sizeof(uid), "uid-%d", i);
        tb_place(m, uid, "n1", "GPU0,NVIDIA,1,1:;");
    }
    cr_assert_eq(vs_model_pod_count(m), 3000);
    for (int k = 0; k < 3000; k++) {
        int i = (k * 1237) % 3000; /* 1237 is prime to 3000: every i once */
        if (i % 3 == 0)
            continue;
        snprintf(uid, sizeof(uid), "uid-%d", i);
        vs_model_remove_pod(m, uid);
    }
    cr_assert_eq(vs_model_pod_count(m), 1000);
    size_t seen = 0;
    vs_model_each_pod(m, count_pod, &seen);
    cr_assert_eq(seen, 1000);
    for (int i = 0; i < 3000; i++) {
        snprintf(uid, sizeof(uid), "uid-%d", i);
        const struct vs_podent *pe = vs_model_pod(m, uid);
        if (i % 3 == 0) {
            cr_assert_not_null(pe, "%s", uid);
            cr_assert_str_eq(pe->uid, uid);
            cr_assert_str_eq(pe->ns, "default");
        } else {
            cr_assert_null(pe, "%s", uid);
        }
    }
    cr_assert_eq(card("n1", 0)->usedmem, 1000);
    cr_assert_eq(card("n1", 0)->used, 1000);
}
