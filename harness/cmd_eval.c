/* ctq eval: MMLU / C-Eval / CMMLU accuracy of a checkpoint by answer-letter
 * log-probabilities (eval/eval.h), and with --ref-model the paired verdict
 * of a candidate against a baseline on the same questions (stats/accuracy.h).
 * Writes per-question, per-group and paired CSVs, a summary and the
 * manifest into a run directory. */
#include "harness/commands.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "eval/datasets.h"
#include "eval/eval.h"
#include "eval/prompts.h"
#include "stats/accuracy.h"
#include "model/runner.h"
#include "text/tokenizer.h"
#include "results/csv_out.h"
#include "results/junit.h"
#include "results/run.h"
#include "core/time.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Without max_position_embeddings in config.json: the context of the
 * models the protocols were written for (Hendrycks' crop.py, CMMLU's
 * --max_length default). */
#define DEFAULT_CONTEXT 2048
#define MAX_SUBJECTS 128

static void help(void)
{
	printf("usage: ctq eval mmlu|ceval|cmmlu --model DIR [options]\n"
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
	       "  --backend B          cuda (default) or reference\n"
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
	       "inferior when its upper bound is below, inconclusive otherwise.\n"
	       "\n"
	       "exit: 0 done (and non-inferior); 1 non-inferiority not shown (inferior or\n"
	       "inconclusive) overall or in a subject with at least --min-subject-n\n"
	       "questions; 2 bad usage or input; 3 no GPU for cuda.\n",
	       DEFAULT_CONTEXT);
}

static bool opt_double(const char *opt, const char *v, double min, double max, double *out)
{
	char *end;
	double x = strtod(v, &end);
	if (end == v || *end || !(x >= min && x <= max)) {
		fprintf(stderr, "ctq eval: %s is \"%s\"; expected a number in [%g, %g]\n", opt, v, min, max);
		return false;
	}
	*out = x;
	return true;
}

/* ---- progress ------------------------------------------------------------------- */

struct progress {
	bool on;
	const char *label;
	double t0, last;
	bool drawn; /* a progress line is open on stderr */
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
	if (!p->on)
		return;
	double t = ctq_now_s();
	if (done < total && t - p->last < 0.2)
		return;
	p->last = t;
	double el = t - p->t0, rate = el > 0 ? (double)done / el : 0;
	char eta[32];
	fmt_eta(rate > 0 ? (double)(total - done) / rate : NAN, eta, sizeof eta);
	int width = 24, fill = total ? (int)((double)width * (double)done / (double)total) : width;
	char bar[32];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = '\0';
	fprintf(stderr, "\r%s [%s] %zu/%zu questions  %.1f q/s  ETA %s   ", p->label, bar, done, total,
		rate, eta);
	if (done == total)
		fprintf(stderr, "\n");
	fflush(stderr);
	p->drawn = done < total; /* a line is left open */
}

/* ---- model runs ----------------------------------------------------------------- */

struct model_run {
	const char *dir;          /* borrowed */
	char tok_path[1024];
	char tok_sha[65], config_sha[65];
	struct ctq_tokenizer tok;
	struct ctq_eval_set own;  /* when its tokenizer differs from the other model's */
	const struct ctq_eval_set *set;
	double (*lp)[4];          /* (n items) */
	struct ctq_eval_counters counters;
	int64_t context;          /* max_position_embeddings, 0 when absent */
	int64_t n_quantized, n_dense;
	uint64_t weight_bytes;
	double load_s;
};

static void model_run_free(struct model_run *m)
{
	ctq_tokenizer_free(&m->tok);
	ctq_eval_set_free(&m->own);
	free(m->lp);
}

static void sha_file_hex(const char *path, char hex[65])
{
	unsigned char dg[CTQ_SHA256_BYTES];
	if (ctq_sha256_file(path, dg, NULL))
		snprintf(hex, 65, "unreadable");
	else
		ctq_sha256_hex(dg, hex);
}

/* The tokenizer file of a model (or the --tokenizer override), its digest,
 * the config digest and its context length. */
static enum ctq_status model_open(struct model_run *m, const char *tokenizer,
				  struct ctq_error *err)
{
	const char *tp = tokenizer ? tokenizer : m->dir;
	if (ctq_path_is_dir(tp))
		snprintf(m->tok_path, sizeof m->tok_path, "%s/tokenizer.json", tp);
	else
		snprintf(m->tok_path, sizeof m->tok_path, "%s", tp);
	if (!ctq_path_exists(m->tok_path))
		return ctq_error_set(err, CTQ_ERR_IO, m->tok_path,
				     "no tokenizer (a synthetic checkpoint has none: give --tokenizer PATH)");
	enum ctq_status st = ctq_tokenizer_load(&m->tok, tp, err);
	if (st)
		return st;
	sha_file_hex(m->tok_path, m->tok_sha);
	char cfg[1100];
	snprintf(cfg, sizeof cfg, "%s/config.json", m->dir);
	sha_file_hex(cfg, m->config_sha);
	cJSON *root = NULL;
	if ((st = ctq_json_load_file(cfg, (size_t)16 << 20, NULL, &root, err)))
		return st;
	const cJSON *mp = ctq_json_get(root, "max_position_embeddings");
	if (!mp)
		mp = ctq_json_get(ctq_json_get(root, "text_config"), "max_position_embeddings");
	long ctxlen = 0;
	if (mp && (st = ctq_json_int(mp, "max_position_embeddings", 2, 1L << 24, &ctxlen, err))) {
		cJSON_Delete(root);
		return st;
	}
	m->context = ctxlen;
	cJSON_Delete(root);
	return CTQ_OK;
}

static enum ctq_status model_score(struct model_run *m, struct ctq_backend *b, int tp,
				   struct ctq_tp_group *group, long slots, long max_tokens,
				   struct progress *pg, struct ctq_error *err)
{
	const struct ctq_eval_set *s = m->set;
	m->lp = calloc(s->n ? s->n : 1, sizeof *m->lp);
	if (!m->lp)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	int64_t longest = s->max_len;
	struct ctq_runner r[8];
	memset(r, 0, sizeof r);
	double t = ctq_now_s();
	enum ctq_status st = CTQ_OK;
	for (int k = 0; k < tp && !st; k++) {
		struct ctq_runner_options opt = {
			.max_slots = slots < (long)s->n ? slots : (long)(s->n ? s->n : 1),
			.max_len = longest,
			.max_tokens = max_tokens,
			.tp = tp, .rank = k, .group = group};
		st = ctq_runner_load(&r[k], &b[k], m->dir, &opt, err);
	}
	m->load_s = ctq_now_s() - t;
	if (!st) {
		m->n_quantized = r[0].n_quantized;
		m->n_dense = r[0].n_dense;
		for (int k = 0; k < tp; k++)
			m->weight_bytes += r[k].weight_bytes;
		pg->t0 = pg->last = ctq_now_s();
		st = ctq_eval_score(r, tp, s, m->lp, progress_cb, pg, &m->counters, err);
	}
	for (int k = 0; k < tp; k++)
		ctq_runner_free(&r[k]);
	return st;
}

/* ---- aggregation ---------------------------------------------------------------- */

struct tally {
	size_t n, k_new, k_ref;
	size_t a, b, c, d, agree; /* paired table (see stats/accuracy.h), top-1 agreement */
	double kl;                /* sum of KL(ref || new) */
};

static void tally_add(struct tally *t, const struct tally *u)
{
	t->n += u->n, t->k_new += u->k_new, t->k_ref += u->k_ref;
	t->a += u->a, t->b += u->b, t->c += u->c, t->d += u->d, t->agree += u->agree;
	t->kl += u->kl;
}

/* A reported group: a subject, a category, a flagged set, or everything. */
struct group {
	const char *level;   /* "subject", "category", "overall" */
	const char *name;
	struct tally t;
	size_t n_subjects;
	double macro_new, macro_new_se, macro_ref, macro_ref_se;
	struct ctq_paired paired;
	double margin;       /* points */
	bool gated;
	bool inferior;       /* the gate fails: non-inferiority not shown */
	const char *verdict; /* non-inferior, inconclusive, inferior */
};

static void group_finish(struct group *g, const struct tally *subj, const size_t *members,
			 size_t n_members, bool have_ref)
{
	size_t kn[MAX_SUBJECTS], kr[MAX_SUBJECTS], nn[MAX_SUBJECTS];
	g->n_subjects = 0;
	memset(&g->t, 0, sizeof g->t);
	double sn = 0, sr = 0;
	for (size_t i = 0; i < n_members; i++) {
		const struct tally *u = &subj[members[i]];
		tally_add(&g->t, u);
		if (!u->n)
			continue;
		kn[g->n_subjects] = u->k_new;
		kr[g->n_subjects] = u->k_ref;
		nn[g->n_subjects] = u->n;
		sn += (double)u->k_new / (double)u->n;
		sr += (double)u->k_ref / (double)u->n;
		g->n_subjects++;
	}
	double S = g->n_subjects ? (double)g->n_subjects : NAN;
	g->macro_new = sn / S;
	g->macro_ref = sr / S;
	g->macro_new_se = ctq_stats_macro_se(kn, nn, g->n_subjects);
	g->macro_ref_se = ctq_stats_macro_se(kr, nn, g->n_subjects);
	if (have_ref)
		ctq_stats_paired(&g->paired, g->t.a, g->t.b, g->t.c, g->t.d, CTQ_Z95);
}

static const char *verdict_name(const struct group *g, bool have_ref)
{
	if (!have_ref)
		return "";
	if (!g->gated)
		return "n/a";
	return g->verdict;
}

static double pct(size_t k, size_t n)
{
	return n ? 100.0 * (double)k / (double)n : NAN;
}

/* ---- outputs ------------------------------------------------------------------- */

static const char *const q_header[] = {
	"benchmark", "protocol", "split", "subject", "category", "id", "line", "shots", "prompt_tokens",
	"context_tokens", "truncated", "prompt_sha256", "answer", "chosen", "correct", "logprob_A",
	"logprob_B", "logprob_C", "logprob_D", "ref_chosen", "ref_correct", "ref_logprob_A",
	"ref_logprob_B", "ref_logprob_C", "ref_logprob_D", "kl_ref_new_nats",
};

static const char *const g_header[] = {
	"level", "name", "model", "n_subjects", "n", "correct", "acc_micro", "se_micro", "acc_macro",
	"se_macro",
};

static const char *const p_header[] = {
	"level", "name", "n", "ref_correct", "new_correct", "both_right", "right_to_wrong",
	"wrong_to_right", "both_wrong", "acc_ref", "acc_new", "diff", "ci_low", "ci_high",
	"ci_method", "wald_low", "wald_high", "mcnemar_p", "agreement", "kl_mean_nats", "margin",
	"verdict",
};

static void g_row(struct ctq_csv *w, const struct group *g, const char *model, size_t k,
		  double macro, double macro_se)
{
	ctq_csv_field(w, g->level);
	ctq_csv_field(w, g->name);
	ctq_csv_field(w, model);
	ctq_csv_fieldf(w, "%zu", g->n_subjects);
	ctq_csv_fieldf(w, "%zu", g->t.n);
	ctq_csv_fieldf(w, "%zu", k);
	ctq_csv_fieldf(w, "%.17g", g->t.n ? (double)k / (double)g->t.n : NAN);
	ctq_csv_fieldf(w, "%.17g", ctq_stats_binom_se(k, g->t.n));
	ctq_csv_fieldf(w, "%.17g", macro);
	ctq_csv_fieldf(w, "%.17g", macro_se);
	ctq_csv_end_row(w);
}

static void p_row(struct ctq_csv *w, const struct group *g)
{
	const struct ctq_paired *p = &g->paired;
	ctq_csv_field(w, g->level);
	ctq_csv_field(w, g->name);
	ctq_csv_fieldf(w, "%zu", p->n);
	ctq_csv_fieldf(w, "%zu", g->t.k_ref);
	ctq_csv_fieldf(w, "%zu", g->t.k_new);
	ctq_csv_fieldf(w, "%zu", p->a);
	ctq_csv_fieldf(w, "%zu", p->b);
	ctq_csv_fieldf(w, "%zu", p->c);
	ctq_csv_fieldf(w, "%zu", p->d);
	ctq_csv_fieldf(w, "%.17g", p->acc_ref);
	ctq_csv_fieldf(w, "%.17g", p->acc_new);
	ctq_csv_fieldf(w, "%.17g", p->diff);
	ctq_csv_fieldf(w, "%.17g", p->lo);
	ctq_csv_fieldf(w, "%.17g", p->hi);
	ctq_csv_field(w, "newcombe-hybrid-score");
	ctq_csv_fieldf(w, "%.17g", p->wald_lo);
	ctq_csv_fieldf(w, "%.17g", p->wald_hi);
	ctq_csv_fieldf(w, "%.17g", p->p_mcnemar);
	ctq_csv_fieldf(w, "%.17g", g->t.n ? (double)g->t.agree / (double)g->t.n : NAN);
	ctq_csv_fieldf(w, "%.17g", g->t.n ? g->t.kl / (double)g->t.n : NAN);
	ctq_csv_fieldf(w, "%g", g->margin);
	ctq_csv_field(w, verdict_name(g, true));
	ctq_csv_end_row(w);
}

/* One line of the summary table. The macro row compares the macro
 * averages only: the paired statistics are of pooled questions. */
static void table_row(struct ctq_strbuf *sb, const struct group *g, bool have_ref, bool macro)
{
	char name[48];
	snprintf(name, sizeof name, "%s", g->name);
	double acc = macro ? 100 * g->macro_new : pct(g->t.k_new, g->t.n);
	double se = macro ? 100 * g->macro_new_se : 100 * ctq_stats_binom_se(g->t.k_new, g->t.n);
	ctq_strbuf_printf(sb, "%-40s %6zu %7.2f %5.2f", name, g->t.n, acc, se);
	if (have_ref && macro) {
		ctq_strbuf_printf(sb, "  %7.2f %+6.2f", 100 * g->macro_ref, acc - 100 * g->macro_ref);
	} else if (have_ref) {
		const struct ctq_paired *p = &g->paired;
		ctq_strbuf_printf(sb, "  %7.2f %+6.2f [%+6.2f, %+6.2f] %5zu %5zu %9.3g %6.1f %9.3g  %s",
				  pct(g->t.k_ref, g->t.n), 100 * p->diff, 100 * p->lo, 100 * p->hi, p->b,
				  p->c, p->p_mcnemar, pct(g->t.agree, g->t.n),
				  g->t.n ? g->t.kl / (double)g->t.n : NAN, verdict_name(g, true));
	}
	ctq_strbuf_append(sb, "\n");
}

static void table_head(struct ctq_strbuf *sb, bool have_ref)
{
	ctq_strbuf_printf(sb, "%-40s %6s %7s %5s", "group", "n", "acc %", "se");
	if (have_ref)
		ctq_strbuf_printf(sb, "  %7s %6s %-16s %5s %5s %9s %6s %9s  %s", "ref %", "diff",
				  "95% CI Newcombe", "r->w", "w->r", "McNemar p", "agree%", "KL nats",
				  "verdict");
	ctq_strbuf_append(sb, "\n");
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

static int split_list(char *s, const char **v, int cap)
{
	int n = 0;
	for (char *t = strtok(s, ","); t; t = strtok(NULL, ",")) {
		if (n == cap)
			return -1;
		v[n++] = t;
	}
	return n;
}

struct opts {
	enum ctq_bench bench;
	const char *model, *ref, *data, *split, *backend, *tokenizer, *out;
	long shots, limit, max_context, max_tokens, slots, min_subject_n, tp;
	double margin, subject_margin;
	enum ctq_protocol protocol;
	enum ctq_act_numerics numerics;
	bool add_bos, progress, force;
	const char *subjects[MAX_SUBJECTS];
	int n_subjects;
	char subjects_buf[4096];
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	if (argc < 2) {
		fprintf(stderr, "ctq eval: name a benchmark: mmlu, ceval or cmmlu (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		help();
		return -1;
	}
	o->bench = ctq_bench_parse(argv[1]);
	if (o->bench == CTQ_BENCH_COUNT) {
		fprintf(stderr, "ctq eval: unknown benchmark \"%s\"; expected mmlu, ceval or cmmlu\n", argv[1]);
		return CTQ_EXIT_USAGE;
	}
	o->backend = "cuda";
	o->shots = 5;
	o->slots = 32;
	o->tp = 1;
	o->max_tokens = -1;
	o->margin = 1.0;
	o->subject_margin = 5.0;
	o->min_subject_n = 100;
	o->protocol = CTQ_PROTO_ORIGINAL;
	o->split = o->bench == CTQ_BENCH_CEVAL ? "val" : "test";
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return -1;
		}
		if (!strcmp(a, "--add-bos")) {
			o->add_bos = true;
			continue;
		}
		if (!strcmp(a, "--progress")) {
			o->progress = true;
			continue;
		}
		if (!strcmp(a, "--force")) {
			o->force = true;
			continue;
		}
		if (!(v = ctq_opt_value(argc, argv, &i)))
			return CTQ_EXIT_USAGE;
		bool ok = true;
		if (!strcmp(a, "--model"))
			o->model = v;
		else if (!strcmp(a, "--ref-model"))
			o->ref = v;
		else if (!strcmp(a, "--data"))
			o->data = v;
		else if (!strcmp(a, "--split"))
			o->split = v;
		else if (!strcmp(a, "--backend"))
			o->backend = v;
		else if (!strcmp(a, "--tokenizer"))
			o->tokenizer = v;
		else if (!strcmp(a, "--out"))
			o->out = v;
		else if (!strcmp(a, "--shots"))
			ok = ctq_opt_int("eval", a, v, 0, 5, &o->shots);
		else if (!strcmp(a, "--limit"))
			ok = ctq_opt_int("eval", a, v, 1, 1L << 30, &o->limit);
		else if (!strcmp(a, "--max-context"))
			ok = ctq_opt_int("eval", a, v, 2, 1L << 24, &o->max_context);
		else if (!strcmp(a, "--max-tokens"))
			ok = ctq_opt_int("eval", a, v, 1, 1L << 20, &o->max_tokens);
		else if (!strcmp(a, "--slots"))
			ok = ctq_opt_int("eval", a, v, 1, 4096, &o->slots);
		else if (!strcmp(a, "--tp"))
			ok = ctq_opt_int("eval", a, v, 1, 8, &o->tp);
		else if (!strcmp(a, "--min-subject-n"))
			ok = ctq_opt_int("eval", a, v, 1, 1L << 30, &o->min_subject_n);
		else if (!strcmp(a, "--margin"))
			ok = opt_double(a, v, 0, 100, &o->margin);
		else if (!strcmp(a, "--subject-margin"))
			ok = opt_double(a, v, 0, 100, &o->subject_margin);
		else if (!strcmp(a, "--act-numerics"))
			ok = ctq_opt_act_numerics("eval", v, &o->numerics);
		else if (!strcmp(a, "--protocol")) {
			o->protocol = ctq_protocol_parse(v);
			if (o->protocol == CTQ_PROTO_COUNT) {
				fprintf(stderr, "ctq eval: --protocol is \"%s\"; expected original or lm-eval\n", v);
				return CTQ_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--subjects")) {
			snprintf(o->subjects_buf, sizeof o->subjects_buf, "%s", v);
			o->n_subjects = split_list(o->subjects_buf, o->subjects, MAX_SUBJECTS);
			if (o->n_subjects <= 0) {
				fprintf(stderr, "ctq eval: --subjects needs a comma-separated list (at most %d)\n",
					MAX_SUBJECTS);
				return CTQ_EXIT_USAGE;
			}
		} else {
			fprintf(stderr, "ctq eval: unknown option %s (see --help)\n", a);
			return CTQ_EXIT_USAGE;
		}
		if (!ok)
			return CTQ_EXIT_USAGE;
	}
	if (!o->model) {
		fprintf(stderr, "ctq eval: --model DIR is required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_model_dir("eval", "--model", o->model) ||
	    !ctq_opt_model_dir("eval", "--ref-model", o->ref))
		return ctq_status_exit_code(CTQ_ERR_IO);
	if (!ctq_protocol_id(o->bench, o->protocol)) {
		fprintf(stderr, "ctq eval: %s has no %s protocol (the spec defines none); use original\n",
			ctq_bench_name(o->bench), ctq_protocol_name(o->protocol));
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_act_numerics_backend("eval", o->numerics, o->backend))
		return CTQ_EXIT_USAGE;
	if (!ctq_opt_out_ok("eval", o->out, o->force))
		return CTQ_EXIT_USAGE;
	if (o->max_tokens < 0)
		o->max_tokens = !strcmp(o->backend, "reference") ? 512 : 4096;
	return 0;
}

/* Category of a subject under the chosen protocol. */
static const char *category_of(const struct opts *o, const struct ctq_subject_meta *m)
{
	if (o->bench == CTQ_BENCH_MMLU && o->protocol == CTQ_PROTO_LM_EVAL)
		return m->category_lm_eval;
	return m->category;
}

static const char *overflow_name(enum ctq_overflow r)
{
	return r == CTQ_OVERFLOW_DROP_LAST_SHOT ? "drop the last shot until it fits"
	       : r == CTQ_OVERFLOW_DROP_LONGEST ? "drop the longest shots (CMMLU gen_prompt)"
						: "left-truncate (lm-eval)";
}

int ctq_cmd_eval(int argc, char **argv)
{
	struct opts o;
	memset(&o, 0, sizeof o);
	int rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc < 0 ? CTQ_EXIT_OK : rc;
	const bool have_ref = o.ref != NULL;
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
	struct ctq_eval_data data;
	struct model_run cand, base;
	struct ctq_eval_set shared;
	struct ctq_backend b[8];
	struct ctq_tp_group *group = NULL;
	struct ctq_run run;
	struct ctq_csv csv;
	struct ctq_strbuf table;
	struct tally *subj = NULL;
	struct group *groups = NULL;
	struct ctq_junit_case *cases = NULL;
	struct progress pg = {0};
	memset(&data, 0, sizeof data);
	memset(&cand, 0, sizeof cand);
	memset(&base, 0, sizeof base);
	memset(&shared, 0, sizeof shared);
	memset(b, 0, sizeof b);
	memset(&run, 0, sizeof run);
	memset(&csv, 0, sizeof csv);
	ctq_strbuf_init(&table);
	cand.dir = o.model;
	base.dir = o.ref;
	rc = CTQ_EXIT_USAGE;

	if (ctq_eval_data_load(&data, o.bench, data_dir, o.split, o.n_subjects ? o.subjects : NULL,
			       (size_t)o.n_subjects, o.shots > 0, &err))
		goto fail;
	if (data.n > MAX_SUBJECTS) {
		ctq_error_set(&err, CTQ_ERR_USAGE, data_dir, "%zu subjects; at most %d", data.n, MAX_SUBJECTS);
		goto fail;
	}
	for (size_t i = 0; i < data.n; i++)
		if (!data.subjects[i].items.has_answers) {
			ctq_error_set(&err, CTQ_ERR_USAGE, data.subjects[i].path,
				      "the %s %s split has no answers (C-Eval withheld its test labels): it loads but cannot be scored; use --split val",
				      ctq_bench_name(o.bench), o.split);
			goto fail;
		}
	/* The backends first: no GPU is exit 3 before any tokenizing. With --tp
	 * on CUDA, rank k runs on GPU k and the ranks share one NCCL clique. */
	const bool cuda = !strcmp(o.backend, "cuda");
	for (long k = 0; k < o.tp; k++)
		if ((o.tp > 1 && cuda ? ctq_backend_cuda(&b[k], (int)k, &err)
				      : ctq_backend_open(&b[k], o.backend, &err)) ||
		    ctq_backend_set_act_numerics(&b[k], o.numerics, &err))
			goto fail;
	if (o.tp > 1 && (cuda ? ctq_backend_cuda_tp_init(b, (int)o.tp, &err)
			      : !(group = ctq_tp_group_new((int)o.tp)) &&
					ctq_error_set(&err, CTQ_ERR_NOMEM, "--tp", "out of memory")))
		goto fail;
	if (model_open(&cand, o.tokenizer, &err) || (have_ref && model_open(&base, o.tokenizer, &err)))
		goto fail;
	int64_t model_ctx = cand.context;
	if (have_ref && base.context && (!model_ctx || base.context < model_ctx))
		model_ctx = base.context;
	struct ctq_eval_options eo = {
		.bench = o.bench, .protocol = o.protocol, .shots = (int)o.shots,
		.max_context = o.max_context ? o.max_context : model_ctx ? model_ctx : DEFAULT_CONTEXT,
		.limit = (size_t)o.limit, .add_bos = o.add_bos, .bos_id = cand.tok.bos_id};
	double t_prep = ctq_now_s();
	if (ctq_eval_prepare(&shared, &data, &eo, &cand.tok, &err))
		goto fail;
	cand.set = &shared;
	if (have_ref) {
		if (!strcmp(base.tok_sha, cand.tok_sha) && base.tok.bos_id == cand.tok.bos_id) {
			base.set = &shared;
		} else {
			struct ctq_eval_options ro = eo;
			ro.bos_id = base.tok.bos_id;
			if (ctq_eval_prepare(&base.own, &data, &ro, &base.tok, &err))
				goto fail;
			base.set = &base.own;
		}
	}
	t_prep = ctq_now_s() - t_prep;
	if (shared.n == 0) {
		ctq_error_set(&err, CTQ_ERR_USAGE, data_dir, "no questions to evaluate");
		goto fail;
	}

	char desc[256];
	b[0].ops->describe(&b[0], desc, sizeof desc);
	if (o.tp > 1) {
		size_t dl = strlen(desc);
		snprintf(desc + dl, sizeof desc - dl, " x %ld ranks (tp %ld%s)", o.tp, o.tp,
			 cuda ? ", NCCL" : ", in-process");
	}
	if (o.numerics != CTQ_ACT_NUMERICS_CTQ) {
		size_t dl = strlen(desc);
		snprintf(desc + dl, sizeof desc - dl, ", %s activation numerics",
			 ctq_act_numerics_name(o.numerics));
	}
	const char *pid = ctq_protocol_id(o.bench, o.protocol);
	const bool macro_head = ctq_protocol_macro(o.bench, o.protocol);
	printf("ctq eval %s: protocol %s, %ld-shot, split %s, %zu questions in %zu subjects, on %s\n",
	       ctq_bench_name(o.bench), pid, o.shots, o.split, shared.n, data.n, desc);
	printf("  continuations \"%s\"..\"%s\"; context %lld tokens (%s); headline average %s\n",
	       ctq_prompt_continuation(o.bench, o.protocol, 0),
	       ctq_prompt_continuation(o.bench, o.protocol, 3), (long long)eo.max_context,
	       overflow_name(ctq_protocol_overflow(o.bench, o.protocol)), macro_head ? "macro" : "micro");
	if (shared.n_fewer_shots || shared.n_truncated || shared.n_merged || shared.n_multi_token)
		printf("  %zu questions with fewer shots, %zu truncated, %zu with a token merged across "
		       "the answer boundary, %zu with a multi-token continuation\n",
		       shared.n_fewer_shots, shared.n_truncated, shared.n_merged, shared.n_multi_token);
	fflush(stdout);

	pg.on = o.progress || isatty(2);
	if (have_ref) {
		pg.label = "reference";
		if (model_score(&base, b, (int)o.tp, group, o.slots, o.max_tokens, &pg, &err))
			goto fail;
	}
	pg.label = have_ref ? "candidate" : "eval";
	if (model_score(&cand, b, (int)o.tp, group, o.slots, o.max_tokens, &pg, &err))
		goto fail;

	/* Per-subject tallies. */
	subj = calloc(data.n, sizeof *subj);
	if (!subj) {
		ctq_error_set(&err, CTQ_ERR_NOMEM, "eval", "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < shared.n; i++) {
		const struct ctq_eval_item *it = &shared.items[i];
		const struct ctq_question *q = &data.subjects[it->subject].items.q[it->index];
		struct tally *t = &subj[it->subject];
		int gold = q->answer - 'A', cn = ctq_eval_argmax4(cand.lp[i]);
		bool rn = cn == gold;
		t->n++;
		t->k_new += rn;
		if (have_ref) {
			int cr = ctq_eval_argmax4(base.lp[i]);
			bool rr = cr == gold;
			t->k_ref += rr;
			t->a += rr && rn, t->b += rr && !rn, t->c += !rr && rn, t->d += !rr && !rn;
			t->agree += cr == cn;
			t->kl += ctq_stats_kl(base.lp[i], cand.lp[i], 4);
		}
	}
	/* Groups: subjects, categories, the benchmark's extra sets, overall. */
	size_t n_cat;
	const char *const *cats = ctq_bench_categories(o.bench, &n_cat);
	size_t n_groups = data.n + n_cat + 3, ng = 0;
	groups = calloc(n_groups, sizeof *groups);
	size_t *members = calloc(data.n, sizeof *members);
	if (!groups || !members) {
		free(members);
		ctq_error_set(&err, CTQ_ERR_NOMEM, "eval", "out of memory");
		goto fail;
	}
	for (size_t s = 0; s < data.n; s++) {
		struct group *g = &groups[ng++];
		*g = (struct group){.level = "subject", .name = data.subjects[s].meta->name,
				    .margin = o.subject_margin};
		group_finish(g, subj, &s, 1, have_ref);
		g->gated = have_ref && g->t.n >= (size_t)o.min_subject_n;
	}
	for (size_t c = 0; c <= n_cat + 1; c++) {
		const char *name = c < n_cat ? cats[c]
				   : c == n_cat ? (o.bench == CTQ_BENCH_CEVAL   ? "Hard"
						   : o.bench == CTQ_BENCH_CMMLU ? "China specific"
										: NULL)
						: "overall";
		if (!name)
			continue;
		size_t nm = 0;
		for (size_t s = 0; s < data.n; s++) {
			const struct ctq_subject_meta *m = data.subjects[s].meta;
			bool in = c < n_cat ? !strcmp(category_of(&o, m), name)
				  : c == n_cat ? (o.bench == CTQ_BENCH_CEVAL ? m->hard : m->china_specific)
					       : true;
			if (in)
				members[nm++] = s;
		}
		if (!nm)
			continue;
		struct group *g = &groups[ng++];
		*g = (struct group){.level = c == n_cat + 1 ? "overall" : "category", .name = name,
				    .margin = o.margin};
		group_finish(g, subj, members, nm, have_ref);
		g->gated = have_ref && c == n_cat + 1;
	}
	free(members);
	bool any_inferior = false;
	for (size_t i = 0; i < ng; i++) {
		struct group *g = &groups[i];
		/* Non-inferior: the whole interval lies above -margin. Inferior: it
		 * lies below. Otherwise the data cannot tell (inconclusive); the gate
		 * fails for both, since non-inferiority was not shown. */
		const double m = -g->margin / 100.0;
		g->verdict = g->paired.lo > m ? "non-inferior" : g->paired.hi < m ? "inferior" : "inconclusive";
		g->inferior = g->gated && strcmp(g->verdict, "non-inferior");
		any_inferior |= g->inferior;
	}
	const struct group *overall = &groups[ng - 1];

	/* The summary table. */
	table_head(&table, have_ref);
	for (size_t i = 0; i < ng; i++) {
		if (i == data.n || !strcmp(groups[i].level, "overall"))
			ctq_strbuf_append(&table, "\n");
		table_row(&table, &groups[i], have_ref, false);
	}
	char macro_name[64];
	snprintf(macro_name, sizeof macro_name, "overall (macro, %zu subjects)", overall->n_subjects);
	struct group macro_row = *overall;
	macro_row.name = macro_name;
	table_row(&table, &macro_row, have_ref, true);
	int64_t fed = cand.counters.tokens_fed + (have_ref ? base.counters.tokens_fed : 0);
	double secs = cand.counters.seconds + (have_ref ? base.counters.seconds : 0);
	ctq_strbuf_printf(&table,
			  "\nheadline (%s): %.2f%% ± %.2f",
			  macro_head ? "macro" : "micro",
			  macro_head ? 100 * overall->macro_new : pct(overall->t.k_new, overall->t.n),
			  macro_head ? 100 * overall->macro_new_se
				     : 100 * ctq_stats_binom_se(overall->t.k_new, overall->t.n));
	if (have_ref)
		ctq_strbuf_printf(&table, " (reference %.2f%%); verdict %s at margin %.2g points overall, "
				  "%.2g per subject with n >= %ld",
				  macro_head ? 100 * overall->macro_ref : pct(overall->t.k_ref, overall->t.n),
				  !any_inferior ? "non-inferior"
				  : !strcmp(overall->verdict, "inferior") ? "INFERIOR"
				  : "NOT SHOWN non-inferior (inconclusive: the interval straddles -margin)",
				  o.margin, o.subject_margin,
				  o.min_subject_n);
	ctq_strbuf_printf(&table,
			  "\ntokens: %lld through the model (%lld in the prompts; shared prefixes computed "
			  "once per slot) in %.2f s: %.0f tokens/s, %.1f questions/s; preparation %.2f s\n",
			  (long long)fed,
			  (long long)(cand.counters.prompt_tokens + (have_ref ? base.counters.prompt_tokens : 0)),
			  secs, secs > 0 ? (double)fed / secs : 0,
			  secs > 0 ? (double)(shared.n * (have_ref ? 2 : 1)) / secs : 0, t_prep);
	if (table.oom) {
		ctq_error_set(&err, CTQ_ERR_NOMEM, "eval", "out of memory");
		goto fail;
	}
	fputs(ctq_strbuf_str(&table), stdout);
	fflush(stdout);

	/* The run directory. */
	char path[1200];
	if (ctq_run_begin(&run, o.out, o.force, "eval", argc, argv, &err) ||
	    ctq_csv_open(&csv, ctq_run_path(&run, "eval_questions.csv", path, sizeof path), q_header,
			 sizeof q_header / sizeof *q_header, &err))
		goto fail;
	for (size_t i = 0; i < shared.n; i++) {
		const struct ctq_eval_item *it = &shared.items[i];
		const struct ctq_eval_subject *s = &data.subjects[it->subject];
		const struct ctq_question *q = &s->items.q[it->index];
		int cn = ctq_eval_argmax4(cand.lp[i]);
		ctq_csv_field(&csv, ctq_bench_name(o.bench));
		ctq_csv_field(&csv, pid);
		ctq_csv_field(&csv, o.split);
		ctq_csv_field(&csv, s->meta->name);
		ctq_csv_field(&csv, category_of(&o, s->meta));
		ctq_csv_field(&csv, q->id);
		ctq_csv_fieldf(&csv, "%ld", q->line);
		ctq_csv_fieldf(&csv, "%d", it->shots);
		ctq_csv_fieldf(&csv, "%lld", (long long)it->n_prompt);
		ctq_csv_fieldf(&csv, "%lld", (long long)it->n_ctx);
		ctq_csv_field(&csv, it->truncated ? "true" : "false");
		ctq_csv_field(&csv, it->sha256);
		ctq_csv_fieldf(&csv, "%c", q->answer);
		ctq_csv_fieldf(&csv, "%c", 'A' + cn);
		ctq_csv_field(&csv, cn == q->answer - 'A' ? "true" : "false");
		for (int k = 0; k < 4; k++)
			ctq_csv_fieldf(&csv, "%.9g", cand.lp[i][k]);
		if (have_ref) {
			int cr = ctq_eval_argmax4(base.lp[i]);
			ctq_csv_fieldf(&csv, "%c", 'A' + cr);
			ctq_csv_field(&csv, cr == q->answer - 'A' ? "true" : "false");
			for (int k = 0; k < 4; k++)
				ctq_csv_fieldf(&csv, "%.9g", base.lp[i][k]);
			ctq_csv_fieldf(&csv, "%.9g", ctq_stats_kl(base.lp[i], cand.lp[i], 4));
		} else {
			for (int k = 0; k < 7; k++)
				ctq_csv_field(&csv, "");
		}
		ctq_csv_end_row(&csv);
	}
	if (ctq_csv_close(&csv, &err) ||
	    ctq_csv_open(&csv, ctq_run_path(&run, "eval_groups.csv", path, sizeof path), g_header,
			 sizeof g_header / sizeof *g_header, &err))
		goto fail;
	for (size_t i = 0; i < ng; i++) {
		g_row(&csv, &groups[i], "candidate", groups[i].t.k_new, groups[i].macro_new,
		      groups[i].macro_new_se);
		if (have_ref)
			g_row(&csv, &groups[i], "reference", groups[i].t.k_ref, groups[i].macro_ref,
			      groups[i].macro_ref_se);
	}
	if (ctq_csv_close(&csv, &err))
		goto fail;
	if (have_ref) {
		if (ctq_csv_open(&csv, ctq_run_path(&run, "eval_paired.csv", path, sizeof path), p_header,
				 sizeof p_header / sizeof *p_header, &err))
			goto fail;
		for (size_t i = 0; i < ng; i++)
			p_row(&csv, &groups[i]);
		if (ctq_csv_close(&csv, &err))
			goto fail;
		size_t nc = 0;
		cases = calloc(ng, sizeof *cases);
		char (*msgs)[256] = calloc(ng, sizeof *msgs);
		if (!cases || !msgs) {
			free(msgs);
			ctq_error_set(&err, CTQ_ERR_NOMEM, "eval", "out of memory");
			goto fail;
		}
		for (size_t i = 0; i < ng; i++) {
			const struct group *g = &groups[i];
			if (!g->gated)
				continue;
			snprintf(msgs[nc], sizeof msgs[nc],
				 "new - ref = %+.2f points, 95%% CI [%+.2f, %+.2f]; margin -%.2g points",
				 100 * g->paired.diff, 100 * g->paired.lo, 100 * g->paired.hi, g->margin);
			cases[nc] = (struct ctq_junit_case){.classname = g->level, .name = g->name,
							    .failed = g->inferior,
							    .message = g->inferior ? msgs[nc] : NULL};
			nc++;
		}
		char suite[64];
		snprintf(suite, sizeof suite, "eval.%s", pid);
		enum ctq_status js = ctq_junit_write(ctq_run_path(&run, "junit.xml", path, sizeof path),
						     suite, cases, nc, &err);
		free(msgs);
		if (js)
			goto fail;
	}
	if (ctq_file_write_atomic(ctq_run_path(&run, "summary.md", path, sizeof path), table.data,
				  table.len, &err))
		goto fail;

	cJSON *ev = cJSON_AddObjectToObject(run.manifest, "eval");
	cJSON_AddStringToObject(ev, "benchmark", ctq_bench_name(o.bench));
	cJSON_AddStringToObject(ev, "protocol", pid);
	cJSON_AddStringToObject(ev, "act_numerics", ctq_act_numerics_name(o.numerics));
	cJSON_AddStringToObject(ev, "split", o.split);
	cJSON_AddNumberToObject(ev, "shots", (double)o.shots);
	cJSON_AddStringToObject(ev, "data", data_dir);
	cJSON_AddNumberToObject(ev, "limit_per_subject", (double)o.limit);
	cJSON_AddStringToObject(ev, "continuation_A", ctq_prompt_continuation(o.bench, o.protocol, 0));
	cJSON_AddStringToObject(ev, "scoring",
				"sum of log-probabilities of encode(prompt + letter)[len(encode(prompt)):] (lm-eval _encode_pair); argmax of four");
	cJSON_AddStringToObject(ev, "overflow", overflow_name(ctq_protocol_overflow(o.bench, o.protocol)));
	cJSON_AddNumberToObject(ev, "max_context", (double)eo.max_context);
	cJSON_AddBoolToObject(ev, "add_bos", o.add_bos);
	cJSON_AddStringToObject(ev, "headline_average", macro_head ? "macro" : "micro");
	cJSON_AddStringToObject(ev, "categories",
				o.bench == CTQ_BENCH_MMLU
					? (o.protocol == CTQ_PROTO_LM_EVAL ? "lm-eval mmlu groups"
									   : "hendrycks/test categories.py")
				: o.bench == CTQ_BENCH_CEVAL ? "hkust-nlp/ceval subject_mapping.json"
							     : "haonan-li/CMMLU src/categories.py");
	cJSON_AddStringToObject(ev, "macro_se", "sqrt(sum_s p_s(1-p_s)/n_s)/S (subjects fixed)");
	cJSON_AddNumberToObject(ev, "questions", (double)shared.n);
	cJSON_AddNumberToObject(ev, "subjects", (double)data.n);
	cJSON_AddNumberToObject(ev, "fewer_shots", (double)shared.n_fewer_shots);
	cJSON_AddNumberToObject(ev, "truncated", (double)shared.n_truncated);
	cJSON_AddNumberToObject(ev, "boundary_merges", (double)shared.n_merged);
	cJSON_AddNumberToObject(ev, "multi_token_continuations", (double)shared.n_multi_token);
	cJSON *df = cJSON_AddObjectToObject(ev, "data_files_sha256");
	for (size_t i = 0; i < data.n; i++) {
		char hex[65];
		sha_file_hex(data.subjects[i].path, hex);
		cJSON_AddStringToObject(df, data.subjects[i].path, hex);
		if (data.subjects[i].dev_path && strcmp(o.split, "dev")) {
			sha_file_hex(data.subjects[i].dev_path, hex);
			cJSON_AddStringToObject(df, data.subjects[i].dev_path, hex);
		}
	}
	struct model_run *mr[2] = {&cand, have_ref ? &base : NULL};
	const char *mk[2] = {"model", "ref_model"};
	for (int m = 0; m < 2 && mr[m]; m++) {
		cJSON *j = cJSON_AddObjectToObject(ev, mk[m]);
		cJSON_AddStringToObject(j, "path", mr[m]->dir);
		cJSON_AddStringToObject(j, "config_sha256", mr[m]->config_sha);
		cJSON_AddStringToObject(j, "tokenizer", mr[m]->tok_path);
		cJSON_AddStringToObject(j, "tokenizer_sha256", mr[m]->tok_sha);
		cJSON_AddNumberToObject(j, "linear_w8a8", (double)mr[m]->n_quantized);
		cJSON_AddNumberToObject(j, "linear_dense", (double)mr[m]->n_dense);
		cJSON_AddNumberToObject(j, "weight_bytes", (double)mr[m]->weight_bytes);
		cJSON_AddNumberToObject(j, "load_s", mr[m]->load_s);
		cJSON_AddNumberToObject(j, "tokens_fed", (double)mr[m]->counters.tokens_fed);
		cJSON_AddNumberToObject(j, "prompt_tokens", (double)mr[m]->counters.prompt_tokens);
		cJSON_AddNumberToObject(j, "forward_calls", (double)mr[m]->counters.calls);
		cJSON_AddNumberToObject(j, "score_s", mr[m]->counters.seconds);
		cJSON_AddNumberToObject(j, "tokens_per_s", mr[m]->counters.seconds > 0
								   ? (double)mr[m]->counters.tokens_fed /
									     mr[m]->counters.seconds
								   : 0);
	}
	cJSON_AddStringToObject(ev, "device", desc);
	cJSON_AddNumberToObject(ev, "tp", (double)o.tp);
	cJSON_AddNumberToObject(ev, "acc_micro", (double)overall->t.k_new / (double)overall->t.n);
	cJSON_AddNumberToObject(ev, "acc_macro", overall->macro_new);
	if (have_ref) {
		cJSON_AddNumberToObject(ev, "ref_acc_micro", (double)overall->t.k_ref / (double)overall->t.n);
		cJSON_AddNumberToObject(ev, "ref_acc_macro", overall->macro_ref);
		cJSON_AddNumberToObject(ev, "margin_points", o.margin);
		cJSON_AddNumberToObject(ev, "subject_margin_points", o.subject_margin);
		cJSON_AddNumberToObject(ev, "min_subject_n", (double)o.min_subject_n);
		cJSON_AddStringToObject(ev, "interval", "Newcombe hybrid score (method 10), 95%");
		cJSON_AddStringToObject(ev, "verdict", any_inferior ? (strcmp(overall->verdict, "inferior") ? "inconclusive" : "inferior") : "non-inferior");
	}
	if (ctq_run_commit(&run, &err))
		goto fail;
	printf("results in %s\n", run.final_dir);
	rc = any_inferior ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
	goto done;
fail:
	if (pg.drawn)
		fputc('\n', stderr);
	ctq_print_error("eval", &err);
	rc = ctq_status_exit_code(err.status);
	ctq_csv_close(&csv, NULL);
	ctq_run_abort(&run);
done:
	free(cases);
	free(groups);
	free(subj);
	ctq_strbuf_free(&table);
	model_run_free(&cand);
	model_run_free(&base);
	ctq_eval_set_free(&shared);
	ctq_eval_data_free(&data);
	for (long k = 0; k < o.tp; k++)
		ctq_backend_close(&b[k]);
	ctq_tp_group_free(group);
	return rc;
}
