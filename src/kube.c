/* kube: the kube-apiserver client (spec/k8s-protocols.md §5–6). Configuration comes from a
 * kubeconfig (libyaml document API) or the in-cluster service account; requests go through
 * libcurl (OpenSSL) with PEM material handed over in memory. Invariants: every request first
 * takes a token from the shared limiter; a bearer token read from a file is never older than
 * 60 s and is re-read once after a 401; tokens and keys never reach a message; every buffer
 * filled from the network has a hard cap. */
#include "kube.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "buf.h"
#include "json.h"
#include "kube_internal.h"

#define SA_DIR_DEFAULT    "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBECONFIG_MAX    (16u << 20)  /* kubeconfig file size cap */
#define SMALL_FILE_MAX    (64u << 10)  /* token and namespace files */
#define RESPONSE_MAX      (256u << 20) /* one non-watch response body */
#define ERROR_BODY_MAX    (1u << 20)   /* body of a failed watch request */
#define TOKEN_MAX_AGE     60.0         /* seconds before a token file is re-read */
#define POOL_MAX          8            /* idle curl handles kept for connection reuse */
#define CONNECT_TIMEOUT_S 10L
#define RETRY_AFTER_MAX_S 10L /* longest Retry-After we honour */
#define RETRY_AFTER_TRIES 3
#define WATCH_GRACE_S     30  /* client-side cap beyond the server's timeoutSeconds */
#define STOP_POLL_MS      100 /* how often a watch looks at *stop */
#define BACKOFF_MIN       0.2
#define BACKOFF_MAX       30.0
#define INFORMER_PAGE     500
#define HEALTHY_WATCH_S   1.0 /* a clean watch end after this long counts as healthy */

enum verb { V_GET, V_LIST, V_WATCH, V_PATCH, V_POST, V_PUT, V_OTHER };

/* ------------------------------------------------------------------------------------------ */
/* small helpers                                                                              */

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool stopped(volatile int *stop)
{
    return stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE) != 0;
}

/* Sleeps `s` seconds in steps of at most 50 ms, returning early once *stop is set. */
static void sleep_for(double s, volatile int *stop)
{
    double end = now_mono() + s;
    for (;;) {
        if (stopped(stop))
            return;
        double left = end - now_mono();
        if (left <= 0)
            return;
        if (left > 0.05)
            left = 0.05;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static void free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static char *trim_dup(const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        n--;
    return strndup(s, n);
}

/* Reads a whole file of at most `max` bytes. Returns a new NUL-terminated buffer or NULL with
 * errno set (EFBIG past the cap). */
static char *read_file(const char *path, size_t max, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (cap - len < 4096) {
            size_t ncap = cap ? cap * 2 : 8192;
            if (ncap > max + 4096)
                ncap = max + 4096;
            char *g = realloc(buf, ncap + 1);
            if (!g) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = g;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len > max) {
            explicit_bzero(buf, len);
            free(buf);
            fclose(f);
            errno = EFBIG;
            return NULL;
        }
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        errno = EIO;
        return NULL;
    }
    fclose(f);
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

/* Reads a token file: trimmed, non-empty. Returns a new string (free_secret) or an error. */
static enum vs_err read_token_file(const char *path, char **out, struct vs_errbuf *eb)
{
    size_t n;
    char *raw = read_file(path, SMALL_FILE_MAX, &n);
    if (!raw)
        return vs_err_set(eb, VS_ERR_AUTH, "token file %s: %s", path, strerror(errno));
    bool nul = memchr(raw, '\0', n) != NULL;
    char *tok = trim_dup(raw, n);
    explicit_bzero(raw, n);
    free(raw);
    if (!tok)
        return vs_err_set(eb, VS_ERR_NOMEM, "token file %s: out of memory", path);
    if (!*tok || nul || strpbrk(tok, "\r\n")) {
        bool empty = !*tok;
        free_secret(tok);
        return vs_err_set(eb, VS_ERR_AUTH, "token file %s: %s", path,
                          empty ? "empty" : "not a single-line token");
    }
    *out = tok;
    return VS_OK;
}

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
        free_secret(s);
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
    text = read_file(path, KUBECONFIG_MAX, &len);
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
    if ((rc = read_token_file(out->token_file, &tok, eb)) != VS_OK) {
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
    char *raw = read_file(path, SMALL_FILE_MAX, &n);
    if (raw) {
        ns = trim_dup(raw, n);
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
    free_secret(tok);
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
    free_secret(c->key_data);
    free_secret(c->token);
    free(c->token_file);
    free(c->namespace);
    memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------------------------------------------ */
/* rate limiter                                                                               */

void vs_kube_limiter_init(struct vs_kube_limiter *l, double qps, int burst)
{
    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->mu, NULL);
    l->qps = qps;
    l->burst = burst < 1 ? 1 : burst;
}

void vs_kube_limiter_cleanup(struct vs_kube_limiter *l)
{
    pthread_mutex_destroy(&l->mu);
}

double vs_kube_limiter_reserve(struct vs_kube_limiter *l, double now)
{
    double wait = 0;
    if (l->qps <= 0)
        return 0;
    pthread_mutex_lock(&l->mu);
    if (!l->started) {
        l->started = true;
        l->tokens = l->burst;
        l->last = now;
    }
    if (now > l->last) {
        l->tokens += (now - l->last) * l->qps;
        if (l->tokens > l->burst)
            l->tokens = l->burst;
        l->last = now;
    }
    l->tokens -= 1;
    if (l->tokens < 0)
        wait = -l->tokens / l->qps;
    pthread_mutex_unlock(&l->mu);
    return wait;
}

/* ------------------------------------------------------------------------------------------ */
/* status mapping                                                                             */

enum vs_err vs_kube_status_err(long code)
{
    switch (code) {
    case 401:
    case 403:
        return VS_ERR_AUTH;
    case 404:
        return VS_ERR_NOTFOUND;
    case 409:
        return VS_ERR_CONFLICT;
    case 410:
        return VS_ERR_GONE;
    default:
        return VS_ERR_KUBE;
    }
}

static const char *reason_phrase(long code)
{
    switch (code) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Payload Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    }
    return "";
}

/* The Status.message of an error body, if it has one. Borrowed from `st`. */
static const char *status_message(const json_t *st)
{
    const char *m = json_string_value(json_object_get(st, "message"));
    return m && *m ? m : NULL;
}

/* Formats "<who>: <code> <message|reason phrase>" from an error response. */
static enum vs_err status_error(const char *who, long code, const char *phrase, const char *body,
                                size_t len, struct vs_errbuf *eb)
{
    json_t *st = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *msg = status_message(st);
    if (!msg)
        msg = phrase && *phrase ? phrase : reason_phrase(code);
    enum vs_err rc =
        vs_err_set(eb, vs_kube_status_err(code), "%s: %ld%s%s", who, code, *msg ? " " : "", msg);
    json_decref(st);
    return rc;
}

static enum vs_err curl_error(const char *who, CURLcode cc, const char *errbuf,
                              struct vs_errbuf *eb)
{
    enum vs_err rc;
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        rc = VS_ERR_TIMEOUT;
        break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
        rc = VS_ERR_TLS;
        break;
    case CURLE_OUT_OF_MEMORY:
        rc = VS_ERR_NOMEM;
        break;
    default:
        rc = VS_ERR_KUBE;
    }
    return vs_err_set(eb, rc, "%s: %s", who, errbuf && *errbuf ? errbuf : curl_easy_strerror(cc));
}

/* ------------------------------------------------------------------------------------------ */
/* watch stream decoder                                                                       */

void vs_watch_decoder_init(struct vs_watch_decoder *d,
                           int (*on_event)(void *ctx, const char *type, json_t *obj), void *ctx,
                           size_t max_event)
{
    memset(d, 0, sizeof(*d));
    d->on_event = on_event;
    d->ctx = ctx;
    d->max_event = max_event ? max_event : VS_WATCH_MAX_EVENT;
}

void vs_watch_decoder_cleanup(struct vs_watch_decoder *d)
{
    free(d->buf);
    free(d->rv);
    memset(d, 0, sizeof(*d));
}

static enum vs_err note_rv(struct vs_watch_decoder *d, const json_t *obj, struct vs_errbuf *eb)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (!rv || !*rv || (d->rv && strcmp(d->rv, rv) == 0))
        return VS_OK;
    char *copy = strdup(rv);
    if (!copy)
        return vs_err_set(eb, VS_ERR_NOMEM, "watch: out of memory");
    free(d->rv);
    d->rv = copy;
    return VS_OK;
}

static enum vs_err decode_line(struct vs_watch_decoder *d, const char *line, size_t n,
                               struct vs_errbuf *eb)
{
    json_error_t je;
    enum vs_err rc = VS_OK;

    while (n > 0 && (*line == ' ' || *line == '\t' || *line == '\r')) {
        line++;
        n--;
    }
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
        n--;
    if (n == 0)
        return VS_OK;
    json_t *ev = json_loadb(line, n, 0, &je);
    if (!ev)
        return vs_err_set(eb, VS_ERR_PARSE, "invalid watch event at byte %d: %s", je.position,
                          je.text);
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        rc = vs_err_set(eb, VS_ERR_PARSE, "watch event without a type and an object");
        goto out;
    }
    if (strcmp(type, "ERROR") == 0) {
        json_t *code = json_object_get(obj, "code");
        const char *msg = status_message(obj);
        json_int_t c = json_is_integer(code) ? json_integer_value(code) : 0;
        if (c < 100 || c > 599)
            rc = vs_err_set(eb, VS_ERR_KUBE, "ERROR event: %s", msg ? msg : "no message");
        else
            rc = vs_err_set(eb, vs_kube_status_err((long)c), "%d %s", (int)c,
                            msg ? msg : reason_phrase((long)c));
        goto out;
    }
    bool bookmark = strcmp(type, "BOOKMARK") == 0;
    if (!bookmark && strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0 &&
        strcmp(type, "DELETED") != 0) {
        rc = vs_err_set(eb, VS_ERR_PARSE, "unknown watch event type \"%.32s\"", type);
        goto out;
    }
    if ((rc = note_rv(d, obj, eb)) != VS_OK)
        goto out;
    d->events++;
    if (!bookmark && d->on_event && d->on_event(d->ctx, type, obj) != 0)
        rc = vs_err_set(eb, VS_ERR_INVAL, "stopped by the event handler");
out:
    json_decref(ev);
    return rc;
}

static enum vs_err buffer_append(struct vs_watch_decoder *d, const char *p, size_t n,
                                 struct vs_errbuf *eb)
{
    if (n > d->max_event || d->len > d->max_event - n)
        return vs_err_set(eb, VS_ERR_PARSE, "watch event larger than %zu bytes", d->max_event);
    if (d->len + n > d->cap) {
        size_t cap = d->cap ? d->cap : 4096;
        while (cap < d->len + n)
            cap *= 2;
        if (cap > d->max_event)
            cap = d->max_event;
        char *g = realloc(d->buf, cap);
        if (!g)
            return vs_err_set(eb, VS_ERR_NOMEM, "watch: out of memory");
        d->buf = g;
        d->cap = cap;
    }
    memcpy(d->buf + d->len, p, n);
    d->len += n;
    return VS_OK;
}

enum vs_err vs_watch_decoder_feed(struct vs_watch_decoder *d, const char *data, size_t len,
                                  struct vs_errbuf *eb)
{
    enum vs_err rc;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        if (!nl)
            return buffer_append(d, data, len, eb);
        size_t seg = (size_t)(nl - data);
        if (d->len == 0) {
            if (seg > d->max_event)
                return vs_err_set(eb, VS_ERR_PARSE, "watch event larger than %zu bytes",
                                  d->max_event);
            rc = decode_line(d, data, seg, eb);
        } else if ((rc = buffer_append(d, data, seg, eb)) == VS_OK) {
            rc = decode_line(d, d->buf, d->len, eb);
            d->len = 0;
        }
        if (rc != VS_OK)
            return rc;
        data = nl + 1;
        len -= seg + 1;
    }
    return VS_OK;
}

enum vs_err vs_watch_decoder_finish(struct vs_watch_decoder *d, struct vs_errbuf *eb)
{
    if (d->len == 0)
        return VS_OK;
    size_t n = d->len;
    d->len = 0;
    enum vs_err rc = decode_line(d, d->buf, n, eb);
    if (rc == VS_ERR_PARSE)
        vs_err_prefix(eb, rc, "watch stream ended inside an event");
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* client                                                                                     */

struct vs_kube {
    char *server;
    char *ca_file, *cert_file, *key_file;
    char *ca_pem, *cert_pem, *key_pem; /* in-memory PEM, handed to curl as blobs */
    bool insecure;
    char *user_agent;
    int timeout_s;

    pthread_mutex_t tok_mu; /* guards token and token_read */
    char *token;            /* current bearer token or NULL */
    char *token_file;       /* NULL: token is static */
    double token_read;      /* monotonic time of the last successful read */

    struct vs_kube_limiter lim;

    pthread_mutex_t pool_mu; /* guards pool and n_pool */
    CURL *pool[POOL_MAX];
    int n_pool;

    /* Counters, updated and read with __atomic builtins. */
    uint64_t requests;
    uint64_t errors[6];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = true;
    return d;
}

struct vs_kube *vs_kube_new(const struct vs_kube_config *cfg, const struct vs_kube_opts *o,
                            struct vs_errbuf *eb)
{
    bool oom = false;
    struct vs_kube *k;

    pthread_once(&curl_once, curl_init_once);
    if (!cfg || !cfg->server ||
        (strncmp(cfg->server, "https://", 8) != 0 && strncmp(cfg->server, "http://", 7) != 0)) {
        vs_err_set(eb, VS_ERR_INVAL, "kube: server \"%.200s\" is not an http(s) URL",
                   cfg && cfg->server ? cfg->server : "");
        return NULL;
    }
    if (!(k = calloc(1, sizeof(*k)))) {
        vs_err_set(eb, VS_ERR_NOMEM, "kube: out of memory");
        return NULL;
    }
    pthread_mutex_init(&k->tok_mu, NULL);
    pthread_mutex_init(&k->pool_mu, NULL);
    vs_kube_limiter_init(&k->lim, o ? o->qps : 0, o ? o->burst : 1);
    k->timeout_s = o && o->timeout_s > 0 ? o->timeout_s : 0;
    k->server = dup_or_null(cfg->server, &oom);
    k->ca_file = dup_or_null(cfg->ca_file, &oom);
    k->ca_pem = dup_or_null(cfg->ca_data, &oom);
    k->cert_file = dup_or_null(cfg->cert_file, &oom);
    k->cert_pem = dup_or_null(cfg->cert_data, &oom);
    k->key_file = dup_or_null(cfg->key_file, &oom);
    k->key_pem = dup_or_null(cfg->key_data, &oom);
    k->insecure = cfg->insecure;
    k->user_agent =
        dup_or_null(o && o->user_agent ? o->user_agent : "vgpu-sched/" VS_VERSION, &oom);
    if (cfg->token)
        k->token = dup_or_null(cfg->token, &oom);
    else
        k->token_file = dup_or_null(cfg->token_file, &oom);
    if (oom) {
        vs_err_set(eb, VS_ERR_NOMEM, "kube: out of memory");
        goto fail;
    }
    for (size_t n = strlen(k->server); n > 0 && k->server[n - 1] == '/'; n--)
        k->server[n - 1] = '\0';
    if (k->token_file) {
        if (read_token_file(k->token_file, &k->token, eb) != VS_OK)
            goto fail;
        k->token_read = now_mono();
    }
    return k;
fail:
    vs_kube_free(k);
    return NULL;
}

void vs_kube_free(struct vs_kube *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->n_pool; i++)
        curl_easy_cleanup(k->pool[i]);
    free(k->server);
    free(k->ca_file);
    free(k->ca_pem);
    free(k->cert_file);
    free(k->cert_pem);
    free(k->key_file);
    free_secret(k->key_pem);
    free(k->user_agent);
    free_secret(k->token);
    free(k->token_file);
    vs_kube_limiter_cleanup(&k->lim);
    pthread_mutex_destroy(&k->tok_mu);
    pthread_mutex_destroy(&k->pool_mu);
    free(k);
}

void vs_kube_stats(const struct vs_kube *k, struct vs_kube_stats *out)
{
    out->requests = __atomic_load_n(&k->requests, __ATOMIC_RELAXED);
    for (int i = 0; i < 6; i++)
        out->errors_by_verb[i] = __atomic_load_n(&k->errors[i], __ATOMIC_RELAXED);
}

static void count_error(struct vs_kube *k, enum verb v)
{
    if (v < V_OTHER)
        __atomic_add_fetch(&k->errors[v], 1, __ATOMIC_RELAXED);
}

/* Returns a copy of the current token (NULL when there is none), re-reading the token file
 * when it is older than TOKEN_MAX_AGE or `force`. *changed tells whether a forced re-read
 * produced a different token. A failed re-read keeps the cached token (the kubelet may be in
 * the middle of swapping the file) and is retried on the next call. */
static enum vs_err current_token(struct vs_kube *k, bool force, char **out, bool *changed,
                                 struct vs_errbuf *eb)
{
    enum vs_err rc = VS_OK;
    *out = NULL;
    if (changed)
        *changed = false;
    pthread_mutex_lock(&k->tok_mu);
    double now = now_mono();
    if (k->token_file && (force || !k->token || now - k->token_read >= TOKEN_MAX_AGE)) {
        char *fresh = NULL;
        struct vs_errbuf reb;
        rc = read_token_file(k->token_file, &fresh, &reb);
        if (rc == VS_OK) {
            if (changed)
                *changed = !k->token || strcmp(k->token, fresh) != 0;
            free_secret(k->token);
            k->token = fresh;
            k->token_read = now;
        } else if (!k->token) {
            if (eb)
                *eb = reb;
            pthread_mutex_unlock(&k->tok_mu);
            return rc;
        }
        rc = VS_OK;
    }
    if (k->token && !(*out = strdup(k->token)))
        rc = vs_err_set(eb, VS_ERR_NOMEM, "kube: out of memory");
    pthread_mutex_unlock(&k->tok_mu);
    return rc;
}

static CURL *handle_get(struct vs_kube *k)
{
    CURL *h = NULL;
    pthread_mutex_lock(&k->pool_mu);
    if (k->n_pool > 0)
        h = k->pool[--k->n_pool];
    pthread_mutex_unlock(&k->pool_mu);
    return h ? h : curl_easy_init();
}

static void handle_put(struct vs_kube *k, CURL *h)
{
    if (!h)
        return;
    curl_easy_reset(h); /* drops every pointer into our buffers, keeps the connections */
    pthread_mutex_lock(&k->pool_mu);
    if (k->n_pool < POOL_MAX) {
        k->pool[k->n_pool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&k->pool_mu);
    if (h)
        curl_easy_cleanup(h);
}

static void free_headers(struct curl_slist *l)
{
    for (struct curl_slist *p = l; p; p = p->next)
        explicit_bzero(p->data, strlen(p->data)); /* one of them is the bearer token */
    curl_slist_free_all(l);
}

/* Body of a response, capped. */
struct body {
    char *data;
    size_t len, cap, max;
    bool too_big;
};

static bool body_append(struct body *b, const char *p, size_t n)
{
    if (n > b->max || b->len > b->max - n) {
        b->too_big = true;
        return false;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *g = realloc(b->data, cap);
        if (!g)
            return false;
        b->data = g;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
    return body_append(ud, p, sz * nm) ? sz * nm : 0;
}

/* What we keep from the response headers: the status line's reason phrase and Retry-After. */
struct head {
    char phrase[64];
    long retry_after; /* seconds, -1 when absent */
};

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
    struct head *h = ud;
    size_t n = sz * nm;
    if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        /* A new response (after 100-continue or a retry): forget the previous one. */
        h->phrase[0] = '\0';
        h->retry_after = -1;
        const char *sp = memchr(p, ' ', n);
        if (sp) {
            const char *end = p + n;
            const char *q = sp + 1;
            while (q < end && *q >= '0' && *q <= '9')
                q++;
            while (q < end && *q == ' ')
                q++;
            size_t len = (size_t)(end - q);
            while (len > 0 && (q[len - 1] == '\r' || q[len - 1] == '\n'))
                len--;
            if (len >= sizeof(h->phrase))
                len = sizeof(h->phrase) - 1;
            memcpy(h->phrase, q, len);
            h->phrase[len] = '\0';
        }
    } else if (n > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        long v = 0;
        size_t i = 12;
        while (i < n && p[i] == ' ')
            i++;
        if (i < n && p[i] >= '0' && p[i] <= '9') {
            while (i < n && p[i] >= '0' && p[i] <= '9' && v < 1000000)
                v = v * 10 + (p[i++] - '0');
            h->retry_after = v;
        }
    }
    return n;
}

/* Options every request shares: URL, TLS material, identity, headers. *hdrs is set to the
 * header list the caller frees with free_headers() after the transfer. */
static enum vs_err setup_handle(struct vs_kube *k, CURL *h, const char *url, const char *token,
                                const char *content_type, struct curl_slist **hdrs, char *errbuf,
                                struct head *head, struct vs_errbuf *eb)
{
    struct curl_slist *l = NULL, *t;
    char *auth = NULL;
    bool ok = true;

    errbuf[0] = '\0';
    ok &= curl_easy_setopt(h, CURLOPT_URL, url) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf) == CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075500
    ok &= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
#else
    ok &= curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) ==
          CURLE_OK;
#endif
    ok &= curl_easy_setopt(h, CURLOPT_USERAGENT, k->user_agent) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK;
    ok &= curl_easy_setopt(h, CURLOPT_HEADERDATA, head) == CURLE_OK;
    if (k->ca_pem) {
        struct curl_blob b = {k->ca_pem, strlen(k->ca_pem), CURL_BLOB_COPY};
        ok &= curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_CAPATH, NULL) == CURLE_OK; /* only the cluster CA */
    } else if (k->ca_file) {
        ok &= curl_easy_setopt(h, CURLOPT_CAINFO, k->ca_file) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_CAPATH, NULL) == CURLE_OK;
    }
    if (k->cert_pem) {
        struct curl_blob b = {k->cert_pem, strlen(k->cert_pem), CURL_BLOB_COPY};
        ok &= curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM") == CURLE_OK;
    } else if (k->cert_file) {
        ok &= curl_easy_setopt(h, CURLOPT_SSLCERT, k->cert_file) == CURLE_OK;
    }
    if (k->key_pem) {
        struct curl_blob b = {k->key_pem, strlen(k->key_pem), CURL_BLOB_COPY};
        ok &= curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM") == CURLE_OK;
    } else if (k->key_file) {
        ok &= curl_easy_setopt(h, CURLOPT_SSLKEY, k->key_file) == CURLE_OK;
    }
    if (k->insecure) {
        ok &= curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK;
        ok &= curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK;
    }
    if (!ok)
        return vs_err_set(eb, VS_ERR_TLS, "kube: libcurl rejected an option (needs 7.77+)");

    /* "Expect:" stops curl from waiting for 100-continue on large bodies. */
    const char *fixed[] = {"Accept: application/json", "Expect:"};
    for (size_t i = 0; i < 2; i++) {
        if (!(t = curl_slist_append(l, fixed[i])))
            goto nomem;
        l = t;
    }
    if (content_type) {
        char ct[128];
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        if (!(t = curl_slist_append(l, ct)))
            goto nomem;
        l = t;
    }
    if (token) {
        if (asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
            auth = NULL;
            goto nomem;
        }
        t = curl_slist_append(l, auth);
        free_secret(auth);
        if (!t)
            goto nomem;
        l = t;
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
    *hdrs = l;
    return VS_OK;
nomem:
    free_headers(l);
    return vs_err_set(eb, VS_ERR_NOMEM, "kube: out of memory");
}

/* Appends "?" or "&" then key=escaped(value) to a URL being built. */
static void url_param(struct vs_buf *u, const char *key, const char *value)
{
    char *esc = vs_kube_escape(value);
    if (!esc) {
        u->oom = true;
        return;
    }
    vs_buf_printf(u, "%c%s=%s", strchr(u->data ? u->data : "", '?') ? '&' : '?', key, esc);
    free(esc);
}

static void take_limiter_token(struct vs_kube *k, volatile int *stop)
{
    double wait = vs_kube_limiter_reserve(&k->lim, now_mono());
    if (wait > 0)
        sleep_for(wait, stop);
}

/* One non-streaming request with the 401 and Retry-After retries. `who` is the
 * "<METHOD> <path>" prefix of messages. */
/* The response body undecoded (perform's `raw`): owned by the caller. */
struct raw_body {
    char *data;
    size_t len;
};

static enum vs_err perform(struct vs_kube *k, enum verb verb, const char *method, const char *who,
                           const char *url, const char *content_type, const char *body,
                           json_t **out, struct raw_body *raw, struct vs_errbuf *eb)
{
    bool auth_retried = false;
    int throttled = 0;
    enum vs_err rc;

    if (out)
        *out = NULL;
    for (;;) {
        char errbuf[CURL_ERROR_SIZE];
        struct curl_slist *hdrs = NULL;
        struct body resp = {.max = RESPONSE_MAX};
        struct head head = {.retry_after = -1};
        char *token = NULL;
        long status = 0;
        CURLcode cc;
        CURL *h = NULL;

        if ((rc = current_token(k, false, &token, NULL, eb)) != VS_OK) {
            vs_err_prefix(eb, rc, "%s", who);
            goto done;
        }
        take_limiter_token(k, NULL);
        if (!(h = handle_get(k))) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: cannot create a curl handle", who);
            goto done;
        }
        rc = setup_handle(k, h, url, token, body ? content_type : NULL, &hdrs, errbuf, &head, eb);
        free_secret(token);
        if (rc != VS_OK) {
            vs_err_prefix(eb, rc, "%s", who);
            goto done;
        }
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)k->timeout_s);
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
            if (strcmp(method, "POST") != 0)
                curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        } else if (strcmp(method, "GET") == 0) {
            curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        } else {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        }

        cc = curl_easy_perform(h);
        __atomic_add_fetch(&k->requests, 1, __ATOMIC_RELAXED);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        free_headers(hdrs);
        handle_put(k, h);

        if (cc != CURLE_OK) {
            if (resp.too_big)
                rc = vs_err_set(eb, VS_ERR_KUBE, "%s: response larger than %u MiB", who,
                                RESPONSE_MAX >> 20);
            else
                rc = curl_error(who, cc, errbuf, eb);
        } else if (status == 401 && k->token_file && !auth_retried) {
            bool changed = false;
            char *t = NULL;
            if (current_token(k, true, &t, &changed, NULL) == VS_OK && changed) {
                free_secret(t);
                free(resp.data);
                auth_retried = true;
                continue;
            }
            free_secret(t);
            rc = status_error(who, status, head.phrase, resp.data, resp.len, eb);
        } else if (status == 429 && head.retry_after >= 0 && throttled < RETRY_AFTER_TRIES) {
            throttled++;
            free(resp.data);
            sleep_for((double)(head.retry_after < RETRY_AFTER_MAX_S ? head.retry_after
                                                                    : RETRY_AFTER_MAX_S),
                      NULL);
            continue;
        } else if (status < 200 || status > 299) {
            rc = status_error(who, status, head.phrase, resp.data, resp.len, eb);
        } else if (raw) {
            raw->data = resp.data;
            raw->len = resp.len;
            resp.data = NULL;
        } else if (out && resp.len > 0) {
            json_error_t je;
            if (!(*out = json_loadb(resp.data, resp.len, 0, &je)))
                rc = vs_err_set(eb, VS_ERR_PARSE, "%s: invalid JSON in the response at byte %d: %s",
                                who, je.position, je.text);
        }
        free(resp.data);
    done:
        if (rc != VS_OK)
            count_error(k, verb);
        return rc;
    }
}

static enum verb verb_of(const char *method)
{
    if (strcmp(method, "GET") == 0)
        return V_GET;
    if (strcmp(method, "PATCH") == 0)
        return V_PATCH;
    if (strcmp(method, "POST") == 0)
        return V_POST;
    if (strcmp(method, "PUT") == 0)
        return V_PUT;
    return V_OTHER;
}

static char *make_url(struct vs_kube *k, const char *path)
{
    char *u;
    return asprintf(&u, "%s%s", k->server, path) < 0 ? NULL : u;
}

enum vs_err vs_kube_request(struct vs_kube *k, const char *method, const char *path,
                            const char *content_type, const json_t *body, json_t **out,
                            struct vs_errbuf *eb)
{
    char who[320];
    char *url = NULL, *text = NULL;
    enum vs_err rc;

    if (out)
        *out = NULL;
    snprintf(who, sizeof(who), "%s %s", method, path);
    if (!path || path[0] != '/')
        return vs_err_set(eb, VS_ERR_INVAL, "%s: path must start with /", who);
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: cannot serialize the body", who);
        goto out;
    }
    if (!(url = make_url(k, path))) {
        rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
        goto out;
    }
    rc = perform(k, verb_of(method), method, who, url,
                 content_type ? content_type : "application/json", text, out, NULL, eb);
out:
    free(url);
    free(text);
    return rc;
}

enum vs_err vs_kube_get(struct vs_kube *k, const char *path, json_t **out, struct vs_errbuf *eb)
{
    return vs_kube_request(k, "GET", path, NULL, NULL, out, eb);
}

enum vs_err vs_kube_merge_patch(struct vs_kube *k, const char *path, const json_t *patch,
                                json_t **out, struct vs_errbuf *eb)
{
    return vs_kube_request(k, "PATCH", path, "application/merge-patch+json", patch, out, eb);
}

enum vs_err vs_kube_post(struct vs_kube *k, const char *path, const json_t *body, json_t **out,
                         struct vs_errbuf *eb)
{
    return vs_kube_request(k, "POST", path, "application/json", body, out, eb);
}

enum vs_err vs_kube_put(struct vs_kube *k, const char *path, const json_t *body, json_t **out,
                        struct vs_errbuf *eb)
{
    return vs_kube_request(k, "PUT", path, "application/json", body, out, eb);
}

/* ------------------------------------------------------------------------------------------ */
/* LIST                                                                                       */

/* ---- LIST pages read without decoding every item (vs_kube_list_matching) ----
 * A page is {"kind":..,"apiVersion":..,"metadata":{..},"items":[{..},..]}. With a needle, the
 * page is scanned (strings and brackets only) for its members and its items' extents; only
 * items whose text contains the needle are decoded, and `metadata` is decoded on its own.
 * Anything the scan does not expect makes the caller decode the whole page instead. */

struct page_scan {
    const char *p, *end;
};

static void ps_ws(struct page_scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool ps_eat(struct page_scan *s, char c)
{
    ps_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* Skips one JSON value (any type) at s->p (vs_json_skip); jansson validates what is decoded. */
static bool ps_skip_value(struct page_scan *s)
{
    ps_ws(s);
    const char *e = vs_json_skip(s->p, s->end, SIZE_MAX);
    if (!e)
        return false;
    s->p = e;
    return true;
}

/* See kube_internal.h. Items are handed over only once the whole page has been scanned and
 * every matching item decoded, so a page is taken whole or not at all. */
int vs_kube_list_page_matching(const char *data, size_t len, const char *needle,
                               int (*on_item)(void *ctx, json_t *item), void *ctx,
                               json_t **meta_out, const char *who, enum vs_err *rc,
                               struct vs_errbuf *eb)
{
    struct page_scan s = {data, data + len};
    size_t nlen = strlen(needle), n = 0, cap = 0;
    struct span {
        const char *b;
        size_t len;
        json_t *item;
    } *spans = NULL;
    int result = 0;
    bool saw_items = false;
    *meta_out = NULL;
    if (!ps_eat(&s, '{') || ps_eat(&s, '}'))
        goto out;
    do {
        ps_ws(&s);
        const char *k = s.p;
        if (!ps_skip_value(&s) || *k != '"')
            goto out;
        size_t kl = (size_t)(s.p - k);
        if (!ps_eat(&s, ':'))
            goto out;
        ps_ws(&s);
        bool is_items = kl == 7 && memcmp(k, "\"items\"", 7) == 0;
        bool is_meta = kl == 10 && memcmp(k, "\"metadata\"", 10) == 0;
        if ((is_items && saw_items) || (is_meta && *meta_out))
            goto out; /* a repeated member: the decoder keeps the last one, leave it to it */
        if (is_items && s.p < s.end && *s.p == '[') {
            saw_items = true;
            s.p++;
            if (ps_eat(&s, ']'))
                continue;
            do {
                ps_ws(&s);
                const char *b = s.p;
                if (s.p >= s.end || *s.p != '{' || !ps_skip_value(&s))
                    goto out;
                if (!memmem(b, (size_t)(s.p - b), needle, nlen))
                    continue;
                if (n == cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    struct span *g = realloc(spans, nc * sizeof(*g));
                    if (!g) {
                        *rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
                        result = -1;
                        goto out;
                    }
                    spans = g;
                    cap = nc;
                }
                spans[n++] = (struct span){b, (size_t)(s.p - b), NULL};
            } while (ps_eat(&s, ','));
            if (!ps_eat(&s, ']'))
                goto out;
        } else if (is_meta && s.p < s.end && *s.p == '{') {
            const char *b = s.p;
            if (!ps_skip_value(&s) || !(*meta_out = json_loadb(b, (size_t)(s.p - b), 0, NULL)))
                goto out;
        } else if (!ps_skip_value(&s)) {
            goto out;
        }
    } while (ps_eat(&s, ','));
    if (!ps_eat(&s, '}'))
        goto out;
    ps_ws(&s);
    if (s.p != s.end || !saw_items) /* no items member: let the decoder judge the page */
        goto out;
    for (size_t i = 0; i < n; i++) {
        json_error_t je;
        if (!(spans[i].item = json_loadb(spans[i].b, spans[i].len, 0, &je))) {
            *rc = vs_err_set(eb, VS_ERR_PARSE, "%s: invalid JSON in an item: %s", who, je.text);
            result = -1;
            goto out;
        }
    }
    result = 1;
    for (size_t i = 0; i < n; i++) {
        if (on_item && on_item(ctx, spans[i].item) != 0) {
            *rc = vs_err_set(eb, VS_ERR_INVAL, "%s: stopped by the item handler", who);
            result = -1;
            break;
        }
    }
out:
    for (size_t i = 0; i < n; i++)
        json_decref(spans[i].item);
    free(spans);
    if (result != 1) {
        json_decref(*meta_out);
        *meta_out = NULL;
    }
    return result;
}

enum vs_err vs_kube_list(struct vs_kube *k, const char *path, const char *label_selector, int limit,
                         int (*on_item)(void *ctx, json_t *item), void *ctx, char **rv_out,
                         struct vs_errbuf *eb)
{
    return vs_kube_list_matching(k, path, label_selector, limit, NULL, on_item, ctx, rv_out, eb);
}

enum vs_err vs_kube_list_matching(struct vs_kube *k, const char *path, const char *label_selector,
                                  int limit, const char *needle,
                                  int (*on_item)(void *ctx, json_t *item), void *ctx, char **rv_out,
                                  struct vs_errbuf *eb)
{
    char who[320];
    char *cont = NULL, *rv = NULL;
    json_t *page = NULL;
    enum vs_err rc = VS_OK;

    if (rv_out)
        *rv_out = NULL;
    snprintf(who, sizeof(who), "LIST %s", path);
    if (!path || path[0] != '/')
        return vs_err_set(eb, VS_ERR_INVAL, "%s: path must start with /", who);
    do {
        struct vs_buf u;
        vs_buf_init(&u);
        vs_buf_printf(&u, "%s%s", k->server, path);
        if (limit > 0)
            vs_buf_printf(&u, "%climit=%d", strchr(path, '?') ? '&' : '?', limit);
        if (label_selector && *label_selector)
            url_param(&u, "labelSelector", label_selector);
        if (cont)
            url_param(&u, "continue", cont);
        char *url = vs_buf_steal(&u);
        if (!url) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
            break;
        }
        struct raw_body raw = {0};
        rc = perform(k, V_LIST, "GET", who, url, NULL, NULL, needle ? NULL : &page,
                     needle ? &raw : NULL, eb);
        free(url);
        if (rc != VS_OK)
            break;
        json_t *items, *meta;
        bool items_done = false;
        if (needle) {
            int r = raw.data ? vs_kube_list_page_matching(raw.data, raw.len, needle, on_item, ctx,
                                                          &page, who, &rc, eb)
                             : 0;
            if (r < 0) {
                free(raw.data);
                break;
            }
            if (r > 0) {
                items_done = true; /* `page` holds the decoded metadata only */
                meta = page;
                items = NULL;
            } else {
                json_error_t je;
                page = raw.len ? json_loadb(raw.data, raw.len, 0, &je) : NULL;
                if (raw.len && !page) {
                    rc = vs_err_set(eb, VS_ERR_PARSE,
                                    "%s: invalid JSON in the response at byte %d: %s", who,
                                    je.position, je.text);
                    free(raw.data);
                    break;
                }
            }
            free(raw.data);
        }
        if (!items_done) {
            items = json_object_get(page, "items");
            meta = json_object_get(page, "metadata");
            if (!json_is_object(page) || !(json_is_array(items) || json_is_null(items) || !items)) {
                rc = vs_err_set(eb, VS_ERR_PARSE, "%s: the response is not a list", who);
                break;
            }
        }
        const char *prv = json_string_value(json_object_get(meta, "resourceVersion"));
        if (!rv && prv && !(rv = strdup(prv))) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
            break;
        }
        size_t i;
        json_t *item;
        json_array_foreach(items, i, item)
        {
            if (on_item && on_item(ctx, item) != 0) {
                rc = vs_err_set(eb, VS_ERR_INVAL, "%s: stopped by the item handler", who);
                break;
            }
        }
        if (rc != VS_OK)
            break;
        const char *c = json_string_value(json_object_get(meta, "continue"));
        free(cont);
        cont = NULL;
        if (c && *c && !(cont = strdup(c))) {
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
            break;
        }
        json_decref(page);
        page = NULL;
    } while (cont);

    json_decref(page);
    free(cont);
    if (rc == VS_OK && rv_out)
        *rv_out = rv;
    else
        free(rv);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* WATCH                                                                                      */

struct watch_io {
    CURL *h;
    struct vs_watch_decoder dec;
    enum vs_err dec_rc;
    struct vs_errbuf dec_eb;
    int mode; /* 0 = status not looked at yet, 1 = event stream, 2 = error body */
    struct body err;
};

static size_t on_watch_data(char *p, size_t sz, size_t nm, void *ud)
{
    struct watch_io *w = ud;
    size_t n = sz * nm;
    if (w->mode == 0) {
        long status = 0;
        curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &status);
        w->mode = status >= 200 && status <= 299 ? 1 : 2;
    }
    if (w->mode == 2) {
        if (!body_append(&w->err, p, n)) /* keep what fits; the Status is at the start */
            w->err.too_big = false;
        return n;
    }
    w->dec_rc = vs_watch_decoder_feed(&w->dec, p, n, &w->dec_eb);
    return w->dec_rc == VS_OK ? n : 0;
}

/* Runs the transfer on a private multi handle so *stop is looked at every STOP_POLL_MS even
 * when the stream is idle. Returns the transfer's result; *was_stopped when *stop ended it. */
static CURLcode run_stoppable(CURL *h, volatile int *stop, bool *was_stopped)
{
    CURLM *m = curl_multi_init();
    CURLcode cc = CURLE_OK;
    int running = 1;

    *was_stopped = false;
    if (!m)
        return CURLE_OUT_OF_MEMORY;
    if (curl_multi_add_handle(m, h) != CURLM_OK) {
        curl_multi_cleanup(m);
        return CURLE_FAILED_INIT;
    }
    for (;;) {
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            cc = CURLE_RECV_ERROR;
            break;
        }
        if (!running) {
            int left;
            CURLMsg *msg;
            while ((msg = curl_multi_info_read(m, &left)))
                if (msg->msg == CURLMSG_DONE && msg->easy_handle == h)
                    cc = msg->data.result;
            break;
        }
        if (stopped(stop)) {
            *was_stopped = true;
            break;
        }
        if (curl_multi_poll(m, NULL, 0, STOP_POLL_MS, NULL) != CURLM_OK) {
            cc = CURLE_RECV_ERROR;
            break;
        }
    }
    curl_multi_remove_handle(m, h);
    curl_multi_cleanup(m);
    return cc;
}

static enum vs_err watch_once(struct vs_kube *k, const char *path, const char *label_selector,
                              char **rv_io, int timeout_s,
                              int (*on_event)(void *ctx, const char *type, json_t *obj), void *ctx,
                              volatile int *stop, uint64_t *events_out, struct vs_errbuf *eb)
{
    char who[320];
    bool auth_retried = false;
    enum vs_err rc = VS_OK;
    char *url = NULL;

    if (events_out)
        *events_out = 0;
    snprintf(who, sizeof(who), "WATCH %s", path);
    if (!path || path[0] != '/')
        return vs_err_set(eb, VS_ERR_INVAL, "%s: path must start with /", who);
    {
        struct vs_buf u;
        vs_buf_init(&u);
        vs_buf_printf(&u, "%s%s%cwatch=1&allowWatchBookmarks=true", k->server, path,
                      strchr(path, '?') ? '&' : '?');
        if (rv_io && *rv_io && **rv_io)
            url_param(&u, "resourceVersion", *rv_io);
        if (timeout_s > 0)
            vs_buf_printf(&u, "&timeoutSeconds=%d", timeout_s);
        if (label_selector && *label_selector)
            url_param(&u, "labelSelector", label_selector);
        if (!(url = vs_buf_steal(&u)))
            return vs_err_set(eb, VS_ERR_NOMEM, "%s: out of memory", who);
    }

    for (;;) {
        char errbuf[CURL_ERROR_SIZE];
        struct curl_slist *hdrs = NULL;
        struct head head = {.retry_after = -1};
        struct watch_io w = {.err = {.max = ERROR_BODY_MAX}};
        char *token = NULL;
        bool was_stopped = false;
        long status = 0;
        CURLcode cc;

        if ((rc = current_token(k, false, &token, NULL, eb)) != VS_OK) {
            vs_err_prefix(eb, rc, "%s", who);
            break;
        }
        take_limiter_token(k, stop);
        if (stopped(stop)) {
            free_secret(token);
            break;
        }
        if (!(w.h = handle_get(k))) {
            free_secret(token);
            rc = vs_err_set(eb, VS_ERR_NOMEM, "%s: cannot create a curl handle", who);
            break;
        }
        rc = setup_handle(k, w.h, url, token, NULL, &hdrs, errbuf, &head, eb);
        free_secret(token);
        if (rc != VS_OK) {
            handle_put(k, w.h);
            vs_err_prefix(eb, rc, "%s", who);
            break;
        }
        vs_watch_decoder_init(&w.dec, on_event, ctx, 0);
        if (rv_io && *rv_io && **rv_io)
            w.dec.rv = strdup(*rv_io);
        curl_easy_setopt(w.h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(w.h, CURLOPT_WRITEFUNCTION, on_watch_data);
        curl_easy_setopt(w.h, CURLOPT_WRITEDATA, &w);
        if (timeout_s > 0)
            curl_easy_setopt(w.h, CURLOPT_TIMEOUT, (long)(timeout_s + WATCH_GRACE_S));

        cc = run_stoppable(w.h, stop, &was_stopped);
        __atomic_add_fetch(&k->requests, 1, __ATOMIC_RELAXED);
        curl_easy_getinfo(w.h, CURLINFO_RESPONSE_CODE, &status);
        free_headers(hdrs);
        handle_put(k, w.h);
        bool clean =
            !was_stopped && w.dec_rc == VS_OK && cc == CURLE_OK && status >= 200 && status <= 299;
        if (clean)
            w.dec_rc = vs_watch_decoder_finish(&w.dec, &w.dec_eb);
        if (events_out)
            *events_out += w.dec.events;
        if (rv_io && w.dec.rv && (!*rv_io || strcmp(*rv_io, w.dec.rv) != 0)) {
            free(*rv_io);
            *rv_io = w.dec.rv;
            w.dec.rv = NULL;
        }

        bool retry = false;
        if (was_stopped) {
            rc = VS_OK;
        } else if (w.dec_rc != VS_OK) {
            rc = w.dec_rc;
            if (eb)
                *eb = w.dec_eb;
            vs_err_prefix(eb, rc, "%s", who);
        } else if (cc != CURLE_OK) {
            rc = curl_error(who, cc, errbuf, eb);
        } else if (status == 401 && k->token_file && !auth_retried) {
            bool changed = false;
            char *t = NULL;
            if (current_token(k, true, &t, &changed, NULL) == VS_OK && changed) {
                auth_retried = true;
                retry = true;
            } else {
                rc = status_error(who, status, head.phrase, w.err.data, w.err.len, eb);
            }
            free_secret(t);
        } else if (!clean) {
            rc = status_error(who, status, head.phrase, w.err.data, w.err.len, eb);
        }
        vs_watch_decoder_cleanup(&w.dec);
        free(w.err.data);
        if (!retry)
            break;
    }
    if (rc != VS_OK)
        count_error(k, V_WATCH);
    free(url);
    return rc;
}

enum vs_err vs_kube_watch(struct vs_kube *k, const char *path, const char *label_selector,
                          char **rv_io, int timeout_s,
                          int (*on_event)(void *ctx, const char *type, json_t *obj), void *ctx,
                          volatile int *stop, struct vs_errbuf *eb)
{
    return watch_once(k, path, label_selector, rv_io, timeout_s, on_event, ctx, stop, NULL, eb);
}

/* ------------------------------------------------------------------------------------------ */
/* informer                                                                                   */

struct informer {
    const struct vs_informer_handlers *h;
    void *ctx;
};

static int informer_item(void *ctx, json_t *item)
{
    struct informer *in = ctx;
    if (in->h->object)
        in->h->object(in->ctx, "ADDED", item);
    return 0;
}

static int informer_event(void *ctx, const char *type, json_t *obj)
{
    struct informer *in = ctx;
    if (in->h->object)
        in->h->object(in->ctx, type, obj);
    return 0;
}

struct backoff {
    double cur;
    unsigned seed;
};

static void backoff_sleep(struct backoff *b, volatile int *stop)
{
    double jitter = 0.8 + 0.4 * ((double)rand_r(&b->seed) / RAND_MAX);
    sleep_for(b->cur * jitter, stop);
    b->cur *= 2;
    if (b->cur > BACKOFF_MAX)
        b->cur = BACKOFF_MAX;
}

static void report(const struct vs_informer_handlers *h, void *ctx, enum vs_err rc,
                   const struct vs_errbuf *eb)
{
    if (h->error)
        h->error(ctx, rc, eb->msg);
}

void vs_kube_informer_run(struct vs_kube *k, const char *path, const char *label_selector,
                          const struct vs_informer_handlers *h, void *ctx, volatile int *stop)
{
    struct informer in = {.h = h, .ctx = ctx};
    struct backoff bo = {.cur = BACKOFF_MIN};
    struct vs_errbuf eb;
    bool need_list = true;
    int watch_failures = 0;
    char *rv = NULL;

    bo.seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&bo ^ (unsigned)(uintptr_t)pthread_self();
    while (!stopped(stop)) {
        if (need_list) {
            if (h->begin)
                h->begin(ctx);
            free(rv);
            rv = NULL;
            enum vs_err rc = vs_kube_list_matching(k, path, label_selector, INFORMER_PAGE,
                                                   h->list_needle, informer_item, &in, &rv, &eb);
            if (stopped(stop))
                break;
            if (rc != VS_OK) {
                report(h, ctx, rc, &eb);
                backoff_sleep(&bo, stop);
                continue;
            }
            if (h->synced)
                h->synced(ctx);
            bo.cur = BACKOFF_MIN;
            need_list = false;
            watch_failures = 0;
        }

        /* Like client-go: a random 5-10 minute server-side timeout spreads reconnects. */
        int timeout_s = 300 + rand_r(&bo.seed) % 300;
        uint64_t events = 0;
        double t0 = now_mono();
        enum vs_err rc = watch_once(k, path, label_selector, &rv, timeout_s, informer_event, &in,
                                    stop, &events, &eb);
        if (stopped(stop))
            break;
        if (events > 0) {
            bo.cur = BACKOFF_MIN;
            watch_failures = 0;
        }
        if (rc == VS_OK) {
            if (events == 0 && now_mono() - t0 < HEALTHY_WATCH_S)
                backoff_sleep(&bo, stop); /* a server that ends watches at once: no hot loop */
            else {
                bo.cur = BACKOFF_MIN;
                watch_failures = 0;
            }
            continue;
        }
        report(h, ctx, rc, &eb);
        if (rc == VS_ERR_GONE) {
            need_list = true;
            if (events == 0)
                backoff_sleep(&bo, stop);
            continue;
        }
        /* First failure: resume from the last resourceVersion; a second in a row: relist. */
        if (++watch_failures > 1)
            need_list = true;
        backoff_sleep(&bo, stop);
    }
    free(rv);
}

/* ------------------------------------------------------------------------------------------ */

char *vs_kube_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1), *p = out;
    if (!out)
        return NULL;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '.' || *c == '_' || *c == '~') {
            *p++ = (char)*c;
        } else {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    }
    *p = '\0';
    return out;
}
