/* ctq JSON hygiene over cJSON: parsing with a depth bound, a string-length
 * bound and duplicate-key rejection (cJSON accepts duplicates silently),
 * case-sensitive lookup, range-checked integers, and JSON paths for errors.
 *
 * Paths are written from the root of the file: `a.b[2].c`.
 */
#ifndef CTQ_CORE_JSON_H
#define CTQ_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"

#define CTQ_JSON_MAX_DEPTH 256
#define CTQ_JSON_MAX_STRING ((size_t)64 * 1024)

struct ctq_json_limits {
	int max_depth;       /* nesting of arrays and objects */
	size_t max_string;   /* bytes in one string (keys included) */
};

extern const struct ctq_json_limits ctq_json_default_limits;

/* Parses len bytes of text. On failure the error is a parse-error at
 * `file:offset` (or the JSON path of a duplicate key / long string).
 * *out is owned by the caller (cJSON_Delete). limits may be NULL. */
enum ctq_status ctq_json_parse(const char *text, size_t len, const char *file,
			       const struct ctq_json_limits *limits,
			       cJSON **out, struct ctq_error *err);

/* Reads and parses a file of at most max_bytes. */
enum ctq_status ctq_json_load_file(const char *path, size_t max_bytes,
				   const struct ctq_json_limits *limits,
				   cJSON **out, struct ctq_error *err);

/* Case-sensitive member lookup; NULL when obj is not an object. */
const cJSON *ctq_json_get(const cJSON *obj, const char *key);

/* "object", "array", "string", "number", "true", "false", "null". */
const char *ctq_json_type_name(const cJSON *item);

/* dst = base.key (or key when base is empty). Truncates at cap. */
void ctq_json_path_key(char *dst, size_t cap, const char *base, const char *key);
/* dst = base[i]. */
void ctq_json_path_index(char *dst, size_t cap, const char *base, size_t i);

/* Integral number within [min, max], checked on valuedouble (valueint
 * saturates). invalid-config at path otherwise. */
enum ctq_status ctq_json_int(const cJSON *item, const char *path, long min,
			     long max, long *out, struct ctq_error *err);

#endif
