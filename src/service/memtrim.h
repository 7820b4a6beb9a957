/* memtrim: gives the allocator's free memory back to the kernel once the service goes quiet.
 *
 * serve.c lets each malloc arena keep up to 16 MiB of free memory (M_TRIM_THRESHOLD), so a
 * Filter does not fault in its megabyte of scratch memory again on every request. Under waves of
 * pods the first wave sizes the arenas and the later ones keep touching more of the free memory
 * inside them: RSS crept up 40-50 KiB a wave for 10 minutes with the live heap and the arenas'
 * size flat (docs/reliability.md). Here a thread checks once a second whether anything happened
 * (an activity counter the caller supplies: its API requests) and, when something did and then
 * nothing for `quiet_s`, calls malloc_trim(0), which releases every free page of every arena;
 * at most once per `min_interval_s`. While busy nothing is trimmed. */
#ifndef VS_MEMTRIM_H
#define VS_MEMTRIM_H

#include <stdbool.h>
#include <stdint.h>

/* The decision, apart from the clock and the thread (tests drive it). */
struct vs_memtrim_policy {
    double quiet_s;        /* the counter unchanged this long */
    double min_interval_s; /* between two trims */
    uint64_t seen;         /* the counter at the last check */
    double changed_at;     /* when it last changed (or the first check) */
    uint64_t trimmed;      /* the counter at the last trim */
    double trimmed_at;     /* when (negative: never) */
    bool started;
};

/* Initialises p: nothing trimmed yet (counter 0); the first check only records the counter. */
void vs_memtrim_policy_init(struct vs_memtrim_policy *p, double quiet_s, double min_interval_s);
/* One check at `now` (seconds, monotonic) with the counter's value: true when a trim is due now
 * (the caller trims: the policy counts it as done). */
bool vs_memtrim_due(struct vs_memtrim_policy *p, uint64_t activity, double now);

struct vs_memtrim_opts {
    double quiet_s, min_interval_s;
    bool thread; /* check once a second on a thread of its own (else the caller calls tick) */
    uint64_t (*activity)(void *ctx);
    void *ctx;
};

struct vs_memtrim;

struct vs_memtrim *vs_memtrim_start(const struct vs_memtrim_opts *o);
/* One check at `now` (what the thread does each second); trims when due. */
void vs_memtrim_tick(struct vs_memtrim *t, double now);
/* Trims done so far. */
uint64_t vs_memtrim_trims(struct vs_memtrim *t);
void vs_memtrim_free(struct vs_memtrim *t); /* stops the thread */

#endif
