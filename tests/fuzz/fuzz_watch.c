/* fuzz_watch: feeds arbitrary bytes to the watch-stream decoder (line splitter + event decoder
 * of kube_internal.h), twice: objects whole, then cut down to a keep table
 * (vs_watch_decoder_keep). The first byte picks the chunk size and the event cap, so splits at
 * every offset and the oversize path are reached. Any crash, leak or sanitizer report is a
 * finding; and when the whole decoder takes the stream, the pruned one must too, with the same
 * events, handler calls and resourceVersion (text outside kept members is not validated, so
 * the pruned one may take streams the whole one refuses). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"

static int on_event(void *ctx, const char *type, json_t *obj)
{
    size_t *n = ctx;
    /* Touch what a real handler reads. */
    if (json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")))
        (*n)++;
    return type[0] == 'D' && *n > 1000; /* sometimes stop, as a handler may */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct vs_json_keep keep_meta[] = {
    {.key = "name"}, {.key = "resourceVersion"}, {.key = NULL}};
static const struct vs_json_keep keep[] = {
    {.key = "metadata", .members = keep_meta}, {.key = "spec", .all = true}, {.key = NULL}};

struct run {
    enum vs_err rc;
    size_t calls;
    uint64_t events;
    char *rv;
};

static void run(const uint8_t *data, size_t size, size_t chunk, size_t cap,
                const struct vs_json_keep *k, struct run *r)
{
    struct vs_watch_decoder d;
    struct vs_errbuf eb;
    *r = (struct run){.rc = VS_OK};
    vs_watch_decoder_init(&d, on_event, &r->calls, cap);
    vs_watch_decoder_keep(&d, k);
    for (size_t off = 0; off < size && r->rc == VS_OK; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        r->rc = vs_watch_decoder_feed(&d, (const char *)data + off, n, &eb);
    }
    if (r->rc == VS_OK)
        r->rc = vs_watch_decoder_finish(&d, &eb);
    r->events = d.events;
    r->rv = d.rv ? strdup(d.rv) : NULL;
    vs_watch_decoder_cleanup(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = (data[0] & 0x3f) + 1;   /* 1..64 bytes per feed */
    size_t cap = data[0] & 0x40 ? 256 : 0; /* small cap or the real 16 MiB */
    data++;
    size--;
    struct run whole, pruned;
    run(data, size, chunk, cap, NULL, &whole);
    run(data, size, chunk, cap, keep, &pruned);
    if (whole.rc == VS_OK &&
        (pruned.rc != VS_OK || pruned.calls != whole.calls || pruned.events != whole.events ||
         (whole.rv == NULL) != (pruned.rv == NULL) ||
         (whole.rv && strcmp(whole.rv, pruned.rv) != 0)))
        abort();
    free(whole.rv);
    free(pruned.rv);
    return 0;
}
