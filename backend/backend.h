/* ctq backend interface: one table of ops that the CPU reference and the
 * CUDA implementation both fill, so the probes and the model runner are
 * written once. The header exposes no CUDA types: "device" pointers are
 * opaque void pointers into memory the backend allocated (host memory for
 * the reference backend).
 *
 * Activations cross the interface as BF16 bits; weights as int8 (W8A8) or
 * BF16 (unquantized); scales and biases as f32.
 */
#ifndef CTQ_BACKEND_BACKEND_H
#define CTQ_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Test-only defect injection (probes must catch each of these). */
enum ctq_defect {
	CTQ_DEFECT_NONE = 0,
	CTQ_DEFECT_SCALE_SHIFT = 1u << 0,   /* epilogue reads s_w[n + 1] */
	CTQ_DEFECT_EPILOGUE_NAN = 1u << 1,  /* one output element becomes NaN */
	CTQ_DEFECT_TRANSPOSED_W = 1u << 2,  /* weight read as (K, N) instead of (N, K) */
};

/* The one definition of the epilogue defects, shared by the reference
 * backend and the CUDA kernels (compiled by cc and nvcc). */
#ifdef __CUDACC__
#define CTQ_DEFECT_FN static inline __host__ __device__
#else
#define CTQ_DEFECT_FN static inline
#endif

/* The s_w column the epilogue reads for output column n of N. */
CTQ_DEFECT_FN int64_t ctq_defect_scale_col(unsigned defects, int64_t n, int64_t N)
{
	return (defects & CTQ_DEFECT_SCALE_SHIFT) && n + 1 < N ? n + 1 : n;
}

/* Output element (m, n) of an (M, N) epilogue: v (BF16 bits), or a quiet
 * NaN at the centre element (M / 2, N / 2) under CTQ_DEFECT_EPILOGUE_NAN. */
CTQ_DEFECT_FN uint16_t ctq_defect_output(unsigned defects, int64_t m, int64_t n,
					  int64_t M, int64_t N, uint16_t v)
{
	return (defects & CTQ_DEFECT_EPILOGUE_NAN) && m == M / 2 && n == N / 2 ? 0x7fc0 : v;
}

/* How the W8A8 linears quantize their activations and multiply. */
enum ctq_act_numerics {
	/* DESIGN.md "Numerics": s = amax / 127, an int32 GEMM of q and the int8
	 * weights, one f32 epilogue (what vLLM's kernels and ctq's compute);
	 * every backend, the default. */
	CTQ_ACT_NUMERICS_CTQ = 0,
	/* compressed-tensors' fake quantization as transformers runs a W8A8
	 * checkpoint (core/numerics.h ctq_ct_*: s = bf16(amax / 127.5), x and
	 * the weight dequantized to BF16, a floating-point GEMM); the
	 * reference backend only, to attribute differences to transformers. */
	CTQ_ACT_NUMERICS_TRANSFORMERS = 1,
};

/* "ctq" or "transformers"; parse accepts exactly those. */
const char *ctq_act_numerics_name(enum ctq_act_numerics n);
bool ctq_act_numerics_parse(const char *s, enum ctq_act_numerics *out);

struct ctq_backend;

struct ctq_backend_ops {
	const char *name;
	void (*destroy)(struct ctq_backend *b);
	/* Describes the device for manifests (name, capability, ...). */
	void (*describe)(struct ctq_backend *b, char *buf, size_t cap);

	enum ctq_status (*alloc)(struct ctq_backend *b, size_t n_bytes, void **out,
				 struct ctq_error *err);
	void (*free)(struct ctq_backend *b, void *p);
	enum ctq_status (*upload)(struct ctq_backend *b, void *dst, const void *src,
				  size_t n_bytes, struct ctq_error *err);
	enum ctq_status (*download)(struct ctq_backend *b, void *dst, const void *src,
				    size_t n_bytes, struct ctq_error *err);
	enum ctq_status (*sync)(struct ctq_backend *b, struct ctq_error *err);

	/* x (M, K) bf16 -> q (M, K) int8, s (M) f32. */
	enum ctq_status (*quantize)(struct ctq_backend *b, const void *x, int64_t M, int64_t K,
				    void *q, void *s, struct ctq_error *err);
	/* q (M, K) int8, w (N, K) int8 -> acc (M, N) int32 (the debug path that
	 * exposes the accumulator for bit-exact checks). */
	enum ctq_status (*gemm_i8)(struct ctq_backend *b, const void *q, const void *w, int64_t M,
				   int64_t N, int64_t K, void *acc, struct ctq_error *err);
	/* acc (M, N) int32, s_a (M), s_w (N), bias (N) or NULL -> y (M, N) bf16. */
	enum ctq_status (*w8a8_epilogue)(struct ctq_backend *b, const void *acc, const void *s_a,
					 const void *s_w, const void *bias, int64_t M, int64_t N,
					 void *y, struct ctq_error *err);
	/* End to end: x (M, K) bf16 quantized per token, times w (N, K) int8 with
	 * s_w (N), + bias -> y (M, N) bf16. ws: workspace of at least
	 * ctq_w8a8_workspace_bytes(M, K) bytes of backend memory. */
	enum ctq_status (*w8a8_linear)(struct ctq_backend *b, const void *x, const void *w,
				       const void *s_w, const void *bias, int64_t M, int64_t N,
				       int64_t K, void *y, void *ws, struct ctq_error *err);
	/* x (M, K) bf16, w (N, K) bf16, bias (N) f32 or NULL -> y (M, N) bf16. */
	enum ctq_status (*gemm_bf16)(struct ctq_backend *b, const void *x, const void *w,
				     const void *bias, int64_t M, int64_t N, int64_t K, void *y,
				     struct ctq_error *err);

	/* ---- model ops: activations in the backend's own dtype (act_dtype) ---- */

	/* A dense (unquantized) weight (N, K) given as host bf16, stored in the
	 * backend's weight format (reference: f32; cuda: bf16). */
	enum ctq_status (*upload_dense)(struct ctq_backend *b, const uint16_t *w, size_t n, void **out,
					struct ctq_error *err);
	/* out (n, H) = rows ids[i] (device int32, (n)) of table (V, H) (a dense weight). */
	enum ctq_status (*embed)(struct ctq_backend *b, const void *table, const int32_t *ids, int64_t n,
				 int64_t H, void *out, struct ctq_error *err);
	/* y (M, H) = x / rms(x) * w (w f32 (H)); x may equal y. */
	enum ctq_status (*rmsnorm)(struct ctq_backend *b, const void *x, const float *w, int64_t M,
				   int64_t H, float eps, void *y, struct ctq_error *err);
	/* x (n) += y (n). */
	enum ctq_status (*add)(struct ctq_backend *b, void *x, const void *y, int64_t n,
			       struct ctq_error *err);
	/* y (M, N) = x (M, K) · w (N, K)ᵀ + bias, w a dense weight. */
	enum ctq_status (*linear_dense)(struct ctq_backend *b, const void *x, const void *w,
					const float *bias, int64_t M, int64_t N, int64_t K, void *y,
					struct ctq_error *err);
	/* W8A8 linear on native activations (quantized per token, int8 GEMM,
	 * epilogue); ws as for w8a8_linear. */
	enum ctq_status (*linear_w8a8)(struct ctq_backend *b, const void *x, const int8_t *w,
				       const float *s_w, const float *bias, int64_t M, int64_t N,
				       int64_t K, void *y, void *ws, struct ctq_error *err);
	/* Strided head tensors: token t's heads start at x + t * ld elements,
	 * head h at + h * d (a view into a fused q|k|v row). */
	/* In place: each head vector scaled by 1/rms * w (w f32 (d)), Qwen3's q/k norm. */
	enum ctq_status (*head_norm)(struct ctq_backend *b, void *x, int64_t ld, int64_t T,
				     int64_t heads, int64_t d, const float *w, float eps,
				     struct ctq_error *err);
	/* In place, HF rotate_half RoPE at positions pos (device int32 (T)) with
	 * inv_freq (device f32 (d/2)). */
	enum ctq_status (*rope)(struct ctq_backend *b, void *x, int64_t ld, const int32_t *pos,
				int64_t T, int64_t heads, int64_t d, const float *inv_freq,
				struct ctq_error *err);
	/* Writes k, v into the caches (slots, max_len, kv_heads, d) at (slot[t],
	 * pos[t]), then out (T, heads, d) contiguous = causal attention of q over
	 * positions 0..pos[t] of slot[t] (GQA: head h reads kv head
	 * h / (heads / kv_heads)), scaled by 1/sqrt(d). Every token of a sequence
	 * in this call is stored before any attends. host_slot, host_pos: the
	 * same (T) on the host, or NULL; where given, a backend may split the
	 * call into runs of its own choosing (a scheduling choice only: every
	 * token's result is defined as above whatever the split). k = v = NULL
	 * (only after this backend's own qk_norm_rope_store): the tokens' keys
	 * and values are in the caches already; nothing is stored. */
	enum ctq_status (*attention)(struct ctq_backend *b, const void *q, const void *k,
				     const void *v, int64_t ld, void *k_cache, void *v_cache,
				     const int32_t *slot, const int32_t *pos, const int32_t *host_slot,
				     const int32_t *host_pos, int64_t T, int64_t heads,
				     int64_t kv_heads, int64_t d, int64_t max_len, void *out,
				     struct ctq_error *err);
	/* out (M, I) = silu(gu[:, :I]) * gu[:, I:] for gu (M, 2I). */
	enum ctq_status (*silu_mul)(struct ctq_backend *b, const void *gu, int64_t M, int64_t I,
				    void *out, struct ctq_error *err);
	/* rows of x (M, N) selected by idx (host, n) -> host f32 (n, N). */
	enum ctq_status (*rows_to_host)(struct ctq_backend *b, const void *x, int64_t N,
					const int64_t *idx, int64_t n, float *out,
					struct ctq_error *err);
	/* Optional: out[r] (host) = the argmax of row r of x (rows 0..n-1 of N
	 * values) with ctq_argmax's rule (model/runner.h): the greedy pick
	 * without the rows coming back. NULL: the runner takes rows_to_host
	 * and ctq_argmax. */
	enum ctq_status (*rows_argmax)(struct ctq_backend *b, const void *x, int64_t N, int64_t n,
				       int32_t *out, struct ctq_error *err);
	/* Optional (NULL on backends without them): capture the ops issued
	 * between begin and end into a replayable graph (CUDA graphs), replay
	 * it, and destroy it. Ops inside a capture must not synchronise. */
	enum ctq_status (*graph_begin)(struct ctq_backend *b, struct ctq_error *err);
	enum ctq_status (*graph_end)(struct ctq_backend *b, void **graph, struct ctq_error *err);
	enum ctq_status (*graph_launch)(struct ctq_backend *b, void *graph, struct ctq_error *err);
	void (*graph_destroy)(struct ctq_backend *b, void *graph);
	/* Optional: make this backend's device current for the calling thread
	 * (several GPUs in one process). */
	enum ctq_status (*bind)(struct ctq_backend *b, struct ctq_error *err);
	/* Optional: in-stream sum of buf (n activations) across the tensor-
	 * parallel ranks set up by ctq_backend_cuda_tp_init (NCCL). */
	enum ctq_status (*allreduce_sum)(struct ctq_backend *b, void *buf, int64_t n,
					 struct ctq_error *err);
	/* Optional: device memory free and total, in bytes. */
	enum ctq_status (*mem_info)(struct ctq_backend *b, size_t *free_bytes, size_t *total_bytes,
				    struct ctq_error *err);
	/* Optional fused W8A8 producers: the output of rmsnorm (or silu_mul),
	 * bit-identical to that op's, quantized per token straight into a
	 * w8a8 workspace (q (M, K) int8, then s (M) f32 at the offsets of
	 * ctq_w8a8_workspace_bytes(M, K)); linear_w8a8_q runs the int8 GEMM
	 * and epilogue on such a workspace. The runner uses them together or
	 * not at all. */
	enum ctq_status (*rmsnorm_quant)(struct ctq_backend *b, const void *x, const float *w,
					 int64_t M, int64_t H, float eps, void *ws,
					 struct ctq_error *err);
	enum ctq_status (*silu_mul_quant)(struct ctq_backend *b, const void *gu, int64_t M, int64_t I,
					  void *ws, struct ctq_error *err);
	enum ctq_status (*linear_w8a8_q)(struct ctq_backend *b, const void *ws, const int8_t *w,
					 const float *s_w, const float *bias, int64_t M, int64_t N,
					 int64_t K, void *y, struct ctq_error *err);
	size_t act_bytes; /* bytes of one activation element: 4 (f32) or 2 (bf16) */
	/* Optional residual add fused into the RMSNorm that follows it: x (M, H)
	 * += res, rounded as add does, then rmsnorm of the new x into y
	 * (add_rmsnorm) or into a w8a8 workspace as rmsnorm_quant
	 * (add_rmsnorm_quant); identical to add then that op. y may be res. */
	enum ctq_status (*add_rmsnorm)(struct ctq_backend *b, void *x, const void *res, const float *w,
				       int64_t M, int64_t H, float eps, void *y, struct ctq_error *err);
	enum ctq_status (*add_rmsnorm_quant)(struct ctq_backend *b, void *x, const void *res,
					     const float *w, int64_t M, int64_t H, float eps, void *ws,
					     struct ctq_error *err);
	/* Optional: Qwen3's q/k norm then RoPE in one pass, in place on a qkv
	 * view: head_norm of the nq q heads by wq and of the nk k heads that
	 * follow them by wk, then rope of all nq + nk heads; identical to
	 * those three ops. */
	enum ctq_status (*qk_norm_rope)(struct ctq_backend *b, void *x, int64_t ld, int64_t T,
					int64_t nq, int64_t nk, int64_t d, const float *wq,
					const float *wk, float eps, const int32_t *pos,
					const float *inv_freq, struct ctq_error *err);
	/* Optional: qk_norm_rope, then the k heads (rotated) and the v heads of
	 * each token stored into k_cache and v_cache at (slot, pos) as attention
	 * stores them; the attention that follows is then called with k = v =
	 * NULL. Identical to qk_norm_rope then attention's store. */
	enum ctq_status (*qk_norm_rope_store)(struct ctq_backend *b, void *x, int64_t ld, int64_t T,
					      int64_t nq, int64_t nk, int64_t d, const float *wq,
					      const float *wk, float eps, const int32_t *pos,
					      const float *inv_freq, void *k_cache, void *v_cache,
					      const int32_t *slot, int64_t max_len,
					      struct ctq_error *err);
	/* Optional: the native stream the ops run on (a cudaStream_t as void *),
	 * for code that enqueues its own kernels beside them (kernel plug-ins,
	 * backend/plugin.h); NULL on backends without one. */
	void *(*stream)(struct ctq_backend *b);
	/* Optional: the name of the kernel path (backend/paths.h) the W8A8
	 * linear of an M × N × K product takes on this backend ("sm80-mma",
	 * "gemv", ...); absent where there is one implementation (the backend's
	 * name then stands for it). Result files name the code they measured. */
	const char *(*w8a8_path)(struct ctq_backend *b, int64_t M, int64_t N, int64_t K);
};

/* Bit-exact checks a backend declares it passes (kernel plug-ins state
 * theirs, include/ctq_kernel_plugin.h); the probe then compares bit for
 * bit on top of rel-L2. */
enum ctq_backend_exact {
	CTQ_EXACT_QUANT = 1u << 0,  /* quantize: q and s bit-identical to reference/ */
	CTQ_EXACT_OUTPUT = 1u << 1, /* w8a8_linear: y bit-identical to reference/ */
};

struct ctq_backend {
	const struct ctq_backend_ops *ops;
	void *impl;
	unsigned defects; /* enum ctq_defect bits; 0 outside tests */
	/* Set through ctq_backend_set_act_numerics. Under TRANSFORMERS the
	 * reference's quantize, w8a8_linear, linear_w8a8, linear_w8a8_q and
	 * the fused producers follow compressed-tensors; gemm_i8 and
	 * w8a8_epilogue stay the integer debug path (and its defect hooks do
	 * not apply to the floating-point product). */
	enum ctq_act_numerics act_numerics;
	unsigned exact; /* enum ctq_backend_exact bits; 0 for ctq's own backends */
};

/* Selects b's activation numerics (b opened, not yet running). usage error
 * when b implements only ctq's (every backend but the reference). */
enum ctq_status ctq_backend_set_act_numerics(struct ctq_backend *b, enum ctq_act_numerics n,
					     struct ctq_error *err);

/* Workspace for w8a8_linear: q (M, K) int8 then s (M) f32, 256-aligned. */
static inline size_t ctq_w8a8_workspace_bytes(int64_t M, int64_t K)
{
	size_t q = ((size_t)M * (size_t)K + 255) & ~(size_t)255;
	return q + (size_t)M * sizeof(float);
}

/* The scales inside such a workspace. */
static inline float *ctq_w8a8_workspace_scales(void *ws, int64_t M, int64_t K)
{
	return (float *)((char *)ws + (ctq_w8a8_workspace_bytes(M, K) - (size_t)M * sizeof(float)));
}

/* The CPU reference backend. */
enum ctq_status ctq_backend_reference(struct ctq_backend *b, struct ctq_error *err);

/* The CUDA backend on device `device` (kernels/); env-error when this build
 * has no CUDA or no GPU is visible. */
enum ctq_status ctq_backend_cuda(struct ctq_backend *b, int device, struct ctq_error *err);

/* Joins tp CUDA backends (one per GPU, already opened) into one NCCL
 * communicator, rank k = ranks[k]; their allreduce_sum then works.
 * env-error without CUDA/NCCL or with fewer GPUs. */
enum ctq_status ctq_backend_cuda_tp_init(struct ctq_backend *ranks, int tp, struct ctq_error *err);

/* Opens a backend by name ("reference" or "cuda"). */
enum ctq_status ctq_backend_open(struct ctq_backend *b, const char *name,
				 struct ctq_error *err);
void ctq_backend_close(struct ctq_backend *b);

#ifdef __cplusplus
}
#endif

#endif
