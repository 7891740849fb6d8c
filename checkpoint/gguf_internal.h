/* Private to checkpoint/gguf*.c: the GGUF -> Hugging Face import state
 * shared by the reader (gguf.c), the tensor plan and writer (gguf_import.c)
 * and the tokenizer converter (gguf_tokenizer.c). Not a public interface. */
#ifndef CTQ_CHECKPOINT_GGUF_INTERNAL_H
#define CTQ_CHECKPOINT_GGUF_INTERNAL_H

#include "checkpoint/gguf.h"
#include "core/arena.h"
#include "core/status.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error of class s at "file:offset"; returns s. */
__attribute__((format(printf, 5, 6)))
enum ctq_status ctq_gguf_fail_at(struct ctq_error *err, enum ctq_status s,
				 const char *file, uint64_t offset,
				 const char *fmt, ...);

/* s (len bytes, from the file) for an error message: as it is when it is
 * UTF-8 without control characters, else with every byte outside printable
 * ASCII written as \xNN; cut at about 80 bytes. Returns buf. */
const char *ctq_gguf_shown(const char *s, size_t len, char *buf, size_t cap);

/* GGUF row holding HF row r of a rotary-permuted attn_q / attn_k with heads
 * of head_dim rows (see gguf.c for the permutation). */
int64_t ctq_gguf_unpermuted_src_row(int64_t r, int64_t head_dim);

struct hparams {
	uint64_t n_layers, hidden, inter, n_head, n_kv, head_dim, context, vocab;
	double rope_theta, eps;
	bool attn_bias, mlp_bias, tied;
	cJSON *rope_scaling;           /* owned; NULL: none */
};

/* One output tensor. */
struct plan_item {
	const struct ctq_gguf_tensor *t;
	const char *hf_name;           /* in the import arena */
	int64_t shape[2];              /* HF shape; ndim 1 uses shape[0] */
	int ndim;
	int64_t permute_heads;         /* > 0: un-permute rows with this many heads */
	uint16_t *bf16;                /* (n_elements) inside the output buffer */
};

struct import {
	struct ctq_gguf_file f;
	struct ctq_error *err;
	struct hparams hp;
	struct plan_item *items;       /* (n_items) */
	size_t n_items;
	struct ctq_arena arena;
	/* tokenizer */
	const struct ctq_gguf_value *tokens, *merges, *token_type, *pre, *chat_template;
	uint64_t special[4];           /* bos, eos, unk, pad */
	bool has_special[4];
	bool add_bos, add_eos;
	const char **sorted_tokens;    /* (tokens->v.arr.n) for lookups */
	size_t n_added;
};

enum { SP_BOS, SP_EOS, SP_UNK, SP_PAD };

#define IM_FAIL(im, off, ...) ctq_gguf_fail_at((im)->err, CTQ_ERR_CHECKPOINT, (im)->f.path, (off), __VA_ARGS__)
#define IM_UNSUP(im, off, ...) ctq_gguf_fail_at((im)->err, CTQ_ERR_UNSUPPORTED_FORMAT, (im)->f.path, (off), __VA_ARGS__)

static inline enum ctq_status nomem(struct import *im)
{
	return ctq_error_set(im->err, CTQ_ERR_NOMEM, im->f.path, "out of memory");
}

/* gguf_tokenizer.c: reads tokenizer.ggml.* into im, then builds
 * tokenizer.json and tokenizer_config.json (owned, returned in *out). */
enum ctq_status ctq_gguf_read_tokenizer(struct import *im);
enum ctq_status ctq_gguf_tokenizer_json(struct import *im, cJSON **out);
enum ctq_status ctq_gguf_tokenizer_config_json(struct import *im, cJSON **out);

#endif
