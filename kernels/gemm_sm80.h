/* The compute 8.x W8A8 GEMM (kernels/gemm_w8a8_sm80.cu), behind
 * ctq_gemm_w8a8_launch; declared separately so tests and benchmarks can
 * force one tile configuration. Runs on every GPU of compute capability 8.0
 * or newer: the path of Ampere and Ada, and of Blackwell (10.x, 12.x),
 * where wgmma does not exist. */
#ifndef CTQ_KERNELS_GEMM_SM80_H
#define CTQ_KERNELS_GEMM_SM80_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when dispatch follows compute capability 8.0 or newer other than
 * 9.0 (kernels/arch.h), where this is the tensor-core path. */
bool ctq_gemm_sm80_available(void);
/* True when the kernel takes these operands on this GPU (capability 8.0 or
 * newer, whatever dispatch follows): no test defects, K a positive
 * multiple of 16 (whole 16-byte copies), q and w 16-byte aligned. */
bool ctq_gemm_sm80_fits(const int8_t *q, const int8_t *w, int64_t M, int64_t N, int64_t K,
			unsigned defects);
/* Number of tile configurations, one's shape ("128x256x64/4", BM x BN x
 * BK / stages), and the one picked for an M x N x K product. */
int ctq_gemm_sm80_tiles(void);
const char *ctq_gemm_sm80_tile_name(int tile);
int ctq_gemm_sm80_pick(int64_t M, int64_t N, int64_t K);
/* Same contract as ctq_gemm_w8a8_launch; tile < 0 lets the table choose. */
enum ctq_status ctq_gemm_sm80_launch(const int8_t *q, const int8_t *w, const float *s_a,
				     const float *s_w, const float *bias, int64_t M, int64_t N,
				     int64_t K, int32_t *acc, uint16_t *y, int tile, void *stream,
				     struct ctq_error *err);

#ifdef __cplusplus
}
#endif

#endif
