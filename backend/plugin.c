/* Kernel plug-ins: the loader and the backend adapter (see plugin.h). */
#define _GNU_SOURCE
#include "backend/plugin.h"
#include "backend/plugin_host.h"
#include "core/arena.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The ABI promises 256-byte aligned buffers; ctq_malloc gives 16. */
#define PLUGIN_ALIGN 256
/* A shared mapping's header: its length, kept one page below the block. */
#define PLUGIN_PAGE 4096

static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > 31)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '+' || c == '-'))
			return false;
	}
	/* ctq's own backend names stay ctq's in every CSV. */
	return strcmp(s, "reference") && strcmp(s, "cuda") && strcmp(s, "both");
}

/* The table's checks; the first failure names the member. */
static enum ctq_status check_table(const struct ctq_kernel_plugin *t, const char *path,
				   struct ctq_error *err)
{
	if (!t)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "%s(%u) and %s(%u) returned NULL: the plug-in serves neither kernel "
				     "plug-in ABI version", CTQ_KERNEL_PLUGIN_ENTRY,
				     CTQ_KERNEL_PLUGIN_ABI_VERSION, CTQ_KERNEL_PLUGIN_ENTRY,
				     CTQ_KERNEL_PLUGIN_ABI_VERSION_MIN);
	if (t->abi_version < CTQ_KERNEL_PLUGIN_ABI_VERSION_MIN ||
	    t->abi_version > CTQ_KERNEL_PLUGIN_ABI_VERSION)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "implements kernel plug-in ABI version %u; this ctq speaks versions %u "
				     "and %u (rebuild the plug-in against include/ctq_kernel_plugin.h)",
				     t->abi_version, CTQ_KERNEL_PLUGIN_ABI_VERSION_MIN,
				     CTQ_KERNEL_PLUGIN_ABI_VERSION);
	const size_t need = t->abi_version == 1 ? CTQ_KERNEL_PLUGIN_V1_SIZE : sizeof *t;
	if (t->struct_size < need)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "has a struct ctq_kernel_plugin of %u bytes; ABI version %u's is %zu "
				     "(rebuild the plug-in against include/ctq_kernel_plugin.h)",
				     t->struct_size, t->abi_version, need);
	if (!name_ok(t->name))
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "has name \"%.64s\"; expected 1 to 31 characters of [A-Za-z0-9_.+-], "
				     "not reference, cuda or both", t->name ? t->name : "(null)");
	if (t->device != CTQ_KERNEL_PLUGIN_DEVICE_CPU && t->device != CTQ_KERNEL_PLUGIN_DEVICE_CUDA)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "has device %d; expected %d (CPU) or %d (CUDA)", (int)t->device,
				     CTQ_KERNEL_PLUGIN_DEVICE_CPU, CTQ_KERNEL_PLUGIN_DEVICE_CUDA);
	/* Version 1: the W8A8 pair. Version 2: the pair, gemm_wna16, or both. */
	const bool w8a8 = t->quantize || t->gemm_w8a8;
	const char *missing = (w8a8 || !t->gemm_wna16) && !t->quantize ? "quantize"
			      : (w8a8 || !t->gemm_wna16) && !t->gemm_w8a8 ? "gemm_w8a8" : NULL;
	if (missing)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "plug-in %s has no %s function (%s)", t->name, missing,
				     t->abi_version == 1 ? "a required member of struct ctq_kernel_plugin"
							 : "ABI version 2 needs quantize and gemm_w8a8 "
							   "together, gemm_wna16, or all three");
	const unsigned v1_caps = CTQ_KERNEL_PLUGIN_QUANT_EXACT | CTQ_KERNEL_PLUGIN_GEMM_EXACT;
	const unsigned wna16_caps = CTQ_KERNEL_PLUGIN_WNA16_INT4 | CTQ_KERNEL_PLUGIN_WNA16_INT8 |
				    CTQ_KERNEL_PLUGIN_WNA16_GROUPS | CTQ_KERNEL_PLUGIN_WNA16_ASYM |
				    CTQ_KERNEL_PLUGIN_WNA16_EXACT;
	const unsigned known = t->abi_version == 1 ? v1_caps : v1_caps | wna16_caps;
	if (t->caps & ~known)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "plug-in %s declares capability bits 0x%x unknown to ABI version %u",
				     t->name, t->caps & ~known, t->abi_version);
	if (t->gemm_wna16 && !(t->caps & (CTQ_KERNEL_PLUGIN_WNA16_INT4 | CTQ_KERNEL_PLUGIN_WNA16_INT8)))
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "plug-in %s has gemm_wna16 but declares neither "
				     "CTQ_KERNEL_PLUGIN_WNA16_INT4 nor _INT8: no layout it serves",
				     t->name);
	if (!t->gemm_wna16 && (t->caps & wna16_caps))
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "plug-in %s declares weight-only capability bits without gemm_wna16",
				     t->name);
	return CTQ_OK;
}

enum ctq_status ctq_kernel_lib_open(struct ctq_kernel_lib *l, const char *path,
				    struct ctq_error *err)
{
	memset(l, 0, sizeof *l);
	snprintf(l->path, sizeof l->path, "%s", path);
	/* dlopen searches the library path for a bare name; a plug-in is a
	 * file the user names, so a name without '/' is taken from here. */
	char local[CTQ_PATH_MAX + 2];
	snprintf(local, sizeof local, "%s%s", strchr(path, '/') ? "" : "./", path);
	dlerror();
	l->handle = dlopen(local, RTLD_NOW | RTLD_LOCAL);
	if (!l->handle) {
		const char *e = dlerror();
		return ctq_error_set(err, CTQ_ERR_USAGE, path, "cannot load the kernel plug-in: %s",
				     e ? e : "dlopen failed");
	}
	dlerror();
	void *sym = dlsym(l->handle, CTQ_KERNEL_PLUGIN_ENTRY);
	const char *e = dlerror();
	enum ctq_status st = CTQ_OK;
	if (e || !sym) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, path,
				   "is not a ctq kernel plug-in: no entry symbol %s (%s); see "
				   "include/ctq_kernel_plugin.h", CTQ_KERNEL_PLUGIN_ENTRY,
				   e ? e : "the symbol is NULL");
		goto fail;
	}
	/* A function pointer from dlsym's object pointer (POSIX guarantees it). */
	ctq_kernel_plugin_entry_fn entry;
	memcpy(&entry, &sym, sizeof entry);
	/* The newest version first; a plug-in built for version 1 answers
	 * NULL to 2 and is asked again. */
	const struct ctq_kernel_plugin *t = entry(CTQ_KERNEL_PLUGIN_ABI_VERSION);
	if (!t)
		t = entry(CTQ_KERNEL_PLUGIN_ABI_VERSION_MIN);
	/* ctq reads its own copy: a version-1 table ends before gemm_wna16,
	 * whose bytes in the plug-in may be anything (or nothing). */
	memset(&l->table, 0, sizeof l->table);
	if (t && t->abi_version >= CTQ_KERNEL_PLUGIN_ABI_VERSION_MIN &&
	    t->abi_version <= CTQ_KERNEL_PLUGIN_ABI_VERSION &&
	    t->struct_size >= (t->abi_version == 1 ? CTQ_KERNEL_PLUGIN_V1_SIZE : sizeof *t))
		memcpy(&l->table, t, t->abi_version == 1 ? CTQ_KERNEL_PLUGIN_V1_SIZE : sizeof *t);
	else if (t)
		memcpy(&l->table, t, offsetof(struct ctq_kernel_plugin, name));
	l->t = t ? &l->table : NULL;
	if ((st = check_table(l->t, path, err)))
		goto fail;
	return CTQ_OK;
fail:
	ctq_kernel_lib_close(l);
	return st;
}

enum ctq_status ctq_kernel_lib_init(struct ctq_kernel_lib *l, struct ctq_error *err)
{
	if (l->inited)
		return CTQ_OK;
	if (l->t->init) {
		char msg[512] = "";
		if (l->t->init(msg, sizeof msg)) {
			msg[sizeof msg - 1] = '\0';
			return ctq_error_set(err, CTQ_ERR_ENV, l->path, "plug-in %s: init failed: %s",
					     l->t->name, msg[0] ? msg : "(no message)");
		}
	}
	l->inited = true;
	return CTQ_OK;
}

void ctq_kernel_lib_close(struct ctq_kernel_lib *l)
{
	if (!l)
		return;
	if (l->inited && l->t && l->t->fini)
		l->t->fini();
	if (l->handle)
		dlclose(l->handle);
	l->handle = NULL;
	l->t = NULL;
	l->inited = false;
}

const char *ctq_kernel_lib_device_name(const struct ctq_kernel_lib *l)
{
	return l->t && l->t->device == CTQ_KERNEL_PLUGIN_DEVICE_CUDA ? "cuda" : "cpu";
}

enum ctq_status ctq_kernel_plugin_workspace(const struct ctq_kernel_plugin *t, const char *path,
					    int64_t M, int64_t N, int64_t K, size_t *out,
					    struct ctq_error *err)
{
	*out = 0;
	if (!t->gemm_workspace_bytes)
		return CTQ_OK;
	size_t n = t->gemm_workspace_bytes(M, N, K);
	if (n > CTQ_PLUGIN_WORKSPACE_MAX)
		return ctq_error_set(err, CTQ_ERR_ENV, path,
				     "plug-in %s: gemm_workspace_bytes(M=%lld, N=%lld, K=%lld) returned "
				     "%zu bytes, more than the %llu (1 TiB) ctq allocates for a "
				     "workspace; refused", t->name, (long long)M, (long long)N,
				     (long long)K, n, (unsigned long long)CTQ_PLUGIN_WORKSPACE_MAX);
	*out = n;
	return CTQ_OK;
}

/* ---- the last word of a plug-in that runs in ctq's process ---------------- */

/* The lines the handlers write, formatted before the call (a handler may
 * only write(2) them), and the actions they replaced. */
static char crash_note[1024], hang_note[1024];
static volatile sig_atomic_t crash_len, hang_len;
static const int note_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM};
#define N_NOTE_SIGS (sizeof note_sigs / sizeof *note_sigs)
static struct sigaction note_old[N_NOTE_SIGS];
static bool note_installed;

static void note_on_signal(int sig)
{
	size_t i = 0;
	while (i < N_NOTE_SIGS && note_sigs[i] != sig)
		i++;
	if (sig == SIGALRM && hang_len > 0) {
		ssize_t w = write(STDERR_FILENO, hang_note, (size_t)hang_len);
		(void)w;
		/* SIGTERM: core/cleanup.c's handler removes the run's temporary
		 * folders, then the process ends by the signal. */
		raise(SIGTERM);
		return;
	}
	if (sig != SIGALRM && crash_len > 0) {
		ssize_t w = write(STDERR_FILENO, crash_note, (size_t)crash_len);
		(void)w;
	}
	/* The action that was there before (the default, or a sanitizer's)
	 * takes the signal: raised again, or met again on return. */
	if (i < N_NOTE_SIGS)
		sigaction(sig, &note_old[i], NULL);
	raise(sig);
}

void ctq_kernel_plugin_call_begin(const struct ctq_kernel_plugin *t, const char *path,
				  const char *fn, int64_t M, int64_t N, int64_t K, double timeout_s)
{
	if (!note_installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = note_on_signal;
		sigemptyset(&sa.sa_mask);
		for (size_t i = 0; i < N_NOTE_SIGS; i++)
			sigaction(note_sigs[i], &sa, &note_old[i]);
		note_installed = true;
	}
	char geo[96];
	if (N < 0)
		snprintf(geo, sizeof geo, "M=%lld K=%lld", (long long)M, (long long)K);
	else
		snprintf(geo, sizeof geo, "M=%lld N=%lld K=%lld", (long long)M, (long long)N, (long long)K);
	crash_len = 0;
	hang_len = 0;
	int n = snprintf(crash_note, sizeof crash_note,
			 "ctq: kernel plug-in %s (%s): %s at %s crashed ctq's process (the signal "
			 "follows); a CUDA plug-in runs in ctq's process, so ctq ends here\n",
			 t->name, path, fn, geo);
	crash_len = n < 0 ? 0 : n >= (int)sizeof crash_note ? (int)sizeof crash_note - 1 : n;
	if (timeout_s > 0) {
		n = snprintf(hang_note, sizeof hang_note,
			     "ctq: kernel plug-in %s (%s): %s at %s did not finish within %g s (hung); "
			     "a CUDA plug-in runs in ctq's process, so ctq ends here\n",
			     t->name, path, fn, geo, timeout_s);
		hang_len = n < 0 ? 0 : n >= (int)sizeof hang_note ? (int)sizeof hang_note - 1 : n;
		alarm(timeout_s >= 4e9 ? 0u : (unsigned)timeout_s + (timeout_s > (unsigned)timeout_s));
	}
}

void ctq_kernel_plugin_call_end(void)
{
	if (hang_len > 0)
		alarm(0);
	crash_len = 0;
	hang_len = 0;
}

/* ---- the backend adapter ------------------------------------------------ */

/* Set in the plug-in host (backend/plugin_host.c): there the plug-in runs
 * in process by design, ctq's side names a crash or a hang, and the
 * host's last word would only repeat it. */
static bool pl_in_host;

void ctq_kernel_plugin_in_host(void) { pl_in_host = true; }

struct plugin_impl {
	struct ctq_backend_ops ops;  /* per instance: ops.name is the plug-in's */
	struct ctq_kernel_lib lib;
	struct ctq_backend mem;      /* ctq's CUDA backend for a CUDA plug-in's memory */
	bool cuda;
	void *gws;                   /* gemm_w8a8's workspace, grown on demand */
	size_t gws_bytes;
	/* A CPU plug-in's calls run in a child process (fork per call) over
	 * memory shared with it, so a crash or a hang ends the child, not
	 * ctq; timeout_s bounds each call (<= 0: no bound). */
	bool isolate;
	double timeout_s;
};

static struct plugin_impl *pimpl(struct ctq_backend *b) { return (struct plugin_impl *)b->impl; }

static void *pl_stream(struct plugin_impl *p)
{
	return p->cuda && p->mem.ops->stream ? p->mem.ops->stream(&p->mem) : NULL;
}

static enum ctq_status pl_alloc(struct ctq_backend *b, size_t n, void **out, struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	*out = NULL;
	if (p->cuda)
		return p->mem.ops->alloc(&p->mem, n, out, err);
	if (p->isolate) {
		/* Shared with the child each call runs in: a page of header
		 * (the mapping's length), then the block, page-aligned. */
		if (n > SIZE_MAX - 2 * PLUGIN_PAGE)
			return ctq_error_set(err, CTQ_ERR_NOMEM, p->lib.path,
					     "plug-in %s: %zu bytes is more than can be allocated",
					     p->ops.name, n);
		size_t len = (n + 2 * PLUGIN_PAGE - 1) & ~(size_t)(PLUGIN_PAGE - 1);
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return ctq_error_set(err, CTQ_ERR_NOMEM, p->lib.path,
					     "plug-in %s: out of memory (%zu bytes of shared memory)",
					     p->ops.name, n);
		memcpy(m, &len, sizeof len);
		*out = (char *)m + PLUGIN_PAGE;
		return CTQ_OK;
	}
	/* Host: over-allocate, keep the block's start just below the aligned
	 * pointer. */
	if (n > SIZE_MAX - PLUGIN_ALIGN - sizeof(void *))
		return ctq_error_set(err, CTQ_ERR_NOMEM, p->lib.path,
				     "plug-in %s: %zu bytes is more than can be allocated", p->ops.name, n);
	char *raw = ctq_malloc(n + PLUGIN_ALIGN + sizeof(void *));
	if (!raw)
		return ctq_error_set(err, CTQ_ERR_NOMEM, p->ops.name, "out of memory (%zu bytes)", n);
	uintptr_t a = ((uintptr_t)raw + sizeof(void *) + PLUGIN_ALIGN - 1) & ~(uintptr_t)(PLUGIN_ALIGN - 1);
	memcpy((char *)a - sizeof(void *), &raw, sizeof raw);
	*out = (void *)a;
	return CTQ_OK;
}

static void pl_free(struct ctq_backend *b, void *ptr)
{
	struct plugin_impl *p = pimpl(b);
	if (!ptr)
		return;
	if (p->cuda) {
		p->mem.ops->free(&p->mem, ptr);
		return;
	}
	if (p->isolate) {
		char *m = (char *)ptr - PLUGIN_PAGE;
		size_t len;
		memcpy(&len, m, sizeof len);
		munmap(m, len);
		return;
	}
	void *raw;
	memcpy(&raw, (char *)ptr - sizeof(void *), sizeof raw);
	ctq_free(raw);
}

static enum ctq_status pl_upload(struct ctq_backend *b, void *dst, const void *src, size_t n,
				 struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	if (p->cuda)
		return p->mem.ops->upload(&p->mem, dst, src, n, err);
	memcpy(dst, src, n);
	return CTQ_OK;
}

static enum ctq_status pl_download(struct ctq_backend *b, void *dst, const void *src, size_t n,
				   struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	if (p->cuda)
		return p->mem.ops->download(&p->mem, dst, src, n, err);
	memcpy(dst, src, n);
	return CTQ_OK;
}

static enum ctq_status pl_sync(struct ctq_backend *b, struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	return p->cuda ? p->mem.ops->sync(&p->mem, err) : CTQ_OK;
}

/* A plug-in's non-zero return as an error naming it and the call. */
static enum ctq_status pl_failed(struct plugin_impl *p, const char *fn, int rc, char *msg,
				 size_t cap, struct ctq_error *err)
{
	msg[cap - 1] = '\0';
	return ctq_error_set(err, CTQ_ERR_ENV, p->lib.path, "plug-in %s: %s returned %d: %s",
			     p->ops.name, fn, rc, msg[0] ? msg : "(no message)");
}

/* One call of the plug-in: which function, its geometry and arguments. */
enum pl_op { OP_QUANTIZE, OP_GEMM_W8A8, OP_GEMM_BF16, OP_GEMM_WNA16 };
struct pl_call {
	enum pl_op op;
	const char *fn;
	int64_t M, N, K; /* N unused by quantize */
	const void *x, *w, *s_w, *bias, *s;
	void *q, *y, *ws;
	size_t ws_bytes;
	const void *zero;   /* gemm_wna16: zero_packed or NULL */
	int bits;           /* gemm_wna16 */
	int64_t group_size; /* gemm_wna16 */
};

static int pl_invoke(struct plugin_impl *p, const struct pl_call *c, char *msg, size_t cap)
{
	const struct ctq_kernel_plugin *t = p->lib.t;
	void *stream = pl_stream(p);
	switch (c->op) {
	case OP_QUANTIZE:
		return t->quantize(c->x, c->M, c->K, c->q, c->y, stream, msg, cap);
	case OP_GEMM_W8A8:
		return t->gemm_w8a8(c->q, c->s, c->w, c->s_w, c->bias, c->M, c->N, c->K, c->y, c->ws,
				    c->ws_bytes, stream, msg, cap);
	case OP_GEMM_WNA16:
		return t->gemm_wna16(c->x, c->w, c->s_w, c->zero, c->bias, c->M, c->N, c->K, c->bits,
				     c->group_size, c->y, stream, msg, cap);
	default:
		return t->gemm_bf16(c->x, c->w, c->bias, c->M, c->N, c->K, c->y, stream, msg, cap);
	}
}

/* "M=64 N=128 K=64" (quantize: no N). */
static void pl_geometry(const struct pl_call *c, char *buf, size_t cap)
{
	if (c->op == OP_QUANTIZE)
		snprintf(buf, cap, "M=%lld K=%lld", (long long)c->M, (long long)c->K);
	else
		snprintf(buf, cap, "M=%lld N=%lld K=%lld", (long long)c->M, (long long)c->N,
			 (long long)c->K);
}

/* What the child sends back: the function's return code and message. */
struct pl_answer {
	int rc;
	char msg[512];
};

/* The child: the call, its answer down fd, and _exit (no atexit handler,
 * no stdio buffer of ctq's flushed twice: the parent flushed before
 * fork). */
static void pl_child(struct plugin_impl *p, const struct pl_call *c, int fd)
{
	/* The run's temporary folders are the parent's to remove; a crash
	 * leaves no core file behind. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* A fault ends the child by its signal, which the parent names: not
	 * a handler inherited from ctq (a sanitizer's would report and exit 1,
	 * hiding which signal it was). */
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
		signal(fatal[i], SIG_DFL);
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	struct pl_answer a;
	memset(&a, 0, sizeof a);
	a.rc = pl_invoke(p, c, a.msg, sizeof a.msg);
	a.msg[sizeof a.msg - 1] = '\0';
	fflush(NULL); /* what the plug-in printed */
	const char *at = (const char *)&a;
	size_t left = sizeof a;
	while (left) {
		ssize_t w = write(fd, at, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(126);
		at += w;
		left -= (size_t)w;
	}
	_exit(0);
}

static double pl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads the child's answer until EOF or the deadline (<= 0: none).
 * Returns the bytes read, or -1 when the deadline passed first. */
static ssize_t pl_read_answer(int fd, struct pl_answer *a, double timeout_s)
{
	double deadline = timeout_s > 0 ? pl_now() + timeout_s : 0;
	size_t got = 0;
	for (;;) {
		int wait_ms = -1;
		if (timeout_s > 0) {
			double left = deadline - pl_now();
			if (left <= 0)
				return -1;
			wait_ms = left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
		}
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int pr = poll(&pfd, 1, wait_ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return (ssize_t)got;
		if (pr == 0)
			continue; /* the deadline is checked above */
		char buf[256];
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return (ssize_t)got;
		size_t take = (size_t)r;
		if (take > sizeof *a - got)
			take = sizeof *a - got;
		memcpy((char *)a + got, buf, take);
		got += take;
	}
}

/* The call in a child process: its answer, or an error naming the
 * plug-in (path and name), the function, the geometry and what ended it. */
static enum ctq_status pl_isolated(struct plugin_impl *p, const struct pl_call *c,
				   struct ctq_error *err)
{
	char geo[96];
	pl_geometry(c, geo, sizeof geo);
	int fds[2];
	if (pipe(fds))
		return ctq_error_set(err, CTQ_ERR_ENV, p->lib.path,
				     "plug-in %s: %s at %s: cannot create a pipe to its child process: %s",
				     p->ops.name, c->fn, geo, strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return ctq_error_set(err, CTQ_ERR_ENV, p->lib.path,
				     "plug-in %s: %s at %s: cannot fork the child process it runs in: %s",
				     p->ops.name, c->fn, geo, strerror(e));
	}
	if (pid == 0) {
		close(fds[0]);
		pl_child(p, c, fds[1]);
	}
	close(fds[1]);
	struct pl_answer a;
	memset(&a, 0, sizeof a);
	ssize_t got = pl_read_answer(fds[0], &a, p->timeout_s);
	close(fds[0]);
	if (got < 0)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got < 0)
		return ctq_error_set(err, CTQ_ERR_ENV, p->lib.path,
				     "plug-in %s: %s at %s did not return within %g s (hung; its child "
				     "process was killed; the limit is --kernel-timeout)",
				     p->ops.name, c->fn, geo, p->timeout_s);
	if ((size_t)got == sizeof a && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (a.rc)
			return pl_failed(p, c->fn, a.rc, a.msg, sizeof a.msg, err);
		return CTQ_OK;
	}
	if (WIFSIGNALED(status))
		return ctq_error_set(err, CTQ_ERR_ENV, p->lib.path,
				     "plug-in %s: %s at %s crashed: killed by signal %d (%s); its outputs "
				     "are not used", p->ops.name, c->fn, geo, WTERMSIG(status),
				     strsignal(WTERMSIG(status)));
	return ctq_error_set(err, CTQ_ERR_ENV, p->lib.path,
			     "plug-in %s: %s at %s ended its process (exit status %d) instead of "
			     "returning; its outputs are not used", p->ops.name, c->fn, geo,
			     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* One call, isolated where the plug-in is (CPU), else in process under
 * the last word (ctq_kernel_plugin_call_begin). */
static enum ctq_status pl_call(struct ctq_backend *b, const struct pl_call *c, struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	if (p->isolate) {
		enum ctq_status st = pl_isolated(p, c, err);
		return st ? st : pl_sync(b, err);
	}
	char msg[512] = "";
	if (!pl_in_host)
		ctq_kernel_plugin_call_begin(p->lib.t, p->lib.path, c->fn, c->M,
					     c->op == OP_QUANTIZE ? -1 : c->N, c->K, p->timeout_s);
	int rc = pl_invoke(p, c, msg, sizeof msg);
	/* A CUDA plug-in's kernels end (or hang, or fault) in the sync. */
	enum ctq_status st = rc ? pl_failed(p, c->fn, rc, msg, sizeof msg, err) : pl_sync(b, err);
	if (!pl_in_host)
		ctq_kernel_plugin_call_end();
	return st;
}

static enum ctq_status pl_quantize(struct ctq_backend *b, const void *x, int64_t M, int64_t K,
				   void *q, void *s, struct ctq_error *err)
{
	const struct pl_call c = {.op = OP_QUANTIZE, .fn = "quantize", .M = M, .K = K, .x = x, .q = q,
				  .y = s};
	return pl_call(b, &c, err);
}

static enum ctq_status pl_linear(struct ctq_backend *b, const void *x, const void *w,
				 const void *s_w, const void *bias, int64_t M, int64_t N, int64_t K,
				 void *y, void *ws, struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	size_t need;
	enum ctq_status st = ctq_kernel_plugin_workspace(p->lib.t, p->lib.path, M, N, K, &need, err);
	if (st)
		return st;
	if (need > p->gws_bytes) {
		pl_free(b, p->gws);
		p->gws = NULL;
		p->gws_bytes = 0;
		struct ctq_error e = {0};
		if (pl_alloc(b, need, &p->gws, &e))
			return ctq_error_set(err, e.status, p->lib.path,
					     "plug-in %s: gemm_workspace_bytes(M=%lld, N=%lld, K=%lld) "
					     "asks for %zu bytes: %s", p->ops.name, (long long)M,
					     (long long)N, (long long)K, need, e.message);
		p->gws_bytes = need;
	}
	int8_t *q = ws;
	float *s = ctq_w8a8_workspace_scales(ws, M, K);
	const struct pl_call cq = {.op = OP_QUANTIZE, .fn = "quantize", .M = M, .K = K, .x = x, .q = q,
				   .y = s};
	if ((st = pl_call(b, &cq, err)))
		return st;
	const struct pl_call cg = {.op = OP_GEMM_W8A8, .fn = "gemm_w8a8", .M = M, .N = N, .K = K,
				   .q = q, .s = s, .w = w, .s_w = s_w, .bias = bias, .y = y,
				   .ws = need ? p->gws : NULL, .ws_bytes = need};
	return pl_call(b, &cg, err);
}

static enum ctq_status pl_gemm_bf16(struct ctq_backend *b, const void *x, const void *w,
				    const void *bias, int64_t M, int64_t N, int64_t K, void *y,
				    struct ctq_error *err)
{
	const struct pl_call c = {.op = OP_GEMM_BF16, .fn = "gemm_bf16", .M = M, .N = N, .K = K,
				  .x = x, .w = w, .bias = bias, .y = y};
	return pl_call(b, &c, err);
}

enum ctq_status ctq_backend_plugin_gemm_wna16(struct ctq_backend *b, const struct ctq_wna16_call *w,
					     struct ctq_error *err)
{
	if (ctq_backend_plugin_is_hosted(b))
		return ctq_backend_plugin_hosted_gemm_wna16(b, w, err);
	struct plugin_impl *p = pimpl(b);
	if (!p->lib.t->gemm_wna16)
		return ctq_error_set(err, CTQ_ERR_USAGE, p->lib.path,
				     "plug-in %s has no gemm_wna16 (a version-2 member)", p->ops.name);
	const struct pl_call c = {.op = OP_GEMM_WNA16, .fn = "gemm_wna16", .M = w->M, .N = w->N,
				  .K = w->K, .x = w->x, .w = w->w_packed, .s_w = w->scale,
				  .zero = w->zero_packed, .bias = w->bias, .y = w->y, .bits = w->bits,
				  .group_size = w->group_size};
	return pl_call(b, &c, err);
}

const struct ctq_kernel_plugin *ctq_backend_plugin_table(const struct ctq_backend *b)
{
	if (ctq_backend_plugin_is_hosted(b))
		return ctq_backend_plugin_hosted_table(b);
	return ((const struct plugin_impl *)b->impl)->lib.t;
}

static void pl_describe(struct ctq_backend *b, char *buf, size_t cap)
{
	struct plugin_impl *p = pimpl(b);
	const struct ctq_kernel_plugin *t = p->lib.t;
	char dev[256] = "host memory";
	if (p->cuda)
		p->mem.ops->describe(&p->mem, dev, sizeof dev);
	char wna16[96] = "no";
	if (t->gemm_wna16)
		snprintf(wna16, sizeof wna16, "%s%s%s%s%s",
			 t->caps & CTQ_KERNEL_PLUGIN_WNA16_INT4 ? "int4" : "",
			 t->caps & CTQ_KERNEL_PLUGIN_WNA16_INT8
				 ? (t->caps & CTQ_KERNEL_PLUGIN_WNA16_INT4 ? "+int8" : "int8") : "",
			 t->caps & CTQ_KERNEL_PLUGIN_WNA16_GROUPS ? ", groups" : ", per channel",
			 t->caps & CTQ_KERNEL_PLUGIN_WNA16_ASYM ? ", zero points" : "",
			 t->caps & CTQ_KERNEL_PLUGIN_WNA16_EXACT ? ", bit-exact" : "");
	char w8a8[64] = "W8A8: no";
	if (t->gemm_w8a8)
		snprintf(w8a8, sizeof w8a8, "bit-exact: %s%s%s",
			 t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT ? "quantize" : "",
			 (t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT) && (t->caps & CTQ_KERNEL_PLUGIN_GEMM_EXACT) ? ", " : "",
			 t->caps & CTQ_KERNEL_PLUGIN_GEMM_EXACT ? "gemm"
			 : (t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT) ? "" : "none");
	snprintf(buf, cap, "kernel plug-in %s (%s, ABI %u, %s; %s; bf16 gemm: %s; weight-only gemm: %s) on %s",
		 t->name, p->lib.path, t->abi_version, ctq_kernel_lib_device_name(&p->lib), w8a8,
		 t->gemm_bf16 ? "yes" : "no", wna16, dev);
}

static void pl_destroy(struct ctq_backend *b)
{
	struct plugin_impl *p = pimpl(b);
	if (!p)
		return;
	if (p->lib.t)
		pl_free(b, p->gws);
	ctq_kernel_lib_close(&p->lib);
	ctq_backend_close(&p->mem);
	ctq_free(p);
	b->impl = NULL;
}

void ctq_backend_plugin_set_timeout(struct ctq_backend *b, double seconds)
{
	if (ctq_backend_plugin_is_hosted(b))
		ctq_backend_plugin_hosted_set_timeout(b, seconds);
	else
		pimpl(b)->timeout_s = seconds;
}

bool ctq_backend_plugin_isolated(const struct ctq_backend *b)
{
	return ctq_backend_plugin_is_hosted(b) || ((const struct plugin_impl *)b->impl)->isolate;
}

void ctq_backend_plugin_set_isolated(struct ctq_backend *b, bool isolated)
{
	if (ctq_backend_plugin_is_hosted(b))
		return; /* its buffers live in the host */
	struct plugin_impl *p = pimpl(b);
	/* Shared mappings and ctq_malloc blocks are freed differently: only
	 * before the workspace exists, and a CUDA plug-in never. */
	if (!p->cuda && !p->gws)
		p->isolate = isolated;
}

enum ctq_status ctq_backend_plugin(struct ctq_backend *b, const char *path, struct ctq_error *err)
{
	memset(b, 0, sizeof *b);
	struct plugin_impl *p = ctq_calloc(1, sizeof *p);
	if (!p)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	enum ctq_status st = ctq_kernel_lib_open(&p->lib, path, err);
	if (st)
		goto fail;
	const struct ctq_kernel_plugin *t = p->lib.t;
	p->cuda = t->device == CTQ_KERNEL_PLUGIN_DEVICE_CUDA;
	/* A CUDA plug-in goes to a process of its own where ctq's program
	 * can be exec'd as its host (plugin_host.h); its table was checked
	 * here, init runs there. */
	const char *exe = ctq_plugin_host_exe();
	if (p->cuda && exe && !pl_in_host) {
		ctq_kernel_lib_close(&p->lib);
		ctq_free(p);
		return ctq_backend_plugin_hosted(b, path, exe, CTQ_PLUGIN_TIMEOUT_DEFAULT_S, err);
	}
	p->isolate = !p->cuda;
	p->timeout_s = CTQ_PLUGIN_TIMEOUT_DEFAULT_S;
	if (p->cuda && (st = ctq_backend_cuda(&p->mem, 0, err))) {
		/* The reason stays ctq's (no GPU, no CUDA build); the path is the plug-in's. */
		if (err)
			snprintf(err->path, sizeof err->path, "%s", path);
		goto fail;
	}
	/* After the CUDA backend, so the plug-in finds its device current. */
	if ((st = ctq_kernel_lib_init(&p->lib, err)))
		goto fail;
	p->ops = (struct ctq_backend_ops){
		.name = t->name,
		.destroy = pl_destroy,
		.describe = pl_describe,
		.alloc = pl_alloc,
		.free = pl_free,
		.upload = pl_upload,
		.download = pl_download,
		.sync = pl_sync,
		.quantize = t->quantize ? pl_quantize : NULL,
		.w8a8_linear = t->gemm_w8a8 ? pl_linear : NULL,
		.gemm_bf16 = t->gemm_bf16 ? pl_gemm_bf16 : NULL,
		.act_bytes = 2,
	};
	b->ops = &p->ops;
	b->impl = p;
	/* y is compared bit for bit end to end, so only when q and s are
	 * exact too. */
	const unsigned both = CTQ_KERNEL_PLUGIN_QUANT_EXACT | CTQ_KERNEL_PLUGIN_GEMM_EXACT;
	b->exact = (t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT ? CTQ_EXACT_QUANT : 0u) |
		   ((t->caps & both) == both ? CTQ_EXACT_OUTPUT : 0u);
	return CTQ_OK;
fail:
	ctq_kernel_lib_close(&p->lib);
	ctq_backend_close(&p->mem);
	ctq_free(p);
	return st;
}
