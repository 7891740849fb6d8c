/* Criterion tests for core/json: JSON hygiene on untrusted input. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

static enum ctq_status parse(const char *text, struct ctq_error *err)
{
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_parse(text, strlen(text), "f.json", NULL, &root, err);
	cJSON_Delete(root);
	return st;
}

Test(json, accepts_trailing_whitespace)
{
	struct ctq_error err = {0};
	cr_assert_eq(parse("{\"a\": 1}\n\n  ", &err), CTQ_OK, "%s", err.message);
}

Test(json, rejects_trailing_garbage_with_offset)
{
	struct ctq_error err = {0};
	cr_assert_eq(parse("{\"a\": 1} x", &err), CTQ_ERR_PARSE);
	cr_assert_str_eq(err.path, "f.json:9");
}

Test(json, rejects_invalid_json_with_line_and_column)
{
	struct ctq_error err = {0};
	cr_assert_eq(parse("{\n  \"a\": [1, 2,,]\n}", &err), CTQ_ERR_PARSE);
	cr_assert(strstr(err.message, "line 2"), "%s", err.message);
}

Test(json, rejects_empty_input)
{
	struct ctq_error err = {0};
	cr_assert_eq(parse("", &err), CTQ_ERR_PARSE);
	cr_assert(strstr(err.message, "empty"), "%s", err.message);
}

Test(json, rejects_duplicate_keys_with_path)
{
	struct ctq_error err = {0};
	cr_assert_eq(parse("{\"q\": {\"groups\": [{\"a\": 1, \"b\": 2, \"a\": 3}]}}", &err),
		     CTQ_ERR_PARSE);
	cr_assert_str_eq(err.path, "q.groups[0].a");
	cr_assert(strstr(err.message, "duplicate key"), "%s", err.message);
}

Test(json, keys_are_case_sensitive_not_duplicates)
{
	struct ctq_error err = {0};
	cJSON *root = NULL;
	const char *t = "{\"Targets\": 1, \"targets\": 2}";
	cr_assert_eq(ctq_json_parse(t, strlen(t), "f", NULL, &root, &err), CTQ_OK);
	cr_assert_eq(ctq_json_get(root, "targets")->valuedouble, 2);
	cr_assert_eq(ctq_json_get(root, "Targets")->valuedouble, 1);
	cr_assert_null(ctq_json_get(root, "TARGETS"));
	cJSON_Delete(root);
}

Test(json, rejects_deep_nesting_without_recursing)
{
	size_t depth = 10000;
	char *t = malloc(2 * depth + 1);
	memset(t, '[', depth);
	memset(t + depth, ']', depth);
	t[2 * depth] = '\0';
	struct ctq_error err = {0};
	cr_assert_eq(parse(t, &err), CTQ_ERR_PARSE);
	cr_assert(strstr(err.message, "nested deeper"), "%s", err.message);
	free(t);
}

Test(json, rejects_a_ten_megabyte_string)
{
	size_t n = 10u << 20;
	char *t = malloc(n + 16);
	strcpy(t, "{\"a\": \"");
	memset(t + 7, 'x', n);
	strcpy(t + 7 + n, "\"}");
	struct ctq_error err = {0};
	cr_assert_eq(parse(t, &err), CTQ_ERR_PARSE);
	cr_assert(strstr(err.message, "string of 10485760 bytes"), "%s", err.message);
	free(t);
}

Test(json, escaped_quotes_do_not_end_strings)
{
	struct ctq_error err = {0};
	cr_assert_eq(parse("{\"a\": \"x\\\"]]]]\"}", &err), CTQ_OK, "%s", err.message);
}

Test(json, int_checks_range_on_the_double)
{
	struct ctq_error err = {0};
	long v = 0;
	cJSON *n = cJSON_CreateNumber(1e12);
	cr_assert_eq(ctq_json_int(n, "x.num_bits", 0, 2147483647, &v, &err), CTQ_ERR_INVALID_CONFIG);
	cr_assert_str_eq(err.path, "x.num_bits");
	cJSON_Delete(n);
	ctq_error_clear(&err);
	n = cJSON_CreateNumber(8.5);
	cr_assert_eq(ctq_json_int(n, "x", 0, 100, &v, &err), CTQ_ERR_INVALID_CONFIG);
	cJSON_Delete(n);
	ctq_error_clear(&err);
	n = cJSON_CreateNumber(-1);
	cr_assert_eq(ctq_json_int(n, "x", -1, 100, &v, &err), CTQ_OK);
	cr_assert_eq(v, -1);
	cJSON_Delete(n);
	n = cJSON_CreateString("8");
	cr_assert_eq(ctq_json_int(n, "x", 0, 100, &v, &err), CTQ_ERR_INVALID_CONFIG);
	cJSON_Delete(n);
}

Test(json, first_error_wins)
{
	struct ctq_error err = {0};
	ctq_error_set(&err, CTQ_ERR_PARSE, "a", "first");
	ctq_error_set(&err, CTQ_ERR_IO, "b", "second");
	cr_assert_eq(err.status, CTQ_ERR_PARSE);
	cr_assert_str_eq(err.message, "first");
}
