/* test_metrics: HAMi's gauges of spec §9.2 rendered from a small model — per card, per realized
 * MIG instance, per namespace quota, per pod — with and without --legacy-metrics. Every sample is
 * asserted as an exact line; families must be contiguous under one TYPE line each. */
#include "buf.h"
#include "builders.h"
#include "metrics.h"

#include <criterion/criterion.h>

static struct vs_model *m;
static struct vs_metrics *mx;

static void running(const char *ns, const char *name, const char *node, const char *alloc,
                    const char *mig)
{
    struct vs_pod p;
    tb_pod(&p, ns, name, name);
    free(p.phase);
    p.phase = tb_strdup("Running");
    tb_anno(&p, VS_ANNO_VGPU_NODE, node);
    tb_anno(&p, VS_ANNO_ALLOCATED, alloc);
    if (mig)
        tb_anno(&p, VS_ANNO_MIG_ALLOC, mig);
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK, "%s", eb.msg);
    vs_pod_cleanup(&p);
}

static void quota(const char *ns, const char *name, const char *mem, const char *cores)
{
    struct vs_kquota q = {0};
    q.ns = tb_strdup(ns);
    q.name = tb_strdup(name);
    if (mem)
        vs_kv_set(&q.hard, "limits.nvidia.com/gpumem", mem);
    if (cores)
        vs_kv_set(&q.hard, "limits.nvidia.com/gpucores", cores);
    cr_assert_eq(vs_model_set_quota(m, &q), VS_OK);
    vs_kquota_cleanup(&q);
}

/* n1: one shared card with one pod of team; m1: a MIG card with one realized instance (pod
 * "train" of team) and one placement Filter reserved whose instance is not there yet ("fresh"
 * of default); team has a memory quota. */
static void cluster(void)
{
    char c0[256];
    tb_card(c0, sizeof(c0), "GPU-0", 0, 0, 10, 8000, 100, 1);
    char reg[600];
    snprintf(reg, sizeof(reg), "[%s]", c0);
    tb_node(m, "n1", reg, NULL, NULL);
    tb_node(m, "m1",
            "[{\"id\":\"GPU-a\",\"index\":1,\"count\":7,\"devmem\":40960,\"devcore\":100,"
            "\"type\":\"NVIDIA-A100-SXM4-40GB\",\"health\":true,\"mode\":\"mig\","
            "\"migProfiles\":[{\"name\":\"1g.5gb\",\"memoryMB\":5120,\"core\":14,"
            "\"sliceCount\":1,\"placements\":[{\"start\":5,\"size\":1},{\"start\":6,\"size\":1}]}]}"
            "]",
            NULL, NULL);
    running("team", "p1", "n1", "GPU-0,NVIDIA,3000,30:;", NULL);
    running("team", "train", "m1", "GPU-a,NVIDIA,5120,14:;",
            "[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\",\"profile\":\"1g.5gb\","
            "\"placement\":{\"start\":6,\"size\":1},\"migUUID\":\"MIG-a\",\"gpuInstanceID\":7,"
            "\"computeInstanceID\":0}]");
    running("default", "fresh", "m1", "GPU-a,NVIDIA,5120,14:;",
            "[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\",\"profile\":\"1g.5gb\","
            "\"placement\":{\"start\":5,\"size\":1}}]");
    quota("team", "gpu-quota", "20000", NULL);
}

/* A device configuration of the test's own (memory factor, NVIDIA's resource names); models made
 * on it borrow its backends, so it lives until the test's teardown. */
static struct vs_devcfg cfg;
static bool have_cfg;

static struct vs_model *model_with(int32_t factor, const char *mem, const char *cores)
{
    struct vs_errbuf eb;
    cr_assert_eq(vs_devcfg_init(&cfg), VS_OK);
    have_cfg = true;
    cfg.memory_factor = factor;
    free(cfg.res_mem);
    free(cfg.res_cores);
    cfg.res_mem = strdup(mem ? mem : "");
    cfg.res_cores = strdup(cores ? cores : "");
    cr_assert_eq(vs_devcfg_finish(&cfg, &eb), VS_OK, "%s", eb.msg);
    return vs_model_new(cfg.devices);
}

static void setup(void)
{
    m = vs_model_new(NULL);
    mx = vs_metrics_new();
    cr_assert_not_null(m);
    cr_assert_not_null(mx);
}

static void teardown(void)
{
    vs_metrics_free(mx);
    vs_model_free(m);
    if (have_cfg)
        vs_devcfg_cleanup(&cfg);
    have_cfg = false;
}

TestSuite(metrics, .init = setup, .fini = teardown);

/* How many times `line` occurs as a whole line of out. */
static int lines(const char *out, const char *line)
{
    int n = 0;
    size_t len = strlen(line);
    for (const char *p = out; (p = strstr(p, line)); p += len)
        if ((p == out || p[-1] == '\n') && p[len] == '\n')
            n++;
    return n;
}

#define assert_line(out, line) cr_assert_eq(lines(out, line), 1, "missing %s in\n%s", line, out)

/* Every sample follows the TYPE line of its own family, and every family has one TYPE line. */
static void assert_families_contiguous(const char *out)
{
    char family[128] = "";
    char seen[8192] = "|";
    for (const char *p = out; *p;) {
        const char *eol = strchr(p, '\n');
        cr_assert_not_null(eol);
        if (strncmp(p, "# TYPE ", 7) == 0) {
            size_t k = strcspn(p + 7, " ");
            cr_assert_lt(k, sizeof(family));
            memcpy(family, p + 7, k);
            family[k] = '\0';
            char key[140];
            snprintf(key, sizeof(key), "|%s|", family);
            cr_assert_null(strstr(seen, key), "family %s has two TYPE lines", family);
            cr_assert_lt(strlen(seen) + k + 1, sizeof(seen));
            strcat(seen, family);
            strcat(seen, "|");
        } else if (*p != '#') {
            size_t k = strcspn(p, "{ "), fl = strlen(family);
            char suffix[32] = "";
            if (k >= fl && k - fl < sizeof(suffix))
                snprintf(suffix, sizeof(suffix), "%.*s", (int)(k - fl), p + fl);
            /* Histograms: name_bucket, _sum and _count belong to the family. */
            cr_assert(k >= fl && strncmp(p, family, fl) == 0 &&
                          (!*suffix || !strcmp(suffix, "_bucket") || !strcmp(suffix, "_sum") ||
                           !strcmp(suffix, "_count")),
                      "sample %.*s outside its family (current %s)", (int)(eol - p), p, family);
        }
        p = eol + 1;
    }
}

static const char *const legacy_names[] = {
    "GPUDeviceMemoryLimit",    "GPUDeviceCoreLimit",       "GPUDeviceSharedNum",
    "GPUDeviceCoreAllocated",  "GPUDeviceMemoryAllocated", "nodeGPUOverview",
    "nodeGPUMemoryPercentage", "nodeGPUMigInstance",       "QuotaUsed",
    "vGPUMemoryAllocated",     "vGPUCoreAllocated"};
#define N_LEGACY (sizeof(legacy_names) / sizeof(legacy_names[0]))

Test(metrics, mig_instance_info_only_for_realized_instances)
{
    cluster();
    char *out = vs_metrics_render(mx, m, NULL, false);
    assert_line(out, "# TYPE hami_node_gpu_mig_instance_info gauge");
    assert_line(out, "hami_node_gpu_mig_instance_info{node=\"m1\",device_uuid=\"GPU-a\","
                     "device_index=\"1\",mig_uuid=\"MIG-a\",profile=\"1g.5gb\","
                     "gpu_instance_id=\"7\",compute_instance_id=\"0\",placement_start=\"6\","
                     "placement_size=\"1\",zone=\"vGPU\"} 1");
    /* The reserved placement at start 5 has no instance yet; the shared card has none. */
    const char *p = strstr(out, "hami_node_gpu_mig_instance_info{");
    cr_assert_not_null(p);
    cr_assert_null(strstr(p + 1, "hami_node_gpu_mig_instance_info{"), "%s", out);
    /* The card still counts both placements as used. */
    assert_line(out, "hami_gpu_shared_count{node=\"m1\",device_uuid=\"GPU-a\",device_index=\"1\","
                     "device_type=\"NVIDIA-A100-SXM4-40GB\",zone=\"vGPU\"} 2");
    free(out);
}

Test(metrics, mig_instance_gone_with_its_pod)
{
    cluster();
    vs_model_remove_pod(m, "train");
    char *out = vs_metrics_render(mx, m, NULL, false);
    cr_assert_null(strstr(out, "hami_node_gpu_mig_instance_info{"), "%s", out);
    assert_line(out, "# TYPE hami_node_gpu_mig_instance_info gauge");
    free(out);
}

Test(metrics, quota_used_and_limit)
{
    cluster();
    char *out = vs_metrics_render(mx, m, NULL, false);
    /* Namespaces in name order, memory then cores; no limit set: label "0", no limit sample. */
    cr_assert_not_null(
        strstr(out, "# TYPE hami_resource_quota_used gauge\n"
                    "hami_resource_quota_used{namespace=\"default\",quota_name=\"nvidia.com/"
                    "gpumem\",limit=\"0\",zone=\"vGPU\"} 5120\n"
                    "hami_resource_quota_used{namespace=\"default\",quota_name=\"nvidia.com/"
                    "gpucores\",limit=\"0\",zone=\"vGPU\"} 14\n"
                    "hami_resource_quota_used{namespace=\"team\",quota_name=\"nvidia.com/"
                    "gpumem\",limit=\"20000\",zone=\"vGPU\"} 8120\n"
                    "hami_resource_quota_used{namespace=\"team\",quota_name=\"nvidia.com/"
                    "gpucores\",limit=\"0\",zone=\"vGPU\"} 44\n"
                    "# TYPE hami_resource_quota_limit gauge\n"
                    "hami_resource_quota_limit{namespace=\"team\",quota_name=\"nvidia.com/"
                    "gpumem\",zone=\"vGPU\"} 20000\n"
                    "# TYPE "),
        "%s", out);
    free(out);
}

Test(metrics, quota_limit_is_the_enforced_one)
{
    /* memoryFactor 10: limits are in the unit of used (MiB); two quotas: the smaller wins. */
    vs_model_free(m);
    m = model_with(10, "nvidia.com/gpumem", "nvidia.com/gpucores");
    quota("ml", "a", "3000", "80");
    quota("ml", "b", "2000", NULL);
    running("ml", "p", "n", "GPU-0,NVIDIA,12000,20:;", NULL);
    char *out = vs_metrics_render(mx, m, NULL, false);
    assert_line(out, "hami_resource_quota_used{namespace=\"ml\",quota_name=\"nvidia.com/gpumem\","
                     "limit=\"20000\",zone=\"vGPU\"} 12000");
    assert_line(out, "hami_resource_quota_used{namespace=\"ml\",quota_name=\"nvidia.com/gpucores\","
                     "limit=\"80\",zone=\"vGPU\"} 20");
    assert_line(out, "hami_resource_quota_limit{namespace=\"ml\",quota_name=\"nvidia.com/gpumem\","
                     "zone=\"vGPU\"} 20000");
    assert_line(out, "hami_resource_quota_limit{namespace=\"ml\",quota_name=\"nvidia.com/"
                     "gpucores\",zone=\"vGPU\"} 80");
    /* Removing the smaller one raises the limit. */
    vs_model_remove_quota(m, "ml", "b");
    free(out);
    out = vs_metrics_render(mx, m, NULL, false);
    assert_line(out, "hami_resource_quota_limit{namespace=\"ml\",quota_name=\"nvidia.com/gpumem\","
                     "zone=\"vGPU\"} 30000");
    free(out);
}

Test(metrics, quota_label_values_escaped)
{
    vs_model_free(m);
    m = model_with(1, "x/\"mem\"", NULL);
    struct vs_kquota q = {0};
    q.ns = tb_strdup("team");
    q.name = tb_strdup("q");
    vs_kv_set(&q.hard, "limits.x/\"mem\"", "100");
    vs_kv_set(&q.hard, "limits.nvidia.com/gpucores", "7");
    cr_assert_eq(vs_model_set_quota(m, &q), VS_OK);
    vs_kquota_cleanup(&q);
    char *out = vs_metrics_render(mx, m, NULL, false);
    assert_line(out, "hami_resource_quota_used{namespace=\"team\",quota_name=\"x/\\\"mem\\\"\","
                     "limit=\"100\",zone=\"vGPU\"} 0");
    /* No name for cores: no cores samples. */
    cr_assert_null(strstr(out, "gpucores"), "%s", out);
    free(out);
}

Test(metrics, legacy_off_emits_no_legacy_names)
{
    cluster();
    char *out = vs_metrics_render(mx, m, NULL, false);
    for (size_t i = 0; i < N_LEGACY; i++)
        cr_assert_null(strstr(out, legacy_names[i]), "%s in\n%s", legacy_names[i], out);
    assert_families_contiguous(out);
    free(out);
}

Test(metrics, legacy_on_adds_old_names_with_same_values)
{
    cluster();
    char *out = vs_metrics_render(mx, m, NULL, true);
    static const char *const want[] = {
        "hami_gpu_memory_limit_bytes{node=\"n1\",device_uuid=\"GPU-0\",device_index=\"0\","
        "device_type=\"NVIDIA\",zone=\"vGPU\"} 8388608000",
        "GPUDeviceMemoryLimit{nodeid=\"n1\",deviceuuid=\"GPU-0\",deviceidx=\"0\","
        "devicetype=\"NVIDIA\",zone=\"vGPU\"} 8388608000",
        "hami_gpu_core_limit_ratio{node=\"n1\",device_uuid=\"GPU-0\",device_index=\"0\","
        "device_type=\"NVIDIA\",zone=\"vGPU\"} 100",
        "GPUDeviceCoreLimit{nodeid=\"n1\",deviceuuid=\"GPU-0\",deviceidx=\"0\","
        "devicetype=\"NVIDIA\",zone=\"vGPU\"} 100",
        "hami_gpu_memory_allocated_bytes{node=\"n1\",device_uuid=\"GPU-0\",device_index=\"0\","
        "device_cores=\"100\",device_type=\"NVIDIA\",zone=\"vGPU\"} 3145728000",
        "GPUDeviceMemoryAllocated{nodeid=\"n1\",deviceuuid=\"GPU-0\",deviceidx=\"0\","
        "devicecores=\"100\",devicetype=\"NVIDIA\",zone=\"vGPU\"} 3145728000",
        "hami_gpu_shared_count{node=\"n1\",device_uuid=\"GPU-0\",device_index=\"0\","
        "device_type=\"NVIDIA\",zone=\"vGPU\"} 1",
        "GPUDeviceSharedNum{nodeid=\"n1\",deviceuuid=\"GPU-0\",deviceidx=\"0\","
        "devicetype=\"NVIDIA\",zone=\"vGPU\"} 1",
        "hami_gpu_core_allocated_ratio{node=\"n1\",device_uuid=\"GPU-0\",device_index=\"0\","
        "device_type=\"NVIDIA\",zone=\"vGPU\"} 30",
        "GPUDeviceCoreAllocated{nodeid=\"n1\",deviceuuid=\"GPU-0\",deviceidx=\"0\","
        "devicetype=\"NVIDIA\",zone=\"vGPU\"} 30",
        "hami_node_gpu_overview{node=\"n1\",device_uuid=\"GPU-0\",device_index=\"0\","
        "device_cores=\"100\",device_memory_limit=\"8000\",device_type=\"NVIDIA\","
        "zone=\"vGPU\"} 3145728000",
        "nodeGPUOverview{nodeid=\"n1\",deviceuuid=\"GPU-0\",deviceidx=\"0\",devicecores=\"100\","
        "devicememorylimit=\"8000\",devicetype=\"NVIDIA\",zone=\"vGPU\"} 3145728000",
        "hami_node_gpu_memory_allocated_ratio{node=\"n1\",device_uuid=\"GPU-0\","
        "device_index=\"0\",device_type=\"NVIDIA\",zone=\"vGPU\"} 0.375",
        "nodeGPUMemoryPercentage{nodeid=\"n1\",deviceuuid=\"GPU-0\",deviceidx=\"0\","
        "zone=\"vGPU\"} 0.375",
        "nodeGPUMigInstance{nodeid=\"m1\",deviceuuid=\"GPU-a\",deviceidx=\"1\","
        "migname=\"1g.5gb-7\",zone=\"vGPU\"} 1",
        "hami_resource_quota_used{namespace=\"team\",quota_name=\"nvidia.com/gpumem\","
        "limit=\"20000\",zone=\"vGPU\"} 8120",
        "QuotaUsed{quotanamespace=\"team\",quotaName=\"nvidia.com/gpumem\",limit=\"20000\","
        "zone=\"vGPU\"} 8120",
        "QuotaUsed{quotanamespace=\"default\",quotaName=\"nvidia.com/gpucores\",limit=\"0\","
        "zone=\"vGPU\"} 14",
        "hami_vgpu_memory_allocated_bytes{namespace=\"team\",node=\"n1\",pod=\"p1\","
        "container_index=\"0\",device_uuid=\"GPU-0\",zone=\"vGPU\"} 3145728000",
        "vGPUMemoryAllocated{podnamespace=\"team\",nodename=\"n1\",podname=\"p1\","
        "containeridx=\"0\",deviceuuid=\"GPU-0\",zone=\"vGPU\"} 3145728000",
        "hami_vgpu_core_allocated_ratio{namespace=\"team\",node=\"n1\",pod=\"p1\","
        "container_index=\"0\",device_uuid=\"GPU-0\",zone=\"vGPU\"} 30",
        "vGPUCoreAllocated{podnamespace=\"team\",nodename=\"n1\",podname=\"p1\","
        "containeridx=\"0\",deviceuuid=\"GPU-0\",zone=\"vGPU\"} 30",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_line(out, want[i]);
    for (size_t i = 0; i < N_LEGACY; i++) {
        char t[128];
        snprintf(t, sizeof(t), "# TYPE %s gauge", legacy_names[i]);
        assert_line(out, t);
    }
    /* Each legacy family follows its current one. */
    cr_assert_not_null(strstr(out, "zone=\"vGPU\"} 1\n# TYPE nodeGPUMigInstance gauge\n"
                                   "nodeGPUMigInstance{"),
                       "%s", out);
    assert_families_contiguous(out);
    free(out);
}

Test(metrics, bind_queue_wait_lock_hold_and_waiting)
{
    vs_metrics_bind_wait(mx, 0);
    vs_metrics_bind_wait(mx, 0.02);
    vs_metrics_bind_wait(mx, 3);
    vs_metrics_lock_hold(mx, 0.2);
    struct vs_metrics_extra x;
    memset(&x, 0, sizeof(x));
    x.binds_waiting = 7;
    x.allocation_s = 0.4375;
    x.events_queued = 12;
    x.patches_queued = 3;
    x.http_connections = 41;
    x.lock_acquired = 9;
    x.lock_taken_as_seen = 8;
    x.lock_seen_refused = 2;
    char *out = vs_metrics_render(mx, NULL, &x, false);
    cr_assert_not_null(out);
    assert_families_contiguous(out);
    assert_line(out, "vgpu_sched_node_lock_total{event=\"acquired\"} 9");
    assert_line(out, "vgpu_sched_node_lock_total{event=\"taken_as_seen\"} 8");
    assert_line(out, "vgpu_sched_node_lock_total{event=\"seen_refused\"} 2");
    assert_line(out, "# TYPE vgpu_sched_bind_queue_wait_seconds histogram");
    assert_line(out, "vgpu_sched_bind_queue_wait_seconds_bucket{le=\"0.0001\"} 1");
    assert_line(out, "vgpu_sched_bind_queue_wait_seconds_bucket{le=\"0.025\"} 2");
    assert_line(out, "vgpu_sched_bind_queue_wait_seconds_bucket{le=\"2.5\"} 2");
    assert_line(out, "vgpu_sched_bind_queue_wait_seconds_bucket{le=\"5\"} 3");
    assert_line(out, "vgpu_sched_bind_queue_wait_seconds_bucket{le=\"+Inf\"} 3");
    assert_line(out, "vgpu_sched_bind_queue_wait_seconds_sum 3.020000000");
    assert_line(out, "vgpu_sched_bind_queue_wait_seconds_count 3");
    assert_line(out, "# TYPE vgpu_sched_node_lock_hold_seconds histogram");
    assert_line(out, "vgpu_sched_node_lock_hold_seconds_bucket{le=\"0.1\"} 0");
    assert_line(out, "vgpu_sched_node_lock_hold_seconds_bucket{le=\"0.25\"} 1");
    assert_line(out, "vgpu_sched_node_lock_hold_seconds_count 1");
    assert_line(out, "# TYPE vgpu_sched_binds_waiting gauge");
    assert_line(out, "vgpu_sched_binds_waiting 7");
    assert_line(out, "# TYPE vgpu_sched_node_allocation_seconds gauge");
    assert_line(out, "vgpu_sched_node_allocation_seconds 0.437500");
    assert_line(out, "# TYPE vgpu_sched_events_queued gauge");
    assert_line(out, "vgpu_sched_events_queued 12");
    assert_line(out, "# TYPE vgpu_sched_pod_patches_queued gauge");
    assert_line(out, "vgpu_sched_pod_patches_queued 3");
    assert_line(out, "# TYPE vgpu_sched_http_connections_total counter");
    assert_line(out, "vgpu_sched_http_connections_total 41");
    free(out);
}

/* AMD cards (vs_device.cores_percent) report cores as a percentage of the card in the current
 * families, rounded up (HAMi's normalizeAMDCoreMetrics): 76 of 304 compute units is 25, a pod's
 * 100 is 33; the device_cores labels and the legacy families keep the compute units. */
Test(metrics, amd_cores_in_percent)
{
    struct vs_knode n;
    memset(&n, 0, sizeof(n));
    n.name = tb_strdup("a1");
    n.resource_version = tb_strdup("1");
    vs_kv_set(&n.annotations, "hami.io/node-amd-register",
              "[{\"id\":\"amd-0\",\"index\":0,\"count\":4,\"devmem\":196608,\"devcore\":304,"
              "\"type\":\"AMD Instinct MI300X VF\",\"health\":true}]");
    vs_kv_set(&n.capacity, "amd.com/gpu", "1");
    struct vs_errbuf eb;
    cr_assert_eq(vs_model_upsert_node(m, &n, &eb), VS_OK);
    vs_knode_cleanup(&n);
    struct vs_pod p;
    tb_pod(&p, "team", "a", "a");
    tb_anno(&p, VS_ANNO_VGPU_NODE, "a1");
    tb_anno(&p, "hami.io/amd-devices-allocated", "amd-0,AMD Instinct MI300X VF,16384,76:;");
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK, "%s", eb.msg);
    vs_pod_cleanup(&p);
    tb_pod(&p, "team", "b", "b");
    tb_anno(&p, VS_ANNO_VGPU_NODE, "a1");
    tb_anno(&p, "hami.io/amd-devices-allocated", "amd-0,AMD Instinct MI300X VF,16384,100:;");
    cr_assert_eq(vs_model_upsert_pod(m, &p, &eb), VS_OK, "%s", eb.msg);
    vs_pod_cleanup(&p);
    char *out = vs_metrics_render(mx, m, NULL, true);
    static const char *const want[] = {
        "hami_gpu_core_limit_ratio{node=\"a1\",device_uuid=\"amd-0\",device_index=\"0\","
        "device_type=\"AMD Instinct MI300X VF\",zone=\"vGPU\"} 100",
        "GPUDeviceCoreLimit{nodeid=\"a1\",deviceuuid=\"amd-0\",deviceidx=\"0\","
        "devicetype=\"AMD Instinct MI300X VF\",zone=\"vGPU\"} 304",
        "hami_gpu_core_allocated_ratio{node=\"a1\",device_uuid=\"amd-0\",device_index=\"0\","
        "device_type=\"AMD Instinct MI300X VF\",zone=\"vGPU\"} 58",
        "GPUDeviceCoreAllocated{nodeid=\"a1\",deviceuuid=\"amd-0\",deviceidx=\"0\","
        "devicetype=\"AMD Instinct MI300X VF\",zone=\"vGPU\"} 176",
        "hami_gpu_memory_allocated_bytes{node=\"a1\",device_uuid=\"amd-0\",device_index=\"0\","
        "device_cores=\"304\",device_type=\"AMD Instinct MI300X VF\",zone=\"vGPU\"} 34359738368",
        "hami_vgpu_core_allocated_ratio{namespace=\"team\",node=\"a1\",pod=\"a\","
        "container_index=\"0\",device_uuid=\"amd-0\",zone=\"vGPU\"} 25",
        "hami_vgpu_core_allocated_ratio{namespace=\"team\",node=\"a1\",pod=\"b\","
        "container_index=\"0\",device_uuid=\"amd-0\",zone=\"vGPU\"} 33",
        "vGPUCoreAllocated{podnamespace=\"team\",nodename=\"a1\",podname=\"b\","
        "containeridx=\"0\",deviceuuid=\"amd-0\",zone=\"vGPU\"} 100",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_line(out, want[i]);
    free(out);
}

/* /metrics streams the text from a snapshot taken under the store's lock: read a few bytes at a
 * time (lines, families and the extra text split across reads), it is the whole render. */
static void assert_stream_is_render(const struct vs_model *model, bool legacy, size_t piece)
{
    struct vs_metrics_extra x;
    memset(&x, 0, sizeof(x));
    x.binds_waiting = 2;
    char *want = vs_metrics_render(mx, model, &x, legacy);
    cr_assert_not_null(want);
    char *extra = tb_strdup("vgpu_sched_optional_api_available{api=\"x\"} 1\n");
    struct vs_metrics_stream *st =
        vs_metrics_stream_new(mx, vs_metrics_snap_take(model, legacy), &x, extra);
    cr_assert_not_null(st);
    struct vs_buf got;
    vs_buf_init(&got);
    char buf[64];
    long n;
    size_t reads = 0;
    while ((n = vs_metrics_stream_read(st, buf, piece)) > 0) {
        cr_assert_leq((size_t)n, piece);
        vs_buf_append(&got, buf, (size_t)n);
        reads++;
    }
    cr_assert_eq(n, 0);
    cr_assert_eq(vs_metrics_stream_read(st, buf, piece), 0, "a read after the end");
    vs_metrics_stream_free(st);
    size_t wl = strlen(want);
    cr_assert_eq(got.len, wl + strlen("vgpu_sched_optional_api_available{api=\"x\"} 1\n"));
    cr_assert(strncmp(got.data, want, wl) == 0, "streamed:\n%s\nrendered:\n%s", got.data, want);
    cr_assert_str_eq(got.data + wl, "vgpu_sched_optional_api_available{api=\"x\"} 1\n");
    cr_assert_geq(reads, got.len / piece);
    vs_buf_cleanup(&got);
    free(want);
}

Test(metrics, stream_in_pieces_is_the_render)
{
    cluster();
    assert_stream_is_render(m, false, 7);
    assert_stream_is_render(m, true, 64);
    assert_stream_is_render(NULL, false, 13);
}

/* The snapshot owns what it reports: the model changing (or going) after it was taken does not
 * change the text made from it. */
Test(metrics, snapshot_outlives_model_changes)
{
    cluster();
    char *before = vs_metrics_render(mx, m, NULL, false);
    struct vs_metrics_stream *st =
        vs_metrics_stream_new(mx, vs_metrics_snap_take(m, false), NULL, NULL);
    cr_assert_not_null(st);
    vs_model_remove_pod(m, "train");
    vs_model_free(m);
    m = NULL;
    struct vs_buf got;
    vs_buf_init(&got);
    char buf[4096];
    long n;
    while ((n = vs_metrics_stream_read(st, buf, sizeof(buf))) > 0)
        vs_buf_append(&got, buf, (size_t)n);
    vs_metrics_stream_free(st);
    cr_assert_str_eq(got.data, before);
    vs_buf_cleanup(&got);
    free(before);
}

/* A scrape of a large cluster never holds its text at once: 400 nodes of 8 cards and a pod on
 * each card make over 4 MiB of text, and the stream's buffer stays within two chunks of 64 KiB
 * plus one card's or pod's lines. */
Test(metrics, stream_holds_a_chunk_not_the_text)
{
    char reg[8 * 256 + 8], card[256], node[32], uuid[32], alloc[96], pod[32];
    for (int i = 0; i < 400; i++) {
        size_t o = 0;
        reg[o++] = '[';
        for (int k = 0; k < 8; k++) {
            snprintf(uuid, sizeof(uuid), "GPU-%03d-%d", i, k);
            tb_card(card, sizeof(card), uuid, k, 0, 10, 24576, 100, 1);
            o += (size_t)snprintf(reg + o, sizeof(reg) - o, "%s%s", k ? "," : "", card);
        }
        snprintf(reg + o, sizeof(reg) - o, "]");
        snprintf(node, sizeof(node), "node-%03d", i);
        tb_node(m, node, reg, NULL, NULL);
        for (int k = 0; k < 8; k++) {
            snprintf(pod, sizeof(pod), "p-%03d-%d", i, k);
            snprintf(alloc, sizeof(alloc), "GPU-%03d-%d,NVIDIA,4000,20:;", i, k);
            running("team", pod, node, alloc, NULL);
        }
    }
    struct vs_metrics_stream *st =
        vs_metrics_stream_new(mx, vs_metrics_snap_take(m, true), NULL, NULL);
    cr_assert_not_null(st);
    char *buf = malloc(16384);
    cr_assert_not_null(buf);
    size_t total = 0;
    long n;
    while ((n = vs_metrics_stream_read(st, buf, 16384)) > 0)
        total += (size_t)n;
    cr_assert_eq(n, 0);
    cr_assert_gt(total, 4u << 20, "%zu bytes", total);
    cr_assert_leq(vs_metrics_stream_held(st), 2 * (64u << 10) + 4096, "%zu bytes held",
                  vs_metrics_stream_held(st));
    vs_metrics_stream_free(st);
    free(buf);
}
