/* fuzz_loader: feeds arbitrary bytes to the cluster-file loader (JSON and YAML paths, codec).
 * Any crash, leak or sanitizer report is a finding; return values are irrelevant. */
#include <stddef.h>
#include <stdint.h>

#include "loader.h"

static void discard(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_objset set = {0};
    struct vs_errbuf eb;

    vs_loader_load_buf((const char *)data, size, "fuzz", &set, discard, NULL, &eb);
    vs_objset_cleanup(&set);
    return 0;
}
