/* fakeapi main: runs the fake kube-apiserver by hand for poking at it with curl or kubectl.
 * Usage: vs-fakeapi [--port N] [--token T] [--cert PEM --key PEM] [--bookmark-ms N] [FILE.json...]
 * Each FILE holds one object or a List whose items are stored. Runs until SIGINT/SIGTERM. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakeapi.h"

static volatile sig_atomic_t done;

static void on_signal(int sig)
{
    (void)sig;
    done = 1;
}

static int load(struct vs_fakeapi *api, const char *path)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    json_t *items = json_object_get(doc, "items");
    int rc = 0;
    if (!doc) {
        fprintf(stderr, "fakeapi: %s:%d: %s\n", path, je.line, je.text);
        return -1;
    }
    if (!json_is_array(items)) {
        items = json_array();
        json_array_append(items, doc);
    } else {
        json_incref(items);
    }
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        char *text = json_dumps(it, JSON_COMPACT);
        if (!text || vs_fakeapi_put(api, text) == 0) {
            fprintf(stderr, "fakeapi: %s: item %zu was not stored\n", path, i);
            rc = -1;
        }
        free(text);
    }
    json_decref(items);
    json_decref(doc);
    return rc;
}

int main(int argc, char **argv)
{
    struct vs_fakeapi_opts o = {0};
    int first_file = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--port") == 0 && has)
            o.port = atoi(argv[++i]);
        else if (strcmp(a, "--token") == 0 && has)
            o.token = argv[++i];
        else if (strcmp(a, "--cert") == 0 && has)
            o.tls_cert_file = argv[++i];
        else if (strcmp(a, "--key") == 0 && has)
            o.tls_key_file = argv[++i];
        else if (strcmp(a, "--bookmark-ms") == 0 && has)
            o.bookmark_ms = atoi(argv[++i]);
        else if (a[0] == '-') {
            fprintf(stderr,
                    "usage: %s [--port N] [--token T] [--cert PEM --key PEM] "
                    "[--bookmark-ms N] [FILE.json...]\n",
                    argv[0]);
            return 2;
        } else {
            first_file = i;
            break;
        }
    }
    struct vs_fakeapi *api = vs_fakeapi_start(&o);
    if (!api)
        return 1;
    for (int i = first_file; i < argc; i++)
        if (load(api, argv[i]) != 0) {
            vs_fakeapi_stop(api);
            return 2;
        }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    printf("%s\n", vs_fakeapi_url(api));
    fflush(stdout);
    while (!done)
        pause();
    vs_fakeapi_stop(api);
    return 0;
}
