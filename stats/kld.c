/* ctq token-distribution statistics (stats/kld.h). */
#include "stats/kld.h"
#include "core/arena.h"
#include "core/rng.h"

#include <math.h>
#include <stdlib.h>

double ctq_stats_logsumexp_f32(const float *x, int64_t n)
{
	double mx = -INFINITY;
	for (int64_t i = 0; i < n; i++)
		if ((double)x[i] > mx)
			mx = (double)x[i];
	if (!isfinite(mx))
		return mx;
	double s = 0.0;
	for (int64_t i = 0; i < n; i++)
		s += exp((double)x[i] - mx);
	return mx + log(s);
}

static int32_t argmax_f32(const float *x, int64_t n)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return (int32_t)best;
}

void ctq_stats_kld_token(const float *ref, const float *cand, int64_t V, int32_t target,
			 struct ctq_kld_token *out)
{
	const double lr = ctq_stats_logsumexp_f32(ref, V), ln = ctq_stats_logsumexp_f32(cand, V);
	double kl = 0.0;
	for (int64_t i = 0; i < V; i++) {
		const double a = (double)ref[i] - lr, b = (double)cand[i] - ln;
		const double p = exp(a);
		if (p > 0.0)
			kl += p * (a - b);
	}
	out->kl = kl > 0.0 ? kl : 0.0;
	out->lp_ref = (double)ref[target] - lr;
	out->lp_new = (double)cand[target] - ln;
	out->top_ref = argmax_f32(ref, V);
	out->top_new = argmax_f32(cand, V);
}

double ctq_quantile_sorted(const double *v, size_t n, double q)
{
	if (!n)
		return NAN;
	const double at = q * (double)(n - 1);
	const size_t i = (size_t)floor(at);
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (at - (double)i) * (v[i + 1] - v[i]);
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int ctq_stats_ratio_bootstrap(const double *num, const double *den, size_t n, size_t B,
			      uint64_t seed, double level, double *lo, double *hi)
{
	double sn = 0, sd = 0;
	for (size_t i = 0; i < n; i++)
		sn += num[i], sd += den[i];
	*lo = *hi = n && sd > 0 ? sn / sd : NAN;
	if (n < 2 || !(sd > 0) || B == 0)
		return 0;
	double *r = ctq_malloc(B * sizeof *r); /* (B) resampled ratios */
	if (!r)
		return -1;
	struct ctq_rng g;
	ctq_rng_seed(&g, seed);
	size_t k = 0;
	for (size_t b = 0; b < B; b++) {
		double a = 0, d = 0;
		for (size_t i = 0; i < n; i++) {
			const size_t j = (size_t)ctq_rng_below(&g, (uint64_t)n);
			a += num[j], d += den[j];
		}
		if (d > 0)
			r[k++] = a / d;
	}
	qsort(r, k, sizeof *r, cmp_double);
	*lo = ctq_quantile_sorted(r, k, (1 - level) / 2);
	*hi = ctq_quantile_sorted(r, k, (1 + level) / 2);
	ctq_free(r);
	return 0;
}
