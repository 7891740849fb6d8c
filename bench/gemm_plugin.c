/* ctq bench gemm --impl: a kernel plug-in's rows against the CPU reference
 * (see bench/gemm.h, "a kernel plug-in"). */
#include "bench/gemm.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "reference/ref_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

void ctq_gemm_compare_y(const int64_t *rows, int64_t n, int64_t N, const uint16_t *got,
			const uint16_t *want, bool exact, double *rel_l2, char *mismatch, size_t cap)
{
	double num = 0, den = 0;
	int64_t nonfinite = 0, first_nf = -1;
	mismatch[0] = '\0';
	for (int64_t i = 0; i < n * N; i++) {
		double g = ctq_bf16_to_f32(got[i]), r = ctq_bf16_to_f32(want[i]);
		bool fg = isfinite(g), fr = isfinite(r);
		if (fg != fr || (!fg && !(isnan(g) && isnan(r)) && g != r)) {
			if (!nonfinite++)
				first_nf = i;
			continue;
		}
		if (fg) {
			num += (g - r) * (g - r);
			den += r * r;
		}
	}
	*rel_l2 = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
	if (nonfinite) {
		snprintf(mismatch, cap, "%lld output(s) NaN/Inf where the reference is finite, or the "
			 "reverse; first row %lld col %lld: got %g, want %g", (long long)nonfinite,
			 (long long)rows[first_nf / N], (long long)(first_nf % N),
			 (double)ctq_bf16_to_f32(got[first_nf]), (double)ctq_bf16_to_f32(want[first_nf]));
		return;
	}
	for (int64_t i = 0; exact && i < n * N; i++) {
		bool both_nan = isnan(ctq_bf16_to_f32(got[i])) && isnan(ctq_bf16_to_f32(want[i]));
		if (got[i] != want[i] && !both_nan) {
			snprintf(mismatch, cap, "bit-exact output (declared): row %lld col %lld: got 0x%04x, want 0x%04x",
				 (long long)rows[i / N], (long long)(i % N), got[i], want[i]);
			return;
		}
	}
	if (!(*rel_l2 <= CTQ_GEMM_PLUGIN_REL_L2_MAX))
		snprintf(mismatch, cap, "output rel-L2 %.3g > %.3g", *rel_l2, CTQ_GEMM_PLUGIN_REL_L2_MAX);
}

/* The first reason (NaN / Inf, bit-exact q, s, y) into mismatch; rel-L2. */
static void judge(const struct ctq_gemm_plugin_check_in *in, const int8_t *q, const float *s,
		  const uint16_t *y, double *rel_l2, char *mismatch, size_t cap)
{
	const int64_t n = in->n_rows, K = in->K;
	ctq_gemm_compare_y(in->rows, n, in->N, in->y, y, false, rel_l2, mismatch, cap);
	if (mismatch[0] && !strncmp(mismatch, "output rel-L2", 13))
		mismatch[0] = '\0'; /* judged after the bit-exact checks, as before */
	if (mismatch[0])
		return;
	for (int64_t i = 0; in->quant_exact && i < n; i++) {
		if (f32_bits(in->s[i]) != f32_bits(s[i])) {
			snprintf(mismatch, cap, "bit-exact quantize (declared): scale row %lld: got %.9g, want %.9g",
				 (long long)in->rows[i], (double)in->s[i], (double)s[i]);
			return;
		}
		for (int64_t k = 0; k < K; k++)
			if (in->q[i * K + k] != q[i * K + k]) {
				snprintf(mismatch, cap, "bit-exact quantize (declared): q row %lld col %lld: got %d, want %d",
					 (long long)in->rows[i], (long long)k, in->q[i * K + k], q[i * K + k]);
				return;
			}
	}
	ctq_gemm_compare_y(in->rows, n, in->N, in->y, y, in->out_exact, rel_l2, mismatch, cap);
}

enum ctq_status ctq_gemm_plugin_check(const struct ctq_gemm_plugin_check_in *in, double *rel_l2,
				      char *mismatch, size_t cap, struct ctq_error *err)
{
	const int64_t n = in->n_rows, N = in->N, K = in->K;
	mismatch[0] = '\0';
	*rel_l2 = NAN;
	if (n <= 0)
		return CTQ_OK;
	struct ctq_gemm_ref ref;
	enum ctq_status st = ctq_gemm_ref_rows(in->x, in->w, in->s_w, in->bias, in->rows, n, N, K,
					       &ref, err);
	if (st)
		return st;
	judge(in, ref.q, ref.s, ref.y, rel_l2, mismatch, cap);
	ctq_gemm_ref_free(&ref);
	return CTQ_OK;
}
