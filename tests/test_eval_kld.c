/* Criterion tests for ctq eval kld (eval/kld.c, stats/kld.c,
 * families/eval_kld.c) and quantize --weight-bits, on the CPU reference
 * backend with a tiny synthetic Qwen3 (vocabulary 2048, so the small
 * GPT-2-layout tokenizer fixture's ids fit):
 *   - the KL / log-softmax arithmetic against hand-computed values;
 *   - the N-bit weight grid;
 *   - a model against itself: KL exactly 0, top-1 100%;
 *   - W8 non-inferior (exit 0) and W4, W3, W2 inferior (exit 1) under the
 *     default policy (policies/kld.json), and the KL growing from 8 down to
 *     2 bits;
 *   - text shorter than one window refused with the numbers (exit 2);
 *   - eval_kld.csv written and read back;
 *   - ctq compare flags a planted growth of the KL and passes a run against
 *     itself.
 *
 * The model. With tied N(0, 0.02) embeddings a random model's hidden state
 * is mostly its input token's embedding, so its logits peak at that token by
 * a margin no quantization moves, and at a norm gain of 1 its next-token
 * distributions are near uniform (perplexity ~2,000 of 2,048): the default
 * policy then calls every width down to 2 bits non-inferior. This model
 * instead has its own lm_head (--untied) and a final-norm gain of 10
 * (--logit-gain 10), so its distributions have a trained model's peak and a
 * top token that quantization noise can flip: the thresholds reasoned from
 * real models (0.05 nats, 90% top-1, 1.05 ppl ratio) then apply unchanged.
 * Measured (reference backend, this text): W8 7.9e-5 nats / 98.5% top-1,
 * W6 7.6e-4 / 94.5%, W5 3.0e-3 / 91.4% (inconclusive), W4 0.014 / 80.4%,
 * W3 0.077 / 60.9%, W2 0.44 / 25.9%. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/numerics.h"
#include "core/sha256.h"
#include "eval/kld.h"
#include "families/eval_kld.h"
#include "harness/commands.h"
#include "reports/report.h"
#include "results/table.h"
#include "stats/kld.h"
#include "tests/model_fixture.h"

#define TOKENIZER "tests/fixtures/tokenizers/gpt2-small"
#define VOCAB 2048
#define CTX "128"

static void one_thread(void)
{
	omp_set_num_threads(1);
}

TestSuite(eval_kld, .init = one_thread);

/* ---- arithmetic ------------------------------------------------------------------- */

Test(eval_kld, kl_against_hand_computed)
{
	/* ref (1, 2, 3) against new (3, 2, 1): the log-sum-exps are equal, so
	 * log p_ref - log p_new = (-2, 0, 2) and KL = 2 (e^3 - e) / (e + e^2 + e^3)
	 * = 1.1504207652088831 (Python's math, in double). */
	const float a[3] = {1, 2, 3}, b[3] = {3, 2, 1};
	struct ctq_kld_token t;
	ctq_stats_kld_token(a, b, 3, 0, &t);
	cr_expect(fabs(t.kl - 1.1504207652088831) < 1e-12, "kl %.17g", t.kl);
	cr_expect(fabs(t.lp_ref - -2.40760596444438) < 1e-12, "lp_ref %.17g", t.lp_ref);
	cr_expect(fabs(t.lp_new - (3 - log(exp(1) + exp(2) + exp(3)))) < 1e-12, "lp_new %.17g", t.lp_new);
	cr_expect_eq(t.top_ref, 2);
	cr_expect_eq(t.top_new, 0);
	/* Unequal normalizers: KL 0.22356495624278327, log p_new(3) -1.1559565157146336. */
	const float c[4] = {0.5f, -1.0f, 2.0f, 0.0f}, d[4] = {0.25f, -0.5f, 1.0f, 0.75f};
	ctq_stats_kld_token(c, d, 4, 3, &t);
	cr_expect(fabs(t.kl - 0.22356495624278327) < 1e-12, "kl %.17g", t.kl);
	cr_expect(fabs(t.lp_new - -1.1559565157146336) < 1e-12, "lp_new %.17g", t.lp_new);
	ctq_stats_kld_token(c, c, 4, 1, &t);
	cr_expect_eq(t.kl, 0.0, "identical logits: kl %.17g", t.kl);
	cr_expect_eq(t.top_ref, t.top_new);
	cr_expect(fabs(ctq_stats_logsumexp_f32(a, 3) - log(exp(1) + exp(2) + exp(3))) < 1e-12);
}

Test(eval_kld, quantiles_and_bootstrap)
{
	const double v[5] = {1, 2, 3, 4, 10};
	cr_expect_eq(ctq_quantile_sorted(v, 5, 0.5), 3);
	cr_expect(fabs(ctq_quantile_sorted(v, 5, 0.9) - 7.6) < 1e-12); /* numpy: 7.6 */
	cr_expect_eq(ctq_quantile_sorted(v, 5, 1.0), 10);
	cr_expect(isnan(ctq_quantile_sorted(v, 0, 0.5)));
	const double num[4] = {1, 2, 3, 4}, den[4] = {10, 10, 10, 10};
	double lo, hi;
	cr_assert_eq(ctq_stats_ratio_bootstrap(num, den, 4, 2000, 1, 0.95, &lo, &hi), 0);
	cr_expect(lo < 0.25 && hi > 0.25 && lo >= 0.1 && hi <= 0.4, "[%g, %g]", lo, hi);
	double lo2, hi2;
	ctq_stats_ratio_bootstrap(num, den, 4, 2000, 1, 0.95, &lo2, &hi2);
	cr_expect(lo == lo2 && hi == hi2, "seeded: repeatable");
	ctq_stats_ratio_bootstrap(num, den, 1, 2000, 1, 0.95, &lo, &hi);
	cr_expect(lo == 0.1 && hi == 0.1, "one block: no spread");
}

Test(eval_kld, weight_bits_grid)
{
	/* One row, amax 1.4: at 4 bits q_max 7, scale 0.2, q = rint(w / 0.2). */
	const float w[6] = {1.4f, -1.4f, 0.31f, -0.29f, 0.0f, 0.7f};
	int8_t q[6];
	float s;
	double e2, w2;
	cr_assert_eq(ctq_quantize_weight_bits(w, CTQ_DTYPE_F32, 1, 6, 4, q, &s, &e2, &w2), -1);
	cr_expect_eq(s, ctq_weight_scale_bits(1.4f, 4));
	cr_expect(fabs(s - 0.2f) < 1e-7f, "scale %g", s);
	const int8_t want[6] = {7, -7, 2, -1, 0, 4}; /* 0.31/0.2 = 1.55 -> 2; 0.7/0.2 = 3.5 -> 4 (even) */
	for (int k = 0; k < 6; k++)
		cr_expect_eq(q[k], want[k], "q[%d] = %d, want %d", k, q[k], want[k]);
	/* 2 bits: q in {-1, 0, 1}. 8 bits: the producer's rule itself. */
	ctq_quantize_weight_bits(w, CTQ_DTYPE_F32, 1, 6, 2, q, &s, &e2, &w2);
	for (int k = 0; k < 6; k++)
		cr_expect(q[k] >= -1 && q[k] <= 1, "q[%d] = %d", k, q[k]);
	int8_t q8[6], qd[6];
	float s8, sd;
	ctq_quantize_weight_bits(w, CTQ_DTYPE_F32, 1, 6, 8, q8, &s8, &e2, &w2);
	ctq_quantize_weight(w, CTQ_DTYPE_F32, 1, 6, qd, &sd, &e2, &w2);
	cr_expect(!memcmp(q8, qd, 6) && s8 == sd);
	cr_expect_eq(ctq_quantize_bits(-100.0f, 1.0f, 3), -3);
	cr_expect_eq(ctq_quantize_bits(2.5f, 1.0f, 3), 2);
}

/* ---- the command ------------------------------------------------------------------ */

struct models {
	struct fixture f;
	char w[9][112];  /* w[b]: the b-bit model, 2..7; w[8] is f.w8a8 */
	char text[112], short_text[112];
};

static void write_file(const char *path, const char *s, size_t n)
{
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_write_atomic(path, s, n, &err), CTQ_OK, "%s", err.message);
}

static void concat(const char *out, const char *a, const char *b)
{
	char *ta = NULL, *tb = NULL;
	size_t na = 0, nb = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(a, 1 << 20, &ta, &na, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_file_read(b, 1 << 20, &tb, &nb, &err), CTQ_OK, "%s", err.message);
	char *t = malloc(na + nb);
	cr_assert(t);
	memcpy(t, ta, na);
	memcpy(t + na, tb, nb);
	write_file(out, t, na + nb);
	free(t), free(ta), free(tb);
}

static void make_models(struct models *m, const int *bits, int n_bits)
{
	memset(m, 0, sizeof *m);
	fixture_make_ex(&m->f, "kld", VOCAB, 7, true, 10);
	char dir[64];
	snprintf(dir, sizeof dir, "%s", m->f.dir);
	snprintf(m->w[8], sizeof m->w[8], "%s/w8a8", dir);
	for (int i = 0; i < n_bits; i++) {
		int b = bits[i];
		snprintf(m->w[b], sizeof m->w[b], "%s/w%d", dir, b);
		struct ctq_quantize_options o = {.weight_bits = b};
		struct ctq_quantize_result res;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_quantize_checkpoint(m->f.bf16, m->w[b], &o, &res, &err), CTQ_OK, "%s",
			     err.message);
		ctq_quantize_result_free(&res);
	}
	snprintf(m->text, sizeof m->text, "%s/text.txt", dir);
	concat(m->text, "tests/fixtures/tokenizers/corpus.txt", "tests/fixtures/tokenizers/train.txt");
	snprintf(m->short_text, sizeof m->short_text, "%s/short.txt", dir);
	write_file(m->short_text, "Too short for a window of 128 tokens.\n", 38);
}

/* `ctq eval ARGS...` (NULL-terminated, at most 31), its exit code. */
static int run_eval(const char *const *args)
{
	char *argv[32];
	int argc = 0;
	for (; args[argc]; argc++) {
		cr_assert_lt(argc, 31);
		argv[argc] = (char *)args[argc];
	}
	argv[argc] = NULL;
	fflush(stdout);
	return ctq_cmd_eval(argc, argv);
}

static int run_kld(const char *model, const char *ref, const char *text, const char *out)
{
	const char *args[] = {"eval", "kld", "--model", model, "--ref-model", ref,
			      "--tokenizer", TOKENIZER, "--text", text, "--backend", "reference",
			      "--ctx", CTX, "--out", out, "--force", NULL};
	return run_eval(args);
}

/* The "(all)" row of a run's eval_kld_summary.csv. */
static void overall(const char *run, double *kl, double *top1, char *verdict, size_t cap)
{
	char path[256];
	snprintf(path, sizeof path, "%s/eval_kld_summary.csv", run);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	cr_assert(t.n_rows >= 2);
	size_t last = t.n_rows - 1;
	cr_assert_str_eq(ctq_table_get(&t, last, ctq_table_col(&t, "source")), "(all)");
	*kl = ctq_table_num(&t, last, ctq_table_col(&t, "kl_mean_nats"));
	*top1 = ctq_table_num(&t, last, ctq_table_col(&t, "top1"));
	snprintf(verdict, cap, "%s", ctq_table_get(&t, last, ctq_table_col(&t, "verdict")));
	ctq_table_free(&t);
}

Test(eval_kld, self_is_zero)
{
	struct models m;
	make_models(&m, NULL, 0);
	char out[160];
	snprintf(out, sizeof out, "%s/self", m.f.dir);
	cr_assert_eq(run_kld(m.f.bf16, m.f.bf16, m.text, out), 0);
	double kl, top1;
	char v[32];
	overall(out, &kl, &top1, v, sizeof v);
	cr_expect_eq(kl, 0.0, "KL of a model against itself: %.17g", kl);
	cr_expect_eq(top1, 1.0, "top-1 %.17g", top1);
	cr_expect_str_eq(v, "non-inferior");
	/* Every window's KL sum is 0 too, and the CSV reads back. */
	char path[256];
	snprintf(path, sizeof path, "%s/eval_kld.csv", out);
	struct ctq_kld_windows w;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_fam_eval_kld_read_windows(&w, path, &err), CTQ_OK, "%s", err.message);
	cr_expect_geq(w.n, 2);
	for (size_t i = 0; i < w.n; i++) {
		cr_expect_eq(w.w[i].kl_sum, 0.0);
		cr_expect_eq(w.w[i].agree, (size_t)w.w[i].n);
		cr_expect_eq(w.w[i].nll_ref, w.w[i].nll_new);
	}
	ctq_fam_eval_kld_windows_free(&w);
	fixture_drop(&m.f);
}

Test(eval_kld, w8_passes_w4_fails_and_kl_grows_with_fewer_bits, .timeout = 120)
{
	static const int bits[] = {2, 3, 4, 5, 6, 7};
	struct models m;
	make_models(&m, bits, 6);
	double kl[9], top1[9];
	char v[9][32], sweep[160];
	snprintf(sweep, sizeof sweep, "%s/sweep", m.f.dir);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_mkdirs(sweep, &err), CTQ_OK, "%s", err.message);
	for (int b = 8; b >= 2; b--) {
		char out[200];
		snprintf(out, sizeof out, "%s/w%d", sweep, b);
		int rc = run_kld(m.w[b], m.f.bf16, m.text, out);
		overall(out, &kl[b], &top1[b], v[b], sizeof v[b]);
		cr_log_info("tiny qwen3 W%d vs BF16: mean KL %.4g nats, top-1 %.2f%%, %s (exit %d)", b,
			    kl[b], 100 * top1[b], v[b], rc);
		if (b == 8)
			cr_expect_eq(rc, 0, "W8: exit %d (%s)", rc, v[b]);
		if (b <= 4) {
			cr_expect_eq(rc, 1, "W%d: exit %d (%s)", b, rc, v[b]);
			cr_expect_str_eq(v[b], "inferior", "W%d", b);
		}
		if (b < 8)
			cr_expect_gt(kl[b], kl[b + 1], "KL grows from %d to %d bits: %.6g -> %.6g", b + 1,
				     b, kl[b + 1], kl[b]);
	}
	cr_expect_str_eq(v[8], "non-inferior");
	/* The report of the runs together: the sensitivity line, widest first. */
	char path[256];
	snprintf(path, sizeof path, "%s/manifest.json", sweep);
	write_file(path, "{}\n", 3);
	struct ctq_report_summary sum;
	cr_assert_eq(ctq_report_write(sweep, NULL, &sum, &err), CTQ_OK, "%s", err.message);
	snprintf(path, sizeof path, "%s/summary.md", sweep);
	char *md = NULL;
	size_t n = 0;
	cr_assert_eq(ctq_file_read(path, 1 << 22, &md, &n, &err), CTQ_OK, "%s", err.message);
	const char *sens = strstr(md, "Sensitivity: KL against the candidate's weight bits");
	cr_expect(sens, "%s", md);
	cr_expect(sens && strstr(sens, "| 8 |") && strstr(sens, "| 2 |") &&
		  strstr(sens, "| 8 |") < strstr(sens, "| 2 |"), "%s", sens ? sens : md);
	free(md);
	fixture_drop(&m.f);
}

Test(eval_kld, refuses_text_shorter_than_a_window)
{
	struct models m;
	make_models(&m, NULL, 0);
	char out[160];
	snprintf(out, sizeof out, "%s/short", m.f.dir);
	cr_expect_eq(run_kld(m.w[8], m.f.bf16, m.short_text, out), 2);
	cr_expect(!ctq_path_exists(out), "nothing written");
	/* The message gives the numbers. */
	const char *texts[] = {m.short_text};
	struct ctq_kld_options o = {.model = m.w[8], .ref = m.f.bf16, .backend = "reference",
				    .tokenizer = TOKENIZER, .texts = texts, .n_texts = 1, .ctx = 128,
				    .tp = 1};
	struct ctq_kld_run r;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_kld_open(&r, &o, &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "tokenizes to ") && strstr(err.message, "(38 bytes)") &&
		  strstr(err.message, "--ctx 128"), "%s", err.message);
	ctq_kld_free(&r);
	/* A --max-tokens under one window names both counts. */
	texts[0] = m.text;
	o.max_tokens = 100;
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_kld_open(&r, &o, &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "--max-tokens 100 leaves 100 of its"), "%s", err.message);
	ctq_kld_free(&r);
	fixture_drop(&m.f);
}

Test(eval_kld, windows_round_trip)
{
	char dir[] = "/tmp/ctq-kldcsv-XXXXXX";
	cr_assert(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/eval_kld.csv", dir);
	const char *names[] = {"a \"quoted\", name", "ceval/val"};
	const struct ctq_kld_window w[3] = {
		{.source = 0, .index = 0, .start = 0, .n = 63, .kl_sum = 0.1 / 3, .kl_median = 1e-300,
		 .kl_max = 0.7, .agree = 60, .nll_ref = 123.456789012345678, .nll_new = 130.5},
		{.source = 0, .index = 1, .start = 128, .n = 63, .kl_sum = 0, .agree = 63},
		{.source = 1, .index = 0, .start = 0, .n = 1, .kl_sum = 5e-17, .kl_max = 5e-17,
		 .agree = 0, .nll_ref = 1, .nll_new = 2}};
	struct ctq_error err = {0};
	cr_assert_eq(ctq_fam_eval_kld_write_windows(path, w, 3, names, &err), CTQ_OK, "%s", err.message);
	struct ctq_kld_windows r;
	cr_assert_eq(ctq_fam_eval_kld_read_windows(&r, path, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(r.n, 3);
	cr_assert_eq(r.n_sources, 2);
	cr_expect_str_eq(r.names[0], names[0]);
	cr_expect_str_eq(r.names[1], names[1]);
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(r.w[i].source, w[i].source);
		cr_expect_eq(r.w[i].index, w[i].index);
		cr_expect_eq(r.w[i].start, w[i].start);
		cr_expect_eq(r.w[i].n, w[i].n);
		cr_expect_eq(r.w[i].kl_sum, w[i].kl_sum, "row %zu: %.17g", i, r.w[i].kl_sum);
		cr_expect_eq(r.w[i].kl_median, w[i].kl_median);
		cr_expect_eq(r.w[i].kl_max, w[i].kl_max);
		cr_expect_eq(r.w[i].agree, w[i].agree);
		cr_expect_eq(r.w[i].nll_ref, w[i].nll_ref);
		cr_expect_eq(r.w[i].nll_new, w[i].nll_new);
	}
	ctq_fam_eval_kld_windows_free(&r);
	/* A count that is not a count is refused with its row. */
	const char bad[] = "source,window,start_token,tokens,kl_sum_nats,kl_median_nats,kl_max_nats,"
			   "top1_agree,nll_ref_sum_nats,nll_new_sum_nats\r\nx,0,0,-3,0,0,0,0,0,0\r\n";
	write_file(path, bad, sizeof bad - 1);
	cr_expect_eq(ctq_fam_eval_kld_read_windows(&r, path, &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "row 2: tokens"), "%s", err.message);
	ctq_remove_tree(dir);
}

static int compare(const char *base, const char *cand, const char *out)
{
	const char *args[] = {"compare", base, cand, "--out", out, "--force", "--quiet", NULL};
	char *argv[8];
	for (int i = 0; i < 8; i++)
		argv[i] = (char *)args[i];
	fflush(stdout);
	return ctq_cmd_compare(7, argv);
}

Test(eval_kld, compare_flags_a_planted_kl_growth)
{
	/* W6: non-inferior, with a KL (8e-4 nats) above kld.mean_floor, so that
	 * growth can gate. */
	static const int bits[] = {6};
	struct models m;
	make_models(&m, bits, 1);
	char base[160], planted[160], cmp[160], cmd[400];
	snprintf(base, sizeof base, "%s/base", m.f.dir);
	snprintf(planted, sizeof planted, "%s/planted", m.f.dir);
	snprintf(cmp, sizeof cmp, "%s/cmp", m.f.dir);
	cr_assert_eq(run_kld(m.w[6], m.f.bf16, m.text, base), 0);
	cr_expect_eq(compare(base, base, cmp), 0, "a run against itself");
	/* The new side: the same windows, each KL sum x3 (beyond kld.mean_factor). */
	snprintf(cmd, sizeof cmd, "cp -r %s %s", base, planted);
	cr_assert_eq(system(cmd), 0);
	char path[256];
	snprintf(path, sizeof path, "%s/eval_kld.csv", planted);
	struct ctq_kld_windows w;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_fam_eval_kld_read_windows(&w, path, &err), CTQ_OK, "%s", err.message);
	for (size_t i = 0; i < w.n; i++)
		w.w[i].kl_sum *= 3;
	cr_assert_eq(ctq_fam_eval_kld_write_windows(path, w.w, w.n, (const char *const *)w.names, &err),
		     CTQ_OK, "%s", err.message);
	ctq_fam_eval_kld_windows_free(&w);
	cr_expect_eq(compare(base, planted, cmp), 1, "x3 KL is a regression");
	snprintf(path, sizeof path, "%s/compare.csv", cmp);
	char *text = NULL;
	size_t n = 0;
	cr_assert_eq(ctq_file_read(path, 1 << 20, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(text, "\"kld\",\"eval_kld.csv\",\"(all windows)\",\"mean KL nats\""), "%s", text);
	cr_expect(strstr(text, "\"regression\",\"true\",\"true\""), "%s", text);
	free(text);
	/* The base against the planted side: an improvement, no regression. */
	cr_expect_eq(compare(planted, base, cmp), 0);
	fixture_drop(&m.f);
}

Test(eval_kld, policy_file_is_the_built_in)
{
	struct ctq_kld_policy def, file;
	struct ctq_error err = {0};
	ctq_kld_policy_default(&def);
	ctq_kld_policy_default(&file);
	cr_assert_eq(ctq_kld_policy_load(&file, "policies/kld.json", &err), CTQ_OK, "%s: %s", err.path,
		     err.message);
	for (int k = 0; k < CTQ_KLD_N_CRIT; k++) {
		cr_expect_eq(file.v[k], def.v[k], "%s", ctq_kld_criterion_name(k));
		cr_expect_str_eq(file.reason[k], def.reason[k], "%s", ctq_kld_criterion_name(k));
	}
	/* An entry without its reason is refused. */
	char dir[] = "/tmp/ctq-kldpol-XXXXXX";
	cr_assert(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/p.json", dir);
	write_file(path, "{\"top1_min\": {\"value\": 0.5}}", 28);
	cr_expect_eq(ctq_kld_policy_load(&file, path, &err), CTQ_ERR_INVALID_CONFIG);
	write_file(path, "{\"top1_min\": {\"value\": 2, \"reason\": \"x\"}}", 41);
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_kld_policy_load(&file, path, &err), CTQ_ERR_INVALID_CONFIG);
	cr_expect(strstr(err.message, "expected a number in [0, 1]"), "%s", err.message);
	ctq_remove_tree(dir);
}

/* --save-text DIR: the text of a --data source, byte for byte what was
 * tokenized (its sha256 is the manifest's text_sha256), for other tools. */
Test(eval_kld, save_text_writes_the_tokenized_bytes)
{
	struct models m;
	make_models(&m, NULL, 0);
	char out[160], dir[160], path[256];
	snprintf(out, sizeof out, "%s/saved", m.f.dir);
	snprintf(dir, sizeof dir, "%s/text", m.f.dir);
	const char *args[] = {"eval", "kld", "--model", m.w[8], "--ref-model", m.f.bf16, "--tokenizer",
			      TOKENIZER, "--data", "datasets/mmlu", "--split", "dev", "--backend",
			      "reference", "--ctx", CTX, "--save-text", dir, "--out", out, "--force", NULL};
	const int rc = run_eval(args);
	cr_assert(rc == 0 || rc == 1, "eval kld exit %d (0 or 1: a verdict)", rc);
	snprintf(path, sizeof path, "%s/mmlu-dev.txt", dir);
	char *text = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(path, 1 << 24, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(n > 1000 && strstr(text, "\nA. ") && strstr(text, "Answer: "), "%.200s", text);
	unsigned char d[CTQ_SHA256_BYTES];
	char hex[CTQ_SHA256_HEX];
	ctq_sha256(text, n, d);
	ctq_sha256_hex(d, hex);
	free(text);
	snprintf(path, sizeof path, "%s/manifest.json", out);
	cJSON *man = NULL;
	cr_assert_eq(ctq_json_load_file(path, 1 << 24, NULL, &man, &err), CTQ_OK, "%s", err.message);
	const cJSON *src = cJSON_GetArrayItem(ctq_json_get(ctq_json_get(man, "eval_kld"), "sources"), 0);
	cr_assert(src, "manifest eval_kld.sources[0]");
	cr_expect_str_eq(cJSON_GetStringValue(ctq_json_get(src, "text_sha256")), hex);
	cJSON_Delete(man);
	fixture_drop(&m.f);
}
