/* ctq eval statistics (see stats.h). */
#include "stats/accuracy.h"

#include <math.h>

double ctq_stats_binom_se(size_t k, size_t n)
{
	if (n == 0)
		return 0.0;
	double p = (double)k / (double)n;
	return sqrt(p * (1.0 - p) / (double)n);
}

double ctq_stats_macro_se(const size_t *k, const size_t *n, size_t S)
{
	double var = 0.0;
	size_t used = 0;
	for (size_t s = 0; s < S; s++) {
		if (n[s] == 0)
			continue;
		double p = (double)k[s] / (double)n[s];
		var += p * (1.0 - p) / (double)n[s];
		used++;
	}
	return used ? sqrt(var) / (double)used : 0.0;
}

void ctq_stats_wilson(size_t k, size_t n, double z, double *lo, double *hi)
{
	if (n == 0) {
		*lo = 0.0, *hi = 1.0;
		return;
	}
	double nn = (double)n, p = (double)k / nn, z2 = z * z;
	double centre = (p + z2 / (2.0 * nn)) / (1.0 + z2 / nn);
	double half = z * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn)) / (1.0 + z2 / nn);
	*lo = centre - half < 0.0 ? 0.0 : centre - half;
	*hi = centre + half > 1.0 ? 1.0 : centre + half;
	/* The exact ends: no rounding past the observed extreme. */
	if (k == 0)
		*lo = 0.0;
	if (k == n)
		*hi = 1.0;
}

double ctq_stats_mcnemar_exact(size_t b, size_t c)
{
	size_t n = b + c, k = b < c ? b : c;
	if (n == 0 || 2 * k >= n)
		return 1.0;
	/* P(X <= k) = C(n, k) 2^-n (1 + r_k + r_k r_{k-1} + ...), with
	 * r_i = C(n, i-1) / C(n, i) = i / (n - i + 1) <= 1 for i <= k < n/2:
	 * the sum runs from the largest term down, so it neither overflows
	 * nor loses the small terms. */
	double nn = (double)n, kk = (double)k;
	double log_term = lgamma(nn + 1.0) - lgamma(kk + 1.0) - lgamma(nn - kk + 1.0) - nn * log(2.0);
	double s = 1.0, prod = 1.0;
	for (size_t i = k; i >= 1; i--) {
		prod *= (double)i / (double)(n - i + 1);
		s += prod;
		if (prod < 1e-17 * s)
			break;
	}
	double p = exp(log(2.0) + log_term + log(s));
	return p > 1.0 ? 1.0 : p;
}

void ctq_stats_paired(struct ctq_paired *p, size_t a, size_t b, size_t c, size_t d, double z)
{
	size_t n = a + b + c + d;
	*p = (struct ctq_paired){.n = n, .a = a, .b = b, .c = c, .d = d};
	p->p_mcnemar = ctq_stats_mcnemar_exact(b, c);
	if (n == 0) {
		p->lo = p->wald_lo = -1.0;
		p->hi = p->wald_hi = 1.0;
		return;
	}
	double nn = (double)n;
	p->acc_ref = (double)(a + b) / nn;
	p->acc_new = (double)(a + c) / nn;
	p->diff = ((double)c - (double)b) / nn;

	/* Wald: the per-question differences are +1 (c of them), -1 (b) and
	 * 0; their variance is (b + c) / n - diff^2. */
	double var = ((double)(b + c) / nn - p->diff * p->diff) / nn;
	double hw = z * sqrt(var > 0.0 ? var : 0.0);
	p->wald_lo = p->diff - hw;
	p->wald_hi = p->diff + hw;

	/* Newcombe method 10 with "first" = new, "second" = ref. */
	double l1, u1, l2, u2;
	ctq_stats_wilson(a + c, n, z, &l1, &u1);
	ctq_stats_wilson(a + b, n, z, &l2, &u2);
	double p1 = p->acc_new, p2 = p->acc_ref;
	double den = (double)(a + b) * (double)(c + d) * (double)(a + c) * (double)(b + d);
	double phi = den > 0.0 ? ((double)a * (double)d - (double)b * (double)c) / sqrt(den) : 0.0;
	double dl = (p1 - l1) * (p1 - l1) - 2.0 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) * (u2 - p2);
	double du = (u1 - p1) * (u1 - p1) - 2.0 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) * (p2 - l2);
	p->lo = p->diff - sqrt(dl > 0.0 ? dl : 0.0);
	p->hi = p->diff + sqrt(du > 0.0 ? du : 0.0);
	if (p->lo < -1.0)
		p->lo = -1.0;
	if (p->hi > 1.0)
		p->hi = 1.0;
}

double ctq_stats_logsumexp(const double *x, int n)
{
	double mx = -INFINITY;
	for (int i = 0; i < n; i++)
		if (x[i] > mx)
			mx = x[i];
	if (!isfinite(mx))
		return mx;
	double s = 0.0;
	for (int i = 0; i < n; i++)
		s += exp(x[i] - mx);
	return mx + log(s);
}

double ctq_stats_kl(const double *ref_lp, const double *new_lp, int n)
{
	double lr = ctq_stats_logsumexp(ref_lp, n), ln = ctq_stats_logsumexp(new_lp, n), kl = 0.0;
	for (int i = 0; i < n; i++) {
		double lpr = ref_lp[i] - lr, lpn = new_lp[i] - ln;
		double pr = exp(lpr);
		if (pr > 0.0)
			kl += pr * (lpr - lpn);
	}
	return kl > 0.0 ? kl : 0.0;
}
