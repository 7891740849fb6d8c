/* ctq tidy CSV output (see csv.h). */
#include "results/csv_out.h"

#include <csv.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

enum ctq_status ctq_csv_open(struct ctq_csv *w, const char *path,
			     const char *const *header, size_t n_cols,
			     struct ctq_error *err)
{
	memset(w, 0, sizeof *w);
	w->f = fopen(path, "w");
	if (!w->f)
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot create: %s",
				     strerror(errno));
	w->path = path;
	w->n_cols = n_cols;
	for (size_t i = 0; i < n_cols; i++)
		ctq_csv_field(w, header[i]);
	ctq_csv_end_row(w);
	return CTQ_OK;
}

void ctq_csv_field(struct ctq_csv *w, const char *value)
{
	if (w->col++ && fputc(',', w->f) == EOF)
		w->io_error = 1;
	if (!value)
		value = "";
	if (csv_fwrite(w->f, value, strlen(value)) != 0)
		w->io_error = 1;
}

void ctq_csv_fieldf(struct ctq_csv *w, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	ctq_csv_field(w, buf);
}

void ctq_csv_end_row(struct ctq_csv *w)
{
	if (w->col != w->n_cols)
		w->io_error = 2;
	/* RFC 4180 line ending. */
	if (fputs("\r\n", w->f) == EOF)
		w->io_error = 1;
	w->col = 0;
}

enum ctq_status ctq_csv_close(struct ctq_csv *w, struct ctq_error *err)
{
	if (!w->f)
		return CTQ_OK;
	int bad = fclose(w->f) != 0;
	w->f = NULL;
	if (w->io_error == 2)
		return ctq_error_set(err, CTQ_ERR_IO, w->path,
				     "a row had a field count different from the header");
	if (bad || w->io_error)
		return ctq_error_set(err, CTQ_ERR_IO, w->path, "write failed");
	return CTQ_OK;
}
