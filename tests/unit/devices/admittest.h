/* admittest: the admission webhook as a device backend test sees it. A pod (JSON text, as the
 * API server sends it) goes through vs_webhook_handle on a device configuration; the answer is
 * one line a test compares exactly:
 *   allowed:  "allowed" then " | <op> <path> <value>" per JSON Patch operation (value as compact
 *             JSON; none for remove), in the order the webhook wrote them
 *   denied:   "denied <code>: <message>"
 * The patch is checked to apply to the pod (as the API server would apply it). Header-only;
 * harness failures abort. */
#ifndef VS_TEST_ADMITTEST_H
#define VS_TEST_ADMITTEST_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "devcfg.h"
#include "jsonpatch.h"
#include "webhook.h"

static inline void at_die(const char *what)
{
    fprintf(stderr, "admittest: %s\n", what);
    abort();
}

static inline char *at_admit(const struct vs_devcfg *cfg, const char *pod_json)
{
    json_error_t je;
    json_t *pod = json_loads(pod_json, 0, &je);
    if (!pod)
        at_die(je.text);
    json_t *review = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:O}}", "apiVersion", "admission.k8s.io/v1",
                               "kind", "AdmissionReview", "request", "uid", "u1", "namespace",
                               "default", "operation", "CREATE", "object", pod);
    char *body = review ? json_dumps(review, JSON_COMPACT) : NULL;
    if (!body)
        at_die("out of memory");
    struct vs_webhook_opts o = {
        .scheduler_name = "hami-scheduler", .force_overwrite_default = true, .cfg = cfg};
    char *resp = NULL;
    int http = vs_webhook_handle(&o, body, strlen(body), &resp);
    if (http != 200 || !resp)
        at_die(resp ? resp : "no response");
    json_t *got = json_loads(resp, 0, &je);
    json_t *r = json_object_get(got, "response");
    struct vs_buf b;
    vs_buf_init(&b);
    if (!json_is_true(json_object_get(r, "allowed"))) {
        json_t *st = json_object_get(r, "status");
        vs_buf_printf(&b, "denied %lld: %s",
                      (long long)json_integer_value(json_object_get(st, "code")),
                      json_string_value(json_object_get(st, "message")));
    } else {
        vs_buf_puts(&b, "allowed");
        const char *p64 = json_string_value(json_object_get(r, "patch"));
        if (p64) {
            size_t n;
            char *text = tjp_b64_decode(p64, &n);
            json_t *patch = text ? json_loadb(text, n, 0, &je) : NULL;
            free(text);
            if (!patch)
                at_die("patch is not base64 JSON");
            json_t *copy = json_deep_copy(pod);
            char err[256] = "";
            if (tjp_apply(copy, patch, err, sizeof(err)) != 0)
                at_die(err);
            json_decref(copy);
            size_t i;
            json_t *op;
            json_array_foreach(patch, i, op)
            {
                json_t *v = json_object_get(op, "value");
                char *vs = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
                vs_buf_printf(&b, " | %s %s%s%s", json_string_value(json_object_get(op, "op")),
                              json_string_value(json_object_get(op, "path")), vs ? " " : "",
                              vs ? vs : "");
                free(vs);
            }
            json_decref(patch);
        }
    }
    json_decref(got);
    json_decref(review);
    json_decref(pod);
    free(resp);
    free(body);
    char *s = vs_buf_steal(&b);
    if (!s)
        at_die("out of memory");
    return s;
}

#endif
