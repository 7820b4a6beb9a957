/* mig: placement search. Placements of size <= 0 are never legal (they could never overlap
 * anything, which would let one card host unbounded instances). */
#include "mig.h"

#include <string.h>

bool vs_mig_overlaps(struct vs_mig_placement a, struct vs_mig_placement b)
{
    return a.start < b.start + b.size && b.start < a.start + a.size;
}

static bool is_free(struct vs_mig_placement pl, const struct vs_mig_placement *occ, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (vs_mig_overlaps(pl, occ[i]))
            return false;
    return true;
}

bool vs_mig_choose(const struct vs_card *c, const struct vs_mig_placement *occ, size_t n_occ,
                   int64_t mem, const struct vs_mig_profile **profile,
                   struct vs_mig_placement *placement)
{
    for (size_t i = 0; i < c->n_profiles; i++) {
        const struct vs_mig_profile *p = &c->profiles[i];
        if (p->memory_mb < mem)
            continue;
        bool desc = p->name && (strncmp(p->name, "1g.", 3) == 0 || strncmp(p->name, "3g.", 3) == 0);
        /* Walk placements in start order without sorting a copy: repeatedly take the next
         * start after (or before) the last one tried. Lists are short (<= 8). */
        int64_t last = desc ? INT64_MAX : INT64_MIN;
        for (size_t tried = 0; tried < p->n_placements; tried++) {
            const struct vs_mig_placement *next = NULL;
            for (size_t k = 0; k < p->n_placements; k++) {
                const struct vs_mig_placement *pl = &p->placements[k];
                if (desc ? pl->start >= last : pl->start <= last)
                    continue;
                if (!next || (desc ? pl->start > next->start : pl->start < next->start))
                    next = pl;
            }
            if (!next)
                break;
            last = next->start;
            /* Placements sharing one start are tried in list order. */
            for (size_t k = 0; k < p->n_placements; k++) {
                const struct vs_mig_placement *pl = &p->placements[k];
                if (pl->start != last || pl->size <= 0)
                    continue;
                if (is_free(*pl, occ, n_occ)) {
                    *profile = p;
                    *placement = *pl;
                    return true;
                }
            }
        }
    }
    return false;
}
