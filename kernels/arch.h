/* Which GPU generation's code runs (kernels/arch.cu): whether this build
 * carries code for a device, the compute capability every dispatch decides
 * by (the device's own, or CTQ_ARCH's, backend/knobs.h), and a line saying
 * both. C linkage, no CUDA types.
 *
 * Why a forced architecture: the project's one GPU is an H200 (9.0), yet
 * the build carries the compute 8.x, 10.x and 12.x paths too. Their source
 * is compiled for sm_90a as well, so with CTQ_ARCH=sm_86 the H200 makes
 * every choice an sm_86 would make (the sm80-mma GEMM, no PDL) and runs the
 * same source; the manifest records the knob and the paths taken. */
#ifndef CTQ_KERNELS_ARCH_H
#define CTQ_KERNELS_ARCH_H

#include <stddef.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of CUDA devices visible, at least 1, into *n; else an
 * env-error at `path` saying why there is none, as one sentence: no NVIDIA
 * driver installed (libcuda absent: the runtime then reports
 * cudaErrorInsufficientDriver, and the driver version reads 0), a driver
 * older than this build's CUDA runtime, or a driver that sees no GPU.
 * Every command that asks for a GPU asks here. */
enum ctq_status ctq_cuda_device_count(const char *path, int *n, struct ctq_error *err);

/* The compute capability of the current device x 10 (86 for 8.6) that
 * dispatch decides by: CTQ_ARCH's where set, else the device's own; 0 when
 * no device can be queried. Cached per device. */
int ctq_cuda_dispatch_cc(void);

/* Checks, for device `device` (the backend's open calls it): that the
 * binary carries code it runs (env-error naming the device, its compute
 * capability, what the build carries and the make variable that adds it),
 * that a kernel of this build really loads there, and that CTQ_ARCH asks
 * only for what the device can execute (usage-error naming CTQ_ARCH:
 * sm_90a needs a 9.0 GPU, sm_100 and sm_120 a 9.0 or newer one, the 8.x
 * names 8.0 or newer). */
enum ctq_status ctq_cuda_arch_check(int device, struct ctq_error *err);

/* One line on device `device`: its capability, the code of this build that
 * runs there and, under CTQ_ARCH, the architecture dispatch follows; e.g.
 * "sm_90 runs sm_90a machine code" or "sm_90 runs sm_90a machine code,
 * dispatching as sm_86 (CTQ_ARCH)". */
void ctq_cuda_code_describe(int device, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
