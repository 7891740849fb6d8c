/* Criterion tests for run directories (results/run.h) and the commit that
 * moves one into place (core/fileio.h ctq_tmpdir_commit):
 *   - what report and compare accept: only a finished run directory; an
 *     empty folder, a folder without a manifest and the temporary folder of
 *     a run that was killed (complete-looking manifest and junit.xml, still
 *     named *.tmp-XXXXXX) are usage errors naming the path (exit 2);
 *   - what --out may replace: nothing but an empty folder, or a run
 *     directory with --force; a run commits through begin/commit;
 *   - replacing moves the old one aside first: when the new one cannot move
 *     in, the old one is still there. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "harness/commands.h"
#include "results/run.h"

#define FINISHED_MANIFEST "{\"schema_version\": 1, \"command\": \"conform\", \"ended_utc\": \"2026-01-01T00:00:00Z\"}"
#define JUNIT "<?xml version=\"1.0\"?><testsuites tests=\"1\" failures=\"0\"><testsuite name=\"x\" tests=\"1\"><testcase name=\"a\"/></testsuite></testsuites>\n"

/* The first case is the finished run the others are compared against. */
static void make_root(char *root, size_t cap)
{
	snprintf(root, cap, "/tmp/ctq-run-XXXXXX");
	cr_assert(mkdtemp(root));
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	cr_assert_eq(ctq_mkdirs(path, NULL), CTQ_OK);
	*slash = '/';
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* Runs a command with stdout to /dev/null; its exit code. */
static int quiet_cmd(int (*fn)(int, char **), int argc, char **argv)
{
	fflush(stdout);
	FILE *saved = freopen("/dev/null", "w", stdout);
	(void)saved;
	int rc = fn(argc, argv);
	fflush(stdout);
	return rc;
}

TestSuite(run);

Test(run, only_a_finished_run_directory_is_read)
{
	char root[64], dir[128];
	make_root(root, sizeof root);
	static const struct {
		const char *id, *name, *manifest, *message;
		enum ctq_run_dir_kind kind;
	} cases[] = {
		{"finished", "done", FINISHED_MANIFEST, NULL, CTQ_RUN_DIR_FINISHED},
		{"empty-folder", "empty", NULL, "empty folder", CTQ_RUN_DIR_EMPTY},
		{"no-manifest", "other", "", "no manifest.json", CTQ_RUN_DIR_OTHER},
		{"not-a-ctq-manifest", "foreign", "{\"hello\": 1}", "schema_version", CTQ_RUN_DIR_OTHER},
		{"killed-before-rename", "run.tmp-Ab12Cd", FINISHED_MANIFEST, "did not finish",
		 CTQ_RUN_DIR_UNFINISHED},
		{"no-ended-utc", "unended", "{\"schema_version\": 1, \"command\": \"run\"}",
		 "did not finish", CTQ_RUN_DIR_UNFINISHED},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(dir, sizeof dir, "%s/%s", root, cases[i].name);
		cr_assert_eq(ctq_mkdirs(dir, NULL), CTQ_OK);
		if (cases[i].manifest) {
			put(dir, "junit.xml", JUNIT);
			if (cases[i].manifest[0])
				put(dir, "manifest.json", cases[i].manifest);
		}
		cr_expect_eq(ctq_run_dir_kind(dir), cases[i].kind, "%s: kind %d", cases[i].id,
			     (int)ctq_run_dir_kind(dir));
		struct ctq_error err = {0};
		enum ctq_status st = ctq_run_dir_check(dir, &err);
		if (!cases[i].message) {
			cr_expect_eq(st, CTQ_OK, "%s: %s", cases[i].id, err.message);
			continue;
		}
		cr_expect_eq(st, CTQ_ERR_USAGE, "%s", cases[i].id);
		cr_expect_str_eq(err.path, dir, "%s", cases[i].id);
		cr_expect(strstr(err.message, cases[i].message), "%s: %s", cases[i].id, err.message);
		/* report and compare refuse it with exit 2 */
		char *rargv[] = {"report", dir, NULL};
		cr_expect_eq(quiet_cmd(ctq_cmd_report, 2, rargv), CTQ_EXIT_USAGE, "%s: report", cases[i].id);
		char done[128], out[128];
		snprintf(done, sizeof done, "%s/done", root);
		snprintf(out, sizeof out, "%s/cmp-%zu", root, i);
		char *cargv[] = {"compare", done, dir, "--out", out, "--quiet", NULL};
		cr_expect_eq(quiet_cmd(ctq_cmd_compare, 6, cargv), CTQ_EXIT_USAGE, "%s: compare", cases[i].id);
		cr_expect(!ctq_path_exists(out), "%s: compare wrote %s", cases[i].id, out);
	}
	ctq_remove_tree(root);
}

Test(run, out_replaces_only_an_empty_folder_or_a_run_directory_with_force)
{
	char root[64], dir[128];
	make_root(root, sizeof root);
	struct ctq_error err = {0};
	snprintf(dir, sizeof dir, "%s/new", root);
	cr_expect_eq(ctq_run_out_check(dir, false, &err), CTQ_OK, "absent: %s", err.message);
	cr_assert_eq(ctq_mkdirs(dir, NULL), CTQ_OK);
	cr_expect_eq(ctq_run_out_check(dir, false, &err), CTQ_OK, "empty: %s", err.message);

	/* a folder of someone else's files, and a regular file: never */
	snprintf(dir, sizeof dir, "%s/victim", root);
	put(dir, "important.txt", "keep me\n");
	put(dir, "sub/more.txt", "and me\n");
	for (int force = 0; force <= 1; force++) {
		memset(&err, 0, sizeof err);
		cr_expect_eq(ctq_run_out_check(dir, force, &err), CTQ_ERR_USAGE, "victim, force %d", force);
		cr_expect_str_eq(err.path, dir);
		struct ctq_run run;
		memset(&err, 0, sizeof err);
		cr_expect_eq(ctq_run_begin(&run, dir, force, "test", 0, NULL, &err), CTQ_ERR_USAGE);
		cr_expect(strstr(err.message, "refusing"), "%s", err.message);
	}
	char keep[160];
	snprintf(keep, sizeof keep, "%s/important.txt", dir);
	cr_expect(ctq_path_exists(keep));
	snprintf(keep, sizeof keep, "%s/sub/more.txt", dir);
	cr_expect(ctq_path_exists(keep));
	snprintf(dir, sizeof dir, "%s/file", root);
	put(root, "file", "a file\n");
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_run_out_check(dir, true, &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "not a folder"), "%s", err.message);

	/* a run directory: with --force only, and then replaced whole */
	snprintf(dir, sizeof dir, "%s/run", root);
	struct ctq_run run;
	char path[1300];
	char *argv[] = {"test", NULL};
	cr_assert_eq(ctq_run_begin(&run, dir, false, "test", 1, argv, &err), CTQ_OK, "%s", err.message);
	put(run.tmp_dir, "first.txt", "1\n");
	cr_assert_eq(ctq_run_commit(&run, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(ctq_run_dir_kind(dir), CTQ_RUN_DIR_FINISHED);
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_run_begin(&run, dir, false, "test", 1, argv, &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "--force"), "%s", err.message);
	cr_assert_eq(ctq_run_begin(&run, dir, true, "test", 1, argv, &err), CTQ_OK, "%s", err.message);
	put(run.tmp_dir, "second.txt", "2\n");
	cr_assert_eq(ctq_run_commit(&run, &err), CTQ_OK, "%s", err.message);
	snprintf(path, sizeof path, "%s/second.txt", dir);
	cr_expect(ctq_path_exists(path));
	snprintf(path, sizeof path, "%s/first.txt", dir);
	cr_expect(!ctq_path_exists(path), "the old run's files are gone");
	/* nothing left beside it: no *.tmp-* and no *.old-* */
	char cmd[300];
	snprintf(cmd, sizeof cmd, "ls %s | grep -q 'run\\.'", root);
	cr_expect_neq(system(cmd), 0, "a temporary or aside folder was left in %s", root);
	/* a trailing slash still puts the temporary folder beside, not inside */
	snprintf(path, sizeof path, "%s/slash/", root);
	cr_assert_eq(ctq_run_begin(&run, path, false, "test", 1, argv, &err), CTQ_OK, "%s", err.message);
	cr_expect(!strstr(run.tmp_dir, "slash/"), "%s", run.tmp_dir);
	ctq_run_abort(&run);
	ctq_remove_tree(root);
}

Test(run, replacing_keeps_the_old_one_until_the_new_one_is_in)
{
	char root[64], final_dir[128], tmp[128], path[200];
	make_root(root, sizeof root);
	snprintf(final_dir, sizeof final_dir, "%s/out", root);
	put(final_dir, "old.txt", "old\n");
	/* the new one cannot move in (it is gone): the old one must survive */
	snprintf(tmp, sizeof tmp, "%s/out.tmp-gone00", root);
	struct ctq_error err = {0};
	cr_expect_eq(ctq_tmpdir_commit(tmp, final_dir, true, &err), CTQ_ERR_IO);
	snprintf(path, sizeof path, "%s/old.txt", final_dir);
	cr_expect(ctq_path_exists(path), "the old folder was deleted before the new one moved in");
	/* and a real replacement swaps them, leaving nothing aside */
	snprintf(tmp, sizeof tmp, "%s/out.tmp-new000", root);
	put(tmp, "new.txt", "new\n");
	cr_expect_eq(ctq_tmpdir_commit(tmp, final_dir, true, &err), CTQ_OK, "%s", err.message);
	cr_expect(!ctq_path_exists(path));
	snprintf(path, sizeof path, "%s/new.txt", final_dir);
	cr_expect(ctq_path_exists(path));
	cr_expect(!ctq_path_exists(tmp));
	char cmd[300];
	snprintf(cmd, sizeof cmd, "ls %s | grep -q 'old-'", root);
	cr_expect_neq(system(cmd), 0, "an aside folder was left in %s", root);
	/* a regular file at final_dir is replaced as well (make-model --force) */
	snprintf(final_dir, sizeof final_dir, "%s/afile", root);
	put(root, "afile", "x\n");
	snprintf(tmp, sizeof tmp, "%s/afile.tmp-new000", root);
	put(tmp, "new.txt", "new\n");
	cr_expect_eq(ctq_tmpdir_commit(tmp, final_dir, true, &err), CTQ_OK, "%s", err.message);
	cr_expect(ctq_path_is_dir(final_dir));
	ctq_remove_tree(root);
}

/* Default folders (no --out) of runs begun in one second do not collide. */
Test(run, default_folders_of_one_second_are_distinct)
{
	char root[64];
	make_root(root, sizeof root);
	cr_assert_eq(chdir(root), 0); /* this test's worker only */
	struct ctq_run a, b;
	struct ctq_error err = {0};
	char *argv[] = {"test", NULL};
	cr_assert_eq(ctq_run_begin(&a, NULL, false, "test", 1, argv, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_run_commit(&a, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_run_begin(&b, NULL, false, "test", 1, argv, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_neq(a.final_dir, b.final_dir);
	cr_assert_eq(ctq_run_commit(&b, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(ctq_run_dir_kind(a.final_dir), CTQ_RUN_DIR_FINISHED, "%s", a.final_dir);
	cr_expect_eq(ctq_run_dir_kind(b.final_dir), CTQ_RUN_DIR_FINISHED, "%s", b.final_dir);
	ctq_remove_tree(root);
}

/* --out LINK: a symbolic link to a folder is followed. The run is written
 * into the folder it leads to, empty or (with --force) a run directory,
 * and the link stays a link (it was once replaced by the run). A link to
 * nothing, or to a file, is refused naming it. */
Test(run, out_through_a_link_writes_into_the_folder_it_leads_to)
{
	char root[64], target[128], link[128], path[1300];
	make_root(root, sizeof root);
	snprintf(target, sizeof target, "%s/real", root);
	snprintf(link, sizeof link, "%s/latest", root);
	cr_assert_eq(ctq_mkdirs(target, NULL), CTQ_OK);
	cr_assert_eq(symlink("real", link), 0); /* relative, as ln -s makes it */
	char *argv[] = {"test", NULL};
	struct ctq_error err = {0};
	struct ctq_run run;
	for (int pass = 0; pass < 2; pass++) {
		/* first an empty folder, then the run directory it now holds (--force) */
		cr_assert_eq(ctq_run_begin(&run, link, pass == 1, "test", 1, argv, &err), CTQ_OK, "%s",
			     err.message);
		cr_expect(!strncmp(run.tmp_dir, root, strlen(root)) && strstr(run.tmp_dir, "/real.tmp-"),
			  "the temporary folder is not beside the target: %s", run.tmp_dir);
		put(run.tmp_dir, pass ? "second.txt" : "first.txt", "x\n");
		cr_assert_eq(ctq_run_commit(&run, &err), CTQ_OK, "%s", err.message);
		struct stat sb;
		cr_assert_eq(lstat(link, &sb), 0);
		cr_expect(S_ISLNK(sb.st_mode), "pass %d: the link was replaced", pass);
		snprintf(path, sizeof path, "%s/%s", target, pass ? "second.txt" : "first.txt");
		cr_expect(ctq_path_exists(path), "pass %d: %s missing", pass, path);
		snprintf(path, sizeof path, "%s/manifest.json", target);
		cr_expect(ctq_path_exists(path), "pass %d: no manifest in the target", pass);
		cr_expect_eq(ctq_run_dir_kind(link), CTQ_RUN_DIR_FINISHED);
	}
	/* without --force the run directory behind the link is kept */
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_run_begin(&run, link, false, "test", 1, argv, &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "--force"), "%s", err.message);
	/* a dangling link and a link to a file: refused, left alone */
	static const char *const to[] = {"nowhere", "afile"};
	put(root, "afile", "a file\n");
	for (size_t i = 0; i < 2; i++) {
		snprintf(link, sizeof link, "%s/link%zu", root, i);
		cr_assert_eq(symlink(to[i], link), 0);
		memset(&err, 0, sizeof err);
		cr_expect_eq(ctq_run_begin(&run, link, true, "test", 1, argv, &err), CTQ_ERR_USAGE, "%s", to[i]);
		cr_expect_str_eq(err.path, link);
		cr_expect(strstr(err.message, "symbolic link that does not lead to a folder"), "%s: %s", to[i],
			  err.message);
		struct stat sb;
		cr_expect(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode), "%s: the link is gone", to[i]);
	}
	ctq_remove_tree(root);
}

/* ---- the host's load around a run (issue 33, "The gate on a busy host") ------------- */

/* /proc/stat's "cpu " line, parsed into busy / steal / total ticks, and the
 * fractions of two marks: fixed inputs, so a slip of a field shows. */
Test(run, proc_stat_deltas_give_the_load_of_others)
{
	static const char stat_a[] =
		"cpu  1000 20 300 5000 40 5 6 7 0 0\n"
		"cpu0 500 10 150 2500 20 2 3 3 0 0\n"
		"intr 1 2 3\n";
	/* over the run: user +150, nice +0, system +30, idle +100, iowait +10,
	 * irq +5, softirq +5, steal +100: total 400 ticks */
	static const char stat_b[] =
		"cpu  1150 20 330 5100 50 10 11 107 0 0\n"
		"cpu0 575 10 165 2550 25 5 5 53 0 0\n";
	struct ctq_host_load_mark a = {.ok_cpu = true, .self_cpu_s = 10.0};
	struct ctq_host_load_mark b = {.ok_cpu = true, .self_cpu_s = 10.9};
	cr_assert(ctq_proc_stat_parse(stat_a, &a.cpu));
	cr_assert(ctq_proc_stat_parse(stat_b, &b.cpu));
	cr_expect_eq(a.cpu.busy, 1000 + 20 + 300 + 5 + 6);
	cr_expect_eq(a.cpu.steal, 7);
	cr_expect_eq(a.cpu.total, 1331 + 5000 + 40 + 7);
	struct ctq_host_load l;
	/* busy +190 ticks = 1.9 s at 100 Hz, this process 0.9 s: others 1.0 s of 4.0 s */
	ctq_host_load_between(&a, &b, 100, &l);
	cr_expect_float_eq(l.other_cpu, 0.25, 1e-12);
	cr_expect_float_eq(l.steal, 0.25, 1e-12);
	/* this process alone used more than the busy ticks (rounding): none for others */
	b.self_cpu_s = 13.0;
	ctq_host_load_between(&a, &b, 100, &l);
	cr_expect_float_eq(l.other_cpu, 0.0, 1e-12);
	/* an unreadable mark or no tick passed: unknown */
	b.ok_cpu = false;
	ctq_host_load_between(&a, &b, 100, &l);
	cr_expect(isnan(l.other_cpu) && isnan(l.steal));
	ctq_host_load_between(&a, &a, 100, &l);
	cr_expect(isnan(l.other_cpu));
	/* an old kernel's four fields; no cpu line */
	struct ctq_cpu_ticks t;
	cr_expect(ctq_proc_stat_parse("cpu  1 2 3 4\n", &t) && t.busy == 6 && t.total == 10 && !t.steal);
	cr_expect(!ctq_proc_stat_parse("cpu0 1 2 3 4\nintr 5\n", &t));
	cr_expect(!ctq_proc_stat_parse("cpu  1 2\n", &t));
}

/* Every committed manifest records host_load, from marks around the run. */
Test(run, manifest_records_the_host_load)
{
	char root[64], out[128], path[256];
	make_root(root, sizeof root);
	snprintf(out, sizeof out, "%s/r", root);
	char *argv[] = {"test", NULL};
	struct ctq_error err = {0};
	struct ctq_run run;
	cr_assert_eq(ctq_run_begin(&run, out, false, "test", 1, argv, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_run_commit(&run, &err), CTQ_OK, "%s", err.message);
	snprintf(path, sizeof path, "%s/manifest.json", out);
	cJSON *m = NULL;
	cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, &m, NULL), CTQ_OK);
	const cJSON *h = ctq_json_get(m, "host_load");
	cr_assert(cJSON_IsObject(h), "no host_load");
	static const char *const keys[] = {"load_avg_1m_start", "load_avg_1m_end", "wall_s", "cpus",
					   "self_cpu_s", "other_cpu_fraction", "steal_fraction"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		cr_expect(ctq_json_get(h, keys[i]), "host_load.%s missing", keys[i]);
	/* this host has /proc: numbers, not "unknown" */
	cr_expect(cJSON_IsNumber(ctq_json_get(h, "load_avg_1m_start")));
	cr_expect(cJSON_IsNumber(ctq_json_get(h, "self_cpu_s")));
	cJSON_Delete(m);
	ctq_remove_tree(root);
}
