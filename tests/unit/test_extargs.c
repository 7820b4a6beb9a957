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
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vs_filter_args fa;
        struct vs_errbuf eb;
        cr_assert_eq(filter(cases[i].body, &fa, &eb), VS_ERR_PARSE, "%s", cases[i].body);
        cr_assert_str_eq(eb.msg, cases[i].msg, "%s", cases[i].body);
        vs_filter_args_cleanup(&fa);
    }
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
