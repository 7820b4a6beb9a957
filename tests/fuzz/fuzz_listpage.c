/* fuzz_listpage: a LIST page read with a needle (vs_kube_list_page_matching) on arbitrary
 * bytes. Besides crashes, leaks and sanitizer reports: when the scan takes a page that also
 * decodes whole, the items handed over must be, in order, items of that decode (the scan only
 * ever skips items). Parts the scan skips are not validated (that is the point of skipping), so
 * a taken page may still be one the whole decode would refuse. The skipped items go to on_other
 * as text: each must lie within the input and not contain the needle, and when the page also
 * decodes whole, the items handed over both ways add up to its item count. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"

struct got {
    json_t *items[64];
    size_t n;
    const uint8_t *data;
    size_t size, others;
};

static int on_item(void *ctx, json_t *item)
{
    struct got *g = ctx;
    if (g->n == 64)
        return 1; /* stop, as a handler may */
    g->items[g->n++] = json_incref(item);
    return 0;
}

static int on_other(void *ctx, const char *text, size_t len)
{
    struct got *g = ctx;
    if ((const uint8_t *)text < g->data || (const uint8_t *)text + len > g->data + g->size ||
        memmem(text, len, "gpu", 3))
        abort();
    g->others++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct got g = {.n = 0, .data = data, .size = size};
    json_t *meta = NULL;
    enum vs_err rc = VS_OK;
    struct vs_errbuf eb;
    int r = vs_kube_list_page_matching((const char *)data, size, "gpu", on_item, on_other, &g,
                                       &meta, "LIST /fuzz", &rc, &eb);
    if (r == 1) {
        json_t *page = json_loadb((const char *)data, size, 0, NULL);
        json_t *items = json_object_get(page, "items");
        if (page && (!json_is_object(page) || !json_is_array(items)))
            abort();
        size_t j = 0;
        for (size_t i = 0; i < g.n; i++) {
            while (j < json_array_size(items) && !json_equal(json_array_get(items, j), g.items[i]))
                j++;
            if (page && j == json_array_size(items))
                abort();
            j++;
        }
        if (page && g.n < 64 && g.n + g.others != json_array_size(items))
            abort();
        json_decref(page);
    } else if (meta || (r == 0 && (g.n || g.others))) {
        abort(); /* nothing is handed over or kept unless the page is taken */
    }
    for (size_t i = 0; i < g.n; i++)
        json_decref(g.items[i]);
    json_decref(meta);
    return 0;
}
