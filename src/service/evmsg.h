/* evmsg: the node lists of Event messages (`... nodes fit(a:1.00,b:2.00)`, `<n> nodes
 * <Reason>(a,b)`), capped in size. A list whose items fit in the cap is written exactly as HAMi
 * writes it (items joined by ","); a longer one keeps its leading items and ends with
 * `,+<k> more)`, k the items left out, so one Filter over thousands of candidates posts an Event
 * of about a kilobyte instead of tens. */
#ifndef VS_EVMSG_H
#define VS_EVMSG_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>

/* Bytes of a node list between its parentheses, the `,+<k> more` tail included. */
#define VS_EVMSG_LIST_CAP 1024

/* One list being written into a buffer; stack struct, nothing to free. */
struct vs_evlist {
    struct vs_buf *b; /* borrowed */
    size_t cap;       /* list bytes allowed */
    size_t start;     /* b->len when the list began */
    size_t reserve;   /* room the tail needs for any k up to the total */
    size_t n_in;      /* items written */
    size_t n_seen;    /* items offered */
    size_t mark_len;  /* list bytes after the last item that leaves room for the tail */
    size_t mark_n;    /* items written up to mark_len */
    bool over;        /* an item did not fit: every later one is left out too */
};

/* Starts a list in b (the caller has written the text up to and including "("). total is the
 * number of items that will be offered (it sizes the tail's room); cap the list bytes allowed
 * (VS_EVMSG_LIST_CAP in production). */
void vs_evlist_begin(struct vs_evlist *l, struct vs_buf *b, size_t total, size_t cap);
/* Offers the next item (len bytes, no NUL needed). */
void vs_evlist_add(struct vs_evlist *l, const char *item, size_t len);
/* Offers the next item as `<name>:<score %.2f>`. */
void vs_evlist_add_scored(struct vs_evlist *l, const char *name, size_t len, double score);
/* Ends the list: ")" when every item fit, else cuts back to the last item that leaves room and
 * writes `,+<k> more)`. */
void vs_evlist_end(struct vs_evlist *l);

#endif
