/* ctq timing statistics (see mwu.h). */
#include "stats/sample.h"
#include "core/arena.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double ctq_median(const double *v, size_t n)
{
	if (!n)
		return NAN;
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum ctq_status ctq_sample_summarize(const double *x, size_t n,
				     struct ctq_sample_summary *s,
				     struct ctq_error *err)
{
	*s = (struct ctq_sample_summary){.n = n, .median = NAN, .min = NAN, .max = NAN,
					 .mean = NAN, .stddev = NAN, .cv = NAN};
	if (!n)
		return CTQ_OK;
	double *v = ctq_malloc(n * sizeof *v); /* (n) sorted copy */
	if (!v)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "summary", "out of memory");
	memcpy(v, x, n * sizeof *v);
	qsort(v, n, sizeof *v, cmp_double);
	s->min = v[0];
	s->max = v[n - 1];
	s->median = ctq_median(v, n);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	s->mean = sum / (double)n;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - s->mean) * (v[i] - s->mean);
	s->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
	s->cv = n < 2 ? 0.0 : s->mean != 0.0 ? s->stddev / fabs(s->mean) : INFINITY;
	ctq_free(v);
	return CTQ_OK;
}

struct ranked {
	double v;
	int from_x;
};

static int cmp_ranked(const void *a, const void *b)
{
	return cmp_double(&((const struct ranked *)a)->v, &((const struct ranked *)b)->v);
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* C(n, k) when it stays below 2^62, else 0. Each step c * f / i is an
 * integer; dividing c and i by their gcd first keeps the product no larger
 * than the result needs (i / g then divides f). */
static int64_t choose_small(size_t n, size_t k)
{
	if (k > n - k)
		k = n - k;
	uint64_t c = 1;
	for (size_t i = 1; i <= k; i++) {
		uint64_t f = (uint64_t)(n - k + i), d = (uint64_t)i;
		uint64_t g = gcd_u64(c, d);
		c /= g;
		d /= g;
		f /= d;
		if (c > (UINT64_C(1) << 62) / f)
			return 0;
		c *= f;
	}
	return c < (UINT64_C(1) << 62) ? (int64_t)c : 0;
}

/* P(U >= u) under the null for sample sizes m <= n without ties: the
 * counts of U are the coefficients of the Gaussian binomial
 * [n + m, m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built one factor
 * at a time in exact integers (every intermediate polynomial is itself a
 * Gaussian binomial, so its coefficients stay below the total). */
static enum ctq_status exact_sf(size_t m, size_t n, double u, int64_t total, double *p,
				struct ctq_error *err)
{
	size_t deg = m * n;
	int64_t *c = ctq_calloc(deg + 1, sizeof *c); /* (deg + 1) counts by U */
	if (!c)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "mann-whitney", "out of memory");
	c[0] = 1;
	size_t cur = 0; /* degree so far */
	for (size_t i = 1; i <= m; i++) {
		size_t up = n + i, next = cur + n;
		/* times (1 - q^up), kept only up to degree next: the division
		 * below reads nothing above it. Downwards, so c[k - up] is still
		 * the old coefficient. */
		size_t top = cur + up < next ? cur + up : next;
		for (size_t k = top + 1; k-- > up;)
			c[k] -= c[k - up];
		/* divided by (1 - q^i): b[k] = a[k] + b[k - i], upwards. */
		for (size_t k = i; k <= next; k++)
			c[k] += c[k - i];
		cur = next;
	}
	int64_t tail = 0;
	size_t start = u <= 0 ? 0 : (size_t)ceil(u);
	for (size_t k = start; k <= deg; k++)
		tail += c[k];
	ctq_free(c);
	*p = (double)tail / (double)total;
	return CTQ_OK;
}

enum ctq_status ctq_mwu_test(const double *x, size_t n1, const double *y, size_t n2,
			     struct ctq_mwu *out, struct ctq_error *err)
{
	*out = (struct ctq_mwu){.p = NAN, .u1 = NAN, .p_min = NAN};
	if (!n1 || !n2)
		return ctq_error_set(err, CTQ_ERR_USAGE, "mann-whitney", "a sample is empty (%zu, %zu values)",
				     n1, n2);
	size_t n = n1 + n2;
	struct ranked *r = ctq_malloc(n * sizeof *r); /* (n) pooled values */
	if (!r)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "mann-whitney", "out of memory");
	for (size_t i = 0; i < n; i++) {
		r[i] = i < n1 ? (struct ranked){x[i], 1} : (struct ranked){y[i - n1], 0};
		if (isnan(r[i].v)) {
			ctq_free(r);
			return ctq_error_set(err, CTQ_ERR_USAGE, "mann-whitney", "a sample holds NaN");
		}
	}
	qsort(r, n, sizeof *r, cmp_ranked);
	double r1 = 0, tie_term = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && r[j + 1].v == r[i].v)
			j++;
		double rank = 0.5 * (double)(i + j) + 1.0; /* midrank, 1-based */
		double t = (double)(j - i + 1);
		tie_term += t * t * t - t;
		if (j > i)
			out->ties = true;
		for (size_t k = i; k <= j; k++)
			if (r[k].from_x)
				r1 += rank;
		i = j + 1;
	}
	ctq_free(r);
	double nn1 = (double)n1, nn2 = (double)n2, nn = (double)n;
	out->u1 = r1 - nn1 * (nn1 + 1.0) / 2.0;
	double u = fmax(out->u1, nn1 * nn2 - out->u1);
	size_t m = n1 < n2 ? n1 : n2;
	int64_t total = choose_small(n, m);
	out->exact = (n1 <= 8 || n2 <= 8) && !out->ties && total > 0;
	if (out->exact) {
		double sf = 1.0;
		enum ctq_status st = exact_sf(m, n - m, u, total, &sf, err);
		if (st)
			return st;
		out->p = fmin(1.0, 2.0 * sf);
		out->p_min = fmin(1.0, 2.0 / (double)total);
		return CTQ_OK;
	}
	double s = sqrt(nn1 * nn2 / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0))));
	if (!(s > 0)) {
		out->p = out->p_min = 1.0;
		return CTQ_OK;
	}
	/* Two-sided: 2 * ndtr(-z) = erfc(z / sqrt(2)). */
	double z = (u - nn1 * nn2 / 2.0 - 0.5) / s;
	out->p = fmin(1.0, erfc(z / sqrt(2.0)));
	double zmax = (nn1 * nn2 / 2.0 - 0.5) / s;
	out->p_min = fmin(1.0, erfc(zmax / sqrt(2.0)));
	return CTQ_OK;
}

/* ---- Student's t ---------------------------------------------------------- */

/* The continued fraction of the incomplete beta function (Numerical
 * Recipes' betacf, modified Lentz). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-15;
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap;
	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	double h = d;
	for (int m = 1; m <= 500; m++) {
		int m2 = 2 * m;
		double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		double del = d * c;
		h *= del;
		if (fabs(del - 1) < eps)
			break;
	}
	return h;
}

/* I_x(a, b), 0 <= x <= 1. */
static double beta_inc(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	double bt = exp(lbt);
	if (x < (a + 1) / (a + b + 2))
		return bt * beta_cf(a, b, x) / a;
	return 1 - bt * beta_cf(b, a, 1 - x) / b;
}

double ctq_student_t_p2(double t, double df)
{
	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return 0;
	double p = beta_inc(df / 2, 0.5, df / (df + t * t));
	return p > 1 ? 1 : p;
}

void ctq_paired_t_test(const double *d, size_t n, struct ctq_paired_t *out)
{
	memset(out, 0, sizeof *out);
	out->n = n;
	out->p = NAN;
	out->t = NAN;
	if (!n) {
		out->mean = NAN;
		return;
	}
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += d[i];
	out->mean = s / (double)n;
	if (n < 2)
		return;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (d[i] - out->mean) * (d[i] - out->mean);
	out->sd = sqrt(ss / (double)(n - 1));
	if (out->sd == 0) {
		out->t = out->mean == 0 ? 0 : (out->mean > 0 ? INFINITY : -INFINITY);
		out->p = out->mean == 0 ? 1 : 0;
		return;
	}
	out->t = out->mean / (out->sd / sqrt((double)n));
	out->p = ctq_student_t_p2(out->t, (double)(n - 1));
}
