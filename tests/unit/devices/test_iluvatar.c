/* test_iluvatar: the Iluvatar backends against spec/hami-vendors.md §2.5 and the vectors of
 * HAMi's pkg/device/iluvatar/device_test.go (test names cited), with our deviations: a quantity
 * that is not acceptable is a pod-level error (design.md §4), a node without the register
 * annotation has no cards of the chip (no error). */
#include <criterion/criterion.h>

#include "admittest.h"
#include "devtest.h"

static struct dt t;

static void fini(void)
{
    dt_cleanup(&t);
}

#define NODE(name, reg)                                                                            \
    "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: " name "\n    annotations:\n"          \
    "      hami.io/node-MR-V100-register: \"" reg "\"\n"

#define POD(name, limits)                                                                          \
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name   \
    "}\n  spec:\n    containers:\n    - name: c\n      resources:\n        limits: " limits "\n"

static void expect(const char *got, const char *want)
{
    cr_assert_str_eq(got, want);
    free((void *)got);
}

TestSuite(iluvatar, .fini = fini);

/* Only with --enable-iluvatar; then HAMi's chart chips, in byte-wise word order. */
Test(iluvatar, switched_on_by_the_flag)
{
    cr_assert(dt_init(&t, NULL, false, false));
    cr_assert_null(vs_devices_find(t.cfg.devices, "MR-V100"));
    dt_cleanup(&t);
    cr_assert(dt_init(&t, NULL, false, true));
    const char *words[] = {"BI-V100", "BI-V150", "MR-V100", "MR-V50"};
    for (size_t i = 0; i < 4; i++) {
        const struct vs_device *d = vs_devices_find(t.cfg.devices, words[i]);
        cr_assert_not_null(d, "%s", words[i]);
        cr_assert_eq(d->lock, VS_LOCK_SHARED);
        cr_assert_eq(d->mem_factor, 256);
        char want[64];
        snprintf(want, sizeof(want), "iluvatar.ai/%s-vgpu", words[i]);
        cr_assert_str_eq(d->res_count, want);
        cr_assert_eq(d->n_managed, 3);
        snprintf(want, sizeof(want), "iluvatar.ai/%s.vCore", words[i]);
        cr_assert_str_eq(d->managed[2], want);
        snprintf(want, sizeof(want), "hami.io/%s-devices-allocated", words[i]);
        cr_assert_str_eq(d->allocated_key, want);
    }
    const struct vs_device *a = vs_devices_find(t.cfg.devices, "BI-V100");
    const struct vs_device *b = vs_devices_find(t.cfg.devices, "MR-V50");
    cr_assert_lt(a->id, b->id);
}

/* The iluvatars list of device-config.yaml makes the backends; a bad entry is refused naming
 * it. */
Test(iluvatar, config_list)
{
    cr_assert(dt_init(&t,
                      "iluvatars:\n- chipName: X1\n  commonWord: X1\n"
                      "  resourceCountName: x.ai/x1\n  resourceMemoryName: x.ai/x1-mem\n"
                      "  resourceCoreName: x.ai/x1-core\n",
                      false, true));
    const struct vs_device *d = vs_devices_find(t.cfg.devices, "X1");
    cr_assert_not_null(d);
    cr_assert_null(vs_devices_find(t.cfg.devices, "MR-V100"));
    dt_load(&t, "items:\n" POD("p", "{x.ai/x1: 2, x.ai/x1-mem: 4, x.ai/x1-core: 30}"));
    expect(dt_requests(&t, "p"), "X1 2,1024,0,30");
    dt_cleanup(&t);
    cr_assert_not(
        dt_init(&t, "iluvatars:\n- chipName: X1\n  resourceCountName: x.ai/x1\n", false, true));
    cr_assert_str_eq(t.err, "cfg: iluvatars[0].commonWord: missing");
    cr_assert_not(dt_init(&t, "iluvatars:\n- commonWord: [a]\n", false, true));
    cr_assert_str_eq(t.err, "cfg: iluvatars[0].commonWord: expected a string");
    cr_assert_not(dt_init(&t, "iluvatars: {commonWord: a}\n", false, true));
    cr_assert_str_eq(t.err, "cfg: iluvatars: expected a list");
    /* Without the switch the list makes nothing. */
    cr_assert(dt_init(&t, "iluvatars:\n- commonWord: X1\n", false, false));
    cr_assert_null(vs_devices_find(t.cfg.devices, "X1"));
}

/* TestGetNodeDevices: the 7-field legacy form (one card, count 10, 8192 MiB, 100 cores, type
 * MR-V100); "[]" and "" are errors; no annotation, no cards. */
Test(iluvatar, inventory)
{
    cr_assert(dt_init(&t, NULL, false, true));
    dt_load(&t,
            "items:\n" NODE("node-01",
                            "GPU-bad51c5a-ed4c-591d-91bf-c04a12e19eae,10,8192,100,MR-V100,0,true:")
                NODE("node-02", "[]") NODE("node-04", "") "- apiVersion: v1\n  kind: Node\n  "
                                                          "metadata: {name: node-03}\n");
    expect(dt_cards(&t, "node-01"),
           "GPU-bad51c5a-ed4c-591d-91bf-c04a12e19eae,MR-V100,0,10,8192,100,0,true,hami-core");
    expect(dt_cards(&t, "node-02"),
           "error: invalid hami.io/node-MR-V100-register \"[]\": no gpu found on node");
    expect(dt_cards(&t, "node-04"),
           "error: invalid hami.io/node-MR-V100-register \"\": neither a JSON array nor the "
           "colon format");
    expect(dt_cards(&t, "node-03"), "");
}

/* Test_GenerateResourceRequests: vgpu 1, vMem 1000, vCore 100 -> {1, 256000, 0, 100}; vgpu
 * only -> {1, 0, 100, 0}; vMem 16Gi / 16.0Gi -> our error (HAMi drops the request). */
Test(iluvatar, requests)
{
    cr_assert(dt_init(&t, NULL, false, true));
    dt_load(&t,
            "items:\n" POD("all", "{iluvatar.ai/MR-V100-vgpu: 1, iluvatar.ai/MR-V100.vMem: 1000, "
                                  "iluvatar.ai/MR-V100.vCore: 100}")
                POD("count", "{iluvatar.ai/MR-V100-vgpu: 1}") POD("none", "{}")
                    POD("gi", "{iluvatar.ai/MR-V100-vgpu: 1, "
                              "iluvatar.ai/MR-V100.vMem: 16Gi}")
                        POD("gi0", "{iluvatar.ai/MR-V100-vgpu: 1, iluvatar.ai/MR-V100.vMem: "
                                   "16.0Gi}") POD("two", "{iluvatar.ai/BI-V150-vgpu: 1, "
                                                         "iluvatar.ai/MR-V100-vgpu: 2}"));
    expect(dt_requests(&t, "all"), "MR-V100 1,256000,0,100");
    expect(dt_requests(&t, "count"), "MR-V100 1,0,100,0");
    expect(dt_requests(&t, "none"), "-");
    expect(dt_requests(&t, "gi"), "error: invalid iluvatar.ai/MR-V100.vMem \"16Gi\" in container "
                                  "c: must be a whole number between 0 and 8388607");
    expect(dt_requests(&t, "gi0"), "error: invalid iluvatar.ai/MR-V100.vMem \"16.0Gi\" in "
                                   "container c: must be a whole number between 0 and 8388607");
    /* Two chips in one container: each its own request, in word order. */
    expect(dt_requests(&t, "two"), "BI-V150 1,0,100,0 MR-V100 2,0,100,0");
}

/* TestPatchAnnotations: k8s-gpu-iluvatar-0,MR-V100,0,0:; in both keys. */
Test(iluvatar, annotations)
{
    cr_assert(dt_init(&t, NULL, false, true));
    dt_load(&t, "items:\n" NODE("n", "k8s-gpu-iluvatar-0,10,0,100,MR-V100,0,true:")
                    POD("p", "{iluvatar.ai/MR-V100-vgpu: 1}"));
    expect(dt_filter(&t, "p"),
           "n hami.io/MR-V100-devices-allocated=k8s-gpu-iluvatar-0,MR-V100,0,0:; "
           "hami.io/MR-V100-devices-to-allocate=k8s-gpu-iluvatar-0,MR-V100,0,0:;");
}

/* HAMi's probe (§2.5): two MR-V100 cards of 32768 MiB, vgpu 2, vCore 200 (what the webhook
 * writes), vMem 64 -> both cards, cores clamped to 100, walked from the end. */
Test(iluvatar, probe_two_cards)
{
    cr_assert(dt_init(&t, NULL, false, true));
    dt_load(&t, "items:\n" NODE("n", "GPU-i0,4,32768,100,MR-V100,0,true:GPU-i1,4,32768,100,MR-V100,"
                                     "0,true:")
                    POD("p", "{iluvatar.ai/MR-V100-vgpu: 2, iluvatar.ai/MR-V100.vCore: 200, "
                             "iluvatar.ai/MR-V100.vMem: 64}")
                        POD("more", "{iluvatar.ai/MR-V100-vgpu: 1, iluvatar.ai/MR-V100.vMem: 1}"));
    expect(
        dt_filter(&t, "p"),
        "n hami.io/MR-V100-devices-allocated=GPU-i1,MR-V100,16384,100:GPU-i0,MR-V100,16384,100:; "
        "hami.io/MR-V100-devices-to-allocate=GPU-i1,MR-V100,16384,100:GPU-i0,MR-V100,16384,100:;");
    /* Both cards are taken whole: a 0-core share finds their compute exhausted. */
    expect(dt_filter(&t, "more"), "refused n: 2/2 CardComputeUnitsExhausted");
}

/* G-Fit's UUID selectors are hami.io/use-<word>-uuid and hami.io/no-use-<word>-uuid; a card
 * type without the word is not a candidate. */
Test(iluvatar, uuid_selectors)
{
    cr_assert(dt_init(&t, NULL, false, true));
    dt_load(&t,
            "items:\n" NODE("n", "a,4,1000,100,MR-V100,0,true:b,4,1000,100,MR-V100,0,true:c,4,1000,"
                                 "100,Other,0,true:") "- apiVersion: v1\n  kind: Pod\n  metadata:\n"
                                                      "    name: use\n    namespace: default\n    "
                                                      "annotations: {hami.io/use-MR-V100-uuid: a}\n"
                                                      "  spec:\n    containers:\n    - name: c\n  "
                                                      "    resources:\n        limits: "
                                                      "{iluvatar.ai/MR-V100-vgpu: 1, "
                                                      "iluvatar.ai/MR-V100.vMem: 1}\n"
                                                      "- apiVersion: v1\n  kind: Pod\n  metadata:\n"
                                                      "    name: nouse\n    namespace: default\n   "
                                                      " annotations: {hami.io/no-use-MR-V100-uuid: "
                                                      "\"a, b\"}\n  spec:\n    containers:\n    - "
                                                      "name: c\n      resources:\n        limits: "
                                                      "{iluvatar.ai/MR-V100-vgpu: 1, "
                                                      "iluvatar.ai/MR-V100.vMem: 1}\n");
    expect(dt_filter(&t, "use"), "n hami.io/MR-V100-devices-allocated=a,MR-V100,256,0:; "
                                 "hami.io/MR-V100-devices-to-allocate=a,MR-V100,256,0:;");
    expect(dt_filter(&t, "nouse"), "refused n: 2/2 CardUuidMismatch");
}

/* Test_MutateAdmission: vgpu 2 + vCore 1 -> found, vCore rewritten to 200; the container's
 * name in SOL_CONTINER_NAME (HAMi's spelling) unless the container has it; one card: no
 * cores change; requests only: not found (limits only). */
Test(iluvatar, admission)
{
    cr_assert(dt_init(&t, NULL, false, true));
    expect(at_admit(&t.cfg,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                    "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"main\","
                    "\"resources\":{\"limits\":{\"iluvatar.ai/MR-V100-vgpu\":\"2\","
                    "\"iluvatar.ai/MR-V100.vCore\":\"1\"}}}]}}"),
           "allowed | add /spec/containers/0/resources/limits/iluvatar.ai~1MR-V100.vCore "
           "\"200\" | add /spec/containers/0/env [{\"name\":\"SOL_CONTINER_NAME\",\"value\":"
           "\"main\"}] | add /spec/schedulerName \"hami-scheduler\"");
    expect(at_admit(&t.cfg,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                    "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"main\","
                    "\"env\":[{\"name\":\"SOL_CONTINER_NAME\",\"value\":\"x\"}],"
                    "\"resources\":{\"limits\":{\"iluvatar.ai/MR-V100-vgpu\":\"1\"}}}]}}"),
           "allowed | add /spec/schedulerName \"hami-scheduler\"");
    expect(at_admit(&t.cfg,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                    "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"main\","
                    "\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
                    "\"resources\":{\"limits\":{\"iluvatar.ai/MR-V100-vgpu\":\"1\"}}}]}}"),
           "allowed | add /spec/containers/0/env/- {\"name\":\"SOL_CONTINER_NAME\",\"value\":"
           "\"main\"} | add /spec/schedulerName \"hami-scheduler\"");
    expect(at_admit(&t.cfg,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                    "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"main\","
                    "\"resources\":{\"requests\":{\"iluvatar.ai/MR-V100-vgpu\":\"1\"}}}]}}"),
           "allowed");
}
