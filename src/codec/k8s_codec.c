/* k8s_codec: decodes v1 Pod, Node and ResourceQuota JSON (jansson) into the plain structs of
 * kobj.h. A missing key and JSON null both mean "absent"; a value of the wrong type is an error
 * naming its JSON path. Map values also accept numbers and bools (YAML users leave them bare). */
#include "k8s_codec.h"

#include "annot.h"
#include "json_prune.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for "%lld" and for the longest shortest-round-trip double text ("-1.2345678901234567e-308"
 * or 21 fixed digits plus sign and point). */
#define NUM_TEXT_SIZE 40
/* JSON paths in messages; longer ones are truncated by vs_err_set anyway. */
#define PATH_SIZE 160

const char *vs_codec_type_name(const json_t *v)
{
    if (!v)
        return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "bool";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* The member `key` of obj; NULL when obj is NULL, the key is missing or its value is null. */
static const json_t *member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* A constant return the static analyzer can follow, unlike vs_err_set's. */
static enum vs_err oom(struct vs_errbuf *eb)
{
    vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    return VS_ERR_NOMEM;
}

static enum vs_err type_err(struct vs_errbuf *eb, const char *base, const char *key,
                            const char *want, const json_t *got)
{
    return vs_err_set(eb, VS_ERR_PARSE, "%s%s%s: expected %s, got %s", base,
                      *base && *key ? "." : "", key, want, vs_codec_type_name(got));
}

/* Writes the shortest decimal text that reads back as d: fixed notation for magnitudes in
 * [1e-6, 1e21), exponent notation outside (so 1.5 -> "1.5", 1e8 -> "100000000"). */
static void real_text(double d, char *out, size_t n)
{
    char sci[NUM_TEXT_SIZE];
    int prec;

    if (d == 0 || !isfinite(d)) {
        snprintf(out, n, "%s", d == 0 ? "0" : "nan");
        return;
    }
    for (prec = 1; prec < 17; prec++) {
        snprintf(sci, sizeof(sci), "%.*e", prec - 1, d);
        if (strtod(sci, NULL) == d)
            break;
    }
    snprintf(sci, sizeof(sci), "%.*e", prec - 1, d);

    /* sci is "[-]D[.DDD]e(+|-)XX": collect the digits and the exponent. */
    const char *p = sci;
    bool neg = *p == '-';
    char digits[20];
    size_t nd = 0;
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.' && nd < sizeof(digits) - 1)
            digits[nd++] = *p;
    digits[nd] = '\0';
    int exp = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;

    size_t o = 0;
    char buf[NUM_TEXT_SIZE];
#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (o < sizeof(buf) - 1)                                                                   \
            buf[o++] = (c);                                                                        \
    } while (0)
    if (neg)
        PUT('-');
    if (exp >= -6 && exp < 21) {
        if (exp < 0) {
            PUT('0');
            PUT('.');
            for (int i = -1; i > exp; i--)
                PUT('0');
            for (size_t i = 0; i < nd; i++)
                PUT(digits[i]);
        } else {
            for (size_t i = 0; i < nd || i <= (size_t)exp; i++) {
                if (i == (size_t)exp + 1)
                    PUT('.');
                PUT(i < nd ? digits[i] : '0');
            }
        }
    } else {
        PUT(digits[0]);
        if (nd > 1)
            PUT('.');
        for (size_t i = 1; i < nd; i++)
            PUT(digits[i]);
        PUT('e');
        PUT(exp < 0 ? '-' : '+');
        char e[12];
        snprintf(e, sizeof(e), "%d", exp < 0 ? -exp : exp);
        for (const char *q = e; *q; q++)
            PUT(*q);
    }
#undef PUT
    buf[o] = '\0';
    snprintf(out, n, "%s", buf);
}

/* The text of a string, number or bool value: borrowed from v or written into tmp.
 * Returns false for objects, arrays and null. */
static bool scalar_text(const json_t *v, char tmp[NUM_TEXT_SIZE], const char **out)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        *out = json_string_value(v);
        return true;
    case JSON_INTEGER:
        snprintf(tmp, NUM_TEXT_SIZE, "%lld", (long long)json_integer_value(v));
        *out = tmp;
        return true;
    case JSON_REAL:
        real_text(json_real_value(v), tmp, NUM_TEXT_SIZE);
        *out = tmp;
        return true;
    case JSON_TRUE:
        *out = "true";
        return true;
    case JSON_FALSE:
        *out = "false";
        return true;
    default:
        return false;
    }
}

/* Writes key as a JSON string literal (quotes included), for `map["key"]` paths. */
static void quote_key(char *out, size_t n, const char *key)
{
    size_t o = 0;
    if (n < 3) {
        if (n)
            out[0] = '\0';
        return;
    }
    out[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)key; *p && o + 8 < n; p++) {
        if (*p == '"' || *p == '\\') {
            out[o++] = '\\';
            out[o++] = (char)*p;
        } else if (*p < 0x20) {
            o += (size_t)snprintf(out + o, n - o, "\\u%04x", *p);
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
}

/* parent[key] when it is an object; *out is NULL when absent. */
static enum vs_err get_obj(const json_t *parent, const char *base, const char *key,
                           const json_t **out, struct vs_errbuf *eb)
{
    const json_t *v = member(parent, key);
    *out = NULL;
    if (v && !json_is_object(v))
        return type_err(eb, base, key, "an object", v);
    *out = v;
    return VS_OK;
}

static enum vs_err get_arr(const json_t *parent, const char *base, const char *key,
                           const json_t **out, struct vs_errbuf *eb)
{
    const json_t *v = member(parent, key);
    *out = NULL;
    if (v && !json_is_array(v))
        return type_err(eb, base, key, "an array", v);
    *out = v;
    return VS_OK;
}

/* A new copy of the text of parent[key] in *dst ("" when absent). */
static enum vs_err get_str(const json_t *parent, const char *base, const char *key, char **dst,
                           struct vs_errbuf *eb)
{
    const json_t *v = member(parent, key);
    char tmp[NUM_TEXT_SIZE];
    const char *text = "";

    if (v && !scalar_text(v, tmp, &text))
        return type_err(eb, base, key, "a string", v);
    free(*dst);
    *dst = strdup(text);
    if (!*dst)
        return oom(eb);
    return VS_OK;
}

static enum vs_err get_bool(const json_t *parent, const char *base, const char *key, bool *dst,
                            struct vs_errbuf *eb)
{
    const json_t *v = member(parent, key);
    *dst = false;
    if (!v)
        return VS_OK;
    if (!json_is_boolean(v))
        return type_err(eb, base, key, "a bool", v);
    *dst = json_is_true(v);
    return VS_OK;
}

/* Fills out (empty on entry) from the string map parent[key]. JSON objects have unique keys,
 * so the list is filled directly at its final size instead of through vs_kv_set. */
static enum vs_err get_map(const json_t *parent, const char *base, const char *key,
                           struct vs_kvlist *out, struct vs_errbuf *eb)
{
    const json_t *obj;
    enum vs_err rc = get_obj(parent, base, key, &obj, eb);
    if (rc != VS_OK || !obj || json_object_size(obj) == 0)
        return rc;

    out->items = calloc(json_object_size(obj), sizeof(*out->items));
    if (!out->items)
        return oom(eb);

    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        char tmp[NUM_TEXT_SIZE];
        const char *text = "";
        if (!json_is_null(v) && !scalar_text(v, tmp, &text)) {
            char qk[PATH_SIZE];
            quote_key(qk, sizeof(qk), k);
            return vs_err_set(eb, VS_ERR_PARSE, "%s%s%s[%s]: expected a string or number, got %s",
                              base, *base ? "." : "", key, qk, vs_codec_type_name(v));
        }
        char *kc = strdup(k);
        char *vc = strdup(text);
        if (!kc || !vc) {
            free(kc);
            free(vc);
            return oom(eb);
        }
        out->items[out->n].key = kc;
        out->items[out->n].val = vc;
        out->n++;
    }
    return VS_OK;
}

/* spec[key] (containers or initContainers) into a new array of *n containers. */
static enum vs_err get_containers(const json_t *spec, const char *key, struct vs_container **out,
                                  size_t *n, struct vs_errbuf *eb)
{
    const json_t *arr;
    enum vs_err rc = get_arr(spec, "spec", key, &arr, eb);
    size_t cnt = json_array_size(arr);
    if (rc != VS_OK || cnt == 0)
        return rc;

    *out = calloc(cnt, sizeof(**out));
    if (!*out)
        return oom(eb);
    *n = cnt;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *c = json_array_get(arr, i);
        struct vs_container *ctr = &(*out)[i];
        char base[64], sub[PATH_SIZE];
        const json_t *res, *sc;

        snprintf(base, sizeof(base), "spec.%s[%zu]", key, i);
        if (!json_is_object(c))
            return type_err(eb, base, "", "an object", c);
        if ((rc = get_str(c, base, "name", &ctr->name, eb)) != VS_OK ||
            (rc = get_obj(c, base, "resources", &res, eb)) != VS_OK ||
            (rc = get_obj(c, base, "securityContext", &sc, eb)) != VS_OK)
            return rc;
        snprintf(sub, sizeof(sub), "%s.resources", base);
        if ((rc = get_map(res, sub, "limits", &ctr->limits, eb)) != VS_OK ||
            (rc = get_map(res, sub, "requests", &ctr->requests, eb)) != VS_OK)
            return rc;
        snprintf(sub, sizeof(sub), "%s.securityContext", base);
        if ((rc = get_bool(sc, sub, "privileged", &ctr->privileged, eb)) != VS_OK)
            return rc;
        char *rp = NULL;
        rc = get_str(c, base, "restartPolicy", &rp, eb);
        ctr->restart_always = rp && strcmp(rp, "Always") == 0;
        free(rp);
        if (rc != VS_OK)
            return rc;
    }
    return VS_OK;
}

/* spec.resources (pod-level requests and limits). */
static enum vs_err get_pod_resources(const json_t *spec, struct vs_pod *p, struct vs_errbuf *eb)
{
    const json_t *res;
    enum vs_err rc = get_obj(spec, "spec", "resources", &res, eb);
    if (rc != VS_OK || !res)
        return rc;
    if ((rc = get_map(res, "spec.resources", "requests", &p->pod_requests, eb)) != VS_OK ||
        (rc = get_map(res, "spec.resources", "limits", &p->pod_limits, eb)) != VS_OK)
        return rc;
    return VS_OK;
}

/* spec.tolerations: key, operator, value, effect of each (tolerationSeconds plays no part in
 * filtering). */
static enum vs_err get_tolerations(const json_t *spec, struct vs_pod *p, struct vs_errbuf *eb)
{
    const json_t *arr;
    enum vs_err rc = get_arr(spec, "spec", "tolerations", &arr, eb);
    size_t cnt = json_array_size(arr);
    if (rc != VS_OK || cnt == 0)
        return rc;
    p->tols = calloc(cnt, sizeof(*p->tols));
    if (!p->tols)
        return oom(eb);
    p->n_tols = cnt;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *t = json_array_get(arr, i);
        struct vs_toleration *tol = &p->tols[i];
        char base[64];
        snprintf(base, sizeof(base), "spec.tolerations[%zu]", i);
        if (!json_is_object(t))
            return type_err(eb, base, "", "an object", t);
        if ((rc = get_str(t, base, "key", &tol->key, eb)) != VS_OK ||
            (rc = get_str(t, base, "operator", &tol->op, eb)) != VS_OK ||
            (rc = get_str(t, base, "value", &tol->value, eb)) != VS_OK ||
            (rc = get_str(t, base, "effect", &tol->effect, eb)) != VS_OK)
            return rc;
    }
    return VS_OK;
}

static enum vs_err get_taints(const json_t *spec, struct vs_knode *n, struct vs_errbuf *eb)
{
    const json_t *arr;
    enum vs_err rc = get_arr(spec, "spec", "taints", &arr, eb);
    size_t cnt = json_array_size(arr);
    if (rc != VS_OK || cnt == 0)
        return rc;
    n->taints = calloc(cnt, sizeof(*n->taints));
    if (!n->taints)
        return oom(eb);
    n->n_taints = cnt;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *t = json_array_get(arr, i);
        struct vs_taint *tn = &n->taints[i];
        char base[64];
        snprintf(base, sizeof(base), "spec.taints[%zu]", i);
        if (!json_is_object(t))
            return type_err(eb, base, "", "an object", t);
        if ((rc = get_str(t, base, "key", &tn->key, eb)) != VS_OK ||
            (rc = get_str(t, base, "value", &tn->value, eb)) != VS_OK ||
            (rc = get_str(t, base, "effect", &tn->effect, eb)) != VS_OK)
            return rc;
    }
    return VS_OK;
}

/* base[key]: a list of node selector requirements into *out / *n. */
static enum vs_err get_nsreqs(const json_t *term, const char *base, const char *key,
                              struct vs_nsreq **out, size_t *n, struct vs_errbuf *eb)
{
    const json_t *arr;
    enum vs_err rc = get_arr(term, base, key, &arr, eb);
    size_t cnt = json_array_size(arr);
    if (rc != VS_OK || cnt == 0)
        return rc;
    *out = calloc(cnt, sizeof(**out));
    if (!*out)
        return oom(eb);
    *n = cnt;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *r = json_array_get(arr, i);
        struct vs_nsreq *req = &(*out)[i];
        char rb[PATH_SIZE];
        snprintf(rb, sizeof(rb), "%s.%s[%zu]", base, key, i);
        if (!json_is_object(r))
            return type_err(eb, rb, "", "an object", r);
        const json_t *vals;
        if ((rc = get_str(r, rb, "key", &req->key, eb)) != VS_OK ||
            (rc = get_str(r, rb, "operator", &req->op, eb)) != VS_OK ||
            (rc = get_arr(r, rb, "values", &vals, eb)) != VS_OK)
            return rc;
        size_t nv = json_array_size(vals);
        if (nv == 0)
            continue;
        req->values = calloc(nv, sizeof(*req->values));
        if (!req->values)
            return oom(eb);
        for (size_t j = 0; j < nv; j++) {
            const json_t *v = json_array_get(vals, j);
            char tmp[NUM_TEXT_SIZE];
            const char *text = "";
            if (!scalar_text(v, tmp, &text))
                return vs_err_set(eb, VS_ERR_PARSE, "%s.values[%zu]: expected a string, got %s", rb,
                                  j, vs_codec_type_name(v));
            req->values[j] = strdup(text);
            if (!req->values[j])
                return oom(eb);
            req->n_values = j + 1;
        }
    }
    return VS_OK;
}

/* spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution. */
static enum vs_err get_affinity(const json_t *spec, struct vs_pod *p, struct vs_errbuf *eb)
{
    static const char *const path[] = {"affinity", "nodeAffinity",
                                       "requiredDuringSchedulingIgnoredDuringExecution"};
    const json_t *cur = spec;
    char base[PATH_SIZE] = "spec";
    enum vs_err rc;
    for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
        const json_t *next;
        if ((rc = get_obj(cur, base, path[i], &next, eb)) != VS_OK || !next)
            return rc;
        size_t l = strlen(base);
        snprintf(base + l, sizeof(base) - l, ".%s", path[i]);
        cur = next;
    }
    p->has_required_affinity = true;
    const json_t *arr;
    if ((rc = get_arr(cur, base, "nodeSelectorTerms", &arr, eb)) != VS_OK)
        return rc;
    size_t cnt = json_array_size(arr);
    if (cnt == 0)
        return VS_OK;
    p->aff_terms = calloc(cnt, sizeof(*p->aff_terms));
    if (!p->aff_terms)
        return oom(eb);
    p->n_aff_terms = cnt;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *t = json_array_get(arr, i);
        struct vs_nsterm *term = &p->aff_terms[i];
        char tb[PATH_SIZE];
        snprintf(tb, sizeof(tb), "%s.nodeSelectorTerms[%zu]", base, i);
        if (!json_is_object(t))
            return type_err(eb, tb, "", "an object", t);
        if ((rc = get_nsreqs(t, tb, "matchExpressions", &term->exprs, &term->n_exprs, eb)) !=
                VS_OK ||
            (rc = get_nsreqs(t, tb, "matchFields", &term->fields, &term->n_fields, eb)) != VS_OK)
            return rc;
    }
    return VS_OK;
}

static enum vs_err get_init_status(const json_t *status, struct vs_pod *p, struct vs_errbuf *eb)
{
    const json_t *arr;
    enum vs_err rc = get_arr(status, "status", "initContainerStatuses", &arr, eb);
    size_t cnt = json_array_size(arr);
    if (rc != VS_OK || cnt == 0)
        return rc;

    p->init_status = calloc(cnt, sizeof(*p->init_status));
    if (!p->init_status)
        return oom(eb);
    p->n_init_status = cnt;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *s = json_array_get(arr, i);
        const json_t *state, *term, *code;
        char base[PATH_SIZE];

        snprintf(base, sizeof(base), "status.initContainerStatuses[%zu]", i);
        if (!json_is_object(s))
            return type_err(eb, base, "", "an object", s);
        if ((rc = get_obj(s, base, "state", &state, eb)) != VS_OK)
            return rc;
        snprintf(base, sizeof(base), "status.initContainerStatuses[%zu].state", i);
        if ((rc = get_obj(state, base, "terminated", &term, eb)) != VS_OK)
            return rc;
        if (!term)
            continue;
        p->init_status[i].terminated = true;
        code = member(term, "exitCode");
        if (!code)
            continue;
        snprintf(base, sizeof(base), "status.initContainerStatuses[%zu].state.terminated", i);
        if (!json_is_integer(code))
            return type_err(eb, base, "exitCode", "an integer", code);
        json_int_t ec = json_integer_value(code);
        if (ec < INT32_MIN || ec > INT32_MAX)
            return vs_err_set(eb, VS_ERR_PARSE, "%s.exitCode: out of int32 range: %lld", base,
                              (long long)ec);
        p->init_status[i].exit_code = (int32_t)ec;
    }
    return VS_OK;
}

/* metadata.name, required and non-empty. */
static enum vs_err get_name(const json_t *meta, char **dst, struct vs_errbuf *eb)
{
    enum vs_err rc = get_str(meta, "metadata", "name", dst, eb);
    if (rc == VS_OK && **dst == '\0')
        return vs_err_set(eb, VS_ERR_PARSE, "metadata.name: missing");
    return rc;
}

/* metadata.namespace, "default" when absent or empty (as the API server defaults it). */
static enum vs_err get_ns(const json_t *meta, char **dst, struct vs_errbuf *eb)
{
    enum vs_err rc = get_str(meta, "metadata", "namespace", dst, eb);
    if (rc == VS_OK && **dst == '\0') {
        free(*dst);
        *dst = strdup("default");
        if (!*dst)
            return oom(eb);
    }
    return rc;
}

static enum vs_err expect_object(const json_t *obj, struct vs_errbuf *eb)
{
    if (!json_is_object(obj))
        return vs_err_set(eb, VS_ERR_PARSE, "expected an object, got %s", vs_codec_type_name(obj));
    return VS_OK;
}

/* spec.priority, spec.preemptionPolicy, status.startTime and status.nominatedNodeName. */
static enum vs_err get_priority_fields(const json_t *spec, const json_t *status, struct vs_pod *out,
                                       struct vs_errbuf *eb)
{
    const json_t *v = member(spec, "priority");
    enum vs_err rc;
    if (v) {
        if (!json_is_integer(v))
            return type_err(eb, "spec", "priority", "an integer", v);
        json_int_t pr = json_integer_value(v);
        if (pr < INT32_MIN || pr > INT32_MAX)
            return vs_err_set(eb, VS_ERR_PARSE, "spec.priority: out of int32 range: %lld",
                              (long long)pr);
        out->priority = (int32_t)pr;
    }
    char *pol = NULL;
    if ((rc = get_str(spec, "spec", "preemptionPolicy", &pol, eb)) != VS_OK)
        return rc;
    if (*pol && strcmp(pol, "Never") != 0 && strcmp(pol, "PreemptLowerPriority") != 0) {
        vs_err_set(eb, VS_ERR_PARSE,
                   "spec.preemptionPolicy: expected Never or PreemptLowerPriority, got \"%s\"",
                   pol);
        free(pol);
        return VS_ERR_PARSE;
    }
    out->preempt_never = strcmp(pol, "Never") == 0;
    free(pol);
    char *st = NULL;
    if ((rc = get_str(status, "status", "startTime", &st, eb)) != VS_OK)
        return rc;
    if (*st && vs_annot_parse_rfc3339(st, &out->start_time)) {
        vs_err_set(eb, VS_ERR_PARSE, "status.startTime: invalid RFC 3339 time \"%s\"", st);
        free(st);
        return VS_ERR_PARSE;
    }
    free(st);
    return get_str(status, "status", "nominatedNodeName", &out->nominated_node, eb);
}

enum vs_err vs_codec_pod_from_json(const json_t *obj, struct vs_pod *out, struct vs_errbuf *eb)
{
    const json_t *meta, *spec, *status;
    enum vs_err rc;

    memset(out, 0, sizeof(*out));
    if ((rc = expect_object(obj, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "metadata", &meta, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "spec", &spec, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "status", &status, eb)) != VS_OK)
        return rc;
    if ((rc = get_ns(meta, &out->ns, eb)) != VS_OK ||
        (rc = get_name(meta, &out->name, eb)) != VS_OK ||
        (rc = get_str(meta, "metadata", "uid", &out->uid, eb)) != VS_OK ||
        (rc = get_str(meta, "metadata", "resourceVersion", &out->resource_version, eb)) != VS_OK ||
        (rc = get_map(meta, "metadata", "annotations", &out->annotations, eb)) != VS_OK ||
        (rc = get_map(meta, "metadata", "labels", &out->labels, eb)) != VS_OK)
        return rc;
    out->deleting = member(meta, "deletionTimestamp") != NULL;
    if ((rc = get_str(spec, "spec", "nodeName", &out->node_name, eb)) != VS_OK ||
        (rc = get_str(spec, "spec", "schedulerName", &out->scheduler_name, eb)) != VS_OK ||
        (rc = get_map(spec, "spec", "nodeSelector", &out->node_selector, eb)) != VS_OK ||
        (rc = get_containers(spec, "initContainers", &out->init, &out->n_init, eb)) != VS_OK ||
        (rc = get_containers(spec, "containers", &out->ctrs, &out->n_ctrs, eb)) != VS_OK ||
        (rc = get_map(spec, "spec", "overhead", &out->overhead, eb)) != VS_OK ||
        (rc = get_pod_resources(spec, out, eb)) != VS_OK ||
        (rc = get_tolerations(spec, out, eb)) != VS_OK || (rc = get_affinity(spec, out, eb)))
        return rc;
    if ((rc = get_str(status, "status", "phase", &out->phase, eb)) != VS_OK ||
        (rc = get_init_status(status, out, eb)) != VS_OK ||
        (rc = get_priority_fields(spec, status, out, eb)) != VS_OK)
        return rc;
    return VS_OK;
}

enum vs_err vs_codec_pod_res_from_json(const json_t *obj, struct vs_pod *out, struct vs_errbuf *eb)
{
    const json_t *meta, *spec, *status, *ann;
    enum vs_err rc;

    memset(out, 0, sizeof(*out));
    if ((rc = expect_object(obj, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "metadata", &meta, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "spec", &spec, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "status", &status, eb)) != VS_OK ||
        (rc = get_obj(meta, "metadata", "annotations", &ann, eb)) != VS_OK)
        return rc;
    if ((rc = get_ns(meta, &out->ns, eb)) != VS_OK ||
        (rc = get_name(meta, &out->name, eb)) != VS_OK ||
        (rc = get_str(meta, "metadata", "uid", &out->uid, eb)) != VS_OK)
        return rc;
    const json_t *vn = member(ann, VS_ANNO_VGPU_NODE);
    if (vn) {
        char *v = NULL;
        if ((rc = get_str(ann, "metadata.annotations", VS_ANNO_VGPU_NODE, &v, eb)) != VS_OK)
            return rc;
        rc = vs_kv_set(&out->annotations, VS_ANNO_VGPU_NODE, v) ? oom(eb) : VS_OK;
        free(v);
        if (rc != VS_OK)
            return rc;
    }
    if ((rc = get_str(spec, "spec", "nodeName", &out->node_name, eb)) != VS_OK ||
        (rc = get_containers(spec, "initContainers", &out->init, &out->n_init, eb)) != VS_OK ||
        (rc = get_containers(spec, "containers", &out->ctrs, &out->n_ctrs, eb)) != VS_OK ||
        (rc = get_map(spec, "spec", "overhead", &out->overhead, eb)) != VS_OK ||
        (rc = get_pod_resources(spec, out, eb)) != VS_OK ||
        (rc = get_str(status, "status", "phase", &out->phase, eb)) != VS_OK)
        return rc;
    return VS_OK;
}

/* What vs_codec_pod_res_from_json and get_containers read, for vs_codec_pod_res_load. */
static const struct vs_json_keep keep_ctr_res[] = {
    {.key = "limits", .all = true}, {.key = "requests", .all = true}, {.key = NULL}};
static const struct vs_json_keep keep_ctr_sc[] = {{.key = "privileged"}, {.key = NULL}};
static const struct vs_json_keep keep_ctr[] = {{.key = "name"},
                                               {.key = "resources", .members = keep_ctr_res},
                                               {.key = "securityContext", .members = keep_ctr_sc},
                                               {.key = "restartPolicy"},
                                               {.key = NULL}};
static const struct vs_json_keep keep_ann[] = {{.key = VS_ANNO_VGPU_NODE}, {.key = NULL}};
static const struct vs_json_keep keep_meta[] = {{.key = "namespace"},
                                                {.key = "name"},
                                                {.key = "uid"},
                                                {.key = "annotations", .members = keep_ann},
                                                {.key = NULL}};
static const struct vs_json_keep keep_spec[] = {
    {.key = "nodeName"},
    {.key = "initContainers", .members = keep_ctr, .each = true},
    {.key = "containers", .members = keep_ctr, .each = true},
    {.key = "overhead", .all = true},
    {.key = "resources", .members = keep_ctr_res},
    {.key = NULL}};
static const struct vs_json_keep keep_status[] = {
    {.key = "phase"}, {.key = "nominatedNodeName"}, {.key = NULL}};
static const struct vs_json_keep keep_pod_res[] = {{.key = "metadata", .members = keep_meta},
                                                   {.key = "spec", .members = keep_spec},
                                                   {.key = "status", .members = keep_status},
                                                   {.key = NULL}};

/* What vs_codec_pod_from_json reads (affinity, tolerations and initContainerStatuses whole). */
static const struct vs_json_keep keep_pod_meta[] = {{.key = "namespace"},
                                                    {.key = "name"},
                                                    {.key = "uid"},
                                                    {.key = "resourceVersion"},
                                                    {.key = "annotations", .all = true},
                                                    {.key = "labels", .all = true},
                                                    {.key = "deletionTimestamp"},
                                                    {.key = NULL}};
static const struct vs_json_keep keep_pod_spec[] = {
    {.key = "nodeName"},
    {.key = "schedulerName"},
    {.key = "nodeSelector", .all = true},
    {.key = "initContainers", .members = keep_ctr, .each = true},
    {.key = "containers", .members = keep_ctr, .each = true},
    {.key = "overhead", .all = true},
    {.key = "resources", .members = keep_ctr_res},
    {.key = "tolerations"},
    {.key = "affinity"},
    {.key = "priority"},
    {.key = "preemptionPolicy"},
    {.key = NULL}};
static const struct vs_json_keep keep_pod_status[] = {{.key = "phase"},
                                                      {.key = "initContainerStatuses"},
                                                      {.key = "startTime"},
                                                      {.key = "nominatedNodeName"},
                                                      {.key = NULL}};
const struct vs_json_keep vs_codec_pod_keep[] = {{.key = "metadata", .members = keep_pod_meta},
                                                 {.key = "spec", .members = keep_pod_spec},
                                                 {.key = "status", .members = keep_pod_status},
                                                 {.key = NULL}};

/* What vs_codec_node_from_json reads (taints whole). */
static const struct vs_json_keep keep_node_meta[] = {{.key = "name"},
                                                     {.key = "resourceVersion"},
                                                     {.key = "annotations", .all = true},
                                                     {.key = "labels", .all = true},
                                                     {.key = NULL}};
static const struct vs_json_keep keep_node_spec[] = {
    {.key = "unschedulable"}, {.key = "taints"}, {.key = NULL}};
static const struct vs_json_keep keep_node_status[] = {
    {.key = "allocatable", .all = true}, {.key = "capacity", .all = true}, {.key = NULL}};
const struct vs_json_keep vs_codec_node_keep[] = {{.key = "metadata", .members = keep_node_meta},
                                                  {.key = "spec", .members = keep_node_spec},
                                                  {.key = "status", .members = keep_node_status},
                                                  {.key = NULL}};

json_t *vs_codec_pod_res_load(const char *text, size_t len)
{
    return vs_json_load_pruned(text, len, keep_pod_res);
}

enum vs_err vs_codec_node_from_json(const json_t *obj, struct vs_knode *out, struct vs_errbuf *eb)
{
    const json_t *meta, *spec, *status;
    enum vs_err rc;

    memset(out, 0, sizeof(*out));
    if ((rc = expect_object(obj, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "metadata", &meta, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "spec", &spec, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "status", &status, eb)) != VS_OK)
        return rc;
    if ((rc = get_name(meta, &out->name, eb)) != VS_OK ||
        (rc = get_str(meta, "metadata", "resourceVersion", &out->resource_version, eb)) != VS_OK ||
        (rc = get_map(meta, "metadata", "annotations", &out->annotations, eb)) != VS_OK ||
        (rc = get_map(meta, "metadata", "labels", &out->labels, eb)) != VS_OK ||
        (rc = get_bool(spec, "spec", "unschedulable", &out->unschedulable, eb)) != VS_OK ||
        (rc = get_taints(spec, out, eb)) != VS_OK ||
        (rc = get_map(status, "status", "allocatable", &out->allocatable, eb)) != VS_OK ||
        (rc = get_map(status, "status", "capacity", &out->capacity, eb)) != VS_OK)
        return rc;
    return VS_OK;
}

static enum vs_err sel_exprs(const json_t *sel, struct vs_pdb *out, struct vs_errbuf *eb)
{
    const json_t *arr;
    enum vs_err rc = get_arr(sel, "spec.selector", "matchExpressions", &arr, eb);
    if (rc != VS_OK || !arr)
        return rc;
    size_t n = json_array_size(arr);
    out->exprs = calloc(n ? n : 1, sizeof(*out->exprs));
    if (!out->exprs)
        return oom(eb);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(arr, i);
        char base[64];
        snprintf(base, sizeof(base), "spec.selector.matchExpressions[%zu]", i);
        if (!json_is_object(e))
            return vs_err_set(eb, VS_ERR_PARSE, "%s: expected an object, got %s", base,
                              vs_codec_type_name(e));
        struct vs_sel_expr *x = &out->exprs[out->n_exprs++];
        char *op = NULL;
        if ((rc = get_str(e, base, "key", &x->key, eb)) != VS_OK ||
            (rc = get_str(e, base, "operator", &op, eb)) != VS_OK) {
            free(op);
            return rc;
        }
        if (strcmp(op, "In") == 0)
            x->op = VS_SEL_IN;
        else if (strcmp(op, "NotIn") == 0)
            x->op = VS_SEL_NOT_IN;
        else if (strcmp(op, "Exists") == 0)
            x->op = VS_SEL_EXISTS;
        else if (strcmp(op, "DoesNotExist") == 0)
            x->op = VS_SEL_NOT_EXISTS;
        else {
            vs_err_set(eb, VS_ERR_PARSE, "%s.operator: unknown operator \"%s\"", base, op);
            free(op);
            return VS_ERR_PARSE;
        }
        free(op);
        const json_t *vals;
        if ((rc = get_arr(e, base, "values", &vals, eb)) != VS_OK)
            return rc;
        size_t nv = json_array_size(vals);
        x->values = calloc(nv ? nv : 1, sizeof(*x->values));
        if (!x->values)
            return oom(eb);
        for (size_t k = 0; k < nv; k++) {
            const char *v = json_string_value(json_array_get(vals, k));
            if (!v)
                return vs_err_set(eb, VS_ERR_PARSE, "%s.values[%zu]: expected a string, got %s",
                                  base, k, vs_codec_type_name(json_array_get(vals, k)));
            if (!(x->values[x->n_values] = strdup(v)))
                return oom(eb);
            x->n_values++;
        }
    }
    return VS_OK;
}

enum vs_err vs_codec_pdb_from_json(const json_t *obj, struct vs_pdb *out, struct vs_errbuf *eb)
{
    const json_t *meta, *spec, *status, *sel;
    enum vs_err rc;

    memset(out, 0, sizeof(*out));
    if ((rc = expect_object(obj, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "metadata", &meta, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "spec", &spec, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "status", &status, eb)) != VS_OK ||
        (rc = get_ns(meta, &out->ns, eb)) != VS_OK ||
        (rc = get_name(meta, &out->name, eb)) != VS_OK ||
        (rc = get_obj(spec, "spec", "selector", &sel, eb)) != VS_OK)
        return rc;
    out->has_selector = sel != NULL;
    if (sel &&
        ((rc = get_map(sel, "spec.selector", "matchLabels", &out->match_labels, eb)) != VS_OK ||
         (rc = sel_exprs(sel, out, eb)) != VS_OK))
        return rc;
    const json_t *allowed = member(status, "disruptionsAllowed");
    if (allowed) {
        if (!json_is_integer(allowed))
            return type_err(eb, "status", "disruptionsAllowed", "an integer", allowed);
        json_int_t a = json_integer_value(allowed);
        out->allowed = a > INT32_MAX ? INT32_MAX : a < INT32_MIN ? INT32_MIN : (int32_t)a;
    }
    return get_map(status, "status", "disruptedPods", &out->disrupted, eb);
}

enum vs_err vs_codec_quota_from_json(const json_t *obj, struct vs_kquota *out, struct vs_errbuf *eb)
{
    const json_t *meta, *spec;
    enum vs_err rc;

    memset(out, 0, sizeof(*out));
    if ((rc = expect_object(obj, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "metadata", &meta, eb)) != VS_OK ||
        (rc = get_obj(obj, "", "spec", &spec, eb)) != VS_OK)
        return rc;
    if ((rc = get_ns(meta, &out->ns, eb)) != VS_OK ||
        (rc = get_str(meta, "metadata", "name", &out->name, eb)) != VS_OK ||
        (rc = get_map(spec, "spec", "hard", &out->hard, eb)) != VS_OK)
        return rc;
    return VS_OK;
}
