/* test_evmsg: capped node lists of Event messages — short lists exactly as HAMi writes them,
 * long ones cut at the cap with the exact `,+<k> more)` tail. */
#include "evmsg.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/* "<prefix>(" then the items, with cap; returns the message (free with free()). */
static char *plain(const char *const *items, size_t n, size_t cap)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "3 nodes CardInsufficientMemory(");
    struct vs_evlist l;
    vs_evlist_begin(&l, &b, n, cap);
    for (size_t i = 0; i < n; i++)
        vs_evlist_add(&l, items[i], strlen(items[i]));
    vs_evlist_end(&l);
    return vs_buf_steal(&b);
}

Test(evmsg, short_list_as_hami)
{
    const char *items[] = {"node-a", "node-b", "node-c"};
    char *m = plain(items, 3, VS_EVMSG_LIST_CAP);
    cr_assert_str_eq(m, "3 nodes CardInsufficientMemory(node-a,node-b,node-c)");
    free(m);
    m = plain(items, 0, VS_EVMSG_LIST_CAP);
    cr_assert_str_eq(m, "3 nodes CardInsufficientMemory()");
    free(m);
}

Test(evmsg, list_of_exactly_the_cap_is_whole)
{
    /* "aaaa,bbbb,cccc" is 14 bytes: a cap of 14 keeps it whole although the tail would not fit */
    const char *items[] = {"aaaa", "bbbb", "cccc"};
    char *m = plain(items, 3, 14);
    cr_assert_str_eq(m, "3 nodes CardInsufficientMemory(aaaa,bbbb,cccc)");
    free(m);
    /* one byte less: cut back to the items that leave room for ",+k more" (8 bytes for k < 10) */
    m = plain(items, 3, 13);
    cr_assert_str_eq(m, "3 nodes CardInsufficientMemory(aaaa,+2 more)");
    free(m);
    /* 12 still keeps "aaaa" (4 + 8 bytes of ",+2 more"); 11: not even one item leaves room */
    m = plain(items, 3, 12);
    cr_assert_str_eq(m, "3 nodes CardInsufficientMemory(aaaa,+2 more)");
    free(m);
    m = plain(items, 3, 11);
    cr_assert_str_eq(m, "3 nodes CardInsufficientMemory(+3 more)");
    free(m);
}

Test(evmsg, long_list_capped_at_1024)
{
    static char names[5000][16];
    const char *items[5000];
    for (size_t i = 0; i < 5000; i++) {
        snprintf(names[i], sizeof(names[i]), "node-%05zu", i);
        items[i] = names[i];
    }
    char *m = plain(items, 5000, VS_EVMSG_LIST_CAP);
    /* 10-byte names plus "," = 11 bytes each; the tail ",+NNNN more" needs 2+4+5 = 11 bytes:
     * 92 items take 92*11-1 = 1011 bytes, 1011 + 11 = 1022 <= 1024; 93 would make 1033. */
    const char *open = strchr(m, '(');
    size_t list = strlen(open + 1) - 1;
    cr_assert_eq(list, 1011 + strlen(",+4908 more"), "%zu", list);
    cr_assert(list <= VS_EVMSG_LIST_CAP);
    cr_assert(strstr(m, "(node-00000,node-00001,") == open);
    const char *tail = strstr(m, ",node-00091,+4908 more)");
    cr_assert_not_null(tail, "%s", m + strlen(m) - 40);
    cr_assert_str_eq(tail, ",node-00091,+4908 more)");
    free(m);
}

Test(evmsg, scored_items)
{
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "find fit node(n2), 1 nodes not fit, 3 nodes fit(");
    struct vs_evlist l;
    vs_evlist_begin(&l, &b, 3, VS_EVMSG_LIST_CAP);
    vs_evlist_add_scored(&l, "n1", 2, 7.5);
    vs_evlist_add_scored(&l, "n2", 2, 15.0);
    vs_evlist_add_scored(&l, "n3", 2, 0.125);
    vs_evlist_end(&l);
    char *m = vs_buf_steal(&b);
    cr_assert_str_eq(m,
                     "find fit node(n2), 1 nodes not fit, 3 nodes fit(n1:7.50,n2:15.00,n3:0.12)");
    free(m);

    /* cap 20: "n1:7.50,n2:15.00" is 16 bytes, with ",+1 more" 24 > 20; "n1:7.50" + 8 = 15 */
    vs_buf_init(&b);
    vs_buf_puts(&b, "x(");
    vs_evlist_begin(&l, &b, 3, 20);
    vs_evlist_add_scored(&l, "n1", 2, 7.5);
    vs_evlist_add_scored(&l, "n2", 2, 15.0);
    vs_evlist_add_scored(&l, "n3", 2, 0.125);
    vs_evlist_add_scored(&l, "n4", 2, 1);
    vs_evlist_end(&l);
    m = vs_buf_steal(&b);
    cr_assert_str_eq(m, "x(n1:7.50,+3 more)");
    free(m);
}
