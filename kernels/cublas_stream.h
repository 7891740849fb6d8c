/* ctq's CUDA stream with a cuBLAS handle bound to it, as the CUDA backend
 * and the GEMM benchmark open it: the workspace is set up front, so graph
 * capture on the stream never allocates. Not the kernels' launches, not
 * cuBLASLt (the benchmark's own handle shares the workspace). */
#ifndef CTQ_KERNELS_CUBLAS_STREAM_H
#define CTQ_KERNELS_CUBLAS_STREAM_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/status.h"

/* On the current device: a non-blocking *stream, a *cublas handle on it and
 * *ws (ws_bytes of device memory) as its workspace. Stops at the first
 * error (env or nomem, with file:line); what was made by then is in the
 * outputs, for ctq_cublas_stream_close. */
enum ctq_status ctq_cublas_stream_open(cudaStream_t *stream, cublasHandle_t *cublas, void **ws,
				       size_t ws_bytes, struct ctq_error *err);

/* Destroys what ctq_cublas_stream_open made; each may be NULL. */
void ctq_cublas_stream_close(cudaStream_t stream, cublasHandle_t cublas, void *ws);

#endif
