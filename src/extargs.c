/* extargs: ExtenderArgs / ExtenderBindingArgs decoding with Go's tolerance (case-insensitive
 * keys, null as absent) and strict types for what we use. */
#include "extargs.h"

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
    json_decref(a->root);
    memset(a, 0, sizeof(*a));
}

enum vs_err vs_extargs_filter(const char *body, size_t len, struct vs_filter_args *out,
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
    }
    return VS_OK;
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
