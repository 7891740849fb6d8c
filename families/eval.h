/* The accuracy family: eval_questions.csv, one row per question of ctq
 * eval (harness/cmd_eval.c writes it, with eval_groups.csv and
 * eval_paired.csv beside it). Compared by (benchmark, subject, id): exact
 * McNemar on the discordant pairs and Newcombe's interval; a significant
 * drop of at least the policy's minimum is a regression. Trend: accuracy
 * and reference accuracy. Report: per subject, candidate against the
 * reference with paired deltas. */
#ifndef CTQ_FAMILIES_EVAL_H
#define CTQ_FAMILIES_EVAL_H

#include <stddef.h>

#include "families/family.h"

/* eval_questions.csv's columns, in order. */
#define CTQ_EVAL_QUESTIONS_CSV_COLUMNS                                                           \
	"benchmark", "protocol", "split", "subject", "category", "id", "line", "shots",          \
	"prompt_tokens", "context_tokens", "truncated", "prompt_sha256", "answer", "chosen",     \
	"correct", "logprob_A", "logprob_B", "logprob_C", "logprob_D", "ref_chosen",             \
	"ref_correct", "ref_logprob_A", "ref_logprob_B", "ref_logprob_C", "ref_logprob_D",       \
	"kl_ref_new_nats"
/* eval_groups.csv's columns, in order. */
#define CTQ_EVAL_GROUPS_CSV_COLUMNS                                                              \
	"level", "name", "model", "n_subjects", "n", "correct", "acc_micro", "se_micro",         \
	"acc_macro", "se_macro"
/* eval_paired.csv's columns, in order. */
#define CTQ_EVAL_PAIRED_CSV_COLUMNS                                                              \
	"level", "name", "n", "ref_correct", "new_correct", "both_right", "right_to_wrong",      \
	"wrong_to_right", "both_wrong", "acc_ref", "acc_new", "diff", "ci_low", "ci_high",       \
	"ci_method", "wald_low", "wald_high", "mcnemar_p", "agreement", "kl_mean_nats",          \
	"margin", "verdict"

enum ctq_status ctq_fam_eval_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_eval_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				   const char *path, const char *file, struct ctq_error *err);

/* Appends the section of result file f to r (errors: io-error,
 * parse-error, out-of-memory, in r->err). */
enum ctq_status ctq_fam_eval_report(struct ctq_rep *r, const struct ctq_result_file *f);

#endif
