/* ctq JSON hygiene (see json.h). */
#include "core/json.h"
#include "core/arena.h"
#include "core/fileio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct ctq_json_limits ctq_json_default_limits = {
	.max_depth = CTQ_JSON_MAX_DEPTH,
	.max_string = CTQ_JSON_MAX_STRING,
};

static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Pre-scan: nesting depth and string lengths, so the error is precise and
 * cJSON's recursion is bounded before it starts. */
static enum ctq_status prescan(const char *text, size_t len, const char *file,
			       const struct ctq_json_limits *lim,
			       struct ctq_error *err)
{
	int depth = 0;
	bool in_str = false, esc = false;
	size_t str_start = 0;
	char path[CTQ_PATH_MAX];
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"') {
				in_str = false;
				if (i - str_start - 1 > lim->max_string) {
					size_t l, col;
					line_col(text, str_start, &l, &col);
					snprintf(path, sizeof path, "%s:%zu", file,
						 str_start);
					return ctq_error_set(
						err, CTQ_ERR_PARSE, path,
						"string of %zu bytes at line %zu column %zu; at most %zu are accepted",
						i - str_start - 1, l, col,
						lim->max_string);
				}
			}
			continue;
		}
		if (c == '"') {
			in_str = true;
			str_start = i;
		} else if (c == '[' || c == '{') {
			if (++depth > lim->max_depth) {
				size_t l, col;
				line_col(text, i, &l, &col);
				snprintf(path, sizeof path, "%s:%zu", file, i);
				return ctq_error_set(
					err, CTQ_ERR_PARSE, path,
					"JSON nested deeper than %d levels (line %zu column %zu)",
					lim->max_depth, l, col);
			}
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return CTQ_OK;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum ctq_status check_dups(const cJSON *item, const char *path,
				  struct ctq_error *err)
{
	if (cJSON_IsObject(item)) {
		size_t n = 0;
		for (const cJSON *c = item->child; c; c = c->next)
			n++;
		if (n > 1) {
			char **names = ctq_malloc(n * sizeof *names);
			if (!names)
				return ctq_error_set(err, CTQ_ERR_NOMEM, path,
						     "out of memory");
			size_t i = 0;
			for (const cJSON *c = item->child; c; c = c->next)
				names[i++] = c->string;
			qsort(names, n, sizeof *names, cmp_strp);
			const char *dup = NULL;
			for (i = 1; i < n && !dup; i++)
				if (strcmp(names[i - 1], names[i]) == 0)
					dup = names[i];
			if (dup) {
				char p[CTQ_PATH_MAX];
				ctq_json_path_key(p, sizeof p, path, dup);
				ctq_error_set(err, CTQ_ERR_PARSE, p,
					      "duplicate key \"%s\"; each key may appear once in an object",
					      dup);
				free(names);
				return CTQ_ERR_PARSE;
			}
			free(names);
		}
		for (const cJSON *c = item->child; c; c = c->next) {
			char p[CTQ_PATH_MAX];
			ctq_json_path_key(p, sizeof p, path, c->string);
			enum ctq_status st = check_dups(c, p, err);
			if (st)
				return st;
		}
	} else if (cJSON_IsArray(item)) {
		size_t i = 0;
		for (const cJSON *c = item->child; c; c = c->next, i++) {
			if (!cJSON_IsObject(c) && !cJSON_IsArray(c))
				continue;
			char p[CTQ_PATH_MAX];
			ctq_json_path_index(p, sizeof p, path, i);
			enum ctq_status st = check_dups(c, p, err);
			if (st)
				return st;
		}
	}
	return CTQ_OK;
}

enum ctq_status ctq_json_parse(const char *text, size_t len, const char *file,
			       const struct ctq_json_limits *limits,
			       cJSON **out, struct ctq_error *err)
{
	*out = NULL;
	const struct ctq_json_limits *lim =
		limits ? limits : &ctq_json_default_limits;
	if (!file)
		file = "<input>";
	enum ctq_status st = prescan(text, len, file, lim, err);
	if (st)
		return st;
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (root && end) {
		/* Only whitespace may follow the value. */
		const char *p = end, *stop = text + len;
		while (p < stop && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if (p < stop) {
			cJSON_Delete(root);
			root = NULL;
			end = p;
		}
	}
	if (!root) {
		size_t off = end && end >= text ? (size_t)(end - text) : 0;
		if (off > len)
			off = len;
		size_t l, c;
		line_col(text, off, &l, &c);
		char path[CTQ_PATH_MAX];
		snprintf(path, sizeof path, "%s:%zu", file, off);
		if (len == 0)
			return ctq_error_set(err, CTQ_ERR_PARSE, path,
					     "empty file; expected a JSON value");
		return ctq_error_set(err, CTQ_ERR_PARSE, path,
				     "invalid JSON at line %zu column %zu (byte %zu)",
				     l, c, off);
	}
	st = check_dups(root, "", err);
	if (st) {
		cJSON_Delete(root);
		return st;
	}
	*out = root;
	return CTQ_OK;
}

/* ctq_json_load_file's ctq_file_parse_fn. */
struct json_load {
	const struct ctq_json_limits *limits;
	cJSON **out;
};

static enum ctq_status parse_loaded(void *ctx, const char *text, size_t len, const char *path,
				    struct ctq_error *err)
{
	const struct json_load *j = ctx;
	return ctq_json_parse(text, len, path, j->limits, j->out, err);
}

enum ctq_status ctq_json_load_file(const char *path, size_t max_bytes,
				   const struct ctq_json_limits *limits,
				   cJSON **out, struct ctq_error *err)
{
	struct json_load j = {limits, out};
	*out = NULL;
	return ctq_file_parse(path, max_bytes, parse_loaded, &j, err);
}

const cJSON *ctq_json_get(const cJSON *obj, const char *key)
{
	if (!cJSON_IsObject(obj))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

const char *ctq_json_type_name(const cJSON *item)
{
	static const struct {
		cJSON_bool (*is)(const cJSON *);
		const char *name;
	} kinds[] = {
		{cJSON_IsObject, "object"}, {cJSON_IsArray, "array"}, {cJSON_IsString, "string"},
		{cJSON_IsNumber, "number"}, {cJSON_IsTrue, "true"},   {cJSON_IsFalse, "false"},
		{cJSON_IsNull, "null"},
	};
	if (!item)
		return "missing";
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (kinds[i].is(item))
			return kinds[i].name;
	return "invalid";
}

void ctq_json_path_key(char *dst, size_t cap, const char *base, const char *key)
{
	if (!base || !*base)
		snprintf(dst, cap, "%s", key);
	else
		snprintf(dst, cap, "%s.%s", base, key);
}

void ctq_json_path_index(char *dst, size_t cap, const char *base, size_t i)
{
	snprintf(dst, cap, "%s[%zu]", base ? base : "", i);
}

enum ctq_status ctq_json_int(const cJSON *item, const char *path, long min,
			     long max, long *out, struct ctq_error *err)
{
	if (!cJSON_IsNumber(item))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
				     "is %s; expected an integer",
				     ctq_json_type_name(item));
	double v = item->valuedouble;
	if (!isfinite(v) || v != floor(v))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
				     "is %g; expected an integer", v);
	if (v < (double)min || v > (double)max)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
				     "is %.0f; expected an integer in [%ld, %ld]",
				     v, min, max);
	*out = (long)v;
	return CTQ_OK;
}
