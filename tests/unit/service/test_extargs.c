/* test_extargs: the extender request decoders — case-insensitive keys, null as absent, and the
 * exact error for every malformed shape. */
#include "extargs.h"

#include <criterion/criterion.h>
#include <string.h>

static enum vs_err filter(const char *body, struct vs_filter_args *fa, struct vs_errbuf *eb)
{
    return vs_extargs_filter(body, strlen(body), fa, eb);
}

Test(extargs, filter_ok_case_insensitive)
{
    struct vs_filter_args fa;
    struct vs_errbuf eb;
    cr_assert_eq(filter("{\"pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"}},"
                        "\"NODENAMES\":[\"a\",\"b\"],\"Nodes\":null}",
                        &fa, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_str_eq(fa.pod.name, "p");
    cr_assert_eq(fa.n_names, 2);
    cr_assert_str_eq(fa.names[1], "b");
    cr_assert_null(fa.nodes);
    vs_filter_args_cleanup(&fa);
}

struct bad {
    const char *body, *msg;
};

/* Every body fails to decode with exactly its message. */
static void expect_errors(const struct bad *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct vs_filter_args fa;
        struct vs_errbuf eb;
        cr_assert_eq(filter(cases[i].body, &fa, &eb), VS_ERR_PARSE, "%s", cases[i].body);
        cr_assert_str_eq(eb.msg, cases[i].msg, "%s", cases[i].body);
        vs_filter_args_cleanup(&fa);
    }
}

Test(extargs, filter_errors)
{
    static const struct bad cases[] = {
        {"{nope", "invalid ExtenderArgs: string or '}' expected near 'nope'"},
        {"[1]", "invalid ExtenderArgs: not a JSON object"},
        {"{\"NodeNames\":[]}", "extender args missing pod"},
        {"{\"Pod\":null}", "extender args missing pod"},
        {"{\"Pod\":3}", "invalid Pod in ExtenderArgs: not an object"},
        {"{\"Pod\":{\"metadata\":{}}}", "invalid Pod in ExtenderArgs: metadata.name: missing"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":\"a\"}",
         "NodeNames must be an array of strings"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[1]}",
         "NodeNames must be an array of strings"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":[]}",
         "Nodes must be a NodeList object"},
    };
    expect_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

Test(extargs, bind)
{
    struct vs_bind_args ba;
    struct vs_errbuf eb;
    const char *ok = "{\"podname\":\"p\",\"PodNamespace\":\"d\",\"Node\":\"n\",\"PodUID\":null}";
    cr_assert_eq(vs_extargs_bind(ok, strlen(ok), &ba, &eb), VS_OK);
    cr_assert_str_eq(ba.name, "p");
    cr_assert_str_eq(ba.uid, "");
    vs_bind_args_cleanup(&ba);
    const char *missing = "{\"PodName\":\"p\",\"PodNamespace\":\"d\"}";
    cr_assert_eq(vs_extargs_bind(missing, strlen(missing), &ba, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "ExtenderBindingArgs needs PodName, PodNamespace and Node");
    vs_bind_args_cleanup(&ba);
    cr_assert_eq(vs_extargs_bind("[1]", 3, &ba, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "invalid ExtenderBindingArgs: not a JSON object");
    vs_bind_args_cleanup(&ba);
}

/* The fast path (names copied, only the Pod given to jansson) decodes kube-scheduler's usual
 * request; everything else goes the general way with the same result. */
Test(extargs, fast_path_usual_request)
{
    struct vs_filter_args fa;
    struct vs_errbuf eb;
    cr_assert_eq(
        filter(" {\"Pod\": {\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"uid\":\"u\"}},"
               "\n\"Nodes\" : null , \"NodeNames\":[ \"node-1\",\"node-2\" ,\"n3\"] } ",
               &fa, &eb),
        VS_OK, "%s", eb.msg);
    cr_assert(fa.root == fa.pod_json && fa.names_buf, "fast path not taken");
    cr_assert_eq(fa.n_names, 3);
    cr_assert_str_eq(fa.names[0], "node-1");
    cr_assert_str_eq(fa.names[1], "node-2");
    cr_assert_str_eq(fa.names[2], "n3");
    cr_assert_str_eq(fa.pod.uid, "u");
    cr_assert_null(fa.nodes);
    json_t *arr = vs_filter_args_node_names(&fa);
    char *txt = json_dumps(arr, JSON_COMPACT);
    cr_assert_str_eq(txt, "[\"node-1\",\"node-2\",\"n3\"]");
    free(txt);
    json_decref(arr);
    vs_filter_args_cleanup(&fa);
}

struct names_case {
    const char *body;
    int fast;          /* fast path expected */
    const char *names; /* names joined by '|', "-" when NodeNames is absent/null */
};

Test(extargs, fast_and_general_agree)
{
#define POD "\"Pod\":{\"metadata\":{\"name\":\"p\"}}"
    static const struct names_case cases[] = {
        {"{" POD ",\"NodeNames\":[]}", 1, ""},
        {"{" POD ",\"NodeNames\":null}", 1, "-"},
        {"{" POD "}", 1, "-"},
        {"{\"nodenames\":[\"a\"]," POD "}", 1, "a"},
        {"{" POD ",\"NodeNames\":[\"a\\u0062\"]}", 0, "ab"},               /* escape */
        {"{" POD ",\"NodeNames\":[\"\xc3\xa9\"]}", 0, "\xc3\xa9"},         /* non-ASCII */
        {"{" POD ",\"NodeNames\":[\"a\"],\"NodeNames\":[\"b\"]}", 0, "b"}, /* repeated key */
        {"{" POD ",\"NodeNames\":[\"a\"],\"Extra\":{\"x\":[1]}}", 0, "a"}, /* other key */
        {"{\"P\\u006fd\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\"]}", 0, "a"},
    };
#undef POD
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct names_case *c = &cases[i];
        struct vs_filter_args fa;
        struct vs_errbuf eb;
        cr_assert_eq(filter(c->body, &fa, &eb), VS_OK, "%s: %s", c->body, eb.msg);
        /* The fast path keeps only the Pod as root. */
        cr_assert_eq(fa.root == fa.pod_json, c->fast, "%s", c->body);
        char joined[64] = "";
        if (!fa.has_names)
            strcpy(joined, "-");
        for (size_t k = 0; k < fa.n_names; k++) {
            if (k)
                strcat(joined, "|");
            strcat(joined, fa.names[k]);
        }
        cr_assert_str_eq(joined, c->names, "%s", c->body);
        vs_filter_args_cleanup(&fa);
    }
}

/* Malformed requests the fast scanner starts on get the general path's exact messages. */
Test(extargs, fast_path_errors_worded_as_before)
{
    static const struct bad cases[] = {
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\",]}",
         "invalid ExtenderArgs: unexpected token near ']'"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\"]",
         "invalid ExtenderArgs: '}' expected near end of file"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"NodeNames\":[\"a\"]}",
         "invalid ExtenderArgs: '}' expected near end of file"},
        {"{\"Pod\":{\"metadata\":{}},\"NodeNames\":[\"a\"]}",
         "invalid Pod in ExtenderArgs: metadata.name: missing"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\",3]}",
         "NodeNames must be an array of strings"},
        {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":\"x\"}",
         "Nodes must be a NodeList object"},
    };
    expect_errors(cases, sizeof(cases) / sizeof(cases[0]));
}
