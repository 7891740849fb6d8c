/* ctq eval, the engine behind the command: one evaluation of a checkpoint
 * (and with a reference model, the paired comparison) from the data set to
 * the run directory's files. Opens the backend ranks, the tokenizers and
 * the data, prepares the questions (eval/eval.h ctq_eval_prepare, shared
 * when both models tokenize alike), scores each model, tallies subjects
 * and groups (categories, the benchmark's extra set, overall) with the
 * paired statistics and the non-inferiority verdicts (stats/accuracy.h),
 * renders the summary table, and writes eval_questions.csv,
 * eval_groups.csv, eval_paired.csv, junit.xml, summary.md and the
 * manifest's "eval" object. Not the option parsing, the progress bar or
 * the printing (harness/cmd_eval.c). */
#ifndef CTQ_EVAL_RUN_H
#define CTQ_EVAL_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "core/strbuf.h"
#include "eval/datasets.h"
#include "eval/eval.h"
#include "eval/prompts.h"
#include "eval/remote.h"
#include "results/run.h"
#include "stats/accuracy.h"
#include "text/tokenizer.h"

/* Without max_position_embeddings in config.json: the context of the
 * models the protocols were written for (Hendrycks' crop.py, CMMLU's
 * --max_length default). */
#define CTQ_EVAL_DEFAULT_CONTEXT 2048
#define CTQ_EVAL_MAX_SUBJECTS 128

struct ctq_eval_run_options {
	enum ctq_bench bench;
	enum ctq_protocol protocol;
	enum ctq_act_numerics numerics;
	/* borrowed; ref and tokenizer may be NULL */
	const char *model, *ref, *data_dir, *split, *backend, *tokenizer;
	/* A model behind an OpenAI-compatible server instead of a folder
	 * (eval/remote.h): url in place of model, ref_url in place of ref
	 * (borrowed, NULL when in process); the served names (NULL: the first
	 * of GET URL/models); tokenizer is then required. */
	const char *url, *ref_url, *served_name, *ref_served_name;
	long concurrency;         /* requests in flight to a server */
	double request_timeout_s; /* each request to a server */
	long shots, limit, max_context, max_tokens, slots, min_subject_n, tp;
	double margin, subject_margin; /* points */
	bool add_bos;
	const char *const *subjects; /* (n_subjects) NULL: every subject */
	size_t n_subjects;
};

/* One model of the evaluation. */
struct ctq_eval_model {
	const char *dir;          /* borrowed; NULL for a server */
	const char *url;          /* borrowed; the server's base URL, NULL in process */
	char served[256];         /* the server's model name */
	char tok_path[1024];
	char tok_sha[65], config_sha[65];
	struct ctq_tokenizer tok;
	struct ctq_eval_set own;  /* when its tokenizer differs from the other model's */
	const struct ctq_eval_set *set;
	double (*lp)[4];          /* (n items) */
	struct ctq_eval_counters counters;
	struct ctq_eval_remote_info remote; /* a server's: what its first request learned */
	int64_t context;          /* max_position_embeddings, 0 when absent */
	int64_t n_quantized, n_dense;
	uint64_t weight_bytes;
	double load_s;
};

struct ctq_eval_tally {
	size_t n, k_new, k_ref;
	size_t a, b, c, d, agree; /* paired table (see stats/accuracy.h), top-1 agreement */
	double kl;                /* sum of KL(ref || new) */
};

/* A reported group: a subject, a category, a flagged set, or everything. */
struct ctq_eval_group {
	const char *level;   /* "subject", "category", "overall" */
	const char *name;
	struct ctq_eval_tally t;
	size_t n_subjects;
	double macro_new, macro_new_se, macro_ref, macro_ref_se;
	struct ctq_paired paired;
	double margin;       /* points */
	bool gated;
	bool inferior;       /* the gate fails: non-inferiority not shown */
	const char *verdict; /* non-inferior, inconclusive, inferior */
};

/* Progress of the scoring: begin once a model is loaded (label
 * "reference", "candidate" or "eval"), then step after each forward call. */
struct ctq_eval_run_progress {
	void (*begin)(void *ctx, const char *label);
	ctq_eval_progress_fn step;
	void *ctx;
};

struct ctq_eval_run {
	struct ctq_eval_run_options o;
	bool have_ref;
	struct ctq_eval_data data;
	struct ctq_eval_model cand, base;
	struct ctq_eval_set shared;
	struct ctq_model mdl; /* the backend ranks; each local model in turn while it scores */
	struct ctq_eval_options eo;
	double prep_s;
	char device[256];
	const char *protocol_id;
	bool macro_head;               /* the headline average is the macro one */
	struct ctq_eval_tally *subj;   /* (data.n) */
	struct ctq_eval_group *groups; /* (n_groups) subjects, categories, extra set, overall last */
	size_t n_groups;
	bool any_inferior;
	struct ctq_strbuf table;       /* the summary (stdout and summary.md) */
};

/* Loads the data, the tokenizers and configs (the inputs first), opens the
 * backend ranks (before the prompts are tokenized: no GPU is env-error
 * before the long part), and prepares the questions. r is zeroed first and safe to free on error. Errors: usage
 * (too many subjects, a split without answers, no questions), the
 * loaders', the backend's, nomem. */
enum ctq_status ctq_eval_run_open(struct ctq_eval_run *r, const struct ctq_eval_run_options *o,
				  struct ctq_error *err);

/* Scores the reference (when given) then the candidate. */
enum ctq_status ctq_eval_run_score(struct ctq_eval_run *r, const struct ctq_eval_run_progress *p,
				   struct ctq_error *err);

/* Tallies subjects and groups, gives the verdicts and renders r->table;
 * nomem. */
enum ctq_status ctq_eval_run_summarize(struct ctq_eval_run *r, struct ctq_error *err);

/* Writes the CSVs, junit.xml (with a reference), summary.md and the
 * manifest's "eval" object into run (begun, not committed). */
enum ctq_status ctq_eval_run_write(struct ctq_eval_run *r, struct ctq_run *run, struct ctq_error *err);

void ctq_eval_run_free(struct ctq_eval_run *r);

/* How the protocol fits a prompt that is too long, in words. */
const char *ctq_eval_overflow_name(enum ctq_overflow r);

#endif
