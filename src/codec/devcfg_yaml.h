/* devcfg_yaml: reads HAMi's device-config.yaml (or a ConfigMap holding it) with libyaml into
 * struct vs_devcfg. Split from devcfg.h so that header stays libc-only for the core. */
#ifndef VS_DEVCFG_YAML_H
#define VS_DEVCFG_YAML_H

#include <stddef.h>

#include "devcfg.h"
#include "err.h"

/* Same as vs_devcfg_load for len bytes of text in buf (need not be NUL-terminated); `name`
 * stands for the file name in messages. On error cfg is left unchanged. */
enum vs_err vs_devcfg_load_buf(struct vs_devcfg *cfg, const char *buf, size_t len, const char *name,
                               struct vs_errbuf *eb);

#endif
