/* kubetest: helpers shared by the kube client's tests (test_kube_*.c): temp directories and
 * files, a fake API and a client for it, pod builders, JSON getters, and a thread-safe record
 * of lines written by handlers. Static inline so each test file stays self-contained. */
#ifndef VS_TEST_KUBETEST_H
#define VS_TEST_KUBETEST_H

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

static inline char *mkdir_tmp(void)
{
    char *d = strdup("/tmp/vs-kube-XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

static inline int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

static inline void rm_tree(char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* Writes dir/name (creating dir/sub for "sub/x"); returns the full path (free()). */
static inline char *write_at(const char *dir, const char *name, const char *content)
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

static inline char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

static inline struct vs_fakeapi *fake(const struct vs_fakeapi_opts *o)
{
    struct vs_fakeapi_opts def = {.quiet = true};
    struct vs_fakeapi *api = vs_fakeapi_start(o ? o : &def);
    cr_assert_not_null(api);
    return api;
}

static inline struct vs_kube *client_cfg(struct vs_kube_config *cfg, int timeout_s)
{
    struct vs_kube_opts o = {.qps = 0, .burst = 0, .timeout_s = timeout_s, .user_agent = "test"};
    struct vs_errbuf eb = {{0}};
    struct vs_kube *k = vs_kube_new(cfg, &o, &eb);
    cr_assert_not_null(k, "%s", eb.msg);
    return k;
}

static inline struct vs_kube *client(struct vs_fakeapi *api, const char *token,
                                     const char *token_file)
{
    struct vs_kube_config cfg = {.server = (char *)vs_fakeapi_url(api),
                                 .token = (char *)token,
                                 .token_file = (char *)token_file};
    return client_cfg(&cfg, 10);
}

static inline uint64_t put_pod(struct vs_fakeapi *api, const char *ns, const char *name,
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

static inline const char *jstr(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

static inline const char *ann(const json_t *o, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"), key));
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Criterion runs each parameterized case in a fresh process: parameter tables and their
 * strings must live in its shared memory (cr_malloc). */
static inline char *shared_str(const char *s)
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

static inline void rec_init(struct rec *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
}

static inline void rec_cleanup(struct rec *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->lines[i]);
    pthread_mutex_destroy(&r->mu);
}

static inline void rec_add(struct rec *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void rec_add(struct rec *r, const char *fmt, ...)
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

static inline size_t rec_count(struct rec *r, const char *prefix)
{
    size_t n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n; i++)
        if (strncmp(r->lines[i], prefix, strlen(prefix)) == 0)
            n++;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static inline bool rec_wait(struct rec *r, const char *prefix, size_t n)
{
    for (int waited = 0; waited < WAIT_MS; waited += 10) {
        if (rec_count(r, prefix) >= n)
            return true;
        sleep_ms(10);
    }
    return false;
}

/* Lines joined by '\n', leaving out lines starting with `skip` (NULL = none). */
static inline char *rec_join(struct rec *r, const char *skip)
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

static inline const char *obj_key(const json_t *o, char *buf, size_t n)
{
    const char *ns = jstr(o, "metadata", "namespace"), *name = jstr(o, "metadata", "name");
    snprintf(buf, n, "%s/%s", ns ? ns : "", name ? name : "?");
    return buf;
}

#endif
