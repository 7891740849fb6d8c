/* ctq GEMM benchmark driver (kernels/gemm_timing.cu): runs and times, side by
 * side on one device, ctq's W8A8 path (kernels/kernels.h) and the cuBLAS
 * baselines for one (M, N, K) point at a time. C API; no CUDA types.
 *
 * Cache honesty: every implementation cycles through its own number of
 * buffer sets ("copies": activations, weights, outputs at distinct
 * addresses), chosen by the caller so that the bytes one pass touches exceed
 * a multiple of the L2 size (bench/gemm.h). One timed sample is one
 * launch of a CUDA graph holding `calls` consecutive calls, call j on copy
 * j % copies; graphs are lengthened (whole cycles) until a launch lasts at
 * least min_graph_us, so launch gaps stay out of the per-call time. Samples
 * are enqueued back to back with a CUDA event between launches.
 *
 * What it is not: the metrics, the reference check or the CSV (those are
 * bench/gemm.h, host C); nothing here prints.
 */
#ifndef CTQ_KERNELS_GEMM_TIMING_H
#define CTQ_KERNELS_GEMM_TIMING_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The implementations timed; stable names (CSV `impl`) in bench/gemm.h. */
enum ctq_gemm_impl {
	CTQ_GEMM_W8A8,     /* ctq_w8a8: quantize + GEMM + fused epilogue, end to end */
	CTQ_GEMM_GEMM,     /* ctq_gemm: GEMM + fused epilogue on pre-quantized input */
	CTQ_GEMM_QUANTIZE, /* ctq_quantize: the per-token quantization kernel alone */
	CTQ_GEMM_BF16,     /* cublas_bf16: cublasGemmEx BF16 in and out, FP32 compute */
	CTQ_GEMM_I8,       /* cublaslt_i8: cuBLASLt int8 x int8 -> int32, COMPUTE_32I, TN */
	CTQ_GEMM_IMPL_COUNT
};

struct ctq_gemm_device {
	char name[256];   /* cudaDeviceProp.name, e.g. "NVIDIA H200" */
	int major, minor; /* compute capability */
	int sms;
	int64_t l2_bytes, mem_bytes;
};

struct ctq_gemm_bench; /* opaque: one device, stream, cuBLAS handles, the point's buffers */

/* Opens device `device`. Errors: env-error (this build has no CUDA, no
 * device visible, device out of range, cuBLAS cannot start), out-of-memory.
 * *out is NULL on error. */
enum ctq_status ctq_gemm_bench_open(struct ctq_gemm_bench **out, int device,
				    struct ctq_gemm_device *info, struct ctq_error *err);
/* Frees everything; accepts NULL. */
void ctq_gemm_bench_close(struct ctq_gemm_bench *b);

/* One point's inputs (host memory, borrowed for the call). */
struct ctq_gemm_inputs {
	int64_t M, N, K;
	const uint16_t *x;  /* (M, K) bf16 bits */
	const int8_t *w;    /* (N, K) int8 */
	const float *s_w;   /* (N) per-channel weight scales */
	const float *bias;  /* (N) */
	int copies[CTQ_GEMM_IMPL_COUNT]; /* buffer sets each implementation cycles through, >= 1 */
};

/* Frees the previous point's buffers, allocates this one's (cudaMalloc:
 * 256-byte aligned), uploads the inputs into every copy, quantizes every
 * activation copy, and converts w to the BF16 weights of cublas_bf16
 * (exact: |w| <= 128). Sets up cuBLASLt for (M, N, K); a shape cuBLASLt
 * refuses is not an error (see ctq_gemm_timing.supported). Errors: usage
 * (M, N or K out of range), out-of-memory (device memory), env-error. */
enum ctq_status ctq_gemm_bench_load(struct ctq_gemm_bench *b, const struct ctq_gemm_inputs *in,
				    struct ctq_error *err);

/* The outputs of one untimed run of each implementation on copy 0, rows
 * `rows` (borrowed, each in [0, M)) read back into caller buffers. Every
 * output is poisoned (all bits set: NaN in BF16, -1 in int32) before its
 * run, so an unwritten element cannot pass. */
struct ctq_gemm_outputs {
	const int64_t *rows;
	int64_t n_rows;
	int8_t *q;        /* (n_rows, K) ctq_quantize */
	float *s;         /* (n_rows) ctq_quantize scales */
	int32_t *acc;     /* (n_rows, N) ctq GEMM with acc != NULL (debug path) */
	uint16_t *y_w8a8; /* (n_rows, N) ctq_w8a8 end to end */
	uint16_t *y_gemm; /* (n_rows, N) ctq_gemm on the quantized input */
	int32_t *acc_i8;  /* (n_rows, N) cuBLASLt int32; written when i8_ok */
	bool i8_ok;       /* out: cuBLASLt ran; otherwise i8_note says why */
	char i8_note[200];
};
enum ctq_status ctq_gemm_bench_run_once(struct ctq_gemm_bench *b, struct ctq_gemm_outputs *out,
					struct ctq_error *err);

struct ctq_gemm_timing {
	int warmup, samples;  /* in: graph launches untimed, then timed (samples >= 1) */
	double min_graph_us;  /* in: lengthen graphs to at least this (0: one cycle) */
	double *time_us;      /* in: (samples) caller buffer; out: per-call times */
	int copies, calls;    /* out: buffer sets cycled, calls per graph launch */
	bool supported;       /* out: false when cuBLASLt refused the shape (note) */
	char note[200];       /* out */
};

/* ctq_w8a8 and ctq_gemm on one W8A8 GEMM path (enum ctq_gemm_path,
 * backend/paths.h) from the next call on, or -1: the path dispatch picks
 * (the default). A path that does not take the point fails the run or
 * the timing with a usage-error naming it (ctq_gemm_w8a8_launch_on). */
void ctq_gemm_bench_set_path(struct ctq_gemm_bench *b, int path);
/* The path ctq_gemm runs at the loaded point: the forced one, else
 * dispatch's (ctq_gemm_w8a8_path). */
int ctq_gemm_bench_path(struct ctq_gemm_bench *b);

/* Times one implementation on the loaded point. Errors: env-error (a CUDA or
 * cuBLAS call failed, graph capture included), out-of-memory. */
enum ctq_status ctq_gemm_bench_time(struct ctq_gemm_bench *b, enum ctq_gemm_impl impl,
				    struct ctq_gemm_timing *t, struct ctq_error *err);

/* ---- a kernel plug-in timed beside them (ctq bench gemm --impl) ----------
 * Its quantize then gemm_w8a8 (include/ctq_kernel_plugin.h) on the point's
 * buffers, cycling through ctq_w8a8's copies (the same bytes touched), on
 * the bench's stream, captured into graphs and timed exactly as the
 * implementations above; its workspace is allocated at load. */
struct ctq_kernel_plugin;

/* Times p (borrowed, a CUDA plug-in whose init ran, loaded from path, also
 * borrowed) from the next load on; NULL stops. */
void ctq_gemm_bench_set_plugin(struct ctq_gemm_bench *b, const struct ctq_kernel_plugin *p,
			       const char *path);

/* One untimed run of the plug-in on copy 0: its quantize alone (q
 * (n_rows, K), s (n_rows)), then quantize + gemm_w8a8 end to end (y
 * (n_rows, N)), rows as in ctq_gemm_outputs, outputs poisoned first.
 * Errors: usage (no plug-in set, a row out of range), env-error (a CUDA
 * call failed, or the plug-in returned an error: its message). */
enum ctq_status ctq_gemm_bench_plugin_run_once(struct ctq_gemm_bench *b, const int64_t *rows,
					       int64_t n_rows, int8_t *q, float *s, uint16_t *y,
					       struct ctq_error *err);

/* Times the plug-in end to end on the loaded point; as ctq_gemm_bench_time. */
enum ctq_status ctq_gemm_bench_plugin_time(struct ctq_gemm_bench *b, struct ctq_gemm_timing *t,
					   struct ctq_error *err);

/* ---- a weight-only plug-in timed beside them (ABI version 2, gemm_wna16) ---
 * Its gemm_wna16 (include/ctq_kernel_plugin.h) on the point's BF16
 * activations and bias, writing y, with the weights given here in
 * compressed-tensors' pack-quantized layout, each of x, y and the weights
 * cycling through its copies, timed as the implementations above. The
 * weights belong to the loaded point (the next load frees them). */
struct ctq_gemm_wna16_weights {
	const int32_t *packed; /* (N, words) */
	int64_t words;
	const float *scale;    /* (N, groups) f32 */
	int64_t groups;
	const int32_t *zero;   /* (zrows, groups) or NULL: symmetric */
	int64_t zrows;
	int bits;              /* 4 or 8 */
	int64_t group_size;    /* 0: per channel */
	int copies;            /* weight copies cycled (>= 1; against the L2) */
};
/* Uploads w for the set plug-in (which must have gemm_wna16) at the
 * loaded point. Errors: usage (no such plug-in or point, a bad layout),
 * out-of-memory, env-error. */
enum ctq_status ctq_gemm_bench_wna16_load(struct ctq_gemm_bench *b, const struct ctq_gemm_wna16_weights *w,
					  struct ctq_error *err);
/* One untimed gemm_wna16 on copy 0, y poisoned first, rows read back into
 * y (n_rows, N). Errors as ctq_gemm_bench_plugin_run_once. */
enum ctq_status ctq_gemm_bench_wna16_run_once(struct ctq_gemm_bench *b, const int64_t *rows,
					      int64_t n_rows, uint16_t *y, struct ctq_error *err);
/* Times gemm_wna16 on the loaded weights; as ctq_gemm_bench_time. */
enum ctq_status ctq_gemm_bench_wna16_time(struct ctq_gemm_bench *b, struct ctq_gemm_timing *t,
					  struct ctq_error *err);

#ifdef __cplusplus
}
#endif

#endif
