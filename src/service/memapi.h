/* memapi: the in-memory Kubernetes API server behind `serve --cluster FILE` (embedded mode) and
 * behind the integration tests: nodes, pods, leases, events and resourcequotas with list, watch,
 * merge patch with resourceVersion preconditions, and pods/binding, on 127.0.0.1. Every patch,
 * binding and lock of embedded mode lands here, so embedded and live mode share one code path. */
#ifndef VS_MEMAPI_H
#define VS_MEMAPI_H

#include "err.h"
#include "loader.h"

struct vs_memapi;

struct vs_memapi *vs_memapi_start(struct vs_errbuf *eb);
/* Loads the Nodes, Pods and ResourceQuotas of a cluster file (loader formats). */
enum vs_err vs_memapi_load_file(struct vs_memapi *m, const char *path, vs_warn_fn warn,
                                void *warn_ctx, struct vs_errbuf *eb);
const char *vs_memapi_url(const struct vs_memapi *m); /* "http://127.0.0.1:PORT" */
void vs_memapi_stop(struct vs_memapi *m);

#endif
