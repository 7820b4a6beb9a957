/* card policy `topology-aware`: Fit collects every card that passes the checks, then picks
 * the best-connected subset over the NVLink/PCIe pair scores of hami.io/node-nvidia-score
 * (multi-card) or the worst-connected single card (one card, keeping good groups free).
 * Subsets are enumerated in lexicographic order; the first strictly best wins. Enumeration is
 * capped: past VS_TOPO_MAX_SUBSETS subsets the search continues greedily from the best prefix. */
#include "card_common.h"

#include <string.h>

#define VS_TOPO_MAX_SUBSETS 2000000u
#define VS_TOPO_MAX_NUMS    64

static int single_cmp(const struct vs_scard *a, const struct vs_scard *b, bool numa_bind)
{
    /* Same order as spread. */
    int c;
    if (numa_bind && (c = vs_cmp_numa_asc(a, b)))
        return c;
    if ((c = -vs_cmp_score_asc(a, b)))
        return c;
    return vs_cmp_numa_asc(a, b);
}

static int64_t pair(const struct vs_scard *const *col, size_t a, size_t b, const int64_t *topo,
                    size_t n_cards)
{
    return topo ? topo[col[a]->pos * n_cards + col[b]->pos] : 0;
}

static int64_t subset_score(const struct vs_scard *const *col, const size_t *idx, size_t k,
                            const int64_t *topo, size_t n_cards)
{
    int64_t s = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = i + 1; j < k; j++)
            s += pair(col, idx[i], idx[j], topo, n_cards);
    return s;
}

static void subset(const struct vs_scard *const *col, size_t n, size_t nums, const int64_t *topo,
                   size_t n_cards, size_t *out)
{
    if (nums == 1) {
        size_t best = 0;
        int64_t best_sum = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t sum = 0;
            for (size_t j = 0; j < n; j++)
                if (j != i)
                    sum += pair(col, i, j, topo, n_cards);
            if (i == 0 || sum < best_sum) {
                best = i;
                best_sum = sum;
            }
        }
        out[0] = best;
        return;
    }
    if (nums > VS_TOPO_MAX_NUMS)
        nums = VS_TOPO_MAX_NUMS;
    size_t idx[VS_TOPO_MAX_NUMS];
    for (size_t i = 0; i < nums; i++)
        idx[i] = out[i] = i;
    int64_t best = subset_score(col, idx, nums, topo, n_cards);
    size_t visited = 1;
    for (;;) {
        /* Next combination in lexicographic order. */
        size_t i = nums;
        while (i > 0 && idx[i - 1] == n - nums + (i - 1))
            i--;
        if (i == 0 || visited >= VS_TOPO_MAX_SUBSETS)
            break;
        idx[i - 1]++;
        for (size_t j = i; j < nums; j++)
            idx[j] = idx[j - 1] + 1;
        visited++;
        int64_t s = subset_score(col, idx, nums, topo, n_cards);
        if (s > best) {
            best = s;
            memcpy(out, idx, nums * sizeof(*idx));
        }
    }
}

/* Alone, it orders the cards as spread does (single_cmp), so it counts as spreading. */
const struct vs_card_policy vs_card_policy_topology = {
    .name = "topology-aware",
    .kind = VS_CARD_SELECT,
    .usage = VS_USAGE_SPREAD,
    .single_cmp = single_cmp,
    .subset = subset,
};
