/* ctq tokenizer: a Hugging Face tokenizer.json byte-level BPE tokenizer that
 * encodes and decodes exactly as the `tokenizers` library does for the GPT-2,
 * Qwen2 / Qwen3, Llama-3 and SmolLM2 layouts.
 *
 * Supported tokenizer.json (anything else is unsupported-format, naming the
 * JSON path):
 *   model           BPE: vocab (each id in [0, n) used exactly once), merges as
 *                   "a b" strings or ["a", "b"] pairs, ignore_merges, unk_token
 *                   and fuse_unk; continuing_subword_prefix and
 *                   end_of_word_suffix null or ""; byte_fallback false; dropout
 *                   null or 0.
 *   added_tokens    id, content, special, single_word, lstrip, rstrip,
 *                   normalized; matched before pre-tokenization, leftmost then
 *                   longest (the library's AddedVocabulary). Each id must be the
 *                   one the library assigns (the vocab's id for a content that
 *                   is in the vocab, else the next id after the vocab); the
 *                   library silently renumbers a mismatch, ctq rejects it.
 *   normalizer      null, NFC, or a Sequence of NFC.
 *   pre_tokenizer   ByteLevel (add_prefix_space, use_regex with the GPT-2
 *                   regex), Split (String or Regex pattern, every behaviour,
 *                   invert), Digits (individual_digits), Sequence of these; at
 *                   least one ByteLevel.
 *   post_processor  null, ByteLevel, TemplateProcessing (its `single`
 *                   template), a Sequence of these.
 *   decoder         ByteLevel.
 *   truncation, padding: null.
 *
 * Text in: encode takes bytes. Invalid UTF-8 is replaced by U+FFFD before
 * anything else, one U+FFFD per maximal invalid subpart, which is what
 * Python's bytes.decode("utf-8", errors="replace") gives (the library itself
 * only ever sees a Python str). The result is then what the library gives
 * for that str.
 *
 * Regexes run on PCRE2 (PCRE2_UTF | PCRE2_UCP, with match limits because the
 * patterns come from untrusted files) where the library uses Oniguruma; `\s`
 * and `\S` are rewritten to \p{White_Space} / \P{White_Space}, the class both
 * the library and Rust use (PCRE2's own \s also takes U+180E). Character
 * properties follow PCRE2's Unicode tables and NFC follows the tables in
 * text/nfc_data.h (Unicode 14): characters assigned after the older of
 * those versions may be classified differently from the library.
 *
 * What it is not: WordPiece / Unigram / SentencePiece (Metaspace) models,
 * byte_fallback, BPE dropout, pair encodings, offsets, truncation, padding.
 * Encoding and decoding do not modify the tokenizer: one loaded tokenizer may
 * be used from several threads at once.
 */
#ifndef CTQ_TEXT_TOKENIZER_H
#define CTQ_TEXT_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Bounds on untrusted tokenizer files. */
#define CTQ_TOKENIZER_MAX_FILE_BYTES ((size_t)128 << 20)
#define CTQ_TOKENIZER_MAX_IDS (1L << 22) /* vocab + added tokens */

struct ctq_tokenizer_impl;

struct ctq_tokenizer {
	struct ctq_tokenizer_impl *impl; /* owned; NULL before load / after free */
	/* Begin / end of sequence ids, -1 when unknown. bos_id comes from the
	 * template's leading special token, else tokenizer_config.json's
	 * bos_token; eos_id from tokenizer_config.json's eos_token (the token a
	 * chat model stops on), else the template's trailing special token. */
	int32_t bos_id, eos_id;
	/* What encode(..., add_special_tokens = true) adds around the text. */
	bool adds_bos, adds_eos;
};

/* Loads path: a tokenizer.json, or a folder holding one. A
 * tokenizer_config.json beside it, if present, supplies bos / eos. Errors:
 * io-error (missing or too large), parse-error (malformed JSON, duplicate
 * keys), invalid-config (bad types, ids out of range, merges naming unknown
 * tokens, a regex that does not compile), unsupported-format (a component
 * listed above as unsupported), out-of-memory. The path of the error is the
 * JSON path inside the file; the message names the file. On failure *t is
 * left freed. */
enum ctq_status ctq_tokenizer_load(struct ctq_tokenizer *t, const char *path,
				   struct ctq_error *err);

/* Idempotent; accepts a zeroed or freed tokenizer. */
void ctq_tokenizer_free(struct ctq_tokenizer *t);

/* Encodes len bytes of text (need not be NUL-terminated; may hold NUL).
 * add_special_tokens applies the post-processor's template (BOS etc.).
 * *ids is returned owned (malloc'ed; free() it; NULL when *n_ids == 0).
 * Errors: invalid-config (a regex hit its match limit), out-of-memory,
 * usage (t not loaded, or NULL text with len > 0). */
enum ctq_status ctq_tokenizer_encode(const struct ctq_tokenizer *t,
				     const char *text, size_t len,
				     bool add_special_tokens, int32_t **ids,
				     size_t *n_ids, struct ctq_error *err);

/* Decodes ids to UTF-8: *text returned owned (malloc'ed, NUL-terminated),
 * *len bytes. Like the library: ids that name no token are skipped, special
 * added tokens are skipped when skip_special_tokens, and byte sequences that
 * are not valid UTF-8 (a character cut between tokens) become U+FFFD.
 * Errors: out-of-memory, usage (t not loaded). */
enum ctq_status ctq_tokenizer_decode(const struct ctq_tokenizer *t,
				     const int32_t *ids, size_t n,
				     bool skip_special_tokens, char **text,
				     size_t *len, struct ctq_error *err);

/* The id of a token (an added token's content, or a vocab entry in its
 * byte-level form, e.g. "Ġthe"), or -1. */
int32_t ctq_tokenizer_token_to_id(const struct ctq_tokenizer *t,
				  const char *token);

/* The token of an id (borrowed, valid until free), or NULL. */
const char *ctq_tokenizer_id_to_token(const struct ctq_tokenizer *t, int32_t id);

/* One past the largest id: the vocab plus the added tokens outside it (the
 * library's get_vocab_size(with_added_tokens=True)). */
size_t ctq_tokenizer_vocab_size(const struct ctq_tokenizer *t);

/* True when id is a special added token (skipped by skip_special_tokens). */
bool ctq_tokenizer_is_special(const struct ctq_tokenizer *t, int32_t id);

/* Helpers, exposed for tests. */

/* Replaces each maximal invalid UTF-8 subpart of text by U+FFFD (as Python's
 * errors="replace" and Rust's from_utf8_lossy do). *out is owned (malloc'ed,
 * NUL-terminated). Errors: out-of-memory. */
enum ctq_status ctq_tokenizer_utf8_sanitize(const char *text, size_t len,
					    char **out, size_t *out_len,
					    struct ctq_error *err);

/* NFC of valid UTF-8 text; *out is owned (malloc'ed, NUL-terminated).
 * Errors: out-of-memory. */
enum ctq_status ctq_tokenizer_nfc(const char *text, size_t len, char **out,
				  size_t *out_len, struct ctq_error *err);

/* The Unicode version of the NFC tables ("14.0.0"). */
const char *ctq_tokenizer_nfc_unicode_version(void);

#endif
