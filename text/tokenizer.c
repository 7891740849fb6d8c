/* ctq byte-level BPE tokenizer over Hugging Face tokenizer.json (see
 * tokenizer.h). Each stage mirrors the `tokenizers` library (Rust) step for
 * step, because byte-identical ids are the requirement:
 *
 *   bytes --U+FFFD for invalid UTF-8--> text
 *   text --added tokens that are special or not normalized--> segments
 *   segment --normalizer (NFC)--> --added tokens that are normalized--> pieces
 *   piece --pre-tokenizer steps (Split / Digits / ByteLevel)--> words
 *   word --BPE merges by rank (the library's heap order)--> ids
 *   ids --template (BOS/EOS) when add_special_tokens--> result
 */
/* This file: the shared buffers and indexes, decoding and lookups; loading
 * is tokenizer_load.c, encoding tokenizer_encode.c. */
#include "text/tokenizer_internal.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static uint64_t hash_pair(uint64_t k)
{
	k ^= k >> 33; /* murmur3 finalizer */
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static size_t pow2_at_least(size_t n)
{
	size_t c = 16;
	while (c < n)
		c *= 2;
	return c;
}

/* ---- growable buffers (an allocation failure sticks) ---------------------- */

void ctq_tok_ids_push(struct ids *a, int32_t id)
{
	if (a->oom)
		return;
	if (!ctq_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v)) {
		a->oom = true;
		return;
	}
	a->v[a->n++] = id;
}

/* ---- indexes ---------------------------------------------------------------- */

bool ctq_tok_str_index_init(struct str_index *x, size_t n)
{
	x->cap = pow2_at_least(2 * n + 1);
	x->slots = ctq_malloc(x->cap * sizeof *x->slots);
	if (!x->slots)
		return false;
	memset(x->slots, 0xFF, x->cap * sizeof *x->slots);
	return true;
}

int32_t ctq_tok_str_index_find(const struct ctq_tokenizer_impl *T, const char *s, size_t n)
{
	const struct str_index *x = &T->index;
	size_t mask = x->cap - 1;
	for (size_t i = hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
		int32_t id = x->slots[i];
		if (id < 0)
			return -1;
		if (T->tok_len[id] == n && memcmp(T->tok[id], s, n) == 0)
			return id;
	}
}

/* Inserts tok[id]; returns the id already holding that text, or -1. */
int32_t ctq_tok_str_index_insert(struct ctq_tokenizer_impl *T, int32_t id)
{
	struct str_index *x = &T->index;
	size_t mask = x->cap - 1;
	const char *s = T->tok[id];
	size_t n = T->tok_len[id];
	for (size_t i = hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
		int32_t o = x->slots[i];
		if (o < 0) {
			x->slots[i] = id;
			return -1;
		}
		if (T->tok_len[o] == n && memcmp(T->tok[o], s, n) == 0)
			return o;
	}
}

bool ctq_tok_merge_index_init(struct merge_index *m, size_t n)
{
	m->cap = pow2_at_least(2 * n + 1);
	m->slots = ctq_malloc(m->cap * sizeof *m->slots);
	if (!m->slots)
		return false;
	for (size_t i = 0; i < m->cap; i++)
		m->slots[i].key = MERGE_FREE;
	return true;
}

void ctq_tok_merge_index_free(struct merge_index *m)
{
	free(m->slots);
	memset(m, 0, sizeof *m);
}

/* A later merge of the same pair replaces the earlier one, as the library's
 * HashMap collect does. */
void ctq_tok_merge_index_put(struct merge_index *m, int32_t a, int32_t b, int32_t rank,
			    int32_t merged)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = m->cap - 1;
	size_t i = hash_pair(key) & mask;
	while (m->slots[i].key != MERGE_FREE && m->slots[i].key != key)
		i = (i + 1) & mask;
	m->slots[i] = (struct merge_slot){key, rank, merged};
}

bool ctq_tok_merge_index_get(const struct merge_index *m, int32_t a, int32_t b,
			    int32_t *rank, int32_t *merged)
{
	if (!m->cap)
		return false;
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = m->cap - 1;
	for (size_t i = hash_pair(key) & mask;; i = (i + 1) & mask) {
		const struct merge_slot *e = &m->slots[i];
		if (e->key == MERGE_FREE)
			return false;
		if (e->key == key) {
			*rank = e->rank;
			*merged = e->merged;
			return true;
		}
	}
}

/* ---- decoding and lookups --------------------------------------------------- */

enum ctq_status ctq_tokenizer_decode(const struct ctq_tokenizer *t, const int32_t *ids, size_t n,
				     bool skip_special_tokens, char **text, size_t *len,
				     struct ctq_error *err)
{
	*text = NULL;
	*len = 0;
	const struct ctq_tokenizer_impl *T = t ? t->impl : NULL;
	if (!T)
		return ctq_error_set(err, CTQ_ERR_USAGE, NULL, "tokenizer is not loaded");
	struct ctq_strbuf raw = {0};
	ctq_strbuf_appendn(&raw, "", 0);
	for (size_t i = 0; i < n && !raw.oom; i++) {
		int32_t id = ids[i];
		if (id < 0 || (size_t)id >= T->n_ids)
			continue;
		if (skip_special_tokens && T->special[id])
			continue;
		/* ByteLevel decoder: a token whose every character is in the
		 * byte-level alphabet gives those bytes, any other its own text. */
		const char *s = T->tok[id];
		size_t m = T->tok_len[id], mark = raw.len;
		bool all = true;
		for (size_t k = 0; k < m && all;) {
			size_t clen;
			uint32_t cp = ctq_utf8_decode((const unsigned char *)s + k, &clen);
			all = cp < 0x144 && T->char_byte[cp] >= 0;
			if (all) {
				char b = (char)T->char_byte[cp];
				ctq_strbuf_appendn(&raw, &b, 1);
			}
			k += clen;
		}
		if (!all) {
			raw.len = mark;
			ctq_strbuf_appendn(&raw, s, m);
		}
	}
	enum ctq_status st = CTQ_OK;
	if (raw.oom)
		st = ctq_error_set(err, CTQ_ERR_NOMEM, NULL, "out of memory decoding %zu ids", n);
	else
		st = ctq_tokenizer_utf8_sanitize(raw.data, raw.len, text, len, err);
	free(raw.data);
	return st;
}

int32_t ctq_tokenizer_token_to_id(const struct ctq_tokenizer *t, const char *token)
{
	if (!t || !t->impl || !token)
		return -1;
	return ctq_tok_str_index_find(t->impl, token, strlen(token));
}

const char *ctq_tokenizer_id_to_token(const struct ctq_tokenizer *t, int32_t id)
{
	if (!t || !t->impl || id < 0 || (size_t)id >= t->impl->n_ids)
		return NULL;
	return t->impl->tok[id];
}

size_t ctq_tokenizer_vocab_size(const struct ctq_tokenizer *t)
{
	return t && t->impl ? t->impl->n_ids : 0;
}

bool ctq_tokenizer_is_special(const struct ctq_tokenizer *t, int32_t id)
{
	return t && t->impl && id >= 0 && (size_t)id < t->impl->n_ids && t->impl->special[id];
}
