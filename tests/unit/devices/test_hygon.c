/* test_hygon: the Hygon DCU backend against spec/hami-vendors.md §2.2 and the vectors of HAMi's
 * pkg/device/hygon/device_test.go (test names cited), with our deviations: a quantity that is not
 * acceptable is a pod-level error (design.md §4) and an empty container keeps its entry. */
#include <criterion/criterion.h>

#include "devtest.h"

static struct dt t;

static void fini(void)
{
    dt_cleanup(&t);
}

#define NODE(name, reg)                                                                            \
    "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: " name "\n    annotations:\n"          \
    "      hami.io/node-dcu-register: \"" reg "\"\n"

#define POD(name, limits)                                                                          \
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name   \
    "}\n  spec:\n    containers:\n    - name: c\n      resources:\n        limits: " limits "\n"

static void expect(const char *got, const char *want)
{
    cr_assert_str_eq(got, want);
    free((void *)got);
}

TestSuite(hygon, .fini = fini);

/* Test_GetNodeDevices: the 9-field legacy form; `:` and a 5-field device are errors. */
Test(hygon, inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("a", "test-0,1,1024,100,DCU,0,true,0,test:") NODE("b", ":")
                    NODE("c", "test-0,1,1024,100,DCU:"));
    expect(dt_cards(&t, "a"), "test-0,DCU,0,1,1024,100,0,true,test");
    expect(dt_cards(&t, "b"),
           "error: invalid hami.io/node-dcu-register \":\": no gpu found on node");
    expect(dt_cards(&t, "c"),
           "error: invalid hami.io/node-dcu-register \"test-0,1,1024,100,DCU:\": "
           "device 0 has too few fields, want 7 or 9");
}

/* Test_GenerateResourceRequests, with our errors for what HAMi drops. */
Test(hygon, requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" POD("all",
                           "{hygon.com/dcunum: 1, hygon.com/dcucores: 1, hygon.com/dcumem: 1024}")
                POD("cores", "{hygon.com/dcunum: 1, hygon.com/dcucores: 1}")
                    POD("bare", "{hygon.com/dcunum: 1}")
                        POD("gi", "{hygon.com/dcunum: 1, hygon.com/dcumem: 16Gi}") POD(
                            "zero",
                            "{hygon.com/dcunum: 0}") "- apiVersion: v1\n  kind: Pod\n  metadata: "
                                                     "{name: split, namespace: default}\n"
                                                     "  spec:\n    containers:\n    - name: c\n    "
                                                     "  resources:\n"
                                                     "        limits: {hygon.com/dcunum: 1}\n"
                                                     "        requests: {hygon.com/dcumem: 1024, "
                                                     "hygon.com/dcucores: 1}\n");
    expect(dt_requests(&t, "all"), "DCU 1,1024,0,1");
    expect(dt_requests(&t, "split"), "DCU 1,1024,0,1");
    expect(dt_requests(&t, "cores"), "DCU 1,0,100,1");
    expect(dt_requests(&t, "bare"), "DCU 1,0,100,100");
    expect(dt_requests(&t, "zero"), "-");
    expect(dt_requests(&t, "gi"), "error: invalid hygon.com/dcumem \"16Gi\" in container c: must "
                                  "be a whole number between 0 and 2147483647");
}

/* TestDevices_Fit: two idle cards, one share goes on the last card walked from the end (dev-1);
 * Test_PatchAnnotations: both keys, type DCU. */
Test(hygon, fit_and_annotations)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE(
                    "n", "dev-0,4,128,100,DCU-K100_AI,0,true:dev-1,4,128,100,DCU-K100_AI,0,true:")
                    POD("p", "{hygon.com/dcunum: 1, hygon.com/dcumem: 64, hygon.com/dcucores: 50}")
                        POD("three", "{hygon.com/dcunum: 3, hygon.com/dcumem: 1}"));
    expect(dt_filter(&t, "p"), "n hami.io/dcu-devices-allocated=dev-1,DCU,64,50:; "
                               "hami.io/dcu-devices-to-allocate=dev-1,DCU,64,50:;");
    expect(dt_filter(&t, "three"), "refused n: NodeInsufficientDevice");
}

/* "mutex policy rejects used device", and the exclusivity a bare count brings (cores 100). */
Test(hygon, mutex_and_whole_card)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" NODE("n", "dev-0,4,128,100,DCU,0,true:")
                POD("a", "{hygon.com/dcunum: 1, hygon.com/dcumem: 10, hygon.com/dcucores: 10}")
                    POD("b", "{hygon.com/dcunum: 1, hygon.com/dcumem: 10, hygon.com/dcucores: 10}")
                        POD("whole", "{hygon.com/dcunum: 1}"));
    expect(dt_filter(&t, "a"), "n hami.io/dcu-devices-allocated=dev-0,DCU,10,10:; "
                               "hami.io/dcu-devices-to-allocate=dev-0,DCU,10,10:;");
    expect(dt_filter_with(&t, "b", NULL, "mutex"),
           "refused n: 1/1 ExclusiveDeviceAllocateConflict");
    expect(dt_filter(&t, "whole"), "refused n: 1/1 CardInsufficientMemory");
}

/* Test_checkDCUtype: hygon.com/use-dcutype is a case-insensitive substring of the model; blank
 * means no constraint. */
Test(hygon, type_selectors)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" NODE("n", "d0,4,128,100,DCU-Z100,0,true:d1,4,128,100,DCU-K100_AI,0,"
                                     "true:") "- apiVersion: v1\n  kind: Pod\n  metadata:\n    "
                                              "name: k100\n    namespace: default\n"
                                              "    annotations: {hygon.com/use-dcutype: k100}\n  "
                                              "spec:\n    containers:\n"
                                              "    - name: c\n      resources:\n        limits: "
                                              "{hygon.com/dcunum: 1, hygon.com/dcumem: 1, "
                                              "hygon.com/dcucores: 1}\n"
                                              "- apiVersion: v1\n  kind: Pod\n  metadata:\n    "
                                              "name: notz\n    namespace: default\n"
                                              "    annotations: {hygon.com/nouse-dcutype: \"z100, "
                                              "k100\"}\n  spec:\n    containers:\n"
                                              "    - name: c\n      resources:\n        limits: "
                                              "{hygon.com/dcunum: 1, hygon.com/dcumem: 1, "
                                              "hygon.com/dcucores: 1}\n"
                                              "- apiVersion: v1\n  kind: Pod\n  metadata:\n    "
                                              "name: blank\n    namespace: default\n"
                                              "    annotations: {hygon.com/use-dcutype: \" \", "
                                              "hygon.com/use-gpuuuid: d0}\n  spec:\n"
                                              "    containers:\n    - name: c\n      resources:\n"
                                              "        limits: {hygon.com/dcunum: 1, "
                                              "hygon.com/dcumem: 1, hygon.com/dcucores: 1}\n");
    expect(dt_filter(&t, "k100"), "n hami.io/dcu-devices-allocated=d1,DCU,1,1:; "
                                  "hami.io/dcu-devices-to-allocate=d1,DCU,1,1:;");
    expect(dt_filter(&t, "notz"), "refused n: 2/2 CardTypeMismatch");
    expect(dt_filter(&t, "blank"), "n hami.io/dcu-devices-allocated=d0,DCU,1,1:; "
                                   "hami.io/dcu-devices-to-allocate=d0,DCU,1,1:;");
}

/* HAMi's probe (§1.8): a container without a DCU ahead of the DCU container. HAMi loses the empty
 * entry (`DCU-1,DCU,2000,30:;`); we keep one entry per container. */
Test(hygon, empty_container_keeps_its_entry)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" NODE("n", "DCU-0,4,65536,100,DCU-K100_AI,0,true:DCU-1,4,65536,100,DCU-K100_"
                                 "AI,0,true:") "- apiVersion: v1\n  kind: Pod\n  metadata: {name: "
                                               "p, namespace: default}\n"
                                               "  spec:\n    containers:\n    - name: c0\n    - "
                                               "name: c1\n      resources:\n"
                                               "        limits: {hygon.com/dcunum: 1, "
                                               "hygon.com/dcumem: 2000, hygon.com/dcucores: 30}\n");
    expect(dt_filter(&t, "p"), "n hami.io/dcu-devices-allocated=;DCU-1,DCU,2000,30:; "
                               "hami.io/dcu-devices-to-allocate=;DCU-1,DCU,2000,30:;");
}

/* A placed pod's usage is read back from hami.io/dcu-devices-allocated. */
Test(hygon, usage_read_back)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(
        &t,
        "items:\n" NODE(
            "n",
            "d0,4,1000,100,DCU,0,true:") "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: "
                                         "old\n    namespace: default\n"
                                         "    uid: old\n    annotations: {hami.io/vgpu-node: n, "
                                         "hami.io/dcu-devices-allocated: \"d0,DCU,900,50:;\"}\n"
                                         "  spec:\n    nodeName: n\n    containers:\n    - name: "
                                         "c\n"
                                         "      resources:\n        limits: {hygon.com/dcunum: 1, "
                                         "hygon.com/dcumem: 900, hygon.com/dcucores: 50}\n" POD(
                                             "new", "{hygon.com/dcunum: 1, hygon.com/dcumem: 200, "
                                                    "hygon.com/dcucores: 10}"));
    expect(dt_filter(&t, "new"), "refused n: 1/1 CardInsufficientMemory");
}

/* The section of device-config.yaml decides the names (a key it lacks names nothing); a file
 * without the section leaves DCU pods unrecognised, as in HAMi. */
Test(hygon, config_section)
{
    cr_assert(dt_init(&t,
                      "hygon:\n  resourceCountName: x.com/dcu\n  resourceMemoryName: x.com/mem\n"
                      "  memoryFactor: 2\n",
                      false, false));
    /* A key the section does not name is no resource: dcucores is not read. */
    dt_load(&t, "items:\n" POD("p", "{x.com/dcu: 1, x.com/mem: 10, hygon.com/dcucores: 5}"));
    expect(dt_requests(&t, "p"), "DCU 1,20,0,100");
    dt_cleanup(&t);
    cr_assert(dt_init(&t, "nvidia:\n  defaultCores: 0\n", false, false));
    dt_load(&t, "items:\n" POD("p", "{hygon.com/dcunum: 1}"));
    expect(dt_requests(&t, "p"), "-");
}
