/* Criterion tests for eval/eval and `ctq eval` end to end, on the CPU
 * reference backend: a tiny synthetic Qwen3 (its vocabulary widened to 2048
 * so that the small GPT-2-layout tokenizer fixture's ids fit) and its W8A8
 * quantization, with the sample datasets under datasets/.
 *   - the batched, prefix-sharing scorer gives the log-probabilities of a
 *     plain full forward of context + continuation, one question at a time,
 *     for single- and multi-token continuations;
 *   - each protocol's context-overflow rule;
 *   - the command: CSVs, manifest, JUnit, exit codes of the paired verdict
 *     and of refusals. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "eval/eval.h"
#include "harness/commands.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "checkpoint/quantize.h"
#include "checkpoint/synth.h"
#include "tests/model_fixture.h"
#include "reports/report.h"
#include "results/table.h"
#include "tests/command.h"

#define TOKENIZER "tests/fixtures/tokenizers/gpt2-small"
#define VOCAB 2048

/* The reference backend's OpenMP regions are tiny at this model size, and
 * Criterion runs two workers on two cores: one thread each keeps them from
 * spinning against each other. */
static void one_thread(void)
{
	omp_set_num_threads(1);
}

TestSuite(eval_run, .init = one_thread);

static void make_models(struct fixture *f)
{
	fixture_make(f, "eval", VOCAB, 7);
}

static void drop_models(struct fixture *f)
{
	fixture_drop(f);
}

struct prepared {
	struct ctq_eval_data data;
	struct ctq_tokenizer tok;
	struct ctq_eval_set set;
};

static void prepare(struct prepared *p, enum ctq_bench b, const char *split, enum ctq_protocol proto,
		    int shots, int64_t max_context, size_t limit)
{
	memset(p, 0, sizeof *p);
	struct ctq_error err = {0};
	char dir[64];
	snprintf(dir, sizeof dir, "datasets/%s", ctq_bench_name(b));
	cr_assert_eq(ctq_eval_data_load(&p->data, b, dir, split, NULL, 0, shots > 0, &err), CTQ_OK,
		     "%s: %s", err.path, err.message);
	cr_assert_eq(ctq_tokenizer_load(&p->tok, TOKENIZER, &err), CTQ_OK, "%s", err.message);
	struct ctq_eval_options o = {.bench = b, .protocol = proto, .shots = shots,
				     .max_context = max_context, .limit = limit};
	cr_assert_eq(ctq_eval_prepare(&p->set, &p->data, &o, &p->tok, &err), CTQ_OK, "%s: %s",
		     err.path, err.message);
}

static void prepared_free(struct prepared *p)
{
	ctq_eval_set_free(&p->set);
	ctq_tokenizer_free(&p->tok);
	ctq_eval_data_free(&p->data);
}

static void load_runner(struct ctq_runner *r, struct ctq_backend *b, const char *dir, int64_t slots,
			int64_t max_len, int64_t max_tokens)
{
	struct ctq_error err = {0};
	struct ctq_runner_options opt = {.max_slots = slots, .max_len = max_len, .max_tokens = max_tokens};
	memset(r, 0, sizeof *r);
	cr_assert_eq(ctq_runner_load(r, b, dir, &opt, &err), CTQ_OK, "%s", err.message);
}

/* The log-probability of each continuation by one forward pass of
 * context + continuation[:-1] in slot 0 from position 0. */
static void naive(struct ctq_runner *r, const struct ctq_eval_item *it, double lp[4])
{
	const int64_t V = r->cfg.vocab;
	for (int k = 0; k < 4; k++) {
		int64_t T = it->n_ctx + it->n_cont[k] - 1, n_out = it->n_cont[k];
		int32_t *ids = malloc((size_t)T * 4), *slot = calloc((size_t)T, 4), *pos = malloc((size_t)T * 4);
		int64_t *rows = malloc((size_t)n_out * 8);
		float *lg = malloc((size_t)(n_out * V) * 4);
		cr_assert(ids && slot && pos && rows && lg);
		memcpy(ids, it->ctx, (size_t)it->n_ctx * 4);
		memcpy(ids + it->n_ctx, it->cont[k], (size_t)(it->n_cont[k] - 1) * 4);
		for (int64_t t = 0; t < T; t++)
			pos[t] = (int32_t)t;
		for (int64_t j = 0; j < n_out; j++)
			rows[j] = it->n_ctx - 1 + j;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_runner_forward(r, ids, slot, pos, T, rows, n_out, lg, &err), CTQ_OK, "%s",
			     err.message);
		lp[k] = 0;
		for (int64_t j = 0; j < n_out; j++)
			lp[k] += ctq_logprob(lg + j * V, V, it->cont[k][j]);
		free(ids), free(slot), free(pos), free(rows), free(lg);
	}
}

/* Batched scoring (3 slots, 64 tokens per call: prefixes split across
 * calls, slots reused across subjects) against the naive forward. */
static void check_scorer(const char *model, struct ctq_eval_set *s, size_t *n_calls)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_open(&b, "reference", &err), CTQ_OK, "%s", err.message);
	struct ctq_runner plain;
	struct ctq_model batched;
	const struct ctq_model_options mo = {.dir = model, .backend = "reference", .tp = 1,
					     .limits = {.max_slots = 3, .max_len = s->max_len, .max_tokens = 64}};
	cr_assert_eq(ctq_model_open(&batched, &mo, &err), CTQ_OK, "%s", err.message);
	load_runner(&plain, &b, model, 1, s->max_len, s->max_len);
	double (*lp)[4] = calloc(s->n, sizeof *lp);
	struct ctq_eval_counters c;
	cr_assert_eq(ctq_eval_score(&batched, s, lp, NULL, NULL, &c, &err), CTQ_OK, "%s", err.message);
	cr_expect(c.tokens_fed < c.prompt_tokens, "prefix sharing: %lld fed of %lld",
		  (long long)c.tokens_fed, (long long)c.prompt_tokens);
	*n_calls = (size_t)c.calls;
	double worst = 0;
	size_t worst_i = 0;
	for (size_t i = 0; i < s->n; i++) {
		double want[4];
		naive(&plain, &s->items[i], want);
		for (int k = 0; k < 4; k++) {
			cr_assert(isfinite(lp[i][k]), "item %zu choice %d: %g", i, k, lp[i][k]);
			double d = fabs(lp[i][k] - want[k]);
			if (d > worst)
				worst = d, worst_i = i;
		}
	}
	/* The reference backend computes each row alone: batching and prefix
	 * reuse change no bit, so the two agree to the last bit of the f32
	 * logits (tolerance for the log-sum-exp order). */
	cr_expect(worst <= 1e-6, "largest |batched - plain| = %.3g at item %zu", worst, worst_i);
	free(lp);
	ctq_model_close(&batched);
	ctq_runner_free(&plain);
	ctq_backend_close(&b);
}

Test(eval_run, batched_scorer_equals_plain_forward)
{
	struct fixture f;
	make_models(&f);
	struct prepared p;
	prepare(&p, CTQ_BENCH_MMLU, "test", CTQ_PROTO_ORIGINAL, 5, 4096, 3);
	cr_assert_eq(p.set.n, 12);
	cr_expect_eq(p.set.n_truncated + p.set.n_fewer_shots, 0);
	for (size_t i = 0; i < p.set.n; i++) {
		cr_expect_eq(p.set.items[i].shots, 5);
		/* In the fixture's 2000-token vocabulary " A", " B", " C" are one
		 * token each and " D" is two ("Ġ", "D"): both scoring paths run. */
		for (int k = 0; k < 4; k++)
			cr_expect_eq(p.set.items[i].n_cont[k], k < 3 ? 1 : 2, "item %zu choice %d", i, k);
	}
	size_t calls;
	check_scorer(f.w8a8, &p.set, &calls);
	cr_expect(calls > 4, "%zu calls", calls);
	prepared_free(&p);
	drop_models(&f);
}

Test(eval_run, multi_token_continuations_are_summed)
{
	struct fixture f;
	make_models(&f);
	struct prepared p;
	prepare(&p, CTQ_BENCH_CEVAL, "val", CTQ_PROTO_ORIGINAL, 1, 4096, 2);
	/* Continuations of 1 to 4 tokens, different per item. */
	for (size_t i = 0; i < p.set.n; i++) {
		struct ctq_eval_item *it = &p.set.items[i];
		for (int k = 0; k < 4; k++) {
			free(it->cont[k]);
			it->n_cont[k] = 1 + (int64_t)((i + (size_t)k) % 4);
			it->cont[k] = malloc((size_t)it->n_cont[k] * 4);
			for (int64_t j = 0; j < it->n_cont[k]; j++)
				it->cont[k][j] = (int32_t)((37 * i + 11 * (size_t)k + 101 * (size_t)j) % VOCAB);
		}
	}
	p.set.max_len += 3;
	size_t calls;
	check_scorer(f.bf16, &p.set, &calls);
	prepared_free(&p);
	drop_models(&f);
}

Test(eval_run, overflow_rules)
{
	/* Hendrycks: fewer shots, the first k-1 dev rows, until it fits. */
	struct prepared p;
	prepare(&p, CTQ_BENCH_MMLU, "test", CTQ_PROTO_ORIGINAL, 5, 150, 0);
	cr_expect(p.set.n_fewer_shots > 0);
	for (size_t i = 0; i < p.set.n; i++) {
		const struct ctq_eval_item *it = &p.set.items[i];
		cr_expect(it->n_ctx <= 150, "item %zu: %lld tokens", i, (long long)it->n_ctx);
		if (!it->truncated)
			cr_expect_eq(it->n_ctx, it->n_prompt);
		/* One more shot would not have fitted. */
		if (it->shots < 5 && !it->truncated) {
			struct ctq_strbuf sb;
			ctq_strbuf_init(&sb);
			struct ctq_eval_options o = {.bench = CTQ_BENCH_MMLU, .protocol = CTQ_PROTO_ORIGINAL};
			struct ctq_error err = {0};
			cr_assert_eq(ctq_eval_render(&sb, &p.data, &o, it->subject, it->index, it->shots + 1, &err),
				     CTQ_OK);
			int32_t *ids;
			size_t n;
			cr_assert_eq(ctq_tokenizer_encode(&p.tok, sb.data, sb.len, false, &ids, &n, &err), CTQ_OK);
			cr_expect(n > 150, "item %zu: %d+1 shots would be %zu tokens", i, it->shots, n);
			free(ids);
			ctq_strbuf_free(&sb);
		}
	}
	prepared_free(&p);

	/* lm-eval: all shots, the last tokens: context + " D" minus its last
	 * token is max_context. */
	prepare(&p, CTQ_BENCH_MMLU, "test", CTQ_PROTO_LM_EVAL, 5, 150, 0);
	cr_expect_eq(p.set.n_fewer_shots, 0);
	cr_expect_eq(p.set.n_truncated, p.set.n);
	for (size_t i = 0; i < p.set.n; i++) {
		const struct ctq_eval_item *it = &p.set.items[i];
		cr_expect_eq(it->shots, 5);
		cr_expect_eq(it->n_ctx, 149);
		cr_expect(it->n_prompt > 150);
	}
	prepared_free(&p);

	/* CMMLU: the longest shots go first; a context too small for even the
	 * question falls back to left truncation. */
	prepare(&p, CTQ_BENCH_CMMLU, "test", CTQ_PROTO_ORIGINAL, 5, 260, 0);
	cr_expect(p.set.n_fewer_shots > 0);
	for (size_t i = 0; i < p.set.n; i++)
		cr_expect(p.set.items[i].n_ctx <= 260);
	prepared_free(&p);
	prepare(&p, CTQ_BENCH_CMMLU, "test", CTQ_PROTO_ORIGINAL, 5, 20, 0);
	cr_expect_eq(p.set.n_truncated, p.set.n);
	for (size_t i = 0; i < p.set.n; i++) {
		cr_expect_eq(p.set.items[i].shots, 0);
		cr_expect_eq(p.set.items[i].n_ctx + p.set.items[i].n_cont[3] - 1, 20);
	}
	prepared_free(&p);
}

/* lm-eval's _encode_pair on the fixture; the ids are what the Hugging Face
 * tokenizers library gives for these strings. */
static const struct {
	const char *ctx, *cont;
	int32_t want_ctx[8], want_cont[4];
	size_t n_ctx, n_cont;
	bool merged;
} pairs[] = {
	{"Answer:", " A", {33, 462, 87, 266, 26}, {759}, 5, 1, false},
	/* The trailing space moves to the continuation. */
	{"Answer: ", "A", {33, 462, 87, 266, 26}, {759}, 5, 1, false},
	/* "in" + "to" encodes as [323, 79]: a merge across the boundary; the
	 * continuation is what follows len(encode("in")) = 1 token. */
	{"in", "to", {267}, {79}, 1, 1, true},
	{"wh", "ich", {87, 72}, {72}, 2, 1, true},
};

Test(eval_run, encode_pair_splits_as_lm_eval)
{
	struct ctq_tokenizer t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_load(&t, TOKENIZER, &err), CTQ_OK, "%s", err.message);
	for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
		int32_t *c, *k;
		size_t nc, nk;
		bool merged;
		cr_assert_eq(ctq_eval_encode_pair(&t, pairs[i].ctx, strlen(pairs[i].ctx), pairs[i].cont, &c, &nc,
						  &k, &nk, &merged, &err),
			     CTQ_OK, "case %zu: %s", i, err.message);
		cr_expect(nc == pairs[i].n_ctx && !memcmp(c, pairs[i].want_ctx, nc * 4), "case %zu: context", i);
		cr_expect(nk == pairs[i].n_cont && !memcmp(k, pairs[i].want_cont, nk * 4), "case %zu: continuation",
			  i);
		cr_expect_eq(merged, pairs[i].merged, "case %zu: merged", i);
		free(c), free(k);
	}
	/* "the" + "re" encodes as two tokens that replace the context's two:
	 * nothing is left for the continuation. */
	int32_t *c = NULL, *k = NULL;
	size_t nc, nk;
	bool merged;
	cr_expect_eq(ctq_eval_encode_pair(&t, "the", 3, "re", &c, &nc, &k, &nk, &merged, &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "encodes to no token"), "%s", err.message);
	cr_expect_null(c);
	cr_expect_null(k);
	ctq_tokenizer_free(&t);
}

/* ---- the command ------------------------------------------------------------------ */

static int run_cmd(const char *const *args)
{
	char *argv[64];
	int argc = 0;
	for (; args[argc]; argc++)
		argv[argc] = (char *)args[argc];
	argv[argc] = NULL;
	fflush(stdout);
	return ctq_cmd_eval(argc, argv);
}

static size_t csv_rows(const char *path)
{
	char *text = NULL;
	size_t n = 0, rows = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(path, 1 << 24, &text, &n, &err), CTQ_OK, "%s", err.message);
	for (size_t i = 0; i + 1 < n; i++)
		rows += text[i] == '\r' && text[i + 1] == '\n';
	free(text);
	return rows - 1; /* the header */
}

static cJSON *manifest_eval(const char *run, cJSON **root)
{
	char path[160];
	snprintf(path, sizeof path, "%s/manifest.json", run);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, root, &err), CTQ_OK, "%s", err.message);
	cJSON *ev = (cJSON *)ctq_json_get(*root, "eval");
	cr_assert(ev);
	return ev;
}

/* ctq report on an eval run directory: its verdict and a phrase of summary.md.
 * These runs are on the reference backend: the verdict says CPU only. */
static void report_expect(const char *run, const char *verdict, const char *phrase)
{
	setenv("CTQ_GNUPLOT", "none", 1);
	struct ctq_report_summary sum;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_report_write(run, NULL, &sum, &err), CTQ_OK, "%s", err.message);
	char want[160];
	snprintf(want, sizeof want, "%s (CPU only: no GPU was qualified)", verdict);
	cr_expect_str_eq(sum.verdict, want);
	char path[200], *text = NULL;
	size_t n = 0;
	snprintf(path, sizeof path, "%s/summary.md", run);
	cr_assert_eq(ctq_file_read(path, 1 << 22, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(text, phrase), "summary.md of %s lacks \"%s\"", run, phrase);
	free(text);
}

Test(eval_run, command_paired_verdict_and_outputs)
{
	struct fixture f;
	make_models(&f);
	/* A generous margin: non-inferior, exit 0. */
	const char *ok[] = {"eval", "mmlu", "--model", f.w8a8, "--ref-model", f.bf16, "--tokenizer",
			    TOKENIZER, "--backend", "reference", "--out", f.out, "--margin", "60",
			    "--subject-margin", "60", "--min-subject-n", "4", "--slots", "4", NULL};
	cr_assert_eq(run_cmd(ok), 0);
	char path[160];
	snprintf(path, sizeof path, "%s/eval_questions.csv", f.out);
	cr_expect_eq(csv_rows(path), 16);
	snprintf(path, sizeof path, "%s/eval_paired.csv", f.out);
	/* 4 subjects, 4 categories, overall. */
	cr_expect_eq(csv_rows(path), 9);
	snprintf(path, sizeof path, "%s/eval_groups.csv", f.out);
	cr_expect_eq(csv_rows(path), 18);
	snprintf(path, sizeof path, "%s/junit.xml", f.out);
	cr_expect(ctq_path_exists(path));
	snprintf(path, sizeof path, "%s/summary.md", f.out);
	cr_expect(ctq_path_exists(path));
	cJSON *root;
	cJSON *ev = manifest_eval(f.out, &root);
	cr_expect_str_eq(ctq_json_get(ev, "protocol")->valuestring, "mmlu-hendrycks");
	cr_expect_str_eq(ctq_json_get(ev, "verdict")->valuestring, "non-inferior");
	cr_expect_eq(ctq_json_get(ev, "questions")->valuedouble, 16);
	const cJSON *m = ctq_json_get(ev, "model");
	cr_expect(ctq_json_get(m, "linear_w8a8")->valuedouble > 0, "the candidate runs W8A8");
	cr_expect_eq(ctq_json_get(ctq_json_get(ev, "ref_model"), "linear_w8a8")->valuedouble, 0);
	cr_expect(ctq_json_get(m, "tokens_fed")->valuedouble < ctq_json_get(m, "prompt_tokens")->valuedouble);
	cJSON_Delete(root);
	report_expect(f.out, "PASS", "Gate recorded by ctq eval: non-inferior");
	ctq_remove_tree(f.out);

	/* Margin 0 on 16 questions: the interval straddles zero, so
	 * non-inferiority is not shown (inconclusive, not inferior): exit 1. */
	const char *strict[] = {"eval", "mmlu", "--model", f.w8a8, "--ref-model", f.bf16, "--tokenizer",
				TOKENIZER, "--backend", "reference", "--out", f.out, "--margin", "0",
				"--protocol", "lm-eval", "--shots", "1", NULL};
	cr_expect_eq(run_cmd(strict), 1);
	ev = manifest_eval(f.out, &root);
	cr_expect_str_eq(ctq_json_get(ev, "verdict")->valuestring, "inconclusive");
	cr_expect_str_eq(ctq_json_get(ev, "categories")->valuestring, "lm-eval mmlu groups");
	cJSON_Delete(root);
	/* ctq report on the run alone carries the failed gate into its verdict. */
	report_expect(f.out, "FAIL", "1 of 1 accuracy gate(s) failed");
	drop_models(&f);
}

/* The chosen letters and log-probabilities of a run's eval_questions.csv. */
static size_t read_choices(const char *run, char chosen[][4], double (*lp)[4], size_t cap)
{
	char path[160];
	snprintf(path, sizeof path, "%s/eval_questions.csv", run);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	int cc = ctq_table_col(&t, "chosen");
	static const char *const lpc[4] = {"logprob_A", "logprob_B", "logprob_C", "logprob_D"};
	cr_assert(cc >= 0);
	cr_assert_leq(t.n_rows, cap);
	for (size_t i = 0; i < t.n_rows; i++) {
		snprintf(chosen[i], 4, "%s", ctq_table_get(&t, i, cc));
		for (int k = 0; k < 4; k++) {
			int c = ctq_table_col(&t, lpc[k]);
			cr_assert(c >= 0);
			lp[i][k] = strtod(ctq_table_get(&t, i, c), NULL);
		}
	}
	size_t n = t.n_rows;
	ctq_table_free(&t);
	return n;
}

/* --tp 2 on the reference backend (two in-process ranks, row-parallel sums
 * in rank order) scores the same questions as one rank: the same letters,
 * log-probabilities equal up to float summation order, tp recorded. */
Test(eval_run, tensor_parallel_scores_match_one_rank)
{
	struct fixture f;
	make_models(&f);
	char out2[128];
	snprintf(out2, sizeof out2, "%s/run-tp2", f.dir);
	const char *one[] = {"eval", "mmlu", "--model", f.w8a8, "--tokenizer", TOKENIZER, "--backend",
			     "reference", "--out", f.out, "--slots", "4", NULL};
	/* With a reference model too: both models load in turn on the same ranks. */
	const char *two[] = {"eval", "mmlu", "--model", f.w8a8, "--ref-model", f.bf16, "--tokenizer",
			     TOKENIZER, "--backend", "reference", "--out", out2, "--slots", "4", "--tp",
			     "2", "--margin", "60", "--subject-margin", "60", NULL};
	cr_assert_eq(run_cmd(one), 0);
	cr_assert_eq(run_cmd(two), 0);
	static char c1[64][4], c2[64][4];
	static double l1[64][4], l2[64][4];
	size_t n1 = read_choices(f.out, c1, l1, 64), n2 = read_choices(out2, c2, l2, 64);
	cr_assert_eq(n1, 16);
	cr_assert_eq(n2, n1);
	double worst = 0;
	for (size_t i = 0; i < n1; i++) {
		cr_expect_str_eq(c2[i], c1[i], "question %zu", i);
		for (int k = 0; k < 4; k++) {
			double d = fabs(l2[i][k] - l1[i][k]);
			worst = d > worst ? d : worst;
		}
	}
	/* Not bit-equal even in exact arithmetic: a row-parallel layer (o_proj,
	 * down_proj) quantizes each rank's activation shard with its own
	 * per-token scale, as vLLM's ranks do. */
	cr_expect_lt(worst, 1e-2, "largest log-probability difference %g", worst);
	fprintf(stderr, "W8A8 tp2 vs tp1: largest |d logprob| %g\n", worst);
	cJSON *root;
	cJSON *ev = manifest_eval(out2, &root);
	cr_expect_eq(ctq_json_get(ev, "tp")->valuedouble, 2);
	cr_expect(strstr(ctq_json_get(ev, "device")->valuestring, "tp 2"));
	cJSON_Delete(root);
	/* BF16 linears have no activation scales: only summation order differs. */
	const char *one_b[] = {"eval", "mmlu", "--model", f.bf16, "--tokenizer", TOKENIZER, "--backend",
			       "reference", "--out", f.out, "--slots", "4", NULL};
	const char *two_b[] = {"eval", "mmlu", "--model", f.bf16, "--tokenizer", TOKENIZER, "--backend",
			       "reference", "--out", out2, "--slots", "4", "--tp", "2", NULL};
	ctq_remove_tree(f.out);
	ctq_remove_tree(out2);
	cr_assert_eq(run_cmd(one_b), 0);
	cr_assert_eq(run_cmd(two_b), 0);
	n1 = read_choices(f.out, c1, l1, 64);
	cr_assert_eq(read_choices(out2, c2, l2, 64), n1);
	worst = 0;
	for (size_t i = 0; i < n1; i++) {
		cr_expect_str_eq(c2[i], c1[i], "question %zu", i);
		for (int k = 0; k < 4; k++)
			worst = fmax(worst, fabs(l2[i][k] - l1[i][k]));
	}
	fprintf(stderr, "BF16 tp2 vs tp1: largest |d logprob| %g\n", worst);
	cr_expect_lt(worst, 1e-4, "BF16: largest log-probability difference %g", worst);
	ctq_remove_tree(out2);
	/* Ranks must divide the heads: 3 does not divide the tiny model's. */
	const char *three[] = {"eval", "mmlu", "--model", f.w8a8, "--tokenizer", TOKENIZER, "--backend",
			       "reference", "--out", out2, "--tp", "3", NULL};
	cr_expect_neq(run_cmd(three), 0);
	drop_models(&f);
}

Test(eval_run, command_ceval_and_cmmlu_samples)
{
	struct fixture f;
	make_models(&f);
	const char *ceval[] = {"eval", "ceval", "--model", f.bf16, "--tokenizer", TOKENIZER, "--backend",
			       "reference", "--out", f.out, "--limit", "2", "--progress", NULL};
	cr_assert_eq(run_cmd(ceval), 0);
	char path[160];
	snprintf(path, sizeof path, "%s/eval_questions.csv", f.out);
	cr_expect_eq(csv_rows(path), 8);
	cJSON *root;
	cJSON *ev = manifest_eval(f.out, &root);
	cr_expect_str_eq(ctq_json_get(ev, "headline_average")->valuestring, "macro");
	cr_expect_str_eq(ctq_json_get(ev, "split")->valuestring, "val");
	cJSON_Delete(root);
	ctq_remove_tree(f.out);
	const char *cmmlu[] = {"eval", "cmmlu", "--model", f.bf16, "--tokenizer", TOKENIZER, "--backend",
			       "reference", "--out", f.out, "--shots", "0", "--subjects",
			       "agronomy,world_history", NULL};
	cr_assert_eq(run_cmd(cmmlu), 0);
	cr_expect_eq(csv_rows(path), 8);
	drop_models(&f);
}

Test(eval_run, command_refusals)
{
	struct fixture f;
	make_models(&f);
	/* C-Eval's test split loads but has no answers to score. */
	const char *test_split[] = {"eval", "ceval", "--model", f.bf16, "--tokenizer", TOKENIZER,
				    "--backend", "reference", "--split", "test", "--out", f.out, NULL};
	cr_expect_eq(run_cmd(test_split), 2);
	cr_expect(!ctq_path_exists(f.out), "nothing written");
	const char *cmmlu_lm[] = {"eval", "cmmlu", "--model", f.bf16, "--protocol", "lm-eval", NULL};
	cr_expect_eq(run_cmd(cmmlu_lm), 2);
	const char *no_model[] = {"eval", "mmlu", NULL};
	cr_expect_eq(run_cmd(no_model), 2);
	const char *bad_bench[] = {"eval", "gsm8k", "--model", f.bf16, NULL};
	cr_expect_eq(run_cmd(bad_bench), 2);
	const char *bad_shots[] = {"eval", "mmlu", "--model", f.bf16, "--shots", "6", NULL};
	cr_expect_eq(run_cmd(bad_shots), 2);
	/* A synthetic checkpoint has no tokenizer of its own. */
	const char *no_tok[] = {"eval", "mmlu", "--model", f.bf16, "--backend", "reference", NULL};
	cr_expect_eq(run_cmd(no_tok), 2);
	const char *help[] = {"eval", "--help", NULL};
	cr_expect_eq(run_cmd(help), 0);
	drop_models(&f);
}

/* Every place that lists eval's forms names kld beside mmlu, ceval and
 * cmmlu: the error without a benchmark, the error for an unknown one,
 * `ctq --help` and `ctq eval --help` (the ctq under test: CTQ_BIN, else
 * build/ctq). */
Test(eval_run, messages_that_list_the_forms_name_kld)
{
	const char *bin = test_ctq_bin();
	static const struct {
		const char *args;
		int rc;
		const char *want;
	} cases[] = {
		{"eval", 2, "mmlu, ceval or cmmlu, or kld"},
		{"eval gsm8k", 2, "expected mmlu, ceval, cmmlu or kld"},
		{"--help", 0, "`eval kld` (token KL divergence"},
		{"eval --help", 0, "ctq eval kld --model DIR --ref-model DIR"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin, cases[i].args);
		char out[8192];
		const int rc = test_command(cmd, out, sizeof out);
		cr_expect(rc == cases[i].rc, "%s: exit %d: %s", cmd, rc, out);
		cr_expect(strstr(out, cases[i].want), "%s: no \"%s\" in: %s", cmd, cases[i].want, out);
	}
}
