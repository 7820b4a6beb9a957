/* devcfg_yaml: applies a device-config.yaml (or a ConfigMap carrying it under
 * data["device-config.yaml"]) to a struct vs_devcfg: the `nvidia:` section's keys
 * (spec/hami-compat.md §8.2) through one option table, and the whole document as JSON for the
 * other vendors' backends (spec/hami-vendors.md §0.1), which then are made again. Values are
 * checked into a copy, so a bad file changes nothing. */
#include "devcfg_yaml.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "device.h"

/* A device config is a few KiB; anything this large is not one. */
#define DEVCFG_MAX_SIZE (16u << 20)
#define CONFIGMAP_KEY   "device-config.yaml"

enum opt_type { OPT_STR, OPT_INT, OPT_BOOL, OPT_POLICY, OPT_MIG };

static const struct opt {
    const char *key;
    enum opt_type type;
    size_t off; /* of the field in struct vs_devcfg; unused for OPT_MIG */
} opts[] = {
    {"resourceCountName", OPT_STR, offsetof(struct vs_devcfg, res_count)},
    {"resourceMemoryName", OPT_STR, offsetof(struct vs_devcfg, res_mem)},
    {"resourceMemoryPercentageName", OPT_STR, offsetof(struct vs_devcfg, res_mem_pct)},
    {"resourceCoreName", OPT_STR, offsetof(struct vs_devcfg, res_cores)},
    {"resourcePriorityName", OPT_STR, offsetof(struct vs_devcfg, res_priority)},
    {"defaultMemory", OPT_INT, offsetof(struct vs_devcfg, default_memory)},
    {"defaultCores", OPT_INT, offsetof(struct vs_devcfg, default_cores)},
    {"defaultGPUNum", OPT_INT, offsetof(struct vs_devcfg, default_gpu_num)},
    {"memoryFactor", OPT_INT, offsetof(struct vs_devcfg, memory_factor)},
    {"overwriteEnv", OPT_BOOL, offsetof(struct vs_devcfg, overwrite_env)},
    {"gpuCorePolicy", OPT_POLICY, offsetof(struct vs_devcfg, gpu_core_policy)},
    {"runtimeClassName", OPT_STR, offsetof(struct vs_devcfg, runtime_class_name)},
    {"migProfileAllowlist", OPT_MIG, 0},
};

struct dctx {
    yaml_document_t *doc;
    const char *name; /* file name for messages */
    struct vs_errbuf *eb;
};

static const char *kind_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a sequence";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* A plain null scalar (`~`, `null`, or nothing) or no node at all. */
static bool is_null(const yaml_node_t *n)
{
    if (!n)
        return true;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = scalar(n);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

/* The value of key in mapping map (the last one when repeated); NULL when absent. */
static yaml_node_t *map_get(yaml_document_t *doc, const yaml_node_t *map, const char *key)
{
    yaml_node_t *found = NULL;
    size_t klen = strlen(key);
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == klen &&
            memcmp(k->data.scalar.value, key, klen) == 0)
            found = yaml_document_get_node(doc, p->value);
    }
    return found;
}

static enum vs_err want(struct dctx *d, const char *path, const char *what, const yaml_node_t *n)
{
    return vs_err_set(d->eb, VS_ERR_PARSE, "%s: %s: expected %s, got %s", d->name, path, what,
                      kind_name(n));
}

/* The scalar text of n, rejecting non-scalars and embedded NULs. */
static enum vs_err get_text(struct dctx *d, const char *path, const char *what,
                            const yaml_node_t *n, const char **out)
{
    if (n->type != YAML_SCALAR_NODE)
        return want(d, path, what, n);
    if (memchr(n->data.scalar.value, 0, n->data.scalar.length))
        return vs_err_set(d->eb, VS_ERR_PARSE, "%s: %s: NUL character in value", d->name, path);
    *out = scalar(n);
    return VS_OK;
}

static enum vs_err set_str(struct dctx *d, const char *path, const yaml_node_t *n, char **field)
{
    const char *text = "";
    enum vs_err rc = get_text(d, path, "a string", n, &text);
    if (rc != VS_OK)
        return rc;
    char *copy = strdup(text);
    if (!copy)
        return vs_err_set(d->eb, VS_ERR_NOMEM, "%s: out of memory", d->name);
    free(*field);
    *field = copy;
    return VS_OK;
}

static enum vs_err set_int(struct dctx *d, const char *path, const yaml_node_t *n, int32_t *field)
{
    const char *text = "", *p;
    enum vs_err rc = get_text(d, path, "an integer", n, &text);
    if (rc != VS_OK)
        return rc;
    p = text + (*text == '-' || *text == '+');
    if (!*p || strspn(p, "0123456789") != strlen(p))
        return vs_err_set(d->eb, VS_ERR_PARSE, "%s: %s: invalid integer \"%s\"", d->name, path,
                          text);
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE || v < 0 || v > INT32_MAX)
        return vs_err_set(d->eb, VS_ERR_PARSE, "%s: %s: out of range \"%s\" (want 0 to %d)",
                          d->name, path, text, INT32_MAX);
    *field = (int32_t)v;
    return VS_OK;
}

static enum vs_err set_bool(struct dctx *d, const char *path, const yaml_node_t *n, bool *field)
{
    static const char *const trues[] = {"true", "True", "TRUE"};
    static const char *const falses[] = {"false", "False", "FALSE"};
    const char *text = "";
    enum vs_err rc = get_text(d, path, "a bool", n, &text);
    if (rc != VS_OK)
        return rc;
    for (size_t i = 0; i < 3; i++) {
        if (!strcmp(text, trues[i]) || !strcmp(text, falses[i])) {
            *field = !strcmp(text, trues[i]);
            return VS_OK;
        }
    }
    return vs_err_set(d->eb, VS_ERR_PARSE, "%s: %s: invalid bool \"%s\"", d->name, path, text);
}

static enum vs_err set_policy(struct dctx *d, const char *path, const yaml_node_t *n, char **field)
{
    const char *text = "";
    enum vs_err rc = get_text(d, path, "a string", n, &text);
    if (rc != VS_OK)
        return rc;
    if (strcmp(text, "default") != 0 && strcmp(text, "force") != 0 && strcmp(text, "disable") != 0)
        return vs_err_set(d->eb, VS_ERR_PARSE,
                          "%s: %s: invalid value \"%s\" (want default, force or disable)", d->name,
                          path, text);
    return set_str(d, path, n, field);
}

/* HAMi's check: the text before the first '.' is at least 2 characters and ends in 'g'. */
static bool mig_profile_ok(const char *p)
{
    size_t head = strcspn(p, ".");
    return head >= 2 && p[head - 1] == 'g';
}

/* entry[key] must be a non-empty sequence of strings; profiles are also checked for shape. */
static enum vs_err check_mig_list(struct dctx *d, const yaml_node_t *entry, size_t idx,
                                  const char *key)
{
    char path[96];
    yaml_node_t *seq = map_get(d->doc, entry, key);

    snprintf(path, sizeof(path), "nvidia.migProfileAllowlist[%zu].%s", idx, key);
    if (!is_null(seq) && seq->type != YAML_SEQUENCE_NODE)
        return want(d, path, "a sequence", seq);
    if (is_null(seq) || seq->data.sequence.items.top == seq->data.sequence.items.start)
        return vs_err_set(d->eb, VS_ERR_PARSE, "%s: %s: missing or empty", d->name, path);
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yaml_document_get_node(d->doc, seq->data.sequence.items.start[i]);
        const char *text = "";
        char ipath[128];
        snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
        enum vs_err rc = get_text(d, ipath, "a string", item, &text);
        if (rc != VS_OK)
            return rc;
        if (!strcmp(key, "profiles") && !mig_profile_ok(text))
            return vs_err_set(d->eb, VS_ERR_PARSE, "%s: %s: invalid MIG profile \"%s\"", d->name,
                              ipath, text);
    }
    return VS_OK;
}

/* migProfileAllowlist is validated only: the device plugin consumes it, the scheduler does not,
 * but HAMi refuses to start on a bad one and so do we. */
static enum vs_err check_mig(struct dctx *d, const yaml_node_t *n)
{
    const char *path = "nvidia.migProfileAllowlist";
    if (is_null(n))
        return VS_OK;
    if (n->type != YAML_SEQUENCE_NODE)
        return want(d, path, "a sequence", n);
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *entry = yaml_document_get_node(d->doc, n->data.sequence.items.start[i]);
        enum vs_err rc;
        if (entry->type != YAML_MAPPING_NODE) {
            char epath[64];
            snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
            return want(d, epath, "a mapping", entry);
        }
        if ((rc = check_mig_list(d, entry, i, "models")) != VS_OK ||
            (rc = check_mig_list(d, entry, i, "profiles")) != VS_OK)
            return rc;
    }
    return VS_OK;
}

static enum vs_err apply_section(struct dctx *d, const yaml_node_t *nv, struct vs_devcfg *cfg)
{
    for (yaml_node_pair_t *p = nv->data.mapping.pairs.start; p < nv->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(d->doc, p->value);
        const struct opt *o = NULL;
        if (!k || k->type != YAML_SCALAR_NODE)
            continue;
        for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
            if (!strcmp(scalar(k), opts[i].key))
                o = &opts[i];
        if (!o)
            continue; /* unknown keys are ignored, as HAMi's non-strict decoding does */

        char path[64];
        char *field = (char *)cfg + o->off;
        enum vs_err rc = VS_OK;
        snprintf(path, sizeof(path), "nvidia.%s", o->key);
        if (o->type == OPT_MIG) {
            rc = check_mig(d, v);
        } else if (!is_null(v)) { /* null keeps the current value */
            switch (o->type) {
            case OPT_STR:
                rc = set_str(d, path, v, (char **)field);
                break;
            case OPT_INT:
                rc = set_int(d, path, v, (int32_t *)field);
                break;
            case OPT_BOOL:
                rc = set_bool(d, path, v, (bool *)field);
                break;
            case OPT_POLICY:
                rc = set_policy(d, path, v, (char **)field);
                break;
            case OPT_MIG:
                break;
            }
        }
        if (rc != VS_OK)
            return rc;
    }
    return VS_OK;
}

static enum vs_err parse_text(const char *buf, size_t len, const char *name, const char *where,
                              bool allow_configmap, struct vs_devcfg *cfg, struct vs_errbuf *eb);

/* The sections of HAMi's device-config.yaml (spec/hami-vendors.md §0). */
static const char *const sections[] = {"nvidia",    "vnpus",    "hygon",   "cambricon", "metax",
                                       "iluvatars", "mthreads", "enflame", "kunlun",    "awsneuron",
                                       "amd",       "biren",    "vastai"};

/* A plain scalar as YAML 1.1's core schema reads it: null, a bool, an integer, or text. */
static json_t *scalar_json(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(v, len);
    if (len == 0 || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
        !strcmp(v, "NULL"))
        return json_null();
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
        return json_true();
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
        return json_false();
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end != v && !*end && !errno && strlen(v) == len)
        return json_integer(x);
    return json_stringn(v, len);
}

/* The document below n as JSON (mapping keys as text; a key seen twice: the last wins, as
 * Go's yaml decoder does for maps). depth bounds recursion on hostile input. NULL when out of
 * memory or too deep. */
static json_t *yaml_json(yaml_document_t *doc, const yaml_node_t *n, int depth)
{
    if (!n || depth > 64)
        return NULL;
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return scalar_json(n);
    case YAML_SEQUENCE_NODE: {
        json_t *a = json_array();
        for (yaml_node_item_t *i = n->data.sequence.items.start;
             a && i < n->data.sequence.items.top; i++) {
            json_t *v = yaml_json(doc, yaml_document_get_node(doc, *i), depth + 1);
            if (!v || json_array_append_new(a, v)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case YAML_MAPPING_NODE: {
        json_t *o = json_object();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; o && p < n->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE)
                continue;
            json_t *v = yaml_json(doc, yaml_document_get_node(doc, p->value), depth + 1);
            if (!v || json_object_setn_new(o, (const char *)k->data.scalar.value,
                                           k->data.scalar.length, v)) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    default:
        return json_null();
    }
}

/* Applies the document rooted at root; a ConfigMap's embedded text is parsed in turn. */
static enum vs_err apply_root(struct dctx *d, const yaml_node_t *root, bool allow_configmap,
                              struct vs_devcfg *cfg)
{
    yaml_node_t *nv = map_get(d->doc, root, "nvidia");

    if (!nv && allow_configmap) {
        yaml_node_t *data = map_get(d->doc, root, "data");
        yaml_node_t *text = map_get(d->doc, data, CONFIGMAP_KEY);
        if (text) {
            if (text->type != YAML_SCALAR_NODE)
                return want(d, "data[\"" CONFIGMAP_KEY "\"]", "a string", text);
            return parse_text(scalar(text), text->data.scalar.length, d->name,
                              "data[\"" CONFIGMAP_KEY "\"]: ", false, cfg, d->eb);
        }
    }
    /* HAMi rejects a file only when every section is empty. */
    bool other = false;
    for (size_t i = 1; i < sizeof(sections) / sizeof(sections[0]); i++) {
        yaml_node_t *sec = map_get(d->doc, root, sections[i]);
        other |= sec && ((sec->type == YAML_MAPPING_NODE &&
                          sec->data.mapping.pairs.top > sec->data.mapping.pairs.start) ||
                         (sec->type == YAML_SEQUENCE_NODE &&
                          sec->data.sequence.items.top > sec->data.sequence.items.start));
    }
    json_t *whole = yaml_json(d->doc, root, 0);
    if (!whole)
        return vs_err_set(d->eb, VS_ERR_NOMEM, "%s: out of memory", d->name);
    json_decref(cfg->doc);
    cfg->doc = whole;
    bool empty = is_null(nv) || (nv->type == YAML_MAPPING_NODE &&
                                 nv->data.mapping.pairs.top == nv->data.mapping.pairs.start);
    if (empty && !other)
        return vs_err_set(d->eb, VS_ERR_PARSE, "%s: no device section (nvidia, vnpus, hygon, ...)",
                          d->name);
    if (empty) {
        /* As HAMi: a vendor without its section has no resource names. */
        char **names[] = {&cfg->res_count, &cfg->res_mem, &cfg->res_mem_pct, &cfg->res_cores};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            char *e = strdup("");
            if (!e)
                return vs_err_set(d->eb, VS_ERR_NOMEM, "%s: out of memory", d->name);
            free(*names[i]);
            *names[i] = e;
        }
        return VS_OK;
    }
    if (nv->type != YAML_MAPPING_NODE)
        return want(d, "nvidia", "a mapping", nv);
    return apply_section(d, nv, cfg);
}

/* Line and column (0-based) of byte offset off in buf, for libyaml's reader errors. */
static yaml_mark_t offset_mark(const char *buf, size_t len, size_t off)
{
    yaml_mark_t m = {0};
    for (size_t i = 0; i < off && i < len; i++) {
        if (buf[i] == '\n') {
            m.line++;
            m.column = 0;
        } else if (((unsigned char)buf[i] & 0xC0) != 0x80) {
            m.column++;
        }
    }
    return m;
}

/* where prefixes syntax errors when the text came from inside the file (a ConfigMap value). */
static enum vs_err parse_text(const char *buf, size_t len, const char *name, const char *where,
                              bool allow_configmap, struct vs_devcfg *cfg, struct vs_errbuf *eb)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    enum vs_err rc;

    if (!yaml_parser_initialize(&parser))
        return vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, &doc)) {
        if (parser.error == YAML_MEMORY_ERROR) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", name);
        } else {
            yaml_mark_t m = parser.error == YAML_READER_ERROR
                                ? offset_mark(buf, len, parser.problem_offset)
                                : parser.problem_mark;
            rc = vs_err_set(eb, VS_ERR_PARSE, "%s: %sline %zu column %zu: invalid YAML: %s", name,
                            where, m.line + 1, m.column + 1,
                            parser.problem ? parser.problem : "unknown error");
        }
        yaml_parser_delete(&parser);
        return rc;
    }
    struct dctx d = {.doc = &doc, .name = name, .eb = eb};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_MAPPING_NODE)
        rc =
            vs_err_set(eb, VS_ERR_PARSE, "%s: no device section (nvidia, vnpus, hygon, ...)", name);
    else
        rc = apply_root(&d, root, allow_configmap, cfg);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

static enum vs_err devcfg_copy(struct vs_devcfg *dst, const struct vs_devcfg *src)
{
    *dst = *src;
    dst->res_count = strdup(src->res_count ? src->res_count : "");
    dst->res_mem = strdup(src->res_mem ? src->res_mem : "");
    dst->res_mem_pct = strdup(src->res_mem_pct ? src->res_mem_pct : "");
    dst->res_cores = strdup(src->res_cores ? src->res_cores : "");
    dst->res_priority = strdup(src->res_priority ? src->res_priority : "");
    dst->gpu_core_policy = strdup(src->gpu_core_policy ? src->gpu_core_policy : "");
    dst->runtime_class_name = strdup(src->runtime_class_name ? src->runtime_class_name : "");
    dst->doc = json_incref(src->doc);
    dst->devices = NULL;
    if (!dst->res_count || !dst->res_mem || !dst->res_mem_pct || !dst->res_cores ||
        !dst->res_priority || !dst->gpu_core_policy || !dst->runtime_class_name) {
        vs_devcfg_cleanup(dst);
        return VS_ERR_NOMEM;
    }
    return VS_OK;
}

enum vs_err vs_devcfg_load_buf(struct vs_devcfg *cfg, const char *buf, size_t len, const char *name,
                               struct vs_errbuf *eb)
{
    struct vs_devcfg tmp;
    enum vs_err rc;

    if (!name)
        name = "<device-config>";
    if (devcfg_copy(&tmp, cfg) != VS_OK)
        return vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", name);
    rc = parse_text(buf ? buf : "", buf ? len : 0, name, "", true, &tmp, eb);
    if (rc == VS_OK && (rc = vs_devcfg_finish(&tmp, eb)) == VS_ERR_PARSE) {
        char msg[VS_ERRBUF_SIZE];
        snprintf(msg, sizeof(msg), "%s", eb->msg);
        vs_err_set(eb, rc, "%s: %s", name, msg);
    }
    if (rc != VS_OK) {
        vs_devcfg_cleanup(&tmp);
        return rc;
    }
    vs_devcfg_cleanup(cfg);
    *cfg = tmp;
    return VS_OK;
}

enum vs_err vs_devcfg_load(struct vs_devcfg *cfg, const char *path, struct vs_errbuf *eb)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    enum vs_err rc;

    if (!f)
        return vs_err_set(eb, VS_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    for (;;) {
        if (len == cap) {
            if (cap >= DEVCFG_MAX_SIZE) {
                rc = vs_err_set(eb, VS_ERR_IO, "%s: cannot read: %s", path, strerror(EFBIG));
                goto out;
            }
            char *grown = realloc(buf, cap ? cap * 2 : 4096);
            if (!grown) {
                rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", path);
                goto out;
            }
            buf = grown;
            cap = cap ? cap * 2 : 4096;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        rc = vs_err_set(eb, VS_ERR_IO, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
        goto out;
    }
    rc = vs_devcfg_load_buf(cfg, buf, len, path, eb);
out:
    free(buf);
    fclose(f);
    return rc;
}
