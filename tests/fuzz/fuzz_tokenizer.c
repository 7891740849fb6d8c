/* Fuzz target: a tokenizer.json through ctq_tokenizer_load, then encode
 * and decode. Input: the tokenizer.json bytes, a NUL byte, then the text to
 * encode (any bytes; without a NUL a fixed sentence is encoded). The ids
 * are decoded back with and without special tokens, and the text's bytes
 * are also decoded as raw ids (out-of-range ids included). */
#include "tests/fuzz/fuzz.h"

#include "text/tokenizer.h"

static const char default_text[] = "Hello, world! It's 2024 — naïve café 東京 <|endoftext|>\n\t  x";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTQ_FUZZ_MAX_BYTES)
		return -1;
	const uint8_t *nul = memchr(data, 0, size);
	size_t json_len = nul ? (size_t)(nul - data) : size;
	const char *text = nul ? (const char *)nul + 1 : default_text;
	size_t text_len = nul ? size - json_len - 1 : sizeof default_text - 1;
	char file[512];
	snprintf(file, sizeof file, "%s", ctq_fuzz_path("tokenizer.json"));
	ctq_fuzz_write(file, data, json_len);

	struct ctq_tokenizer t;
	struct ctq_error err = {0};
	memset(&t, 0, sizeof t);
	if (ctq_tokenizer_load(&t, file, &err))
		goto out;
	size_t vocab = ctq_tokenizer_vocab_size(&t);
	for (int special = 0; special < 2; special++) {
		int32_t *ids = NULL;
		size_t n = 0;
		struct ctq_error eerr = {0};
		if (!ctq_tokenizer_encode(&t, text, text_len, special, &ids, &n, &eerr)) {
			for (size_t i = 0; i < n; i++) {
				const char *tok = ctq_tokenizer_id_to_token(&t, ids[i]);
				if (tok)
					(void)ctq_tokenizer_token_to_id(&t, tok);
				(void)ctq_tokenizer_is_special(&t, ids[i]);
			}
			char *back = NULL;
			size_t back_len = 0;
			struct ctq_error derr = {0};
			if (!ctq_tokenizer_decode(&t, ids, n, special, &back, &back_len, &derr))
				free(back);
		}
		free(ids);
	}
	/* Raw ids: 4 text bytes per id, any value including negative ones and
	 * ids past the vocabulary. */
	size_t n_raw = text_len / 4 > 4096 ? 4096 : text_len / 4;
	int32_t *raw = malloc((n_raw ? n_raw : 1) * sizeof *raw);
	if (raw) {
		for (size_t i = 0; i < n_raw; i++) {
			uint32_t u;
			memcpy(&u, text + 4 * i, 4);
			raw[i] = (int32_t)(vocab && (u & 0x80000000u) == 0 ? u % (vocab + 8) : u);
		}
		char *back = NULL;
		size_t back_len = 0;
		struct ctq_error derr = {0};
		if (!ctq_tokenizer_decode(&t, raw, n_raw, n_raw & 1, &back, &back_len, &derr))
			free(back);
		free(raw);
	}
out:
	ctq_tokenizer_free(&t);
	/* The text normalisers the encoder relies on, on the raw text. */
	char *clean = NULL, *nfc = NULL;
	size_t clean_len = 0, nfc_len = 0;
	struct ctq_error uerr = {0};
	if (!ctq_tokenizer_utf8_sanitize(text, text_len, &clean, &clean_len, &uerr) &&
	    !ctq_tokenizer_nfc(clean, clean_len, &nfc, &nfc_len, &uerr))
		free(nfc);
	free(clean);
	return 0;
}
