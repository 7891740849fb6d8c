/* The conformance family: conform.csv, one row per check of ctq conform
 * (harness/cmd_conform.c writes it through ctq_fam_conform_csv_row). Compared by (case_id, semantics,
 * check): pass -> fail is a regression. Trend: failed checks and checks.
 * Report: pass/fail per suite folder and the failing checks. */
#ifndef CTQ_FAMILIES_CONFORM_H
#define CTQ_FAMILIES_CONFORM_H

#include <stddef.h>

#include "families/family.h"

/* conform.csv's columns, in order. */
#define CTQ_CONFORM_CSV_COLUMNS                                                                  \
	"case_id", "file", "semantics", "check", "expected", "actual", "outcome", "detail"

struct ctq_csv;
struct ctq_check;
/* One check (conform/suite.h) as conform.csv's row. */
void ctq_fam_conform_csv_row(struct ctq_csv *w, const struct ctq_check *k);

enum ctq_status ctq_fam_conform_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_conform_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				      const char *path, const char *file, struct ctq_error *err);

/* Appends the section of result file f to r (errors: io-error,
 * parse-error, out-of-memory, in r->err). */
enum ctq_status ctq_fam_conform_report(struct ctq_rep *r, const struct ctq_result_file *f);

#endif
