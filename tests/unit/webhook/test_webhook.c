/* test_webhook: the mutating webhook against golden AdmissionReviews (tests/data/webhook/): each
 * <case>.json is a request body, <case>.expect.json its options and the exact expected answer (HTTP
 * status, verdict, status object, and the decoded JSON patch, compared op for op). Every emitted
 * patch is also applied with a strict RFC 6902 applier to prove it applies. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "devcfg_yaml.h"
#include "jsonpatch.h"
#include "testutil.h"
#include "webhook.h"

#define DATA "tests/data/webhook/"

static const char *const cases[] = {
    "vendor-dcu-routed",
    "vendor-dcu-requests-only",
    "vendor-dcu-bad-quantity",
    "a6-16-gpu-only-v1beta1",
    "a6-16-gpu-only-v1",
    "a6-17-pct50",
    "a6-17-mem8192",
    "a6-18-node-assigned",
    "a6-19-different-scheduler",
    "gate-already-ours",
    "gate-no-scheduler-name",
    "gate-null-scheduler-name",
    "gate-no-force",
    "gate-no-force-empty-name",
    "gate-flag-empty",
    "gate-flag-empty-custom",
    "gate-cpu-pod",
    "exclusive-pct100",
    "exclusive-pct0",
    "exclusive-cores70",
    "exclusive-cores-in-requests",
    "exclusive-count-in-requests",
    "exclusive-no-memory-name",
    "default-count-mem",
    "default-count-cores",
    "default-count-pct100",
    "default-count-requests-only",
    "default-gpu-num-0",
    "default-gpu-num-2",
    "pct-invalid-150",
    "pct-invalid-fraction-requests",
    "pct-invalid-init",
    "priority-env-create",
    "priority-env-append",
    "core-policy-force",
    "core-policy-disable-cpu-pod",
    "priority-and-policy",
    "overwrite-env",
    "overwrite-env-cpu-pod",
    "runtime-class",
    "runtime-class-present",
    "runtime-class-empty",
    "runtime-class-cpu-pod",
    "init-containers",
    "init-only-gpu",
    "privileged-gpu",
    "privileged-init-sidecar",
    "privileged-cpu-pod",
    "privileged-false",
    "no-containers",
    "no-containers-other-scheduler",
    "generate-name",
    "no-metadata",
    "multi-container-escaping",
    "quota-mem-exceeded",
    "quota-mem-fits",
    "quota-other-namespace",
    "quota-cores-exceeded",
    "quota-cores-zero-limit",
    "quota-init-max-fits",
    "quota-init-max-exceeded",
    "quota-app-sum-cores",
    "quota-percentage-counts-zero",
    "quota-memory-factor",
    "quota-cpu-pod-over-quota",
    "bad-gpu-policy",
    "bad-gpu-policy-list",
    "bad-node-policy",
    "bad-scoring-weights",
    "good-policies-mixed-case",
    "bad-policy-cpu-pod",
    "bad-policy-gpu-zero",
    "bad-quantity-mem-gi",
    "bad-quantity-gpu-fraction",
    "bad-quantity-defaulted-count",
    "bad-quantity-cores",
    "bad-quantity-before-policy",
    "cores-over-100-allowed",
    "non-create-update",
    "non-pod-binding",
    "non-pod-kind",
    "object-missing",
    "object-not-object",
    "object-bad-containers",
    "object-bad-limit",
    "malformed-not-json",
    "malformed-truncated",
    "malformed-array",
    "malformed-kind",
    "malformed-no-kind",
    "malformed-api-version",
    "malformed-no-api-version",
    "malformed-no-request",
    "malformed-request-null",
    "malformed-no-uid",
    "malformed-empty-uid",
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* The fake quota store: one namespace with the quota of the case's "quota" option, on NVIDIA
 * (the only backend the cases ask for). */
struct fake_quota {
    const char *ns;
    struct vs_webhook_quota q;
    int calls;
};

static bool fake_quota_cb(void *ctx, const char *ns, uint16_t dev, struct vs_webhook_quota *q)
{
    struct fake_quota *f = ctx;
    f->calls++;
    (void)dev;
    if (strcmp(ns, f->ns) != 0)
        return false;
    *q = f->q;
    return true;
}

static json_t *load_json(const char *path)
{
    json_error_t je;
    json_t *v = json_load_file(path, 0, &je);
    cr_assert_not_null(v, "%s: %s (line %d)", path, je.text, je.line);
    return v;
}

static char *show(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    cr_assert_not_null(s);
    return s;
}

static int64_t opt_int(const json_t *o, const char *key, bool *has)
{
    json_t *v = json_object_get(o, key);
    if (has)
        *has = v != NULL;
    return v ? json_integer_value(v) : 0;
}

/* Builds the handler options of a case: the flags' defaults (--scheduler-name=hami-scheduler as the
 * chart sets it, forcing on), HAMi's device-config defaults, overridden by "opts". */
static void case_opts(const json_t *opts, struct vs_webhook_opts *o, struct vs_devcfg *cfg,
                      struct fake_quota *fq)
{
    const json_t *v;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_devcfg_init(cfg), VS_OK);
    memset(o, 0, sizeof(*o));
    memset(fq, 0, sizeof(*fq));
    o->scheduler_name = "hami-scheduler";
    o->force_overwrite_default = true;
    o->cfg = cfg;
    if ((v = json_object_get(opts, "schedulerName")))
        o->scheduler_name = json_string_value(v);
    if ((v = json_object_get(opts, "forceOverwriteDefault")))
        o->force_overwrite_default = json_is_true(v);
    if ((v = json_object_get(opts, "deviceConfig"))) {
        const char *y = json_string_value(v);
        cr_assert_eq(vs_devcfg_load_buf(cfg, y, strlen(y), "opts", &eb), VS_OK, "%s", eb.msg);
    }
    if ((v = json_object_get(opts, "quota"))) {
        fq->ns = json_string_value(json_object_get(v, "namespace"));
        fq->q.mem_limit = opt_int(v, "memLimit", &fq->q.has_mem);
        fq->q.mem_used = opt_int(v, "memUsed", NULL);
        fq->q.cores_limit = opt_int(v, "coresLimit", &fq->q.has_cores);
        fq->q.cores_used = opt_int(v, "coresUsed", NULL);
        o->quota = fake_quota_cb;
        o->quota_ctx = fq;
    }
}

/* Replaces response.patch (base64) by the decoded patch document and returns it (borrowed). */
static json_t *decode_patch(json_t *rsp)
{
    json_t *p = json_object_get(rsp, "patch");
    size_t n;
    json_error_t je;

    if (!p)
        return NULL;
    cr_assert(json_is_string(p), "patch is not a string");
    char *text = tjp_b64_decode(json_string_value(p), &n);
    cr_assert_not_null(text, "patch is not canonical base64: %s", json_string_value(p));
    json_t *doc = json_loadb(text, n, 0, &je);
    cr_assert_not_null(doc, "patch is not JSON: %s", text);
    free(text);
    json_object_set_new(rsp, "patch", doc);
    return doc;
}

static void run_case(const char *name)
{
    char path[256];
    size_t len;
    struct vs_webhook_opts o;
    struct vs_devcfg cfg;
    struct fake_quota fq;
    char *resp = NULL;

    snprintf(path, sizeof(path), DATA "%s.json", name);
    char *body = vs_test_read_file(path, &len);
    cr_assert_not_null(body, "cannot read %s", path);
    snprintf(path, sizeof(path), DATA "%s.expect.json", name);
    json_t *exp = load_json(path);
    case_opts(json_object_get(exp, "opts"), &o, &cfg, &fq);

    int http = vs_webhook_handle(&o, body, len, &resp);
    cr_assert_not_null(resp);
    cr_assert_eq(http, json_integer_value(json_object_get(exp, "http")), "%s: HTTP %d: %s", name,
                 http, resp);
    json_error_t je;
    json_t *got = json_loads(resp, 0, &je);
    cr_assert_not_null(got, "%s: response is not JSON: %s", name, resp);

    json_t *want;
    if (http != 200) {
        want = json_incref(json_object_get(exp, "body"));
    } else {
        /* The expected AdmissionReview, echoing the request's apiVersion and uid. */
        json_t *req = json_loadb(body, len, 0, NULL);
        cr_assert_not_null(req);
        json_t *r = json_object();
        json_object_set(r, "uid", json_object_get(json_object_get(req, "request"), "uid"));
        json_object_set(r, "allowed", json_object_get(exp, "allowed"));
        if (json_object_get(exp, "patch")) {
            json_object_set_new(r, "patchType", json_string("JSONPatch"));
            json_object_set(r, "patch", json_object_get(exp, "patch"));
        }
        json_object_set(r, "status", json_object_get(exp, "status"));
        want = json_object();
        json_object_set(want, "apiVersion", json_object_get(req, "apiVersion"));
        json_object_set_new(want, "kind", json_string("AdmissionReview"));
        json_object_set_new(want, "response", r);

        json_t *patch = decode_patch(json_object_get(got, "response"));
        if (patch) {
            /* The patch must apply, exactly as the API server would apply it. */
            char err[256] = "";
            json_t *obj =
                json_deep_copy(json_object_get(json_object_get(req, "request"), "object"));
            cr_assert_eq(tjp_apply(obj, patch, err, sizeof(err)), 0, "%s: %s", name, err);
            json_decref(obj);
        }
        json_decref(req);
    }
    char *gs = show(got), *ws = show(want);
    cr_assert(json_equal(got, want), "%s:\n got: %s\nwant: %s", name, gs, ws);
    if (json_object_get(json_object_get(exp, "opts"), "quota") &&
        json_is_true(json_object_get(exp, "allowed")) == false)
        cr_assert_gt(fq.calls, 0, "%s: quota callback never called", name);
    free(gs);
    free(ws);
    json_decref(got);
    json_decref(want);
    json_decref(exp);
    free(resp);
    free(body);
    vs_devcfg_cleanup(&cfg);
}

/* Parameters are indices, not pointers: Criterion runs each test in a re-executed process where a
 * position-independent binary sits at another address, so a pointer taken in the parent (e.g. to a
 * string literal) would dangle there. */
ParameterizedTestParameters(webhook, golden)
{
    static size_t idx[N_CASES];
    for (size_t i = 0; i < N_CASES; i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, N_CASES);
}

ParameterizedTest(size_t *i, webhook, golden)
{
    run_case(cases[*i]);
}

/* Every request file under tests/data/webhook has a case entry, so none is silently skipped. */
Test(webhook, every_golden_file_is_listed)
{
    DIR *d = opendir(DATA);
    struct dirent *e;
    size_t files = 0;
    cr_assert_not_null(d);
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".json") != 0 ||
            (n > 12 && strcmp(e->d_name + n - 12, ".expect.json") == 0))
            continue;
        bool listed = false;
        for (size_t i = 0; i < N_CASES && !listed; i++)
            listed = strlen(cases[i]) == n - 5 && strncmp(cases[i], e->d_name, n - 5) == 0;
        cr_assert(listed, "%s is not listed in cases[]", e->d_name);
        files++;
    }
    closedir(d);
    cr_assert_eq(files, N_CASES);
}

static int handle_text(const struct vs_webhook_opts *o, const char *body, char **resp)
{
    return vs_webhook_handle(o, body, strlen(body), resp);
}

static struct vs_devcfg default_cfg;

static void cfg_setup(void)
{
    cr_assert_eq(vs_devcfg_init(&default_cfg), VS_OK);
}

static void cfg_teardown(void)
{
    vs_devcfg_cleanup(&default_cfg);
}

/* The spec's example (hami-compat.md §7), byte for byte: compact JSON, standard base64. */
Test(webhook, spec_example_bytes, .init = cfg_setup, .fini = cfg_teardown)
{
    struct vs_webhook_opts o = {
        .scheduler_name = "hami-scheduler", .force_overwrite_default = true, .cfg = &default_cfg};
    char *resp;
    size_t len;
    char *body = vs_test_read_file(DATA "a6-16-gpu-only-v1beta1.json", &len);
    cr_assert_not_null(body);
    cr_assert_eq(vs_webhook_handle(&o, body, len, &resp), 200);
    cr_assert_str_eq(resp, "{\"apiVersion\":\"admission.k8s.io/"
                           "v1beta1\",\"kind\":\"AdmissionReview\",\"response\":{"
                           "\"uid\":\"uid-a6-16-gpu-only-v1beta1\",\"allowed\":"
                           "true,\"patchType\":\"JSONPatch\","
                           "\"patch\":"
                           "\"W3sib3AiOiJhZGQiLCJwYXRoIjoiL3NwZWMvY29udGFpbmVycy8"
                           "wL3Jlc291cmNlcy9saW1pdHMvbn"
                           "ZpZGlhLmNvbX4xZ3B1Y29yZXMiLCJ2YWx1ZSI6IjEwMCJ9LHsib3A"
                           "iOiJyZXBsYWNlIiwicGF0aCI6Ii9zcGVjL3"
                           "NjaGVkdWxlck5hbWUiLCJ2YWx1ZSI6ImhhbWktc2NoZWR1bGVyIn1"
                           "d\",\"status\":{\"code\":200}}}");
    free(resp);
    free(body);
}

/* The body is read by length: bytes after len (no NUL from the wire) are never looked at. */
Test(webhook, body_bounded_by_length, .init = cfg_setup, .fini = cfg_teardown)
{
    struct vs_webhook_opts o = {
        .scheduler_name = "hami-scheduler", .force_overwrite_default = true, .cfg = &default_cfg};
    const char review[] = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                          "\"request\":{\"uid\":\"u1\",\"operation\":\"DELETE\"}}";
    size_t n = strlen(review);
    char *buf = malloc(n + 5);
    char *resp;
    cr_assert_not_null(buf);
    memcpy(buf, review, n);
    memcpy(buf + n, "junk", 4); /* no NUL terminator within len + 4 */
    buf[n + 4] = 'x';
    cr_assert_eq(vs_webhook_handle(&o, buf, n, &resp), 200);
    cr_assert_str_eq(resp,
                     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                     "\"response\":{\"uid\":\"u1\",\"allowed\":true,\"status\":{\"code\":200}}"
                     "}");
    free(resp);
    /* One byte short of the closing brace is not JSON. */
    cr_assert_eq(vs_webhook_handle(&o, buf, n - 1, &resp), 400);
    cr_assert_str_eq(resp, "{\"error\":\"invalid JSON: '}' expected near end of file at line 1 "
                           "column 104\"}");
    free(resp);
    free(buf);
}

Test(webhook, empty_body, .init = cfg_setup, .fini = cfg_teardown)
{
    struct vs_webhook_opts o = {.cfg = &default_cfg};
    char *resp;
    cr_assert_eq(vs_webhook_handle(&o, "", 0, &resp), 400);
    cr_assert_str_eq(resp, "{\"error\":\"invalid JSON: '[' or '{' expected near end of file at "
                           "line 1 column 0\"}");
    free(resp);
}

/* Without a device config the handler uses HAMi's defaults. */
Test(webhook, null_cfg_means_defaults)
{
    struct vs_webhook_opts o = {.scheduler_name = "hami-scheduler",
                                .force_overwrite_default = true};
    char *resp, *body = vs_test_read_file(DATA "a6-16-gpu-only-v1beta1.json", NULL);
    cr_assert_not_null(body);
    cr_assert_eq(handle_text(&o, body, &resp), 200);
    cr_assert_not_null(
        strstr(resp, "\"patch\":\"W3sib3AiOiJhZGQiLCJwYXRoIjoiL3NwZWMvY29udGFpbmVy"));
    free(resp);
    free(body);
}

/* The quota callback is asked for request.namespace, once, and only for GPU pods. */
Test(webhook, quota_callback_namespace, .init = cfg_setup, .fini = cfg_teardown)
{
    struct fake_quota fq = {.ns = "team-a", .q = {.has_mem = true, .mem_limit = 100}};
    struct vs_webhook_opts o = {.scheduler_name = "hami-scheduler",
                                .force_overwrite_default = true,
                                .cfg = &default_cfg,
                                .quota = fake_quota_cb,
                                .quota_ctx = &fq};
    const char *gpu = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"request\":{\"uid\":\"u\",\"namespace\":\"team-a\",\"operation\":"
                      "\"CREATE\","
                      "\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{"
                      "\"name\":"
                      "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/"
                      "gpumem\":\"101\"}}}]}}}}";
    const char *cpu = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"request\":{\"uid\":\"u\",\"namespace\":\"team-a\",\"operation\":"
                      "\"CREATE\","
                      "\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{"
                      "\"name\":"
                      "\"c\"}]}}}}";
    char *resp;
    cr_assert_eq(handle_text(&o, gpu, &resp), 200);
    cr_assert_not_null(strstr(resp, "\"message\":\"exceeding resource quota\""), "%s", resp);
    cr_assert_eq(fq.calls, 1);
    free(resp);
    cr_assert_eq(handle_text(&o, cpu, &resp), 200);
    cr_assert_eq(fq.calls, 1);
    free(resp);
}

/* Messages built from user text that the 512-byte error buffer cuts inside a UTF-8 sequence still
 * produce valid JSON (the non-ASCII bytes become '?'). */
Test(webhook, long_utf8_message, .init = cfg_setup, .fini = cfg_teardown)
{
    struct vs_webhook_opts o = {
        .scheduler_name = "hami-scheduler", .force_overwrite_default = true, .cfg = &default_cfg};
    char name[1200];
    size_t n = 0;
    while (n + 2 < 1100) {
        name[n++] = (char)0xc3; /* "é" */
        name[n++] = (char)0xa9;
    }
    name[n] = '\0';
    char *body = malloc(2048);
    cr_assert_not_null(body);
    snprintf(body, 2048,
             "{\"apiVersion\":\"admission.k8s.io/"
             "v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"u\",\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":{"
             "\"containers\":[{"
             "\"name\":\"%s\",\"resources\":{\"limits\":{\"nvidia.com/"
             "gpumem-percentage\":\"200\""
             "}}}]}}}}",
             name);
    char *resp;
    cr_assert_eq(handle_text(&o, body, &resp), 200);
    json_t *v = json_loads(resp, 0, NULL);
    cr_assert_not_null(v, "%s", resp);
    const char *msg = json_string_value(
        json_object_get(json_object_get(json_object_get(v, "response"), "status"), "message"));
    cr_assert_not_null(msg);
    cr_assert_eq(strncmp(msg, "invalid nvidia.com/gpumem-percentage value 200 in container ", 60),
                 0, "%s", msg);
    cr_assert_eq(strlen(msg), VS_ERRBUF_SIZE - 1);
    json_decref(v);
    free(resp);
    free(body);
}

/* The test helpers themselves: the decoder rejects non-canonical input and the applier refuses ops
 * that the API server would refuse (so the golden apply check can fail). */
Test(webhook, helpers_are_strict)
{
    size_t n;
    char *s = tjp_b64_decode("Zm9vYmE=", &n);
    cr_assert_str_eq(s, "fooba");
    cr_assert_eq(n, 5);
    free(s);
    cr_assert_null(tjp_b64_decode("Zm9vYmE", &n));
    cr_assert_null(tjp_b64_decode("Zm=vYmE=", &n));

    char err[128];
    json_t *doc = json_loads("{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}", 0, NULL);
    json_t *bad1 = json_loads("[{\"op\":\"add\",\"path\":\"/spec/containers/0/"
                              "resources/limits/x\",\"value\":\"1\"}]",
                              0, NULL);
    json_t *bad2 = json_loads(
        "[{\"op\":\"replace\",\"path\":\"/spec/schedulerName\",\"value\":\"x\"}]", 0, NULL);
    json_t *bad3 =
        json_loads("[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":1}]", 0, NULL);
    json_t *good = json_loads("[{\"op\":\"add\",\"path\":\"/spec/containers/0/a~1b~0c\",\"value\":"
                              "1},{\"op\":\"add\",\"path\":\"/spec/containers/-\",\"value\":2}]",
                              0, NULL);
    cr_assert_eq(tjp_apply(doc, bad1, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "op 0: /spec/containers/0/resources/limits/x: parent does not exist");
    cr_assert_eq(tjp_apply(doc, bad2, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "op 0: /spec/schedulerName: member does not exist");
    cr_assert_eq(tjp_apply(doc, bad3, err, sizeof(err)), -1);
    cr_assert_eq(tjp_apply(doc, good, err, sizeof(err)), 0);
    cr_assert_eq(json_integer_value(json_object_get(
                     json_array_get(json_object_get(json_object_get(doc, "spec"), "containers"), 0),
                     "a/b~c")),
                 1);
    json_decref(doc);
    json_decref(bad1);
    json_decref(bad2);
    json_decref(bad3);
    json_decref(good);
}

/* Fails the n-th jansson allocation and every one after it. */
static long alloc_budget;

static void *failing_malloc(size_t n)
{
    if (alloc_budget-- <= 0)
        return NULL;
    return malloc(n);
}

/* Every jansson allocation failing in turn: the handler answers 500 with no body, or a complete
 * answer; never a crash, a leak (ASan builds) or a half-built response. */
Test(webhook, jansson_allocation_failures, .init = cfg_setup, .fini = cfg_teardown)
{
    struct fake_quota fq = {.ns = "ml", .q = {.has_mem = true, .mem_limit = 1 << 30}};
    struct vs_webhook_opts o = {.scheduler_name = "hami-scheduler",
                                .force_overwrite_default = true,
                                .cfg = &default_cfg,
                                .quota = fake_quota_cb,
                                .quota_ctx = &fq};
    const char *files[] = {DATA "overwrite-env.json", DATA "bad-gpu-policy.json",
                           DATA "malformed-kind.json"};
    free(default_cfg.gpu_core_policy);
    default_cfg.gpu_core_policy = strdup("force");
    default_cfg.overwrite_env = true;
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        size_t len;
        char *body = vs_test_read_file(files[f], &len), *full = NULL, *resp;
        cr_assert_not_null(body);
        int want = vs_webhook_handle(&o, body, len, &full);
        cr_assert_not_null(full);
        long n;
        for (n = 0;; n++) {
            alloc_budget = n;
            json_set_alloc_funcs(failing_malloc, free);
            int http = vs_webhook_handle(&o, body, len, &resp);
            json_set_alloc_funcs(malloc, free);
            if (http == 500) {
                cr_assert_null(resp, "%s: budget %ld", files[f], n);
                continue;
            }
            cr_assert_eq(http, want, "%s: budget %ld", files[f], n);
            cr_assert_str_eq(resp, full, "%s: budget %ld", files[f], n);
            free(resp);
            /* A run that needed fewer than n allocations has seen every failure point. */
            if (alloc_budget >= 0)
                break;
        }
        cr_assert_gt(n, 10, "%s: only %ld allocations", files[f], n);
        free(full);
        free(body);
    }
}
