/* fuzz_devcfg: feeds arbitrary bytes to the device-config.yaml reader (plain and ConfigMap
 * forms). Any crash, leak or sanitizer report is a finding; return values are irrelevant. */
#include <stddef.h>
#include <stdint.h>

#include "devcfg.h"
#include "devcfg_yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_devcfg cfg;
    struct vs_errbuf eb;

    if (vs_devcfg_init(&cfg) != VS_OK)
        return 0;
    vs_devcfg_load_buf(&cfg, (const char *)data, size, "fuzz", &eb);
    vs_devcfg_cleanup(&cfg);
    return 0;
}
