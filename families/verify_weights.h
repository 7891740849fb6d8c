/* The verify-weights family: verify.csv, one row per quantized module held
 * against its source and one per tensor missing, differing or extra (ctq
 * verify-weights, conform/verify_weights.h; harness/cmd_verify_weights.c
 * writes it through ctq_fam_verify_weights_csv_row). Compared by tensor:
 * pass -> fail is a regression. Trend: failed checks and the worst
 * module's rel-L2. Report: rel-L2 per scheme and the failing rows. */
#ifndef CTQ_FAMILIES_VERIFY_WEIGHTS_H
#define CTQ_FAMILIES_VERIFY_WEIGHTS_H

#include <stddef.h>

#include "families/family.h"

/* verify.csv's columns, in order. */
#define CTQ_VERIFY_WEIGHTS_CSV_COLUMNS                                                         \
	"tensor", "module", "scheme", "N", "K", "rel_l2", "max_abs_err", "nonfinite",           \
		"rel_l2_max", "verdict", "reason"

struct ctq_csv;
struct ctq_vw_row;
/* One checked module or tensor (conform/verify_weights.h) as a row. */
void ctq_fam_verify_weights_csv_row(struct ctq_csv *w, const struct ctq_vw_row *v);

enum ctq_status ctq_fam_verify_weights_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_verify_weights_trend(struct ctq_trend *t, size_t run,
					     const struct ctq_table *tb, const char *path,
					     const char *file, struct ctq_error *err);
/* Appends the section of result file f to r (errors in r->err). */
enum ctq_status ctq_fam_verify_weights_report(struct ctq_rep *r, const struct ctq_result_file *f);

#endif
