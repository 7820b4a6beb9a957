/* test_decision: Filter's decisions kept for Bind (decision.h) — the latest reservation wins
 * whatever order two Filters record in, copies are the caller's own, a posted decision asks for a
 * label patch only when the bound pod lacks the label, and every way out drops the entry. */
#include "decision.h"

#include <criterion/criterion.h>
#include <string.h>

static struct vs_decisions *d;

static void setup(void)
{
    d = vs_decisions_new();
    cr_assert_not_null(d);
}

static void teardown(void)
{
    vs_decisions_free(d);
}

TestSuite(decision, .init = setup, .fini = teardown);

/* A decision of reservation resv on node, with one annotation naming the node. */
static bool put(const char *uid, uint64_t resv, const char *node)
{
    struct vs_decision dec = {.resv = resv,
                              .node = strdup(node),
                              .annotations = json_pack("{s:s}", "hami.io/vgpu-node", node),
                              .needs_lock = true};
    return vs_decisions_put(d, uid, &dec);
}

Test(decision, get_returns_a_copy_of_the_latest_reservation)
{
    cr_assert(put("u1", 2, "n2"));
    cr_assert(put("u1", 1, "n1")); /* an older Filter recording late: kept out */
    struct vs_decision got;
    cr_assert(vs_decisions_get(d, "u1", &got));
    cr_assert_eq(got.resv, 2);
    cr_assert_str_eq(got.node, "n2");
    cr_assert_str_eq(json_string_value(json_object_get(got.annotations, "hami.io/vgpu-node")),
                     "n2");
    cr_assert(got.needs_lock);
    cr_assert_eq(got.n_stamps, 0);
    /* The copy is the caller's: changing it leaves the table's alone. */
    json_object_set_new(got.annotations, "hami.io/vgpu-node", json_string("x"));
    vs_decision_cleanup(&got);
    cr_assert(put("u1", 3, "n3")); /* a later Filter replaces it */
    cr_assert(vs_decisions_get(d, "u1", &got));
    cr_assert_eq(got.resv, 3);
    cr_assert_str_eq(got.node, "n3");
    vs_decision_cleanup(&got);
    cr_assert_eq(vs_decisions_count(d), 1);
    cr_assert_not(vs_decisions_get(d, "u2", &got));
    cr_assert_null(got.node);
}

Test(decision, a_bound_pod_without_the_label_asks_for_one_patch)
{
    cr_assert(put("u1", 1, "n1"));
    vs_decisions_posted(d, "u1", 1, true);
    char *node = NULL;
    cr_assert(vs_decisions_seen_bound(d, "u1", false, &node));
    cr_assert_str_eq(node, "n1");
    free(node);
    cr_assert_eq(vs_decisions_count(d), 0);
    cr_assert_not(vs_decisions_seen_bound(d, "u1", false, &node)); /* once */
    cr_assert_null(node);
}

Test(decision, a_labeled_or_unposted_bound_pod_asks_for_nothing)
{
    char *node = NULL;
    cr_assert(put("u1", 1, "n1"));
    vs_decisions_posted(d, "u1", 1, true);
    cr_assert_not(vs_decisions_seen_bound(d, "u1", true, &node)); /* the binding carried it */
    cr_assert_null(node);
    cr_assert(put("u2", 1, "n1"));
    vs_decisions_posted(d, "u2", 1, true);
    vs_decisions_posted(d, "u2", 1, false); /* the POST failed: someone else bound it */
    cr_assert_not(vs_decisions_seen_bound(d, "u2", false, &node));
    cr_assert(put("u3", 2, "n1"));
    vs_decisions_posted(d, "u3", 1, true); /* another reservation's binding */
    cr_assert_not(vs_decisions_seen_bound(d, "u3", false, &node));
    cr_assert_eq(vs_decisions_count(d), 0);
}

Test(decision, forget_drops_and_bad_input_records_nothing)
{
    cr_assert(put("u1", 1, "n1"));
    vs_decisions_forget(d, "u1");
    vs_decisions_forget(d, "u1");
    cr_assert_eq(vs_decisions_count(d), 0);
    struct vs_decision dec = {.resv = 1, .node = strdup("n1"), .annotations = json_array()};
    cr_assert_not(vs_decisions_put(d, "u1", &dec)); /* annotations must be an object */
    cr_assert_null(dec.node);
    cr_assert_null(dec.annotations);
    struct vs_decision none = {.resv = 1, .node = strdup("n1"), .annotations = json_object()};
    cr_assert_not(vs_decisions_put(d, "", &none));
    cr_assert_eq(vs_decisions_count(d), 0);
}
