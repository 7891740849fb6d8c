/* ctq GEMM benchmark driver (`ctq bench gemm`): the operations and bytes
 * each implementation is charged, the device peak table, how many buffer
 * copies defeat the L2, sample statistics, a row's metrics, the bit-exact
 * check of device rows against the CPU reference, and the run directory it
 * writes (bench_gemm.csv and its samples, the manifest member, the plots).
 * The rows it fills are the bench_gemm family's (families/bench_gemm.h: the
 * implementation names, the row type and columns, the targets, the plot).
 *
 * Bytes per call (the least device-memory traffic; no cache reuse assumed):
 *   ctq_w8a8      x 2MK + w NK + s_w, bias 8N + y 2MN  (the q/s round trip
 *                 between its two kernels is overhead, not counted)
 *   ctq_gemm      q MK + s_a 4M + w NK + s_w, bias 8N + y 2MN
 *   ctq_quantize  x 2MK + q MK + s 4M
 *   cublas_bf16   x 2MK + w 2NK + y 2MN
 *   cublaslt_i8   q MK + w NK + acc 4MN
 * Operations: 2MNK for the GEMMs; none for ctq_quantize (no TOPS).
 *
 * What it is not: the timing (kernels/gemm_timing.h), the command line
 * (harness/cmd_bench_gemm.c) or what a row means once written (the family).
 * Host C only, no CUDA.
 */
#ifndef CTQ_BENCH_GEMM_H
#define CTQ_BENCH_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "families/bench_gemm.h"
#include "kernels/gemm_timing.h"

/* Rotation: the bytes one timed pass touches are at least this many times
 * the L2 size (so no call finds its operands left in L2 by an earlier one),
 * with at most CTQ_GEMM_MAX_COPIES buffer sets. */
#define CTQ_GEMM_L2_FACTOR 3.0
#define CTQ_GEMM_MAX_COPIES 1024

double ctq_gemm_ops(enum ctq_gemm_impl i, int64_t M, int64_t N, int64_t K);
/* Roofline bytes (table above). */
double ctq_gemm_bytes(enum ctq_gemm_impl i, int64_t M, int64_t N, int64_t K);
/* The weight bytes among them: NK int8, 2NK bf16, 0 for ctq_quantize. */
double ctq_gemm_weight_bytes(enum ctq_gemm_impl i, int64_t N, int64_t K);
/* The bytes one call touches (roofline bytes plus ctq_w8a8's q/s round trip). */
double ctq_gemm_touched_bytes(enum ctq_gemm_impl i, int64_t M, int64_t N, int64_t K);
/* Buffer copies so that copies × touched >= CTQ_GEMM_L2_FACTOR × l2_bytes:
 * in [1, CTQ_GEMM_MAX_COPIES]; 1 when touched alone already exceeds it. */
int ctq_gemm_copies(double touched_bytes, int64_t l2_bytes);

/* Device peaks: NaN where unknown. */
struct ctq_gemm_peaks {
	double int8_tops; /* dense INT8 tensor TOPS */
	double hbm_gbps;  /* memory bandwidth, GB/s (1e9 bytes) */
	char source[200]; /* where the numbers come from */
};
/* From the device name (exact names: "NVIDIA H200", "NVIDIA H100 80GB
 * HBM3", "NVIDIA H100 PCIe"; datasheet figures), each replaced by its
 * override when that is > 0. An unknown device gets NaN and says so. */
void ctq_gemm_peaks_for(const char *device_name, double tops_override, double gbps_override,
			struct ctq_gemm_peaks *p);

struct ctq_gemm_stats {
	double median, min, mean, stddev, cv; /* cv = stddev / mean (sample stddev) */
};
/* v (n) is not modified; n == 0 gives NaN. */
void ctq_gemm_stats(const double *v, size_t n, struct ctq_gemm_stats *s);

/* Fills ops .. pct_hbm_weights from shape, impl, time_us_median and peaks;
 * speedup_vs_bf16 is left NaN (see ctq_gemm_rows_speedup). */
void ctq_gemm_row_metrics(struct ctq_gemm_row *r, const struct ctq_gemm_peaks *p);
/* speedup_vs_bf16 = cublas_bf16 median / the row's median, pairing rows of
 * the same shape, K, N and M. */
void ctq_gemm_rows_speedup(struct ctq_gemm_row *rows, size_t n);
/* A row whose bytes are not its impl's (a weight-only layout's packed
 * weights): bytes and weight_bytes set, gbps .. pct_hbm_weights again. */
void ctq_gemm_row_bytes(struct ctq_gemm_row *r, const struct ctq_gemm_peaks *p, double bytes,
			double weight_bytes);

/* ---- the run directory ------------------------------------------------------- */

/* What a bench gemm run was, for its manifest. Strings borrowed. */
struct ctq_gemm_run_info {
	const char *device;      /* description, e.g. "NVIDIA H200 (sm_90, 132 SMs, L2 60.0 MiB, 139.8 GiB)" */
	const char *device_name; /* ctq_gemm_device.name */
	int device_index;
	int64_t l2_bytes;
	struct ctq_gemm_peaks peaks;
	int samples, warmup, check_rows;
	double min_graph_us;
	long seed;
	const char *shapes_from; /* "--shapes qwen3-4b", "checkpoint DIR" */
	const long *m;           /* (n_m) the M list asked for */
	int n_m;
	size_t points, ctq_failures, i8_failures;
	const char *first_failure; /* or NULL */
};

/* Writes a bench gemm run into dir (the run's temporary directory):
 * bench_gemm.csv (rows), bench_gemm_samples.csv (row i's per-call times
 * are samples[i * stride ..], rows[i].samples of them), the "bench_gemm"
 * member of manifest (device, peaks, method, byte counts, shapes, M list,
 * check counts, targets per shape), and plots/gemm_<shape>.{dat,gp,png}
 * when gnuplot is available; plot_note (cap bytes) says why a plot is
 * missing, "" otherwise. Errors: io-error, out-of-memory. */
enum ctq_status ctq_gemm_write(const char *dir, cJSON *manifest, const struct ctq_gemm_run_info *info,
			       const struct ctq_gemm_row *rows, size_t n, const double *samples,
			       size_t stride, char *plot_note, size_t cap, struct ctq_error *err);

/* ---- the reference check --------------------------------------------------- */

/* n_max rows spread evenly over [0, M), the first and the last included
 * (all of them when M <= n_max). Returns the count written to rows. */
int64_t ctq_gemm_check_rows(int64_t M, int64_t n_max, int64_t *rows);

/* The CPU reference (reference/ref_ops) on n chosen rows of a point: the
 * per-token quantization (q, s), the int32 accumulators and the BF16
 * output; one computation for ctq's check and a plug-in's. */
struct ctq_gemm_ref {
	int8_t *q;     /* (n, K) */
	float *s;      /* (n) */
	int32_t *acc;  /* (n, N) */
	uint16_t *y;   /* (n, N) */
};
/* x (M, K), rows[0..n-1] indices into it; w (N, K), s_w and bias (N). On
 * error ref holds nothing. */
enum ctq_status ctq_gemm_ref_rows(const uint16_t *x, const int8_t *w, const float *s_w,
				  const float *bias, const int64_t *rows, int64_t n, int64_t N,
				  int64_t K, struct ctq_gemm_ref *ref, struct ctq_error *err);
void ctq_gemm_ref_free(struct ctq_gemm_ref *ref);

/* Device rows (kernels/gemm_timing.h ctq_gemm_outputs) against the CPU
 * reference (reference/ref_ops.h) computed for the same rows: q and s of
 * the quantization, the int32 accumulators, the BF16 outputs of ctq_gemm and
 * ctq_w8a8, all bit-exact; and cuBLASLt's int32 when acc_i8 is given. */
struct ctq_gemm_check_in {
	int64_t M, N, K;
	const uint16_t *x;  /* (M, K) bf16: the whole activation */
	const int8_t *w;    /* (N, K) */
	const float *s_w;   /* (N) */
	const float *bias;  /* (N) */
	const int64_t *rows;
	int64_t n_rows;
	const int8_t *q;        /* (n_rows, K) */
	const float *s;         /* (n_rows) */
	const int32_t *acc;     /* (n_rows, N) */
	const uint16_t *y_gemm; /* (n_rows, N) */
	const uint16_t *y_w8a8; /* (n_rows, N) */
	const int32_t *acc_i8;  /* (n_rows, N) or NULL */
};

/* ctq_mismatch receives "" when every ctq output matches, else the first
 * mismatch: "<output> row R col C: got G, want W"; i8_mismatch likewise for
 * cuBLASLt ("" when it matches or was not given). Errors: usage (K above
 * CTQ_K_MAX), out-of-memory. */
enum ctq_status ctq_gemm_check(const struct ctq_gemm_check_in *in, char *ctq_mismatch,
			       size_t cap, char *i8_mismatch, size_t i8_cap, struct ctq_error *err);

/* ---- a kernel plug-in (ctq bench gemm --impl; bench/gemm_plugin.c) -------- */

/* Its output's rel-L2 to the reference, at most: the probe's kernel
 * threshold (conform/probe.c: one BF16 ulp per element, 2^-8). */
#define CTQ_GEMM_PLUGIN_REL_L2_MAX 0.0039

/* A plug-in's rows (kernels/gemm_timing.h ctq_gemm_bench_plugin_run_once)
 * against the reference of the same rows: NaN / Inf where the reference is
 * finite or the reverse, rel-L2 of y, and bit for bit q and s (quant_exact)
 * and y (out_exact) where the plug-in declares them. */
struct ctq_gemm_plugin_check_in {
	int64_t M, N, K;
	const uint16_t *x; /* (M, K) bf16 */
	const int8_t *w;   /* (N, K) */
	const float *s_w;  /* (N) */
	const float *bias; /* (N) */
	const int64_t *rows;
	int64_t n_rows;
	const int8_t *q;   /* (n_rows, K) the plug-in's quantize */
	const float *s;    /* (n_rows) */
	const uint16_t *y; /* (n_rows, N) its quantize + gemm_w8a8 */
	bool quant_exact, out_exact;
};

/* A plug-in's y (n, N) of rows `rows` against the reference's: mismatch
 * receives "" or the first reason (NaN / Inf where the reference is finite
 * or the reverse; with exact, any differing bits; else rel-L2 above
 * CTQ_GEMM_PLUGIN_REL_L2_MAX); *rel_l2 over the elements finite in both. */
void ctq_gemm_compare_y(const int64_t *rows, int64_t n, int64_t N, const uint16_t *got,
			const uint16_t *want, bool exact, double *rel_l2, char *mismatch, size_t cap);

/* mismatch receives "" when the plug-in passes, else the first reason;
 * *rel_l2 its output's rel-L2 over the elements finite in both. Errors:
 * usage (K above CTQ_K_MAX), out-of-memory. */
enum ctq_status ctq_gemm_plugin_check(const struct ctq_gemm_plugin_check_in *in, double *rel_l2,
				      char *mismatch, size_t cap, struct ctq_error *err);

#endif
