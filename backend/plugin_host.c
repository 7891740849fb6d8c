/* The plug-in host (see plugin_host.h): the host's loop and ctq's side of
 * the socket, a backend whose ops are requests to the host. */
#define _GNU_SOURCE
#include "backend/plugin_host.h"
#include "backend/plugin.h"
#include "core/arena.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum ph_op {
	PH_HELLO,
	PH_ALLOC,
	PH_FREE,
	PH_UPLOAD,
	PH_DOWNLOAD,
	PH_SYNC,
	PH_QUANTIZE,
	PH_LINEAR,
	PH_GEMM_BF16,
	PH_GEMM_WNA16,
	PH_QUIT,
};

static const char *const ph_names[] = {"start",    "alloc",    "free",      "upload",    "download",
				       "sync",     "quantize", "gemm_w8a8", "gemm_bf16", "gemm_wna16",
				       "quit"};

/* A request: the op, its geometry, up to six pointers (the host's), a
 * byte count (alloc, upload and download; upload's bytes follow), and
 * gemm_wna16's bits and group size. */
struct ph_req {
	uint32_t op;
	uint32_t pad;
	int64_t M, N, K;
	uint64_t a[6];
	uint64_t n;
	int64_t bits, group;
};

/* An answer: the status and error of the host's op, a value (alloc's
 * pointer; hello: 1 when gemm_bf16 exists), the exact bits (hello); a
 * download's bytes follow. fatal: the host ends after this answer. */
struct ph_rep {
	int32_t status;
	uint32_t exact;
	uint64_t value;
	uint32_t fatal;
	uint32_t pad;
	char path[CTQ_PATH_MAX];
	char msg[CTQ_MESSAGE_MAX];
};

static const char *host_exe_path;

void ctq_plugin_host_set_exe(const char *exe) { host_exe_path = exe; }

const char *ctq_plugin_host_exe(void) { return host_exe_path; }

static double ph_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* All n bytes in or out of fd before deadline (0: none). Returns 0, or -1
 * on EOF or an error, or -2 when the deadline passed. */
static int ph_io(int fd, void *buf, size_t n, bool out, double deadline)
{
	char *at = buf;
	while (n) {
		int wait_ms = -1;
		if (deadline > 0) {
			double left = deadline - ph_now();
			if (left <= 0)
				return -2;
			wait_ms = left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
		}
		struct pollfd pfd = {.fd = fd, .events = out ? POLLOUT : POLLIN};
		int pr = poll(&pfd, 1, wait_ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -1;
		if (pr == 0)
			continue;
		ssize_t r = out ? send(fd, at, n, MSG_NOSIGNAL) : recv(fd, at, n, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			return -1;
		at += r;
		n -= (size_t)r;
	}
	return 0;
}

/* ---- the host ------------------------------------------------------------ */

static int host_reply(int fd, struct ph_rep *rep, const struct ctq_error *e, enum ctq_status st)
{
	rep->status = (int32_t)st;
	if (st) {
		snprintf(rep->path, sizeof rep->path, "%s", e->path);
		snprintf(rep->msg, sizeof rep->msg, "%s", e->message);
	}
	return ph_io(fd, rep, sizeof *rep, true, 0);
}

int ctq_plugin_host_main(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], CTQ_PLUGIN_HOST_ARG)) {
		fprintf(stderr, "ctq %s: internal: started as `ctq %s FD PLUGIN` by ctq itself\n",
			CTQ_PLUGIN_HOST_ARG, CTQ_PLUGIN_HOST_ARG);
		return 2;
	}
	char *end;
	long fdl = strtol(argv[2], &end, 10);
	if (*end || fdl < 3 || fdl > 1 << 20) {
		fprintf(stderr, "ctq %s: bad socket \"%s\"\n", CTQ_PLUGIN_HOST_ARG, argv[2]);
		return 2;
	}
	const int fd = (int)fdl;
	/* What the plug-in prints goes to ctq's stderr, never into ctq's
	 * stdout (a CSV); Ctrl-C is ctq's to handle (it ends the host by
	 * closing the socket or killing it); no core file. */
	dup2(STDERR_FILENO, STDOUT_FILENO);
	signal(SIGINT, SIG_IGN);
	/* A fault ends the host by its signal, which ctq names: not a
	 * sanitizer's handler, which would report and exit 1. */
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
		signal(fatal[i], SIG_DFL);
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);

	struct ctq_backend b;
	struct ctq_error e = {0};
	struct ph_rep rep;
	memset(&rep, 0, sizeof rep);
	ctq_kernel_plugin_in_host();
	enum ctq_status st = ctq_backend_plugin(&b, argv[3], &e);
	if (!st) {
		ctq_backend_plugin_set_isolated(&b, false);
		ctq_backend_plugin_set_timeout(&b, 0);
		rep.exact = b.exact;
		rep.value = b.ops->gemm_bf16 != NULL;
		snprintf(rep.path, sizeof rep.path, "%s", b.ops->name);
		b.ops->describe(&b, rep.msg, sizeof rep.msg);
	}
	if (host_reply(fd, &rep, &e, st) || st)
		return st ? 1 : 0;
	size_t cap = 0;
	char *buf = NULL;
	for (;;) {
		struct ph_req q;
		if (ph_io(fd, &q, sizeof q, false, 0))
			break; /* ctq closed the socket (or ended) */
		memset(&rep, 0, sizeof rep);
		memset(&e, 0, sizeof e);
		st = CTQ_OK;
		void *p[6];
		for (int i = 0; i < 6; i++)
			p[i] = (void *)(uintptr_t)q.a[i];
		if ((q.op == PH_UPLOAD || q.op == PH_DOWNLOAD) && q.n > cap) {
			char *nb = ctq_malloc(q.n);
			if (!nb) {
				/* The upload's bytes cannot be taken: the stream is lost. */
				st = ctq_error_set(&e, CTQ_ERR_NOMEM, argv[3],
						   "the plug-in host is out of memory (%llu bytes to stage)",
						   (unsigned long long)q.n);
				rep.fatal = 1;
				host_reply(fd, &rep, &e, st);
				break;
			}
			ctq_free(buf);
			buf = nb;
			cap = q.n;
		}
		switch (q.op) {
		case PH_ALLOC: {
			void *out = NULL;
			st = b.ops->alloc(&b, q.n, &out, &e);
			rep.value = (uint64_t)(uintptr_t)out;
			break;
		}
		case PH_FREE:
			b.ops->free(&b, p[0]);
			break;
		case PH_UPLOAD:
			if (ph_io(fd, buf, q.n, false, 0))
				goto done;
			st = b.ops->upload(&b, p[0], buf, q.n, &e);
			break;
		case PH_DOWNLOAD:
			st = b.ops->download(&b, buf, p[0], q.n, &e);
			break;
		case PH_SYNC:
			st = b.ops->sync(&b, &e);
			break;
		case PH_QUANTIZE:
			st = b.ops->quantize(&b, p[0], q.M, q.K, p[1], p[2], &e);
			break;
		case PH_LINEAR:
			st = b.ops->w8a8_linear(&b, p[0], p[1], p[2], p[3], q.M, q.N, q.K, p[4], p[5], &e);
			break;
		case PH_GEMM_BF16:
			st = b.ops->gemm_bf16 ? b.ops->gemm_bf16(&b, p[0], p[1], p[2], q.M, q.N, q.K, p[3], &e)
					      : ctq_error_set(&e, CTQ_ERR_USAGE, argv[3], "has no gemm_bf16");
			break;
		case PH_GEMM_WNA16: {
			const struct ctq_wna16_call c = {.x = p[0], .w_packed = p[1], .scale = p[2],
							 .zero_packed = p[3], .bias = p[4], .y = p[5],
							 .M = q.M, .N = q.N, .K = q.K, .bits = (int)q.bits,
							 .group_size = q.group};
			st = ctq_backend_plugin_gemm_wna16(&b, &c, &e);
			break;
		}
		case PH_QUIT:
			goto done;
		default:
			st = ctq_error_set(&e, CTQ_ERR_USAGE, argv[3], "unknown request %u", q.op);
			rep.fatal = 1;
		}
		/* After a failed op, a device whose sync fails too holds a
		 * sticky error (a CUDA fault): nothing the host does next can be
		 * trusted, so it answers and ends. */
		if (st && q.op != PH_ALLOC) {
			struct ctq_error se = {0};
			if (b.ops->sync(&b, &se))
				rep.fatal = 1;
		}
		if (host_reply(fd, &rep, &e, st))
			break;
		if (q.op == PH_DOWNLOAD && !st && ph_io(fd, buf, q.n, true, 0))
			break;
		if (rep.fatal)
			break;
	}
done:
	ctq_free(buf);
	ctq_backend_close(&b);
	return 0;
}

/* ---- ctq's side ---------------------------------------------------------- */

struct host_impl {
	struct ctq_backend_ops ops;
	struct ctq_kernel_lib lib; /* opened here for its table (never init'ed
				    * or called here) */
	char name[40];
	char path[CTQ_PATH_MAX];
	char describe[CTQ_MESSAGE_MAX];
	int fd;
	pid_t pid;
	double timeout_s;
	bool dead;
	char dead_why[CTQ_MESSAGE_MAX];
};

static void host_destroy(struct ctq_backend *b);

static struct host_impl *himpl(struct ctq_backend *b) { return (struct host_impl *)b->impl; }

bool ctq_backend_plugin_is_hosted(const struct ctq_backend *b)
{
	return b->ops && b->ops->destroy == host_destroy;
}

void ctq_backend_plugin_hosted_set_timeout(struct ctq_backend *b, double seconds)
{
	himpl(b)->timeout_s = seconds;
}

/* "gemm_w8a8 at M=3 N=32 K=64", "upload of 4096 bytes", ... */
static void ph_what(const struct ph_req *q, char *buf, size_t cap)
{
	const char *fn = q->op <= PH_QUIT ? ph_names[q->op] : "?";
	switch (q->op) {
	case PH_QUANTIZE:
		snprintf(buf, cap, "%s at M=%lld K=%lld", fn, (long long)q->M, (long long)q->K);
		break;
	case PH_LINEAR:
	case PH_GEMM_BF16:
		snprintf(buf, cap, "%s at M=%lld N=%lld K=%lld", fn, (long long)q->M, (long long)q->N,
			 (long long)q->K);
		break;
	case PH_GEMM_WNA16:
		snprintf(buf, cap, "%s at M=%lld N=%lld K=%lld bits=%lld group=%lld", fn, (long long)q->M,
			 (long long)q->N, (long long)q->K, (long long)q->bits, (long long)q->group);
		break;
	case PH_ALLOC:
	case PH_UPLOAD:
	case PH_DOWNLOAD:
		snprintf(buf, cap, "%s of %llu bytes", fn, (unsigned long long)q->n);
		break;
	default:
		snprintf(buf, cap, "%s", fn);
	}
}

/* The host is gone or must go: killed when it hung, reaped, and the reason
 * kept for every later call. */
static enum ctq_status host_lost(struct host_impl *h, const struct ph_req *q, bool hung,
				 struct ctq_error *err)
{
	char what[160];
	ph_what(q, what, sizeof what);
	if (hung)
		kill(h->pid, SIGKILL);
	int status = 0;
	pid_t r;
	/* EOF without an exit yet: the host is ending; a bounded wait, then
	 * the kill. */
	double until = ph_now() + 5.0;
	while ((r = waitpid(h->pid, &status, WNOHANG)) == 0 && ph_now() < until) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (r == 0) {
		kill(h->pid, SIGKILL);
		while ((r = waitpid(h->pid, &status, 0)) < 0 && errno == EINTR)
			;
	}
	char how[160];
	if (hung)
		snprintf(how, sizeof how,
			 "did not return within %g s (hung; its process was killed; the limit is "
			 "--kernel-timeout)", h->timeout_s);
	else if (r > 0 && WIFSIGNALED(status))
		snprintf(how, sizeof how, "crashed its process: killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (r > 0 && WIFEXITED(status))
		snprintf(how, sizeof how, "ended its process (exit status %d) instead of returning",
			 WEXITSTATUS(status));
	else
		snprintf(how, sizeof how, "lost its process");
	h->dead = true;
	h->pid = -1;
	close(h->fd);
	h->fd = -1;
	snprintf(h->dead_why, sizeof h->dead_why, "plug-in %s: %s %s; its outputs are not used", h->name,
		 what, how);
	return ctq_error_set(err, CTQ_ERR_ENV, h->path, "%s", h->dead_why);
}

/* One request and its answer; in (upload) goes after the request, out
 * (download) is filled from after the answer. */
static enum ctq_status host_call(struct host_impl *h, const struct ph_req *q, const void *in,
				 void *out, uint64_t *value, struct ctq_error *err)
{
	if (h->dead)
		return ctq_error_set(err, CTQ_ERR_ENV, h->path,
				     "plug-in %s: no further calls: its process ended earlier (%s)", h->name,
				     h->dead_why);
	const double deadline = h->timeout_s > 0 ? ph_now() + h->timeout_s : 0;
	int rc = ph_io(h->fd, (void *)q, sizeof *q, true, deadline);
	if (!rc && q->op == PH_UPLOAD)
		rc = ph_io(h->fd, (void *)in, q->n, true, deadline);
	struct ph_rep rep;
	if (!rc)
		rc = ph_io(h->fd, &rep, sizeof rep, false, deadline);
	if (!rc && q->op == PH_DOWNLOAD && rep.status == CTQ_OK)
		rc = ph_io(h->fd, out, q->n, false, deadline);
	if (rc)
		return host_lost(h, q, rc == -2, err);
	rep.path[sizeof rep.path - 1] = '\0';
	rep.msg[sizeof rep.msg - 1] = '\0';
	if (value)
		*value = rep.value;
	enum ctq_status st = (enum ctq_status)rep.status;
	if (st)
		ctq_error_set(err, st, rep.path[0] ? rep.path : h->path, "%s", rep.msg);
	if (rep.fatal) {
		struct ctq_error lost = {0};
		host_lost(h, q, false, &lost);
		if (!st)
			st = ctq_error_set(err, CTQ_ERR_ENV, h->path, "%s", lost.message);
	}
	return st;
}

static enum ctq_status host_alloc(struct ctq_backend *b, size_t n, void **out, struct ctq_error *err)
{
	struct ph_req q = {.op = PH_ALLOC, .n = n};
	uint64_t v = 0;
	enum ctq_status st = host_call(himpl(b), &q, NULL, NULL, &v, err);
	*out = st ? NULL : (void *)(uintptr_t)v;
	return st;
}

static void host_free(struct ctq_backend *b, void *p)
{
	struct host_impl *h = himpl(b);
	if (!p || h->dead)
		return;
	struct ph_req q = {.op = PH_FREE, .a = {(uint64_t)(uintptr_t)p}};
	struct ctq_error ignored = {0};
	host_call(h, &q, NULL, NULL, NULL, &ignored);
}

static enum ctq_status host_upload(struct ctq_backend *b, void *dst, const void *src, size_t n,
				   struct ctq_error *err)
{
	struct ph_req q = {.op = PH_UPLOAD, .a = {(uint64_t)(uintptr_t)dst}, .n = n};
	return host_call(himpl(b), &q, src, NULL, NULL, err);
}

static enum ctq_status host_download(struct ctq_backend *b, void *dst, const void *src, size_t n,
				     struct ctq_error *err)
{
	struct ph_req q = {.op = PH_DOWNLOAD, .a = {(uint64_t)(uintptr_t)src}, .n = n};
	return host_call(himpl(b), &q, NULL, dst, NULL, err);
}

static enum ctq_status host_sync(struct ctq_backend *b, struct ctq_error *err)
{
	struct ph_req q = {.op = PH_SYNC};
	return host_call(himpl(b), &q, NULL, NULL, NULL, err);
}

#define PTR(x) ((uint64_t)(uintptr_t)(x))

static enum ctq_status host_quantize(struct ctq_backend *b, const void *x, int64_t M, int64_t K,
				     void *q_out, void *s, struct ctq_error *err)
{
	struct ph_req q = {.op = PH_QUANTIZE, .M = M, .K = K, .a = {PTR(x), PTR(q_out), PTR(s)}};
	return host_call(himpl(b), &q, NULL, NULL, NULL, err);
}

static enum ctq_status host_linear(struct ctq_backend *b, const void *x, const void *w,
				   const void *s_w, const void *bias, int64_t M, int64_t N, int64_t K,
				   void *y, void *ws, struct ctq_error *err)
{
	struct ph_req q = {.op = PH_LINEAR, .M = M, .N = N, .K = K,
			   .a = {PTR(x), PTR(w), PTR(s_w), PTR(bias), PTR(y), PTR(ws)}};
	return host_call(himpl(b), &q, NULL, NULL, NULL, err);
}

static enum ctq_status host_gemm_bf16(struct ctq_backend *b, const void *x, const void *w,
				      const void *bias, int64_t M, int64_t N, int64_t K, void *y,
				      struct ctq_error *err)
{
	struct ph_req q = {.op = PH_GEMM_BF16, .M = M, .N = N, .K = K,
			   .a = {PTR(x), PTR(w), PTR(bias), PTR(y)}};
	return host_call(himpl(b), &q, NULL, NULL, NULL, err);
}

enum ctq_status ctq_backend_plugin_hosted_gemm_wna16(struct ctq_backend *b,
						    const struct ctq_wna16_call *c,
						    struct ctq_error *err)
{
	struct ph_req q = {.op = PH_GEMM_WNA16, .M = c->M, .N = c->N, .K = c->K,
			   .a = {PTR(c->x), PTR(c->w_packed), PTR(c->scale), PTR(c->zero_packed),
				 PTR(c->bias), PTR(c->y)},
			   .bits = c->bits, .group = c->group_size};
	return host_call(himpl(b), &q, NULL, NULL, NULL, err);
}

const struct ctq_kernel_plugin *ctq_backend_plugin_hosted_table(const struct ctq_backend *b)
{
	return ((const struct host_impl *)b->impl)->lib.t;
}

static void host_describe(struct ctq_backend *b, char *buf, size_t cap)
{
	struct host_impl *h = himpl(b);
	snprintf(buf, cap, "%s; in a process of its own (pid %ld)", h->describe, (long)h->pid);
}

static void host_destroy(struct ctq_backend *b)
{
	struct host_impl *h = himpl(b);
	if (!h)
		return;
	if (!h->dead && h->fd >= 0) {
		struct ph_req q = {.op = PH_QUIT};
		ph_io(h->fd, &q, sizeof q, true, ph_now() + 1.0);
		close(h->fd);
		h->fd = -1;
		/* The host ends when it reads QUIT or EOF; a bounded wait. */
		int status;
		double until = ph_now() + 5.0;
		pid_t r;
		while ((r = waitpid(h->pid, &status, WNOHANG)) == 0 && ph_now() < until) {
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (r == 0) {
			kill(h->pid, SIGKILL);
			while (waitpid(h->pid, &status, 0) < 0 && errno == EINTR)
				;
		}
	}
	ctq_kernel_lib_close(&h->lib);
	ctq_free(h);
	b->impl = NULL;
}

enum ctq_status ctq_backend_plugin_hosted(struct ctq_backend *b, const char *path, const char *exe,
					  double timeout_s, struct ctq_error *err)
{
	memset(b, 0, sizeof *b);
	struct host_impl *h = ctq_calloc(1, sizeof *h);
	if (!h)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	snprintf(h->path, sizeof h->path, "%s", path);
	snprintf(h->name, sizeof h->name, "%s", path);
	h->timeout_s = timeout_s;
	h->fd = -1;
	h->pid = -1;
	/* The table, checked here as for any plug-in (usage errors naming the
	 * path); the host opens it again and runs its init. */
	enum ctq_status st = ctq_kernel_lib_open(&h->lib, path, err);
	if (st) {
		ctq_free(h);
		return st;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		int e = errno;
		ctq_kernel_lib_close(&h->lib);
		ctq_free(h);
		return ctq_error_set(err, CTQ_ERR_ENV, path,
				     "cannot create the socket to the plug-in's process: %s", strerror(e));
	}
	char fdarg[16];
	snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		ctq_kernel_lib_close(&h->lib);
		ctq_free(h);
		return ctq_error_set(err, CTQ_ERR_ENV, path, "cannot fork the plug-in's process: %s",
				     strerror(e));
	}
	if (pid == 0) {
		/* Only the host's end crosses exec. */
		fcntl(sv[1], F_SETFD, 0);
		char *argv[] = {(char *)"ctq", (char *)CTQ_PLUGIN_HOST_ARG, fdarg, (char *)path, NULL};
		execv(exe, argv);
		_exit(127);
	}
	close(sv[1]);
	h->fd = sv[0];
	h->pid = pid;
	struct ph_req hello = {.op = PH_HELLO};
	struct ph_rep rep;
	const double deadline = timeout_s > 0 ? ph_now() + timeout_s : 0;
	int rc = ph_io(h->fd, &rep, sizeof rep, false, deadline);
	if (rc) {
		struct ctq_error lost = {0};
		host_lost(h, &hello, rc == -2, &lost);
		st = ctq_error_set(err, CTQ_ERR_ENV, path,
				   "the plug-in's process (%s %s) did not start: %s", exe,
				   CTQ_PLUGIN_HOST_ARG, lost.message);
		ctq_kernel_lib_close(&h->lib);
		ctq_free(h);
		return st;
	}
	rep.path[sizeof rep.path - 1] = '\0';
	rep.msg[sizeof rep.msg - 1] = '\0';
	if ((st = (enum ctq_status)rep.status)) {
		ctq_error_set(err, st, rep.path[0] ? rep.path : path, "%s", rep.msg);
		int status;
		while (waitpid(h->pid, &status, 0) < 0 && errno == EINTR)
			;
		close(h->fd);
		ctq_kernel_lib_close(&h->lib);
		ctq_free(h);
		return st;
	}
	snprintf(h->name, sizeof h->name, "%s", rep.path);
	snprintf(h->describe, sizeof h->describe, "%s", rep.msg);
	h->ops = (struct ctq_backend_ops){
		.name = h->name,
		.destroy = host_destroy,
		.describe = host_describe,
		.alloc = host_alloc,
		.free = host_free,
		.upload = host_upload,
		.download = host_download,
		.sync = host_sync,
		.quantize = host_quantize,
		.w8a8_linear = host_linear,
		.gemm_bf16 = rep.value ? host_gemm_bf16 : NULL,
		.act_bytes = 2,
	};
	b->ops = &h->ops;
	b->impl = h;
	b->exact = rep.exact;
	return CTQ_OK;
}
