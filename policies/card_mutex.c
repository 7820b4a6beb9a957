/* card policy `mutex`: only idle cards (no slot in use) are eligible, so a pod never shares a
 * card. Alone it sorts busier cards first so the idle ones are tried first; numa-bind is
 * ignored in that order, as in HAMi. */
#include "card_common.h"

static int single_cmp(const struct vs_scard *a, const struct vs_scard *b, bool numa_bind)
{
    if (a->used != b->used)
        return a->used > b->used ? -1 : 1;
    return vs_cmp_numa_asc(a, b);
}

static bool eligible(const struct vs_scard *c)
{
    return c->used == 0;
}

const struct vs_card_policy vs_card_policy_mutex = {
    .name = "mutex",
    .kind = VS_CARD_SELECT,
    .exclusive = true,
    .single_cmp = single_cmp,
    .eligible = eligible,
};
