/* test_bindq: the per-node bind queue against an emulated node lock (one owner per node, taken
 * and released by the test as HAMi's device plugin would, with the watch events the store
 * would deliver). Threads stand for concurrent Binds; the test waits for them to be queued
 * (vs_bindq_waiting) before it acts, so no assertion depends on timing. */
#include "annot.h"
#include "bindq.h"
#include "sched.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ emulated node lock */

#define MAXN 4

static pthread_mutex_t api_mu = PTHREAD_MUTEX_INITIALIZER;
static char owner[MAXN][64];   /* "ns/name" or "" per node n0..n3 */
static bool owner_dead[MAXN];  /* the owner pod is gone: a try breaks the lock */
static atomic_int tries[MAXN]; /* take() calls per node */
static char order[64][64];     /* pods in the order they took a lock */
static atomic_int n_order;
static struct vs_bindq *q;

static int node_ix(const char *node)
{
    return node[1] - '0';
}

struct bind {
    const char *node, *uid, *ns, *name;
    bool check_fails;
    bool use_at;  /* offers take_seen too */
    double since; /* vs_bindq_req.since */
    enum vs_err err;
    char msg[VS_ERRBUF_SIZE];
    pthread_t t;
};

static enum vs_err take(void *ctx, struct vs_errbuf *eb)
{
    struct bind *b = ctx;
    int i = node_ix(b->node);
    atomic_fetch_add(&tries[i], 1);
    pthread_mutex_lock(&api_mu);
    if (owner[i][0] && owner_dead[i]) {
        owner[i][0] = '\0'; /* nodelock breaks a dead owner's lock */
        owner_dead[i] = false;
    }
    if (owner[i][0]) {
        pthread_mutex_unlock(&api_mu);
        return vs_err_set(eb, VS_ERR_CONFLICT,
                          "node %s has been locked within 5m0s: node lock contention", b->node);
    }
    snprintf(owner[i], sizeof(owner[i]), "%s/%s", b->ns, b->name);
    pthread_mutex_unlock(&api_mu);
    snprintf(order[atomic_fetch_add(&n_order, 1)], 64, "%s", b->name);
    return VS_OK;
}

static atomic_int at_tries[MAXN]; /* take_seen() calls per node */
static char at_seen[MAXN][128];   /* the lock value the last one was given ("-": none) */

/* As nodelock's acquire_seen: the lock is replaced when its owner is still the one of `seen`
 * (none for NULL), or taken when it is gone (the holder's release came first); otherwise
 * nodelock reads the node (take). */
static enum vs_err take_seen(void *ctx, const char *seen, struct vs_errbuf *eb)
{
    struct bind *b = ctx;
    int i = node_ix(b->node);
    atomic_fetch_add(&at_tries[i], 1);
    snprintf(at_seen[i], sizeof(at_seen[i]), "%s", seen ? seen : "-");
    char want[128] = "";
    const char *c1 = seen ? strchr(seen, ',') : NULL, *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (c2)
        snprintf(want, sizeof(want), "%.*s/%s", (int)(c2 - c1 - 1), c1 + 1, c2 + 1);
    pthread_mutex_lock(&api_mu);
    if (strcmp(owner[i], want) == 0 || !owner[i][0]) {
        snprintf(owner[i], sizeof(owner[i]), "%s/%s", b->ns, b->name);
        pthread_mutex_unlock(&api_mu);
        snprintf(order[atomic_fetch_add(&n_order, 1)], 64, "%s", b->name);
        return VS_OK;
    }
    pthread_mutex_unlock(&api_mu);
    return take(ctx, eb);
}

static enum vs_err check(void *ctx, struct vs_errbuf *eb)
{
    struct bind *b = ctx;
    if (b->check_fails)
        return vs_err_set(eb, VS_ERR_CONFLICT, "reservation of %s/%s expired", b->ns, b->name);
    return VS_OK;
}

static void *bind_main(void *arg)
{
    struct bind *b = arg;
    struct vs_bindq_req r = {.node = b->node,
                             .uid = b->uid,
                             .ns = b->ns,
                             .name = b->name,
                             .take = take,
                             .take_seen = b->use_at ? take_seen : NULL,
                             .check = check,
                             .ctx = b,
                             .since = b->since};
    struct vs_errbuf eb;
    eb.msg[0] = '\0';
    b->err = vs_bindq_lock(q, &r, NULL, &eb);
    snprintf(b->msg, sizeof(b->msg), "%s", b->err ? eb.msg : "");
    return NULL;
}

static void start(struct bind *b)
{
    cr_assert_eq(pthread_create(&b->t, NULL, bind_main, b), 0);
}

static void join(struct bind *b)
{
    pthread_join(b->t, NULL);
}

/* Waits (no time limit: the suite's timeout is the limit) until `n` Binds are queued. */
static void wait_waiting(size_t n)
{
    while (vs_bindq_waiting(q) != n)
        usleep(1000);
}

static void wait_tries(int node, int n)
{
    while (atomic_load(&tries[node]) < n)
        usleep(1000);
}

/* The watch delivers the node's current lock. */
static void watch(int node)
{
    char name[8];
    snprintf(name, sizeof(name), "n%d", node);
    pthread_mutex_lock(&api_mu);
    char *value = NULL;
    if (owner[node][0]) {
        char ns[64];
        snprintf(ns, sizeof(ns), "%s", owner[node]);
        char *slash = strchr(ns, '/');
        *slash = '\0';
        value = vs_annot_format_lock(1767225600, ns, slash + 1);
    }
    pthread_mutex_unlock(&api_mu);
    vs_bindq_node_event(q, name, value, false, false);
    free(value);
}

/* The device plugin releases the lock; the watch shows it. */
static void release(int node)
{
    pthread_mutex_lock(&api_mu);
    owner[node][0] = '\0';
    pthread_mutex_unlock(&api_mu);
    watch(node);
}

static void hold(int node, const char *ns_name)
{
    pthread_mutex_lock(&api_mu);
    snprintf(owner[node], sizeof(owner[node]), "%s", ns_name);
    pthread_mutex_unlock(&api_mu);
}

static double saturation; /* setup_q's vs_bindq_opts.saturation */

static void setup_q(int64_t wait_ms, int depth)
{
    memset(owner, 0, sizeof(owner));
    memset(owner_dead, 0, sizeof(owner_dead));
    for (int i = 0; i < MAXN; i++) {
        atomic_store(&tries[i], 0);
        atomic_store(&at_tries[i], 0);
        at_seen[i][0] = '\0';
    }
    atomic_store(&n_order, 0);
    struct vs_bindq_opts o = {
        .wait_ms = wait_ms, .depth = depth, .expect_ttl_s = 300, .saturation = saturation};
    q = vs_bindq_new(&o);
    cr_assert_not_null(q);
}

static void setup(void)
{
    setup_q(600000, 2);
}

static void teardown(void)
{
    vs_bindq_free(q);
    q = NULL;
}

TestSuite(bindq, .init = setup, .fini = teardown, .timeout = 60);

/* ------------------------------------------------------------------ tests */

Test(bindq, free_lock_is_taken_without_waiting)
{
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    bind_main(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    cr_assert_str_eq(owner[0], "ns/a");
    cr_assert_eq(atomic_load(&tries[0]), 1);
    cr_assert_eq(vs_bindq_waiting(q), 0);
}

Test(bindq, fifo_per_node_one_try_per_release)
{
    hold(0, "other/x");
    watch(0);
    struct bind b[4] = {{.node = "n0", .uid = "u0", .ns = "ns", .name = "p0"},
                        {.node = "n0", .uid = "u1", .ns = "ns", .name = "p1"},
                        {.node = "n0", .uid = "u2", .ns = "ns", .name = "p2"},
                        {.node = "n0", .uid = "u3", .ns = "ns", .name = "p3"}};
    for (int i = 0; i < 4; i++) {
        start(&b[i]);
        wait_waiting((size_t)i + 1);
    }
    wait_tries(0, 1); /* the head tried once and waits for the lock to change */
    cr_assert_eq(atomic_load(&tries[0]), 1);
    for (int i = 0; i < 4; i++) {
        release(0);
        join(&b[i]);
        cr_assert_eq(b[i].err, VS_OK, "%s", b[i].msg);
        char want[8];
        snprintf(want, sizeof(want), "ns/p%d", i);
        cr_assert_str_eq(owner[0], want);
        watch(0); /* the watch shows the new owner's own lock: nobody tries */
    }
    /* One failed try by p0 before the first release, then one successful try per release. */
    cr_assert_eq(atomic_load(&tries[0]), 5);
    cr_assert_eq(atomic_load(&n_order), 4);
    for (int i = 0; i < 4; i++) {
        char want[8];
        snprintf(want, sizeof(want), "p%d", i);
        cr_assert_str_eq(order[i], want);
    }
}

Test(bindq, other_nodes_never_wait)
{
    hold(0, "other/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    start(&a);
    wait_waiting(1);
    struct bind b = {.node = "n1", .uid = "u-b", .ns = "ns", .name = "b"};
    struct bind c = {.node = "n2", .uid = "u-c", .ns = "ns", .name = "c"};
    bind_main(&b);
    bind_main(&c);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_eq(c.err, VS_OK, "%s", c.msg);
    cr_assert_eq(vs_bindq_waiting(q), 1);
    release(0);
    join(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
}

Test(bindq, node_seen_unlocked_is_taken_as_seen)
{
    /* No event of n0 yet: the watch has shown no lock there, so the lock is taken as none,
     * without reading the node. */
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a", .use_at = true};
    bind_main(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    cr_assert_eq(atomic_load(&at_tries[0]), 1);
    cr_assert_str_eq(at_seen[0], "-");
    cr_assert_eq(atomic_load(&tries[0]), 0);
    char *lock = vs_annot_format_lock(1767225600, "ns", "a");
    vs_bindq_node_event_rv(q, "n0", lock, "7", false, false);
    free(lock);
    struct bind b = {.node = "n0", .uid = "u-b", .ns = "ns", .name = "b", .use_at = true};
    start(&b);
    wait_waiting(1);
    /* a's release is seen at version 8: b takes the lock as none, without reading the node. */
    pthread_mutex_lock(&api_mu);
    owner[0][0] = '\0';
    pthread_mutex_unlock(&api_mu);
    vs_bindq_node_event_rv(q, "n0", NULL, "8", false, false);
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_str_eq(owner[0], "ns/b");
    cr_assert_eq(atomic_load(&at_tries[0]), 2);
    cr_assert_str_eq(at_seen[0], "-");
    cr_assert_eq(atomic_load(&tries[0]), 0);
    /* A lock the watch shows (another owner's) is tried the usual way. */
    lock = vs_annot_format_lock(1767225600, "ns", "b");
    vs_bindq_node_event_rv(q, "n0", lock, "9", false, false);
    free(lock);
    hold(1, "other/x");
    lock = vs_annot_format_lock(1767225600, "other", "x");
    vs_bindq_node_event_rv(q, "n1", lock, "3", false, false);
    free(lock);
    struct bind c = {.node = "n1", .uid = "u-c", .ns = "ns", .name = "c", .use_at = true};
    start(&c);
    wait_tries(1, 1);
    cr_assert_eq(atomic_load(&at_tries[1]), 0);
    release(1); /* an event without a version: the usual way again */
    join(&c);
    cr_assert_eq(c.err, VS_OK, "%s", c.msg);
    cr_assert_eq(atomic_load(&at_tries[1]), 0);
    cr_assert_eq(atomic_load(&tries[1]), 2);
}

/* A lock on a node the watch has shown no event of yet: the Bind's patch as none fails its test,
 * the node is read (contention), and the Bind waits for the lock's release like any other. */
Test(bindq, unseen_lock_fails_the_test_and_is_read)
{
    hold(1, "other/x");
    struct bind c = {.node = "n1", .uid = "u-c", .ns = "ns", .name = "c", .use_at = true};
    start(&c);
    wait_tries(1, 1);
    cr_assert_eq(atomic_load(&at_tries[1]), 1);
    cr_assert_str_eq(at_seen[1], "-");
    wait_waiting(1);
    release(1);
    join(&c);
    cr_assert_eq(c.err, VS_OK, "%s", c.msg);
    cr_assert_str_eq(owner[1], "ns/c");
    cr_assert_eq(atomic_load(&tries[1]), 2);
}

Test(bindq, holder_blocks_the_next_until_its_release_is_seen)
{
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    bind_main(&a);
    cr_assert_eq(a.err, VS_OK);
    struct bind b = {.node = "n0", .uid = "u-b", .ns = "ns", .name = "b"};
    start(&b);
    wait_waiting(1);
    /* a stale event from before a's lock (no lock) must not let b try */
    vs_bindq_node_event(q, "n0", NULL, false, false);
    watch(0); /* a's own lock seen */
    cr_assert_eq(atomic_load(&tries[0]), 1);
    cr_assert_eq(vs_bindq_load(q, "n0"), 2);
    release(0);
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_str_eq(owner[0], "ns/b");
    cr_assert_eq(atomic_load(&tries[0]), 2);
    cr_assert_eq(vs_bindq_load(q, "n0"), 1); /* a's release seen: only b in flight */
}

Test(bindq, failed_bind_released_lets_the_next_try)
{
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    bind_main(&a);
    struct bind b = {.node = "n0", .uid = "u-b", .ns = "ns", .name = "b"};
    start(&b);
    wait_waiting(1);
    pthread_mutex_lock(&api_mu);
    owner[0][0] = '\0'; /* a's Bind failed and released the lock itself */
    pthread_mutex_unlock(&api_mu);
    vs_bindq_released(q, "n0", "u-a");
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_str_eq(owner[0], "ns/b");
}

Test(bindq, wait_times_out_with_hamis_message_and_nothing_taken)
{
    vs_bindq_free(q);
    setup_q(50, 2);
    hold(0, "other/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    bind_main(&a);
    cr_assert_eq(a.err, VS_ERR_CONFLICT);
    cr_assert_str_eq(
        a.msg, "timed out after 50ms waiting for node n0 to be unlocked: node lock contention");
    cr_assert_str_eq(owner[0], "other/x");
    cr_assert_eq(vs_bindq_waiting(q), 0);
    cr_assert_eq(vs_bindq_load(q, "n0"), 0);
}

Test(bindq, wait_counts_from_the_binds_arrival)
{
    vs_bindq_free(q);
    setup_q(60000, 2);
    hold(0, "other/x");
    watch(0);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* The Bind arrived 59.95 s ago (its earlier steps took that long): of its 1m0s, 50 ms are
     * left for the queue. */
    struct bind a = {.node = "n0",
                     .uid = "u-a",
                     .ns = "ns",
                     .name = "a",
                     .since = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - 59.95};
    bind_main(&a);
    cr_assert_eq(a.err, VS_ERR_CONFLICT);
    cr_assert_str_eq(
        a.msg, "timed out after 1m0s waiting for node n0 to be unlocked: node lock contention");
    cr_assert_str_eq(owner[0], "other/x");
    cr_assert_eq(vs_bindq_waiting(q), 0);
}

Test(bindq, wait_zero_fails_fast_with_the_lock_error)
{
    vs_bindq_free(q);
    setup_q(0, 2);
    hold(0, "other/x");
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    bind_main(&a);
    cr_assert_eq(a.err, VS_ERR_CONFLICT);
    cr_assert_str_eq(a.msg, "node n0 has been locked within 5m0s: node lock contention");
    cr_assert_eq(atomic_load(&tries[0]), 1);
}

Test(bindq, pod_deleted_while_queued_leaves_at_once)
{
    hold(0, "other/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    struct bind b = {.node = "n0", .uid = "u-b", .ns = "ns", .name = "b"};
    start(&a);
    wait_waiting(1);
    start(&b);
    wait_waiting(2);
    vs_bindq_pod_event(q, "u-b", "ns", "b", true);
    join(&b);
    cr_assert_eq(b.err, VS_ERR_NOTFOUND);
    cr_assert_str_eq(b.msg, "pod ns/b was deleted while its Bind waited for node n0's lock");
    cr_assert_eq(vs_bindq_waiting(q), 1);
    release(0);
    join(&a);
    cr_assert_eq(a.err, VS_OK);
}

/* The deleted pod's Bind is found by its UID among Binds waiting on other nodes too: only it
 * leaves; the index holds the waiting Binds and the locks' owners, and empties as they go. */
Test(bindq, pod_deleted_finds_its_bind_among_other_nodes_queues)
{
    hold(0, "other/x");
    watch(0);
    hold(1, "other/y");
    watch(1);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    struct bind b = {.node = "n1", .uid = "u-b", .ns = "ns", .name = "b"};
    struct bind c = {.node = "n1", .uid = "u-c", .ns = "ns", .name = "c"};
    start(&a);
    wait_waiting(1);
    start(&b);
    wait_waiting(2);
    start(&c);
    wait_waiting(3);
    cr_assert_eq(vs_bindq_pod_keys(q), 5);          /* other/x, other/y; u-a, u-b, u-c */
    vs_bindq_pod_event(q, "u-a", "ns", "a", false); /* not deleted: nobody leaves */
    vs_bindq_pod_event(q, "u-z", "ns", "z", true);  /* no such Bind */
    cr_assert_eq(vs_bindq_waiting(q), 3);
    vs_bindq_pod_event(q, "u-c", "ns", "c", true);
    join(&c);
    cr_assert_eq(c.err, VS_ERR_NOTFOUND);
    cr_assert_str_eq(c.msg, "pod ns/c was deleted while its Bind waited for node n1's lock");
    cr_assert_eq(vs_bindq_waiting(q), 2);
    cr_assert_eq(vs_bindq_pod_keys(q), 4);
    release(0);
    join(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    release(1);
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_str_eq(owner[1], "ns/b");
    /* a and b hold n0 and n1 now; the watch shows their locks, then the releases. */
    watch(0);
    watch(1);
    cr_assert_eq(vs_bindq_pod_keys(q), 2); /* ns/a, ns/b */
    release(0);
    release(1);
    cr_assert_eq(vs_bindq_pod_keys(q), 0);
}

Test(bindq, node_deleted_while_queued_leaves_at_once)
{
    hold(0, "other/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    start(&a);
    wait_waiting(1);
    vs_bindq_node_event(q, "n0", NULL, true, false);
    join(&a);
    cr_assert_eq(a.err, VS_ERR_NOTFOUND);
    cr_assert_str_eq(a.msg, "node n0 was deleted while the Bind waited for its lock");
}

Test(bindq, reservation_expired_while_queued_leaves)
{
    hold(0, "other/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    struct bind b = {.node = "n0", .uid = "u-b", .ns = "ns", .name = "b", .check_fails = true};
    start(&a);
    wait_waiting(1);
    start(&b);
    wait_waiting(2);
    vs_bindq_recheck(q);
    join(&b);
    cr_assert_eq(b.err, VS_ERR_CONFLICT);
    cr_assert_str_eq(b.msg, "reservation of ns/b expired");
    release(0);
    join(&a);
    cr_assert_eq(a.err, VS_OK);
}

Test(bindq, dead_owner_lock_is_broken_while_queued)
{
    hold(0, "gone/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    start(&a);
    wait_waiting(1);
    wait_tries(0, 1);
    pthread_mutex_lock(&api_mu);
    owner_dead[0] = true;
    pthread_mutex_unlock(&api_mu);
    /* No node event: the owner pod's deletion makes the head try again (and break the lock). */
    vs_bindq_pod_event(q, "u-x", "gone", "x", true);
    join(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    cr_assert_str_eq(owner[0], "ns/a");
    cr_assert_eq(atomic_load(&tries[0]), 2);
}

/* a holds node n's lock and b waits; a is seen allocated but its release never comes round.
 * With seen, the watch showed a's own lock first (the node filed under a as owner and holder);
 * without, no event of the node came (filed under a as holder only). */
static void allocated_holder_lets_the_next_try(int i, bool seen)
{
    char node[8];
    snprintf(node, sizeof(node), "n%d", i);
    struct bind a = {.node = node, .uid = "u-a", .ns = "ns", .name = "a"};
    bind_main(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    if (seen)
        watch(i);
    struct bind b = {.node = node, .uid = "u-b", .ns = "ns", .name = "b"};
    start(&b);
    wait_waiting(1);
    vs_bindq_pod_allocated(q, "ns", "other"); /* not the holder: nothing changes */
    cr_assert_eq(atomic_load(&tries[i]), 1);
    cr_assert_eq(vs_bindq_load(q, node), 2);
    pthread_mutex_lock(&api_mu);
    owner_dead[i] = true; /* a carries bind-phase=success: nodelock breaks its lock */
    pthread_mutex_unlock(&api_mu);
    vs_bindq_pod_allocated(q, "ns", "a");
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_str_eq(owner[i], "ns/b");
    cr_assert_eq(atomic_load(&tries[i]), 2);
    cr_assert_eq(vs_bindq_load(q, node), 1); /* a is no longer counted in flight */
    /* Filed under b as holder, and under a as the owner the watch last showed, if it showed one. */
    cr_assert_eq(vs_bindq_pod_keys(q), seen ? 2 : 1);
}

/* The device plugin allocated the holder but its release of the lock failed (API outage): the
 * watch never shows the release. With handoff_grace_ms 0 the head tries as soon as the holder is
 * seen allocated, and the owner rules (allocated owner: broken) free the node. */
Test(bindq, allocated_holder_whose_release_is_lost_lets_the_next_try)
{
    allocated_holder_lets_the_next_try(0, true);
}

/* The same before any event of the node showed the holder's lock: the holder is found by its
 * Bind, not by the lock. */
Test(bindq, allocated_holder_is_found_before_its_lock_is_seen)
{
    allocated_holder_lets_the_next_try(3, false);
}

Test(bindq, allocated_holder_hands_its_lock_over_as_seen)
{
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a", .use_at = true};
    bind_main(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    char *alock = vs_annot_format_lock(1767225600, "ns", "a");
    vs_bindq_node_event_rv(q, "n0", alock, "7", false, false); /* a's own lock, version 7 */
    struct bind b = {.node = "n0", .uid = "u-b", .ns = "ns", .name = "b", .use_at = true};
    struct bind c = {.node = "n0", .uid = "u-c", .ns = "ns", .name = "c", .use_at = true};
    start(&b);
    wait_waiting(1);
    start(&c);
    wait_waiting(2);
    cr_assert_eq(atomic_load(&at_tries[0]), 1); /* a's, before any event of n0 */
    vs_bindq_pod_allocated(q, "ns", "other");   /* not the owner: nothing moves */
    cr_assert_eq(atomic_load(&at_tries[0]), 1);
    /* a's device plugin wrote bind-phase=success; its release has not come round: b replaces
     * a's lock as the watch showed it, c keeps waiting behind b. */
    vs_bindq_pod_allocated(q, "ns", "a");
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_str_eq(owner[0], "ns/b");
    cr_assert_eq(atomic_load(&at_tries[0]), 2);
    cr_assert_str_eq(at_seen[0], alock);
    free(alock);
    cr_assert_eq(atomic_load(&tries[0]), 0); /* no read-and-break path */
    cr_assert_eq(vs_bindq_waiting(q), 1);
    cr_assert_eq(vs_bindq_load(q, "n0"), 2); /* b and c; a is no longer in flight */
    /* a's release arriving now (an event still showing a's lock, then none) changes nothing
     * for c: the lock is b's until b is seen allocated or released. */
    vs_bindq_node_event_rv(q, "n0", NULL, "8", false, false);
    cr_assert_eq(atomic_load(&at_tries[0]), 2);
    char *block = vs_annot_format_lock(1767225600, "ns", "b");
    vs_bindq_node_event_rv(q, "n0", block, "9", false, false);
    cr_assert_eq(atomic_load(&at_tries[0]), 2);
    vs_bindq_pod_allocated(q, "ns", "b");
    join(&c);
    cr_assert_eq(c.err, VS_OK, "%s", c.msg);
    cr_assert_str_eq(owner[0], "ns/c");
    cr_assert_str_eq(at_seen[0], block);
    free(block);
    cr_assert_str_eq(order[0], "a");
    cr_assert_str_eq(order[1], "b");
    cr_assert_str_eq(order[2], "c");
}

/* owner_done of node n in vs_bindq_nodes' view; -1 when the node is not listed. */
static int view_done(const char *node)
{
    struct vs_bindq_node_view *v = NULL;
    size_t n = vs_bindq_nodes(q, &v);
    int done = -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].node, node) == 0)
            done = v[i].owner_done;
    vs_bindq_nodes_free(v, n);
    return done;
}

/* Several nodes locked at once: an allocated pod wakes only the node its lock is on, and a node
 * whose lock went away is no longer looked at. */
Test(bindq, allocated_owner_wakes_only_its_node)
{
    hold(0, "ns/x");
    watch(0);
    hold(1, "ns/y");
    watch(1);
    hold(2, "ns/z");
    watch(2);
    struct bind b = {.node = "n1", .uid = "u-b", .ns = "ns", .name = "b"};
    start(&b);
    wait_waiting(1);
    wait_tries(1, 1);
    pthread_mutex_lock(&api_mu);
    owner_dead[1] = true; /* y carries bind-phase=success: nodelock breaks its lock */
    pthread_mutex_unlock(&api_mu);
    vs_bindq_pod_allocated(q, "ns", "x"); /* n0's owner: b does not try again */
    vs_bindq_pod_allocated(q, "ns", "z");
    release(2);
    vs_bindq_pod_allocated(q, "ns", "z"); /* n2 unlocked now: nothing to wake */
    /* n1 is woken only with its owner marked done (then b tries again, below): not yet. */
    cr_assert_eq(view_done("n0"), 1);
    cr_assert_eq(view_done("n1"), 0);
    cr_assert_eq(view_done("n2"), -1);
    cr_assert_eq(atomic_load(&tries[1]), 1);
    cr_assert_eq(vs_bindq_waiting(q), 1);
    vs_bindq_pod_allocated(q, "ns", "y");
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_str_eq(owner[1], "ns/b");
    cr_assert_eq(atomic_load(&tries[1]), 2);
    cr_assert_str_eq(owner[0], "ns/x");
}

/* vs_bindq_pod_allocated finds the nodes by pod: every node whose lock the pod owns (two here,
 * one a lock an earlier Bind left behind) and no other; a node whose lock changed hands is found
 * under the new owner only, and one whose lock went away under nobody. */
Test(bindq, allocated_owner_is_found_on_every_node_it_locks)
{
    hold(0, "ns/x");
    watch(0);
    hold(1, "ns/x");
    watch(1);
    hold(2, "ns/y");
    watch(2);
    cr_assert_eq(vs_bindq_pod_keys(q), 2);
    vs_bindq_pod_allocated(q, "ns", "x");
    cr_assert_eq(view_done("n0"), 1);
    cr_assert_eq(view_done("n1"), 1);
    cr_assert_eq(view_done("n2"), 0);
    release(0);
    hold(0, "ns/w");
    watch(0);
    cr_assert_eq(view_done("n0"), 0); /* a new owner starts not done */
    vs_bindq_pod_allocated(q, "ns", "x");
    cr_assert_eq(view_done("n0"), 0);
    vs_bindq_pod_allocated(q, "ns", "w");
    cr_assert_eq(view_done("n0"), 1);
    release(2);
    cr_assert_eq(view_done("n2"), -1);
    vs_bindq_pod_allocated(q, "ns", "y"); /* n2 is no longer filed under y */
    cr_assert_eq(view_done("n2"), -1);
    cr_assert_eq(view_done("n1"), 1);
    cr_assert_eq(vs_bindq_pod_keys(q), 2); /* x (n1) and w (n0) */
    release(0);
    release(1);
    cr_assert_eq(vs_bindq_pod_keys(q), 0);
}

Test(bindq, shutdown_fails_waiters_and_later_binds)
{
    hold(0, "other/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    struct bind b = {.node = "n1", .uid = "u-b", .ns = "ns", .name = "b"};
    hold(1, "other/y");
    watch(1);
    start(&a);
    start(&b);
    wait_waiting(2);
    vs_bindq_close(q, "vgpu-sched is shutting down");
    join(&a);
    join(&b);
    cr_assert_str_eq(a.msg, "vgpu-sched is shutting down");
    cr_assert_str_eq(b.msg, "vgpu-sched is shutting down");
    struct bind c = {.node = "n2", .uid = "u-c", .ns = "ns", .name = "c"};
    bind_main(&c);
    cr_assert_str_eq(c.msg, "vgpu-sched is shutting down");
    cr_assert_eq(atomic_load(&tries[2]), 0);
    vs_bindq_open(q);
    bind_main(&c);
    cr_assert_eq(c.err, VS_OK, "%s", c.msg);
}

Test(bindq, fail_all_keeps_the_queue_open)
{
    hold(0, "other/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    start(&a);
    wait_waiting(1);
    vs_bindq_fail_all(q, "this vgpu-sched replica lost leadership");
    join(&a);
    cr_assert_str_eq(a.msg, "this vgpu-sched replica lost leadership");
    release(0);
    bind_main(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
}

Test(bindq, busy_nodes_by_depth)
{
    char **names;
    cr_assert_eq(vs_bindq_busy(q, &names, NULL), 0);
    cr_assert_null(names);
    vs_bindq_expect(q, "n1", "u1", false);
    cr_assert_eq(vs_bindq_busy(q, &names, NULL), 0);
    vs_bindq_expect(q, "n1", "u2", false);
    vs_bindq_expect(q, "n0", "u3", false);
    vs_bindq_expect(q, "n0", "u4", false);
    vs_bindq_expect(q, "n0", "u4", false); /* the same pod again counts once */
    cr_assert_eq(vs_bindq_load(q, "n0"), 2);
    cr_assert_eq(vs_bindq_busy(q, &names, NULL), 2);
    cr_assert_str_eq(names[0], "n0");
    cr_assert_str_eq(names[1], "n1");
    free(names);
    vs_bindq_expect(q, "n2", "u2", false); /* filtered again, elsewhere: moves */
    cr_assert_eq(vs_bindq_load(q, "n1"), 1);
    vs_bindq_forget(q, "u3");
    vs_bindq_pod_event(q, "u4", "ns", "p4", true);
    cr_assert_eq(vs_bindq_load(q, "n0"), 0);
    cr_assert_eq(vs_bindq_busy(q, &names, NULL), 0);
}

/* The busy set stays sorted while nodes join and leave it in any order (each Filter copies it
 * as it is). */
Test(bindq, busy_nodes_stay_sorted_as_they_come_and_go)
{
    vs_bindq_free(q);
    setup_q(1000, 1);
    char node[16], uid[16];
    for (int i = 0; i < 64; i++) { /* 37 is coprime with 64: every node once, out of order */
        snprintf(node, sizeof(node), "n%02d", (i * 37) % 64);
        snprintf(uid, sizeof(uid), "u%02d", (i * 37) % 64);
        vs_bindq_expect(q, node, uid, false);
    }
    for (int i = 0; i < 64; i += 3) { /* n00, n03, ... leave */
        snprintf(uid, sizeof(uid), "u%02d", i);
        vs_bindq_forget(q, uid);
    }
    char **names;
    unsigned *ranks;
    cr_assert_eq(vs_bindq_busy(q, &names, &ranks), 42);
    for (int i = 0, k = 0; i < 64; i++) {
        if (i % 3 == 0)
            continue;
        snprintf(node, sizeof(node), "n%02d", i);
        cr_assert_str_eq(names[k], node, "position %d", k);
        cr_assert_eq(ranks[k], 1);
        k++;
    }
    free(names);
    vs_bindq_expect(q, "n03", "u03", false); /* back in the middle */
    cr_assert_eq(vs_bindq_busy(q, &names, NULL), 43);
    cr_assert_str_eq(names[0], "n01");
    cr_assert_str_eq(names[1], "n02");
    cr_assert_str_eq(names[2], "n03");
    cr_assert_str_eq(names[3], "n04");
    free(names);
}

/* Pods taking whole cards on their way: counted while expected, whatever moves or drops them;
 * a Bind's own entry keeps what its Filter recorded. */
Test(bindq, whole_card_pods_on_their_way_are_counted)
{
    cr_assert_eq(vs_bindq_whole(q), 0);
    vs_bindq_expect(q, "n1", "w1", true);
    vs_bindq_expect(q, "n1", "s1", false);
    vs_bindq_expect(q, "n2", "w2", true);
    cr_assert_eq(vs_bindq_whole(q), 2);
    vs_bindq_expect(q, "n0", "w2", true); /* moved: still one */
    cr_assert_eq(vs_bindq_whole(q), 2);
    vs_bindq_expect(q, "n0", "w2", false); /* filtered again as a share */
    cr_assert_eq(vs_bindq_whole(q), 1);
    vs_bindq_expect(q, "n1", "s1", true);
    cr_assert_eq(vs_bindq_whole(q), 2);
    vs_bindq_forget(q, "w1");
    vs_bindq_pod_event(q, "s1", "ns", "s1", true);
    cr_assert_eq(vs_bindq_whole(q), 0);
    /* A Bind keeps its Filter's record, and its end (its release seen) drops it. */
    vs_bindq_expect(q, "n0", "u-a", true);
    hold(0, "other/x");
    watch(0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    start(&a);
    wait_waiting(1);
    cr_assert_eq(vs_bindq_whole(q), 1);
    release(0);
    join(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    cr_assert_eq(vs_bindq_whole(q), 1); /* holding the lock: the allocation is not seen yet */
    vs_bindq_released(q, "n0", "u-a");
    cr_assert_eq(vs_bindq_whole(q), 0);
}

Test(bindq, depth_zero_never_busy)
{
    vs_bindq_free(q);
    setup_q(1000, 0);
    char **names;
    vs_bindq_expect(q, "n1", "u1", false);
    vs_bindq_expect(q, "n1", "u2", false);
    cr_assert_eq(vs_bindq_busy(q, &names, NULL), 0);
    cr_assert_null(names);
}

Test(bindq, saturated_nodes_rank_by_their_queue)
{
    /* wait_ms 10 s, depth 2, saturation 0.5: a node is saturated once its Binds times the
     * allocation time reach 5 s. No allocation time measured yet: every busy node ranks by
     * its layer, Binds / depth (n0 6 / 2, n1 3 / 2, n2 2 / 2). */
    vs_bindq_free(q);
    saturation = 0.5;
    setup_q(10000, 2);
    saturation = 0;
    char **names;
    unsigned *ranks;
    const char *plan[][2] = {{"n0", "a"}, {"n0", "b"}, {"n0", "c"}, {"n0", "d"},
                             {"n0", "e"}, {"n0", "f"}, {"n1", "g"}, {"n1", "h"},
                             {"n1", "i"}, {"n2", "j"}, {"n2", "k"}, {"n3", "l"}};
    for (size_t i = 0; i < sizeof(plan) / sizeof(plan[0]); i++)
        vs_bindq_expect(q, plan[i][0], plan[i][1], false);
    cr_assert_eq(vs_bindq_busy(q, &names, &ranks), 3);
    cr_assert_str_eq(names[0], "n0");
    cr_assert_str_eq(names[2], "n2");
    cr_assert_eq(ranks[0], 3);
    cr_assert_eq(ranks[1], 1);
    cr_assert_eq(ranks[2], 1);
    free(names);
    /* One allocation takes 1 s: saturated from 5 Binds (n0: 6 of them, rank SATURATED + 6). */
    vs_bindq_service_sample(q, 1.0);
    cr_assert_float_eq(vs_bindq_service_s(q), 1.0, 1e-12);
    cr_assert_eq(vs_bindq_busy(q, &names, &ranks), 3);
    cr_assert_str_eq(names[0], "n0");
    cr_assert_eq(ranks[0], VS_SCHED_RANK_SATURATED + 6);
    cr_assert_eq(ranks[1], 1);
    cr_assert_eq(ranks[2], 1);
    free(names);
    /* 3 s: the average moves by a quarter (1.5 s); saturated from ceil(5 / 1.5) = 4 Binds. */
    vs_bindq_service_sample(q, 3.0);
    cr_assert_float_eq(vs_bindq_service_s(q), 1.5, 1e-12);
    vs_bindq_expect(q, "n1", "m", false);
    cr_assert_eq(vs_bindq_busy(q, &names, &ranks), 3);
    cr_assert_str_eq(names[1], "n1");
    cr_assert_eq(ranks[0], VS_SCHED_RANK_SATURATED + 6);
    cr_assert_eq(ranks[1], VS_SCHED_RANK_SATURATED + 4);
    cr_assert_eq(ranks[2], 1);
    free(names);
    /* Slower than the budget allows even one Bind: never below depth (n2 with 2 stays busy). */
    for (int i = 0; i < 20; i++)
        vs_bindq_service_sample(q, 60.0);
    cr_assert_eq(vs_bindq_busy(q, &names, &ranks), 3);
    cr_assert_eq(ranks[2], VS_SCHED_RANK_SATURATED + 2);
    free(names);
    /* Saturation off (the default): layers only. */
    vs_bindq_free(q);
    setup_q(10000, 2);
    for (size_t i = 0; i < sizeof(plan) / sizeof(plan[0]); i++)
        vs_bindq_expect(q, plan[i][0], plan[i][1], false);
    vs_bindq_service_sample(q, 60.0);
    cr_assert_eq(vs_bindq_busy(q, &names, &ranks), 3);
    cr_assert_eq(ranks[0], 3);
    cr_assert_eq(ranks[1], 1);
    cr_assert_eq(ranks[2], 1);
    free(names);
}

Test(bindq, allocation_time_is_measured_between_back_to_back_takes)
{
    /* b queues while a holds n0's lock: from a's take to b's is one allocation on n0. A Bind
     * that finds the node free (c, after b's release) measures nothing. */
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    bind_main(&a);
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    watch(0);
    struct bind b = {.node = "n0", .uid = "u-b", .ns = "ns", .name = "b"};
    start(&b);
    wait_waiting(1);
    cr_assert_float_eq(vs_bindq_service_s(q), 0.0, 1e-12);
    usleep(200 * 1000);
    release(0);
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    double s = vs_bindq_service_s(q);
    cr_assert(s >= 0.2 && s < 30.0, "%f", s);
    watch(0);
    release(0);
    struct bind c = {.node = "n0", .uid = "u-c", .ns = "ns", .name = "c"};
    bind_main(&c);
    cr_assert_eq(c.err, VS_OK, "%s", c.msg);
    cr_assert_float_eq(vs_bindq_service_s(q), s, 1e-12);
}

static atomic_int idles; /* on_idle calls */

static void count_idle(void *ctx)
{
    cr_assert_eq(ctx, &idles);
    atomic_fetch_add(&idles, 1);
}

Test(bindq, active_counts_waiting_and_holding_binds_and_reports_idle)
{
    vs_bindq_free(q);
    atomic_store(&idles, 0);
    struct vs_bindq_opts o = {.wait_ms = 600000,
                              .depth = 2,
                              .expect_ttl_s = 300,
                              .on_idle = count_idle,
                              .idle_ctx = &idles};
    q = vs_bindq_new(&o);
    cr_assert_not_null(q);
    cr_assert_eq(vs_bindq_active(q), 0);
    struct bind a = {.node = "n0", .uid = "u-a", .ns = "ns", .name = "a"};
    bind_main(&a); /* a holds n0 */
    cr_assert_eq(a.err, VS_OK, "%s", a.msg);
    cr_assert_eq(vs_bindq_active(q), 1);
    struct bind b = {.node = "n0", .uid = "u-b", .ns = "ns", .name = "b"};
    start(&b);
    wait_waiting(1);
    cr_assert_eq(vs_bindq_active(q), 2); /* a holds, b waits */
    watch(0);
    release(0); /* a's release seen: b takes the lock */
    join(&b);
    cr_assert_eq(b.err, VS_OK, "%s", b.msg);
    cr_assert_eq(vs_bindq_active(q), 1);
    cr_assert_eq(atomic_load(&idles), 0); /* never idle on the way */
    pthread_mutex_lock(&api_mu);
    owner[0][0] = '\0'; /* b's Bind failed and released the lock itself */
    pthread_mutex_unlock(&api_mu);
    vs_bindq_released(q, "n0", "u-b");
    cr_assert_eq(vs_bindq_active(q), 0);
    cr_assert_eq(atomic_load(&idles), 1);
    vs_bindq_released(q, "n0", "u-b"); /* again: nothing held, no second report */
    cr_assert_eq(atomic_load(&idles), 1);
}
