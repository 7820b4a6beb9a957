/* sgpu: the Metax-SGPU backend (spec/hami-vendors.md §2.4.2): shared MetaX cards.
 *
 * Inventory: the device plugin's JSON array in the node annotation metax-tech.com/node-gpu-devices
 * ({uuid, totalDevCount, totalCompute, totalVRam (MiB), numa, healthy, qosPolicy, linkZone, ...},
 * read with Go's rules); a card's index is its position, its custominfo {QosPolicy, Model,
 * LinkZone}.
 * Requests (limits only): metax-tech.com/sgpu cards, metax-tech.com/vcore percent (100 when
 * absent), metax-tech.com/vmemory in GiB, or in bytes when the quantity's canonical text has a
 * letter (16Gi, 1024Mi, but also 1000 = "1k").
 * Fit (its own, HAMi's MetaxSDevices.Fit): card health (CardUnhealthy), the pod's app class
 * (metax-tech.com/sgpu-app-class online/offline) against the classes of the pods already on the
 * card, the QoS policy (metax-tech.com/sgpu-qos-policy) against the card's, UUID selectors,
 * slots, memory and cores (no clamp to 100; none for online pods); then a choice among the
 * cards that pass: online pods prefer cards with fewer online pods, exclusive requests (100
 * cores, no app class) prefer cards of one MetaLink zone.
 * Node score: policy-neutral, times 10000 (-10000 under spread): online pods lose for the pods
 * already on their cards; exclusive pods with topology awareness score the MetaLink pairs they
 * take and keep.
 * Filter writes hami.io/metax-sgpu-devices-to-allocate and -allocated,
 * metax-tech.com/gpu-devices-allocated (per container [{uuid, compute, vRam}]) and
 * metax-tech.com/predicate-time (Unix ns). Admission validates the app class and QoS and gives a
 * pod without QoS best-effort. Bind takes the shared lock.
 *
 * Fixed orders where HAMi has none: the online preference sorts stably (walk order on ties);
 * MetaLink zones of equal size go by zone number. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "buf.h"
#include "gojson.h"
#include "json_text.h"
#include "metax.h"
#include "model.h"
#include "policy.h"
#include "quantity.h"
#include "request.h"

#define WORD       "Metax-SGPU"
#define INVENTORY  "metax-tech.com/node-gpu-devices"
#define ALLOCATED  "metax-tech.com/gpu-devices-allocated"
#define PRED_TIME  "metax-tech.com/predicate-time"
#define USE_UUID   "metax-tech.com/use-gpuuuid"
#define NOUSE_UUID "metax-tech.com/nouse-gpuuuid"
#define QOS        "metax-tech.com/sgpu-qos-policy"
#define TOPO       "metax-tech.com/sgpu-topology-aware"
#define APP_CLASS  "metax-tech.com/sgpu-app-class"
#define FACTOR     1024
#define I32MAX     2147483647LL
#define SHOW_MAX   64

/* Pod tags (vs_device_ops.pod_tag): the pod's app class. */
enum { TAG_NONE, TAG_ONLINE, TAG_OFFLINE };

/* The QoS a card is expected to switch to (HAMi's JitteryQosCache): set when Filter places a pod
 * whose QoS differs from the card's, dropped when the card's inventory reports that QoS. */
struct qos_ent {
    char *uuid;
    char *qos;
    UT_hash_handle hh;
};

/* The backend's state. Mutable across Filters: `cache` (the QoS expectations), guarded by mu —
 * written by annotate (Filter's decision) and inventory (node updates), read by Fit under the
 * model's read lock from several threads. */
struct sgpu {
    bool topology_aware; /* sgpuTopologyAware */
    pthread_mutex_t mu;
    struct qos_ent *cache;
};

static void sgpu_free(void *priv)
{
    struct sgpu *s = priv;
    struct qos_ent *e, *tmp;
    HASH_ITER(hh, s->cache, e, tmp)
    {
        HASH_DEL(s->cache, e);
        free(e->uuid);
        free(e->qos);
        free(e);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* The expected QoS of card uuid into buf (len bytes); false when none is expected. */
static bool cache_get(struct sgpu *s, const char *uuid, char *buf, size_t len)
{
    struct qos_ent *e;
    pthread_mutex_lock(&s->mu);
    HASH_FIND_STR(s->cache, uuid, e);
    if (e)
        snprintf(buf, len, "%s", e->qos);
    pthread_mutex_unlock(&s->mu);
    return e != NULL;
}

static void cache_put(struct sgpu *s, const char *uuid, const char *qos)
{
    struct qos_ent *e;
    pthread_mutex_lock(&s->mu);
    HASH_FIND_STR(s->cache, uuid, e);
    if (e) {
        char *q = strdup(qos);
        if (q) {
            free(e->qos);
            e->qos = q;
        }
    } else if ((e = calloc(1, sizeof(*e)))) {
        e->uuid = strdup(uuid);
        e->qos = strdup(qos);
        if (e->uuid && e->qos) {
            HASH_ADD_KEYPTR(hh, s->cache, e->uuid, strlen(e->uuid), e);
        } else {
            free(e->uuid);
            free(e->qos);
            free(e);
        }
    }
    pthread_mutex_unlock(&s->mu);
}

/* A card reported with the QoS it was expected to take: the expectation is met. */
static void cache_sync(struct sgpu *s, const char *uuid, const char *qos)
{
    struct qos_ent *e;
    pthread_mutex_lock(&s->mu);
    HASH_FIND_STR(s->cache, uuid, e);
    if (e && strcmp(e->qos, qos) == 0) {
        HASH_DEL(s->cache, e);
        free(e->uuid);
        free(e->qos);
        free(e);
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---------------------------------------------------------------- inventory */

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    static const char *const keys[] = {INVENTORY};
    return vs_device_fp_annotations(kn, keys, 1);
}

/* "invalid <key> "<value, cut>": <detail>". */
static enum vs_err bad(struct vs_errbuf *eb, const char *val, const char *detail)
{
    size_t vl = strlen(val);
    return vs_err_set(eb, VS_ERR_PARSE, "invalid %s \"%.*s%s\": %s", INVENTORY,
                      (int)(vl > SHOW_MAX ? SHOW_MAX : vl), val, vl > SHOW_MAX ? "..." : "",
                      detail);
}

/* The fields of the plugin's MetaxSDeviceInfo. */
enum {
    F_UUID,
    F_BDF,
    F_MODEL,
    F_DEVCOUNT,
    F_COMPUTE,
    F_VRAM,
    F_ADEVCOUNT,
    F_ACOMPUTE,
    F_AVRAM,
    F_NUMA,
    F_HEALTHY,
    F_QOS,
    F_LINKZONE,
    F_N
};
static const char *const fields[F_N] = {"uuid",
                                        "bdf",
                                        "model",
                                        "totalDevCount",
                                        "totalCompute",
                                        "totalVRam",
                                        "availableDevCount",
                                        "availableCompute",
                                        "availableVRam",
                                        "numa",
                                        "healthy",
                                        "qosPolicy",
                                        "linkZone"};

/* One array entry into a card (its index = its position). */
static enum vs_err decode_card(const json_t *o, size_t i, struct vs_inventory *out, char *why,
                               size_t wl)
{
    json_t *f[F_N];
    struct vs_errbuf e;
    if (!vs_gojson_fields(o, fields, F_N, f)) {
        snprintf(why, wl, "not an object");
        return VS_ERR_PARSE;
    }
    const char *s[3];
    int64_t n[8];
    bool healthy;
    const char *qos;
    static const int sf[3] = {F_UUID, F_BDF, F_MODEL};
    for (size_t k = 0; k < 3; k++)
        if (vs_gojson_str(f[sf[k]], &s[k], &e)) {
            snprintf(why, wl, "field %s: %s", fields[sf[k]], e.msg);
            return VS_ERR_PARSE;
        }
    static const int nf[8] = {F_DEVCOUNT, F_COMPUTE, F_VRAM, F_ADEVCOUNT,
                              F_ACOMPUTE, F_AVRAM,   F_NUMA, F_LINKZONE};
    for (size_t k = 0; k < 8; k++)
        if (vs_gojson_int(f[nf[k]], -I32MAX - 1, I32MAX, &n[k], &e)) {
            snprintf(why, wl, "field %s: %s", fields[nf[k]], e.msg);
            return VS_ERR_PARSE;
        }
    if (vs_gojson_bool(f[F_HEALTHY], &healthy, &e)) {
        snprintf(why, wl, "field healthy: %s", e.msg);
        return VS_ERR_PARSE;
    }
    if (vs_gojson_str(f[F_QOS], &qos, &e)) {
        snprintf(why, wl, "field qosPolicy: %s", e.msg);
        return VS_ERR_PARSE;
    }
    struct vs_card_reg *c = vs_device_add_card(out, s[0], WORD);
    json_t *custom =
        json_pack("{s:s,s:s,s:I}", "QosPolicy", qos, "Model", s[2], "LinkZone", (json_int_t)n[7]);
    if (!c || !custom) {
        json_decref(custom);
        snprintf(why, wl, "out of memory");
        return VS_ERR_NOMEM;
    }
    c->index = (uint32_t)i;
    c->count = (int32_t)n[0];
    c->devcore = (int32_t)n[1];
    c->devmem = (int32_t)n[2];
    c->numa = (int32_t)n[6];
    c->health = healthy;
    c->custom = custom;
    return VS_OK;
}

/* Parses the annotation value into out's cards (empty before; left empty on error). */
static enum vs_err parse_devices(const char *val, struct vs_inventory *out, struct vs_errbuf *eb)
{
    json_t *root = NULL;
    struct vs_errbuf je;
    char why[VS_ERRBUF_SIZE] = "";
    enum vs_err err = vs_gojson_parse(val, strlen(val), &root, &je);
    if (err)
        return err == VS_ERR_NOMEM ? vs_err_set(eb, err, "out of memory") : bad(eb, val, je.msg);
    if (!json_is_array(root) && !json_is_null(root)) {
        json_decref(root);
        return bad(eb, val, "expected a JSON array of devices");
    }
    if (json_array_size(root) == 0) {
        json_decref(root);
        return bad(eb, val, "no sdevice found on node");
    }
    for (size_t i = 0; i < json_array_size(root); i++) {
        if ((err = decode_card(json_array_get(root, i), i, out, why, sizeof(why)))) {
            json_decref(root);
            vs_register_cleanup(&out->reg); /* nothing half-done */
            if (err == VS_ERR_NOMEM)
                return vs_err_set(eb, err, "out of memory");
            char detail[VS_ERRBUF_SIZE + 32];
            snprintf(detail, sizeof(detail), "device %zu: %s", i, why);
            return bad(eb, val, detail);
        }
    }
    json_decref(root);
    return VS_OK;
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    const char *v = vs_kv_get(&kn->annotations, INVENTORY);
    if (!v)
        return VS_OK;
    enum vs_err err = parse_devices(v, out, eb);
    if (err)
        return err;
    /* The plugin reports each card's QoS: expectations it now meets are done. */
    for (size_t i = 0; i < out->reg.n; i++) {
        const struct vs_card_reg *c = &out->reg.cards[i];
        cache_sync(d->priv, c->uuid, json_string_value(json_object_get(c->custom, "QosPolicy")));
    }
    return VS_OK;
}

/* ---------------------------------------------------------------- requests */

/* Whether Kubernetes' canonical text of quantity s (value v, a whole number) has a letter, as
 * HAMi's vmemory rule asks: a binary suffix (Ki..Ei) stays binary from 1024 up and shows one
 * when v is a multiple of 1024; every other form is decimal and shows a suffix or an exponent
 * when v is a non-zero multiple of 1000. */
static bool canonical_has_letter(const char *s, int64_t v)
{
    size_t n = strlen(s);
    bool binary = n >= 2 && s[n - 1] == 'i';
    if (binary && (v >= 1024 || v <= -1024))
        return v % 1024 == 0;
    return v != 0 && v % 1000 == 0;
}

/* count, vcore (100 when absent) and vmemory, all from the limits only. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n, cores = 100, mem = 0, v;
    bool has;
    enum vs_err err;
    if ((err = vs_device_qty(c, d->res_count, true, 0, I32MAX, &n, &has, eb)) || !has || !n)
        return err;
    if ((err = vs_device_qty(c, d->res_cores, true, 0, I32MAX, &cores, &has, eb)))
        return err;
    if (!has)
        cores = 100;
    const char *q = vs_device_res(c, d->res_mem, true);
    if (q) {
        if (vs_quantity_int(q, &v) == VS_OK && canonical_has_letter(q, v)) {
            mem = v / 1048576;
            if (mem < 0 || mem > I32MAX)
                return vs_err_set(eb, VS_ERR_INVAL,
                                  "invalid %s \"%s\" in container %s: must be between 0 and "
                                  "%lld MiB",
                                  d->res_mem, q, c->name ? c->name : "", I32MAX);
        } else {
            if ((err = vs_device_qty(c, d->res_mem, true, 0, I32MAX / FACTOR, &v, &has, eb)))
                return err;
            mem = v * FACTOR;
        }
    }
    out->nums = (int32_t)n;
    out->memreq = (int32_t)mem;
    out->pct = mem ? 0 : 100;
    out->cores = (int32_t)cores;
    return VS_OK;
}

/* ---------------------------------------------------------------- the pod */

struct podctx {
    const struct vs_pod *p;
    bool has_class;  /* the app class annotation is there (any value) */
    int cls;         /* TAG_ONLINE, TAG_OFFLINE or TAG_NONE */
    const char *qos; /* the QoS annotation, "" when absent */
    int topo;        /* the topology annotation: -1 none or unparsable, else 0/1 */
    struct vs_strlist use, nouse;
};

static int class_of(const char *v)
{
    if (v && strcmp(v, "online") == 0)
        return TAG_ONLINE;
    if (v && strcmp(v, "offline") == 0)
        return TAG_OFFLINE;
    return TAG_NONE;
}

static uint8_t pod_tag(const struct vs_device *d, const struct vs_pod *p)
{
    return (uint8_t)class_of(vs_kv_get(&p->annotations, APP_CLASS));
}

static void pod_end(void *ctx)
{
    struct podctx *x = ctx;
    if (!x)
        return;
    vs_strlist_cleanup(&x->use);
    vs_strlist_cleanup(&x->nouse);
    free(x);
}

static enum vs_err pod_begin(const struct vs_device *d, const struct vs_pod *p, void **ctx,
                             struct vs_errbuf *eb)
{
    struct podctx *x = calloc(1, sizeof(*x));
    if (!x)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    const struct vs_kvlist *an = &p->annotations;
    x->p = p;
    const char *cls = vs_kv_get(an, APP_CLASS);
    x->has_class = cls != NULL;
    x->cls = class_of(cls);
    x->qos = vs_kv_get(an, QOS);
    if (!x->qos)
        x->qos = "";
    const char *topo = vs_kv_get(an, TOPO);
    bool b;
    x->topo = topo && vs_annot_parse_bool(topo, &b) == VS_OK ? b : -1;
    if (vs_annot_parse_list(vs_kv_get(an, USE_UUID), &x->use) ||
        vs_annot_parse_list(vs_kv_get(an, NOUSE_UUID), &x->nouse)) {
        pod_end(x);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    *ctx = x;
    return VS_OK;
}

/* ---------------------------------------------------------------- Fit */

/* Reasons of this Fit, in the order of HAMi's checks. */
enum {
    R_UNHEALTHY,
    R_APPCLASS,
    R_QOS,
    R_UUID,
    R_SLICING,
    R_EXCLUSIVE,
    R_MEM,
    R_CORE,
    R_CU,
    R_INSUFF,
    R_N
};
static const char *const reason_words[R_N] = {"CardUnhealthy",
                                              "CardAppClassMismatch",
                                              "CardQosPolicyMismatch",
                                              "CardUuidMismatch",
                                              "CardTimeSlicingExhausted",
                                              "ExclusiveDeviceAllocateConflict",
                                              "CardInsufficientMemory",
                                              "CardInsufficientCore",
                                              "CardComputeUnitsExhausted",
                                              "AllocatedCardsInsufficientRequest"};

/* HAMi's GenReason: "<count>/<total> <Word>" items sorted as strings, joined by ", ". */
static char *gen_reason(const size_t counts[R_N], size_t total)
{
    char items[R_N][80];
    const char *ptr[R_N];
    size_t n = 0;
    for (size_t r = 0; r < R_N; r++) {
        if (!counts[r])
            continue;
        snprintf(items[n], sizeof(items[n]), "%zu/%zu %s", counts[r], total, reason_words[r]);
        size_t k = n;
        while (k > 0 && strcmp(ptr[k - 1], items[n]) > 0) {
            ptr[k] = ptr[k - 1];
            k--;
        }
        ptr[k] = items[n];
        n++;
    }
    struct vs_buf b;
    vs_buf_init(&b);
    for (size_t i = 0; i < n; i++)
        vs_buf_printf(&b, "%s%s", i ? ", " : "", ptr[i]);
    return vs_buf_steal(&b);
}

static const char *card_qos(const struct vs_card *c)
{
    const char *q = json_string_value(json_object_get(c->custom, "QosPolicy"));
    return q ? q : "";
}

static int64_t card_zone(const struct vs_card *c)
{
    return json_integer_value(json_object_get(c->custom, "LinkZone"));
}

/* The QoS card uuid has for container ctr of the pod in this Filter (HAMi rewrites the card's
 * cached QoS with each app container that takes it): the pod's QoS, or "" after a container took
 * it with 100 cores; NULL when no earlier app container took it (the registered QoS holds). */
static const char *qos_in_request(const struct vs_pod_devs *devs, size_t n_init, size_t ctr,
                                  const char *uuid, const char *pod_qos)
{
    const char *q = NULL;
    for (size_t i = n_init; devs && i < ctr && i < devs->n; i++)
        for (size_t k = 0; k < devs->ctrs[i].n; k++)
            if (strcmp(devs->ctrs[i].devs[k].uuid, uuid) == 0)
                q = devs->ctrs[i].devs[k].usedcores == 100 ? "" : pod_qos;
    return q;
}

/* HAMi's checkAppClass: an unused card takes anyone; else the card's classes (its pods') and the
 * pod's must both be set or both unset, and an offline pod stays off a card with online pods. */
static bool app_class_ok(const struct vs_fit_call *fc, const struct podctx *x,
                         const struct vs_scard *sc)
{
    if (sc->used == 0)
        return true;
    uint32_t t[VS_POD_TAGS];
    fc->card_tags(fc->ectx, fc->node, sc->c, t);
    bool on = t[TAG_ONLINE] > 0, off = t[TAG_OFFLINE] > 0;
    if ((on || off) != (x->cls != TAG_NONE))
        return false;
    return !(on && x->cls == TAG_OFFLINE);
}

/* HAMi's checkDeviceQos for a pod that is not online. */
static bool qos_ok(const struct vs_fit_call *fc, const struct podctx *x, const struct vs_scard *sc)
{
    if (sc->used == 0 || fc->req->cores == 100)
        return true;
    char buf[256];
    const char *q = NULL;
    if (cache_get(fc->dev->priv, sc->c->uuid, buf, sizeof(buf)))
        q = buf;
    else if (!(q = qos_in_request(fc->so_far, x->p->n_init, fc->ctr_index, sc->c->uuid, x->qos)))
        q = card_qos(sc->c);
    return !*q || strcmp(q, x->qos) == 0;
}

/* Online pods: cards with only offline pods last, then fewer online pods, then fewer offline
 * pods (a stable sort: HAMi's is not, so its ties are random). */
static void prefer_online(const struct vs_fit_call *fc, struct vs_scard **c, size_t n)
{
    uint32_t(*t)[VS_POD_TAGS] = calloc(n, sizeof(*t));
    if (!t)
        return; /* keep the walk order */
    for (size_t i = 0; i < n; i++)
        fc->card_tags(fc->ectx, fc->node, c[i]->c, t[i]);
    for (size_t i = 1; i < n; i++) {
        struct vs_scard *cv = c[i];
        uint32_t tv[VS_POD_TAGS];
        memcpy(tv, t[i], sizeof(tv));
        size_t j = i;
        for (; j > 0; j--) {
            /* less(tv, t[j-1]) */
            const uint32_t *u = t[j - 1];
            bool vo = tv[TAG_ONLINE] == 0 && tv[TAG_OFFLINE] > 0;
            bool uo = u[TAG_ONLINE] == 0 && u[TAG_OFFLINE] > 0;
            bool less;
            if (vo && uo)
                less = tv[TAG_OFFLINE] < u[TAG_OFFLINE];
            else if (vo)
                less = false;
            else if (uo)
                less = true;
            else if (tv[TAG_ONLINE] == u[TAG_ONLINE])
                less = tv[TAG_OFFLINE] < u[TAG_OFFLINE];
            else
                less = tv[TAG_ONLINE] < u[TAG_ONLINE];
            if (!less)
                break;
            c[j] = c[j - 1];
            memcpy(t[j], t[j - 1], sizeof(tv));
        }
        c[j] = cv;
        memcpy(t[j], tv, sizeof(tv));
    }
    free(t);
}

/* Exclusive requests: the first MetaLink zone (zones by size, then number) with enough cards;
 * else across zones in that order, then cards without a zone (<= 0); else the first ones. out
 * gets `need` of the n cards c. */
static bool prefer_metalink(struct vs_scard **c, size_t n, size_t need, struct vs_scard **out)
{
    int64_t *zone = calloc(n, sizeof(*zone)), *zones = calloc(n, sizeof(*zones));
    size_t *size = calloc(n, sizeof(*size)), nz = 0;
    if (!zone || !zones || !size) {
        free(zone);
        free(zones);
        free(size);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        zone[i] = card_zone(c[i]->c);
        if (zone[i] <= 0)
            continue;
        size_t k;
        for (k = 0; k < nz && zones[k] != zone[i]; k++)
            ;
        if (k == nz)
            zones[nz++] = zone[i];
        size[k]++;
    }
    /* zones by (size, number) */
    for (size_t i = 1; i < nz; i++)
        for (size_t j = i; j > 0 && (size[j] < size[j - 1] ||
                                     (size[j] == size[j - 1] && zones[j] < zones[j - 1]));
             j--) {
            int64_t tz = zones[j];
            zones[j] = zones[j - 1];
            zones[j - 1] = tz;
            size_t ts = size[j];
            size[j] = size[j - 1];
            size[j - 1] = ts;
        }
    size_t got = 0;
    for (size_t k = 0; k < nz && !got; k++) {
        if (size[k] < need)
            continue;
        for (size_t i = 0; i < n && got < need; i++)
            if (zone[i] == zones[k])
                out[got++] = c[i];
    }
    for (size_t k = 0; k < nz && got < need; k++)
        for (size_t i = 0; i < n && got < need; i++)
            if (zone[i] == zones[k])
                out[got++] = c[i];
    for (size_t i = 0; i < n && got < need; i++)
        if (zone[i] <= 0)
            out[got++] = c[i];
    for (size_t i = 0; got < need; i++)
        out[got++] = c[i];
    free(zone);
    free(zones);
    free(size);
    return true;
}

static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    const struct podctx *x = fc->pod_ctx;
    const struct vs_req *r = fc->req;
    size_t counts[R_N] = {0};
    size_t need = (size_t)r->nums, n = 0;
    bool online = x->cls == TAG_ONLINE;
    struct vs_scard **ok = calloc(fc->n_cands ? fc->n_cands : 1, sizeof(*ok));
    if (!ok) {
        *nomem = true;
        return NULL;
    }
    for (size_t ii = fc->n_cands; ii-- > 0;) {
        struct vs_scard *sc = fc->cands[ii];
        const struct vs_card *c = sc->c;
        int64_t mem = r->memreq > 0 ? r->memreq : (int64_t)c->devmem * r->pct / 100;
        if (!c->health || sc->unhealthy)
            counts[R_UNHEALTHY]++;
        else if (!app_class_ok(fc, x, sc))
            counts[R_APPCLASS]++;
        else if (!online && !qos_ok(fc, x, sc))
            counts[R_QOS]++;
        else if ((x->use.n && !vs_strlist_has(&x->use, c->uuid)) ||
                 (x->nouse.n && vs_strlist_has(&x->nouse, c->uuid)))
            counts[R_UUID]++;
        else if (c->count <= sc->used)
            counts[R_SLICING]++;
        else if (fc->gpu->mutex && sc->used > 0)
            counts[R_EXCLUSIVE]++;
        else if (c->devmem - sc->usedmem < mem)
            counts[R_MEM]++;
        else if (!online && c->devcore - sc->usedcores < r->cores)
            counts[R_CORE]++;
        else if (!online && c->devcore == 100 && r->cores == 100 && sc->used > 0)
            counts[R_EXCLUSIVE]++;
        else if (!online && c->devcore != 0 && sc->usedcores == c->devcore && r->cores == 0)
            counts[R_CU]++;
        else
            ok[n++] = sc;
    }
    if (n < need) {
        if (n)
            counts[R_INSUFF] = n;
        free(ok);
        char *reason = gen_reason(counts, fc->n_cands);
        if (!reason)
            *nomem = true;
        return reason;
    }
    struct vs_scard **best = ok;
    struct vs_scard *sel_buf[16], **sel = NULL;
    if (n > need && x->has_class) {
        if (online)
            prefer_online(fc, ok, n);
    } else if (n > need && r->cores == 100) {
        sel = need <= 16 ? sel_buf : calloc(need, sizeof(*sel));
        if (!sel || !prefer_metalink(ok, n, need, sel)) {
            if (sel != sel_buf)
                free(sel);
            free(ok);
            *nomem = true;
            return NULL;
        }
        best = sel;
    }
    for (size_t i = 0; i < need; i++) {
        const struct vs_card *c = best[i]->c;
        picks[i].card = best[i];
        picks[i].mem = r->memreq > 0 ? r->memreq : (int64_t)c->devmem * r->pct / 100;
        picks[i].cores = online ? 0 : r->cores;
    }
    if (sel && sel != sel_buf)
        free(sel);
    free(ok);
    return NULL;
}

/* ---------------------------------------------------------------- node score */

struct link {
    const char *uuid;
    int64_t zone;
};

/* 10 per pair of distinct cards in the same non-zero zone. */
static int64_t pairs(const struct link *l, size_t n)
{
    int64_t s = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(l[i].uuid, l[j].uuid) != 0 && l[i].zone != 0 && l[i].zone == l[j].zone)
                s += 10;
    return s;
}

/* Online pods: each chosen card loses for the pods already on it. */
static int64_t score_online(const struct vs_score_call *sc)
{
    int64_t s = 0;
    for (size_t b = 0; b < sc->n_before; b++) {
        const struct vs_card *c = sc->before[b].c;
        bool chosen = false;
        for (size_t i = 0; i < sc->devs->n && !chosen; i++)
            for (size_t k = 0; k < sc->devs->ctrs[i].n && !chosen; k++)
                chosen = strcmp(sc->devs->ctrs[i].devs[k].uuid, c->uuid) == 0;
        if (!chosen)
            continue;
        uint32_t t[VS_POD_TAGS];
        sc->card_tags(sc->ectx, sc->node, c, t);
        if (t[TAG_OFFLINE] > 0 && t[TAG_ONLINE] == 0)
            s += -100 * (int64_t)t[TAG_OFFLINE];
        else
            s += -20 * (int64_t)t[TAG_ONLINE] - 2 * (int64_t)t[TAG_OFFLINE];
    }
    return s;
}

/* The node's card of this backend with this uuid, NULL when none. */
static const struct vs_card *find_card(const struct vs_score_call *sc, const char *uuid)
{
    for (size_t i = 0; i < sc->node->n_cards; i++) {
        const struct vs_card *c = &sc->node->cards[i];
        if (c->dev == sc->dev->id && strcmp(c->uuid, uuid) == 0)
            return c;
    }
    return NULL;
}

/* Exclusive pods with topology awareness: 10 x the MetaLink pairs taken, less the pairs of the
 * node's unused cards that the placement breaks. */
static int64_t score_exclusive(const struct vs_score_call *sc)
{
    size_t na = 0, nv = 0, nr = 0, total = 0;
    for (size_t i = 0; i < sc->devs->n; i++)
        total += sc->devs->ctrs[i].n;
    struct link *a = calloc(total + 1, sizeof(*a));
    struct link *v = calloc(sc->n_before + 1, sizeof(*v));
    struct link *rest = calloc(sc->n_before + 1, sizeof(*rest));
    int64_t s = 0;
    if (!a || !v || !rest)
        goto out;
    for (size_t i = 0; i < sc->devs->n; i++)
        for (size_t k = 0; k < sc->devs->ctrs[i].n; k++) {
            const struct vs_cdev *cd = &sc->devs->ctrs[i].devs[k];
            if (cd->usedcores != 100)
                continue;
            const struct vs_card *c = find_card(sc, cd->uuid);
            a[na++] = (struct link){cd->uuid, c ? card_zone(c) : 0};
        }
    for (size_t b = 0; b < sc->n_before; b++) {
        const struct vs_card *c = sc->before[b].c;
        if (sc->before[b].used != 0)
            continue;
        /* Only this backend's cards carry a LinkZone HAMi can read (an int32 in custominfo). */
        struct link l = {c->uuid, c->dev == sc->dev->id ? card_zone(c) : 0};
        v[nv++] = l;
        bool taken = false;
        for (size_t k = 0; k < na && !taken; k++)
            taken = strcmp(a[k].uuid, c->uuid) == 0;
        if (!taken)
            rest[nr++] = l;
    }
    int64_t A = pairs(a, na), V = pairs(v, nv), R = pairs(rest, nr);
    s = 10 * A - (V - A - R);
out:
    free(a);
    free(v);
    free(rest);
    return s;
}

static double score_node(const struct vs_score_call *sc)
{
    const struct podctx *x = sc->pod_ctx;
    const struct sgpu *s = sc->dev->priv;
    size_t picks = 0;
    const struct vs_cdev *first100 = NULL;
    for (size_t i = 0; i < sc->devs->n; i++)
        for (size_t k = 0; k < sc->devs->ctrs[i].n; k++) {
            picks++;
            if (!first100 && sc->devs->ctrs[i].devs[k].usedcores == 100)
                first100 = &sc->devs->ctrs[i].devs[k];
        }
    int64_t v = 0;
    if (picks && x->cls == TAG_ONLINE)
        v = score_online(sc);
    else if (first100 && (x->topo >= 0 ? x->topo == 1 : s->topology_aware))
        v = score_exclusive(sc);
    /* Policy-neutral: weighed 10000, inverted under spread (HAMi's OverrideScore). */
    float w = strcmp(sc->node_policy, "spread") == 0 ? -10000.0f : 10000.0f;
    return (double)((float)v * w);
}

/* ---------------------------------------------------------------- annotations */

/* A JSON string as Go's encoding/json writes it (<, >, & and U+2028/9 escaped too). */
static bool put_go_string(struct vs_buf *b, const char *s)
{
    struct vs_buf t;
    vs_buf_init(&t);
    bool ok = vs_json_put_string(&t, s);
    char *lit = vs_buf_steal(&t);
    if (!ok || !lit) {
        free(lit);
        return false;
    }
    for (const char *p = lit; *p; p++) {
        if (*p == '<')
            vs_buf_puts(b, "\\u003c");
        else if (*p == '>')
            vs_buf_puts(b, "\\u003e");
        else if (*p == '&')
            vs_buf_puts(b, "\\u0026");
        else if ((unsigned char)p[0] == 0xe2 && (unsigned char)p[1] == 0x80 &&
                 ((unsigned char)p[2] == 0xa8 || (unsigned char)p[2] == 0xa9)) {
            vs_buf_puts(b, (unsigned char)p[2] == 0xa8 ? "\\u2028" : "\\u2029");
            p += 2;
        } else
            vs_buf_printf(b, "%c", *p);
    }
    free(lit);
    return true;
}

static enum vs_err annotate(const struct vs_device *d, const struct vs_pod *p,
                            const struct vs_node *n, const struct vs_pod_devs *devs,
                            const struct vs_mig_allocs *mig, int64_t now_ns, json_t *out)
{
    enum vs_err err = vs_device_annotate_generic(d, devs, out);
    if (err)
        return err;
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "[");
    bool ok = true;
    for (size_t i = 0; i < devs->n; i++) {
        vs_buf_puts(&b, i ? ",[" : "[");
        for (size_t k = 0; k < devs->ctrs[i].n; k++) {
            const struct vs_cdev *cd = &devs->ctrs[i].devs[k];
            vs_buf_puts(&b, k ? ",{\"uuid\":" : "{\"uuid\":");
            ok &= put_go_string(&b, cd->uuid);
            if (cd->usedcores)
                vs_buf_printf(&b, ",\"compute\":%d", cd->usedcores);
            if (cd->usedmem)
                vs_buf_printf(&b, ",\"vRam\":%d", cd->usedmem);
            vs_buf_puts(&b, "}");
        }
        vs_buf_puts(&b, "]");
    }
    vs_buf_puts(&b, "]");
    char *v = vs_buf_steal(&b);
    int rc = !ok || !v || json_object_set_new(out, ALLOCATED, json_string(v));
    free(v);
    if (!rc && now_ns > 0) {
        char ts[32];
        snprintf(ts, sizeof(ts), "%lld", (long long)now_ns);
        rc = json_object_set_new(out, PRED_TIME, json_string(ts));
    }
    if (rc)
        return VS_ERR_NOMEM;
    /* The cards whose QoS this decision changes are expected to report it (HAMi's
     * addJitteryQos): until then Fit reads the expectation. */
    const char *cls = vs_kv_get(&p->annotations, APP_CLASS);
    if (class_of(cls) == TAG_ONLINE)
        return VS_OK;
    const char *pod_qos = vs_kv_get(&p->annotations, QOS);
    if (!pod_qos)
        pod_qos = "";
    for (size_t i = 0; i < devs->n; i++)
        for (size_t k = 0; k < devs->ctrs[i].n; k++) {
            const struct vs_cdev *cd = &devs->ctrs[i].devs[k];
            const char *cur = NULL;
            if (i >= p->n_init)
                cur = qos_in_request(devs, p->n_init, i, cd->uuid, pod_qos);
            if (!cur) {
                cur = "";
                for (size_t j = 0; j < n->n_cards; j++)
                    if (n->cards[j].dev == d->id && strcmp(n->cards[j].uuid, cd->uuid) == 0)
                        cur = card_qos(&n->cards[j]);
            }
            const char *want = cd->usedcores == 100 ? "" : pod_qos;
            if (strcmp(cur, want) != 0)
                cache_put(d->priv, cd->uuid, want);
        }
    return VS_OK;
}

/* ---------------------------------------------------------------- admission */

static enum vs_err admit(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *c, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb)
{
    const char *count = d->res_count ? vs_kv_get(&c->limits, d->res_count) : NULL;
    *found = count != NULL;
    if (!count)
        return VS_OK;
    const char *cls = vs_kv_get(&p->annotations, APP_CLASS);
    if (cls) {
        if (class_of(cls) == TAG_NONE)
            return vs_err_set(eb, VS_ERR_INVAL, "%s must be set one of [online, offline]",
                              APP_CLASS);
        int64_t n;
        if (vs_quantity_ceil(count, &n) || n != 1)
            return vs_err_set(eb, VS_ERR_INVAL, "app-class pod must request single device");
    }
    if (class_of(cls) == TAG_ONLINE)
        return VS_OK;
    const char *qos = vs_kv_get(&p->annotations, QOS);
    if (!qos) {
        vs_admit_set(a, VS_ADMIT_ANNOTATION, QOS, "best-effort");
        return VS_OK;
    }
    if (strcmp(qos, "best-effort") != 0 && strcmp(qos, "fixed-share") != 0 &&
        strcmp(qos, "burst-share") != 0)
        return vs_err_set(eb, VS_ERR_INVAL,
                          "%s must be set one of [best-effort, fixed-share, burst-share]", QOS);
    return VS_OK;
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .pod_begin = pod_begin,
    .pod_end = pod_end,
    .fit = fit,
    .score_node = score_node,
    .pod_tag = pod_tag,
    .annotate = annotate,
    .admit = admit,
    .free_priv = sgpu_free,
};

/* sgpuTopologyAware: a YAML bool or its text; absent = false. */
static enum vs_err topology_aware(const struct vs_devcfg *cfg, bool *out, struct vs_errbuf *eb)
{
    *out = false;
    const json_t *v =
        cfg->doc ? json_object_get(json_object_get(cfg->doc, VS_METAX_SECTION), "sgpuTopologyAware")
                 : NULL;
    if (!v || json_is_null(v))
        return VS_OK;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return VS_OK;
    }
    if (json_is_string(v) && vs_annot_parse_bool(json_string_value(v), out) == VS_OK)
        return VS_OK;
    return vs_err_set(eb, VS_ERR_PARSE, "%s.sgpuTopologyAware: expected a bool", VS_METAX_SECTION);
}

enum vs_err vs_metax_make_sgpu(const struct vs_devcfg *cfg, struct vs_devices *set,
                               struct vs_errbuf *eb)
{
    bool topo;
    enum vs_err err = topology_aware(cfg, &topo, eb);
    if (err)
        return err;
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    struct sgpu *s = d ? calloc(1, sizeof(*s)) : NULL;
    if (!s)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    s->topology_aware = topo;
    d->priv = s;
    d->lock = VS_LOCK_SHARED;
    d->mem_factor = FACTOR;
    const char *count =
        vs_device_cfg_str(cfg, VS_METAX_SECTION, "resourceVCountName", "metax-tech.com/sgpu");
    const char *mem =
        vs_device_cfg_str(cfg, VS_METAX_SECTION, "resourceVMemoryName", "metax-tech.com/vmemory");
    const char *cores =
        vs_device_cfg_str(cfg, VS_METAX_SECTION, "resourceVCoreName", "metax-tech.com/vcore");
    bool ok = vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_mem, mem) &&
              vs_device_set_str(&d->res_cores, cores) &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/metax-sgpu-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/metax-sgpu-devices-allocated") &&
              vs_device_add_managed(d, count) && vs_device_add_managed(d, mem) &&
              vs_device_add_managed(d, cores);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}
