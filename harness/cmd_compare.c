/* ctq compare: the regression verdict between two run directories
 * (reports/compare.h), or with --trend a table and plots over N runs. */
#include "harness/commands.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "reports/compare.h"
#include "results/env.h"
#include "reports/report.h"
#include "results/run.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: ctq compare BASE NEW [--policy FILE] [--out DIR [--force]] [--quiet]\n"
	       "       ctq compare --ab BASE_SET NEW_SET [--policy FILE] [--out DIR [--force]]\n"
	       "       ctq compare RUN1 RUN2 ... RUNn --trend [--out DIR [--force]]\n"
	       "\n"
	       "Pairs the observations of two run directories by key and calls each change:\n"
	       "  conformance  conform.csv by (case_id, semantics, check): pass -> fail regresses\n"
	       "  probe        probe.csv by (layer, K, N, M, weights, acts, backend): rel-L2\n"
	       "               grown beyond the policy factor, new NaN/Inf, pass -> fail\n"
	       "  timing       bench_model.csv by (role, backend, batch, input_tokens,\n"
	       "               output_tokens), the role when both files have one:\n"
	       "               ttft_ms and decode_ms_per_step: the samples of one run share\n"
	       "               its clock and load, so each side is its median; under the\n"
	       "               threshold (5%%) same, beyond the run-noise allowance (1.5x)\n"
	       "               slower (a regression) or faster, in between ambiguous (rerun\n"
	       "               both sides); ambiguous too with too few or too noisy samples\n"
	       "  gemm         bench_gemm.csv by (shape, K, N, M, impl): time_us over the\n"
	       "               medians of bench_gemm_samples.csv, the same verdicts\n"
	       "               (ambiguous without a samples file); a ctq implementation whose\n"
	       "               check is not pass on the new side regresses\n"
	       "  serving      bench_serve.csv by role when both files have one, else whole:\n"
	       "               ttft_ms, tpot_ms and latency_ms, the median over the requests,\n"
	       "               the same verdicts with the serving cv limit (not judged when the\n"
	       "               manifests show another load); a request not served on the new\n"
	       "               side regresses\n"
	       "  accuracy     eval_questions.csv by (benchmark, subject, id): paired by\n"
	       "               question, exact McNemar p and a 95%% CI of the difference; a\n"
	       "               significant drop of at least the policy minimum regresses;\n"
	       "               answer agreement (the share of questions choosing the same\n"
	       "               letter, e.g. --tp 2 against --tp 1) is reported, not gated\n"
	       "  steps        a plan run's steps: passed -> failed or error regresses\n"
	       "Files pair by their path in the run directory (one per family pairs anyway);\n"
	       "GEMM points and serving keys only in BASE regress when the policy's\n"
	       "missing.is_regression says so. A result family with files in BASE and none\n"
	       "in NEW (every conform.csv gone, say) is a regression unless the policy's\n"
	       "missing_family.<family> exempts it, with its reason.\n"
	       "\n"
	       "One run a side cannot gate small timing changes: runs of one build drift\n"
	       "(sd 5-7%% a run on a 2-core CPU), so only a ratio beyond 1.5x is called.\n"
	       "With --ab, BASE_SET and NEW_SET are folders of runs made interleaved by\n"
	       "tools/ab-run.sh (base, new, new, base, ...; pairs by folder name, checked by\n"
	       "start time): each pair shares the drift, and each timing series gets a\n"
	       "paired t test over the pairs (timing.ab_alpha 0.002, at least\n"
	       "timing.ab_min_pairs 5), which gates a +30%% change of one family in more\n"
	       "than 95%% of pairs of sets and noise in under 1%%. Other families compare\n"
	       "the first pair.\n"
	       "\n"
	       "options:\n"
	       "  --policy FILE  thresholds and their reasons (default: built-in, the same as\n"
	       "                 policies/compare.json)\n"
	       "  --out DIR      where compare.md and compare.csv (trend.md, trend.csv, plots/)\n"
	       "                 go, with a manifest (default runs/<UTC time>-<revision>)\n"
	       "  --force        replace DIR when it is an existing ctq run directory (any\n"
	       "                 other non-empty DIR is refused)\n"
	       "  --trend        tabulate every metric over RUN1..RUNn (no verdict)\n"
	       "  --ab           BASE and NEW are interleaved run sets (tools/ab-run.sh)\n"
	       "  --quiet        no table on stdout, only the verdict line\n"
	       "\n"
	       "exit: 0 no regression; 1 a regression; 2 bad usage or unreadable input.\n");
}

static int trend(char **dirs, int n, const struct ctq_opt_out *out, int argc, char **argv)
{
	struct ctq_error err = {0};
	struct ctq_trend t;
	struct ctq_run run;
	memset(&run, 0, sizeof run);
	enum ctq_status st = ctq_trend_collect(&t, dirs, (size_t)n, &err);
	if (st) {
		ctq_print_error("compare", &err);
		return ctq_status_exit_code(st);
	}
	struct ctq_strbuf md;
	ctq_strbuf_init(&md);
	ctq_trend_markdown(&t, dirs, &md);
	fputs(ctq_strbuf_str(&md), stdout);
	char path[1300];
	size_t n_plots = 0;
	if ((st = ctq_run_begin(&run, out->dir, out->force, "compare", argc, argv, &err)))
		goto fail;
	ctq_env_capture(run.manifest, &(struct ctq_env_options){0});
	snprintf(path, sizeof path, "%s/plots", run.tmp_dir);
	if ((st = ctq_trend_write_csv(&t, ctq_run_path(&run, "trend.csv", path, sizeof path), &err)) ||
	    (st = ctq_file_write_atomic(ctq_run_path(&run, "trend.md", path, sizeof path), md.data,
					md.len, &err)) ||
	    (st = ctq_report_trend_plots(&t, ctq_run_path(&run, "plots", path, sizeof path), &n_plots,
					 &err)))
		goto fail;
	cJSON *runs = cJSON_AddArrayToObject(run.manifest, "trend_runs");
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(runs, cJSON_CreateString(dirs[i]));
	if ((st = ctq_run_commit(&run, &err)))
		goto fail;
	printf("\ntrend: %zu series over %d runs; results in %s/ (trend.md, trend.csv%s)\n", t.n, n,
	       run.final_dir, n_plots ? ", plots/" : "");
	ctq_strbuf_free(&md);
	ctq_trend_free(&t);
	return CTQ_EXIT_OK;
fail:
	ctq_print_error("compare", &err);
	ctq_run_abort(&run);
	ctq_strbuf_free(&md);
	ctq_trend_free(&t);
	return ctq_status_exit_code(st);
}

int ctq_cmd_compare(int argc, char **argv)
{
	const char *policy_path = NULL;
	struct ctq_opt_out out = {0};
	bool do_trend = false, quiet = false, ab = false;
	char **dirs = ctq_calloc((size_t)argc + 1, sizeof *dirs);
	if (!dirs)
		return CTQ_EXIT_USAGE;
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--policy", &policy_path),
		CTQ_OPT_OUT(&out),
		CTQ_OPT_FLAG("--trend", &do_trend),
		CTQ_OPT_FLAG("--ab", &ab),
		CTQ_OPT_FLAG("--quiet", &quiet),
		CTQ_OPT_FLAG("-q", &quiet),
		CTQ_OPT_END,
	};
	/* Every other argument is a run directory: dirs has room for all. */
	int rc = ctq_opt_parse("compare", argc, argv, opts, (const char **)dirs, argc, help);
	if (rc >= 0) {
		free(dirs);
		return rc;
	}
	rc = CTQ_EXIT_USAGE;
	int n = 0;
	while (dirs[n])
		n++;
	if (ab && do_trend) {
		fprintf(stderr, "ctq compare: --ab and --trend do not combine\n");
		goto out;
	}
	for (int i = 0; i < n && !ab; i++) {
		struct ctq_error derr = {0};
		if (ctq_run_dir_check(dirs[i], &derr)) {
			ctq_print_error("compare", &derr);
			goto out;
		}
	}
	if (!ctq_opt_out_ok("compare", &out))
		goto out;
	if (do_trend) {
		if (n < 2) {
			fprintf(stderr, "ctq compare --trend: give at least two run directories\n");
			goto out;
		}
		rc = trend(dirs, n, &out, argc, argv);
		goto out;
	}
	if (n != 2) {
		fprintf(stderr, ab ? "ctq compare --ab: give BASE_SET and NEW_SET (two run sets)\n"
				   : "ctq compare: give BASE and NEW (two run directories; --trend for more)\n");
		goto out;
	}
	struct ctq_compare_policy pol;
	struct ctq_error err = {0};
	ctq_compare_policy_default(&pol);
	if (policy_path && ctq_compare_policy_load(&pol, policy_path, &err)) {
		ctq_print_error("compare", &err);
		goto out;
	}
	struct ctq_comparison c;
	enum ctq_status st = ab ? ctq_compare_ab(&c, dirs[0], dirs[1], &pol, &err)
				: ctq_compare_runs(&c, dirs[0], dirs[1], &pol, &err);
	if (st) {
		ctq_print_error("compare", &err);
		rc = ctq_status_exit_code(st);
		goto out;
	}
	if (!quiet) {
		printf("compare %s -> %s (policy: %s)\n\n", dirs[0], dirs[1], pol.source);
		ctq_comparison_print(&c, stdout);
	}
	struct ctq_strbuf md;
	ctq_strbuf_init(&md);
	ctq_comparison_markdown(&c, dirs[0], dirs[1], &pol, &md);
	struct ctq_run run;
	char path[1300];
	if ((st = ctq_run_begin(&run, out.dir, out.force, "compare", argc, argv, &err))) {
		ctq_print_error("compare", &err);
		ctq_strbuf_free(&md);
		ctq_comparison_free(&c);
		rc = ctq_status_exit_code(st);
		goto out;
	}
	ctq_env_capture(run.manifest, &(struct ctq_env_options){0});
	cJSON *cm = cJSON_AddObjectToObject(run.manifest, "compare");
	cJSON_AddStringToObject(cm, "base", dirs[0]);
	cJSON_AddStringToObject(cm, "new", dirs[1]);
	cJSON_AddStringToObject(cm, "policy", pol.source);
	if (ab)
		cJSON_AddNumberToObject(cm, "ab_pairs", (double)c.ab_pairs);
	cJSON_AddNumberToObject(cm, "regressions", (double)c.n_regressions);
	cJSON_AddNumberToObject(cm, "improvements", (double)c.n_improvements);
	cJSON_AddNumberToObject(cm, "ambiguous", (double)c.n_ambiguous);
	cJSON_AddNumberToObject(cm, "ambiguous_busy_host", (double)c.n_busy);
	if (md.oom)
		st = ctq_error_set(&err, CTQ_ERR_NOMEM, "compare.md", "out of memory");
	if (st || (st = ctq_comparison_write_csv(&c, ctq_run_path(&run, "compare.csv", path, sizeof path), &err)) ||
	    (st = ctq_file_write_atomic(ctq_run_path(&run, "compare.md", path, sizeof path), md.data,
					md.len, &err))) {
		ctq_print_error("compare", &err);
		ctq_run_abort(&run);
		rc = ctq_status_exit_code(st);
	} else {
		if ((st = ctq_run_commit(&run, &err))) {
			ctq_print_error("compare", &err);
			rc = ctq_status_exit_code(st);
		} else {
			printf("%scompare: %s — %zu regression(s), %zu improvement(s), %zu ambiguous; "
			       "%zu file(s) paired; details in %s/compare.md\n",
			       quiet ? "" : "\n", c.n_regressions ? "REGRESSION" : "no regression",
			       c.n_regressions, c.n_improvements, c.n_ambiguous, c.n_files, run.final_dir);
			if (c.busy_host[0])
				printf("compare: %s; %zu slower timing(s) called ambiguous (busy host): "
				       "show a regression with --ab\n", c.busy_host, c.n_busy);
			rc = c.n_regressions ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
		}
	}
	ctq_strbuf_free(&md);
	ctq_comparison_free(&c);
out:
	free(dirs);
	return rc;
}
