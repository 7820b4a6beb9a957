/* test_mthreads: the Moore Threads backend against spec/hami-vendors.md §2.6 and the vectors of
 * HAMi's pkg/device/mthreads/device_test.go (test names cited), with our deviations: a quantity
 * that is not acceptable is a pod-level error (design.md §4), a node without the capacity has no
 * Mthreads cards (no error). */
#include <criterion/criterion.h>

#include "admittest.h"
#include "devtest.h"

static struct dt t;

static void fini(void)
{
    dt_cleanup(&t);
}

#define NODE(name, cores, mem)                                                                     \
    "- apiVersion: v1\n  kind: Node\n  metadata: {name: " name "}\n  status:\n    capacity: "      \
    "{mthreads.com/sgpu-core: \"" cores "\", mthreads.com/sgpu-memory: \"" mem "\"}\n"

#define POD(name, limits)                                                                          \
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name   \
    "}\n  spec:\n    containers:\n    - name: c\n      resources:\n        limits: " limits "\n"

#define POD2(name, l0, l1)                                                                         \
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name   \
    "}\n  spec:\n    containers:\n    - name: c0\n      resources:\n        limits: " l0           \
    "\n    - name: c1\n      resources:\n        limits: " l1 "\n"

static void expect(const char *got, const char *want)
{
    cr_assert_str_eq(got, want);
    free((void *)got);
}

TestSuite(mthreads, .fini = fini);

/* Test_GetNodeDevices: memory 1, core 1 on node `test` -> one card of 8192 MiB (1 x 512 x 16 /
 * 1), count 100, 16 cores. HAMi's probe: core 32, memory 192 -> two cards of 49152 MiB. */
Test(mthreads, inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("test", "1", "1") NODE("n8", "32", "192") NODE("bad", "x", "1"));
    expect(dt_cards(&t, "test"), "test-mthreads-0,Mthreads,0,100,8192,16,0,true,");
    expect(dt_cards(&t, "n8"), "n8-mthreads-0,Mthreads,0,100,49152,16,0,true,; "
                               "n8-mthreads-1,Mthreads,1,100,49152,16,0,true,");
    expect(dt_cards(&t, "bad"), "error: invalid status.capacity[\"mthreads.com/sgpu-core\"] "
                                "\"x\": not a whole number between 0 and 16384");
}

/* Test_GenerateResourceRequests: vgpu 1, memory 1000, core 1 -> {1, 512000, 0, 1}; vgpu only
 * (in requests) -> {1, 0, 100, 0}. Several cards: the container's amounts are split. */
Test(mthreads, requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" POD("all", "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: 1000, "
                                      "mthreads.com/sgpu-core: 1}")
                    POD("two", "{mthreads.com/vgpu: 2, "
                               "mthreads.com/sgpu-memory: 192, "
                               "mthreads.com/sgpu-core: 32}") POD("zero", "{mthreads.com/vgpu: 0}")
                        POD("big", "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: "
                                   "4194304}") "- apiVersion: v1\n  kind: Pod\n  "
                                               "metadata: {name: req, namespace: "
                                               "default}\n  spec:\n    containers:\n    "
                                               "- name: c\n      resources:\n"
                                               "        requests: {mthreads.com/vgpu: "
                                               "1}\n");
    expect(dt_requests(&t, "all"), "Mthreads 1,512000,0,1");
    expect(dt_requests(&t, "req"), "Mthreads 1,0,100,0");
    expect(dt_requests(&t, "two"), "Mthreads 2,49152,0,16");
    expect(dt_requests(&t, "zero"), "-");
    expect(dt_requests(&t, "big"), "error: invalid mthreads.com/sgpu-memory \"4194304\" in "
                                   "container c: must be a whole number between 0 and 4194303");
}

/* Test_PatchAnnotations: only the allocated key, mthreads.com/gpu-index, the node (and the time,
 * left out here as simulate does). */
Test(mthreads, annotations)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("test", "16", "96")
                    POD("p", "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: 2, "
                             "mthreads.com/sgpu-core: 1}"));
    expect(dt_filter(&t, "p"),
           "test hami.io/mthreads-vgpu-devices-allocated=test-mthreads-0,Mthreads,1024,1:; "
           "mthreads.com/gpu-index=0 mthreads.com/predicate-node=test");
    /* The time is Unix nanoseconds when the caller gives one. */
    const struct vs_device *d = vs_devices_find(t.cfg.devices, "Mthreads");
    struct vs_pod_devs devs = {0};
    cr_assert_eq(vs_annot_parse_devices("k", "test-mthreads-0,Mthreads,1024,1:;", &devs, NULL),
                 VS_OK);
    json_t *out = json_object();
    cr_assert_eq(d->ops->annotate(d, dt_pod(&t, "p"), vs_model_node(t.m, "test"), &devs, NULL,
                                  1700000000123456789LL, out),
                 VS_OK);
    cr_assert_str_eq(json_string_value(json_object_get(out, "mthreads.com/predicate-time")),
                     "1700000000123456789");
    cr_assert_null(json_object_get(out, "hami.io/mthreads-vgpu-devices-to-allocate"));
    json_decref(out);
    vs_pod_devs_cleanup(&devs);
}

/* HAMi's probe (§2.6): two containers of vgpu 1, memory 8, core 4 on two cards of 49152 MiB ->
 * both on n8-mthreads-1 (the custom rule), gpu-index 1. */
Test(mthreads, probe_one_card_per_pod)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" NODE("n8", "32", "192") POD2(
                "p",
                "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: 8, mthreads.com/sgpu-core: 4}",
                "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: 8, mthreads.com/sgpu-core: "
                "4}"));
    expect(dt_filter(&t, "p"), "n8 hami.io/mthreads-vgpu-devices-allocated=n8-mthreads-1,Mthreads,"
                               "4096,4:;n8-mthreads-1,Mthreads,4096,4:; mthreads.com/gpu-index=1 "
                               "mthreads.com/predicate-node=n8");
}

/* Test_CustomFilterRule: the card of the earlier container is the only one allowed; when it is
 * full the other card answers CardNotFoundCustomFilterRule. */
Test(mthreads, custom_filter_rule)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" NODE("n", "32", "16") POD2(
                "p",
                "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: 6, mthreads.com/sgpu-core: 4}",
                "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: 4, mthreads.com/sgpu-core: "
                "4}"));
    expect(dt_filter(&t, "p"),
           "refused n: 1/2 CardInsufficientMemory, 1/2 CardNotFoundCustomFilterRule");
}

/* TestDevices_Fit: 16 cores per card, so a 16-core share fills the card's compute (a later
 * 0-core share: CardComputeUnitsExhausted) and F12 never applies; mthreads.ai/use-gpuuuid. */
Test(mthreads, fit)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(
        &t,
        "items:\n" NODE("n", "16", "96") POD(
            "full",
            "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: 2, mthreads.com/sgpu-core: 16}")
            POD("zero",
                "{mthreads.com/vgpu: 1, mthreads.com/sgpu-memory: 2}") "- apiVersion: v1\n  kind: "
                                                                       "Pod\n  metadata:\n    "
                                                                       "name: pick\n    namespace: "
                                                                       "default\n    annotations: "
                                                                       "{mthreads.ai/use-gpuuuid: "
                                                                       "other}\n  spec:\n    "
                                                                       "containers:\n    - name: "
                                                                       "c\n      resources:\n      "
                                                                       "  limits: "
                                                                       "{mthreads.com/vgpu: 1, "
                                                                       "mthreads.com/sgpu-memory: "
                                                                       "2}\n");
    expect(dt_filter(&t, "full"),
           "n hami.io/mthreads-vgpu-devices-allocated=n-mthreads-0,Mthreads,"
           "1024,16:; mthreads.com/gpu-index=0 mthreads.com/predicate-node=n");
    expect(dt_filter(&t, "zero"), "refused n: 1/1 CardComputeUnitsExhausted");
    expect(dt_filter(&t, "pick"), "refused n: 1/1 CardUuidMismatch");
}

static char *admit_limits(const char *res)
{
    char pod[1024];
    snprintf(pod, sizeof(pod),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
             "\"default\"},\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":%s}]}}",
             res);
    return at_admit(&t.cfg, pod);
}

/* Test_MutateAdmission: more than one card -> whole cards (16 cores, 96 units each) and
 * mthreads.com/request-gpu-num; one card without memory -> a whole card; a memory outside the
 * sGPU sizes, a count of 0 or below -> denied; no count -> not found. */
Test(mthreads, admission)
{
    cr_assert(dt_init(&t, NULL, false, false));
    expect(admit_limits("{\"limits\":{\"mthreads.com/vgpu\":\"2\",\"mthreads.com/sgpu-memory\":"
                        "\"2\",\"mthreads.com/sgpu-core\":\"1\"}}"),
           "allowed | add /spec/containers/0/resources/limits/mthreads.com~1sgpu-core \"32\" | add "
           "/spec/containers/0/resources/limits/mthreads.com~1sgpu-memory \"192\" | add "
           "/metadata/annotations {} | add /metadata/annotations/mthreads.com~1request-gpu-num "
           "\"2\" | "
           "add "
           "/spec/schedulerName \"hami-scheduler\"");
    /* "count over one requested without limits": the limits are made. */
    expect(admit_limits("{\"requests\":{\"mthreads.com/vgpu\":\"2\"}}"),
           "allowed | add /spec/containers/0/resources/limits {} | add "
           "/spec/containers/0/resources/limits/mthreads.com~1sgpu-core \"32\" | add "
           "/spec/containers/0/resources/limits/mthreads.com~1sgpu-memory \"192\" | add "
           "/metadata/annotations {} | add /metadata/annotations/mthreads.com~1request-gpu-num "
           "\"2\" | "
           "add "
           "/spec/schedulerName \"hami-scheduler\"");
    /* "count one requested without limits": a whole card, limits made. */
    expect(admit_limits("{\"requests\":{\"mthreads.com/vgpu\":\"1\"}}"),
           "allowed | add /spec/containers/0/resources/limits {} | add "
           "/spec/containers/0/resources/limits/mthreads.com~1sgpu-core \"16\" | add "
           "/spec/containers/0/resources/limits/mthreads.com~1sgpu-memory \"96\" | add "
           "/spec/schedulerName \"hami-scheduler\"");
    /* "don't set to memory limit": a whole card. */
    expect(admit_limits("{\"limits\":{\"mthreads.com/vgpu\":\"1\",\"mthreads.com/sgpu-core\":"
                        "\"1\"}}"),
           "allowed | add /spec/containers/0/resources/limits/mthreads.com~1sgpu-core \"16\" | add "
           "/spec/containers/0/resources/limits/mthreads.com~1sgpu-memory \"96\" | add "
           "/spec/schedulerName \"hami-scheduler\"");
    /* "set to resources limit" with one card and a valid size: no change. */
    expect(admit_limits("{\"limits\":{\"mthreads.com/vgpu\":\"1\",\"mthreads.com/sgpu-memory\":"
                        "\"2\",\"mthreads.com/sgpu-core\":\"1\"}}"),
           "allowed | add /spec/schedulerName \"hami-scheduler\"");
    /* "don't set to count limit": not ours. */
    expect(
        admit_limits("{\"limits\":{\"mthreads.com/sgpu-memory\":\"2\",\"mthreads.com/sgpu-core\":"
                     "\"1\"}}"),
        "allowed");
    /* "memory no exist legalMemoryslices" */
    expect(admit_limits("{\"limits\":{\"mthreads.com/vgpu\":\"1\",\"mthreads.com/sgpu-memory\":"
                        "\"3\",\"mthreads.com/sgpu-core\":\"1\"}}"),
           "denied 500: sGPU memory request value is invalid, valid values are [2, 4, 8, 16, 32, "
           "64, 96]");
    /* "count set to zero / negative is rejected", also in requests only. */
    expect(admit_limits("{\"limits\":{\"mthreads.com/vgpu\":\"0\",\"mthreads.com/sgpu-memory\":"
                        "\"2\"}}"),
           "denied 500: mthreads.com/vgpu must be greater than 0");
    expect(admit_limits("{\"limits\":{\"mthreads.com/vgpu\":\"-1\"}}"),
           "denied 500: mthreads.com/vgpu must be greater than 0");
    expect(admit_limits("{\"requests\":{\"mthreads.com/vgpu\":\"0\"}}"),
           "denied 500: mthreads.com/vgpu must be greater than 0");
}

/* No lock, only the count managed, no to-allocate key, quota memory factor 512. */
Test(mthreads, wiring)
{
    cr_assert(dt_init(&t, NULL, false, false));
    const struct vs_device *d = vs_devices_find(t.cfg.devices, "Mthreads");
    cr_assert_not_null(d);
    cr_assert_eq(d->lock, VS_LOCK_NONE);
    cr_assert_eq(d->mem_factor, 512);
    cr_assert_null(d->to_allocate_key);
    cr_assert_eq(d->n_managed, 1);
    cr_assert_str_eq(d->managed[0], "mthreads.com/vgpu");
}
