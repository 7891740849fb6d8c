/* ctq Hugging Face config.json: the one reader of a checkpoint's
 * config.json and the layout rules every command shares. The file is a JSON
 * object at its root; a multimodal checkpoint (transformers 4 and 5 alike)
 * keeps its language model's fields in text_config; the context length is
 * that model's max_position_embeddings. Not the interpretation of the
 * fields: the model's shapes and RoPE are model/runner.h's
 * ctq_model_config_parse, the quantization block quant/qconfig.h's. */
#ifndef CTQ_CORE_HF_CONFIG_H
#define CTQ_CORE_HF_CONFIG_H

#include <stdint.h>

#include "core/json.h"
#include "core/sha256.h"
#include "core/status.h"

/* The largest config.json read (the biggest real ones are a few hundred
 * KiB; a quantization block listing every module stays far below). */
#define CTQ_HF_CONFIG_MAX_BYTES ((size_t)64 << 20)

/* Reads path, a checkpoint folder (its config.json) or the file itself,
 * into *root (the caller deletes it). A root that is not an object is
 * invalid-config naming the file; unreadable or malformed JSON is
 * io-error or parse-error from core/json.h. sha_hex, when not NULL,
 * receives the sha256 of the file's bytes; file, when not NULL, the path
 * read (cap bytes). */
enum ctq_status ctq_hf_config_load(const char *path, cJSON **root, char sha_hex[CTQ_SHA256_HEX],
				   char *file, size_t cap, struct ctq_error *err);

/* The object holding the language model's fields: text_config when it is
 * an object with num_hidden_layers (a vision-language checkpoint), else
 * the root. *where, when not NULL, is "text_config" or "" (the prefix of
 * the fields' paths in errors). */
const cJSON *ctq_hf_config_text(const cJSON *root, const char **where);

/* The context length into *ctx: max_position_embeddings of the object
 * above (the root's when that object lacks it), 0 when neither has one. A
 * value that is not an integer in 1..2^31-1 is invalid-config naming the
 * field ("text_config.max_position_embeddings"). */
enum ctq_status ctq_hf_config_context(const cJSON *root, int64_t *ctx, struct ctq_error *err);

#endif
