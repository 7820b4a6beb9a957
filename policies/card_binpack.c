/* card policy `binpack`: the most-loaded card that still fits is tried first. Sorted by lower
 * score first; with numa-bind the higher NUMA id sorts first. */
#include "card_common.h"

static int single_cmp(const struct vs_scard *a, const struct vs_scard *b, bool numa_bind)
{
    int c;
    if (numa_bind && (c = -vs_cmp_numa_asc(a, b)))
        return c;
    if ((c = vs_cmp_score_asc(a, b)))
        return c;
    return vs_cmp_numa_asc(a, b);
}

const struct vs_card_policy vs_card_policy_binpack = {
    .name = "binpack",
    .kind = VS_CARD_SORT,
    .usage = VS_USAGE_PACK,
    .key_cmp = vs_cmp_score_asc,
    .single_cmp = single_cmp,
};
