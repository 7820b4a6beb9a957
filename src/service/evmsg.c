/* evmsg: capped node lists of Event messages (see evmsg.h). */
#include "evmsg.h"

#include <stdio.h>

static size_t digits(size_t v)
{
    size_t d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

void vs_evlist_begin(struct vs_evlist *l, struct vs_buf *b, size_t total, size_t cap)
{
    *l = (struct vs_evlist){.b = b, .cap = cap, .start = b->len};
    l->reserve = sizeof(",+") - 1 + digits(total) + sizeof(" more") - 1;
}

/* Accounts for an item of len bytes already appended (or not, when over). */
static void accepted(struct vs_evlist *l)
{
    size_t len = l->b->len - l->start;
    l->n_in++;
    if (len + l->reserve <= l->cap) {
        l->mark_len = len;
        l->mark_n = l->n_in;
    }
}

static bool fits(struct vs_evlist *l, size_t item_len)
{
    l->n_seen++;
    if (l->over)
        return false;
    size_t len = l->b->len - l->start + (l->n_in ? 1 : 0) + item_len;
    if (len > l->cap) {
        l->over = true;
        return false;
    }
    return true;
}

void vs_evlist_add(struct vs_evlist *l, const char *item, size_t len)
{
    if (!fits(l, len))
        return;
    if (l->n_in)
        vs_buf_append(l->b, ",", 1);
    vs_buf_append(l->b, item, len);
    accepted(l);
}

void vs_evlist_add_scored(struct vs_evlist *l, const char *name, size_t len, double score)
{
    if (l->over) { /* nothing more is written: skip the formatting */
        l->n_seen++;
        return;
    }
    char num[40];
    int n = snprintf(num, sizeof(num), ":%.2f", score);
    size_t nl = n > 0 && (size_t)n < sizeof(num) ? (size_t)n : 0;
    if (!fits(l, len + nl))
        return;
    if (l->n_in)
        vs_buf_append(l->b, ",", 1);
    vs_buf_append(l->b, name, len);
    vs_buf_append(l->b, num, nl);
    accepted(l);
}

void vs_evlist_end(struct vs_evlist *l)
{
    if (!l->over) {
        vs_buf_puts(l->b, ")");
        return;
    }
    vs_buf_truncate(l->b, l->start + l->mark_len);
    vs_buf_printf(l->b, "%s+%zu more)", l->mark_n ? "," : "", l->n_seen - l->mark_n);
}
