/* ctq eval kld, the engine: the token-level distance between a candidate
 * checkpoint and a reference on real text, as llama.cpp's perplexity
 * --kl-divergence measures it. Both models run over the same tokens in
 * windows of ctx tokens (every stride tokens); the second half of each
 * window is scored, so every scored token has at least ctx/2 tokens of
 * context: for each, KL(ref || new) over the full vocabulary, whether the
 * top-1 tokens agree, and the log-probability each model gives the actual
 * next token (stats/kld.h). Aggregates per text source and overall (mean KL
 * with a 95% bootstrap interval over windows, median, 90/99/99.9th
 * percentiles, max; top-1 agreement with its interval; each model's
 * perplexity and their ratio) and a verdict against a policy (policies/kld.json):
 *   non-inferior  the whole interval of every criterion is on the good side
 *   inferior      the whole interval of some criterion is on the bad side
 *   inconclusive  otherwise, or fewer than CTQ_KLD_MIN_WINDOWS windows
 * Text: UTF-8 files, or the questions and answers of a benchmark folder in
 * the official layout (eval/datasets.h), interleaved across subjects.
 *
 * Relative verdict (--reference-run DIR): DIR is the run of a reference
 * recipe of the same model (e.g. SmoothQuant+GPTQ W8A8) against the same
 * reference model on the same windows; the candidate is judged against it,
 * paired by window, by the policy's "relative" entries: the ratio of mean
 * KLs (at most kl_factor_max), the top-1 agreement lost (at most
 * top1_drop_max) and the perplexity excess, in log-perplexity per token
 * (the candidate's at most ppl_excess_factor_max times the reference
 * recipe's: above it by at most (factor - 1) x its size, so that a
 * negative excess does not demand more than equality), each with a paired percentile bootstrap over windows; the
 * same three-way rule as above. The absolute mean KL bound (kl_mean_max)
 * stays the outer limit: a candidate whose whole KL interval lies beyond it
 * is inferior whatever the reference run did.
 *
 * What it is not: the option parsing, progress bar or printing
 * (harness/cmd_eval_kld.c), or the CSV columns (families/eval_kld.h).
 */
#ifndef CTQ_EVAL_KLD_H
#define CTQ_EVAL_KLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/policy.h"
#include "core/strbuf.h"
#include "families/eval_kld.h"
#include "model/model.h"
#include "results/run.h"
#include "text/tokenizer.h"

#define CTQ_KLD_DEFAULT_CTX 512   /* llama.cpp perplexity's default n_ctx */
#define CTQ_KLD_MIN_WINDOWS 2     /* one window shows no spread between windows */
#define CTQ_KLD_BOOTSTRAP 2000    /* resamples of the windows */
#define CTQ_KLD_BOOTSTRAP_SEED 1
#define CTQ_KLD_MAX_SOURCES 64

enum ctq_kld_criterion { CTQ_KLD_KL_MEAN_MAX, CTQ_KLD_TOP1_MIN, CTQ_KLD_PPL_RATIO_MAX, CTQ_KLD_N_CRIT };
/* The relative criteria (the policy's "relative" object). */
enum ctq_kld_rel_criterion {
	CTQ_KLD_REL_KL_FACTOR_MAX,
	CTQ_KLD_REL_TOP1_DROP_MAX,
	CTQ_KLD_REL_PPL_EXCESS_FACTOR_MAX,
	CTQ_KLD_N_REL
};

struct ctq_kld_policy {
	double v[CTQ_KLD_N_CRIT];
	char reason[CTQ_KLD_N_CRIT][1024];
	double rel[CTQ_KLD_N_REL];
	char rel_reason[CTQ_KLD_N_REL][1024];
	char source[CTQ_POLICY_SOURCE_MAX];
};

/* "kl_mean_max", "top1_min", "ppl_ratio_max". */
const char *ctq_kld_criterion_name(enum ctq_kld_criterion c);
/* "kl_factor_max", "top1_drop_max", "ppl_excess_factor_max". */
const char *ctq_kld_rel_criterion_name(enum ctq_kld_rel_criterion c);
/* The built-in policy: policies/kld.json, which the build embeds
 * (core/embedded.h); source "policies/kld.json (built in)". */
#define CTQ_KLD_POLICY_FILE "policies/kld.json"
void ctq_kld_policy_default(struct ctq_kld_policy *p);
/* Reads {"about": ..., "kl_mean_max": {"value": x, "reason": "..."}, ...,
 * "relative": {"about": ..., "kl_factor_max": {...}, ...}} over the
 * defaults; every entry needs its reason. Errors: io-error,
 * parse-error, invalid-config (an unknown key, a value out of range, a
 * missing reason) at its JSON path. */
enum ctq_status ctq_kld_policy_load(struct ctq_kld_policy *p, const char *path,
				    struct ctq_error *err);

struct ctq_kld_options {
	/* borrowed; tokenizer may be NULL (each model's own) */
	const char *model, *ref, *backend, *tokenizer;
	const char *const *texts;   /* (n_texts) UTF-8 files */
	size_t n_texts;
	const char *const *data;    /* (n_data) benchmark folders: DIR named mmlu, ceval or
				     * cmmlu, or BENCH=DIR */
	size_t n_data;
	const char *split;          /* NULL: val (mmlu, ceval), test (cmmlu) */
	long ctx, stride;           /* stride 0: ctx */
	long max_tokens;            /* tokens of each source used, from its start; 0: all */
	long tp;
	bool add_bos;               /* the first token of each window becomes BOS */
	const char *save_text;      /* NULL, or a folder (created) that receives the text
				     * of each --data source as BENCH-SPLIT.txt, the bytes
				     * tokenized, for other tools (llama.cpp perplexity
				     * --kl-divergence, tests/oracle/kld_hf.py) */
	const struct ctq_kld_policy *policy; /* NULL: built-in */
	const char *reference_run;  /* NULL, or a ctq eval kld run directory of a
				     * reference recipe: the relative verdict */
};

/* The relative verdict against a reference recipe's run. */
struct ctq_kld_relative {
	bool on;
	size_t n_windows, n_tokens;
	double kl_new, kl_ref;                  /* mean KL nats: this candidate, the reference run's */
	double kl_factor, kl_factor_lo, kl_factor_hi;
	double top1_new, top1_ref;
	double top1_diff, top1_diff_lo, top1_diff_hi; /* new - ref, fractions */
	double excess_new, excess_ref;          /* ppl ratio - 1 of each */
	double excess_factor;                   /* excess_new / excess_ref (NaN when excess_ref <= 0) */
	double excess_margin, excess_margin_lo, excess_margin_hi; /* log excess_new - the
								   * reference's - (factor - 1) x
								   * |the reference's|, nats/token */
	double ref_nll_rel_diff;                /* |NLL of the two reference models| relative:
						 * 0 when both runs scored one reference alike */
	bool outer_bound;                       /* the absolute kl_mean_max was exceeded */
	const char *verdict;
};

struct ctq_kld_source {
	char name[256];             /* the file path, or "mmlu/val" */
	char sha256[65];            /* of the text bytes tokenized */
	size_t n_bytes;
	int32_t *ids;               /* (n_ids) tokens used; malloc'ed by the tokenizer */
	size_t n_ids, n_ids_all;
	size_t first_window, n_windows;
};

struct ctq_kld_model {
	const char *dir;            /* borrowed */
	char config_sha[65], tok_path[1024], tok_sha[65];
	int64_t vocab, context;
	int weight_bits;            /* 0 unquantized, 8 W8A8, 2..7 ctq_simulated_weight_bits */
	int64_t n_quantized, n_dense;
	double load_s, score_s;
	struct ctq_model mdl; /* on the run's ranks */
};

/* Progress: after each window, done of total. */
typedef void (*ctq_kld_progress_fn)(void *ctx, size_t done, size_t total);

struct ctq_kld_run {
	struct ctq_kld_options o;
	struct ctq_kld_policy pol;
	struct ctq_tokenizer tok;
	struct ctq_kld_model cand, base;
	struct ctq_model ranks; /* the backend ranks both models run on (nothing loaded) */
	char device[256];
	struct ctq_kld_source *src;  /* (n_src) */
	size_t n_src;
	const char **src_names;      /* (n_src) into src */
	struct ctq_kld_window *win;  /* (n_win) source order */
	size_t n_win;
	double *tok_kl;              /* (n_tok) KL of every scored token, window order */
	size_t n_tok;
	uint64_t *hist;              /* (n_src, CTQ_KLD_HIST_BINS) */
	struct ctq_kld_agg *agg;     /* (n_src + 1) the last for all sources */
	struct ctq_kld_windows ref_run; /* --reference-run's windows, paired with win */
	struct ctq_kld_relative rel;
	bool pass;                   /* overall non-inferior (relative when rel.on) */
	struct ctq_strbuf table;     /* the summary (stdout and summary.md) */
};

/* Reads the models' configs and the tokenizer (the two must tokenize alike
 * and share a vocabulary), reads and tokenizes the sources, lays out the
 * windows, reads the reference run's windows and checks they are these
 * (o->reference_run), and only then opens the backend ranks (no GPU is
 * env-error): the inputs are checked first.
 * r is zeroed first and safe to free on error. Errors: usage (no text, a
 * source shorter than one window, with the numbers; ctx beyond a model's
 * context; models that differ in vocabulary or tokenizer; a reference run
 * whose windows are not these), io-error,
 * parse-error (text that is not UTF-8), the loaders', nomem. */
enum ctq_status ctq_kld_open(struct ctq_kld_run *r, const struct ctq_kld_options *o,
			     struct ctq_error *err);

/* Loads both models and scores every window. */
enum ctq_status ctq_kld_score(struct ctq_kld_run *r, ctq_kld_progress_fn progress, void *ctx,
			      struct ctq_error *err);

/* Aggregates, verdicts and r->table; nomem. */
enum ctq_status ctq_kld_summarize(struct ctq_kld_run *r, struct ctq_error *err);

/* eval_kld.csv, eval_kld_summary.csv, eval_kld_hist.csv, junit.xml,
 * summary.md and the manifest's "eval_kld" object into run (begun). */
enum ctq_status ctq_kld_write(struct ctq_kld_run *r, struct ctq_run *run, struct ctq_error *err);

void ctq_kld_free(struct ctq_kld_run *r);

#endif
