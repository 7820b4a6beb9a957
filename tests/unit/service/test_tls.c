/* test_tls: the HTTPS listener's protocol floor, cipher-suite list and client-certificate
 * check, probed with an in-process OpenSSL client that can offer exactly one protocol version
 * or suite (OpenSSL's own floor is lowered to security level 0 so a TLS 1.0/1.1 ClientHello is
 * really sent and the refusal comes from the server). */
#include "harness.h"
#include "server.h"
#include "tlsconf.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <malloc.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>

static struct vs_harness h;
static struct vs_server *srv;

static void ok_handler(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    resp->status = 200;
    resp->body = strdup("ok");
    resp->content_type = "text/plain";
}

/* A streamed body (vs_http_resp.stream_read): STREAM_BYTES of a letter pattern, at most 1,000
 * bytes a read; with ctx set, the read after the first fails. */
#define STREAM_BYTES 250000
struct gen {
    size_t pos;
    bool fail;
};
static atomic_int streams_freed;

static long gen_read(void *ctx, char *buf, size_t max)
{
    struct gen *g = ctx;
    if (g->fail && g->pos)
        return -1;
    size_t n = STREAM_BYTES - g->pos < max ? STREAM_BYTES - g->pos : max;
    if (n > 1000)
        n = 1000;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)('a' + (g->pos + i) % 26);
    g->pos += n;
    return (long)n;
}

static void gen_free(void *ctx)
{
    free(ctx);
    atomic_fetch_add(&streams_freed, 1);
}

static void stream_handler(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct gen *g = calloc(1, sizeof(*g));
    cr_assert_not_null(g);
    g->fail = ctx != NULL;
    resp->status = 200;
    resp->content_type = "text/plain";
    resp->stream_read = gen_read;
    resp->stream_free = gen_free;
    resp->stream_ctx = g;
}

static const struct vs_route routes[] = {
    {"GET", "/healthz", ok_handler, NULL, false, false},
    {"GET", "/stream", stream_handler, NULL, false, false},
    {"GET", "/stream-fails", stream_handler, "fail", false, false},
};

static void setup(void)
{
    vs_harness_init(&h);
}

static void teardown(void)
{
    vs_server_stop(srv);
    srv = NULL;
    vs_harness_cleanup(&h);
}

TestSuite(tls, .init = setup, .fini = teardown);

/* Starts srv with o and the suite's one route on a free loopback port. */
static void start_opts(struct vs_server_opts o)
{
    o.bind = "127.0.0.1:0";
    o.threads = 2;
    o.routes = routes;
    o.n_routes = sizeof(routes) / sizeof(routes[0]);
    o.name = "main";
    struct vs_errbuf eb = {{0}};
    srv = vs_server_start(&o, &eb);
    cr_assert_not_null(srv, "%s", eb.msg);
}

static void start(const char *min_version, const char *suites, const char *client_ca)
{
    start_opts((struct vs_server_opts){.cert_file = h.cert,
                                       .key_file = h.key,
                                       .client_ca_file = client_ca,
                                       .tls_min_version = min_version,
                                       .tls_cipher_suites = suites});
}

struct probe {
    int version;     /* negotiated protocol, 0 when the handshake failed */
    char cipher[64]; /* negotiated suite (OpenSSL's name) */
    char resp[512];  /* what GET /healthz returned (status line and body) */
};

/* One connection offering exactly [minv, maxv] and the given TLS 1.2 cipher list; when the
 * handshake succeeds, sends GET /healthz and keeps the response. */
static struct probe connect_with(int minv, int maxv, const char *ciphers, const char *cert,
                                 const char *key)
{
    struct probe p = {0};
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    cr_assert_not_null(ctx);
    SSL_CTX_set_security_level(ctx, 0);
    cr_assert_eq(SSL_CTX_set_min_proto_version(ctx, minv), 1);
    cr_assert_eq(SSL_CTX_set_max_proto_version(ctx, maxv), 1);
    cr_assert_eq(SSL_CTX_set_cipher_list(ctx, ciphers ? ciphers : "DEFAULT:@SECLEVEL=0"), 1);
    if (cert) {
        cr_assert_eq(SSL_CTX_use_certificate_file(ctx, cert, SSL_FILETYPE_PEM), 1);
        cr_assert_eq(SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM), 1);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(vs_server_port(srv))};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
        const char *req = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        size_t n = 0;
        if (SSL_write(ssl, req, (int)strlen(req)) > 0) {
            int r;
            while (n + 1 < sizeof(p.resp) &&
                   (r = SSL_read(ssl, p.resp + n, (int)(sizeof(p.resp) - 1 - n))) > 0)
                n += (size_t)r;
        }
        p.resp[n] = '\0';
        /* TLS 1.2 finishes on the client before the server has checked the client's
         * Finished: the handshake only counts when the server answered. */
        if (n > 0) {
            p.version = SSL_version(ssl);
            snprintf(p.cipher, sizeof(p.cipher), "%s", SSL_get_cipher_name(ssl));
        }
    }
    ERR_clear_error();
    SSL_free(ssl);
    close(fd);
    SSL_CTX_free(ctx);
    return p;
}

static struct probe connect_version(int v)
{
    return connect_with(v, v, NULL, NULL, NULL);
}

static bool answered_ok(const struct probe *p)
{
    return strncmp(p->resp, "HTTP/1.1 200", 12) == 0 && strstr(p->resp, "\r\n\r\nok");
}

Test(tls, default_floor_is_tls12)
{
    start(NULL, NULL, NULL);
    struct probe p10 = connect_version(TLS1_VERSION);
    cr_assert_eq(p10.version, 0, "TLS 1.0 negotiated: %s", p10.resp);
    struct probe p11 = connect_version(TLS1_1_VERSION);
    cr_assert_eq(p11.version, 0, "TLS 1.1 negotiated: %s", p11.resp);
    struct probe p12 = connect_version(TLS1_2_VERSION);
    cr_assert_eq(p12.version, TLS1_2_VERSION);
    cr_assert(answered_ok(&p12), "%s", p12.resp);
    struct probe p13 = connect_version(TLS1_3_VERSION);
    cr_assert_eq(p13.version, TLS1_3_VERSION);
    cr_assert(answered_ok(&p13), "%s", p13.resp);
    /* A client offering 1.0 through 1.3 gets 1.3. */
    struct probe any = connect_with(TLS1_VERSION, TLS1_3_VERSION, NULL, NULL, NULL);
    cr_assert_eq(any.version, TLS1_3_VERSION);
}

Test(tls, min_tls13_refuses_tls12)
{
    start("VersionTLS13", NULL, NULL);
    cr_assert_eq(connect_version(TLS1_1_VERSION).version, 0);
    cr_assert_eq(connect_version(TLS1_2_VERSION).version, 0);
    struct probe p13 = connect_version(TLS1_3_VERSION);
    cr_assert_eq(p13.version, TLS1_3_VERSION);
    cr_assert(answered_ok(&p13), "%s", p13.resp);
}

Test(tls, cipher_suites_listed_only)
{
    /* The parts of these two suites also make ECDHE-RSA with AES-256-GCM and RSA with
     * AES-128-GCM: GnuTLS would negotiate them, the handshake check refuses them. */
    start("VersionTLS12", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_256_GCM_SHA384",
          NULL);
    struct probe a =
        connect_with(TLS1_2_VERSION, TLS1_2_VERSION, "ECDHE-RSA-AES128-GCM-SHA256", NULL, NULL);
    cr_assert_str_eq(a.cipher, "ECDHE-RSA-AES128-GCM-SHA256");
    cr_assert(answered_ok(&a), "%s", a.resp);
    struct probe b = connect_with(TLS1_2_VERSION, TLS1_2_VERSION, "AES256-GCM-SHA384", NULL, NULL);
    cr_assert_str_eq(b.cipher, "AES256-GCM-SHA384");
    cr_assert_eq(
        connect_with(TLS1_2_VERSION, TLS1_2_VERSION, "ECDHE-RSA-AES256-GCM-SHA384", NULL, NULL)
            .version,
        0);
    cr_assert_eq(
        connect_with(TLS1_2_VERSION, TLS1_2_VERSION, "AES128-GCM-SHA256", NULL, NULL).version, 0);
    cr_assert_eq(
        connect_with(TLS1_2_VERSION, TLS1_2_VERSION, "ECDHE-RSA-AES128-SHA", NULL, NULL).version,
        0);
    /* TLS 1.3 suites are not configurable (as in Go). */
    cr_assert_eq(connect_version(TLS1_3_VERSION).version, TLS1_3_VERSION);
}

Test(tls, client_certificate_from_another_ca_refused)
{
    vs_harness_sh(&h, "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out "
                      "other.pem -days 1 -subj /CN=other-ca && "
                      "openssl req -newkey rsa:2048 -nodes -keyout bad.key -out bad.csr -subj "
                      "/CN=kube-scheduler && openssl x509 -req -in bad.csr -CA other.pem -CAkey "
                      "other.key -CAcreateserial -out bad.pem -days 1 && "
                      "openssl req -newkey rsa:2048 -nodes -keyout good.key -out good.csr -subj "
                      "/CN=kube-scheduler && openssl x509 -req -in good.csr -CA ca.pem -CAkey "
                      "ca.key -CAcreateserial -out good.pem -days 1");
    start(NULL, NULL, h.ca);
    char bc[160], bk[160], gc[160], gk[160];
    snprintf(bc, sizeof(bc), "%s/bad.pem", h.dir);
    snprintf(bk, sizeof(bk), "%s/bad.key", h.dir);
    snprintf(gc, sizeof(gc), "%s/good.pem", h.dir);
    snprintf(gk, sizeof(gk), "%s/good.key", h.dir);
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        struct probe bad = connect_with(v, v, NULL, bc, bk);
        cr_assert(strncmp(bad.resp, "HTTP/1.1 403", 12) == 0, "%s", bad.resp);
        cr_assert(
            strstr(bad.resp, "\r\n\r\n{\"error\":\"a valid client certificate is required\"}"),
            "%s", bad.resp);
        struct probe none = connect_with(v, v, NULL, NULL, NULL);
        cr_assert(strncmp(none.resp, "HTTP/1.1 403", 12) == 0, "%s", none.resp);
        struct probe good = connect_with(v, v, NULL, gc, gk);
        cr_assert(answered_ok(&good), "%s", good.resp);
    }
}

Test(tls, flag_errors)
{
    struct vs_tlsconf c;
    struct vs_errbuf eb;
    cr_assert_eq(vs_tlsconf_build("VersionTLS11", NULL, &c, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(
        eb.msg, "invalid --tls-min-version \"VersionTLS11\" (want VersionTLS12 or VersionTLS13)");
    cr_assert_eq(vs_tlsconf_build(NULL, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_FOO", &c, &eb),
                 VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "invalid --tls-cipher-suites: unknown cipher suite \"TLS_FOO\" (want "
                             "Go names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)");
    cr_assert_eq(vs_tlsconf_build(NULL, "TLS_RSA_WITH_RC4_128_SHA", &c, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "invalid --tls-cipher-suites: TLS_RSA_WITH_RC4_128_SHA is an RC4 "
                             "suite, which this server does not support");
    cr_assert_eq(vs_tlsconf_build(NULL, "TLS_RSA_WITH_AES_128_CBC_SHA,", &c, &eb), VS_ERR_INVAL);
    cr_assert_str_eq(eb.msg, "invalid --tls-cipher-suites \"TLS_RSA_WITH_AES_128_CBC_SHA,\": "
                             "empty cipher suite name");
    /* The server refuses to start on a bad value, with or without a certificate. */
    struct vs_server_opts o = {
        .bind = "127.0.0.1:0", .tls_min_version = "VersionTLS10", .routes = routes, .n_routes = 1};
    cr_assert_null(vs_server_start(&o, &eb));
    cr_assert_str_eq(
        eb.msg, "invalid --tls-min-version \"VersionTLS10\" (want VersionTLS12 or VersionTLS13)");
}

Test(tls, priority_strings)
{
    struct vs_tlsconf c;
    struct vs_errbuf eb;
    cr_assert_eq(vs_tlsconf_build(NULL, NULL, &c, &eb), VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.priority, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
    cr_assert_eq(c.n_suites, 0);
    vs_tlsconf_cleanup(&c);
    cr_assert_eq(vs_tlsconf_build("VersionTLS13", "TLS_RSA_WITH_AES_128_CBC_SHA", &c, &eb), VS_OK);
    cr_assert_str_eq(c.priority, "NORMAL:-VERS-ALL:+VERS-TLS1.3");
    cr_assert_eq(c.n_suites, 0);
    vs_tlsconf_cleanup(&c);
    cr_assert_eq(vs_tlsconf_build(NULL,
                                  "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,TLS_AES_128_GCM_SHA256,"
                                  "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
                                  &c, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_str_eq(c.priority,
                     "NORMAL:%SERVER_PRECEDENCE:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:"
                     "-CIPHER-ALL:-MAC-ALL:+AES-256-CBC:+CHACHA20-POLY1305:+AES-128-GCM:"
                     "+AES-256-GCM:+SHA1:+AEAD:+ECDHE-ECDSA:+ECDHE-RSA");
    cr_assert_eq(c.n_suites, 2);
    cr_assert(
        vs_tlsconf_allows(&c, GNUTLS_KX_ECDHE_ECDSA, GNUTLS_CIPHER_AES_256_CBC, GNUTLS_MAC_SHA1));
    cr_assert_not(
        vs_tlsconf_allows(&c, GNUTLS_KX_ECDHE_RSA, GNUTLS_CIPHER_AES_256_CBC, GNUTLS_MAC_SHA1));
    vs_tlsconf_cleanup(&c);
}

/* A plain TCP connection to srv on loopback. */
static int connect_plain(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)vs_server_port(srv))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* A plain keep-alive connection: one GET, then whether the server still answers a second GET on
 * it after `idle_ms` of silence (1: answered; 0: the server had closed it). */
static int answers_after_idle(int idle_ms)
{
    int fd = connect_plain();
    const char *get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    char buf[512];
    int answered = 0;
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            usleep((useconds_t)idle_ms * 1000);
        if (send(fd, get, strlen(get), MSG_NOSIGNAL) != (ssize_t)strlen(get))
            break;
        ssize_t got = recv(fd, buf, sizeof(buf) - 1, 0);
        if (got <= 0)
            break;
        buf[got] = '\0';
        cr_assert(strstr(buf, "200") != NULL, "%s", buf);
        answered = round;
    }
    close(fd);
    return answered;
}

static void start_plain(unsigned idle_timeout_s)
{
    start_opts((struct vs_server_opts){.idle_timeout_s = idle_timeout_s});
}

/* The server closes a connection idle past its timeout (1 s here), and by default keeps it well
 * past that (VS_SERVER_IDLE_TIMEOUT_S, longer than Go clients' own 90 s; server.h). */
Test(tls, idle_connection_closed_only_after_the_timeout)
{
    start_plain(1);
    cr_assert_eq(answers_after_idle(3000), 0);
    vs_server_stop(srv);
    start_plain(0);
    cr_assert_eq(answers_after_idle(3000), 1);
}

/* Each connection's memory pool is libmicrohttpd's malloc'd one (server.c, CONN_POOL_BYTES:
 * 32 KiB): 16 open keep-alive connections add at least their 16 pools to the bytes malloc has
 * handed out. (A pool over 32 KiB is mapped instead and adds nothing there.) */
Test(tls, connection_pools_are_malloc_chunks)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    cr_skip_test("the sanitizer's allocator is not glibc's: mallinfo2 does not see it");
#endif
    start_plain(0);
    enum { N = 16 };
    int fds[N];
    const char *get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < N; i++) {
        fds[i] = connect_plain();
        cr_assert_eq(send(fds[i], get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
        char buf[512];
        ssize_t got = recv(fds[i], buf, sizeof(buf) - 1, 0); /* answered: the pool is in use */
        cr_assert_gt(got, 0);
        buf[got] = '\0';
        cr_assert(strstr(buf, "200") != NULL, "%s", buf);
    }
    size_t after = mallinfo2().uordblks;
    for (int i = 0; i < N; i++)
        close(fds[i]);
    long long grown = (long long)after - (long long)before;
    cr_assert_geq(grown, N * 32 * 1024, "%d connections added %lld bytes of malloc'd memory", N,
                  grown);
}

/* A connection whose descriptor is past FD_SETSIZE (1024) is served: the workers wait in
 * poll() (epoll where poll is missing), never select(), with which libmicrohttpd closes such a
 * connection before reading it (a burst's waiting Binds, API connections and watches can pass
 * 1,024). */
Test(tls, connection_past_fd_setsize_is_served)
{
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 1100)
        cr_skip_test("descriptor hard limit %llu is below 1,100", (unsigned long long)rl.rlim_max);
    if (rl.rlim_cur < 1100) {
        rl.rlim_cur = 1100;
        cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    int fill;
    do {
        fill = open("/dev/null", O_RDONLY);
        cr_assert_geq(fill, 0);
    } while (fill < 1040);
    start_plain(0);
    int fd = connect_plain();
    cr_assert_geq(fd, 1024);
    const char *get = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    cr_assert_eq(send(fd, get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
    char buf[512];
    ssize_t got = recv(fd, buf, sizeof(buf) - 1, 0);
    cr_assert_gt(got, 0, "the server closed the connection unanswered");
    buf[got] = '\0';
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
    close(fd);
}

/* One thread accepts and hands each connection to a worker (server.c, accept_main): 64
 * connections opened before any is read from, 32 times the workers, are each answered, and
 * counted once each. */
Test(tls, connections_opened_at_once_are_each_served)
{
    _Atomic unsigned long long accepted = 0;
    start_opts((struct vs_server_opts){.accepted = &accepted});
    enum { N = 64 };
    int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = connect_plain();
    const char *get = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    for (int i = 0; i < N; i++)
        cr_assert_eq(send(fds[i], get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
    for (int i = N - 1; i >= 0; i--) {
        char buf[512];
        ssize_t got = recv(fds[i], buf, sizeof(buf) - 1, 0);
        cr_assert_gt(got, 0, "connection %d closed unanswered", i);
        buf[got] = '\0';
        cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "connection %d: %s", i, buf);
        close(fds[i]);
    }
    cr_assert_eq(atomic_load(&accepted), N);
}

/* Waits up to 10 s for streams_freed to reach n. */
static void wait_streams_freed(int n)
{
    for (int i = 0; i < 1000 && atomic_load(&streams_freed) < n; i++)
        usleep(10000);
    cr_assert_eq(atomic_load(&streams_freed), n);
}

/* A streamed body arrives whole (chunked, over many reads of the handler's stream) and its
 * context is freed once; one whose read fails ends the transfer short, and is freed too. */
Test(tls, streamed_body_whole_then_freed)
{
    start_plain(0);
    atomic_store(&streams_freed, 0);
    struct vs_harness plain = h;
    plain.scheme = "http";
    char *out;
    cr_assert_eq(
        vs_harness_call(&plain, vs_server_port(srv), "GET", "/stream", NULL, NULL, 0, &out), 200);
    cr_assert_eq(strlen(out), STREAM_BYTES);
    for (size_t i = 0; i < STREAM_BYTES; i++)
        cr_assert_eq(out[i], (char)('a' + i % 26), "byte %zu", i);
    free(out);
    wait_streams_freed(1);
    cr_assert_eq(
        vs_harness_call(&plain, vs_server_port(srv), "GET", "/stream-fails", NULL, NULL, 0, &out),
        0, "%s", out);
    free(out);
    wait_streams_freed(2);
}
