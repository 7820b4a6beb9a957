/* extargs: ExtenderArgs / ExtenderBindingArgs decoding with Go's tolerance (case-insensitive
 * keys, null as absent) and strict types for what we use. */
#include "extargs.h"

#include "json_text.h"
#include "k8s_codec.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

json_t *vs_json_get_ci(const json_t *obj, const char *key)
{
    if (!json_is_object(obj))
        return NULL;
    json_t *v = json_object_get(obj, key);
    if (!v) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)obj, k, x)
        {
            if (strcasecmp(k, key) == 0)
                v = x;
        }
    }
    return json_is_null(v) ? NULL : v;
}

void vs_filter_args_cleanup(struct vs_filter_args *a)
{
    vs_pod_cleanup(&a->pod);
    free(a->names);
    free(a->names_buf);
    json_decref(a->nodes_owned);
    json_decref(a->root);
    memset(a, 0, sizeof(*a));
}

json_t *vs_filter_args_node_names(const struct vs_filter_args *a)
{
    if (a->node_names)
        return json_incref(a->node_names);
    if (!a->has_names)
        return NULL;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < a->n_names; i++) {
        if (json_array_append_new(arr, json_string(a->names[i]))) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* ---------------------------------------------------------------- fast path
 *
 * kube-scheduler sends {"Pod":{...},"Nodes":null,"NodeNames":["...", ...]} with thousands of
 * names; building a jansson string per name was most of a 5,000-candidate Filter. The fast path
 * reads the top-level object itself, copies NodeNames when every name is plain printable ASCII
 * without escapes (node names are DNS names), and gives only the Pod (and a NodeList) to
 * jansson. Anything else — escapes or non-ASCII in a name or key, another key, a repeated key,
 * another value type, any syntax error, a Pod that does not decode — returns false, and the
 * general path below decodes the request (and words its errors) exactly as before. */

struct scan {
    const char *p, *end;
};

static void skip_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool eat(struct scan *s, char c)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A string of printable ASCII without escapes; s->p at the opening quote. */
static bool plain_string(struct scan *s, const char **str, size_t *len)
{
    if (s->p >= s->end || *s->p != '"')
        return false;
    const char *b = s->p + 1;
    const char *q = memchr(b, '"', (size_t)(s->end - b));
    if (!q)
        return false;
    unsigned bad = 0;
    for (const char *c = b; c < q; c++) {
        unsigned char u = (unsigned char)*c;
        bad |= (u < 0x20) | (u >= 0x7f) | (u == '\\');
    }
    if (bad)
        return false;
    *str = b;
    *len = (size_t)(q - b);
    s->p = q + 1;
    return true;
}

/* Past the JSON object at s->p (jansson validates the span afterwards); deep nesting is left to
 * the general path and its limits. */
static bool skip_compound(struct scan *s)
{
    const char *e = vs_json_skip(s->p, s->end, 256);
    if (!e)
        return false;
    s->p = e;
    return true;
}

static bool is_null(struct scan *s)
{
    if (s->end - s->p >= 4 && memcmp(s->p, "null", 4) == 0) {
        s->p += 4;
        return true;
    }
    return false;
}

static bool key_is(const char *k, size_t n, const char *want)
{
    return strlen(want) == n && strncasecmp(k, want, n) == 0;
}

static bool fast_names(struct scan *s, struct vs_filter_args *out)
{
    /* One pass: names are copied NUL-terminated as they are read (each is shorter than its
     * quoted form, so the rest of the body bounds the copy). */
    if (!eat(s, '['))
        return false;
    size_t cap = 1024, n = 0;
    out->names = malloc(cap * sizeof(*out->names));
    out->names_buf = malloc((size_t)(s->end - s->p) + 1);
    if (!out->names || !out->names_buf)
        return false;
    char *w = out->names_buf;
    if (!eat(s, ']')) {
        do {
            skip_ws(s);
            if (s->p >= s->end || *s->p != '"')
                return false;
            if (n == cap) {
                const char **g = realloc(out->names, 2 * cap * sizeof(*g));
                if (!g)
                    return false;
                out->names = g;
                cap *= 2;
            }
            /* Copy while checking: printable ASCII, no escape, up to the closing quote. */
            out->names[n++] = w;
            const char *p = s->p + 1;
            unsigned bad = 0;
            for (; p < s->end && *p != '"'; p++) {
                unsigned char u = (unsigned char)*p;
                bad |= (u < 0x20) | (u >= 0x7f) | (u == '\\');
                *w++ = (char)u;
            }
            if (bad || p >= s->end)
                return false;
            *w++ = '\0';
            s->p = p + 1;
        } while (eat(s, ','));
        if (!eat(s, ']'))
            return false;
    }
    out->n_names = n;
    out->has_names = true;
    return true;
}

static json_t *load_span(const char *b, const char *e)
{
    json_error_t jerr;
    return json_loadb(b, (size_t)(e - b), 0, &jerr);
}

static bool fast_filter(const char *body, size_t len, struct vs_filter_args *out)
{
    struct scan s = {body, body + len};
    bool seen_pod = false, seen_nodes = false, seen_names = false;
    if (!eat(&s, '{') || eat(&s, '}'))
        return false;
    do {
        const char *k;
        size_t kn;
        skip_ws(&s);
        if (!plain_string(&s, &k, &kn) || !eat(&s, ':'))
            return false;
        skip_ws(&s);
        const char *v = s.p;
        if (key_is(k, kn, "Pod") && !seen_pod) {
            seen_pod = true;
            if (s.p >= s.end || *s.p != '{' || !skip_compound(&s) ||
                !(out->root = load_span(v, s.p)))
                return false;
            out->pod_json = out->root;
        } else if (key_is(k, kn, "Nodes") && !seen_nodes) {
            seen_nodes = true;
            if (is_null(&s))
                continue;
            if (s.p >= s.end || *s.p != '{' || !skip_compound(&s) ||
                !(out->nodes_owned = load_span(v, s.p)))
                return false;
            out->nodes = out->nodes_owned;
        } else if (key_is(k, kn, "NodeNames") && !seen_names) {
            seen_names = true;
            if (!is_null(&s) && !fast_names(&s, out))
                return false;
        } else {
            return false;
        }
    } while (eat(&s, ','));
    if (!eat(&s, '}'))
        return false;
    skip_ws(&s);
    struct vs_errbuf pe;
    return s.p == s.end && out->pod_json &&
           vs_codec_pod_from_json(out->pod_json, &out->pod, &pe) == VS_OK;
}

enum vs_err vs_extargs_filter(const char *body, size_t len, struct vs_filter_args *out,
                              struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    if (fast_filter(body, len, out))
        return VS_OK;
    vs_filter_args_cleanup(out);
    return vs_extargs_filter_general(body, len, out, eb);
}

enum vs_err vs_extargs_filter_general(const char *body, size_t len, struct vs_filter_args *out,
                                      struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    out->root = json_loadb(body, len, 0, &jerr);
    if (!out->root)
        return vs_err_set(eb, VS_ERR_PARSE, "invalid ExtenderArgs: %s", jerr.text);
    if (!json_is_object(out->root))
        return vs_err_set(eb, VS_ERR_PARSE, "invalid ExtenderArgs: not a JSON object");
    out->pod_json = vs_json_get_ci(out->root, "Pod");
    if (!out->pod_json)
        return vs_err_set(eb, VS_ERR_PARSE, "extender args missing pod");
    struct vs_errbuf pe;
    if (!json_is_object(out->pod_json))
        return vs_err_set(eb, VS_ERR_PARSE, "invalid Pod in ExtenderArgs: not an object");
    if (vs_codec_pod_from_json(out->pod_json, &out->pod, &pe))
        return vs_err_set(eb, VS_ERR_PARSE, "invalid Pod in ExtenderArgs: %s", pe.msg);
    out->node_names = vs_json_get_ci(out->root, "NodeNames");
    out->nodes = vs_json_get_ci(out->root, "Nodes");
    if (out->nodes && !json_is_object(out->nodes))
        return vs_err_set(eb, VS_ERR_PARSE, "Nodes must be a NodeList object");
    if (out->node_names) {
        if (!json_is_array(out->node_names))
            return vs_err_set(eb, VS_ERR_PARSE, "NodeNames must be an array of strings");
        size_t n = json_array_size(out->node_names);
        out->names = calloc(n ? n : 1, sizeof(*out->names));
        if (!out->names)
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
            const char *s = json_string_value(json_array_get(out->node_names, i));
            if (!s)
                return vs_err_set(eb, VS_ERR_PARSE, "NodeNames must be an array of strings");
            out->names[out->n_names++] = s;
        }
        out->has_names = true;
    }
    return VS_OK;
}

/* One node's victims: {"Pods":[{"UID":..}|Pod],"NumPDBViolations":n}; full Pods (metadata.uid)
 * when meta is false. */
static enum vs_err victims_of(const char *node, const json_t *v, bool meta,
                              struct vs_preempt_node_args *out, struct vs_errbuf *eb)
{
    out->node = node;
    if (!v)
        return VS_OK; /* null: a placeholder with no victims */
    if (!json_is_object(v))
        return vs_err_set(eb, VS_ERR_PARSE, "victims of node %s: expected an object", node);
    const json_t *pods = vs_json_get_ci(v, "Pods");
    const json_t *pdb = vs_json_get_ci(v, "NumPDBViolations");
    if (pdb && !json_is_integer(pdb))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "victims of node %s: NumPDBViolations must be an integer", node);
    out->pdb_violations = pdb ? json_integer_value(pdb) : 0;
    if (!pods)
        return VS_OK;
    if (!json_is_array(pods))
        goto bad;
    size_t n = json_array_size(pods);
    out->uids = calloc(n ? n : 1, sizeof(*out->uids));
    if (!out->uids)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(pods, i);
        if (!json_is_object(p))
            goto bad;
        const json_t *uid = meta ? vs_json_get_ci(p, "UID")
                                 : json_object_get(json_object_get(p, "metadata"), "uid");
        const char *u = json_string_value(uid);
        if (!u || !*u)
            goto bad;
        out->uids[out->n_uids++] = u;
    }
    return VS_OK;
bad:
    return vs_err_set(eb, VS_ERR_PARSE,
                      "victims of node %s: Pods must be an array of objects with a string %s", node,
                      meta ? "UID" : "metadata.uid");
}

enum vs_err vs_extargs_preempt(const char *body, size_t len, struct vs_preempt_args *out,
                               struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    out->root = json_loadb(body, len, 0, &jerr);
    if (!out->root)
        return vs_err_set(eb, VS_ERR_PARSE, "invalid ExtenderPreemptionArgs: %s", jerr.text);
    if (!json_is_object(out->root))
        return vs_err_set(eb, VS_ERR_PARSE, "invalid ExtenderPreemptionArgs: not a JSON object");
    const json_t *pod = vs_json_get_ci(out->root, "Pod");
    if (!pod)
        return vs_err_set(eb, VS_ERR_PARSE, "extender args missing pod");
    struct vs_errbuf pe;
    if (!json_is_object(pod))
        return vs_err_set(eb, VS_ERR_PARSE, "invalid Pod in ExtenderPreemptionArgs: not an object");
    if (vs_codec_pod_from_json(pod, &out->pod, &pe))
        return vs_err_set(eb, VS_ERR_PARSE, "invalid Pod in ExtenderPreemptionArgs: %s", pe.msg);
    bool meta = true;
    const json_t *map = vs_json_get_ci(out->root, "NodeNameToMetaVictims");
    const char *key = "NodeNameToMetaVictims";
    if (!map && (map = vs_json_get_ci(out->root, "NodeNameToVictims"))) {
        meta = false;
        key = "NodeNameToVictims";
    }
    if (!map)
        return VS_OK;
    if (!json_is_object(map))
        return vs_err_set(eb, VS_ERR_PARSE, "%s must be an object", key);
    size_t n = json_object_size(map);
    out->nodes = calloc(n ? n : 1, sizeof(*out->nodes));
    if (!out->nodes)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    const char *node;
    json_t *v;
    json_object_foreach((json_t *)map, node, v)
    {
        enum vs_err err =
            victims_of(node, json_is_null(v) ? NULL : v, meta, &out->nodes[out->n_nodes], eb);
        out->n_nodes++;
        if (err)
            return err;
    }
    return VS_OK;
}

void vs_preempt_args_cleanup(struct vs_preempt_args *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n_nodes; i++)
        free(a->nodes[i].uids);
    free(a->nodes);
    vs_pod_cleanup(&a->pod);
    json_decref(a->root);
    memset(a, 0, sizeof(*a));
}

void vs_bind_args_cleanup(struct vs_bind_args *a)
{
    json_decref(a->root);
    memset(a, 0, sizeof(*a));
}

enum vs_err vs_extargs_bind(const char *body, size_t len, struct vs_bind_args *out,
                            struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    out->root = json_loadb(body, len, 0, &jerr);
    if (!out->root)
        return vs_err_set(eb, VS_ERR_PARSE, "invalid ExtenderBindingArgs: %s", jerr.text);
    if (!json_is_object(out->root))
        return vs_err_set(eb, VS_ERR_PARSE, "invalid ExtenderBindingArgs: not a JSON object");
    out->name = json_string_value(vs_json_get_ci(out->root, "PodName"));
    out->ns = json_string_value(vs_json_get_ci(out->root, "PodNamespace"));
    out->uid = json_string_value(vs_json_get_ci(out->root, "PodUID"));
    out->node = json_string_value(vs_json_get_ci(out->root, "Node"));
    if (!out->uid)
        out->uid = "";
    if (!out->name || !*out->name || !out->ns || !*out->ns || !out->node || !*out->node)
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ExtenderBindingArgs needs PodName, PodNamespace and Node");
    return VS_OK;
}
