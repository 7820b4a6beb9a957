/* policy: the registry of node and card policies and the parsing of policy strings, including
 * HAMi's comma chains (§5.2). Each policy's behaviour lives in policies/<kind>_<name>.c. */
#include "policy.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const struct vs_card_policy *const card_table[] = {
    &vs_card_policy_binpack, &vs_card_policy_spread, &vs_card_policy_topology,
    &vs_card_policy_mutex,   &vs_card_policy_numa,   &vs_card_policy_fragmentation,
};
#define N_CARD (sizeof(card_table) / sizeof(card_table[0]))

static const struct vs_node_policy *const node_table[] = {
    &vs_node_policy_binpack,
    &vs_node_policy_spread,
    &vs_node_policy_fragmentation,
};
#define N_NODE (sizeof(node_table) / sizeof(node_table[0]))

static const struct vs_card_policy *card_lookup(const char *w, size_t n)
{
    for (size_t i = 0; i < N_CARD; i++)
        if (strlen(card_table[i]->name) == n && strncasecmp(card_table[i]->name, w, n) == 0)
            return card_table[i];
    return NULL;
}

enum vs_err vs_policy_parse_gpu(const char *val, const char *key, struct vs_gpu_policy *out,
                                struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    const struct vs_card_policy *words[16];
    size_t nw = 0;
    bool comma = strchr(val, ',') != NULL;
    const char *p = val;
    for (;;) {
        const char *end = strchr(p, ',');
        const char *s = p, *e = end ? end : p + strlen(p);
        while (s < e && isspace((unsigned char)*s))
            s++;
        while (e > s && isspace((unsigned char)e[-1]))
            e--;
        if (e > s) {
            const struct vs_card_policy *cp = card_lookup(s, (size_t)(e - s));
            if (!cp)
                return vs_err_set(eb, VS_ERR_INVAL,
                                  "invalid %s \"%s\": unknown policy \"%.*s\" (want binpack, "
                                  "spread, topology-aware, mutex, numa or a comma list of them)",
                                  key, val, (int)(e - s > 64 ? 64 : e - s), s);
            if (nw < 16)
                words[nw++] = cp;
        }
        if (!end)
            break;
        p = end + 1;
    }
    if (nw == 0)
        return vs_err_set(eb, VS_ERR_INVAL, "invalid %s \"%s\": no policy given", key, val);
    for (size_t i = 0; i < nw; i++) {
        out->topology |= words[i] == &vs_card_policy_topology;
        out->mutex |= words[i] == &vs_card_policy_mutex;
    }
    out->chain = comma || (nw == 1 && words[0] == &vs_card_policy_numa);
    if (!out->chain) {
        out->single = words[0];
        return VS_OK;
    }
    for (size_t i = 0; i < nw; i++) {
        if (words[i]->kind != VS_CARD_SORT)
            continue;
        bool dup = false;
        for (size_t k = 0; k < out->n_keys; k++)
            dup |= out->keys[k] == words[i];
        if (!dup && out->n_keys < VS_MAX_KEYS)
            out->keys[out->n_keys++] = words[i];
    }
    if (out->n_keys == 0)
        out->keys[out->n_keys++] = &vs_card_policy_spread;
    return VS_OK;
}

bool vs_gpu_policy_spreads(const struct vs_gpu_policy *p)
{
    if (!p->chain) /* topology-aware alone orders the cards as spread does (card_topology.c) */
        return p->single == &vs_card_policy_spread || p->single == &vs_card_policy_topology;
    for (size_t k = 0; k < p->n_keys; k++)
        if (p->keys[k] == &vs_card_policy_spread || p->keys[k] == &vs_card_policy_binpack)
            return p->keys[k] == &vs_card_policy_spread;
    return false;
}

int vs_policy_card_cmp(const struct vs_gpu_policy *p, bool numa_bind, const struct vs_scard *a,
                       const struct vs_scard *b)
{
    if (p->chain) {
        const struct vs_card_policy *keys[VS_MAX_KEYS + 1];
        size_t nk = 0;
        if (numa_bind && p->keys[0] != &vs_card_policy_numa)
            keys[nk++] = &vs_card_policy_numa;
        for (size_t i = 0; i < p->n_keys; i++)
            if (!(numa_bind && p->keys[i] == &vs_card_policy_numa && nk > 0 &&
                  keys[0] == &vs_card_policy_numa))
                keys[nk++] = p->keys[i];
        for (size_t i = 0; i < nk; i++) {
            int c = keys[i]->key_cmp(a, b);
            if (c)
                return c;
        }
        if (a->c->index != b->c->index)
            return a->c->index < b->c->index ? -1 : 1;
        return 0;
    }
    return p->single->single_cmp(a, b, numa_bind);
}

enum vs_err vs_policy_parse_node(const char *val, const char *key,
                                 const struct vs_node_policy **out, struct vs_errbuf *eb)
{
    const char *s = val, *e = val + strlen(val);
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    for (size_t i = 0; i < N_NODE; i++) {
        if (strlen(node_table[i]->name) == (size_t)(e - s) &&
            strncasecmp(node_table[i]->name, s, (size_t)(e - s)) == 0) {
            *out = node_table[i];
            return VS_OK;
        }
    }
    return vs_err_set(eb, VS_ERR_INVAL,
                      "invalid %s \"%s\": unknown policy \"%.*s\" (want binpack or spread)", key,
                      val, (int)(e - s > 64 ? 64 : e - s), s);
}
