/* ctq tidy CSV output (RFC 4180 quoting through libcsv): one header per
 * table declared once, one row per observation. */
#ifndef CTQ_RESULTS_CSV_OUT_H
#define CTQ_RESULTS_CSV_OUT_H

#include <stdio.h>

#include "core/status.h"

struct ctq_csv {
	FILE *f;
	const char *path;
	size_t n_cols, col;
	int io_error;
};

/* Opens path for writing and writes the header (n_cols names). */
enum ctq_status ctq_csv_open(struct ctq_csv *w, const char *path,
			     const char *const *header, size_t n_cols,
			     struct ctq_error *err);
void ctq_csv_field(struct ctq_csv *w, const char *value);
void ctq_csv_fieldf(struct ctq_csv *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Ends the row; a row with the wrong number of fields is a programming
 * error reported at close. */
void ctq_csv_end_row(struct ctq_csv *w);
enum ctq_status ctq_csv_close(struct ctq_csv *w, struct ctq_error *err);

#endif
