/* test_memtrim: when the allocator's free memory is given back — once the activity counter has
 * changed and then stayed put for quiet_s, at most once per min_interval_s, never while nothing
 * happened since the last trim — driven with made-up times (no clock, no thread). */
#include "memtrim.h"

#include <criterion/criterion.h>
#include <stdio.h>

/* The checks at times t[i] with counter values a[i]: the times a trim was due, as a string. */
static const char *run(double quiet, double interval, int n, const double *t, const uint64_t *a)
{
    static char out[256];
    size_t k = 0;
    out[0] = '\0';
    struct vs_memtrim_policy p;
    vs_memtrim_policy_init(&p, quiet, interval);
    for (int i = 0; i < n; i++)
        if (vs_memtrim_due(&p, a[i], t[i]))
            k += (size_t)snprintf(out + k, sizeof(out) - k, "%s%g", k ? " " : "", t[i]);
    return out;
}

Test(memtrim, trims_once_after_the_activity_stops_for_quiet_s)
{
    /* Busy until t=3 (the counter moves every second), then quiet: due at 5 (2 s unchanged),
     * then never again while nothing happens. */
    const double t[] = {0, 1, 2, 3, 4, 5, 6, 7, 20, 60};
    const uint64_t a[] = {10, 20, 30, 40, 40, 40, 40, 40, 40, 40};
    cr_assert_str_eq(run(2, 10, 10, t, a), "5");
}

Test(memtrim, nothing_happened_nothing_trimmed)
{
    /* A counter that never moves (0 from the start, or its first value) is never trimmed for. */
    const double t[] = {0, 1, 2, 3, 30};
    const uint64_t zero[] = {0, 0, 0, 0, 0};
    const uint64_t seven[] = {7, 7, 7, 7, 7};
    cr_assert_str_eq(run(2, 10, 5, t, zero), "");
    /* The first value counts as activity (the start-up's lists): trimmed once quiet. */
    cr_assert_str_eq(run(2, 10, 5, t, seven), "2");
}

Test(memtrim, at_most_once_per_min_interval)
{
    /* Short bursts 3 s apart, quiet for 2 s after each, but trims at least 10 s apart: due at
     * 3, then at 14 (the first quiet check 10 s or more after 3; not at 16: nothing happened
     * since), then at 25. */
    const double t[] = {0, 1, 3, 4, 6, 7, 9, 10, 12, 14, 16, 17, 19, 20, 22, 23, 25, 27};
    const uint64_t a[] = {1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 5, 6, 6, 7, 7, 8, 8, 8};
    cr_assert_str_eq(run(2, 10, 18, t, a), "3 14 25");
}

Test(memtrim, a_change_restarts_the_quiet_period)
{
    /* Quiet 1.9 s only, then a change: not due until 2 s after the last change. */
    const double t[] = {0, 1.9, 2.0, 3.9, 4.0};
    const uint64_t a[] = {1, 1, 2, 2, 2};
    cr_assert_str_eq(run(2, 10, 5, t, a), "4");
}

static uint64_t counter;
static uint64_t read_counter(void *ctx)
{
    return *(uint64_t *)ctx;
}

Test(memtrim, ticks_trim_and_count)
{
    /* Without its thread the caller ticks: the same decisions, counted. */
    struct vs_memtrim_opts o = {
        .quiet_s = 2, .min_interval_s = 10, .activity = read_counter, .ctx = &counter};
    struct vs_memtrim *t = vs_memtrim_start(&o);
    cr_assert_not_null(t);
    counter = 5;
    vs_memtrim_tick(t, 100);
    vs_memtrim_tick(t, 101);
    cr_assert_eq(vs_memtrim_trims(t), 0);
    vs_memtrim_tick(t, 102);
    cr_assert_eq(vs_memtrim_trims(t), 1);
    vs_memtrim_tick(t, 130);
    counter = 6;
    vs_memtrim_tick(t, 131);
    vs_memtrim_tick(t, 133);
    cr_assert_eq(vs_memtrim_trims(t), 2);
    vs_memtrim_free(t);
}
