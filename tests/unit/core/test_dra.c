/* test_dra: the DeviceClass decoder (exact errors), which classes conflict with the configured
 * backends' count resources (NVIDIA's and the vendors'), the guard set's order and transitions,
 * and the admission warning's text. */
#include "devcfg.h"
#include "device.h"
#include "dra.h"

#include <criterion/criterion.h>
#include <string.h>

static struct vs_devcfg cfg;

static void setup(void)
{
    cr_assert_eq(vs_devcfg_init(&cfg), VS_OK);
}

static void teardown(void)
{
    vs_devcfg_cleanup(&cfg);
}

TestSuite(dra, .init = setup, .fini = teardown);

static enum vs_err decode(const char *text, struct vs_dra_class *c, struct vs_errbuf *eb)
{
    return vs_dra_class_from_text(text, strlen(text), c, eb);
}

Test(dra, decodes_name_and_extended_resource)
{
    struct vs_dra_class c;
    struct vs_errbuf eb;
    cr_assert_eq(decode("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                        "\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{\"selectors\":[],"
                        "\"extendedResourceName\":\"nvidia.com/gpu\"}}",
                        &c, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.name, "gpu.nvidia.com");
    cr_assert_str_eq(c.ext_name, "nvidia.com/gpu");
    vs_dra_class_cleanup(&c);
    /* no spec, a null spec, an empty or null extendedResourceName: none */
    const char *none[] = {
        "{\"metadata\":{\"name\":\"a\"}}", "{\"metadata\":{\"name\":\"a\"},\"spec\":null}",
        "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"extendedResourceName\":\"\"}}",
        "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"extendedResourceName\":null}}"};
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        cr_assert_eq(decode(none[i], &c, &eb), VS_OK, "%s: %s", none[i], eb.msg);
        cr_assert_str_eq(c.name, "a");
        cr_assert_null(c.ext_name, "%s", none[i]);
        vs_dra_class_cleanup(&c);
    }
}

Test(dra, bad_classes_are_named)
{
    static const struct {
        const char *in, *err;
    } cases[] = {
        {"[]", "DeviceClass: not a JSON object"},
        {"{}", "DeviceClass: metadata is missing or not an object"},
        {"{\"metadata\":[]}", "DeviceClass: metadata is missing or not an object"},
        {"{\"metadata\":{}}", "DeviceClass: metadata.name is missing, empty or not a string"},
        {"{\"metadata\":{\"name\":\"\"}}",
         "DeviceClass: metadata.name is missing, empty or not a string"},
        {"{\"metadata\":{\"name\":7}}",
         "DeviceClass: metadata.name is missing, empty or not a string"},
        {"{\"metadata\":{\"name\":\"c\"},\"spec\":\"x\"}", "DeviceClass c: spec is not an object"},
        {"{\"metadata\":{\"name\":\"c\"},\"spec\":{\"extendedResourceName\":1}}",
         "DeviceClass c: spec.extendedResourceName is not a string"},
        {"{\"metadata\":",
         "DeviceClass: invalid JSON: unexpected token near end of file at line 1 column 12"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vs_dra_class c;
        struct vs_errbuf eb;
        cr_assert_eq(decode(cases[i].in, &c, &eb), VS_ERR_PARSE, "%s", cases[i].in);
        cr_assert_str_eq(eb.msg, cases[i].err, "%s: %s", cases[i].in, eb.msg);
        cr_assert_null(c.name);
        cr_assert_null(c.ext_name);
    }
}

static const char *conflict_of(const char *ext)
{
    static char name[] = "cls";
    struct vs_dra_class c = {.name = name, .ext_name = (char *)ext};
    return vs_dra_class_conflict(&c, cfg.devices);
}

/* NVIDIA's count resource and every configured backend's: the memory and cores resources, the
 * implicit names and other vendors' words are not count resources. */
Test(dra, conflicts_are_the_backends_count_resources)
{
    cr_assert_str_eq(conflict_of("nvidia.com/gpu"), "nvidia.com/gpu");
    cr_assert_str_eq(conflict_of("hygon.com/dcunum"), "hygon.com/dcunum");
    cr_assert_str_eq(conflict_of("cambricon.com/vmlu"), "cambricon.com/vmlu");
    cr_assert_null(conflict_of("nvidia.com/gpumem"));
    cr_assert_null(conflict_of("nvidia.com/gpucores"));
    cr_assert_null(conflict_of("example.com/fpga"));
    cr_assert_null(conflict_of(NULL));
    size_t counted = 0;
    for (size_t i = 0; i < cfg.devices->n; i++) {
        const char *r = cfg.devices->dev[i]->res_count;
        if (!r)
            continue;
        counted++;
        cr_assert_str_eq(conflict_of(r), r, "backend %s", cfg.devices->dev[i]->word);
    }
    cr_assert_gt(counted, 2);
    /* A renamed NVIDIA resource (resourceCountName) is the one guarded. */
    free(cfg.res_count);
    cfg.res_count = strdup("example.com/vgpu");
    struct vs_errbuf eb;
    cr_assert_eq(vs_devcfg_finish(&cfg, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(conflict_of("example.com/vgpu"), "example.com/vgpu");
    cr_assert_null(conflict_of("nvidia.com/gpu"));
}

static char *guard_text(const struct vs_dra_guard *g)
{
    json_t *a = vs_dra_guard_json(g);
    cr_assert_not_null(a);
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

static void set(struct vs_dra_guard *g, const char *name, const char *ext, const char *want_before,
                const char *want_after)
{
    struct vs_dra_class c = {.name = (char *)name, .ext_name = (char *)ext};
    char *before = (char *)"unset";
    const char *after = "unset";
    cr_assert(vs_dra_guard_set(g, &c, cfg.devices, &before, &after));
    if (want_before)
        cr_assert_str_eq(before, want_before, "%s", name);
    else
        cr_assert_null(before, "%s", name);
    if (want_after)
        cr_assert_str_eq(after, want_after, "%s", name);
    else
        cr_assert_null(after, "%s", name);
    free(before);
}

Test(dra, guard_follows_classes_in_name_order)
{
    struct vs_dra_guard g = {0};
    set(&g, "zeta", "nvidia.com/gpu", NULL, "nvidia.com/gpu");
    set(&g, "alpha", "hygon.com/dcunum", NULL, "hygon.com/dcunum");
    set(&g, "fpga", "example.com/fpga", NULL, NULL); /* not ours: not kept */
    set(&g, "mid", "nvidia.com/gpu", NULL, "nvidia.com/gpu");
    char *t = guard_text(&g);
    cr_assert_str_eq(t, "[{\"deviceclass\":\"alpha\",\"resource\":\"hygon.com/dcunum\"},"
                        "{\"deviceclass\":\"mid\",\"resource\":\"nvidia.com/gpu\"},"
                        "{\"deviceclass\":\"zeta\",\"resource\":\"nvidia.com/gpu\"}]");
    free(t);
    /* unchanged, changed, dropped by an edit, removed */
    set(&g, "zeta", "nvidia.com/gpu", "nvidia.com/gpu", "nvidia.com/gpu");
    set(&g, "alpha", "nvidia.com/gpu", "hygon.com/dcunum", "nvidia.com/gpu");
    set(&g, "mid", NULL, "nvidia.com/gpu", NULL);
    char *was = vs_dra_guard_remove(&g, "zeta");
    cr_assert_str_eq(was, "nvidia.com/gpu");
    free(was);
    cr_assert_null(vs_dra_guard_remove(&g, "zeta"));
    cr_assert_null(vs_dra_guard_remove(&g, "fpga"));
    t = guard_text(&g);
    cr_assert_str_eq(t, "[{\"deviceclass\":\"alpha\",\"resource\":\"nvidia.com/gpu\"}]");
    free(t);
    vs_dra_guard_cleanup(&g);
    t = guard_text(&g);
    cr_assert_str_eq(t, "[]");
    free(t);
}

Test(dra, warning_text)
{
    char out[256];
    vs_dra_warning("gpu.nvidia.com", "nvidia.com/gpu", out, sizeof(out));
    cr_assert_str_eq(out, "DeviceClass gpu.nvidia.com maps nvidia.com/gpu to DRA: kube-scheduler "
                          "will refuse this pod before vgpu-sched sees it");
}

/* ---- ResourceSlice ---- */

static enum vs_err slice(const char *text, struct vs_dra_slice *s, struct vs_errbuf *eb)
{
    return vs_dra_slice_from_text(text, strlen(text), s, eb);
}

Test(dra, slice_decodes_uuid_and_parent_uuid_plain_or_qualified)
{
    struct vs_dra_slice s;
    struct vs_errbuf eb;
    cr_assert_eq(
        slice("{\"metadata\":{\"name\":\"a-gpu\"},\"spec\":{\"nodeName\":\"node-a\",\"driver\":"
              "\"gpu.nvidia.com\",\"pool\":{\"name\":\"node-a\",\"generation\":1},\"devices\":["
              "{\"name\":\"gpu-0\",\"attributes\":{\"uuid\":{\"string\":\"GPU-0\"},\"index\":{"
              "\"int\":0}}},"
              "{\"name\":\"mig-1\",\"attributes\":{\"gpu.nvidia.com/uuid\":{\"string\":\"MIG-1\"},"
              "\"parentUUID\":{\"string\":\"GPU-1\"}}},"
              "{\"name\":\"other\",\"allowMultipleAllocations\":true}]}}",
              &s, &eb),
        VS_OK, "%s", eb.msg);
    cr_assert_str_eq(s.name, "a-gpu");
    cr_assert_str_eq(s.node, "node-a");
    cr_assert_str_eq(s.driver, "gpu.nvidia.com");
    cr_assert_str_eq(s.pool, "node-a");
    cr_assert_eq(s.n, 3);
    cr_assert_str_eq(s.devs[0].name, "gpu-0");
    cr_assert_str_eq(s.devs[0].uuid, "GPU-0");
    cr_assert_null(s.devs[0].parent);
    cr_assert_str_eq(s.devs[1].uuid, "MIG-1");
    cr_assert_str_eq(s.devs[1].parent, "GPU-1");
    cr_assert_null(s.devs[2].uuid);
    cr_assert_not(s.devs[0].multi);
    cr_assert(s.devs[2].multi);
    vs_dra_slice_cleanup(&s);
}

Test(dra, slice_errors_name_the_field)
{
    static const struct {
        const char *in, *msg;
    } cases[] = {
        {"[]", "ResourceSlice: not a JSON object"},
        {"{\"spec\":{}}", "ResourceSlice: metadata.name is missing, empty or not a string"},
        {"{\"metadata\":{\"name\":\"s\"}}", "ResourceSlice s: spec is missing or not an object"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"nodeName\":1}}",
         "ResourceSlice s: spec.nodeName is not a string"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"pool\":{\"name\":\"p\"}}}",
         "ResourceSlice s: spec.driver is missing, empty or not a string"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{}}}",
         "ResourceSlice s: spec.pool.name is missing, empty or not a string"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\"},"
         "\"devices\":{}}}",
         "ResourceSlice s: spec.devices is not an array"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\"},"
         "\"devices\":[{\"name\":\"\"}]}}",
         "ResourceSlice s: spec.devices[0].name is missing, empty or not a string"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\"},"
         "\"devices\":[{\"name\":\"x\",\"attributes\":[]}]}}",
         "ResourceSlice s: spec.devices[0].attributes is not an object"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\"},"
         "\"devices\":[{\"name\":\"x\",\"attributes\":{\"d/uuid\":\"GPU-0\"}}]}}",
         "ResourceSlice s: spec.devices[0].attributes[d/uuid] is not an object"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\"},"
         "\"devices\":[{\"name\":\"x\"},{\"name\":\"y\",\"attributes\":{\"parentUUID\":{"
         "\"string\":1}}}]}}",
         "ResourceSlice s: spec.devices[1].attributes[parentUUID].string is not a string"},
        {"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"pool\":{\"name\":\"p\"},"
         "\"devices\":[{\"name\":\"x\",\"allowMultipleAllocations\":\"yes\"}]}}",
         "ResourceSlice s: spec.devices[0].allowMultipleAllocations is not a boolean"},
        {"{", "ResourceSlice: invalid JSON: string or '}' expected near end of file at line 1 "
              "column 1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vs_dra_slice s;
        struct vs_errbuf eb;
        cr_assert_eq(slice(cases[i].in, &s, &eb), VS_ERR_PARSE, "%s", cases[i].in);
        cr_assert_str_eq(eb.msg, cases[i].msg);
        cr_assert_null(s.name);
        cr_assert_null(s.devs);
    }
}

/* ---- ResourceClaim ---- */

static enum vs_err claim(const char *text, struct vs_dra_claim *c, struct vs_errbuf *eb)
{
    return vs_dra_claim_from_text(text, strlen(text), c, eb);
}

Test(dra, claim_decodes_results)
{
    struct vs_dra_claim c;
    struct vs_errbuf eb;
    cr_assert_eq(
        claim("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"train\",\"uid\":\"u-1\"},"
              "\"status\":{\"allocation\":{\"devices\":{\"results\":["
              "{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"node-a\","
              "\"device\":\"gpu-0\"},"
              "{\"request\":\"s\",\"driver\":\"hami\",\"pool\":\"p\",\"device\":\"gpu-1\","
              "\"shareID\":\"x1\",\"consumedCapacity\":{\"hami/memory\":\"10Gi\",\"cores\":"
              "\"30\",\"other\":\"1\"}},"
              "{\"request\":\"m\",\"driver\":\"d\",\"pool\":\"p\",\"device\":\"gpu-2\","
              "\"shareID\":\"x2\",\"consumedCapacity\":{\"memory\":\"1000001\"}},"
              "{\"request\":\"a\",\"driver\":\"d\",\"pool\":\"p\",\"device\":\"z\","
              "\"adminAccess\":true}]}}}}",
              &c, &eb),
        VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.ns, "ml");
    cr_assert_str_eq(c.name, "train");
    cr_assert_str_eq(c.uid, "u-1");
    cr_assert_null(c.mirror_of);
    cr_assert_eq(c.n, 4);
    cr_assert_str_eq(c.res[0].device, "gpu-0");
    cr_assert_null(c.res[0].share);
    cr_assert_not(c.res[0].has_mem);
    cr_assert_str_eq(c.res[1].share, "x1");
    cr_assert(c.res[1].has_mem && c.res[1].mem_mib == 10240);
    cr_assert(c.res[1].has_cores && c.res[1].cores == 30);
    cr_assert(c.res[2].has_mem && c.res[2].mem_mib == 1); /* bytes rounded up to MiB */
    cr_assert_not(c.res[2].has_cores);
    cr_assert(c.res[3].admin);
    cr_assert_not(c.res[0].admin);
    vs_dra_claim_cleanup(&c);

    cr_assert_eq(claim("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"p\",\"uid\":\"u\"},"
                       "\"status\":{}}",
                       &c, &eb),
                 VS_OK);
    cr_assert_eq(c.n, 0); /* not allocated */
    vs_dra_claim_cleanup(&c);

    cr_assert_eq(claim("{\"metadata\":{\"namespace\":\"vgpu\",\"name\":\"m\",\"uid\":\"u\","
                       "\"labels\":{\"app\":\"x\",\"vgpu-sched.io/mirror-of\":\"pod-uid\"}}}",
                       &c, &eb),
                 VS_OK);
    cr_assert_str_eq(c.mirror_of, "pod-uid");
    vs_dra_claim_cleanup(&c);
}

Test(dra, claim_errors_name_the_field)
{
#define M "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"c\",\"uid\":\"u\"},"
#define R(x)                                                                                       \
    M "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":"       \
      "\"d\",\"pool\":\"p\",\"device\":\"x\"" x "}]}}}}"
    static const struct {
        const char *in, *msg;
    } cases[] = {
        {"[1]", "ResourceClaim: not a JSON object"},
        {"{}", "ResourceClaim: metadata is missing or not an object"},
        {"{\"metadata\":{\"name\":\"c\",\"uid\":\"u\"}}",
         "ResourceClaim: metadata.namespace is missing, empty or not a string"},
        {"{\"metadata\":{\"namespace\":\"ml\",\"name\":\"c\"}}",
         "ResourceClaim: metadata.uid is missing, empty or not a string"},
        {M "\"status\":[]}", "ResourceClaim ml/c: status is not an object"},
        {"{\"metadata\":{\"namespace\":\"ml\",\"name\":\"c\",\"uid\":\"u\",\"labels\":[]}}",
         "ResourceClaim ml/c: metadata.labels is not an object"},
        {"{\"metadata\":{\"namespace\":\"ml\",\"name\":\"c\",\"uid\":\"u\",\"labels\":{"
         "\"vgpu-sched.io/mirror-of\":1}}}",
         "ResourceClaim ml/c: metadata.labels[vgpu-sched.io/mirror-of] is not a string"},
        {M "\"status\":{\"allocation\":1}}",
         "ResourceClaim ml/c: status.allocation is not an object"},
        {M "\"status\":{\"allocation\":{\"devices\":\"\"}}}",
         "ResourceClaim ml/c: status.allocation.devices is not an object"},
        {M "\"status\":{\"allocation\":{\"devices\":{\"results\":{}}}}}",
         "ResourceClaim ml/c: status.allocation.devices.results is not an array"},
        {M "\"status\":{\"allocation\":{\"devices\":{\"results\":[1]}}}}",
         "ResourceClaim ml/c: status.allocation.devices.results[0] is not an object"},
        {M "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\","
           "\"driver\":\"d\",\"pool\":\"p\"}]}}}}",
         "ResourceClaim ml/c: status.allocation.devices.results[0].device is missing, empty or "
         "not a string"},
        {R(",\"adminAccess\":\"yes\""),
         "ResourceClaim ml/c: status.allocation.devices.results[0].adminAccess is not a boolean"},
        {R(",\"shareID\":5"),
         "ResourceClaim ml/c: status.allocation.devices.results[0].shareID is not a string"},
        {R(",\"consumedCapacity\":[]"),
         "ResourceClaim ml/c: status.allocation.devices.results[0].consumedCapacity is not an "
         "object"},
        {R(",\"consumedCapacity\":{\"memory\":\"lots\"}"),
         "ResourceClaim ml/c: status.allocation.devices.results[0].consumedCapacity[memory] is "
         "not a non-negative quantity"},
        {R(",\"consumedCapacity\":{\"cores\":\"-1\"}"),
         "ResourceClaim ml/c: status.allocation.devices.results[0].consumedCapacity[cores] is "
         "not a non-negative quantity"},
    };
#undef R
#undef M
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vs_dra_claim c;
        struct vs_errbuf eb;
        cr_assert_eq(claim(cases[i].in, &c, &eb), VS_ERR_PARSE, "%s", cases[i].in);
        cr_assert_str_eq(eb.msg, cases[i].msg);
        cr_assert_null(c.ns);
        cr_assert_null(c.res);
    }
}
