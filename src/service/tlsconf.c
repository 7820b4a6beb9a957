/* tlsconf: Go cipher-suite names -> GnuTLS priority parts. The table holds every name
 * Kubernetes' --tls-cipher-suites accepts (crypto/tls CipherSuites and InsecureCipherSuites,
 * plus the two legacy CHACHA20 spellings); RC4 suites are known but refused (GnuTLS has no RC4
 * in TLS 1.2 priorities any more). */
#include "tlsconf.h"

#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct suite {
    const char *go;
    const char *kx, *cipher, *mac; /* NULL kx: a TLS 1.3 suite (not configurable) */
    bool unsupported;
};

static const struct suite suites[] = {
    {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "RSA", "3DES-CBC", "SHA1", false},
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1", false},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1", false},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "RSA", "AES-128-CBC", "SHA256", false},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD", false},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1", false},
    {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA", "3DES-CBC", "SHA1", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1", false},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA", "AES-128-CBC", "SHA256", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA", "AES-128-CBC", "SHA256", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM", "AEAD", false},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM", "AEAD", false},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD",
     false},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD", false},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD",
     false},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD", false},
    {"TLS_AES_128_GCM_SHA256", NULL, NULL, NULL, false},
    {"TLS_AES_256_GCM_SHA384", NULL, NULL, NULL, false},
    {"TLS_CHACHA20_POLY1305_SHA256", NULL, NULL, NULL, false},
    {"TLS_RSA_WITH_RC4_128_SHA", NULL, NULL, NULL, true},
    {"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", NULL, NULL, NULL, true},
    {"TLS_ECDHE_RSA_WITH_RC4_128_SHA", NULL, NULL, NULL, true},
};

static const struct suite *find_suite(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
        if (strlen(suites[i].go) == n && strncmp(suites[i].go, name, n) == 0)
            return &suites[i];
    return NULL;
}

/* Appends ":+part" to buf unless already there. */
static void add_part(char *buf, size_t cap, const char *part)
{
    char tok[64];
    snprintf(tok, sizeof(tok), ":+%s", part);
    size_t tl = strlen(tok);
    for (const char *p = strstr(buf, tok); p; p = strstr(p + 1, tok))
        if (p[tl] == ':' || p[tl] == '\0')
            return;
    strncat(buf, tok, cap - strlen(buf) - 1);
}

void vs_tlsconf_cleanup(struct vs_tlsconf *c)
{
    if (!c)
        return;
    free(c->priority);
    c->priority = NULL;
}

enum vs_err vs_tlsconf_build(const char *min_version, const char *cipher_suites,
                             struct vs_tlsconf *out, struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    if (!min_version || !*min_version || strcmp(min_version, "VersionTLS12") == 0)
        out->min_version = 0x0303;
    else if (strcmp(min_version, "VersionTLS13") == 0)
        out->min_version = 0x0304;
    else
        return vs_err_set(eb, VS_ERR_INVAL,
                          "invalid --tls-min-version \"%s\" (want VersionTLS12 or VersionTLS13)",
                          min_version);
    char kx[256] = "", ciphers[256] = "", macs[128] = "";
    const char *p = cipher_suites ? cipher_suites : "";
    while (*p) {
        while (*p == ' ')
            p++;
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n && p[n - 1] == ' ')
            n--;
        if (n == 0)
            return vs_err_set(eb, VS_ERR_INVAL,
                              "invalid --tls-cipher-suites \"%s\": empty cipher suite name",
                              cipher_suites);
        const struct suite *s = find_suite(p, n);
        if (!s)
            return vs_err_set(eb, VS_ERR_INVAL,
                              "invalid --tls-cipher-suites: unknown cipher suite \"%.*s\" (want "
                              "Go names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)",
                              (int)n, p);
        if (s->unsupported)
            return vs_err_set(eb, VS_ERR_INVAL,
                              "invalid --tls-cipher-suites: %s is an RC4 suite, which this "
                              "server does not support",
                              s->go);
        if (s->kx) {
            if (out->n_suites == VS_TLS_MAX_SUITES)
                return vs_err_set(eb, VS_ERR_INVAL,
                                  "invalid --tls-cipher-suites: more than %d suites",
                                  VS_TLS_MAX_SUITES);
            out->kx[out->n_suites] = (int)gnutls_kx_get_id(s->kx);
            out->cipher[out->n_suites] = (int)gnutls_cipher_get_id(s->cipher);
            out->mac[out->n_suites] = (int)gnutls_mac_get_id(s->mac);
            out->n_suites++;
            add_part(kx, sizeof(kx), s->kx);
            add_part(ciphers, sizeof(ciphers), s->cipher);
            add_part(macs, sizeof(macs), s->mac);
        }
        p += e ? (size_t)(e - p) + 1 : strlen(p);
        if (e && !*p)
            return vs_err_set(eb, VS_ERR_INVAL,
                              "invalid --tls-cipher-suites \"%s\": empty cipher suite name",
                              cipher_suites);
    }
    char prio[1024];
    const char *vers = out->min_version == 0x0304 ? "-VERS-ALL:+VERS-TLS1.3"
                                                  : "-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
    if (out->n_suites && out->min_version == 0x0303) {
        /* TLS 1.3 needs its AEAD ciphers and an ECDHE key exchange in the lists even when only
         * TLS 1.2 suites are listed (GnuTLS derives the 1.3 suites from the same lists). */
        static const char *const tls13_ciphers[] = {"AES-128-GCM", "AES-256-GCM",
                                                    "CHACHA20-POLY1305"};
        for (size_t i = 0; i < 3; i++)
            add_part(ciphers, sizeof(ciphers), tls13_ciphers[i]);
        add_part(macs, sizeof(macs), "AEAD");
        add_part(kx, sizeof(kx), "ECDHE-RSA");
        add_part(kx, sizeof(kx), "ECDHE-ECDSA");
        snprintf(prio, sizeof(prio),
                 "NORMAL:%%SERVER_PRECEDENCE:%s:-KX-ALL:-CIPHER-ALL:-MAC-ALL%s%s%s", vers, ciphers,
                 macs, kx);
    } else {
        snprintf(prio, sizeof(prio), "NORMAL:%s", vers);
    }
    gnutls_priority_t pc;
    const char *errpos = NULL;
    int rc = gnutls_priority_init(&pc, prio, &errpos);
    if (rc < 0)
        return vs_err_set(eb, VS_ERR_TLS, "TLS priority \"%s\" rejected by GnuTLS at \"%s\": %s",
                          prio, errpos ? errpos : "", gnutls_strerror(rc));
    gnutls_priority_deinit(pc);
    if (out->min_version == 0x0304)
        out->n_suites = 0; /* TLS 1.2 is off: the listed 1.2 suites cannot be negotiated */
    if (!(out->priority = strdup(prio)))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    return VS_OK;
}

bool vs_tlsconf_allows(const struct vs_tlsconf *c, int kx, int cipher, int mac)
{
    if (!c || c->n_suites == 0)
        return true;
    for (size_t i = 0; i < c->n_suites; i++)
        if (c->kx[i] == kx && c->cipher[i] == cipher && c->mac[i] == mac)
            return true;
    return false;
}
