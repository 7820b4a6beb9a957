/* policy: the parsing of policy names and HAMi's comma chains (§5.2) over the plug-in registry
 * (policies/registry.c), and the card order a parsed chain gives. */
#include "policy.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Appends name i of n to a list for an error message: "a, b, c" (last_or: "a, b or c"). */
static void list_name(char *buf, size_t size, size_t i, size_t n, const char *name, bool last_or)
{
    size_t len = strlen(buf);
    const char *sep = i == 0 ? "" : (last_or && i + 1 == n ? " or " : ", ");
    snprintf(buf + len, len < size ? size - len : 0, "%s%s", sep, name);
}

static const struct vs_card_policy *card_lookup(const char *w, size_t n)
{
    for (size_t i = 0; i < vs_n_card_policies; i++)
        if (strlen(vs_card_policies[i]->name) == n &&
            strncasecmp(vs_card_policies[i]->name, w, n) == 0)
            return vs_card_policies[i];
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
            if (!cp) {
                char names[256] = "";
                for (size_t i = 0; i < vs_n_card_policies; i++)
                    list_name(names, sizeof(names), i, vs_n_card_policies,
                              vs_card_policies[i]->name, false);
                return vs_err_set(eb, VS_ERR_INVAL,
                                  "invalid %s \"%s\": unknown policy \"%.*s\" (want %s or a comma "
                                  "list of them)",
                                  key, val, (int)(e - s > 64 ? 64 : e - s), s, names);
            }
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
        if (words[i]->subset && !out->subset) {
            out->topology = true;
            out->subset = words[i]->subset;
        }
        out->mutex |= words[i]->exclusive;
    }
    out->chain = comma || (nw == 1 && words[0]->numa);
    if (!out->chain) {
        out->single = words[0];
        out->fragmentation = words[0]->fragmentation;
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
        out->keys[out->n_keys++] = card_lookup("spread", 6);
    for (size_t k = 0; k < out->n_keys; k++)
        out->fragmentation |= out->keys[k]->fragmentation;
    return VS_OK;
}

bool vs_gpu_policy_spreads(const struct vs_gpu_policy *p)
{
    if (!p->chain) /* topology-aware alone orders the cards as spread does (card_topology.c) */
        return p->single->usage == VS_USAGE_SPREAD;
    for (size_t k = 0; k < p->n_keys; k++)
        if (p->keys[k]->usage != VS_USAGE_NONE)
            return p->keys[k]->usage == VS_USAGE_SPREAD;
    return false;
}

int vs_policy_card_cmp(const struct vs_gpu_policy *p, bool numa_bind, const struct vs_scard *a,
                       const struct vs_scard *b)
{
    if (p->chain) {
        /* numa-bind puts the NUMA key first, unless the chain already starts with it. */
        bool numa_first = numa_bind && !p->keys[0]->numa;
        int c;
        if (numa_first && (c = vs_cmp_numa_asc(a, b)))
            return c;
        for (size_t i = 0; i < p->n_keys; i++) {
            if (numa_first && p->keys[i]->numa)
                continue;
            if ((c = p->keys[i]->key_cmp(a, b)))
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
    for (size_t i = 0; i < vs_n_node_policies; i++) {
        if (strlen(vs_node_policies[i]->name) == (size_t)(e - s) &&
            strncasecmp(vs_node_policies[i]->name, s, (size_t)(e - s)) == 0) {
            *out = vs_node_policies[i];
            return VS_OK;
        }
    }
    char names[256] = "";
    for (size_t i = 0; i < vs_n_node_policies; i++)
        list_name(names, sizeof(names), i, vs_n_node_policies, vs_node_policies[i]->name, true);
    return vs_err_set(eb, VS_ERR_INVAL, "invalid %s \"%s\": unknown policy \"%.*s\" (want %s)", key,
                      val, (int)(e - s > 64 ? 64 : e - s), s, names);
}
