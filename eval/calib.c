/* ctq calibration (eval/calib.h). */
#include "eval/calib.h"
#include "model/model.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "text/tokenizer.h"

#include <stdlib.h>
#include <string.h>

/* Calibration text read at most (the whole text is tokenised). */
#define CALIB_MAX_TEXT_BYTES ((size_t)256 << 20)

/* n windows of len tokens cut from all (n_tok) at seeded offsets, each led
 * by bos when bos >= 0; path names the source in errors. */
static enum ctq_status cut_windows(const int32_t *all, size_t n_tok, int32_t bos, const char *path,
				   int64_t n, int64_t len, uint64_t seed, int32_t **ids,
				   int64_t *n_text, struct ctq_error *err)
{
	const int64_t span = bos >= 0 ? len - 1 : len; /* text tokens per window */
	*n_text = (int64_t)n_tok;
	if ((int64_t)n_tok < span)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "holds %zu tokens; one calibration window needs %lld (--calib-len)", n_tok,
				     (long long)span);
	if (!(*ids = ctq_malloc((size_t)(n * len) * sizeof **ids)))
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	struct ctq_rng rng;
	ctq_rng_seed(&rng, seed);
	for (int64_t w = 0; w < n; w++) {
		const uint64_t start = ctq_rng_below(&rng, (uint64_t)n_tok - (uint64_t)span + 1);
		int32_t *row = *ids + w * len;
		if (bos >= 0)
			*row++ = bos;
		memcpy(row, all + start, (size_t)span * sizeof *row);
	}
	return CTQ_OK;
}

static enum ctq_status check_shape(int64_t n, int64_t len, struct ctq_error *err)
{
	if (n < 1 || len < 2)
		return ctq_error_set(err, CTQ_ERR_USAGE, "calib",
				     "%lld windows of %lld tokens; expected at least 1 window of 2 tokens",
				     (long long)n, (long long)len);
	return CTQ_OK;
}

enum ctq_status ctq_calib_windows_ids(const char *ids_path, int64_t n, int64_t len, uint64_t seed,
				      int32_t **ids, int64_t *n_text, struct ctq_error *err)
{
	*ids = NULL;
	*n_text = 0;
	enum ctq_status st = check_shape(n, len, err);
	char *text = NULL;
	size_t n_bytes = 0, n_tok = 0, cap = 0;
	int32_t *all = NULL;
	if (st || (st = ctq_file_read(ids_path, CALIB_MAX_TEXT_BYTES, &text, &n_bytes, err)))
		goto done;
	for (size_t i = 0; i < n_bytes && !st;) {
		if (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r') {
			i++;
			continue;
		}
		int64_t v = 0;
		size_t j = i;
		while (j < n_bytes && text[j] >= '0' && text[j] <= '9' && v <= INT32_MAX)
			v = v * 10 + (text[j++] - '0');
		if (j == i || v > INT32_MAX ||
		    (j < n_bytes && text[j] != ' ' && text[j] != '\n' && text[j] != '\t' && text[j] != '\r')) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, ids_path,
					   "byte %zu: expected token ids (decimal integers 0 to 2^31 - 1) separated by white space",
					   j);
			break;
		}
		if (n_tok == cap) {
			cap = cap ? 2 * cap : 4096;
			int32_t *g = ctq_realloc(all, cap * sizeof *all);
			if (!g) {
				st = ctq_error_set(err, CTQ_ERR_NOMEM, ids_path, "out of memory");
				break;
			}
			all = g;
		}
		all[n_tok++] = (int32_t)v;
		i = j;
	}
	if (!st)
		st = cut_windows(all, n_tok, -1, ids_path, n, len, seed, ids, n_text, err);
done:
	if (st) {
		ctq_free(*ids);
		*ids = NULL;
	}
	ctq_free(all);
	free(text);
	return st;
}

enum ctq_status ctq_calib_windows(const char *dir, const char *text_path, int64_t n, int64_t len,
				  uint64_t seed, int32_t **ids, int64_t *n_text,
				  struct ctq_error *err)
{
	*ids = NULL;
	*n_text = 0;
	enum ctq_status st = check_shape(n, len, err);
	if (st)
		return st;
	struct ctq_tokenizer tok;
	memset(&tok, 0, sizeof tok);
	char *tpath = ctq_path_join(dir, "tokenizer.json");
	char *text = NULL;
	size_t n_bytes = 0, n_tok = 0;
	int32_t *all = NULL;
	if (!tpath) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	if (!ctq_path_exists(tpath)) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, tpath,
				   "is missing; calibration tokenises --calib with the model's tokenizer.json");
		goto done;
	}
	if ((st = ctq_tokenizer_load(&tok, tpath, err)) ||
	    (st = ctq_file_read(text_path, CALIB_MAX_TEXT_BYTES, &text, &n_bytes, err)) ||
	    (st = ctq_tokenizer_encode(&tok, text, n_bytes, false, &all, &n_tok, err)))
		goto done;
	st = cut_windows(all, n_tok, tok.adds_bos ? tok.bos_id : -1, text_path, n, len, seed, ids,
			 n_text, err);
done:
	if (st) {
		ctq_free(*ids);
		*ids = NULL;
	}
	free(all);
	free(text);
	free(tpath);
	ctq_tokenizer_free(&tok);
	return st;
}

static void observe(void *ctx, int64_t layer, enum ctq_observe_site site, const float *x,
		    int64_t M, int64_t K)
{
	struct ctq_smooth_stats *s = ctx;
	(void)K; /* the hidden size for both mappings observed */
	if (site == CTQ_OBSERVE_QKV)
		ctq_smooth_stats_add(s, layer, 0, x, M);
	else if (site == CTQ_OBSERVE_GATE_UP)
		ctq_smooth_stats_add(s, layer, 1, x, M);
}

enum ctq_status ctq_calib_smooth_stats(const char *dir, const int32_t *ids, int64_t n, int64_t len,
				       struct ctq_smooth_stats *stats, struct ctq_error *err)
{
	memset(stats, 0, sizeof *stats);
	struct ctq_model m;
	int32_t *slot = NULL, *pos = NULL;
	const struct ctq_model_options o = {
		.dir = dir,
		.backend = "reference",
		.tp = 1,
		.numerics = CTQ_ACT_NUMERICS_CTQ,
		.limits = {.max_slots = 1, .max_len = len, .max_tokens = len, .no_graphs = true,
			   .observe = observe, .observe_ctx = stats},
	};
	enum ctq_status st = ctq_model_open(&m, &o, err);
	if (st)
		goto done;
	const struct ctq_model_config *c = ctq_model_cfg(&m);
	if (m.n_quantized > 0) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, dir,
				   "holds %lld quantized linear module(s); calibration runs the unquantized model",
				   (long long)m.n_quantized);
		goto done;
	}
	for (int64_t i = 0; i < n * len; i++)
		if (ids[i] < 0 || ids[i] >= c->vocab) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, "calib",
					   "window %lld, token %lld: id %d is outside the model's vocabulary (%lld)",
					   (long long)(i / len), (long long)(i % len), ids[i], (long long)c->vocab);
			goto done;
		}
	if ((st = ctq_smooth_stats_init(stats, c->layers, c->hidden, err)))
		goto done;
	slot = ctq_calloc((size_t)len, sizeof *slot);
	pos = ctq_malloc((size_t)len * sizeof *pos);
	if (!slot || !pos) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	for (int64_t t = 0; t < len; t++)
		pos[t] = (int32_t)t;
	for (int64_t w = 0; w < n && !st; w++)
		st = ctq_model_forward(&m, ids + w * len, slot, pos, len, NULL, 0, NULL, err);
done:
	ctq_free(slot);
	ctq_free(pos);
	ctq_model_close(&m);
	return st;
}
