/* memapi: embedded mode's API server — the in-process fake API server (fakeapi.c) loaded with
 * the objects of a cluster file. Objects are stored as given (JSON); the loader validates them
 * first with the same codec the live informers use. */
#include "memapi.h"

#include "fakeapi.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct vs_memapi {
    struct vs_fakeapi *api;
};

struct vs_memapi *vs_memapi_start(struct vs_errbuf *eb)
{
    struct vs_memapi *m = calloc(1, sizeof(*m));
    struct vs_fakeapi_opts o = {.port = 0, .quiet = true, .history = 65536, .no_request_log = true};
    if (!m || !(m->api = vs_fakeapi_start(&o))) {
        free(m);
        vs_err_set(eb, VS_ERR_IO, "cannot start the embedded API server on 127.0.0.1");
        return NULL;
    }
    return m;
}

static enum vs_err put_object(void *ctx, const char *kind, const struct json_t *cobj,
                              struct vs_errbuf *eb)
{
    struct vs_memapi *m = ctx;
    json_t *obj = json_copy((json_t *)cobj);
    if (!obj)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    json_object_set_new(obj, "kind", json_string(kind));
    json_object_set_new(obj, "apiVersion", json_string("v1"));
    /* Status of loaded pods is kept; a pod file snapshot is taken as the truth. */
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!text)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    uint64_t rv = vs_fakeapi_put(m->api, text);
    free(text);
    if (!rv)
        return vs_err_set(eb, VS_ERR_INVAL, "the embedded API server refused a %s object", kind);
    return VS_OK;
}

enum vs_err vs_memapi_load_file(struct vs_memapi *m, const char *path, vs_warn_fn warn,
                                void *warn_ctx, struct vs_errbuf *eb)
{
    struct vs_objset set = {0};
    enum vs_err err = vs_loader_load_file_raw(path, &set, put_object, m, warn, warn_ctx, eb);
    vs_objset_cleanup(&set);
    return err;
}

const char *vs_memapi_url(const struct vs_memapi *m)
{
    return vs_fakeapi_url(m->api);
}

void vs_memapi_stop(struct vs_memapi *m)
{
    if (!m)
        return;
    vs_fakeapi_stop(m->api);
    free(m);
}
