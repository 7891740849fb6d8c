/* ctq reference attention (the CPU backend's attention op, backend/backend.h):
 * the definition, one token, head and key at a time (the oracle, kept as
 * ctq_refm_attention_scalar), and a fast path with the same bits, which
 * ctq_refm_attention takes where the CPU has AVX2 (ctq_ref_simd_level).
 *
 * The definition, per token t and head h over the keys j <= pos[t]:
 *   s_j = (sum over i in order of q[i] * k_j[i]) * scale    (f32, from 0)
 *   m = max_j s_j;  p_j = expf(s_j - m);  sum = sum over j in order of p_j (f64)
 *   out[i] = sum over j in order of (float)(p_j / sum) * v_j[i]  (f32, from 0)
 * every product and sum rounded on its own (the build forbids contraction).
 *
 * Why the fast path has the same bits. A vector lane is one score (a key j)
 * or one output element (an i), never a partial sum of one: the scores run
 * 8 keys a vector over a transposed copy of the keys (each lane sums its
 * own products in i order), the weighted sum of values runs 8 elements i a
 * vector (each lane adds its own products in j order), 16 with AVX-512 at
 * level 2; the maximum is order-free (max_not_nan), expf and the f64 sum
 * stay the scalar loops. Work items (a kv head and up to
 * TCHUNK consecutive tokens of one slot) are spread over threads, and each
 * output is computed whole by one thread, so the thread count changes
 * nothing either. */
#include "reference/ref_model_ops.h"
#include "core/arena.h"
#include "reference/ref_ops.h"
#include "reference/ref_threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CTQ_REF_X86 1
#include <immintrin.h>
#endif

/* Stores each token's k and v (T, kv_heads * d), rows ld apart, into the
 * caches (slots, max_len, kv_heads, d) at (slot[t], pos[t]). */
static enum ctq_status store_kv(const float *kf, const float *vf, int64_t ld, float *kc, float *vc,
				const int32_t *slot, const int32_t *pos, int64_t T, int64_t row,
				int64_t max_len, struct ctq_error *err)
{
	for (int64_t t = 0; t < T; t++) {
		if (pos[t] < 0 || pos[t] >= max_len)
			return ctq_error_set(err, CTQ_ERR_USAGE, "attention",
					     "position %d outside the cache of %lld", pos[t],
					     (long long)max_len);
		float *kd = kc + ((int64_t)slot[t] * max_len + pos[t]) * row;
		float *vd = vc + ((int64_t)slot[t] * max_len + pos[t]) * row;
		memcpy(kd, kf + t * ld, (size_t)row * sizeof *kd);
		memcpy(vd, vf + t * ld, (size_t)row * sizeof *vd);
	}
	return CTQ_OK;
}

enum ctq_status ctq_refm_attention_scalar(struct ctq_backend *b, const void *q, const void *k,
					  const void *v, int64_t ld, void *k_cache, void *v_cache,
					  const int32_t *slot, const int32_t *pos, int64_t T,
					  int64_t heads, int64_t kv_heads, int64_t d, int64_t max_len,
					  void *out, struct ctq_error *err)
{
	(void)b;
	const float *qf = q;
	float *kc = k_cache, *vc = v_cache, *o = out;
	const int64_t row = kv_heads * d;
	enum ctq_status st = store_kv(k, v, ld, kc, vc, slot, pos, T, row, max_len, err);
	if (st)
		return st;
	const float scale = 1.0f / sqrtf((float)d);
	const int64_t group = heads / kv_heads;
	float *p = ctq_malloc((size_t)max_len * sizeof *p + 4);
	if (!p)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "attention", "out of memory");
	for (int64_t t = 0; t < T; t++) {
		const int64_t n = pos[t] + 1;
		const float *kb = kc + (int64_t)slot[t] * max_len * row;
		const float *vb = vc + (int64_t)slot[t] * max_len * row;
		for (int64_t h = 0; h < heads; h++) {
			const float *qv = qf + t * ld + h * d;
			const int64_t kh = h / group;
			float mx = -INFINITY;
			for (int64_t j = 0; j < n; j++) {
				const float *kv = kb + j * row + kh * d;
				float sc = 0;
				for (int64_t i = 0; i < d; i++)
					sc += qv[i] * kv[i];
				p[j] = sc * scale;
				if (p[j] > mx)
					mx = p[j];
			}
			double sum = 0;
			for (int64_t j = 0; j < n; j++) {
				p[j] = expf(p[j] - mx);
				sum += p[j];
			}
			float *ov = o + (t * heads + h) * d;
			for (int64_t i = 0; i < d; i++)
				ov[i] = 0;
			for (int64_t j = 0; j < n; j++) {
				const float *vv = vb + j * row + kh * d;
				float wgt = (float)(p[j] / sum);
				for (int64_t i = 0; i < d; i++)
					ov[i] += wgt * vv[i];
			}
		}
	}
	free(p);
	return CTQ_OK;
}

#ifdef CTQ_REF_X86
/* Tokens per work item: the transposed keys are copied once per item, so
 * the copy is about 1 / (2 TCHUNK group) of the item's arithmetic. */
#define TCHUNK 32

/* One work item: kv head kh for tokens [t0, t1) of one slot. */
struct att_item {
	int64_t t0, t1, kh;
};

struct att_args {
	const float *q, *kc, *vc;
	const int32_t *slot, *pos;
	int64_t ld, heads, kv_heads, d, max_len, ldp;
	float scale;
	bool wide; /* AVX-512 (level 2) */
	float *out;
};

#define AVX2 __attribute__((target("avx2")))

/* p[j] = (sum over i in order of qv[i] * kt[i][j]) * scale for j < n8, a
 * multiple of 8 (lanes past the keys read the panel's zero padding and are
 * not used). kt (d, ldp) the keys transposed. */
AVX2 static void scores_avx2(const float *qv, const float *kt, int64_t ldp, int64_t d, int64_t n8,
			     float scale, float *p)
{
	const __m256 vscale = _mm256_set1_ps(scale);
	int64_t j = 0;
	for (; j + 32 <= n8; j += 32) {
		__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
		for (int64_t i = 0; i < d; i++) {
			const __m256 a = _mm256_set1_ps(qv[i]);
			const float *r = kt + i * ldp + j;
			s0 = _mm256_add_ps(s0, _mm256_mul_ps(a, _mm256_loadu_ps(r)));
			s1 = _mm256_add_ps(s1, _mm256_mul_ps(a, _mm256_loadu_ps(r + 8)));
			s2 = _mm256_add_ps(s2, _mm256_mul_ps(a, _mm256_loadu_ps(r + 16)));
			s3 = _mm256_add_ps(s3, _mm256_mul_ps(a, _mm256_loadu_ps(r + 24)));
		}
		_mm256_storeu_ps(p + j, _mm256_mul_ps(s0, vscale));
		_mm256_storeu_ps(p + j + 8, _mm256_mul_ps(s1, vscale));
		_mm256_storeu_ps(p + j + 16, _mm256_mul_ps(s2, vscale));
		_mm256_storeu_ps(p + j + 24, _mm256_mul_ps(s3, vscale));
	}
	for (; j < n8; j += 8) {
		__m256 s0 = _mm256_setzero_ps();
		for (int64_t i = 0; i < d; i++)
			s0 = _mm256_add_ps(s0, _mm256_mul_ps(_mm256_set1_ps(qv[i]),
							     _mm256_loadu_ps(kt + i * ldp + j)));
		_mm256_storeu_ps(p + j, _mm256_mul_ps(s0, vscale));
	}
}

/* ov[i] = sum over j < n in order of wg[j] * vb[j * row + i], for i < d. */
AVX2 static void weighted_values_avx2(const float *wg, const float *vb, int64_t row, int64_t d,
				      int64_t n, float *ov)
{
	int64_t i = 0;
	for (; i + 32 <= d; i += 32) {
		__m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
		for (int64_t j = 0; j < n; j++) {
			const __m256 w = _mm256_set1_ps(wg[j]);
			const float *r = vb + j * row + i;
			o0 = _mm256_add_ps(o0, _mm256_mul_ps(w, _mm256_loadu_ps(r)));
			o1 = _mm256_add_ps(o1, _mm256_mul_ps(w, _mm256_loadu_ps(r + 8)));
			o2 = _mm256_add_ps(o2, _mm256_mul_ps(w, _mm256_loadu_ps(r + 16)));
			o3 = _mm256_add_ps(o3, _mm256_mul_ps(w, _mm256_loadu_ps(r + 24)));
		}
		_mm256_storeu_ps(ov + i, o0);
		_mm256_storeu_ps(ov + i + 8, o1);
		_mm256_storeu_ps(ov + i + 16, o2);
		_mm256_storeu_ps(ov + i + 24, o3);
	}
	for (; i + 8 <= d; i += 8) {
		__m256 o0 = _mm256_setzero_ps();
		for (int64_t j = 0; j < n; j++)
			o0 = _mm256_add_ps(o0, _mm256_mul_ps(_mm256_set1_ps(wg[j]),
							     _mm256_loadu_ps(vb + j * row + i)));
		_mm256_storeu_ps(ov + i, o0);
	}
	for (; i < d; i++) {
		float o = 0;
		for (int64_t j = 0; j < n; j++)
			o += wg[j] * vb[j * row + i];
		ov[i] = o;
	}
}

#define AVX512 __attribute__((target("avx512f")))

/* scores_avx2 with 16 keys a vector, n16 a multiple of 16. */
AVX512 static void scores_avx512(const float *qv, const float *kt, int64_t ldp, int64_t d, int64_t n16,
				 float scale, float *p)
{
	const __m512 vscale = _mm512_set1_ps(scale);
	int64_t j = 0;
	for (; j + 64 <= n16; j += 64) {
		__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
		for (int64_t i = 0; i < d; i++) {
			const __m512 a = _mm512_set1_ps(qv[i]);
			const float *r = kt + i * ldp + j;
			s0 = _mm512_add_ps(s0, _mm512_mul_ps(a, _mm512_loadu_ps(r)));
			s1 = _mm512_add_ps(s1, _mm512_mul_ps(a, _mm512_loadu_ps(r + 16)));
			s2 = _mm512_add_ps(s2, _mm512_mul_ps(a, _mm512_loadu_ps(r + 32)));
			s3 = _mm512_add_ps(s3, _mm512_mul_ps(a, _mm512_loadu_ps(r + 48)));
		}
		_mm512_storeu_ps(p + j, _mm512_mul_ps(s0, vscale));
		_mm512_storeu_ps(p + j + 16, _mm512_mul_ps(s1, vscale));
		_mm512_storeu_ps(p + j + 32, _mm512_mul_ps(s2, vscale));
		_mm512_storeu_ps(p + j + 48, _mm512_mul_ps(s3, vscale));
	}
	for (; j < n16; j += 16) {
		__m512 s0 = _mm512_setzero_ps();
		for (int64_t i = 0; i < d; i++)
			s0 = _mm512_add_ps(s0, _mm512_mul_ps(_mm512_set1_ps(qv[i]),
							     _mm512_loadu_ps(kt + i * ldp + j)));
		_mm512_storeu_ps(p + j, _mm512_mul_ps(s0, vscale));
	}
}

/* weighted_values_avx2 with 16 elements a vector, the last d % 16 left to
 * weighted_values_avx2. */
AVX512 static void weighted_values_avx512(const float *wg, const float *vb, int64_t row, int64_t d,
					  int64_t n, float *ov)
{
	int64_t i = 0;
	for (; i + 64 <= d; i += 64) {
		__m512 o0 = _mm512_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
		for (int64_t j = 0; j < n; j++) {
			const __m512 w = _mm512_set1_ps(wg[j]);
			const float *r = vb + j * row + i;
			o0 = _mm512_add_ps(o0, _mm512_mul_ps(w, _mm512_loadu_ps(r)));
			o1 = _mm512_add_ps(o1, _mm512_mul_ps(w, _mm512_loadu_ps(r + 16)));
			o2 = _mm512_add_ps(o2, _mm512_mul_ps(w, _mm512_loadu_ps(r + 32)));
			o3 = _mm512_add_ps(o3, _mm512_mul_ps(w, _mm512_loadu_ps(r + 48)));
		}
		_mm512_storeu_ps(ov + i, o0);
		_mm512_storeu_ps(ov + i + 16, o1);
		_mm512_storeu_ps(ov + i + 32, o2);
		_mm512_storeu_ps(ov + i + 48, o3);
	}
	for (; i + 16 <= d; i += 16) {
		__m512 o0 = _mm512_setzero_ps();
		for (int64_t j = 0; j < n; j++)
			o0 = _mm512_add_ps(o0, _mm512_mul_ps(_mm512_set1_ps(wg[j]),
							     _mm512_loadu_ps(vb + j * row + i)));
		_mm512_storeu_ps(ov + i, o0);
	}
	if (i < d)
		weighted_values_avx2(wg, vb + i, row, d - i, n, ov + i);
}

/* The largest of p[0 .. n - 1] that is not NaN (-Inf when none), as the
 * definition's loop "if (p[j] > mx) mx = p[j]" finds it: vmaxps(p, mx)
 * is that comparison lane by lane (a NaN p keeps mx), and the maximum of
 * a set does not depend on the order it is taken in, up to the sign of a
 * zero maximum, which changes nothing after it (p - (+0) and p - (-0)
 * differ only for p = -0, and expf gives 1 for either zero). */
AVX2 static float max_not_nan(const float *p, int64_t n)
{
	__m256 m = _mm256_set1_ps(-INFINITY);
	int64_t j = 0;
	for (; j + 8 <= n; j += 8)
		m = _mm256_max_ps(_mm256_loadu_ps(p + j), m);
	float lanes[8], mx = -INFINITY;
	_mm256_storeu_ps(lanes, m);
	for (int l = 0; l < 8; l++)
		if (lanes[l] > mx)
			mx = lanes[l];
	for (; j < n; j++)
		if (p[j] > mx)
			mx = p[j];
	return mx;
}

/* One item: the keys of its slot and kv head up to its last token's
 * position transposed into scratch (d, ldp), zero-padded to a multiple of
 * 16, then each token's heads of the group. scratch: d * ldp + 2 * ldp. */
static void att_item(const struct att_args *a, const struct att_item *it, float *scratch)
{
	const int64_t d = a->d, row = a->kv_heads * d, group = a->heads / a->kv_heads;
	const int64_t ldp = a->ldp;
	const int32_t s = a->slot[it->t0];
	int64_t n = 0;
	for (int64_t t = it->t0; t < it->t1; t++)
		n = a->pos[t] + 1 > n ? a->pos[t] + 1 : n;
	const int64_t n16 = (n + 15) & ~(int64_t)15;
	float *kt = scratch, *p = kt + d * ldp, *wg = p + ldp;
	const float *kb = a->kc + (int64_t)s * a->max_len * row + it->kh * d;
	const float *vb = a->vc + (int64_t)s * a->max_len * row + it->kh * d;
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < d; i++)
			kt[i * ldp + j] = kb[j * row + i];
	for (int64_t i = 0; i < d; i++)
		for (int64_t j = n; j < n16; j++)
			kt[i * ldp + j] = 0.0f;
	for (int64_t t = it->t0; t < it->t1; t++) {
		const int64_t nt = a->pos[t] + 1;
		for (int64_t h = it->kh * group; h < (it->kh + 1) * group; h++) {
			const float *qv = a->q + t * a->ld + h * d;
			if (a->wide)
				scores_avx512(qv, kt, ldp, d, (nt + 15) & ~(int64_t)15, a->scale, p);
			else
				scores_avx2(qv, kt, ldp, d, (nt + 7) & ~(int64_t)7, a->scale, p);
			const float mx = max_not_nan(p, nt);
			double sum = 0;
			for (int64_t j = 0; j < nt; j++) {
				p[j] = expf(p[j] - mx);
				sum += p[j];
			}
			for (int64_t j = 0; j < nt; j++)
				wg[j] = (float)(p[j] / sum);
			float *ov = a->out + (t * a->heads + h) * d;
			if (a->wide)
				weighted_values_avx512(wg, vb, row, d, nt, ov);
			else
				weighted_values_avx2(wg, vb, row, d, nt, ov);
		}
	}
}

static enum ctq_status attention_fast(const float *q, int64_t ld, const float *kc, const float *vc,
				      const int32_t *slot, const int32_t *pos, int64_t T, int64_t heads,
				      int64_t kv_heads, int64_t d, int64_t max_len, float *out,
				      struct ctq_error *err)
{
	/* items: runs of at most TCHUNK consecutive tokens of one slot, times
	 * the kv heads; the work (multiply-adds) decides the thread count */
	int64_t runs = 0, nmax = 0, work = 0;
	for (int64_t t = 0, len = 0; t < T; t++) {
		if (t == 0 || slot[t] != slot[t - 1] || len == TCHUNK)
			runs++, len = 0;
		len++;
		nmax = pos[t] + 1 > nmax ? pos[t] + 1 : nmax;
		work += 2 * (pos[t] + 1) * heads * d;
	}
	const int64_t n_items = runs * kv_heads;
	const int threads = ctq_ref_threads(work);
	/* the panel's row stride: a multiple of 16 floats plus one cache line,
	 * so that the d rows a score vector walks down do not share a few
	 * cache sets (a power-of-two stride would) */
	const int64_t ldp = ((nmax + 15) & ~(int64_t)15) + 16;
	const size_t per_thread = (size_t)((d + 2) * ldp);
	struct att_item *items = ctq_malloc((size_t)n_items * sizeof *items);
	float *scratch = ctq_malloc((size_t)threads * per_thread * sizeof *scratch);
	if (!items || !scratch) {
		free(items), free(scratch);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "attention", "out of memory");
	}
	int64_t r = 0;
	for (int64_t t = 0, len = 0; t < T; t++) {
		if (t == 0 || slot[t] != slot[t - 1] || len == TCHUNK) {
			for (int64_t kh = 0; kh < kv_heads; kh++)
				items[r * kv_heads + kh] = (struct att_item){t, t, kh};
			r++, len = 0;
		}
		len++;
		for (int64_t kh = 0; kh < kv_heads; kh++)
			items[(r - 1) * kv_heads + kh].t1 = t + 1;
	}
	const struct att_args a = {.q = q, .kc = kc, .vc = vc, .slot = slot, .pos = pos, .ld = ld,
				   .heads = heads, .kv_heads = kv_heads, .d = d, .max_len = max_len,
				   .ldp = ldp, .scale = 1.0f / sqrtf((float)d),
				   .wide = ctq_ref_simd_level() == 2, .out = out};
#pragma omp parallel num_threads(threads)
	{
		float *mine = scratch + (size_t)ctq_thread_id() * per_thread;
#pragma omp for schedule(dynamic, 1)
		for (int64_t i = 0; i < n_items; i++)
			att_item(&a, &items[i], mine);
	}
	free(items), free(scratch);
	return CTQ_OK;
}
#endif /* CTQ_REF_X86 */

enum ctq_status ctq_refm_attention(struct ctq_backend *b, const void *q, const void *k,
				   const void *v, int64_t ld, void *k_cache, void *v_cache,
				   const int32_t *slot, const int32_t *pos, const int32_t *host_slot,
				   const int32_t *host_pos, int64_t T, int64_t heads,
				   int64_t kv_heads, int64_t d, int64_t max_len, void *out,
				   struct ctq_error *err)
{
	(void)host_slot, (void)host_pos; /* slot and pos are host memory here already */
#ifdef CTQ_REF_X86
	if (ctq_ref_simd_level() >= 1 && T > 0) {
		enum ctq_status st = store_kv(k, v, ld, k_cache, v_cache, slot, pos, T, kv_heads * d,
					      max_len, err);
		return st ? st
			  : attention_fast(q, ld, k_cache, v_cache, slot, pos, T, heads, kv_heads, d,
					   max_len, out, err);
	}
#endif
	return ctq_refm_attention_scalar(b, q, k, v, ld, k_cache, v_cache, slot, pos, T, heads,
					 kv_heads, d, max_len, out, err);
}
