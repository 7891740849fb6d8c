/* A kernel plug-in in a process of its own (the plug-in host): the
 * answer to "a CUDA plug-in that faults or hangs ends ctq". A CUDA context
 * does not survive fork, so the host is ctq's own program exec'd with
 * CTQ_PLUGIN_HOST_ARG: it opens the plug-in as an in-process backend
 * (backend/plugin.h, its CUDA device and stream its own) and serves that
 * backend's ops (alloc, free, upload, download, sync, quantize,
 * w8a8_linear, gemm_bf16, and ctq_backend_plugin_gemm_wna16) over a
 * socket pair. Device pointers are the
 * host's, opaque to ctq: the probe only moves data with upload and
 * download and offsets pointers, which holds for them.
 *
 * A call that crashes the host (a signal), ends it, or does not answer
 * within the timeout (the host is then killed) is an env-error naming the
 * plug-in's path and name, the op and its geometry; ctq goes on. The
 * host's buffers die with it, so every later call of that backend fails
 * naming the first failure.
 *
 * What it is not: the CPU plug-ins' isolation (a fork per call over
 * shared memory, backend/plugin.c), which survives a crash call by call.
 */
#ifndef CTQ_BACKEND_PLUGIN_HOST_H
#define CTQ_BACKEND_PLUGIN_HOST_H

#include <stdbool.h>

#include "backend/backend.h"
#include "include/ctq_kernel_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* argv[1] of a host process: `EXE __plugin-host FD PATH`. */
#define CTQ_PLUGIN_HOST_ARG "__plugin-host"

/* The program exec'd as the host (ctq's main sets "/proc/self/exe"). Unset
 * (NULL, a test program or an embedding): CUDA plug-ins run in process. */
void ctq_plugin_host_set_exe(const char *exe);
const char *ctq_plugin_host_exe(void);

/* The host's main: argv as above. Serves until the socket closes; returns
 * the process's exit code (0, or 2 on bad arguments). */
int ctq_plugin_host_main(int argc, char **argv);

/* Opens the plug-in at path in a host process started from exe (whatever
 * its device: a CPU plug-in is hosted too, which the tests use). The ops
 * are the plug-in backend's; ops->name is the plug-in's, b->exact its
 * capability bits. timeout_s bounds each call, the start included (<= 0:
 * none). Errors: env-error (the host could not start, the plug-in's open
 * or init failed in it: its message), usage (as ctq_kernel_lib_open in
 * the host). Close with ctq_backend_close. */
enum ctq_status ctq_backend_plugin_hosted(struct ctq_backend *b, const char *path, const char *exe,
					  double timeout_s, struct ctq_error *err);
/* Whether b is a hosted plug-in backend, and its per-call bound. */
bool ctq_backend_plugin_is_hosted(const struct ctq_backend *b);
void ctq_backend_plugin_hosted_set_timeout(struct ctq_backend *b, double seconds);
/* What backend/plugin.h's ctq_backend_plugin_table and
 * ctq_backend_plugin_gemm_wna16 do for a hosted backend: the table ctq's
 * side loaded and checked (never called here), and gemm_wna16 run in the
 * host. */
const struct ctq_kernel_plugin *ctq_backend_plugin_hosted_table(const struct ctq_backend *b);
struct ctq_wna16_call;
enum ctq_status ctq_backend_plugin_hosted_gemm_wna16(struct ctq_backend *b,
						    const struct ctq_wna16_call *c,
						    struct ctq_error *err);

#ifdef __cplusplus
}
#endif

#endif
