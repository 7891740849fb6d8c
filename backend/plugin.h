/* Kernel plug-ins (include/ctq_kernel_plugin.h): the loader (dlopen, the
 * entry symbol, the ABI version, struct size and required members checked,
 * errors naming the path and dlerror's text) and the adapter that wraps a
 * plug-in's table into ctq's backend interface, so the probe runs a
 * plug-in through exactly the code path of ctq's own backends (version 2's
 * weight-only GEMM, which no ctq backend has, through
 * ctq_backend_plugin_gemm_wna16 with the same isolation).
 *
 * What it is not: a registry entry (`--backend` never names a plug-in; the
 * commands open one with --kernel-lib / --impl), or an implementation of
 * the model ops (the adapter fills quantize, w8a8_linear and gemm_bf16
 * where the plug-in has it; every model op is NULL).
 */
#ifndef CTQ_BACKEND_PLUGIN_H
#define CTQ_BACKEND_PLUGIN_H

#include <stdbool.h>

#include "backend/backend.h"
#include "include/ctq_kernel_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ctq_kernel_lib {
	void *handle;                        /* dlopen's, or NULL */
	const struct ctq_kernel_plugin *t;   /* &table once loaded */
	struct ctq_kernel_plugin table;      /* ctq's copy of the plug-in's table: a
					      * version-1 table's members, the rest NULL */
	bool inited;                         /* init ran (or is NULL): fini is due */
	char path[CTQ_PATH_MAX];
};

/* Loads path (dlopen RTLD_NOW | RTLD_LOCAL; a name without '/' is taken
 * from the working directory, never searched for), calls its entry point
 * with CTQ_KERNEL_PLUGIN_ABI_VERSION and validates the table (version,
 * size, name, device, capability bits, required functions). Errors (all
 * naming path): usage (cannot be loaded, no entry symbol, NULL table,
 * another ABI version, a short struct, a bad name or device, unknown
 * capability bits, a required function missing). On error l is closed. */
enum ctq_status ctq_kernel_lib_open(struct ctq_kernel_lib *l, const char *path,
				    struct ctq_error *err);
/* Runs the plug-in's init once (a CUDA plug-in: with its device current).
 * Errors: env-error (init failed, with the plug-in's message). */
enum ctq_status ctq_kernel_lib_init(struct ctq_kernel_lib *l, struct ctq_error *err);
/* Runs fini and dlcloses; accepts a zeroed or closed l. */
void ctq_kernel_lib_close(struct ctq_kernel_lib *l);

/* "cpu" or "cuda" for a plug-in's device. */
const char *ctq_kernel_lib_device_name(const struct ctq_kernel_lib *l);

/* The most workspace ctq allocates for a plug-in's gemm_w8a8 (1 TiB): a
 * larger answer of gemm_workspace_bytes is a broken plug-in, not a size. */
#define CTQ_PLUGIN_WORKSPACE_MAX ((size_t)1 << 40)
/* gemm_workspace_bytes(M, N, K) of table t (0 when it has none), checked:
 * more than CTQ_PLUGIN_WORKSPACE_MAX is an env-error naming the plug-in
 * (path, name), the field and the geometry. */
enum ctq_status ctq_kernel_plugin_workspace(const struct ctq_kernel_plugin *t, const char *path,
					    int64_t M, int64_t N, int64_t K, size_t *out,
					    struct ctq_error *err);

/* One weight-only GEMM (ABI version 2, gemm_wna16): every pointer into
 * the plug-in backend's memory (b->ops->alloc), shapes as the header
 * documents. */
struct ctq_wna16_call {
	const void *x;           /* (M, K) bf16 */
	const void *w_packed;    /* (N, ceil(K / (32 / bits))) int32 */
	const void *scale;       /* (N, n_groups) f32 */
	const void *zero_packed; /* (ceil(N / (32 / bits)), n_groups) int32, or NULL */
	const void *bias;        /* (N) f32 or NULL */
	int64_t M, N, K;
	int bits;
	int64_t group_size;      /* 0: per channel */
	void *y;                 /* (M, N) bf16 */
};

/* Runs c on plug-in backend b, isolated and bounded as every call of a
 * CPU plug-in (below). Errors: usage (no gemm_wna16), env-error (it
 * failed, crashed, exited or hung; naming the plug-in, the function and
 * the geometry). */
enum ctq_status ctq_backend_plugin_gemm_wna16(struct ctq_backend *b, const struct ctq_wna16_call *c,
					     struct ctq_error *err);
/* ctq's copy of plug-in backend b's table (version-2 members NULL for a
 * version-1 plug-in); for a plug-in in a host process
 * (backend/plugin_host.h) the table ctq's side loaded and checked, whose
 * functions run only in the host. */
const struct ctq_kernel_plugin *ctq_backend_plugin_table(const struct ctq_backend *b);

/* How long one call of a plug-in may take by default (seconds). */
#define CTQ_PLUGIN_TIMEOUT_DEFAULT_S 600.0

/* Opens the plug-in at path as a backend: memory is host memory for a CPU
 * plug-in and ctq's CUDA backend's (device 0) for a CUDA one; b->exact
 * takes the plug-in's capability bits; ops->name is the plug-in's name.
 *
 * Isolation: every call of a CPU plug-in (quantize, gemm_w8a8, gemm_bf16)
 * runs in a child process forked for it, over buffers ctq maps shared
 * (MAP_SHARED | MAP_ANONYMOUS, page-aligned), its return code and message
 * coming back over a pipe. A call that crashes (a signal), ends its
 * process (exit, _exit) or does not return within the timeout (the child
 * is then killed) is an env-error naming the plug-in's path and name, the
 * function and the geometry (M, N, K); ctq goes on. What a call changes in
 * the plug-in's own globals does not outlive it (init ran in ctq's
 * process, before any fork). A CUDA context does not survive fork, so a
 * CUDA plug-in runs in a host process exec'd from ctq's program
 * (backend/plugin_host.h: ctq_backend_plugin_hosted) where that program
 * is known (ctq_plugin_host_set_exe; ctq's main sets it); elsewhere (a
 * test program, an embedding) in ctq's process, where its crash ends
 * ctq after the last word below.
 *
 * Errors: as ctq_kernel_lib_open, env-error (a CUDA plug-in without CUDA),
 * out-of-memory. Close with ctq_backend_close. */
enum ctq_status ctq_backend_plugin(struct ctq_backend *b, const char *path, struct ctq_error *err);
/* The bound on one isolated call, in seconds (<= 0: none); default
 * CTQ_PLUGIN_TIMEOUT_DEFAULT_S. b is a plug-in backend. */
void ctq_backend_plugin_set_timeout(struct ctq_backend *b, double seconds);
/* Whether b's calls run in a child process (a CPU plug-in). */
bool ctq_backend_plugin_isolated(const struct ctq_backend *b);
/* Runs a CPU plug-in's calls in ctq's process (false) or in a child
 * (true, the default): in process is for a debugger, and for the tests of
 * the last word below. Call it before any buffer is allocated; a CUDA
 * plug-in in process stays there, a hosted one stays hosted. */
void ctq_backend_plugin_set_isolated(struct ctq_backend *b, bool isolated);

/* Called by the plug-in host (backend/plugin_host.c) before it opens its
 * plug-in: the plug-in then runs in process, without the last word. */
void ctq_kernel_plugin_in_host(void);

/* The last word of a plug-in that runs in ctq's process (a CUDA plug-in in
 * the probe and in bench gemm --impl): between begin and end, a fatal
 * signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) first writes one line
 * to stderr naming the plug-in (name, path), the function fn and the
 * geometry (N < 0: quantize's M, K), then takes its former action (the
 * process ends by it, as before); timeout_s > 0 arms alarm(2), whose
 * expiry writes that the call hung and ends ctq by SIGTERM (the run's
 * temporary folders removed, core/cleanup.h). Not reentrant: one call at
 * a time (the ABI's rule too). */
void ctq_kernel_plugin_call_begin(const struct ctq_kernel_plugin *t, const char *path,
				  const char *fn, int64_t M, int64_t N, int64_t K, double timeout_s);
void ctq_kernel_plugin_call_end(void);

#ifdef __cplusplus
}
#endif

#endif
