/* CUDA attention against the reference op on continuous-batching steps:
 * several sequences in one batch (fresh prefills, a prefill continuing at
 * position 50, decode tokens), so the tensor-core prefill kernel meets
 * tiles that straddle two sequences (its per-token path) as well as whole
 * runs, beside the split-key decode path. Outputs are BF16 on the GPU, f32
 * on the CPU: rel-L2 within 1e-2 over each token's output, every token. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/rng.h"
#include "backend/backend.h"

static struct ctq_backend gpu, ref;

static void setup(void)
{
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_cuda(&gpu, 0, &err), CTQ_OK, "no CUDA backend: %s", err.message);
	cr_assert_eq(ctq_backend_reference(&ref, &err), CTQ_OK, "%s", err.message);
}

static void teardown(void)
{
	ctq_backend_close(&gpu);
	ctq_backend_close(&ref);
}

static void *dev_copy(const void *src, size_t n)
{
	struct ctq_error err = {0};
	void *d = NULL;
	cr_assert_eq(gpu.ops->alloc(&gpu, n, &d, &err), CTQ_OK, "%s", err.message);
	if (src)
		cr_assert_eq(gpu.ops->upload(&gpu, d, src, n, &err), CTQ_OK, "%s", err.message);
	return d;
}

/* one sequence's share of a batch: n tokens of `slot` from position p0 */
struct run {
	int32_t slot, p0, n;
};

struct attn_case {
	int64_t heads, kv_heads, d, slots, max_len;
	float *kc_ref, *vc_ref;
	void *kc_gpu, *vc_gpu;
	struct ctq_rng rng;
};

/* One batch through both backends; every token's output compared. */
static void step(struct attn_case *c, const struct run *runs, int nruns, const char *what)
{
	struct ctq_error err = {0};
	int64_t T = 0;
	for (int i = 0; i < nruns; i++)
		T += runs[i].n;
	const int64_t heads = c->heads, kv = c->kv_heads, d = c->d;
	const int64_t ld = (heads + 2 * kv) * d;
	float *x = malloc((size_t)(T * ld) * sizeof(float));
	uint16_t *xb = malloc((size_t)(T * ld) * 2);
	int32_t *slot = malloc((size_t)T * 4), *pos = malloc((size_t)T * 4);
	for (int64_t i = 0; i < T * ld; i++) {
		xb[i] = ctq_f32_to_bf16((float)ctq_rng_normal(&c->rng));
		x[i] = ctq_bf16_to_f32(xb[i]);
	}
	int64_t t = 0;
	for (int i = 0; i < nruns; i++)
		for (int j = 0; j < runs[i].n; j++, t++) {
			slot[t] = runs[i].slot;
			pos[t] = runs[i].p0 + j;
		}
	const size_t out_elems = (size_t)(T * heads * d);
	float *out_ref = malloc(out_elems * sizeof(float));
	uint16_t *outb = malloc(out_elems * 2);
	cr_assert_eq(ref.ops->attention(&ref, x, x + heads * d, x + (heads + kv) * d, ld, c->kc_ref, c->vc_ref,
					slot, pos, NULL, NULL, T, heads, kv, d, c->max_len, out_ref, &err),
		     CTQ_OK, "%s", err.message);
	uint16_t *dx = dev_copy(xb, (size_t)(T * ld) * 2);
	void *dslot = dev_copy(slot, (size_t)T * 4), *dpos = dev_copy(pos, (size_t)T * 4);
	void *dout = dev_copy(NULL, out_elems * 2);
	/* one launch, then with the host layout (split into runs where the call
	 * would take the tensor-core kernel); storing the same keys again is a
	 * no-op, so both read the same caches */
	for (int split = 0; split < 2; split++) {
		cr_assert_eq(gpu.ops->attention(&gpu, dx, dx + heads * d, dx + (heads + kv) * d, ld, c->kc_gpu, c->vc_gpu,
						dslot, dpos, split ? slot : NULL, split ? pos : NULL, T, heads, kv, d,
						c->max_len, dout, &err),
			     CTQ_OK, "%s", err.message);
		cr_assert_eq(gpu.ops->download(&gpu, outb, dout, out_elems * 2, &err), CTQ_OK, "%s", err.message);
		double worst = 0.0;
		int64_t worst_t = -1;
		for (t = 0; t < T; t++) {
			double e = 0.0, n2 = 0.0;
			for (int64_t i = t * heads * d; i < (t + 1) * heads * d; i++) {
				const double g = ctq_bf16_to_f32(outb[i]), r = out_ref[i];
				e += (g - r) * (g - r);
				n2 += r * r;
			}
			const double rel = sqrt(e / n2);
			if (!(rel <= worst)) {
				worst = rel;
				worst_t = t;
			}
	}
	cr_log_info("attention %s%s (T=%lld heads=%lld kv=%lld d=%lld): worst token rel-L2 %.3e (token %lld: slot %d, position %d)",
		    what, split ? ", split into runs" : "", (long long)T, (long long)heads, (long long)kv,
		    (long long)d, worst, (long long)worst_t, worst_t >= 0 ? slot[worst_t] : -1,
		    worst_t >= 0 ? pos[worst_t] : -1);
	cr_expect(worst < 1e-2, "%s%s: token %lld (slot %d, position %d) rel-L2 %.3e", what,
		  split ? " (split into runs)" : "", (long long)worst_t, slot[worst_t], pos[worst_t], worst);
	}
	gpu.ops->free(&gpu, dx);
	gpu.ops->free(&gpu, dslot);
	gpu.ops->free(&gpu, dpos);
	gpu.ops->free(&gpu, dout);
	free(x), free(xb), free(slot), free(pos), free(out_ref), free(outb);
}

static void batches(int64_t heads, int64_t kv_heads, int64_t d)
{
	struct attn_case c = {.heads = heads, .kv_heads = kv_heads, .d = d, .slots = 4, .max_len = 300};
	ctq_rng_seed(&c.rng, (uint64_t)(heads * 1000 + kv_heads * 10 + d));
	const size_t cache = (size_t)(c.slots * c.max_len * kv_heads * d);
	c.kc_ref = calloc(cache, sizeof(float));
	c.vc_ref = calloc(cache, sizeof(float));
	c.kc_gpu = dev_copy(NULL, cache * 2);
	c.vc_gpu = dev_copy(NULL, cache * 2);
	/* 1: two fresh prefills in one batch (a tile spans the seam) */
	const struct run b1[] = {{1, 0, 50}, {3, 0, 30}};
	step(&c, b1, 2, "two prefills");
	/* 2: a new prefill, a prefill continuing at 50, a decode token, a short one */
	const struct run b2[] = {{0, 0, 100}, {1, 50, 80}, {3, 30, 1}, {2, 0, 7}};
	step(&c, b2, 4, "mixed step");
	/* 3: decode tokens of every slot (the split-key path) */
	const struct run b3[] = {{0, 100, 1}, {1, 130, 1}, {2, 7, 1}, {3, 31, 1}};
	step(&c, b3, 4, "decode step");
	/* 4: one long prefill of a single sequence (whole runs only) */
	const struct run b4[] = {{2, 8, 257}};
	step(&c, b4, 1, "long continuation");
	gpu.ops->free(&gpu, c.kc_gpu);
	gpu.ops->free(&gpu, c.vc_gpu);
	free(c.kc_ref), free(c.vc_ref);
}

Test(attention, batches_qwen3_heads, .init = setup, .fini = teardown, .timeout = 300)
{
	batches(32, 8, 128); /* G = 4 */
}

Test(attention, batches_group_of_8_and_1, .init = setup, .fini = teardown, .timeout = 300)
{
	batches(16, 2, 128); /* G = 8 */
	batches(8, 8, 64);   /* G = 1 */
}

Test(attention, batches_group_of_2_d64, .init = setup, .fini = teardown, .timeout = 300)
{
	batches(16, 8, 64); /* G = 2 */
}

Test(attention, batches_other_heads, .init = setup, .fini = teardown, .timeout = 300)
{
	batches(9, 3, 64);  /* G = 3: split-key kernel for every size */
	batches(8, 4, 80);  /* d = 80: the per-head kernel */
}

/* qk_norm_rope_store (the KV store inside the q/k norm and RoPE kernel)
 * against qk_norm_rope then attention's own store: the same bits in the
 * qkv rows, in both caches and in the attention output, on a mixed batch
 * (prefills, a continuation, decode tokens) of Qwen3-4B heads and of a
 * group of 2 with d = 64. */
static void fused_store_case(int64_t heads, int64_t kv, int64_t d)
{
	struct ctq_error err = {0};
	struct ctq_rng rng;
	ctq_rng_seed(&rng, (uint64_t)(heads * 7 + kv * 3 + d));
	const int64_t slots = 3, max_len = 200, ld = (heads + 2 * kv) * d;
	const struct run runs[] = {{0, 0, 70}, {1, 40, 20}, {2, 9, 1}, {0, 70, 1}};
	int64_t T = 0;
	for (size_t i = 0; i < sizeof runs / sizeof *runs; i++)
		T += runs[i].n;
	uint16_t *xb = malloc((size_t)(T * ld) * 2);
	int32_t *slot = malloc((size_t)T * 4), *pos = malloc((size_t)T * 4);
	for (int64_t i = 0; i < T * ld; i++)
		xb[i] = ctq_f32_to_bf16((float)ctq_rng_normal(&rng));
	int64_t t = 0;
	for (size_t i = 0; i < sizeof runs / sizeof *runs; i++)
		for (int j = 0; j < runs[i].n; j++, t++) {
			slot[t] = runs[i].slot;
			pos[t] = runs[i].p0 + j;
		}
	float *wq = malloc((size_t)d * 4), *wk = malloc((size_t)d * 4), *inv = malloc((size_t)d / 2 * 4);
	for (int64_t i = 0; i < d; i++) {
		wq[i] = 1.0f + 0.1f * (float)ctq_rng_normal(&rng);
		wk[i] = 1.0f + 0.1f * (float)ctq_rng_normal(&rng);
	}
	for (int64_t i = 0; i < d / 2; i++)
		inv[i] = (float)pow(1e6, -2.0 * (double)i / (double)d);
	void *dwq = dev_copy(wq, (size_t)d * 4), *dwk = dev_copy(wk, (size_t)d * 4);
	void *dinv = dev_copy(inv, (size_t)d / 2 * 4);
	void *dslot = dev_copy(slot, (size_t)T * 4), *dpos = dev_copy(pos, (size_t)T * 4);
	const size_t cache = (size_t)(slots * max_len * kv * d) * 2, xbytes = (size_t)(T * ld) * 2;
	const size_t obytes = (size_t)(T * heads * d) * 2;
	uint8_t *host[2][4]; /* [path][x, kc, vc, out] */
	for (int path = 0; path < 2; path++) {
		uint16_t *dx = dev_copy(xb, xbytes);
		/* the caches start as the same garbage, so a missed store shows */
		uint8_t *junk = malloc(cache);
		for (size_t i = 0; i < cache; i++)
			junk[i] = (uint8_t)(i * 131u + 7u);
		void *kc = dev_copy(junk, cache), *vc = dev_copy(junk, cache), *out = dev_copy(NULL, obytes);
		free(junk);
		if (path == 0) {
			cr_assert_eq(gpu.ops->qk_norm_rope(&gpu, dx, ld, T, heads, kv, d, dwq, dwk, 1e-6f, dpos,
							   dinv, &err), CTQ_OK, "%s", err.message);
			cr_assert_eq(gpu.ops->attention(&gpu, dx, dx + heads * d, dx + (heads + kv) * d, ld, kc, vc,
							dslot, dpos, slot, pos, T, heads, kv, d, max_len, out, &err),
				     CTQ_OK, "%s", err.message);
		} else {
			cr_assert(gpu.ops->qk_norm_rope_store, "the CUDA backend offers qk_norm_rope_store");
			cr_assert_eq(gpu.ops->qk_norm_rope_store(&gpu, dx, ld, T, heads, kv, d, dwq, dwk, 1e-6f,
								 dpos, dinv, kc, vc, dslot, max_len, &err),
				     CTQ_OK, "%s", err.message);
			cr_assert_eq(gpu.ops->attention(&gpu, dx, NULL, NULL, ld, kc, vc, dslot, dpos, slot, pos,
							T, heads, kv, d, max_len, out, &err),
				     CTQ_OK, "%s", err.message);
		}
		const void *src[4] = {dx, kc, vc, out};
		const size_t n[4] = {xbytes, cache, cache, obytes};
		for (int i = 0; i < 4; i++) {
			host[path][i] = malloc(n[i]);
			cr_assert_eq(gpu.ops->download(&gpu, host[path][i], src[i], n[i], &err), CTQ_OK, "%s",
				     err.message);
		}
		gpu.ops->free(&gpu, dx);
		gpu.ops->free(&gpu, kc);
		gpu.ops->free(&gpu, vc);
		gpu.ops->free(&gpu, out);
	}
	static const char *what[4] = {"qkv rows", "k cache", "v cache", "attention output"};
	const size_t n[4] = {xbytes, cache, cache, obytes};
	for (int i = 0; i < 4; i++) {
		cr_expect(!memcmp(host[0][i], host[1][i], n[i]), "heads %lld/%lld d %lld: %s differ",
			  (long long)heads, (long long)kv, (long long)d, what[i]);
		free(host[0][i]), free(host[1][i]);
	}
	gpu.ops->free(&gpu, dwq), gpu.ops->free(&gpu, dwk), gpu.ops->free(&gpu, dinv);
	gpu.ops->free(&gpu, dslot), gpu.ops->free(&gpu, dpos);
	free(xb), free(slot), free(pos), free(wq), free(wk), free(inv);
}

Test(attention, qk_norm_rope_store_equals_the_two_ops, .init = setup, .fini = teardown, .timeout = 120)
{
	fused_store_case(32, 8, 128);
	fused_store_case(4, 2, 64);
}
