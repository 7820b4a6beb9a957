/* fuzz_quantity: Kubernetes quantities. The two readers must agree: the same texts are
 * quantities, and a whole value is its own ceiling; abort() if not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *val = malloc(size + 1);
    int64_t i = 0, c = 0;

    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    enum vs_err ei = vs_quantity_int(val, &i);
    enum vs_err ec = vs_quantity_ceil(val, &c);
    if ((ei == VS_ERR_PARSE) != (ec == VS_ERR_PARSE))
        abort();
    if (ei == VS_OK && (ec != VS_OK || c != i))
        abort();
    free(val);
    return 0;
}
