/* kunlun: what the two Kunlunxin backends (kunlun.c: whole XPUs, word `kunlun`; xpu.c: vXPU
 * shares, word `XPU`) share (spec/hami-vendors.md §2.8): the device-config section, the UUID
 * selector annotations both honour, and the 8-XPU board topology of topo.c. */
#ifndef VS_DEVICES_KUNLUN_H
#define VS_DEVICES_KUNLUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

#define VS_KUNLUN_SECTION "kunlun"

struct vs_scard;

/* HAMi's graghSelect (topo.go) over a Fit's candidates in their sorted order: fits[i] tells
 * whether the card at position i may be used and index[i] is its card index. The left wing is
 * positions 0-3, the right wing positions 4 and up (a position is not an index once cards are
 * sorted by usage: HAMi's behaviour, kept for identical choices). Writes the chosen card indices
 * to out (room for nums) and returns how many; 0 when no allowed topology exists (only 1, 2, 4
 * and 8 cards are possible). Fewer than nums only for nodes of more than 8 cards, where HAMi
 * never picks past position 7. */
size_t vs_kunlun_select(const bool *fits, const uint32_t *index, size_t n, int32_t nums,
                        uint32_t *out);

/* HAMi's calcscore: the node-score term for the indices of busy cards before the pod (prev)
 * and the indices the pod takes (cur): 3000, 2000, 1000 or 0 as the wings' fragmentation
 * improves or worsens. */
double vs_kunlun_score(const uint32_t *prev, size_t n_prev, const uint32_t *cur, size_t n_cur);

/* A Kunlun Fit over fc's candidates with per-card predicate fits (HAMi's fitFn without the UUID
 * check, which this adds): the picks for fc->req (card usage taken from the card when
 * whole_card, else the request) or the refusal reason (HAMi's order: mutex conflicts when
 * `mutex_used` counts them, UUID mismatches, else NumaNotFit). */
char *vs_kunlun_fit(const struct vs_fit_call *fc,
                    bool (*fits)(const struct vs_fit_call *fc, const struct vs_scard *s),
                    bool whole_card, bool mutex_used, struct vs_pick *picks, bool *nomem);

enum vs_err vs_kunlun_make_xpu(const struct vs_devcfg *cfg, struct vs_devices *set,
                               struct vs_errbuf *eb);

#endif
