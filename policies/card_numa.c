/* card policy `numa`: a sort key grouping cards by NUMA node (lower id sorts first). Alone it
 * is a one-key chain, so ties fall back to the card index. */
#include "card_common.h"

static int single_cmp(const struct vs_scard *a, const struct vs_scard *b, bool numa_bind)
{
    int c = vs_cmp_numa_asc(a, b);
    if (c)
        return c;
    return a->c->index < b->c->index ? -1 : (a->c->index > b->c->index ? 1 : 0);
}

const struct vs_card_policy vs_card_policy_numa = {
    .name = "numa",
    .kind = VS_CARD_SORT,
    .numa = true,
    .key_cmp = vs_cmp_numa_asc,
    .single_cmp = single_cmp,
};
