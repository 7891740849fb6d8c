/* bench_ops: device time per launch of the model-op kernels at the
 * Qwen3-4B shapes (H 2560, 32 heads, 8 KV heads, head_dim 128, I 9728),
 * for kernel work on a GPU host: each op is captured 100 times into a CUDA
 * graph (as the runner's decode graphs replay it), the graph replayed 20
 * times, per-launch median and min printed. Not a test, not a product
 * command; timings belong to the H200 runs (tools/h200-session.sh ops).
 * usage: build/tools/bench_ops [filter-substring] */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/rng.h"
#include "kernels/kernels.h"

#define REPS 100
#define SAMPLES 20

#define CK(x)                                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (x);                                                          \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "bench_ops: %s: %s\n", #x, cudaGetErrorString(e_));    \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

enum { H = 2560, NH = 32, NKV = 8, HD = 128, I = 9728, MAXLEN = 8192 + 64, LD = (NH + 2 * NKV) * HD };

static cudaStream_t st;
static uint16_t *x, *y, *qkv, *kc, *vc, *att, *gu;
static float *w, *scratch, *s, *inv_freq;
static int8_t *q8;
static int32_t *slot, *pos;
static int sms;

typedef int (*op_fn)(int64_t arg);

static int fail(const char *what, struct ctq_error *e)
{
	fprintf(stderr, "bench_ops: %s: %s\n", what, e->message);
	return 1;
}

/* positions 0..T-1 (prefill) or ctx-1 (decode, T = 1) */
static void set_positions(int64_t T, int64_t first)
{
	int32_t *p = malloc((size_t)T * 4), *sl = calloc((size_t)T, 4);
	for (int64_t t = 0; t < T; t++)
		p[t] = (int32_t)(first + t);
	CK(cudaMemcpy(pos, p, (size_t)T * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(slot, sl, (size_t)T * 4, cudaMemcpyHostToDevice));
	free(p), free(sl);
}

static int op_attention(int64_t T)
{
	struct ctq_error e = {0};
	return ctq_attention_launch(qkv, qkv + NH * HD, qkv + (NH + NKV) * HD, LD, kc, vc, slot, pos, NULL, NULL, T, NH, NKV,
				    HD, MAXLEN, att, scratch, 16u << 20, sms, st, &e)
		       ? fail("attention", &e)
		       : 0;
}

static int op_rmsnorm(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_rmsnorm_launch(x, H, M, 1, w, H, 1e-6f, y, H, st, &e) ? fail("rmsnorm", &e) : 0;
}

static int op_qknorm(int64_t T)
{
	struct ctq_error e = {0};
	return ctq_rmsnorm_launch(qkv, LD, T * NH, NH, w, HD, 1e-6f, qkv, LD, st, &e) ? fail("qk norm", &e) : 0;
}

static int op_add_rmsnorm(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_add_rmsnorm_launch(x, y, M, w, H, 1e-6f, y, st, &e) ? fail("add_rmsnorm", &e) : 0;
}

static int op_add_rmsnorm_quant(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_add_rmsnorm_quant_launch(x, y, M, w, H, 1e-6f, q8, s, st, &e) ? fail("add_rmsnorm_quant", &e)
										     : 0;
}

static int op_qk_norm_rope(int64_t T)
{
	struct ctq_error e = {0};
	return ctq_qk_norm_rope_launch(qkv, LD, T, NH, NKV, HD, w, w, 1e-6f, pos, inv_freq, st, &e)
		       ? fail("qk_norm_rope", &e)
		       : 0;
}

static int op_rmsnorm_quant(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_rmsnorm_quant_launch(x, M, w, H, 1e-6f, q8, s, st, &e) ? fail("rmsnorm_quant", &e) : 0;
}

static int op_silu_mul(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_silu_mul_launch(gu, M, I, y, st, &e) ? fail("silu_mul", &e) : 0;
}

static int op_silu_mul_quant(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_silu_mul_quant_launch(gu, M, I, q8, s, st, &e) ? fail("silu_mul_quant", &e) : 0;
}

static int op_quantize_h(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_quantize_launch(x, M, H, q8, s, st, &e) ? fail("quantize", &e) : 0;
}

static int op_quantize_o(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_quantize_launch(att, M, NH * HD, q8, s, st, &e) ? fail("quantize", &e) : 0;
}

static int op_quantize_i(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_quantize_launch(gu, M, I, q8, s, st, &e) ? fail("quantize", &e) : 0;
}

static int op_rope(int64_t T)
{
	struct ctq_error e = {0};
	return ctq_rope_launch(qkv, LD, pos, T, NH + NKV, HD, inv_freq, st, &e) ? fail("rope", &e) : 0;
}

static int op_add(int64_t M)
{
	struct ctq_error e = {0};
	return ctq_add_launch(x, y, M * H, st, &e) ? fail("add", &e) : 0;
}

/* BF16 decode linear (M = 1) with the weights rotated through a 1 GiB pool,
 * so that no launch finds its matrix in the 50 MB L2 */
static uint16_t *wpool;
#define WPOOL_ELEMS ((size_t)512 << 20)
static const int64_t gemv_shape[5][2] = {{6144, 2560}, {2560, 4096}, {19456, 2560}, {2560, 9728}, {151936, 2560}};

static int op_gemv_bf16(int64_t shape)
{
	static size_t off;
	struct ctq_error e = {0};
	const int64_t N = gemv_shape[shape][0], K = gemv_shape[shape][1];
	const size_t n = (size_t)(N * K);
	if (off + n > WPOOL_ELEMS)
		off = 0;
	const int rc = ctq_gemv_bf16_launch(x, wpool + off, 1, N, K, y, st, &e) ? fail("gemv_bf16", &e) : 0;
	off += (n + 127) & ~(size_t)127;
	return rc;
}

static int cmp_f(const void *a, const void *b)
{
	const float x1 = *(const float *)a, x2 = *(const float *)b;
	return (x1 > x2) - (x1 < x2);
}

static void bench(const char *filter, const char *name, op_fn f, int64_t arg, int64_t pos_first, int64_t pos_T)
{
	if (filter && !strstr(name, filter))
		return;
	set_positions(pos_T, pos_first);
	/* fill the cache up to the context once (the decode rows read it) */
	if (pos_first > 0) {
		set_positions(pos_first, 0);
		for (int64_t t0 = 0; t0 < pos_first; t0 += 1024) {
			struct ctq_error e = {0};
			int64_t n = pos_first - t0 < 1024 ? pos_first - t0 : 1024;
			set_positions(n, t0);
			if (ctq_attention_launch(qkv, qkv + NH * HD, qkv + (NH + NKV) * HD, LD, kc, vc, slot, pos, NULL, NULL, n,
						 NH, NKV, HD, MAXLEN, att, scratch, 16u << 20, sms, st, &e))
				exit(fail("cache fill", &e));
		}
		set_positions(pos_T, pos_first);
	}
	CK(cudaStreamSynchronize(st));
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
	for (int i = 0; i < REPS; i++)
		if (f(arg))
			exit(1);
	CK(cudaStreamEndCapture(st, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	float t[SAMPLES];
	for (int i = 0; i < 2; i++)
		CK(cudaGraphLaunch(ge, st));
	for (int i = 0; i < SAMPLES; i++) {
		CK(cudaEventRecord(a, st));
		CK(cudaGraphLaunch(ge, st));
		CK(cudaEventRecord(b, st));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&t[i], a, b));
		t[i] *= 1000.0f / REPS;
	}
	qsort(t, SAMPLES, sizeof(float), cmp_f);
	printf("%-40s %9.2f us median %9.2f us min\n", name, t[SAMPLES / 2], t[0]);
	fflush(stdout);
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
}

static void *dev_random(size_t n_bf16, uint64_t seed)
{
	uint16_t *h = malloc(n_bf16 * 2);
	struct ctq_rng r;
	ctq_rng_seed(&r, seed);
	for (size_t i = 0; i < n_bf16; i++)
		h[i] = ctq_f32_to_bf16((float)ctq_rng_normal(&r));
	void *d;
	CK(cudaMalloc(&d, n_bf16 * 2));
	CK(cudaMemcpy(d, h, n_bf16 * 2, cudaMemcpyHostToDevice));
	free(h);
	return d;
}

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	struct cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	sms = prop.multiProcessorCount;
	printf("bench_ops on %s (%d SMs); %d launches per graph, median of %d replays\n", prop.name, sms, REPS,
	       SAMPLES);
	CK(cudaStreamCreate(&st));
	const size_t tokens = 8192;
	x = dev_random(tokens * H, 1);
	y = dev_random(tokens * H, 2);
	qkv = dev_random(tokens * LD, 3);
	gu = dev_random(tokens * 2 * I, 4);
	att = dev_random(tokens * NH * HD, 5);
	CK(cudaMalloc((void **)&kc, (size_t)MAXLEN * NKV * HD * 2));
	CK(cudaMalloc((void **)&vc, (size_t)MAXLEN * NKV * HD * 2));
	CK(cudaMalloc((void **)&scratch, 16u << 20));
	CK(cudaMalloc((void **)&q8, tokens * 2 * I));
	CK(cudaMalloc((void **)&s, tokens * 4));
	CK(cudaMalloc((void **)&slot, tokens * 4));
	CK(cudaMalloc((void **)&pos, tokens * 4));
	float hw[I], fr[HD / 2];
	for (int i = 0; i < I; i++)
		hw[i] = 1.0f + 0.001f * (float)(i % 17);
	for (int i = 0; i < HD / 2; i++)
		fr[i] = 1.0f / powf(1e6f, (float)(2 * i) / HD);
	CK(cudaMalloc((void **)&w, sizeof hw));
	CK(cudaMalloc((void **)&inv_freq, sizeof fr));
	CK(cudaMemcpy(w, hw, sizeof hw, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(inv_freq, fr, sizeof fr, cudaMemcpyHostToDevice));

	bench(filter, "attention decode ctx 128", op_attention, 1, 127, 1);
	bench(filter, "attention decode ctx 1024", op_attention, 1, 1023, 1);
	bench(filter, "attention decode ctx 4096", op_attention, 1, 4095, 1);
	bench(filter, "attention prefill T=128", op_attention, 128, 0, 128);
	bench(filter, "attention prefill T=2048", op_attention, 2048, 0, 2048);
	bench(filter, "attention prefill T=8192", op_attention, 8192, 0, 8192);
	bench(filter, "rmsnorm M=1", op_rmsnorm, 1, 0, 1);
	bench(filter, "rmsnorm M=2048", op_rmsnorm, 2048, 0, 1);
	bench(filter, "add_rmsnorm M=1", op_add_rmsnorm, 1, 0, 1);
	bench(filter, "add_rmsnorm M=2048", op_add_rmsnorm, 2048, 0, 1);
	bench(filter, "add_rmsnorm_quant M=1", op_add_rmsnorm_quant, 1, 0, 1);
	bench(filter, "add_rmsnorm_quant M=2048", op_add_rmsnorm_quant, 2048, 0, 1);
	bench(filter, "qk_norm_rope T=1", op_qk_norm_rope, 1, 100, 1);
	bench(filter, "qk_norm_rope T=2048", op_qk_norm_rope, 2048, 0, 2048);
	bench(filter, "qk norm T=1", op_qknorm, 1, 0, 1);
	bench(filter, "rmsnorm_quant M=1", op_rmsnorm_quant, 1, 0, 1);
	bench(filter, "rmsnorm_quant M=2048", op_rmsnorm_quant, 2048, 0, 1);
	bench(filter, "silu_mul M=1", op_silu_mul, 1, 0, 1);
	bench(filter, "silu_mul_quant M=1", op_silu_mul_quant, 1, 0, 1);
	bench(filter, "silu_mul_quant M=2048", op_silu_mul_quant, 2048, 0, 1);
	bench(filter, "quantize M=1 K=2560", op_quantize_h, 1, 0, 1);
	bench(filter, "quantize M=1 K=4096", op_quantize_o, 1, 0, 1);
	bench(filter, "quantize M=1 K=9728", op_quantize_i, 1, 0, 1);
	bench(filter, "quantize M=8192 K=2560", op_quantize_h, 8192, 0, 1);
	bench(filter, "quantize M=8192 K=9728", op_quantize_i, 8192, 0, 1);
	bench(filter, "rope T=1", op_rope, 1, 100, 1);
	CK(cudaMalloc((void **)&wpool, WPOOL_ELEMS * 2));
	CK(cudaMemset(wpool, 0x3c, WPOOL_ELEMS * 2));
	bench(filter, "gemv_bf16 M=1 qkv 2560->6144", op_gemv_bf16, 0, 0, 1);
	bench(filter, "gemv_bf16 M=1 o 4096->2560", op_gemv_bf16, 1, 0, 1);
	bench(filter, "gemv_bf16 M=1 gate_up 2560->19456", op_gemv_bf16, 2, 0, 1);
	bench(filter, "gemv_bf16 M=1 down 9728->2560", op_gemv_bf16, 3, 0, 1);
	bench(filter, "gemv_bf16 M=1 lm_head 2560->151936", op_gemv_bf16, 4, 0, 1);
	bench(filter, "add M=1", op_add, 1, 0, 1);
	bench(filter, "add M=2048", op_add, 2048, 0, 1);
	return 0;
}
