/* fuzz_extargs: kube-scheduler's ExtenderArgs and ExtenderBindingArgs decoders on arbitrary
 * bytes: no crash, no leak, and a successful decode yields a pod with a name. */
#include "extargs.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_filter_args fa;
    struct vs_errbuf eb;
    if (vs_extargs_filter((const char *)data, size, &fa, &eb) == VS_OK &&
        (!fa.pod.name || !*fa.pod.name))
        abort();
    vs_filter_args_cleanup(&fa);
    struct vs_bind_args ba;
    if (vs_extargs_bind((const char *)data, size, &ba, &eb) == VS_OK && (!*ba.name || !*ba.node))
        abort();
    vs_bind_args_cleanup(&ba);
    return 0;
}
