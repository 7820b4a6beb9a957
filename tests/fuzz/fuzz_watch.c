/* fuzz_watch: feeds arbitrary bytes to the watch-stream decoder (line splitter + event decoder
 * of kube_internal.h). The first byte picks the chunk size and the event cap, so splits at
 * every offset and the oversize path are reached. Any crash, leak or sanitizer report is a
 * finding; return values are irrelevant. */
#include <stddef.h>
#include <stdint.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_watch_decoder d;
    struct vs_errbuf eb;
    size_t events = 0;
    enum vs_err rc = VS_OK;

    if (size == 0)
        return 0;
    size_t chunk = (data[0] & 0x3f) + 1;   /* 1..64 bytes per feed */
    size_t cap = data[0] & 0x40 ? 256 : 0; /* small cap or the real 16 MiB */
    data++;
    size--;
    vs_watch_decoder_init(&d, on_event, &events, cap);
    for (size_t off = 0; off < size && rc == VS_OK; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        rc = vs_watch_decoder_feed(&d, (const char *)data + off, n, &eb);
    }
    if (rc == VS_OK)
        vs_watch_decoder_finish(&d, &eb);
    vs_watch_decoder_cleanup(&d);
    return 0;
}
