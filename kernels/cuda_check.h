/* ctq CUDA error checking: every CUDA runtime, cuBLAS and launch result
 * becomes an enum ctq_status with file:line in the error path. */
#ifndef CTQ_KERNELS_CUDA_CHECK_H
#define CTQ_KERNELS_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include "core/status.h"

static inline enum ctq_status ctq_cuda_status(cudaError_t e, const char *what, const char *file,
					      int line, struct ctq_error *err)
{
	if (e == cudaSuccess)
		return CTQ_OK;
	char path[128];
	snprintf(path, sizeof path, "%s:%d", file, line);
	return ctq_error_set(err, e == cudaErrorMemoryAllocation ? CTQ_ERR_NOMEM : CTQ_ERR_ENV, path,
			     "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static inline enum ctq_status ctq_cublas_status(cublasStatus_t e, const char *what,
						const char *file, int line, struct ctq_error *err)
{
	if (e == CUBLAS_STATUS_SUCCESS)
		return CTQ_OK;
	char path[128];
	snprintf(path, sizeof path, "%s:%d", file, line);
	return ctq_error_set(err, CTQ_ERR_ENV, path, "%s: cuBLAS status %d", what, (int)e);
}

#define CTQ_CUDA(call, err) ctq_cuda_status((call), #call, __FILE__, __LINE__, (err))
#define CTQ_CUBLAS(call, err) ctq_cublas_status((call), #call, __FILE__, __LINE__, (err))
/* After a kernel launch: launch-configuration errors surface here. */
#define CTQ_LAUNCH(err) ctq_cuda_status(cudaGetLastError(), "kernel launch", __FILE__, __LINE__, (err))

#endif
