/* Criterion tests for ctq eval kld --reference-run (eval/kld.c, the
 * "relative" entries of policies/kld.json) on the reference backend with the
 * tiny synthetic Qwen3 with outlier channels, its own lm_head and a
 * final-norm gain of 10 (peaked distributions, as in tests/test_eval_kld.c):
 *   - the relative policy's entries, their reasons, ranges and unknown keys;
 *   - a run against its own run: factor 1, no top-1 change, non-inferior;
 *   - the gate's teeth: the round-to-nearest checkpoint against the
 *     SmoothQuant+GPTQ recipe's run is inferior (exit 1), the recipe against
 *     round to nearest's run has the smaller KL;
 *   - the absolute mean KL bound stays the outer limit;
 *   - a reference run of other windows, or no run at all, is exit 2.
 * Measured (this text, ctx 128, 15 windows): RTN 0.0041 nats / 90.9%,
 * SmoothQuant+GPTQ 0.0019 / 93.9%: RTN 2.2x [1.9, 2.5] the recipe's KL,
 * 3.0 points [0.9, 5.3] below its top-1; GPTQ alone 2.0x, SmoothQuant
 * alone 1.15x [1.02, 1.31] (inconclusive). */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/synth.h"
#include "core/fileio.h"
#include "core/json.h"
#include "eval/kld.h"
#include "harness/commands.h"

#define TOKENIZER "tests/fixtures/tokenizers/gpt2-small/tokenizer.json"
#define CALIB_TEXT "tests/fixtures/tokenizers/corpus.txt"
#define CTX "128"

static void one_thread(void)
{
	omp_set_num_threads(1);
}

TestSuite(kld_relative, .init = one_thread);

struct rel {
	char root[64], bf16[96], rtn[96], recipe[96], text[96];
};

static void write_file(const char *path, const char *s, size_t n)
{
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_write_atomic(path, s, n, &err), CTQ_OK, "%s", err.message);
}

static int run_cmd(int (*fn)(int, char **), const char *const *args)
{
	char *argv[40];
	int argc = 0;
	for (; args[argc]; argc++) {
		cr_assert_lt(argc, 39);
		argv[argc] = (char *)args[argc];
	}
	argv[argc] = NULL;
	fflush(stdout);
	return fn(argc, argv);
}

/* The model, its RTN and SmoothQuant+GPTQ checkpoints, and the text. */
static void rel_make(struct rel *f)
{
	snprintf(f->root, sizeof f->root, "/tmp/ctq-kldrel-XXXXXX");
	cr_assert(mkdtemp(f->root));
	snprintf(f->bf16, sizeof f->bf16, "%s/bf16", f->root);
	snprintf(f->rtn, sizeof f->rtn, "%s/rtn", f->root);
	snprintf(f->recipe, sizeof f->recipe, "%s/sqgptq", f->root);
	snprintf(f->text, sizeof f->text, "%s/text.txt", f->root);
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3", "tiny", &err), CTQ_OK, "%s", err.message);
	s.vocab_size = 2048;
	s.seed = 7;
	s.outliers = true;
	s.tie_word_embeddings = false;
	s.logit_gain = 10;
	cr_assert_eq(ctq_synth_write(&s, f->bf16, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	char *data = NULL, *more = NULL, *dst = ctq_path_join(f->bf16, "tokenizer.json");
	size_t n = 0, m = 0;
	cr_assert_eq(ctq_file_read(TOKENIZER, (size_t)1 << 26, &data, &n, &err), CTQ_OK, "%s", err.message);
	write_file(dst, data, n);
	free(data), free(dst);
	cr_assert_eq(ctq_file_read(CALIB_TEXT, 1 << 20, &data, &n, &err), CTQ_OK);
	cr_assert_eq(ctq_file_read("tests/fixtures/tokenizers/train.txt", 1 << 20, &more, &m, &err), CTQ_OK);
	data = realloc(data, n + m);
	memcpy(data + n, more, m);
	write_file(f->text, data, n + m);
	free(data), free(more);
	const char *a_rtn[] = {"quantize", f->bf16, f->rtn, "--quiet", NULL};
	cr_assert_eq(run_cmd(ctq_cmd_quantize, a_rtn), CTQ_EXIT_OK);
	const char *a_sq[] = {"quantize", f->bf16, f->recipe, "--quiet", "--recipe", "smoothquant+gptq",
			      "--calib", CALIB_TEXT, "--calib-samples", "8", "--calib-len", "64", NULL};
	cr_assert_eq(run_cmd(ctq_cmd_quantize, a_sq), CTQ_EXIT_OK);
}

/* ctq eval kld of model against bf16 into out, judged against ref_run
 * (NULL: none) under policy (NULL: built in). */
static int kld(const struct rel *f, const char *model, const char *out, const char *ref_run,
	       const char *policy)
{
	const char *args[32] = {"eval", "kld", "--model", model, "--ref-model", f->bf16, "--text", f->text,
				"--backend", "reference", "--ctx", CTX, "--out", out, "--force"};
	int n = 15;
	if (ref_run)
		args[n++] = "--reference-run", args[n++] = ref_run;
	if (policy)
		args[n++] = "--policy", args[n++] = policy;
	args[n] = NULL;
	return run_cmd(ctq_cmd_eval, args);
}

/* The manifest's eval_kld.relative of run. */
static cJSON *relative_of(const char *run, cJSON **root)
{
	char path[256];
	snprintf(path, sizeof path, "%s/manifest.json", run);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_load_file(path, (size_t)1 << 24, NULL, root, &err), CTQ_OK, "%s", err.message);
	cJSON *rel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(*root, "eval_kld"),
						      "relative");
	cr_assert(rel, "%s has no eval_kld.relative", path);
	return rel;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	cr_assert(cJSON_IsNumber(v), "%s", k);
	return v->valuedouble;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	cr_assert(cJSON_IsString(v), "%s", k);
	return v->valuestring;
}

Test(kld_relative, policy_entries_have_values_and_reasons)
{
	struct ctq_kld_policy p;
	ctq_kld_policy_default(&p);
	cr_expect_str_eq(p.source, "policies/kld.json (built in)");
	cr_expect_eq(p.rel[CTQ_KLD_REL_KL_FACTOR_MAX], 1.5);
	cr_expect_eq(p.rel[CTQ_KLD_REL_TOP1_DROP_MAX], 0.01);
	cr_expect_eq(p.rel[CTQ_KLD_REL_PPL_EXCESS_FACTOR_MAX], 1.5);
	for (int k = 0; k < CTQ_KLD_N_REL; k++)
		cr_expect_gt(strlen(p.rel_reason[k]), 40, "%s has no reason", ctq_kld_rel_criterion_name(k));
	cr_expect(strstr(p.reason[CTQ_KLD_TOP1_MIN], "7-8B"), "the top-1 threshold says where it came from");
	struct ctq_kld_policy file;
	struct ctq_error err = {0};
	ctq_kld_policy_default(&file);
	cr_assert_eq(ctq_kld_policy_load(&file, "policies/kld.json", &err), CTQ_OK, "%s", err.message);
	for (int k = 0; k < CTQ_KLD_N_REL; k++) {
		cr_expect_eq(file.rel[k], p.rel[k]);
		cr_expect_str_eq(file.rel_reason[k], p.rel_reason[k]);
	}
	char dir[] = "/tmp/ctq-kldrelpol-XXXXXX";
	cr_assert(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/p.json", dir);
	static const struct {
		const char *id, *json, *needle;
	} bad[] = {
		{"unknown-key", "{\"relative\": {\"kl_factor\": {\"value\": 2, \"reason\": \"x\"}}}", "unknown relative"},
		{"factor-below-1", "{\"relative\": {\"kl_factor_max\": {\"value\": 0.5, \"reason\": \"x\"}}}", "[1, 100]"},
		{"no-reason", "{\"relative\": {\"top1_drop_max\": {\"value\": 0.02}}}", "reason"},
		{"not-an-object", "{\"relative\": 3}", "JSON object"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		write_file(path, bad[i].json, strlen(bad[i].json));
		memset(&err, 0, sizeof err);
		cr_expect_eq(ctq_kld_policy_load(&file, path, &err), CTQ_ERR_INVALID_CONFIG, "%s", bad[i].id);
		cr_expect(strstr(err.message, bad[i].needle), "%s: %s", bad[i].id, err.message);
	}
	const char *ok = "{\"relative\": {\"kl_factor_max\": {\"value\": 2, \"reason\": \"looser\"}}}";
	write_file(path, ok, strlen(ok));
	ctq_kld_policy_default(&file);
	cr_assert_eq(ctq_kld_policy_load(&file, path, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(file.rel[CTQ_KLD_REL_KL_FACTOR_MAX], 2.0);
	cr_expect_eq(file.rel[CTQ_KLD_REL_TOP1_DROP_MAX], 0.01, "the other entries keep the built-in");
	ctq_remove_tree(dir);
}

Test(kld_relative, recipe_gate_has_teeth, .timeout = 240)
{
	struct rel f;
	rel_make(&f);
	char run_rec[128], run_rtn[128], self[128], rtn_rel[128], rec_rel[128];
	snprintf(run_rec, sizeof run_rec, "%s/run-recipe", f.root);
	snprintf(run_rtn, sizeof run_rtn, "%s/run-rtn", f.root);
	snprintf(self, sizeof self, "%s/self", f.root);
	snprintf(rtn_rel, sizeof rtn_rel, "%s/rtn-rel", f.root);
	snprintf(rec_rel, sizeof rec_rel, "%s/recipe-rel", f.root);
	kld(&f, f.recipe, run_rec, NULL, NULL);
	kld(&f, f.rtn, run_rtn, NULL, NULL);
	/* the recipe against its own run */
	cr_expect_eq(kld(&f, f.recipe, self, run_rec, NULL), CTQ_EXIT_OK);
	cJSON *root = NULL;
	cJSON *x = relative_of(self, &root);
	cr_expect_eq(num(x, "kl_factor"), 1.0);
	cr_expect_eq(num(x, "top1_diff_ci_low"), 0.0);
	cr_expect_eq(num(x, "top1_diff_ci_high"), 0.0);
	cr_expect_str_eq(str(x, "verdict"), "non-inferior");
	cJSON_Delete(root);
	/* round to nearest against the recipe: the gate fails it */
	cr_expect_eq(kld(&f, f.rtn, rtn_rel, run_rec, NULL), CTQ_EXIT_FAIL);
	x = relative_of(rtn_rel, &root);
	cr_log_info("RTN against SmoothQuant+GPTQ: KL %.3fx [%.3f, %.3f], top-1 [%+.2f, %+.2f] points",
		    num(x, "kl_factor"), num(x, "kl_factor_ci_low"), num(x, "kl_factor_ci_high"),
		    100 * num(x, "top1_diff_ci_low"), 100 * num(x, "top1_diff_ci_high"));
	cr_expect_gt(num(x, "kl_factor_ci_low"), 1.5, "RTN's KL should be over 1.5x the recipe's");
	cr_expect_str_eq(str(x, "verdict"), "inferior");
	cr_expect_gt(num(x, "reference_kl_mean_nats"), 0.0);
	cJSON_Delete(root);
	char path[256], *text = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	snprintf(path, sizeof path, "%s/junit.xml", rtn_rel);
	cr_assert_eq(ctq_file_read(path, 1 << 20, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(text, "inferior relative to"), "%s", text);
	free(text);
	snprintf(path, sizeof path, "%s/summary.md", rtn_rel);
	cr_assert_eq(ctq_file_read(path, 1 << 20, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(text, "verdict (relative, policies/kld.json (built in)): inferior"), "%s", text);
	free(text);
	/* the recipe against round to nearest's run: the smaller KL */
	kld(&f, f.recipe, rec_rel, run_rtn, NULL);
	x = relative_of(rec_rel, &root);
	cr_expect_lt(num(x, "kl_factor_ci_high"), 1.0);
	cJSON_Delete(root);
	/* the absolute mean KL bound stays the outer limit */
	char pol[128];
	snprintf(pol, sizeof pol, "%s/tight.json", f.root);
	const char *tight = "{\"kl_mean_max\": {\"value\": 0.0001, \"reason\": \"an outer bound every W8A8 run exceeds\"}}";
	write_file(pol, tight, strlen(tight));
	cr_expect_eq(kld(&f, f.recipe, self, run_rec, pol), CTQ_EXIT_FAIL);
	x = relative_of(self, &root);
	cr_expect_str_eq(str(x, "verdict"), "inferior");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "outer_bound_exceeded")));
	cJSON_Delete(root);
	ctq_remove_tree(f.root);
}

Test(kld_relative, other_windows_or_no_run_is_usage, .timeout = 120)
{
	struct rel f;
	rel_make(&f);
	char run_rec[128], out[128], short_run[128];
	snprintf(run_rec, sizeof run_rec, "%s/run-recipe", f.root);
	snprintf(out, sizeof out, "%s/out", f.root);
	snprintf(short_run, sizeof short_run, "%s/run-64", f.root);
	kld(&f, f.recipe, run_rec, NULL, NULL);
	/* a reference run over other windows (--ctx 64) */
	const char *a64[] = {"eval", "kld", "--model", f.recipe, "--ref-model", f.bf16, "--text", f.text,
			     "--backend", "reference", "--ctx", "64", "--out", short_run, "--force", NULL};
	run_cmd(ctq_cmd_eval, a64);
	cr_expect_eq(kld(&f, f.rtn, out, short_run, NULL), CTQ_EXIT_USAGE);
	cr_expect_not(ctq_path_exists(out));
	/* a folder that is no run, and a path that is no folder */
	cr_expect_eq(kld(&f, f.rtn, out, f.bf16, NULL), CTQ_EXIT_USAGE);
	cr_expect_eq(kld(&f, f.rtn, out, f.text, NULL), CTQ_EXIT_USAGE);
	cr_expect_not(ctq_path_exists(out));
	/* the library's message names the mismatch */
	struct ctq_kld_run r;
	struct ctq_error err = {0};
	const char *texts[1] = {f.text};
	const struct ctq_kld_options o = {.model = f.rtn, .ref = f.bf16, .backend = "reference",
					  .texts = texts, .n_texts = 1, .ctx = 128, .tp = 1,
					  .reference_run = short_run};
	cr_expect_eq(ctq_kld_open(&r, &o, &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.path, "eval_kld.csv"), "%s", err.path);
	cr_expect(strstr(err.message, "windows"), "%s", err.message);
	ctq_kld_free(&r);
	ctq_remove_tree(f.root);
}
