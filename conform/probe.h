/* ctq kernel isolation probes: one linear layer geometry at a time, with the
 * checkpoint's real weights or synthetic int8 weights, under activation
 * patterns chosen to break kernels (gaussian, outlier channels, all-zero
 * rows, magnitudes near the BF16 limit). Each run reports NaN/Inf counts,
 * an all-zero flag, the worst element, rel-L2 to the exact-quantized CPU
 * reference (kernel error) and rel-L2 to the FP64 unquantized product
 * (quantization error), judged against a policy. A reference backend set to
 * transformers' numerics (backend/backend.h) is probed the same way: its
 * "kernel" rel-L2 is then the distance between compressed-tensors' fake
 * quantization and ctq's formula, and its backend column reads
 * reference+transformers. */
#ifndef CTQ_CONFORM_PROBE_H
#define CTQ_CONFORM_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/policy.h"
#include "core/status.h"
#include "backend/backend.h"

enum ctq_probe_weights {
	CTQ_PW_CHECKPOINT, /* the layer's real weights, quantized per channel */
	CTQ_PW_RANDOM,     /* uniform int8 in [-127, 127] */
	CTQ_PW_PM127,      /* ±127 with random signs */
	CTQ_PW_CONSTANT,   /* every weight 64 */
	CTQ_PW_ZERO_ROW,   /* random with output channel N/2 all zero */
	CTQ_PW_COUNT
};

enum ctq_probe_acts {
	CTQ_PA_GAUSSIAN,   /* N(0, 1) */
	CTQ_PA_OUTLIERS,   /* N(0, 1) with 1% of channels ×100 */
	CTQ_PA_ZERO_ROWS,  /* every fourth row all zero */
	CTQ_PA_BF16_LIMIT, /* |x| in [1.7e38, 3.39e38] */
	CTQ_PA_COUNT
};

const char *ctq_probe_weights_name(enum ctq_probe_weights w);
const char *ctq_probe_acts_name(enum ctq_probe_acts a);
bool ctq_probe_weights_parse(const char *s, enum ctq_probe_weights *out);
bool ctq_probe_acts_parse(const char *s, enum ctq_probe_acts *out);

struct ctq_probe_policy {
	double kernel_rel_l2_max;               /* vs the exact-quantized reference; < 0: not judged */
	double quant_rel_l2_max[CTQ_PA_COUNT];  /* vs FP64; < 0: not judged */
	char source[CTQ_POLICY_SOURCE_MAX];     /* where the numbers came from */
};

/* The built-in policy: policies/probe.json, which the build embeds
 * (core/embedded.h); source "policies/probe.json (built in)". */
#define CTQ_PROBE_POLICY_FILE "policies/probe.json"
void ctq_probe_policy_default(struct ctq_probe_policy *p);
/* Reads a policy JSON file over the defaults. */
enum ctq_status ctq_probe_policy_load(struct ctq_probe_policy *p, const char *path,
				      struct ctq_error *err);

struct ctq_probe_layer {
	const char *name;
	int64_t K, N;
	const float *w;      /* (N, K) real unquantized weights for CTQ_PW_CHECKPOINT */
	const int8_t *wq;    /* or (N, K) real int8 weights ... */
	const float *sw;     /* ... with their (N) scales (a W8A8 checkpoint) */
	const float *bias;   /* (N) or NULL; synthetic patterns make their own */
};

struct ctq_probe_result {
	char layer[256];
	int64_t K, N, M;
	enum ctq_probe_weights weights;
	enum ctq_probe_acts acts;
	char backend[32];
	char kernel_path[32]; /* the W8A8 path the backend took (backend/paths.h), or its name */
	int64_t nan_count, inf_count, nonfinite_mismatch;
	bool all_zero;
	double max_abs_err;
	int64_t max_m, max_n;
	double ref_at_max, got_at_max;
	double kernel_rel_l2, quant_rel_l2;
	/* Bit-exact checks, run where the backend declares them (b->exact):
	 * elements of q (M, K), s (M) and y (M, N) whose bits differ from the
	 * reference's (NaN equal to NaN in y); -1 where not checked. */
	int64_t q_mismatch, s_mismatch, y_mismatch;
	bool passed;
	char reason[320];
};

struct ctq_rng;
/* The synthetic weight pattern wp (not CTQ_PW_CHECKPOINT): wq (N, K), its
 * per-row scales sw (N) and w_orig = wq * sw (N, K), drawn from rng row by
 * row (a row's scale, then its values) and rng left after the last draw.
 * The rows are drawn on every core; the values are the serial loop's. */
void ctq_probe_draw_weights(int8_t *wq, float *w_orig, float *sw, int64_t N, int64_t K,
			    enum ctq_probe_weights wp, struct ctq_rng *rng);
/* The activation pattern ap: x (M, K) bf16 and x_f (M, K), its values as
 * f32, drawn from rng (never Inf from the generator itself). */
void ctq_probe_make_acts(uint16_t *x, float *x_f, int64_t M, int64_t K, enum ctq_probe_acts ap,
			 struct ctq_rng *rng);

/* A kernel's (mn = M x N) BF16 output y against the reference y_ref
 * (kernel_rel_l2, the largest difference and where, NaN/Inf counts,
 * non-finite mismatches, all_zero) and the FP64 product y64
 * (quant_rel_l2), into r, whose counters start at 0. Returns whether the
 * reference holds a non-zero output. The W8A8 and the weight-only probes
 * both measure with it. */
bool ctq_probe_compare_outputs(const uint16_t *y, const uint16_t *y_ref, const double *y64,
			       int64_t mn, int64_t N, struct ctq_probe_result *r);

/* Frees the host buffers the probes of this thread keep between calls
 * (ctq_probe_run and ctq_probe_run_jobs reuse them; call it when a run of
 * probes is over). */
void ctq_probe_release(void);

/* Runs one (layer, weight pattern, activation pattern, M) on backend b. The
 * oracle always runs on the CPU (reference/ref_ops). Resource failures are
 * returned; a failing probe is a result with passed == false. */
enum ctq_status ctq_probe_run(struct ctq_backend *b, const struct ctq_probe_layer *layer,
			      enum ctq_probe_weights wp, enum ctq_probe_acts ap, int64_t M,
			      uint64_t seed, const struct ctq_probe_policy *policy,
			      struct ctq_probe_result *r, struct ctq_error *err);
/* The same on n_be backends at once (res: n_be results, in order): the
 * inputs and the CPU oracle are computed once and each backend is held to
 * them, as n_be calls of ctq_probe_run would (same seeds, same rows). */
enum ctq_status ctq_probe_run_many(struct ctq_backend *const *bes, int n_be,
				   const struct ctq_probe_layer *layer, enum ctq_probe_weights wp,
				   enum ctq_probe_acts ap, int64_t M, uint64_t seed,
				   const struct ctq_probe_policy *policy, struct ctq_probe_result *res,
				   struct ctq_error *err);

/* One probe of a list: (weights, acts, M). */
struct ctq_probe_job {
	enum ctq_probe_weights weights;
	enum ctq_probe_acts acts;
	int64_t M;
};

/* Receives the n_be results of one job, in backend order. */
typedef void (*ctq_probe_results_fn)(void *ctx, const struct ctq_probe_result *res, int n_be);

/* The jobs of layer L in order on n_be backends, each as ctq_probe_run_many
 * would run it (the same seeds, inputs, rows), its results handed to
 * on_results (may be NULL) before the next job's. The weights are drawn
 * once for each run of consecutive jobs with the same (weights, acts) (a
 * session's M list), not once per job: they never depended on M. With
 * overlap, job i + 1's inputs and CPU oracle are computed on a worker
 * thread while job i runs on the backends; the results are the same
 * either way. Do not overlap around a backend that forks (a CPU plug-in's
 * isolated calls). Errors: the first of any job; usage-error when a
 * checkpoint job has no weights in L, out-of-memory. */
enum ctq_status ctq_probe_run_jobs(struct ctq_backend *const *bes, int n_be,
				   const struct ctq_probe_layer *L, const struct ctq_probe_job *jobs,
				   size_t n_jobs, uint64_t seed, const struct ctq_probe_policy *policy,
				   bool overlap, ctq_probe_results_fn on_results, void *ctx,
				   struct ctq_error *err);

#endif
