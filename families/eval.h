/* The accuracy family: eval_questions.csv, one row per question of ctq
 * eval (eval/run.c writes it, with eval_groups.csv and eval_paired.csv
 * beside it, through this family's row writers). Compared by (benchmark,
 * subject, id): exact McNemar on the discordant pairs and Newcombe's
 * interval; a significant drop of at least the policy's minimum is a
 * regression. Trend: accuracy
 * and reference accuracy. Report: per subject, candidate against the
 * reference with paired deltas. */
#ifndef CTQ_FAMILIES_EVAL_H
#define CTQ_FAMILIES_EVAL_H

#include <stdbool.h>
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

struct ctq_csv;
struct ctq_paired;

/* One question's eval_questions.csv row (eval/run.c scores it). chosen and
 * ref_chosen are letters; the reference's columns are empty without one
 * (ref_lp NULL). */
struct ctq_eval_question_row {
	const char *benchmark, *protocol, *split, *subject, *category, *id; /* borrowed */
	long line;
	int shots;
	long long prompt_tokens, context_tokens;
	bool truncated;
	const char *prompt_sha256;
	char answer, chosen;
	bool correct;
	const double *lp;     /* (4) the candidate's log-probabilities of A-D */
	const double *ref_lp; /* (4) the reference's, or NULL */
	char ref_chosen;
	bool ref_correct;
	double kl_ref_new; /* KL(ref || new) over the four letters */
};
void ctq_fam_eval_question_csv_row(struct ctq_csv *w, const struct ctq_eval_question_row *r);

/* One eval_groups.csv row: a group's (subject, category, benchmark) tally
 * for one model. */
struct ctq_eval_group_row {
	const char *level, *name, *model; /* borrowed */
	size_t n_subjects, n, correct;
	double acc_micro, se_micro, acc_macro, se_macro;
};
void ctq_fam_eval_group_csv_row(struct ctq_csv *w, const struct ctq_eval_group_row *r);

/* One eval_paired.csv row: a group's paired statistics (stats/accuracy.h;
 * the interval is Newcombe's hybrid score) and verdict. */
struct ctq_eval_paired_row {
	const char *level, *name;        /* borrowed */
	const struct ctq_paired *paired; /* borrowed */
	size_t ref_correct, new_correct;
	double agreement, kl_mean_nats, margin;
	const char *verdict;
};
void ctq_fam_eval_paired_csv_row(struct ctq_csv *w, const struct ctq_eval_paired_row *r);

enum ctq_status ctq_fam_eval_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_eval_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				   const char *path, const char *file, struct ctq_error *err);

/* Appends the section of result file f to r (errors: io-error,
 * parse-error, out-of-memory, in r->err). */
enum ctq_status ctq_fam_eval_report(struct ctq_rep *r, const struct ctq_result_file *f);

#endif
