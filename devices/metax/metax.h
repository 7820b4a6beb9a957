/* metax: MetaX (spec/hami-vendors.md §2.4), two backends sharing the metax section of
 * device-config.yaml: Metax-GPU (whole cards from the node's capacity, gpu.c) and Metax-SGPU
 * (shared cards from the vendor's JSON inventory, with QoS, app classes and MetaLink, sgpu.c).
 * Private to this folder. */
#ifndef VS_DEVICES_METAX_H
#define VS_DEVICES_METAX_H

#include "devcfg.h"
#include "device.h"

#define VS_METAX_SECTION "metax"

enum vs_err vs_metax_make_gpu(const struct vs_devcfg *cfg, struct vs_devices *set,
                              struct vs_errbuf *eb);
enum vs_err vs_metax_make_sgpu(const struct vs_devcfg *cfg, struct vs_devices *set,
                               struct vs_errbuf *eb);

#endif
