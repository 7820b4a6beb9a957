/* test_kube_config: the client's configuration: kubeconfig files (inline data, relative paths,
 * $KUBECONFIG lists, exact errors naming the file and field) and the in-cluster service
 * account, and which source wins. */
#include "kubetest.h"

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
