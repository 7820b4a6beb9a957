/* decision: Filter's decisions kept for Bind (decision.h). A uthash table by pod UID under one
 * mutex. jansson's reference counts are not safe to share across threads, so the table keeps its
 * own deep copy of each decision's annotations and hands out deep copies. */
#include "decision.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

struct entry {
    char *uid;
    struct vs_decision dec;
    bool posted; /* its binding was posted: waiting for the pod watch to show the pod bound */
    UT_hash_handle hh;
};

struct vs_decisions {
    pthread_mutex_t mu;
    struct entry *by_uid;
};

void vs_decision_cleanup(struct vs_decision *dec)
{
    if (!dec)
        return;
    free(dec->node);
    json_decref(dec->annotations);
    dec->node = NULL;
    dec->annotations = NULL;
}

static void entry_free(struct entry *e)
{
    vs_decision_cleanup(&e->dec);
    free(e->uid);
    free(e);
}

struct vs_decisions *vs_decisions_new(void)
{
    struct vs_decisions *d = calloc(1, sizeof(*d));
    if (d)
        pthread_mutex_init(&d->mu, NULL);
    return d;
}

void vs_decisions_free(struct vs_decisions *d)
{
    if (!d)
        return;
    struct entry *e, *tmp;
    HASH_ITER(hh, d->by_uid, e, tmp)
    {
        HASH_DEL(d->by_uid, e);
        entry_free(e);
    }
    pthread_mutex_destroy(&d->mu);
    free(d);
}

bool vs_decisions_put(struct vs_decisions *d, const char *uid, struct vs_decision *dec)
{
    if (!d || !uid || !*uid || !dec->node || !json_is_object(dec->annotations)) {
        vs_decision_cleanup(dec);
        return false;
    }
    pthread_mutex_lock(&d->mu);
    struct entry *e;
    HASH_FIND_STR(d->by_uid, uid, e);
    bool ok = true;
    if (e && e->dec.resv > dec->resv) { /* a later decision is recorded already */
        vs_decision_cleanup(dec);
    } else if (e) {
        vs_decision_cleanup(&e->dec);
        e->dec = *dec;
        e->posted = false;
    } else if ((e = calloc(1, sizeof(*e))) && (e->uid = strdup(uid))) {
        e->dec = *dec;
        HASH_ADD_KEYPTR(hh, d->by_uid, e->uid, strlen(e->uid), e);
    } else {
        free(e);
        vs_decision_cleanup(dec);
        ok = false;
    }
    pthread_mutex_unlock(&d->mu);
    memset(dec, 0, sizeof(*dec));
    return ok;
}

bool vs_decisions_get(struct vs_decisions *d, const char *uid, struct vs_decision *out)
{
    memset(out, 0, sizeof(*out));
    if (!d || !uid)
        return false;
    pthread_mutex_lock(&d->mu);
    struct entry *e;
    HASH_FIND_STR(d->by_uid, uid, e);
    bool ok = false;
    if (e) {
        *out = e->dec;
        out->node = strdup(e->dec.node);
        out->annotations = json_deep_copy(e->dec.annotations);
        ok = out->node && out->annotations;
        if (!ok)
            vs_decision_cleanup(out);
    }
    pthread_mutex_unlock(&d->mu);
    return ok;
}

void vs_decisions_posted(struct vs_decisions *d, const char *uid, uint64_t resv, bool posted)
{
    if (!d || !uid)
        return;
    pthread_mutex_lock(&d->mu);
    struct entry *e;
    HASH_FIND_STR(d->by_uid, uid, e);
    if (e && e->dec.resv == resv)
        e->posted = posted;
    pthread_mutex_unlock(&d->mu);
}

bool vs_decisions_seen_bound(struct vs_decisions *d, const char *uid, bool labeled, char **node)
{
    *node = NULL;
    if (!d || !uid)
        return false;
    pthread_mutex_lock(&d->mu);
    struct entry *e;
    HASH_FIND_STR(d->by_uid, uid, e);
    bool patch = false;
    if (e) {
        if (e->posted && !labeled) {
            *node = e->dec.node;
            e->dec.node = NULL;
            patch = true;
        }
        HASH_DEL(d->by_uid, e);
        entry_free(e);
    }
    pthread_mutex_unlock(&d->mu);
    return patch;
}

void vs_decisions_forget(struct vs_decisions *d, const char *uid)
{
    if (!d || !uid)
        return;
    pthread_mutex_lock(&d->mu);
    struct entry *e;
    HASH_FIND_STR(d->by_uid, uid, e);
    if (e) {
        HASH_DEL(d->by_uid, e);
        entry_free(e);
    }
    pthread_mutex_unlock(&d->mu);
}

size_t vs_decisions_count(struct vs_decisions *d)
{
    if (!d)
        return 0;
    pthread_mutex_lock(&d->mu);
    size_t n = HASH_COUNT(d->by_uid);
    pthread_mutex_unlock(&d->mu);
    return n;
}
