/* harness: what the service tests need around the real service — throwaway TLS certificates,
 * a kubeconfig for the fake API, Node/Pod JSON builders and an HTTPS client. Shared by the
 * Criterion integration test and the TSan stress program; failures of the harness itself abort. */
#ifndef VS_TEST_HARNESS_H
#define VS_TEST_HARNESS_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakeapi.h"
#include "serve.h"

struct vs_harness {
    char dir[64];
    char ca[128], cert[128], key[128], kubeconfig[128];
    const char *client_cert, *client_key; /* presented by vs_harness_call when set */
    const char *scheme;                   /* "https" (default) or "http" */
};

static inline void vs_harness_die(const char *what)
{
    fprintf(stderr, "harness: %s\n", what);
    abort();
}

/* A temp dir with a CA and a serving certificate for 127.0.0.1 (openssl CLI). */
static inline void vs_harness_init(struct vs_harness *h)
{
    strcpy(h->dir, "/tmp/vs-harness-XXXXXX");
    if (!mkdtemp(h->dir))
        vs_harness_die("mkdtemp");
    snprintf(h->ca, sizeof(h->ca), "%s/ca.pem", h->dir);
    snprintf(h->cert, sizeof(h->cert), "%s/tls.pem", h->dir);
    snprintf(h->key, sizeof(h->key), "%s/tls.key", h->dir);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
             "-days 1 -subj /CN=test-ca >/dev/null 2>&1 && "
             "openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj "
             "/CN=127.0.0.1 >/dev/null 2>&1 && "
             "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext.cnf && "
             "openssl x509 -req -in tls.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out "
             "tls.pem -days 1 -extfile ext.cnf >/dev/null 2>&1",
             h->dir);
    if (system(cmd) != 0)
        vs_harness_die("openssl failed");
}

/* Runs a shell command in the harness directory; aborts on failure. */
static inline void vs_harness_sh(const struct vs_harness *h, const char *script)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "cd %s && { %s ; } >/dev/null 2>&1", h->dir, script);
    if (system(cmd) != 0)
        vs_harness_die(script);
}

static inline void vs_harness_kubeconfig(struct vs_harness *h, const char *url)
{
    snprintf(h->kubeconfig, sizeof(h->kubeconfig), "%s/kubeconfig", h->dir);
    FILE *f = fopen(h->kubeconfig, "w");
    if (!f)
        vs_harness_die("kubeconfig");
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: c\n  "
            "cluster:\n    server: %s\ncontexts:\n- name: t\n  context:\n    cluster: c\n    "
            "user: u\nusers:\n- name: u\n  user: {}\n",
            url);
    fclose(f);
}

/* Everything a service test needs before its service: libcurl, the harness (certificates), a
 * quiet fake API server on a free port and a kubeconfig for it. Aborts on failure. */
static inline struct vs_fakeapi *vs_harness_fakeapi(struct vs_harness *h)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    vs_harness_init(h);
    struct vs_fakeapi_opts o = {.port = 0, .quiet = true};
    struct vs_fakeapi *api = vs_fakeapi_start(&o);
    if (!api)
        vs_harness_die("fake API did not start");
    vs_harness_kubeconfig(h, vs_fakeapi_url(api));
    return api;
}

/* The configuration every service test starts from: loopback listeners (metrics included), the
 * harness's serving certificate and kubeconfig, scheduler name hami-scheduler, Bind waiting 5 s
 * for Filter's pod patch; the test sets what it is about. */
static inline void vs_harness_service_config(const struct vs_harness *h,
                                             struct vs_service_config *c)
{
    vs_service_config_defaults(c);
    c->http_bind = "127.0.0.1:0";
    c->metrics_bind = "127.0.0.1:0";
    c->cert_file = h->cert;
    c->key_file = h->key;
    c->kubeconfig = h->kubeconfig;
    c->scheduler_name = "hami-scheduler";
    c->bind_wait_ms = 5000;
}

/* Starts the service and waits (5 s at most) until its store has synced and, without
 * --leader-elect, its first term's node-lock repair is done (it reads the owners of locked
 * nodes, which a test counting API requests must not see); NULL with the error in eb when it
 * does not start, aborts when it never syncs. */
static inline struct vs_service *vs_harness_service_start(const struct vs_service_config *c,
                                                          struct vs_errbuf *eb)
{
    int rc;
    struct vs_service *svc = vs_service_start(c, &rc, eb);
    if (!svc)
        return NULL;
    for (int i = 0; i < 100 && !vs_service_synced(svc); i++)
        usleep(50 * 1000);
    if (!vs_service_synced(svc))
        vs_harness_die("the service's store never synced");
    for (int i = 0; i < 100 && !c->leader_elect && vs_service_repairs(svc) == 0; i++)
        usleep(50 * 1000);
    if (!c->leader_elect && vs_service_repairs(svc) == 0)
        vs_harness_die("the service's first term never repaired node locks");
    return svc;
}

static inline void vs_harness_cleanup(struct vs_harness *h)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", h->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: cannot remove %s\n", h->dir);
}

/* The lines of the log file `path` that contain `what`, each from "level=" on (the timestamp
 * cut), joined with '\n'; "" when none. New string. */
static inline char *vs_harness_log_lines(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    if (!f)
        vs_harness_die("cannot open the service log");
    char line[4096];
    size_t cap = 4096, len = 0;
    char *out = calloc(1, cap);
    while (out && fgets(line, sizeof(line), f)) {
        if (!strstr(line, what))
            continue;
        const char *l = strstr(line, "level=");
        if (!l)
            vs_harness_die("a log line without level=");
        size_t n = strlen(l);
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            out = realloc(out, cap);
            if (!out)
                break;
        }
        memcpy(out + len, l, n + 1);
        len += n;
    }
    fclose(f);
    if (!out)
        vs_harness_die("out of memory");
    if (len && out[len - 1] == '\n')
        out[--len] = '\0';
    return out;
}

/* get(ctx), a new string each call, polled every 20 ms until it equals `want` (10 s at most);
 * the last one, for the caller to assert on. New string. */
static inline char *vs_harness_poll(char *(*get)(void *ctx), void *ctx, const char *want)
{
    char *got = get(ctx);
    for (int i = 0; i < 500 && strcmp(got, want) != 0; i++) {
        usleep(20 * 1000);
        free(got);
        got = get(ctx);
    }
    return got;
}

struct vs_harness_log_query {
    const char *path, *what;
};

static inline char *vs_harness_log_query_get(void *ctx)
{
    const struct vs_harness_log_query *q = ctx;
    return vs_harness_log_lines(q->path, q->what);
}

/* vs_harness_log_lines once they equal `want`, or after 10 s whatever they are then: for lines
 * a service thread logs after the effect a test waited for. New string. */
static inline char *vs_harness_wait_log_lines(const char *path, const char *what, const char *want)
{
    struct vs_harness_log_query q = {.path = path, .what = what};
    return vs_harness_poll(vs_harness_log_query_get, &q, want);
}

/* A Node with `cards` T4-like cards named <name>-gpu<i>, `mem` MiB each. New string. */
static inline char *vs_harness_node(const char *name, int cards, int mem)
{
    json_t *reg = json_array();
    for (int i = 0; i < cards; i++) {
        char id[96];
        snprintf(id, sizeof(id), "%s-gpu%d", name, i);
        json_array_append_new(reg, json_pack("{s:s,s:i,s:i,s:i,s:i,s:s,s:b}", "id", id, "index", i,
                                             "count", 10, "devmem", mem, "devcore", 100, "type",
                                             "NVIDIA-Tesla T4", "health", 1));
    }
    char *regs = json_dumps(reg, JSON_COMPACT);
    json_decref(reg);
    char alloc[16];
    snprintf(alloc, sizeof(alloc), "%d", cards * 10);
    json_t *n = json_pack("{s:s,s:{s:s,s:{s:s}},s:{s:{s:s}}}", "kind", "Node", "metadata", "name",
                          name, "annotations", "hami.io/node-nvidia-register", regs, "status",
                          "allocatable", "nvidia.com/gpu", alloc);
    free(regs);
    char *out = json_dumps(n, JSON_COMPACT);
    json_decref(n);
    return out;
}

/* A pending pod asking for one GPU with gpumem/gpucores. New string. */
static inline char *vs_harness_pod(const char *name, const char *uid, const char *mem,
                                   const char *cores)
{
    json_t *p = json_pack("{s:s,s:{s:s,s:s,s:s},s:{s:s,s:[{s:s,s:{s:{s:s,s:s,s:s}}}]},s:{s:s}}",
                          "kind", "Pod", "metadata", "name", name, "namespace", "default", "uid",
                          uid, "spec", "schedulerName", "hami-scheduler", "containers", "name", "c",
                          "resources", "limits", "nvidia.com/gpu", "1", "nvidia.com/gpumem", mem,
                          "nvidia.com/gpucores", cores, "status", "phase", "Pending");
    char *out = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return out;
}

struct vs_harness_body {
    char *data;
    size_t len;
};

static inline size_t vs_harness_collect(char *p, size_t sz, size_t n, void *ud)
{
    struct vs_harness_body *b = ud;
    char *g = realloc(b->data, b->len + sz * n + 1);
    if (!g)
        return 0;
    b->data = g;
    memcpy(b->data + b->len, p, sz * n);
    b->len += sz * n;
    b->data[b->len] = '\0';
    return sz * n;
}

/* One HTTPS request to 127.0.0.1:port; returns the HTTP status (0 on transport failure, with
 * the curl error in *out) and the body in *out (new string). */
static inline long vs_harness_call(const struct vs_harness *h, int port, const char *method,
                                   const char *path, const char *ctype, const char *body,
                                   size_t len, char **out)
{
    CURL *c = curl_easy_init();
    char url[256];
    snprintf(url, sizeof(url), "%s://127.0.0.1:%d%s", h->scheme ? h->scheme : "https", port, path);
    struct vs_harness_body b = {0};
    struct curl_slist *hdr = NULL;
    if (ctype) {
        char ct[128];
        snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
        hdr = curl_slist_append(hdr, ct);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, h->ca);
    if (h->client_cert) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, h->client_cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, h->client_key);
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, vs_harness_collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        free(b.data);
        *out = strdup(curl_easy_strerror(rc));
        return 0;
    }
    *out = b.data ? b.data : strdup("");
    return status;
}

/* Waits (10 s at most) until the fake API server on api_port (plain HTTP) holds an Event in
 * namespace default with this reason and message; whether it came. */
static inline bool vs_harness_wait_event(const struct vs_harness *h, int api_port,
                                         const char *reason, const char *message)
{
    struct vs_harness plain = *h;
    plain.scheme = "http";
    bool found = false;
    for (int i = 0; i < 500 && !found; i++) {
        char *out;
        long st = vs_harness_call(&plain, api_port, "GET", "/api/v1/namespaces/default/events",
                                  NULL, NULL, 0, &out);
        json_t *list = st == 200 ? json_loads(out, 0, NULL) : NULL;
        json_t *it;
        size_t k;
        json_array_foreach(json_object_get(list, "items"), k, it)
        {
            const char *m = json_string_value(json_object_get(it, "message"));
            const char *r = json_string_value(json_object_get(it, "reason"));
            found |= m && r && strcmp(m, message) == 0 && strcmp(r, reason) == 0;
        }
        json_decref(list);
        free(out);
        if (!found)
            usleep(20 * 1000);
    }
    return found;
}

#endif
