/* ctq JUnit XML of a plan run: one <testsuite> "ctq.run" with a testcase
 * per step (passed, <failure>, <error> or <skipped> with its reason),
 * followed by every <testsuite> of the steps' own junit.xml files, their
 * names prefixed with the step id, all under one <testsuites> root, so a CI
 * server reads one file for the whole run.
 * A step that passed by failing as expected ("expect": "fail") adds only its
 * testcase, the reason in <system-out>.
 * A step whose folder holds a probe.csv (ctq probe writes no junit.xml) adds
 * a <testsuite> "<id>: ctq.probe" with a testcase per probe row, failed
 * unless its outcome is pass. The run's verdict goes into the ctq.run
 * suite's <properties> (property "verdict").
 *
 * What it is not: a JUnit parser. A step's file is taken as ctq writes it
 * (results/junit.h): the <testsuite> elements are copied verbatim; a file
 * without any is ignored.
 */
#ifndef CTQ_RESULTS_JUNIT_MERGE_H
#define CTQ_RESULTS_JUNIT_MERGE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct ctq_junit_step {
	const char *id;
	const char *command;    /* the command line, for the testcase's classname */
	const char *status;     /* "passed", "failed", "error" or "skipped" */
	const char *message;    /* reason; NULL when passed (but see expected_failure) */
	double time_s;
	const char *junit_path; /* the step's junit.xml, or NULL */
	const char *probe_csv;  /* the step's probe.csv, or NULL */
	/* passed because its check failed as the plan expects ("expect":
	 * "fail"): its testcase carries message as <system-out>, and its own
	 * junit.xml and probe.csv are not copied (their failures are the
	 * expected ones: a CI server would count them against the run) */
	bool expected_failure;
};

/* Writes path. name: the run's name (the plan); verdict: the run's verdict
 * (e.g. "PASS (CPU only: no GPU was qualified)"), or NULL. Errors: io-error,
 * out-of-memory; an unreadable step file is skipped, not an error. */
enum ctq_status ctq_junit_merge(const char *path, const char *name, const char *verdict,
				const struct ctq_junit_step *steps, size_t n,
				struct ctq_error *err);

#endif
