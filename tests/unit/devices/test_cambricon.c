/* test_cambricon: the Cambricon MLU backend against spec/hami-vendors.md §2.3 and the vectors of
 * HAMi's pkg/device/cambricon/device_test.go (test names cited), with our deviations: a quantity
 * that is not acceptable is a pod-level error (design.md §4), a node without the capacity has no
 * MLU cards (no error), and a request sees only this backend's cards. */
#include <criterion/criterion.h>

#include "admittest.h"
#include "devtest.h"

static struct dt t;

static void fini(void)
{
    dt_cleanup(&t);
}

/* A node with capacity vcore/vmemory (quantity text). */
#define NODE(name, vcore, vmem)                                                                    \
    "- apiVersion: v1\n  kind: Node\n  metadata: {name: " name "}\n  status:\n    capacity: "      \
    "{cambricon.com/mlu.smlu.vcore: \"" vcore "\", cambricon.com/mlu.smlu.vmemory: \"" vmem        \
    "\"}\n"

#define POD(name, limits)                                                                          \
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name   \
    "}\n  spec:\n    containers:\n    - name: c\n      resources:\n        limits: " limits "\n"

/* A pod placed on node n earlier, its usage in hami.io/cambricon-mlu-devices-allocated. */
#define PLACED(name, node, alloc)                                                                  \
    "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n"     \
    "    uid: " name "\n    annotations: {hami.io/vgpu-node: " node                                \
    ", hami.io/cambricon-mlu-devices-allocated: \"" alloc "\"}\n  spec:\n    nodeName: " node      \
    "\n    containers:\n    - name: c\n"

static void expect(const char *got, const char *want)
{
    cr_assert_str_eq(got, want);
    free((void *)got);
}

TestSuite(cambricon, .fini = fini);

/* Test_GetNodeDevices: vcore 1, vmemory 1 on node `test` -> one card of 25600 MiB (1 x 256 MiB
 * x 100 / 1). One card per started 100 of vcore, the memory shared evenly; a node without the
 * capacity has no MLU cards; a capacity that is not a whole number makes the node unusable. */
Test(cambricon, inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("test", "1", "1") NODE("n3", "250", "30")
                    NODE("bad", "1.5", "3") "- apiVersion: v1\n  kind: Node\n  metadata: {name: "
                                            "none}\n");
    expect(dt_cards(&t, "test"), "test-cambricon-mlu-0,MLU,0,100,25600,100,0,true,");
    expect(dt_cards(&t, "n3"), "n3-cambricon-mlu-0,MLU,0,100,3072,100,0,true,; "
                               "n3-cambricon-mlu-1,MLU,1,100,3072,100,0,true,; "
                               "n3-cambricon-mlu-2,MLU,2,100,3072,100,0,true,");
    expect(dt_cards(&t, "bad"),
           "error: invalid status.capacity[\"cambricon.com/mlu.smlu.vcore\"] \"1.5\": not a "
           "whole number between 0 and 102400");
    expect(dt_cards(&t, "none"), "");
}

/* Test_GenerateResourceRequests (count name cambricon.com/mlu as in HAMi's test), with our
 * errors where HAMi drops the request. */
Test(cambricon, requests)
{
    cr_assert(dt_init(&t,
                      "cambricon:\n  resourceCountName: cambricon.com/mlu\n"
                      "  resourceMemoryName: cambricon.com/mlu.smlu.vmemory\n"
                      "  resourceCoreName: cambricon.com/mlu.smlu.vcore\n",
                      false, false));
    dt_load(&t, "items:\n" POD("all", "{cambricon.com/mlu: 1, cambricon.com/mlu.smlu.vmemory: "
                                      "1000, cambricon.com/mlu.smlu.vcore: 2}")
                    POD("nocore", "{cambricon.com/mlu: 1, cambricon.com/mlu.smlu.vmemory: 1000}")
                        POD("nomem", "{cambricon.com/mlu: 1, cambricon.com/mlu.smlu.vcore: 2}")
                            POD("gi", "{cambricon.com/mlu: 1, cambricon.com/mlu.smlu.vmemory: "
                                      "16Gi}") POD("gi0", "{cambricon.com/mlu: 1, "
                                                          "cambricon.com/mlu.smlu.vmemory: 16.0Gi}")
                                POD("zero", "{cambricon.com/mlu: 0}")
                                    POD("vmlu", "{cambricon.com/vmlu: "
                                                "1}"));
    expect(dt_requests(&t, "all"), "MLU 1,256000,0,2");
    expect(dt_requests(&t, "nocore"), "MLU 1,256000,0,100");
    expect(dt_requests(&t, "nomem"), "MLU 1,0,100,2");
    expect(dt_requests(&t, "gi"),
           "error: invalid cambricon.com/mlu.smlu.vmemory \"16Gi\" in container c: must be a "
           "whole number between 0 and 8388607");
    expect(dt_requests(&t, "gi0"),
           "error: invalid cambricon.com/mlu.smlu.vmemory \"16.0Gi\" in container c: must be a "
           "whole number between 0 and 8388607");
    expect(dt_requests(&t, "zero"), "-");
    /* The chart's count name is not the one this file configures. */
    expect(dt_requests(&t, "vmlu"), "-");
}

/* Test_PatchAnnotations: a card of 256000 MiB, 1 core -> both keys, CAMBRICON_DSMLU_ASSIGNED
 * false, CAMBRICON_DSMLU_PROFILE 0_1_1000; a leading container without MLU keeps its empty
 * entry and the profile is the first card's. */
Test(cambricon, annotations)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" NODE("device", "100", "2000")
                POD("p", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 1000, "
                         "cambricon.com/mlu.smlu.vcore: 1}") "- apiVersion: v1\n  kind: Pod\n  "
                                                             "metadata: {name: lead, namespace: "
                                                             "default, uid: lead}\n  spec:\n    "
                                                             "containers:\n    - name: c0\n    - "
                                                             "name: c1\n      resources:\n        "
                                                             "limits: {cambricon.com/vmlu: 1, "
                                                             "cambricon.com/mlu.smlu.vmemory: "
                                                             "1000, "
                                                             "cambricon.com/mlu.smlu.vcore: 1}\n");
    expect(dt_filter(&t, "p"),
           "device CAMBRICON_DSMLU_ASSIGNED=false CAMBRICON_DSMLU_PROFILE=0_1_1000 "
           "hami.io/cambricon-mlu-devices-allocated=device-cambricon-mlu-0,MLU,256000,1:; "
           "hami.io/cambricon-mlu-devices-to-allocate=device-cambricon-mlu-0,MLU,256000,1:;");
    expect(dt_filter(&t, "lead"),
           "device CAMBRICON_DSMLU_ASSIGNED=false CAMBRICON_DSMLU_PROFILE=0_1_1000 "
           "hami.io/cambricon-mlu-devices-allocated=;device-cambricon-mlu-0,MLU,256000,1:; "
           "hami.io/cambricon-mlu-devices-to-allocate=;device-cambricon-mlu-0,MLU,256000,1:;");
}

/* HAMi's probe (§2.3): vcore 200, vmemory 192 -> two cards of 24576 MiB; vmlu 1 + vmemory 20 goes
 * on the last card walked from the end (index 1), cores 100 (absent), profile 1_100_20. */
Test(cambricon, probe_two_cards)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("n13", "200", "192")
                    POD("p", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 20}"));
    expect(dt_filter(&t, "p"),
           "n13 CAMBRICON_DSMLU_ASSIGNED=false CAMBRICON_DSMLU_PROFILE=1_100_20 "
           "hami.io/cambricon-mlu-devices-allocated=n13-cambricon-mlu-1,MLU,5120,100:; "
           "hami.io/cambricon-mlu-devices-to-allocate=n13-cambricon-mlu-1,MLU,5120,100:;");
}

/* TestDevices_Fit: "fit success" (two idle cards, one share on dev-1, the last walked), "memory
 * not enough", "core not enough", "user assign use uuid mismatch", "core limit can't exceed
 * 100", "card exclusively" — with cards made from the capacity (units of 256 MiB). */
Test(cambricon, fit)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("two", "200", "4") NODE("one", "100", "2")
                    PLACED("full", "one", "one-cambricon-mlu-0,MLU,0,100:;")
                        POD("share", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 1, "
                                     "cambricon.com/mlu.smlu.vcore: 50}"));
    /* Only node two is free; its last card takes the share. */
    expect(dt_filter(&t, "share"),
           "two CAMBRICON_DSMLU_ASSIGNED=false CAMBRICON_DSMLU_PROFILE=1_50_1 "
           "hami.io/cambricon-mlu-devices-allocated=two-cambricon-mlu-1,MLU,256,50:; "
           "hami.io/cambricon-mlu-devices-to-allocate=two-cambricon-mlu-1,MLU,256,50:;");
    dt_cleanup(&t);

    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" NODE("n", "100", "2")
                POD("big", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 3, "
                           "cambricon.com/mlu.smlu.vcore: 50}")
                    POD("clamp", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 1, "
                                 "cambricon.com/mlu.smlu.vcore: 120}")
                        POD("more", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 1, "
                                    "cambricon.com/mlu.smlu.vcore: 10}"));
    expect(dt_filter(&t, "big"), "refused n: 1/1 CardInsufficientMemory");
    expect(dt_filter(&t, "clamp"),
           "n CAMBRICON_DSMLU_ASSIGNED=false CAMBRICON_DSMLU_PROFILE=0_100_1 "
           "hami.io/cambricon-mlu-devices-allocated=n-cambricon-mlu-0,MLU,256,100:; "
           "hami.io/cambricon-mlu-devices-to-allocate=n-cambricon-mlu-0,MLU,256,100:;");
    expect(dt_filter(&t, "more"), "refused n: 1/1 CardInsufficientCore");
    dt_cleanup(&t);

    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" NODE("n", "100", "8") PLACED("small", "n", "n-cambricon-mlu-0,MLU,256,0:;")
                POD("excl",
                    "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 1, "
                    "cambricon.com/mlu.smlu.vcore: 100}") "- apiVersion: v1\n  kind: Pod\n  "
                                                          "metadata:\n    name: pick\n    "
                                                          "namespace: default\n    annotations: "
                                                          "{cambricon.com/use-gpuuuid: "
                                                          "dev-0}\n  spec:\n    containers:\n    - "
                                                          "name: c\n      resources:\n     "
                                                          "   limits: {cambricon.com/vmlu: 1, "
                                                          "cambricon.com/mlu.smlu.vmemory: 1, "
                                                          "cambricon.com/mlu.smlu.vcore: 10}\n");
    expect(dt_filter(&t, "excl"), "refused n: 1/1 ExclusiveDeviceAllocateConflict");
    expect(dt_filter(&t, "pick"), "refused n: 1/1 CardUuidMismatch");
    dt_cleanup(&t);

    /* "user assign no use uuid match", and "card overused": a card's 100 slots taken by 100
     * containers of a placed pod. */
    cr_assert(dt_init(&t, NULL, false, false));
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(
        &b, "items:\n" NODE("n", "100", "8")
                NODE("m", "100", "8") "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: many\n"
                                      "    namespace: default\n    uid: many\n    annotations:\n"
                                      "      hami.io/vgpu-node: m\n"
                                      "      hami.io/cambricon-mlu-devices-allocated: \"");
    for (int i = 0; i < 100; i++)
        vs_buf_puts(&b, "m-cambricon-mlu-0,MLU,0,0:;");
    vs_buf_puts(&b, "\"\n  spec:\n    nodeName: m\n    containers:\n    - name: c\n"
                    "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: nouse\n    "
                    "namespace: default\n    annotations: {cambricon.com/nouse-gpuuuid: "
                    "n-cambricon-mlu-0}\n  spec:\n    containers:\n    - name: c\n      "
                    "resources:\n        limits: {cambricon.com/vmlu: 1, "
                    "cambricon.com/mlu.smlu.vmemory: 1, cambricon.com/mlu.smlu.vcore: 0}\n");
    char *y = vs_buf_steal(&b);
    cr_assert_not_null(y);
    dt_load(&t, y);
    free(y);
    expect(dt_filter(&t, "nouse"),
           "refused n: 1/1 CardUuidMismatch; m: 1/1 CardTimeSlicingExhausted");
}

/* TestDevices_Fit_ResourceQuotaWholeCardRequest: quota limits.cambricon.com/mlu.smlu.vmemory 50
 * (12800 MiB), a card of 40960 MiB, a request without memory (the whole card) and 10 cores ->
 * 1/1 ResourceQuotaNotFit: the quota is checked with the memory the card resolves to. */
Test(cambricon, quota_whole_card)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("n", "100", "160")
                    POD("whole", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vcore: 10}")
                        POD("fits", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 50, "
                                    "cambricon.com/mlu.smlu.vcore: 10}"));
    struct vs_kquota q = {0};
    q.ns = strdup("default");
    q.name = strdup("mlu-quota");
    cr_assert_eq(vs_kv_set(&q.hard, "limits.cambricon.com/mlu.smlu.vmemory", "50"), VS_OK);
    cr_assert_eq(vs_model_set_quota(t.m, &q), VS_OK);
    vs_kquota_cleanup(&q);
    expect(dt_filter(&t, "whole"), "refused n: 1/1 ResourceQuotaNotFit");
    /* 50 units are exactly the quota. */
    expect(dt_filter(&t, "fits"),
           "n CAMBRICON_DSMLU_ASSIGNED=false CAMBRICON_DSMLU_PROFILE=0_10_50 "
           "hami.io/cambricon-mlu-devices-allocated=n-cambricon-mlu-0,MLU,12800,10:; "
           "hami.io/cambricon-mlu-devices-to-allocate=n-cambricon-mlu-0,MLU,12800,10:;");
}

/* A placed pod's usage is read back from hami.io/cambricon-mlu-devices-allocated; a bare count
 * takes the whole card (100 cores), so a later share is refused. */
Test(cambricon, usage_and_whole_card)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" NODE("n", "100", "8") PLACED("old", "n", "n-cambricon-mlu-0,MLU,1792,50:;")
                POD("new", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 2, "
                           "cambricon.com/mlu.smlu.vcore: 10}")
                    POD("whole", "{cambricon.com/vmlu: 1}"));
    expect(dt_filter(&t, "new"), "refused n: 1/1 CardInsufficientMemory");
    expect(dt_filter(&t, "whole"), "refused n: 1/1 CardInsufficientMemory");
    dt_cleanup(&t);
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("n", "100", "8") POD("whole", "{cambricon.com/vmlu: 1}")
                    POD("later", "{cambricon.com/vmlu: 1, cambricon.com/mlu.smlu.vmemory: 0, "
                                 "cambricon.com/mlu.smlu.vcore: 0}"));
    expect(dt_filter(&t, "whole"),
           "n CAMBRICON_DSMLU_ASSIGNED=false CAMBRICON_DSMLU_PROFILE=0_100_8 "
           "hami.io/cambricon-mlu-devices-allocated=n-cambricon-mlu-0,MLU,2048,100:; "
           "hami.io/cambricon-mlu-devices-to-allocate=n-cambricon-mlu-0,MLU,2048,100:;");
    expect(dt_filter(&t, "later"), "refused n: 1/1 CardInsufficientMemory");
}

/* The backend's wiring: its own lock (cambricon.com/dsmlu.lock, 2 minutes) taken when a regular
 * container asks for MLU, quota memory factor 256, and only the count as the extender's managed
 * resource (HAMi's chart). */
Test(cambricon, lock_and_managed)
{
    cr_assert(dt_init(&t, NULL, false, false));
    const struct vs_device *d = vs_devices_find(t.cfg.devices, "MLU");
    cr_assert_not_null(d);
    cr_assert_eq(d->lock, VS_LOCK_STAMP);
    cr_assert_str_eq(d->lock_key, "cambricon.com/dsmlu.lock");
    cr_assert_eq(d->lock_ttl, 120);
    cr_assert_eq(d->mem_factor, 256);
    cr_assert_eq(d->n_managed, 1);
    cr_assert_str_eq(d->managed[0], "cambricon.com/vmlu");
    dt_load(&t, "items:\n" POD("p", "{cambricon.com/vmlu: 1}"));
    struct vs_pod_req q;
    struct vs_errbuf eb;
    cr_assert_eq(vs_request_build(dt_pod(&t, "p"), &t.cfg, &q, &eb), VS_OK);
    bool shared;
    const struct vs_device *stamps[VS_MAX_DEVICES];
    cr_assert_eq(vs_sched_locks(t.cfg.devices, &q, &shared, stamps), 1);
    cr_assert_eq(stamps[0], d);
    cr_assert_not(shared);
    vs_pod_req_cleanup(&q);
}

/* Test_MutateAdmission: found when the count is in the limits (then sent to this scheduler); no
 * change to the container; a count in the requests only is not (HAMi's rule). */
Test(cambricon, admission)
{
    cr_assert(dt_init(&t, NULL, false, false));
    expect(at_admit(&t.cfg, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                            "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                            "\"resources\":{\"limits\":{\"cambricon.com/vmlu\":\"1\"}}}]}}"),
           "allowed | add /spec/schedulerName \"hami-scheduler\"");
    expect(at_admit(&t.cfg, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                            "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                            "\"resources\":{\"requests\":{\"cambricon.com/vmlu\":\"1\"}}}]}}"),
           "allowed");
}
