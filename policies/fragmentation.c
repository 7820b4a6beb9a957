/* fragmentation: the node and card policies named `fragmentation`, which order nodes and cards by
 * the growth of the fragmentation measure (src/core/frag.h). */
#include "card_common.h"

/* Card policy: the card where the fragmentation grows least is tried first (sorts last);
 * equal growth: the fuller card (HAMi's card score), then NUMA as binpack does. */
static int key_cmp(const struct vs_scard *a, const struct vs_scard *b)
{
    return a->frag > b->frag ? -1 : (a->frag < b->frag ? 1 : 0);
}

static int single_cmp(const struct vs_scard *a, const struct vs_scard *b, bool numa_bind)
{
    int c;
    if (numa_bind && (c = -vs_cmp_numa_asc(a, b)))
        return c;
    if ((c = key_cmp(a, b)))
        return c;
    if ((c = vs_cmp_score_asc(a, b)))
        return c;
    return vs_cmp_numa_asc(a, b);
}

const struct vs_card_policy vs_card_policy_fragmentation = {
    .name = "fragmentation",
    .kind = VS_CARD_SORT,
    .fragmentation = true,
    .key_cmp = key_cmp,
    .single_cmp = single_cmp,
};

/* Node policy: scored by vs_sched (the node's fragmentation growth); `better` compares the
 * tie-break, HAMi's node score, as binpack does. */
static bool better(float a, float b)
{
    return a > b;
}

const struct vs_node_policy vs_node_policy_fragmentation = {
    .name = "fragmentation", .better = better, .fragmentation = true};
