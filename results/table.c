/* ctq CSV reader (see table.h). */
#include "results/table.h"
#include "core/arena.h"
#include "core/fileio.h"

#include <csv.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct parse_state {
	struct ctq_table *t;
	char **row;        /* (cap_row) fields of the row being read */
	size_t n_row, cap_row;
	size_t cap_cells;  /* cells allocated */
	size_t line;       /* 1-based record number, for messages */
	const char *name;
	struct ctq_error *err;
	enum ctq_status st;
};

/* Bytes handed to libcsv at a time, and its smallest growth step. */
#define PARSE_CHUNK ((size_t)64 << 10)

static void field_too_long(struct parse_state *p)
{
	char path[CTQ_PATH_MAX];
	snprintf(path, sizeof path, "%s:%zu", p->name, p->line + 1);
	p->st = ctq_error_set(p->err, CTQ_ERR_PARSE, path,
			      "a field is longer than %zu bytes (CTQ_TABLE_MAX_FIELD_BYTES); "
			      "an unterminated quote?", CTQ_TABLE_MAX_FIELD_BYTES);
}

static void on_field(void *data, size_t len, void *ctx)
{
	struct parse_state *p = ctx;
	if (p->st)
		return;
	if (len > CTQ_TABLE_MAX_FIELD_BYTES) {
		field_too_long(p);
		return;
	}
	if (p->n_row == p->cap_row) {
		size_t cap = p->cap_row ? 2 * p->cap_row : 16;
		char **r = ctq_realloc(p->row, cap * sizeof *r);
		if (!r) {
			p->st = ctq_error_set(p->err, CTQ_ERR_NOMEM, p->name, "out of memory");
			return;
		}
		p->row = r;
		p->cap_row = cap;
	}
	char *s = ctq_malloc(len + 1);
	if (!s) {
		p->st = ctq_error_set(p->err, CTQ_ERR_NOMEM, p->name, "out of memory");
		return;
	}
	if (len)
		memcpy(s, data, len);
	s[len] = '\0';
	p->row[p->n_row++] = s;
}

static void drop_row(struct parse_state *p)
{
	for (size_t i = 0; i < p->n_row; i++)
		ctq_free(p->row[i]);
	p->n_row = 0;
}

static void on_row(int c, void *ctx)
{
	(void)c;
	struct parse_state *p = ctx;
	struct ctq_table *t = p->t;
	p->line++;
	if (p->st) {
		drop_row(p);
		return;
	}
	if (!t->header) {
		t->header = p->row;
		t->n_cols = p->n_row;
		p->row = NULL;
		p->n_row = p->cap_row = 0;
		return;
	}
	if (p->n_row != t->n_cols) {
		char path[CTQ_PATH_MAX];
		snprintf(path, sizeof path, "%s:%zu", p->name, p->line);
		p->st = ctq_error_set(p->err, CTQ_ERR_PARSE, path,
				      "row has %zu field(s); the header has %zu", p->n_row,
				      t->n_cols);
		drop_row(p);
		return;
	}
	if ((t->n_rows + 1) * t->n_cols > p->cap_cells) {
		size_t cap = p->cap_cells ? 2 * p->cap_cells : 64 * t->n_cols;
		char **cells = ctq_realloc(t->cells, cap * sizeof *cells);
		if (!cells) {
			p->st = ctq_error_set(p->err, CTQ_ERR_NOMEM, p->name, "out of memory");
			drop_row(p);
			return;
		}
		t->cells = cells;
		p->cap_cells = cap;
	}
	memcpy(t->cells + t->n_rows * t->n_cols, p->row, t->n_cols * sizeof *p->row);
	t->n_rows++;
	p->n_row = 0;
}

enum ctq_status ctq_table_parse(struct ctq_table *t, const char *text, size_t len,
				const char *name, struct ctq_error *err)
{
	memset(t, 0, sizeof *t);
	struct parse_state p = {.t = t, .name = name, .err = err};
	struct csv_parser cp;
	if (csv_init(&cp, CSV_STRICT | CSV_STRICT_FINI) != 0)
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	/* Fed in chunks: before each, libcsv's growth step (it grows its field
	 * buffer by a fixed blk_size, 128 bytes by default, which copies a long
	 * field quadratically) is set to the buffer's size so far, so the buffer
	 * doubles; and the field being read is bounded after each. */
	for (size_t off = 0; off < len && !p.st;) {
		size_t n = len - off < PARSE_CHUNK ? len - off : PARSE_CHUNK;
		size_t have = csv_get_buffer_size(&cp);
		csv_set_blk_size(&cp, have > PARSE_CHUNK ? have : PARSE_CHUNK);
		if (csv_parse(&cp, text + off, n, on_field, on_row, &p) != n && !p.st) {
			char path[CTQ_PATH_MAX];
			snprintf(path, sizeof path, "%s:%zu", name, p.line + 1);
			p.st = ctq_error_set(err, csv_error(&cp) == CSV_ENOMEM ? CTQ_ERR_NOMEM : CTQ_ERR_PARSE,
					     path, "malformed CSV: %s", csv_strerror(csv_error(&cp)));
		}
		off += n;
		if (!p.st && cp.entry_pos > CTQ_TABLE_MAX_FIELD_BYTES)
			field_too_long(&p);
	}
	if (!p.st && csv_fini(&cp, on_field, on_row, &p) != 0 && !p.st) {
		char path[CTQ_PATH_MAX];
		snprintf(path, sizeof path, "%s:%zu", name, p.line + 1);
		p.st = ctq_error_set(err, CTQ_ERR_PARSE, path, "malformed CSV: unterminated quoted field");
	}
	csv_free(&cp);
	drop_row(&p);
	ctq_free(p.row);
	if (!p.st && !t->header)
		p.st = ctq_error_set(err, CTQ_ERR_PARSE, name, "empty file: no header row");
	if (p.st)
		ctq_table_free(t);
	return p.st;
}

/* ctq_table_load's ctq_file_parse_fn; ctx: the table. */
static enum ctq_status parse_loaded(void *t, const char *text, size_t len, const char *path,
				    struct ctq_error *err)
{
	return ctq_table_parse(t, text, len, path, err);
}

enum ctq_status ctq_table_load(struct ctq_table *t, const char *path, struct ctq_error *err)
{
	memset(t, 0, sizeof *t);
	return ctq_file_parse(path, CTQ_TABLE_MAX_BYTES, parse_loaded, t, err);
}

int ctq_table_col(const struct ctq_table *t, const char *name)
{
	for (size_t i = 0; i < t->n_cols; i++)
		if (!strcmp(t->header[i], name))
			return (int)i;
	return -1;
}

const char *ctq_table_get(const struct ctq_table *t, size_t row, int col)
{
	if (col < 0 || (size_t)col >= t->n_cols || row >= t->n_rows)
		return "";
	return t->cells[row * t->n_cols + (size_t)col];
}

double ctq_table_num(const struct ctq_table *t, size_t row, int col)
{
	const char *s = ctq_table_get(t, row, col);
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end)
		return NAN;
	return v;
}

void ctq_table_free(struct ctq_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_cols; i++)
		ctq_free(t->header ? t->header[i] : NULL);
	for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
		ctq_free(t->cells[i]);
	ctq_free(t->header);
	ctq_free(t->cells);
	memset(t, 0, sizeof *t);
}
