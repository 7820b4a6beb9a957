/* dashboard: the built-in web page and its JSON API, served on the metrics listener under a base
 * path (docs/dashboard.md, docs/dashboard-api.json). GET / answers the page (a redirect to the
 * base path when it is not "/"). The page and its assets are compiled in (dash_assets.h): no
 * CDN, no font or script from elsewhere. Every answer carries a strict Content-Security-Policy
 * (default-src 'self', no inline script or style; frame-ancestors as configured), nosniff and
 * no-referrer. The API reads the service: snapshots copied under the model's read lock and
 * encoded outside it (ETag = the state's version; If-None-Match answers 304 without a copy),
 * the pending pods, one pod (its API object read through the client), the fragmentation
 * measure, the service's counters, and a what-if evaluated on a private copy (whatif.h). It
 * never writes to the cluster. */
#ifndef VS_DASHBOARD_H
#define VS_DASHBOARD_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "extender.h"
#include "server.h"

#define VS_DASH_DETAIL_NODES 300 /* up to this many nodes the snapshot splits cards by pod */

struct vs_dashboard_opts {
    const char *base_path;       /* "/" when NULL or ""; "/x" and "/x/" are the same */
    const char *frame_ancestors; /* CSP frame-ancestors sources; "'none'" when NULL or "" */
    const struct vs_app *app;    /* borrowed: the service's modules */
    size_t detail_max_nodes;     /* 0: VS_DASH_DETAIL_NODES */
};

struct vs_dashboard;

/* Checks the options (a bad base path or frame-ancestors value is VS_ERR_INVAL naming the flag
 * and the value). NULL with eb on error. */
struct vs_dashboard *vs_dashboard_new(const struct vs_dashboard_opts *o, struct vs_errbuf *eb);
void vs_dashboard_free(struct vs_dashboard *d);

/* The routes to add to the metrics listener (at most VS_DASH_ROUTES), borrowed for the
 * dashboard's lifetime. Returns their number. */
#define VS_DASH_ROUTES 4
size_t vs_dashboard_routes(struct vs_dashboard *d, struct vs_route *out);

/* The normalized base path, e.g. "/" or "/vgpu-sched/". Borrowed. */
const char *vs_dashboard_base(const struct vs_dashboard *d);

/* The API's endpoints under the base path ({x}: one path segment), as routed; the OpenAPI
 * description docs/dashboard-api.json has each. */
struct vs_dash_endpoint {
    const char *method, *path;
};
extern const struct vs_dash_endpoint vs_dash_endpoints[];
extern const size_t vs_dash_n_endpoints;

/* If-None-Match matching (RFC 9110 §13.1.2, weak comparison): true when the header value
 * (a list of entity tags, or *) names etag (quoted). For tests and fuzzing. */
bool vs_dash_etag_match(const char *header, const char *etag);

#endif
