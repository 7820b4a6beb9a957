/* mig: dynamic MIG geometry (spec/hami-compat.md §10.2): map a memory request to the smallest
 * fitting profile at a free legal placement of a card, given the placements already taken. */
#ifndef VS_MIG_H
#define VS_MIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "annot.h"
#include "model.h"

/* Chooses (profile, placement) for `mem` MiB on card c whose occupied placements are occ.
 * Profiles are tried by (memoryMB, sliceCount) ascending (the model keeps them sorted);
 * placements by descending start for `1g.*`/`3g.*` profiles, else ascending start. Returns
 * false when no profile has memoryMB >= mem and a free placement. */
bool vs_mig_choose(const struct vs_card *c, const struct vs_mig_placement *occ, size_t n_occ,
                   int64_t mem, const struct vs_mig_profile **profile,
                   struct vs_mig_placement *placement);

bool vs_mig_overlaps(struct vs_mig_placement a, struct vs_mig_placement b);

#endif
