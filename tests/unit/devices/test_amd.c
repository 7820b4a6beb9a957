/* test_amd: the AMD backend against spec/hami-vendors.md §2.10 and HAMi's pkg/device/amd/
 * device_test.go (test names cited), docs/develop/amd-vgpu.md's examples, the section's probe,
 * and our rule for quantities HAMi drops (a pod-level error). */
#include "devsuite.h"

DEV_SUITE(amd);

/* A node registering `reg` (JSON) with `n` AMD GPUs in its capacity. */
#define NODE(name, n, reg)                                                                         \
    "- kind: Node\n  metadata:\n    name: " name "\n    annotations:\n"                            \
    "      hami.io/node-amd-register: '" reg "'\n  status:\n    capacity: {amd.com/gpu: \"" n      \
    "\"}\n"

#define CARD(id, idx, count, mem, cu, type)                                                        \
    "{\"id\":\"" id "\",\"index\":" idx ",\"count\":" count ",\"devmem\":" mem ",\"devcore\":" cu  \
    ",\"type\":\"" type "\",\"health\":true}"

/* A pending pod with annotations `an` and one container asking limits `lim`. */
#define POD(name, an, lim)                                                                         \
    "- kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name                     \
    ", annotations: " an "}\n  spec:\n    containers:\n    - name: c\n      resources:\n"          \
    "        limits: " lim "\n"

/* Test_GetNodeDevices; HAMi's health rule: no AMD GPUs in the capacity (absent, 0, not a whole
 * number) means no cards. */
Test(amd, inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "1", "[" CARD("GPU-0", "0", "1", "8192", "100", "amd") "]"));
    add(NODE("zero", "0", "[" CARD("GPU-0", "0", "1", "8192", "100", "amd") "]"));
    add(NODE("half", "0.5", "[" CARD("GPU-0", "0", "1", "8192", "100", "amd") "]"));
    add("- kind: Node\n  metadata:\n    name: nocap\n    annotations:\n"
        "      hami.io/node-amd-register: '[" CARD("GPU-0", "0", "1", "8192", "100", "amd") "]'\n");
    expect(dt_cards(&t, "n"), "GPU-0,amd,0,1,8192,100,0,true,");
    expect(dt_cards(&t, "zero"), "");
    expect(dt_cards(&t, "half"), "");
    expect(dt_cards(&t, "nocap"), "");
}

/* Test_GenerateResourceRequests (names amd.com/gpu, amd.com/gpu-mem, amd.com/gpu-core-pct):
 * limits 2 / 4096 / 33 with requests 99 ignored; no count: none; no core: 100; the quantities
 * HAMi drops (count 0 aside) refuse the pod. */
Test(amd, requests)
{
    cr_assert(
        dt_init(&t,
                "amd:\n  resourceCountName: amd.com/gpu\n  resourceMemoryName: amd.com/gpu-mem\n"
                "  resourceCoreName: amd.com/gpu-core-pct\n",
                false, false));
    add("- kind: Pod\n  metadata: {name: p, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources:\n"
        "        limits: {amd.com/gpu: 2, amd.com/gpu-mem: 4096, amd.com/gpu-core-pct: 33}\n"
        "        requests: {amd.com/gpu: 99, amd.com/gpu-mem: 99, amd.com/gpu-core-pct: 99}\n");
    add(POD("nocount", "{}", "{amd.com/gpu-mem: 4096}"));
    add(POD("nocore", "{}", "{amd.com/gpu: 1, amd.com/gpu-mem: 4096}"));
    add(POD("zero", "{}", "{amd.com/gpu: 0}"));
    add(POD("negmem", "{}", "{amd.com/gpu: 1, amd.com/gpu-mem: -1}"));
    add(POD("core0", "{}", "{amd.com/gpu: 1, amd.com/gpu-core-pct: 0}"));
    add(POD("core101", "{}", "{amd.com/gpu: 1, amd.com/gpu-core-pct: 101}"));
    add(POD("big", "{}", "{amd.com/gpu: 2147483648}"));
    add("- kind: Pod\n  metadata: {name: req, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources: {requests: {amd.com/gpu: 1}}\n");
    expect(dt_requests(&t, "p"), "AMD 2,4096,0,33");
    expect(dt_requests(&t, "nocount"), "-");
    expect(dt_requests(&t, "req"), "-");
    expect(dt_requests(&t, "nocore"), "AMD 1,4096,0,100");
    expect(dt_requests(&t, "zero"), "-");
    expect(dt_requests(&t, "negmem"), "error: invalid amd.com/gpu-mem \"-1\" in container c: must "
                                      "be a whole number between 0 and 2147483647");
    expect(dt_requests(&t, "core0"), "error: invalid amd.com/gpu-core-pct \"0\" in container c: "
                                     "must be a whole number between 1 and 100");
    expect(dt_requests(&t, "core101"), "error: invalid amd.com/gpu-core-pct \"101\" in container "
                                       "c: must be a whole number between 1 and 100");
    expect(dt_requests(&t, "big"), "error: invalid amd.com/gpu \"2147483648\" in container c: "
                                   "must be a whole number between 0 and 2147483647");
}

/* Test_MutateAdmission: any of the three in limits routes the pod; requests only do not; with
 * the count a core percentage must be 1..100. */
Test(amd, admission)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("count", "{}", "{amd.com/gpu: 1}"));
    add(POD("mem", "{}", "{amd.com/gpumem: 1024}"));
    add(POD("core", "{}", "{amd.com/gpucores: 50}"));
    add(POD("core0", "{}", "{amd.com/gpu: 1, amd.com/gpucores: 0}"));
    add(POD("core101", "{}", "{amd.com/gpu: 1, amd.com/gpucores: 101}"));
    add(POD("partial", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 1024}"));
    add(POD("none", "{}", "{cpu: 1}"));
    add("- kind: Pod\n  metadata: {name: req, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources: {requests: {amd.com/gpu: 1}}\n");
    expect(dt_admit(&t, "count", "AMD"), "found");
    expect(dt_admit(&t, "mem", "AMD"), "found");
    expect(dt_admit(&t, "core", "AMD"), "found");
    expect(dt_admit(&t, "partial", "AMD"), "found");
    expect(dt_admit(&t, "req", "AMD"), "-");
    expect(dt_admit(&t, "none", "AMD"), "-");
    expect(dt_admit(&t, "core0", "AMD"),
           "error: amd.com/gpucores must be an integer percentage between 1 and 100");
    expect(dt_admit(&t, "core101", "AMD"),
           "error: amd.com/gpucores must be an integer percentage between 1 and 100");
}

/* TestDevices_Fit "allocate two whole cards": the last card first, each its whole memory and
 * every compute unit; Test_PatchAnnotations: both keys. */
Test(amd, whole_cards)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "2",
             "[" CARD("dev-0", "0", "2", "1000", "100", "AMD") "," CARD("dev-1", "1", "12", "1000",
                                                                        "100", "AMD") "]"));
    add(POD("p", "{}", "{amd.com/gpu: 2}"));
    expect(dt_filter(&t, "p"), "n hami.io/amd-devices-allocated=dev-1,AMD,1000,100:dev-0,AMD,1000,"
                               "100:; hami.io/amd-devices-to-allocate=dev-1,AMD,1000,100:dev-0,AMD,"
                               "1000,100:;");
}

/* TestDevices_Fit "core percentage maps per device" (50 % of 100 CUs), "clamps a positive
 * percentage to at least one CU" (1 % of 64), "retains the registered product type". */
Test(amd, percent_to_compute_units)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "2",
             "[" CARD("dev-0", "0", "2", "1000", "10", "AMD") "," CARD("dev-1", "1", "12", "1000",
                                                                       "100", "AMD") "]"));
    add(NODE("m", "1", "[" CARD("dev-0", "0", "2", "1000", "64", "AMD_Instinct_MI300X_VF") "]"));
    add(POD("half", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 500, amd.com/gpucores: 50}"));
    add(POD("one", "{hami.io/node-scheduler-policy: spread}",
            "{amd.com/gpu: 1, amd.com/gpumem: 100, amd.com/gpucores: 1}"));
    expect(dt_filter(&t, "half"), "n hami.io/amd-devices-allocated=dev-1,AMD,500,50:; "
                                  "hami.io/amd-devices-to-allocate=dev-1,AMD,500,50:;");
    expect(dt_filter(&t, "one"),
           "m hami.io/amd-devices-allocated=dev-0,AMD_Instinct_MI300X_VF,100,1:; "
           "hami.io/amd-devices-to-allocate=dev-0,AMD_Instinct_MI300X_VF,100,1:;");
}

/* docs/develop/amd-vgpu.md: 25 % of 304 CUs is 76, 33 % is 100, 67 % is 203; the section's probe
 * (MI300X VF, 16384 MiB, 25 %). */
Test(amd, mi300x_examples)
{
    static const struct {
        const char *pct, *want;
    } cases[] = {
        {"25", "n hami.io/amd-devices-allocated=amd-0,AMD Instinct MI300X VF,16384,76:; "
               "hami.io/amd-devices-to-allocate=amd-0,AMD Instinct MI300X VF,16384,76:;"},
        {"33", "n hami.io/amd-devices-allocated=amd-0,AMD Instinct MI300X VF,16384,100:; "
               "hami.io/amd-devices-to-allocate=amd-0,AMD Instinct MI300X VF,16384,100:;"},
        {"67", "n hami.io/amd-devices-allocated=amd-0,AMD Instinct MI300X VF,16384,203:; "
               "hami.io/amd-devices-to-allocate=amd-0,AMD Instinct MI300X VF,16384,203:;"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char pod[512];
        cr_assert(dt_init(&t, NULL, false, false));
        add(NODE("n", "1",
                 "[" CARD("amd-0", "0", "4", "196608", "304", "AMD Instinct MI300X VF") "]"));
        snprintf(pod, sizeof(pod),
                 POD("p", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 16384, amd.com/gpucores: %s}"),
                 cases[i].pct);
        add(pod);
        expect(dt_filter(&t, "p"), cases[i].want);
        dt_cleanup(&t);
        memset(&t, 0, sizeof(t));
    }
}

/* A memory-only request takes every CU (the default 100 %), so nothing else shares the card;
 * TestDevices_Fit "insufficient memory", "insufficient core", "time slicing exhausted". */
Test(amd, sharing_rules)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "1", "[" CARD("dev-0", "0", "2", "1000", "100", "AMD") "]"));
    add(POD("memonly", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 100}"));
    add(POD("small", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 100, amd.com/gpucores: 10}"));
    add(POD("big", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 950, amd.com/gpucores: 10}"));
    add(POD("third", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 10, amd.com/gpucores: 10}"));
    expect(dt_filter(&t, "memonly"), "n hami.io/amd-devices-allocated=dev-0,AMD,100,100:; "
                                     "hami.io/amd-devices-to-allocate=dev-0,AMD,100,100:;");
    expect(dt_filter(&t, "small"), "refused n: 1/1 CardInsufficientCore");
    dt_cleanup(&t);
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "1", "[" CARD("dev-0", "0", "2", "1000", "100", "AMD") "]"));
    add(POD("small", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 100, amd.com/gpucores: 10}"));
    add(POD("small2", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 100, amd.com/gpucores: 10}"));
    add(POD("big", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 950, amd.com/gpucores: 10}"));
    add(POD("third", "{}", "{amd.com/gpu: 1, amd.com/gpumem: 10, amd.com/gpucores: 10}"));
    expect(dt_filter(&t, "big"), "n hami.io/amd-devices-allocated=dev-0,AMD,950,10:; "
                                 "hami.io/amd-devices-to-allocate=dev-0,AMD,950,10:;");
    expect(dt_filter(&t, "small"), "refused n: 1/1 CardInsufficientMemory");
    expect(dt_filter(&t, "third"), "n hami.io/amd-devices-allocated=dev-0,AMD,10,10:; "
                                   "hami.io/amd-devices-to-allocate=dev-0,AMD,10,10:;");
    expect(dt_filter(&t, "small2"), "refused n: 1/1 CardTimeSlicingExhausted");
}

/* Test_checkType / TestCheckAMDType: amd.com/use-gputype and nouse-gputype are case-insensitive
 * substrings of the product name; "uuid mismatch (use)". */
Test(amd, selectors)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "2",
             "[" CARD("a", "0", "2", "1000", "100",
                      "AMD-MI300X") "," CARD("b", "1", "2", "1000", "100", "AMD-MI250") "]"));
    add(POD("use", "{amd.com/use-gputype: mi300}",
            "{amd.com/gpu: 1, amd.com/gpumem: 100, amd.com/gpucores: 10}"));
    add(POD("nouse", "{amd.com/nouse-gputype: \"mi300, MI250\"}", "{amd.com/gpu: 1}"));
    add(POD("uuid", "{amd.com/use-gpu-uuid: dev-0}", "{amd.com/gpu: 1}"));
    add(POD("nouuid", "{amd.com/nouse-gpu-uuid: b}",
            "{amd.com/gpu: 1, amd.com/gpumem: 100, amd.com/gpucores: 10}"));
    expect(dt_filter(&t, "nouse"), "refused n: 2/2 CardTypeMismatch");
    expect(dt_filter(&t, "uuid"), "refused n: 2/2 CardUuidMismatch");
    expect(dt_filter(&t, "use"), "n hami.io/amd-devices-allocated=a,AMD-MI300X,100,10:; "
                                 "hami.io/amd-devices-to-allocate=a,AMD-MI300X,100,10:;");
    expect(dt_filter(&t, "nouuid"), "n hami.io/amd-devices-allocated=a,AMD-MI300X,100,10:; "
                                    "hami.io/amd-devices-to-allocate=a,AMD-MI300X,100,10:;");
}

/* The type field is the product name; an empty container keeps its entry (HAMi pads by card
 * type, so for AMD it loses it). */
Test(amd, empty_container_keeps_its_entry)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "1", "[" CARD("amd-0", "0", "4", "1000", "304", "AMD Instinct MI300X VF") "]"));
    add("- kind: Pod\n  metadata: {name: p, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c0\n    - name: c1\n      resources:\n"
        "        limits: {amd.com/gpu: 1, amd.com/gpumem: 10, amd.com/gpucores: 50}\n");
    expect(dt_filter(&t, "p"),
           "n hami.io/amd-devices-allocated=;amd-0,AMD Instinct MI300X VF,10,152:; "
           "hami.io/amd-devices-to-allocate=;amd-0,AMD Instinct MI300X VF,10,152:;");
}
