/* fuzz_devices: the container device lists of hami.io/vgpu-devices-allocated/-to-allocate.
 * Whatever parses must format to a value that parses again to the same number of entries and
 * formats identically; abort() if not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "annot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *val = malloc(size + 1);
    struct vs_pod_devs devs, again;
    struct vs_errbuf eb;

    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    if (vs_annot_parse_devices(VS_ANNO_ALLOCATED, val, &devs, &eb) == VS_OK) {
        char *s = vs_annot_format_devices(&devs);
        if (!s)
            abort();
        if (vs_annot_parse_devices(VS_ANNO_ALLOCATED, s, &again, &eb) != VS_OK || again.n != devs.n)
            abort();
        char *s2 = vs_annot_format_devices(&again);
        if (!s2 || strcmp(s, s2) != 0)
            abort();
        free(s2);
        free(s);
        vs_pod_devs_cleanup(&again);
        vs_pod_devs_cleanup(&devs);
    }
    free(val);
    return 0;
}
