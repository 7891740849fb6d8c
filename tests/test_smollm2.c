/* The real trained model of step 4: SmolLM2-135M-Instruct (Llama
 * architecture), imported from its Q4_1 GGUF by `make fixtures` and
 * quantized to W8A8. Skips with the reason when fixtures/ is absent (make
 * test never downloads). Checks greedy text for known prompts and the
 * W8A8-vs-BF16 logit distance on the reference backend. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "model/runner.h"
#include "text/tokenizer.h"
#include "tests/greedy.h"

#define BF16_DIR "fixtures/smollm2-135m-bf16"
#define W8A8_DIR "fixtures/smollm2-135m-w8a8"

static void need_fixtures(void)
{
	if (!ctq_path_is_dir(BF16_DIR) || !ctq_path_is_dir(W8A8_DIR))
		cr_skip_test("SmolLM2 fixtures absent (%s, %s): run `make fixtures`", BF16_DIR, W8A8_DIR);
}

static const struct ctq_runner_options opts = {.max_slots = 1, .max_len = 256, .max_tokens = 128};

static char *greedy(const char *dir, const char *prompt, int max_new)
{
	struct ctq_tokenizer tok;
	struct ctq_backend b;
	struct ctq_runner r;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_load(&tok, dir, &err), CTQ_OK, "%s", err.message);
	char chat[512];
	snprintf(chat, sizeof chat, "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n", prompt);
	int32_t *ids = NULL, *out = NULL;
	size_t n = 0;
	cr_assert_eq(ctq_tokenizer_encode(&tok, chat, strlen(chat), true, &ids, &n, &err), CTQ_OK);
	ctq_backend_reference(&b, &err);
	cr_assert_eq(ctq_runner_load(&r, &b, dir, &opts, &err), CTQ_OK, "%s", err.message);
	int64_t n_out = 0;
	test_greedy(&r, ids, (int64_t)n, max_new, false, &out, &n_out);
	char *text = NULL;
	size_t len = 0;
	cr_assert_eq(ctq_tokenizer_decode(&tok, out, (size_t)n_out, true, &text, &len, &err), CTQ_OK);
	free(ids), free(out);
	ctq_runner_free(&r);
	ctq_tokenizer_free(&tok);
	return text;
}

Test(smollm2, greedy_answers_are_coherent_in_bf16_and_w8a8, .timeout = 600)
{
	need_fixtures();
	const char *dirs[2] = {BF16_DIR, W8A8_DIR};
	for (int i = 0; i < 2; i++) {
		char *t = greedy(dirs[i], "What is the capital of France?", 12);
		cr_log_info("%s: %s", dirs[i], t);
		cr_expect(strstr(t, "Paris"), "%s answered: %s", dirs[i], t);
		free(t);
	}
}

Test(smollm2, w8a8_logits_close_to_bf16, .timeout = 600)
{
	need_fixtures();
	struct ctq_tokenizer tok;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_load(&tok, BF16_DIR, &err), CTQ_OK);
	const char *text = "The quick brown fox jumps over the lazy dog. In 1905, Albert Einstein published";
	int32_t *ids = NULL;
	size_t n = 0;
	cr_assert_eq(ctq_tokenizer_encode(&tok, text, strlen(text), true, &ids, &n, &err), CTQ_OK);
	float *lg[2];
	int64_t V = 0;
	const char *dirs[2] = {BF16_DIR, W8A8_DIR};
	for (int i = 0; i < 2; i++) {
		struct ctq_backend b;
		struct ctq_runner r;
		ctq_backend_reference(&b, &err);
		cr_assert_eq(ctq_runner_load(&r, &b, dirs[i], &opts, &err), CTQ_OK, "%s", err.message);
		V = r.cfg.vocab;
		int32_t *slot = calloc(n, 4), *pos = malloc(n * 4);
		int64_t *rows = malloc(n * 8);
		for (size_t k = 0; k < n; k++)
			pos[k] = (int32_t)k, rows[k] = (int64_t)k;
		lg[i] = malloc(n * (size_t)V * 4);
		cr_assert_eq(ctq_runner_forward(&r, ids, slot, pos, (int64_t)n, rows, (int64_t)n, lg[i], &err), CTQ_OK);
		free(slot), free(pos), free(rows);
		ctq_runner_free(&r);
	}
	double num = 0, den = 0;
	int agree = 0;
	for (size_t t = 0; t < n; t++) {
		int64_t a = 0, c = 0;
		for (int64_t v = 0; v < V; v++) {
			double d = (double)lg[1][t * V + v] - lg[0][t * V + v];
			num += d * d;
			den += (double)lg[0][t * V + v] * lg[0][t * V + v];
			if (lg[0][t * V + v] > lg[0][t * V + a])
				a = v;
			if (lg[1][t * V + v] > lg[1][t * V + c])
				c = v;
		}
		agree += a == c;
	}
	double rel = sqrt(num / den);
	cr_log_info("SmolLM2 W8A8 vs BF16: logit rel-L2 %.4f, top-1 agreement %d/%zu", rel, agree, n);
	/* Measured 0.167 (18/20 top-1) on 2026-11-29: plain per-token x
	 * per-channel W8A8, no smoothing, on a 135M model whose activations have
	 * outlier channels. The bound guards against regressions, not against
	 * quantization itself; the paired MMLU/C-Eval verdict judges that. */
	cr_expect(rel < 0.25, "logit rel-L2 %g", rel);
	cr_expect(agree * 10 >= (int)n * 7, "top-1 agreement %d/%zu", agree, n);
	free(lg[0]), free(lg[1]), free(ids);
	ctq_tokenizer_free(&tok);
}
