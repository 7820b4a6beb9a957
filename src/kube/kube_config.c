/* kube_config: where the client's configuration comes from (spec/k8s-protocols.md §6): a
 * kubeconfig (libyaml document API; $KUBECONFIG lists are merged, the first file naming an
 * entry wins) or the in-cluster service account. Errors name the file and the missing or bad
 * field; secrets read here are wiped before they are freed. */
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "kube.h"
#include "kube_secret.h"

#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBECONFIG_MAX (16u << 20) /* kubeconfig file size cap */

/* ------------------------------------------------------------------------------------------ */
/* kubeconfig                                                                                 */

struct kc_file {
    char *path;
    char *dir; /* directory that relative paths inside the file are resolved against */
    yaml_document_t doc;
    bool loaded;
};

struct kc {
    struct kc_file *files;
    size_t n;
    const char *label; /* file name(s) for messages */
    struct vs_errbuf *eb;
};

static yaml_node_t *kc_root(struct kc_file *f)
{
    return f->loaded ? yaml_document_get_root_node(&f->doc) : NULL;
}

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    size_t klen = strlen(key);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == klen &&
            memcmp(k->data.scalar.value, key, klen) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

static bool scalar_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* Reads string field `key` of mapping `map`. *out is a new string, or NULL when the field is
 * absent, null or empty. `where` names the enclosing entry in messages. */
static enum vs_err kc_str(struct kc *c, struct kc_file *f, yaml_node_t *map, const char *where,
                          const char *key, char **out)
{
    *out = NULL;
    yaml_node_t *v = map_get(&f->doc, map, key);
    if (!v || scalar_is_null(v))
        return VS_OK;
    if (v->type != YAML_SCALAR_NODE)
        return vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: %s: %s must be a string", f->path,
                          where, key);
    size_t n = v->data.scalar.length;
    if (memchr(v->data.scalar.value, '\0', n))
        return vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: %s: %s contains a NUL character",
                          f->path, where, key);
    if (n == 0)
        return VS_OK;
    *out = strndup((const char *)v->data.scalar.value, n);
    if (!*out)
        return vs_err_set(c->eb, VS_ERR_NOMEM, "kubeconfig %s: out of memory", f->path);
    return VS_OK;
}

static enum vs_err kc_bool(struct kc *c, struct kc_file *f, yaml_node_t *map, const char *where,
                           const char *key, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off"};
    char *s = NULL;
    enum vs_err rc = kc_str(c, f, map, where, key, &s);
    if (rc != VS_OK || !s)
        return rc;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(s, yes[i]) == 0 || strcmp(s, no[i]) == 0) {
            *out = strcmp(s, yes[i]) == 0;
            free(s);
            return VS_OK;
        }
    }
    rc = vs_err_set(c->eb, VS_ERR_PARSE,
                    "kubeconfig %s: %s: %s must be true or false, not \"%.64s\"", f->path, where,
                    key, s);
    free(s);
    return rc;
}

/* Finds entry `name` in list `list_key` ("clusters", "users", "contexts") of the first file
 * that has it; returns its inner mapping (`inner_key`) through *out (NULL when the entry has no
 * body) and the file through *file. VS_ERR_NOTFOUND (without a message) when absent. */
static enum vs_err kc_find(struct kc *c, const char *list_key, const char *inner_key,
                           const char *name, yaml_node_t **out, struct kc_file **file)
{
    for (size_t i = 0; i < c->n; i++) {
        struct kc_file *f = &c->files[i];
        yaml_node_t *list = map_get(&f->doc, kc_root(f), list_key);
        if (!list || scalar_is_null(list))
            continue;
        if (list->type != YAML_SEQUENCE_NODE)
            return vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: %s must be a list", f->path,
                              list_key);
        for (yaml_node_item_t *it = list->data.sequence.items.start;
             it < list->data.sequence.items.top; it++) {
            yaml_node_t *entry = yaml_document_get_node(&f->doc, *it);
            yaml_node_t *n = map_get(&f->doc, entry, "name");
            if (!n || n->type != YAML_SCALAR_NODE || n->data.scalar.length != strlen(name) ||
                memcmp(n->data.scalar.value, name, n->data.scalar.length) != 0)
                continue;
            yaml_node_t *inner = map_get(&f->doc, entry, inner_key);
            if (inner && scalar_is_null(inner))
                inner = NULL;
            if (inner && inner->type != YAML_MAPPING_NODE)
                return vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: %s \"%s\": %s must be a map",
                                  f->path, inner_key, name, inner_key);
            *out = inner;
            *file = f;
            return VS_OK;
        }
    }
    return VS_ERR_NOTFOUND;
}

/* Resolves a path from a kubeconfig against the file's directory and checks it is readable. */
static enum vs_err kc_path(struct kc *c, struct kc_file *f, const char *where, const char *key,
                           const char *p, char **out)
{
    char *full;
    if (p[0] == '/' || !f->dir)
        full = strdup(p);
    else if (asprintf(&full, "%s/%s", f->dir, p) < 0)
        full = NULL;
    if (!full)
        return vs_err_set(c->eb, VS_ERR_NOMEM, "kubeconfig %s: out of memory", f->path);
    if (access(full, R_OK) != 0) {
        enum vs_err rc = vs_err_set(c->eb, VS_ERR_IO, "kubeconfig %s: %s: %s %s: %s", f->path,
                                    where, key, full, strerror(errno));
        free(full);
        return rc;
    }
    *out = full;
    return VS_OK;
}

/* Decodes base64 (whitespace allowed) into NUL-terminated PEM text. */
static enum vs_err kc_base64(struct kc *c, struct kc_file *f, const char *where, const char *key,
                             const char *in, char **out)
{
    size_t n = strlen(in);
    if (n > KUBECONFIG_MAX)
        return vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: %s: %s is too large", f->path, where,
                          key);
    unsigned char *buf = malloc(n + 4);
    EVP_ENCODE_CTX *ctx = EVP_ENCODE_CTX_new();
    int len = 0, fin = 0;
    enum vs_err rc = VS_OK;
    if (!buf || !ctx) {
        rc = vs_err_set(c->eb, VS_ERR_NOMEM, "kubeconfig %s: out of memory", f->path);
        goto out;
    }
    EVP_DecodeInit(ctx);
    if (EVP_DecodeUpdate(ctx, buf, &len, (const unsigned char *)in, (int)n) < 0 ||
        EVP_DecodeFinal(ctx, buf + len, &fin) < 0) {
        rc = vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: %s: %s is not valid base64", f->path,
                        where, key);
        goto out;
    }
    len += fin;
    if (len == 0 || memchr(buf, '\0', (size_t)len)) {
        rc = vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: %s: %s does not decode to PEM text",
                        f->path, where, key);
        goto out;
    }
    buf[len] = '\0';
    *out = (char *)buf;
    buf = NULL;
out:
    if (buf) {
        explicit_bzero(buf, n + 4);
        free(buf);
    }
    EVP_ENCODE_CTX_free(ctx);
    return rc;
}

/* A PEM item given as file and/or data: data wins. */
static enum vs_err kc_pem(struct kc *c, struct kc_file *f, yaml_node_t *map, const char *where,
                          const char *file_key, const char *data_key, char **file_out,
                          char **data_out)
{
    char *s = NULL;
    enum vs_err rc = kc_str(c, f, map, where, data_key, &s);
    if (rc != VS_OK)
        return rc;
    if (s) {
        rc = kc_base64(c, f, where, data_key, s, data_out);
        vs_kube_free_secret(s);
        return rc;
    }
    if ((rc = kc_str(c, f, map, where, file_key, &s)) != VS_OK || !s)
        return rc;
    rc = kc_path(c, f, where, file_key, s, file_out);
    free(s);
    return rc;
}

static enum vs_err kc_load_file(struct kc *c, struct kc_file *f, const char *path)
{
    size_t len;
    yaml_parser_t parser;
    enum vs_err rc = VS_OK;
    char *text;

    f->path = strdup(path);
    const char *slash = strrchr(path, '/');
    f->dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!f->path || !f->dir)
        return vs_err_set(c->eb, VS_ERR_NOMEM, "kubeconfig %s: out of memory", path);
    text = vs_kube_read_file(path, KUBECONFIG_MAX, &len);
    if (!text)
        return vs_err_set(c->eb, VS_ERR_IO, "kubeconfig %s: %s", path, strerror(errno));
    if (!yaml_parser_initialize(&parser)) {
        free(text);
        return vs_err_set(c->eb, VS_ERR_NOMEM, "kubeconfig %s: out of memory", path);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &f->doc)) {
        rc = vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: line %zu column %zu: %s", path,
                        parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                        parser.problem ? parser.problem : "invalid YAML");
    } else {
        f->loaded = true;
        yaml_node_t *root = yaml_document_get_root_node(&f->doc);
        if (root && !scalar_is_null(root) && root->type != YAML_MAPPING_NODE)
            rc = vs_err_set(c->eb, VS_ERR_PARSE, "kubeconfig %s: top level must be a map", path);
    }
    yaml_parser_delete(&parser);
    explicit_bzero(text, len);
    free(text);
    return rc;
}

static enum vs_err kc_resolve(struct kc *c, struct vs_kube_config *out)
{
    char *ctx_name = NULL, *cluster_name = NULL, *user_name = NULL, *tmp = NULL;
    yaml_node_t *ctx = NULL, *cluster = NULL, *user = NULL;
    struct kc_file *cf = NULL, *clf = NULL, *uf = NULL;
    char where[320];
    enum vs_err rc = VS_OK;

    for (size_t i = 0; i < c->n && !ctx_name; i++)
        if ((rc = kc_str(c, &c->files[i], kc_root(&c->files[i]), "top level", "current-context",
                         &ctx_name)) != VS_OK)
            goto out;
    if (!ctx_name) {
        rc = vs_err_set(c->eb, VS_ERR_INVAL, "kubeconfig %s: current-context is not set", c->label);
        goto out;
    }
    rc = kc_find(c, "contexts", "context", ctx_name, &ctx, &cf);
    if (rc == VS_ERR_NOTFOUND)
        rc = vs_err_set(c->eb, VS_ERR_INVAL, "kubeconfig %s: context \"%s\" not found", c->label,
                        ctx_name);
    if (rc != VS_OK)
        goto out;
    snprintf(where, sizeof(where), "context \"%s\"", ctx_name);
    if ((rc = kc_str(c, cf, ctx, where, "cluster", &cluster_name)) != VS_OK ||
        (rc = kc_str(c, cf, ctx, where, "user", &user_name)) != VS_OK ||
        (rc = kc_str(c, cf, ctx, where, "namespace", &out->namespace)) != VS_OK)
        goto out;
    if (!cluster_name) {
        rc = vs_err_set(c->eb, VS_ERR_INVAL, "kubeconfig %s: %s: cluster is not set", cf->path,
                        where);
        goto out;
    }

    rc = kc_find(c, "clusters", "cluster", cluster_name, &cluster, &clf);
    if (rc == VS_ERR_NOTFOUND)
        rc = vs_err_set(c->eb, VS_ERR_INVAL, "kubeconfig %s: cluster \"%s\" not found", c->label,
                        cluster_name);
    if (rc != VS_OK)
        goto out;
    snprintf(where, sizeof(where), "cluster \"%s\"", cluster_name);
    if ((rc = kc_str(c, clf, cluster, where, "server", &out->server)) != VS_OK)
        goto out;
    if (!out->server) {
        rc = vs_err_set(c->eb, VS_ERR_INVAL, "kubeconfig %s: %s: server is not set", clf->path,
                        where);
        goto out;
    }
    if (strncmp(out->server, "https://", 8) != 0 && strncmp(out->server, "http://", 7) != 0) {
        rc = vs_err_set(c->eb, VS_ERR_INVAL,
                        "kubeconfig %s: %s: server \"%.200s\" is not an http(s) URL", clf->path,
                        where, out->server);
        goto out;
    }
    for (size_t n = strlen(out->server); n > 0 && out->server[n - 1] == '/'; n--)
        out->server[n - 1] = '\0';
    if ((rc = kc_pem(c, clf, cluster, where, "certificate-authority", "certificate-authority-data",
                     &out->ca_file, &out->ca_data)) != VS_OK ||
        (rc = kc_bool(c, clf, cluster, where, "insecure-skip-tls-verify", &out->insecure)) != VS_OK)
        goto out;

    if (user_name) {
        rc = kc_find(c, "users", "user", user_name, &user, &uf);
        if (rc == VS_ERR_NOTFOUND)
            rc = vs_err_set(c->eb, VS_ERR_INVAL, "kubeconfig %s: user \"%s\" not found", c->label,
                            user_name);
        if (rc != VS_OK)
            goto out;
        snprintf(where, sizeof(where), "user \"%s\"", user_name);
        if ((rc = kc_pem(c, uf, user, where, "client-certificate", "client-certificate-data",
                         &out->cert_file, &out->cert_data)) != VS_OK ||
            (rc = kc_pem(c, uf, user, where, "client-key", "client-key-data", &out->key_file,
                         &out->key_data)) != VS_OK ||
            (rc = kc_str(c, uf, user, where, "token", &out->token)) != VS_OK)
            goto out;
        if (!out->token) {
            if ((rc = kc_str(c, uf, user, where, "tokenFile", &tmp)) != VS_OK)
                goto out;
            if (tmp && (rc = kc_path(c, uf, where, "tokenFile", tmp, &out->token_file)) != VS_OK)
                goto out;
        }
        bool has_cert = out->cert_file || out->cert_data;
        bool has_key = out->key_file || out->key_data;
        if (has_cert != has_key) {
            rc = vs_err_set(c->eb, VS_ERR_INVAL, "kubeconfig %s: %s: %s without %s", uf->path,
                            where, has_cert ? "client certificate" : "client key",
                            has_cert ? "client key" : "client certificate");
            goto out;
        }
        if (!out->token && !out->token_file && !has_cert) {
            static const char *const unsupported[] = {"exec", "auth-provider", "username"};
            for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
                if (map_get(&uf->doc, user, unsupported[i])) {
                    rc = vs_err_set(c->eb, VS_ERR_INVAL,
                                    "kubeconfig %s: %s: %s credentials are not supported (use "
                                    "token, tokenFile or a client certificate)",
                                    uf->path, where, unsupported[i]);
                    goto out;
                }
            }
        }
    }
    if (!out->namespace && !(out->namespace = strdup("default")))
        rc = vs_err_set(c->eb, VS_ERR_NOMEM, "kubeconfig %s: out of memory", c->label);
out:
    free(ctx_name);
    free(cluster_name);
    free(user_name);
    free(tmp);
    return rc;
}

static enum vs_err load_kubeconfig(char **paths, size_t n, const char *label,
                                   struct vs_kube_config *out, struct vs_errbuf *eb)
{
    struct kc c = {.n = n, .label = label, .eb = eb};
    enum vs_err rc = VS_OK;

    c.files = calloc(n, sizeof(*c.files));
    if (!c.files)
        return vs_err_set(eb, VS_ERR_NOMEM, "kubeconfig %s: out of memory", label);
    for (size_t i = 0; i < n && rc == VS_OK; i++)
        rc = kc_load_file(&c, &c.files[i], paths[i]);
    if (rc == VS_OK)
        rc = kc_resolve(&c, out);
    for (size_t i = 0; i < n; i++) {
        if (c.files[i].loaded)
            yaml_document_delete(&c.files[i].doc);
        free(c.files[i].path);
        free(c.files[i].dir);
    }
    free(c.files);
    return rc;
}

static enum vs_err load_incluster(struct vs_kube_config *out, struct vs_errbuf *eb)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *dir = getenv("VS_SA_DIR");
    char *path = NULL, *tok = NULL, *ns = NULL;
    enum vs_err rc = VS_OK;

    if (!host || !*host || !port || !*port)
        return vs_err_set(eb, VS_ERR_INVAL,
                          "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in "
                          "a cluster (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset)");
    if (!dir || !*dir)
        dir = SA_DIR_DEFAULT;
    if (asprintf(&out->server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
                 port) < 0) {
        out->server = NULL;
        goto nomem;
    }
    if (asprintf(&out->token_file, "%s/token", dir) < 0) {
        out->token_file = NULL;
        goto nomem;
    }
    if ((rc = vs_kube_read_token_file(out->token_file, &tok, eb)) != VS_OK) {
        vs_err_prefix(eb, rc, "in-cluster");
        goto out;
    }
    if (asprintf(&out->ca_file, "%s/ca.crt", dir) < 0) {
        out->ca_file = NULL;
        goto nomem;
    }
    if (access(out->ca_file, R_OK) != 0) {
        rc = vs_err_set(eb, VS_ERR_IO, "in-cluster: %s: %s", out->ca_file, strerror(errno));
        goto out;
    }
    if (asprintf(&path, "%s/namespace", dir) < 0) {
        path = NULL;
        goto nomem;
    }
    size_t n;
    char *raw = vs_kube_read_file(path, VS_KUBE_SMALL_FILE_MAX, &n);
    if (raw) {
        ns = vs_kube_trim_dup(raw, n);
        free(raw);
        if (!ns)
            goto nomem;
    }
    if (ns && *ns && !memchr(ns, '\n', strlen(ns))) {
        out->namespace = ns;
        ns = NULL;
    } else if (!(out->namespace = strdup("default"))) {
        goto nomem;
    }
    goto out;
nomem:
    rc = vs_err_set(eb, VS_ERR_NOMEM, "in-cluster config: out of memory");
out:
    vs_kube_free_secret(tok);
    free(path);
    free(ns);
    return rc;
}

enum vs_err vs_kube_config_load(const char *path, struct vs_kube_config *out, struct vs_errbuf *eb)
{
    enum vs_err rc;
    memset(out, 0, sizeof(*out));

    if (path && *path) {
        char *p = (char *)path;
        rc = load_kubeconfig(&p, 1, path, out, eb);
        goto out;
    }
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        /* A list: missing files are skipped as client-go does; none at all is an error. */
        char *copy = strdup(env), *save = NULL;
        char **paths = calloc(strlen(env) / 2 + 1, sizeof(*paths));
        size_t n = 0;
        if (!copy || !paths) {
            free(copy);
            free(paths);
            return vs_err_set(eb, VS_ERR_NOMEM, "kubeconfig: out of memory");
        }
        for (char *t = strtok_r(copy, ":", &save); t; t = strtok_r(NULL, ":", &save))
            if (access(t, F_OK) == 0)
                paths[n++] = t;
        if (n == 0)
            rc = vs_err_set(eb, VS_ERR_IO, "KUBECONFIG=%s: no such file", env);
        else
            rc = load_kubeconfig(paths, n, env, out, eb);
        free(paths);
        free(copy);
        goto out;
    }
    const char *home = getenv("HOME");
    if (home && *home) {
        char *p;
        if (asprintf(&p, "%s/.kube/config", home) < 0)
            return vs_err_set(eb, VS_ERR_NOMEM, "kubeconfig: out of memory");
        if (access(p, F_OK) == 0) {
            rc = load_kubeconfig(&p, 1, p, out, eb);
            free(p);
            goto out;
        }
        free(p);
    }
    rc = load_incluster(out, eb);
out:
    if (rc != VS_OK)
        vs_kube_config_cleanup(out);
    return rc;
}

void vs_kube_config_cleanup(struct vs_kube_config *c)
{
    if (!c)
        return;
    free(c->server);
    free(c->ca_file);
    free(c->ca_data);
    free(c->cert_file);
    free(c->cert_data);
    free(c->key_file);
    vs_kube_free_secret(c->key_data);
    vs_kube_free_secret(c->token);
    free(c->token_file);
    free(c->namespace);
    memset(c, 0, sizeof(*c));
}
