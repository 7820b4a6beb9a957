/* test_awsneuron: the AWS Neuron backend against spec/hami-vendors.md §2.9 and HAMi's
 * pkg/device/awsneuron/device_test.go (test names cited), the section's probes, and our rules where
 * HAMi's are process-wide or position-based (per-node cores per device, runs of devices in index
 * order). */
#include "devsuite.h"

DEV_SUITE(awsneuron);

/* A node of instance type `it` with `d` devices and `k` cores in its capacity. */
#define NODE(name, it, d, k)                                                                       \
    "- kind: Node\n  metadata:\n    name: " name                                                   \
    "\n    labels: {node.kubernetes.io/instance-type: " it                                         \
    "}\n  status:\n    capacity: {aws.amazon.com/neuron: \"" d                                     \
    "\", aws.amazon.com/neuroncore: \"" k "\"}\n"

/* A pending pod with annotations `an` and one container asking limits `lim`. */
#define POD(name, an, lim)                                                                         \
    "- kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name                     \
    ", annotations: " an "}\n  spec:\n    containers:\n    - name: c\n      resources:\n"          \
    "        limits: " lim "\n"

/* A pod placed on `node` holding device `dev` with core mask `mask`. */
#define BUSY(name, node, dev, mask)                                                                \
    "- kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n    uid: " name         \
    "\n    annotations: {hami.io/vgpu-node: " node                                                 \
    ", hami.io/aws-neuron-devices-allocated: \"" node "-AWSNeuron-" dev ",AWSNeuron,0," mask       \
    ":;\"}\n  spec:\n    nodeName: " node "\n    containers:\n    - name: c\n"

/* Test_GetNodeDevices: label inf2, 1 device, 2 cores: count 2, devmem 0, devcore mask 3. */
Test(awsneuron, inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("test", "inf2.xlarge", "1", "2"));
    add(NODE("inf1", "inf1.6xlarge", "4", "16"));
    add("- kind: Node\n  metadata: {name: nocores}\n  status:\n"
        "    capacity: {aws.amazon.com/neuron: \"2\"}\n");
    expect(dt_cards(&t, "test"), "test-AWSNeuron-0,AWSNeuron,0,2,0,3,0,true,");
    expect(dt_cards(&t, "inf1"), "inf1-AWSNeuron-0,AWSNeuron,0,4,0,15,0,true,; "
                                 "inf1-AWSNeuron-1,AWSNeuron,1,4,0,15,0,true,; "
                                 "inf1-AWSNeuron-2,AWSNeuron,2,4,0,15,0,true,; "
                                 "inf1-AWSNeuron-3,AWSNeuron,3,4,0,15,0,true,");
    /* Cores per device are the node's own: none here, so no device can be used. */
    expect(dt_cards(&t, "nocores"), "nocores-AWSNeuron-0,AWSNeuron,0,0,0,0,0,true,; "
                                    "nocores-AWSNeuron-1,AWSNeuron,1,0,0,0,0,true,");
    const struct vs_node *n = vs_model_node(t.m, "test");
    cr_assert_str_eq(json_string_value(json_object_get(n->cards[0].custom, "AWSNodeType")),
                     "inf2.xlarge");
}

/* Test_splitCoreRequest: 1 -> (1,1), 2 -> (1,2), 6 -> (3,2), 3 -> error; 4 -> (2,2) whatever
 * the nodes' cores per device. Devices take every core of the device chosen (cores 0 here). */
Test(awsneuron, requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("c1", "{}", "{aws.amazon.com/neuroncore: 1}"));
    add(POD("c2", "{}", "{aws.amazon.com/neuroncore: 2}"));
    add(POD("c4", "{}", "{aws.amazon.com/neuroncore: 4}"));
    add(POD("c6", "{}", "{aws.amazon.com/neuroncore: 6}"));
    add(POD("c3", "{}", "{aws.amazon.com/neuroncore: 3}"));
    add(POD("d2", "{}", "{aws.amazon.com/neuron: 2, aws.amazon.com/neuroncore: 3}"));
    add(POD("d0", "{}", "{aws.amazon.com/neuron: 0}"));
    add("- kind: Pod\n  metadata: {name: req, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources: {requests: {aws.amazon.com/neuron: 1}}\n");
    expect(dt_requests(&t, "c1"), "AWSNeuron 1,0,0,1");
    expect(dt_requests(&t, "c2"), "AWSNeuron 1,0,0,2");
    expect(dt_requests(&t, "c4"), "AWSNeuron 2,0,0,2");
    expect(dt_requests(&t, "c6"), "AWSNeuron 3,0,0,2");
    expect(dt_requests(&t, "c3"), "error: invalid aws.amazon.com/neuroncore \"3\" in container "
                                  "c: must be 1 or a multiple of 2");
    expect(dt_requests(&t, "d2"), "AWSNeuron 2,0,0,0");
    expect(dt_requests(&t, "req"), "AWSNeuron 1,0,0,0");
    expect(dt_requests(&t, "d0"), "error: invalid aws.amazon.com/neuron \"0\" in container c: "
                                  "must be a whole number between 1 and 2147483647");
}

/* The webhook's validation (HAMi's words), limits then requests. */
Test(awsneuron, admission)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("ok", "{}", "{aws.amazon.com/neuroncore: 4}"));
    add(POD("odd", "{}", "{aws.amazon.com/neuroncore: 3}"));
    add(POD("frac", "{}", "{aws.amazon.com/neuron: 500m}"));
    add(POD("zero", "{}", "{aws.amazon.com/neuron: 0}"));
    add(POD("big", "{}", "{aws.amazon.com/neuron: 3e9}"));
    add(POD("cpu", "{}", "{cpu: 1}"));
    add("- kind: Pod\n  metadata: {name: req, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources: {requests: {aws.amazon.com/neuron: 1}}\n");
    expect(dt_admit(&t, "ok", "AWSNeuron"), "found");
    expect(dt_admit(&t, "req", "AWSNeuron"), "found");
    expect(dt_admit(&t, "cpu", "AWSNeuron"), "-");
    expect(dt_admit(&t, "odd", "AWSNeuron"),
           "error: aws.amazon.com/neuroncore must be 1 or a multiple of 2, got 3");
    expect(dt_admit(&t, "frac", "AWSNeuron"), "error: aws.amazon.com/neuron must be an integer");
    expect(dt_admit(&t, "zero", "AWSNeuron"),
           "error: aws.amazon.com/neuron must be greater than 0");
    expect(dt_admit(&t, "big", "AWSNeuron"),
           "error: aws.amazon.com/neuron must not exceed 2147483647");
}

/* TestDevices_Fit "fit success": two idle devices, two cores: the last one (dev-1), mask 3;
 * Test_PatchAnnotations "neuroncore device": core indices 2 x index, 2 x index + 1. */
Test(awsneuron, fit_cores)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "trn1.2xlarge", "2", "4"));
    add(POD("p", "{}", "{aws.amazon.com/neuroncore: 2}"));
    expect(dt_filter(&t, "p"),
           "n AWS_NEURON_IDS=2,3 NEURON_ALLOCATED=false "
           "NEURON_RESOURCE_TYPE=aws.amazon.com/neuroncore "
           "aws.amazon.com/predicate-node=n "
           "hami.io/aws-neuron-devices-allocated=n-AWSNeuron-1,AWSNeuron,0,3:;");
}

/* TestDevices_Fit "core not enough": one device with core 0 taken, two cores asked; one core still
 * fits and takes the other bit (3 - 1 = 2, core index 1). */
Test(awsneuron, core_not_enough)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "trn1.2xlarge", "1", "2"));
    add(BUSY("b", "n", "0", "1"));
    add(POD("two", "{}", "{aws.amazon.com/neuroncore: 2}"));
    add(POD("one", "{}", "{aws.amazon.com/neuroncore: 1}"));
    expect(dt_filter(&t, "two"), "refused n: 1/1 CardInsufficientCore");
    expect(dt_filter(&t, "one"),
           "n AWS_NEURON_IDS=1 NEURON_ALLOCATED=false "
           "NEURON_RESOURCE_TYPE=aws.amazon.com/neuroncore "
           "aws.amazon.com/predicate-node=n "
           "hami.io/aws-neuron-devices-allocated=n-AWSNeuron-0,AWSNeuron,0,2:;");
}

/* TestDevices_Fit "NumaNotFit with multiple devices" (two idle trn devices, 2 asked: 2 is no
 * allowed run off Inferentia) and Nums 2 on one device (NodeInsufficientDevice before Fit). */
Test(awsneuron, numa_not_fit)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "trn1.2xlarge", "2", "4"));
    add(POD("two", "{}", "{aws.amazon.com/neuron: 2}"));
    add(POD("three", "{}", "{aws.amazon.com/neuron: 3}"));
    expect(dt_filter(&t, "two"), "refused n: 1/2 NumaNotFit");
    expect(dt_filter(&t, "three"), "refused n: NodeInsufficientDevice");
}

/* The section's probe: trn1, 2 devices x 2 cores, containers [1 core, 1 device]: the core goes on
 * device 1 (core index 2), the device request then takes device 0; AWS_NEURON_IDS accumulates. */
Test(awsneuron, probe_two_containers)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n7", "trn1.2xlarge", "2", "4"));
    add("- kind: Pod\n  metadata: {name: p, namespace: default}\n  spec:\n    containers:\n"
        "    - name: a\n      resources: {limits: {aws.amazon.com/neuroncore: 1}}\n"
        "    - name: b\n      resources: {limits: {aws.amazon.com/neuron: 1}}\n");
    expect(dt_filter(&t, "p"),
           "n7 AWS_NEURON_IDS=2,0 NEURON_ALLOCATED=false "
           "NEURON_RESOURCE_TYPE=aws.amazon.com/neuroncore aws.amazon.com/predicate-node=n7 "
           "hami.io/aws-neuron-devices-allocated=n7-AWSNeuron-1,AWSNeuron,0,1:;"
           "n7-AWSNeuron-0,AWSNeuron,0,3:;");
}

/* Test_graphSelect (16 devices): inf2, 16 -> all; trn, device 7 busy, 8 -> 8..15; trn, 7 and 13
 * busy -> none; inf, 5 and 14 busy, 8 -> 6..13 (any start on Inferentia). */
static char *run_of(const char *itype, const char *busy1, const char *busy2, const char *nums)
{
    char buf[1024];
    cr_assert(dt_init(&t, NULL, false, false));
    snprintf(buf, sizeof(buf), NODE("n", "%s", "16", "32"), itype);
    add(buf);
    if (busy1)
        add((snprintf(buf, sizeof(buf), BUSY("b1", "n", "%s", "3"), busy1), buf));
    if (busy2)
        add((snprintf(buf, sizeof(buf), BUSY("b2", "n", "%s", "3"), busy2), buf));
    add((snprintf(buf, sizeof(buf), POD("p", "{}", "{aws.amazon.com/neuron: %s}"), nums), buf));
    char *s = dt_filter(&t, "p");
    dt_cleanup(&t);
    memset(&t, 0, sizeof(t)); /* fini cleans up again */
    /* The device indices chosen (AWS_NEURON_IDS), or the refusal. */
    const char *ids = strstr(s, "AWS_NEURON_IDS=");
    char *r = strdup(ids ? ids + 15 : s);
    char *sp = strchr(r, ' ');
    if (ids && sp)
        *sp = '\0';
    free(s);
    return r;
}

Test(awsneuron, runs_of_devices)
{
    expect(run_of("inf2.48xlarge", NULL, NULL, "16"), "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
    expect(run_of("trn1.32xlarge", "7", NULL, "8"), "8,9,10,11,12,13,14,15");
    expect(run_of("trn1.32xlarge", "7", "13", "8"), "refused n: 1/16 NumaNotFit");
    expect(run_of("inf2.48xlarge", "5", "14", "8"), "6,7,8,9,10,11,12,13");
    expect(run_of("trn1.32xlarge", NULL, NULL, "3"), "refused n: 1/16 NumaNotFit");
    expect(run_of("Inf1", "0", NULL, "3"), "1,2,3");
}

/* Where we differ: under `mutex` HAMi's runs are over the sorted positions (busy devices first)
 * and it then takes the devices whose indices equal those positions: with device 7 busy it
 * checks positions 4-7 (devices 3,4,5,6) and takes devices 4,5,6,7, busy 7 included. We look for
 * the run over the devices in index order: 0-3. */
Test(awsneuron, runs_in_index_order_under_mutex)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "trn1.32xlarge", "8", "16"));
    add(BUSY("b", "n", "7", "3"));
    add(POD("p", "{hami.io/gpu-scheduler-policy: mutex}", "{aws.amazon.com/neuron: 4}"));
    expect(dt_filter(&t, "p"), "n AWS_NEURON_IDS=0,1,2,3 NEURON_ALLOCATED=false "
                               "aws.amazon.com/predicate-node=n "
                               "hami.io/aws-neuron-devices-allocated=n-AWSNeuron-0,AWSNeuron,0,3:"
                               "n-AWSNeuron-1,AWSNeuron,0,3:n-AWSNeuron-2,AWSNeuron,0,3:"
                               "n-AWSNeuron-3,AWSNeuron,0,3:;");
}

/* A device asked in requests only gets core indices and the core resource type, as in HAMi
 * (it looks at the limits). */
Test(awsneuron, device_in_requests_only)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "trn1.2xlarge", "1", "2"));
    add("- kind: Pod\n  metadata: {name: p, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources: {requests: {aws.amazon.com/neuron: 1}}\n");
    expect(dt_filter(&t, "p"),
           "n AWS_NEURON_IDS=0,1 NEURON_ALLOCATED=false "
           "NEURON_RESOURCE_TYPE=aws.amazon.com/neuroncore "
           "aws.amazon.com/predicate-node=n "
           "hami.io/aws-neuron-devices-allocated=n-AWSNeuron-0,AWSNeuron,0,3:;");
}

/* Cores per device are the node's own: on an inf1 node (4 per device) core indices are 4 x index
 * + bit. HAMi's masks have two bits, so two cores record mask 3 and the next two mask 0. */
Test(awsneuron, cores_per_device_per_node)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("a", "inf1.6xlarge", "1", "4"));
    add(POD("p", "{}", "{aws.amazon.com/neuroncore: 2}"));
    add(POD("q", "{}", "{aws.amazon.com/neuroncore: 2}"));
    expect(dt_filter(&t, "p"),
           "a AWS_NEURON_IDS=0,1 NEURON_ALLOCATED=false "
           "NEURON_RESOURCE_TYPE=aws.amazon.com/neuroncore "
           "aws.amazon.com/predicate-node=a "
           "hami.io/aws-neuron-devices-allocated=a-AWSNeuron-0,AWSNeuron,0,3:;");
    expect(dt_filter(&t, "q"),
           "a hami.io/aws-neuron-devices-allocated=a-AWSNeuron-0,AWSNeuron,0,0:;");
}

/* UUID selectors apply to single devices. */
Test(awsneuron, uuid_selectors)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "trn1.2xlarge", "2", "4"));
    add(POD("use", "{aws.amazon.com/use-neuron-uuid: n-AWSNeuron-0}",
            "{aws.amazon.com/neuron: 1}"));
    add(POD("none", "{aws.amazon.com/nouse-neuron-uuid: \"n-AWSNeuron-0,n-AWSNeuron-1\"}",
            "{aws.amazon.com/neuron: 1}"));
    expect(dt_filter(&t, "none"), "refused n: 2/2 CardUuidMismatch");
    expect(dt_filter(&t, "use"),
           "n AWS_NEURON_IDS=0 NEURON_ALLOCATED=false "
           "aws.amazon.com/predicate-node=n "
           "hami.io/aws-neuron-devices-allocated=n-AWSNeuron-0,AWSNeuron,0,3:;");
}
