/* ctq plots: gnuplot scripts and their PNGs inside a run's plots/ folder.
 * Each plot is three files: NAME.dat (the data, whitespace-separated,
 * strings quoted), NAME.gp (the script that drew it, terminal included, so
 * `gnuplot NAME.gp` in plots/ redraws it) and NAME.png.
 *
 * gnuplot is found on PATH (CTQ_GNUPLOT overrides the program; "none"
 * turns plots off); the terminal is pngcairo when this gnuplot has it,
 * else png (libgd) — Debian's gnuplot-nox has both.
 *
 * What it is not: a plotting library; callers write gnuplot commands.
 */
#ifndef CTQ_RESULTS_PLOT_H
#define CTQ_RESULTS_PLOT_H

#include <stdbool.h>

#include "core/status.h"
#include "core/strbuf.h"

struct ctq_plotter {
	bool available;
	char program[256];
	char terminal[16]; /* "pngcairo" or "png" */
	char why[256];     /* when not available: why not */
};

/* Looks for gnuplot and its PNG terminal; never fails (available says). */
void ctq_plot_init(struct ctq_plotter *p);

/* Writes dir/NAME.dat and dir/NAME.gp (a header setting the terminal, size
 * width x height and output NAME.png, then body, which reads "NAME.dat")
 * and runs gnuplot in dir; its messages go to dir/gnuplot.log. Errors:
 * io-error (files, or gnuplot failed: see the log). */
enum ctq_status ctq_plot_render(const struct ctq_plotter *p, const char *dir, const char *name,
				int width, int height, const char *body, const char *data,
				struct ctq_error *err);

/* Appends the base64 encoding (RFC 4648, no line breaks) of the file. */
enum ctq_status ctq_base64_file(const char *path, struct ctq_strbuf *out, struct ctq_error *err);

/* Appends s to a gnuplot data file as one quoted string (quotes and
 * newlines dropped, never empty). */
void ctq_plot_quoted(struct ctq_strbuf *out, const char *s);

#endif
