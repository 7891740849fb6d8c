/* Programmatic dependent launch (Hopper and newer): a kernel launched with
 * ctq_launch_pdl may start while the kernel before it in the stream is
 * still running, once every block of that one has called pdl_trigger (or
 * exited). Everything before its pdl_wait then overlaps the predecessor:
 * the weight-streaming linears issue their first weight loads there (the
 * weights never change during a forward pass), and read activations,
 * scales and write outputs only after pdl_wait, which returns once the
 * predecessor has completed and its writes are visible. A kernel launched
 * without the attribute waits for its predecessor as always, so a
 * pdl_trigger in the producers is harmless before any other kernel.
 *
 * Rules: a kernel launched through ctq_launch_pdl reads nothing a
 * predecessor writes and writes nothing before its pdl_wait. The
 * weight-streaming linears (kernels/gemv_w8a8.cu, gemv_bf16.cu,
 * gemm_w8a8_sm90.cu) load weights before it; every other kernel of a
 * decode step (the norms and quantizing producers, qk_norm_rope, the KV
 * store, the decode attention and its combine, the greedy pick) is
 * launched through CTQ_PDL_LAUNCH and calls pdl_wait before it touches
 * global memory, so all it overlaps is its launch and its blocks' start.
 * Each of them calls pdl_trigger first: its successor's blocks become
 * resident while it runs and start the moment it completes. The linears
 * do not: the kernel after one launches as its last blocks exit (an early
 * trigger in the linears cost W8A8 decode on the H200 1.5% at batch 1 and
 * 6.5% at batch 8; docs/kernels.md). griddepcontrol.wait waits for the
 * whole predecessor grid, which itself passed its own wait, so the order
 * of every earlier kernel holds too. CTQ_NO_PDL turns the attribute off
 * (A/B runs); in CUDA graphs a captured attribute becomes a programmatic
 * edge. */
#ifndef CTQ_KERNELS_PDL_CUH
#define CTQ_KERNELS_PDL_CUH

#include <cuda_runtime.h>

#include "backend/knobs.h"
#include "backend/paths.h"
#include "kernels/arch.h"

__device__ __forceinline__ void pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* True when launches on the current device take the attribute: compute
 * capability 9.0 or newer as dispatch sees it (kernels/arch.h), CTQ_NO_PDL
 * unset. Cached per device (64). */
static inline bool ctq_pdl_on(void)
{
	static int state[64]; /* 0 unknown, 1 on, 2 off */
	int dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
		return false;
	int s = __atomic_load_n(&state[dev], __ATOMIC_ACQUIRE);
	if (!s) {
		/* by the dispatch capability: CTQ_ARCH=sm_86 launches as an sm_86 would */
		const bool on = ctq_cuda_dispatch_cc() >= 90 && !ctq_knobs()->no_pdl;
		s = on ? 1 : 2;
		__atomic_store_n(&state[dev], s, __ATOMIC_RELEASE);
	}
	return s == 1;
}

/* kernel<<<grid, block, smem, stream>>>(args...) with the programmatic
 * stream serialization attribute where ctq_pdl_on. Returns the launch's
 * error (and clears it from cudaGetLastError, so that a later CTQ_LAUNCH
 * does not report it twice): wrap in CTQ_CUDA. */
template <typename... P, typename... A>
static inline cudaError_t ctq_launch_pdl(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
					 cudaStream_t stream, A &&...args)
{
	cudaLaunchAttribute at[1];
	at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at[0].val.programmaticStreamSerializationAllowed = 1;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = grid;
	cfg.blockDim = block;
	cfg.dynamicSmemBytes = smem;
	cfg.stream = stream;
	cfg.attrs = at;
	cfg.numAttrs = ctq_pdl_on() ? 1 : 0;
	ctq_kpath_note(CTQ_KOP_LAUNCH, cfg.numAttrs ? CTQ_LAUNCH_PDL : CTQ_LAUNCH_PLAIN);
	const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, static_cast<P>(args)...);
	if (e != cudaSuccess)
		(void)cudaGetLastError();
	return e;
}

/* The dependent launch of a kernel whose first global access follows its
 * pdl_wait: CTQ_PDL_LAUNCH((kernel<A, B>), grid, block, smem, stream, args...)
 * returns its cudaError_t (wrap in CTQ_CUDA). Pass nullptr, not NULL, for
 * a pointer argument. */
#define CTQ_PDL_LAUNCH(kernel, grid, block, smem, stream, ...)                                               \
	ctq_launch_pdl(kernel, dim3(grid), dim3(block), (size_t)(smem), (cudaStream_t)(stream), __VA_ARGS__)

#endif
