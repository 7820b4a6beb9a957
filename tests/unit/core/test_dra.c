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
