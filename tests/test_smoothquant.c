/* Criterion tests for the SmoothQuant recipe (checkpoint/smooth.h,
 * eval/calib.h, ctq quantize --recipe smoothquant) on the tiny synthetic
 * Qwen3 with outlier channels (vocab 2048, the gpt2-small tokenizer
 * fixture beside it). Checked: the scale formula against hand values, the
 * runner's observer against the norms' outputs (every calibration token
 * seen), that smoothing alone leaves the BF16 forward unchanged to BF16
 * rounding, that the smoothquant W8A8 checkpoint is closer to BF16 than the
 * RTN one, the recipe.yaml written, and that bad input exits 2 leaving no
 * OUT. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/fileio.h"
#include "harness/commands.h"
#include "checkpoint/quantize.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/smooth.h"
#include "checkpoint/synth.h"
#include "eval/calib.h"
#include "model/model.h"
#include "text/tokenizer.h"

#define TOKENIZER "tests/fixtures/tokenizers/gpt2-small/tokenizer.json"
#define CALIB_TEXT "tests/fixtures/tokenizers/corpus.txt"
#define PROMPT_TEXT "tests/fixtures/tokenizers/train.txt"

struct sq {
	char root[64], bf16[96];
};

/* The tiny outlier Qwen3 (vocab 2048) with the tokenizer fixture. */
static void sq_make(struct sq *f)
{
	snprintf(f->root, sizeof f->root, "/tmp/ctq-sq-XXXXXX");
	cr_assert(mkdtemp(f->root));
	snprintf(f->bf16, sizeof f->bf16, "%s/bf16", f->root);
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3", "tiny", &err), CTQ_OK, "%s", err.message);
	s.vocab_size = 2048;
	s.outliers = true;
	s.seed = 3;
	cr_assert_eq(ctq_synth_write(&s, f->bf16, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	char *data = NULL, *dst = ctq_path_join(f->bf16, "tokenizer.json");
	size_t n = 0;
	cr_assert_eq(ctq_file_read(TOKENIZER, (size_t)1 << 26, &data, &n, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_file_write_atomic(dst, data, n, &err), CTQ_OK, "%s", err.message);
	free(data);
	free(dst);
}

/* The model in `in` with every tensor as F32 (exact), config.json and
 * tokenizer.json copied, in dir. */
static void to_f32_model(const char *in, const char *dir)
{
	struct ctq_checkpoint ck;
	struct ctq_st_writer w;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&ck, in, &err), CTQ_OK);
	ctq_st_writer_init(&w);
	const size_t n = ctq_checkpoint_count(&ck);
	float **bufs = calloc(n, sizeof *bufs);
	cr_assert(bufs);
	for (size_t i = 0; i < n; i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&ck, i, NULL);
		cr_assert((bufs[i] = malloc(t->n_elements * sizeof **bufs)));
		cr_assert(ctq_convert_to_f32(t->data, t->dtype, t->n_elements, bufs[i]));
		cr_assert_eq(ctq_st_writer_add(&w, t->name, CTQ_DTYPE_F32, t->ndim, t->shape, bufs[i],
					       t->n_elements * 4, &err), CTQ_OK, "%s", err.message);
	}
	cr_assert_eq(ctq_checkpoint_write(dir, &w, 0, &err), CTQ_OK, "%s", err.message);
	static const char *const names[] = {"config.json", "tokenizer.json"};
	for (size_t k = 0; k < 2; k++) {
		char *src = ctq_path_join(in, names[k]), *dst = ctq_path_join(dir, names[k]), *text = NULL;
		size_t len = 0;
		cr_assert_eq(ctq_file_read(src, 1 << 26, &text, &len, &err), CTQ_OK);
		cr_assert_eq(ctq_file_write_atomic(dst, text, len, &err), CTQ_OK);
		free(text), free(src), free(dst);
	}
	ctq_st_writer_free(&w);
	for (size_t i = 0; i < n; i++)
		free(bufs[i]);
	free(bufs);
	ctq_checkpoint_close(&ck);
}

static char *sub(const struct sq *f, const char *name)
{
	char *p = ctq_path_join(f->root, name);
	cr_assert(p);
	return p;
}

/* Calibration statistics of f->bf16: 8 windows of 64 tokens of CALIB_TEXT. */
static void calibrate(const struct sq *f, struct ctq_smooth_stats *st)
{
	struct ctq_error err = {0};
	int32_t *ids = NULL;
	int64_t n_text = 0;
	cr_assert_eq(ctq_calib_windows(f->bf16, CALIB_TEXT, 8, 64, 0, &ids, &n_text, &err), CTQ_OK, "%s",
		     err.message);
	cr_assert_gt(n_text, 64);
	cr_assert_eq(ctq_calib_smooth_stats(f->bf16, NULL, ids, 8, 64, st, &err), CTQ_OK, "%s", err.message);
	ctq_free(ids);
}

/* Logits (n_prompts, T, V) of the model in dir on the reference backend over
 * n_prompts windows of T tokens of PROMPT_TEXT (seed 7). */
static float *logits_of(const char *dir, int64_t n_prompts, int64_t T, int64_t *V)
{
	struct ctq_error err = {0};
	int32_t *ids = NULL;
	int64_t n_text = 0;
	cr_assert_eq(ctq_calib_windows(dir, PROMPT_TEXT, n_prompts, T, 7, &ids, &n_text, &err), CTQ_OK,
		     "%s", err.message);
	struct ctq_model m;
	const struct ctq_model_options o = {
		.dir = dir, .backend = "reference", .tp = 1,
		.limits = {.max_slots = 1, .max_len = T, .max_tokens = T, .no_graphs = true}};
	cr_assert_eq(ctq_model_open(&m, &o, &err), CTQ_OK, "%s: %s", dir, err.message);
	*V = ctq_model_cfg(&m)->vocab;
	float *lg = ctq_malloc((size_t)(n_prompts * T * *V) * sizeof *lg);
	int32_t *slot = ctq_calloc((size_t)T, sizeof *slot), *pos = ctq_malloc((size_t)T * sizeof *pos);
	int64_t *rows = ctq_malloc((size_t)T * sizeof *rows);
	cr_assert(lg && slot && pos && rows);
	for (int64_t t = 0; t < T; t++)
		pos[t] = (int32_t)t, rows[t] = t;
	for (int64_t p = 0; p < n_prompts; p++)
		cr_assert_eq(ctq_model_forward(&m, ids + p * T, slot, pos, T, rows, T, lg + p * T * *V, &err),
			     CTQ_OK, "%s", err.message);
	ctq_model_close(&m);
	ctq_free(ids), ctq_free(slot), ctq_free(pos), ctq_free(rows);
	return lg;
}

static double rel_l2(const float *a, const float *b, size_t n)
{
	double d = 0, r = 0;
	for (size_t i = 0; i < n; i++) {
		d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		r += (double)b[i] * b[i];
	}
	cr_assert_gt(r, 0.0, "vacuous comparison: zero logits");
	return sqrt(d / r);
}

/* Mean over rows of KL(ref || q), rows of V logits. */
static double mean_kl(const float *ref, const float *q, int64_t rows, int64_t V)
{
	double sum = 0;
	for (int64_t r = 0; r < rows; r++) {
		double mr, mq;
		const double zr = ctq_log_softmax_norm(ref + r * V, V, &mr);
		const double zq = ctq_log_softmax_norm(q + r * V, V, &mq);
		double kl = 0;
		for (int64_t i = 0; i < V; i++) {
			const double lp = ref[r * V + i] - mr - zr, lq = q[r * V + i] - mq - zq;
			kl += exp(lp) * (lp - lq);
		}
		sum += kl;
	}
	return sum / (double)rows;
}

static int run_quantize(const char *const *args)
{
	char *argv[40];
	int argc = 0;
	argv[argc++] = (char *)"quantize";
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	return ctq_cmd_quantize(argc, argv);
}

Test(smoothquant, scales_follow_the_library_formula)
{
	/* s = range^a / wmax^(1-a); range where wmax == 0; at least 1e-5 */
	const float range[5] = {4.0f, 9.0f, 3.0f, 0.0f, 2.0f}, wmax[5] = {1.0f, 4.0f, 0.0f, 2.0f, 8.0f};
	float s[5];
	ctq_smooth_scales(range, wmax, 5, 0.5, CTQ_DTYPE_F32, s);
	cr_expect_float_eq(s[0], 2.0f, 1e-6f);
	cr_expect_float_eq(s[1], 1.5f, 1e-6f);
	cr_expect_eq(s[2], 3.0f);
	cr_expect_eq(s[3], CTQ_SMOOTH_MIN_SCALE);
	cr_expect_float_eq(s[4], 0.5f, 1e-6f);
	/* alpha 1: s = range; alpha 0: s = 1 / wmax */
	ctq_smooth_scales(range, wmax, 2, 1.0, CTQ_DTYPE_F32, s);
	cr_expect_eq(s[0], 4.0f);
	cr_expect_eq(s[1], 9.0f);
	ctq_smooth_scales(range, wmax, 2, 0.0, CTQ_DTYPE_F32, s);
	cr_expect_eq(s[0], 1.0f);
	cr_expect_eq(s[1], 0.25f);
	/* BF16: every step rounded to BF16, so s is a BF16 value */
	const float r3[1] = {3.0f}, w3[1] = {7.0f};
	ctq_smooth_scales(r3, w3, 1, 0.8, CTQ_DTYPE_BF16, s);
	cr_expect_eq(s[0], ctq_bf16_to_f32(ctq_f32_to_bf16(s[0])));
	const float a = ctq_bf16_to_f32(ctq_f32_to_bf16(powf(3.0f, 0.8f)));
	const float b = ctq_bf16_to_f32(ctq_f32_to_bf16(powf(7.0f, 0.2f)));
	cr_expect_eq(s[0], ctq_bf16_to_f32(ctq_f32_to_bf16(a / b)));
}

/* Smoothing alone moves a factor s_j from every norm weight into the next
 * linears' columns: exact in real numbers, so the only change is the BF16
 * rounding of the rescaled weights (g' and W' each get a fresh relative
 * error up to 2^-9 per element, and the normed activations x g / s round
 * to BF16 at other points than x g), carried through two layers to logits
 * of a random model: 0.7% rel-L2 here. The bound 1e-2 allows that and no
 * real error: a wrong column, a missing division or a scale on the wrong
 * side moves the logits by O(1). The F32 part below checks the transform
 * itself to f32 precision. */
Test(smoothquant, smoothing_alone_keeps_the_bf16_forward, .timeout = 120)
{
	struct sq f;
	sq_make(&f);
	struct ctq_smooth_stats st;
	calibrate(&f, &st);
	cr_expect_eq(st.n_rows, 8 * 64, "every calibration token observed once per layer");
	cr_expect_eq(st.layers, 2);
	cr_expect_eq(st.hidden, 64);
	/* the outlier channels of the synthetic norms dominate the ranges */
	double top = 0, med = 0;
	for (int64_t j = 0; j < st.hidden; j++) {
		const double r = (double)st.max[j] - st.min[j];
		top = r > top ? r : top;
		med += r / (double)st.hidden;
	}
	cr_expect_gt(top, 5 * med, "no outlier channel: top range %g, mean %g", top, med);
	char *sm = sub(&f, "smoothed");
	struct ctq_error err = {0};
	struct ctq_smooth_result res;
	cr_assert_eq(ctq_smooth_checkpoint(f.bf16, sm, &st, 0.8, &res, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(res.n_norms, 4);
	cr_expect_eq(res.n_linears, 10);
	cr_expect_gt(res.scale_max, 4 * res.scale_min, "vacuous: scales %g..%g", (double)res.scale_min,
		     (double)res.scale_max);
	int64_t V;
	float *ref = logits_of(f.bf16, 2, 48, &V);
	float *got = logits_of(sm, 2, 48, &V);
	const double e = rel_l2(got, ref, (size_t)(2 * 48 * V));
	cr_log_info("smoothed BF16 logits rel-L2 %.3g", e);
	cr_expect_lt(e, 1e-2, "smoothed BF16 logits rel-L2 %g", e);
	cr_expect_gt(e, 0.0, "the smoothed model is the original bit for bit: nothing was smoothed");
	/* The transform itself is exact up to the rounding of its output: on an
	 * F32 copy (the runner would round F32 weights to BF16 on load, so this
	 * is checked on the tensors), g'_j * W'[n, j] == g_j * W[n, j] to f32
	 * precision for q_proj under input_layernorm and up_proj under
	 * post_attention_layernorm, and W' = W * s exactly for a BF16-valued s. */
	char *f32 = sub(&f, "f32"), *f32s = sub(&f, "f32-smoothed");
	to_f32_model(f.bf16, f32);
	cr_assert_eq(ctq_smooth_checkpoint(f32, f32s, &st, 0.8, NULL, &err), CTQ_OK, "%s", err.message);
	struct ctq_checkpoint c0, c1;
	cr_assert_eq(ctq_checkpoint_open(&c0, f32, &err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_open(&c1, f32s, &err), CTQ_OK);
	static const char *const pairs[2][2] = {
		{"model.layers.0.input_layernorm.weight", "model.layers.0.self_attn.q_proj.weight"},
		{"model.layers.1.post_attention_layernorm.weight", "model.layers.1.mlp.up_proj.weight"}};
	for (int k = 0; k < 2; k++) {
		const struct ctq_st_tensor *g0 = ctq_checkpoint_find(&c0, pairs[k][0], NULL);
		const struct ctq_st_tensor *g1 = ctq_checkpoint_find(&c1, pairs[k][0], NULL);
		const struct ctq_st_tensor *w0 = ctq_checkpoint_find(&c0, pairs[k][1], NULL);
		const struct ctq_st_tensor *w1 = ctq_checkpoint_find(&c1, pairs[k][1], NULL);
		cr_assert(g0 && g1 && w0 && w1);
		cr_assert_eq(w1->dtype, CTQ_DTYPE_F32);
		const float *ga = g0->data, *gb = g1->data, *wa = w0->data, *wb = w1->data;
		const int64_t H = g0->shape[0], N = w0->shape[0];
		double worst = 0;
		int64_t moved = 0;
		for (int64_t j = 0; j < H; j++) {
			moved += fabsf(gb[j] / ga[j] - 1.0f) > 0.01f;
			for (int64_t n = 0; n < N; n++) {
				const double a = (double)ga[j] * wa[n * H + j], b = (double)gb[j] * wb[n * H + j];
				const double r = a ? fabs(b - a) / fabs(a) : fabs(b);
				worst = r > worst ? r : worst;
			}
		}
		cr_expect_lt(worst, 1e-6, "%s: g' W' differs from g W by %g", pairs[k][1], worst);
		cr_expect_gt(moved, H / 2, "%s: only %lld of %lld channels rescaled", pairs[k][0],
			     (long long)moved, (long long)H);
	}
	ctq_checkpoint_close(&c0);
	ctq_checkpoint_close(&c1);
	free(f32), free(f32s);
	/* alpha outside [0, 1] is refused */
	char *bad = sub(&f, "bad");
	cr_expect_eq(ctq_smooth_checkpoint(f.bf16, bad, &st, 1.5, NULL, &err), CTQ_ERR_USAGE);
	cr_expect_not(ctq_path_exists(bad));
	ctq_smooth_stats_free(&st);
	ctq_free(ref), ctq_free(got);
	ctq_remove_tree(f.root);
	free(sm), free(bad);
}

Test(smoothquant, w8a8_is_closer_to_bf16_than_rtn, .timeout = 180)
{
	struct sq f;
	sq_make(&f);
	char *rtn = sub(&f, "rtn"), *sq = sub(&f, "sq");
	const char *a_rtn[] = {f.bf16, rtn, "--quiet", NULL};
	cr_assert_eq(run_quantize(a_rtn), CTQ_EXIT_OK);
	const char *a_sq[] = {f.bf16, sq, "--quiet", "--recipe", "smoothquant", "--calib", CALIB_TEXT,
			      "--calib-samples", "8", "--calib-len", "64", NULL};
	cr_assert_eq(run_quantize(a_sq), CTQ_EXIT_OK);
	int64_t V;
	const int64_t P = 4, T = 48;
	float *ref = logits_of(f.bf16, P, T, &V);
	float *lr = logits_of(rtn, P, T, &V);
	float *ls = logits_of(sq, P, T, &V);
	const double kr = mean_kl(ref, lr, P * T, V), ks = mean_kl(ref, ls, P * T, V);
	const double er = rel_l2(lr, ref, (size_t)(P * T * V)), es = rel_l2(ls, ref, (size_t)(P * T * V));
	cr_log_info("mean KL rtn %.4g sq %.4g; rel-L2 rtn %.4g sq %.4g", kr, ks, er, es);
	cr_expect_lt(ks, kr, "smoothquant KL %g not below rtn's %g", ks, kr);
	cr_expect_lt(es, er, "smoothquant rel-L2 %g not below rtn's %g", es, er);
	cr_expect_gt(kr, 0.0);
	/* the recipe is recorded */
	char *ry = ctq_path_join(sq, "recipe.yaml"), *text = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(ry, 1 << 20, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(text, "    SmoothQuantModifier:\n      smoothing_strength: 0.8\n"), "%s", text);
	cr_expect(strstr(text, "- - ['re:.*q_proj', 're:.*k_proj', 're:.*v_proj']\n"
			       "        - 're:.*input_layernorm'\n"), "%s", text);
	cr_expect(strstr(text, "    QuantizationModifier:\n      targets: [Linear]\n      ignore: ['lm_head']\n"
			       "      scheme: W8A8\n"), "%s", text);
	free(text);
	free(ry);
	ry = ctq_path_join(rtn, "recipe.yaml");
	cr_assert_eq(ctq_file_read(ry, 1 << 20, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect_null(strstr(text, "SmoothQuantModifier"), "%s", text);
	cr_expect(strstr(text, "QuantizationModifier"), "%s", text);
	free(text);
	free(ry);
	/* the same seed gives the same checkpoint; nothing is left beside OUT */
	char *sq2 = sub(&f, "sq2");
	const char *a_sq2[] = {f.bf16, sq2, "--quiet", "--recipe", "smoothquant", "--calib", CALIB_TEXT,
			       "--calib-samples", "8", "--calib-len", "64", NULL};
	cr_assert_eq(run_quantize(a_sq2), CTQ_EXIT_OK);
	char *s1 = ctq_path_join(sq, "model.safetensors"), *s2 = ctq_path_join(sq2, "model.safetensors");
	char *d1 = NULL, *d2 = NULL;
	size_t n1 = 0, n2 = 0;
	cr_assert_eq(ctq_file_read(s1, 1 << 26, &d1, &n1, &err), CTQ_OK);
	cr_assert_eq(ctq_file_read(s2, 1 << 26, &d2, &n2, &err), CTQ_OK);
	cr_expect(n1 == n2 && !memcmp(d1, d2, n1), "two runs with one seed differ");
	/* --calib-ids with the text's own ids (one per line) is the same calibration */
	struct ctq_tokenizer tok;
	cr_assert_eq(ctq_tokenizer_load(&tok, TOKENIZER, &err), CTQ_OK, "%s", err.message);
	cr_assert_not(tok.adds_bos, "the fixture adds a BOS: --calib would lead each window with it");
	char *ctext = NULL;
	size_t clen = 0, n_ids = 0;
	int32_t *all = NULL;
	cr_assert_eq(ctq_file_read(CALIB_TEXT, 1 << 26, &ctext, &clen, &err), CTQ_OK);
	cr_assert_eq(ctq_tokenizer_encode(&tok, ctext, clen, false, &all, &n_ids, &err), CTQ_OK);
	char *idf = sub(&f, "calib.ids"), *sq3 = sub(&f, "sq3");
	FILE *fp = fopen(idf, "w");
	cr_assert(fp);
	for (size_t i = 0; i < n_ids; i++)
		fprintf(fp, "%d%s", all[i], i % 7 == 6 ? "\n" : " ");
	cr_assert_eq(fclose(fp), 0);
	const char *a_sq3[] = {f.bf16, sq3, "--quiet", "--recipe", "smoothquant", "--calib-ids", idf,
			       "--calib-samples", "8", "--calib-len", "64", NULL};
	cr_assert_eq(run_quantize(a_sq3), CTQ_EXIT_OK);
	char *s3 = ctq_path_join(sq3, "model.safetensors"), *d3 = NULL;
	size_t n3 = 0;
	cr_assert_eq(ctq_file_read(s3, 1 << 26, &d3, &n3, &err), CTQ_OK);
	cr_expect(n1 == n3 && !memcmp(d1, d3, n1), "--calib-ids with the text's ids differs from --calib");
	free(d3), free(s3), free(idf), free(sq3), free(ctext), free(all);
	ctq_tokenizer_free(&tok);
	DIR *d = opendir(f.root);
	cr_assert(d);
	struct dirent *e;
	while ((e = readdir(d)))
		cr_expect_null(strstr(e->d_name, ".tmp-"), "leftover %s", e->d_name);
	closedir(d);
	free(d1), free(d2), free(s1), free(s2);
	ctq_free(ref), ctq_free(lr), ctq_free(ls);
	ctq_remove_tree(f.root);
	free(rtn), free(sq), free(sq2);
}

Test(smoothquant, bad_input_exits_2_and_leaves_no_out, .timeout = 120)
{
	struct sq f;
	sq_make(&f);
	char *out = sub(&f, "out"), *short_text = sub(&f, "short.txt"), *notok = sub(&f, "notok");
	char *bad_ids = sub(&f, "bad.ids"), *big_ids = sub(&f, "big.ids");
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_write_atomic(short_text, "a few words", 11, &err), CTQ_OK);
	cr_assert_eq(ctq_file_write_atomic(bad_ids, "1 2 3x 4\n", 9, &err), CTQ_OK);
	char big[4096];
	size_t nb = 0;
	for (int i = 0; i < 100; i++)
		nb += (size_t)snprintf(big + nb, sizeof big - nb, "%d ", i == 50 ? 4096 : i);
	cr_assert_eq(ctq_file_write_atomic(big_ids, big, nb, &err), CTQ_OK);
	/* the model without its tokenizer */
	struct ctq_synth_spec s;
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3", "tiny", &err), CTQ_OK);
	s.vocab_size = 2048;
	cr_assert_eq(ctq_synth_write(&s, notok, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	const struct {
		const char *id;
		const char *args[14];
	} bad[] = {
		{"recipe-unknown", {f.bf16, out, "--recipe", "awq", "--calib", CALIB_TEXT}},
		{"no-calib", {f.bf16, out, "--recipe", "smoothquant"}},
		{"calib-with-rtn", {f.bf16, out, "--calib", CALIB_TEXT}},
		{"alpha-above-1", {f.bf16, out, "--recipe", "smoothquant", "--calib", CALIB_TEXT,
				   "--smoothing-strength", "1.5"}},
		{"alpha-negative", {f.bf16, out, "--recipe", "smoothquant", "--calib", CALIB_TEXT,
				    "--smoothing-strength", "-0.1"}},
		{"alpha-not-a-number", {f.bf16, out, "--recipe", "smoothquant", "--calib", CALIB_TEXT,
					"--smoothing-strength", "0.5x"}},
		{"calib-too-short", {f.bf16, out, "--recipe", "smoothquant", "--calib", short_text}},
		{"calib-missing", {f.bf16, out, "--recipe", "smoothquant", "--calib", "/nonexistent/calib.txt"}},
		{"no-tokenizer", {notok, out, "--recipe", "smoothquant", "--calib", CALIB_TEXT}},
		{"calib-len-1", {f.bf16, out, "--recipe", "smoothquant", "--calib", CALIB_TEXT, "--calib-len", "1"}},
		{"calib-and-ids", {f.bf16, out, "--recipe", "smoothquant", "--calib", CALIB_TEXT, "--calib-ids",
				   big_ids}},
		{"ids-with-rtn", {f.bf16, out, "--calib-ids", big_ids}},
		{"ids-not-integers", {f.bf16, out, "--recipe", "smoothquant", "--calib-ids", bad_ids,
				      "--calib-len", "2"}},
		{"ids-too-few", {f.bf16, out, "--recipe", "smoothquant", "--calib-ids", big_ids}},
		{"ids-outside-vocab", {f.bf16, out, "--recipe", "smoothquant", "--calib-ids", big_ids,
				       "--calib-len", "100"}},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *args[18] = {0};
		size_t k = 0;
		for (; bad[i].args[k]; k++)
			args[k] = bad[i].args[k];
		args[k++] = "--quiet";
		args[k] = NULL;
		cr_expect_eq(run_quantize(args), CTQ_EXIT_USAGE, "%s", bad[i].id);
		cr_expect_not(ctq_path_exists(out), "%s created OUT", bad[i].id);
	}
	/* the library-level errors name the path */
	int32_t *ids = NULL;
	int64_t n_text = 0;
	cr_expect_eq(ctq_calib_windows(notok, CALIB_TEXT, 1, 64, 0, &ids, &n_text, &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.path, "tokenizer.json"), "path %s", err.path);
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_calib_windows(f.bf16, short_text, 1, 64, 0, &ids, &n_text, &err), CTQ_ERR_USAGE);
	cr_expect_str_eq(err.path, short_text);
	cr_expect(strstr(err.message, "tokens"), "%s", err.message);
	cr_expect_null(ids);
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_calib_windows_ids(bad_ids, 1, 2, 0, &ids, &n_text, &err), CTQ_ERR_USAGE);
	cr_expect_str_eq(err.path, bad_ids);
	cr_expect(strstr(err.message, "byte 5"), "%s", err.message);
	ctq_remove_tree(f.root);
	free(out), free(short_text), free(notok), free(bad_ids), free(big_ids);
}
