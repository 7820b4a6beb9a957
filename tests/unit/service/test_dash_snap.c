/* test_dash_snap: the dashboard's builders without a server — the copy of the model and the
 * figures derived from it (totals, largest slice, fragmentation, nearest miss), the JSON writer
 * and its escaping, the pending table, ETag matching, and what-if decoding and its private copy
 * of the model (which must give back the same per-card usage). Exact values throughout. */
#include "builders.h"
#include "dash_json.h"
#include "dash_snap.h"
#include "dashboard.h"
#include "pending.h"
#include "simulate.h"
#include "whatif.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>

static struct vs_model *m;

static const char *HOSTILE = "<img src=x onerror=alert(1)>";

static void pod_on(const char *ns, const char *name, const char *node, const char *alloc,
                   bool bound)
{
    struct vs_pod p;
    tb_pod(&p, ns, name, name);
    free(p.phase);
    p.phase = tb_strdup("Running");
    if (bound) {
        free(p.node_name);
        p.node_name = tb_strdup(node);
    }
    tb_anno(&p, VS_ANNO_VGPU_NODE, node);
    tb_anno(&p, VS_ANNO_ALLOCATED, alloc);
    tb_ctr(&p, 0, "main", "1", NULL, NULL, NULL);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK, "%s", eb.msg);
    vs_pod_cleanup(&p);
}

/* n1: GPU-0 (8000 MiB, healthy) and GPU-1 (16000 MiB, unhealthy); n2: GPU-2 (24000 MiB).
 * team/p1 holds 3000 MiB / 30 % of GPU-0; "x&y"/<img...> 1000 MiB / 10 % of GPU-2 (placed, not
 * bound); team has a memory quota of 10000 MiB. */
static void setup(void)
{
    m = vs_model_new(NULL);
    char c0[256], c1[256], c2[256], reg[800];
    tb_card(c0, sizeof(c0), "GPU-0", 0, 0, 10, 8000, 100, 1);
    tb_card(c1, sizeof(c1), "GPU-1", 1, 0, 10, 16000, 100, 0);
    snprintf(reg, sizeof(reg), "[%s,%s]", c0, c1);
    tb_node(m, "n1", reg, NULL, NULL);
    tb_card(c2, sizeof(c2), "GPU-2", 0, 0, 10, 24000, 100, 1);
    snprintf(reg, sizeof(reg), "[%s]", c2);
    tb_node(m, "n2", reg, NULL, NULL);
    pod_on("team", "p1", "n1", "GPU-0,NVIDIA,3000,30:;", true);
    pod_on("x&y", HOSTILE, "n2", "GPU-2,NVIDIA,1000,10:;", false);
    struct vs_kquota q = {0};
    q.ns = tb_strdup("team");
    q.name = tb_strdup("gpu");
    vs_kv_set(&q.hard, "limits.nvidia.com/gpumem", "10000");
    cr_assert_eq(vs_model_set_quota(m, &q), VS_OK);
    vs_kquota_cleanup(&q);
}

static void teardown(void)
{
    vs_model_free(m);
}

TestSuite(dash_snap, .init = setup, .fini = teardown);

static struct vs_dash_snap *copy(size_t detail_max)
{
    struct vs_dash_copy_opts o = {.detail_max_nodes = detail_max};
    struct vs_dash_snap *s = NULL;
    cr_assert_eq(vs_dash_snap_copy(m, &o, 7, 1700000000, &s), VS_OK);
    return s;
}

Test(dash_snap, copy_with_detail)
{
    struct vs_dash_snap *s = copy(10);
    cr_assert(s->detail);
    cr_assert_eq(s->n_nodes, 2);
    cr_assert_str_eq(s->nodes[0].name, "n1");
    cr_assert_str_eq(s->nodes[1].name, "n2");
    cr_assert_eq(s->n_cards, 3);
    cr_assert_str_eq(s->cards[0].uuid, "GPU-0");
    cr_assert_str_eq(s->cards[0].vendor, "NVIDIA");
    cr_assert_eq(s->cards[0].usedmem, 3000);
    cr_assert_eq(s->cards[0].n_shares, 1);
    const struct vs_dash_share *sh = &s->shares[s->cards[0].first_share];
    cr_assert_eq(sh->mem, 3000);
    cr_assert_eq(sh->cores, 30);
    cr_assert_eq(sh->slots, 1);
    cr_assert_str_eq(s->pods[sh->pod].name, "p1");
    cr_assert_eq(s->pods[sh->pod].state, VS_DASH_BOUND);
    cr_assert_eq(s->cards[1].n_shares, 0);
    cr_assert_eq(s->cards[2].n_shares, 1);
    cr_assert_str_eq(s->pods[s->shares[s->cards[2].first_share].pod].name, HOSTILE);
    cr_assert_eq(s->pods[s->shares[s->cards[2].first_share].pod].state, VS_DASH_PLACED);
    cr_assert_eq(s->n_nss, 2);
    cr_assert_str_eq(s->nss[0].ns, "team");
    cr_assert_eq(s->nss[0].pods, 1);
    cr_assert(s->nss[0].has_mem);
    cr_assert_eq(s->nss[0].mem_limit, 10000);
    cr_assert_eq(s->nss[0].mem_used, 3000);
    cr_assert_str_eq(s->nss[1].ns, "x&y");
    cr_assert_eq(s->tracked_pods, 2);
    cr_assert_eq(vs_dash_snap_find(s, "n2"), 1);
    cr_assert_eq(vs_dash_snap_find(s, "n3"), -1);
    struct vs_dash_totals t;
    vs_dash_totals(s, &t);
    cr_assert_eq(t.nodes, 2);
    cr_assert_eq(t.gpu_nodes, 2);
    cr_assert_eq(t.cards, 3);
    cr_assert_eq(t.cards_used, 2);
    cr_assert_eq(t.cards_idle, 1);
    cr_assert_eq(t.unusable_cards, 1);
    cr_assert_eq(t.mem_total, 48000);
    cr_assert_eq(t.mem_used, 4000);
    cr_assert_eq(t.cores_total, 300);
    cr_assert_eq(t.cores_used, 40);
    cr_assert_eq(t.slots_total, 30);
    cr_assert_eq(t.slots_used, 2);
    vs_dash_snap_free(s);
}

Test(dash_snap, copy_without_detail_and_one_node)
{
    struct vs_dash_snap *s = copy(1); /* 2 nodes > 1: cards only */
    cr_assert_not(s->detail);
    cr_assert_eq(s->n_pods, 0);
    cr_assert_eq(s->n_shares, 0);
    cr_assert_eq(s->n_cards, 3);
    cr_assert_eq(s->nss[0].pods, -1);
    vs_dash_snap_free(s);
    /* the poll's copy of a large cluster: the nodes' sums, no card */
    struct vs_dash_copy_opts o = {.detail_max_nodes = 1, .cards = VS_DASH_CARDS_DETAIL};
    cr_assert_eq(vs_dash_snap_copy(m, &o, 1, 0, &s), VS_OK);
    cr_assert_not(s->detail);
    cr_assert_eq(s->n_cards, 0);
    cr_assert_eq(s->nodes[0].n_cards, 2);
    cr_assert_eq(s->nodes[0].n_copied, 0);
    cr_assert_eq(s->nodes[0].mem_total, 24000);
    cr_assert_eq(s->nodes[0].mem_used, 3000);
    cr_assert_eq(s->nodes[0].cards_used, 1);
    cr_assert_eq(s->nodes[0].cards_unusable, 1);
    struct vs_dash_totals t;
    vs_dash_totals(s, &t);
    cr_assert_eq(t.mem_total, 48000);
    cr_assert_eq(t.mem_used, 4000);
    cr_assert_eq(t.cards, 3);
    cr_assert_eq(t.unusable_cards, 1);
    vs_dash_snap_free(s);
    /* health's copy: only the unusable cards */
    o = (struct vs_dash_copy_opts){.cards = VS_DASH_CARDS_UNUSABLE};
    cr_assert_eq(vs_dash_snap_copy(m, &o, 1, 0, &s), VS_OK);
    cr_assert_eq(s->n_cards, 1);
    cr_assert_str_eq(s->cards[0].uuid, "GPU-1");
    cr_assert_eq(s->nodes[0].n_copied, 1);
    cr_assert_eq(s->nodes[1].n_copied, 0);
    vs_dash_snap_free(s);
    o = (struct vs_dash_copy_opts){.only_node = "n2"};
    cr_assert_eq(vs_dash_snap_copy(m, &o, 1, 0, &s), VS_OK);
    cr_assert_eq(s->n_nodes, 1);
    cr_assert_str_eq(s->nodes[0].name, "n2");
    cr_assert(s->detail);
    cr_assert_eq(s->n_pods, 1);
    vs_dash_snap_free(s);
    o.only_node = "nope";
    cr_assert_eq(vs_dash_snap_copy(m, &o, 1, 0, &s), VS_OK);
    cr_assert_eq(s->n_nodes, 0);
    vs_dash_snap_free(s);
}

Test(dash_snap, largest_slice_and_fragmentation)
{
    struct vs_dash_snap *s = copy(10);
    size_t card;
    int64_t mem, cores;
    cr_assert(vs_dash_largest_slice(s, 0, &card, &mem, &cores));
    cr_assert_eq(card, 0); /* GPU-1 is unhealthy */
    cr_assert_eq(mem, 5000);
    cr_assert_eq(cores, 70);
    struct vs_frag_ctx x;
    memset(&x, 0, sizeof(x));
    double idle, stranded;
    cr_assert_not(vs_dash_frag_node(s, &x, 0, &idle, &stranded)); /* no workload yet */
    struct vs_frag_req r = {.nums = 1, .cores = 50, .mempct = -1, .memmib = 6000};
    double w = 1;
    vs_frag_ctx_set(&x, &r, &w, 1);
    cr_assert(vs_dash_frag_node(s, &x, 0, &idle, &stranded));
    /* GPU-0: (70/100 + 5000/8000) / 2; it cannot host 6000 MiB: all of it is stranded */
    cr_assert_float_eq(idle, 0.6625, 1e-9);
    cr_assert_float_eq(stranded, 0.6625, 1e-9);
    cr_assert(vs_dash_frag_node(s, &x, 1, &idle, &stranded));
    cr_assert_float_eq(idle, (0.9 + 23000.0 / 24000.0) / 2, 1e-9);
    cr_assert_float_eq(stranded, 0, 1e-9);
    vs_dash_snap_free(s);
}

static void entry_for(struct vs_pending_entry *e, int32_t nums, int32_t mem, int32_t cores,
                      const char *const *nodes, size_t n)
{
    memset(e, 0, sizeof(*e));
    e->ns = tb_strdup("team");
    e->name = tb_strdup("big");
    e->uid = tb_strdup("u-big");
    e->use_type = tb_strdup("");
    e->nouse_type = tb_strdup("");
    e->ctrs = calloc(1, sizeof(*e->ctrs));
    e->ctrs[0].name = tb_strdup("main");
    e->ctrs[0].req =
        (struct vs_req){.nums = nums, .memreq = mem, .pct = VS_PCT_UNSET, .cores = cores};
    e->n_ctrs = 1;
    e->detail = calloc(n ? n : 1, sizeof(*e->detail));
    for (size_t i = 0; i < n; i++) {
        e->detail[i].node = tb_strdup(nodes[i]);
        e->detail[i].reason = tb_strdup("1/1 CardInsufficientMemory");
    }
    e->n_detail = e->n_nodes = n;
}

Test(dash_snap, nearest_miss)
{
    struct vs_dash_snap *s = copy(10);
    struct vs_pending_entry e;
    const char *nodes[] = {"n1", "n2"};
    /* 10000 MiB: n1's GPU-0 has 5000 free (GPU-1 is unhealthy); n2's GPU-2 has room, so n2
     * refused the pod for another reason and is skipped */
    entry_for(&e, 1, 10000, 0, nodes, 2);
    struct vs_dash_miss miss;
    cr_assert(vs_dash_nearest_miss(s, &e, &miss));
    cr_assert_eq(miss.node, 0);
    cr_assert_eq(miss.card, 0);
    cr_assert_eq(miss.mem, 5000);
    cr_assert_eq(miss.cores, 0);
    cr_assert_not(miss.slot);
    cr_assert_str_eq(miss.text, "n1 card 0 lacks 4.9 GiB");
    vs_pending_entry_cleanup(&e);
    /* 30000 MiB and 95 % cores: GPU-2 (lacks 7000 of 24000, 5 %) beats GPU-0 */
    entry_for(&e, 1, 30000, 95, nodes, 2);
    cr_assert(vs_dash_nearest_miss(s, &e, &miss));
    cr_assert_str_eq(miss.text, "n2 card 0 lacks 6.8 GiB and 5% of its cores");
    vs_pending_entry_cleanup(&e);
    /* 2 cards: n1 has only one usable card, n2 only one card: no node comes near */
    entry_for(&e, 2, 100, 0, nodes, 2);
    cr_assert_not(vs_dash_nearest_miss(s, &e, &miss));
    vs_pending_entry_cleanup(&e);
    /* no detail kept: every node is weighed */
    entry_for(&e, 1, 10000, 0, NULL, 0);
    e.n_nodes = 5;
    cr_assert(vs_dash_nearest_miss(s, &e, &miss));
    cr_assert_str_eq(miss.text, "n1 card 0 lacks 4.9 GiB");
    vs_pending_entry_cleanup(&e);
    vs_dash_snap_free(s);
}

Test(dash_snap, format_mib)
{
    char b[32];
    vs_dash_format_mib(512, b, sizeof(b));
    cr_assert_str_eq(b, "512 MiB");
    vs_dash_format_mib(1536, b, sizeof(b));
    cr_assert_str_eq(b, "1.5 GiB");
    vs_dash_format_mib(40960, b, sizeof(b));
    cr_assert_str_eq(b, "40 GiB");
}

static char *str_json(const char *s)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_dash_json_string(&b, s);
    return vs_buf_steal(&b);
}

Test(dash_json, string_escapes)
{
    char *o = str_json("a\"b\\c\n\t\x01<img src=x onerror=alert(1)>&\x7f");
    cr_assert_str_eq(o, "\"a\\\"b\\\\c\\n\\t\\u0001\\u003cimg src=x onerror=alert(1)\\u003e"
                        "\\u0026\\u007f\"");
    free(o);
    o = str_json("line\xe2\x80\xa8sep\xe2\x80\xa9 ok \xc3\xa9 bad \xff\xc3 \xed\xa0\x80");
    cr_assert_str_eq(
        o, "\"line\\u2028sep\\u2029 ok \xc3\xa9 bad \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\"");
    free(o);
}

Test(dash_json, writer_commas_and_nulls)
{
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    vs_jw_key(&w, "a");
    vs_jw_int(&w, -12);
    vs_jw_key(&w, "b");
    vs_jw_arr(&w);
    vs_jw_str(&w, "x");
    vs_jw_null(&w);
    vs_jw_num(&w, 0.5);
    vs_jw_num(&w, NAN);
    vs_jw_bool(&w, true);
    vs_jw_obj(&w);
    vs_jw_end_obj(&w);
    vs_jw_end_arr(&w);
    vs_jw_key(&w, "c");
    vs_jw_str(&w, NULL);
    vs_jw_end_obj(&w);
    char *o = vs_buf_steal(&b);
    cr_assert_str_eq(o, "{\"a\":-12,\"b\":[\"x\",null,0.5,null,true,{}],\"c\":null}");
    free(o);
}

Test(dash_json, snapshot_document, .init = setup, .fini = teardown)
{
    struct vs_dash_snap *s = copy(10);
    struct vs_dash_meta meta = {.version = "v7",
                                .node_policy = "binpack",
                                .gpu_policy = "spread",
                                .leader = true,
                                .synced = true,
                                .pending = 3};
    char *text = vs_dash_json_snapshot(s, &meta);
    cr_assert_not_null(text);
    /* the hostile strings are \u-escaped, never raw */
    cr_assert_null(strstr(text, "<img"));
    cr_assert_not_null(strstr(text, "\"name\":\"\\u003cimg src=x onerror=alert(1)\\u003e\""));
    cr_assert_not_null(strstr(text, "\"namespace\":\"x\\u0026y\""));
    json_error_t je;
    json_t *d = json_loads(text, 0, &je);
    cr_assert_not_null(d, "%s", je.text);
    json_t *sum = json_object_get(d, "summary");
    cr_assert_eq(json_integer_value(json_object_get(sum, "memTotalMiB")), 48000);
    cr_assert_eq(json_integer_value(json_object_get(sum, "memUsedMiB")), 4000);
    cr_assert_eq(json_integer_value(json_object_get(sum, "coresUsedPct")), 40);
    cr_assert_eq(json_integer_value(json_object_get(sum, "slotsUsed")), 2);
    cr_assert_eq(json_integer_value(json_object_get(sum, "cardsUnusable")), 1);
    cr_assert_eq(json_integer_value(json_object_get(sum, "pending")), 3);
    cr_assert_str_eq(json_string_value(json_object_get(d, "version")), "v7");
    cr_assert_str_eq(json_string_value(json_object_get(d, "detail")), "pods");
    json_t *ns = json_array_get(json_object_get(d, "namespaces"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(ns, "name")), "x&y");
    cr_assert(json_is_null(json_object_get(ns, "memLimitMiB")));
    json_t *c2 =
        json_array_get(json_object_get(json_array_get(json_object_get(d, "nodes"), 1), "cards"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c2, "vendor")), "NVIDIA");
    json_t *share = json_array_get(json_object_get(c2, "pods"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(share, "name")), HOSTILE);
    cr_assert_str_eq(json_string_value(json_object_get(share, "state")), "placed");
    cr_assert_eq(json_integer_value(json_object_get(share, "memMiB")), 1000);
    json_decref(d);
    free(text);
    vs_dash_snap_free(s);
}

Test(dash_json, etag_match)
{
    cr_assert(vs_dash_etag_match("\"a\"", "\"a\""));
    cr_assert(vs_dash_etag_match("W/\"a\"", "\"a\""));
    cr_assert(vs_dash_etag_match("\"b\", \"a\"", "\"a\""));
    cr_assert(vs_dash_etag_match("*", "\"a\""));
    cr_assert_not(vs_dash_etag_match("\"ab\"", "\"a\""));
    cr_assert_not(vs_dash_etag_match("a", "\"a\""));
    cr_assert_not(vs_dash_etag_match("\"a", "\"a\""));
    cr_assert_not(vs_dash_etag_match("", "\"a\""));
    cr_assert_not(vs_dash_etag_match(NULL, "\"a\""));
}

/* ------------------------------------------------------------------ pending */

static void refuse(struct vs_pending *p, const char *uid, const char *name, int64_t now)
{
    struct vs_pod pod;
    tb_pod(&pod, "team", name, uid);
    tb_ctr(&pod, 0, "main", "1", "10000", NULL, "20");
    tb_anno(&pod, VS_ANNO_USE_TYPE, "A100");
    struct vs_node_fit nodes[3] = {
        {.node = "n1", .reason = "1/2 CardInsufficientMemory, 1/2 CardNotHealth"},
        {.node = "n2", .reason = "1/1 CardInsufficientMemory"},
        {.node = "n3", .reason = "node unregistered: annos broken"},
    };
    struct vs_filter_result r = {.managed = true, .nodes = nodes, .n = 3, .best = -1};
    vs_pending_refused(p, &pod, &r, NULL, NULL, NULL, now);
    vs_pod_cleanup(&pod);
}

Test(pending, refuse_list_forget)
{
    struct vs_devcfg cfg;
    vs_devcfg_init(&cfg);
    struct vs_pending_opts o = {.max_detail = 2, .cfg = &cfg};
    struct vs_pending *p = vs_pending_new(&o);
    uint64_t v0 = vs_pending_version(p);
    refuse(p, "u1", "a", 100);
    refuse(p, "u1", "a", 130);
    cr_assert_gt(vs_pending_version(p), v0);
    cr_assert_eq(vs_pending_count(p), 1);
    struct vs_pending_entry *v;
    size_t n;
    uint64_t ver, dropped;
    cr_assert_eq(vs_pending_list(p, 140, false, &v, &n, &ver, &dropped), VS_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0].first_at, 100);
    cr_assert_eq(v[0].last_at, 130);
    cr_assert_eq(v[0].attempts, 2);
    cr_assert_eq(v[0].n_nodes, 3);
    cr_assert_eq(v[0].n_detail, 0); /* not asked for */
    cr_assert_str_eq(v[0].use_type, "A100");
    cr_assert_eq(v[0].n_ctrs, 1);
    cr_assert_eq(v[0].ctrs[0].req.nums, 1);
    cr_assert_eq(v[0].ctrs[0].req.memreq, 10000);
    cr_assert_eq(v[0].ctrs[0].req.cores, 20);
    cr_assert_eq(v[0].n_words, 3);
    cr_assert_str_eq(v[0].words[0].word, "CardInsufficientMemory");
    cr_assert_eq(v[0].words[0].nodes, 2);
    cr_assert_str_eq(v[0].words[1].word, "CardNotHealth");
    cr_assert_str_eq(v[0].words[2].word, "node unregistered");
    vs_pending_list_free(v, n);
    struct vs_pending_entry e;
    cr_assert(vs_pending_get(p, "team", "a", 140, &e));
    cr_assert_eq(e.n_detail, 2); /* max_detail */
    cr_assert_str_eq(e.detail[1].node, "n2");
    cr_assert_str_eq(e.detail[1].reason, "1/1 CardInsufficientMemory");
    vs_pending_entry_cleanup(&e);
    cr_assert_not(vs_pending_get(p, "team", "b", 140, &e));
    vs_pending_forget(p, "u1");
    cr_assert_eq(vs_pending_count(p), 0);
    vs_pending_free(p);
    vs_devcfg_cleanup(&cfg);
}

Test(pending, stale_and_full)
{
    struct vs_pending_opts o = {.max_pods = 2, .stale_s = 60};
    struct vs_pending *p = vs_pending_new(&o);
    refuse(p, "u1", "a", 100);
    refuse(p, "u2", "b", 110);
    refuse(p, "u3", "c", 120); /* full: the one refused longest ago (a) makes room */
    struct vs_pending_entry *v;
    size_t n;
    uint64_t ver, dropped;
    cr_assert_eq(vs_pending_list(p, 120, false, &v, &n, &ver, &dropped), VS_OK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(v[0].name, "b");
    cr_assert_str_eq(v[1].name, "c");
    cr_assert_eq(dropped, 1);
    vs_pending_list_free(v, n);
    /* b was last refused at 110: stale after 170 */
    cr_assert_eq(vs_pending_list(p, 175, false, &v, &n, &ver, &dropped), VS_OK);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(v[0].name, "c");
    vs_pending_list_free(v, n);
    vs_pending_free(p);
}

Test(pending, error_and_words)
{
    struct vs_pending_opts o = {0};
    struct vs_pending *p = vs_pending_new(&o);
    struct vs_pod pod;
    tb_pod(&pod, "team", "bad", "u9");
    vs_pending_refused(p, &pod, NULL, "invalid nvidia.com/gpumem \"8Gi\"", NULL, NULL, 5);
    vs_pod_cleanup(&pod);
    struct vs_pending_entry e;
    cr_assert(vs_pending_get(p, "team", "bad", 5, &e));
    cr_assert_str_eq(e.error, "invalid nvidia.com/gpumem \"8Gi\"");
    cr_assert_eq(e.n_words, 0);
    vs_pending_entry_cleanup(&e);
    vs_pending_free(p);
    struct vs_pending_word *w = NULL;
    size_t n = 0;
    cr_assert_eq(vs_pending_count_reason(&w, &n, "2/8 CardInsufficientCore, 6/8 CardCordoned"),
                 VS_OK);
    cr_assert_eq(vs_pending_count_reason(&w, &n, "node usage unavailable: pod a/b: bad"), VS_OK);
    cr_assert_eq(vs_pending_count_reason(&w, &n, "1/1 CardCordoned"), VS_OK);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(w[0].word, "CardInsufficientCore");
    cr_assert_str_eq(w[1].word, "CardCordoned");
    cr_assert_eq(w[1].nodes, 2);
    cr_assert_str_eq(w[2].word, "node usage unavailable");
    for (size_t i = 0; i < n; i++)
        free(w[i].word);
    free(w);
}

/* ------------------------------------------------------------------ what-if */

static struct vs_devcfg wcfg;

static void wsetup(void)
{
    setup();
    vs_devcfg_init(&wcfg);
}

static void wteardown(void)
{
    vs_devcfg_cleanup(&wcfg);
    teardown();
}

TestSuite(whatif, .init = wsetup, .fini = wteardown);

static void parse_fails(const char *body, const char *msg)
{
    struct vs_whatif_req r;
    struct vs_errbuf eb;
    cr_assert_neq(vs_whatif_parse(body, strlen(body), &wcfg, &r, &eb), VS_OK, "%s", body);
    cr_assert_str_eq(eb.msg, msg, "%s: %s", body, eb.msg);
}

Test(whatif, parse_errors)
{
    parse_fails("[1]", "the body must be a JSON object");
    parse_fails("{\"shape\":{}, \"x\":1}",
                "unknown field \"x\" (want shape, pod, count, nodePolicy, gpuPolicy)");
    parse_fails("{}", "give exactly one of \"shape\" and \"pod\"");
    parse_fails("{\"shape\":{},\"pod\":\"a\"}", "give exactly one of \"shape\" and \"pod\"");
    parse_fails("{\"shape\":{\"cards\":0}}", "shape.cards must be a whole number from 1 to 64");
    parse_fails("{\"shape\":{\"cards\":\"2\"}}", "shape.cards must be a whole number from 1 to 64");
    parse_fails("{\"shape\":{\"memMiB\":10,\"memPct\":5}}",
                "shape.memMiB and shape.memPct exclude each other");
    parse_fails("{\"shape\":{\"mode\":\"fast\"}}", "shape.mode must be hami-core, mig or mps");
    parse_fails("{\"shape\":{\"colour\":1}}",
                "unknown field \"shape.colour\" (want cards, memMiB, memPct, coresPct, type, mode, "
                "namespace, name, priority)");
    parse_fails("{\"shape\":{},\"count\":101}", "count must be a whole number from 1 to 100");
    parse_fails("{\"pod\":\"kind: Deployment\\nmetadata:\\n  name: d\\n\"}",
                "pod: the text holds no object of kind Pod (pod: skipping Deployment d)");
    parse_fails("{\"pod\":7}", "pod must be the pod's JSON or YAML text");
}

Test(whatif, parse_errors_policy_and_json)
{
    struct vs_whatif_req r;
    struct vs_errbuf eb;
    const char *b = "{\"shape\":{},\"nodePolicy\":\"fastest\"}";
    cr_assert_eq(vs_whatif_parse(b, strlen(b), &wcfg, &r, &eb), VS_ERR_INVAL);
    cr_assert_not_null(strstr(eb.msg, "nodePolicy"), "%s", eb.msg);
    cr_assert_not_null(strstr(eb.msg, "fastest"), "%s", eb.msg);
    b = "{\"shape\":";
    cr_assert_eq(vs_whatif_parse(b, strlen(b), &wcfg, &r, &eb), VS_ERR_PARSE);
    cr_assert_eq(strncmp(eb.msg, "invalid JSON at line 1: ", 24), 0, "%s", eb.msg);
}

Test(whatif, parse_shape_and_pod)
{
    struct vs_whatif_req r;
    struct vs_errbuf eb;
    const char *b = "{\"shape\":{\"cards\":2,\"memMiB\":4096,\"coresPct\":30,\"type\":\"A100\","
                    "\"namespace\":\"ml\",\"mode\":\"mps\"},\"count\":2,\"gpuPolicy\":\"binpack\"}";
    cr_assert_eq(vs_whatif_parse(b, strlen(b), &wcfg, &r, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(r.pods.n_pods, 2);
    cr_assert_str_eq(r.gpu_policy, "binpack");
    cr_assert_null(r.node_policy);
    struct vs_pod *p = &r.pods.pods[1];
    cr_assert_str_eq(p->ns, "ml");
    cr_assert_str_eq(p->name, "what-if-2");
    cr_assert_str_eq(p->uid, "what-if-2");
    cr_assert_str_eq(vs_kv_get(&p->ctrs[0].limits, "nvidia.com/gpu"), "2");
    cr_assert_str_eq(vs_kv_get(&p->ctrs[0].limits, "nvidia.com/gpumem"), "4096");
    cr_assert_str_eq(vs_kv_get(&p->ctrs[0].limits, "nvidia.com/gpucores"), "30");
    cr_assert_null(vs_kv_get(&p->ctrs[0].limits, "nvidia.com/gpumem-percentage"));
    cr_assert_str_eq(vs_kv_get(&p->annotations, VS_ANNO_USE_TYPE), "A100");
    cr_assert_str_eq(vs_kv_get(&p->annotations, VS_ANNO_VGPU_MODE), "mps");
    vs_whatif_req_cleanup(&r);
    b = "{\"pod\":\"apiVersion: v1\\nkind: Pod\\nmetadata:\\n  name: t\\n  annotations:\\n"
        "    hami.io/vgpu-node: n1\\nspec:\\n  nodeName: n1\\n  nodeSelector: {a: b}\\n"
        "  containers:\\n  - name: c\\n\"}";
    cr_assert_eq(vs_whatif_parse(b, strlen(b), &wcfg, &r, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(r.pods.n_pods, 1);
    p = &r.pods.pods[0];
    cr_assert_str_eq(p->ns, "default");
    cr_assert_str_eq(p->name, "t");
    cr_assert_str_eq(p->node_name, "");
    cr_assert_null(vs_kv_get(&p->annotations, VS_ANNO_VGPU_NODE));
    cr_assert_eq(p->node_selector.n, 0);
    cr_assert(r.dropped_placement);
    cr_assert(r.dropped_selectors);
    vs_whatif_req_cleanup(&r);
}

struct card_usage {
    char uuid[16];
    int64_t used, usedmem, usedcores;
};

static void usage_of(void *ctx, const struct vs_node *n)
{
    struct card_usage *u = ctx;
    for (size_t i = 0; i < n->n_cards; i++) {
        struct card_usage *d = &u[n->cards[i].uuid[4] - '0'];
        snprintf(d->uuid, sizeof(d->uuid), "%s", n->cards[i].uuid);
        d->used = n->cards[i].used;
        d->usedmem = n->cards[i].usedmem;
        d->usedcores = n->cards[i].usedcores;
    }
}

Test(whatif, private_copy_gives_back_the_same_usage)
{
    /* a pod with two containers on GPU-2: 2 slots */
    pod_on("team", "two", "n2", "GPU-2,NVIDIA,500,5:;GPU-2,NVIDIA,700,7:;", true);
    struct card_usage want[3] = {0}, got[3] = {0};
    vs_model_each_node(m, usage_of, want);
    cr_assert_eq(want[2].used, 3); /* the <img...> pod's slot and these two */
    /* The copy a what-if runs on: the same cards, usage, quota and pods. */
    struct vs_model *copy = vs_model_clone(m);
    cr_assert_not_null(copy);
    vs_model_each_node(copy, usage_of, got);
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(got[i].uuid, want[i].uuid);
        cr_assert_eq(got[i].used, want[i].used, "%s", want[i].uuid);
        cr_assert_eq(got[i].usedmem, want[i].usedmem, "%s", want[i].uuid);
        cr_assert_eq(got[i].usedcores, want[i].usedcores, "%s", want[i].uuid);
    }
    cr_assert_eq(vs_model_pod_count(copy), vs_model_pod_count(m));
    const struct vs_quota_res *q = tb_quota(copy, "team");
    cr_assert(q->has_mem);
    cr_assert_eq(q->mem_limit, 10000);
    cr_assert_eq(q->mem_used, 3000 + 1200);
    /* The Node objects kube-scheduler's filters see: one per node, nothing else. */
    struct vs_whatif_state *st;
    cr_assert_eq(vs_whatif_copy(m, &st), VS_OK);
    struct vs_objset cl;
    cr_assert_eq(vs_whatif_objects(st, &wcfg, &cl), VS_OK);
    cr_assert_eq(cl.n_nodes, 2);
    cr_assert_eq(cl.n_pods, 0);
    cr_assert_eq(cl.n_quotas, 0);
    vs_objset_cleanup(&cl);
    vs_whatif_state_free(st);
    /* Changing the copy leaves the original alone. */
    vs_model_remove_pod(copy, "two");
    vs_model_free(copy);
    memset(got, 0, sizeof(got));
    vs_model_each_node(m, usage_of, got);
    cr_assert_eq(got[2].used, 3);
}

Test(whatif, run_answers_and_leaves_the_model_alone)
{
    struct card_usage before[3] = {0}, after[3] = {0};
    vs_model_each_node(m, usage_of, before);
    struct vs_whatif_state *st;
    cr_assert_eq(vs_whatif_copy(m, &st), VS_OK);
    struct vs_whatif_req r;
    struct vs_errbuf eb;
    /* 10000 MiB: only GPU-2 (n2) has room; 30000 MiB: nothing has */
    const char *b = "{\"shape\":{\"memMiB\":10000,\"name\":\"fits\"}}";
    cr_assert_eq(vs_whatif_parse(b, strlen(b), &wcfg, &r, &eb), VS_OK, "%s", eb.msg);
    struct vs_whatif_opts o = {.cfg = &wcfg, .version = "v1", .now = 5};
    char *out = vs_whatif_run(st, &r, &o);
    vs_whatif_req_cleanup(&r);
    json_t *d = json_loads(out, 0, NULL);
    cr_assert_not_null(d, "%s", out);
    json_t *r0 = json_array_get(json_object_get(d, "results"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(r0, "pod")), "default/fits");
    cr_assert_str_eq(json_string_value(json_object_get(r0, "node")), "n2");
    json_t *c0 = json_array_get(json_object_get(r0, "cards"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c0, "uuid")), "GPU-2");
    cr_assert_eq(json_integer_value(json_object_get(c0, "index")), 0);
    json_decref(d);
    free(out);
    b = "{\"shape\":{\"memMiB\":30000,\"name\":\"big\"}}";
    cr_assert_eq(vs_whatif_parse(b, strlen(b), &wcfg, &r, &eb), VS_OK, "%s", eb.msg);
    out = vs_whatif_run(st, &r, &o);
    vs_whatif_req_cleanup(&r);
    d = json_loads(out, 0, NULL);
    r0 = json_array_get(json_object_get(d, "results"), 0);
    cr_assert(json_is_null(json_object_get(r0, "node")));
    json_t *reasons = json_object_get(r0, "reasons");
    cr_assert_eq(json_array_size(reasons), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(reasons, 0), "node")), "n1");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(reasons, 0), "reason")),
                     "1/2 CardInsufficientMemory, 1/2 CardNotHealth");
    json_decref(d);
    free(out);
    vs_whatif_state_free(st);
    vs_model_each_node(m, usage_of, after);
    cr_assert_eq(memcmp(before, after, sizeof(before)), 0);
}
