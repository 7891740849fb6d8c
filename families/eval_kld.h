/* The token-distribution family: eval_kld.csv, one row per window of text
 * of ctq eval kld (eval/kld.c), with eval_kld_summary.csv (one row per text
 * source and one for all of them) and eval_kld_hist.csv (the per-token KL
 * histogram on a log scale) beside it. This file declares their columns
 * (once), holds their writers and the reader of the windows, the
 * comparison of two runs (paired by window: a growth of the mean KL beyond
 * kld.mean_factor, or a significant fall in top-1 agreement of at least
 * kld.top1_min_drop, is a regression), the trend series and the report
 * section (table, KL CDF per model pair, and the sensitivity line over the
 * runs of several weight widths).
 *
 * What it is not: the engine that runs the models (eval/kld.c) or the
 * statistics (stats/kld.h).
 */
#ifndef CTQ_FAMILIES_EVAL_KLD_H
#define CTQ_FAMILIES_EVAL_KLD_H

#include <stddef.h>
#include <stdint.h>

#include "families/family.h"

/* eval_kld.csv's columns, in order. Sums are over the window's scored
 * tokens (its second half), so windows add up exactly. */
#define CTQ_EVAL_KLD_CSV_COLUMNS                                                                 \
	"source", "window", "start_token", "tokens", "kl_sum_nats", "kl_mean_nats",              \
	"kl_median_nats", "kl_max_nats", "top1_agree", "top1_agreement", "nll_ref_sum_nats",     \
	"nll_new_sum_nats", "ppl_ref", "ppl_new"
/* eval_kld_summary.csv's columns, in order ("(all)" is the last row). */
#define CTQ_EVAL_KLD_SUMMARY_CSV_COLUMNS                                                         \
	"source", "tokens", "windows", "kl_mean_nats", "kl_ci_low", "kl_ci_high",                \
	"kl_median_nats", "kl_p90_nats", "kl_p99_nats", "kl_p999_nats", "kl_max_nats", "top1",  \
	"top1_ci_low", "top1_ci_high", "ppl_ref", "ppl_new", "ppl_ratio", "ppl_ratio_ci_low",   \
	"ppl_ratio_ci_high", "weight_bits", "verdict"
/* eval_kld_hist.csv's columns, in order: tokens whose KL lies in
 * [10^log10_low, 10^log10_high); the first bin of each source starts at
 * -inf (KL 0 included). */
#define CTQ_EVAL_KLD_HIST_CSV_COLUMNS "source", "log10_kl_low", "log10_kl_high", "tokens"

/* Histogram bins: below 1e-9 (with 0), then 0.1 decades up to 1e2, then
 * 1e2 and above. */
#define CTQ_KLD_HIST_LOG10_MIN (-9.0)
#define CTQ_KLD_HIST_STEP 0.1
#define CTQ_KLD_HIST_BINS 112
/* The bin of a KL value (nats, >= 0). */
int ctq_kld_hist_bin(double kl);

struct ctq_kld_window {
	size_t source;          /* index of its source */
	size_t index;           /* window number within the source, from 0 */
	int64_t start;          /* its first token in the source */
	int64_t n;              /* scored tokens */
	double kl_sum, kl_median, kl_max;
	size_t agree;           /* tokens whose top-1 tokens agree */
	double nll_ref, nll_new; /* sums of -log p(actual next token) */
};

struct ctq_kld_agg {
	size_t n_tokens, n_windows;
	double kl_mean, kl_lo, kl_hi; /* nats; 95% bootstrap over windows */
	double kl_median, kl_p90, kl_p99, kl_p999, kl_max;
	double top1, top1_lo, top1_hi;
	double ppl_ref, ppl_new, ppl_ratio, ppl_ratio_lo, ppl_ratio_hi;
	const char *verdict;    /* non-inferior, inconclusive, inferior */
};

/* Writes path (eval_kld.csv): the windows w (n), each named by
 * source_names[w->source]. Errors as ctq_csv_open / close. */
enum ctq_status ctq_fam_eval_kld_write_windows(const char *path, const struct ctq_kld_window *w,
					       size_t n, const char *const *source_names,
					       struct ctq_error *err);
/* Writes path (eval_kld_summary.csv): the aggregates a (n_sources + 1, the
 * last one for all sources, named "(all)"); weight_bits the candidate's
 * (0: not known, written empty). */
enum ctq_status ctq_fam_eval_kld_write_summary(const char *path, const struct ctq_kld_agg *a,
					       size_t n_sources, const char *const *source_names,
					       int weight_bits, struct ctq_error *err);
/* Writes path (eval_kld_hist.csv): hist (n_sources, CTQ_KLD_HIST_BINS)
 * counts, bins with no token left out. */
enum ctq_status ctq_fam_eval_kld_write_hist(const char *path, const uint64_t *hist,
					    size_t n_sources, const char *const *source_names,
					    struct ctq_error *err);

/* The windows of an eval_kld.csv read back: w (n) owned, source names in
 * names (n_sources) owned; free with ctq_fam_eval_kld_windows_free.
 * Errors: io-error, parse-error (a missing column, a cell that is not a
 * number, a negative count), out-of-memory. */
struct ctq_kld_windows {
	struct ctq_kld_window *w;
	size_t n;
	char **names;
	size_t n_sources;
};
enum ctq_status ctq_fam_eval_kld_read_windows(struct ctq_kld_windows *out, const char *path,
					      struct ctq_error *err);
void ctq_fam_eval_kld_windows_free(struct ctq_kld_windows *w);

enum ctq_status ctq_fam_eval_kld_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_eval_kld_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				       const char *path, const char *file, struct ctq_error *err);
/* Appends the section of result file f to r. */
enum ctq_status ctq_fam_eval_kld_report(struct ctq_rep *r, const struct ctq_result_file *f);
/* After every eval_kld file of the report: the sensitivity line (mean KL
 * and top-1 against the candidate's weight bits) when two or more files
 * name a width. */
enum ctq_status ctq_fam_eval_kld_report_end(struct ctq_rep *r);

#endif
