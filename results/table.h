/* ctq CSV reader: a whole RFC 4180 file with a header row (the tidy tables
 * ctq writes, results/csv_out.h) read into memory through libcsv, with columns
 * looked up by name. Used by report and compare to read results back.
 *
 * What it is not: a streaming reader or a type system; every cell is a
 * string, converted by the caller.
 */
#ifndef CTQ_RESULTS_TABLE_H
#define CTQ_RESULTS_TABLE_H

#include <stddef.h>

#include "core/status.h"

#define CTQ_TABLE_MAX_BYTES ((size_t)512 << 20)
/* The longest field (cell) read: 8 MiB, far above any cell ctq writes (the
 * longest, bench serve's token list, is about 8 bytes a token). The field
 * buffer grows geometrically up to it. */
#define CTQ_TABLE_MAX_FIELD_BYTES ((size_t)8 << 20)

struct ctq_table {
	size_t n_cols, n_rows;
	char **header; /* (n_cols) owned */
	char **cells;  /* (n_rows, n_cols) row-major, owned */
};

/* Reads path. Errors: io-error (cannot read, not a regular file, over
 * CTQ_TABLE_MAX_BYTES), parse-error at path:record (bad quoting, a field
 * over CTQ_TABLE_MAX_FIELD_BYTES, a row whose field count differs from the
 * header's, no header), out-of-memory. t is empty on error. */
enum ctq_status ctq_table_load(struct ctq_table *t, const char *path, struct ctq_error *err);

/* Parses text (len bytes; borrowed) as if read from name. */
enum ctq_status ctq_table_parse(struct ctq_table *t, const char *text, size_t len,
				const char *name, struct ctq_error *err);

/* Index of the column named name, or -1. */
int ctq_table_col(const struct ctq_table *t, const char *name);

/* Cell (row, col); "" when col < 0. Borrowed from t. */
const char *ctq_table_get(const struct ctq_table *t, size_t row, int col);

/* The cell as a number: NaN when empty or not a number. */
double ctq_table_num(const struct ctq_table *t, size_t row, int col);

void ctq_table_free(struct ctq_table *t);

#endif
