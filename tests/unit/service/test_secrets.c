/* test_secrets: no bearer token and no key material reaches a log line. The whole service runs
 * at debug level with its log in a file, against a fake API that demands a bearer token, with a
 * TLS serving key; Filter, Bind, a 401 (token retry), failed API calls, refused TLS 1.0 and
 * plain-HTTP clients all log; then the file is searched for the token and for every line of
 * the private key's PEM. The error paths that read secrets (a bad token file, a kubeconfig
 * whose token or key data does not parse, a serving key rotated to a broken file) name the file
 * and the field, never the content. */
#include "fakeapi.h"
#include "harness.h"
#include "log.h"
#include "kube.h"
#include "kube_http.h"
#include "serve.h"
#include "server.h"

#include <criterion/criterion.h>
#include <fcntl.h>

#define TOKEN "vs-secret-token-4f1c9a07d2e8b365"

static void write_kubeconfig(const char *path, const char *url)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: c\n  "
            "cluster:\n    server: %s\ncontexts:\n- name: t\n  context:\n    cluster: c\n    "
            "user: u\nusers:\n- name: u\n  user:\n    token: %s\n",
            url, TOKEN);
    fclose(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = calloc(1, (size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return b;
}

static long post(struct vs_harness *h, int port, const char *path, const char *body, char **out)
{
    return vs_harness_call(h, port, "POST", path, "application/json", body, strlen(body), out);
}

Test(secrets, no_token_or_key_in_logs)
{
    struct vs_harness h = {0};
    vs_harness_init(&h);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct vs_fakeapi_opts fo = {.port = 0, .quiet = true};
    struct vs_fakeapi *api = vs_fakeapi_start(&fo);
    cr_assert_not_null(api);
    vs_fakeapi_set_token(api, TOKEN);
    char kc[200], logpath[200];
    snprintf(kc, sizeof(kc), "%s/kubeconfig", h.dir);
    snprintf(logpath, sizeof(logpath), "%s/service.log", h.dir);
    write_kubeconfig(kc, vs_fakeapi_url(api));
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    vs_log_setup(VS_LOG_DEBUG, false, fd);

    char *node = vs_harness_node("n1", 1, 15360);
    cr_assert_neq(vs_fakeapi_put(api, node), 0);
    free(node);
    char *pod = vs_harness_pod("p", "uid-p", "1000", "10");
    cr_assert_neq(vs_fakeapi_put(api, pod), 0);

    struct vs_service_config c;
    vs_service_config_defaults(&c);
    c.http_bind = "127.0.0.1:0";
    c.metrics_bind = "";
    c.cert_file = h.cert;
    c.key_file = h.key;
    c.kubeconfig = kc;
    c.lock_retry_ms = 0;
    c.bind_wait_ms = 5000;
    int rc;
    struct vs_errbuf eb;
    struct vs_service *svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
    for (int i = 0; i < 100 && !vs_service_synced(svc); i++)
        usleep(50 * 1000);
    cr_assert(vs_service_synced(svc));
    int port = vs_service_port(svc);

    char body[4096], *out;
    snprintf(body, sizeof(body), "{\"Pod\":%s,\"NodeNames\":[\"n1\"]}", pod);
    cr_assert_eq(post(&h, port, "/filter", body, &out), 200);
    cr_assert(strstr(out, "\"NodeNames\":[\"n1\"]"), "%s", out);
    free(out);
    /* The first Bind meets a 401 at its binding (logged with the API's answer); the second
     * binds. */
    vs_fakeapi_fault(api, "POST", "/api/v1/namespaces/default/pods/p/binding", 401, 1);
    const char *bind = "{\"PodName\":\"p\",\"PodNamespace\":\"default\",\"PodUID\":\"uid-p\","
                       "\"Node\":\"n1\"}";
    cr_assert_eq(post(&h, port, "/bind", bind, &out), 200);
    cr_assert(strstr(out, "401 injected fault"), "%s", out);
    free(out);
    cr_assert_eq(post(&h, port, "/bind", bind, &out), 200);
    cr_assert(strstr(out, "\"Error\":\"\""), "%s", out);
    free(out);
    /* A Bind whose API calls fail logs the API's answers. */
    vs_fakeapi_fault(api, "GET", "/api/v1/namespaces/default/pods/q", 403, 5);
    const char *bind_q = "{\"PodName\":\"q\",\"PodNamespace\":\"default\",\"PodUID\":\"\","
                         "\"Node\":\"n1\"}";
    cr_assert_eq(post(&h, port, "/bind", bind_q, &out), 200);
    cr_assert(strstr(out, "403"), "%s", out);
    free(out);
    /* Refused clients: plain HTTP on the TLS port, and TLS 1.0. */
    struct vs_harness plain = h;
    plain.scheme = "http";
    vs_harness_call(&plain, port, "GET", "/healthz", NULL, NULL, 0, &out);
    free(out);
    CURL *cu = curl_easy_init();
    char url[64];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/healthz", port);
    curl_easy_setopt(cu, CURLOPT_URL, url);
    curl_easy_setopt(cu, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(cu, CURLOPT_SSLVERSION,
                     (long)(CURL_SSLVERSION_TLSv1_0 | CURL_SSLVERSION_MAX_TLSv1_0));
    cr_assert_neq(curl_easy_perform(cu), CURLE_OK);
    curl_easy_cleanup(cu);
    vs_service_stop(svc);
    vs_fakeapi_stop(api);
    free(pod);
    close(fd);

    char *log = slurp(logpath);
    /* The run did log what it did (so an empty file cannot pass)... */
    cr_assert(strstr(log, "event=bind pod=default/p node=n1"), "%s", log);
    cr_assert(strstr(log, "event=bind_failed pod=default/q"), "%s", log);
    /* ... and nothing secret. */
    cr_assert_null(strstr(log, TOKEN), "bearer token in the log");
    cr_assert_null(strstr(log, "Bearer"), "Authorization header in the log");
    cr_assert_null(strstr(log, "PRIVATE KEY"), "PEM key header in the log");
    char *key = slurp(h.key);
    size_t lines = 0;
    for (char *line = strtok(key, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "-----", 5) == 0)
            continue;
        lines++;
        cr_assert_null(strstr(log, line), "a line of the private key is in the log: %s", line);
    }
    cr_assert_gt(lines, 10);
    free(key);
    free(log);
    vs_harness_cleanup(&h);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* Token file and kubeconfig errors name the file and the field, not the secret. */
Test(secrets, bad_token_and_kubeconfig_errors_name_no_secret)
{
    struct vs_harness h = {0};
    vs_harness_init(&h);
    char path[256], text[512], want[512];
    struct vs_errbuf eb = {{0}};

    snprintf(path, sizeof(path), "%s/token", h.dir);
    write_text(path, TOKEN "\n" TOKEN "-second-line\n");
    char *tok = NULL;
    cr_assert_eq(vs_kube_read_token_file(path, &tok, &eb), VS_ERR_AUTH);
    cr_assert_null(tok);
    snprintf(want, sizeof(want), "token file %s: not a single-line token", path);
    cr_assert_str_eq(eb.msg, want);

    struct vs_kube_config cfg;
    snprintf(path, sizeof(path), "%s/kc-map", h.dir);
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: c\n  "
             "cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: t\n  context:\n    "
             "cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: {value: %s}\n",
             TOKEN);
    write_text(path, text);
    memset(&cfg, 0, sizeof(cfg));
    cr_assert_eq(vs_kube_config_load(path, &cfg, &eb), VS_ERR_PARSE);
    snprintf(want, sizeof(want), "kubeconfig %s: user \"u\": token must be a string", path);
    cr_assert_str_eq(eb.msg, want);
    vs_kube_config_cleanup(&cfg);

    /* Not base64: the "secret" is in the value, the message names the field only. */
    snprintf(path, sizeof(path), "%s/kc-key", h.dir);
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: c\n  "
             "cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: t\n  context:\n    "
             "cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    client-certificate-data: "
             "%s\n    client-key-data: \"%s!\"\n",
             "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==", TOKEN);
    write_text(path, text);
    memset(&cfg, 0, sizeof(cfg));
    cr_assert_eq(vs_kube_config_load(path, &cfg, &eb), VS_ERR_PARSE);
    snprintf(want, sizeof(want), "kubeconfig %s: user \"u\": client-key-data is not valid base64",
             path);
    cr_assert_str_eq(eb.msg, want);
    vs_kube_config_cleanup(&cfg);
    vs_harness_cleanup(&h);
}

static void ok_handler(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    (void)ctx;
    (void)req;
    resp->status = 200;
    resp->body = strdup("ok");
    resp->content_type = "text/plain";
}

/* The serving key rotated to a broken file: the server keeps its old key and logs the failed
 * reload (at warn; debug is on) with the file's name and GnuTLS' reason, not its lines. */
Test(secrets, broken_key_reload_logs_no_key_material)
{
    struct vs_harness h = {0};
    vs_harness_init(&h);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char logpath[256], tmp[256];
    snprintf(logpath, sizeof(logpath), "%s/server.log", h.dir);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    vs_log_setup(VS_LOG_DEBUG, false, fd);
    static const struct vs_route routes[] = {{"GET", "/healthz", ok_handler, NULL, false, false}};
    struct vs_server_opts o = {.bind = "127.0.0.1:0",
                               .cert_file = h.cert,
                               .key_file = h.key,
                               .threads = 2,
                               .routes = routes,
                               .n_routes = 1,
                               .name = "main"};
    struct vs_errbuf eb = {{0}};
    struct vs_server *srv = vs_server_start(&o, &eb);
    cr_assert_not_null(srv, "%s", eb.msg);
    int port = vs_server_port(srv);

    /* The broken key: the real key's first body lines, then a line that is not base64. */
    char *key = slurp(h.key);
    char broken[4096];
    size_t n = 0, lines = 0;
    for (const char *p = key; *p && lines < 4; p++) {
        broken[n++] = *p;
        lines += *p == '\n';
    }
    n += (size_t)snprintf(broken + n, sizeof(broken) - n,
                          "!!!! not base64 !!!!\n-----END PRIVATE KEY-----\n");
    snprintf(tmp, sizeof(tmp), "%s/tls.key.new", h.dir);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(broken, 1, n, f), n);
    fclose(f);
    cr_assert_eq(rename(tmp, h.key), 0);

    /* Each handshake looks for a rotation at most once a second; the old key keeps serving. */
    char *out = NULL, *log = NULL;
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(vs_harness_call(&h, port, "GET", "/healthz", NULL, NULL, 0, &out), 200);
        free(out);
        free(log);
        log = slurp(logpath);
        if (strstr(log, "event=tls_reload_failed"))
            break;
        usleep(100 * 1000);
    }
    vs_server_stop(srv);
    close(fd);
    cr_assert(strstr(log, "event=tls_reload_failed"), "%s", log);
    cr_assert(strstr(log, h.key), "the failed reload names the key file: %s", log);
    cr_assert_null(strstr(log, "PRIVATE KEY"), "PEM key header in the log");
    cr_assert_null(strstr(log, "not base64"), "a line of the key file in the log");
    lines = 0;
    for (char *line = strtok(key, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "-----", 5) == 0)
            continue;
        lines++;
        cr_assert_null(strstr(log, line), "a line of the private key is in the log: %s", line);
    }
    cr_assert_gt(lines, 10);
    free(key);
    free(log);
    vs_harness_cleanup(&h);
}
