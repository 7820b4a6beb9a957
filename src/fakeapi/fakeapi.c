/* fakeapi: a fake kube-apiserver for tests. libmicrohttpd runs one thread per connection so a
 * watch can block in its content reader until an event, a bookmark tick, its timeout, a drop
 * or shutdown. Invariants: stored objects are immutable once stored (every change stores a new
 * json_t), so the store and the watch history share references safely; `api->mu` guards all
 * mutable state. A watch waits on its kind's condition variable (`api->wcv`), broadcast when an
 * object of that kind changes, so a write wakes only the watches that may send it; `api->cv`
 * wakes the other waiters (a watch starting or ending wakes only those). A stop, a drop or a
 * compaction wakes everyone.
 * Lookups are hashed by kind/namespace/name; LIST pages and watches find where to start by
 * halving a sorted view of the kind and the resourceVersion-ordered history. */
#include "fakeapi.h"
#include "json_text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A failed hash insert leaves the entry out (hh.tbl NULL) instead of exiting. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#define BODY_MAX          (8u << 20)
#define DEFAULT_HISTORY   4096
#define DEFAULT_BOOKMARK  1000
#define DEFAULT_WATCH_S   1800
#define WAIT_STEP_MS      100
#define NAME_MAX_LEN      253
#define CONNECTION_IDLE_S 60
#define KEY_STACK         (2 * (NAME_MAX_LEN + 1)) /* holds every key a route can name */

struct kinddef {
    const char *kind;
    const char *plural;
    const char *prefix; /* group/version path */
    const char *group;  /* API group ("" = core), for authorization */
    const char *api_version;
    const char *qualified; /* resource name used in messages */
    const char *list_kind;
    bool namespaced;
};

static const struct kinddef KINDS[] = {
    {"Node", "nodes", "/api/v1", "", "v1", "nodes", "NodeList", false},
    {"Pod", "pods", "/api/v1", "", "v1", "pods", "PodList", true},
    {"ResourceQuota", "resourcequotas", "/api/v1", "", "v1", "resourcequotas", "ResourceQuotaList",
     true},
    {"Event", "events", "/api/v1", "", "v1", "events", "EventList", true},
    {"Lease", "leases", "/apis/coordination.k8s.io/v1", "coordination.k8s.io",
     "coordination.k8s.io/v1", "leases.coordination.k8s.io", "LeaseList", true},
    {"PodDisruptionBudget", "poddisruptionbudgets", "/apis/policy/v1", "policy", "policy/v1",
     "poddisruptionbudgets.policy", "PodDisruptionBudgetList", true},
    {"DeviceClass", "deviceclasses", "/apis/resource.k8s.io/v1", "resource.k8s.io",
     "resource.k8s.io/v1", "deviceclasses.resource.k8s.io", "DeviceClassList", false},
    {"ResourceSlice", "resourceslices", "/apis/resource.k8s.io/v1", "resource.k8s.io",
     "resource.k8s.io/v1", "resourceslices.resource.k8s.io", "ResourceSliceList", false},
    {"ResourceClaim", "resourceclaims", "/apis/resource.k8s.io/v1", "resource.k8s.io",
     "resource.k8s.io/v1", "resourceclaims.resource.k8s.io", "ResourceClaimList", true},
};
#define NKINDS   ((int)(sizeof(KINDS) / sizeof(KINDS[0])))
#define KIND_POD 1

struct obj {
    int kind;
    char *key;        /* ns '\0' name '\0': the hash key is all but the last NUL */
    size_t keylen;    /* both parts and the NUL between them */
    const char *ns;   /* into key; "" for cluster-scoped kinds */
    const char *name; /* into key */
    json_t *o;        /* immutable once stored; replaced whole on update */
    UT_hash_handle hh;
};

/* The objects of one kind, found by namespace and name in `by_key`. `sorted` holds the same
 * entries ordered by namespace then name for LIST and initial watch events; it is rebuilt lazily
 * once an entry is added or removed (sorted_ok false). An update swaps `o` inside its entry, so
 * it neither moves the entry nor invalidates the order. */
struct kindstore {
    struct obj *by_key;
    struct obj **sorted;
    size_t n_sorted, cap_sorted;
    bool sorted_ok;
};

struct hist {
    uint64_t rv;
    int kind;
    const char *type; /* static string */
    json_t *o;        /* shared with the store or a private snapshot */
};

struct rule {
    char *method;
    char *prefix;
    int status;
    int count;
    char *body; /* NULL = Status body */
    int retry_after;
    int ms;
};

/* One grant of the authorization table (vs_fakeapi_allow). */
struct authz {
    char *group;    /* "" = core, "*" = any */
    char *resource; /* "pods", "pods/binding", "*" */
    char *verbs;    /* ",get,list," or ",*," */
    char *ns;       /* NULL: every namespace and the cluster scope (a ClusterRole); else a Role's */
};

struct reqlog {
    char verb[8];
    char method[8];
    char *path;
};

struct sel_term {
    char *key;
    char *val;
    int op; /* 0 equals, 1 not equals, 2 exists, 3 does not exist */
};

struct sel {
    struct sel_term *t;
    size_t n;
};

struct watcher {
    struct vs_fakeapi *api;
    struct watcher *next;
    struct MHD_Connection *conn;
    int kind;
    char *ns; /* NULL = all namespaces */
    struct sel labels, fields;
    uint64_t cursor; /* every matching event up to here has been queued */
    bool bookmarks;
    double deadline, last_send;
    unsigned gen; /* drop generation at start */
    bool ending;  /* send what is pending, then end cleanly */
    char *pending;
    size_t plen, poff, pcap;
};

struct vs_fakeapi {
    struct MHD_Daemon *d;
    int port;
    char url[64];
    char *cert_pem, *key_pem;
    int bookmark_ms;
    bool quiet;
    bool no_request_log;

    unsigned connections; /* TCP connections accepted, read and written with __atomic builtins */

    pthread_mutex_t mu;         /* guards everything below */
    pthread_cond_t cv;          /* waiters other than watches (vs_fakeapi_wait_watchers) */
    pthread_cond_t wcv[NKINDS]; /* the watches of each kind */
    bool stopping;
    char *token;
    uint64_t rv;
    uint64_t uids;
    struct kindstore kinds[NKINDS];
    struct hist *hist; /* ring in resourceVersion order, so it can be searched by halving */
    size_t hist_cap, hist_start, hist_n;
    /* Per kind, the highest rv evicted from the ring: a watch of that kind from an older
     * version has missed an event (kube-apiserver keeps a watch cache per resource, so events
     * of other kinds never expire it). */
    uint64_t hist_floor[NKINDS];
    uint64_t compact[NKINDS];
    bool compact_event[NKINDS];
    struct rule *faults;
    size_t n_faults;
    struct rule *delays;
    size_t n_delays;
    struct reqlog *log;
    size_t n_log, cap_log;
    struct watcher *watchers;
    unsigned drop_gen;
    char version[32]; /* gitVersion served at /version ("" = v1.36.3) */
    bool authz_on;    /* false: every request is allowed (until the first vs_fakeapi_allow) */
    struct authz *authz;
    size_t n_authz;
    char *user;             /* named in 403 messages and SelfSubjectReviews */
    bool unserved[NKINDS];  /* kinds answered 404 (vs_fakeapi_unserve) */
    bool binding_no_labels; /* a Binding's labels are not copied (vs_fakeapi_binding_labels) */
};

/* Per-request state while the body arrives. */
struct req {
    char *body;
    size_t len, cap;
    bool too_big;
};

/* An answer computed under the lock and sent after it. */
struct reply {
    int code;
    char *body; /* malloc'd text, may be NULL for an empty body */
    int retry_after;
};

/* ------------------------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void warn(const struct vs_fakeapi *api, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(const struct vs_fakeapi *api, const char *fmt, ...)
{
    if (api && api->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("fakeapi: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int kind_find(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < NKINDS; i++)
        if (strcasecmp(s, KINDS[i].kind) == 0 || strcasecmp(s, KINDS[i].plural) == 0)
            return i;
    return -1;
}

static const char *reason_for(int code)
{
    switch (code) {
    case 400:
        return "BadRequest";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "NotFound";
    case 405:
        return "MethodNotAllowed";
    case 409:
        return "Conflict";
    case 410:
        return "Expired";
    case 413:
        return "RequestEntityTooLarge";
    case 415:
        return "UnsupportedMediaType";
    case 422:
        return "Invalid";
    case 429:
        return "TooManyRequests";
    case 500:
        return "InternalError";
    case 503:
        return "ServiceUnavailable";
    case 504:
        return "Timeout";
    }
    return "Unknown";
}

static json_t *status_obj(int code, const char *reason, const char *msg)
{
    return json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                     "metadata", "status", code < 400 ? "Success" : "Failure", "message", msg,
                     "reason", reason ? reason : reason_for(code), "code", code);
}

static void reply_json(struct reply *rp, int code, const json_t *j)
{
    rp->code = code;
    rp->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
}

static void reply_status(struct reply *rp, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void reply_status(struct reply *rp, int code, const char *reason, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *st = status_obj(code, reason, msg);
    reply_json(rp, code, st);
    json_decref(st);
}

static const char *meta_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

/* metadata of o, created when missing or not an object. Borrowed. */
static json_t *meta_of(json_t *o)
{
    json_t *m = json_object_get(o, "metadata");
    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(o, "metadata", m);
    }
    return m;
}

static void now_rfc3339(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void new_uid(struct vs_fakeapi *api, char *buf, size_t n)
{
    snprintf(buf, n, "00000000-0000-4000-8000-%012" PRIx64, ++api->uids);
}

/* ------------------------------------------------------------------------------------------ */
/* store and history (callers hold api->mu)                                                   */

/* The hash key of ns/name, NUL-terminated after the name, in buf (KEY_STACK bytes) or, when
 * longer, in a new allocation that *heap receives. NULL when out of memory. */
static char *key_make(char *buf, char **heap, const char *ns, const char *name, size_t *len)
{
    size_t nl = strlen(ns), ml = strlen(name);
    char *k = buf;
    *heap = NULL;
    *len = nl + 1 + ml;
    if (*len >= KEY_STACK && !(k = *heap = malloc(*len + 1)))
        return NULL;
    memcpy(k, ns, nl + 1);
    memcpy(k + nl + 1, name, ml + 1);
    return k;
}

/* The entry of kind/ns/name (borrowed), NULL when absent (or when a key longer than any route
 * allows cannot be built). */
static struct obj *obj_find(struct vs_fakeapi *api, int kind, const char *ns, const char *name)
{
    char buf[KEY_STACK], *heap;
    size_t len;
    struct obj *e = NULL;
    const char *k = key_make(buf, &heap, ns, name, &len);
    if (k)
        HASH_FIND(hh, api->kinds[kind].by_key, k, len, e);
    free(heap);
    return e;
}

static void obj_free(struct obj *e)
{
    json_decref(e->o);
    free(e->key);
    free(e);
}

static int cmp_key(const struct obj *x, const char *ns, const char *name)
{
    int c = strcmp(x->ns, ns);
    return c ? c : strcmp(x->name, name);
}

static int cmp_obj(const void *a, const void *b)
{
    const struct obj *y = *(const struct obj *const *)b;
    return cmp_key(*(const struct obj *const *)a, y->ns, y->name);
}

/* Brings the kind's sorted view up to date. false when out of memory. */
static bool sort_kind(struct vs_fakeapi *api, int kind)
{
    struct kindstore *ks = &api->kinds[kind];
    if (ks->sorted_ok)
        return true;
    size_t n = HASH_COUNT(ks->by_key);
    if (n > ks->cap_sorted) {
        struct obj **g = realloc(ks->sorted, n * sizeof(*g));
        if (!g)
            return false;
        ks->sorted = g;
        ks->cap_sorted = n;
    }
    ks->n_sorted = 0;
    for (struct obj *e = ks->by_key; e; e = e->hh.next)
        ks->sorted[ks->n_sorted++] = e;
    if (ks->n_sorted > 1) /* an empty kind has no array to hand qsort */
        qsort(ks->sorted, ks->n_sorted, sizeof(*ks->sorted), cmp_obj);
    ks->sorted_ok = true;
    return true;
}

/* Index in the sorted view of the first entry after ns/name, or at it when inclusive. */
static size_t sorted_seek(const struct kindstore *ks, const char *ns, const char *name,
                          bool inclusive)
{
    size_t lo = 0, hi = ks->n_sorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_key(ks->sorted[mid], ns, name);
        if (c < 0 || (c == 0 && !inclusive))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The i-th oldest event kept. */
static struct hist *hist_at(const struct vs_fakeapi *api, size_t i)
{
    return &api->hist[(api->hist_start + i) % api->hist_cap];
}

/* Called with api->mu held: the watches of kind and the other waiters. */
static void wake_kind(struct vs_fakeapi *api, int kind)
{
    pthread_cond_broadcast(&api->wcv[kind]);
    pthread_cond_broadcast(&api->cv);
}

/* Called with api->mu held: every watch and waiter. */
static void wake_all(struct vs_fakeapi *api)
{
    for (int k = 0; k < NKINDS; k++)
        pthread_cond_broadcast(&api->wcv[k]);
    pthread_cond_broadcast(&api->cv);
}

/* Position (0 = oldest) of the first kept event newer than rv; hist_n when there is none. */
static size_t hist_after(const struct vs_fakeapi *api, uint64_t rv)
{
    size_t lo = 0, hi = api->hist_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hist_at(api, mid)->rv <= rv)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void hist_add(struct vs_fakeapi *api, int kind, const char *type, json_t *o)
{
    if (api->hist_n == api->hist_cap) {
        struct hist *old = hist_at(api, 0);
        api->hist_floor[old->kind] = old->rv;
        json_decref(old->o);
        api->hist_start = (api->hist_start + 1) % api->hist_cap;
        api->hist_n--;
    }
    struct hist *h = hist_at(api, api->hist_n);
    h->rv = api->rv;
    h->kind = kind;
    h->type = type;
    h->o = json_incref(o);
    api->hist_n++;
}

/* Stores o (stolen) under the next resourceVersion and records the event. Returns the stored
 * object (borrowed) or NULL on allocation failure. */
static json_t *store(struct vs_fakeapi *api, int kind, const char *ns, const char *name, json_t *o,
                     const char *type)
{
    struct kindstore *ks = &api->kinds[kind];
    char rv[32], buf[KEY_STACK], *heap;
    size_t len;
    struct obj *e = NULL;
    api->rv++;
    snprintf(rv, sizeof(rv), "%" PRIu64, api->rv);
    json_object_set_new(meta_of(o), "resourceVersion", json_string(rv));
    const char *k = key_make(buf, &heap, ns, name, &len);
    if (k)
        HASH_FIND(hh, ks->by_key, k, len, e);
    if (e) {
        json_decref(e->o);
        e->o = o;
    } else {
        if (!k || !(e = calloc(1, sizeof(*e))) || !(e->key = heap ? heap : malloc(len + 1))) {
            free(e);
            free(heap);
            json_decref(o);
            return NULL;
        }
        heap = NULL; /* now e->key */
        if (e->key != k)
            memcpy(e->key, k, len + 1);
        e->kind = kind;
        e->keylen = len;
        e->ns = e->key;
        e->name = e->key + strlen(e->key) + 1;
        e->o = o;
        HASH_ADD_KEYPTR(hh, ks->by_key, e->key, e->keylen, e);
        if (!e->hh.tbl) {
            obj_free(e);
            return NULL;
        }
        ks->sorted_ok = false;
    }
    free(heap);
    hist_add(api, kind, type, o);
    wake_kind(api, kind);
    return o;
}

/* Removes entry e and records DELETED. Returns the deleted state (new reference). */
static json_t *remove_obj(struct vs_fakeapi *api, struct obj *e)
{
    struct kindstore *ks = &api->kinds[e->kind];
    char rv[32];
    json_t *last = json_deep_copy(e->o);
    api->rv++;
    snprintf(rv, sizeof(rv), "%" PRIu64, api->rv);
    json_object_set_new(meta_of(last), "resourceVersion", json_string(rv));
    hist_add(api, e->kind, "DELETED", last);
    HASH_DEL(ks->by_key, e);
    int kind = e->kind;
    ks->sorted_ok = false;
    obj_free(e);
    wake_kind(api, kind);
    return last;
}

/* Keeps what the server owns (kind, apiVersion, name, namespace, uid, creationTimestamp) from
 * cur on an updated object. */
static void keep_identity(json_t *o, const json_t *cur, int kind)
{
    json_t *m = meta_of(o);
    const json_t *cm = json_object_get(cur, "metadata");
    static const char *const keys[] = {"name", "namespace", "uid", "creationTimestamp"};
    json_object_set_new(o, "kind", json_string(KINDS[kind].kind));
    json_object_set_new(o, "apiVersion", json_string(KINDS[kind].api_version));
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(cm, keys[i]);
        if (v)
            json_object_set(m, keys[i], v);
        else
            json_object_del(m, keys[i]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* selectors                                                                                  */

static void sel_free(struct sel *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->t[i].key);
        free(s->t[i].val);
    }
    free(s->t);
    memset(s, 0, sizeof(*s));
}

static char *trimmed(const char *s, size_t n)
{
    while (n && *s == ' ') {
        s++;
        n--;
    }
    while (n && s[n - 1] == ' ')
        n--;
    return strndup(s, n);
}

/* Parses "k=v,k==v,k!=v" (labels also "k" and "!k"). Returns 0, or -1 when unsupported. */
static int sel_parse(const char *text, bool labels, struct sel *out)
{
    memset(out, 0, sizeof(*out));
    if (!text || !*text)
        return 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *term = trimmed(p, n);
        struct sel_term t = {0};
        struct sel_term *g;
        if (!term)
            goto fail;
        char *op = strstr(term, "!=");
        if (op) {
            t.op = 1;
            *op = '\0';
            t.val = trimmed(op + 2, strlen(op + 2));
        } else if ((op = strchr(term, '='))) {
            t.op = 0;
            *op = '\0';
            op += op[1] == '=' ? 2 : 1;
            t.val = trimmed(op, strlen(op));
        } else if (labels && term[0] == '!') {
            t.op = 3;
            memmove(term, term + 1, strlen(term));
        } else if (labels) {
            t.op = 2;
        } else {
            free(term);
            goto fail;
        }
        t.key = trimmed(term, strlen(term));
        free(term);
        if (!t.key || !*t.key || strpbrk(t.key, "() ") || (t.op < 2 && !t.val) ||
            (t.val && strpbrk(t.val, "() ")) || !(g = realloc(out->t, (out->n + 1) * sizeof(*g)))) {
            free(t.key);
            free(t.val);
            goto fail;
        }
        out->t = g;
        out->t[out->n++] = t;
        p = end ? end + 1 : p + n;
    }
    return 0;
fail:
    sel_free(out);
    return -1;
}

/* Text of a dotted field path ("spec.nodeName"); "" when absent. */
static const char *field_text(const json_t *o, const char *path, char *buf, size_t n)
{
    char part[128];
    const json_t *cur = o;
    while (*path && cur) {
        const char *dot = strchr(path, '.');
        size_t len = dot ? (size_t)(dot - path) : strlen(path);
        if (len >= sizeof(part))
            return "";
        memcpy(part, path, len);
        part[len] = '\0';
        cur = json_object_get(cur, part);
        path += len + (dot ? 1 : 0);
    }
    if (json_is_string(cur))
        return json_string_value(cur);
    if (json_is_boolean(cur))
        return json_is_true(cur) ? "true" : "false";
    if (json_is_integer(cur)) {
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(cur));
        return buf;
    }
    return "";
}

static bool sel_match(const struct sel *s, const json_t *o, bool labels)
{
    const json_t *lm = json_object_get(json_object_get(o, "metadata"), "labels");
    char buf[32];
    for (size_t i = 0; i < s->n; i++) {
        const struct sel_term *t = &s->t[i];
        const char *v;
        bool present;
        if (labels) {
            v = json_string_value(json_object_get(lm, t->key));
            present = v != NULL;
            if (!v)
                v = "";
        } else {
            v = field_text(o, t->key, buf, sizeof(buf));
            present = true;
        }
        switch (t->op) {
        case 0:
            if (!present || strcmp(v, t->val) != 0)
                return false;
            break;
        case 1:
            if (present && strcmp(v, t->val) == 0)
                return false;
            break;
        case 2:
            if (!present)
                return false;
            break;
        case 3:
            if (present)
                return false;
            break;
        }
    }
    return true;
}

static bool obj_matches(int kind, const char *ns, const struct sel *labels,
                        const struct sel *fields, int okind, const json_t *o)
{
    if (okind != kind)
        return false;
    if (ns) {
        const char *ons = meta_str(o, "namespace");
        if (!ons || strcmp(ons, ns) != 0)
            return false;
    }
    return sel_match(labels, o, true) && sel_match(fields, o, false);
}

/* ------------------------------------------------------------------------------------------ */
/* routing                                                                                    */

struct route {
    int kind;
    char ns[NAME_MAX_LEN + 1]; /* "" = none */
    char name[NAME_MAX_LEN + 1];
    char sub[32];
    bool item;
};

static bool seg_copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n == 0 || n >= cap)
        return false;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return true;
}

static bool parse_route(const char *url, struct route *rt)
{
    for (int k = 0; k < NKINDS; k++) {
        const struct kinddef *kd = &KINDS[k];
        size_t plen = strlen(kd->prefix);
        if (strncmp(url, kd->prefix, plen) != 0 || url[plen] != '/')
            continue;
        const char *segs[8];
        size_t lens[8];
        int n = 0;
        const char *p = url + plen + 1;
        while (*p && n < 8) {
            const char *s = strchr(p, '/');
            size_t len = s ? (size_t)(s - p) : strlen(p);
            segs[n] = p;
            lens[n++] = len;
            p += len + (s ? 1 : 0);
        }
        if (*p)
            continue;
        memset(rt, 0, sizeof(*rt));
        rt->kind = k;
        int idx;
        if (n >= 3 && lens[0] == 10 && memcmp(segs[0], "namespaces", 10) == 0 &&
            lens[2] == strlen(kd->plural) && memcmp(segs[2], kd->plural, lens[2]) == 0) {
            if (!kd->namespaced || !seg_copy(rt->ns, sizeof(rt->ns), segs[1], lens[1]))
                continue;
            idx = 3;
        } else if (n >= 1 && lens[0] == strlen(kd->plural) &&
                   memcmp(segs[0], kd->plural, lens[0]) == 0) {
            idx = 1;
        } else {
            continue;
        }
        if (n == idx)
            return true;
        if (kd->namespaced && !rt->ns[0])
            continue; /* namespaced items live under their namespace */
        if (!seg_copy(rt->name, sizeof(rt->name), segs[idx], lens[idx]))
            continue;
        rt->item = true;
        if (n == idx + 1)
            return true;
        if (n == idx + 2 && seg_copy(rt->sub, sizeof(rt->sub), segs[idx + 1], lens[idx + 1]))
            return true;
    }
    return false;
}

static const char *arg(struct MHD_Connection *c, const char *key)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
}

static bool arg_true(struct MHD_Connection *c, const char *key)
{
    const char *v = arg(c, key);
    return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

static bool rule_match(const struct rule *r, const char *verb, const char *method, const char *path)
{
    return (strcmp(r->method, "*") == 0 || strcasecmp(r->method, verb) == 0 ||
            strcasecmp(r->method, method) == 0) &&
           strncmp(path, r->prefix, strlen(r->prefix)) == 0;
}

/* ------------------------------------------------------------------------------------------ */
/* handlers (called with api->mu held)                                                        */

static void do_get(struct vs_fakeapi *api, const struct route *rt, struct reply *rp)
{
    const struct obj *e = obj_find(api, rt->kind, rt->ns, rt->name);
    if (!e) {
        reply_status(rp, 404, "NotFound", "%s \"%s\" not found", KINDS[rt->kind].qualified,
                     rt->name);
        return;
    }
    reply_json(rp, 200, e->o);
}

/* Continue tokens are "RV:NS:NAME" with NS and NAME in hex: the list's resourceVersion and the
 * last item served, so the next page starts after that key wherever it now sorts, even when the
 * object itself is gone. Returns a new string (free with free()), NULL when out of memory. */
static char *cont_make(uint64_t rv, const char *ns, const char *name)
{
    size_t nl = strlen(ns), ml = strlen(name), n = 0;
    char *t = malloc(24 + 2 * (nl + ml) + 3);
    if (!t)
        return NULL;
    n += (size_t)sprintf(t, "%" PRIu64 ":", rv);
    for (size_t i = 0; i < nl; i++)
        n += (size_t)sprintf(t + n, "%02x", (unsigned char)ns[i]);
    t[n++] = ':';
    for (size_t i = 0; i < ml; i++)
        n += (size_t)sprintf(t + n, "%02x", (unsigned char)name[i]);
    t[n] = '\0';
    return t;
}

/* Decodes n hex digits at s into a new NUL-terminated string; NULL when not hex, when a byte
 * is NUL or when out of memory. */
static char *unhex(const char *s, size_t n)
{
    char *out = n % 2 == 0 ? malloc(n / 2 + 1) : NULL;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 2) {
        int hi = vs_json_hexval(s[i]), lo = vs_json_hexval(s[i + 1]);
        if (hi < 0 || lo < 0 || (hi | lo) == 0) {
            free(out);
            return NULL;
        }
        out[i / 2] = (char)(hi << 4 | lo);
    }
    out[n / 2] = '\0';
    return out;
}

/* Parses a token of cont_make into *rv, *ns and *name (new strings). false when malformed. */
static bool cont_parse(const char *t, uint64_t *rv, char **ns, char **name)
{
    const char *c1 = strchr(t, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char *end;
    *ns = *name = NULL;
    if (!c2 || c1 == t || t[strspn(t, "0123456789")] != ':' || !c2[1])
        return false;
    errno = 0;
    unsigned long long v = strtoull(t, &end, 10);
    if (errno || end != c1)
        return false;
    *rv = v;
    *ns = unhex(c1 + 1, (size_t)(c2 - c1 - 1));
    *name = unhex(c2 + 1, strlen(c2 + 1));
    if (*ns && *name)
        return true;
    free(*ns);
    free(*name);
    *ns = *name = NULL;
    return false;
}

/* A LIST page: the matching objects in namespace/name order, from after the continue token's key,
 * at most `limit` of them when limit > 0, with a continue token when more match after the page.
 * Pages are read from the current state; a continued list reports the token's resourceVersion. */
static void do_list(struct vs_fakeapi *api, struct MHD_Connection *c, const struct route *rt,
                    const struct sel *labels, const struct sel *fields, struct reply *rp)
{
    const char *limit_s = arg(c, "limit"), *cont = arg(c, "continue");
    const char *ns = rt->ns[0] ? rt->ns : NULL;
    const struct kindstore *ks = &api->kinds[rt->kind];
    long limit = limit_s ? strtol(limit_s, NULL, 10) : 0, taken = 0;
    uint64_t list_rv = api->rv;
    char *cns = NULL, *cname = NULL, *next = NULL, buf[32];
    const struct obj *last = NULL;
    bool more = false;
    size_t i = 0;

    if (cont && *cont) {
        uint64_t crv;
        if (!cont_parse(cont, &crv, &cns, &cname)) {
            reply_status(rp, 400, "BadRequest", "invalid continue token");
            return;
        }
        if (crv < api->compact[rt->kind]) {
            reply_status(rp, 410, "Expired",
                         "The provided continue parameter is too old to display a consistent "
                         "list result. You can start a new list without the continue parameter.");
            goto out;
        }
        list_rv = crv;
    }
    if (!sort_kind(api, rt->kind)) {
        reply_status(rp, 500, NULL, "out of memory");
        goto out;
    }
    if (ns)
        i = sorted_seek(ks, ns, "", true);
    if (cname) {
        size_t after = sorted_seek(ks, cns, cname, false);
        if (after > i)
            i = after;
    }
    json_t *items = json_array();
    for (; i < ks->n_sorted; i++) {
        const struct obj *e = ks->sorted[i];
        if (ns && strcmp(e->ns, ns) != 0)
            break; /* past the namespace */
        if (!obj_matches(rt->kind, ns, labels, fields, e->kind, e->o))
            continue;
        if (limit > 0 && taken == limit) {
            more = true;
            break;
        }
        json_t *it = json_copy(e->o); /* shallow: list items carry no kind/apiVersion */
        json_object_del(it, "kind");
        json_object_del(it, "apiVersion");
        json_array_append_new(items, it);
        last = e;
        taken++;
    }
    if (more && !(next = cont_make(list_rv, last->ns, last->name))) {
        json_decref(items);
        reply_status(rp, 500, NULL, "out of memory");
        goto out;
    }
    json_t *meta = json_object();
    snprintf(buf, sizeof(buf), "%" PRIu64, list_rv);
    json_object_set_new(meta, "resourceVersion", json_string(buf));
    if (next)
        json_object_set_new(meta, "continue", json_string(next));
    json_t *list = json_pack("{s:s,s:s,s:o,s:o}", "kind", KINDS[rt->kind].list_kind, "apiVersion",
                             KINDS[rt->kind].api_version, "metadata", meta, "items", items);
    reply_json(rp, 200, list);
    json_decref(list);
out:
    free(next);
    free(cns);
    free(cname);
}

/* The request body: a JSON object, or an array when array is set (a JSON patch). */
static json_t *parse_body_as(const struct req *r, struct reply *rp, bool array)
{
    json_error_t je;
    json_t *b = r->len ? json_loadb(r->body, r->len, 0, &je) : NULL;
    if (array ? !json_is_array(b) : !json_is_object(b)) {
        reply_status(rp, 400, "BadRequest", "the request body must be a JSON %s%s%s",
                     array ? "array" : "object", b ? "" : ": ",
                     b ? "" : (r->len ? je.text : "empty body"));
        json_decref(b);
        return NULL;
    }
    return b;
}

static json_t *parse_body(const struct req *r, struct reply *rp)
{
    return parse_body_as(r, rp, false);
}

static void do_create(struct vs_fakeapi *api, const struct route *rt, const struct req *r,
                      struct reply *rp)
{
    const struct kinddef *kd = &KINDS[rt->kind];
    json_t *b = parse_body(r, rp);
    char name[NAME_MAX_LEN + 1], uid[64], ts[32];
    if (!b)
        return;
    if (kd->namespaced && !rt->ns[0]) {
        reply_status(rp, 405, NULL, "create needs a namespace in the path");
        goto out;
    }
    const char *bn = meta_str(b, "name"), *gen = meta_str(b, "generateName");
    const char *bns = meta_str(b, "namespace");
    if (bns && *bns && strcmp(bns, rt->ns) != 0) {
        reply_status(rp, 400, "BadRequest",
                     "the namespace of the provided object does not match the namespace sent on "
                     "the request");
        goto out;
    }
    if (bn && *bn)
        snprintf(name, sizeof(name), "%s", bn);
    else if (gen && *gen)
        snprintf(name, sizeof(name), "%s%05" PRIu64, gen, api->rv + 1);
    else {
        reply_status(rp, 422, "Invalid", "%s \"\" is invalid: metadata.name: Required value",
                     kd->kind);
        goto out;
    }
    if (obj_find(api, rt->kind, rt->ns, name)) {
        reply_status(rp, 409, "AlreadyExists", "%s \"%s\" already exists", kd->qualified, name);
        goto out;
    }
    json_t *o = json_deep_copy(b);
    json_t *m = meta_of(o);
    new_uid(api, uid, sizeof(uid));
    now_rfc3339(ts, sizeof(ts));
    json_object_set_new(o, "kind", json_string(kd->kind));
    json_object_set_new(o, "apiVersion", json_string(kd->api_version));
    json_object_set_new(m, "name", json_string(name));
    if (kd->namespaced)
        json_object_set_new(m, "namespace", json_string(rt->ns));
    json_object_set_new(m, "uid", json_string(uid));
    json_object_set_new(m, "creationTimestamp", json_string(ts));
    json_t *stored = store(api, rt->kind, rt->ns, name, o, "ADDED");
    if (stored)
        reply_json(rp, 201, stored);
    else
        reply_status(rp, 500, NULL, "out of memory");
out:
    json_decref(b);
}

/* PUT of the object, or (status) of its status subresource: only .status is taken from the
 * body, as kube-apiserver's status strategies do. */
static void do_put(struct vs_fakeapi *api, const struct route *rt, const struct req *r,
                   struct reply *rp, bool status)
{
    const struct kinddef *kd = &KINDS[rt->kind];
    json_t *b = parse_body(r, rp);
    if (!b)
        return;
    const char *bn = meta_str(b, "name"), *brv = meta_str(b, "resourceVersion");
    const struct obj *e;
    if (!bn || strcmp(bn, rt->name) != 0) {
        reply_status(rp, 400, "BadRequest",
                     "the name of the object (%s) does not match the name "
                     "on the URL (%s)",
                     bn ? bn : "", rt->name);
        goto out;
    }
    if (!(e = obj_find(api, rt->kind, rt->ns, rt->name))) {
        reply_status(rp, 404, "NotFound", "%s \"%s\" not found", kd->qualified, rt->name);
        goto out;
    }
    const char *cur_rv = meta_str(e->o, "resourceVersion");
    if (brv && *brv && strcmp(brv, cur_rv) != 0) {
        reply_status(rp, 409, "Conflict",
                     "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                     "please apply your changes to the latest version and try again",
                     kd->qualified, rt->name);
        goto out;
    }
    json_t *o;
    if (status) {
        o = json_deep_copy(e->o);
        json_t *st = json_object_get(b, "status");
        if (o && st)
            json_object_set_new(o, "status", json_deep_copy(st));
        else if (o)
            json_object_del(o, "status");
    } else {
        o = json_deep_copy(b);
    }
    keep_identity(o, e->o, rt->kind);
    json_t *stored = store(api, rt->kind, rt->ns, rt->name, o, "MODIFIED");
    if (stored)
        reply_json(rp, 200, stored);
    else
        reply_status(rp, 500, NULL, "out of memory");
out:
    json_decref(b);
}

/* RFC 7386 merge of patch into target (owned); returns the result (owned). */
static json_t *merge_apply(json_t *target, const json_t *patch)
{
    if (!json_is_object(patch)) {
        json_decref(target);
        return json_deep_copy(patch);
    }
    if (!json_is_object(target)) {
        json_decref(target);
        target = json_object();
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)patch, key, val)
    {
        if (json_is_null(val)) {
            json_object_del(target, key);
        } else {
            json_t *cur = json_incref(json_object_get(target, key));
            json_object_set_new(target, key, merge_apply(cur, val));
        }
    }
    return target;
}

/* RFC 6901: the container holding the pointer's last token (an object member; arrays are not
 * addressed here) and that token, unescaped into key. NULL when a step is missing or not an
 * object. */
static json_t *pointer_parent(json_t *doc, const char *ptr, char *key, size_t cap)
{
    if (*ptr != '/')
        return NULL;
    json_t *cur = doc;
    for (const char *p = ptr + 1;;) {
        size_t n = 0;
        for (; *p && *p != '/'; p++) {
            char ch = *p;
            if (ch == '~') {
                if (p[1] != '0' && p[1] != '1')
                    return NULL;
                ch = p[1] == '0' ? '~' : '/';
                p++;
            }
            if (n + 1 >= cap)
                return NULL;
            key[n++] = ch;
        }
        key[n] = '\0';
        if (!*p)
            return json_is_object(cur) ? cur : NULL;
        cur = json_object_get(cur, key);
        if (!json_is_object(cur))
            return NULL;
        p++;
    }
}

/* RFC 6902 test, add, replace and remove on object members, in order, all or none (as
 * kube-apiserver's json-patch: a null test value matches a missing member). Returns an error
 * message, NULL on success. */
static const char *json_patch_apply(json_t *doc, const json_t *ops)
{
    if (!json_is_array(ops))
        return "a JSON patch must be an array of operations";
    size_t i;
    const json_t *op;
    json_array_foreach(ops, i, op)
    {
        const char *name = json_string_value(json_object_get(op, "op"));
        const char *ptr = json_string_value(json_object_get(op, "path"));
        const json_t *val = json_object_get(op, "value");
        char key[512];
        json_t *parent = ptr ? pointer_parent(doc, ptr, key, sizeof(key)) : NULL;
        if (!name)
            return "an operation has no op";
        if (!parent)
            return "an operation's path is missing";
        json_t *cur = json_object_get(parent, key);
        if (strcmp(name, "test") == 0) {
            if ((!val || json_is_null(val)) ? cur != NULL : (!cur || !json_equal(cur, val)))
                return "testing value failed";
        } else if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0) {
            if (!val)
                return "an operation has no value";
            if (name[0] == 'r' && !cur)
                return "replace operation does not apply: doc is missing key";
            json_object_set_new(parent, key, json_deep_copy(val));
        } else if (strcmp(name, "remove") == 0) {
            if (!cur)
                return "remove operation does not apply: doc is missing key";
            json_object_del(parent, key);
        } else {
            return "unsupported operation";
        }
    }
    return NULL;
}

static void do_patch(struct vs_fakeapi *api, struct MHD_Connection *c, const struct route *rt,
                     const struct req *r, struct reply *rp)
{
    const struct kinddef *kd = &KINDS[rt->kind];
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    bool jsonp = ct && strncmp(ct, "application/json-patch+json", 27) == 0;
    if (!ct || (!jsonp && strncmp(ct, "application/merge-patch+json", 28) != 0 &&
                strncmp(ct, "application/strategic-merge-patch+json", 38) != 0)) {
        reply_status(rp, 415, NULL,
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json-patch+json, application/merge-patch+json, "
                     "application/strategic-merge-patch+json");
        return;
    }
    json_t *patch = parse_body_as(r, rp, jsonp);
    if (!patch)
        return;
    const struct obj *e = obj_find(api, rt->kind, rt->ns, rt->name);
    if (!e) {
        reply_status(rp, 404, "NotFound", "%s \"%s\" not found", kd->qualified, rt->name);
        goto out;
    }
    const json_t *cur = e->o;
    json_t *o;
    if (jsonp) {
        o = json_deep_copy(cur);
        const char *why = o ? json_patch_apply(o, patch) : "out of memory";
        if (why) {
            json_decref(o);
            reply_status(rp, 422, "Invalid",
                         "the server rejected our request due to an error in our request (%s)",
                         why);
            goto out;
        }
    } else {
        const char *prv = meta_str(patch, "resourceVersion"), *puid = meta_str(patch, "uid");
        const char *cuid = meta_str(cur, "uid");
        if (prv && strcmp(prv, meta_str(cur, "resourceVersion")) != 0) {
            reply_status(rp, 409, "Conflict",
                         "Operation cannot be fulfilled on %s \"%s\": the object has been "
                         "modified; please apply your changes to the latest version and try again",
                         kd->qualified, rt->name);
            goto out;
        }
        if (puid && (!cuid || strcmp(puid, cuid) != 0)) {
            reply_status(rp, 409, "Conflict",
                         "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID in "
                         "precondition: %s, UID in object meta: %s",
                         kd->qualified, rt->name, puid, cuid ? cuid : "");
            goto out;
        }
        json_t *pm = json_object_get(patch, "metadata");
        if (json_is_object(pm))
            json_object_del(pm, "resourceVersion"); /* a precondition, not data */
        o = merge_apply(json_deep_copy(cur), patch);
    }
    keep_identity(o, cur, rt->kind);
    json_t *stored = store(api, rt->kind, rt->ns, rt->name, o, "MODIFIED");
    if (stored)
        reply_json(rp, 200, stored);
    else
        reply_status(rp, 500, NULL, "out of memory");
out:
    json_decref(patch);
}

static void do_delete(struct vs_fakeapi *api, const struct route *rt, struct reply *rp)
{
    struct obj *e = obj_find(api, rt->kind, rt->ns, rt->name);
    if (!e) {
        reply_status(rp, 404, "NotFound", "%s \"%s\" not found", KINDS[rt->kind].qualified,
                     rt->name);
        return;
    }
    json_t *last = remove_obj(api, e);
    reply_json(rp, 200, last);
    json_decref(last);
}

/* GET /version: the fields kube-apiserver's version.Info has that clients read. */
static void do_version(const struct vs_fakeapi *api, struct reply *rp)
{
    const char *git = api->version[0] ? api->version : "v1.36.3";
    unsigned major = 0, minor = 0;
    sscanf(git, "v%u.%u", &major, &minor);
    char smaj[16], smin[16];
    snprintf(smaj, sizeof(smaj), "%u", major);
    snprintf(smin, sizeof(smin), "%u", minor);
    json_t *v = json_pack("{s:s,s:s,s:s,s:s}", "major", smaj, "minor", smin, "gitVersion", git,
                          "platform", "linux/amd64");
    reply_json(rp, 200, v);
    json_decref(v);
}

/* POST pods/<name>/eviction (policy/v1 Eviction): the pod starts terminating (deletionTimestamp
 * set, MODIFIED); the test deletes it when its "grace period" is over. PodDisruptionBudgets are
 * not evaluated here: a test injects 429 with vs_fakeapi_fault. */
static void do_evict(struct vs_fakeapi *api, const struct route *rt, const struct req *r,
                     struct reply *rp)
{
    json_t *b = parse_body(r, rp);
    if (!b)
        return;
    const char *bn = meta_str(b, "name");
    const char *kind = json_string_value(json_object_get(b, "kind"));
    const struct obj *e = obj_find(api, KIND_POD, rt->ns, rt->name);
    if (!kind || strcmp(kind, "Eviction") != 0) {
        reply_status(rp, 400, "BadRequest", "body must be a policy/v1 Eviction");
    } else if (!e) {
        reply_status(rp, 404, "NotFound", "pods \"%s\" not found", rt->name);
    } else if (!bn || strcmp(bn, rt->name) != 0) {
        reply_status(rp, 400, "BadRequest", "name in URL does not match name in Eviction object");
    } else {
        json_t *o = json_deep_copy(e->o);
        json_t *m = meta_of(o);
        if (!json_object_get(m, "deletionTimestamp"))
            json_object_set_new(m, "deletionTimestamp", json_string("2026-01-01T00:00:00Z"));
        if (!store(api, KIND_POD, rt->ns, rt->name, o, "MODIFIED")) {
            reply_status(rp, 500, NULL, "out of memory");
        } else {
            json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                                   "metadata", "status", "Success", "code", 201);
            reply_json(rp, 201, st);
            json_decref(st);
        }
    }
    json_decref(b);
}

/* Merges the Binding b's metadata.<key> (annotations or labels) into pod o's. */
static void merge_meta_map(json_t *o, const json_t *b, const char *key)
{
    json_t *src = json_object_get(json_object_get(b, "metadata"), key);
    if (!json_is_object(src))
        return;
    json_t *m = meta_of(o);
    json_t *dst = json_object_get(m, key);
    if (!json_is_object(dst)) {
        dst = json_object();
        json_object_set_new(m, key, dst);
    }
    json_object_update(dst, src);
}

static void do_bind(struct vs_fakeapi *api, const struct route *rt, const struct req *r,
                    struct reply *rp)
{
    json_t *b = parse_body(r, rp);
    if (!b)
        return;
    const char *bn = meta_str(b, "name"), *buid = meta_str(b, "uid");
    json_t *target = json_object_get(b, "target");
    const char *tname = json_string_value(json_object_get(target, "name"));
    const char *tkind = json_string_value(json_object_get(target, "kind"));
    const struct obj *e = obj_find(api, KIND_POD, rt->ns, rt->name);
    if (!e) {
        reply_status(rp, 404, "NotFound", "pods \"%s\" not found", rt->name);
        goto out;
    }
    if (!bn || strcmp(bn, rt->name) != 0) {
        reply_status(rp, 400, "BadRequest", "name in URL does not match name in Binding object");
        goto out;
    }
    if (!tname || !*tname || (tkind && *tkind && strcmp(tkind, "Node") != 0)) {
        reply_status(rp, 422, "Invalid", "Binding \"%s\" is invalid: target: %s", rt->name,
                     !tname || !*tname ? "target.name: Required value"
                                       : "target.kind: must be empty or Node");
        goto out;
    }
    const json_t *pod = e->o;
    const char *uid = meta_str(pod, "uid");
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    if (buid && *buid && (!uid || strcmp(buid, uid) != 0)) {
        reply_status(rp, 409, "Conflict",
                     "Operation cannot be fulfilled on pods/binding \"%s\": Precondition failed: "
                     "UID in precondition: %s, UID in object meta: %s",
                     rt->name, buid, uid ? uid : "");
        goto out;
    }
    if (node && *node) {
        reply_status(rp, 409, "Conflict",
                     "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is already "
                     "assigned to node \"%s\"",
                     rt->name, rt->name, node);
        goto out;
    }
    if (meta_str(pod, "deletionTimestamp")) {
        reply_status(rp, 409, "Conflict",
                     "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is being "
                     "deleted, cannot be assigned to a host",
                     rt->name, rt->name);
        goto out;
    }
    json_t *o = json_deep_copy(pod);
    json_t *spec = json_object_get(o, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(o, "spec", spec);
    }
    json_object_set_new(spec, "nodeName", json_string(tname));
    merge_meta_map(o, b, "annotations");
    /* kube-apiserver 1.35+ (PodTopologyLabelsAdmission) copies the Binding's labels too. */
    if (!api->binding_no_labels)
        merge_meta_map(o, b, "labels");
    if (!store(api, KIND_POD, rt->ns, rt->name, o, "MODIFIED")) {
        reply_status(rp, 500, NULL, "out of memory");
        goto out;
    }
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", "Success", "code", 201);
    reply_json(rp, 201, st);
    json_decref(st);
out:
    json_decref(b);
}

/* ------------------------------------------------------------------------------------------ */
/* authorization                                                                              */

#define SSAR_PATH "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
#define SSR_PATH  "/apis/authentication.k8s.io/v1/selfsubjectreviews"

/* The RBAC verb of a routed request, as kube-apiserver's request-info resolver names it. */
static const char *authz_verb(const char *method, const struct route *rt, struct MHD_Connection *c)
{
    if (strcmp(method, "GET") == 0)
        return rt->item ? "get" : arg_true(c, "watch") ? "watch" : "list";
    if (strcmp(method, "POST") == 0)
        return "create";
    if (strcmp(method, "PUT") == 0)
        return "update";
    if (strcmp(method, "PATCH") == 0)
        return "patch";
    if (strcmp(method, "DELETE") == 0)
        return rt->item ? "delete" : "deletecollection";
    return "unknown";
}

static bool authz_match(const struct authz *a, const char *group, const char *resource,
                        const char *verb, const char *ns)
{
    char v[40];
    snprintf(v, sizeof(v), ",%s,", verb);
    return (strcmp(a->group, "*") == 0 || strcmp(a->group, group) == 0) &&
           (strcmp(a->resource, "*") == 0 || strcmp(a->resource, resource) == 0) &&
           (strstr(a->verbs, ",*,") || strstr(a->verbs, v)) &&
           (!a->ns || (ns && strcmp(a->ns, ns) == 0));
}

/* Whether the table grants verb on group/resource in ns ("" or NULL: the cluster scope). */
static bool authz_allows(const struct vs_fakeapi *api, const char *group, const char *resource,
                         const char *verb, const char *ns)
{
    if (!api->authz_on)
        return true;
    for (size_t i = 0; i < api->n_authz; i++)
        if (authz_match(&api->authz[i], group, resource, verb, ns && *ns ? ns : NULL))
            return true;
    return false;
}

static const char *user_of(const struct vs_fakeapi *api)
{
    return api->user ? api->user : "admin";
}

/* kube-apiserver's 403: "<resource>[ \"<name>\"] is forbidden: User \"u\" cannot <verb>
 * resource \"<resource>[/<sub>]\" in API group \"<group>\" (in the namespace \"ns\" | at the
 * cluster scope)", reason Forbidden, details {name, group, kind}. */
static void reply_forbidden(const struct vs_fakeapi *api, struct reply *rp, const struct route *rt,
                            const char *verb, const char *resource)
{
    const struct kinddef *kd = &KINDS[rt->kind];
    char who[600], scope[320], msg[1400];
    if (rt->name[0])
        snprintf(who, sizeof(who), "%s \"%s\"", kd->qualified, rt->name);
    else
        snprintf(who, sizeof(who), "%s", kd->qualified);
    if (rt->ns[0])
        snprintf(scope, sizeof(scope), "in the namespace \"%s\"", rt->ns);
    else
        snprintf(scope, sizeof(scope), "at the cluster scope");
    snprintf(msg, sizeof(msg),
             "%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" %s", who,
             user_of(api), verb, resource, kd->group, scope);
    json_t *details = json_object();
    if (details && rt->name[0])
        json_object_set_new(details, "name", json_string(rt->name));
    if (details && kd->group[0])
        json_object_set_new(details, "group", json_string(kd->group));
    if (details)
        json_object_set_new(details, "kind", json_string(kd->plural));
    /* Field order as kube-apiserver writes a Status. */
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:o*,s:i}", "kind", "Status", "apiVersion",
                           "v1", "metadata", "status", "Failure", "message", msg, "reason",
                           "Forbidden", "details", details, "code", 403);
    reply_json(rp, 403, st);
    json_decref(st);
}

static const char *attr_str(const json_t *attrs, const char *key)
{
    const char *v = json_string_value(json_object_get(attrs, key));
    return v ? v : "";
}

/* POST selfsubjectaccessreviews: answered from the authorization table (every authenticated user
 * may ask, as with kube-apiserver's system:basic-user); a non-resource request is allowed. */
static void do_ssar(struct vs_fakeapi *api, const struct req *r, struct reply *rp)
{
    json_t *b = parse_body(r, rp);
    if (!b)
        return;
    json_t *spec = json_object_get(b, "spec");
    json_t *ra = json_object_get(spec, "resourceAttributes");
    const char *kind = json_string_value(json_object_get(b, "kind"));
    if (!kind || strcmp(kind, "SelfSubjectAccessReview") != 0 || !json_is_object(spec)) {
        reply_status(rp, 400, "BadRequest",
                     "body must be an authorization.k8s.io/v1 "
                     "SelfSubjectAccessReview");
        json_decref(b);
        return;
    }
    bool allowed = true;
    if (json_is_object(ra)) {
        char resource[160];
        const char *sub = attr_str(ra, "subresource");
        snprintf(resource, sizeof(resource), "%s%s%s", attr_str(ra, "resource"), *sub ? "/" : "",
                 sub);
        allowed = authz_allows(api, attr_str(ra, "group"), resource, attr_str(ra, "verb"),
                               attr_str(ra, "namespace"));
    } else if (!json_is_object(json_object_get(spec, "nonResourceAttributes"))) {
        reply_status(rp, 422, "Invalid",
                     "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec: Invalid "
                     "value: exactly one of nonResourceAttributes or resourceAttributes must be "
                     "specified");
        json_decref(b);
        return;
    }
    json_object_set_new(b, "apiVersion", json_string("authorization.k8s.io/v1"));
    json_object_set_new(b, "status", json_pack("{s:b}", "allowed", allowed));
    reply_json(rp, 201, b);
    json_decref(b);
}

/* POST selfsubjectreviews: who the caller is (the user set with vs_fakeapi_set_user). */
static void do_ssr(const struct vs_fakeapi *api, struct reply *rp)
{
    json_t *o =
        json_pack("{s:s,s:s,s:{s:n},s:{s:{s:s,s:[s]}}}", "kind", "SelfSubjectReview", "apiVersion",
                  "authentication.k8s.io/v1", "metadata", "creationTimestamp", "status", "userInfo",
                  "username", user_of(api), "groups", "system:authenticated");
    reply_json(rp, 201, o);
    json_decref(o);
}

/* ------------------------------------------------------------------------------------------ */
/* watch                                                                                      */

static bool pend_append(struct watcher *w, const char *s, size_t n)
{
    if (w->plen + n > w->pcap) {
        size_t cap = w->pcap ? w->pcap : 4096;
        while (cap < w->plen + n)
            cap *= 2;
        char *g = realloc(w->pending, cap);
        if (!g)
            return false;
        w->pending = g;
        w->pcap = cap;
    }
    memcpy(w->pending + w->plen, s, n);
    w->plen += n;
    return true;
}

static void pend_event(struct watcher *w, const char *type, json_t *o)
{
    json_t *ev = json_pack("{s:s,s:O}", "type", type, "object", o);
    char *text = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    if (text) {
        pend_append(w, text, strlen(text));
        pend_append(w, "\n", 1);
    }
    free(text);
    json_decref(ev);
}

static void pend_expired(struct watcher *w, uint64_t since, uint64_t now_rv)
{
    char msg[128];
    snprintf(msg, sizeof(msg), "too old resource version: %" PRIu64 " (%" PRIu64 ")", since,
             now_rv);
    json_t *st = status_obj(410, "Expired", msg);
    pend_event(w, "ERROR", st);
    json_decref(st);
    w->ending = true;
}

static bool conn_gone(struct watcher *w)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(w->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Queues the next matching history event, if any; advances the cursor past the rest. */
static bool next_event(struct vs_fakeapi *api, struct watcher *w)
{
    for (size_t i = hist_after(api, w->cursor); i < api->hist_n; i++) {
        const struct hist *h = hist_at(api, i);
        w->cursor = h->rv;
        if (obj_matches(w->kind, w->ns, &w->labels, &w->fields, h->kind, h->o)) {
            pend_event(w, h->type, h->o);
            return true;
        }
    }
    w->cursor = api->rv;
    return false;
}

static ssize_t watch_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct watcher *w = cls;
    struct vs_fakeapi *api = w->api;
    ssize_t ret;

    pthread_mutex_lock(&api->mu);
    for (;;) {
        if (api->stopping || w->gen != api->drop_gen) {
            ret = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        if (w->poff < w->plen) {
            size_t n = w->plen - w->poff;
            if (n > max)
                n = max;
            memcpy(buf, w->pending + w->poff, n);
            w->poff += n;
            if (w->poff == w->plen)
                w->poff = w->plen = 0;
            ret = (ssize_t)n;
            break;
        }
        if (w->ending) {
            ret = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        double now = now_s();
        if (api->compact_event[w->kind] && w->cursor < api->compact[w->kind]) {
            pend_expired(w, w->cursor, api->rv);
            continue;
        }
        if (w->cursor < api->hist_floor[w->kind]) {
            pend_expired(w, w->cursor, api->rv);
            continue;
        }
        if (next_event(api, w)) {
            w->last_send = now;
            continue;
        }
        if (w->bookmarks && now - w->last_send >= api->bookmark_ms / 1000.0) {
            char rv[32];
            snprintf(rv, sizeof(rv), "%" PRIu64, w->cursor);
            json_t *bm = json_pack("{s:s,s:s,s:{s:s}}", "kind", KINDS[w->kind].kind, "apiVersion",
                                   KINDS[w->kind].api_version, "metadata", "resourceVersion", rv);
            pend_event(w, "BOOKMARK", bm);
            json_decref(bm);
            w->last_send = now;
            continue;
        }
        if (now >= w->deadline) {
            w->ending = true;
            continue;
        }
        if (conn_gone(w)) {
            ret = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        double wake = now + WAIT_STEP_MS / 1000.0;
        if (w->deadline < wake)
            wake = w->deadline;
        if (w->bookmarks && w->last_send + api->bookmark_ms / 1000.0 < wake)
            wake = w->last_send + api->bookmark_ms / 1000.0;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double d = wake - now;
        if (d < 0.001)
            d = 0.001;
        ts.tv_sec += (time_t)d;
        ts.tv_nsec += (long)((d - (double)(time_t)d) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&api->wcv[w->kind], &api->mu, &ts);
    }
    pthread_mutex_unlock(&api->mu);
    return ret;
}

static void watcher_free(void *cls)
{
    struct watcher *w = cls;
    struct vs_fakeapi *api = w->api;
    pthread_mutex_lock(&api->mu);
    for (struct watcher **p = &api->watchers; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    pthread_cond_broadcast(&api->cv); /* vs_fakeapi_wait_watchers counts watches */
    pthread_mutex_unlock(&api->mu);
    sel_free(&w->labels);
    sel_free(&w->fields);
    free(w->ns);
    free(w->pending);
    free(w);
}

/* Sets up a watch. Returns the watcher (registered, response to be created by the caller) or
 * NULL with an error reply in rp. Takes ownership of the selectors. */
static struct watcher *do_watch(struct vs_fakeapi *api, struct MHD_Connection *c,
                                const struct route *rt, struct sel *labels, struct sel *fields,
                                struct reply *rp)
{
    const char *rvs = arg(c, "resourceVersion"), *to = arg(c, "timeoutSeconds");
    struct watcher *w = calloc(1, sizeof(*w));
    if (!w) {
        reply_status(rp, 500, NULL, "out of memory");
        return NULL;
    }
    w->api = api;
    w->conn = c;
    w->kind = rt->kind;
    w->ns = rt->ns[0] ? strdup(rt->ns) : NULL;
    w->labels = *labels;
    w->fields = *fields;
    memset(labels, 0, sizeof(*labels));
    memset(fields, 0, sizeof(*fields));
    w->bookmarks = arg_true(c, "allowWatchBookmarks");
    w->gen = api->drop_gen;
    w->last_send = now_s();
    long t = to ? strtol(to, NULL, 10) : 0;
    w->deadline = w->last_send + (t > 0 ? (double)t : DEFAULT_WATCH_S);

    if (!rvs || !*rvs || strcmp(rvs, "0") == 0) {
        const struct kindstore *ks = &api->kinds[w->kind];
        if (!sort_kind(api, w->kind)) {
            reply_status(rp, 500, NULL, "out of memory");
            goto fail;
        }
        for (size_t i = w->ns ? sorted_seek(ks, w->ns, "", true) : 0; i < ks->n_sorted; i++) {
            const struct obj *e = ks->sorted[i];
            if (w->ns && strcmp(e->ns, w->ns) != 0)
                break; /* past the namespace */
            if (obj_matches(w->kind, w->ns, &w->labels, &w->fields, e->kind, e->o))
                pend_event(w, "ADDED", e->o);
        }
        w->cursor = api->rv;
    } else {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(rvs, &end, 10);
        if (errno || *end || rvs[0] == '-') {
            reply_status(rp, 400, "BadRequest", "invalid resourceVersion \"%s\"", rvs);
            goto fail;
        }
        w->cursor = v;
        if (v < api->compact[w->kind] && !api->compact_event[w->kind]) {
            reply_status(rp, 410, "Expired", "too old resource version: %llu (%" PRIu64 ")", v,
                         api->rv);
            goto fail;
        }
        if (v < api->compact[w->kind] || v < api->hist_floor[w->kind])
            pend_expired(w, v, api->rv);
    }
    w->next = api->watchers;
    api->watchers = w;
    pthread_cond_broadcast(&api->cv); /* vs_fakeapi_wait_watchers counts watches */
    return w;
fail:
    sel_free(&w->labels);
    sel_free(&w->fields);
    free(w->ns);
    free(w->pending);
    free(w);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* request dispatch                                                                           */

static enum MHD_Result send_reply(struct MHD_Connection *c, struct reply *rp)
{
    size_t len = rp->body ? strlen(rp->body) : 0;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, rp->body ? rp->body : (void *)"",
                                        rp->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(rp->body);
        return MHD_NO;
    }
    if (len)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (rp->retry_after >= 0) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", rp->retry_after);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    enum MHD_Result r = MHD_queue_response(c, (unsigned)rp->code, resp);
    MHD_destroy_response(resp);
    return r;
}

static const char *verb_of(const char *method, const struct route *rt, bool routed,
                           struct MHD_Connection *c)
{
    if (routed && !rt->item && strcmp(method, "GET") == 0)
        return arg_true(c, "watch") ? "WATCH" : "LIST";
    return method;
}

static enum MHD_Result dispatch(struct vs_fakeapi *api, struct MHD_Connection *c, const char *url,
                                const char *method, struct req *r)
{
    struct route rt;
    struct reply rp = {.code = 500, .retry_after = -1};
    struct sel labels = {0}, fields = {0};
    struct watcher *w = NULL;
    bool routed = parse_route(url, &rt);
    const char *verb = verb_of(method, &rt, routed, c);
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    int delay_ms = 0;

    pthread_mutex_lock(&api->mu);
    if (api->no_request_log) {
        /* a long-running embedded server keeps no per-request record */
    } else if (api->n_log == api->cap_log) {
        size_t cap = api->cap_log ? api->cap_log * 2 : 256;
        struct reqlog *g = realloc(api->log, cap * sizeof(*g));
        if (g) {
            api->log = g;
            api->cap_log = cap;
        }
    }
    if (!api->no_request_log && api->n_log < api->cap_log) {
        struct reqlog *l = &api->log[api->n_log];
        snprintf(l->verb, sizeof(l->verb), "%s", verb);
        snprintf(l->method, sizeof(l->method), "%s", method);
        if ((l->path = strdup(url)))
            api->n_log++;
    }
    for (size_t i = 0; i < api->n_delays; i++)
        if (rule_match(&api->delays[i], verb, method, url))
            delay_ms = api->delays[i].ms;
    pthread_mutex_unlock(&api->mu);

    if (delay_ms > 0) {
        struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }

    pthread_mutex_lock(&api->mu);
    for (size_t i = 0; i < api->n_faults; i++) {
        struct rule *f = &api->faults[i];
        if (f->count > 0 && rule_match(f, verb, method, url)) {
            f->count--;
            rp.retry_after = f->retry_after;
            if (!f->body)
                reply_status(&rp, f->status, NULL, "injected fault");
            else {
                rp.code = f->status;
                rp.body = *f->body ? strdup(f->body) : NULL;
            }
            goto unlock;
        }
    }
    if (api->token) {
        size_t tl = strlen(api->token);
        if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) != tl ||
            memcmp(auth + 7, api->token, tl) != 0) {
            reply_status(&rp, 401, "Unauthorized", "Unauthorized");
            goto unlock;
        }
    }
    if (r->too_big) {
        reply_status(&rp, 413, NULL, "the request body is larger than %u bytes", BODY_MAX);
        goto unlock;
    }
    if (!routed && strcmp(url, "/version") == 0 && strcmp(method, "GET") == 0) {
        do_version(api, &rp);
        goto unlock;
    }
    if (!routed && strcmp(url, SSAR_PATH) == 0 && strcmp(method, "POST") == 0) {
        do_ssar(api, r, &rp);
        goto unlock;
    }
    if (!routed && strcmp(url, SSR_PATH) == 0 && strcmp(method, "POST") == 0) {
        do_ssr(api, &rp);
        goto unlock;
    }
    if (routed && api->authz_on) {
        /* As kube-apiserver: authorization first, so a forbidden request to a resource the
         * server does not serve is a 403, an allowed one a 404. */
        char resource[64];
        const char *av = authz_verb(method, &rt, c);
        snprintf(resource, sizeof(resource), "%s%s%s", KINDS[rt.kind].plural, rt.sub[0] ? "/" : "",
                 rt.sub);
        if (!authz_allows(api, KINDS[rt.kind].group, resource, av, rt.ns)) {
            reply_forbidden(api, &rp, &rt, av, resource);
            goto unlock;
        }
    }
    if (!routed || api->unserved[rt.kind]) {
        reply_status(&rp, 404, "NotFound", "the server could not find the requested resource");
        goto unlock;
    }
    if (!rt.item) {
        if (strcmp(method, "GET") == 0) {
            if (sel_parse(arg(c, "labelSelector"), true, &labels) != 0 ||
                sel_parse(arg(c, "fieldSelector"), false, &fields) != 0) {
                reply_status(&rp, 400, "BadRequest", "unable to parse the selector");
                goto unlock;
            }
            if (strcmp(verb, "WATCH") == 0)
                w = do_watch(api, c, &rt, &labels, &fields, &rp);
            else
                do_list(api, c, &rt, &labels, &fields, &rp);
        } else if (strcmp(method, "POST") == 0) {
            do_create(api, &rt, r, &rp);
        } else {
            reply_status(&rp, 405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource");
        }
    } else if (rt.sub[0] && strcmp(rt.sub, "binding") == 0) {
        if (rt.kind == KIND_POD && strcmp(method, "POST") == 0)
            do_bind(api, &rt, r, &rp);
        else
            reply_status(&rp, 405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource");
    } else if (rt.sub[0] && strcmp(rt.sub, "eviction") == 0) {
        if (rt.kind == KIND_POD && strcmp(method, "POST") == 0)
            do_evict(api, &rt, r, &rp);
        else
            reply_status(&rp, 405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource");
    } else if (rt.sub[0] && strcmp(rt.sub, "status") != 0) {
        reply_status(&rp, 404, "NotFound", "the server could not find the requested resource");
    } else if (strcmp(method, "GET") == 0) {
        do_get(api, &rt, &rp);
    } else if (strcmp(method, "PATCH") == 0) {
        do_patch(api, c, &rt, r, &rp);
    } else if (strcmp(method, "PUT") == 0) {
        do_put(api, &rt, r, &rp, rt.sub[0] != 0);
    } else if (strcmp(method, "DELETE") == 0 && !rt.sub[0]) {
        do_delete(api, &rt, &rp);
    } else {
        reply_status(&rp, 405, "MethodNotAllowed",
                     "the server does not allow this method on the requested resource");
    }
unlock:
    pthread_mutex_unlock(&api->mu);
    sel_free(&labels);
    sel_free(&fields);

    if (w) {
        struct MHD_Response *resp = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, 32 * 1024, watch_reader, w, watcher_free);
        if (!resp) {
            watcher_free(w);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        enum MHD_Result res = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return res;
    }
    return send_reply(c, &rp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct req *r = *con_cls;
    if (!r) {
        if (!(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->too_big || r->len + n > BODY_MAX) {
            r->too_big = true;
            return MHD_YES;
        }
        if (r->len + n > r->cap) {
            size_t cap = r->cap ? r->cap : 4096;
            while (cap < r->len + n)
                cap *= 2;
            char *g = realloc(r->body, cap);
            if (!g)
                return MHD_NO;
            r->body = g;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload, n);
        r->len += n;
        return MHD_YES;
    }
    return dispatch(cls, c, url, method, r);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)c;
    (void)socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        __atomic_add_fetch(&((struct vs_fakeapi *)cls)->connections, 1, __ATOMIC_RELAXED);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct req *r = *con_cls;
    if (r) {
        free(r->body);
        free(r);
        *con_cls = NULL;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* public API                                                                                 */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (cap - len < 4096) {
            char *g = realloc(buf, cap + 65536);
            if (!g) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = g;
            cap += 65536;
        }
        got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
    } while (got > 0);
    fclose(f);
    buf[len] = '\0';
    return buf;
}

struct vs_fakeapi *vs_fakeapi_start(const struct vs_fakeapi_opts *o)
{
    struct vs_fakeapi_opts def = {0};
    struct vs_fakeapi *api = calloc(1, sizeof(*api));
    pthread_condattr_t ca;

    if (!o)
        o = &def;
    if (!api)
        return NULL;
    api->quiet = o->quiet;
    api->no_request_log = o->no_request_log;
    api->bookmark_ms = o->bookmark_ms > 0 ? o->bookmark_ms : DEFAULT_BOOKMARK;
    api->hist_cap = o->history ? o->history : DEFAULT_HISTORY;
    api->hist = calloc(api->hist_cap, sizeof(*api->hist));
    api->token = o->token ? strdup(o->token) : NULL;
    pthread_mutex_init(&api->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&api->cv, &ca);
    for (int k = 0; k < NKINDS; k++)
        pthread_cond_init(&api->wcv[k], &ca);
    pthread_condattr_destroy(&ca);
    if (!api->hist || (o->token && !api->token))
        goto fail;

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_AUTO | (o->quiet ? 0 : MHD_USE_ERROR_LOG);
    bool tls = o->tls_cert_file && o->tls_key_file;
    if (tls) {
        if (!(api->cert_pem = slurp(o->tls_cert_file)) ||
            !(api->key_pem = slurp(o->tls_key_file))) {
            warn(api, "cannot read %s or %s", o->tls_cert_file, o->tls_key_file);
            goto fail;
        }
        flags |= MHD_USE_TLS;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (tls)
        api->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, api, MHD_OPTION_SOCK_ADDR,
                                  (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                                  NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, api,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_IDLE_S,
                                  MHD_OPTION_HTTPS_MEM_CERT, api->cert_pem,
                                  MHD_OPTION_HTTPS_MEM_KEY, api->key_pem, MHD_OPTION_END);
    else
        api->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, api, MHD_OPTION_SOCK_ADDR,
                                  (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                                  NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, api,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_IDLE_S,
                                  MHD_OPTION_END);
    if (!api->d) {
        warn(api, "cannot start the daemon on 127.0.0.1:%d", o->port);
        goto fail;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(api->d, MHD_DAEMON_INFO_BIND_PORT);
    api->port = di ? di->port : o->port;
    snprintf(api->url, sizeof(api->url), "%s://127.0.0.1:%d", tls ? "https" : "http", api->port);
    return api;
fail:
    vs_fakeapi_stop(api);
    return NULL;
}

static void authz_clear(struct vs_fakeapi *api);

static void free_rules(struct rule *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].method);
        free(r[i].prefix);
        free(r[i].body);
    }
    free(r);
}

void vs_fakeapi_stop(struct vs_fakeapi *api)
{
    if (!api)
        return;
    pthread_mutex_lock(&api->mu);
    api->stopping = true;
    wake_all(api);
    pthread_mutex_unlock(&api->mu);
    if (api->d)
        MHD_stop_daemon(api->d);
    for (int k = 0; k < NKINDS; k++) {
        struct obj *e, *t;
        HASH_ITER(hh, api->kinds[k].by_key, e, t)
        {
            HASH_DEL(api->kinds[k].by_key, e);
            obj_free(e);
        }
        free(api->kinds[k].sorted);
    }
    for (size_t i = 0; i < api->hist_n; i++)
        json_decref(hist_at(api, i)->o);
    free(api->hist);
    free_rules(api->faults, api->n_faults);
    free_rules(api->delays, api->n_delays);
    for (size_t i = 0; i < api->n_log; i++)
        free(api->log[i].path);
    free(api->log);
    free(api->token);
    authz_clear(api);
    free(api->user);
    free(api->cert_pem);
    free(api->key_pem);
    pthread_cond_destroy(&api->cv);
    for (int k = 0; k < NKINDS; k++)
        pthread_cond_destroy(&api->wcv[k]);
    pthread_mutex_destroy(&api->mu);
    free(api);
}

int vs_fakeapi_port(const struct vs_fakeapi *api)
{
    return api->port;
}

const char *vs_fakeapi_url(const struct vs_fakeapi *api)
{
    return api->url;
}

uint64_t vs_fakeapi_put(struct vs_fakeapi *api, const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    uint64_t rv = 0;
    char uid[64], ts[32];

    if (!json_is_object(o)) {
        warn(api, "put: not a JSON object: %s", o ? "" : je.text);
        json_decref(o);
        return 0;
    }
    int kind = kind_find(json_string_value(json_object_get(o, "kind")));
    const char *name = meta_str(o, "name");
    if (kind < 0 || !name || !*name) {
        warn(api, "put: unknown kind or missing metadata.name");
        json_decref(o);
        return 0;
    }
    json_t *m = meta_of(o);
    const char *ns = "";
    if (KINDS[kind].namespaced) {
        ns = meta_str(o, "namespace");
        if (!ns || !*ns) {
            json_object_set_new(m, "namespace", json_string("default"));
            ns = "default";
        }
    } else {
        json_object_del(m, "namespace");
    }
    json_object_set_new(o, "apiVersion", json_string(KINDS[kind].api_version));
    json_object_set_new(o, "kind", json_string(KINDS[kind].kind));

    pthread_mutex_lock(&api->mu);
    char *nsc = strdup(ns), *namec = strdup(name); /* o's strings change when o is modified */
    const struct obj *e = nsc && namec ? obj_find(api, kind, nsc, namec) : NULL;
    if (!meta_str(o, "uid")) {
        const char *old = e ? meta_str(e->o, "uid") : NULL;
        if (old)
            snprintf(uid, sizeof(uid), "%s", old);
        else
            new_uid(api, uid, sizeof(uid));
        json_object_set_new(m, "uid", json_string(uid));
    }
    if (!meta_str(o, "creationTimestamp")) {
        now_rfc3339(ts, sizeof(ts));
        json_object_set_new(m, "creationTimestamp", json_string(ts));
    }
    if (nsc && namec && store(api, kind, nsc, namec, o, e ? "MODIFIED" : "ADDED"))
        rv = api->rv;
    else if (!nsc || !namec)
        json_decref(o);
    pthread_mutex_unlock(&api->mu);
    free(nsc);
    free(namec);
    return rv;
}

int vs_fakeapi_delete(struct vs_fakeapi *api, const char *kind, const char *ns, const char *name)
{
    int k = kind_find(kind);
    if (k < 0)
        return -1;
    pthread_mutex_lock(&api->mu);
    struct obj *e = obj_find(api, k, KINDS[k].namespaced ? (ns ? ns : "default") : "", name);
    if (e)
        json_decref(remove_obj(api, e));
    pthread_mutex_unlock(&api->mu);
    return e ? 0 : -1;
}

json_t *vs_fakeapi_get(struct vs_fakeapi *api, const char *kind, const char *ns, const char *name)
{
    int k = kind_find(kind);
    json_t *copy = NULL;
    if (k < 0)
        return NULL;
    pthread_mutex_lock(&api->mu);
    const struct obj *e = obj_find(api, k, KINDS[k].namespaced ? (ns ? ns : "default") : "", name);
    if (e)
        copy = json_deep_copy(e->o);
    pthread_mutex_unlock(&api->mu);
    return copy;
}

uint64_t vs_fakeapi_rv(struct vs_fakeapi *api)
{
    pthread_mutex_lock(&api->mu);
    uint64_t rv = api->rv;
    pthread_mutex_unlock(&api->mu);
    return rv;
}

unsigned vs_fakeapi_count(struct vs_fakeapi *api, const char *method, const char *prefix)
{
    struct rule r = {.method = (char *)method, .prefix = (char *)prefix};
    unsigned n = 0;
    pthread_mutex_lock(&api->mu);
    for (size_t i = 0; i < api->n_log; i++)
        if (rule_match(&r, api->log[i].verb, api->log[i].method, api->log[i].path))
            n++;
    pthread_mutex_unlock(&api->mu);
    return n;
}

void vs_fakeapi_reset_counts(struct vs_fakeapi *api)
{
    pthread_mutex_lock(&api->mu);
    for (size_t i = 0; i < api->n_log; i++)
        free(api->log[i].path);
    api->n_log = 0;
    pthread_mutex_unlock(&api->mu);
}

static int live_watchers(struct vs_fakeapi *api)
{
    int n = 0;
    for (struct watcher *w = api->watchers; w; w = w->next)
        if (!w->ending && w->gen == api->drop_gen)
            n++;
    return n;
}

unsigned vs_fakeapi_connections(struct vs_fakeapi *api)
{
    return __atomic_load_n(&api->connections, __ATOMIC_RELAXED);
}

int vs_fakeapi_watchers(struct vs_fakeapi *api)
{
    pthread_mutex_lock(&api->mu);
    int n = live_watchers(api);
    pthread_mutex_unlock(&api->mu);
    return n;
}

bool vs_fakeapi_wait_watchers(struct vs_fakeapi *api, int n, int timeout_ms)
{
    double end = now_s() + timeout_ms / 1000.0;
    bool ok;
    pthread_mutex_lock(&api->mu);
    while (!(ok = live_watchers(api) >= n) && now_s() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&api->cv, &api->mu, &ts);
    }
    pthread_mutex_unlock(&api->mu);
    return ok;
}

static bool add_rule(struct rule **v, size_t *n, const struct rule *r)
{
    struct rule *g = realloc(*v, (*n + 1) * sizeof(*g));
    if (!g)
        return false;
    *v = g;
    g[*n] = *r;
    g[*n].method = strdup(r->method);
    g[*n].prefix = strdup(r->prefix);
    g[*n].body = r->body ? strdup(r->body) : NULL;
    (*n)++;
    return true;
}

void vs_fakeapi_fault_body(struct vs_fakeapi *api, const char *method, const char *prefix,
                           int status, int count, const char *body, int retry_after)
{
    struct rule r = {.method = (char *)method,
                     .prefix = (char *)prefix,
                     .status = status,
                     .count = count,
                     .body = (char *)body,
                     .retry_after = retry_after};
    pthread_mutex_lock(&api->mu);
    add_rule(&api->faults, &api->n_faults, &r);
    pthread_mutex_unlock(&api->mu);
}

void vs_fakeapi_fault(struct vs_fakeapi *api, const char *method, const char *prefix, int status,
                      int count)
{
    vs_fakeapi_fault_body(api, method, prefix, status, count, NULL, -1);
}

void vs_fakeapi_delay(struct vs_fakeapi *api, const char *method, const char *prefix, int ms)
{
    pthread_mutex_lock(&api->mu);
    for (size_t i = 0; i < api->n_delays; i++) {
        struct rule *d = &api->delays[i];
        if (strcmp(d->method, method) == 0 && strcmp(d->prefix, prefix) == 0) {
            d->ms = ms;
            goto out;
        }
    }
    if (ms > 0) {
        struct rule r = {.method = (char *)method, .prefix = (char *)prefix, .ms = ms};
        add_rule(&api->delays, &api->n_delays, &r);
    }
out:
    pthread_mutex_unlock(&api->mu);
}

void vs_fakeapi_drop_watches(struct vs_fakeapi *api)
{
    pthread_mutex_lock(&api->mu);
    api->drop_gen++;
    wake_all(api);
    pthread_mutex_unlock(&api->mu);
}

static void expire(struct vs_fakeapi *api, const char *resource, bool as_event)
{
    int k = kind_find(resource);
    if (k < 0) {
        warn(api, "expire: unknown resource %s", resource ? resource : "(null)");
        return;
    }
    pthread_mutex_lock(&api->mu);
    /* Every version handed out so far becomes older than the compaction point; lists after
     * this report the new point, so a client that relists can watch again. */
    api->rv++;
    api->compact[k] = api->rv;
    api->compact_event[k] = as_event;
    wake_all(api);
    pthread_mutex_unlock(&api->mu);
}

void vs_fakeapi_expire(struct vs_fakeapi *api, const char *resource)
{
    expire(api, resource, false);
}

void vs_fakeapi_expire_event(struct vs_fakeapi *api, const char *resource)
{
    expire(api, resource, true);
}

void vs_fakeapi_set_version(struct vs_fakeapi *api, const char *git_version)
{
    pthread_mutex_lock(&api->mu);
    snprintf(api->version, sizeof(api->version), "%s", git_version ? git_version : "");
    pthread_mutex_unlock(&api->mu);
}

void vs_fakeapi_binding_labels(struct vs_fakeapi *api, bool copied)
{
    pthread_mutex_lock(&api->mu);
    api->binding_no_labels = !copied;
    pthread_mutex_unlock(&api->mu);
}

void vs_fakeapi_set_token(struct vs_fakeapi *api, const char *token)
{
    char *t = token ? strdup(token) : NULL;
    pthread_mutex_lock(&api->mu);
    free(api->token);
    api->token = t;
    pthread_mutex_unlock(&api->mu);
}

/* Frees the authorization table (mu held or the daemon stopped). */
static void authz_clear(struct vs_fakeapi *api)
{
    for (size_t i = 0; i < api->n_authz; i++) {
        free(api->authz[i].group);
        free(api->authz[i].resource);
        free(api->authz[i].verbs);
        free(api->authz[i].ns);
    }
    free(api->authz);
    api->authz = NULL;
    api->n_authz = 0;
}

bool vs_fakeapi_allow(struct vs_fakeapi *api, const char *group, const char *resource,
                      const char *verbs, const char *ns)
{
    struct authz a = {.group = strdup(group ? group : ""),
                      .resource = strdup(resource ? resource : ""),
                      .verbs = malloc(strlen(verbs ? verbs : "") + 3),
                      .ns = ns ? strdup(ns) : NULL};
    if (!a.group || !a.resource || !a.verbs || (ns && !a.ns))
        goto fail;
    sprintf(a.verbs, ",%s,", verbs ? verbs : "");
    for (char *p = a.verbs; *p; p++) /* "get, list" reads as "get,list" */
        if (*p == ' ')
            memmove(p, p + 1, strlen(p));
    pthread_mutex_lock(&api->mu);
    struct authz *g = realloc(api->authz, (api->n_authz + 1) * sizeof(*g));
    if (g) {
        api->authz = g;
        g[api->n_authz++] = a;
        api->authz_on = true;
    }
    pthread_mutex_unlock(&api->mu);
    if (g)
        return true;
fail:
    free(a.group);
    free(a.resource);
    free(a.verbs);
    free(a.ns);
    return false;
}

void vs_fakeapi_allow_all(struct vs_fakeapi *api)
{
    pthread_mutex_lock(&api->mu);
    authz_clear(api);
    api->authz_on = false;
    pthread_mutex_unlock(&api->mu);
}

void vs_fakeapi_set_user(struct vs_fakeapi *api, const char *user)
{
    char *u = user ? strdup(user) : NULL;
    pthread_mutex_lock(&api->mu);
    free(api->user);
    api->user = u;
    pthread_mutex_unlock(&api->mu);
}

int vs_fakeapi_unserve(struct vs_fakeapi *api, const char *resource, bool unserved)
{
    int k = kind_find(resource);
    if (k < 0)
        return -1;
    pthread_mutex_lock(&api->mu);
    api->unserved[k] = unserved;
    pthread_mutex_unlock(&api->mu);
    return 0;
}
