/* test_biren: the Biren backend against spec/hami-vendors.md §2.11 and HAMi's
 * pkg/device/biren/device_test.go (test names cited). */
#include "devsuite.h"

DEV_SUITE(biren);

#define NODE(name, reg)                                                                            \
    "- kind: Node\n  metadata:\n    name: " name "\n    annotations:\n"                            \
    "      hami.io/node-biren-register: '" reg "'\n"

#define CARD(id, idx, count)                                                                       \
    "{\"id\":\"" id "\",\"index\":" idx ",\"count\":" count ",\"devmem\":65024,\"devcore\":0,"     \
    "\"type\":\"Biren\",\"health\":true}"

#define POD(name, an, lim)                                                                         \
    "- kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name                     \
    ", annotations: " an "}\n  spec:\n    containers:\n    - name: c\n      resources:\n"          \
    "        limits: " lim "\n"

#define BUSY(name, node, card)                                                                     \
    "- kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n    uid: " name         \
    "\n    annotations: {hami.io/vgpu-node: " node ", hami.io/Biren-devices-allocated: \"" card    \
    ",Biren,0,0:;\"}\n  spec:\n    nodeName: " node "\n    containers:\n    - name: c\n"

/* Test_GetNodeDevices: devcore becomes 100 (only the card score reads it); ":" and "[]" have no
 * card; undecodable text is an error. */
Test(biren, inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "[{\"id\":\"7-0\",\"count\":1,\"devmem\":32768,\"type\":\"Biren\",\"health\":"
                  "true,\"devicepairscore\":{}}]"));
    add(NODE("colon", ":"));
    add(NODE("bad", "[{\"id\":1}]"));
    expect(dt_cards(&t, "n"), "7-0,Biren,0,1,32768,100,0,true,");
    expect(dt_cards(&t, "colon"),
           "error: invalid hami.io/node-biren-register \":\": no gpu found on node");
    expect(dt_cards(&t, "bad"), "error: invalid hami.io/node-biren-register \"[{\"id\":1}]\": "
                                "device 0: field id: expected a string, got number");
}

/* Test_GenerateResourceRequests (limits, requests, either) and Test_MutateAdmission (limits). */
Test(biren, requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("lim", "{}", "{birentech.com/gpu: 2}"));
    add(POD("none", "{}", "{cpu: 1}"));
    add("- kind: Pod\n  metadata: {name: req, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources: {requests: {birentech.com/gpu: 1}}\n");
    expect(dt_requests(&t, "lim"), "Biren 2,0,100,0");
    expect(dt_requests(&t, "req"), "Biren 1,0,100,0");
    expect(dt_requests(&t, "none"), "-");
    expect(dt_admit(&t, "lim", "Biren"), "found");
    expect(dt_admit(&t, "req", "Biren"), "-");
}

/* TestDevices_Fit "fit success" (two idle count-1 cards: dev-1), Test_PatchAnnotations (both
 * keys, capital B), "card overused" (CardTimeSlicingExhausted) and the partial allocation. */
Test(biren, fit)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "[" CARD("dev-0", "0", "1") "," CARD("dev-1", "1", "1") "]"));
    add(POD("a", "{}", "{birentech.com/gpu: 1}"));
    add(POD("b", "{}", "{birentech.com/gpu: 2}"));
    add(POD("c", "{}", "{birentech.com/gpu: 1}"));
    add(POD("d", "{}", "{birentech.com/gpu: 1}"));
    expect(dt_filter(&t, "a"), "n hami.io/Biren-devices-allocated=dev-1,Biren,0,0:; "
                               "hami.io/Biren-devices-to-allocate=dev-1,Biren,0,0:;");
    expect(dt_filter(&t, "b"),
           "refused n: 1/2 AllocatedCardsInsufficientRequest, 1/2 CardTimeSlicingExhausted");
    expect(dt_filter(&t, "c"), "n hami.io/Biren-devices-allocated=dev-0,Biren,0,0:; "
                               "hami.io/Biren-devices-to-allocate=dev-0,Biren,0,0:;");
    expect(dt_filter(&t, "d"), "refused n: 2/2 CardTimeSlicingExhausted");
}

/* "mutex policy rejects used device"; the UUID selectors ("use uuid mismatch", "no use uuid
 * match"); sharing is bounded by the card's count only. */
Test(biren, mutex_and_selectors)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "[" CARD("dev-0", "0", "2") "]"));
    add(BUSY("old", "n", "dev-0"));
    add(POD("mutex", "{hami.io/gpu-scheduler-policy: mutex}", "{birentech.com/gpu: 1}"));
    add(POD("use", "{birentech.com/use-gpuuuid: dev-9}", "{birentech.com/gpu: 1}"));
    add(POD("nouse", "{birentech.com/nouse-gpuuuid: dev-0}", "{birentech.com/gpu: 1}"));
    add(POD("share", "{}", "{birentech.com/gpu: 1}"));
    expect(dt_filter(&t, "mutex"), "refused n: 1/1 ExclusiveDeviceAllocateConflict");
    expect(dt_filter(&t, "use"), "refused n: 1/1 CardUuidMismatch");
    expect(dt_filter(&t, "nouse"), "refused n: 1/1 CardUuidMismatch");
    expect(dt_filter(&t, "share"), "n hami.io/Biren-devices-allocated=dev-0,Biren,0,0:; "
                                   "hami.io/Biren-devices-to-allocate=dev-0,Biren,0,0:;");
}
