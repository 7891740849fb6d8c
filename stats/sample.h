/* ctq timing statistics for regression verdicts: sample summaries (median,
 * min, max, mean, stddev, cv) and the two-sided Mann-Whitney U test.
 *
 * The test follows scipy.stats.mannwhitneyu(x, y, alternative="two-sided",
 * method="auto", use_continuity=True), so its goldens can be computed
 * independently with scipy:
 *   - ranks are midranks; U1 = R1 - n1 (n1 + 1) / 2 is the statistic of x;
 *   - exact null distribution when min(n1, n2) <= 8 and nothing is tied
 *     (p = 2 P(U >= max(U1, U2)), clipped to 1);
 *   - otherwise the normal approximation with the tie correction
 *     s = sqrt(n1 n2 / 12 ((n + 1) - sum(t^3 - t) / (n (n - 1)))) and the
 *     continuity correction 0.5.
 * One deviation: when the exact distribution's total count C(n1 + n2, n1)
 * would not fit in 62 bits (n1 = 8 and n2 > 805, say) the normal
 * approximation is used; scipy would still count exactly. When every value
 * is tied (s = 0) p is 1, where scipy returns NaN.
 *
 * What it is not: a general statistics library (accuracy statistics live in
 * stats/accuracy.h).
 */
#ifndef CTQ_STATS_SAMPLE_H
#define CTQ_STATS_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct ctq_sample_summary {
	size_t n;
	double median, min, max, mean;
	double stddev; /* with Bessel's correction; 0 when n < 2 */
	double cv;     /* stddev / |mean|; 0 when n < 2, +inf when mean == 0 */
};

/* The median of v (n values, sorted ascending, borrowed): the middle value,
 * or the mean of the two middle values when n is even; NaN when n == 0.
 * The one median of ctq: summaries, benchmarks and reports call it. */
double ctq_median(const double *v, size_t n);

/* Summarizes x (n values, borrowed, not modified). NOMEM on failure. An
 * empty sample gives n = 0 and NaN everywhere else. */
enum ctq_status ctq_sample_summarize(const double *x, size_t n,
				     struct ctq_sample_summary *s,
				     struct ctq_error *err);

struct ctq_mwu {
	double u1;     /* U statistic of the first sample */
	double p;      /* two-sided p-value */
	bool exact;    /* exact null distribution (else normal approximation) */
	bool ties;     /* some value occurs in both or twice */
	double p_min;  /* the smallest two-sided p these sizes can give */
};

/* Two-sided Mann-Whitney U test of x (n1) against y (n2); both borrowed.
 * USAGE error when a sample is empty or holds a NaN; NOMEM on failure. */
enum ctq_status ctq_mwu_test(const double *x, size_t n1, const double *y, size_t n2,
			     struct ctq_mwu *out, struct ctq_error *err);

/* The two-sided p of Student's t statistic t with df degrees of freedom
 * (df > 0): P(|T| >= |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2), the
 * regularized incomplete beta function by its continued fraction (Lentz),
 * as scipy.stats.t.sf(|t|, df) * 2 computes it to about 1e-12. t = +-inf
 * gives 0, NaN gives NaN. */
double ctq_student_t_p2(double t, double df);

struct ctq_paired_t {
	size_t n;
	double mean, sd; /* of the differences (Bessel); sd 0 when n < 2 */
	double t;        /* mean / (sd / sqrt(n)); +-inf when sd is 0 and mean is not */
	double p;        /* two-sided, n - 1 degrees of freedom; NaN when n < 2 */
};

/* The one-sample t test of the paired differences d (n, borrowed) against
 * 0, as scipy.stats.ttest_1samp(d, 0) (or ttest_rel on the two columns).
 * Every difference 0: t 0, p 1. */
void ctq_paired_t_test(const double *d, size_t n, struct ctq_paired_t *out);

#endif
