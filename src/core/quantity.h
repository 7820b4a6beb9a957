/* quantity: exact Kubernetes resource.Quantity arithmetic for the few things the scheduler needs:
 * "is this quantity a whole number that fits int64, and which" (Go Quantity.AsInt64 semantics,
 * e.g. "2k" = 2000, "1Gi", "1.5Gi" = 1610612736) and "round it up" (Quantity.Value()). */
#ifndef VS_QUANTITY_H
#define VS_QUANTITY_H

#include <stdint.h>

#include "err.h"

/* VS_OK with *out set when s is a quantity whose exact value is a whole number in int64;
 * VS_ERR_INVAL when s is a valid quantity that is fractional or out of range;
 * VS_ERR_PARSE when s is not a quantity at all. No message is produced (callers know the key). */
enum vs_err vs_quantity_int(const char *s, int64_t *out);

/* The quantity rounded up to a whole number (toward +inf), saturating at int64 limits.
 * VS_ERR_PARSE when s is not a quantity. */
enum vs_err vs_quantity_ceil(const char *s, int64_t *out);

/* The quantity in thousandths, rounded up and saturating like vs_quantity_ceil (Go's
 * Quantity.MilliValue, e.g. "0.5" = 500, "100m" = 100, "1u" = 1). VS_ERR_PARSE when s is not a
 * quantity. */
enum vs_err vs_quantity_milli_ceil(const char *s, int64_t *out);

#endif
