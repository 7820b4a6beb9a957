/* fuzz_draclass: the DeviceClass decoder and the guard on arbitrary bytes: no crash, no leak; a
 * decoded class has a non-empty name, and an extended resource name only when it is non-empty;
 * the guard keeps at most one entry, removed again. */
#include "devcfg.h"
#include "dra.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct vs_devcfg cfg;
    static int ready;
    if (!ready) {
        if (vs_devcfg_init(&cfg) != VS_OK)
            abort();
        ready = 1;
    }
    struct vs_dra_class c;
    struct vs_errbuf eb;
    if (vs_dra_class_from_text((const char *)data, size, &c, &eb) != VS_OK) {
        if (c.name || c.ext_name)
            abort();
        return 0;
    }
    if (!c.name || !*c.name || (c.ext_name && !*c.ext_name))
        abort();
    struct vs_dra_guard g = {0};
    char *before = NULL;
    const char *after = NULL;
    if (vs_dra_guard_set(&g, &c, cfg.devices, &before, &after)) {
        if (before || g.n != (after ? 1u : 0u))
            abort();
        free(vs_dra_guard_remove(&g, c.name));
        if (g.n)
            abort();
    }
    vs_dra_guard_cleanup(&g);
    vs_dra_class_cleanup(&c);
    return 0;
}
