/* simulate: the what-if driver. Pods already placed in the cluster file (spec.nodeName or
 * hami.io/vgpu-node) are usage; the rest, then every pod of --pods, are scheduled in file
 * order, each seeing the placements before it. */
#include "simulate.h"

#include "annot.h"
#include "devcfg.h"
#include "fragmentation.h"
#include "loader.h"
#include "model.h"
#include "policy.h"
#include "report.h"
#include "sched.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct sim_opts {
    const char *cluster;
    const char *pods;
    const char *node_policy;
    const char *gpu_policy;
    const char *devcfg;
    const char *output;
    const char *svg;
};

static void warn_to(void *ctx, const char *msg)
{
    fprintf((FILE *)ctx, "warning: %s\n", msg);
}

/* Accepts --flag=value and --flag value. Returns 0, or 2 with a message. */
static int parse_flags(int argc, char **argv, struct sim_opts *o, FILE *err)
{
    static const struct {
        const char *name;
        size_t off;
    } flags[] = {
        {"cluster", offsetof(struct sim_opts, cluster)},
        {"pods", offsetof(struct sim_opts, pods)},
        {"node-scheduler-policy", offsetof(struct sim_opts, node_policy)},
        {"gpu-scheduler-policy", offsetof(struct sim_opts, gpu_policy)},
        {"device-config-file", offsetof(struct sim_opts, devcfg)},
        {"output", offsetof(struct sim_opts, output)},
        {"svg", offsetof(struct sim_opts, svg)},
    };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            fprintf(err, "simulate: unexpected argument \"%s\"\n", a);
            return 2;
        }
        a += 2;
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        size_t k;
        for (k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
            if (strlen(flags[k].name) == nl && strncmp(flags[k].name, a, nl) == 0)
                break;
        if (k == sizeof(flags) / sizeof(flags[0])) {
            fprintf(err, "simulate: unknown flag --%.*s\n", (int)nl, a);
            return 2;
        }
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val) {
            fprintf(err, "simulate: flag --%s needs a value\n", flags[k].name);
            return 2;
        }
        *(const char **)((char *)o + flags[k].off) = val;
    }
    if (!o->cluster) {
        fprintf(err, "simulate: --cluster FILE is required\n");
        return 2;
    }
    if (!o->output)
        o->output = "table";
    if (strcmp(o->output, "table") != 0 && strcmp(o->output, "json") != 0) {
        fprintf(err, "simulate: invalid --output \"%s\" (want table or json)\n", o->output);
        return 2;
    }
    return 0;
}

static bool is_placed(const struct vs_pod *p)
{
    const char *vn = vs_kv_get(&p->annotations, VS_ANNO_VGPU_NODE);
    return (p->node_name && *p->node_name) || (vn && *vn);
}

static bool selector_ok(const struct vs_pod *p, const struct vs_knode *n)
{
    for (size_t i = 0; i < p->node_selector.n; i++) {
        const char *v = vs_kv_get(&n->labels, p->node_selector.items[i].key);
        if (!v || strcmp(v, p->node_selector.items[i].val) != 0)
            return false;
    }
    return true;
}

/* Pods from files may lack a UID; the model keys pods by UID. */
static int ensure_uid(struct vs_pod *p)
{
    if (p->uid && *p->uid)
        return 0;
    size_t n = strlen(p->ns) + strlen(p->name) + 16;
    char *u = malloc(n);
    if (!u)
        return -1;
    snprintf(u, n, "simulate:%s/%s", p->ns, p->name);
    free(p->uid);
    p->uid = u;
    return 0;
}

static int schedule_one(struct vs_model *m, struct vs_pod *p, const struct vs_objset *cl,
                        const struct vs_sched_opts *so, struct vs_sim_pod *out)
{
    size_t n = strlen(p->ns) + strlen(p->name) + 2;
    out->pod = malloc(n);
    if (!out->pod)
        return -1;
    snprintf(out->pod, n, "%s/%s", p->ns, p->name);
    const char **cands = calloc(cl->n_nodes ? cl->n_nodes : 1, sizeof(*cands));
    if (!cands)
        return -1;
    size_t nc = 0;
    for (size_t i = 0; i < cl->n_nodes; i++)
        if (!cl->nodes[i].unschedulable && selector_ok(p, &cl->nodes[i]))
            cands[nc++] = cl->nodes[i].name;
    struct vs_filter_result r;
    int rc = 0;
    if (vs_sched_filter(m, p, cands, nc, so, &r)) {
        free(cands);
        return -1;
    }
    if (r.error) {
        out->error = strdup(r.error);
    } else if (!r.managed) {
        out->error = strdup("pod requests no NVIDIA GPU (nothing for this scheduler to place)");
    } else if (r.best >= 0) {
        const struct vs_node_fit *f = &r.nodes[r.best];
        out->node = strdup(f->node);
        out->devices = vs_annot_format_devices(&f->devs);
        out->score = f->score;
        struct vs_errbuf eb;
        if (!out->node || !out->devices || vs_sched_commit(m, p, &r, 0, &eb))
            rc = -1;
    } else {
        for (size_t i = 0; i < r.n; i++)
            if (vs_kv_set(&out->reasons, r.nodes[i].node, r.nodes[i].reason))
                rc = -1;
    }
    vs_filter_result_cleanup(&r);
    free(cands);
    return rc;
}

int vs_simulate_main(int argc, char **argv, FILE *out, FILE *err)
{
    struct sim_opts o = {0};
    int rc = parse_flags(argc, argv, &o, err);
    if (rc)
        return rc;
    struct vs_errbuf eb;
    struct vs_gpu_policy gp;
    const struct vs_node_policy *np;
    if (o.node_policy && vs_policy_parse_node(o.node_policy, "--node-scheduler-policy", &np, &eb)) {
        fprintf(err, "simulate: %s\n", eb.msg);
        return 2;
    }
    if (o.gpu_policy && vs_policy_parse_gpu(o.gpu_policy, "--gpu-scheduler-policy", &gp, &eb)) {
        fprintf(err, "simulate: %s\n", eb.msg);
        return 2;
    }
    struct vs_devcfg cfg;
    struct vs_objset cl = {0}, pods = {0};
    struct vs_model *m = NULL;
    struct vs_sim_pod *res = NULL;
    const char **names = NULL;
    struct vs_frag_stats *frag = NULL;
    size_t n_res = 0;
    rc = 2;
    if (vs_devcfg_init(&cfg)) {
        fprintf(err, "simulate: out of memory\n");
        return 1;
    }
    if (o.devcfg && vs_devcfg_load(&cfg, o.devcfg, &eb)) {
        fprintf(err, "%s\n", eb.msg);
        goto out;
    }
    if (vs_loader_load_file(o.cluster, &cl, warn_to, err, &eb)) {
        fprintf(err, "%s\n", eb.msg);
        goto out;
    }
    if (o.pods && vs_loader_load_file(o.pods, &pods, warn_to, err, &eb)) {
        fprintf(err, "%s\n", eb.msg);
        goto out;
    }
    rc = 1;
    m = vs_model_new(cfg.memory_factor);
    names = calloc(cl.n_nodes ? cl.n_nodes : 1, sizeof(*names));
    res = calloc(cl.n_pods + pods.n_pods + 1, sizeof(*res));
    if (!m || !names || !res)
        goto oom;
    for (size_t i = 0; i < cl.n_nodes; i++) {
        eb.msg[0] = '\0';
        if (vs_model_upsert_node(m, &cl.nodes[i], &eb) == VS_ERR_NOMEM)
            goto oom;
        if (eb.msg[0])
            fprintf(err, "warning: %s: %s\n", o.cluster, eb.msg);
        names[i] = cl.nodes[i].name;
    }
    for (size_t i = 0; i < cl.n_quotas; i++)
        if (vs_model_set_quota(m, &cl.quotas[i], cfg.res_mem, cfg.res_cores))
            goto oom;
    for (size_t i = 0; i < cl.n_pods; i++) {
        if (ensure_uid(&cl.pods[i]))
            goto oom;
        if (!is_placed(&cl.pods[i]))
            continue;
        enum vs_err e = vs_model_upsert_pod(m, &cl.pods[i], &eb);
        if (e == VS_ERR_NOMEM)
            goto oom;
        if (e)
            fprintf(err, "warning: %s: %s\n", o.cluster, eb.msg);
    }
    /* Reasons are reported only for pods no node takes. */
    /* The workload policy `fragmentation` learns from: the pods scheduled so far. */
    if (!(frag = vs_frag_stats_new()))
        goto oom;
    struct vs_sched_opts so = {.cfg = &cfg,
                               .node_policy = o.node_policy,
                               .gpu_policy = o.gpu_policy,
                               .lazy_reasons = true,
                               .frag_stats = frag};
    for (size_t i = 0; i < cl.n_pods; i++) {
        if (is_placed(&cl.pods[i]))
            continue;
        if (schedule_one(m, &cl.pods[i], &cl, &so, &res[n_res++]))
            goto oom;
    }
    for (size_t i = 0; i < pods.n_pods; i++) {
        if (ensure_uid(&pods.pods[i]) || schedule_one(m, &pods.pods[i], &cl, &so, &res[n_res++]))
            goto oom;
    }
    struct vs_sim_report rep = {.pods = res,
                                .n_pods = n_res,
                                .model = m,
                                .nodes = names,
                                .n_nodes = cl.n_nodes,
                                .title = NULL};
    char title[160];
    snprintf(title, sizeof(title), "node %s, card %s", o.node_policy ? o.node_policy : "binpack",
             o.gpu_policy ? o.gpu_policy : "spread");
    rep.title = title;
    char *text = strcmp(o.output, "json") == 0 ? vs_report_json(&rep) : vs_report_table(&rep);
    if (!text)
        goto oom;
    fputs(text, out);
    if (strcmp(o.output, "json") == 0)
        fputc('\n', out);
    free(text);
    if (o.svg) {
        const struct vs_sim_report *one = &rep;
        char *svg = vs_report_svg(&one, 1);
        FILE *f = svg ? fopen(o.svg, "w") : NULL;
        if (!f || fputs(svg, f) < 0 || fclose(f) != 0) {
            fprintf(err, "simulate: cannot write %s\n", o.svg);
            free(svg);
            rc = 2;
            goto out;
        }
        free(svg);
    }
    rc = 0;
    goto out;
oom:
    fprintf(err, "simulate: out of memory\n");
out:
    for (size_t i = 0; i < n_res; i++)
        vs_sim_pod_cleanup(&res[i]);
    free(res);
    free(names);
    vs_model_free(m);
    vs_frag_stats_free(frag);
    vs_objset_cleanup(&cl);
    vs_objset_cleanup(&pods);
    vs_devcfg_cleanup(&cfg);
    return rc;
}
