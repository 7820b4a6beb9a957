/* fuzz_extargs: kube-scheduler's ExtenderArgs and ExtenderBindingArgs decoders on arbitrary
 * bytes: no crash, no leak, a successful decode yields a pod with a name, and the filter decoder's
 * fast path agrees with the general one. */
#include "extargs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vs_filter_args fa, ga;
    struct vs_errbuf eb, gb;
    enum vs_err fe = vs_extargs_filter((const char *)data, size, &fa, &eb);
    enum vs_err ge = vs_extargs_filter_general((const char *)data, size, &ga, &gb);
    if (fe == VS_OK && (!fa.pod.name || !*fa.pod.name))
        abort();
    /* The fast path must decode exactly what the general path decodes. */
    if (fe != ge || (fe && strcmp(eb.msg, gb.msg) != 0))
        abort();
    if (fe == VS_OK) {
        if (strcmp(fa.pod.name, ga.pod.name) != 0 || fa.n_names != ga.n_names ||
            fa.has_names != ga.has_names || !fa.nodes != !ga.nodes ||
            !json_equal(fa.pod_json, ga.pod_json) || (fa.nodes && !json_equal(fa.nodes, ga.nodes)))
            abort();
        for (size_t i = 0; i < fa.n_names; i++)
            if (strcmp(fa.names[i], ga.names[i]) != 0)
                abort();
    }
    vs_filter_args_cleanup(&fa);
    vs_filter_args_cleanup(&ga);
    struct vs_bind_args ba;
    if (vs_extargs_bind((const char *)data, size, &ba, &eb) == VS_OK && (!*ba.name || !*ba.node))
        abort();
    vs_bind_args_cleanup(&ba);
    return 0;
}
