/* drs: Enflame DRS hard partitions, word `Enflame` (spec/hami-vendors.md §2.7.2). Cards come from
 * the node annotation enflame.com/gcu-drs-capacity (the device plugin's JSON: devices with index,
 * minor and capacity, and the profiles `<s>g.<m>gb` -> profile ID the cards offer); a container
 * asks for one DRS instance, by slice count (enflame.com/drs-gcu, "direct" mode) or by memory and
 * core share (enflame.com/gcu-memory, gcu-core, "spec" mode), and Fit picks the profile, then the
 * card. A placed instance takes the profile's slices from the card's count, its memory and its
 * core share. Filter writes hami.io/enflame-vgpu-devices-allocated and the enflame.com/gcu-*
 * annotations the device plugin reads, with assigned-containers (JSON). No node lock.
 *
 * The profiles are parsed once per node (the inventory's node_info: every card of a node offers
 * the same ones), sorted by slices, then memory, then name (HAMi's sort has no order for equal
 * slices and memory). A pick's profile travels to add_usage and annotate in vs_pick.extra, a
 * JSON object {"drsSlice","profileName","profileID","minor","index"}. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "devcfg.h"
#include "device.h"
#include "enflame.h"
#include "gojson.h"
#include "json_text.h"
#include "model.h"
#include "policy.h"
#include "quantity.h"
#include "request.h"

#define WORD       "Enflame"
#define CAPACITY   "enflame.com/gcu-drs-capacity"
#define USE_UUID   "enflame.com/use-gpuuuid"
#define NOUSE_UUID "enflame.com/nouse-gpuuuid"
#define I32MAX     2147483647LL
#define I32MIN     (-2147483647LL - 1)

/* Request modes HAMi keeps in MemPercentagereq. */
#define MODE_DIRECT 0
#define MODE_SPEC   (-1)

/* ---- profile names ---- */

/* Go's strconv.Atoi over s[0..n): optional sign, at least one decimal digit, int64 range. */
static bool go_atoi(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i == n)
        return false;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned dgt = (unsigned)(s[i] - '0');
        if (v > (lim - dgt) / 10)
            return false;
        v = v * 10 + dgt;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* [*a, *b) with blanks trimmed on both sides. */
static void trim(const char **a, const char **b)
{
    while (*a < *b && isspace((unsigned char)**a))
        (*a)++;
    while (*b > *a && isspace((unsigned char)(*b)[-1]))
        (*b)--;
}

static bool ends_with(const char *a, const char *b, const char *suffix)
{
    size_t n = strlen(suffix);
    return (size_t)(b - a) >= n && memcmp(b - n, suffix, n) == 0;
}

void vs_enflame_parse_profile(const char *name, int64_t *size, int64_t *mem)
{
    *size = *mem = 0;
    size_t len = strlen(name);
    char *low = malloc(len + 1);
    if (!low)
        return;
    for (size_t i = 0; i <= len; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    const char *a = low, *b = low + len;
    trim(&a, &b);
    const char *dot = memchr(a, '.', (size_t)(b - a));
    if (dot) {
        const char *dot2 = memchr(dot + 1, '.', (size_t)(b - dot - 1));
        const char *sa = a, *sb = dot, *ma = dot + 1, *mb = dot2 ? dot2 : b;
        trim(&sa, &sb);
        if (ends_with(sa, sb, "g"))
            sb--;
        if (go_atoi(sa, (size_t)(sb - sa), size)) {
            trim(&ma, &mb);
            if (ends_with(ma, mb, "gb"))
                mb -= 2;
            if (!go_atoi(ma, (size_t)(mb - ma), mem))
                *mem = 0;
        }
    }
    free(low);
}

/* ---- inventory ---- */

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    static const char *const keys[] = {CAPACITY};
    return vs_device_fp_annotations(kn, keys, 1);
}

struct profile {
    const char *name, *id; /* borrowed from the parsed annotation */
    int64_t size, mem, core;
};

static int profile_cmp(const void *a, const void *b)
{
    const struct profile *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    if (x->mem != y->mem)
        return x->mem < y->mem ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* HAMi's parseDRSCapacity: a JSON number (truncated toward zero) or a decimal string (clamped),
 * as an int32. */
static bool drs_capacity(const json_t *v, int64_t *out)
{
    if (json_is_integer(v) || json_is_real(v)) {
        double x = json_number_value(v);
        if (x > (double)I32MAX || x < (double)I32MIN)
            return false;
        *out = (int64_t)x;
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *a = json_string_value(v), *b = a + json_string_length(v);
    trim(&a, &b);
    int64_t x;
    if (!go_atoi(a, (size_t)(b - a), &x))
        return false;
    *out = x > I32MAX ? I32MAX : x < I32MIN ? I32MIN : x;
    return true;
}

static enum vs_err bad(struct vs_errbuf *eb, const char *why)
{
    return vs_err_set(eb, VS_ERR_PARSE, "invalid " CAPACITY ": %s", why);
}

/* The node's profiles as Fit chooses among them: node_info {"profiles": [[name, id, slices,
 * memory GB, core %], ...]} in selection order. */
static json_t *profile_table(const json_t *profiles, int64_t max_slice)
{
    size_t n = json_object_size(profiles), k = 0;
    struct profile *p = calloc(n ? n : 1, sizeof(*p));
    json_t *arr = json_array(), *info = json_object();
    bool ok = p && arr && info;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)profiles, name, v)
    {
        if (!ok)
            break;
        int64_t s, m;
        vs_enflame_parse_profile(name, &s, &m);
        if (s <= 0 || m <= 0)
            continue;
        /* s of max_slice slices, as a core share rounded up; past 2^53 the double quotient
         * can round above 100 (s == max_slice), so it is clamped to the card */
        int64_t core = (int64_t)ceil((double)s * 100 / (double)max_slice);
        p[k++] = (struct profile){.name = name,
                                  .id = json_is_string(v) ? json_string_value(v) : "",
                                  .size = s,
                                  .mem = m,
                                  .core = core < 1     ? 1
                                          : core > 100 ? 100
                                                       : core};
    }
    if (ok)
        qsort(p, k, sizeof(*p), profile_cmp);
    for (size_t i = 0; ok && i < k; i++)
        ok = !json_array_append_new(
            arr, json_pack("[ssIII]", p[i].name, p[i].id, p[i].size, p[i].mem, p[i].core));
    free(p);
    if (!ok || json_object_set(info, "profiles", arr)) {
        json_decref(arr);
        json_decref(info);
        return NULL;
    }
    json_decref(arr);
    return info;
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    const char *raw = vs_kv_get(&kn->annotations, CAPACITY);
    if (!raw)
        return VS_OK;
    json_t *doc = NULL, *profiles = NULL;
    struct vs_errbuf pe;
    enum vs_err err = vs_gojson_parse(raw, strlen(raw), &doc, &pe);
    if (err)
        return err == VS_ERR_NOMEM ? vs_err_set(eb, err, "out of memory") : bad(eb, pe.msg);
    static const char *const names[] = {"devices", "profiles"};
    json_t *f[2] = {NULL, NULL};
    char why[160];
    if (!json_is_null(doc) && !vs_gojson_fields(doc, names, 2, f)) {
        snprintf(why, sizeof(why), "expected an object, got %s", vs_gojson_type(doc));
        err = bad(eb, why);
        goto out;
    }
    if (f[0] && !json_is_null(f[0]) && !json_is_array(f[0])) {
        snprintf(why, sizeof(why), "devices: expected an array, got %s", vs_gojson_type(f[0]));
        err = bad(eb, why);
        goto out;
    }
    if (f[1] && !json_is_null(f[1]) && !json_is_object(f[1])) {
        snprintf(why, sizeof(why), "profiles: expected an object, got %s", vs_gojson_type(f[1]));
        err = bad(eb, why);
        goto out;
    }
    /* The profiles, with null IDs read as "" (Go's map[string]string). */
    if (!(profiles = json_object())) {
        err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto out;
    }
    int64_t max_slice = 0, max_mem = 0;
    const char *pname;
    json_t *pv;
    json_object_foreach(f[1], pname, pv)
    {
        if (!json_is_string(pv) && !json_is_null(pv)) {
            snprintf(why, sizeof(why), "profiles[\"%.64s\"]: expected a string, got %s", pname,
                     vs_gojson_type(pv));
            err = bad(eb, why);
            goto out;
        }
        if (json_object_set_new(profiles, pname,
                                json_string(json_is_string(pv) ? json_string_value(pv) : ""))) {
            err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            goto out;
        }
        int64_t s, m;
        vs_enflame_parse_profile(pname, &s, &m);
        max_slice = s > max_slice ? s : max_slice;
        max_mem = m > max_mem ? m : max_mem;
    }
    if (max_slice <= 0) {
        err = vs_err_set(eb, VS_ERR_PARSE, "no valid drs profiles found on node %s", kn->name);
        goto out;
    }
    if (max_mem <= 0)
        max_mem = max_slice;
    if (max_mem > I32MAX / 1024) {
        snprintf(why, sizeof(why), "profile memory %lld GB is too large", (long long)max_mem);
        err = bad(eb, why);
        goto out;
    }
    size_t nd = json_array_size(f[0]);
    if (nd == 0) {
        err = vs_err_set(eb, VS_ERR_PARSE, "no drs devices found on node %s", kn->name);
        goto out;
    }
    if (!(out->reg.cards = calloc(nd, sizeof(*out->reg.cards)))) {
        err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nd; i++) {
        static const char *const dn[] = {"index", "minor", "capacity"};
        json_t *e = json_array_get(f[0], i), *df[3] = {NULL, NULL, NULL};
        const char *index = "", *minor = "";
        struct vs_errbuf se;
        if (!json_is_null(e) && !vs_gojson_fields(e, dn, 3, df)) {
            snprintf(why, sizeof(why), "devices[%zu]: expected an object, got %s", i,
                     vs_gojson_type(e));
            err = bad(eb, why);
            goto out;
        }
        if (vs_gojson_str(df[0], &index, &se) || vs_gojson_str(df[1], &minor, &se)) {
            snprintf(why, sizeof(why), "devices[%zu]: %s", i, se.msg);
            err = bad(eb, why);
            goto out;
        }
        int64_t idx = (int64_t)i, cap;
        if (!go_atoi(index, strlen(index), &idx))
            idx = (int64_t)i;
        if (idx < 0 || idx > (int64_t)UINT32_MAX) {
            snprintf(why, sizeof(why), "devices[%zu]: index %lld out of range", i, (long long)idx);
            err = bad(eb, why);
            goto out;
        }
        if (!df[2] || !drs_capacity(df[2], &cap) || cap <= 0) {
            err = vs_err_set(eb, VS_ERR_PARSE, "invalid drs capacity on node %s", kn->name);
            goto out;
        }
        const char *ma = minor, *mb = minor + strlen(minor);
        trim(&ma, &mb);
        char ibuf[24], mbuf[24];
        snprintf(ibuf, sizeof(ibuf), "%lld", (long long)idx);
        if (ma == mb)
            snprintf(mbuf, sizeof(mbuf), "%s", ibuf);
        struct vs_card_reg *c = &out->reg.cards[out->reg.n++];
        size_t idlen = strlen(kn->name) + 40;
        c->uuid = malloc(idlen);
        c->type = strdup(WORD);
        c->mode = strdup("");
        c->custom = json_pack("{s:s%,s:s,s:O,s:I}", "minor", ma == mb ? mbuf : ma,
                              (size_t)(ma == mb ? strlen(mbuf) : (size_t)(mb - ma)), "index", ibuf,
                              "profiles", profiles, "maxSlice", (json_int_t)max_slice);
        if (!c->uuid || !c->type || !c->mode || !c->custom) {
            err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            goto out;
        }
        snprintf(c->uuid, idlen, "%s-enflame-drs-%lld", kn->name, (long long)idx);
        c->index = (uint32_t)idx;
        c->count = (int32_t)cap;
        c->devmem = (int32_t)(max_mem * 1024);
        c->devcore = 100;
        c->health = true;
    }
    if (!(out->node_info = profile_table(profiles, max_slice)))
        err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
out:
    if (err)
        vs_register_cleanup(&out->reg);
    json_decref(profiles);
    json_decref(doc);
    return err;
}

/* ---- requests and admission ---- */

/* Direct mode when the slice count is given (whole, 1..2^31-1); else spec mode from memory
 * (MiB or GB, rounded up, 1..2^31-1) and core share (1..100), each optional but not both absent.
 * HAMi's webhook denies the values outside these ranges; we refuse them here too. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n, mem = 0, core = 0;
    bool has, has_mem, has_core;
    enum vs_err err = vs_device_qty(c, d->res_count, false, 1, I32MAX, &n, &has, eb);
    if (err)
        return err;
    if (has) {
        *out = (struct vs_req){.nums = 1, .memreq = (int32_t)n, .pct = MODE_DIRECT};
        return VS_OK;
    }
    if ((err = vs_device_qty_ceil(c, d->res_mem, false, 1, I32MAX, &mem, &has_mem, eb)) ||
        (err = vs_device_qty_ceil(c, d->res_cores, false, 1, 100, &core, &has_core, eb)))
        return err;
    if (!has_mem && !has_core)
        return VS_OK;
    *out = (struct vs_req){
        .nums = 1, .memreq = (int32_t)mem, .pct = MODE_SPEC, .cores = (int32_t)core};
    return VS_OK;
}

/* Quantity.Value() of a present resource (limits, then requests); false when absent. */
static bool value_of(const struct vs_container *c, const char *name, const char **text, int64_t *v)
{
    *text = vs_device_res(c, name, false);
    return *text && vs_quantity_ceil(*text, v) == VS_OK;
}

/* HAMi's MutateAdmission: the count (or memory and core) must be positive (core at most 100),
 * and each given amount is copied to whichever of limits and requests lacks it. */
static enum vs_err admit(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *c, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb)
{
    const char *t;
    int64_t v;
    if (value_of(c, d->res_count, &t, &v)) {
        if (v <= 0)
            return vs_err_set(eb, VS_ERR_INVAL, "%s must be greater than 0", d->res_count);
        if (!vs_kv_get(&c->limits, d->res_count))
            vs_admit_set(a, VS_ADMIT_LIMIT, d->res_count, t);
        if (!vs_kv_get(&c->requests, d->res_count))
            vs_admit_set(a, VS_ADMIT_REQUEST, d->res_count, t);
        *found = true;
        return VS_OK;
    }
    const char *mt, *ct;
    int64_t mem, core;
    bool has_mem = value_of(c, d->res_mem, &mt, &mem);
    bool has_core = value_of(c, d->res_cores, &ct, &core);
    if (!has_mem && !has_core)
        return VS_OK;
    if (has_mem && mem <= 0)
        return vs_err_set(eb, VS_ERR_INVAL, "%s must be greater than 0", d->res_mem);
    if (has_core && (core <= 0 || core > 100))
        return vs_err_set(eb, VS_ERR_INVAL, "%s must be in range (0,100]", d->res_cores);
    const char *res[2] = {has_mem ? d->res_mem : NULL, has_core ? d->res_cores : NULL};
    const char *val[2] = {mt, ct};
    for (size_t i = 0; i < 2; i++) {
        if (!res[i])
            continue;
        if (!vs_kv_get(&c->limits, res[i]))
            vs_admit_set(a, VS_ADMIT_LIMIT, res[i], val[i]);
        if (!vs_kv_get(&c->requests, res[i]))
            vs_admit_set(a, VS_ADMIT_REQUEST, res[i], val[i]);
    }
    *found = true;
    return VS_OK;
}

/* ---- Fit ---- */

/* HAMi's normalizeMemoryRequestToGB: a request larger than twice the largest profile's memory
 * is read as MiB. */
static int64_t request_gb(int64_t raw, int64_t max_gb)
{
    if (raw <= 0)
        return 0;
    if (max_gb <= 0)
        return raw;
    if (raw > max_gb * 2)
        return (int64_t)ceil((double)raw / 1024.0);
    return raw;
}

/* The profile for request r among the node's (node_info), NULL when none. */
static const json_t *select_profile(const json_t *table, const struct vs_req *r)
{
    size_t n = json_array_size(table);
    if (n == 0)
        return NULL;
    if (r->pct == MODE_DIRECT) {
        for (size_t i = 0; i < n; i++) {
            const json_t *p = json_array_get(table, i);
            if (json_integer_value(json_array_get(p, 2)) == r->memreq)
                return p;
        }
        return NULL;
    }
    int64_t max_gb = json_integer_value(json_array_get(json_array_get(table, n - 1), 3));
    int64_t gb = request_gb(r->memreq, max_gb), core = r->cores;
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(table, i);
        if (gb > 0 && json_integer_value(json_array_get(p, 3)) < gb)
            continue;
        if (core > 0 && json_integer_value(json_array_get(p, 4)) < core)
            continue;
        return p;
    }
    return NULL;
}

static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    const struct vs_device *d = fc->dev;
    struct vs_reasons why = {.n = 0};
    const json_t *info = fc->node->dev_info ? fc->node->dev_info[d->id] : NULL;
    const json_t *prof = select_profile(json_object_get(info, "profiles"), fc->req);
    int64_t size = prof ? json_integer_value(json_array_get(prof, 2)) : 0;
    int64_t gb = prof ? json_integer_value(json_array_get(prof, 3)) : 0;
    int64_t core = prof ? json_integer_value(json_array_get(prof, 4)) : 0;
    if (!prof || size > I32MAX || gb > I32MAX / 1024 || core > I32MAX) {
        vs_reasons_add(&why, VS_WHY_MODE, 1);
        return vs_reasons_text(&why, fc->n_cands, nomem);
    }
    int64_t mem = gb * 1024;
    for (size_t i = fc->n_cands; i-- > 0;) {
        struct vs_scard *s = fc->cands[i];
        const struct vs_card *c = s->c;
        if (!c->health || s->unhealthy) {
            vs_reasons_add(&why, VS_WHY_HEALTH, 1);
            continue;
        }
        if (!vs_device_uuid_ok(fc->pod, USE_UUID, NOUSE_UUID, c->uuid)) {
            vs_reasons_add(&why, VS_WHY_UUID, 1);
            continue;
        }
        if (c->count <= s->used) {
            vs_reasons_add(&why, VS_WHY_SLICING, 1);
            continue;
        }
        if (fc->gpu->mutex && s->used > 0) {
            vs_reasons_add(&why, VS_WHY_EXCLUSIVE, 1);
            continue;
        }
        if (c->devmem - s->usedmem < mem) {
            vs_reasons_add(&why, VS_WHY_MEM, 1);
            continue;
        }
        if (c->devcore > 0 && c->devcore - s->usedcores < core) {
            vs_reasons_add(&why, VS_WHY_CORE, 1);
            continue;
        }
        json_t *x = json_pack("{s:I,s:O,s:O,s:O,s:O}", "drsSlice", (json_int_t)size, "profileName",
                              json_array_get(prof, 0), "profileID", json_array_get(prof, 1),
                              "minor", json_object_get(c->custom, "minor"), "index",
                              json_object_get(c->custom, "index"));
        char *extra = x ? json_dumps(x, JSON_COMPACT) : NULL;
        json_decref(x);
        if (!extra) {
            *nomem = true;
            return NULL;
        }
        picks[0] = (struct vs_pick){.card = s, .mem = mem, .cores = core, .extra = extra};
        return NULL;
    }
    return vs_reasons_text(&why, fc->n_cands, nomem);
}

/* A pick's slice count (at least 1, as HAMi reads it). */
static int64_t slices_of(const char *extra)
{
    json_t *x = extra ? json_loads(extra, 0, NULL) : NULL;
    int64_t s = json_integer_value(json_object_get(x, "drsSlice"));
    json_decref(x);
    return s > 0 ? s : 1;
}

/* HAMi's AddResourceUsage: the card's used slots grow by the profile's slices (int32, clamped). */
static void add_usage(const struct vs_device *d, struct vs_scard *s, const struct vs_pick *p)
{
    int64_t used = s->used + slices_of(p->extra);
    s->used = used > I32MAX ? I32MAX : used;
    s->usedmem += p->mem;
    s->usedcores += p->cores;
}

/* ---- annotations ---- */

struct assigned {
    const char *ctr;
    json_t *x; /* the pick's extra, parsed */
    int64_t slice;
    size_t at; /* container index: the later of two equal names wins, as in a Go map */
};

static int assigned_cmp(const void *a, const void *b)
{
    const struct assigned *x = a, *y = b;
    int c = strcmp(x->ctr, y->ctr);
    return c ? c : (x->at < y->at ? -1 : x->at > y->at);
}

/* The container at index i of the device list (init containers first); "container-<i>" past
 * them, as HAMi names it. */
static const char *ctr_name(const struct vs_pod *p, size_t i, char *buf, size_t len)
{
    const char *n = NULL;
    if (i < p->n_init)
        n = p->init[i].name;
    else if (i - p->n_init < p->n_ctrs)
        n = p->ctrs[i - p->n_init].name;
    if (n)
        return n;
    snprintf(buf, len, "container-%zu", i);
    return buf;
}

static bool set_str(json_t *out, const char *k, const char *v)
{
    return json_object_set_new(out, k, json_string(v)) == 0;
}

static enum vs_err annotate(const struct vs_device *d, const struct vs_pod *p,
                            const struct vs_node *n, const struct vs_pod_devs *devs,
                            const struct vs_mig_allocs *mig, int64_t now_ns, json_t *out)
{
    enum vs_err err = vs_device_annotate_generic(d, devs, out);
    if (err)
        return err;
    bool ok = set_str(out, "enflame.com/gcu-assigned", "false");
    if (now_ns > 0) {
        char ts[24];
        snprintf(ts, sizeof(ts), "%lld", (long long)now_ns);
        ok = ok && set_str(out, "enflame.com/gcu-assigned-time", ts);
    }
    struct assigned *as = calloc(devs->n ? devs->n : 1, sizeof(*as));
    char(*names)[32] = calloc(devs->n ? devs->n : 1, sizeof(*names));
    size_t na = 0;
    bool have_index = false, have_minor = false, have_size = false;
    for (size_t i = 0; ok && as && names && i < devs->n; i++) {
        if (!devs->ctrs[i].n)
            continue;
        const struct vs_cdev *cd = &devs->ctrs[i].devs[0];
        json_t *x = cd->extra ? json_loads(cd->extra, 0, NULL) : json_object();
        if (!x) {
            ok = false;
            break;
        }
        int64_t slice = slices_of(cd->extra);
        as[na++] = (struct assigned){
            .ctr = ctr_name(p, i, names[i], sizeof(names[i])), .x = x, .slice = slice, .at = i};
        const char *index = json_string_value(json_object_get(x, "index"));
        const char *minor = json_string_value(json_object_get(x, "minor"));
        if (!have_index && index && *index) {
            ok = set_str(out, "enflame.com/gcu-assigned-index", index) &&
                 set_str(out, "enflame.com/gcu-assigned-id", index);
            have_index = true;
        }
        if (!have_minor && minor && *minor) {
            ok = ok && set_str(out, "enflame.com/gcu-assigned-minor", minor);
            have_minor = true;
        }
        if (!have_size) {
            char sz[24];
            snprintf(sz, sizeof(sz), "%lld", (long long)slice);
            ok = ok && set_str(out, "enflame.com/gcu-request-size", sz);
            have_size = true;
        }
    }
    ok = ok && as && names;
    if (ok && na) {
        /* Go marshals a map with its keys sorted; a struct's fields in their order. */
        qsort(as, na, sizeof(*as), assigned_cmp);
        struct vs_buf b;
        vs_buf_init(&b);
        vs_buf_puts(&b, "{");
        bool first = true;
        for (size_t i = 0; i < na; i++) {
            if (i + 1 < na && strcmp(as[i].ctr, as[i + 1].ctr) == 0)
                continue;
            const char *pid = json_string_value(json_object_get(as[i].x, "profileID"));
            const char *pn = json_string_value(json_object_get(as[i].x, "profileName"));
            vs_buf_puts(&b, first ? "" : ",");
            first = false;
            vs_json_put_string_go(&b, as[i].ctr);
            vs_buf_printf(&b, ":{\"allocated\":false,\"request\":%lld", (long long)as[i].slice);
            if (pid && *pid) {
                vs_buf_puts(&b, ",\"profileID\":");
                vs_json_put_string_go(&b, pid);
            }
            if (pn && *pn) {
                vs_buf_puts(&b, ",\"profileName\":");
                vs_json_put_string_go(&b, pn);
            }
            vs_buf_puts(&b, "}");
        }
        vs_buf_puts(&b, "}");
        char *v = vs_buf_steal(&b);
        ok = v && set_str(out, "assigned-containers", v);
        free(v);
    }
    for (size_t i = 0; as && i < na; i++)
        json_decref(as[i].x);
    free(as);
    free(names);
    return ok ? VS_OK : VS_ERR_NOMEM;
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .fit = fit,
    .add_usage = add_usage,
    .annotate = annotate,
    .admit = admit,
};

/* HAMi falls back to the legacy resourceNameVGCU, then to the built-in names, when the section
 * leaves a name empty: DRS pods are recognised even without an enflame section. */
static const char *name_or(const struct vs_devcfg *cfg, const char *key, const char *fallback_key,
                           const char *dflt)
{
    const char *v = vs_device_cfg_str(cfg, VS_ENFLAME_SECTION, key, dflt);
    if (!*v && fallback_key)
        v = vs_device_cfg_str(cfg, VS_ENFLAME_SECTION, fallback_key, "");
    return *v ? v : dflt;
}

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    enum vs_err err = vs_enflame_make_gcu(cfg, set, eb);
    if (err)
        return err;
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->lock = VS_LOCK_NONE;
    const char *count =
        name_or(cfg, "resourceNameDRSGCU", "resourceNameVGCU", "enflame.com/drs-gcu");
    const char *mem = name_or(cfg, "resourceNameGCUMemory", NULL, "enflame.com/gcu-memory");
    const char *cores = name_or(cfg, "resourceNameGCUCore", NULL, "enflame.com/gcu-core");
    bool ok = vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_mem, mem) &&
              vs_device_set_str(&d->res_cores, cores) &&
              vs_device_set_str(&d->allocated_key, "hami.io/enflame-vgpu-devices-allocated") &&
              vs_device_add_managed(d, count) && vs_device_add_managed(d, mem) &&
              vs_device_add_managed(d, cores);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_enflame = {.name = "enflame", .make = make};
