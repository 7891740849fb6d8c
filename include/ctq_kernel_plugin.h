/* ctq kernel plug-in ABI, version 2: the public C contract through which
 * `ctq probe --kernel-lib LIB.so` and `ctq bench gemm --impl LIB.so` load
 * someone else's W8A8 INT8 kernels and hold them to the same checks as
 * ctq's own (rel-L2 against the exact-quantized CPU reference, NaN / Inf
 * per layer geometry, bit-exact integer checks where the plug-in declares
 * them).
 *
 * This header is the whole contract: plain C types only, no ctq internals,
 * no CUDA types. A plug-in is a shared object that exports one symbol,
 *
 *     const struct ctq_kernel_plugin *ctq_kernel_plugin(uint32_t abi_version);
 *
 * ctq calls it with CTQ_KERNEL_PLUGIN_ABI_VERSION (2); the plug-in returns a
 * table it owns (static storage, valid until dlclose) whose abi_version
 * states the version it implements, or NULL when it cannot serve that
 * version, and ctq then asks again with 1. Version 1 is still served: a
 * version-1 table (abi_version 1, struct_size at least
 * CTQ_KERNEL_PLUGIN_V1_SIZE) is read up to gemm_bf16 and nothing after it.
 * ctq refuses (exit 2) a table of another version, one whose struct_size is
 * smaller than its version's struct, and one whose required members are
 * NULL.
 *
 * Version 2 adds weight-only GEMMs (gemm_wna16, below): a plug-in may
 * provide the W8A8 pair (quantize and gemm_w8a8, both or neither), the
 * weight-only GEMM, or all three; at least one of the two.
 *
 * Numerics every plug-in implements (ctq's DESIGN.md "Numerics"):
 *   per-token quantization of BF16 activations x (M, K):
 *     amax[m] = max_k |x[m,k]|  (a NaN element makes amax NaN)
 *     s_tok[m] = amax[m] / 127  (IEEE float division; amax == 0 -> s = 0)
 *     q[m,k] = clamp(rint(x[m,k] / s_tok[m]), -128, 127), ties to even;
 *              s == 0 or x / s NaN -> 0
 *   W8A8 GEMM:
 *     acc[m,n] = sum_k q[m,k] * w[n,k]   in int32 (exact: K <= 132104)
 *     y[m,n] = bf16(((float)acc * s_tok[m]) * s_ch[n] + bias[n])
 *              each step a separately rounded float operation (no fused
 *              multiply-add), bias[n] = 0.0f when bias is NULL (still
 *              added, so -0 becomes +0), the BF16 conversion
 *              round-to-nearest-even (NaN stays NaN)
 *   weight-only GEMM (gemm_wna16), b = bits (4 or 8), pf = 32 / b:
 *     weights in compressed-tensors' pack-quantized layout: w_packed (N,
 *       ceil(K / pf)) int32, value k of row n in word k / pf at bits
 *       [(k % pf) * b, +b) (little-endian), as u = q + 2^(b-1) (unsigned);
 *       q in [-2^(b-1), 2^(b-1) - 1]; a row's last word padded with u = 0
 *     G = group_size (> 0), or K when group_size == 0 (per channel);
 *       n_groups = ceil(K / G); scale (N, n_groups) f32; g = k / G
 *     zero points: zero_packed (ceil(N / pf), n_groups) int32 packed along
 *       N (value n of column g in word (n / pf) * n_groups + g, bits
 *       [(n % pf) * b, +b), same offset), or NULL: z = 0 (symmetric)
 *     w[n,k] = (float)(q - z) * scale[n, g]   (exact difference, one
 *              rounding)
 *     acc = 0.0f; for k = 0 .. K-1 in this order:
 *              acc = acc + bf16_to_f32(x[m,k]) * w[n,k]   (product and sum
 *              each rounded, no fused multiply-add)
 *     y[m,n] = bf16(acc + bias[n])   (bias 0.0f when NULL; BF16 rounding
 *              to nearest even, NaN stays NaN)
 * A plug-in that follows these rules exactly sets the capability bits
 * below, and ctq then compares its integers and outputs bit for bit; one
 * that does not (a fused epilogue, another rounding) leaves them clear and
 * is judged by rel-L2 alone.
 *
 * Memory: every pointer argument points into memory of the plug-in's
 * device: host memory for CTQ_KERNEL_PLUGIN_DEVICE_CPU, CUDA device memory
 * (cudaMalloc, the current device) for CTQ_KERNEL_PLUGIN_DEVICE_CUDA.
 * The caller guarantees: every buffer at least 256-byte aligned and of
 * exactly the size given beside it, inputs not aliasing outputs,
 * 1 <= M, N <= 2^20 and 1 <= K <= 132104 (the int32-exact bound). All
 * matrices are row-major and dense (leading dimension = row length); BF16
 * values are passed as their 16-bit patterns (uint16_t); x may hold any
 * BF16 value, Inf and NaN included (the rules above say what they give),
 * and values near the BF16 limit whose outputs overflow (the probe's
 * bf16-limit pattern).
 *
 * Streams: for a CUDA plug-in, `stream` is a cudaStream_t passed as void *
 * (NULL: the legacy default stream). The functions enqueue their work on
 * it and may return before it completes; ctq synchronises the stream
 * before reading results. Work must not allocate memory or synchronise
 * inside the calls (ctq may capture them into a CUDA graph), so scratch
 * memory comes from the caller's workspace (gemm_workspace_bytes). A CPU
 * plug-in receives stream == NULL and completes before returning.
 *
 * Errors: every function returns 0 on success; on failure a non-zero code
 * and a NUL-terminated message of at most msg_cap bytes (msg_cap >= 256)
 * in msg, which ctq prints with the plug-in's name. Functions must be
 * callable again after a failure.
 *
 * Threads: ctq calls a plug-in from one thread at a time.
 */
#ifndef CTQ_KERNEL_PLUGIN_H
#define CTQ_KERNEL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTQ_KERNEL_PLUGIN_ABI_VERSION 2u
/* The oldest version ctq still loads. */
#define CTQ_KERNEL_PLUGIN_ABI_VERSION_MIN 1u
/* The name of the one exported entry point. */
#define CTQ_KERNEL_PLUGIN_ENTRY "ctq_kernel_plugin"

enum ctq_kernel_plugin_device {
	CTQ_KERNEL_PLUGIN_DEVICE_CPU = 1,  /* host memory, stream NULL */
	CTQ_KERNEL_PLUGIN_DEVICE_CUDA = 2, /* CUDA device memory, stream a cudaStream_t */
};

enum ctq_kernel_plugin_caps {
	/* quantize gives q and s_tok bit-identical to the rules above. */
	CTQ_KERNEL_PLUGIN_QUANT_EXACT = 1u << 0,
	/* gemm_w8a8 accumulates exactly in int32 and rounds its epilogue in
	 * the order above: y is bit-identical to the reference for the same
	 * q and s_tok. ctq checks y end to end (quantize, then gemm_w8a8), so
	 * it compares y bit for bit when QUANT_EXACT is set as well. */
	CTQ_KERNEL_PLUGIN_GEMM_EXACT = 1u << 1,
	/* ABI version 2, gemm_wna16: which layouts it serves (ctq probes only
	 * those) and whether its y is bit-identical to the rules above (its
	 * summation order included); without WNA16_EXACT it is judged by
	 * rel-L2 against the reference. */
	CTQ_KERNEL_PLUGIN_WNA16_INT4 = 1u << 2,   /* bits == 4 */
	CTQ_KERNEL_PLUGIN_WNA16_INT8 = 1u << 3,   /* bits == 8 */
	CTQ_KERNEL_PLUGIN_WNA16_GROUPS = 1u << 4, /* group_size > 0 (else per channel only) */
	CTQ_KERNEL_PLUGIN_WNA16_ASYM = 1u << 5,   /* zero points (else zero_packed NULL only) */
	CTQ_KERNEL_PLUGIN_WNA16_EXACT = 1u << 6,
};

struct ctq_kernel_plugin {
	uint32_t abi_version; /* CTQ_KERNEL_PLUGIN_ABI_VERSION this table implements */
	uint32_t struct_size; /* sizeof(struct ctq_kernel_plugin) as the plug-in compiled it */
	/* 1 to 31 characters of [A-Za-z0-9_.+-]; names the implementation in
	 * ctq's output and CSV (backend / impl columns). */
	const char *name;
	int32_t device;       /* enum ctq_kernel_plugin_device */
	uint32_t caps;        /* enum ctq_kernel_plugin_caps bits */

	/* Optional (NULL: nothing to do): called once after loading, before
	 * any other function; a CUDA plug-in finds the device current. */
	int (*init)(char *msg, size_t msg_cap);
	/* Optional: called once before dlclose when init succeeded (or is NULL). */
	void (*fini)(void);

	/* W8A8 (required in version 1; in version 2 with gemm_w8a8, or
	 * neither). x (M, K) bf16 -> q (M, K) int8, s_tok (M) f32. */
	int (*quantize)(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *s_tok,
			void *stream, char *msg, size_t msg_cap);

	/* Optional (NULL: no workspace): bytes of scratch gemm_w8a8 needs for
	 * (M, N, K); ctq allocates that much device memory and passes it. */
	size_t (*gemm_workspace_bytes)(int64_t M, int64_t N, int64_t K);

	/* As quantize. q (M, K) int8, s_tok (M) f32, w (N, K) int8 (one row per
	 * output channel), s_ch (N) f32, bias (N) f32 or NULL -> y (M, N) bf16.
	 * ws: ws_bytes of scratch (NULL when gemm_workspace_bytes is NULL or
	 * returned 0). */
	int (*gemm_w8a8)(const int8_t *q, const float *s_tok, const int8_t *w, const float *s_ch,
			 const float *bias, int64_t M, int64_t N, int64_t K, uint16_t *y, void *ws,
			 size_t ws_bytes, void *stream, char *msg, size_t msg_cap);

	/* Optional (NULL: not provided). x (M, K) bf16, w (N, K) bf16, bias
	 * (N) f32 or NULL -> y (M, N) bf16, float accumulation: the BF16
	 * baseline a W8A8 kernel is compared with. */
	int (*gemm_bf16)(const uint16_t *x, const uint16_t *w, const float *bias, int64_t M,
			 int64_t N, int64_t K, uint16_t *y, void *stream, char *msg, size_t msg_cap);

	/* ---- ABI version 2 (absent from a version-1 table) ---- */

	/* Optional (NULL: not provided). x (M, K) bf16, w_packed (N,
	 * ceil(K / (32 / bits))) int32, scale (N, n_groups) f32, zero_packed
	 * (ceil(N / (32 / bits)), n_groups) int32 or NULL, bias (N) f32 or
	 * NULL -> y (M, N) bf16, by the weight-only rules above. ctq calls it
	 * only with bits, group sizes and zero points its capability bits
	 * declare; group_size is 0 (per channel) or a positive divisor of K. */
	int (*gemm_wna16)(const uint16_t *x, const int32_t *w_packed, const float *scale,
			  const int32_t *zero_packed, const float *bias, int64_t M, int64_t N,
			  int64_t K, int32_t bits, int64_t group_size, uint16_t *y, void *stream,
			  char *msg, size_t msg_cap);
};

/* The size of a version-1 table: everything before gemm_wna16. */
#define CTQ_KERNEL_PLUGIN_V1_SIZE offsetof(struct ctq_kernel_plugin, gemm_wna16)

/* The entry point's type (what dlsym(handle, CTQ_KERNEL_PLUGIN_ENTRY) is). */
typedef const struct ctq_kernel_plugin *(*ctq_kernel_plugin_entry_fn)(uint32_t abi_version);

#ifdef __cplusplus
}
#endif

#endif
