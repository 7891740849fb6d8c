/* ctq report: summary.md, report.html and plots/ for a run directory
 * (reports/report.h). */
#include "harness/commands.h"
#include "reports/report.h"
#include "results/run.h"

static void help(void)
{
	printf("usage: ctq report RUN\n"
	       "\n"
	       "Writes RUN/summary.md, RUN/report.html (self-contained: plots embedded as\n"
	       "data URIs, no external resources) and RUN/plots/ (PNG + the gnuplot script and\n"
	       "data that drew each) for the run directory RUN: a plan run (ctq run) or the\n"
	       "run directory of one command (conform, probe, bench model, bench gemm, eval).\n"
	       "The report opens with the verdict and the environment, then the step outcomes,\n"
	       "then one section per check family found: conformance, kernel probes, accuracy,\n"
	       "performance, GEMM throughput (the kernel targets as pass / miss), and checkpoint\n"
	       "provenance.\n"
	       "\n"
	       "Plots need gnuplot (gnuplot-nox; CTQ_GNUPLOT=none turns them off); without it\n"
	       "the report says so and keeps every table.\n"
	       "\n"
	       "exit: 0 written (whatever the verdict; the verdict is the run's exit code);\n"
	       "      2 RUN is not a finished ctq run directory (no manifest.json, or a run\n"
	       "        that did not finish: still named *.tmp-XXXXXX, or a manifest without\n"
	       "        ended_utc) or a result file is malformed.\n");
}

int ctq_cmd_report(int argc, char **argv)
{
	const char *dir = NULL;
	const struct ctq_opt opts[] = {CTQ_OPT_END};
	int prc = ctq_opt_parse_need("report", argc, argv, opts, &dir, 1, help, &dir,
				     "RUN (a run directory) is required (see --help)");
	if (prc >= 0)
		return prc;
	struct ctq_error err = {0};
	struct ctq_report_summary s;
	enum ctq_status st = ctq_run_dir_check(dir, &err);
	if (!st)
		st = ctq_report_write(dir, NULL, &s, &err);
	if (st) {
		ctq_print_error("report", &err);
		return ctq_status_exit_code(st);
	}
	printf("report: verdict %s; wrote %s/summary.md, %s/report.html", s.verdict, dir, dir);
	if (s.n_plots)
		printf(" and %zu plot(s) in %s/plots/\n", s.n_plots, dir);
	else
		printf("%s%s\n", s.plot_note[0] ? "; " : "", s.plot_note);
	return CTQ_EXIT_OK;
}
