/* ctq bench gemm's measurement loop: seeded host inputs for a shape, and
 * per point (shape, M) the device load, the bit-exact check against the CPU
 * reference, the timing of every implementation (and of each forced kernel
 * path, and of a kernel plug-in), kept as the bench_gemm family's rows with
 * their samples. What the numbers mean and where they are written:
 * bench/gemm.h. What it is not: the command line, the shapes' sources and
 * the printing (harness/cmd_bench_gemm.c), the timing itself
 * (kernels/gemm_timing.h). It never prints: the progress and failure lines
 * go to the session's say callback. */
#ifndef CTQ_BENCH_GEMM_SESSION_H
#define CTQ_BENCH_GEMM_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "backend/paths.h"
#include "backend/plugin.h"
#include "bench/gemm.h"
#include "conform/probe_wna16.h"
#include "core/status.h"

/* Graph launches are lengthened to at least this (kernels/gemm_timing.h). */
#define CTQ_GEMM_MIN_GRAPH_US 1000.0

struct ctq_gemm_shape {
	char name[64];
	int64_t K, N;
};

/* Seeded inputs of one shape, x for the largest M (smaller M use its first
 * rows). */
struct ctq_gemm_host {
	uint16_t *x; /* (M_max, K) bf16 */
	int8_t *w;   /* (N, K) */
	float *s_w;  /* (N) */
	float *bias; /* (N) */
};
enum ctq_status ctq_gemm_host_make(struct ctq_gemm_host *h, int64_t M, int64_t N, int64_t K, uint64_t seed,
				   struct ctq_error *err);
void ctq_gemm_host_free(struct ctq_gemm_host *h);

struct ctq_gemm_session_opts {
	long warmup, samples, check_rows;
	int paths[CTQ_GEMM_PATH_COUNT]; /* forced kernel paths, in the order given */
	int n_paths;
	/* a weight-only plug-in's layouts timed (--wna16, or the defaults its
	 * capability bits declare: ctq_wna16_cfg_defaults) */
	struct ctq_wna16_cfg wna16[CTQ_WNA16_MAX_LAYOUTS];
	int n_wna16;
};

/* One weight-only layout's weights for the current shape: the point's
 * int8 weights dequantized (w * s_w) and quantized again by ctq's
 * producer (checkpoint/quantize_wna16.h) into the layout. */
struct ctq_gemm_wna16_host {
	int32_t *packed; /* (N, words) */
	float *scale;    /* (N, groups) */
	int32_t *zero;   /* (zrows, groups) or NULL */
	int64_t words, groups, zrows;
	bool fits;       /* the layout's group divides K */
};

/* A line of progress (error false) or of a failure (true), without its
 * newline. */
typedef void (*ctq_gemm_say_fn)(void *ctx, bool error, const char *line);

/* The caller opens b (ctq_gemm_bench_open), fills dev, peaks, o, say and,
 * for --impl, lib; the session fills the rest. Free with
 * ctq_gemm_session_free. */
struct ctq_gemm_session {
	struct ctq_gemm_session_opts o;
	ctq_gemm_say_fn say;
	void *say_ctx;
	struct ctq_gemm_bench *b;
	struct ctq_gemm_device dev;
	struct ctq_gemm_peaks peaks;
	struct ctq_gemm_row *rows; /* (n_rows) */
	double *samples;           /* (n_rows, o.samples) per-call times of each row */
	size_t n_rows, cap_rows;
	size_t failures, i8_failures, points, n_points;
	char first_failure[400];
	struct ctq_kernel_lib lib;  /* --impl; lib.t NULL without one */
	struct ctq_gemm_row *prows; /* (n_prows) the plug-in's rows */
	size_t n_prows, cap_prows, plugin_failures;
	char plugin_first_failure[400];
	/* the weight-only layouts' weights, for shape wh_shape (o.wna16 order) */
	struct ctq_gemm_wna16_host wh[8];
	const struct ctq_gemm_shape *wh_shape;
};

/* One point: load, check against the reference, time each implementation
 * (then each forced path and the plug-in), keep the rows. A ctq output that
 * differs from the reference is counted in failures, its row untimed. */
enum ctq_status ctq_gemm_session_point(struct ctq_gemm_session *S, const struct ctq_gemm_shape *sh,
				       const struct ctq_gemm_host *h, int64_t M, struct ctq_error *err);

/* bench_gemm_plugin.csv (bench_gemm.csv's columns) in dir and the
 * manifest's bench_gemm.plugin member. */
enum ctq_status ctq_gemm_session_plugin_write(const struct ctq_gemm_session *S, const char *dir,
					      cJSON *manifest, struct ctq_error *err);

/* Closes b and the plug-in, frees the rows. Accepts a zeroed session. */
void ctq_gemm_session_free(struct ctq_gemm_session *S);

#endif
