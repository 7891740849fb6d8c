/* The families' one registration (families/registry.h): every row complete
 * and where its id says, names and files unique, the three orders the
 * drivers take, the file classifier, and the policy keys named after the
 * families. */
#include <criterion/criterion.h>

#include <string.h>

#include "families/registry.h"
#include "families/verdict.h"

Test(registry, rows_complete)
{
	for (int f = 0; f < CTQ_FAM_COUNT; f++) {
		const struct ctq_family_def *d = &ctq_families[f];
		cr_expect_eq((int)d->id, f, "row %d holds family %d", f, (int)d->id);
		cr_expect(d->name && *d->name, "family %d: no name", f);
		cr_expect(d->file && strstr(d->file, ".csv"), "family %d: file %s", f, d->file);
		cr_expect(d->columns && d->n_columns > 0, "%s: no columns", d->name);
		cr_expect(d->report && d->compare && d->trend, "%s: a hook missing", d->name);
		cr_expect(d->report_title && d->compare_title, "%s: a title missing", d->name);
		cr_expect_eq(ctq_family(f), d);
		for (int g = 0; g < f; g++) {
			cr_expect_str_neq(d->name, ctq_families[g].name);
			cr_expect_str_neq(d->file, ctq_families[g].file);
		}
	}
	cr_expect_null(ctq_family(-1));
	cr_expect_null(ctq_family(CTQ_FAM_STEPS));
	cr_expect_str_eq(ctq_family_name(CTQ_FAM_COUNT), "unknown");
	cr_expect_str_eq(ctq_family_file(CTQ_FAM_COUNT), "");
}

Test(registry, file_classifier)
{
	for (int f = 0; f < CTQ_FAM_COUNT; f++)
		cr_expect_eq(ctq_family_by_file(ctq_families[f].file), f, "%s", ctq_families[f].file);
	cr_expect_eq(ctq_family_by_file("summary.md"), -1);
	cr_expect_eq(ctq_family_by_file("eval_groups.csv"), -1);
	cr_expect_eq(ctq_family_by_file("bench_gemm_samples.csv"), -1);
	cr_expect_eq(ctq_family_by_file(""), -1);
}

/* The orders are the documents' section orders: a change shows in every
 * report and compare.md, so they are pinned here. */
Test(registry, orders)
{
	static const struct {
		enum ctq_fam_order o;
		size_t n;
		enum ctq_family want[CTQ_FAM_COUNT];
	} cases[] = {
		{CTQ_FAM_ORDER_REPORT,
		 CTQ_FAM_COUNT,
		 {CTQ_FAM_CONFORM, CTQ_FAM_PROBE, CTQ_FAM_VERIFY_WEIGHTS, CTQ_FAM_EVAL, CTQ_FAM_EVAL_KLD,
		  CTQ_FAM_BENCH_MODEL, CTQ_FAM_BENCH_GEMM, CTQ_FAM_BENCH_SERVE}},
		{CTQ_FAM_ORDER_COMPARE,
		 CTQ_FAM_COUNT,
		 {CTQ_FAM_CONFORM, CTQ_FAM_PROBE, CTQ_FAM_VERIFY_WEIGHTS, CTQ_FAM_BENCH_MODEL,
		  CTQ_FAM_BENCH_GEMM, CTQ_FAM_BENCH_SERVE, CTQ_FAM_EVAL, CTQ_FAM_EVAL_KLD}},
		{CTQ_FAM_ORDER_TREND_PLOT,
		 4,
		 {CTQ_FAM_BENCH_MODEL, CTQ_FAM_EVAL, CTQ_FAM_PROBE, CTQ_FAM_CONFORM}},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct ctq_family_def *out[CTQ_FAM_COUNT];
		size_t n = ctq_families_ordered(out, cases[c].o);
		cr_expect_eq(n, cases[c].n, "order %d: %zu families", (int)cases[c].o, n);
		for (size_t k = 0; k < n && k < cases[c].n; k++)
			cr_expect_eq(out[k]->id, cases[c].want[k], "order %d, place %zu: %s", (int)cases[c].o,
				     k, out[k]->name);
	}
}

/* missing_family.<name>: one policy key per family, named from its row. */
Test(registry, policy_keys)
{
	char want[96];
	for (int f = 0; f < CTQ_FAM_COUNT; f++) {
		snprintf(want, sizeof want, "missing_family.%s", ctq_families[f].name);
		cr_expect_str_eq(ctq_compare_policy_name((enum ctq_policy_key)(CTQ_POL_MISSING_FAMILY + f)),
				 want);
	}
	cr_expect_str_eq(ctq_compare_policy_name(CTQ_POL_MISSING_IS_REGRESSION), "missing.is_regression");
}
