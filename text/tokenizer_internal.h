/* Private to text/tokenizer*.c: the loaded tokenizer's layout and the
 * helpers that the loader (tokenizer_load.c), the encoder
 * (tokenizer_encode.c) and the API (tokenizer.c) share. Not a public
 * interface: see tokenizer.h. */
#ifndef CTQ_TEXT_TOKENIZER_INTERNAL_H
#define CTQ_TEXT_TOKENIZER_INTERNAL_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include "text/tokenizer.h"
#include "core/arena.h"
#include "core/strbuf.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PCRE2 limits for patterns from untrusted files: a bound on the work of one
 * match call (a pathological pattern fails instead of hanging) and on the
 * backtracking depth. Generous: the GPT-2 / Llama-3 / Qwen2 patterns need a
 * few steps per byte. */
#define REGEX_MATCH_LIMIT 50000000u
#define REGEX_DEPTH_LIMIT 100000u

/* Pre-tokenizer nesting (Sequence in Sequence) and template length bounds. */
#define MAX_NESTING 16
#define MAX_TEMPLATE_IDS 64

enum split_behavior {
	SPLIT_REMOVED,
	SPLIT_ISOLATED,
	SPLIT_MERGED_WITH_PREVIOUS,
	SPLIT_MERGED_WITH_NEXT,
	SPLIT_CONTIGUOUS
};

enum step_kind { STEP_SPLIT, STEP_BYTE_LEVEL };

/* One pre-tokenizer step. Digits is a Split on \p{N} (Rust's
 * char::is_numeric: Nd, Nl, No), Isolated per character or per run. */
struct pre_step {
	enum step_kind kind;
	pcre2_code *re;       /* Split regex, ByteLevel's GPT-2 regex, or NULL */
	char *literal;        /* Split String pattern (when re is NULL) */
	size_t literal_len;
	enum split_behavior behavior;
	bool invert;
	bool add_prefix_space; /* ByteLevel */
};

struct added_token {
	const char *content; /* arena */
	size_t len;
	const char *pattern; /* what is matched: content, or NFC(content) when normalized */
	size_t pattern_len;
	int32_t id;
	bool special, single_word, lstrip, rstrip, normalized;
};

/* Added tokens matched against one kind of text, ordered by first byte and,
 * within a first byte, longest first: the first that matches at the leftmost
 * position is the leftmost-longest match. */
struct match_set {
	size_t *order; /* (n) indices into added */
	size_t n;
	size_t first[257]; /* order[first[b] .. first[b + 1]) begin with byte b */
};

/* Open-addressing map from token text to id; the text lives in tok[id]. */
struct str_index {
	int32_t *slots; /* (cap) id, or -1 when free */
	size_t cap;     /* power of two */
};

/* Open-addressing map from a pair of ids to (rank, merged id); key and
 * value share a slot so that a probe touches one cache line. */
#define MERGE_FREE UINT64_MAX
struct merge_slot {
	uint64_t key; /* left << 32 | right, MERGE_FREE when free */
	int32_t rank, merged;
};
struct merge_index {
	struct merge_slot *slots; /* (cap) */
	size_t cap;
};

struct ctq_tokenizer_impl {
	struct ctq_arena arena; /* token text, added tokens */
	size_t n_model;          /* model vocab: ids [0, n_model) */
	size_t n_ids;            /* n_model + added tokens outside the vocab */
	const char **tok;        /* (n_ids) byte-level text for vocab ids, content for added */
	uint32_t *tok_len;       /* (n_ids) bytes */
	uint8_t *special;        /* (n_ids) 1 for special added tokens */
	struct str_index index;  /* all of tok */
	struct merge_index merges;
	int32_t unk_id; /* -1: characters outside the vocab are dropped, as the library does */
	bool fuse_unk, ignore_merges;

	struct added_token *added;
	size_t n_added;
	struct match_set raw_set, normalized_set;

	bool nfc;
	struct pre_step *steps;
	size_t n_steps;

	int32_t prefix[MAX_TEMPLATE_IDS], suffix[MAX_TEMPLATE_IDS];
	size_t n_prefix, n_suffix;

	pcre2_match_context *match_ctx;
	pcre2_code *word_re;

	/* GPT-2's bytes_to_unicode: byte -> UTF-8 of its printable character,
	 * and back (characters U+0021..U+0143). */
	char byte_utf8[256][2];
	uint8_t byte_utf8_len[256];
	int16_t char_byte[0x144];
};

/* ---- growable id arrays (an allocation failure sticks; tokenizer.c) ----- */
/* Byte buffers are struct ctq_strbuf (core/strbuf.h). */

struct ids {
	int32_t *v;
	size_t n, cap;
	bool oom;
};

void ctq_tok_ids_push(struct ids *a, int32_t id);

/* ---- indexes (tokenizer.c) ------------------------------------------------ */

bool ctq_tok_str_index_init(struct str_index *x, size_t n);
int32_t ctq_tok_str_index_find(const struct ctq_tokenizer_impl *T, const char *s, size_t n);
int32_t ctq_tok_str_index_insert(struct ctq_tokenizer_impl *T, int32_t id);
bool ctq_tok_merge_index_init(struct merge_index *m, size_t n);
void ctq_tok_merge_index_free(struct merge_index *m);
void ctq_tok_merge_index_put(struct merge_index *m, int32_t a, int32_t b, int32_t rank, int32_t merged);
bool ctq_tok_merge_index_get(const struct merge_index *m, int32_t a, int32_t b, int32_t *rank, int32_t *merged);

#endif
