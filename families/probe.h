/* The kernel probe family: probe.csv, one row per probe of ctq probe
 * (conform/probe_session.h runs them; ctq_fam_probe_csv_row writes a row); kernel_path names the code that ran
 * (backend/paths.h: "sm80-mma", "gemv", ...; the backend's name where it
 * has one implementation). Compared by (layer, K, N, M, weights,
 * acts, backend): rel-L2 grown beyond the policy factor (above its floor),
 * NaN/Inf where there was none, or pass -> fail is a regression. Trend: the
 * worst kernel and quantization rel-L2 and the failed probes per backend.
 * Report: worst rel-L2, NaN/Inf, rel-L2 per layer. */
#ifndef CTQ_FAMILIES_PROBE_H
#define CTQ_FAMILIES_PROBE_H

#include <stddef.h>

#include "families/family.h"

/* probe.csv's columns, in order. */
#define CTQ_PROBE_CSV_COLUMNS                                                                    \
	"layer", "K", "N", "M", "weights", "acts", "backend", "kernel_path", "nan_count",        \
	"inf_count",                                                                             \
	"nonfinite_mismatch", "all_zero", "max_abs_err", "max_at_m", "max_at_n", "ref_at_max",   \
	"got_at_max", "kernel_rel_l2", "quant_rel_l2", "outcome", "reason"

struct ctq_csv;
struct ctq_probe_result;
/* One probe result (conform/probe.h) as probe.csv's row. */
void ctq_fam_probe_csv_row(struct ctq_csv *w, const struct ctq_probe_result *r);

enum ctq_status ctq_fam_probe_compare(struct ctq_cmp_pair *x, struct ctq_error *err);
enum ctq_status ctq_fam_probe_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
				    const char *path, const char *file, struct ctq_error *err);

/* Appends the section of result file f to r (errors: io-error,
 * parse-error, out-of-memory, in r->err). */
enum ctq_status ctq_fam_probe_report(struct ctq_rep *r, const struct ctq_result_file *f);

#endif
