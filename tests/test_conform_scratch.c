/* ctq conform builds the synthetic checkpoints of numeric cases inside its
 * temporary run directory (conform/suite.h struct ctq_case_run_options):
 * nothing is created under $TMPDIR or /tmp, and the final run directory
 * holds only the result files, no scratch. An inotify watch on /tmp and
 * on $TMPDIR sees a scratch folder even when the case removes it again. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "harness/commands.h"

#define NUMERIC_SUITE "suites/tp-numeric"
#define NUMERIC_CASE "tp-numeric/qwen3-w8a8"

/* Names created directly in the watched folders, "dir/name;" each. */
static void drain(int fd, const char *const dirs[], const int wd[], size_t n_dirs,
		  char *seen, size_t cap)
{
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	size_t used = strlen(seen);
	for (;;) {
		ssize_t len = read(fd, buf, sizeof buf);
		if (len <= 0) {
			cr_assert(len == 0 || errno == EAGAIN, "inotify read: %s", strerror(errno));
			return;
		}
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			cr_assert(!(ev->mask & IN_Q_OVERFLOW), "inotify queue overflowed");
			for (size_t k = 0; k < n_dirs; k++)
				if (ev->wd == wd[k] && ev->len && used + 4 < cap)
					used += (size_t)snprintf(seen + used, cap - used, "%s/%s;", dirs[k],
								 ev->name);
			p += sizeof *ev + ev->len;
		}
	}
}

Test(conform_scratch, numeric_scratch_stays_in_run_dir)
{
	char root[] = "/tmp/ctq-test-scratch-XXXXXX";
	cr_assert(mkdtemp(root));
	char tmpdir[96], out[96], path[160];
	snprintf(tmpdir, sizeof tmpdir, "%s/tmpdir", root);
	snprintf(out, sizeof out, "%s/run", root);
	cr_assert_eq(mkdir(tmpdir, 0755), 0);

	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert(fd >= 0, "inotify_init1: %s", strerror(errno));
	const char *const dirs[] = {"/tmp", tmpdir};
	int wd[2];
	for (size_t k = 0; k < 2; k++) {
		wd[k] = inotify_add_watch(fd, dirs[k], IN_CREATE | IN_MOVED_TO);
		cr_assert(wd[k] >= 0, "watch %s: %s", dirs[k], strerror(errno));
	}
	setenv("TMPDIR", tmpdir, 1);
	char *argv[] = {"conform", "--suite", NUMERIC_SUITE, "--filter", NUMERIC_CASE,
			"--out", out, NULL};
	int rc = ctq_cmd_conform(7, argv);
	unsetenv("TMPDIR");
	char seen[8192] = "";
	drain(fd, dirs, wd, 2, seen, sizeof seen);
	close(fd);
	cr_assert_eq(rc, 0, "ctq conform --suite %s --filter %s exited %d", NUMERIC_SUITE,
		     NUMERIC_CASE, rc);

	/* Outside the run: nothing in $TMPDIR, no ctq-conform-* in /tmp (other
	 * processes may create other names there). */
	cr_expect(ctq_dir_is_empty(tmpdir), "%s is not empty: %s", tmpdir, seen);
	for (char *s = seen; (s = strstr(s, "/ctq-conform-")); s++)
		cr_expect(0, "a scratch folder outside the run directory: %.80s", s - 4);

	/* Beside the run: only it, no run.tmp-* left. In it: the result files,
	 * no scratch folder. */
	DIR *d = opendir(root);
	cr_assert(d);
	for (struct dirent *e; (e = readdir(d));)
		cr_expect(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
			  !strcmp(e->d_name, "run") || !strcmp(e->d_name, "tmpdir"),
			  "left beside the run: %s/%s", root, e->d_name);
	closedir(d);
	cr_assert(d = opendir(out), "%s", out);
	size_t n_files = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", out, e->d_name);
		cr_expect(!ctq_path_is_dir(path), "scratch left in the run directory: %s", path);
		n_files++;
	}
	closedir(d);
	cr_expect_eq(n_files, 3, "%s: %zu entries, expected conform.csv, junit.xml, manifest.json",
		     out, n_files);

	/* Not vacuous: the numeric checks ran (they need the scratch checkpoint). */
	char *csv = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	snprintf(path, sizeof path, "%s/conform.csv", out);
	cr_assert_eq(ctq_file_read(path, 1 << 20, &csv, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(csv, "numeric:") && strstr(csv, ":tp2"), "%s has no numeric tp checks", path);
	cr_expect(!strstr(csv, "numeric:checkpoint"), "the synthetic checkpoint failed: %s", path);
	free(csv);
	ctq_remove_tree(root);
}
