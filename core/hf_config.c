#include "core/hf_config.h"

#include <stdbool.h>
#include <stdio.h>

#include "core/arena.h"
#include "core/fileio.h"

enum ctq_status ctq_hf_config_load(const char *path, cJSON **root, char sha_hex[CTQ_SHA256_HEX],
				   char *file, size_t cap, struct ctq_error *err)
{
	*root = NULL;
	char *joined = NULL;
	if (ctq_path_is_dir(path) && !(joined = ctq_path_join(path, "config.json")))
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	const char *where = joined ? joined : path;
	if (file && cap)
		snprintf(file, cap, "%s", where);
	char *text = NULL;
	size_t len = 0;
	enum ctq_status st = ctq_file_read(where, CTQ_HF_CONFIG_MAX_BYTES, &text, &len, err);
	if (!st)
		st = ctq_json_parse(text, len, where, NULL, root, err);
	if (!st && !cJSON_IsObject(*root))
		st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, where,
				   "is a JSON %s at its root; expected a config.json object",
				   ctq_json_type_name(*root));
	if (!st && sha_hex) {
		unsigned char d[CTQ_SHA256_BYTES];
		ctq_sha256(text, len, d);
		ctq_sha256_hex(d, sha_hex);
	}
	if (st) {
		cJSON_Delete(*root);
		*root = NULL;
	}
	ctq_free(text);
	ctq_free(joined);
	return st;
}

const cJSON *ctq_hf_config_text(const cJSON *root, const char **where)
{
	const cJSON *tc = ctq_json_get(root, "text_config");
	const bool text = cJSON_IsObject(tc) && ctq_json_get(tc, "num_hidden_layers");
	if (where)
		*where = text ? "text_config" : "";
	return text ? tc : root;
}

enum ctq_status ctq_hf_config_context(const cJSON *root, int64_t *ctx, struct ctq_error *err)
{
	*ctx = 0;
	const char *where = "";
	const cJSON *o = ctq_hf_config_text(root, &where);
	const cJSON *v = ctq_json_get(o, "max_position_embeddings");
	if (!v && *where) {
		where = "";
		v = ctq_json_get(root, "max_position_embeddings");
	}
	if (!v)
		return CTQ_OK;
	char path[64];
	ctq_json_path_key(path, sizeof path, where, "max_position_embeddings");
	long n = 0;
	enum ctq_status st = ctq_json_int(v, path, 1, 2147483647L, &n, err);
	if (!st)
		*ctx = n;
	return st;
}
