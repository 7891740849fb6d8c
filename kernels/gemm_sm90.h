/* The Hopper W8A8 GEMM (kernels/gemm_w8a8_sm90.cu), behind
 * ctq_gemm_w8a8_launch; declared separately so tests and benchmarks can
 * force one tile configuration. */
#ifndef CTQ_KERNELS_GEMM_SM90_H
#define CTQ_KERNELS_GEMM_SM90_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when dispatch follows compute capability 9.0 (kernels/arch.h: a
 * 9.0 GPU without CTQ_ARCH, or CTQ_ARCH=sm_90a). */
bool ctq_gemm_sm90_available(void);
/* True when the sm90 kernel takes these operands: no test defects, K a
 * positive multiple of 16, q and w 16-byte aligned. */
bool ctq_gemm_sm90_fits(const int8_t *q, const int8_t *w, int64_t M, int64_t N, int64_t K,
			unsigned defects);
/* Number of configurations (0..3 cooperative tiles, 4 ping-pong, the
 * last the small-M family for M <= 64), and the one picked for an M × N
 * output (CTQ_SM90_TILE forces one, for tuning). */
int ctq_gemm_sm90_tiles(void);
int ctq_gemm_sm90_pick(int64_t M, int64_t N, int64_t K);
/* Same contract as ctq_gemm_w8a8_launch; tile < 0 lets the table choose. */
enum ctq_status ctq_gemm_sm90_launch(const int8_t *q, const int8_t *w, const float *s_a,
				     const float *s_w, const float *bias, int64_t M, int64_t N,
				     int64_t K, int32_t *acc, uint16_t *y, int tile, void *stream,
				     struct ctq_error *err);

#ifdef __cplusplus
}
#endif

#endif
