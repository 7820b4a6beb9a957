/* test_kube: the kube-apiserver client against the in-process fake API (tests/fakeapi):
 * kubeconfig and in-cluster configuration, request/response and Status error mapping with
 * exact messages, pagination, watch streams, the informer's relist/resume rules, token-file
 * rotation, TLS material in memory, and the limiter's token math on an injected clock. Tests
 * wait for asynchronous effects with generous deadlines and never assert wall time. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fakeapi.h"
#include "kube.h"
#include "kube_internal.h"

#define WAIT_MS 10000

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                    */

static char *mkdir_tmp(void)
{
    char *d = strdup("/tmp/vs-kube-XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

static void rm_tree(char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* Writes dir/name (creating dir/sub for "sub/x"); returns the full path (free()). */
static char *write_at(const char *dir, const char *name, const char *content)
{
    char *path;
    cr_assert_geq(asprintf(&path, "%s/%s", dir, name), 0);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, 0700);
    *slash = '/';
    char *tmp;
    cr_assert_geq(asprintf(&tmp, "%s.tmp", path), 0);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f, "%s: %s", tmp, strerror(errno));
    fputs(content, f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, path), 0); /* atomic, like the kubelet's token swap */
    free(tmp);
    return path;
}

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

static struct vs_fakeapi *fake(const struct vs_fakeapi_opts *o)
{
    struct vs_fakeapi_opts def = {.quiet = true};
    struct vs_fakeapi *api = vs_fakeapi_start(o ? o : &def);
    cr_assert_not_null(api);
    return api;
}

static struct vs_kube *client_cfg(struct vs_kube_config *cfg, int timeout_s)
{
    struct vs_kube_opts o = {.qps = 0, .burst = 0, .timeout_s = timeout_s, .user_agent = "test"};
    struct vs_errbuf eb = {{0}};
    struct vs_kube *k = vs_kube_new(cfg, &o, &eb);
    cr_assert_not_null(k, "%s", eb.msg);
    return k;
}

static struct vs_kube *client(struct vs_fakeapi *api, const char *token, const char *token_file)
{
    struct vs_kube_config cfg = {.server = (char *)vs_fakeapi_url(api),
                                 .token = (char *)token,
                                 .token_file = (char *)token_file};
    return client_cfg(&cfg, 10);
}

static uint64_t put_pod(struct vs_fakeapi *api, const char *ns, const char *name,
                        const char *labels, const char *node)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":%s},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\"}]}}",
             name, ns, labels ? labels : "{}", node ? node : "");
    uint64_t rv = vs_fakeapi_put(api, buf);
    cr_assert_neq(rv, 0);
    return rv;
}

static const char *jstr(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

static const char *ann(const json_t *o, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"), key));
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Criterion runs each parameterized case in a fresh process: parameter tables and their
 * strings must live in its shared memory (cr_malloc). */
static char *shared_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = cr_malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

/* A thread-safe list of lines recorded by handlers. */
struct rec {
    pthread_mutex_t mu;
    char *lines[4096];
    size_t n;
};

static void rec_init(struct rec *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
}

static void rec_cleanup(struct rec *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->lines[i]);
    pthread_mutex_destroy(&r->mu);
}

static void rec_add(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rec_add(struct rec *r, const char *fmt, ...)
{
    char *line;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&line, fmt, ap) < 0)
        line = NULL;
    va_end(ap);
    pthread_mutex_lock(&r->mu);
    if (line && r->n < sizeof(r->lines) / sizeof(r->lines[0]))
        r->lines[r->n++] = line;
    else
        free(line);
    pthread_mutex_unlock(&r->mu);
}

static size_t rec_count(struct rec *r, const char *prefix)
{
    size_t n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n; i++)
        if (strncmp(r->lines[i], prefix, strlen(prefix)) == 0)
            n++;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static bool rec_wait(struct rec *r, const char *prefix, size_t n)
{
    for (int waited = 0; waited < WAIT_MS; waited += 10) {
        if (rec_count(r, prefix) >= n)
            return true;
        sleep_ms(10);
    }
    return false;
}

/* Lines joined by '\n', leaving out lines starting with `skip` (NULL = none). */
static char *rec_join(struct rec *r, const char *skip)
{
    size_t len = 1;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n; i++)
        len += strlen(r->lines[i]) + 1;
    char *out = calloc(1, len);
    for (size_t i = 0; i < r->n; i++) {
        if (skip && strncmp(r->lines[i], skip, strlen(skip)) == 0)
            continue;
        if (*out)
            strcat(out, "\n");
        strcat(out, r->lines[i]);
    }
    pthread_mutex_unlock(&r->mu);
    return out;
}

static const char *obj_key(const json_t *o, char *buf, size_t n)
{
    const char *ns = jstr(o, "metadata", "namespace"), *name = jstr(o, "metadata", "name");
    snprintf(buf, n, "%s/%s", ns ? ns : "", name ? name : "?");
    return buf;
}

/* ------------------------------------------------------------------------------------------ */
/* kubeconfig                                                                                 */

Test(config, kubeconfig_inline_data_and_token)
{
    char *dir = mkdir_tmp();
    char *ca = b64("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
    char *cert = b64("CERT PEM\n");
    char *key = b64("KEY PEM\n");
    char text[4096];
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
             "clusters:\n"
             "- name: other\n  cluster: {server: https://other:1}\n"
             "- name: dev-cluster\n  cluster:\n    server: https://203.0.113.10:6443/\n"
             "    certificate-authority-data: %s\n"
             "users:\n- name: dev-admin\n  user:\n    client-certificate-data: %s\n"
             "    client-key-data: %s\n    token: abc.def\n"
             "contexts:\n- name: other\n  context: {cluster: other}\n"
             "- name: dev\n  context:\n    cluster: dev-cluster\n    user: dev-admin\n"
             "    namespace: ml\n",
             ca, cert, key);
    char *path = write_at(dir, "config", text);
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};

    cr_assert_eq(vs_kube_config_load(path, &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.server, "https://203.0.113.10:6443");
    cr_assert_str_eq(c.ca_data, "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
    cr_assert_null(c.ca_file);
    cr_assert_str_eq(c.cert_data, "CERT PEM\n");
    cr_assert_str_eq(c.key_data, "KEY PEM\n");
    cr_assert_null(c.cert_file);
    cr_assert_null(c.key_file);
    cr_assert_str_eq(c.token, "abc.def");
    cr_assert_null(c.token_file);
    cr_assert_not(c.insecure);
    cr_assert_str_eq(c.namespace, "ml");
    vs_kube_config_cleanup(&c);
    cr_assert_null(c.server);
    vs_kube_config_cleanup(NULL);
    free(ca);
    free(cert);
    free(key);
    free(path);
    rm_tree(dir);
}

Test(config, kubeconfig_files_relative_to_the_kubeconfig)
{
    char *dir = mkdir_tmp();
    char *abs_cert = write_at(dir, "certs/client.crt", "CERT");
    free(write_at(dir, "kube/ca.crt", "CA"));
    free(write_at(dir, "kube/client.key", "KEY"));
    free(write_at(dir, "kube/token", "tok\n"));
    char text[2048];
    snprintf(text, sizeof(text),
             "current-context: c\n"
             "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1', "
             "certificate-authority: ca.crt, insecure-skip-tls-verify: true}}]\n"
             "users: [{name: u, user: {client-certificate: %s, client-key: client.key, "
             "tokenFile: token}}]\n"
             "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
             abs_cert);
    char *path = write_at(dir, "kube/config", text);
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    char want[512];

    cr_assert_eq(vs_kube_config_load(path, &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.server, "http://127.0.0.1:1");
    snprintf(want, sizeof(want), "%s/kube/ca.crt", dir);
    cr_assert_str_eq(c.ca_file, want);
    cr_assert_str_eq(c.cert_file, abs_cert);
    snprintf(want, sizeof(want), "%s/kube/client.key", dir);
    cr_assert_str_eq(c.key_file, want);
    snprintf(want, sizeof(want), "%s/kube/token", dir);
    cr_assert_str_eq(c.token_file, want);
    cr_assert_null(c.token);
    cr_assert(c.insecure);
    cr_assert_str_eq(c.namespace, "default");
    vs_kube_config_cleanup(&c);
    free(abs_cert);
    free(path);
    rm_tree(dir);
}

Test(config, token_wins_over_token_file)
{
    char *dir = mkdir_tmp();
    char *path = write_at(dir, "config",
                          "current-context: c\n"
                          "clusters: [{name: k, cluster: {server: 'https://h:6443'}}]\n"
                          "users: [{name: u, user: {token: inline, tokenFile: /nonexistent}}]\n"
                          "contexts: [{name: c, context: {cluster: k, user: u, namespace: x}}]\n");
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_kube_config_load(path, &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.token, "inline");
    cr_assert_null(c.token_file);
    cr_assert_str_eq(c.namespace, "x");
    vs_kube_config_cleanup(&c);
    free(path);
    rm_tree(dir);
}

Test(config, missing_context_names_file_and_context)
{
    char *dir = mkdir_tmp();
    char *path = write_at(dir, "config",
                          "current-context: foo\n"
                          "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
                          "contexts: [{name: bar, context: {cluster: k}}]\n");
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    char want[512];
    cr_assert_eq(vs_kube_config_load(path, &c, &eb), VS_ERR_INVAL);
    snprintf(want, sizeof(want), "kubeconfig %s: context \"foo\" not found", path);
    cr_assert_str_eq(eb.msg, want);
    cr_assert_null(c.server);
    free(path);
    rm_tree(dir);
}

struct cfgcase {
    const char *yaml;
    enum vs_err code;
    const char *msg; /* "%s" stands for the kubeconfig path */
};

static void free_cfgcases(struct criterion_test_params *p)
{
    struct cfgcase *c = p->params;
    for (size_t i = 0; i < p->length; i++) {
        cr_free((void *)c[i].yaml);
        cr_free((void *)c[i].msg);
    }
    cr_free(c);
}

ParameterizedTestParameters(config, errors)
{
    static const struct cfgcase cases[] = {
        {"clusters: []\n", VS_ERR_INVAL, "kubeconfig %s: current-context is not set"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: nope}}]\n", VS_ERR_INVAL,
         "kubeconfig %s: cluster \"nope\" not found"},
        {"current-context: c\ncontexts: [{name: c, context: {user: u}}]\n", VS_ERR_INVAL,
         "kubeconfig %s: context \"c\": cluster is not set"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
         "clusters: [{name: k, cluster: {insecure-skip-tls-verify: true}}]\n",
         VS_ERR_INVAL, "kubeconfig %s: cluster \"k\": server is not set"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
         "clusters: [{name: k, cluster: {server: 'ftp://h'}}]\n",
         VS_ERR_INVAL, "kubeconfig %s: cluster \"k\": server \"ftp://h\" is not an http(s) URL"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
         "clusters: [{name: k, cluster: {server: 'https://h', certificate-authority-data: "
         "'!!'}}]\n",
         VS_ERR_PARSE,
         "kubeconfig %s: cluster \"k\": certificate-authority-data is not valid base64"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
         "clusters: [{name: k, cluster: {server: 'https://h', insecure-skip-tls-verify: maybe}}]\n",
         VS_ERR_PARSE,
         "kubeconfig %s: cluster \"k\": insecure-skip-tls-verify must be true or false, not "
         "\"maybe\""},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
         "clusters: [{name: k, cluster: {server: 'https://h'}}]\n",
         VS_ERR_INVAL, "kubeconfig %s: user \"u\" not found"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
         "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
         "users: [{name: u, user: {exec: {command: aws}}}]\n",
         VS_ERR_INVAL,
         "kubeconfig %s: user \"u\": exec credentials are not supported (use token, tokenFile or "
         "a client certificate)"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
         "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
         "users: [{name: u, user: {client-key-data: S0VZ}}]\n",
         VS_ERR_INVAL, "kubeconfig %s: user \"u\": client key without client certificate"},
        {"current-context: c\ncontexts: {c: 1}\n", VS_ERR_PARSE,
         "kubeconfig %s: contexts must be a list"},
        {"- a\n- b\n", VS_ERR_PARSE, "kubeconfig %s: top level must be a map"},
        {"current-context: [\n", VS_ERR_PARSE,
         "kubeconfig %s: line 2 column 1: did not find expected node content"},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    struct cfgcase *shared = cr_malloc(n * sizeof(*shared));
    for (size_t i = 0; shared && i < n; i++) {
        shared[i].yaml = shared_str(cases[i].yaml);
        shared[i].code = cases[i].code;
        shared[i].msg = shared_str(cases[i].msg);
    }
    return cr_make_param_array(struct cfgcase, shared, n, free_cfgcases);
}

ParameterizedTest(struct cfgcase *tc, config, errors)
{
    char *dir = mkdir_tmp();
    char *path = write_at(dir, "config", tc->yaml);
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    char want[512];
    cr_assert_eq(vs_kube_config_load(path, &c, &eb), tc->code, "%s", eb.msg);
    snprintf(want, sizeof(want), tc->msg, path);
    cr_assert_str_eq(eb.msg, want);
    free(path);
    rm_tree(dir);
}

Test(config, unreadable_certificate_file)
{
    char *dir = mkdir_tmp();
    char *path = write_at(dir, "config",
                          "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                          "clusters: [{name: k, cluster: {server: 'https://h', "
                          "certificate-authority: missing.crt}}]\n");
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    char want[1024];
    cr_assert_eq(vs_kube_config_load(path, &c, &eb), VS_ERR_IO);
    snprintf(want, sizeof(want),
             "kubeconfig %s: cluster \"k\": certificate-authority %s/missing.crt: No such file or "
             "directory",
             path, dir);
    cr_assert_str_eq(eb.msg, want);
    free(path);
    rm_tree(dir);
}

Test(config, missing_explicit_file)
{
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_kube_config_load("/nonexistent/kubeconfig", &c, &eb), VS_ERR_IO);
    cr_assert_str_eq(eb.msg, "kubeconfig /nonexistent/kubeconfig: No such file or directory");
}

Test(config, kubeconfig_env_list_first_file_wins)
{
    char *dir = mkdir_tmp();
    char *a = write_at(dir, "a",
                       "current-context: c\n"
                       "clusters: [{name: k, cluster: {server: 'https://first'}}]\n");
    char *b = write_at(dir, "b",
                       "current-context: ignored\n"
                       "clusters: [{name: k, cluster: {server: 'https://second'}}]\n"
                       "contexts: [{name: c, context: {cluster: k, namespace: nb}}]\n");
    char env[1024];
    snprintf(env, sizeof(env), "%s:%s/missing:%s", a, dir, b);
    setenv("KUBECONFIG", env, 1);
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_kube_config_load(NULL, &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.server, "https://first");
    cr_assert_str_eq(c.namespace, "nb");
    vs_kube_config_cleanup(&c);

    snprintf(env, sizeof(env), "%s/missing", dir);
    setenv("KUBECONFIG", env, 1);
    cr_assert_eq(vs_kube_config_load("", &c, &eb), VS_ERR_IO);
    char want[1024];
    snprintf(want, sizeof(want), "KUBECONFIG=%s/missing: no such file", dir);
    cr_assert_str_eq(eb.msg, want);
    free(a);
    free(b);
    rm_tree(dir);
}

static void no_kubeconfig_env(const char *home)
{
    unsetenv("KUBECONFIG");
    setenv("HOME", home, 1);
}

Test(config, in_cluster_from_service_account_dir)
{
    char *dir = mkdir_tmp();
    free(write_at(dir, "sa/token", "  sa-token\n"));
    free(write_at(dir, "sa/ca.crt", "CA"));
    free(write_at(dir, "sa/namespace", "kube-system\n"));
    char sa[512], want[600];
    snprintf(sa, sizeof(sa), "%s/sa", dir);
    no_kubeconfig_env(dir);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    setenv("VS_SA_DIR", sa, 1);
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_kube_config_load(NULL, &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.server, "https://10.96.0.1:443");
    snprintf(want, sizeof(want), "%s/token", sa);
    cr_assert_str_eq(c.token_file, want);
    cr_assert_null(c.token);
    snprintf(want, sizeof(want), "%s/ca.crt", sa);
    cr_assert_str_eq(c.ca_file, want);
    cr_assert_str_eq(c.namespace, "kube-system");
    cr_assert_not(c.insecure);
    vs_kube_config_cleanup(&c);
    rm_tree(dir);
}

Test(config, in_cluster_ipv6_and_default_namespace)
{
    char *dir = mkdir_tmp();
    free(write_at(dir, "sa/token", "t"));
    free(write_at(dir, "sa/ca.crt", "CA"));
    char sa[512];
    snprintf(sa, sizeof(sa), "%s/sa", dir);
    no_kubeconfig_env(dir);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    setenv("VS_SA_DIR", sa, 1);
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_kube_config_load(NULL, &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.server, "https://[fd00::1]:6443");
    cr_assert_str_eq(c.namespace, "default");
    vs_kube_config_cleanup(&c);
    rm_tree(dir);
}

Test(config, in_cluster_errors)
{
    char *dir = mkdir_tmp();
    char sa[512], want[1024];
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    snprintf(sa, sizeof(sa), "%s/sa", dir);
    no_kubeconfig_env(dir);
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    cr_assert_eq(vs_kube_config_load(NULL, &c, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not "
                             "in a cluster (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT "
                             "unset)");

    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("VS_SA_DIR", sa, 1);
    cr_assert_eq(vs_kube_config_load(NULL, &c, &eb), VS_ERR_AUTH);
    snprintf(want, sizeof(want), "in-cluster: token file %s/token: No such file or directory", sa);
    cr_assert_str_eq(eb.msg, want);

    free(write_at(dir, "sa/token", "\n"));
    cr_assert_eq(vs_kube_config_load(NULL, &c, &eb), VS_ERR_AUTH);
    snprintf(want, sizeof(want), "in-cluster: token file %s/token: empty", sa);
    cr_assert_str_eq(eb.msg, want);

    free(write_at(dir, "sa/token", "t"));
    cr_assert_eq(vs_kube_config_load(NULL, &c, &eb), VS_ERR_IO);
    snprintf(want, sizeof(want), "in-cluster: %s/ca.crt: No such file or directory", sa);
    cr_assert_str_eq(eb.msg, want);
    rm_tree(dir);
}

Test(config, home_kubeconfig_before_in_cluster)
{
    char *dir = mkdir_tmp();
    free(write_at(dir, ".kube/config",
                  "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                  "clusters: [{name: k, cluster: {server: 'https://home'}}]\n"));
    no_kubeconfig_env(dir);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    struct vs_kube_config c;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_kube_config_load(NULL, &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.server, "https://home");
    vs_kube_config_cleanup(&c);
    rm_tree(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* requests                                                                                   */

Test(request, create_get_patch, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    json_t *pod =
        json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:[{s:s}]}}", "apiVersion", "v1", "kind", "Pod",
                  "metadata", "name", "p", "labels", "app", "a", "spec", "containers", "name", "c");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods", pod, &out, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_str_eq(jstr(out, "metadata", "namespace"), "ml");
    cr_assert_not_null(jstr(out, "metadata", "uid"));
    char *rv = strdup(jstr(out, "metadata", "resourceVersion"));
    json_decref(out);

    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods", pod, &out, &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg, "POST /api/v1/namespaces/ml/pods: 409 pods \"p\" already exists");
    cr_assert_null(out);
    json_decref(pod);

    cr_assert_eq(vs_kube_get(k, "/api/v1/namespaces/ml/pods/p", &out, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(jstr(out, "metadata", "resourceVersion"), rv);
    json_decref(out);

    json_t *patch = json_pack("{s:{s:{s:s},s:{s:n}}}", "metadata", "annotations",
                              "hami.io/vgpu-node", "n1", "labels", "app");
    cr_assert_eq(vs_kube_merge_patch(k, "/api/v1/namespaces/ml/pods/p", patch, &out, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_str_eq(ann(out, "hami.io/vgpu-node"), "n1");
    cr_assert_null(
        json_object_get(json_object_get(json_object_get(out, "metadata"), "labels"), "app"));
    cr_assert_str_neq(jstr(out, "metadata", "resourceVersion"), rv);
    json_decref(out);
    json_decref(patch);

    /* A merge patch that names the resourceVersion it was based on is conditional. */
    patch =
        json_pack("{s:{s:s,s:{s:s}}}", "metadata", "resourceVersion", rv, "annotations", "x", "y");
    cr_assert_eq(vs_kube_merge_patch(k, "/api/v1/namespaces/ml/pods/p", patch, &out, &eb),
                 VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg,
                     "PATCH /api/v1/namespaces/ml/pods/p: 409 Operation cannot be fulfilled on "
                     "pods \"p\": the object has been modified; please apply your changes to the "
                     "latest version and try again");
    json_decref(patch);
    json_t *cur = vs_fakeapi_get(api, "Pod", "ml", "p");
    cr_assert_null(ann(cur, "x"));
    patch = json_pack("{s:{s:s,s:{s:s}}}", "metadata", "resourceVersion",
                      jstr(cur, "metadata", "resourceVersion"), "annotations", "x", "y");
    cr_assert_eq(vs_kube_merge_patch(k, "/api/v1/namespaces/ml/pods/p/status", patch, NULL, &eb),
                 VS_OK, "%s", eb.msg);
    json_decref(patch);
    json_decref(cur);
    cur = vs_fakeapi_get(api, "Pod", "ml", "p");
    cr_assert_str_eq(ann(cur, "x"), "y");
    cr_assert_str_eq(ann(cur, "hami.io/vgpu-node"), "n1");
    json_decref(cur);

    cr_assert_eq(
        vs_kube_request(k, "DELETE", "/api/v1/namespaces/ml/pods/p", NULL, NULL, NULL, &eb), VS_OK,
        "%s", eb.msg);
    cr_assert_null(vs_fakeapi_get(api, "Pod", "ml", "p"));
    free(rv);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, status_errors_map_with_exact_messages, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    cr_assert_eq(vs_kube_get(k, "/api/v1/namespaces/default/pods/nope", &out, &eb),
                 VS_ERR_NOTFOUND);
    cr_assert_str_eq(eb.msg,
                     "GET /api/v1/namespaces/default/pods/nope: 404 pods \"nope\" not found");
    cr_assert_null(out);

    cr_assert_eq(vs_kube_get(k, "/api/v1/widgets", &out, &eb), VS_ERR_NOTFOUND);
    cr_assert_str_eq(eb.msg,
                     "GET /api/v1/widgets: 404 the server could not find the requested resource");

    vs_fakeapi_fault(api, "GET", "/api/v1/nodes", 410, 1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_GONE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 410 injected fault");

    vs_fakeapi_fault(api, "GET", "/api/v1/nodes", 403, 1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_AUTH);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 403 injected fault");

    vs_fakeapi_fault(api, "PATCH", "/api/v1/nodes/n1", 500, 1);
    json_t *patch = json_object();
    cr_assert_eq(vs_kube_merge_patch(k, "/api/v1/nodes/n1", patch, NULL, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "PATCH /api/v1/nodes/n1: 500 injected fault");
    json_decref(patch);

    /* No Status body: the reason phrase stands in for the message. */
    vs_fakeapi_fault_body(api, "GET", "/api/v1/nodes", 503, 1, "", -1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 503 Service Unavailable");
    vs_fakeapi_fault_body(api, "GET", "/api/v1/nodes", 502, 1, "<html>proxy</html>", -1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 502 Bad Gateway");

    /* A 2xx that is not JSON. */
    vs_fakeapi_fault_body(api, "GET", "/api/v1/nodes", 200, 1, "nope", -1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: invalid JSON in the response at byte 4: "
                             "'[' or '{' expected near 'nope'");

    struct vs_kube_stats st;
    vs_kube_stats(k, &st);
    cr_assert_eq(st.requests, 8);
    cr_assert_eq(st.errors_by_verb[0], 7); /* GET */
    cr_assert_eq(st.errors_by_verb[3], 1); /* PATCH */
    cr_assert_eq(st.errors_by_verb[1] + st.errors_by_verb[2] + st.errors_by_verb[4] +
                     st.errors_by_verb[5],
                 0);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, retry_after_429_is_honoured, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    vs_fakeapi_fault_body(api, "LIST", "/api/v1/nodes", 429, 2, NULL, 0);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(jstr(out, "kind", NULL), "NodeList");
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/nodes"), 3);
    json_decref(out);

    /* Without Retry-After a 429 is an error like any other. */
    vs_fakeapi_fault(api, "GET", "/api/v1/nodes", 429, 1);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_KUBE);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 429 injected fault");
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, binding_rules, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    put_pod(api, "ml", "trainer-0", NULL, NULL);
    json_t *pod = vs_fakeapi_get(api, "Pod", "ml", "trainer-0");
    const char *uid = jstr(pod, "metadata", "uid");

    json_t *bad = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                            "Binding", "metadata", "name", "trainer-0", "uid", "other-uid",
                            "target", "kind", "Node", "name", "node-a");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods/trainer-0/binding", bad, &out, &eb),
                 VS_ERR_CONFLICT);
    char want[512];
    snprintf(want, sizeof(want),
             "POST /api/v1/namespaces/ml/pods/trainer-0/binding: 409 Operation cannot be "
             "fulfilled on pods/binding \"trainer-0\": Precondition failed: UID in precondition: "
             "other-uid, UID in object meta: %s",
             uid);
    cr_assert_str_eq(eb.msg, want);
    json_decref(bad);

    json_t *b =
        json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                  "Binding", "metadata", "name", "trainer-0", "uid", uid, "annotations",
                  "hami.io/bind-phase", "success", "target", "kind", "Node", "name", "node-a");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods/trainer-0/binding", b, &out, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_str_eq(jstr(out, "status", NULL), "Success");
    json_decref(out);
    json_t *now = vs_fakeapi_get(api, "Pod", "ml", "trainer-0");
    cr_assert_str_eq(jstr(now, "spec", "nodeName"), "node-a");
    cr_assert_str_eq(ann(now, "hami.io/bind-phase"), "success");
    json_decref(now);

    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods/trainer-0/binding", b, &out, &eb),
                 VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg, "POST /api/v1/namespaces/ml/pods/trainer-0/binding: 409 Operation "
                             "cannot be fulfilled on pods/binding \"trainer-0\": pod trainer-0 "
                             "is already assigned to node \"node-a\"");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/pods/gone/binding", b, &out, &eb),
                 VS_ERR_NOTFOUND);
    cr_assert_str_eq(eb.msg,
                     "POST /api/v1/namespaces/ml/pods/gone/binding: 404 pods \"gone\" not found");
    json_decref(b);
    json_decref(pod);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, lease_put_is_conditional, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;
    const char *coll = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
    const char *item = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vgpu";

    cr_assert_eq(vs_kube_get(k, item, &out, &eb), VS_ERR_NOTFOUND);
    cr_assert_str_eq(eb.msg, "GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
                             "vgpu: 404 leases.coordination.k8s.io \"vgpu\" not found");
    json_t *lease = json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:i}}", "apiVersion",
                              "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "vgpu",
                              "spec", "holderIdentity", "a", "leaseDurationSeconds", 15);
    cr_assert_eq(vs_kube_post(k, coll, lease, &out, &eb), VS_OK, "%s", eb.msg);
    json_t *stale = json_deep_copy(out);
    json_decref(out);
    json_decref(lease);

    json_object_set_new(json_object_get(stale, "spec"), "holderIdentity", json_string("b"));
    cr_assert_eq(vs_kube_put(k, item, stale, &out, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(jstr(out, "spec", "holderIdentity"), "b");
    json_decref(out);
    /* The same resourceVersion again is now stale. */
    cr_assert_eq(vs_kube_put(k, item, stale, &out, &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg,
                     "PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vgpu: 409 "
                     "Operation cannot be fulfilled on leases.coordination.k8s.io \"vgpu\": the "
                     "object has been modified; please apply your changes to the latest version "
                     "and try again");
    json_decref(stale);

    json_t *ev = json_pack("{s:s,s:s,s:{s:s},s:s,s:s}", "apiVersion", "v1", "kind", "Event",
                           "metadata", "name", "p.1", "reason", "GPUAssigned", "type", "Normal");
    cr_assert_eq(vs_kube_post(k, "/api/v1/namespaces/ml/events", ev, NULL, &eb), VS_OK, "%s",
                 eb.msg);
    json_decref(ev);
    json_t *got = vs_fakeapi_get(api, "Event", "ml", "p.1");
    cr_assert_str_eq(jstr(got, "reason", NULL), "GPUAssigned");
    json_decref(got);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(request, transport_errors, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    char url[64];
    snprintf(url, sizeof(url), "%s", vs_fakeapi_url(api));
    vs_fakeapi_delay(api, "GET", "/api/v1/nodes/slow", 3000);
    struct vs_kube_config cfg = {.server = url};
    struct vs_kube *k = client_cfg(&cfg, 1);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes/slow", &out, &eb), VS_ERR_TIMEOUT);
    cr_assert(strncmp(eb.msg, "GET /api/v1/nodes/slow: Operation timed out", 43) == 0, "%s",
              eb.msg);
    vs_fakeapi_stop(api);

    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_KUBE);
    cr_assert(strncmp(eb.msg, "GET /api/v1/nodes: Failed to connect to 127.0.0.1 port", 54) == 0,
              "%s", eb.msg);
    cr_assert_eq(vs_kube_get(k, "api/v1/nodes", &out, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "GET api/v1/nodes: path must start with /");
    vs_kube_free(k);
}

Test(request, new_rejects_bad_server)
{
    struct vs_kube_config cfg = {.server = "ftp://x"};
    struct vs_errbuf eb = {{0}};
    cr_assert_null(vs_kube_new(&cfg, NULL, &eb));
    cr_assert_str_eq(eb.msg, "kube: server \"ftp://x\" is not an http(s) URL");
    cfg.server = "https://x";
    cfg.token_file = "/nonexistent/token";
    cr_assert_null(vs_kube_new(&cfg, NULL, &eb));
    cr_assert_str_eq(eb.msg, "token file /nonexistent/token: No such file or directory");
    vs_kube_free(NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* bearer tokens                                                                              */

Test(token, rotation_is_picked_up_after_a_401, .timeout = 30)
{
    struct vs_fakeapi_opts o = {.quiet = true, .token = "token-A"};
    struct vs_fakeapi *api = fake(&o);
    char *dir = mkdir_tmp();
    char *tf = write_at(dir, "token", "token-A\n");
    struct vs_kube *k = client(api, NULL, tf);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    json_decref(out);

    /* The kubelet rotates the token: the server accepts only B, the file now holds B. */
    vs_fakeapi_set_token(api, "token-B");
    free(write_at(dir, "token", "token-B\n"));
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    json_decref(out);
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes"), 3); /* 200, 401, 200 */

    /* Watches re-read too. */
    vs_fakeapi_set_token(api, "token-C");
    free(write_at(dir, "token", "token-C"));
    char *rv = NULL;
    cr_assert_eq(vs_kube_watch(k, "/api/v1/nodes", NULL, &rv, 1, NULL, NULL, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_eq(vs_fakeapi_count(api, "WATCH", "/api/v1/nodes"), 2);
    free(rv);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
    free(tf);
    rm_tree(dir);
}

Test(token, auth_failure_is_clear, .timeout = 30)
{
    struct vs_fakeapi_opts o = {.quiet = true, .token = "right"};
    struct vs_fakeapi *api = fake(&o);
    char *dir = mkdir_tmp();
    char *tf = write_at(dir, "token", "wrong");
    struct vs_kube *k = client(api, NULL, tf);
    struct vs_errbuf eb = {{0}};
    json_t *out = NULL;

    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_AUTH);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 401 Unauthorized");
    /* The file did not change, so the request is not repeated. */
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes"), 1);
    char *rv = NULL;
    cr_assert_eq(vs_kube_watch(k, "/api/v1/pods", NULL, &rv, 1, NULL, NULL, NULL, &eb),
                 VS_ERR_AUTH);
    cr_assert_str_eq(eb.msg, "WATCH /api/v1/pods: 401 Unauthorized");
    cr_assert_null(rv);
    vs_kube_free(k);

    k = client(api, "static-wrong", NULL);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_ERR_AUTH);
    cr_assert_str_eq(eb.msg, "GET /api/v1/nodes: 401 Unauthorized");
    vs_kube_free(k);
    k = client(api, "right", NULL);
    cr_assert_eq(vs_kube_get(k, "/api/v1/nodes", &out, &eb), VS_OK, "%s", eb.msg);
    json_decref(out);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
    free(tf);
    rm_tree(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* TLS with PEM material in memory                                                            */

/* A self-signed P-256 certificate for 127.0.0.1 (it is its own CA). */
static void make_cert(const char *cn, char **cert_pem, char **key_pem)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509V3_CTX ctx;
    cr_assert_not_null(pk);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pk);
    X509_NAME *nm = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, nm);
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *e =
        X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    cr_assert(X509_sign(x, pk, EVP_sha256()) > 0);

    BIO *b = BIO_new(BIO_s_mem());
    char *p;
    PEM_write_bio_X509(b, x);
    long n = BIO_get_mem_data(b, &p);
    *cert_pem = strndup(p, (size_t)n);
    BIO_free(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, pk, NULL, NULL, 0, NULL, NULL);
    n = BIO_get_mem_data(b, &p);
    *key_pem = strndup(p, (size_t)n);
    BIO_free(b);
    X509_free(x);
    EVP_PKEY_free(pk);
}

struct tls_env {
    char *dir, *srv_cert, *srv_key, *cli_cert, *cli_key, *cert_path, *key_path;
    struct vs_fakeapi *api;
};

static void tls_up(struct tls_env *t)
{
    memset(t, 0, sizeof(*t));
    t->dir = mkdir_tmp();
    make_cert("127.0.0.1", &t->srv_cert, &t->srv_key);
    make_cert("client", &t->cli_cert, &t->cli_key);
    t->cert_path = write_at(t->dir, "srv.crt", t->srv_cert);
    t->key_path = write_at(t->dir, "srv.key", t->srv_key);
    struct vs_fakeapi_opts o = {
        .quiet = true, .tls_cert_file = t->cert_path, .tls_key_file = t->key_path};
    t->api = fake(&o);
    cr_assert_eq(strncmp(vs_fakeapi_url(t->api), "https://127.0.0.1:", 18), 0);
}

static void tls_down(struct tls_env *t)
{
    vs_fakeapi_stop(t->api);
    free(t->srv_cert);
    free(t->srv_key);
    free(t->cli_cert);
    free(t->cli_key);
    free(t->cert_path);
    free(t->key_path);
    rm_tree(t->dir);
}

static enum vs_err tls_get(struct tls_env *t, struct vs_kube_config *cfg, struct vs_errbuf *eb)
{
    json_t *out = NULL;
    cfg->server = (char *)vs_fakeapi_url(t->api);
    struct vs_kube *k = client_cfg(cfg, 10);
    enum vs_err rc = vs_kube_get(k, "/api/v1/nodes", &out, eb);
    if (rc == VS_OK)
        cr_assert_str_eq(jstr(out, "kind", NULL), "NodeList");
    json_decref(out);
    vs_kube_free(k);
    return rc;
}

Test(tls, ca_and_client_certificate_from_memory, .timeout = 30)
{
    struct tls_env t;
    struct vs_errbuf eb = {{0}};
    tls_up(&t);
    struct vs_kube_config cfg = {
        .ca_data = t.srv_cert, .cert_data = t.cli_cert, .key_data = t.cli_key};
    cr_assert_eq(tls_get(&t, &cfg, &eb), VS_OK, "%s", eb.msg);

    struct vs_kube_config by_file = {.ca_file = t.cert_path};
    cr_assert_eq(tls_get(&t, &by_file, &eb), VS_OK, "%s", eb.msg);

    struct vs_kube_config insecure = {.insecure = true};
    cr_assert_eq(tls_get(&t, &insecure, &eb), VS_OK, "%s", eb.msg);
    tls_down(&t);
}

Test(tls, failures_are_tls_errors, .timeout = 30)
{
    struct tls_env t;
    struct vs_errbuf eb = {{0}};
    tls_up(&t);

    struct vs_kube_config untrusted = {.ca_data = t.cli_cert};
    cr_assert_eq(tls_get(&t, &untrusted, &eb), VS_ERR_TLS);
    cr_assert(strncmp(eb.msg, "GET /api/v1/nodes: SSL certificate problem", 42) == 0, "%s", eb.msg);

    /* A key that does not belong to the certificate. */
    struct vs_kube_config mismatched = {
        .ca_data = t.srv_cert, .cert_data = t.cli_cert, .key_data = t.srv_key};
    cr_assert_eq(tls_get(&t, &mismatched, &eb), VS_ERR_TLS);
    cr_assert(strncmp(eb.msg, "GET /api/v1/nodes: ", 19) == 0, "%s", eb.msg);
    tls_down(&t);
}

/* ------------------------------------------------------------------------------------------ */
/* LIST                                                                                       */

struct seen {
    char **names;
    size_t n, cap;
    struct vs_fakeapi *expire_on_first;
    int stop_after;
};

static int on_item(void *ctx, json_t *item)
{
    struct seen *s = ctx;
    char key[600];
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->names = realloc(s->names, s->cap * sizeof(*s->names));
    }
    s->names[s->n++] = strdup(obj_key(item, key, sizeof(key)));
    if (s->expire_on_first && s->n == 1)
        vs_fakeapi_expire(s->expire_on_first, "pods");
    return s->stop_after && (int)s->n >= s->stop_after;
}

static void seen_free(struct seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
}

/* LIST with a needle: across pages only the items whose text holds it are decoded and handed
 * over, in order, with the list's resourceVersion; the item handler can still stop the list. */
Test(list, matching_items_only, .timeout = 60)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL, name[32], want[64];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "p%03d", i);
        /* every third pod carries the needle, once in a label value with a quote before it */
        put_pod(api, "a", name, i % 3 == 0 ? "{\"x\":\"\\\"gpu-node-7\"}" : NULL, NULL);
    }
    cr_assert_eq(
        vs_kube_list_matching(k, "/api/v1/pods", NULL, 40, "gpu-node", on_item, &s, &rv, &eb),
        VS_OK, "%s", eb.msg);
    cr_assert_eq(s.n, 100, "%zu", s.n);
    for (size_t i = 0; i < s.n; i++) {
        snprintf(want, sizeof(want), "a/p%03zu", i * 3);
        cr_assert_str_eq(s.names[i], want);
    }
    snprintf(want, sizeof(want), "%" PRIu64, vs_fakeapi_rv(api));
    cr_assert_str_eq(rv, want);
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/pods"), 8);
    free(rv);
    seen_free(&s);
    struct seen t = {.stop_after = 5};
    rv = NULL;
    cr_assert_eq(
        vs_kube_list_matching(k, "/api/v1/pods", NULL, 40, "gpu-node", on_item, &t, &rv, &eb),
        VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "LIST /api/v1/pods: stopped by the item handler");
    cr_assert_eq(t.n, 5);
    seen_free(&t);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

/* Pages of a shape the scan does not expect are decoded whole (every item handed over); a
 * malformed page is an error either way. */
Test(list, matching_falls_back_on_unexpected_pages)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL;
    /* An escaped key: the scan does not recognise "items". */
    vs_fakeapi_fault_body(api, "GET", "/api/v1/pods", 200, 1,
                          "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"77\"},"
                          "\"it\\u0065ms\":[{\"metadata\":{\"namespace\":\"a\",\"name\":\"p1\"}}]}",
                          -1);
    cr_assert_eq(
        vs_kube_list_matching(k, "/api/v1/pods", NULL, 0, "gpu-node", on_item, &s, &rv, &eb), VS_OK,
        "%s", eb.msg);
    cr_assert_eq(s.n, 1, "%zu", s.n);
    cr_assert_str_eq(s.names[0], "a/p1");
    cr_assert_str_eq(rv, "77");
    free(rv);
    seen_free(&s);
    /* Truncated: both ways fail, with the decoder's message. */
    vs_fakeapi_fault_body(api, "GET", "/api/v1/pods", 200, 1,
                          "{\"metadata\":{},\"items\":[{\"gpu-node\":1}", -1);
    struct seen t = {0};
    rv = NULL;
    cr_assert_eq(
        vs_kube_list_matching(k, "/api/v1/pods", NULL, 0, "gpu-node", on_item, &t, &rv, &eb),
        VS_ERR_PARSE);
    cr_assert(strncmp(eb.msg, "LIST /api/v1/pods: invalid JSON in the response at byte ", 56) == 0,
              "%s", eb.msg);
    cr_assert_eq(t.n, 0);
    seen_free(&t);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(list, pagination_sees_every_item_once, .timeout = 60)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL, name[32], want[64];

    for (int i = 0; i < 1200; i++) {
        snprintf(name, sizeof(name), "p%04d", (i * 7919) % 1200); /* stored out of order */
        put_pod(api, i % 2 ? "a" : "b", name, NULL, NULL);
    }
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods", NULL, 500, on_item, &s, &rv, &eb), VS_OK, "%s",
                 eb.msg);
    cr_assert_eq(s.n, 1200);
    /* Sorted by namespace/name, so "seen once" is "strictly increasing". */
    for (size_t i = 1; i < s.n; i++)
        cr_assert(strcmp(s.names[i - 1], s.names[i]) < 0, "%s then %s", s.names[i - 1], s.names[i]);
    snprintf(want, sizeof(want), "%" PRIu64, vs_fakeapi_rv(api));
    cr_assert_str_eq(rv, want);
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/pods"), 3);
    free(rv);
    seen_free(&s);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(list, selectors, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {0};
    char *rv = NULL;

    put_pod(api, "x", "a1", "{\"app\":\"a\",\"tier\":\"gpu\"}", "n1");
    put_pod(api, "x", "a2", "{\"app\":\"a\"}", "n2");
    put_pod(api, "y", "b1", "{\"app\":\"b\",\"tier\":\"gpu\"}", "n1");
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods", "app=a,tier=gpu", 0, on_item, &s, &rv, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_eq(s.n, 1, "%zu", s.n);
    cr_assert_str_eq(s.names[0], "x/a1");
    seen_free(&s);
    free(rv);

    memset(&s, 0, sizeof(s));
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", NULL, 1, on_item,
                              &s, &rv, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_eq(s.n, 2);
    cr_assert_str_eq(s.names[0], "x/a1");
    cr_assert_str_eq(s.names[1], "y/b1");
    seen_free(&s);
    free(rv);

    memset(&s, 0, sizeof(s));
    cr_assert_eq(
        vs_kube_list(k, "/api/v1/namespaces/x/pods", "tier!=gpu", 0, on_item, &s, &rv, &eb), VS_OK,
        "%s", eb.msg);
    cr_assert_eq(s.n, 1, "%zu", s.n);
    cr_assert_str_eq(s.names[0], "x/a2");
    seen_free(&s);
    free(rv);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(list, expired_continue_token_is_gone, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct seen s = {.expire_on_first = api};
    char *rv = (char *)"untouched";

    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "p%d", i);
        put_pod(api, "default", name, NULL, NULL);
    }
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods", NULL, 2, on_item, &s, &rv, &eb), VS_ERR_GONE);
    cr_assert_str_eq(eb.msg, "LIST /api/v1/pods: 410 The provided continue parameter is too old "
                             "to display a consistent list result. You can start a new list "
                             "without the continue parameter.");
    cr_assert_null(rv);
    cr_assert_eq(s.n, 2);
    seen_free(&s);

    memset(&s, 0, sizeof(s));
    s.stop_after = 3;
    cr_assert_eq(vs_kube_list(k, "/api/v1/pods", NULL, 2, on_item, &s, &rv, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "LIST /api/v1/pods: stopped by the item handler");
    cr_assert_eq(s.n, 3);
    seen_free(&s);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

/* ------------------------------------------------------------------------------------------ */
/* WATCH                                                                                      */

struct watch_run {
    struct vs_kube *k;
    const char *path;
    char *rv;
    int timeout_s;
    struct rec rec;
    size_t stop_after; /* set *stop after this many events (0 = never) */
    volatile int stop;
    enum vs_err rc;
    struct vs_errbuf eb;
    pthread_t th;
};

static int on_watch_event(void *ctx, const char *type, json_t *obj)
{
    struct watch_run *w = ctx;
    char key[600];
    rec_add(&w->rec, "%s %s %s", type, obj_key(obj, key, sizeof(key)),
            jstr(obj, "metadata", "resourceVersion"));
    if (w->stop_after && rec_count(&w->rec, "") >= w->stop_after)
        __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    return 0;
}

static void *watch_main(void *p)
{
    struct watch_run *w = p;
    w->rc = vs_kube_watch(w->k, w->path, NULL, &w->rv, w->timeout_s, on_watch_event, w, &w->stop,
                          &w->eb);
    return NULL;
}

static void watch_start(struct watch_run *w, struct vs_kube *k, const char *path, uint64_t rv,
                        size_t stop_after)
{
    memset(w, 0, sizeof(*w));
    w->k = k;
    w->stop_after = stop_after;
    w->path = path;
    w->timeout_s = 60;
    rec_init(&w->rec);
    if (rv)
        cr_assert_geq(asprintf(&w->rv, "%" PRIu64, rv), 0);
    cr_assert_eq(pthread_create(&w->th, NULL, watch_main, w), 0);
}

static void watch_join(struct watch_run *w)
{
    pthread_join(w->th, NULL);
}

static void watch_cleanup(struct watch_run *w)
{
    free(w->rv);
    rec_cleanup(&w->rec);
}

Test(watch, events_arrive_in_order, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct watch_run w;
    char want[512];

    uint64_t rv0 = put_pod(api, "default", "old", NULL, NULL);
    watch_start(&w, k, "/api/v1/namespaces/default/pods", rv0, 4);
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    uint64_t r1 = put_pod(api, "default", "p", NULL, NULL);
    put_pod(api, "other", "ignored", NULL, NULL);
    uint64_t r2 = put_pod(api, "default", "p", "{\"v\":\"2\"}", NULL);
    vs_fakeapi_put(api, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}");
    cr_assert_eq(vs_fakeapi_delete(api, "pods", "default", "p"), 0);
    uint64_t r3 = vs_fakeapi_rv(api);
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "old"), 0);
    uint64_t r4 = vs_fakeapi_rv(api);
    watch_join(&w);
    cr_assert_eq(w.rc, VS_OK, "%s", w.eb.msg);
    char *got = rec_join(&w.rec, NULL);
    snprintf(want, sizeof(want),
             "ADDED default/p %" PRIu64 "\nMODIFIED default/p %" PRIu64 "\nDELETED default/p "
             "%" PRIu64 "\nDELETED default/old %" PRIu64,
             r1, r2, r3, r4);
    cr_assert_str_eq(got, want);
    snprintf(want, sizeof(want), "%" PRIu64, r4);
    cr_assert_str_eq(w.rv, want);
    free(got);
    watch_cleanup(&w);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(watch, without_resource_version_starts_with_synthetic_adds, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct watch_run w;

    put_pod(api, "default", "b", NULL, NULL);
    put_pod(api, "default", "a", NULL, NULL);
    watch_start(&w, k, "/api/v1/pods", 0, 2);
    watch_join(&w);
    cr_assert_eq(w.rc, VS_OK, "%s", w.eb.msg);
    char *got = rec_join(&w.rec, NULL);
    cr_assert_str_eq(got, "ADDED default/a 2\nADDED default/b 1");
    free(got);
    watch_cleanup(&w);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(watch, bookmarks_advance_the_resource_version, .timeout = 30)
{
    struct vs_fakeapi_opts o = {.quiet = true, .bookmark_ms = 50};
    struct vs_fakeapi *api = fake(&o);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    struct rec r;
    char want[32];

    rec_init(&r);
    uint64_t rv = put_pod(api, "default", "p", NULL, NULL);
    vs_fakeapi_put(api, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}");
    char *rvs;
    cr_assert_geq(asprintf(&rvs, "%" PRIu64, rv), 0);
    /* The server ends the stream after 1 s; meanwhile only bookmarks arrive. */
    cr_assert_eq(vs_kube_watch(k, "/api/v1/pods", NULL, &rvs, 1, NULL, NULL, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    snprintf(want, sizeof(want), "%" PRIu64, vs_fakeapi_rv(api));
    cr_assert_str_eq(rvs, want);
    free(rvs);
    rec_cleanup(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

static void expect_gone(bool as_event)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct vs_errbuf eb = {{0}};
    char want[128];

    uint64_t rv = put_pod(api, "default", "p", NULL, NULL);
    if (as_event)
        vs_fakeapi_expire_event(api, "pods");
    else
        vs_fakeapi_expire(api, "Pod");
    char *rvs;
    cr_assert_geq(asprintf(&rvs, "%" PRIu64, rv), 0);
    cr_assert_eq(vs_kube_watch(k, "/api/v1/pods", NULL, &rvs, 10, NULL, NULL, NULL, &eb),
                 VS_ERR_GONE);
    snprintf(want, sizeof(want),
             "WATCH /api/v1/pods: 410 too old resource version: %" PRIu64 " (%" PRIu64 ")", rv,
             rv + 1);
    cr_assert_str_eq(eb.msg, want);
    /* Other resources are not affected. */
    char *nrv = NULL;
    cr_assert_eq(vs_kube_list(k, "/api/v1/nodes", NULL, 0, NULL, NULL, &nrv, &eb), VS_OK);
    free(rvs);
    rvs = NULL;
    cr_assert_geq(asprintf(&rvs, "%" PRIu64, rv), 0);
    cr_assert_eq(vs_kube_watch(k, "/api/v1/nodes", NULL, &rvs, 1, NULL, NULL, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    free(nrv);
    free(rvs);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(watch, gone_as_http_status, .timeout = 30)
{
    expect_gone(false);
}

Test(watch, gone_as_error_event, .timeout = 30)
{
    expect_gone(true);
}

Test(watch, stop_ends_an_idle_watch, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct watch_run w;

    watch_start(&w, k, "/api/v1/pods", put_pod(api, "default", "p", NULL, NULL), 0);
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    watch_join(&w);
    cr_assert_eq(w.rc, VS_OK, "%s", w.eb.msg);
    cr_assert_eq(rec_count(&w.rec, ""), 0);
    watch_cleanup(&w);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(watch, dropped_stream_is_an_error_and_keeps_the_last_version, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct watch_run w;
    char want[32];

    watch_start(&w, k, "/api/v1/pods", put_pod(api, "default", "p", NULL, NULL), 0);
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    uint64_t rv = put_pod(api, "default", "q", NULL, NULL);
    cr_assert(rec_wait(&w.rec, "ADDED", 1));
    vs_fakeapi_drop_watches(api);
    watch_join(&w);
    cr_assert_eq(w.rc, VS_ERR_KUBE, "%s", w.eb.msg);
    cr_assert(strncmp(w.eb.msg, "WATCH /api/v1/pods: ", 20) == 0, "%s", w.eb.msg);
    snprintf(want, sizeof(want), "%" PRIu64, rv);
    cr_assert_str_eq(w.rv, want);
    watch_cleanup(&w);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

/* ------------------------------------------------------------------------------------------ */
/* informer                                                                                   */

struct inf_run {
    struct vs_kube *k;
    const char *path;
    struct rec rec;
    volatile int stop;
    pthread_t th;
};

static void h_begin(void *ctx)
{
    rec_add(&((struct inf_run *)ctx)->rec, "BEGIN");
}

static void h_object(void *ctx, const char *type, json_t *o)
{
    char key[600];
    rec_add(&((struct inf_run *)ctx)->rec, "%s %s", type, obj_key(o, key, sizeof(key)));
}

static void h_synced(void *ctx)
{
    rec_add(&((struct inf_run *)ctx)->rec, "SYNCED");
}

static void h_error(void *ctx, enum vs_err err, const char *msg)
{
    rec_add(&((struct inf_run *)ctx)->rec, "ERROR %s %s", vs_err_name(err), msg);
}

static void *inf_main(void *p)
{
    struct inf_run *r = p;
    static const struct vs_informer_handlers h = {h_begin, h_object, h_synced, h_error, NULL};
    vs_kube_informer_run(r->k, r->path, NULL, &h, r, &r->stop);
    return NULL;
}

static void inf_start(struct inf_run *r, struct vs_kube *k, const char *path)
{
    memset(r, 0, sizeof(*r));
    r->k = k;
    r->path = path;
    rec_init(&r->rec);
    cr_assert_eq(pthread_create(&r->th, NULL, inf_main, r), 0);
}

static void inf_stop(struct inf_run *r)
{
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
    pthread_join(r->th, NULL);
    rec_cleanup(&r->rec);
}

static void assert_rec(struct rec *r, const char *skip, const char *want)
{
    char *got = rec_join(r, skip);
    cr_assert_str_eq(got, want);
    free(got);
}

Test(informer, initial_sync_then_changes, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;

    put_pod(api, "default", "c", NULL, NULL);
    put_pod(api, "default", "a", NULL, NULL);
    put_pod(api, "default", "b", NULL, NULL);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 1));
    assert_rec(&r.rec, NULL, "BEGIN\nADDED default/a\nADDED default/b\nADDED default/c\nSYNCED");
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    put_pod(api, "default", "d", NULL, NULL);
    put_pod(api, "default", "a", "{\"x\":\"y\"}", NULL);
    vs_fakeapi_delete(api, "pods", "default", "b");
    cr_assert(rec_wait(&r.rec, "DELETED", 1));
    assert_rec(&r.rec, NULL,
               "BEGIN\nADDED default/a\nADDED default/b\nADDED default/c\nSYNCED\n"
               "ADDED default/d\nMODIFIED default/a\nDELETED default/b");
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(informer, dropped_watch_resumes_without_relist_or_loss, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;

    put_pod(api, "default", "a", NULL, NULL);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 1));
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    vs_fakeapi_drop_watches(api);
    put_pod(api, "default", "e", NULL, NULL); /* while no watch is open */
    put_pod(api, "default", "f", NULL, NULL);
    cr_assert(rec_wait(&r.rec, "ADDED default/f", 1));
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    put_pod(api, "default", "g", NULL, NULL);
    cr_assert(rec_wait(&r.rec, "ADDED default/g", 1));
    assert_rec(&r.rec, "ERROR",
               "BEGIN\nADDED default/a\nSYNCED\nADDED default/e\nADDED default/f\nADDED default/g");
    cr_assert_eq(rec_count(&r.rec, "ERROR VS_ERR_KUBE WATCH /api/v1/pods: "), 1);
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/pods"), 1);
    cr_assert_eq(vs_fakeapi_count(api, "WATCH", "/api/v1/pods"), 2);
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

static void informer_relists_on_gone(bool as_event)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;
    char want[256];

    put_pod(api, "default", "a", NULL, NULL);
    uint64_t rv = put_pod(api, "default", "b", NULL, NULL);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 1));
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    if (as_event) {
        vs_fakeapi_expire_event(api, "pods");
    } else {
        vs_fakeapi_expire(api, "pods");
        vs_fakeapi_drop_watches(api); /* the resumed watch then meets the 410 */
    }
    cr_assert(rec_wait(&r.rec, "SYNCED", 2));
    assert_rec(&r.rec, "ERROR",
               "BEGIN\nADDED default/a\nADDED default/b\nSYNCED\n"
               "BEGIN\nADDED default/a\nADDED default/b\nSYNCED");
    snprintf(want, sizeof(want),
             "ERROR VS_ERR_GONE WATCH /api/v1/pods: 410 too old resource version: %" PRIu64
             " (%" PRIu64 ")",
             rv, rv + 1);
    cr_assert_eq(rec_count(&r.rec, want), 1);
    cr_assert_eq(vs_fakeapi_count(api, "LIST", "/api/v1/pods"), 2);
    /* After the relist the watch works again. */
    cr_assert(vs_fakeapi_wait_watchers(api, 1, WAIT_MS));
    put_pod(api, "default", "c", NULL, NULL);
    cr_assert(rec_wait(&r.rec, "ADDED default/c", 1));
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(informer, gone_as_http_status_relists, .timeout = 30)
{
    informer_relists_on_gone(false);
}

Test(informer, gone_as_error_event_relists, .timeout = 30)
{
    informer_relists_on_gone(true);
}

Test(informer, list_failures_are_reported_and_retried, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;

    put_pod(api, "default", "a", NULL, NULL);
    vs_fakeapi_fault(api, "LIST", "/api/v1/pods", 500, 2);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 1));
    assert_rec(&r.rec, NULL,
               "BEGIN\nERROR VS_ERR_KUBE LIST /api/v1/pods: 500 injected fault\n"
               "BEGIN\nERROR VS_ERR_KUBE LIST /api/v1/pods: 500 injected fault\n"
               "BEGIN\nADDED default/a\nSYNCED");
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

Test(informer, two_failed_watches_in_a_row_relist, .timeout = 30)
{
    struct vs_fakeapi *api = fake(NULL);
    struct vs_kube *k = client(api, NULL, NULL);
    struct inf_run r;

    put_pod(api, "default", "a", NULL, NULL);
    vs_fakeapi_fault(api, "WATCH", "/api/v1/pods", 500, 2);
    inf_start(&r, k, "/api/v1/pods");
    cr_assert(rec_wait(&r.rec, "SYNCED", 2));
    assert_rec(&r.rec, NULL,
               "BEGIN\nADDED default/a\nSYNCED\n"
               "ERROR VS_ERR_KUBE WATCH /api/v1/pods: 500 injected fault\n"
               "ERROR VS_ERR_KUBE WATCH /api/v1/pods: 500 injected fault\n"
               "BEGIN\nADDED default/a\nSYNCED");
    inf_stop(&r);
    vs_kube_free(k);
    vs_fakeapi_stop(api);
}

/* ------------------------------------------------------------------------------------------ */
/* limiter (injected clock)                                                                   */

/* cr_assert_float_eq evaluates its arguments twice: reserve once, then compare. */
static void assert_wait(struct vs_kube_limiter *l, double now, double want, int i)
{
    double got = vs_kube_limiter_reserve(l, now);
    cr_assert_float_eq(got, want, 1e-9, "request %d at %.3f: waits %.6f, want %.6f", i, now, got,
                       want);
}

Test(limiter, burst_then_steady_rate)
{
    struct vs_kube_limiter l;
    vs_kube_limiter_init(&l, 50, 5);
    /* 30 requests at t=0: five go at once, then one every 20 ms. */
    for (int i = 0; i < 30; i++) {
        double want = i < 5 ? 0 : (i - 4) * 0.02;
        assert_wait(&l, 0, want, i);
    }
    /* The 30th had to wait 0.5 s: 30 requests take >= 0.4 s in wall time. */
    vs_kube_limiter_cleanup(&l);
}

Test(limiter, refill_is_capped_at_burst)
{
    struct vs_kube_limiter l;
    vs_kube_limiter_init(&l, 10, 2);
    assert_wait(&l, 100, 0, -1);
    assert_wait(&l, 100, 0, -1);
    assert_wait(&l, 100, 0.1, -1);
    /* Long idle: only `burst` tokens come back. */
    assert_wait(&l, 1000, 0, -1);
    assert_wait(&l, 1000, 0, -1);
    assert_wait(&l, 1000, 0.1, -1);
    /* Half a period later half a token has come back. */
    assert_wait(&l, 1000.05, 0.15, -1);
    /* A clock that steps back adds nothing. */
    assert_wait(&l, 999, 0.25, -1);
    vs_kube_limiter_cleanup(&l);
}

Test(limiter, unlimited_and_minimum_burst)
{
    struct vs_kube_limiter l;
    vs_kube_limiter_init(&l, 0, 0);
    for (int i = 0; i < 100; i++)
        assert_wait(&l, 0, 0, -1);
    vs_kube_limiter_cleanup(&l);
    vs_kube_limiter_init(&l, 4, 0); /* burst < 1 acts as 1 */
    assert_wait(&l, 0, 0, -1);
    assert_wait(&l, 0, 0.25, -1);
    vs_kube_limiter_cleanup(&l);
}

/* ------------------------------------------------------------------------------------------ */
/* watch decoder                                                                              */

struct dec_log {
    char text[4096];
};

static int dec_event(void *ctx, const char *type, json_t *obj)
{
    struct dec_log *l = ctx;
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof(l->text) - n, "%s%s:%s", n ? "," : "", type,
             jstr(obj, "metadata", "name"));
    return strcmp(type, "DELETED") == 0 && strcmp(jstr(obj, "metadata", "name"), "stop") == 0;
}

static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\"}}}\n"
    "\r\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"10\"}}}"
    "\r\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"11\"}}}"
    "\n";

Test(decoder, events_split_at_every_byte)
{
    struct vs_watch_decoder d;
    struct dec_log l = {{0}};
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, dec_event, &l, 0);
    for (size_t i = 0; i < sizeof(STREAM) - 1; i++)
        cr_assert_eq(vs_watch_decoder_feed(&d, STREAM + i, 1, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(vs_watch_decoder_finish(&d, &eb), VS_OK);
    cr_assert_str_eq(l.text, "ADDED:a,MODIFIED:a,DELETED:b");
    cr_assert_str_eq(d.rv, "11");
    cr_assert_eq(d.events, 4);
    vs_watch_decoder_cleanup(&d);
}

Test(decoder, many_events_per_chunk_and_a_last_line_without_newline)
{
    struct vs_watch_decoder d;
    struct dec_log l = {{0}};
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, dec_event, &l, 0);
    cr_assert_eq(vs_watch_decoder_feed(&d, STREAM, sizeof(STREAM) - 1, &eb), VS_OK, "%s", eb.msg);
    const char *tail =
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}";
    cr_assert_eq(vs_watch_decoder_feed(&d, tail, strlen(tail), &eb), VS_OK);
    cr_assert_str_eq(d.rv, "11");
    cr_assert_eq(vs_watch_decoder_finish(&d, &eb), VS_OK);
    cr_assert_str_eq(d.rv, "12");
    vs_watch_decoder_cleanup(&d);
}

struct deccase {
    const char *input;
    enum vs_err code;
    const char *msg;
};

static void free_deccases(struct criterion_test_params *p)
{
    struct deccase *c = p->params;
    for (size_t i = 0; i < p->length; i++) {
        cr_free((void *)c[i].input);
        cr_free((void *)c[i].msg);
    }
    cr_free(c);
}

ParameterizedTestParameters(decoder, errors)
{
    static const struct deccase cases[] = {
        {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
         "\"message\":\"too old resource version: 1 (5)\"}}\n",
         VS_ERR_GONE, "410 too old resource version: 1 (5)"},
        {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500}}\n", VS_ERR_KUBE,
         "500 Internal Server Error"},
        {"{\"type\":\"ERROR\",\"object\":{\"message\":\"odd\"}}\n", VS_ERR_KUBE,
         "ERROR event: odd"},
        {"{\"type\":\"ERROR\",\"object\":{\"code\":403,\"message\":\"no\"}}\n", VS_ERR_AUTH,
         "403 no"},
        {"not json\n", VS_ERR_PARSE,
         "invalid watch event at byte 3: '[' or '{' expected near 'not'"},
        {"{\"type\":\"ADDED\"}\n", VS_ERR_PARSE, "watch event without a type and an object"},
        {"{\"type\":\"ADDED\",\"object\":[]}\n", VS_ERR_PARSE,
         "watch event without a type and an object"},
        {"{\"type\":\"RENAMED\",\"object\":{}}\n", VS_ERR_PARSE,
         "unknown watch event type \"RENAMED\""},
        {"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"stop\"}}}\n", VS_ERR_INVAL,
         "stopped by the event handler"},
        {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a name that makes this "
         "event longer than the 160 bytes the decoder accepts in these cases .................."
         "......\"}}}\n",
         VS_ERR_PARSE, "watch event larger than 160 bytes"},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    struct deccase *shared = cr_malloc(n * sizeof(*shared));
    for (size_t i = 0; shared && i < n; i++) {
        shared[i].input = shared_str(cases[i].input);
        shared[i].code = cases[i].code;
        shared[i].msg = shared_str(cases[i].msg);
    }
    return cr_make_param_array(struct deccase, shared, n, free_deccases);
}

ParameterizedTest(struct deccase *tc, decoder, errors)
{
    struct vs_watch_decoder d;
    struct dec_log l = {{0}};
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, dec_event, &l, 160);
    cr_assert_eq(vs_watch_decoder_feed(&d, tc->input, strlen(tc->input), &eb), tc->code, "%s",
                 eb.msg);
    cr_assert_str_eq(eb.msg, tc->msg);
    vs_watch_decoder_cleanup(&d);
}

Test(decoder, oversized_event_split_across_chunks)
{
    struct vs_watch_decoder d;
    struct vs_errbuf eb = {{0}};
    char chunk[40];
    memset(chunk, 'x', sizeof(chunk));
    vs_watch_decoder_init(&d, NULL, NULL, 64);
    cr_assert_eq(vs_watch_decoder_feed(&d, chunk, sizeof(chunk), &eb), VS_OK);
    cr_assert_eq(vs_watch_decoder_feed(&d, chunk, sizeof(chunk), &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "watch event larger than 64 bytes");
    vs_watch_decoder_cleanup(&d);
}

Test(decoder, stream_ending_inside_an_event)
{
    struct vs_watch_decoder d;
    struct vs_errbuf eb = {{0}};
    vs_watch_decoder_init(&d, NULL, NULL, 0);
    cr_assert_eq(vs_watch_decoder_feed(&d, "{\"type\":\"ADD", 12, &eb), VS_OK);
    cr_assert_eq(vs_watch_decoder_finish(&d, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "watch stream ended inside an event: invalid watch event at byte "
                             "12: premature end of input near '\"ADD'");
    vs_watch_decoder_cleanup(&d);
}

/* ------------------------------------------------------------------------------------------ */

Test(escape, query_values)
{
    char *s = vs_kube_escape("env in (prod,staging),app=a b/c~_.-");
    cr_assert_str_eq(s, "env%20in%20%28prod%2Cstaging%29%2Capp%3Da%20b%2Fc~_.-");
    free(s);
    s = vs_kube_escape("");
    cr_assert_str_eq(s, "");
    free(s);
}
