/* card policy `spread` (HAMi's default): the least-loaded card is tried first. Sorted by
 * higher score first; single-word ties go to the lower NUMA id (tried later). */
#include "card_common.h"

static int key_cmp(const struct vs_scard *a, const struct vs_scard *b)
{
    return -vs_cmp_score_asc(a, b);
}

static int single_cmp(const struct vs_scard *a, const struct vs_scard *b, bool numa_bind)
{
    int c;
    if (numa_bind && (c = vs_cmp_numa_asc(a, b)))
        return c;
    if ((c = key_cmp(a, b)))
        return c;
    return vs_cmp_numa_asc(a, b);
}

const struct vs_card_policy vs_card_policy_spread = {
    .name = "spread",
    .kind = VS_CARD_SORT,
    .usage = VS_USAGE_SPREAD,
    .key_cmp = key_cmp,
    .single_cmp = single_cmp,
};
