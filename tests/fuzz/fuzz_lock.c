/* fuzz_lock: hami.io/mutex.lock values and the RFC 3339 reader. A parsed 3-part lock must be
 * reproduced by vs_annot_format_lock (same instant, namespace and name); abort() if not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "annot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *val = malloc(size + 1);
    struct vs_lock lock, again;
    struct vs_errbuf eb;
    int64_t t;

    if (!val)
        return 0;
    memcpy(val, data, size);
    val[size] = '\0';
    vs_annot_parse_rfc3339(val, &t);
    if (vs_annot_parse_lock(val, &lock, &eb) == VS_OK) {
        char *s = vs_annot_format_lock(lock.time, lock.ns, lock.name);
        if (!s)
            abort();
        if (vs_annot_parse_lock(s, &again, &eb) != VS_OK || again.time != lock.time ||
            again.legacy || strcmp(again.ns, lock.ns) != 0 || strcmp(again.name, lock.name) != 0)
            abort();
        free(s);
        vs_lock_cleanup(&again);
        vs_lock_cleanup(&lock);
    }
    free(val);
    return 0;
}
