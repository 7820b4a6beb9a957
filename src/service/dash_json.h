/* dash_json: the dashboard API's JSON documents (docs/dashboard-api.json), written by hand
 * into one buffer from the dashboard's copies (dash_snap.h, pending.h): no tree is built, so a
 * snapshot of 40,000 cards is encoded in a few milliseconds. Every string is escaped for JSON
 * and, beyond what JSON needs, `<`, `>`, `&` and U+2028/U+2029 as \u escapes, so a pod named
 * `<img src=x onerror=alert(1)>` stays text wherever the document is pasted. Numbers carry their
 * unit in their key (MiB, Pct for percent of one card, Seconds, Cards); a figure the service
 * does not know is null, never 0. */
#ifndef VS_DASH_JSON_H
#define VS_DASH_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "dash_snap.h"
#include "frag.h"
#include "pending.h"

/* Writer state: commas are placed by the writer. */
struct vs_jw {
    struct vs_buf *b;
    int depth;
    bool comma[64];
};

void vs_jw_init(struct vs_jw *w, struct vs_buf *b);
void vs_jw_obj(struct vs_jw *w);
void vs_jw_end_obj(struct vs_jw *w);
void vs_jw_arr(struct vs_jw *w);
void vs_jw_end_arr(struct vs_jw *w);
void vs_jw_key(struct vs_jw *w, const char *k); /* k: plain ASCII, written as it is */
void vs_jw_str(struct vs_jw *w, const char *s); /* NULL: null */
void vs_jw_int(struct vs_jw *w, int64_t v);
void vs_jw_num(struct vs_jw *w, double v); /* not finite: null */
void vs_jw_bool(struct vs_jw *w, bool v);
void vs_jw_null(struct vs_jw *w);
/* Appends s as a JSON string literal with the escapes above (invalid UTF-8 becomes U+FFFD). */
void vs_dash_json_string(struct vs_buf *b, const char *s);

/* What the documents say about the service itself. */
struct vs_dash_meta {
    const char *version; /* the ETag's value without quotes */
    const char *node_policy, *gpu_policy;
    bool leader, synced;
    size_t pending; /* refused pods listed under pending */
};

/* GET api/v1/snapshot: every node with the sums over its cards, each card when they were copied
 * (with each pod's share when s->detail), every namespace and quota, and the totals. New string
 * (free with free()), NULL when out of memory. */
char *vs_dash_json_snapshot(const struct vs_dash_snap *s, const struct vs_dash_meta *meta);
/* GET api/v1/nodes/{name}: s holds that one node with detail. */
char *vs_dash_json_node(const struct vs_dash_snap *s, const struct vs_dash_meta *meta);
/* GET api/v1/fragmentation: per node its idle and stranded capacity and largest slice; x the
 * workload the measure is taken against. */
char *vs_dash_json_frag(const struct vs_dash_snap *s, struct vs_frag_ctx *x);
/* GET api/v1/pending (detail false) and api/v1/pending/{ns}/{name} (one entry, detail true);
 * s (may be NULL) gives the nearest miss of the first miss_max entries (the others: null, not
 * worked out). */
char *vs_dash_json_pending(const struct vs_pending_entry *v, size_t n, const struct vs_dash_snap *s,
                           size_t miss_max, uint64_t version, uint64_t dropped, int64_t now);
char *vs_dash_json_pending_one(const struct vs_pending_entry *e, const struct vs_dash_snap *s,
                               int64_t now);
/* One pending entry as an object (used by the pod document too). */
void vs_dash_json_pending_entry(struct vs_jw *w, const struct vs_pending_entry *e,
                                const struct vs_dash_snap *s, bool detail);

/* GET api/v1/pods?q=: tracked pods found (s from vs_dash_find_pods) then pending ones. */
char *vs_dash_json_search(const char *q, const struct vs_dash_snap *s, bool more,
                          const struct vs_pending_entry *pend, size_t n_pend);

#endif
