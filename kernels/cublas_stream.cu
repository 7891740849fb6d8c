/* ctq's CUDA stream with its cuBLAS handle (see cublas_stream.h). */
#include "kernels/cublas_stream.h"
#include "kernels/cuda_check.h"

enum ctq_status ctq_cublas_stream_open(cudaStream_t *stream, cublasHandle_t *cublas, void **ws,
				       size_t ws_bytes, struct ctq_error *err)
{
	enum ctq_status st;
	if ((st = CTQ_CUDA(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking), err)) ||
	    (st = CTQ_CUBLAS(cublasCreate(cublas), err)) ||
	    (st = CTQ_CUBLAS(cublasSetStream(*cublas, *stream), err)) ||
	    (st = CTQ_CUDA(cudaMalloc(ws, ws_bytes), err)) ||
	    (st = CTQ_CUBLAS(cublasSetWorkspace(*cublas, *ws, ws_bytes), err)))
		return st;
	return CTQ_OK;
}

void ctq_cublas_stream_close(cudaStream_t stream, cublasHandle_t cublas, void *ws)
{
	if (cublas)
		cublasDestroy(cublas);
	if (ws)
		cudaFree(ws);
	if (stream)
		cudaStreamDestroy(stream);
}
