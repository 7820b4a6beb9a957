/* annot: parsers and formatters of the HAMi annotation grammars. Every error message has the
 * form `invalid <key> "<value>": <detail>` (long values are shortened) so a user can find the
 * object and fix it. Formatters emit exactly what HAMi's Go code emits. */
#include "annot.h"

#include "buf.h"
#include "gojson.h"
#include "json_text.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SHOW_MAX 120

static enum vs_err bad(struct vs_errbuf *eb, const char *key, const char *val, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum vs_err bad(struct vs_errbuf *eb, const char *key, const char *val, const char *fmt, ...)
{
    if (!eb)
        return VS_ERR_PARSE;
    char detail[VS_ERRBUF_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    size_t vl = strlen(val);
    if (vl > SHOW_MAX)
        snprintf(eb->msg, sizeof(eb->msg), "invalid %s \"%.*s...\": %s", key, SHOW_MAX, val,
                 detail);
    else
        snprintf(eb->msg, sizeof(eb->msg), "invalid %s \"%s\": %s", key, val, detail);
    return VS_ERR_PARSE;
}

/* Go strconv.ParseInt(s, 10, bits): optional sign, digits only, range-checked. */
static bool parse_int(const char *s, size_t n, int64_t min, int64_t max, int64_t *out)
{
    char tmp[32];
    if (n == 0 || n >= sizeof(tmp))
        return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    const char *p = tmp;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p)
        return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    errno = 0;
    long long v = strtoll(tmp, NULL, 10);
    if (errno || v < min || v > max)
        return false;
    *out = v;
    return true;
}

enum vs_err vs_annot_parse_bool(const char *val, bool *out)
{
    static const char *t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (strcmp(val, t[i]) == 0) {
            *out = true;
            return VS_OK;
        }
        if (strcmp(val, f[i]) == 0) {
            *out = false;
            return VS_OK;
        }
    }
    return VS_ERR_PARSE;
}

static char *dupn(const char *s, size_t n)
{
    return strndup(s, n);
}

/* ------------------------------------------------------------------ register */

static void profile_cleanup(struct vs_mig_profile *p)
{
    free(p->name);
    free(p->placements);
}

static void card_cleanup(struct vs_card_reg *c)
{
    free(c->uuid);
    free(c->type);
    free(c->mode);
    for (size_t i = 0; i < c->n_profiles; i++)
        profile_cleanup(&c->profiles[i]);
    free(c->profiles);
    json_decref(c->custom);
}

void vs_register_cleanup(struct vs_register *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n; i++)
        card_cleanup(&reg->cards[i]);
    free(reg->cards);
    reg->cards = NULL;
    reg->n = 0;
}

#define I32MIN (-2147483647LL - 1)
#define I32MAX 2147483647LL

/* Field readers over a value bound by vs_gojson_fields; `field` names it in the message. */
static enum vs_err json_i32(const json_t *v, const char *field, int32_t *out, int64_t min,
                            char *why, size_t whylen)
{
    int64_t x;
    struct vs_errbuf e;
    if (vs_gojson_int(v, min, I32MAX, &x, &e)) {
        snprintf(why, whylen, "field %s: %s", field, e.msg);
        return VS_ERR_PARSE;
    }
    *out = (int32_t)x;
    return VS_OK;
}

static enum vs_err json_strdup(const json_t *v, const char *field, char **out, char *why,
                               size_t whylen)
{
    const char *s;
    struct vs_errbuf e;
    if (vs_gojson_str(v, &s, &e)) {
        snprintf(why, whylen, "field %s: %s", field, e.msg);
        return VS_ERR_PARSE;
    }
    *out = strdup(s);
    if (!*out) {
        snprintf(why, whylen, "out of memory");
        return VS_ERR_NOMEM;
    }
    return VS_OK;
}

/* The fields of HAMi's MigTemplate-like profile entry and of a placement. */
enum { PF_NAME, PF_MEMORY, PF_CORE, PF_SLICES, PF_PLACEMENTS, PF_N };
static const char *const profile_fields[PF_N] = {"name", "memoryMB", "core", "sliceCount",
                                                 "placements"};
enum { PL_START, PL_SIZE, PL_N };
static const char *const placement_fields[PL_N] = {"start", "size"};

static enum vs_err decode_placement(const json_t *o, struct vs_mig_placement *p, char *why,
                                    size_t wl)
{
    json_t *f[PL_N];
    enum vs_err err;
    vs_gojson_fields(o, placement_fields, PL_N, f);
    if ((err = json_i32(f[PL_START], "start", &p->start, I32MIN, why, wl)) ||
        (err = json_i32(f[PL_SIZE], "size", &p->size, I32MIN, why, wl)))
        return err;
    return VS_OK;
}

static enum vs_err decode_profile(const json_t *o, struct vs_mig_profile *p, char *why, size_t wl)
{
    json_t *f[PF_N];
    if (!vs_gojson_fields(o, profile_fields, PF_N, f)) {
        snprintf(why, wl, "migProfiles entry is not an object");
        return VS_ERR_PARSE;
    }
    enum vs_err err;
    if ((err = json_strdup(f[PF_NAME], "name", &p->name, why, wl)) ||
        (err = json_i32(f[PF_MEMORY], "memoryMB", &p->memory_mb, I32MIN, why, wl)) ||
        (err = json_i32(f[PF_CORE], "core", &p->core, I32MIN, why, wl)) ||
        (err = json_i32(f[PF_SLICES], "sliceCount", &p->slice_count, I32MIN, why, wl)))
        return err;
    const json_t *pl = f[PF_PLACEMENTS];
    if (!pl || json_is_null(pl))
        return VS_OK;
    if (!json_is_array(pl)) {
        snprintf(why, wl, "field placements: expected an array");
        return VS_ERR_PARSE;
    }
    size_t npl = json_array_size(pl);
    if (npl) {
        p->placements = calloc(npl, sizeof(*p->placements));
        if (!p->placements) {
            snprintf(why, wl, "out of memory");
            return VS_ERR_NOMEM;
        }
    }
    for (size_t i = 0; i < npl; i++) {
        const json_t *x = json_array_get(pl, i);
        if (!json_is_object(x)) {
            snprintf(why, wl, "placement is not an object");
            return VS_ERR_PARSE;
        }
        p->n_placements++;
        if ((err = decode_placement(x, &p->placements[i], why, wl)))
            return err;
    }
    return VS_OK;
}

/* The fields of HAMi's DeviceInfo in the register annotation. */
enum {
    CF_INDEX,
    CF_ID,
    CF_TYPE,
    CF_MODE,
    CF_COUNT,
    CF_DEVMEM,
    CF_DEVCORE,
    CF_NUMA,
    CF_HEALTH,
    CF_PROFILES,
    CF_CUSTOM,
    CF_N
};
static const char *const card_fields[CF_N] = {"index",  "id",          "type",      "mode",
                                              "count",  "devmem",      "devcore",   "numa",
                                              "health", "migProfiles", "custominfo"};

static enum vs_err decode_card(const json_t *o, struct vs_card_reg *c, char *why, size_t wl)
{
    enum vs_err err;
    json_t *f[CF_N];
    if (!vs_gojson_fields(o, card_fields, CF_N, f)) {
        snprintf(why, wl, "device entry is not an object");
        return VS_ERR_PARSE;
    }
    int64_t idx;
    struct vs_errbuf e;
    if (vs_gojson_int(f[CF_INDEX], 0, 4294967295LL, &idx, &e)) {
        snprintf(why, wl, "field index: %s", e.msg);
        return VS_ERR_PARSE;
    }
    c->index = (uint32_t)idx;
    if ((err = json_strdup(f[CF_ID], "id", &c->uuid, why, wl)) ||
        (err = json_strdup(f[CF_TYPE], "type", &c->type, why, wl)) ||
        (err = json_strdup(f[CF_MODE], "mode", &c->mode, why, wl)) ||
        (err = json_i32(f[CF_COUNT], "count", &c->count, I32MIN, why, wl)) ||
        (err = json_i32(f[CF_DEVMEM], "devmem", &c->devmem, I32MIN, why, wl)) ||
        (err = json_i32(f[CF_DEVCORE], "devcore", &c->devcore, I32MIN, why, wl)) ||
        (err = json_i32(f[CF_NUMA], "numa", &c->numa, I32MIN, why, wl)))
        return err;
    if (vs_gojson_bool(f[CF_HEALTH], &c->health, &e)) {
        snprintf(why, wl, "field health: %s", e.msg);
        return VS_ERR_PARSE;
    }
    if (f[CF_CUSTOM] && json_is_object(f[CF_CUSTOM]))
        c->custom = json_incref(f[CF_CUSTOM]);
    const json_t *pr = f[CF_PROFILES];
    if (pr && !json_is_null(pr)) {
        if (!json_is_array(pr)) {
            snprintf(why, wl, "field migProfiles: expected an array");
            return VS_ERR_PARSE;
        }
        size_t npr = json_array_size(pr);
        if (npr) {
            c->profiles = calloc(npr, sizeof(*c->profiles));
            if (!c->profiles) {
                snprintf(why, wl, "out of memory");
                return VS_ERR_NOMEM;
            }
        }
        for (size_t i = 0; i < npr; i++) {
            c->n_profiles++;
            if ((err = decode_profile(json_array_get(pr, i), &c->profiles[i], why, wl)))
                return err;
        }
    }
    return VS_OK;
}

static enum vs_err parse_register_json(const char *key, const char *val, struct vs_register *out,
                                       struct vs_errbuf *eb)
{
    json_t *root = NULL;
    struct vs_errbuf je;
    char why[256] = "";
    enum vs_err err = vs_gojson_parse(val, strlen(val), &root, &je);
    if (err)
        return err == VS_ERR_NOMEM ? vs_err_set(eb, err, "out of memory")
                                   : bad(eb, key, val, "%s", je.msg);
    size_t n = json_array_size(root);
    if (json_is_null(root) || (json_is_array(root) && n == 0)) {
        json_decref(root);
        return bad(eb, key, val, "no gpu found on node");
    }
    if (!json_is_array(root)) {
        json_decref(root);
        return bad(eb, key, val, "expected a JSON array of devices");
    }
    out->cards = calloc(n, sizeof(*out->cards));
    if (!out->cards) {
        json_decref(root);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        out->n++;
        if ((err = decode_card(json_array_get(root, i), &out->cards[i], why, sizeof(why)))) {
            json_decref(root);
            vs_register_cleanup(out);
            if (err == VS_ERR_NOMEM)
                return vs_err_set(eb, err, "out of memory");
            return bad(eb, key, val, "device %zu: %s", i, why);
        }
    }
    json_decref(root);
    return VS_OK;
}

/* Legacy: `uuid,count,devmem,devcore,type,numa,health[,index,mode]:` repeated. */
static enum vs_err parse_register_legacy(const char *key, const char *val, struct vs_register *out,
                                         struct vs_errbuf *eb)
{
    if (!strchr(val, ':'))
        return bad(eb, key, val, "neither a JSON array nor the colon format");
    const char *seg = val;
    size_t devno = 0;
    while (*seg) {
        const char *end = strchr(seg, ':');
        size_t slen = end ? (size_t)(end - seg) : strlen(seg);
        if (slen == 0) {
            seg += end ? 1 : 0;
            if (!end)
                break;
            continue;
        }
        const char *fld[10];
        size_t flen[10];
        size_t nf = 0;
        const char *f = seg;
        if (!memchr(seg, ',', slen)) {
            vs_register_cleanup(out);
            return bad(eb, key, val, "device %zu has no ',' separated fields", devno);
        }
        while (nf < 10) {
            const char *comma = memchr(f, ',', (size_t)(seg + slen - f));
            size_t fl = comma ? (size_t)(comma - f) : (size_t)(seg + slen - f);
            fld[nf] = f;
            flen[nf] = fl;
            nf++;
            if (!comma)
                break;
            f = comma + 1;
        }
        if (nf != 7 && nf != 9) {
            vs_register_cleanup(out);
            return bad(eb, key, val, "device %zu has %s fields, want 7 or 9", devno,
                       nf >= 10 ? "more than 9" : (nf == 8 ? "8" : "too few"));
        }
        if ((out->n & (out->n - 1)) == 0) { /* grow at powers of two */
            size_t cap = out->n ? out->n * 2 : 1;
            struct vs_card_reg *grown = realloc(out->cards, cap * sizeof(*grown));
            if (!grown) {
                vs_register_cleanup(out);
                return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            }
            out->cards = grown;
        }
        struct vs_card_reg *c = &out->cards[out->n++];
        memset(c, 0, sizeof(*c));
        int64_t cnt, mem, core, numa, idx = 0;
        char hb[8] = "";
        bool ok = parse_int(fld[1], flen[1], I32MIN, I32MAX, &cnt) &&
                  parse_int(fld[2], flen[2], I32MIN, I32MAX, &mem) &&
                  parse_int(fld[3], flen[3], I32MIN, I32MAX, &core) &&
                  parse_int(fld[5], flen[5], I32MIN, I32MAX, &numa) && flen[6] < sizeof(hb);
        if (ok) {
            memcpy(hb, fld[6], flen[6]);
            hb[flen[6]] = '\0';
            ok = vs_annot_parse_bool(hb, &c->health) == VS_OK;
        }
        if (ok && nf == 9)
            ok = parse_int(fld[7], flen[7], 0, 4294967295LL, &idx);
        if (!ok) {
            vs_register_cleanup(out);
            return bad(eb, key, val, "device %zu has an invalid number or bool", devno);
        }
        c->count = (int32_t)cnt;
        c->devmem = (int32_t)mem;
        c->devcore = (int32_t)core;
        c->numa = (int32_t)numa;
        c->index = (uint32_t)idx;
        c->uuid = dupn(fld[0], flen[0]);
        c->type = dupn(fld[4], flen[4]);
        c->mode = nf == 9 ? dupn(fld[8], flen[8]) : strdup("hami-core");
        if (!c->uuid || !c->type || !c->mode) {
            vs_register_cleanup(out);
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
        devno++;
        if (!end)
            break;
        seg = end + 1;
    }
    if (out->n == 0)
        return bad(eb, key, val, "no gpu found on node");
    return VS_OK;
}

enum vs_err vs_annot_parse_register(const char *val, struct vs_register *out, struct vs_errbuf *eb)
{
    return vs_annot_parse_register_as(VS_ANNO_REGISTER, val, out, eb);
}

enum vs_err vs_annot_parse_register_as(const char *key, const char *val, struct vs_register *out,
                                       struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    const char *p = val;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p == '[' || *p == '{' || strncmp(p, "null", 4) == 0)
        return parse_register_json(key, val, out, eb);
    return parse_register_legacy(key, val, out, eb);
}

char *vs_annot_format_register(const struct vs_register *reg)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "[");
    for (size_t i = 0; i < reg->n; i++) {
        const struct vs_card_reg *c = &reg->cards[i];
        bool first = true;
#define SEP() (vs_buf_puts(&b, first ? "" : ","), first = false)
        vs_buf_puts(&b, i ? ",{" : "{");
        if (c->uuid && *c->uuid) {
            SEP();
            vs_buf_puts(&b, "\"id\":");
            vs_json_put_string(&b, c->uuid);
        }
        if (c->index) {
            SEP();
            vs_buf_printf(&b, "\"index\":%u", c->index);
        }
        if (c->count) {
            SEP();
            vs_buf_printf(&b, "\"count\":%d", c->count);
        }
        if (c->devmem) {
            SEP();
            vs_buf_printf(&b, "\"devmem\":%d", c->devmem);
        }
        if (c->devcore) {
            SEP();
            vs_buf_printf(&b, "\"devcore\":%d", c->devcore);
        }
        if (c->type && *c->type) {
            SEP();
            vs_buf_puts(&b, "\"type\":");
            vs_json_put_string(&b, c->type);
        }
        if (c->numa) {
            SEP();
            vs_buf_printf(&b, "\"numa\":%d", c->numa);
        }
        if (c->mode && *c->mode) {
            SEP();
            vs_buf_puts(&b, "\"mode\":");
            vs_json_put_string(&b, c->mode);
        }
        if (c->n_profiles) {
            SEP();
            vs_buf_puts(&b, "\"migProfiles\":[");
            for (size_t j = 0; j < c->n_profiles; j++) {
                const struct vs_mig_profile *p = &c->profiles[j];
                vs_buf_puts(&b, j ? ",{\"name\":" : "{\"name\":");
                vs_json_put_string(&b, p->name ? p->name : "");
                vs_buf_printf(&b, ",\"memoryMB\":%d,\"core\":%d,\"sliceCount\":%d,\"placements\":[",
                              p->memory_mb, p->core, p->slice_count);
                for (size_t k = 0; k < p->n_placements; k++)
                    vs_buf_printf(&b, "%s{\"start\":%d,\"size\":%d}", k ? "," : "",
                                  p->placements[k].start, p->placements[k].size);
                vs_buf_puts(&b, "]}");
            }
            vs_buf_puts(&b, "]");
        }
        if (c->health) {
            SEP();
            vs_buf_puts(&b, "\"health\":true");
        }
#undef SEP
        vs_buf_puts(&b, "}");
    }
    vs_buf_puts(&b, "]");
    return vs_buf_steal(&b);
}

/* ------------------------------------------------------------------ topology score */

void vs_topo_cleanup(struct vs_topo *topo)
{
    if (!topo)
        return;
    for (size_t i = 0; i < topo->n; i++) {
        free(topo->items[i].uuid);
        for (size_t j = 0; j < topo->items[i].n; j++)
            free(topo->items[i].scores[j].other);
        free(topo->items[i].scores);
    }
    free(topo->items);
    topo->items = NULL;
    topo->n = 0;
}

enum vs_err vs_annot_parse_score(const char *val, struct vs_topo *out, struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    json_t *root = NULL;
    struct vs_errbuf je;
    enum vs_err err = vs_gojson_parse(val, strlen(val), &root, &je);
    if (err)
        return err == VS_ERR_NOMEM ? vs_err_set(eb, err, "out of memory")
                                   : bad(eb, VS_ANNO_SCORE, val, "%s", je.msg);
    if (json_is_null(root)) {
        json_decref(root);
        return VS_OK;
    }
    if (!json_is_array(root)) {
        json_decref(root);
        return bad(eb, VS_ANNO_SCORE, val, "expected a JSON array");
    }
    size_t n = json_array_size(root);
    if (n && !(out->items = calloc(n, sizeof(*out->items)))) {
        json_decref(root);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(root, i);
        struct vs_topo_entry *t = &out->items[out->n++];
        const char *uuid;
        json_t *sc = vs_gojson_get(o, "score");
        if (!json_is_object(o) || vs_gojson_str(vs_gojson_get(o, "uuid"), &uuid, NULL) ||
            (sc && !json_is_null(sc) && !json_is_object(sc))) {
            json_decref(root);
            vs_topo_cleanup(out);
            return bad(eb, VS_ANNO_SCORE, val, "entry %zu is not {\"uuid\":string,\"score\":{}}",
                       i);
        }
        t->uuid = strdup(uuid);
        /* A map[string]int in Go: a repeated key keeps its last value. */
        size_t ns = json_object_size(sc);
        if (ns)
            t->scores = calloc(ns, sizeof(*t->scores));
        if (!t->uuid || (ns && !t->scores)) {
            json_decref(root);
            vs_topo_cleanup(out);
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
        const char *key;
        json_t *sv;
        json_object_foreach(sc, key, sv)
        {
            int64_t v;
            struct vs_errbuf ie;
            if (vs_gojson_int(sv, INT64_MIN, INT64_MAX, &v, &ie)) {
                /* The message quotes the key, which lives in the tree: format before freeing. */
                err = bad(eb, VS_ANNO_SCORE, val, "entry %zu score %s: %s", i, key, ie.msg);
                json_decref(root);
                vs_topo_cleanup(out);
                return err;
            }
            t->scores[t->n].other = strdup(key);
            t->scores[t->n].score = v;
            if (!t->scores[t->n].other) {
                json_decref(root);
                vs_topo_cleanup(out);
                return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            }
            t->n++;
        }
    }
    json_decref(root);
    return VS_OK;
}

char *vs_annot_format_score(const struct vs_topo *topo)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "[");
    for (size_t i = 0; i < topo->n; i++) {
        vs_buf_puts(&b, i ? ",{\"uuid\":" : "{\"uuid\":");
        vs_json_put_string(&b, topo->items[i].uuid);
        vs_buf_puts(&b, ",\"score\":{");
        for (size_t j = 0; j < topo->items[i].n; j++) {
            if (j)
                vs_buf_puts(&b, ",");
            vs_json_put_string(&b, topo->items[i].scores[j].other);
            vs_buf_printf(&b, ":%lld", (long long)topo->items[i].scores[j].score);
        }
        vs_buf_puts(&b, "}}");
    }
    vs_buf_puts(&b, "]");
    return vs_buf_steal(&b);
}

/* ------------------------------------------------------------------ comma lists */

void vs_strlist_cleanup(struct vs_strlist *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

enum vs_err vs_annot_parse_list(const char *val, struct vs_strlist *out)
{
    memset(out, 0, sizeof(*out));
    if (!val)
        return VS_OK;
    const char *p = val;
    for (;;) {
        const char *end = strchr(p, ',');
        const char *e = end ? end : p + strlen(p);
        const char *s = p;
        while (s < e && isspace((unsigned char)*s))
            s++;
        while (e > s && isspace((unsigned char)e[-1]))
            e--;
        if (e > s) {
            char **grown = realloc(out->items, (out->n + 1) * sizeof(*grown));
            char *item = dupn(s, (size_t)(e - s));
            if (!grown || !item) {
                free(item);
                if (grown)
                    out->items = grown;
                vs_strlist_cleanup(out);
                return VS_ERR_NOMEM;
            }
            out->items = grown;
            out->items[out->n++] = item;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return VS_OK;
}

bool vs_strlist_has(const struct vs_strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], s) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------ device lists */

void vs_pod_devs_cleanup(struct vs_pod_devs *devs)
{
    if (!devs)
        return;
    for (size_t i = 0; i < devs->n; i++) {
        for (size_t j = 0; j < devs->ctrs[i].n; j++) {
            free(devs->ctrs[i].devs[j].uuid);
            free(devs->ctrs[i].devs[j].type);
            free(devs->ctrs[i].devs[j].extra);
        }
        free(devs->ctrs[i].devs);
    }
    free(devs->ctrs);
    devs->ctrs = NULL;
    devs->n = 0;
}

static enum vs_err parse_entry(const char *key, const char *val, const char *s, size_t n,
                               struct vs_ctr_devs *c, struct vs_errbuf *eb)
{
    const char *end = s + n;
    while (s < end) {
        const char *colon = memchr(s, ':', (size_t)(end - s));
        const char *pe = colon ? colon : end;
        size_t plen = (size_t)(pe - s);
        if (memchr(s, ',', plen)) {
            const char *f[4];
            size_t fl[4];
            size_t nf = 0;
            const char *q = s;
            for (;;) {
                const char *comma = memchr(q, ',', (size_t)(pe - q));
                const char *fe = comma ? comma : pe;
                if (nf < 4) {
                    f[nf] = q;
                    fl[nf] = (size_t)(fe - q);
                }
                nf++;
                if (!comma)
                    break;
                q = comma + 1;
            }
            if (nf < 4)
                return bad(eb, key, val, "device \"%.*s\" has %zu fields, want uuid,type,mem,cores",
                           (int)(plen > 80 ? 80 : plen), s, nf);
            int64_t mem, cores;
            if (!parse_int(f[2], fl[2], I32MIN, I32MAX, &mem))
                return bad(eb, key, val, "memory \"%.*s\" is not an int32",
                           (int)(fl[2] > 40 ? 40 : fl[2]), f[2]);
            if (!parse_int(f[3], fl[3], I32MIN, I32MAX, &cores))
                return bad(eb, key, val, "cores \"%.*s\" is not an int32",
                           (int)(fl[3] > 40 ? 40 : fl[3]), f[3]);
            if ((c->n & (c->n - 1)) == 0) { /* grow at powers of two */
                size_t cap = c->n ? c->n * 2 : 1;
                struct vs_cdev *grown = realloc(c->devs, cap * sizeof(*grown));
                if (!grown)
                    return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
                c->devs = grown;
            }
            struct vs_cdev *d = &c->devs[c->n++];
            memset(d, 0, sizeof(*d));
            d->uuid = dupn(f[0], fl[0]);
            d->type = dupn(f[1], fl[1]);
            d->usedmem = (int32_t)mem;
            d->usedcores = (int32_t)cores;
            if (!d->uuid || !d->type)
                return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
        if (!colon)
            break;
        s = colon + 1;
    }
    return VS_OK;
}

enum vs_err vs_annot_parse_devices(const char *key, const char *val, struct vs_pod_devs *out,
                                   struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    const char *p = val;
    size_t len = strlen(val);
    const char *end = val + len;
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *e = semi ? semi : end;
        if ((out->n & (out->n - 1)) == 0) { /* grow at powers of two */
            size_t cap = out->n ? out->n * 2 : 1;
            struct vs_ctr_devs *grown = realloc(out->ctrs, cap * sizeof(*grown));
            if (!grown) {
                vs_pod_devs_cleanup(out);
                return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            }
            out->ctrs = grown;
        }
        memset(&out->ctrs[out->n], 0, sizeof(out->ctrs[0]));
        out->n++;
        enum vs_err err = parse_entry(key, val, p, (size_t)(e - p), &out->ctrs[out->n - 1], eb);
        if (err) {
            vs_pod_devs_cleanup(out);
            return err;
        }
        if (!semi)
            break;
        p = semi + 1;
    }
    return VS_OK;
}

char *vs_annot_format_devices(const struct vs_pod_devs *devs)
{
    struct vs_buf b;
    vs_buf_init(&b);
    for (size_t i = 0; i < devs->n; i++) {
        for (size_t j = 0; j < devs->ctrs[i].n; j++) {
            const struct vs_cdev *d = &devs->ctrs[i].devs[j];
            vs_buf_printf(&b, "%s,%s,%d,%d:", d->uuid, d->type ? d->type : VS_VENDOR, d->usedmem,
                          d->usedcores);
        }
        vs_buf_puts(&b, ";");
    }
    return vs_buf_steal(&b);
}

/* ------------------------------------------------------------------ MIG allocations */

void vs_mig_allocs_cleanup(struct vs_mig_allocs *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->items[i].gpu_uuid);
        free(m->items[i].profile);
        free(m->items[i].mig_uuid);
    }
    free(m->items);
    m->items = NULL;
    m->n = 0;
}

/* The fields of one hami.io/vgpu-mig-allocations entry. */
enum {
    MF_CONTAINER,
    MF_DEVICE,
    MF_GPU_UUID,
    MF_PROFILE,
    MF_MIG_UUID,
    MF_PLACEMENT,
    MF_GI,
    MF_CI,
    MF_N
};
static const char *const mig_fields[MF_N] = {"containerIndex", "deviceIndex",      "gpuUUID",
                                             "profile",        "migUUID",          "placement",
                                             "gpuInstanceID",  "computeInstanceID"};

enum vs_err vs_annot_parse_mig(const char *val, struct vs_mig_allocs *out, struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    json_t *root = NULL;
    struct vs_errbuf je;
    char why[256];
    enum vs_err err = vs_gojson_parse(val, strlen(val), &root, &je);
    if (err)
        return err == VS_ERR_NOMEM ? vs_err_set(eb, err, "out of memory")
                                   : bad(eb, VS_ANNO_MIG_ALLOC, val, "%s", je.msg);
    if (json_is_null(root)) {
        json_decref(root);
        return VS_OK;
    }
    if (!json_is_array(root)) {
        json_decref(root);
        return bad(eb, VS_ANNO_MIG_ALLOC, val, "expected a JSON array");
    }
    size_t n = json_array_size(root);
    if (n && !(out->items = calloc(n, sizeof(*out->items)))) {
        json_decref(root);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        struct vs_mig_alloc *a = &out->items[out->n++];
        json_t *f[MF_N];
        err = VS_ERR_PARSE;
        if (!vs_gojson_fields(json_array_get(root, i), mig_fields, MF_N, f)) {
            snprintf(why, sizeof(why), "entry is not an object");
            goto fail;
        }
        if ((err = json_i32(f[MF_CONTAINER], "containerIndex", &a->container_index, 0, why,
                            sizeof(why))) ||
            (err = json_i32(f[MF_DEVICE], "deviceIndex", &a->device_index, 0, why, sizeof(why))) ||
            (err = json_strdup(f[MF_GPU_UUID], "gpuUUID", &a->gpu_uuid, why, sizeof(why))) ||
            (err = json_strdup(f[MF_PROFILE], "profile", &a->profile, why, sizeof(why))) ||
            (err = json_strdup(f[MF_MIG_UUID], "migUUID", &a->mig_uuid, why, sizeof(why))))
            goto fail;
        err = VS_ERR_PARSE;
        if (!json_is_object(f[MF_PLACEMENT])) {
            snprintf(why, sizeof(why), "placement missing");
            goto fail;
        }
        if ((err = decode_placement(f[MF_PLACEMENT], &a->placement, why, sizeof(why))))
            goto fail;
        err = VS_ERR_PARSE;
        if (!*a->gpu_uuid || !*a->profile || a->placement.size <= 0) {
            snprintf(why, sizeof(why), "gpuUUID, profile and placement.size > 0 are required");
            goto fail;
        }
        const json_t *gi = f[MF_GI], *ci = f[MF_CI];
        bool has_gi = gi && !json_is_null(gi), has_ci = ci && !json_is_null(ci);
        bool has_mu = *a->mig_uuid != '\0';
        if (has_gi != has_ci || has_gi != has_mu) {
            snprintf(why, sizeof(why),
                     "migUUID, gpuInstanceID and computeInstanceID must be all set or none");
            goto fail;
        }
        a->has_runtime = has_mu;
        if (has_mu &&
            ((err = json_i32(gi, "gpuInstanceID", &a->gpu_instance_id, 0, why, sizeof(why))) ||
             (err =
                  json_i32(ci, "computeInstanceID", &a->compute_instance_id, 0, why, sizeof(why)))))
            goto fail;
        for (size_t j = 0; j + 1 < out->n; j++) {
            if (out->items[j].container_index == a->container_index &&
                out->items[j].device_index == a->device_index) {
                err = VS_ERR_PARSE;
                snprintf(why, sizeof(why), "duplicate containerIndex %d deviceIndex %d",
                         a->container_index, a->device_index);
                goto fail;
            }
        }
        continue;
    fail:
        json_decref(root);
        vs_mig_allocs_cleanup(out);
        if (err == VS_ERR_NOMEM)
            return vs_err_set(eb, err, "out of memory");
        return bad(eb, VS_ANNO_MIG_ALLOC, val, "entry %zu: %s", i, why);
    }
    json_decref(root);
    return VS_OK;
}

char *vs_annot_format_mig(const struct vs_mig_allocs *m)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "[");
    for (size_t i = 0; i < m->n; i++) {
        const struct vs_mig_alloc *a = &m->items[i];
        vs_buf_printf(&b, "%s{\"containerIndex\":%d,\"deviceIndex\":%d,\"gpuUUID\":", i ? "," : "",
                      a->container_index, a->device_index);
        vs_json_put_string(&b, a->gpu_uuid);
        vs_buf_puts(&b, ",\"profile\":");
        vs_json_put_string(&b, a->profile);
        vs_buf_printf(&b, ",\"placement\":{\"start\":%d,\"size\":%d}", a->placement.start,
                      a->placement.size);
        if (a->has_runtime) {
            vs_buf_puts(&b, ",\"migUUID\":");
            vs_json_put_string(&b, a->mig_uuid);
            vs_buf_printf(&b, ",\"gpuInstanceID\":%d,\"computeInstanceID\":%d", a->gpu_instance_id,
                          a->compute_instance_id);
        }
        vs_buf_puts(&b, "}");
    }
    vs_buf_puts(&b, "]");
    return vs_buf_steal(&b);
}

/* ------------------------------------------------------------------ lock and time */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

enum vs_err vs_annot_parse_rfc3339(const char *s, int64_t *out)
{
    int Y, M, D, h, m, sec;
    if (strlen(s) < 20 || !digits(s, 4, &Y) || s[4] != '-' || !digits(s + 5, 2, &M) ||
        s[7] != '-' || !digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &m) || s[16] != ':' ||
        !digits(s + 17, 2, &sec))
        return VS_ERR_PARSE;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
    if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || (M == 2 && D == 29 && !leap) || h > 23 ||
        m > 59 || sec > 59)
        return VS_ERR_PARSE;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return VS_ERR_PARSE;
        while (isdigit((unsigned char)*p))
            p++;
    }
    int off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return VS_ERR_PARSE;
        off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return VS_ERR_PARSE;
    }
    if (*p)
        return VS_ERR_PARSE;
    *out = days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + m * 60 + sec - off;
    return VS_OK;
}

void vs_lock_cleanup(struct vs_lock *l)
{
    if (!l)
        return;
    free(l->ns);
    free(l->name);
    l->ns = l->name = NULL;
}

enum vs_err vs_annot_parse_lock(const char *val, struct vs_lock *out, struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    const char *c1 = strchr(val, ',');
    if (!c1) {
        if (vs_annot_parse_rfc3339(val, &out->time))
            return bad(eb, VS_ANNO_LOCK, val, "not an RFC 3339 time");
        out->legacy = true;
        out->ns = strdup("");
        out->name = strdup("");
    } else {
        const char *c2 = strchr(c1 + 1, ',');
        if (!c2 || strchr(c2 + 1, ','))
            return bad(eb, VS_ANNO_LOCK, val, "want <time>,<namespace>,<pod>");
        char ts[64];
        size_t tl = (size_t)(c1 - val);
        if (tl >= sizeof(ts))
            return bad(eb, VS_ANNO_LOCK, val, "not an RFC 3339 time");
        memcpy(ts, val, tl);
        ts[tl] = '\0';
        if (vs_annot_parse_rfc3339(ts, &out->time))
            return bad(eb, VS_ANNO_LOCK, val, "not an RFC 3339 time");
        out->ns = dupn(c1 + 1, (size_t)(c2 - c1 - 1));
        out->name = strdup(c2 + 1);
    }
    if (!out->ns || !out->name) {
        vs_lock_cleanup(out);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    return VS_OK;
}

char *vs_annot_format_lock(int64_t now, const char *ns, const char *name)
{
    char ts[40];
    vs_annot_format_rfc3339(now, ts, sizeof(ts));
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_printf(&b, "%s,%s,%s", ts, ns, name);
    return vs_buf_steal(&b);
}

void vs_annot_format_rfc3339(int64_t now, char *out, size_t len)
{
    int64_t days = now / 86400, rem = now % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    /* civil_from_days */
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    snprintf(out, len, "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)y, m, d, (int)(rem / 3600),
             (int)(rem / 60 % 60), (int)(rem % 60));
}

/* ------------------------------------------------------------------ weights */

enum vs_err vs_annot_parse_weights(const char *val, struct vs_weights *out, struct vs_errbuf *eb)
{
    out->slot = out->core = out->mem = 1;
    if (!val)
        return VS_OK;
    struct vs_weights w = {0, 0, 0};
    bool seen[3] = {false, false, false};
    const char *parts[3];
    size_t plen[3];
    size_t np = 0;
    const char *p = val;
    for (;;) {
        const char *comma = strchr(p, ',');
        if (np < 3) {
            parts[np] = p;
            plen[np] = comma ? (size_t)(comma - p) : strlen(p);
        }
        np++;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (np != 3)
        return bad(eb, VS_ANNO_WEIGHTS " annotation", val,
                   "expected slot, core, and memory weights");
    for (size_t i = 0; i < 3; i++) {
        const char *s = parts[i], *e = parts[i] + plen[i];
        const char *eq = memchr(s, '=', plen[i]);
        if (!eq)
            return bad(eb, VS_ANNO_WEIGHTS " annotation", val, "expected key=value entries");
        const char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;
        while (ks < ke && isspace((unsigned char)*ks))
            ks++;
        while (ke > ks && isspace((unsigned char)ke[-1]))
            ke--;
        while (vs < ve && isspace((unsigned char)*vs))
            vs++;
        while (ve > vs && isspace((unsigned char)ve[-1]))
            ve--;
        size_t kl = (size_t)(ke - ks);
        int slot;
        if (kl == 4 && memcmp(ks, "slot", 4) == 0)
            slot = 0;
        else if (kl == 4 && memcmp(ks, "core", 4) == 0)
            slot = 1;
        else if (kl == 6 && memcmp(ks, "memory", 6) == 0)
            slot = 2;
        else
            return bad(eb, VS_ANNO_WEIGHTS " annotation", val, "unknown weight \"%.*s\"", (int)kl,
                       ks);
        static const char *names[] = {"slot", "core", "memory"};
        if (seen[slot])
            return bad(eb, VS_ANNO_WEIGHTS " annotation", val, "duplicate \"%s\" weight",
                       names[slot]);
        seen[slot] = true;
        int64_t v;
        if (!parse_int(vs, (size_t)(ve - vs), INT64_MIN, INT64_MAX, &v))
            return bad(eb, VS_ANNO_WEIGHTS " annotation", val,
                       "\"%s\" weight \"%.*s\" is not an integer", names[slot],
                       (int)(ve - vs > 40 ? 40 : ve - vs), vs);
        if (v < 0)
            return bad(eb, VS_ANNO_WEIGHTS " annotation", val, "\"%s\" weight must not be negative",
                       names[slot]);
        if (slot == 0)
            w.slot = v;
        else if (slot == 1)
            w.core = v;
        else
            w.mem = v;
    }
    if (w.slot == 0 && w.core == 0 && w.mem == 0)
        return bad(eb, VS_ANNO_WEIGHTS " annotation", val, "at least one weight must be positive");
    *out = w;
    return VS_OK;
}
