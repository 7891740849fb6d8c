/* ctq numeric TP conformance (see tpcheck.h). */
#include "conform/tpcheck.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "checkpoint/loader.h"
#include "reference/ref_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* y (M, N) for one rank's linear on activations x (M, K_full) bf16, taking
 * columns [c0, c0 + l->K) of x; acc (M, N) when quantized. q/s: the full-row
 * per-token quantization of x. */
static enum ctq_status rank_forward(const struct ctq_linear *l, const uint16_t *x, const int8_t *q,
				    const float *s, int64_t M, int64_t K_full, int64_t c0,
				    bool add_bias, int32_t *acc, uint16_t *y, struct ctq_error *err)
{
	const int64_t N = l->N, K = l->K;
	if (l->quantized) {
		int8_t *qs = ctq_malloc((size_t)(M * K) + 1);
		if (!qs)
			return ctq_error_set(err, CTQ_ERR_NOMEM, l->name, "out of memory");
		for (int64_t m = 0; m < M; m++)
			memcpy(qs + m * K, q + m * K_full + c0, (size_t)K);
		enum ctq_status st = ctq_ref_gemm_i8(qs, l->w_i8, M, N, K, acc, err);
		free(qs);
		if (st)
			return st;
		ctq_ref_w8a8_epilogue(acc, s, l->scale, add_bias ? l->bias : NULL, M, N, y);
		return CTQ_OK;
	}
	uint16_t *xs = ctq_malloc((size_t)(M * K) * 2 + 2);
	if (!xs)
		return ctq_error_set(err, CTQ_ERR_NOMEM, l->name, "out of memory");
	for (int64_t m = 0; m < M; m++)
		memcpy(xs + m * K, x + m * K_full + c0, (size_t)K * 2);
	ctq_ref_gemm_bf16(xs, l->w_bf16, add_bias ? l->bias : NULL, M, N, K, y);
	free(xs);
	return CTQ_OK;
}

enum ctq_status ctq_tp_check_linear(const struct ctq_checkpoint *ck, const struct ctq_plan *plan,
				    size_t module, int tp, int64_t M, uint64_t seed,
				    struct ctq_tp_result *r, struct ctq_error *err)
{
	memset(r, 0, sizeof *r);
	snprintf(r->module, sizeof r->module, "%s", plan->mods->v[module].name);
	r->tp = tp;
	struct ctq_shard_plan sp1, spn;
	memset(&sp1, 0, sizeof sp1);
	memset(&spn, 0, sizeof spn);
	struct ctq_linear full;
	memset(&full, 0, sizeof full);
	uint16_t *x = NULL, *y1 = NULL, *yr = NULL;
	int8_t *q = NULL;
	float *s = NULL, *ysum = NULL;
	int32_t *acc1 = NULL, *accr = NULL, *accsum = NULL;
	bool *seen = NULL;
	enum ctq_status st;
	if ((st = ctq_shard_plan_build(&sp1, plan, 1, err)) ||
	    (st = ctq_shard_plan_build(&spn, plan, tp, err)) ||
	    (st = ctq_load_linear(ck, plan, &sp1, module, 0, &full, err)))
		goto done;
	const int64_t N = full.N, K = full.K;
	const struct ctq_shard *sh0 = ctq_shard_at(&spn, module, 0);
	r->kind = ctq_shard_kind_name(sh0->kind);
	r->quantized = full.quantized;
	x = ctq_malloc((size_t)(M * K) * 2);
	q = ctq_malloc((size_t)(M * K));
	s = ctq_malloc((size_t)M * 4);
	y1 = ctq_malloc((size_t)(M * N) * 2);
	yr = ctq_malloc((size_t)(M * N) * 2);
	ysum = ctq_calloc((size_t)(M * N), 4);
	acc1 = ctq_malloc((size_t)(M * N) * 4);
	accr = ctq_malloc((size_t)(M * N) * 4);
	accsum = ctq_calloc((size_t)(M * N), 4);
	seen = ctq_calloc((size_t)N + 1, 1);
	if (!x || !q || !s || !y1 || !yr || !ysum || !acc1 || !accr || !accsum || !seen) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, r->module, "out of memory");
		goto done;
	}
	struct ctq_rng rng;
	ctq_rng_seed(&rng, seed ^ (uint64_t)module * 0x9e3779b97f4a7c15ULL);
	for (int64_t i = 0; i < M * K; i++)
		x[i] = ctq_f32_to_bf16((float)ctq_rng_normal(&rng));
	ctq_ref_quantize_bf16(x, M, K, q, s);
	if ((st = rank_forward(&full, x, q, s, M, K, 0, true, acc1, y1, err)))
		goto done;

	r->int32_exact = full.quantized;
	r->bf16_exact = true;
	r->covered = true;
	for (int rank = 0; rank < tp; rank++) {
		struct ctq_linear l;
		if ((st = ctq_load_linear(ck, plan, &spn, module, rank, &l, err)))
			goto done;
		const struct ctq_shard *sh = ctq_shard_at(&spn, module, rank);
		st = rank_forward(&l, x, q, s, M, K, sh->cols[0], l.bias != NULL, accr, yr, err);
		if (st) {
			ctq_linear_free(&l);
			goto done;
		}
		if (sh->kind == CTQ_SHARD_ROW) {
			/* Accumulators exist only for quantized modules. */
			for (int64_t i = 0; i < M * N; i++) {
				if (l.quantized)
					accsum[i] += accr[i];
				ysum[i] += ctq_bf16_to_f32(yr[i]);
			}
		} else {
			/* Column (or replicated): this rank's rows of the output. */
			for (int64_t m = 0; m < M; m++)
				for (int64_t n = 0; n < l.N; n++) {
					int64_t gn = sh->rows[0] + n;
					seen[gn] = 1;
					if (l.quantized && accr[m * l.N + n] != acc1[m * N + gn])
						r->int32_exact = false;
					if (yr[m * l.N + n] != y1[m * N + gn])
						r->bf16_exact = false;
				}
		}
		ctq_linear_free(&l);
	}
	double num = 0, den = 0;
	if (sh0->kind == CTQ_SHARD_ROW) {
		for (int64_t i = 0; i < M * N; i++) {
			if (full.quantized && accsum[i] != acc1[i])
				r->int32_exact = false;
			uint16_t y = ctq_f32_to_bf16(ysum[i]);
			if (y != y1[i])
				r->bf16_exact = false;
			double d = (double)ctq_bf16_to_f32(y) - ctq_bf16_to_f32(y1[i]);
			num += d * d;
			den += (double)ctq_bf16_to_f32(y1[i]) * ctq_bf16_to_f32(y1[i]);
		}
	} else {
		for (int64_t n = 0; n < N; n++)
			if (!seen[n])
				r->covered = false;
	}
	r->bf16_rel_l2 = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
	if (full.quantized && !r->int32_exact)
		snprintf(r->reason, sizeof r->reason, "%s tp %d (%s): int32 accumulators differ from tp 1",
			 r->module, tp, r->kind);
	else if (!r->covered)
		snprintf(r->reason, sizeof r->reason, "%s tp %d: the ranks do not cover every output row",
			 r->module, tp);
	else if (sh0->kind != CTQ_SHARD_ROW && !r->bf16_exact)
		snprintf(r->reason, sizeof r->reason,
			 "%s tp %d (%s): column-parallel outputs differ from tp 1", r->module, tp, r->kind);
	else if (!(r->bf16_rel_l2 <= CTQ_TP_BF16_REL_L2_MAX))
		snprintf(r->reason, sizeof r->reason,
			 "%s tp %d (%s): summed BF16 partials at rel-L2 %.3g from tp 1 (> %g)", r->module,
			 tp, r->kind, r->bf16_rel_l2, CTQ_TP_BF16_REL_L2_MAX);
	r->passed = r->reason[0] == '\0';
done:
	ctq_linear_free(&full);
	ctq_shard_plan_free(&sp1);
	ctq_shard_plan_free(&spn);
	free(x), free(q), free(s), free(y1), free(yr), free(ysum);
	free(acc1), free(accr), free(accsum), free(seen);
	return st;
}
