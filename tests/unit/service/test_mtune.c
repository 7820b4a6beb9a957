/* test_mtune: the GLIBC_TUNABLES value `serve` re-executes with (malloc's per-thread caches
 * off), and that a value already setting them is left alone. */
#include "mtune.h"

#include <criterion/criterion.h>
#include <stdlib.h>

static void expect(const char *current, const char *want)
{
    char *got = vs_mtune_tunables(current);
    if (!want) {
        cr_assert_null(got, "for \"%s\": got \"%s\"", current ? current : "(unset)", got);
        return;
    }
    cr_assert_not_null(got, "for \"%s\"", current ? current : "(unset)");
    cr_assert_str_eq(got, want);
    free(got);
}

Test(mtune, unset_or_empty_gets_the_caches_off)
{
    expect(NULL, "glibc.malloc.tcache_count=0");
    expect("", "glibc.malloc.tcache_count=0");
}

Test(mtune, other_tunables_are_kept)
{
    expect("glibc.malloc.arena_max=2", "glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0");
    expect("glibc.malloc.tcache_count_x=1",
           "glibc.malloc.tcache_count_x=1:glibc.malloc.tcache_count=0");
    expect("glibc.malloc.tcache_max=64", "glibc.malloc.tcache_max=64:glibc.malloc.tcache_count=0");
}

Test(mtune, a_count_already_set_wins)
{
    expect("glibc.malloc.tcache_count=7", NULL);
    expect("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=3:glibc.pthread.rseq=0", NULL);
    expect("glibc.malloc.tcache_count=0", NULL); /* after the re-exec: no second one */
}
