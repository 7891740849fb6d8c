/* A SIGINT/SIGTERM between creating a temporary folder and renaming it into
 * place removes the folder (core/cleanup.h); a folder already committed is
 * never touched. Each scenario runs in a child that kills itself. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "core/fileio.h"
#include "core/status.h"

static char *make_root(void)
{
	char *t = strdup("/tmp/ctq-test-cleanup-XXXXXX");
	cr_assert(t && mkdtemp(t));
	return t;
}

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert(d, "%s", dir);
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Child: a temporary folder with a file in it, optionally committed to
 * root/out, then the signal. */
static void child(const char *root, int sig, bool commit)
{
	/* core/cleanup.c leaves an ignored signal ignored (as a shell's
	 * background job has SIGINT): the test wants the default course */
	signal(sig, SIG_DFL);
	char out[512], tmp[600], file[700];
	snprintf(out, sizeof out, "%s/out", root);
	struct ctq_error err = {0};
	if (ctq_tmpdir_beside(out, tmp, sizeof tmp, &err))
		_exit(10);
	snprintf(file, sizeof file, "%s/result.csv", tmp);
	FILE *f = fopen(file, "w");
	if (!f)
		_exit(11);
	fputs("a,b\n1,2\n", f);
	fclose(f);
	if (commit && ctq_tmpdir_commit(tmp, out, false, &err))
		_exit(12);
	raise(sig);
	_exit(13); /* not reached: the signal keeps its default course */
}

static void run(int sig, bool commit, size_t want_entries)
{
	char *root = make_root();
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0)
		child(root, sig, commit);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == sig,
		  "the child should die by signal %d (status %#x)", sig, status);
	cr_expect_eq(entries(root), want_entries, "%s holds %zu entries", root, entries(root));
	ctq_remove_tree(root);
	free(root);
}

Test(cleanup, sigterm_removes_the_temporary_folder) { run(SIGTERM, false, 0); }
Test(cleanup, sigint_removes_the_temporary_folder) { run(SIGINT, false, 0); }
Test(cleanup, committed_folder_survives_the_signal) { run(SIGTERM, true, 1); }

Test(cleanup, table_bounds)
{
	char p[64];
	int ok = 0;
	for (int i = 0; i < CTQ_CLEANUP_MAX + 4; i++) {
		snprintf(p, sizeof p, "/nonexistent/ctq-%d", i);
		ok += ctq_cleanup_register(p);
	}
	cr_expect_leq(ok, CTQ_CLEANUP_MAX);
	for (int i = 0; i < CTQ_CLEANUP_MAX + 4; i++) {
		snprintf(p, sizeof p, "/nonexistent/ctq-%d", i);
		ctq_cleanup_unregister(p);
	}
	cr_expect(ctq_cleanup_register("/nonexistent/again"));
	ctq_cleanup_unregister("/nonexistent/again");
}
