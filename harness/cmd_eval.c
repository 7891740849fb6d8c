/* ctq eval: MMLU / C-Eval / CMMLU accuracy of a checkpoint by answer-letter
 * log-probabilities (eval/eval.h), and with --ref-model the paired verdict
 * of a candidate against a baseline on the same questions (stats/accuracy.h).
 * Writes per-question, per-group and paired CSVs, a summary and the
 * manifest into a run directory. This file parses the options, draws the
 * progress bar and prints; the evaluation is eval/run.h. */
#include "harness/commands.h"
#include "core/fileio.h"
#include "core/time.h"
#include "eval/run.h"
#include "results/run.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SUBJECTS CTQ_EVAL_MAX_SUBJECTS

static void help(void)
{
	printf("usage: ctq eval mmlu|ceval|cmmlu --model DIR [options]\n"
	       "       ctq eval mmlu|ceval|cmmlu --url URL --tokenizer PATH [options]\n"
	       "       ctq eval kld --model DIR --ref-model DIR --text FILE|--data DIR (see ctq eval kld --help)\n"
	       "\n"
	       "Multiple-choice accuracy by the log-probability of each answer letter's\n"
	       "continuation after the protocol's prompt (one forward pass per question; no\n"
	       "generation). With --ref-model, the paired comparison of --model (candidate)\n"
	       "against --ref-model (baseline) on the same questions and a non-inferiority\n"
	       "verdict.\n"
	       "\n"
	       "options:\n"
	       "  --model DIR          checkpoint evaluated (the candidate, e.g. W8A8)\n"
	       "  --ref-model DIR      baseline checkpoint (e.g. BF16): paired verdict\n"
	       "  --data DIR           benchmark folder in the official layout (default: the\n"
	       "                       small sample datasets/<benchmark> of this repository)\n"
	       "  --split S            dev, val or test (default: mmlu test, ceval val,\n"
	       "                       cmmlu test; the C-Eval test split has no answers)\n"
	       "  --shots N            few-shot examples from dev, 0..5 (default 5)\n"
	       "  --subjects A,B,...   only these subjects (default: every subject file)\n"
	       "  --limit N            first N questions of each subject (default all)\n"
	       "  --protocol P         original (default: Hendrycks, C-Eval, CMMLU scripts) or\n"
	       "                       lm-eval (lm-evaluation-harness mmlu / ceval-valid)\n"
	       "  --backend B          cuda or reference (default: cuda when a CUDA device\n"
	       "                       opens, else reference; said on stderr)\n"
	       "  --act-numerics N     W8A8 activation numerics: ctq (default: amax / 127, an\n"
	       "                       int8 GEMM, as vLLM) or transformers (compressed-tensors'\n"
	       "                       fake quantization: amax / 127.5, dequantized operands, a\n"
	       "                       float GEMM; reference backend only; docs/semantics.md)\n"
	       "  --tokenizer PATH     tokenizer.json or its folder (default: each model's)\n"
	       "  --add-bos            prepend the tokenizer's BOS token to every prompt\n"
	       "  --max-context N      prompt + continuation tokens allowed (default: the\n"
	       "                       model's max_position_embeddings, else %d)\n"
	       "  --max-tokens N       tokens per forward call (default 4096 cuda, 512 reference)\n"
	       "  --slots N            KV-cache slots, questions in flight (default 32)\n"
	       "  --tp N               tensor parallelism over N ranks (default 1): GPUs 0..N-1\n"
	       "                       with NCCL, or N in-process ranks on the reference backend\n"
	       "  --margin P           overall non-inferiority margin, points (default 1.0)\n"
	       "  --subject-margin P   per-subject margin, points (default 5.0)\n"
	       "  --min-subject-n N    subjects with fewer questions get no verdict (default 100)\n"
	       "  --progress           progress on stderr even when it is not a terminal\n"
	       "  --out DIR            run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force              replace DIR when it is an existing ctq run directory\n"
	       "                       (any other non-empty DIR is refused)\n"
	       "\n"
	       "Too long for the context: Hendrycks and C-Eval drop the last shot until the\n"
	       "prompt fits, CMMLU drops the longest shots, lm-eval keeps the last tokens;\n"
	       "what still does not fit is left-truncated (the CSV says so).\n"
	       "Scoring: lm-eval's split of encode(prompt + letter) at encode(prompt); the\n"
	       "letter with the largest summed log-probability is chosen. Averages: micro\n"
	       "(questions pooled; SE sqrt(p(1-p)/n)) and macro (mean of subject accuracies;\n"
	       "SE sqrt(sum p_s(1-p_s)/n_s)/S, subjects fixed). Paired: new - ref with\n"
	       "Newcombe's hybrid score 95%% interval, exact McNemar p, right->wrong and\n"
	       "wrong->right counts, top-1 agreement, mean KL(ref || new) of the A-D\n"
	       "distributions. Non-inferior when the interval's lower bound is above -margin,\n"
	       "inferior when its upper bound is below, inconclusive otherwise.\n",
	       CTQ_EVAL_DEFAULT_CONTEXT);
	printf("\n"
	       "exit: 0 done (and non-inferior); 1 non-inferiority not shown (inferior or\n"
	       "inconclusive) overall or in a subject with at least --min-subject-n\n"
	       "questions; 2 bad usage or input (with --url: an answer without plausible\n"
	       "log-probabilities, each in [-1e4, 1e-4], without echoed prompt\n"
	       "log-probabilities, or with string prompts a split at the context that cannot\n"
	       "be checked); 3 no GPU for cuda, or with --url\n"
	       "the server refused or failed a request (HTTP error, refused connection, time\n"
	       "limit, an answer over 64 MiB), named with its question.\n");
	printf("\n"
	       "a model behind an OpenAI-compatible server (ctq serve, vLLM, llama-cpp-python):\n"
	       "  --url URL            the candidate behind an OpenAI-compatible server instead\n"
	       "                       of --model (http://HOST:PORT/v1; needs --tokenizer): each\n"
	       "                       choice scored by one POST URL/completions with the context\n"
	       "                       + continuation ids, max_tokens 0, echo, logprobs 1 (the sum\n"
	       "                       of the continuation's token_logprobs: the same quantity\n"
	       "                       as in process; lm-eval's local-completions). A server\n"
	       "                       that refuses token ids (answers the first request\n"
	       "                       HTTP >= 400) gets string prompts instead: the text of\n"
	       "                       the ids, max_tokens 1, the continuation split at the\n"
	       "                       context's end by the echoed tokens' text_offset (else\n"
	       "                       by count: the echoed prompt must be ctq's context +\n"
	       "                       continuation tokens); one line says so\n"
	       "  --ref-url URL        the baseline behind a server instead of --ref-model\n"
	       "  --served-name NAME   the model name sent to --url (default: the first of\n"
	       "                       GET URL/models); --ref-served-name for --ref-url\n"
	       "  --concurrency N      requests in flight to a server (default 8)\n"
	       "  --request-timeout S  seconds one request may take (default 300)\n");
}

static bool opt_double(const char *cmd, const char *opt, const char *v, double min, double max,
		       double *out)
{
	char *end;
	double x = strtod(v, &end);
	if (end == v || *end || !(x >= min && x <= max)) {
		fprintf(stderr, "ctq %s: %s is \"%s\"; expected a number in [%g, %g]\n", cmd, opt, v, min,
			max);
		return false;
	}
	*out = x;
	return true;
}

/* CTQ_OPT_FN parser (dst: double *): a margin in points. */
static bool opt_points(const char *cmd, const char *name, const char *v, void *dst)
{
	return opt_double(cmd, name, v, 0, 100, dst);
}

/* --protocol original | lm-eval (dst: enum ctq_protocol *). */
static bool opt_protocol(const char *cmd, const char *name, const char *v, void *dst)
{
	enum ctq_protocol *p = dst;
	*p = ctq_protocol_parse(v);
	if (*p != CTQ_PROTO_COUNT)
		return true;
	fprintf(stderr, "ctq %s: %s is \"%s\"; expected original or lm-eval\n", cmd, name, v);
	return false;
}

/* ---- progress ------------------------------------------------------------------- */

struct progress {
	struct ctq_progress_line line;
	const char *label;
};

static void fmt_eta(double s, char *buf, size_t cap)
{
	if (!isfinite(s) || s < 0)
		snprintf(buf, cap, "--");
	else if (s < 60)
		snprintf(buf, cap, "%.0fs", s);
	else if (s < 3600)
		snprintf(buf, cap, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
	else
		snprintf(buf, cap, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static void progress_cb(void *ctx, size_t done, size_t total)
{
	struct progress *p = ctx;
	double rate = ctq_progress_line_rate(&p->line, done, total);
	if (rate < 0)
		return;
	char eta[32];
	fmt_eta(rate > 0 ? (double)(total - done) / rate : NAN, eta, sizeof eta);
	int width = 24, fill = total ? (int)((double)width * (double)done / (double)total) : width;
	char bar[32];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = '\0';
	ctq_progress_line_print(&p->line, done, total, "%s [%s] %zu/%zu questions  %.1f q/s  ETA %s   ",
				p->label, bar, done, total, rate, eta);
}

/* ---- the command ----------------------------------------------------------------- */

/* The sample of this repository: datasets/<bench> from the working
 * directory, else beside the program's build folder. */
static bool default_data(enum ctq_bench b, char *out, size_t cap)
{
	snprintf(out, cap, "datasets/%s", ctq_bench_name(b));
	if (ctq_path_is_dir(out))
		return true;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		snprintf(out, cap, "%s/../datasets/%s", dirname(exe), ctq_bench_name(b));
		if (ctq_path_is_dir(out))
			return true;
	}
	snprintf(out, cap, "datasets/%s", ctq_bench_name(b));
	return false;
}

struct opts {
	enum ctq_bench bench;
	const char *model, *ref, *data, *split, *backend, *tokenizer;
	struct ctq_opt_out out;
	const char *url, *ref_url, *served_name, *ref_served_name;
	double request_timeout_s;
	long concurrency, shots, limit, max_context, max_tokens, slots, min_subject_n, tp;
	double margin, subject_margin;
	enum ctq_protocol protocol;
	enum ctq_act_numerics numerics;
	bool add_bos, progress;
	const char *subjects[MAX_SUBJECTS];
	int n_subjects;
	char subjects_buf[4096];
};

/* --subjects A,B,... (dst: struct opts *). */
static bool opt_subjects(const char *cmd, const char *name, const char *v, void *dst)
{
	struct opts *o = dst;
	o->n_subjects = ctq_opt_split(cmd, name, v, o->subjects_buf, sizeof o->subjects_buf, o->subjects,
				      MAX_SUBJECTS);
	return o->n_subjects > 0;
}

/* Parses and checks the options; as ctq_opt_parse, -1 when the command may
 * run, else its exit code. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	if (argc < 2) {
		fprintf(stderr, "ctq eval: name a benchmark: mmlu, ceval or cmmlu, or kld (token KL against a\n"
				"reference model); see --help\n");
		return CTQ_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		help();
		return CTQ_EXIT_OK;
	}
	o->bench = ctq_bench_parse(argv[1]);
	if (o->bench == CTQ_BENCH_COUNT) {
		fprintf(stderr, "ctq eval: unknown benchmark \"%s\"; expected mmlu, ceval, cmmlu or kld\n", argv[1]);
		return CTQ_EXIT_USAGE;
	}
	o->shots = 5;
	o->slots = 32;
	o->tp = 1;
	o->max_tokens = -1;
	o->margin = 1.0;
	o->subject_margin = 5.0;
	o->min_subject_n = 100;
	o->concurrency = 8;
	o->request_timeout_s = 300;
	o->protocol = CTQ_PROTO_ORIGINAL;
	o->split = o->bench == CTQ_BENCH_CEVAL ? "val" : "test";
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--model", &o->model),
		CTQ_OPT_STR("--ref-model", &o->ref),
		CTQ_OPT_STR("--url", &o->url),
		CTQ_OPT_STR("--ref-url", &o->ref_url),
		CTQ_OPT_STR("--served-name", &o->served_name),
		CTQ_OPT_STR("--ref-served-name", &o->ref_served_name),
		CTQ_OPT_INT("--concurrency", &o->concurrency, 1, 4096),
		CTQ_OPT_FN("--request-timeout", &o->request_timeout_s, ctq_opt_fn_seconds),
		CTQ_OPT_STR("--data", &o->data),
		CTQ_OPT_STR("--split", &o->split),
		CTQ_OPT_STR("--backend", &o->backend),
		CTQ_OPT_STR("--tokenizer", &o->tokenizer),
		CTQ_OPT_OUT(&o->out),
		CTQ_OPT_INT("--shots", &o->shots, 0, 5),
		CTQ_OPT_INT("--limit", &o->limit, 1, 1L << 30),
		CTQ_OPT_INT("--max-context", &o->max_context, 2, 1L << 24),
		CTQ_OPT_INT("--max-tokens", &o->max_tokens, 1, 1L << 20),
		CTQ_OPT_INT("--slots", &o->slots, 1, 4096),
		CTQ_OPT_INT("--tp", &o->tp, 1, 8),
		CTQ_OPT_INT("--min-subject-n", &o->min_subject_n, 1, 1L << 30),
		CTQ_OPT_FN("--margin", &o->margin, opt_points),
		CTQ_OPT_FN("--subject-margin", &o->subject_margin, opt_points),
		CTQ_OPT_FN("--act-numerics", &o->numerics, ctq_opt_fn_act_numerics),
		CTQ_OPT_FN("--protocol", &o->protocol, opt_protocol),
		CTQ_OPT_FN("--subjects", o, opt_subjects),
		CTQ_OPT_FLAG("--add-bos", &o->add_bos),
		CTQ_OPT_FLAG("--progress", &o->progress),
		CTQ_OPT_END,
	};
	/* argv[1], the benchmark, is the parser's argv[0]. */
	int rc = ctq_opt_parse("eval", argc - 1, argv + 1, opts, NULL, 0, help);
	if (rc >= 0)
		return rc;
	if (!o->model == !o->url || (o->ref && o->ref_url)) {
		fprintf(stderr, "ctq eval: give the candidate as --model DIR or --url URL, and the "
				"reference (if any) as --ref-model DIR or --ref-url URL, one of each (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if ((o->url || o->ref_url) && !o->tokenizer) {
		fprintf(stderr, "ctq eval: a model behind --url / --ref-url needs --tokenizer PATH (the "
				"model folder or its tokenizer.json)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_model_dir("eval", "--model", o->model, &rc) ||
	    !ctq_opt_model_dir("eval", "--ref-model", o->ref, &rc))
		return rc;
	if (!ctq_protocol_id(o->bench, o->protocol)) {
		fprintf(stderr, "ctq eval: %s has no %s protocol (the spec defines none); use original\n",
			ctq_bench_name(o->bench), ctq_protocol_name(o->protocol));
		return CTQ_EXIT_USAGE;
	}
	/* --backend's default: no model here runs locally behind --url; the
	 * reference numerics run on the reference backend only */
	if (!o->backend)
		o->backend = !o->model && !o->ref ? "reference"
			     : o->numerics != CTQ_ACT_NUMERICS_CTQ ? "reference"
								    : ctq_opt_backend_default("eval");
	if (!ctq_opt_act_numerics_backend("eval", o->numerics, o->backend))
		return CTQ_EXIT_USAGE;
	if (!ctq_opt_out_ok("eval", &o->out))
		return CTQ_EXIT_USAGE;
	if (o->max_tokens < 0)
		o->max_tokens = !strcmp(o->backend, "reference") ? 512 : 4096;
	return -1;
}

static void progress_begin(void *ctx, const char *label)
{
	struct progress *p = ctx;
	p->label = label;
	ctq_progress_line_start(&p->line);
}

/* ctq_eval_run_write as ctq_harness_run_write's callback (dst: struct ctq_eval_run *). */
static enum ctq_status write_run(void *dst, struct ctq_run *run, struct ctq_error *err)
{
	return ctq_eval_run_write(dst, run, err);
}

int ctq_cmd_eval(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "kld")) /* harness/cmd_eval_kld.c */
		return ctq_cmd_eval_kld(argc - 1, argv + 1);
	struct opts o;
	memset(&o, 0, sizeof o);
	int rc = parse_opts(argc, argv, &o);
	if (rc >= 0)
		return rc;
	char data_dir[PATH_MAX];
	if (o.data)
		snprintf(data_dir, sizeof data_dir, "%s", o.data);
	else if (!default_data(o.bench, data_dir, sizeof data_dir)) {
		fprintf(stderr,
			"ctq eval: no --data given and the sample %s is not here (run from the repository root, or pass --data DIR)\n",
			data_dir);
		return CTQ_EXIT_USAGE;
	}

	struct ctq_error err = {0};
	struct ctq_eval_run r;
	struct ctq_run run;
	struct progress pg = {0};
	const struct ctq_eval_run_options ro = {
		.bench = o.bench, .protocol = o.protocol, .numerics = o.numerics, .model = o.model,
		.ref = o.ref, .url = o.url, .ref_url = o.ref_url, .served_name = o.served_name,
		.ref_served_name = o.ref_served_name, .concurrency = o.concurrency,
		.request_timeout_s = o.request_timeout_s, .data_dir = data_dir, .split = o.split, .backend = o.backend,
		.tokenizer = o.tokenizer, .shots = o.shots, .limit = o.limit,
		.max_context = o.max_context, .max_tokens = o.max_tokens, .slots = o.slots,
		.min_subject_n = o.min_subject_n, .tp = o.tp, .margin = o.margin,
		.subject_margin = o.subject_margin, .add_bos = o.add_bos, .subjects = o.subjects,
		.n_subjects = (size_t)o.n_subjects};
	enum ctq_status st = ctq_eval_run_open(&r, &ro, &err);
	if (st)
		goto out;

	const struct ctq_eval_set *shared = &r.shared;
	printf("ctq eval %s: protocol %s, %ld-shot, split %s, %zu questions in %zu subjects, on %s\n",
	       ctq_bench_name(o.bench), r.protocol_id, o.shots, o.split, shared->n, r.data.n, r.device);
	printf("  continuations \"%s\"..\"%s\"; context %lld tokens (%s); headline average %s\n",
	       ctq_prompt_continuation(o.bench, o.protocol, 0),
	       ctq_prompt_continuation(o.bench, o.protocol, 3), (long long)r.eo.max_context,
	       ctq_eval_overflow_name(ctq_protocol_overflow(o.bench, o.protocol)),
	       r.macro_head ? "macro" : "micro");
	if (shared->n_fewer_shots || shared->n_truncated || shared->n_merged || shared->n_multi_token)
		printf("  %zu questions with fewer shots, %zu truncated, %zu with a token merged across "
		       "the answer boundary, %zu with a multi-token continuation\n",
		       shared->n_fewer_shots, shared->n_truncated, shared->n_merged, shared->n_multi_token);
	fflush(stdout);

	pg.line.on = o.progress || isatty(2);
	const struct ctq_eval_run_progress rp = {.begin = progress_begin, .step = progress_cb, .ctx = &pg};
	st = ctq_eval_run_score(&r, &rp, &err);
	for (int m = 0; m < 2; m++) {
		const struct ctq_eval_model *em = m ? &r.base : &r.cand;
		if (em->url && em->remote.learned[0])
			printf("  %s: %s\n", em->url, em->remote.learned);
		if (em->url && em->remote.cont_differ)
			printf("  %s: %zu continuations tokenized otherwise by the server than by ctq's "
			       "tokenizer (scored by the server's tokens)\n",
			       em->url, em->remote.cont_differ);
	}
	if (st || (st = ctq_eval_run_summarize(&r, &err)))
		goto out;
	fputs(ctq_strbuf_str(&r.table), stdout);
	fflush(stdout);

	if ((st = ctq_harness_run_write(&run, &o.out, "eval", argc, argv, write_run, &r, &err)))
		goto out;
	printf("results in %s\n", run.final_dir);
out:
	rc = st ? ctq_progress_line_fail(&pg.line, "eval", &err)
		: r.any_inferior ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
	ctq_eval_run_free(&r);
	return rc;
}
