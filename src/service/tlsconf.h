/* tlsconf: `--tls-min-version` and `--tls-cipher-suites` as Kubernetes components spell them
 * (Go's crypto/tls names), turned into a GnuTLS priority string for the listener. GnuTLS
 * enables key exchanges, ciphers and MACs separately, so the priority string allows every
 * combination of the listed suites' parts; vs_tlsconf_allows then refuses, during the
 * handshake, a TLS 1.2 suite that was not listed (fail closed: the server's order is the list's
 * order, so a client offering a listed suite only after an unlisted combination of listed parts
 * is refused rather than served with the unlisted one). TLS 1.3 suites are not configurable (as in
 * Go): listing one is accepted and changes nothing. */
#ifndef VS_TLSCONF_H
#define VS_TLSCONF_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define VS_TLS_MAX_SUITES 32

struct vs_tlsconf {
    int min_version; /* 0x0303 (TLS 1.2) or 0x0304 (TLS 1.3) */
    char *priority;  /* GnuTLS priority string; owned */
    size_t n_suites; /* listed TLS 1.2 suites; 0 = GnuTLS defaults (no handshake check) */
    int kx[VS_TLS_MAX_SUITES], cipher[VS_TLS_MAX_SUITES], mac[VS_TLS_MAX_SUITES]; /* gnutls ids */
};

/* Parses the two flag values (NULL or "" = default: TLS 1.2, GnuTLS's default suites) and
 * builds the priority string, checked with gnutls_priority_init. On error nothing is left to
 * clean up and eb names the flag and the bad value. */
enum vs_err vs_tlsconf_build(const char *min_version, const char *cipher_suites,
                             struct vs_tlsconf *out, struct vs_errbuf *eb);
void vs_tlsconf_cleanup(struct vs_tlsconf *c);

/* Whether a negotiated TLS 1.2 suite (GnuTLS kx, cipher and mac ids) was listed. Always true
 * when no suites were listed. */
bool vs_tlsconf_allows(const struct vs_tlsconf *c, int kx, int cipher, int mac);

#endif
