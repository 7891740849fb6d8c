/* ctq GGUF tokenizer converter: tokenizer.ggml.* metadata -> tokenizer.json
 * and tokenizer_config.json as the `tokenizers` library and transformers
 * lay them out (see gguf.h; called from gguf_import.c). */
#include "checkpoint/gguf.h"
#include "checkpoint/gguf_internal.h"
#include "core/utf8.h"

#include "core/dtype.h"
#include "core/fileio.h"
#include "core/json_write.h"
#include "core/strbuf.h"
#include "checkpoint/safetensors.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const special_keys[4] = {
	"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
	"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
};

/* ---- import: the tokenizer ----------------------------------------------------- */

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_key_str(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

static bool vocab_has(const struct import *im, const char *s)
{
	return bsearch(s, im->sorted_tokens, (size_t)im->tokens->v.arr.n,
		       sizeof *im->sorted_tokens, cmp_key_str) != NULL;
}

/* Token id of a sorted-table entry (its string lives in the tokens array). */
static uint64_t token_id_of(const struct import *im, const char *s)
{
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	for (uint64_t i = 0; i < im->tokens->v.arr.n; i++)
		if (items[i].v.str.s == s)
			return i;
	return UINT64_MAX;
}

enum ctq_status ctq_gguf_read_tokenizer(struct import *im)
{
	char sb[128];
	struct ctq_gguf_file *f = &im->f;
	struct ctq_error *err = im->err;
	const struct ctq_gguf_value *model;
	enum ctq_status st;
	if ((st = ctq_gguf_get_string(f, "tokenizer.ggml.model", true, &model, err)))
		return st;
	if (strcmp(model->v.str.s, "gpt2"))
		return IM_UNSUP(im, model->file_offset,
				"tokenizer.ggml.model is \"%s\"; ctq converts \"gpt2\" (byte-level BPE) tokenizers only",
				ctq_gguf_shown(model->v.str.s, (size_t)model->v.str.len, sb, sizeof sb));
	if ((st = ctq_gguf_get_string(f, "tokenizer.ggml.pre", false, &im->pre, err)) ||
	    (st = ctq_gguf_get_array(f, "tokenizer.ggml.tokens", true, CTQ_GGUF_STRING,
				     &im->tokens, err)) ||
	    (st = ctq_gguf_get_array(f, "tokenizer.ggml.merges", true, CTQ_GGUF_STRING,
				     &im->merges, err)) ||
	    (st = ctq_gguf_get_array(f, "tokenizer.ggml.token_type", false, CTQ_GGUF_INT32,
				     &im->token_type, err)) ||
	    (st = ctq_gguf_get_string(f, "tokenizer.chat_template", false, &im->chat_template, err)) ||
	    (st = ctq_gguf_get_bool(f, "tokenizer.ggml.add_bos_token", false, &im->add_bos, NULL, err)) ||
	    (st = ctq_gguf_get_bool(f, "tokenizer.ggml.add_eos_token", false, &im->add_eos, NULL, err)))
		return st;
	uint64_t n = im->tokens->v.arr.n;
	const struct ctq_gguf_kv *kv = ctq_gguf_find_kv(f, "tokenizer.ggml.tokens");
	if (n == 0 || n > im->hp.vocab)
		return IM_FAIL(im, kv->file_offset,
			       "tokenizer.ggml.tokens has %" PRIu64 " token(s); expected 1..%" PRIu64
			       " (the rows of token_embd.weight)", n, im->hp.vocab);
	if (im->token_type && im->token_type->v.arr.n != n) {
		kv = ctq_gguf_find_kv(f, "tokenizer.ggml.token_type");
		return IM_FAIL(im, kv->file_offset,
			       "tokenizer.ggml.token_type has %" PRIu64 " entries; expected %" PRIu64
			       " (one per token)", im->token_type->v.arr.n, n);
	}
	for (int s = 0; s < 4; s++)
		if ((st = ctq_gguf_get_uint(f, special_keys[s], false, n - 1, &im->special[s],
					    &im->has_special[s], err)))
			return st;
	if (im->chat_template &&
	    (!ctq_utf8_valid((const unsigned char *)im->chat_template->v.str.s,
			     (size_t)im->chat_template->v.str.len, NULL) ||
	     strlen(im->chat_template->v.str.s) != im->chat_template->v.str.len))
		return IM_FAIL(im, im->chat_template->file_offset,
			       "tokenizer.chat_template is not UTF-8 text without NUL bytes");
	/* Tokens: UTF-8, no NUL, not empty, unique. */
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	im->sorted_tokens = ctq_arena_calloc(&im->arena, (size_t)n, sizeof *im->sorted_tokens);
	if (!im->sorted_tokens)
		return nomem(im);
	for (uint64_t i = 0; i < n; i++) {
		const struct ctq_gguf_value *t = &items[i];
		if (!t->v.str.len || strlen(t->v.str.s) != t->v.str.len ||
		    !ctq_utf8_valid((const unsigned char *)t->v.str.s, (size_t)t->v.str.len, NULL))
			return IM_FAIL(im, t->file_offset,
				       "token %" PRIu64 " is empty, holds a NUL byte or is not UTF-8", i);
		im->sorted_tokens[i] = t->v.str.s;
		if (im->token_type) {
			int64_t ty;
			ctq_gguf_array_int(im->token_type, i, &ty);
			if (ty < 0 || ty > 6)
				return IM_FAIL(im, im->token_type->file_offset + 12 + 4 * i,
					       "token %" PRIu64 " has token_type %" PRId64
					       "; expected 0..6 (llama_token_type)", i, ty);
			if (ty == 3 || ty == 4)
				im->n_added++;
		}
	}
	qsort(im->sorted_tokens, (size_t)n, sizeof *im->sorted_tokens, cmp_str_ptr);
	for (uint64_t i = 1; i < n; i++)
		if (!strcmp(im->sorted_tokens[i - 1], im->sorted_tokens[i])) {
			uint64_t a = token_id_of(im, im->sorted_tokens[i - 1]);
			uint64_t b = token_id_of(im, im->sorted_tokens[i]);
			uint64_t later = a > b ? a : b;
			return IM_FAIL(im, items[later].file_offset,
				       "token %" PRIu64 " \"%s\" duplicates token %" PRIu64
				       "; a tokenizer.json vocab maps each string to one id",
				       later, ctq_gguf_shown(items[later].v.str.s, (size_t)items[later].v.str.len, sb, sizeof sb),
				       a < b ? a : b);
		}
	/* Merges: "left right", both sides and their concatenation in the
	 * vocab, as tokenizers' BPE builder requires. */
	const struct ctq_gguf_value *m = im->merges->v.arr.items;
	size_t cap = 0;
	char *buf = NULL;
	st = CTQ_OK;
	for (uint64_t i = 0; i < im->merges->v.arr.n && !st; i++) {
		const char *s = m[i].v.str.s;
		size_t len = (size_t)m[i].v.str.len;
		const char *sp = memchr(s, ' ', len);
		if (strlen(s) != len || !ctq_utf8_valid((const unsigned char *)s, len, NULL) || !sp || sp == s ||
		    sp == s + len - 1 || memchr(sp + 1, ' ', len - (size_t)(sp - s) - 1)) {
			st = IM_FAIL(im, m[i].file_offset,
				     "merge %" PRIu64 " \"%s\" is not two tokens separated by one space", i,
				     ctq_gguf_shown(s, len, sb, sizeof sb));
			break;
		}
		if (len + 1 > cap) {
			char *nb = ctq_realloc(buf, len + 1);
			if (!nb) {
				st = nomem(im);
				break;
			}
			buf = nb;
			cap = len + 1;
		}
		size_t nl = (size_t)(sp - s);
		memcpy(buf, s, nl);
		buf[nl] = '\0';
		const char *miss = NULL;
		if (!vocab_has(im, buf))
			miss = "left";
		if (!miss && !vocab_has(im, sp + 1))
			miss = "right";
		if (!miss) {
			memcpy(buf + nl, sp + 1, len - nl - 1);
			buf[len - 1] = '\0';
			if (!vocab_has(im, buf))
				miss = "merged";
		}
		if (miss)
			st = IM_FAIL(im, m[i].file_offset,
				     "merge %" PRIu64 " \"%s\": its %s token is not in tokenizer.ggml.tokens",
				     i, ctq_gguf_shown(s, len, sb, sizeof sb), miss);
	}
	free(buf);
	return st;
}

/* Pre-tokenizer for tokenizer.ggml.pre, matching llama.cpp's regex chains
 * (llama-vocab.cpp):
 * - "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone":
 *   llama.cpp splits every digit ("\p{N}") and then applies the GPT-2 regex.
 *   Hugging Face writes this as SmolLM2's tokenizer.json does:
 *   Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=
 *   false, trim_offsets=true, use_regex=true)].
 * - "gpt2", "mpt", "olmo": the GPT-2 regex alone: ByteLevel(use_regex=true).
 * Anything else (absent / "default", llama-bpe, qwen2, ...) uses regexes
 * this table does not express, and is refused rather than guessed. */
static cJSON *byte_level(bool add_prefix_space, bool trim_offsets)
{
	cJSON *o = cJSON_CreateObject();
	if (o && cJSON_AddStringToObject(o, "type", "ByteLevel") &&
	    cJSON_AddBoolToObject(o, "add_prefix_space", add_prefix_space) &&
	    cJSON_AddBoolToObject(o, "trim_offsets", trim_offsets) &&
	    cJSON_AddBoolToObject(o, "use_regex", true))
		return o;
	cJSON_Delete(o);
	return NULL;
}

static const char *const digits_pre[] = {"smollm", "starcoder", "refact", "command-r",
					  "codeshell", "exaone"};
static const char *const gpt2_pre[] = {"gpt2", "mpt", "olmo"};

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

static enum ctq_status pre_tokenizer(struct import *im, cJSON **out)
{
	char sb[128];
	const char *pre = im->pre ? im->pre->v.str.s : NULL;
	*out = NULL;
	if (pre && in_list(pre, gpt2_pre, sizeof gpt2_pre / sizeof *gpt2_pre)) {
		*out = byte_level(false, true);
		return *out ? CTQ_OK : nomem(im);
	}
	if (pre && in_list(pre, digits_pre, sizeof digits_pre / sizeof *digits_pre)) {
		cJSON *seq = cJSON_CreateObject(), *list, *digits;
		if (!seq || !cJSON_AddStringToObject(seq, "type", "Sequence") ||
		    !(list = cJSON_AddArrayToObject(seq, "pretokenizers")) ||
		    !(digits = cJSON_CreateObject())) {
			cJSON_Delete(seq);
			return nomem(im);
		}
		cJSON_AddItemToArray(list, digits);
		cJSON *bl = byte_level(false, true);
		if (!cJSON_AddStringToObject(digits, "type", "Digits") ||
		    !cJSON_AddBoolToObject(digits, "individual_digits", true) || !bl) {
			cJSON_Delete(bl);
			cJSON_Delete(seq);
			return nomem(im);
		}
		cJSON_AddItemToArray(list, bl);
		*out = seq;
		return CTQ_OK;
	}
	return IM_UNSUP(im, im->pre ? im->pre->file_offset : 0,
			"tokenizer.ggml.pre is %s%s%s; ctq converts the pre-tokenizers smollm, starcoder, "
			"refact, command-r, codeshell, exaone (digits split, then GPT-2) and gpt2, mpt, "
			"olmo (GPT-2)", pre ? "\"" : "",
			pre ? ctq_gguf_shown(pre, (size_t)im->pre->v.str.len, sb, sizeof sb)
			    : "absent (llama.cpp's legacy default)",
			pre ? "\"" : "");
}

static int64_t token_type_of(const struct import *im, uint64_t id)
{
	int64_t ty = 1;
	if (im->token_type)
		ctq_gguf_array_int(im->token_type, id, &ty);
	return ty;
}

/* A TemplateProcessing post-processor adding BOS / EOS around each
 * sequence, as transformers writes for llama-3-style tokenizers. */
static cJSON *template_piece(const char *kind, const char *id, int type_id)
{
	cJSON *o = cJSON_CreateObject(), *in = cJSON_CreateObject();
	if (!o || !in || !cJSON_AddStringToObject(in, "id", id) ||
	    !cJSON_AddNumberToObject(in, "type_id", type_id)) {
		cJSON_Delete(o);
		cJSON_Delete(in);
		return NULL;
	}
	cJSON_AddItemToObject(o, kind, in);
	return o;
}

static cJSON *template_processing(const struct import *im)
{
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	const char *bos = im->add_bos ? items[im->special[SP_BOS]].v.str.s : NULL;
	const char *eos = im->add_eos ? items[im->special[SP_EOS]].v.str.s : NULL;
	cJSON *o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "type", "TemplateProcessing"))
		goto oom;
	for (int pair = 0; pair < 2; pair++) {
		cJSON *a = cJSON_AddArrayToObject(o, pair ? "pair" : "single");
		if (!a)
			goto oom;
		for (int s = 0; s <= pair; s++) {
			cJSON *p;
			if (bos) {
				if (!(p = template_piece("SpecialToken", bos, s)))
					goto oom;
				cJSON_AddItemToArray(a, p);
			}
			if (!(p = template_piece("Sequence", s ? "B" : "A", s)))
				goto oom;
			cJSON_AddItemToArray(a, p);
			if (eos) {
				if (!(p = template_piece("SpecialToken", eos, s)))
					goto oom;
				cJSON_AddItemToArray(a, p);
			}
		}
	}
	cJSON *sp = cJSON_AddObjectToObject(o, "special_tokens");
	if (!sp)
		goto oom;
	for (int k = 0; k < 2; k++) {
		const char *tok = k ? eos : bos;
		uint64_t id = im->special[k ? SP_EOS : SP_BOS];
		if (!tok || cJSON_GetObjectItemCaseSensitive(sp, tok))
			continue;
		cJSON *e = cJSON_CreateObject(), *ids, *toks;
		if (!e)
			goto oom;
		cJSON_AddItemToObject(sp, tok, e);
		if (!cJSON_AddStringToObject(e, "id", tok) ||
		    !(ids = cJSON_AddArrayToObject(e, "ids")) ||
		    !(toks = cJSON_AddArrayToObject(e, "tokens")))
			goto oom;
		cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)id));
		cJSON_AddItemToArray(toks, cJSON_CreateString(tok));
	}
	return o;
oom:
	cJSON_Delete(o);
	return NULL;
}

/* An added token's flags after its content: four false ones, in the order
 * the file writes them, then special (type 3 is a control token). */
#define N_TOKEN_FLAGS 4
static bool add_token_flags(cJSON *o, const char *const *flags, int64_t ty)
{
	for (size_t k = 0; k < N_TOKEN_FLAGS; k++)
		if (!cJSON_AddBoolToObject(o, flags[k], false))
			return false;
	return cJSON_AddBoolToObject(o, "special", ty == 3) != NULL;
}

/* tokenizer.json as the `tokenizers` library lays it out. */
enum ctq_status ctq_gguf_tokenizer_json(struct import *im, cJSON **out)
{
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	uint64_t n = im->tokens->v.arr.n;
	cJSON *pre = NULL, *root = cJSON_CreateObject();
	enum ctq_status st = CTQ_OK;
	*out = NULL;
	if ((im->add_bos && !im->has_special[SP_BOS]) || (im->add_eos && !im->has_special[SP_EOS])) {
		const struct ctq_gguf_kv *kv = ctq_gguf_find_kv(
			&im->f, im->add_bos && !im->has_special[SP_BOS] ? "tokenizer.ggml.add_bos_token"
									: "tokenizer.ggml.add_eos_token");
		st = IM_FAIL(im, kv->file_offset, "%s is true but the token id is missing", kv->key);
		goto done;
	}
	if ((st = pre_tokenizer(im, &pre)))
		goto done;
	if (!root || !cJSON_AddStringToObject(root, "version", "1.0") ||
	    !cJSON_AddNullToObject(root, "truncation") || !cJSON_AddNullToObject(root, "padding"))
		goto oom;
	cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
	if (!added)
		goto oom;
	for (uint64_t i = 0; i < n; i++) {
		int64_t ty = token_type_of(im, i);
		if (ty != 3 && ty != 4)
			continue;
		cJSON *o = cJSON_CreateObject();
		if (!o)
			goto oom;
		cJSON_AddItemToArray(added, o);
		static const char *const flags[N_TOKEN_FLAGS] = {
			"single_word", "lstrip", "rstrip", "normalized"};
		if (!cJSON_AddNumberToObject(o, "id", (double)i) ||
		    !cJSON_AddStringToObject(o, "content", items[i].v.str.s) ||
		    !add_token_flags(o, flags, ty))
			goto oom;
	}
	if (!cJSON_AddNullToObject(root, "normalizer"))
		goto oom;
	cJSON_AddItemToObject(root, "pre_tokenizer", pre);
	pre = NULL;
	cJSON *post = byte_level(true, false);
	if (!post)
		goto oom;
	if (im->add_bos || im->add_eos) {
		cJSON *seq = cJSON_CreateObject(), *list, *tp = template_processing(im);
		if (!seq || !tp || !cJSON_AddStringToObject(seq, "type", "Sequence") ||
		    !(list = cJSON_AddArrayToObject(seq, "processors"))) {
			cJSON_Delete(seq);
			cJSON_Delete(tp);
			cJSON_Delete(post);
			goto oom;
		}
		cJSON_AddItemToArray(list, post);
		cJSON_AddItemToArray(list, tp);
		post = seq;
	}
	cJSON_AddItemToObject(root, "post_processor", post);
	cJSON *dec = byte_level(true, true);
	if (!dec)
		goto oom;
	cJSON_AddItemToObject(root, "decoder", dec);
	cJSON *model = cJSON_AddObjectToObject(root, "model");
	if (!model || !cJSON_AddStringToObject(model, "type", "BPE") ||
	    !cJSON_AddNullToObject(model, "dropout") || !cJSON_AddNullToObject(model, "unk_token") ||
	    !cJSON_AddNullToObject(model, "continuing_subword_prefix") ||
	    !cJSON_AddNullToObject(model, "end_of_word_suffix") ||
	    !cJSON_AddBoolToObject(model, "fuse_unk", false) ||
	    !cJSON_AddBoolToObject(model, "byte_fallback", false) ||
	    !cJSON_AddBoolToObject(model, "ignore_merges", false))
		goto oom;
	cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
	cJSON *merges = cJSON_AddArrayToObject(model, "merges");
	if (!vocab || !merges)
		goto oom;
	for (uint64_t i = 0; i < n; i++)
		if (!cJSON_AddNumberToObject(vocab, items[i].v.str.s, (double)i))
			goto oom;
	const struct ctq_gguf_value *m = im->merges->v.arr.items;
	for (uint64_t i = 0; i < im->merges->v.arr.n; i++) {
		cJSON *s = cJSON_CreateString(m[i].v.str.s);
		if (!s)
			goto oom;
		cJSON_AddItemToArray(merges, s);
	}
	*out = root;
	root = NULL;
	goto done;
oom:
	st = nomem(im);
done:
	cJSON_Delete(pre);
	cJSON_Delete(root);
	return st;
}

/* tokenizer_config.json, keys in sorted order (transformers writes it with
 * sort_keys=True; added_tokens_decoder in id order, as Python sorts the
 * int keys before turning them into strings). */
enum ctq_status ctq_gguf_tokenizer_config_json(struct import *im, cJSON **out)
{
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	cJSON *root = cJSON_CreateObject(), *dec;
	*out = NULL;
	if (!root || !(dec = cJSON_AddObjectToObject(root, "added_tokens_decoder")))
		goto oom;
	for (uint64_t i = 0; i < im->tokens->v.arr.n; i++) {
		int64_t ty = token_type_of(im, i);
		if (ty != 3 && ty != 4)
			continue;
		char id[24];
		snprintf(id, sizeof id, "%" PRIu64, i);
		cJSON *o = cJSON_AddObjectToObject(dec, id);
		static const char *const sorted_flags[N_TOKEN_FLAGS] = {
			"lstrip", "normalized", "rstrip", "single_word"};
		if (!o || !cJSON_AddStringToObject(o, "content", items[i].v.str.s) ||
		    !add_token_flags(o, sorted_flags, ty))
			goto oom;
	}
	if (im->has_special[SP_BOS] &&
	    !cJSON_AddStringToObject(root, "bos_token", items[im->special[SP_BOS]].v.str.s))
		goto oom;
	if (im->chat_template &&
	    !cJSON_AddStringToObject(root, "chat_template", im->chat_template->v.str.s))
		goto oom;
	if (!cJSON_AddBoolToObject(root, "clean_up_tokenization_spaces", false))
		goto oom;
	if (im->has_special[SP_EOS] &&
	    !cJSON_AddStringToObject(root, "eos_token", items[im->special[SP_EOS]].v.str.s))
		goto oom;
	if (!cJSON_AddNumberToObject(root, "model_max_length", (double)im->hp.context))
		goto oom;
	if (im->has_special[SP_PAD] &&
	    !cJSON_AddStringToObject(root, "pad_token", items[im->special[SP_PAD]].v.str.s))
		goto oom;
	if (!cJSON_AddStringToObject(root, "tokenizer_class", "GPT2Tokenizer"))
		goto oom;
	if (im->has_special[SP_UNK] &&
	    !cJSON_AddStringToObject(root, "unk_token", items[im->special[SP_UNK]].v.str.s))
		goto oom;
	*out = root;
	return CTQ_OK;
oom:
	cJSON_Delete(root);
	return nomem(im);
}
