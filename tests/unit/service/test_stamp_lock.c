/* test_stamp_lock: a backend's own node lock (VS_LOCK_STAMP: Cambricon's cambricon.com/dsmlu.lock,
 * spec/hami-vendors.md §1.10) against the fake API, with the vectors of HAMi's
 * pkg/device/cambricon/device_test.go Test_LockNode: no lock -> locked; a lock taken 1 minute ago
 * -> "node <n> has been locked within 2 minutes"; 1 hour ago -> locked again; "invalid-format" ->
 * an error. Release removes the annotation. */
#include "annot.h"
#include "fakeapi.h"
#include "kube.h"
#include "nodelock.h"

#include <criterion/criterion.h>
#include <curl/curl.h>

#define KEY "cambricon.com/dsmlu.lock"

static struct vs_fakeapi *api;
static struct vs_kube *kube;

static void setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct vs_fakeapi_opts o = {.port = 0, .quiet = true, .bookmark_ms = 200};
    api = vs_fakeapi_start(&o);
    cr_assert_not_null(api);
    struct vs_kube_config kc = {0};
    kc.server = (char *)vs_fakeapi_url(api);
    struct vs_kube_opts ko = {.qps = 0, .burst = 0, .timeout_s = 10};
    struct vs_errbuf eb;
    kube = vs_kube_new(&kc, &ko, &eb);
    cr_assert_not_null(kube, "%s", eb.msg);
}

static void teardown(void)
{
    vs_kube_free(kube);
    vs_fakeapi_stop(api);
}

TestSuite(stamp_lock, .init = setup, .fini = teardown, .timeout = 60);

static int64_t fixed_now(void)
{
    return 2000000000;
}

/* A node whose lock annotation is `value` (NULL: none). */
static void put_node(const char *name, const char *value)
{
    json_t *n = json_pack("{s:s,s:{s:s,s:{}},s:{s:{s:s,s:s}}}", "kind", "Node", "metadata", "name",
                          name, "annotations", "status", "capacity", "cambricon.com/mlu.smlu.vcore",
                          "100", "cambricon.com/mlu.smlu.vmemory", "64");
    cr_assert_not_null(n);
    if (value)
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "annotations"), KEY,
                            json_string(value));
    char *j = json_dumps(n, JSON_COMPACT);
    json_decref(n);
    cr_assert_neq(vs_fakeapi_put(api, j), 0, "fake API refused %s", j);
    free(j);
}

/* The node's lock annotation now, "(none)" when absent. */
static const char *lock_of(const char *node)
{
    static char buf[256];
    json_t *n = vs_fakeapi_get(api, "Node", NULL, node);
    cr_assert_not_null(n);
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(n, "metadata"), "annotations"), KEY));
    snprintf(buf, sizeof(buf), "%s", v ? v : "(none)");
    json_decref(n);
    return buf;
}

static const char *stamp(int64_t t)
{
    static char buf[40];
    vs_annot_format_rfc3339(t, buf, sizeof(buf));
    return buf;
}

Test(stamp_lock, test_locknode_vectors)
{
    char minute[40], hour[40], now[40];
    snprintf(minute, sizeof(minute), "%s", stamp(fixed_now() - 60));
    snprintf(hour, sizeof(hour), "%s", stamp(fixed_now() - 3600));
    snprintf(now, sizeof(now), "%s", stamp(fixed_now()));
    put_node("free", NULL);
    put_node("recent", minute);
    put_node("old", hour);
    put_node("bad", "invalid-format");
    struct vs_nodelock *l = vs_nodelock_new(kube, 300, fixed_now);
    struct vs_errbuf eb;

    /* "node is not locked" */
    cr_assert_eq(vs_nodelock_stamp_acquire(l, "free", KEY, 120, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(lock_of("free"), now);
    /* "node is already locked within 2 minutes": refused, the lock left as it was */
    cr_assert_eq(vs_nodelock_stamp_acquire(l, "recent", KEY, 120, &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg, "node recent has been locked within 2 minutes");
    cr_assert_str_eq(lock_of("recent"), minute);
    /* "lock time expired (more than 2 minutes)": taken again */
    cr_assert_eq(vs_nodelock_stamp_acquire(l, "old", KEY, 120, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(lock_of("old"), now);
    /* "invalid lock time format" */
    cr_assert_eq(vs_nodelock_stamp_acquire(l, "bad", KEY, 120, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "node bad: invalid cambricon.com/dsmlu.lock \"invalid-format\": not "
                             "an RFC 3339 time");
    cr_assert_str_eq(lock_of("bad"), "invalid-format");
    /* The lock just taken holds against a second Bind. */
    cr_assert_eq(vs_nodelock_stamp_acquire(l, "free", KEY, 120, &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg, "node free has been locked within 2 minutes");

    /* Test_ReleaseNodeLock: removed when present, nothing to do when absent. */
    cr_assert_eq(vs_nodelock_stamp_release(l, "free", KEY, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(lock_of("free"), "(none)");
    unsigned patches = vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/free");
    cr_assert_eq(vs_nodelock_stamp_release(l, "free", KEY, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/free"), patches);
    /* An unknown node is the API's error. */
    cr_assert_neq(vs_nodelock_stamp_acquire(l, "ghost", KEY, 120, &eb), VS_OK);
    vs_nodelock_free(l);
}
