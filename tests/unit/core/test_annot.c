/* test_annot: every annotation grammar of spec/hami-compat.md §1 and A.6 — exact parsed values,
 * exact formatted strings (format(parse(x)) == x for canonical input) and the exact message of
 * every error class. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "annot.h"

#define REG_PREFIX "invalid " VS_ANNO_REGISTER " "

/* Criterion runs each test in a fresh child process, so parameter tables must live in its
 * shared memory: every case keeps its strings inline and the table is copied whole. */
static void *shared_copy(const void *src, size_t size)
{
    void *dst = cr_malloc(size);
    if (dst)
        memcpy(dst, src, size);
    return dst;
}

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

#define SHARED_PARAMS(type, arr)                                                                   \
    cr_make_param_array(type, shared_copy(arr, sizeof(arr)), sizeof(arr) / sizeof(arr[0]),         \
                        free_params)

struct err_case {
    char in[256];
    char msg[512];
};

struct rt_case {
    char in[64];
    char out[64];
};

struct str_case {
    char in[768];
};

/* ------------------------------------------------------------------ register: JSON */

static void parse_reg_ok(const char *val, struct vs_register *reg)
{
    struct vs_errbuf eb = {{0}};
    enum vs_err err = vs_annot_parse_register(val, reg, &eb);
    cr_assert_eq(err, VS_OK, "%s: %s", val, eb.msg);
}

static void assert_card(const struct vs_card_reg *c, const char *uuid, uint32_t index,
                        int32_t count, int32_t devmem, int32_t devcore, const char *type,
                        int32_t numa, const char *mode, bool health, size_t n_profiles)
{
    cr_assert_str_eq(c->uuid, uuid);
    cr_assert_eq(c->index, index, "%s index %u", uuid, c->index);
    cr_assert_eq(c->count, count, "%s count %d", uuid, c->count);
    cr_assert_eq(c->devmem, devmem, "%s devmem %d", uuid, c->devmem);
    cr_assert_eq(c->devcore, devcore, "%s devcore %d", uuid, c->devcore);
    cr_assert_str_eq(c->type, type);
    cr_assert_eq(c->numa, numa, "%s numa %d", uuid, c->numa);
    cr_assert_str_eq(c->mode, mode);
    cr_assert_eq(c->health, health, "%s health", uuid);
    cr_assert_eq(c->n_profiles, n_profiles, "%s profiles %zu", uuid, c->n_profiles);
}

Test(register, hami_example_single_card)
{
    struct vs_register reg;
    parse_reg_ok("[{\"id\":\"GPU-0\",\"count\":10,\"devmem\":8192,\"devcore\":100,\"type\":"
                 "\"NVIDIA-A100\",\"numa\":0,\"health\":true,\"index\":0,\"mode\":\"hami-core\"}]",
                 &reg);
    cr_assert_eq(reg.n, 1);
    assert_card(&reg.cards[0], "GPU-0", 0, 10, 8192, 100, "NVIDIA-A100", 0, "hami-core", true, 0);
    char *s = vs_annot_format_register(&reg);
    cr_assert_str_eq(s, "[{\"id\":\"GPU-0\",\"count\":10,\"devmem\":8192,\"devcore\":100,\"type\":"
                        "\"NVIDIA-A100\",\"mode\":\"hami-core\",\"health\":true}]");
    free(s);
    vs_register_cleanup(&reg);
    cr_assert_null(reg.cards);
    cr_assert_eq(reg.n, 0);
}

Test(register, hami_example_two_cards_without_mode)
{
    struct vs_register reg;
    parse_reg_ok("[{\"id\":\"GPU-0\",\"count\":1,\"devmem\":8192,\"devcore\":100,\"type\":"
                 "\"NVIDIA-V100\",\"health\":true},{\"id\":\"GPU-1\",\"count\":1,\"devmem\":8192,"
                 "\"devcore\":100,\"type\":\"NVIDIA-V100\",\"health\":true}]",
                 &reg);
    cr_assert_eq(reg.n, 2);
    assert_card(&reg.cards[0], "GPU-0", 0, 1, 8192, 100, "NVIDIA-V100", 0, "", true, 0);
    assert_card(&reg.cards[1], "GPU-1", 0, 1, 8192, 100, "NVIDIA-V100", 0, "", true, 0);
    vs_register_cleanup(&reg);
}

Test(register, hami_example_mig_profiles)
{
    struct vs_register reg;
    parse_reg_ok("[{\"id\":\"GPU-0\",\"count\":7,\"devmem\":40960,\"devcore\":100,\"type\":"
                 "\"NVIDIA-A100-SXM4-40GB\",\"numa\":0,\"health\":true,\"mode\":\"mig\","
                 "\"migProfiles\":[{\"name\":\"1g.5gb\",\"memoryMB\":5120,\"core\":14,"
                 "\"sliceCount\":1,\"placements\":[{\"start\":6,\"size\":1}]}]}]",
                 &reg);
    cr_assert_eq(reg.n, 1);
    const struct vs_card_reg *c = &reg.cards[0];
    assert_card(c, "GPU-0", 0, 7, 40960, 100, "NVIDIA-A100-SXM4-40GB", 0, "mig", true, 1);
    cr_assert_str_eq(c->profiles[0].name, "1g.5gb");
    cr_assert_eq(c->profiles[0].memory_mb, 5120);
    cr_assert_eq(c->profiles[0].core, 14);
    cr_assert_eq(c->profiles[0].slice_count, 1);
    cr_assert_eq(c->profiles[0].n_placements, 1);
    cr_assert_eq(c->profiles[0].placements[0].start, 6);
    cr_assert_eq(c->profiles[0].placements[0].size, 1);
    char *s = vs_annot_format_register(&reg);
    cr_assert_str_eq(s, "[{\"id\":\"GPU-0\",\"count\":7,\"devmem\":40960,\"devcore\":100,\"type\":"
                        "\"NVIDIA-A100-SXM4-40GB\",\"mode\":\"mig\",\"migProfiles\":[{\"name\":"
                        "\"1g.5gb\",\"memoryMB\":5120,\"core\":14,\"sliceCount\":1,\"placements\":"
                        "[{\"start\":6,\"size\":1}]}],\"health\":true}]");
    free(s);
    vs_register_cleanup(&reg);
}

Test(register, keys_are_case_insensitive_and_last_duplicate_wins)
{
    struct vs_register reg;
    parse_reg_ok("[{\"ID\":\"GPU-7\",\"Index\":2,\"COUNT\":5,\"count\":6,\"DevMem\":1024,"
                 "\"devCore\":50,\"TYPE\":\"NVIDIA-T4\",\"Numa\":1,\"MODE\":\"mps\","
                 "\"Health\":true,\"MIGPROFILES\":[{\"NAME\":\"1g.10gb\",\"MemoryMb\":9856,"
                 "\"CORE\":14,\"SLICECOUNT\":1,\"Placements\":[{\"Start\":2,\"SIZE\":1}]}]}]",
                 &reg);
    const struct vs_card_reg *c = &reg.cards[0];
    assert_card(c, "GPU-7", 2, 6, 1024, 50, "NVIDIA-T4", 1, "mps", true, 1);
    cr_assert_str_eq(c->profiles[0].name, "1g.10gb");
    cr_assert_eq(c->profiles[0].memory_mb, 9856);
    cr_assert_eq(c->profiles[0].placements[0].start, 2);
    cr_assert_eq(c->profiles[0].placements[0].size, 1);
    vs_register_cleanup(&reg);
}

Test(register, unknown_keys_ignored_missing_keys_zero)
{
    struct vs_register reg;
    parse_reg_ok(" \n[{\"id\":\"GPU-9\",\"devicevendor\":\"NVIDIA\",\"custominfo\":{\"a\":[1,2,"
                 "{\"b\":null}]},\"migtemplate\":[{\"name\":\"x\",\"memory\":1.5}],"
                 "\"migProfiles\":[{\"name\":\"1g.5gb\",\"instanceCount\":7,"
                 "\"multiprocessorCount\":14}],\"future\":true}] ",
                 &reg);
    cr_assert_eq(reg.n, 1);
    const struct vs_card_reg *c = &reg.cards[0];
    assert_card(c, "GPU-9", 0, 0, 0, 0, "", 0, "", false, 1);
    cr_assert_str_eq(c->profiles[0].name, "1g.5gb");
    cr_assert_eq(c->profiles[0].n_placements, 0);
    cr_assert_null(c->profiles[0].placements);
    vs_register_cleanup(&reg);
}

Test(register, missing_or_null_health_is_false)
{
    struct vs_register reg;
    parse_reg_ok("[{\"id\":\"a\"},{\"id\":\"b\",\"health\":null},{\"id\":\"c\",\"health\":false},"
                 "{\"id\":\"d\",\"health\":true}]",
                 &reg);
    cr_assert_eq(reg.n, 4);
    cr_assert_not(reg.cards[0].health);
    cr_assert_not(reg.cards[1].health);
    cr_assert_not(reg.cards[2].health);
    cr_assert(reg.cards[3].health);
    vs_register_cleanup(&reg);
}

Test(register, null_fields_are_zero_values)
{
    struct vs_register reg;
    parse_reg_ok("[{\"id\":null,\"count\":null,\"type\":null,\"migProfiles\":null,\"index\":null}]",
                 &reg);
    assert_card(&reg.cards[0], "", 0, 0, 0, 0, "", 0, "", false, 0);
    vs_register_cleanup(&reg);
}

Test(register, int32_limits)
{
    struct vs_register reg;
    parse_reg_ok("[{\"id\":\"a\",\"index\":4294967295,\"count\":2147483647,\"devmem\":-2147483648,"
                 "\"numa\":-1}]",
                 &reg);
    assert_card(&reg.cards[0], "a", 4294967295u, INT32_MAX, INT32_MIN, 0, "", -1, "", false, 0);
    vs_register_cleanup(&reg);
}

ParameterizedTestParameters(register, json_errors)
{
    static const struct err_case cases[] = {
        {"[]", REG_PREFIX "\"[]\": no gpu found on node"},
        {"null", REG_PREFIX "\"null\": no gpu found on node"},
        {" [ ] ", REG_PREFIX "\" [ ] \": no gpu found on node"},
        {"[{\"id\":\"GPU-0\",\"count\":10.0}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\",\"count\":10.0}]\": device 0: field count: expected an "
                    "integer, got 10.0"},
        {"[{\"id\":\"GPU-0\",\"devmem\":1e3}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\",\"devmem\":1e3}]\": device 0: field devmem: expected an "
                    "integer, got 1000.0"},
        {"[{\"id\":\"GPU-0\",\"devcore\":\"100\"}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\",\"devcore\":\"100\"}]\": device 0: field devcore: "
                    "expected an integer, got string"},
        {"[{\"id\":\"GPU-0\",\"index\":-1}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\",\"index\":-1}]\": device 0: field index: integer -1 out "
                    "of range"},
        {"[{\"id\":\"GPU-0\",\"index\":4294967296}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\",\"index\":4294967296}]\": device 0: field index: integer "
                    "4294967296 out of range"},
        {"[{\"id\":\"GPU-0\",\"count\":2147483648}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\",\"count\":2147483648}]\": device 0: field count: integer "
                    "2147483648 out of range"},
        {"[{\"id\":\"GPU-0\",\"numa\":-2147483649}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\",\"numa\":-2147483649}]\": device 0: field numa: integer "
                    "-2147483649 out of range"},
        {"[{\"id\":\"GPU-0\"},{\"id\":\"GPU-1\",\"health\":\"true\"}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\"},{\"id\":\"GPU-1\",\"health\":\"true\"}]\": device 1: "
                    "field health: expected a bool, got string"},
        {"[{\"id\":7}]",
         REG_PREFIX "\"[{\"id\":7}]\": device 0: field id: expected a string, got number"},
        {"[{\"id\":\"a\",\"mode\":[]}]",
         REG_PREFIX "\"[{\"id\":\"a\",\"mode\":[]}]\": device 0: field mode: expected a string, "
                    "got array"},
        {"[1]", REG_PREFIX "\"[1]\": device 0: device entry is not an object"},
        {"[null]", REG_PREFIX "\"[null]\": device 0: device entry is not an object"},
        {"[{\"id\":\"a\",\"migProfiles\":{}}]",
         REG_PREFIX "\"[{\"id\":\"a\",\"migProfiles\":{}}]\": device 0: field migProfiles: "
                    "expected an array"},
        {"[{\"id\":\"a\",\"migProfiles\":[1]}]",
         REG_PREFIX "\"[{\"id\":\"a\",\"migProfiles\":[1]}]\": device 0: migProfiles entry is not "
                    "an object"},
        {"[{\"id\":\"a\",\"migProfiles\":[{\"name\":2}]}]",
         REG_PREFIX "\"[{\"id\":\"a\",\"migProfiles\":[{\"name\":2}]}]\": device 0: field name: "
                    "expected a string, got number"},
        {"[{\"id\":\"a\",\"migProfiles\":[{\"placements\":{}}]}]",
         REG_PREFIX "\"[{\"id\":\"a\",\"migProfiles\":[{\"placements\":{}}]}]\": device 0: field "
                    "placements: expected an array"},
        {"[{\"id\":\"a\",\"migProfiles\":[{\"placements\":[1]}]}]",
         REG_PREFIX "\"[{\"id\":\"a\",\"migProfiles\":[{\"placements\":[1]}]}]\": device 0: "
                    "placement is not an object"},
        {"[{\"id\":\"a\",\"migProfiles\":[{\"placements\":[{\"start\":0.5}]}]}]",
         REG_PREFIX "\"[{\"id\":\"a\",\"migProfiles\":[{\"placements\":[{\"start\":0.5}]}]}]\": "
                    "device 0: field start: expected an integer, got 0.5"},
        {"[{\"id\":\"GPU-0\"",
         REG_PREFIX "\"[{\"id\":\"GPU-0\"\": '}' expected near end of file at offset 14"},
        {"[{\"id\":\"GPU-0\"}] x",
         REG_PREFIX "\"[{\"id\":\"GPU-0\"}] x\": end of file expected near 'x' at offset 18"},
        {"[{\"id\":\"GPU-0\",}]",
         REG_PREFIX "\"[{\"id\":\"GPU-0\",}]\": string or '}' expected near '}' at offset 16"},
        {"[{'id':1}]", REG_PREFIX "\"[{'id':1}]\": string or '}' expected near ''' at offset 3"},
        {"[{\"id\":01}]", REG_PREFIX "\"[{\"id\":01}]\": invalid token near '0' at offset 8"},
        {"nullx", REG_PREFIX "\"nullx\": invalid token near 'nullx' at offset 5"},
        {"[{\"id\":\"a\\u0000\"}]",
         REG_PREFIX "\"[{\"id\":\"a\\u0000\"}]\": NUL character in a string at offset 16"},
        {"", REG_PREFIX "\"\": neither a JSON array nor the colon format"},
        {"{\"id\":\"GPU-0\"}",
         REG_PREFIX "\"{\"id\":\"GPU-0\"}\": expected a JSON array of devices"},
    };
    return SHARED_PARAMS(struct err_case, cases);
}

ParameterizedTest(struct err_case *c, register, json_errors)
{
    struct vs_register reg;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_register(c->in, &reg, &eb), VS_ERR_PARSE, "accepted %s", c->in);
    cr_assert_str_eq(eb.msg, c->msg);
    cr_assert_null(reg.cards);
    cr_assert_eq(reg.n, 0);
}

Test(register, long_value_is_shortened_in_message)
{
    char val[201];
    memset(val, 'x', 200);
    val[200] = '\0';
    char want[400];
    snprintf(want, sizeof(want),
             REG_PREFIX "\"%.120s...\": neither a JSON array nor the colon "
                        "format",
             val);
    struct vs_register reg;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_register(val, &reg, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, want);
    /* No errbuf: still an error, no crash. */
    cr_assert_eq(vs_annot_parse_register("[]", &reg, NULL), VS_ERR_PARSE);
}

/* format(parse(x)) == x for values written in the plugin's field order with omitempty. */
ParameterizedTestParameters(register, round_trip)
{
    static const struct str_case cases[] = {
        {"[{\"id\":\"GPU-0\",\"count\":1,\"devmem\":8192,\"devcore\":100,\"type\":\"NVIDIA-V100\","
         "\"health\":true},{\"id\":\"GPU-1\",\"count\":1,\"devmem\":8192,\"devcore\":100,\"type\":"
         "\"NVIDIA-V100\",\"health\":true}]"},
        {"[{\"id\":\"GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448\",\"index\":3,\"count\":10,"
         "\"devmem\":15360,\"devcore\":100,\"type\":\"NVIDIA-Tesla T4\",\"numa\":1,\"mode\":"
         "\"hami-core\",\"health\":true}]"},
        {"[{\"id\":\"GPU-0\",\"count\":7,\"devmem\":40960,\"devcore\":100,\"type\":"
         "\"NVIDIA-A100-SXM4-40GB\",\"mode\":\"mig\",\"migProfiles\":[{\"name\":\"1g.5gb\","
         "\"memoryMB\":5120,\"core\":14,\"sliceCount\":1,\"placements\":[{\"start\":6,\"size\":1}"
         "]},{\"name\":\"2g.10gb\",\"memoryMB\":9984,\"core\":29,\"sliceCount\":2,\"placements\":"
         "[{\"start\":0,\"size\":2},{\"start\":2,\"size\":2},{\"start\":4,\"size\":2}]}],"
         "\"health\":true}]"},
        {"[{\"id\":\"GPU-2\",\"index\":1,\"count\":10,\"devmem\":24576,\"devcore\":200,\"type\":"
         "\"NVIDIA A10\",\"mode\":\"mps\"}]"},
        {"[{\"id\":\"g\",\"numa\":-1,\"health\":true}]"},
        {"[{\"id\":\"GPU-\\\"q\\\"\\\\x\",\"type\":\"a\\nb\\u0001\"}]"},
        {"[{\"mode\":\"mig\",\"migProfiles\":[{\"name\":\"\",\"memoryMB\":0,\"core\":0,"
         "\"sliceCount\":0,\"placements\":[]}]}]"},
        {"[{}]"},
    };
    return SHARED_PARAMS(struct str_case, cases);
}

ParameterizedTest(struct str_case *c, register, round_trip)
{
    struct vs_register reg;
    parse_reg_ok(c->in, &reg);
    char *s = vs_annot_format_register(&reg);
    cr_assert_str_eq(s, c->in);
    free(s);
    vs_register_cleanup(&reg);
}

/* ------------------------------------------------------------------ register: legacy */

Test(register, legacy_seven_fields)
{
    struct vs_register reg;
    parse_reg_ok("GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla "
                 "V100-PCIE-32GB,0,true:GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,"
                 "NVIDIA-Tesla V100-PCIE-32GB,0,true:",
                 &reg);
    cr_assert_eq(reg.n, 2);
    assert_card(&reg.cards[0], "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec", 0, 10, 32768, 100,
                "NVIDIA-Tesla V100-PCIE-32GB", 0, "hami-core", true, 0);
    assert_card(&reg.cards[1], "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448", 0, 10, 32768, 100,
                "NVIDIA-Tesla V100-PCIE-32GB", 0, "hami-core", true, 0);
    char *s = vs_annot_format_register(&reg);
    cr_assert_str_eq(s, "[{\"id\":\"GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec\",\"count\":10,"
                        "\"devmem\":32768,\"devcore\":100,\"type\":\"NVIDIA-Tesla "
                        "V100-PCIE-32GB\",\"mode\":\"hami-core\",\"health\":true},{\"id\":"
                        "\"GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448\",\"count\":10,\"devmem\":"
                        "32768,\"devcore\":100,\"type\":\"NVIDIA-Tesla V100-PCIE-32GB\",\"mode\":"
                        "\"hami-core\",\"health\":true}]");
    free(s);
    vs_register_cleanup(&reg);
}

Test(register, legacy_nine_fields)
{
    struct vs_register reg;
    parse_reg_ok("GPU-aaa,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true,0,hami-core:"
                 "GPU-bbb,4,16384,200,NVIDIA A10,1,False,3,mps:",
                 &reg);
    cr_assert_eq(reg.n, 2);
    assert_card(&reg.cards[0], "GPU-aaa", 0, 10, 32768, 100, "NVIDIA-Tesla V100-PCIE-32GB", 0,
                "hami-core", true, 0);
    assert_card(&reg.cards[1], "GPU-bbb", 3, 4, 16384, 200, "NVIDIA A10", 1, "mps", false, 0);
    vs_register_cleanup(&reg);
}

Test(register, legacy_signs_empty_segments_and_bools)
{
    struct vs_register reg;
    parse_reg_ok("::GPU-a,+1,-2,3,T,-1,1::GPU-b,1,2,3,,0,F,+7,:", &reg);
    cr_assert_eq(reg.n, 2);
    assert_card(&reg.cards[0], "GPU-a", 0, 1, -2, 3, "T", -1, "hami-core", true, 0);
    assert_card(&reg.cards[1], "GPU-b", 7, 1, 2, 3, "", 0, "", false, 0);
    vs_register_cleanup(&reg);
}

ParameterizedTestParameters(register, legacy_errors)
{
    static const struct err_case cases[] = {
        {"GPU-aaa,10,32768,100,T,0,true",
         REG_PREFIX "\"GPU-aaa,10,32768,100,T,0,true\": neither a JSON array nor the colon "
                    "format"},
        {"abc:", REG_PREFIX "\"abc:\": device 0 has no ',' separated fields"},
        {"a,1,2,3,T,0,true:abc:",
         REG_PREFIX "\"a,1,2,3,T,0,true:abc:\": device 1 has no ',' separated fields"},
        {"a,1,2,3,T,0:", REG_PREFIX "\"a,1,2,3,T,0:\": device 0 has too few fields, want 7 or 9"},
        {"a,1,2,3,T,0,true,0:",
         REG_PREFIX "\"a,1,2,3,T,0,true,0:\": device 0 has 8 fields, want 7 or 9"},
        {"a,1,2,3,T,0,true,0,hami-core,x:",
         REG_PREFIX "\"a,1,2,3,T,0,true,0,hami-core,x:\": device 0 has more than 9 fields, want 7 "
                    "or 9"},
        {"a,ten,2,3,T,0,true:",
         REG_PREFIX "\"a,ten,2,3,T,0,true:\": device 0 has an invalid number or bool"},
        {"a,1,2.5,3,T,0,true:",
         REG_PREFIX "\"a,1,2.5,3,T,0,true:\": device 0 has an invalid number or bool"},
        {"a,1,2,x,T,0,true:",
         REG_PREFIX "\"a,1,2,x,T,0,true:\": device 0 has an invalid number or bool"},
        {"a,1,2,3,T,zero,true:",
         REG_PREFIX "\"a,1,2,3,T,zero,true:\": device 0 has an invalid number or bool"},
        {"a,1,2,3,T,0,yes:",
         REG_PREFIX "\"a,1,2,3,T,0,yes:\": device 0 has an invalid number or bool"},
        {"a,1,2,3,T,0,tRUE:",
         REG_PREFIX "\"a,1,2,3,T,0,tRUE:\": device 0 has an invalid number or bool"},
        {"a,1,2,3,T,0,true,-1,mig:",
         REG_PREFIX "\"a,1,2,3,T,0,true,-1,mig:\": device 0 has an invalid number or bool"},
        {"a,1,2,3,T,0,true,x,mig:",
         REG_PREFIX "\"a,1,2,3,T,0,true,x,mig:\": device 0 has an invalid number or bool"},
        {"a,2147483648,2,3,T,0,true:",
         REG_PREFIX "\"a,2147483648,2,3,T,0,true:\": device 0 has an invalid number or bool"},
        {"a, 1,2,3,T,0,true:",
         REG_PREFIX "\"a, 1,2,3,T,0,true:\": device 0 has an invalid number or bool"},
        {"a,,2,3,T,0,true:", REG_PREFIX "\"a,,2,3,T,0,true:\": device 0 has an invalid number or "
                                        "bool"},
        {"a,1,2,3,T,0,true:b,1,2,3,T,x,true:",
         REG_PREFIX "\"a,1,2,3,T,0,true:b,1,2,3,T,x,true:\": device 1 has an invalid number or "
                    "bool"},
        {":::", REG_PREFIX "\":::\": no gpu found on node"},
        {":", REG_PREFIX "\":\": no gpu found on node"},
    };
    return SHARED_PARAMS(struct err_case, cases);
}

ParameterizedTest(struct err_case *c, register, legacy_errors)
{
    struct vs_register reg;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_register(c->in, &reg, &eb), VS_ERR_PARSE, "accepted %s", c->in);
    cr_assert_str_eq(eb.msg, c->msg);
    cr_assert_null(reg.cards);
    cr_assert_eq(reg.n, 0);
}

/* ------------------------------------------------------------------ topology score */

Test(score, hami_example_round_trip)
{
    const char *in = "[{\"uuid\":\"GPU-0\",\"score\":{\"GPU-1\":100}},{\"uuid\":\"GPU-1\","
                     "\"score\":{\"GPU-0\":100}}]";
    struct vs_topo t;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_score(in, &t, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(t.n, 2);
    cr_assert_str_eq(t.items[0].uuid, "GPU-0");
    cr_assert_eq(t.items[0].n, 1);
    cr_assert_str_eq(t.items[0].scores[0].other, "GPU-1");
    cr_assert_eq(t.items[0].scores[0].score, 100);
    cr_assert_str_eq(t.items[1].uuid, "GPU-1");
    cr_assert_str_eq(t.items[1].scores[0].other, "GPU-0");
    char *s = vs_annot_format_score(&t);
    cr_assert_str_eq(s, in);
    free(s);
    vs_topo_cleanup(&t);
    cr_assert_null(t.items);
    cr_assert_eq(t.n, 0);
}

Test(score, tolerant_reading)
{
    /* Case-insensitive field names, unknown keys ignored, missing/null score = no pairs,
     * score map keys are data (case kept), 64-bit values. */
    const char *in = "[{\"UUID\":\"GPU-0\",\"Score\":{\"gpu-1\":-5,\"GPU-2\":9223372036854775807},"
                     "\"extra\":[1]},{\"uuid\":\"GPU-1\"},{\"uuid\":\"GPU-2\",\"score\":null}]";
    struct vs_topo t;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_score(in, &t, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(t.n, 3);
    cr_assert_eq(t.items[0].n, 2);
    cr_assert_str_eq(t.items[0].scores[0].other, "gpu-1");
    cr_assert_eq(t.items[0].scores[0].score, -5);
    cr_assert_eq(t.items[0].scores[1].score, INT64_MAX);
    cr_assert_eq(t.items[1].n, 0);
    cr_assert_eq(t.items[2].n, 0);
    char *s = vs_annot_format_score(&t);
    cr_assert_str_eq(s, "[{\"uuid\":\"GPU-0\",\"score\":{\"gpu-1\":-5,\"GPU-2\":"
                        "9223372036854775807}},{\"uuid\":\"GPU-1\",\"score\":{}},{\"uuid\":"
                        "\"GPU-2\",\"score\":{}}]");
    free(s);
    vs_topo_cleanup(&t);
}

Test(score, repeated_score_key_keeps_the_last_value)
{
    /* Go decodes "score" into a map[string]int: one pair per key, the last value. */
    struct vs_topo t;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_score("[{\"uuid\":\"GPU-0\",\"score\":{\"GPU-1\":1,\"GPU-2\":5,"
                                      "\"GPU-1\":3}}]",
                                      &t, &eb),
                 VS_OK, "%s", eb.msg);
    char *s = vs_annot_format_score(&t);
    cr_assert_str_eq(s, "[{\"uuid\":\"GPU-0\",\"score\":{\"GPU-1\":3,\"GPU-2\":5}}]");
    free(s);
    vs_topo_cleanup(&t);
}

Test(score, empty_and_null)
{
    struct vs_topo t;
    cr_assert_eq(vs_annot_parse_score("null", &t, NULL), VS_OK);
    cr_assert_eq(t.n, 0);
    cr_assert_eq(vs_annot_parse_score(" [] ", &t, NULL), VS_OK);
    cr_assert_eq(t.n, 0);
    char *s = vs_annot_format_score(&t);
    cr_assert_str_eq(s, "[]");
    free(s);
    vs_topo_cleanup(&t);
}

#define SCORE_PREFIX "invalid " VS_ANNO_SCORE " "

ParameterizedTestParameters(score, errors)
{
    static const struct err_case cases[] = {
        {"", SCORE_PREFIX "\"\": unexpected token near end of file at offset 0"},
        {"[", SCORE_PREFIX "\"[\": ']' expected near end of file at offset 1"},
        {"{\"uuid\":\"a\"}", SCORE_PREFIX "\"{\"uuid\":\"a\"}\": expected a JSON array"},
        {"[1]", SCORE_PREFIX "\"[1]\": entry 0 is not {\"uuid\":string,\"score\":{}}"},
        {"[{\"uuid\":\"a\"},{\"uuid\":1}]",
         SCORE_PREFIX "\"[{\"uuid\":\"a\"},{\"uuid\":1}]\": entry 1 is not "
                      "{\"uuid\":string,\"score\":{}}"},
        {"[{\"uuid\":\"a\",\"score\":[]}]",
         SCORE_PREFIX "\"[{\"uuid\":\"a\",\"score\":[]}]\": entry 0 is not "
                      "{\"uuid\":string,\"score\":{}}"},
        {"[{\"uuid\":\"a\",\"score\":{\"b\":1.5}}]",
         SCORE_PREFIX "\"[{\"uuid\":\"a\",\"score\":{\"b\":1.5}}]\": entry 0 score b: expected an "
                      "integer, got 1.5"},
        {"[{\"uuid\":\"a\",\"score\":{\"b\":\"1\"}}]",
         SCORE_PREFIX "\"[{\"uuid\":\"a\",\"score\":{\"b\":\"1\"}}]\": entry 0 score b: expected "
                      "an integer, got string"},
        {"[{\"uuid\":\"a\",\"score\":{\"b\":9223372036854775808}}]",
         SCORE_PREFIX "\"[{\"uuid\":\"a\",\"score\":{\"b\":9223372036854775808}}]\": too big "
                      "integer near '9223372036854775808' at offset 45"},
    };
    return SHARED_PARAMS(struct err_case, cases);
}

ParameterizedTest(struct err_case *c, score, errors)
{
    struct vs_topo t;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_score(c->in, &t, &eb), VS_ERR_PARSE, "accepted %s", c->in);
    cr_assert_str_eq(eb.msg, c->msg);
    cr_assert_null(t.items);
    cr_assert_eq(t.n, 0);
}

/* ------------------------------------------------------------------ comma lists */

struct list_case {
    char in[64];
    size_t n;
    char items[3][32];
};

ParameterizedTestParameters(list, parse)
{
    static const struct list_case cases[] = {
        {"dev-1, ", 1, {"dev-1"}},
        {"GPU-aaa, GPU-bbb", 2, {"GPU-aaa", "GPU-bbb"}},
        {" \tGPU-AAA ,,GPU-BBB\t,", 2, {"GPU-AAA", "GPU-BBB"}},
        {"Tesla V100-PCIE-32GB, NVIDIA A10", 2, {"Tesla V100-PCIE-32GB", "NVIDIA A10"}},
        {"A100", 1, {"A100"}},
        {"a,b,c", 3, {"a", "b", "c"}},
        {"", 0, {""}},
        {" ", 0, {""}},
        {",,", 0, {""}},
        {" , \t, ", 0, {""}},
    };
    return SHARED_PARAMS(struct list_case, cases);
}

ParameterizedTest(struct list_case *c, list, parse)
{
    struct vs_strlist l;
    cr_assert_eq(vs_annot_parse_list(c->in, &l), VS_OK);
    cr_assert_eq(l.n, c->n, "\"%s\": %zu items", c->in, l.n);
    for (size_t i = 0; i < c->n; i++)
        cr_assert_str_eq(l.items[i], c->items[i]);
    if (c->n == 0)
        cr_assert_null(l.items);
    vs_strlist_cleanup(&l);
    cr_assert_null(l.items);
    cr_assert_eq(l.n, 0);
}

Test(list, null_and_membership)
{
    struct vs_strlist l;
    cr_assert_eq(vs_annot_parse_list(NULL, &l), VS_OK);
    cr_assert_eq(l.n, 0);
    cr_assert_not(vs_strlist_has(&l, "GPU-aaa"));
    cr_assert_eq(vs_annot_parse_list("GPU-aaa, GPU-bbb", &l), VS_OK);
    cr_assert(vs_strlist_has(&l, "GPU-aaa"));
    cr_assert(vs_strlist_has(&l, "GPU-bbb"));
    cr_assert_not(vs_strlist_has(&l, "GPU-AAA"));
    cr_assert_not(vs_strlist_has(&l, "GPU-aa"));
    cr_assert_not(vs_strlist_has(&l, " GPU-bbb"));
    vs_strlist_cleanup(&l);
    vs_strlist_cleanup(NULL);
}

/* ------------------------------------------------------------------ device lists */

#define UUID_T "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448"

/* Every example row of spec §1.7 (and §10.4): parsed shape and exact round trip. */
struct dev_case {
    char in[128];
    size_t n_ctrs;
    size_t devs_per_ctr[4];
};

ParameterizedTestParameters(devices, spec_rows)
{
    static const struct dev_case cases[] = {
        {UUID_T ",NVIDIA,3000,0:;", 1, {1}},
        {UUID_T ",NVIDIA,3000,0:;" UUID_T ",NVIDIA,5000,0:;", 2, {1, 1}},
        {"GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,3000,30:;", 1, {2}},
        {";uuid1,NVIDIA,1000,30:;uuid1,NVIDIA,1000,30:;", 3, {0, 1, 1}},
        {"uuid2,NVIDIA,1000,30:;;", 2, {1, 0}},
        {"GPU-x,NVIDIA,1000,0:;", 1, {1}},
        {";GPU-x,NVIDIA,1000,0:;", 2, {0, 1}},
        {"GPU-a,NVIDIA,5120,14:GPU-a,NVIDIA,5120,14:;", 1, {2}},
        {";;", 2, {0, 0}},
        {";", 1, {0}},
        {"", 0, {0}},
        {"a,NVIDIA-Tesla T4,-1,2147483647:;b,,-2147483648,0:;", 2, {1, 1}},
    };
    return SHARED_PARAMS(struct dev_case, cases);
}

ParameterizedTest(struct dev_case *c, devices, spec_rows)
{
    struct vs_pod_devs d;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_devices(VS_ANNO_ALLOCATED, c->in, &d, &eb), VS_OK, "%s: %s", c->in,
                 eb.msg);
    cr_assert_eq(d.n, c->n_ctrs, "\"%s\": %zu entries", c->in, d.n);
    for (size_t i = 0; i < d.n; i++)
        cr_assert_eq(d.ctrs[i].n, c->devs_per_ctr[i], "\"%s\" entry %zu: %zu devices", c->in, i,
                     d.ctrs[i].n);
    char *s = vs_annot_format_devices(&d);
    cr_assert_str_eq(s, c->in);
    free(s);
    vs_pod_devs_cleanup(&d);
    cr_assert_null(d.ctrs);
    cr_assert_eq(d.n, 0);
}

Test(devices, field_values)
{
    struct vs_pod_devs d;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_devices(VS_ANNO_ALLOCATED,
                                        ";GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,+5,-1:;", &d, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_eq(d.n, 2);
    cr_assert_eq(d.ctrs[0].n, 0);
    cr_assert_null(d.ctrs[0].devs);
    cr_assert_eq(d.ctrs[1].n, 2);
    cr_assert_str_eq(d.ctrs[1].devs[0].uuid, "GPU-a");
    cr_assert_str_eq(d.ctrs[1].devs[0].type, "NVIDIA");
    cr_assert_eq(d.ctrs[1].devs[0].usedmem, 3000);
    cr_assert_eq(d.ctrs[1].devs[0].usedcores, 30);
    cr_assert_str_eq(d.ctrs[1].devs[1].uuid, "GPU-b");
    cr_assert_eq(d.ctrs[1].devs[1].usedmem, 5);
    cr_assert_eq(d.ctrs[1].devs[1].usedcores, -1);
    char *s = vs_annot_format_devices(&d);
    cr_assert_str_eq(s, ";GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,5,-1:;");
    free(s);
    vs_pod_devs_cleanup(&d);
    vs_pod_devs_cleanup(NULL);
}

/* Tolerated input that is written back in canonical form. */
ParameterizedTestParameters(devices, normalised)
{
    static const struct rt_case cases[] = {
        {"GPU-a,NVIDIA,3000,30,extra,more:;", "GPU-a,NVIDIA,3000,30:;"},
        {"junk:GPU-a,NVIDIA,1,2::;", "GPU-a,NVIDIA,1,2:;"},
        {"GPU-a,NVIDIA,1,2:", "GPU-a,NVIDIA,1,2:;"},
        {"GPU-a,NVIDIA,1,2", "GPU-a,NVIDIA,1,2:;"},
        {"x;y;", ";;"},
        {":::;", ";"},
        {"GPU-a,NVIDIA,007,+0:;", "GPU-a,NVIDIA,7,0:;"},
    };
    return SHARED_PARAMS(struct rt_case, cases);
}

ParameterizedTest(struct rt_case *c, devices, normalised)
{
    struct vs_pod_devs d;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_devices(VS_ANNO_ALLOCATED, c->in, &d, &eb), VS_OK, "%s: %s", c->in,
                 eb.msg);
    char *s = vs_annot_format_devices(&d);
    cr_assert_str_eq(s, c->out);
    free(s);
    vs_pod_devs_cleanup(&d);
}

#define DEV_PREFIX "invalid " VS_ANNO_ALLOCATED " "

ParameterizedTestParameters(devices, errors)
{
    static const struct err_case cases[] = {
        {"uuid,type,100:;",
         DEV_PREFIX "\"uuid,type,100:;\": device \"uuid,type,100\" has 3 fields, want "
                    "uuid,type,mem,cores"},
        {"a,b:;", DEV_PREFIX "\"a,b:;\": device \"a,b\" has 2 fields, want uuid,type,mem,cores"},
        {";GPU-a,NVIDIA,1,2:GPU-b,NVIDIA:;",
         DEV_PREFIX "\";GPU-a,NVIDIA,1,2:GPU-b,NVIDIA:;\": device \"GPU-b,NVIDIA\" has 2 fields, "
                    "want uuid,type,mem,cores"},
        {"GPU-a,NVIDIA,abc,0:;", DEV_PREFIX "\"GPU-a,NVIDIA,abc,0:;\": memory \"abc\" is not an "
                                            "int32"},
        {"GPU-a,NVIDIA,1.5,0:;", DEV_PREFIX "\"GPU-a,NVIDIA,1.5,0:;\": memory \"1.5\" is not an "
                                            "int32"},
        {"GPU-a,NVIDIA,,0:;", DEV_PREFIX "\"GPU-a,NVIDIA,,0:;\": memory \"\" is not an int32"},
        {"GPU-a,NVIDIA, 1,0:;", DEV_PREFIX "\"GPU-a,NVIDIA, 1,0:;\": memory \" 1\" is not an "
                                           "int32"},
        {"GPU-a,NVIDIA,2147483648,0:;",
         DEV_PREFIX "\"GPU-a,NVIDIA,2147483648,0:;\": memory \"2147483648\" is not an int32"},
        {"GPU-a,NVIDIA,1,x:;", DEV_PREFIX "\"GPU-a,NVIDIA,1,x:;\": cores \"x\" is not an int32"},
        {"GPU-a,NVIDIA,1,-2147483649:;",
         DEV_PREFIX "\"GPU-a,NVIDIA,1,-2147483649:;\": cores \"-2147483649\" is not an int32"},
    };
    return SHARED_PARAMS(struct err_case, cases);
}

ParameterizedTest(struct err_case *c, devices, errors)
{
    struct vs_pod_devs d;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_devices(VS_ANNO_ALLOCATED, c->in, &d, &eb), VS_ERR_PARSE,
                 "accepted %s", c->in);
    cr_assert_str_eq(eb.msg, c->msg);
    cr_assert_null(d.ctrs);
    cr_assert_eq(d.n, 0);
}

Test(devices, error_names_the_key)
{
    struct vs_pod_devs d;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_devices(VS_ANNO_TO_ALLOCATE, "uuid,type,100:;", &d, &eb),
                 VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "invalid hami.io/vgpu-devices-to-allocate \"uuid,type,100:;\": device "
                             "\"uuid,type,100\" has 3 fields, want uuid,type,mem,cores");
}

/* ------------------------------------------------------------------ MIG allocations */

ParameterizedTestParameters(mig, spec_examples_round_trip)
{
    static const struct str_case cases[] = {
        {"[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\",\"profile\":\"1g.5gb\","
         "\"placement\":{\"start\":6,\"size\":1}}]"},
        {"[{\"containerIndex\":0,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\",\"profile\":\"1g.5gb\","
         "\"placement\":{\"start\":6,\"size\":1},\"migUUID\":\"MIG-a\",\"gpuInstanceID\":7,"
         "\"computeInstanceID\":0}]"},
        {"[{\"containerIndex\":1,\"deviceIndex\":0,\"gpuUUID\":\"GPU-a\",\"profile\":\"1g.5gb\","
         "\"placement\":{\"start\":6,\"size\":1}},{\"containerIndex\":1,\"deviceIndex\":1,"
         "\"gpuUUID\":\"GPU-a\",\"profile\":\"2g.10gb\",\"placement\":{\"start\":0,\"size\":2}}]"},
        {"[]"},
    };
    return SHARED_PARAMS(struct str_case, cases);
}

ParameterizedTest(struct str_case *c, mig, spec_examples_round_trip)
{
    struct vs_mig_allocs m;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_mig(c->in, &m, &eb), VS_OK, "%s: %s", c->in, eb.msg);
    char *s = vs_annot_format_mig(&m);
    cr_assert_str_eq(s, c->in);
    free(s);
    vs_mig_allocs_cleanup(&m);
    cr_assert_null(m.items);
    cr_assert_eq(m.n, 0);
}

Test(mig, field_values)
{
    struct vs_mig_allocs m;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_mig("[{\"containerIndex\":2,\"deviceIndex\":1,\"gpuUUID\":"
                                    "\"GPU-a\",\"profile\":\"3g.20gb\",\"placement\":{\"start\":4,"
                                    "\"size\":4}},{\"CONTAINERINDEX\":0,\"gpuuuid\":\"GPU-b\","
                                    "\"Profile\":\"1g.5gb\",\"placement\":{\"start\":6,\"size\":1},"
                                    "\"miguuid\":\"MIG-b\",\"gpuInstanceId\":7,"
                                    "\"computeInstanceId\":0,\"other\":1}]",
                                    &m, &eb),
                 VS_OK, "%s", eb.msg);
    cr_assert_eq(m.n, 2);
    cr_assert_eq(m.items[0].container_index, 2);
    cr_assert_eq(m.items[0].device_index, 1);
    cr_assert_str_eq(m.items[0].gpu_uuid, "GPU-a");
    cr_assert_str_eq(m.items[0].profile, "3g.20gb");
    cr_assert_eq(m.items[0].placement.start, 4);
    cr_assert_eq(m.items[0].placement.size, 4);
    cr_assert_not(m.items[0].has_runtime);
    cr_assert_eq(m.items[1].container_index, 0);
    cr_assert_eq(m.items[1].device_index, 0);
    cr_assert(m.items[1].has_runtime);
    cr_assert_str_eq(m.items[1].mig_uuid, "MIG-b");
    cr_assert_eq(m.items[1].gpu_instance_id, 7);
    cr_assert_eq(m.items[1].compute_instance_id, 0);
    char *s = vs_annot_format_mig(&m);
    cr_assert_str_eq(s,
                     "[{\"containerIndex\":2,\"deviceIndex\":1,\"gpuUUID\":\"GPU-a\",\"profile\":"
                     "\"3g.20gb\",\"placement\":{\"start\":4,\"size\":4}},{\"containerIndex\":0,"
                     "\"deviceIndex\":0,\"gpuUUID\":\"GPU-b\",\"profile\":\"1g.5gb\","
                     "\"placement\":{\"start\":6,\"size\":1},\"migUUID\":\"MIG-b\","
                     "\"gpuInstanceID\":7,\"computeInstanceID\":0}]");
    free(s);
    vs_mig_allocs_cleanup(&m);
    vs_mig_allocs_cleanup(NULL);
}

Test(mig, null_is_empty)
{
    struct vs_mig_allocs m;
    cr_assert_eq(vs_annot_parse_mig("null", &m, NULL), VS_OK);
    cr_assert_eq(m.n, 0);
    cr_assert_null(m.items);
}

#define MIG_PREFIX  "invalid " VS_ANNO_MIG_ALLOC " "
#define MIG_OK_TAIL "\"gpuUUID\":\"g\",\"profile\":\"p\",\"placement\":{\"size\":1}"

ParameterizedTestParameters(mig, errors)
{
    static const struct err_case cases[] = {
        {"", MIG_PREFIX "\"\": unexpected token near end of file at offset 0"},
        {"{}", MIG_PREFIX "\"{}\": expected a JSON array"},
        {"[1]", MIG_PREFIX "\"[1]\": entry 0: entry is not an object"},
        {"[{\"containerIndex\":-1," MIG_OK_TAIL "}]",
         MIG_PREFIX "\"[{\"containerIndex\":-1," MIG_OK_TAIL "}]\": entry 0: field containerIndex: "
                    "integer -1 out of range"},
        {"[{\"deviceIndex\":-1," MIG_OK_TAIL "}]",
         MIG_PREFIX "\"[{\"deviceIndex\":-1," MIG_OK_TAIL "}]\": entry 0: field deviceIndex: "
                    "integer -1 out of range"},
        {"[{\"deviceIndex\":0.0," MIG_OK_TAIL "}]",
         MIG_PREFIX "\"[{\"deviceIndex\":0.0," MIG_OK_TAIL "}]\": entry 0: field deviceIndex: "
                    "expected an integer, got 0.0"},
        {"[{\"gpuUUID\":\"\",\"profile\":\"1g.5gb\",\"placement\":{\"start\":6,\"size\":1}}]",
         MIG_PREFIX "\"[{\"gpuUUID\":\"\",\"profile\":\"1g.5gb\",\"placement\":{\"start\":6,"
                    "\"size\":1}}]\": entry 0: gpuUUID, profile and placement.size > 0 are "
                    "required"},
        {"[{\"gpuUUID\":\"GPU-a\",\"placement\":{\"start\":6,\"size\":1}}]",
         MIG_PREFIX "\"[{\"gpuUUID\":\"GPU-a\",\"placement\":{\"start\":6,\"size\":1}}]\": entry "
                    "0: gpuUUID, profile and placement.size > 0 are required"},
        {"[{\"gpuUUID\":\"GPU-a\",\"profile\":\"p\",\"placement\":{\"start\":6,\"size\":0}}]",
         MIG_PREFIX "\"[{\"gpuUUID\":\"GPU-a\",\"profile\":\"p\",\"placement\":{\"start\":6,"
                    "\"size\":0}}]\": entry 0: gpuUUID, profile and placement.size > 0 are "
                    "required"},
        {"[{\"gpuUUID\":\"GPU-a\",\"profile\":\"p\",\"placement\":{\"size\":-1}}]",
         MIG_PREFIX "\"[{\"gpuUUID\":\"GPU-a\",\"profile\":\"p\",\"placement\":{\"size\":-1}}]\": "
                    "entry 0: gpuUUID, profile and placement.size > 0 are required"},
        {"[{\"gpuUUID\":\"GPU-a\",\"profile\":\"p\"}]",
         MIG_PREFIX "\"[{\"gpuUUID\":\"GPU-a\",\"profile\":\"p\"}]\": entry 0: placement missing"},
        {"[{\"gpuUUID\":\"GPU-a\",\"profile\":\"p\",\"placement\":[6,1]}]",
         MIG_PREFIX "\"[{\"gpuUUID\":\"GPU-a\",\"profile\":\"p\",\"placement\":[6,1]}]\": entry 0: "
                    "placement missing"},
        {"[{" MIG_OK_TAIL ",\"migUUID\":\"MIG-a\"}]",
         MIG_PREFIX "\"[{" MIG_OK_TAIL ",\"migUUID\":\"MIG-a\"}]\": entry 0: migUUID, "
                    "gpuInstanceID and computeInstanceID must be all set or none"},
        {"[{" MIG_OK_TAIL ",\"gpuInstanceID\":7,\"computeInstanceID\":0}]",
         MIG_PREFIX "\"[{" MIG_OK_TAIL ",\"gpuInstanceID\":7,\"computeInstanceID\":0}]\": entry 0: "
                    "migUUID, gpuInstanceID and computeInstanceID must be all set or none"},
        {"[{" MIG_OK_TAIL ",\"migUUID\":\"MIG-a\",\"gpuInstanceID\":7}]",
         MIG_PREFIX "\"[{" MIG_OK_TAIL ",\"migUUID\":\"MIG-a\",\"gpuInstanceID\":7}]\": entry 0: "
                    "migUUID, gpuInstanceID and computeInstanceID must be all set or none"},
        {"[{" MIG_OK_TAIL ",\"migUUID\":\"MIG-a\",\"gpuInstanceID\":-1,\"computeInstanceID\":9}]",
         MIG_PREFIX "\"[{" MIG_OK_TAIL ",\"migUUID\":\"MIG-a\",\"gpuInstanceID\":-1,"
                    "\"computeInstanceID\":9}]\": entry 0: field gpuInstanceID: integer -1 out of "
                    "range"},
        {"[{" MIG_OK_TAIL "},{" MIG_OK_TAIL "}]",
         MIG_PREFIX "\"[{" MIG_OK_TAIL "},{" MIG_OK_TAIL
                    "}]\": entry 1: duplicate containerIndex 0 deviceIndex 0"},
        {"[{\"gpuUUID\":5}]",
         MIG_PREFIX "\"[{\"gpuUUID\":5}]\": entry 0: field gpuUUID: expected a string, got number"},
    };
    return SHARED_PARAMS(struct err_case, cases);
}

ParameterizedTest(struct err_case *c, mig, errors)
{
    struct vs_mig_allocs m;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_mig(c->in, &m, &eb), VS_ERR_PARSE, "accepted %s", c->in);
    cr_assert_str_eq(eb.msg, c->msg);
    cr_assert_null(m.items);
    cr_assert_eq(m.n, 0);
}

/* ------------------------------------------------------------------ lock and RFC 3339 */

struct time_case {
    char in[48];
    enum vs_err code;
    int64_t epoch;
};

ParameterizedTestParameters(lock, rfc3339)
{
    static const struct time_case cases[] = {
        {"1970-01-01T00:00:00Z", VS_OK, 0},
        {"1970-01-01T08:00:00+08:00", VS_OK, 0},
        {"1969-12-31T19:00:00-05:00", VS_OK, 0},
        {"1969-12-31T23:59:59Z", VS_OK, -1},
        {"2026-07-03T07:35:10Z", VS_OK, 1783064110},
        {"2026-07-03T15:35:10+08:00", VS_OK, 1783064110},
        {"2026-07-03T02:35:10-05:00", VS_OK, 1783064110},
        {"2026-07-03T13:05:10+05:30", VS_OK, 1783064110},
        {"2026-07-03T07:35:10.999999999Z", VS_OK, 1783064110},
        {"2026-07-03t07:35:10z", VS_OK, 1783064110},
        {"2000-02-29T12:34:56Z", VS_OK, 951827696},
        {"1969-07-20T20:17:40Z", VS_OK, -14182940},
        {"2024-12-31T23:59:59+00:00", VS_OK, 1735689599},
        {"2023-02-29T00:00:00Z", VS_ERR_PARSE, 0},
        {"1900-02-29T00:00:00Z", VS_ERR_PARSE, 0},
        {"2026-13-01T00:00:00Z", VS_ERR_PARSE, 0},
        {"2026-04-31T00:00:00Z", VS_ERR_PARSE, 0},
        {"2026-07-03T24:00:00Z", VS_ERR_PARSE, 0},
        {"2026-07-03T07:60:00Z", VS_ERR_PARSE, 0},
        {"2026-07-03T07:35:60Z", VS_ERR_PARSE, 0},
        {"2026-07-03T07:35:10", VS_ERR_PARSE, 0},
        {"2026-07-03 07:35:10Z", VS_ERR_PARSE, 0},
        {"2026-07-03T07:35:10+0800", VS_ERR_PARSE, 0},
        {"2026-07-03T07:35:10+08", VS_ERR_PARSE, 0},
        {"2026-07-03T07:35:10.Z", VS_ERR_PARSE, 0},
        {"2026-07-03T07:35:10Zx", VS_ERR_PARSE, 0},
        {"2026-7-3T07:35:10Z", VS_ERR_PARSE, 0},
        {"lock", VS_ERR_PARSE, 0},
        {"", VS_ERR_PARSE, 0},
    };
    return SHARED_PARAMS(struct time_case, cases);
}

ParameterizedTest(struct time_case *c, lock, rfc3339)
{
    int64_t t = 42;
    cr_assert_eq(vs_annot_parse_rfc3339(c->in, &t), c->code, "%s", c->in);
    if (c->code == VS_OK)
        cr_assert_eq(t, c->epoch, "%s: got %lld", c->in, (long long)t);
}

Test(lock, three_part)
{
    struct vs_lock l;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_lock("2026-07-03T15:35:10+08:00,default,gpu-pod-1", &l, &eb), VS_OK,
                 "%s", eb.msg);
    cr_assert_eq(l.time, 1783064110);
    cr_assert_str_eq(l.ns, "default");
    cr_assert_str_eq(l.name, "gpu-pod-1");
    cr_assert_not(l.legacy);
    vs_lock_cleanup(&l);
    cr_assert_null(l.ns);
    cr_assert_null(l.name);
    vs_lock_cleanup(NULL);

    cr_assert_eq(vs_annot_parse_lock("2026-07-03T07:35:10Z,,", &l, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(l.time, 1783064110);
    cr_assert_str_eq(l.ns, "");
    cr_assert_str_eq(l.name, "");
    cr_assert_not(l.legacy);
    vs_lock_cleanup(&l);
}

Test(lock, legacy_bare_timestamp)
{
    struct vs_lock l;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_lock("2026-07-03T07:35:10Z", &l, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(l.time, 1783064110);
    cr_assert(l.legacy);
    cr_assert_str_eq(l.ns, "");
    cr_assert_str_eq(l.name, "");
    vs_lock_cleanup(&l);
}

#define LOCK_PREFIX "invalid " VS_ANNO_LOCK " "

ParameterizedTestParameters(lock, errors)
{
    static const struct err_case cases[] = {
        {"lock", LOCK_PREFIX "\"lock\": not an RFC 3339 time"},
        {"", LOCK_PREFIX "\"\": not an RFC 3339 time"},
        {"2026-07-03T07:35:10", LOCK_PREFIX "\"2026-07-03T07:35:10\": not an RFC 3339 time"},
        {"garbage,ns,name", LOCK_PREFIX "\"garbage,ns,name\": not an RFC 3339 time"},
        {"2026-07-03 07:35:10Z,ns,name",
         LOCK_PREFIX "\"2026-07-03 07:35:10Z,ns,name\": not an RFC 3339 time"},
        {"2026-07-03T07:35:10Z,ns", LOCK_PREFIX "\"2026-07-03T07:35:10Z,ns\": want "
                                                "<time>,<namespace>,<pod>"},
        {"2026-07-03T07:35:10Z,ns,name,x",
         LOCK_PREFIX "\"2026-07-03T07:35:10Z,ns,name,x\": want <time>,<namespace>,<pod>"},
        {"0000000000000000000000000000000000000000000000000000000000000000000000,a,b",
         LOCK_PREFIX "\"0000000000000000000000000000000000000000000000000000000000000000000000,a,"
                     "b\": not an RFC 3339 time"},
    };
    return SHARED_PARAMS(struct err_case, cases);
}

ParameterizedTest(struct err_case *c, lock, errors)
{
    struct vs_lock l;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_lock(c->in, &l, &eb), VS_ERR_PARSE, "accepted %s", c->in);
    cr_assert_str_eq(eb.msg, c->msg);
    cr_assert_null(l.ns);
    cr_assert_null(l.name);
}

struct fmt_case {
    int64_t now;
    char out[64];
};

ParameterizedTestParameters(lock, format)
{
    static const struct fmt_case cases[] = {
        {0, "1970-01-01T00:00:00Z,ns,name"},
        {-1, "1969-12-31T23:59:59Z,ns,name"},
        {1783064110, "2026-07-03T07:35:10Z,ns,name"},
        {951827696, "2000-02-29T12:34:56Z,ns,name"},
        {-14182940, "1969-07-20T20:17:40Z,ns,name"},
        {1735689599, "2024-12-31T23:59:59Z,ns,name"},
        {253402300799, "9999-12-31T23:59:59Z,ns,name"},
    };
    return SHARED_PARAMS(struct fmt_case, cases);
}

ParameterizedTest(struct fmt_case *c, lock, format)
{
    char *s = vs_annot_format_lock(c->now, "ns", "name");
    cr_assert_str_eq(s, c->out);
    struct vs_lock l;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_lock(s, &l, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(l.time, c->now);
    cr_assert_str_eq(l.ns, "ns");
    cr_assert_str_eq(l.name, "name");
    vs_lock_cleanup(&l);
    free(s);
}

Test(lock, format_a6_11_value)
{
    char *s = vs_annot_format_lock(1783064110, "hami-ns", "hami");
    cr_assert_str_eq(s, "2026-07-03T07:35:10Z,hami-ns,hami");
    free(s);
}

/* ------------------------------------------------------------------ weights */

struct w_case {
    char in[64];
    int64_t slot, core, mem;
};

ParameterizedTestParameters(weights, ok)
{
    static const struct w_case cases[] = {
        {"slot=1,core=2,memory=3", 1, 2, 3},           /* A6.1 */
        {" memory = 3, slot = 1, core = 0 ", 1, 0, 3}, /* A6.2 */
        {"core=0,memory=0,slot=7", 7, 0, 0},
        {"slot=+1,core=0,memory=9223372036854775807", 1, 0, INT64_MAX},
        {"slot=\t2\t,core=1,memory=1", 2, 1, 1},
    };
    return SHARED_PARAMS(struct w_case, cases);
}

ParameterizedTest(struct w_case *c, weights, ok)
{
    struct vs_weights w;
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_weights(c->in, &w, &eb), VS_OK, "%s: %s", c->in, eb.msg);
    cr_assert_eq(w.slot, c->slot);
    cr_assert_eq(w.core, c->core);
    cr_assert_eq(w.mem, c->mem);
}

Test(weights, absent_is_default)
{
    struct vs_weights w = {9, 9, 9};
    cr_assert_eq(vs_annot_parse_weights(NULL, &w, NULL), VS_OK);
    cr_assert_eq(w.slot, 1);
    cr_assert_eq(w.core, 1);
    cr_assert_eq(w.mem, 1);
}

#define W_PREFIX "invalid " VS_ANNO_WEIGHTS " annotation "

ParameterizedTestParameters(weights, errors)
{
    static const struct err_case cases[] = {
        /* A6.3 */
        {"slot=1,core,memory=3", W_PREFIX "\"slot=1,core,memory=3\": expected key=value entries"},
        {"slot=1,bandwidth=2,memory=3",
         W_PREFIX "\"slot=1,bandwidth=2,memory=3\": unknown weight \"bandwidth\""},
        {"slot=1,slot=2,memory=3", W_PREFIX "\"slot=1,slot=2,memory=3\": duplicate \"slot\" "
                                            "weight"},
        {"slot=1,core=-1,memory=3",
         W_PREFIX "\"slot=1,core=-1,memory=3\": \"core\" weight must not be negative"},
        /* §1.10 */
        {"slot=1,memory=3", W_PREFIX "\"slot=1,memory=3\": expected slot, core, and memory "
                                     "weights"},
        {"slot=0,core=0,memory=0",
         W_PREFIX "\"slot=0,core=0,memory=0\": at least one weight must be positive"},
        {"", W_PREFIX "\"\": expected slot, core, and memory weights"},
        {"slot=1,core=1,memory=1,",
         W_PREFIX "\"slot=1,core=1,memory=1,\": expected slot, core, and memory weights"},
        {"slot=1,core=1,memory=1,gpu=1",
         W_PREFIX "\"slot=1,core=1,memory=1,gpu=1\": expected slot, core, and memory weights"},
        {"Slot=1,core=1,memory=1", W_PREFIX "\"Slot=1,core=1,memory=1\": unknown weight \"Slot\""},
        {"slot=1,,memory=1", W_PREFIX "\"slot=1,,memory=1\": expected key=value entries"},
        {"=1,core=1,memory=1", W_PREFIX "\"=1,core=1,memory=1\": unknown weight \"\""},
        {"slot=x,core=1,memory=1",
         W_PREFIX "\"slot=x,core=1,memory=1\": \"slot\" weight \"x\" is not an integer"},
        {"slot=1.5,core=1,memory=1",
         W_PREFIX "\"slot=1.5,core=1,memory=1\": \"slot\" weight \"1.5\" is not an integer"},
        {"slot=,core=1,memory=1",
         W_PREFIX "\"slot=,core=1,memory=1\": \"slot\" weight \"\" is not an integer"},
        {"slot=1,core=1,memory=9223372036854775808",
         W_PREFIX "\"slot=1,core=1,memory=9223372036854775808\": \"memory\" weight "
                  "\"9223372036854775808\" is not an integer"},
        {"slot=1=2,core=1,memory=1",
         W_PREFIX "\"slot=1=2,core=1,memory=1\": \"slot\" weight \"1=2\" is not an integer"},
    };
    return SHARED_PARAMS(struct err_case, cases);
}

ParameterizedTest(struct err_case *c, weights, errors)
{
    struct vs_weights w = {9, 9, 9};
    struct vs_errbuf eb = {{0}};
    cr_assert_eq(vs_annot_parse_weights(c->in, &w, &eb), VS_ERR_PARSE, "accepted %s", c->in);
    cr_assert_str_eq(eb.msg, c->msg);
}

/* ------------------------------------------------------------------ Go ParseBool */

struct bool_case {
    char in[16];
    enum vs_err code;
    bool val;
};

ParameterizedTestParameters(parse_bool, go_semantics)
{
    static const struct bool_case cases[] = {
        {"1", VS_OK, true},         {"t", VS_OK, true},         {"T", VS_OK, true},
        {"TRUE", VS_OK, true},      {"true", VS_OK, true},      {"True", VS_OK, true},
        {"0", VS_OK, false},        {"f", VS_OK, false},        {"F", VS_OK, false},
        {"FALSE", VS_OK, false},    {"false", VS_OK, false},    {"False", VS_OK, false},
        {"tRUE", VS_ERR_PARSE, 0},  {"yes", VS_ERR_PARSE, 0},   {"", VS_ERR_PARSE, 0},
        {" true", VS_ERR_PARSE, 0}, {"true ", VS_ERR_PARSE, 0}, {"2", VS_ERR_PARSE, 0},
        {"on", VS_ERR_PARSE, 0},    {"fALSE", VS_ERR_PARSE, 0}, {"truee", VS_ERR_PARSE, 0},
    };
    return SHARED_PARAMS(struct bool_case, cases);
}

ParameterizedTest(struct bool_case *c, parse_bool, go_semantics)
{
    bool b = !c->val;
    cr_assert_eq(vs_annot_parse_bool(c->in, &b), c->code, "\"%s\"", c->in);
    if (c->code == VS_OK)
        cr_assert_eq(b, c->val, "\"%s\"", c->in);
}
