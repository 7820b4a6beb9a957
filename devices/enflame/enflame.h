/* enflame: what the two Enflame backends (gcu.c: whole GCU cards; drs.c: DRS hard partitions)
 * share: the device-config section both read (spec/hami-vendors.md §2.7) and their makers,
 * called by the one `enflame` class (drs.c). */
#ifndef VS_DEVICES_ENFLAME_H
#define VS_DEVICES_ENFLAME_H

#include "device.h"

#define VS_ENFLAME_SECTION "enflame"

enum vs_err vs_enflame_make_gcu(const struct vs_devcfg *cfg, struct vs_devices *set,
                                struct vs_errbuf *eb);

/* A DRS profile name `<s>g.<m>gb` as HAMi's parseProfile reads it: lower case, blanks trimmed,
 * split on '.'; the first part less one trailing 'g' is the slice count, the second less a
 * trailing "gb" the memory in GB (Go's Atoi: optional sign, decimal digits, int64). *size 0 when
 * the name has no '.' or the first part is no number; *mem 0 when the second is none. */
void vs_enflame_parse_profile(const char *name, int64_t *size, int64_t *mem);

#endif
