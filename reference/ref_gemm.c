/* The reference's int8 and f64 GEMMs, fast and bit-identical to the
 * one-dot-product-at-a-time definitions kept beside them as oracles
 * (ctq_ref_gemm_i8_scalar, ctq_ref_gemm_f64_scalar in ref_ops.c).
 *
 * Why the bits cannot change:
 * - int8: products of int8 are at most 2^14 in magnitude and the sum of K
 *   <= CTQ_K_MAX of them fits int32, so integer accumulation is exact in
 *   any order; the AVX2 path sums sign-extended int16 pairs with vpmaddwd
 *   (each pair at most 2^15, no saturation) into int32 lanes, then adds
 *   the lanes.
 * - f64: the definition is, per output, sum = 0.0; for k in order: sum =
 *   sum + (double)x[k] * (double)w[k] (each product and each sum rounded;
 *   the build forbids contraction into FMA), then sum + bias. The fast path
 *   keeps that order in every lane and vectorises across outputs instead:
 *   a lane is one output column, so lanes never mix (4 lanes with AVX2,
 *   8 with AVX-512 at level 2, whose fused multiply-adds round as the
 *   definition's steps: the f64 product of two floats is exact). The same holds for every thread count (an
 *   output is computed by one thread, whole).
 *
 * Both split the outputs into blocks of NB weight rows spread over the
 * threads, as the scalar code does; inside a block, micro-tiles of a few
 * activation rows by a few weight rows share their loads. The AVX2 code is
 * chosen at run time (ctq_ref_simd); without AVX2 the scalar definitions
 * run, and ctq_ref_simd_cap lets a test run each level on one CPU. With AVX-512 VNNI the int8 GEMM of 4 rows or more takes vpdpbusd,
 * which multiplies unsigned by signed bytes: q + 128 (a bit flip) times w,
 * summed in int32 lanes, less 128 times the sum of w's row, all modulo
 * 2^32 (unsigned arithmetic, the instruction wraps): the true q · w is
 * below 2^31 in magnitude, so the residue is the exact value. */
#include "reference/ref_ops.h"
#include "core/arena.h"
#include "core/cpu.h"
#include "core/numerics.h"
#include "reference/ref_threads.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CTQ_REF_X86 1
#include <immintrin.h>
#endif

#define NB 64 /* weight rows per task, as in ref_ops.c */

/* What the CPU has (core/cpu.h): 0 scalar, 1 AVX2, 2 AVX2 and AVX-512 VNNI
 * (with BW for the byte ops); cap: the most ctq_ref_simd_cap allows
 * (tests), read from any thread (OpenMP teams, the probes' worker) as a
 * relaxed atomic. */
static int cpu_level(void)
{
	return !ctq_cpu_has(CTQ_CPU_AVX2) ? 0 : ctq_cpu_has(CTQ_CPU_AVX512_VNNI_BW) ? 2 : 1;
}

static int cap = 2;

int ctq_ref_simd_level(void)
{
	const int l = cpu_level(), c = __atomic_load_n(&cap, __ATOMIC_RELAXED);
	return l < c ? l : c;
}

int ctq_ref_simd_cap(int level)
{
	__atomic_store_n(&cap, level < 0 ? 0 : level, __ATOMIC_RELAXED);
	return ctq_ref_simd_level();
}

const char *ctq_ref_simd(void)
{
	static const char *const names[] = {"scalar", "avx2", "avx2+avx512vnni"};
	return names[ctq_ref_simd_level()];
}

#ifdef CTQ_REF_X86
/* ---- int8 ---------------------------------------------------------------- */

__attribute__((target("avx2"))) static inline int32_t hsum_epi32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return _mm_cvtsi128_si32(s);
}

/* acc[r][c] = q row (m0 + r) · w row (n0 + c) for r < MR, c < NR, exactly. */
#define I8_TILE(MR, NR)                                                                            \
	__attribute__((target("avx2"))) static void i8_tile_##MR##x##NR(                          \
		const int8_t *q, const int8_t *w, int64_t m0, int64_t n0, int64_t N, int64_t K,     \
		int32_t *acc)                                                                      \
	{                                                                                          \
		__m256i s[MR][NR];                                                                 \
		for (int r = 0; r < MR; r++)                                                       \
			for (int c = 0; c < NR; c++)                                               \
				s[r][c] = _mm256_setzero_si256();                                  \
		int64_t k = 0;                                                                     \
		for (; k + 16 <= K; k += 16) {                                                     \
			__m256i a[MR];                                                             \
			for (int r = 0; r < MR; r++)                                               \
				a[r] = _mm256_cvtepi8_epi16(                                       \
					_mm_loadu_si128((const __m128i *)(q + (m0 + r) * K + k))); \
			for (int c = 0; c < NR; c++) {                                             \
				const __m256i b = _mm256_cvtepi8_epi16(                            \
					_mm_loadu_si128((const __m128i *)(w + (n0 + c) * K + k))); \
				for (int r = 0; r < MR; r++)                                       \
					s[r][c] = _mm256_add_epi32(s[r][c], _mm256_madd_epi16(a[r], b)); \
			}                                                                          \
		}                                                                                  \
		for (int r = 0; r < MR; r++)                                                       \
			for (int c = 0; c < NR; c++) {                                             \
				int32_t t = hsum_epi32(s[r][c]);                                   \
				const int8_t *qr = q + (m0 + r) * K, *wr = w + (n0 + c) * K;      \
				for (int64_t j = k; j < K; j++)                                    \
					t += (int32_t)qr[j] * (int32_t)wr[j];                      \
				acc[(m0 + r) * N + n0 + c] = t;                                    \
			}                                                                          \
	}

I8_TILE(2, 4)
I8_TILE(1, 4)
I8_TILE(2, 1)
I8_TILE(1, 1)

#define VNNI_TARGET __attribute__((target("avx2,avx512f,avx512bw,avx512vnni")))

VNNI_TARGET static inline uint32_t hsum_epi32_512(__m512i v)
{
	return (uint32_t)_mm512_reduce_add_epi32(v);
}

/* wsum[n] = the sum of row n of w over k < K64, modulo 2^32. */
VNNI_TARGET static void w_row_sums(const int8_t *w, int64_t n, int64_t K, int64_t K64, uint32_t *wsum)
{
	const __m512i ones = _mm512_set1_epi8(1);
	__m512i s = _mm512_setzero_si512();
	for (int64_t k = 0; k < K64; k += 64)
		s = _mm512_dpbusd_epi32(s, ones, _mm512_loadu_si512((const void *)(w + n * K + k)));
	*wsum = hsum_epi32_512(s);
}

/* As I8_TILE over 64-byte steps with vpdpbusd (see the file's head). */
#define VNNI_TILE(MR, NR)                                                                          \
	VNNI_TARGET static void vnni_tile_##MR##x##NR(const int8_t *q, const int8_t *w,           \
						      const uint32_t *wsum, int64_t m0, int64_t n0, \
						      int64_t N, int64_t K, int64_t K64,           \
						      int32_t *acc)                                \
	{                                                                                          \
		const __m512i flip = _mm512_set1_epi8((char)0x80);                                 \
		__m512i s[MR][NR];                                                                 \
		for (int r = 0; r < MR; r++)                                                       \
			for (int c = 0; c < NR; c++)                                               \
				s[r][c] = _mm512_setzero_si512();                                  \
		for (int64_t k = 0; k < K64; k += 64) {                                            \
			__m512i a[MR];                                                             \
			for (int r = 0; r < MR; r++)                                               \
				a[r] = _mm512_xor_si512(                                           \
					_mm512_loadu_si512((const void *)(q + (m0 + r) * K + k)), flip); \
			for (int c = 0; c < NR; c++) {                                             \
				const __m512i b = _mm512_loadu_si512((const void *)(w + (n0 + c) * K + k)); \
				for (int r = 0; r < MR; r++)                                       \
					s[r][c] = _mm512_dpbusd_epi32(s[r][c], a[r], b);           \
			}                                                                          \
		}                                                                                  \
		for (int r = 0; r < MR; r++)                                                       \
			for (int c = 0; c < NR; c++) {                                             \
				uint32_t t = hsum_epi32_512(s[r][c]) - 128u * wsum[c];             \
				const int8_t *qr = q + (m0 + r) * K, *wr = w + (n0 + c) * K;      \
				for (int64_t j = K64; j < K; j++)                                  \
					t += (uint32_t)((int32_t)qr[j] * (int32_t)wr[j]);          \
				acc[(m0 + r) * N + n0 + c] = (int32_t)t;                           \
			}                                                                          \
	}

VNNI_TILE(4, 4)
VNNI_TILE(1, 4)
VNNI_TILE(4, 1)
VNNI_TILE(1, 1)

static void i8_vnni(const int8_t *q, const int8_t *w, int64_t M, int64_t N, int64_t K, int32_t *acc)
{
	const int64_t K64 = K - K % 64;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctq_ref_threads(M * N * K))
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		const int64_t n1 = n0 + NB < N ? n0 + NB : N;
		uint32_t wsum[NB];
		for (int64_t n = n0; n < n1; n++)
			w_row_sums(w, n, K, K64, &wsum[n - n0]);
		int64_t m = 0;
		for (; m + 4 <= M; m += 4) {
			int64_t n = n0;
			for (; n + 4 <= n1; n += 4)
				vnni_tile_4x4(q, w, &wsum[n - n0], m, n, N, K, K64, acc);
			for (; n < n1; n++)
				vnni_tile_4x1(q, w, &wsum[n - n0], m, n, N, K, K64, acc);
		}
		for (; m < M; m++) {
			int64_t n = n0;
			for (; n + 4 <= n1; n += 4)
				vnni_tile_1x4(q, w, &wsum[n - n0], m, n, N, K, K64, acc);
			for (; n < n1; n++)
				vnni_tile_1x1(q, w, &wsum[n - n0], m, n, N, K, K64, acc);
		}
	}
}

/* ---- int8, AVX-512 VNNI weight panels (M >= PANEL_MIN_M) --------------------
 *
 * The tiles above sum 64 products per lane and then add the 16 lanes of
 * every output: with K of a few hundred, those horizontal sums cost as
 * much as the products. Here a lane is an output instead: the weights of
 * 32 output channels are packed so that 32-bit element c of group k4 holds
 * w[n0 + c][4 k4 .. 4 k4 + 3]; a broadcast of 4 activation bytes (flipped
 * to q + 128 once per call) times two such vectors adds 4 products to each
 * of 32 outputs. Each lane is then corrected by 128 times its channel's
 * sum (modulo 2^32, as in the tiles), and the K % 4 tail is added one
 * product at a time. Exact for the same reasons. */
#define PANEL_N 32
#define PANEL_MIN_M 8

/* panel (K4, PANEL_N) int32 from rows n0 .. n0 + nc - 1 of w (zero past
 * nc), and their sums over k < 4 K4 into wsum (PANEL_N). A full panel is
 * transposed 16 rows x 16 k4 at a time in registers (64 shuffles for 256
 * values), its last K4 % 16 columns gathered (16 rows' 4 bytes at k4 per
 * vpgatherdd; 31 K < 2^31 as K <= CTQ_K_MAX), and its sums taken 64 bytes
 * a vpdpbusd with ones: at M = 64 the scalar packing below cost as much as
 * the products (bench_ref 64 2560 19456 on 2 cores: 18.6 ms with it, 11.9
 * with gathers alone). */
VNNI_TARGET static void pack_panel_full(const int8_t *w, int64_t n0, int64_t K, int64_t K4, int32_t *panel,
					uint32_t *wsum)
{
	const __m512i idx = _mm512_mullo_epi32(
		_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32((int)K));
	const int8_t *w0 = w + n0 * K, *w1 = w + (n0 + 16) * K;
	int64_t k4 = 0;
	for (; k4 + 16 <= K4; k4 += 16)
		for (int h = 0; h < 2; h++) {
			/* 16 rows x 16 k4 of int32, transposed: after the 32- and
			 * 64-bit interleaves u[4g + p] holds rows 4g..4g+3 at k4 =
			 * 4L + p in its 128-bit lane L; two rounds of lane shuffles
			 * gather lane L of u[p], u[4 + p], u[8 + p], u[12 + p] */
			__m512i r[16], t[16], u[16];
			for (int i = 0; i < 16; i++)
				r[i] = _mm512_loadu_si512((const void *)(w + (n0 + 16 * h + i) * K + 4 * k4));
			for (int i = 0; i < 16; i += 2) {
				t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
				t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
			}
			for (int g = 0; g < 4; g++) {
				u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
				u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
				u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
				u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
			}
			for (int p = 0; p < 4; p++) {
				const __m512i x0 = _mm512_shuffle_i32x4(u[p], u[4 + p], 0x88);
				const __m512i y0 = _mm512_shuffle_i32x4(u[p], u[4 + p], 0xdd);
				const __m512i x1 = _mm512_shuffle_i32x4(u[8 + p], u[12 + p], 0x88);
				const __m512i y1 = _mm512_shuffle_i32x4(u[8 + p], u[12 + p], 0xdd);
				int32_t *o = panel + (k4 + p) * PANEL_N + 16 * h;
				_mm512_storeu_si512((void *)o, _mm512_shuffle_i32x4(x0, x1, 0x88));
				_mm512_storeu_si512((void *)(o + 4 * PANEL_N), _mm512_shuffle_i32x4(y0, y1, 0x88));
				_mm512_storeu_si512((void *)(o + 8 * PANEL_N), _mm512_shuffle_i32x4(x0, x1, 0xdd));
				_mm512_storeu_si512((void *)(o + 12 * PANEL_N), _mm512_shuffle_i32x4(y0, y1, 0xdd));
			}
		}
	for (; k4 < K4; k4++) {
		_mm512_storeu_si512((void *)(panel + k4 * PANEL_N), _mm512_i32gather_epi32(idx, w0 + 4 * k4, 1));
		_mm512_storeu_si512((void *)(panel + k4 * PANEL_N + 16),
				    _mm512_i32gather_epi32(idx, w1 + 4 * k4, 1));
	}
	const int64_t K64 = 4 * K4 / 64 * 64;
	for (int64_t c = 0; c < PANEL_N; c++) {
		w_row_sums(w, n0 + c, K, K64, &wsum[c]);
		const int8_t *r = w + (n0 + c) * K;
		for (int64_t k = K64; k < 4 * K4; k++)
			wsum[c] += (uint32_t)(int32_t)r[k];
	}
}

static void pack_panel(const int8_t *w, int64_t n0, int64_t nc, int64_t K, int64_t K4, int32_t *panel,
		       uint32_t *wsum)
{
	if (nc == PANEL_N) {
		pack_panel_full(w, n0, K, K4, panel, wsum);
		return;
	}
	for (int64_t c = 0; c < PANEL_N; c++) {
		uint32_t sum = 0;
		for (int64_t k4 = 0; k4 < K4; k4++) {
			int32_t v = 0;
			if (c < nc) {
				const int8_t *r = w + (n0 + c) * K + 4 * k4;
				memcpy(&v, r, 4);
				sum += (uint32_t)((int32_t)r[0] + r[1] + r[2] + r[3]);
			}
			panel[k4 * PANEL_N + c] = v;
		}
		wsum[c] = sum;
	}
}

/* acc rows m0 .. m0 + MR - 1, columns n0 .. n0 + nc - 1 from the panel;
 * qf the flipped activations (M, K) as bytes. */
#define PANEL_TILE(MR)                                                                             \
	VNNI_TARGET static void panel_tile_##MR(const uint8_t *qf, const int8_t *q, const int8_t *w,    \
						const int32_t *panel, const uint32_t *wsum, int64_t m0, \
						int64_t n0, int64_t nc, int64_t N, int64_t K,          \
						int64_t K4, int32_t *acc)                              \
	{                                                                                          \
		__m512i s[MR][2];                                                                  \
		for (int r = 0; r < MR; r++)                                                       \
			s[r][0] = s[r][1] = _mm512_setzero_si512();                                \
		for (int64_t k4 = 0; k4 < K4; k4++) {                                              \
			const __m512i b0 = _mm512_loadu_si512((const void *)(panel + k4 * PANEL_N));  \
			const __m512i b1 = _mm512_loadu_si512((const void *)(panel + k4 * PANEL_N + 16)); \
			for (int r = 0; r < MR; r++) {                                             \
				int32_t a4;                                                        \
				memcpy(&a4, qf + (m0 + r) * K + 4 * k4, 4);                        \
				const __m512i a = _mm512_set1_epi32(a4);                           \
				s[r][0] = _mm512_dpbusd_epi32(s[r][0], a, b0);                     \
				s[r][1] = _mm512_dpbusd_epi32(s[r][1], a, b1);                     \
			}                                                                          \
		}                                                                                  \
		const __m512i c0 = _mm512_slli_epi32(_mm512_loadu_si512((const void *)wsum), 7);    \
		const __m512i c1 = _mm512_slli_epi32(_mm512_loadu_si512((const void *)(wsum + 16)), 7); \
		for (int r = 0; r < MR; r++) {                                                     \
			uint32_t o[PANEL_N];                                                       \
			_mm512_storeu_si512((void *)o, _mm512_sub_epi32(s[r][0], c0));             \
			_mm512_storeu_si512((void *)(o + 16), _mm512_sub_epi32(s[r][1], c1));     \
			const int8_t *qr = q + (m0 + r) * K;                                       \
			for (int64_t c = 0; c < nc; c++) {                                         \
				const int8_t *wr = w + (n0 + c) * K;                               \
				for (int64_t j = 4 * K4; j < K; j++)                               \
					o[c] += (uint32_t)((int32_t)qr[j] * (int32_t)wr[j]);       \
				acc[(m0 + r) * N + n0 + c] = (int32_t)o[c];                        \
			}                                                                          \
		}                                                                                  \
	}

PANEL_TILE(8)
PANEL_TILE(1)

/* false when memory runs out (the caller takes the tiles instead) */
static bool i8_vnni_panels(const int8_t *q, const int8_t *w, int64_t M, int64_t N, int64_t K,
			   int32_t *acc)
{
	const int64_t K4 = K / 4;
	uint8_t *qf = ctq_malloc((size_t)(M * K) + 1); /* (M, K) q + 128 */
	if (!qf)
		return false;
	for (int64_t i = 0; i < M * K; i++)
		qf[i] = (uint8_t)q[i] ^ 0x80u;
	bool ok = true;
#pragma omp parallel num_threads(ctq_ref_threads(M * N * K))
	{
		int32_t *panel = ctq_malloc((size_t)(K4 * PANEL_N) * sizeof *panel + 1);
		uint32_t wsum[PANEL_N];
		if (!panel) {
#pragma omp atomic write
			ok = false;
		}
#pragma omp for schedule(dynamic, 1)
		for (int64_t n0 = 0; n0 < N; n0 += PANEL_N) {
			if (!panel)
				continue;
			const int64_t nc = N - n0 < PANEL_N ? N - n0 : PANEL_N;
			pack_panel(w, n0, nc, K, K4, panel, wsum);
			int64_t m = 0;
			for (; m + 8 <= M; m += 8)
				panel_tile_8(qf, q, w, panel, wsum, m, n0, nc, N, K, K4, acc);
			for (; m < M; m++)
				panel_tile_1(qf, q, w, panel, wsum, m, n0, nc, N, K, K4, acc);
		}
		free(panel);
	}
	free(qf);
	return ok;
}

static void i8_avx2(const int8_t *q, const int8_t *w, int64_t M, int64_t N, int64_t K, int32_t *acc)
{
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctq_ref_threads(M * N * K))
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		const int64_t n1 = n0 + NB < N ? n0 + NB : N;
		int64_t m = 0;
		for (; m + 2 <= M; m += 2) {
			int64_t n = n0;
			for (; n + 4 <= n1; n += 4)
				i8_tile_2x4(q, w, m, n, N, K, acc);
			for (; n < n1; n++)
				i8_tile_2x1(q, w, m, n, N, K, acc);
		}
		for (; m < M; m++) {
			int64_t n = n0;
			for (; n + 4 <= n1; n += 4)
				i8_tile_1x4(q, w, m, n, N, K, acc);
			for (; n < n1; n++)
				i8_tile_1x1(q, w, m, n, N, K, acc);
		}
	}
}

/* ---- f64 ------------------------------------------------------------------ */

/* y[m0 + r][n0 + 4v + l] for r < MR, 4-wide vectors v < NV: sum in k order
 * per lane from the packed panel p (K, 4 NV) f64, then + bias. */
#define F64_TILE(MR, NV)                                                                           \
	__attribute__((target("avx2"))) static void f64_tile_##MR##x##NV(                         \
		const float *x, const double *p, const float *bias, int64_t m0, int64_t n0,         \
		int64_t N, int64_t K, double *y)                                                   \
	{                                                                                          \
		__m256d s[MR][NV];                                                                 \
		for (int r = 0; r < MR; r++)                                                       \
			for (int v = 0; v < NV; v++)                                               \
				s[r][v] = _mm256_setzero_pd();                                     \
		for (int64_t k = 0; k < K; k++) {                                                  \
			__m256d b[NV];                                                             \
			for (int v = 0; v < NV; v++)                                               \
				b[v] = _mm256_loadu_pd(p + k * 4 * NV + 4 * v);                    \
			for (int r = 0; r < MR; r++) {                                             \
				const __m256d a = _mm256_set1_pd((double)x[(m0 + r) * K + k]);    \
				for (int v = 0; v < NV; v++)                                       \
					s[r][v] = _mm256_add_pd(s[r][v], _mm256_mul_pd(a, b[v]));  \
			}                                                                          \
		}                                                                                  \
		for (int r = 0; r < MR; r++)                                                       \
			for (int v = 0; v < NV; v++) {                                             \
				double o[4];                                                       \
				_mm256_storeu_pd(o, s[r][v]);                                      \
				for (int l = 0; l < 4; l++) {                                      \
					const int64_t n = n0 + 4 * v + l;                          \
					y[(m0 + r) * N + n] = o[l] + (bias ? (double)bias[n] : 0.0); \
				}                                                                  \
			}                                                                          \
	}

F64_TILE(4, 2)
F64_TILE(1, 2)

/* The same with AVX-512, 8 lanes a vector, from xd = x widened to f64
 * (M, K): y[m0 + r][n0 + 8v + l] from the packed panel p (K, 8 NV) f64.
 * Here each step is one fused multiply-add, and the bits are still the
 * definition's: x and w are floats, so (double)x * (double)w has at most
 * 48 significant bits and an exponent well inside f64's range, and is
 * exact; fma(x, w, s) then rounds the same real number that s + x * w
 * rounds once (which NaN comes out of a NaN input may differ: the probes'
 * yardstick skips non-finite values). */
#define F64_TILE512(MR, NV)                                                                        \
	__attribute__((target("avx512f"))) static void f64_tile512_##MR##x##NV(                   \
		const double *xd, const double *p, const float *bias, int64_t m0, int64_t n0,       \
		int64_t N, int64_t K, double *y)                                                   \
	{                                                                                          \
		__m512d s[MR][NV];                                                                 \
		for (int r = 0; r < MR; r++)                                                       \
			for (int v = 0; v < NV; v++)                                               \
				s[r][v] = _mm512_setzero_pd();                                     \
		for (int64_t k = 0; k < K; k++) {                                                  \
			__m512d b[NV];                                                             \
			for (int v = 0; v < NV; v++)                                               \
				b[v] = _mm512_loadu_pd(p + k * 8 * NV + 8 * v);                    \
			for (int r = 0; r < MR; r++) {                                             \
				const __m512d a = _mm512_set1_pd(xd[(m0 + r) * K + k]);            \
				for (int v = 0; v < NV; v++)                                       \
					s[r][v] = _mm512_fmadd_pd(a, b[v], s[r][v]);               \
			}                                                                          \
		}                                                                                  \
		for (int r = 0; r < MR; r++)                                                       \
			for (int v = 0; v < NV; v++) {                                             \
				double o[8];                                                       \
				_mm512_storeu_pd(o, s[r][v]);                                      \
				for (int l = 0; l < 8; l++) {                                      \
					const int64_t n = n0 + 8 * v + l;                          \
					y[(m0 + r) * N + n] = o[l] + (bias ? (double)bias[n] : 0.0); \
				}                                                                  \
			}                                                                          \
	}

F64_TILE512(6, 2)
F64_TILE512(1, 2)

/* The scalar definition of one output (ref_ops.c cell_f64). */
static void f64_cell(const float *x, const float *w, const float *bias, int64_t m, int64_t n,
		     int64_t N, int64_t K, double *y)
{
	const float *xr = x + m * K, *wr = w + n * K;
	double sum = 0.0;
	for (int64_t k = 0; k < K; k++)
		sum += (double)xr[k] * (double)wr[k];
	y[m * N + n] = sum + (bias ? (double)bias[n] : 0.0);
}

/* Panels of 16 weight rows with AVX-512 (wide: level 2), then of 8 with
 * AVX2, then single cells. */
static void f64_simd(const float *x, const float *w, const float *bias, int64_t M, int64_t N,
		     int64_t K, bool wide, double *y)
{
	/* x widened once for the AVX-512 tiles (M, K); without it (out of
	 * memory) the AVX2 panels run */
	double *xd = wide ? ctq_malloc((size_t)(M * K) * sizeof *xd + 1) : NULL;
	if (xd)
		for (int64_t i = 0; i < M * K; i++)
			xd[i] = (double)x[i];
#pragma omp parallel num_threads(ctq_ref_threads(M * N * K))
	{
		/* one panel of 16 weight rows, (K, 16) f64, per thread; without
		 * it (out of memory) the block runs the scalar cells */
		double *p = malloc((size_t)K * 16 * sizeof *p);
#pragma omp for schedule(dynamic, 1)
		for (int64_t n0 = 0; n0 < N; n0 += NB) {
			const int64_t n1 = n0 + NB < N ? n0 + NB : N;
			int64_t n = n0;
			for (; p && xd && n + 16 <= n1; n += 16) {
				for (int64_t k = 0; k < K; k++)
					for (int c = 0; c < 16; c++)
						p[k * 16 + c] = (double)w[(n + c) * K + k];
				int64_t m = 0;
				for (; m + 6 <= M; m += 6)
					f64_tile512_6x2(xd, p, bias, m, n, N, K, y);
				for (; m < M; m++)
					f64_tile512_1x2(xd, p, bias, m, n, N, K, y);
			}
			for (; p && n + 8 <= n1; n += 8) {
				for (int64_t k = 0; k < K; k++)
					for (int c = 0; c < 8; c++)
						p[k * 8 + c] = (double)w[(n + c) * K + k];
				int64_t m = 0;
				for (; m + 4 <= M; m += 4)
					f64_tile_4x2(x, p, bias, m, n, N, K, y);
				for (; m < M; m++)
					f64_tile_1x2(x, p, bias, m, n, N, K, y);
			}
			for (; n < n1; n++)
				for (int64_t m = 0; m < M; m++)
					f64_cell(x, w, bias, m, n, N, K, y);
		}
		free(p);
	}
	free(xd);
}
#endif /* CTQ_REF_X86 */

enum ctq_status ctq_ref_gemm_i8(const int8_t *q, const int8_t *w, int64_t M, int64_t N,
				int64_t K, int32_t *acc, struct ctq_error *err)
{
#ifdef CTQ_REF_X86
	/* VNNI pays for its per-row weight sums from 4 activation rows on,
	 * for packed panels from PANEL_MIN_M */
	if (K <= CTQ_K_MAX && ctq_ref_simd_level() == 2 && M >= PANEL_MIN_M &&
	    i8_vnni_panels(q, w, M, N, K, acc))
		return CTQ_OK;
	if (K <= CTQ_K_MAX && ctq_ref_simd_level() == 2 && M >= 4) {
		i8_vnni(q, w, M, N, K, acc);
		return CTQ_OK;
	}
	if (K <= CTQ_K_MAX && ctq_ref_simd_level() >= 1) {
		i8_avx2(q, w, M, N, K, acc);
		return CTQ_OK;
	}
#endif
	return ctq_ref_gemm_i8_scalar(q, w, M, N, K, acc, err);
}

#ifdef CTQ_REF_X86
/* The f32 GEMM with AVX-512 (level 2), each output dot_lanes's definition
 * (ref_ops.c): one zmm is its 16 lanes (lane i takes k = i mod 16, in k
 * order, product then sum, each rounded), the K % 16 tail added into lanes
 * 0 .. r - 1 only (a masked add: the other lanes keep their bits, -0
 * included), then the lanes added pairwise, lower lane first, as the
 * scalar loop does: 8 + 8, 4 + 4, 2 + 2, 1 + 1. A tile of MR activation
 * rows by NR weight rows shares its loads. */
__attribute__((target("avx512f"))) static inline float lanes16(__m512 acc)
{
	const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(acc),
					_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
	const __m128 a4 = _mm_add_ps(_mm256_castps256_ps128(a8), _mm256_extractf128_ps(a8, 1));
	const __m128 a2 = _mm_add_ps(a4, _mm_movehl_ps(a4, a4));
	return _mm_cvtss_f32(_mm_add_ss(a2, _mm_shuffle_ps(a2, a2, 1)));
}

#define F32_TILE512(MR, NR)                                                                        	__attribute__((target("avx512f"))) static void f32_tile512_##MR##x##NR(                   		const float *x, const float *w, const float *bias, int64_t m0, int64_t n0, int64_t N, 		int64_t K, float *y)                                                               	{                                                                                          		__m512 s[MR][NR];                                                                  		for (int r = 0; r < MR; r++)                                                       			for (int c = 0; c < NR; c++)                                               				s[r][c] = _mm512_setzero_ps();                                     		int64_t k = 0;                                                                     		for (; k + 16 <= K; k += 16) {                                                     			__m512 b[NR];                                                              			for (int c = 0; c < NR; c++)                                               				b[c] = _mm512_loadu_ps(w + (n0 + c) * K + k);                      			for (int r = 0; r < MR; r++) {                                             				const __m512 a = _mm512_loadu_ps(x + (m0 + r) * K + k);            				for (int c = 0; c < NR; c++)                                       					s[r][c] = _mm512_add_ps(s[r][c], _mm512_mul_ps(a, b[c]));   			}                                                                          		}                                                                                  		if (k < K) {                                                                       			const __mmask16 t = (__mmask16)((1u << (K - k)) - 1u);                     			__m512 b[NR];                                                              			for (int c = 0; c < NR; c++)                                               				b[c] = _mm512_maskz_loadu_ps(t, w + (n0 + c) * K + k);             			for (int r = 0; r < MR; r++) {                                             				const __m512 a = _mm512_maskz_loadu_ps(t, x + (m0 + r) * K + k);   				for (int c = 0; c < NR; c++)                                       					s[r][c] = _mm512_mask_add_ps(s[r][c], t, s[r][c],          								     _mm512_mul_ps(a, b[c]));      			}                                                                          		}                                                                                  		for (int r = 0; r < MR; r++)                                                       			for (int c = 0; c < NR; c++)                                               				y[(m0 + r) * N + n0 + c] =                                         					lanes16(s[r][c]) + (bias ? bias[n0 + c] : 0.0f);           	}

F32_TILE512(4, 2)
F32_TILE512(1, 2)
F32_TILE512(1, 1)

/* Blocks of NB weight rows over the threads, as the scalar code splits
 * them; inside a block 4 x 2 tiles, then the rows and the odd column. */
static void f32_simd(const float *x, const float *w, const float *bias, int64_t M, int64_t N, int64_t K,
		     float *y)
{
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctq_ref_threads(M * N * K))
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		const int64_t n1 = n0 + NB < N ? n0 + NB : N;
		int64_t n = n0;
		for (; n + 2 <= n1; n += 2) {
			int64_t m = 0;
			for (; m + 4 <= M; m += 4)
				f32_tile512_4x2(x, w, bias, m, n, N, K, y);
			for (; m < M; m++)
				f32_tile512_1x2(x, w, bias, m, n, N, K, y);
		}
		for (; n < n1; n++)
			for (int64_t m = 0; m < M; m++)
				f32_tile512_1x1(x, w, bias, m, n, N, K, y);
	}
}
#endif

void ctq_ref_gemm_f32(const float *x, const float *w, const float *bias, int64_t M, int64_t N, int64_t K,
		      float *y)
{
#ifdef CTQ_REF_X86
	if (ctq_ref_simd_level() == 2) {
		f32_simd(x, w, bias, M, N, K, y);
		return;
	}
#endif
	ctq_ref_gemm_f32_scalar(x, w, bias, M, N, K, y);
}

void ctq_ref_gemm_f64(const float *x, const float *w, const float *bias, int64_t M, int64_t N,
		      int64_t K, double *y)
{
#ifdef CTQ_REF_X86
	if (ctq_ref_simd_level() >= 1) {
		f64_simd(x, w, bias, M, N, K, ctq_ref_simd_level() == 2, y);
		return;
	}
#endif
	ctq_ref_gemm_f64_scalar(x, w, bias, M, N, K, y);
}
