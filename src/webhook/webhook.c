/* webhook: HAMi's mutating admission webhook (spec/hami-compat.md §7). Decodes an
 * AdmissionReview, applies the NVIDIA container mutation to the decoded pod, and answers with a
 * minimal RFC 6902 patch built against the raw request object: every op is one that applies to
 * exactly that object (parents are created before members are added), never a whole-pod diff. */
#include "webhook.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "annot.h"
#include "buf.h"
#include "device.h"
#include "dra.h"
#include "k8s_codec.h"
#include "kobj.h"
#include "policy.h"
#include "quantity.h"
#include "request.h"

#define API_V1          "admission.k8s.io/v1"
#define API_V1BETA1     "admission.k8s.io/v1beta1"
#define ENV_PRIORITY    "CUDA_TASK_PRIORITY"
#define ENV_CORE_POLICY "GPU_CORE_UTILIZATION_POLICY"
#define ENV_VISIBLE     "NVIDIA_VISIBLE_DEVICES"
/* Longest excerpt of a caller-supplied value quoted in a 400 message. */
#define QUOTE_MAX 64

/* One review in progress. `ops` is the patch under construction; `oom` is sticky. */
struct review {
    const struct vs_webhook_opts *o;
    const struct vs_devcfg *cfg;
    const json_t *spec; /* raw request.object.spec, borrowed */
    struct vs_pod pod;  /* decoded, then mutated alongside the patch */
    json_t *ops;
    bool recognised;                  /* some container uses HAMi resources (§7 step 4/5) */
    char *runtime;                    /* spec.runtimeClassName to add, NULL = none */
    struct vs_kvlist set_annotations; /* pod annotations to set */
    bool oom;
};

/* A JSON string for s; text that is not valid UTF-8 (a message cut inside a multi-byte
 * sequence) is retried with every non-ASCII byte replaced by '?'. NULL only on OOM. */
static json_t *safe_string(const char *s)
{
    json_t *v = json_string(s);
    if (v)
        return v;
    char *c = strdup(s);
    if (!c)
        return NULL;
    for (char *p = c; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    v = json_string(c);
    free(c);
    return v;
}

/* json_object_set_new that accepts a NULL value (an earlier OOM) and reports failure. */
static bool put(json_t *obj, const char *key, json_t *v)
{
    return v && json_object_set_new(obj, key, v) == 0;
}

static char *dump(json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return s;
}

/* {"error": msg} for bodies that are not AdmissionReviews at all. */
static int bad_request(char **resp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad_request(char **resp, const char *fmt, ...)
{
    char msg[VS_ERRBUF_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *o = json_object();
    if (o && !put(o, "error", safe_string(msg))) {
        json_decref(o);
        o = NULL;
    }
    *resp = dump(o);
    return *resp ? 400 : 500;
}

/* Writes s into out (size n) for quoting in a message: at most QUOTE_MAX bytes, "..." when cut. */
static void excerpt(char *out, size_t n, const char *s)
{
    size_t len = strlen(s);
    if (len <= QUOTE_MAX)
        snprintf(out, n, "%s", s);
    else
        snprintf(out, n, "%.*s...", QUOTE_MAX, s);
}

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 with '=' padding (what Go emits for []byte). Returns a new string, free with
 * free(); NULL on OOM. */
static char *base64(const unsigned char *in, size_t n)
{
    if (n > (SIZE_MAX / 4) * 3 - 3)
        return NULL;
    char *out = malloc((n + 2) / 3 * 4 + 1);
    size_t o = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = base64_alphabet[(v >> 18) & 63];
        out[o++] = base64_alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < n ? base64_alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? base64_alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* Appends s as one RFC 6901 reference token: '~' -> "~0", '/' -> "~1". */
static void pointer_token(struct vs_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '~')
            vs_buf_puts(b, "~0");
        else if (*s == '/')
            vs_buf_puts(b, "~1");
        else
            vs_buf_append(b, s, 1);
    }
}

/* Appends {"op":op,"path":path,"value":value} to the patch; takes ownership of value. */
static void add_op(struct review *r, const char *op, const char *path, json_t *value)
{
    json_t *o = json_object();
    bool ok = o && path && put(o, "op", json_string(op)) && put(o, "path", safe_string(path));
    /* jansson's *_new setters consume their argument even when they fail. */
    if (ok)
        ok = put(o, "value", value);
    else
        json_decref(value);
    if (!ok) {
        json_decref(o);
        r->oom = true;
        return;
    }
    if (json_array_append_new(r->ops, o) != 0)
        r->oom = true;
}

/* `/spec/<list>/<i>` + suffix, with suffix_token (when non-NULL) escaped as a final token. */
static char *ctr_path(const char *list, size_t i, const char *suffix, const char *token)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_printf(&b, "/spec/%s/%zu%s", list, i, suffix);
    if (token) {
        vs_buf_puts(&b, "/");
        pointer_token(&b, token);
    }
    return vs_buf_steal(&b);
}

static void add_ctr_op(struct review *r, const char *list, size_t i, const char *suffix,
                       const char *token, json_t *value)
{
    char *path = ctr_path(list, i, suffix, token);
    add_op(r, "add", path, value);
    free(path);
}

/* Member key of obj when present and not null. */
static const json_t *member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* A resource of the container's limits; NULL when the name is unset (not configured). */
static const char *limit(const struct vs_container *c, const char *name)
{
    return name && *name ? vs_kv_get(&c->limits, name) : NULL;
}

/* Limits then requests, as HAMi's lookups; NULL when the name is not configured. */
static const char *resource(const struct vs_container *c, const char *name)
{
    return name && *name ? vs_request_resource(c, name) : NULL;
}

static json_t *env_var(const char *name, const char *value)
{
    json_t *e = json_object();
    if (e && (!put(e, "name", json_string(name)) || !put(e, "value", safe_string(value)))) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* The limits and requests to set and env entries to append for one container (NVIDIA's rules
 * and every backend's admission hook), emitted together so parents are created once. */
#define MAX_RES_CHANGES 16
struct ctr_changes {
    char *lim_keys[MAX_RES_CHANGES], *lim_vals[MAX_RES_CHANGES];
    size_t n_lim;
    char *req_keys[MAX_RES_CHANGES], *req_vals[MAX_RES_CHANGES];
    size_t n_req;
    json_t *env; /* array of new env entries */
};

static void changes_cleanup(struct ctr_changes *ch)
{
    for (size_t k = 0; k < ch->n_lim; k++) {
        free(ch->lim_keys[k]);
        free(ch->lim_vals[k]);
    }
    for (size_t k = 0; k < ch->n_req; k++) {
        free(ch->req_keys[k]);
        free(ch->req_vals[k]);
    }
    json_decref(ch->env);
}

/* Records key = val in one of the container's resource lists (the decoded pod and the list of
 * changes; a key set twice keeps its last value). */
static void want_res(struct review *r, struct vs_kvlist *list, char **keys, char **vals, size_t *n,
                     const char *key, const char *val)
{
    if (vs_kv_set(list, key, val) != VS_OK) {
        r->oom = true;
        return;
    }
    for (size_t k = 0; k < *n; k++) {
        if (strcmp(keys[k], key) == 0) {
            char *v = strdup(val);
            if (!v) {
                r->oom = true;
                return;
            }
            free(vals[k]);
            vals[k] = v;
            return;
        }
    }
    if (*n == MAX_RES_CHANGES || !(keys[*n] = strdup(key)) || !(vals[*n] = strdup(val))) {
        if (*n < MAX_RES_CHANGES)
            free(keys[*n]);
        r->oom = true;
        return;
    }
    (*n)++;
}

static void want_limit(struct review *r, struct vs_container *c, struct ctr_changes *ch,
                       const char *key, const char *val)
{
    want_res(r, &c->limits, ch->lim_keys, ch->lim_vals, &ch->n_lim, key, val);
}

static void want_request(struct review *r, struct vs_container *c, struct ctr_changes *ch,
                         const char *key, const char *val)
{
    want_res(r, &c->requests, ch->req_keys, ch->req_vals, &ch->n_req, key, val);
}

static void want_env(struct review *r, struct ctr_changes *ch, const char *name, const char *value)
{
    /* Once per container: several backends may ask for the same variable (every Ascend chip
     * with overwriteEnv hides the NPUs of a container that asks for none; HAMi appends one
     * copy per chip). */
    size_t k;
    json_t *x;
    json_array_foreach(ch->env, k, x)
    {
        const char *xn = json_string_value(json_object_get(x, "name"));
        const char *xv = json_string_value(json_object_get(x, "value"));
        if (xn && xv && strcmp(xn, name) == 0 && strcmp(xv, value) == 0)
            return;
    }
    json_t *e = env_var(name, value);
    if (!e || json_array_append_new(ch->env, e) != 0)
        r->oom = true;
}

/* spec.runtimeClassName, set once for the pod when it has none (the first asked wins). */
static void want_runtime(struct review *r, const char *name)
{
    const json_t *rc = member(r->spec, "runtimeClassName");
    if (!name || !*name || (json_is_string(rc) && *json_string_value(rc)) || r->runtime)
        return;
    if (!(r->runtime = strdup(name)))
        r->oom = true;
}

/* A pod annotation to set (applied to the decoded pod; emitted once the containers are done). */
static void want_annotation(struct review *r, const char *key, const char *value)
{
    if (vs_kv_set(&r->pod.annotations, key, value) != VS_OK ||
        vs_kv_set(&r->set_annotations, key, value) != VS_OK)
        r->oom = true;
}

/* Emits the ops for one container's changes against its raw JSON `raw`. */
static void emit_ctr_ops(struct review *r, const char *list, size_t i, const json_t *raw,
                         struct ctr_changes *ch)
{
    const json_t *res = member(raw, "resources");
    if ((ch->n_lim || ch->n_req) && !json_is_object(res))
        add_ctr_op(r, list, i, "/resources", NULL, json_object());
    if (ch->n_lim) {
        const json_t *lim = json_is_object(res) ? member(res, "limits") : NULL;
        if (!json_is_object(lim))
            add_ctr_op(r, list, i, "/resources/limits", NULL, json_object());
        for (size_t k = 0; k < ch->n_lim; k++)
            add_ctr_op(r, list, i, "/resources/limits", ch->lim_keys[k],
                       json_string(ch->lim_vals[k]));
    }
    if (ch->n_req) {
        const json_t *rq = json_is_object(res) ? member(res, "requests") : NULL;
        if (!json_is_object(rq))
            add_ctr_op(r, list, i, "/resources/requests", NULL, json_object());
        for (size_t k = 0; k < ch->n_req; k++)
            add_ctr_op(r, list, i, "/resources/requests", ch->req_keys[k],
                       json_string(ch->req_vals[k]));
    }
    if (json_array_size(ch->env) == 0)
        return;
    if (!json_is_array(member(raw, "env"))) {
        add_ctr_op(r, list, i, "/env", NULL, json_incref(ch->env));
        return;
    }
    size_t k;
    json_t *e;
    json_array_foreach(ch->env, k, e)
    {
        add_ctr_op(r, list, i, "/env/-", NULL, json_incref(e));
    }
}

/* Whether the env array `env` has an entry named `name`. */
static bool env_has(const json_t *env, const char *name)
{
    size_t i;
    const json_t *e;
    json_array_foreach(env, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && strcmp(n, name) == 0)
            return true;
    }
    return false;
}

/* Every backend's admission hook for container c (raw JSON `raw`; spec/hami-vendors.md §1.12),
 * in backend order; their changes join ch, pod-level ones r. */
static enum vs_err admit_backends(struct review *r, const json_t *raw, struct vs_container *c,
                                  bool init, struct ctr_changes *ch, struct vs_errbuf *eb)
{
    const struct vs_devices *set = r->cfg->devices;
    for (size_t d = 0; d < set->n && !r->oom; d++) {
        const struct vs_device *dev = set->dev[d];
        bool found = false;
        struct vs_admit a = {0};
        enum vs_err err = VS_OK;
        if (dev->ops->admit)
            err = dev->ops->admit(dev, &r->pod, c, init, &a, &found, eb);
        else
            found = dev->res_count && vs_kv_get(&c->limits, dev->res_count);
        for (size_t k = 0; !err && k < a.n; k++) {
            const struct vs_admit_op *o = &a.ops[k];
            switch (o->kind) {
            case VS_ADMIT_LIMIT:
                want_limit(r, c, ch, o->key, o->value);
                break;
            case VS_ADMIT_REQUEST:
                want_request(r, c, ch, o->key, o->value);
                break;
            case VS_ADMIT_ENV:
                want_env(r, ch, o->key, o->value);
                break;
            case VS_ADMIT_ENV_UNSET:
                if (!env_has(member(raw, "env"), o->key) && !env_has(ch->env, o->key))
                    want_env(r, ch, o->key, o->value);
                break;
            case VS_ADMIT_ANNOTATION:
                want_annotation(r, o->key, o->value);
                break;
            case VS_ADMIT_RUNTIME:
                want_runtime(r, o->value);
                break;
            }
        }
        r->oom |= a.oom;
        vs_admit_cleanup(&a);
        if (err)
            return err;
        r->recognised |= found;
    }
    return VS_OK;
}

/* §7 "NVIDIA container mutation" for container c (index i of `list`, raw JSON `raw`), then the
 * other backends' admission. Returns VS_ERR_INVAL with the message in eb for a validation error
 * (answered with 500). */
static enum vs_err mutate_container(struct review *r, const char *list, size_t i, const json_t *raw,
                                    struct vs_container *c, struct vs_errbuf *eb)
{
    const struct vs_devcfg *cfg = r->cfg;
    const char *cname = c->name ? c->name : "";
    struct ctr_changes ch = {.n_lim = 0};
    enum vs_err err = VS_OK;
    const char *v;
    int64_t x;

    /* 1. gpumem-percentage must be an integer in [0,100]. */
    if ((v = resource(c, cfg->res_mem_pct)) && (vs_quantity_int(v, &x) || x < 0 || x > 100))
        return vs_err_set(eb, VS_ERR_INVAL,
                          "invalid %s value %s in container %s: must be an integer between 0 "
                          "and 100",
                          cfg->res_mem_pct, v, cname);
    if (!(ch.env = json_array())) {
        r->oom = true;
        return VS_ERR_NOMEM;
    }
    /* 2. Task priority, as Quantity.Value() (rounded up). */
    if ((v = limit(c, cfg->res_priority))) {
        char num[24];
        if (vs_quantity_ceil(v, &x)) {
            err = vs_err_set(eb, VS_ERR_INVAL, "invalid %s value %s in container %s",
                             cfg->res_priority, v, cname);
            goto out;
        }
        snprintf(num, sizeof(num), "%lld", (long long)x);
        want_env(r, &ch, ENV_PRIORITY, num);
    }
    /* 3. Core policy env goes to every container, GPU or not (HAMi does the same). */
    if (cfg->gpu_core_policy && *cfg->gpu_core_policy &&
        strcmp(cfg->gpu_core_policy, "default") != 0)
        want_env(r, &ch, ENV_CORE_POLICY, cfg->gpu_core_policy);
    /* 4. Count present in limits, or defaulted when only memory/cores are. */
    bool rec = limit(c, cfg->res_count) != NULL;
    if (!rec && cfg->default_gpu_num > 0 && cfg->res_count && *cfg->res_count &&
        (limit(c, cfg->res_cores) || limit(c, cfg->res_mem) || limit(c, cfg->res_mem_pct))) {
        char num[24];
        snprintf(num, sizeof(num), "%d", (int)cfg->default_gpu_num);
        want_limit(r, c, &ch, cfg->res_count, num);
        rec = true;
    }
    /* 5. Whole-card memory without a core amount means an exclusive card. */
    if (resource(c, cfg->res_count) && cfg->res_cores && *cfg->res_cores &&
        !resource(c, cfg->res_cores)) {
        const char *pct = resource(c, cfg->res_mem_pct);
        bool exclusive = (pct && vs_quantity_int(pct, &x) == VS_OK && x == 100) || !cfg->res_mem ||
                         !*cfg->res_mem || (!resource(c, cfg->res_mem) && !pct);
        if (exclusive) {
            want_limit(r, c, &ch, cfg->res_cores, "100");
            rec = true;
        }
    }
    /* 6. Runtime class, once per pod. */
    if (rec && cfg->runtime_class_name && *cfg->runtime_class_name)
        want_runtime(r, cfg->runtime_class_name);
    /* 7. Hide the node's GPUs from containers that asked for none. */
    if (!rec && cfg->overwrite_env)
        want_env(r, &ch, ENV_VISIBLE, "none");
    r->recognised |= rec;
    err = admit_backends(r, raw, c, strcmp(list, "initContainers") == 0, &ch, eb);
    if (!err)
        emit_ctr_ops(r, list, i, raw, &ch);
out:
    changes_cleanup(&ch);
    return err;
}

/* The first privileged container, init containers first; NULL when none. */
static const struct vs_container *privileged(const struct vs_pod *p)
{
    for (size_t i = 0; i < p->n_init; i++)
        if (p->init[i].privileged)
            return &p->init[i];
    for (size_t i = 0; i < p->n_ctrs; i++)
        if (p->ctrs[i].privileged)
            return &p->ctrs[i];
    return NULL;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    return a + b;
}

/* §7 quota pre-check (spec/hami-vendors.md §1.13): true when the pod fits the namespace's
 * tracked quota of every backend it asks for: the app containers' sum of memory x cards and
 * cores x cards, or the largest init container's, against limit - used. */
static bool fits_quota(const struct review *r, const char *ns, const struct vs_pod_req *req)
{
    if (!r->o->quota)
        return true;
    const struct vs_devices *set = r->cfg->devices;
    for (size_t d = 0; d < set->n; d++) {
        if (!(req->devs & (1ull << d)))
            continue;
        struct vs_webhook_quota q;
        int64_t app_mem = 0, app_cores = 0, init_mem = 0, init_cores = 0;
        memset(&q, 0, sizeof(q));
        if (!r->o->quota(r->o->quota_ctx, ns, (uint16_t)d, &q))
            continue;
        for (size_t i = 0; i < req->n_ctrs; i++) {
            const struct vs_req *c = vs_ctr_req_get(&req->ctrs[i], (uint16_t)d);
            if (!c || c->nums <= 0)
                continue;
            app_mem = sat_add(app_mem, (int64_t)c->nums * c->memreq);
            app_cores = sat_add(app_cores, (int64_t)c->nums * c->cores);
        }
        for (size_t i = 0; i < req->n_init; i++) {
            const struct vs_req *c = vs_ctr_req_get(&req->init[i], (uint16_t)d);
            if (!c || c->nums <= 0)
                continue;
            if ((int64_t)c->nums * c->memreq > init_mem)
                init_mem = (int64_t)c->nums * c->memreq;
            if ((int64_t)c->nums * c->cores > init_cores)
                init_cores = (int64_t)c->nums * c->cores;
        }
        int64_t mem = app_mem > init_mem ? app_mem : init_mem;
        int64_t cores = app_cores > init_cores ? app_cores : init_cores;
        if (q.has_mem && sat_add(q.mem_used, mem) > q.mem_limit)
            return false;
        if (q.has_cores && sat_add(q.cores_used, cores) > q.cores_limit)
            return false;
    }
    return true;
}

/* Our stricter rule (design.md §4): an error with the message Filter would answer as Error when
 * a GPU quantity, a policy or the scoring-weights annotation is invalid, checked in Filter's
 * order. Fills req. */
static enum vs_err validate(struct review *r, struct vs_pod_req *req, struct vs_errbuf *eb)
{
    const struct vs_kvlist *an = &r->pod.annotations;
    const struct vs_node_policy *np;
    struct vs_gpu_policy gp;
    const char *v;
    enum vs_err err;

    if ((err = vs_request_build(&r->pod, r->cfg, req, eb)))
        return err;
    if (!req->any)
        return VS_OK;
    if ((v = vs_kv_get(an, VS_ANNO_NODE_POLICY)) &&
        (err = vs_policy_parse_node(v, VS_ANNO_NODE_POLICY, &np, eb)))
        return err;
    if ((v = vs_kv_get(an, VS_ANNO_GPU_POLICY)) &&
        (err = vs_policy_parse_gpu(v, VS_ANNO_GPU_POLICY, &gp, eb)))
        return err;
    struct vs_weights w;
    if ((v = vs_kv_get(an, VS_ANNO_WEIGHTS)) && (err = vs_annot_parse_weights(v, &w, eb))) {
        if (err != VS_ERR_NOMEM) {
            /* Filter's wording of the same refusal. */
            char msg[VS_ERRBUF_SIZE + 64];
            snprintf(msg, sizeof(msg), "calcScore failed %s for pod %s", eb->msg,
                     r->pod.name ? r->pod.name : "");
            vs_err_set(eb, err, "%s", msg);
        }
        return err;
    }
    return VS_OK;
}

/* Verdict of one review. */
struct verdict {
    bool allowed;
    int code;           /* status.code */
    const char *reason; /* status.reason, NULL = none */
    char msg[VS_ERRBUF_SIZE];
};

static void verdict_set(struct verdict *v, bool allowed, int code, const char *reason,
                        const char *msg)
{
    v->allowed = allowed;
    v->code = code;
    v->reason = reason;
    snprintf(v->msg, sizeof(v->msg), "%s", msg ? msg : "");
}

static void deny(struct verdict *v, const char *msg)
{
    verdict_set(v, false, 403, "Forbidden", msg);
}

/* A copy of the raw pod whose metadata.name is non-empty: on CREATE with generateName the API
 * server has not named the pod yet, and the shared codec requires a name. */
static json_t *nameable(const json_t *obj)
{
    const json_t *meta = member(obj, "metadata");
    const json_t *name = json_is_object(meta) ? member(meta, "name") : NULL;
    if (!json_is_object(obj) || (meta && !json_is_object(meta)) ||
        (json_is_string(name) && *json_string_value(name)))
        return json_incref((json_t *)obj);
    if (name && !json_is_string(name))
        return json_incref((json_t *)obj); /* let the codec report the type error */
    const json_t *gen = json_is_object(meta) ? member(meta, "generateName") : NULL;
    json_t *copy = json_copy((json_t *)obj);
    json_t *m = meta ? json_copy((json_t *)meta) : json_object();
    if (!copy || !m ||
        !put(m, "name",
             json_string(json_is_string(gen) && *json_string_value(gen) ? json_string_value(gen)
                                                                        : "(unnamed)")) ||
        !put(copy, "metadata", m)) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

/* Runs the §7 decision procedure for a pod CREATE. */
static void review_pod(struct review *r, const json_t *req, struct verdict *v)
{
    struct vs_errbuf eb = {{0}};
    struct vs_pod_req preq;
    const json_t *obj = member(req, "object");
    const json_t *nsv = member(req, "namespace");
    const char *sname, *want;
    enum vs_err err;

    memset(&preq, 0, sizeof(preq));
    if (!obj) {
        verdict_set(v, false, 400, NULL, "cannot decode pod: request.object is missing");
        return;
    }
    json_t *named = nameable(obj);
    if (!named) {
        r->oom = true;
        return;
    }
    err = vs_codec_pod_from_json(named, &r->pod, &eb);
    json_decref(named);
    if (err == VS_ERR_NOMEM) {
        r->oom = true;
        return;
    }
    if (err) {
        char msg[VS_ERRBUF_SIZE + 32];
        snprintf(msg, sizeof(msg), "cannot decode pod: %s", eb.msg);
        verdict_set(v, false, 400, NULL, msg);
        return;
    }
    r->spec = member(obj, "spec");
    if (r->pod.n_ctrs == 0) {
        deny(v, "pod has no containers");
        return;
    }
    /* 3. Scheduler-name gate. */
    sname = r->pod.scheduler_name ? r->pod.scheduler_name : "";
    want = r->o->scheduler_name ? r->o->scheduler_name : "";
    if (*sname && (strcmp(sname, "default-scheduler") != 0 || !r->o->force_overwrite_default) &&
        (!*want || strcmp(want, sname) != 0)) {
        verdict_set(v, true, 200, NULL, "pod already has different scheduler assigned");
        return;
    }
    /* 4. Mutate init containers, then regular ones. */
    const json_t *inits = member(r->spec, "initContainers");
    const json_t *ctrs = member(r->spec, "containers");
    for (size_t i = 0; i < r->pod.n_init && !r->oom; i++)
        if (mutate_container(r, "initContainers", i, json_array_get(inits, i), &r->pod.init[i],
                             &eb) == VS_ERR_INVAL) {
            verdict_set(v, false, 500, NULL, eb.msg);
            return;
        }
    for (size_t i = 0; i < r->pod.n_ctrs && !r->oom; i++)
        if (mutate_container(r, "containers", i, json_array_get(ctrs, i), &r->pod.ctrs[i], &eb) ==
            VS_ERR_INVAL) {
            verdict_set(v, false, 500, NULL, eb.msg);
            return;
        }
    if (r->oom)
        return;
    if (r->runtime)
        add_op(r, "add", "/spec/runtimeClassName", json_string(r->runtime));
    if (r->set_annotations.n) {
        const json_t *md = member(obj, "metadata");
        if (!json_is_object(md)) /* kube-apiserver always sends it; a patch must still apply */
            add_op(r, "add", "/metadata", json_object());
        if (!json_is_object(member(md, "annotations")))
            add_op(r, "add", "/metadata/annotations", json_object());
        for (size_t k = 0; k < r->set_annotations.n; k++) {
            struct vs_buf b;
            vs_buf_init(&b);
            vs_buf_puts(&b, "/metadata/annotations/");
            pointer_token(&b, r->set_annotations.items[k].key);
            char *path = vs_buf_steal(&b);
            add_op(r, "add", path, json_string(r->set_annotations.items[k].val));
            free(path);
        }
    }
    /* 5. Privileged containers cannot be confined by HAMi's in-container limiter. */
    const struct vs_container *pc = r->recognised ? privileged(&r->pod) : NULL;
    if (pc) {
        char msg[VS_ERRBUF_SIZE];
        snprintf(msg, sizeof(msg), "container %s is privileged", pc->name ? pc->name : "");
        deny(v, msg);
        return;
    }
    /* 6. Route the pod to our profile. */
    if (r->recognised && *want) {
        if (strcmp(sname, want) != 0)
            add_op(r, member(r->spec, "schedulerName") ? "replace" : "add", "/spec/schedulerName",
                   json_string(want));
        if (r->pod.node_name && *r->pod.node_name) {
            deny(v, "pod has node assigned");
            return;
        }
    }
    if (!r->recognised) {
        verdict_set(v, true, 200, NULL, NULL);
        return;
    }
    /* Stricter than HAMi: what Filter would reject as a pod-level Error is denied here. */
    if ((err = validate(r, &preq, &eb))) {
        if (err == VS_ERR_NOMEM)
            r->oom = true;
        else
            deny(v, eb.msg);
        goto out;
    }
    /* 7. Quota pre-check. */
    if (preq.any) {
        const char *ns =
            json_is_string(nsv) && *json_string_value(nsv) ? json_string_value(nsv) : r->pod.ns;
        if (!fits_quota(r, ns, &preq)) {
            deny(v, "exceeding resource quota");
            goto out;
        }
    }
    verdict_set(v, true, 200, NULL, NULL);
out:
    vs_pod_req_cleanup(&preq);
}

/* Whether a container or init container of the raw pod asks resource `name` (limits or
 * requests). */
static bool pod_asks(const json_t *obj, const char *name)
{
    const json_t *spec = member(obj, "spec");
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const kinds[] = {"limits", "requests"};
    for (int l = 0; l < 2; l++) {
        const json_t *cs = member(spec, lists[l]);
        size_t i;
        const json_t *c;
        json_array_foreach(cs, i, c)
        {
            const json_t *res = member(c, "resources");
            for (int k = 0; k < 2; k++)
                if (json_is_object(res) && member(member(res, kinds[k]), name))
                    return true;
        }
    }
    return false;
}

/* The DRA guard's warnings for the pod being created (vs_webhook_opts.dra_conflicts): one per
 * conflicting DeviceClass whose resource the pod asks. NULL when none; *oom on OOM. */
static json_t *dra_warnings(const struct vs_webhook_opts *o, const json_t *req, bool *oom)
{
    if (!o->dra_conflicts)
        return NULL;
    const json_t *obj = member(req, "object");
    if (!json_is_object(obj))
        return NULL;
    json_t *cf = o->dra_conflicts(o->dra_ctx);
    if (!cf) {
        *oom = true;
        return NULL;
    }
    json_t *out = NULL;
    size_t i;
    const json_t *e;
    json_array_foreach(cf, i, e)
    {
        const char *cls = json_string_value(json_object_get(e, "deviceclass"));
        const char *res = json_string_value(json_object_get(e, "resource"));
        if (!cls || !res || !pod_asks(obj, res))
            continue;
        char text[1024];
        vs_dra_warning(cls, res, text, sizeof(text));
        if ((!out && !(out = json_array())) || json_array_append_new(out, safe_string(text))) {
            *oom = true;
            break;
        }
    }
    json_decref(cf);
    return out;
}

/* Builds the AdmissionReview response (warnings: the admission warnings, NULL when none).
 * Returns a new string or NULL on OOM. */
static char *response(const char *api, const char *uid, const struct verdict *v, json_t *ops,
                      json_t *warnings)
{
    json_t *top = json_object(), *rsp = json_object(), *st = json_object();
    char *patch = NULL, *b64 = NULL;
    bool ok = top && rsp && st;

    ok = ok && put(top, "apiVersion", json_string(api)) &&
         put(top, "kind", json_string("AdmissionReview")) && put(rsp, "uid", json_string(uid)) &&
         put(rsp, "allowed", json_boolean(v->allowed));
    if (ok && v->allowed && json_array_size(ops) > 0) {
        patch = json_dumps(ops, JSON_COMPACT);
        b64 = patch ? base64((const unsigned char *)patch, strlen(patch)) : NULL;
        ok = b64 && put(rsp, "patchType", json_string("JSONPatch")) &&
             put(rsp, "patch", json_string(b64));
    }
    ok = ok && put(st, "code", json_integer(v->code));
    if (ok && v->reason)
        ok = put(st, "reason", json_string(v->reason));
    if (ok && v->msg[0])
        ok = put(st, "message", safe_string(v->msg));
    if (ok) {
        ok = put(rsp, "status", st); /* consumes st either way */
        st = NULL;
    }
    if (ok && json_array_size(warnings) > 0)
        ok = put(rsp, "warnings", json_incref(warnings));
    if (ok) {
        ok = put(top, "response", rsp);
        rsp = NULL;
    }
    free(patch);
    free(b64);
    json_decref(st);
    json_decref(rsp);
    if (!ok) {
        json_decref(top);
        return NULL;
    }
    return dump(top);
}

/* True when the review is a CREATE of a pod (fields the API server always sends are checked
 * when present; a review without them is treated as a pod CREATE, as HAMi does). */
static bool is_pod_create(const json_t *req)
{
    const json_t *op = member(req, "operation");
    const json_t *kind = member(req, "kind");
    const json_t *res = member(req, "resource");
    const json_t *sub = member(req, "subResource");
    const json_t *k = json_is_object(kind) ? member(kind, "kind") : NULL;
    const json_t *rn = json_is_object(res) ? member(res, "resource") : NULL;

    if (op && !(json_is_string(op) && strcmp(json_string_value(op), "CREATE") == 0))
        return false;
    if (k && !(json_is_string(k) && strcmp(json_string_value(k), "Pod") == 0))
        return false;
    if (rn && !(json_is_string(rn) && strcmp(json_string_value(rn), "pods") == 0))
        return false;
    if (sub && !(json_is_string(sub) && *json_string_value(sub) == '\0'))
        return false;
    return true;
}

int vs_webhook_handle(const struct vs_webhook_opts *o, const char *body, size_t len, char **resp)
{
    json_error_t je;
    json_t *root;
    struct review r;
    struct verdict v;
    char q[QUOTE_MAX + 8];
    struct vs_devcfg defaults;
    bool have_defaults = false;
    int status = 200;

    *resp = NULL;
    root = json_loadb(body, len, 0, &je);
    if (!root && json_error_code(&je) == json_error_out_of_memory)
        return 500;
    if (!root)
        return bad_request(resp, "invalid JSON: %s at line %d column %d", je.text, je.line,
                           je.column);
    memset(&r, 0, sizeof(r));
    const json_t *api = json_object_get(root, "apiVersion");
    const json_t *kind = json_object_get(root, "kind");
    const json_t *req = json_object_get(root, "request");
    const json_t *uid = json_object_get(req, "uid");
    if (!json_is_object(root)) {
        status = bad_request(resp, "not an AdmissionReview: expected a JSON object");
        goto out;
    }
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "AdmissionReview") != 0) {
        excerpt(q, sizeof(q), json_is_string(kind) ? json_string_value(kind) : "");
        status = json_is_string(kind)
                     ? bad_request(resp, "not an AdmissionReview: kind is \"%s\"", q)
                     : bad_request(resp, "not an AdmissionReview: kind is missing");
        goto out;
    }
    if (!json_is_string(api) || (strcmp(json_string_value(api), API_V1) != 0 &&
                                 strcmp(json_string_value(api), API_V1BETA1) != 0)) {
        excerpt(q, sizeof(q), json_is_string(api) ? json_string_value(api) : "");
        status =
            json_is_string(api)
                ? bad_request(
                      resp, "unsupported apiVersion \"%s\" (want " API_V1 " or " API_V1BETA1 ")", q)
                : bad_request(resp, "AdmissionReview has no apiVersion");
        goto out;
    }
    if (!json_is_object(req)) {
        status = bad_request(resp, "AdmissionReview has no request");
        goto out;
    }
    if (!json_is_string(uid) || !*json_string_value(uid)) {
        status = bad_request(resp, "AdmissionReview request has no uid");
        goto out;
    }

    r.o = o;
    r.cfg = o->cfg;
    if (!r.cfg) {
        if (vs_devcfg_init(&defaults) != VS_OK) {
            status = 500;
            goto out;
        }
        have_defaults = true;
        r.cfg = &defaults;
    }
    if (!(r.ops = json_array())) {
        status = 500;
        goto out;
    }
    verdict_set(&v, true, 200, NULL, NULL);
    if (is_pod_create(req))
        review_pod(&r, req, &v);
    if (r.oom) {
        status = 500;
        goto out;
    }
    json_t *warnings = NULL;
    if (is_pod_create(req))
        warnings = dra_warnings(o, req, &r.oom);
    if (r.oom) {
        json_decref(warnings);
        status = 500;
        goto out;
    }
    *resp = response(json_string_value(api), json_string_value(uid), &v, r.ops, warnings);
    json_decref(warnings);
    status = *resp ? 200 : 500;
out:
    if (have_defaults)
        vs_devcfg_cleanup(&defaults);
    vs_pod_cleanup(&r.pod);
    free(r.runtime);
    vs_kv_cleanup(&r.set_annotations);
    json_decref(r.ops);
    json_decref(root);
    return status;
}
