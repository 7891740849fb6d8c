/* ctq conform: runs conformance cases (DESIGN.md "Suite case format") under
 * each profile they name, one row per check in conform.csv, one testcase per
 * check in junit.xml, and a closing "N passed, N failed" line. */
#include "harness/commands.h"
#include "core/arena.h"
#include "conform/suite.h"
#include "results/csv_out.h"
#include "results/junit.h"
#include "results/run.h"
#include "families/conform.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: ctq conform --suite DIR [--filter GLOB] [--out DIR [--force]] [--verbose]\n"
	       "\n"
	       "Runs every conformance case below DIR (JSON files; folders named fixtures\n"
	       "hold data) under each semantics profile the case names, and checks the\n"
	       "expected plan entries and config errors.\n"
	       "\n"
	       "options:\n"
	       "  --suite DIR    folder (or one file) of cases\n"
	       "  --filter GLOB  only cases whose id matches (fnmatch), e.g. 'vectors/*'\n"
	       "  --out DIR      run directory (default runs/<UTC time>-<revision>): conform.csv,\n"
	       "                 junit.xml, manifest.json; written only when the suite loads\n"
	       "  --force        replace DIR when it is an existing ctq run directory (any\n"
	       "                 other non-empty DIR is refused)\n"
	       "  --verbose      print every check, not only failures\n"
	       "\n"
	       "exit: 0 all checks passed; 1 a check failed; 2 a case file is malformed\n"
	       "      (nothing is run or written) or bad usage.\n");
}

static const char *const csv_header[] = {CTQ_CONFORM_CSV_COLUMNS};

static enum ctq_status write_outputs(struct ctq_run *run, const struct ctq_checks *ck,
				     struct ctq_error *err)
{
	char path[1200];
	struct ctq_csv w;
	enum ctq_status st = ctq_csv_open(&w, ctq_run_path(run, "conform.csv", path, sizeof path),
					  csv_header, sizeof csv_header / sizeof *csv_header,
					  err);
	if (st)
		return st;
	for (size_t i = 0; i < ck->n; i++)
		ctq_fam_conform_csv_row(&w, &ck->v[i]);
	if ((st = ctq_csv_close(&w, err)))
		return st;
	struct ctq_junit_case *jc = ctq_calloc(ck->n + 1, sizeof *jc);
	char **names = ctq_calloc(ck->n + 1, sizeof *names);
	if (!jc || !names) {
		free(jc);
		free(names);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "junit.xml", "out of memory");
	}
	for (size_t i = 0; i < ck->n && !st; i++) {
		const struct ctq_check *k = &ck->v[i];
		size_t n = strlen(k->name) + 16;
		names[i] = ctq_malloc(n);
		if (!names[i]) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, "junit.xml", "out of memory");
			break;
		}
		snprintf(names[i], n, "%s: %s", ctq_semantics_name(k->sem), k->name);
		jc[i] = (struct ctq_junit_case){k->case_id, names[i], !k->passed,
						k->passed ? NULL : k->detail, 0};
	}
	if (!st)
		st = ctq_junit_write(ctq_run_path(run, "junit.xml", path, sizeof path), "ctq.conform",
				     jc, ck->n, err);
	for (size_t i = 0; i < ck->n; i++)
		free(names[i]);
	free(names);
	free(jc);
	return st;
}

int ctq_cmd_conform(int argc, char **argv)
{
	const char *suite_dir = NULL, *filter = NULL;
	struct ctq_opt_out out = {0};
	bool verbose = false;
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--suite", &suite_dir),
		CTQ_OPT_STR("--filter", &filter),
		CTQ_OPT_OUT(&out),
		CTQ_OPT_FLAG("--verbose", &verbose),
		CTQ_OPT_FLAG("-v", &verbose),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse_need("conform", argc, argv, opts, NULL, 0, help, &suite_dir,
				     "--suite DIR is required (see --help)");
	if (prc >= 0)
		return prc;
	if (!ctq_opt_out_ok("conform", &out))
		return CTQ_EXIT_USAGE;
	struct ctq_suite suite;
	struct ctq_checks checks = {0};
	struct ctq_error err = {0};
	struct ctq_run run;
	memset(&run, 0, sizeof run);
	int rc = CTQ_EXIT_USAGE;
	enum ctq_status st = ctq_suite_load(&suite, suite_dir, &err);
	if (st) {
		ctq_print_error("conform", &err);
		rc = ctq_status_exit_code(st);
		goto out;
	}
	/* Begun before the cases run: numeric cases build their scratch
	 * checkpoints inside the temporary run directory, so that a killed
	 * run leaves nothing outside it (core/cleanup.h removes it). */
	if ((st = ctq_run_begin(&run, out.dir, out.force, "conform", argc, argv, &err))) {
		ctq_print_error("conform", &err);
		rc = ctq_status_exit_code(st);
		goto out;
	}
	const struct ctq_case_run_options ro = {.scratch_dir = run.tmp_dir};
	size_t n_cases = 0;
	for (size_t i = 0; i < suite.n_cases; i++) {
		const struct ctq_case *c = &suite.cases[i];
		if (filter && fnmatch(filter, c->id, 0) != 0)
			continue;
		n_cases++;
		for (int s = 0; s < CTQ_SEM_COUNT; s++) {
			if (!c->sem[s])
				continue;
			if ((st = ctq_case_run_opts(c, (enum ctq_semantics)s, &ro, &checks, &err))) {
				ctq_print_error("conform", &err);
				ctq_run_abort(&run);
				rc = ctq_status_exit_code(st);
				goto out;
			}
		}
	}
	if (!n_cases) {
		fprintf(stderr, "ctq conform: no case matches --filter %s\n", filter);
		ctq_run_abort(&run);
		goto out;
	}
	size_t passed = 0, failed = 0;
	for (size_t i = 0; i < checks.n; i++) {
		const struct ctq_check *k = &checks.v[i];
		if (k->passed)
			passed++;
		else
			failed++;
		if (k->passed && !verbose)
			continue;
		printf("%s %s [%s] %s\n", k->passed ? "pass" : "FAIL", k->case_id,
		       ctq_semantics_name(k->sem), k->name);
		if (!k->passed)
			printf("     expected: %s\n     actual:   %s\n     why:      %s\n     file:     %s\n",
			       k->expected, k->actual, k->detail, k->file);
	}
	if ((st = write_outputs(&run, &checks, &err))) {
		ctq_print_error("conform", &err);
		ctq_run_abort(&run);
		rc = ctq_status_exit_code(st);
		goto out;
	}
	cJSON *summary = cJSON_AddObjectToObject(run.manifest, "conform");
	cJSON_AddStringToObject(summary, "suite", suite_dir);
	cJSON_AddNumberToObject(summary, "cases", (double)n_cases);
	cJSON_AddNumberToObject(summary, "checks_passed", (double)passed);
	cJSON_AddNumberToObject(summary, "checks_failed", (double)failed);
	if ((st = ctq_run_commit(&run, &err))) {
		ctq_print_error("conform", &err);
		rc = ctq_status_exit_code(st);
		goto out;
	}
	printf("\nconform: %zu case(s), results in %s/ (conform.csv, junit.xml)\n", n_cases,
	       run.final_dir);
	printf("conform: %zu passed, %zu failed\n", passed, failed);
	rc = failed ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
out:
	ctq_checks_free(&checks);
	ctq_suite_free(&suite);
	return rc;
}
