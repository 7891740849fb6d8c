/* The one registration of the result families (see registry.h). */
#include "families/registry.h"
#include "families/bench_gemm.h"
#include "families/bench_model.h"
#include "families/bench_serve.h"
#include "families/conform.h"
#include "families/eval.h"
#include "families/eval_kld.h"
#include "families/probe.h"
#include "families/verify_weights.h"

#include <string.h>

#define COLUMNS(a) a, sizeof a / sizeof *a

static const char *const conform_cols[] = {CTQ_CONFORM_CSV_COLUMNS};
static const char *const probe_cols[] = {CTQ_PROBE_CSV_COLUMNS};
static const char *const bench_model_cols[] = {CTQ_BENCH_MODEL_CSV_COLUMNS};
static const char *const bench_gemm_cols[] = {CTQ_BENCH_GEMM_CSV_COLUMNS};
static const char *const eval_cols[] = {CTQ_EVAL_QUESTIONS_CSV_COLUMNS};
static const char *const bench_serve_cols[] = {CTQ_BENCH_SERVE_CSV_COLUMNS};
static const char *const eval_kld_cols[] = {CTQ_EVAL_KLD_CSV_COLUMNS};
static const char *const verify_weights_cols[] = {CTQ_VERIFY_WEIGHTS_CSV_COLUMNS};

static const char *const bench_model_timings[] = {"ttft_ms", "decode_ms_per_step", NULL};
static const char *const bench_gemm_timings[] = {"time_us", "time_us_median", NULL};
static const char *const bench_serve_timings[] = {"ttft_ms", "tpot_ms", "latency_ms", NULL};

/* One row per family, a field per line group (clang-format would fold the
 * groups together). */
/* clang-format off */
static const struct ctq_fam_trend_plot bench_model_plot = {
	0, "trend_timing", "timing medians per run", "ms", true, NULL};
static const struct ctq_fam_trend_plot eval_plot = {
	1, "trend_accuracy", "accuracy per run", "accuracy", false, NULL};
static const struct ctq_fam_trend_plot probe_plot = {
	2, "trend_probe", "worst rel-L2 per run", "rel-L2 (0 drawn at 1e-9)", true, "failed probes"};
static const struct ctq_fam_trend_plot conform_plot = {
	3, "trend_conformance", "failed conformance checks per run", "checks", false, "checks"};

const struct ctq_family_def ctq_families[CTQ_FAM_COUNT] = {
	[CTQ_FAM_CONFORM] = {
		.id = CTQ_FAM_CONFORM, .name = "conformance", .file = "conform.csv",
		.columns = COLUMNS(conform_cols),
		.report_rank = 0, .report_title = "Conformance", .report = ctq_fam_conform_report,
		.compare_rank = 0, .compare_title = "Conformance", .compare = ctq_fam_conform_compare,
		.scale = CTQ_FAM_SCALE_FACTOR,
		.trend = ctq_fam_conform_trend, .trend_plot = &conform_plot,
	},
	[CTQ_FAM_PROBE] = {
		.id = CTQ_FAM_PROBE, .name = "probe", .file = "probe.csv",
		.columns = COLUMNS(probe_cols),
		.report_rank = 1, .report_title = "Kernel probes", .report = ctq_fam_probe_report,
		.compare_rank = 1, .compare_title = "Kernel probes", .compare = ctq_fam_probe_compare,
		.scale = CTQ_FAM_SCALE_FACTOR,
		.trend = ctq_fam_probe_trend, .trend_plot = &probe_plot,
	},
	[CTQ_FAM_BENCH_MODEL] = {
		.id = CTQ_FAM_BENCH_MODEL, .name = "timing", .file = "bench_model.csv",
		.columns = COLUMNS(bench_model_cols),
		.report_rank = 4, .report_title = "Performance", .report = ctq_fam_bench_model_report,
		.report_end = ctq_fam_bench_model_report_end,
		.compare_rank = 2, .compare_title = "Timings", .compare = ctq_fam_bench_model_compare,
		.scale = CTQ_FAM_SCALE_RELATIVE, .show_all = true, .timing_metrics = bench_model_timings,
		.trend = ctq_fam_bench_model_trend, .trend_plot = &bench_model_plot,
	},
	[CTQ_FAM_BENCH_GEMM] = {
		.id = CTQ_FAM_BENCH_GEMM, .name = "gemm", .file = "bench_gemm.csv",
		.columns = COLUMNS(bench_gemm_cols),
		.report_rank = 5, .report_title = "GEMM throughput", .report = ctq_fam_bench_gemm_report,
		.compare_rank = 3, .compare_title = "GEMM points (unchanged ones in compare.csv)",
		.compare = ctq_fam_bench_gemm_compare,
		.scale = CTQ_FAM_SCALE_RELATIVE, .timing_metrics = bench_gemm_timings,
		.trend = ctq_fam_bench_gemm_trend,
	},
	[CTQ_FAM_EVAL] = {
		.id = CTQ_FAM_EVAL, .name = "accuracy", .file = "eval_questions.csv",
		.columns = COLUMNS(eval_cols),
		.report_rank = 2, .report_title = "Accuracy", .report = ctq_fam_eval_report,
		.compare_rank = 5, .compare_title = "Accuracy (paired by question)",
		.compare = ctq_fam_eval_compare,
		.scale = CTQ_FAM_SCALE_PROPORTION,
		.trend = ctq_fam_eval_trend, .trend_plot = &eval_plot,
	},
	[CTQ_FAM_BENCH_SERVE] = {
		.id = CTQ_FAM_BENCH_SERVE, .name = "serving", .file = "bench_serve.csv",
		.columns = COLUMNS(bench_serve_cols),
		.report_rank = 6, .report_title = "Serving load", .report = ctq_fam_bench_serve_report,
		.compare_rank = 4, .compare_title = "Serving load (per request)",
		.compare = ctq_fam_bench_serve_compare,
		.scale = CTQ_FAM_SCALE_RELATIVE, .show_all = true, .timing_metrics = bench_serve_timings,
		.trend = ctq_fam_bench_serve_trend,
	},
	[CTQ_FAM_EVAL_KLD] = {
		.id = CTQ_FAM_EVAL_KLD, .name = "kld", .file = "eval_kld.csv",
		.columns = COLUMNS(eval_kld_cols),
		.report_rank = 3, .report_title = "Token distributions (KL divergence)",
		.report = ctq_fam_eval_kld_report, .report_end = ctq_fam_eval_kld_report_end,
		.compare_rank = 6, .compare_title = "Token distributions (paired by window)",
		.compare = ctq_fam_eval_kld_compare,
		.scale = CTQ_FAM_SCALE_FACTOR,
		.trend = ctq_fam_eval_kld_trend,
	},
	[CTQ_FAM_VERIFY_WEIGHTS] = {
		.id = CTQ_FAM_VERIFY_WEIGHTS, .name = "verify_weights", .file = "verify.csv",
		.columns = COLUMNS(verify_weights_cols),
		.report_rank = 1, .report_title = "Weights against their source",
		.report = ctq_fam_verify_weights_report,
		.compare_rank = 1, .compare_title = "Weights against their source",
		.compare = ctq_fam_verify_weights_compare,
		.scale = CTQ_FAM_SCALE_FACTOR,
		.trend = ctq_fam_verify_weights_trend,
	},
};
/* clang-format on */

const struct ctq_family_def *ctq_family(int id)
{
	return id >= 0 && id < CTQ_FAM_COUNT ? &ctq_families[id] : NULL;
}

int ctq_family_by_file(const char *name)
{
	for (int f = 0; f < CTQ_FAM_COUNT; f++)
		if (!strcmp(name, ctq_families[f].file))
			return f;
	return -1;
}

const char *ctq_family_name(enum ctq_family f)
{
	return f < CTQ_FAM_COUNT ? ctq_families[f].name : "unknown";
}

const char *ctq_family_file(enum ctq_family f)
{
	return f < CTQ_FAM_COUNT ? ctq_families[f].file : "";
}

static int rank_of(const struct ctq_family_def *d, enum ctq_fam_order o)
{
	switch (o) {
	case CTQ_FAM_ORDER_REPORT: return d->report_rank;
	case CTQ_FAM_ORDER_COMPARE: return d->compare_rank;
	case CTQ_FAM_ORDER_TREND_PLOT: return d->trend_plot ? d->trend_plot->rank : -1;
	}
	return -1;
}

/* Insertion by rank (a handful of rows; equal ranks keep the table's
 * order); a family without a rank in o (-1) is left out. */
size_t ctq_families_ordered(const struct ctq_family_def *out[CTQ_FAM_COUNT], enum ctq_fam_order o)
{
	size_t n = 0;
	for (int i = 0; i < CTQ_FAM_COUNT; i++) {
		const struct ctq_family_def *d = &ctq_families[i];
		int rank = rank_of(d, o);
		if (rank < 0)
			continue;
		size_t j = n++;
		for (; j > 0 && rank_of(out[j - 1], o) > rank; j--)
			out[j] = out[j - 1];
		out[j] = d;
	}
	return n;
}
