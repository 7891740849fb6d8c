/* Criterion tests for core/json_write: ctq_json_write_python against golden
 * texts written by CPython 3.11's json.dumps (the literals below were
 * generated with python3 on the development machine: each input parsed with
 * json.loads, integral floats within 2^53 turned into ints and ints beyond
 * 2^53 into floats, as cJSON keeps doubles only, then json.dumps(obj,
 * indent=..., sort_keys=...)). Indent -1 stands for Python's indent=None. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/arena.h"
#include "core/json.h"
#include "core/json_write.h"

struct golden {
	const char *id;
	const char *input;  /* JSON text cJSON parses */
	int indent;
	bool sort_keys;
	const char *expect; /* json.dumps output */
};

static const struct golden goldens[] = {
	{"config", "{\"architectures\":[\"Qwen3ForCausalLM\"],\"attention_bias\":false,\"head_dim\":128,\"rms_norm_eps\":1e-06,\"rope_theta\":1000000,\"rope_scaling\":null,\"tie_word_embeddings\":true,\"initializer_range\":0.02,\"torch_dtype\":\"bfloat16\",\"quantization_config\":{\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":{\"observer_kwargs\":{},\"num_bits\":8,\"dynamic\":false}}},\"ignore\":[\"lm_head\"],\"sparsity_config\":{},\"version\":\"0.14.0\"},\"empty_list\":[]}", 2, true,
	 "{\n"
		"  \"architectures\": [\n"
		"    \"Qwen3ForCausalLM\"\n"
		"  ],\n"
		"  \"attention_bias\": false,\n"
		"  \"empty_list\": [],\n"
		"  \"head_dim\": 128,\n"
		"  \"initializer_range\": 0.02,\n"
		"  \"quantization_config\": {\n"
		"    \"config_groups\": {\n"
		"      \"group_0\": {\n"
		"        \"targets\": [\n"
		"          \"Linear\"\n"
		"        ],\n"
		"        \"weights\": {\n"
		"          \"dynamic\": false,\n"
		"          \"num_bits\": 8,\n"
		"          \"observer_kwargs\": {}\n"
		"        }\n"
		"      }\n"
		"    },\n"
		"    \"ignore\": [\n"
		"      \"lm_head\"\n"
		"    ],\n"
		"    \"sparsity_config\": {},\n"
		"    \"version\": \"0.14.0\"\n"
		"  },\n"
		"  \"rms_norm_eps\": 1e-06,\n"
		"  \"rope_scaling\": null,\n"
		"  \"rope_theta\": 1000000,\n"
		"  \"tie_word_embeddings\": true,\n"
		"  \"torch_dtype\": \"bfloat16\"\n"
		"}"},
	{"config_unsorted", "{\"b\":1,\"a\":{\"d\":[1,2,{}],\"c\":[]},\"Z\":null}", 2, false,
	 "{\n"
		"  \"b\": 1,\n"
		"  \"a\": {\n"
		"    \"d\": [\n"
		"      1,\n"
		"      2,\n"
		"      {}\n"
		"    ],\n"
		"    \"c\": []\n"
		"  },\n"
		"  \"Z\": null\n"
		"}"},
	{"compact", "{\"b\":[1,2.5,[]],\"a\":{\"x\":{},\"y\":\"s\"}}", -1, true,
	 "{\"a\": {\"x\": {}, \"y\": \"s\"}, \"b\": [1, 2.5, []]}"},
	{"indent4", "[1,[2,[3,{}]],{\"k\":[]}]", 4, true,
	 "[\n"
		"    1,\n"
		"    [\n"
		"        2,\n"
		"        [\n"
		"            3,\n"
		"            {}\n"
		"        ]\n"
		"    ],\n"
		"    {\n"
		"        \"k\": []\n"
		"    }\n"
		"]"},
	{"indent0", "{\"a\":[1,{\"b\":2}]}", 0, true,
	 "{\n"
		"\"a\": [\n"
		"1,\n"
		"{\n"
		"\"b\": 2\n"
		"}\n"
		"]\n"
		"}"},
	{"strings", "[\"quote\\\" back\\\\ nl\\n cr\\r tab\\t bs\\b ff\\f\", \"ctrl\\u0001\\u001f del\\u007f sp ~\", \"\\u00e9\\u00fc \\u4e2d \\ud83d\\ude00 /slash\", \"\"]", 2, true,
	 "[\n"
		"  \"quote\\\" back\\\\ nl\\n cr\\r tab\\t bs\\b ff\\f\",\n"
		"  \"ctrl\\u0001\\u001f del\\u007f sp ~\",\n"
		"  \"\\u00e9\\u00fc \\u4e2d \\ud83d\\ude00 /slash\",\n"
		"  \"\"\n"
		"]"},
	{"keys", "{\"b\":1,\"a\":2,\"B\":3,\"\\u00e9\":4,\"_\":5,\"10\":6,\"2\":7,\"a\\nb\":8,\"\":9}", 2, true,
	 "{\n"
		"  \"\": 9,\n"
		"  \"10\": 6,\n"
		"  \"2\": 7,\n"
		"  \"B\": 3,\n"
		"  \"_\": 5,\n"
		"  \"a\": 2,\n"
		"  \"a\\nb\": 8,\n"
		"  \"b\": 1,\n"
		"  \"\\u00e9\": 4\n"
		"}"},
	{"numbers", "[0,-0,1,-1,9007199254740992,-9007199254740992,9007199254740994,9.1e15,1e16,1.5e300,1e-5,0.0001,0.1,0.3333333333333333,2.5e-7,123456.789,1e22,5e-324,1.7976931348623157e308,-1e-100,0.30000000000000004,100.5,1e-06,0.02,3.14159,-2.5e-05,1234567890123.25,1e15,0.001,12345678901234567890]", 2, true,
	 "[\n"
		"  0,\n"
		"  0,\n"
		"  1,\n"
		"  -1,\n"
		"  9007199254740992,\n"
		"  -9007199254740992,\n"
		"  9007199254740994.0,\n"
		"  9100000000000000.0,\n"
		"  1e+16,\n"
		"  1.5e+300,\n"
		"  1e-05,\n"
		"  0.0001,\n"
		"  0.1,\n"
		"  0.3333333333333333,\n"
		"  2.5e-07,\n"
		"  123456.789,\n"
		"  1e+22,\n"
		"  5e-324,\n"
		"  1.7976931348623157e+308,\n"
		"  -1e-100,\n"
		"  0.30000000000000004,\n"
		"  100.5,\n"
		"  1e-06,\n"
		"  0.02,\n"
		"  3.14159,\n"
		"  -2.5e-05,\n"
		"  1234567890123.25,\n"
		"  1000000000000000,\n"
		"  0.001,\n"
		"  1.2345678901234567e+19\n"
		"]"},
	{"nested", "[[[]],{\"a\":[{}]},[[1]],{}]", 2, true,
	 "[\n"
		"  [\n"
		"    []\n"
		"  ],\n"
		"  {\n"
		"    \"a\": [\n"
		"      {}\n"
		"    ]\n"
		"  },\n"
		"  [\n"
		"    [\n"
		"      1\n"
		"    ]\n"
		"  ],\n"
		"  {}\n"
		"]"},
	{"utf8_raw", "{\"k\": \"caf\xc3""\xa9"" \xf0""\x9f""\x98""\x80"" \xe4""\xb8""\xad""\"}", 2, true,
	 "{\n"
		"  \"k\": \"caf\\u00e9 \\ud83d\\ude00 \\u4e2d\"\n"
		"}"},
	{"scalars", "[true,false,null,\"x\"]", -1, false,
	 "[true, false, null, \"x\"]"},
};

static char *dump(const cJSON *v, int indent, bool sort_keys, enum ctq_status *st)
{
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	*st = ctq_json_write_python(v, indent, sort_keys, &sb);
	char *s = strdup(ctq_strbuf_str(&sb));
	ctq_strbuf_free(&sb);
	return s;
}

/* The first byte where two texts differ, for failure messages. */
static size_t first_diff(const char *a, const char *b)
{
	size_t i = 0;
	while (a[i] && a[i] == b[i])
		i++;
	return i;
}

Test(json_write, matches_python_json_dumps)
{
	for (size_t i = 0; i < sizeof goldens / sizeof *goldens; i++) {
		const struct golden *g = &goldens[i];
		cJSON *v = NULL;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_json_parse(g->input, strlen(g->input), g->id, NULL, &v, &err),
			     CTQ_OK, "%s: %s", g->id, err.message);
		enum ctq_status st;
		char *got = dump(v, g->indent, g->sort_keys, &st);
		cr_assert_eq(st, CTQ_OK, "%s: status %s", g->id, ctq_status_name(st));
		size_t d = first_diff(got, g->expect);
		cr_expect_str_eq(got, g->expect, "%s: differs at byte %zu:\n got: %s\nwant: %s",
				 g->id, d, got + d, g->expect + d);
		/* What was written reads back as the same value. */
		cJSON *back = NULL;
		cr_assert_eq(ctq_json_parse(got, strlen(got), g->id, NULL, &back, &err), CTQ_OK,
			     "%s: output does not parse: %s", g->id, err.message);
		cr_expect(cJSON_Compare(v, back, true), "%s: round trip changed the value", g->id);
		cJSON_Delete(back);
		cJSON_Delete(v);
		free(got);
	}
}

Test(json_write, non_finite_numbers_as_python_writes_them)
{
	cJSON *a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateNumber(NAN));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(INFINITY));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(-INFINITY));
	enum ctq_status st;
	char *got = dump(a, -1, true, &st);
	cr_assert_eq(st, CTQ_OK);
	cr_expect_str_eq(got, "[NaN, Infinity, -Infinity]"); /* python3: json.dumps([nan, inf, -inf]) */
	free(got);
	cJSON_Delete(a);
}

Test(json_write, appends_to_what_the_buffer_holds)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "a", 1);
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	ctq_strbuf_append(&sb, "x=");
	cr_assert_eq(ctq_json_write_python(o, 2, true, &sb), CTQ_OK);
	cr_expect_str_eq(ctq_strbuf_str(&sb), "x={\n  \"a\": 1\n}");
	ctq_strbuf_free(&sb);
	cJSON_Delete(o);
}

/* Strings Python could not hold: not UTF-8 (a lone continuation byte, an
 * overlong '/', an encoded surrogate, a code point past U+10FFFF, a cut
 * sequence). Each is refused as a parse-error. */
Test(json_write, refuses_invalid_utf8_and_raw_items)
{
	static const char *const bad[] = {"a\x80", "\xc0\xaf", "\xed\xa0\x80",
					  "\xf4\x90\x80\x80", "ok\xe4\xb8"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "k", bad[i]);
		enum ctq_status st;
		char *got = dump(o, 2, true, &st);
		cr_expect_eq(st, CTQ_ERR_PARSE, "case %zu: got %s", i, ctq_status_name(st));
		free(got);
		/* The same bytes as a key. */
		cJSON *k = cJSON_CreateObject();
		cJSON_AddNullToObject(k, bad[i]);
		got = dump(k, 2, true, &st);
		cr_expect_eq(st, CTQ_ERR_PARSE, "key case %zu: got %s", i, ctq_status_name(st));
		free(got);
		cJSON_Delete(k);
		cJSON_Delete(o);
	}
	cJSON *raw = cJSON_CreateRaw("{}");
	enum ctq_status st;
	char *got = dump(raw, 2, true, &st);
	cr_expect_eq(st, CTQ_ERR_PARSE);
	free(got);
	cJSON_Delete(raw);
	got = dump(NULL, 2, true, &st);
	cr_expect_eq(st, CTQ_ERR_PARSE);
	free(got);
}

Test(json_write, out_of_memory_is_reported)
{
	cJSON *v = NULL;
	const char *text = goldens[0].input;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_parse(text, strlen(text), "t", NULL, &v, &err), CTQ_OK);
	/* Fail the Nth allocation for every N until the write succeeds: each
	 * failure must be reported, never a truncated text passed as whole. */
	bool done = false;
	for (long n = 0; n < 200 && !done; n++) {
		struct ctq_strbuf sb;
		ctq_strbuf_init(&sb);
		ctq_alloc_fail_after(n);
		enum ctq_status st = ctq_json_write_python(v, 2, true, &sb);
		ctq_alloc_fail_after(-1);
		if (st == CTQ_OK) {
			cr_expect_str_eq(ctq_strbuf_str(&sb), goldens[0].expect);
			done = true;
		} else {
			cr_expect_eq(st, CTQ_ERR_NOMEM, "n=%ld: got %s", n, ctq_status_name(st));
		}
		ctq_strbuf_free(&sb);
	}
	cr_expect(done, "never succeeded within 200 allocations");
	cJSON_Delete(v);
}
