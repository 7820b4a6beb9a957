/* dash_assets: the dashboard's files (web/, the API description), compiled into the binary by
 * cmake/embed.cmake, so the page works with no network and no files beside the binary. */
#ifndef VS_DASH_ASSETS_H
#define VS_DASH_ASSETS_H

#include <stddef.h>

struct vs_dash_asset {
    const char *name;         /* path under the dashboard's base, e.g. "app.js" */
    const char *content_type; /* for the Content-Type header */
    const char *data;         /* the bytes (followed by a NUL not counted in len) */
    size_t len;
    const char *etag; /* quoted, from the file's SHA-256 */
};

extern const struct vs_dash_asset vs_dash_assets[];
extern const size_t vs_dash_n_assets;

#endif
