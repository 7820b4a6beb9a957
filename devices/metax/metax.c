/* metax: the class that makes both MetaX backends from the metax section (metax.h). */
#include "metax.h"

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    enum vs_err err = vs_metax_make_gpu(cfg, set, eb);
    return err ? err : vs_metax_make_sgpu(cfg, set, eb);
}

const struct vs_device_class vs_device_class_metax = {.name = "metax", .make = make};
