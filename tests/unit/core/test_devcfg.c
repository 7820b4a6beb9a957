/* test_devcfg: HAMi's chart defaults and device-config.yaml loading (plain file and ConfigMap
 * form), with the exact message of every error class and the "bad file changes nothing" rule. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "devcfg_yaml.h"
#include "testutil.h"

#define DATA "tests/data/devcfg/"

static void assert_defaults(const struct vs_devcfg *c)
{
    cr_assert_str_eq(c->res_count, "nvidia.com/gpu");
    cr_assert_str_eq(c->res_mem, "nvidia.com/gpumem");
    cr_assert_str_eq(c->res_mem_pct, "nvidia.com/gpumem-percentage");
    cr_assert_str_eq(c->res_cores, "nvidia.com/gpucores");
    cr_assert_str_eq(c->res_priority, "nvidia.com/priority");
    cr_assert_eq(c->default_memory, 0);
    cr_assert_eq(c->default_cores, 0);
    cr_assert_eq(c->default_gpu_num, 1);
    cr_assert_eq(c->memory_factor, 1);
    cr_assert_not(c->overwrite_env);
    cr_assert_str_eq(c->gpu_core_policy, "default");
    cr_assert_str_eq(c->runtime_class_name, "");
}

Test(devcfg, defaults)
{
    struct vs_devcfg c;
    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    assert_defaults(&c);
    vs_devcfg_cleanup(&c);
    cr_assert_null(c.res_count);
    vs_devcfg_cleanup(NULL);
}

Test(devcfg, full_file)
{
    struct vs_devcfg c;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    cr_assert_eq(vs_devcfg_load(&c, DATA "full.yaml", &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.res_count, "example.com/vgpu");
    cr_assert_str_eq(c.res_mem, "example.com/vgpu-mem");
    cr_assert_str_eq(c.res_mem_pct, "example.com/vgpu-mem-pct");
    cr_assert_str_eq(c.res_cores, "example.com/vgpu-cores");
    cr_assert_str_eq(c.res_priority, "example.com/vgpu-priority");
    cr_assert_eq(c.default_memory, 2048);
    cr_assert_eq(c.default_cores, 25);
    cr_assert_eq(c.default_gpu_num, 2);
    cr_assert_eq(c.memory_factor, 1024);
    cr_assert(c.overwrite_env);
    cr_assert_str_eq(c.gpu_core_policy, "force");
    cr_assert_str_eq(c.runtime_class_name, "nvidia");
    vs_devcfg_cleanup(&c);
}

Test(devcfg, absent_and_null_keys_keep_current_values)
{
    struct vs_devcfg c;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    free(c.runtime_class_name);
    c.runtime_class_name = strdup("kept");
    cr_assert_eq(vs_devcfg_load(&c, DATA "partial.yaml", &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(c.default_memory, 1000);
    cr_assert_str_eq(c.gpu_core_policy, "disable");
    cr_assert_str_eq(c.runtime_class_name, "kept");
    cr_assert_str_eq(c.res_count, "nvidia.com/gpu");
    cr_assert_eq(c.default_gpu_num, 1);
    vs_devcfg_cleanup(&c);
}

Test(devcfg, configmap_form)
{
    struct vs_devcfg c;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    cr_assert_eq(vs_devcfg_load(&c, DATA "configmap.yaml", &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(c.default_memory, 4096);
    cr_assert_eq(c.default_cores, 10);
    cr_assert_str_eq(c.res_mem, "nvidia.com/gpumem");
    cr_assert_str_eq(c.gpu_core_policy, "default");
    cr_assert_not(c.overwrite_env);
    vs_devcfg_cleanup(&c);
}

Test(devcfg, buffer_form_needs_no_nul_and_accepts_edge_values)
{
    /* The trailing garbage lies outside len. */
    static const char text[] = "nvidia:\n"
                               "  defaultMemory: \"2147483647\"\n"
                               "  defaultCores: +0\n"
                               "  memoryFactor: 0\n"
                               "  overwriteEnv: TRUE\n"
                               "  resourceCountName: 123\n"
                               "  migProfileAllowlist: []\n"
                               "  defaultGPUNum: 5\n"
                               "  defaultGPUNum: 3\n"
                               "  [complex]: ignored\n"
                               "]]]";
    struct vs_devcfg c;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    cr_assert_eq(vs_devcfg_load_buf(&c, text, strlen(text) - 3, "mem", &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(c.default_memory, 2147483647);
    cr_assert_eq(c.default_cores, 0);
    cr_assert_eq(c.memory_factor, 0);
    cr_assert(c.overwrite_env);
    cr_assert_str_eq(c.res_count, "123");
    cr_assert_eq(c.default_gpu_num, 3);
    vs_devcfg_cleanup(&c);
}

/* A file with another vendor's section but no nvidia section is accepted; as in HAMi, NVIDIA then
 * has no resource names, so no container asks for an NVIDIA card. The document is kept whole
 * for the other backends, YAML scalars typed (int, bool, text). */
Test(devcfg, vendor_section_without_nvidia)
{
    static const char text[] = "hygon:\n"
                               "  resourceCountName: hygon.com/dcunum\n"
                               "  memoryFactor: 2\n"
                               "  flag: true\n"
                               "  quoted: \"7\"\n";
    struct vs_devcfg c;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    cr_assert_eq(vs_devcfg_load_buf(&c, text, strlen(text), "v.yaml", &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.res_count, "");
    cr_assert_str_eq(c.res_mem, "");
    cr_assert_str_eq(vs_devcfg_str(c.doc, "hygon", "resourceCountName"), "hygon.com/dcunum");
    const json_t *h = json_object_get(c.doc, "hygon");
    cr_assert_eq(json_integer_value(json_object_get(h, "memoryFactor")), 2);
    cr_assert(json_is_true(json_object_get(h, "flag")));
    cr_assert_str_eq(json_string_value(json_object_get(h, "quoted")), "7");
    const struct vs_device *nv = vs_devices_find(c.devices, VS_VENDOR);
    cr_assert_not_null(nv);
    cr_assert_null(nv->res_count);
    vs_devcfg_cleanup(&c);
}

Test(devcfg, unreadable_file)
{
    struct vs_devcfg c;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    cr_assert_eq(vs_devcfg_load(&c, DATA "missing.yaml", &eb), VS_ERR_IO);
    cr_assert_str_eq(eb.msg, "tests/data/devcfg/missing.yaml: cannot read: No such file or "
                             "directory");
    assert_defaults(&c);
    vs_devcfg_cleanup(&c);
}

Test(devcfg, tmp_file_error_names_the_path)
{
    char *path = vs_test_write_tmp("nvidia:\n  defaultMemory: abc\n");
    struct vs_devcfg c;
    struct vs_errbuf eb = {{0}};
    char want[256];

    cr_assert_not_null(path);
    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    cr_assert_eq(vs_devcfg_load(&c, path, &eb), VS_ERR_PARSE);
    snprintf(want, sizeof(want), "%s: nvidia.defaultMemory: invalid integer \"abc\"", path);
    cr_assert_str_eq(eb.msg, want);
    remove(path);
    free(path);
    vs_devcfg_cleanup(&c);
}

struct err_case {
    const char *text;
    const char *msg;
};

/* Criterion runs each parameterized test in a fresh process: parameters must be in its
 * shared memory. */
static char *shared_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = cr_malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

static void free_err_cases(struct criterion_test_params *params)
{
    struct err_case *cases = params->params;
    for (size_t i = 0; i < params->length; i++) {
        cr_free((void *)cases[i].text);
        cr_free((void *)cases[i].msg);
    }
    cr_free(cases);
}

ParameterizedTestParameters(devcfg, errors)
{
    static const struct err_case cases[] = {
        {"", "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
        {"# nothing\n", "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
        {"just text\n", "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
        {"- nvidia\n", "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
        {"cambricon: {}\nhygon: []\n", "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
        {"nvidia:\n", "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
        {"nvidia: {}\n", "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
        {"nvidia: [a]\n", "d.yaml: nvidia: expected a mapping, got a sequence"},
        {"nvidia: on\n", "d.yaml: nvidia: expected a mapping, got a scalar"},
        {"nvidia:\n  defaultMemory: [1\n",
         "d.yaml: line 3 column 1: invalid YAML: did not find expected ',' or ']'"},
        {"nvidia:\n\tdefaultMemory: 1\n",
         "d.yaml: line 2 column 1: invalid YAML: found character that cannot start any token"},
        {"nvidia:\n  runtimeClassName: \xc3\x28\n",
         "d.yaml: line 2 column 22: invalid YAML: invalid trailing UTF-8 octet"},
        {"nvidia:\n  defaultMemory: abc\n",
         "d.yaml: nvidia.defaultMemory: invalid integer \"abc\""},
        {"nvidia:\n  defaultCores: 1.5\n", "d.yaml: nvidia.defaultCores: invalid integer \"1.5\""},
        {"nvidia:\n  defaultGPUNum: \"\"\n", "d.yaml: nvidia.defaultGPUNum: invalid integer \"\""},
        {"nvidia:\n  memoryFactor: -1\n",
         "d.yaml: nvidia.memoryFactor: out of range \"-1\" (want 0 to 2147483647)"},
        {"nvidia:\n  defaultMemory: 2147483648\n",
         "d.yaml: nvidia.defaultMemory: out of range \"2147483648\" (want 0 to 2147483647)"},
        {"nvidia:\n  defaultMemory: 99999999999999999999999\n",
         "d.yaml: nvidia.defaultMemory: out of range \"99999999999999999999999\" (want 0 to "
         "2147483647)"},
        {"nvidia:\n  defaultMemory: {a: 1}\n",
         "d.yaml: nvidia.defaultMemory: expected an integer, got a mapping"},
        {"nvidia:\n  overwriteEnv: yes\n", "d.yaml: nvidia.overwriteEnv: invalid bool \"yes\""},
        {"nvidia:\n  overwriteEnv: [true]\n",
         "d.yaml: nvidia.overwriteEnv: expected a bool, got a sequence"},
        {"nvidia:\n  gpuCorePolicy: fastest\n",
         "d.yaml: nvidia.gpuCorePolicy: invalid value \"fastest\" (want default, force or "
         "disable)"},
        {"nvidia:\n  gpuCorePolicy: \"\"\n",
         "d.yaml: nvidia.gpuCorePolicy: invalid value \"\" (want default, force or disable)"},
        {"nvidia:\n  resourceCountName: [a]\n",
         "d.yaml: nvidia.resourceCountName: expected a string, got a sequence"},
        {"nvidia:\n  runtimeClassName: \"a\\0b\"\n",
         "d.yaml: nvidia.runtimeClassName: NUL character in value"},
        {"nvidia:\n  migProfileAllowlist: {models: [a]}\n",
         "d.yaml: nvidia.migProfileAllowlist: expected a sequence, got a mapping"},
        {"nvidia:\n  migProfileAllowlist: [x]\n",
         "d.yaml: nvidia.migProfileAllowlist[0]: expected a mapping, got a scalar"},
        {"nvidia:\n  migProfileAllowlist:\n  - profiles: [1g.5gb]\n",
         "d.yaml: nvidia.migProfileAllowlist[0].models: missing or empty"},
        {"nvidia:\n  migProfileAllowlist:\n  - {models: [A100], profiles: [1g.5gb]}\n"
         "  - {models: [], profiles: [1g.5gb]}\n",
         "d.yaml: nvidia.migProfileAllowlist[1].models: missing or empty"},
        {"nvidia:\n  migProfileAllowlist:\n  - {models: [A100]}\n",
         "d.yaml: nvidia.migProfileAllowlist[0].profiles: missing or empty"},
        {"nvidia:\n  migProfileAllowlist:\n  - {models: [A100], profiles: ~}\n",
         "d.yaml: nvidia.migProfileAllowlist[0].profiles: missing or empty"},
        {"nvidia:\n  migProfileAllowlist:\n  - {models: A100, profiles: [1g.5gb]}\n",
         "d.yaml: nvidia.migProfileAllowlist[0].models: expected a sequence, got a scalar"},
        {"nvidia:\n  migProfileAllowlist:\n  - {models: [[A100]], profiles: [1g.5gb]}\n",
         "d.yaml: nvidia.migProfileAllowlist[0].models[0]: expected a string, got a sequence"},
        {"nvidia:\n  migProfileAllowlist:\n  - {models: [A100], profiles: [1g.5gb, 3x.20gb]}\n",
         "d.yaml: nvidia.migProfileAllowlist[0].profiles[1]: invalid MIG profile \"3x.20gb\""},
        {"nvidia:\n  migProfileAllowlist:\n  - {models: [A100], profiles: [g.5gb]}\n",
         "d.yaml: nvidia.migProfileAllowlist[0].profiles[0]: invalid MIG profile \"g.5gb\""},
        {"nvidia:\n  migProfileAllowlist:\n  - {models: [A100], profiles: [\"\"]}\n",
         "d.yaml: nvidia.migProfileAllowlist[0].profiles[0]: invalid MIG profile \"\""},
        {"kind: ConfigMap\ndata:\n  device-config.yaml: |\n    nvidia:\n      defaultCores: x\n",
         "d.yaml: nvidia.defaultCores: invalid integer \"x\""},
        {"kind: ConfigMap\ndata:\n  device-config.yaml: |\n    nvidia: [\n",
         "d.yaml: data[\"device-config.yaml\"]: line 2 column 1: invalid YAML: did not find "
         "expected node content"},
        {"kind: ConfigMap\ndata:\n  device-config.yaml: |\n    cambricon: {}\n",
         "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
        {"kind: ConfigMap\ndata:\n  device-config.yaml: [a]\n",
         "d.yaml: data[\"device-config.yaml\"]: expected a string, got a sequence"},
        {"kind: ConfigMap\ndata:\n  other.yaml: |\n    nvidia: {defaultCores: 1}\n",
         "d.yaml: no device section (nvidia, vnpus, hygon, ...)"},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    struct err_case *shared = cr_malloc(n * sizeof(*shared));
    for (size_t i = 0; shared && i < n; i++) {
        shared[i].text = shared_str(cases[i].text);
        shared[i].msg = shared_str(cases[i].msg);
    }
    return cr_make_param_array(struct err_case, shared, n, free_err_cases);
}

ParameterizedTest(struct err_case *c, devcfg, errors)
{
    struct vs_devcfg cfg;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_devcfg_init(&cfg), VS_OK);
    cr_assert_eq(vs_devcfg_load_buf(&cfg, c->text, strlen(c->text), "d.yaml", &eb), VS_ERR_PARSE,
                 "accepted: %s", c->text);
    cr_assert_str_eq(eb.msg, c->msg);
    assert_defaults(&cfg);
    vs_devcfg_cleanup(&cfg);
}

Test(devcfg, error_leaves_config_unchanged)
{
    static const char text[] = "nvidia:\n"
                               "  resourceCountName: changed\n"
                               "  defaultMemory: 5\n"
                               "  gpuCorePolicy: force\n"
                               "  defaultCores: bad\n";
    struct vs_devcfg c;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_devcfg_init(&c), VS_OK);
    cr_assert_eq(vs_devcfg_load_buf(&c, text, strlen(text), "x.yaml", &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "x.yaml: nvidia.defaultCores: invalid integer \"bad\"");
    assert_defaults(&c);
    vs_devcfg_cleanup(&c);
}
