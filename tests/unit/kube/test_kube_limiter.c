/* test_kube_limiter: the client-side token bucket's math on an injected clock. */
#include "kubetest.h"

/* ------------------------------------------------------------------------------------------ */
/* limiter (injected clock)                                                                   */

/* cr_assert_float_eq evaluates its arguments twice: reserve once, then compare. */
static void assert_wait(struct vs_kube_limiter *l, double now, double want, int i)
{
    double got = vs_kube_limiter_reserve(l, now);
    cr_assert_float_eq(got, want, 1e-9, "request %d at %.3f: waits %.6f, want %.6f", i, now, got,
                       want);
}

Test(limiter, burst_then_steady_rate)
{
    struct vs_kube_limiter l;
    vs_kube_limiter_init(&l, 50, 5);
    /* 30 requests at t=0: five go at once, then one every 20 ms. */
    for (int i = 0; i < 30; i++) {
        double want = i < 5 ? 0 : (i - 4) * 0.02;
        assert_wait(&l, 0, want, i);
    }
    /* The 30th had to wait 0.5 s: 30 requests take >= 0.4 s in wall time. */
    vs_kube_limiter_cleanup(&l);
}

Test(limiter, refill_is_capped_at_burst)
{
    struct vs_kube_limiter l;
    vs_kube_limiter_init(&l, 10, 2);
    assert_wait(&l, 100, 0, -1);
    assert_wait(&l, 100, 0, -1);
    assert_wait(&l, 100, 0.1, -1);
    /* Long idle: only `burst` tokens come back. */
    assert_wait(&l, 1000, 0, -1);
    assert_wait(&l, 1000, 0, -1);
    assert_wait(&l, 1000, 0.1, -1);
    /* Half a period later half a token has come back. */
    assert_wait(&l, 1000.05, 0.15, -1);
    /* A clock that steps back adds nothing. */
    assert_wait(&l, 999, 0.25, -1);
    vs_kube_limiter_cleanup(&l);
}

Test(limiter, unlimited_and_minimum_burst)
{
    struct vs_kube_limiter l;
    vs_kube_limiter_init(&l, 0, 0);
    for (int i = 0; i < 100; i++)
        assert_wait(&l, 0, 0, -1);
    vs_kube_limiter_cleanup(&l);
    vs_kube_limiter_init(&l, 4, 0); /* burst < 1 acts as 1 */
    assert_wait(&l, 0, 0, -1);
    assert_wait(&l, 0, 0.25, -1);
    vs_kube_limiter_cleanup(&l);
}
