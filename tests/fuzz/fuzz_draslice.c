/* fuzz_draslice: the ResourceSlice decoder on arbitrary bytes: no crash, no leak; a failed
 * decode leaves nothing set, a decoded slice has its required fields non-empty and only
 * non-empty device names and uuids. */
#include "dra.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_dra_slice s;
    struct vs_errbuf eb;
    if (vs_dra_slice_from_text((const char *)data, size, &s, &eb) != VS_OK) {
        if (s.name || s.driver || s.pool || s.node || s.devs || s.n)
            abort();
        return 0;
    }
    if (!s.name || !*s.name || !s.driver || !*s.driver || !s.pool || !*s.pool ||
        (s.node && !*s.node))
        abort();
    for (size_t i = 0; i < s.n; i++)
        if (!s.devs[i].name || !*s.devs[i].name || (s.devs[i].uuid && !*s.devs[i].uuid) ||
            (s.devs[i].parent && !*s.devs[i].parent))
            abort();
    vs_dra_slice_cleanup(&s);
    return 0;
}
