/* Criterion tests for eval/stats: every number against goldens computed by
 * tests/oracle/eval_stats_goldens.py with scipy and statsmodels (McNemar by
 * scipy.stats.binomtest, Wilson by statsmodels proportion_confint, the
 * Newcombe interval assembled from those, the Wald interval and SEs from
 * numpy on the 0/1 vectors, KL by scipy.special.rel_entr). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "stats/accuracy.h"

/* Same formulas in double on both sides: agreement to a few ulps of the
 * larger magnitudes involved. */
#define REL 1e-12
#define ABS 1e-14

static void near(double got, double want, double rel, const char *what, const char *id)
{
	double tol = ABS + rel * fabs(want);
	cr_expect(fabs(got - want) <= tol, "%s %s: got %.17g, want %.17g (|d| %.3g > %.3g)", id, what,
		  got, want, fabs(got - want), tol);
}

static const struct {
	size_t a, b, c, d;
	double lo, hi, wald_lo, wald_hi, p;
} paired[] = {
	/* Newcombe 1998's example (a) 36/12/2/0: his method 10 gives
	 * 0.0569 to 0.3404 for ref - new. */
	{36, 12, 2, 0, -0.3404276029749408, -0.05692958400323875, -0.33579028808914063, -0.06420971191085939, 0.012939453125},
	{0, 0, 0, 10, -0.27753279986288926, 0.27753279986288926, 0.0, 0.0, 1.0},
	{50, 0, 0, 50, 0.0, 0.0, 0.0, 0.0, 1.0},
	{40, 5, 5, 50, -0.06093467822016024, 0.06093467822016024, -0.06197950323045615, 0.06197950323045615, 1.0},
	{700, 21, 9, 270, -0.02285758257797727, -0.0012282767014397278, -0.022709369474933797, -0.0012906305250662033, 0.042773945257067694},
	{9000, 120, 80, 4842, -0.00482385898697108, -0.0008743195199964631, -0.004821975473504149, -0.0008752186583858949, 0.005685155996750306},
	{1, 0, 1, 0, -0.2725727851131816, 0.9054687942657693, -0.19295191217483887, 1.1929519121748389, 1.0},
	{0, 3, 0, 0, -1.0, -0.2059232824597782, -1.0, -1.0, 0.25},
	{5000, 1000, 1200, 2800, 0.010813624915389805, 0.02918024611129707, 0.010815315154974399, 0.0291846848450256, 2.1817026407914194e-05},
};

Test(eval_stats, paired_table_matches_scipy_statsmodels)
{
	for (size_t i = 0; i < sizeof paired / sizeof *paired; i++) {
		char id[64];
		snprintf(id, sizeof id, "table %zu/%zu/%zu/%zu", paired[i].a, paired[i].b, paired[i].c,
			 paired[i].d);
		struct ctq_paired p;
		ctq_stats_paired(&p, paired[i].a, paired[i].b, paired[i].c, paired[i].d, CTQ_Z95);
		size_t n = paired[i].a + paired[i].b + paired[i].c + paired[i].d;
		cr_expect_eq(p.n, n, "%s: n", id);
		near(p.diff, ((double)paired[i].c - (double)paired[i].b) / (double)n, REL, "diff", id);
		near(p.acc_ref, (double)(paired[i].a + paired[i].b) / (double)n, REL, "acc_ref", id);
		near(p.acc_new, (double)(paired[i].a + paired[i].c) / (double)n, REL, "acc_new", id);
		near(p.lo, paired[i].lo, 1e-10, "newcombe lo", id);
		near(p.hi, paired[i].hi, 1e-10, "newcombe hi", id);
		near(p.wald_lo, paired[i].wald_lo, 1e-10, "wald lo", id);
		near(p.wald_hi, paired[i].wald_hi, 1e-10, "wald hi", id);
		near(p.p_mcnemar, paired[i].p, 1e-10, "mcnemar p", id);
		cr_expect(p.lo <= p.diff && p.diff <= p.hi, "%s: interval [%g, %g] holds diff %g", id, p.lo,
			  p.hi, p.diff);
	}
}

static const struct {
	size_t b, c;
	double p;
} mcnemar[] = {
	{0, 1, 1.0},
	{0, 5, 0.0625},
	{3, 3, 1.0},
	{10, 20, 0.09873714670538905},
	{480, 520, 0.2174482932041415},
	{20000, 20500, 0.013153825113144245},
	{50, 300, 1.387155120649234e-44},
	{200, 400, 2.3925776987708593e-16},
	{100000, 101500, 0.000839654119712958},
};

Test(eval_stats, mcnemar_exact_matches_binomtest)
{
	for (size_t i = 0; i < sizeof mcnemar / sizeof *mcnemar; i++) {
		char id[48];
		snprintf(id, sizeof id, "b=%zu c=%zu", mcnemar[i].b, mcnemar[i].c);
		/* Large counts go through lgamma: relative 1e-9. */
		near(ctq_stats_mcnemar_exact(mcnemar[i].b, mcnemar[i].c), mcnemar[i].p, 1e-9, "p", id);
		/* Symmetric in b and c. */
		near(ctq_stats_mcnemar_exact(mcnemar[i].c, mcnemar[i].b), mcnemar[i].p, 1e-9, "p swapped",
		     id);
	}
	cr_expect_eq(ctq_stats_mcnemar_exact(0, 0), 1.0);
}

static const struct {
	size_t k, n;
	double lo, hi, se;
} wilson[] = {
	{0, 10, 0.0, 0.27753279986288926, 0.0},
	{10, 10, 0.7224672001371106, 1.0, 0.0},
	{3, 7, 0.15821985525146964, 0.7495416354723428, 0.1870439059165649},
	{1000, 1531, 0.6289698339418804, 0.6765991857797783, 0.012164225836396758},
	{1, 1, 0.2065493143772374, 1.0, 0.0},
};

Test(eval_stats, wilson_and_binomial_se)
{
	for (size_t i = 0; i < sizeof wilson / sizeof *wilson; i++) {
		char id[48];
		snprintf(id, sizeof id, "k=%zu n=%zu", wilson[i].k, wilson[i].n);
		double lo, hi;
		ctq_stats_wilson(wilson[i].k, wilson[i].n, CTQ_Z95, &lo, &hi);
		near(lo, wilson[i].lo, 1e-12, "wilson lo", id);
		near(hi, wilson[i].hi, 1e-12, "wilson hi", id);
		near(ctq_stats_binom_se(wilson[i].k, wilson[i].n), wilson[i].se, 1e-12, "binomial se", id);
	}
	cr_expect_eq(ctq_stats_binom_se(0, 0), 0.0);
}

static const struct {
	double r[4], q[4], kl;
} kl[] = {
	{{-1.0, -2.0, -3.0, -4.0}, {-1.0, -2.0, -3.0, -4.0}, 0.0},
	{{-0.1, -3.0, -4.0, -5.0}, {-2.0, -0.5, -1.0, -3.0}, 1.7265095160690702},
	{{-30.0, -31.0, -29.5, -40.0}, {-12.0, -11.0, -13.0, -14.0}, 0.9118357536696149},
	{{-1.2, -1.4, -1.5, -1.3}, {-1.25, -1.35, -1.55, -1.28}, 0.0009453320562660319},
};

Test(eval_stats, kl_of_answer_distributions)
{
	for (size_t i = 0; i < sizeof kl / sizeof *kl; i++) {
		char id[16];
		snprintf(id, sizeof id, "case %zu", i);
		near(ctq_stats_kl(kl[i].r, kl[i].q, 4), kl[i].kl, 1e-11, "kl", id);
	}
	/* Only differences of log-probabilities matter. */
	double a[4] = {-1, -2, -3, -4}, b[4] = {-101, -102, -103, -104};
	cr_expect(fabs(ctq_stats_kl(a, b, 4)) < 1e-12);
}

Test(eval_stats, macro_se_holds_subjects_fixed)
{
	size_t k[3] = {30, 45, 12}, n[3] = {100, 120, 40};
	near(ctq_stats_macro_se(k, n, 3), 0.032150902873100705, 1e-12, "macro se", "3 subjects");
	/* An empty subject is skipped, not counted. */
	size_t k4[4] = {30, 0, 45, 12}, n4[4] = {100, 0, 120, 40};
	near(ctq_stats_macro_se(k4, n4, 4), 0.032150902873100705, 1e-12, "macro se", "with empty");
}

Test(eval_stats, z95_and_logsumexp)
{
	cr_expect_eq(CTQ_Z95, 1.959963984540054);
	double x[3] = {1000.0, 1000.0, -INFINITY};
	near(ctq_stats_logsumexp(x, 3), 1000.0 + log(2.0), 1e-15, "lse", "large");
	cr_expect(isinf(ctq_stats_logsumexp(x, 0)));
}
