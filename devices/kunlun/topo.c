/* topo: the Kunlunxin 8-XPU board as HAMi's topo.go models it (spec/hami-vendors.md §2.8.1):
 * wings of four positions, cross-wing pairs 0-4 1-5 2-6 3-7, in-wing pairs, six 4-card groups,
 * the selection of 1, 2, 4 or 8 cards that leaves the least fragmentation, and the node-score
 * term that rewards it. Shared by the whole-XPU and vXPU backends, which differ only in what
 * makes a card usable. */
#include <stdlib.h>
#include <string.h>

#include "kunlun.h"
#include "policy.h"
#include "request.h"

#define USE_XPU     "hami.io/use-xpu-uuid"
#define NOUSE_XPU   "hami.io/no-use-xpu-uuid"
#define USE_BAIDU   "baidu.com/use-gpuuuid"
#define NOUSE_BAIDU "baidu.com/nouse-gpuuuid"

static const uint32_t cross[4][2] = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
static const uint32_t inwing[12][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3},
                                       {4, 5}, {4, 6}, {4, 7}, {5, 6}, {5, 7}, {6, 7}};
static const uint32_t groups[6][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}, {0, 2, 4, 6},
                                      {1, 3, 5, 7}, {0, 3, 4, 7}, {1, 2, 5, 6}};

static bool has(const uint32_t *set, size_t n, uint32_t v)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == v)
            return true;
    return false;
}

/* devicepick: the first nums fitting cards from position start up to position 7. */
static size_t pick_from(const bool *fits, const uint32_t *index, size_t n, size_t start,
                        int32_t nums, uint32_t *out)
{
    size_t got = 0;
    for (size_t t = start; t < 8 && t < n; t++) {
        if (fits[t]) {
            out[got++] = index[t];
            if (got == (size_t)nums)
                break;
        }
    }
    return got;
}

/* interconnect: two cards forming a cross-wing pair, or four forming a group. */
static size_t interconnect(const bool *fits, const uint32_t *index, size_t n, int32_t nums,
                           uint32_t *out)
{
    if (nums == 2) {
        for (size_t a = 0; a < n; a++) {
            if (!fits[a])
                continue;
            for (size_t b = 0; b < n; b++) {
                if (!fits[b] || index[b] == index[a])
                    continue;
                for (size_t p = 0; p < 4; p++) {
                    if ((cross[p][0] == index[a] && cross[p][1] == index[b]) ||
                        (cross[p][0] == index[b] && cross[p][1] == index[a])) {
                        out[0] = index[a];
                        out[1] = index[b];
                        return 2;
                    }
                }
            }
        }
        return 0;
    }
    if (nums != 4)
        return 0;
    /* The indices of the fitting cards, in position order (HAMi's parseUsage). */
    uint32_t u[64];
    size_t nu = 0;
    for (size_t i = 0; i < n; i++)
        if (fits[i] && nu < 64)
            u[nu++] = index[i];
    size_t ngroups = sizeof(groups) / sizeof(groups[0]);
    if (nu == 4 || nu == 5) {
        for (size_t g = 0; g < ngroups; g++) {
            if (has(u, nu, groups[g][0]) && has(u, nu, groups[g][1]) && has(u, nu, groups[g][2]) &&
                has(u, nu, groups[g][3])) {
                memcpy(out, groups[g], sizeof(groups[g]));
                return 4;
            }
        }
    }
    if (nu != 6)
        return 0;
    /* Six usable: the first group whose two leftover cards are connected, else the last group
     * that fits at all. */
    const uint32_t *ret = NULL;
    for (size_t g = 0; g < ngroups; g++) {
        if (!(has(u, nu, groups[g][0]) && has(u, nu, groups[g][1]) && has(u, nu, groups[g][2]) &&
              has(u, nu, groups[g][3])))
            continue;
        ret = groups[g];
        uint32_t left[6];
        size_t nl = 0;
        for (size_t i = 0; i < nu; i++)
            if (!has(groups[g], 4, u[i]))
                left[nl++] = u[i];
        bool linked = false;
        for (size_t p = 0; p < 4 && !linked; p++)
            linked = has(left, nl, cross[p][0]) && has(left, nl, cross[p][1]);
        for (size_t p = 0; p < 12 && !linked; p++)
            linked = has(left, nl, inwing[p][0]) && has(left, nl, inwing[p][1]);
        if (linked)
            break;
    }
    if (!ret)
        return 0;
    memcpy(out, ret, 4 * sizeof(*out));
    return 4;
}

size_t vs_kunlun_select(const bool *fits, const uint32_t *index, size_t n, int32_t nums,
                        uint32_t *out)
{
    size_t left = 0, right = 0;
    for (size_t i = 0; i < n; i++) {
        if (fits[i])
            *(i < 4 ? &left : &right) += 1;
    }
    if (nums == 8) {
        if (left + right != 8)
            return 0;
        for (uint32_t i = 0; i < 8; i++)
            out[i] = i;
        return 8;
    }
    if (nums != 1 && nums != 2 && nums != 4)
        return 0;
    /* The wing whose free count leaves the least behind: for one card the wing with 1, then 3,
     * then 2, then 4 free; for 2 or 4 the wing with exactly that many free, then more. */
    static const size_t odd[4] = {1, 3, 2, 4};
    if (left >= (size_t)nums || right >= (size_t)nums) {
        for (int32_t slots = nums; slots <= 4; slots++) {
            size_t want = nums % 2 ? odd[slots - 1] : (size_t)slots;
            if (left == want)
                return pick_from(fits, index, n, 0, nums, out);
            if (right == want)
                return pick_from(fits, index, n, 4, nums, out);
        }
    }
    return interconnect(fits, index, n, nums, out);
}

/* countbubble: how fragmented the wings are with the cards at indices idx busy. */
static int bubbles(const uint32_t *idx, size_t n)
{
    size_t left = 0, right = 0;
    for (size_t i = 0; i < n; i++)
        *(idx[i] < 4 ? &left : &right) += 1;
    if (!left && !right)
        return 1;
    int v = 0;
    for (size_t k = 0; k < 2; k++) {
        size_t c = k ? right : left;
        v += c == 4 ? 0 : c == 1 ? 2 : 1;
    }
    return v;
}

double vs_kunlun_score(const uint32_t *prev, size_t n_prev, const uint32_t *cur, size_t n_cur)
{
    switch (bubbles(cur, n_cur) - bubbles(prev, n_prev)) {
    case -1:
        return 3000;
    case 0:
        return 2000;
    case 1:
        return 1000;
    case 2:
        return 0;
    default:
        return 1000;
    }
}

char *vs_kunlun_fit(const struct vs_fit_call *fc,
                    bool (*fits)(const struct vs_fit_call *fc, const struct vs_scard *s),
                    bool whole_card, bool mutex_used, struct vs_pick *picks, bool *nomem)
{
    size_t n = fc->n_cands, nums = (size_t)fc->req->nums;
    bool mutex = mutex_used && fc->gpu->mutex;
    struct vs_reasons why = {.n = 0};
    bool *ok = calloc(n ? n : 1, sizeof(*ok)), *bad_uuid = calloc(n ? n : 1, sizeof(*bad_uuid));
    uint32_t *index = calloc(n ? n : 1, sizeof(*index)), *out = calloc(nums, sizeof(*out));
    bool *taken = calloc(n ? n : 1, sizeof(*taken));
    char *reason = NULL;
    if (!ok || !bad_uuid || !index || !out || !taken) {
        *nomem = true;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const struct vs_scard *s = fc->cands[i];
        index[i] = s->c->index;
        if (!vs_device_uuid_ok(fc->pod, USE_XPU, NOUSE_XPU, s->c->uuid) ||
            !vs_device_uuid_ok(fc->pod, USE_BAIDU, NOUSE_BAIDU, s->c->uuid)) {
            bad_uuid[i] = true;
            continue;
        }
        ok[i] = fits(fc, s) && !(mutex && s->used > 0);
    }
    size_t got = vs_kunlun_select(ok, index, n, fc->req->nums, out);
    /* Each chosen index names the first candidate with that index, which must be usable and
     * not chosen twice (HAMi would take a card that does not fit, or fewer cards). */
    bool placed = got == nums;
    for (size_t k = 0; placed && k < got; k++) {
        size_t pos = n;
        for (size_t i = 0; i < n && pos == n; i++)
            if (index[i] == out[k])
                pos = i;
        placed = pos < n && ok[pos] && !taken[pos];
        if (!placed)
            break;
        taken[pos] = true;
        const struct vs_card *c = fc->cands[pos]->c;
        picks[k] = (struct vs_pick){.card = fc->cands[pos],
                                    .mem = whole_card ? c->devmem : fc->req->memreq,
                                    .cores = whole_card ? c->devcore : fc->req->cores};
    }
    if (placed)
        goto done;
    if (mutex) {
        for (size_t i = 0; i < n; i++)
            if (fc->cands[i]->used > 0 && fits(fc, fc->cands[i]))
                vs_reasons_add(&why, VS_WHY_EXCLUSIVE, 1);
    }
    if (!why.n) {
        /* Distinct card ids that failed a UUID selector. */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                seen = bad_uuid[j] && strcmp(fc->cands[j]->c->uuid, fc->cands[i]->c->uuid) == 0;
            k += bad_uuid[i] && !seen;
        }
        vs_reasons_add(&why, VS_WHY_UUID, k);
    }
    if (!why.n)
        vs_reasons_add(&why, VS_WHY_NUMA, 1);
    reason = vs_reasons_text(&why, n, nomem);
done:
    free(ok);
    free(bad_uuid);
    free(index);
    free(out);
    free(taken);
    return reason;
}
