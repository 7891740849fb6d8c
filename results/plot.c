/* ctq plots (see plot.h). */
#include "results/plot.h"
#include "backend/knobs.h"
#include "core/arena.h"
#include "core/fileio.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs program with args in dir, stdout and stderr appended to log (a path
 * relative to dir, or NULL for /dev/null); the exit status, -1 when it
 * could not run. */
static int run_in(const char *dir, const char *log, char *const argv[])
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (dir && chdir(dir) != 0)
			_exit(127);
		int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		/* A gnuplot unpacked under DEPS_PREFIX (tools/offline-deps.sh)
		 * finds its libraries there. */
		const char *dp = ctq_env(CTQ_ENV_DEPS_PREFIX);
		if (dp && *dp && !strncmp(argv[0], dp, strlen(dp))) {
			char lib[1200];
			const char *old = ctq_env(CTQ_ENV_LD_LIBRARY_PATH);
			snprintf(lib, sizeof lib, "%s/usr/lib/x86_64-linux-gnu:%s/lib/x86_64-linux-gnu%s%s", dp,
				 dp, old && *old ? ":" : "", old && *old ? old : "");
			setenv("LD_LIBRARY_PATH", lib, 1);
		}
		int in = open("/dev/null", O_RDONLY);
		if (in >= 0) {
			dup2(in, 0);
			close(in);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ctq_plot_init(struct ctq_plotter *p)
{
	memset(p, 0, sizeof *p);
	const char *env = ctq_env(CTQ_ENV_GNUPLOT);
	if (env && !strcmp(env, "none")) {
		snprintf(p->why, sizeof p->why, "plots turned off (CTQ_GNUPLOT=none)");
		return;
	}
	/* CTQ_GNUPLOT, else the gnuplot of packages unpacked under DEPS_PREFIX
	 * (an offline host: tools/offline-deps.sh), else gnuplot on the PATH. */
	const char *dp = ctq_env(CTQ_ENV_DEPS_PREFIX);
	char unpacked[sizeof p->program];
	snprintf(unpacked, sizeof unpacked, "%s/usr/bin/gnuplot-nox", dp ? dp : "");
	if (env && *env)
		snprintf(p->program, sizeof p->program, "%s", env);
	else if (dp && *dp && access(unpacked, X_OK) == 0)
		snprintf(p->program, sizeof p->program, "%s", unpacked);
	else
		snprintf(p->program, sizeof p->program, "gnuplot");
	const char *terms[] = {"pngcairo", "png"};
	for (int i = 0; i < 2; i++) {
		char cmd[64];
		snprintf(cmd, sizeof cmd, "set terminal %s", terms[i]);
		char *argv[] = {p->program, "-e", cmd, NULL};
		int rc = run_in(NULL, NULL, argv);
		if (rc == 0) {
			snprintf(p->terminal, sizeof p->terminal, "%s", terms[i]);
			p->available = true;
			return;
		}
		if (rc == 127 || rc < 0) {
			snprintf(p->why, sizeof p->why,
				 "%s not found (install gnuplot-nox: make deps; on an offline host "
				 "export DEPS_PREFIX=DIR of tools/unpack-deps.sh, or CTQ_GNUPLOT=PATH)",
				 p->program);
			return;
		}
	}
	snprintf(p->why, sizeof p->why, "%s has neither the pngcairo nor the png terminal",
		 p->program);
}

enum ctq_status ctq_plot_render(const struct ctq_plotter *p, const char *dir, const char *name,
				int width, int height, const char *body, const char *data,
				struct ctq_error *err)
{
	if (!p->available)
		return ctq_error_set(err, CTQ_ERR_ENV, "gnuplot", "%s", p->why);
	struct ctq_strbuf gp;
	ctq_strbuf_init(&gp);
	ctq_strbuf_printf(&gp,
			  "# ctq plot %s: gnuplot %s.gp (in this folder) redraws %s.png from %s.dat\n"
			  "set terminal %s size %d,%d%s\n"
			  "set output \"%s.png\"\n"
			  "set datafile missing \"NaN\"\n"
			  "set grid ytics lc rgb \"#dddddd\"\n"
			  "set border lc rgb \"#555555\"\n"
			  "set key noenhanced\n",
			  name, name, name, name, p->terminal, width, height,
			  !strcmp(p->terminal, "pngcairo") ? " font \"sans,10\" noenhanced" : "",
			  name);
	ctq_strbuf_append(&gp, body);
	char path[1200];
	enum ctq_status st = CTQ_OK;
	if (gp.oom) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
		goto done;
	}
	snprintf(path, sizeof path, "%s/%s.dat", dir, name);
	if ((st = ctq_file_write_atomic(path, data, strlen(data), err)))
		goto done;
	snprintf(path, sizeof path, "%s/%s.gp", dir, name);
	if ((st = ctq_file_write_atomic(path, gp.data, gp.len, err)))
		goto done;
	char script[300];
	snprintf(script, sizeof script, "%s.gp", name);
	char *argv[] = {(char *)p->program, script, NULL};
	int rc = run_in(dir, "gnuplot.log", argv);
	snprintf(path, sizeof path, "%s/%s.png", dir, name);
	if (rc != 0 || !ctq_path_exists(path))
		st = ctq_error_set(err, CTQ_ERR_IO, path, "gnuplot exited with %d (see %s/gnuplot.log)",
				   rc, dir);
done:
	ctq_strbuf_free(&gp);
	return st;
}

enum ctq_status ctq_base64_file(const char *path, struct ctq_strbuf *out, struct ctq_error *err)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *data = NULL;
	size_t n = 0;
	enum ctq_status st = ctq_file_read(path, (size_t)64 << 20, &data, &n, err);
	if (st)
		return st;
	const unsigned char *d = (const unsigned char *)data;
	char quad[4];
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)d[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)d[i + 1] << 8;
		if (i + 2 < n)
			v |= d[i + 2];
		quad[0] = tab[(v >> 18) & 63];
		quad[1] = tab[(v >> 12) & 63];
		quad[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		quad[3] = i + 2 < n ? tab[v & 63] : '=';
		ctq_strbuf_appendn(out, quad, 4);
	}
	ctq_free(data);
	if (out->oom)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	return CTQ_OK;
}

void ctq_plot_quoted(struct ctq_strbuf *out, const char *s)
{
	ctq_strbuf_append(out, "\"");
	bool any = false;
	for (; *s; s++) {
		if (*s == '"' || *s == '\n' || *s == '\r' || *s == '\\')
			continue;
		ctq_strbuf_appendn(out, s, 1);
		any = true;
	}
	if (!any)
		ctq_strbuf_append(out, "-");
	ctq_strbuf_append(out, "\"");
}
