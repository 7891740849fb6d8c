/* The fail-the-Nth-allocation sweep (core/arena.h ctq_alloc_fail_after)
 * over the runner and the report writers: every allocation failing in turn
 * gives out-of-memory (or the command's error exit), never a crash, and the
 * same call succeeds once the hook lets everything through. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "checkpoint/quantize.h"
#include "checkpoint/synth.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "harness/commands.h"
#include "model/runner.h"

static void make_model(char *dir, size_t cap, char *qdir, size_t qcap)
{
	snprintf(dir, cap, "/tmp/ctq-alloc-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(qdir, qcap, "%s-w8a8", dir);
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3", "tiny", &err), CTQ_OK, "%s", err.message);
	s.seed = 3;
	cr_assert_eq(ctq_synth_write(&s, dir, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	struct ctq_quantize_result res;
	memset(&res, 0, sizeof res);
	cr_assert_eq(ctq_quantize_checkpoint(dir, qdir, NULL, &res, &err), CTQ_OK, "%s", err.message);
	ctq_quantize_result_free(&res);
}

/* Loading and one forward pass of the W8A8 runner on the reference backend
 * under the sweep: each failure is nomem with the runner freed, and the
 * sweep reaches a load that succeeds. */
Test(alloc_sweep, runner_load_and_forward, .timeout = 300)
{
	char dir[64], qdir[96];
	make_model(dir, sizeof dir, qdir, sizeof qdir);
	const struct ctq_runner_options o = {.max_slots = 2, .max_len = 32, .max_tokens = 16};
	int failures = 0;
	bool done = false;
	for (long n = 0; n < 1000000 && !done; n = n < 60 ? n + 1 : n * 5 / 4) {
		struct ctq_backend b;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_backend_open(&b, "reference", &err), CTQ_OK, "%s", err.message);
		struct ctq_runner r;
		ctq_alloc_fail_after(n);
		enum ctq_status st = ctq_runner_load(&r, &b, qdir, &o, &err);
		if (!st) {
			int32_t ids[4] = {1, 2, 3, 4}, slot[4] = {0}, pos[4] = {0, 1, 2, 3};
			int64_t rows[1] = {3};
			float *lg = malloc((size_t)r.cfg.vocab * 4);
			cr_assert(lg);
			st = ctq_runner_forward(&r, ids, slot, pos, 4, rows, 1, lg, &err);
			free(lg);
			ctq_runner_free(&r);
		}
		ctq_alloc_fail_after(-1);
		ctq_backend_close(&b);
		if (!st) {
			done = true;
			break;
		}
		failures++;
		cr_expect_eq(st, CTQ_ERR_NOMEM, "n=%ld: %s (%s)", n, ctq_status_name(st), err.message);
	}
	cr_expect(done, "the sweep never reached a load that succeeds");
	cr_expect_gt(failures, 10, "the sweep must hit failures (%d)", failures);
	ctq_remove_tree(dir);
	ctq_remove_tree(qdir);
}

/* ctq report over a conform run under the sweep: an error exit or success,
 * never a crash, and success once allocations pass. */
Test(alloc_sweep, report_writers, .timeout = 300)
{
	char root[64], run[96];
	snprintf(root, sizeof root, "/tmp/ctq-alloc-rep-XXXXXX");
	cr_assert(mkdtemp(root));
	snprintf(run, sizeof run, "%s/run", root);
	char *cargv[] = {"conform", "--suite", "suites/presets", "--out", run, NULL};
	cr_assert_eq(ctq_cmd_conform(5, cargv), CTQ_EXIT_OK);
	int failures = 0;
	bool done = false;
	for (long n = 0; n < 1000000 && !done; n = n < 60 ? n + 1 : n * 5 / 4) {
		char *rargv[] = {"report", run, NULL};
		ctq_alloc_fail_after(n);
		int rc = ctq_cmd_report(2, rargv);
		ctq_alloc_fail_after(-1);
		if (rc == CTQ_EXIT_OK) {
			done = true;
			break;
		}
		failures++;
		cr_expect(rc == CTQ_EXIT_USAGE || rc == CTQ_EXIT_ENV || rc == CTQ_EXIT_FAIL, "n=%ld: rc %d", n, rc);
	}
	cr_expect(done, "the sweep never reached a report that succeeds");
	cr_expect_gt(failures, 5, "the sweep must hit failures (%d)", failures);
	char path[160];
	snprintf(path, sizeof path, "%s/summary.md", run);
	cr_expect(ctq_path_exists(path), "no summary.md after the sweep");
	ctq_remove_tree(root);
}
