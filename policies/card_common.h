/* card_common: comparisons shared by the card policies (score and NUMA keys, §5.2). */
#ifndef VS_CARD_COMMON_H
#define VS_CARD_COMMON_H

#include "policy.h"

/* Lower score sorts first (binpack: the highest score is tried first). */
static inline int vs_cmp_score_asc(const struct vs_scard *a, const struct vs_scard *b)
{
    return a->score < b->score ? -1 : (a->score > b->score ? 1 : 0);
}

/* Lower NUMA id sorts first. */
static inline int vs_cmp_numa_asc(const struct vs_scard *a, const struct vs_scard *b)
{
    return a->c->numa < b->c->numa ? -1 : (a->c->numa > b->c->numa ? 1 : 0);
}

#endif
