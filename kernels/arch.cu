/* GPU generations: the code a device runs and the capability dispatch
 * follows (see arch.h). */
#include <stdio.h>
#include <string.h>

#include "backend/knobs.h"
#include "core/version.h"
#include "kernels/arch.h"
#include "kernels/cuda_check.h"

/* Never launched: cudaFuncGetAttributes on it loads this build's device
 * code on the device, which fails where no image fits. */
__global__ void arch_probe_kernel(void) {}

static const char *arch_name(int cc)
{
	switch (cc) {
	case 80: return "sm_80";
	case 86: return "sm_86";
	case 89: return "sm_89";
	case 90: return "sm_90a";
	case 100: return "sm_100";
	case 120: return "sm_120";
	}
	return "?";
}

static int device_cc(int dev)
{
	int major = 0, minor = 0;
	if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
		return 0;
	return major * 10 + minor;
}

/* Whether a device of capability real can execute what dispatch chooses
 * for capability want: wgmma exists on 9.0 alone; PDL from 9.0 on; the
 * sm80-mma GEMM and the rest from 8.0 on. */
static bool can_emulate(int real, int want)
{
	if (want == 90)
		return real == 90;
	if (want >= 90)
		return real >= 90;
	return real >= 80;
}

extern "C" int ctq_cuda_dispatch_cc(void)
{
	static int cache[64]; /* 0 unknown, else cc */
	int dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
		return 0;
	int c = __atomic_load_n(&cache[dev], __ATOMIC_ACQUIRE);
	if (!c) {
		const int real = device_cc(dev), want = ctq_knobs()->arch;
		/* ctq_cuda_arch_check refuses an impossible CTQ_ARCH before any
		 * dispatch; here it only never widens what the device can do */
		c = want && can_emulate(real, want) ? want : real;
		__atomic_store_n(&cache[dev], c, __ATOMIC_RELEASE);
	}
	return c;
}

extern "C" enum ctq_status ctq_cuda_device_count(const char *path, int *n, struct ctq_error *err)
{
	*n = 0;
	const cudaError_t e = cudaGetDeviceCount(n);
	if (e == cudaSuccess && *n > 0)
		return CTQ_OK;
	(void)cudaGetLastError();
	/* Which of: no driver (libcuda absent: the runtime says
	 * cudaErrorInsufficientDriver and the driver version reads 0), a driver
	 * older than this build's runtime, or a driver that sees no device;
	 * said once, as one sentence. */
	int drv = 0, rt = 0;
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	*n = 0;
	if (drv == 0)
		return ctq_error_set(err, CTQ_ERR_ENV, path,
				     "no CUDA device: no NVIDIA driver is installed (libcuda not found), "
				     "so no GPU can be used");
	if (e == cudaErrorInsufficientDriver || drv < rt)
		return ctq_error_set(err, CTQ_ERR_ENV, path,
				     "no CUDA device: the NVIDIA driver supports CUDA %d.%d, older than "
				     "this build's CUDA runtime %d.%d; update the driver",
				     drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
	if (e == cudaSuccess || e == cudaErrorNoDevice)
		return ctq_error_set(err, CTQ_ERR_ENV, path,
				     "no CUDA device: the NVIDIA driver (CUDA %d.%d) sees no GPU (check "
				     "CUDA_VISIBLE_DEVICES)",
				     drv / 1000, drv % 1000 / 10);
	return ctq_error_set(err, CTQ_ERR_ENV, path, "no CUDA device: cudaGetDeviceCount failed: %s",
			     cudaGetErrorString(e));
}

extern "C" enum ctq_status ctq_cuda_arch_check(int device, struct ctq_error *err)
{
	cudaDeviceProp p;
	enum ctq_status st = CTQ_CUDA(cudaGetDeviceProperties(&p, device), err);
	if (st)
		return st;
	char how[96];
	if (!ctq_build_runs_on(p.major, p.minor, how, sizeof how))
		return ctq_error_set(err, CTQ_ERR_ENV, "--device",
				     "GPU %d (%s) has compute capability %d.%d; this ctq carries GPU code "
				     "for \"%s\" and none of it runs there: rebuild with make "
				     "CUDA_ARCH=\"sm_%d%d\" (or CUDA_ARCH=native on that host)",
				     device, p.name, p.major, p.minor,
				     ctq_build_cuda_archs()[0] ? ctq_build_cuda_archs() : "nothing", p.major,
				     p.minor);
	/* the driver agrees: one of this build's kernels has an image there */
	cudaFuncAttributes fa;
	const cudaError_t e = cudaFuncGetAttributes(&fa, arch_probe_kernel);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		return ctq_error_set(err, CTQ_ERR_ENV, "--device",
				     "GPU %d (%s, compute capability %d.%d): no kernel of this ctq loads "
				     "(%s; the build carries \"%s\"): rebuild with make CUDA_ARCH=\"sm_%d%d\"",
				     device, p.name, p.major, p.minor, cudaGetErrorString(e),
				     ctq_build_cuda_archs(), p.major, p.minor);
	}
	if ((st = ctq_knobs_check(err)))
		return st;
	const int want = ctq_knobs()->arch, real = p.major * 10 + p.minor;
	if (want && !can_emulate(real, want))
		return ctq_error_set(err, CTQ_ERR_USAGE, "CTQ_ARCH",
				     "is %s; GPU %d (%s) has compute capability %d.%d and cannot run "
				     "what that architecture's dispatch chooses (%s)",
				     arch_name(want), device, p.name, p.major, p.minor,
				     want == 90 ? "wgmma exists on 9.0 alone"
				     : want > 90 ? "PDL needs 9.0 or newer"
						 : "the kernels need 8.0 or newer");
	return CTQ_OK;
}

extern "C" void ctq_cuda_code_describe(int device, char *buf, size_t cap)
{
	if (!cap)
		return;
	const int real = device_cc(device);
	char how[96] = "";
	if (!real || !ctq_build_runs_on(real / 10, real % 10, how, sizeof how)) {
		snprintf(buf, cap, "sm_%d: no code of this build runs there", real);
		return;
	}
	const bool ptx = strncmp(how, "sm_", 3) != 0;
	const int want = ctq_knobs()->arch;
	snprintf(buf, cap, "sm_%d runs %s%s%s%s%s", real, how, ptx ? "" : " machine code",
		 want ? ", dispatching as " : "", want ? arch_name(want) : "", want ? " (CTQ_ARCH)" : "");
}
