/* ctq W8A8 GEMM for Hopper (sm_90a): wgmma.mma_async s8·s8→s32 fed by TMA
 * through a multi-stage shared-memory pipeline, one producer warp group and
 * one or two consumer warp groups (warp specialisation; cooperative or
 * ping-pong), a persistent grid that walks output tiles with M fastest, and
 * the epilogue of core/numerics.h fused (per-token scale, per-channel
 * scale, bias, BF16, each step rounded separately) and written by TMA
 * stores — or the raw int32 accumulators for the bit-exact checks. Integer accumulation is exact, so the result is
 * bit-identical to the reference and to the dp4a kernel whatever the tile.
 *
 * Tiles are BM (64 · consumers) × BN × NB · 128 bytes of K (NB TMA boxes of
 * 128 bytes a pipeline stage: 1, or 2-4 for the small-M family's narrow
 * tiles, where more K a stage means fewer barrier round trips per weight
 * byte and more weight bytes issued before pdl_wait). Operands are K-major
 * (q (M, K) and w (N, K) both row-major), the only layout wgmma takes for
 * 8-bit types; TMA writes them with the 128-byte swizzle and each k32 step
 * advances the descriptor by 32 bytes inside the swizzle atom. TMA fills
 * out-of-range rows and K columns with zeros, so edges need no special
 * case in the main loop; the epilogue checks bounds.
 *
 * Needs K % 16 == 0 (TMA global strides are multiples of 16 bytes) and
 * 16-byte aligned q and w; ctq_gemm_w8a8_launch falls back to the dp4a
 * kernel otherwise, and on GPUs other than compute capability 9.0. */
#include <cuda.h>
#include <cuda_bf16.h>
#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/numerics.h"
#include "kernels/arch.h"
#include "kernels/cuda_check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_sm90.h"
#include "backend/knobs.h"
#include "kernels/pdl.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CTQ_SM90_DEVICE 1
#endif

#define KBYTES 128 /* K bytes per pipeline stage: one 128-byte swizzle atom */
#define SM90_PRESTAGES 4   /* weight stages issued before pdl_wait (with PDL) */

#ifdef CTQ_SM90_DEVICE
__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void bar_init(uint64_t *bar, unsigned count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void bar_expect_tx(uint64_t *bar, unsigned bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
		     "r"(bytes)
		     : "memory");
}

__device__ __forceinline__ void bar_arrive(uint64_t *bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void bar_wait(uint64_t *bar, unsigned parity)
{
	asm volatile("{\n"
		     ".reg .pred done;\n"
		     "wait_%=:\n"
		     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
		     "@!done bra wait_%=;\n"
		     "}\n" ::"r"(smem_addr(bar)),
		     "r"(parity)
		     : "memory");
}

__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, int c0, int c1,
					    uint64_t *bar)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_addr(dst)),
		     "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
		     : "memory");
}

__device__ __forceinline__ unsigned cluster_rank(void)
{
	unsigned r;
	asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
	return r;
}

/* TMA store of one box from shared memory (bulk async group), and the
 * waits on those groups. Generic-proxy writes to the box must be fenced
 * (fence_async_smem) before the store reads them. */
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, const void *src, int c0, int c1)
{
	asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
			     (uint64_t)map),
		     "r"(c0), "r"(c1), "r"(smem_addr(src))
		     : "memory");
	asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

template <int N> __device__ __forceinline__ void tma_store_wait_read(void)
{
	asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void fence_async_smem(void)
{
	asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups
 * 1024 bytes apart (stride byte offset), leading byte offset unused. */
__device__ __forceinline__ uint64_t smem_desc(const void *p)
{
	const uint64_t a = smem_addr(p);
	return ((a & 0x3ffff) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N> __device__ __forceinline__ void wgmma_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* wgmma m64nNk32 s32 += s8 · s8 with both operands from shared memory
 * (acc == 0: D = A·B). Generated: one "+r" per accumulator register. */
__device__ __forceinline__ void wgmma_m64n32k32(int32_t *d, uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 "
		     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p;\n}\n"
		     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
		     : "l"(da), "l"(db), "r"(acc));
}

__device__ __forceinline__ void wgmma_m64n64k32(int32_t *d, uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 "
		     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p;\n}\n"
		     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
		     : "l"(da), "l"(db), "r"(acc));
}

__device__ __forceinline__ void wgmma_m64n128k32(int32_t *d, uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
		     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p;\n}\n"
		     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
		     : "l"(da), "l"(db), "r"(acc));
}

__device__ __forceinline__ void wgmma_m64n160k32(int32_t *d, uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n160k32.s32.s8.s8 "
		     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79}, %80, %81, p;\n}\n"
		     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79])
		     : "l"(da), "l"(db), "r"(acc));
}

__device__ __forceinline__ void wgmma_m64n192k32(int32_t *d, uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n192k32.s32.s8.s8 "
		     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, %96, %97, p;\n}\n"
		     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95])
		     : "l"(da), "l"(db), "r"(acc));
}

__device__ __forceinline__ void wgmma_m64n256k32(int32_t *d, uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 "
		     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p;\n}\n"
		     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
		     : "l"(da), "l"(db), "r"(acc));
}

template <int BN> struct Wgmma;
template <> struct Wgmma<32> {
	static __device__ __forceinline__ void run(int32_t *d, uint64_t a, uint64_t b, int acc)
	{
		wgmma_m64n32k32(d, a, b, acc);
	}
};
template <> struct Wgmma<64> {
	static __device__ __forceinline__ void run(int32_t *d, uint64_t a, uint64_t b, int acc)
	{
		wgmma_m64n64k32(d, a, b, acc);
	}
};
template <> struct Wgmma<128> {
	static __device__ __forceinline__ void run(int32_t *d, uint64_t a, uint64_t b, int acc)
	{
		wgmma_m64n128k32(d, a, b, acc);
	}
};
template <> struct Wgmma<160> {
	static __device__ __forceinline__ void run(int32_t *d, uint64_t a, uint64_t b, int acc)
	{
		wgmma_m64n160k32(d, a, b, acc);
	}
};
template <> struct Wgmma<192> {
	static __device__ __forceinline__ void run(int32_t *d, uint64_t a, uint64_t b, int acc)
	{
		wgmma_m64n192k32(d, a, b, acc);
	}
};
template <> struct Wgmma<256> {
	static __device__ __forceinline__ void run(int32_t *d, uint64_t a, uint64_t b, int acc)
	{
		wgmma_m64n256k32(d, a, b, acc);
	}
};
#endif /* CTQ_SM90_DEVICE */

/* Shapes of one configuration.
 *   cooperative (PP = false): the CTA tile is 64·CONSUMERS × BN, each
 *     consumer warp group owns 64 rows of it, all of them on the same K
 *     stage at once.
 *   ping-pong (PP = true, two consumers): each consumer owns a whole
 *     128 × BN tile (two m64 wgmma per k step), and the two take the CTA's
 *     tiles in turn. The producer fills the stage ring in tile order, so the
 *     second consumer's main loop starts as the first one's ends and runs
 *     while the first one does its epilogue: the epilogue leaves the
 *     critical path.
 * A_ROWS < 64 (cooperative, one consumer, M <= A_ROWS): only the first
 * A_ROWS activation rows are loaded; wgmma still reads 64 rows, the rest
 * from whatever follows in shared memory, which only feeds accumulator rows
 * >= M that are never stored (each output row depends on its own activation
 * row alone). The smaller stage buys a deeper pipeline: more weight bytes
 * in flight.
 * NB: K boxes of 128 bytes a stage, each operand's boxes side by side (the
 * k32 steps walk box 0, then box 1, ...); a box wholly past K is zero-filled
 * by TMA and still counts its bytes. */
template <int CONSUMERS, int BN, int STAGES, bool PP, int A_ROWS = (PP ? 128 : 64 * CONSUMERS),
	  int NB = 1>
struct Sm90Config {
	static constexpr int TILE_M = PP ? 128 : 64 * CONSUMERS; /* rows of one output tile */
	static constexpr int BLOCKS = PP ? 2 : 1;                /* 64-row blocks per consumer */
	static constexpr int THREADS = 128 * (CONSUMERS + 1);
	static constexpr int A_BOX = A_ROWS * KBYTES; /* one TMA box: 128 bytes of K */
	static constexpr int B_BOX = BN * KBYTES;
	static constexpr int A_BYTES = NB * A_BOX; /* NB boxes of K per stage */
	static constexpr int B_BYTES = NB * B_BOX;
	static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
	/* epilogue staging per consumer: two 64 × 64 BF16 boxes for the TMA
	 * stores, or 64 rows of EPI_COLS padded by 16 bytes (32 banks) for the
	 * plain stores */
	static constexpr int EPI_COLS = BN % 128 == 0 ? 128 : BN % 64 == 0 ? 64 : 32;
	/* TMA stores take 64-column boxes */
	static constexpr bool TMA_Y = BN % 64 == 0;
	static constexpr int EPI_LD = EPI_COLS + 8;
	static constexpr int EPI_BYTES = 64 * EPI_LD * 2 > 16384 ? 64 * EPI_LD * 2 : 16384;
	/* pipeline stages, staging, barriers; the dynamic buffer is 1024-byte
	 * aligned (checked in the kernel), which the 128-byte swizzle needs */
	static constexpr int SMEM = STAGES * STAGE_BYTES + CONSUMERS * EPI_BYTES + (2 * STAGES + 2) * 8;
	static_assert(SMEM <= 232448, "shared memory beyond the 227 KiB opt-in");
	static_assert(!PP || CONSUMERS == 2, "ping-pong takes two consumers");
	static_assert(A_ROWS % 8 == 0 && (A_ROWS == (PP ? 128 : 64 * CONSUMERS) || CONSUMERS == 1),
		      "A_ROWS: whole 8-row swizzle atoms; short only with one consumer");
};

#ifdef CTQ_SM90_DEVICE
__device__ __forceinline__ void wg_sync(int id)
{
	asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

/* The epilogue of one 64 × BN accumulator block whose first row is mb.
 * Fragment layout of wgmma m64nN: warp w holds rows 16w..16w+15, lane l rows
 * l/4 and l/4 + 8, columns 8j + 2(l%4) + {0, 1} in registers 4j + {0, 1}
 * and 4j + {2, 3}. boxes counts this consumer's TMA stores (two buffers
 * used in turn). */
template <class C, int BN>
__device__ __forceinline__ void epilogue64(const int32_t (&d)[BN / 2], int mb, int n0, int M, int N,
					   const float *__restrict__ s_a, const float *__restrict__ s_w,
					   const float *__restrict__ bias, int32_t *__restrict__ acc_out,
					   uint16_t *__restrict__ y, const CUtensorMap *map_y, int tma_y,
					   uint8_t *stage, int bar_id, unsigned &boxes)
{
	const int tid = threadIdx.x & 127, lane = tid & 31, warp = tid >> 5;
	const int r0 = mb + warp * 16 + (lane >> 2);
	if (acc_out) {
		/* the debug path: raw accumulators, no scales */
#pragma unroll
		for (int j = 0; j < BN / 8; j++) {
			const int n = n0 + 8 * j + 2 * (lane & 3);
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int m = r0 + 8 * h;
				if (m >= M || n >= N)
					continue;
				const size_t o = (size_t)m * (size_t)N + (size_t)n;
				acc_out[o] = d[4 * j + 2 * h];
				if (n + 1 < N)
					acc_out[o + 1] = d[4 * j + 2 * h + 1];
			}
		}
		return;
	}
	if (mb >= M)
		return;
	const float sa0 = r0 < M ? s_a[r0] : 0.0f;
	const float sa1 = r0 + 8 < M ? s_a[r0 + 8] : 0.0f;
	if (C::TMA_Y && tma_y) {
		/* 64 × 64 BF16 boxes (128-byte rows, 128-byte swizzle: 16-byte
		 * chunk k of row r at chunk k ^ (r % 8), which also spreads the
		 * fragment writes over 32 banks); TMA stores them asynchronously
		 * and clips rows >= M and columns >= N, so the stores overlap
		 * what follows */
#pragma unroll
		for (int box = 0; box < BN / 64; box++) {
			uint8_t *buf = stage + (boxes & 1) * 8192;
			if (tid == 0) /* the store that last read this buffer is done reading */
				tma_store_wait_read<1>();
			wg_sync(bar_id);
#pragma unroll
			for (int jj = 0; jj < 8; jj++) {
				const int j = box * 8 + jj;
				const int n = n0 + 8 * j + 2 * (lane & 3);
				const float sw0 = n < N ? s_w[n] : 0.0f, sw1 = n + 1 < N ? s_w[n + 1] : 0.0f;
				const float b0 = bias && n < N ? bias[n] : 0.0f;
				const float b1 = bias && n + 1 < N ? bias[n + 1] : 0.0f;
#pragma unroll
				for (int h = 0; h < 2; h++) {
					const float sa = h ? sa1 : sa0;
					const int rl = warp * 16 + (lane >> 2) + 8 * h;
					*(uint32_t *)(buf + rl * 128 + ((jj ^ (rl & 7)) << 4) + 4 * (lane & 3)) =
						epilogue_pair(d[4 * j + 2 * h], d[4 * j + 2 * h + 1], sa, sw0, sw1, b0, b1);
				}
			}
			fence_async_smem();
			wg_sync(bar_id);
			if (tid == 0)
				tma_store_2d(map_y, buf, n0 + box * 64, mb);
			boxes++;
		}
		return;
	}
	/* without TMA (N % 8 != 0, an unaligned y, or BN not a multiple of 64): EPI_COLS
	 * columns at a time through shared memory, out as 16-byte
	 * row-contiguous stores */
	uint16_t *st = (uint16_t *)stage;
#pragma unroll
	for (int half = 0; half < BN / C::EPI_COLS; half++) {
		wg_sync(bar_id); /* the previous copy-out has read the buffer */
#pragma unroll
		for (int jj = 0; jj < C::EPI_COLS / 8; jj++) {
			const int j = half * (C::EPI_COLS / 8) + jj;
			const int cl = 8 * jj + 2 * (lane & 3);
			const int n = n0 + 8 * j + 2 * (lane & 3);
			const float sw0 = n < N ? s_w[n] : 0.0f, sw1 = n + 1 < N ? s_w[n + 1] : 0.0f;
			const float b0 = bias && n < N ? bias[n] : 0.0f;
			const float b1 = bias && n + 1 < N ? bias[n + 1] : 0.0f;
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const float sa = h ? sa1 : sa0;
				const int rl = warp * 16 + (lane >> 2) + 8 * h;
				*(uint32_t *)(st + rl * C::EPI_LD + cl) =
					epilogue_pair(d[4 * j + 2 * h], d[4 * j + 2 * h + 1], sa, sw0, sw1, b0, b1);
			}
		}
		wg_sync(bar_id);
		const int nb = n0 + half * C::EPI_COLS;
		constexpr int PER_ROW = C::EPI_COLS / 8;
		constexpr int ROWS_PER_PASS = 128 / PER_ROW;
#pragma unroll
		for (int pass = 0; pass < 64 / ROWS_PER_PASS; pass++) {
			const int rl = pass * ROWS_PER_PASS + tid / PER_ROW;
			const int cl = (tid % PER_ROW) * 8;
			const int m = mb + rl, n = nb + cl;
			if (m >= M || n >= N)
				continue;
			const uint4 v = *(const uint4 *)(st + rl * C::EPI_LD + cl);
			uint16_t *dst = y + (size_t)m * (size_t)N + (size_t)n;
			if (n + 8 <= N && ((uintptr_t)dst & 15) == 0) {
				*(uint4 *)dst = v;
			} else {
				const uint32_t wv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
				for (int i = 0; i < 8; i++)
					if (n + i < N)
						dst[i] = (uint16_t)(wv[i >> 1] >> (16 * (i & 1)));
			}
		}
	}
}
#endif

template <int CONSUMERS, int BN, int STAGES, bool PP, int A_ROWS, int NB>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
gemm_w8a8_sm90_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_w,
		      const float *__restrict__ s_a, const float *__restrict__ s_w,
		      const float *__restrict__ bias, int M, int N, int K,
		      int32_t *__restrict__ acc_out, uint16_t *__restrict__ y,
		      const __grid_constant__ CUtensorMap map_y, int tma_y, int prestages)
{
#ifdef CTQ_SM90_DEVICE
	using C = Sm90Config<CONSUMERS, BN, STAGES, PP, A_ROWS, NB>;
	extern __shared__ __align__(1024) uint8_t smem[];
	if (smem_addr(smem) & 1023)
		__trap();
	uint64_t *full = (uint64_t *)(smem + STAGES * C::STAGE_BYTES + CONSUMERS * C::EPI_BYTES);
	uint64_t *empty = full + STAGES;
	/* ping-pong: turn[c] lets consumer c start its next main loop once the
	 * other consumer has finished its own. Besides keeping the two main
	 * loops apart, this keeps every full[] barrier a consumer waits on at
	 * most one phase behind (a parity wait cannot tell two phases apart) */
	uint64_t *turn = empty + STAGES;
	const int wg = threadIdx.x / 128;
	const int k_tiles = (K + NB * KBYTES - 1) / (NB * KBYTES);
	const int m_tiles = (M + C::TILE_M - 1) / C::TILE_M, n_tiles = (N + BN - 1) / BN;
	const int tiles = m_tiles * n_tiles;

	if (threadIdx.x == 0) {
		for (int s = 0; s < STAGES; s++) {
			bar_init(&full[s], 1);
			bar_init(&empty[s], PP ? 1 : CONSUMERS);
		}
		bar_init(&turn[0], 1);
		bar_init(&turn[1], 1);
		asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
	}
	__syncthreads();

	if (wg == 0) {
		/* producer: one thread issues every TMA load, tiles in order */
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
		if (threadIdx.x == 0) {
			/* launched with PDL (kernels/pdl.cuh): the weight halves of
			 * the first `prestages` stages load while q's producer still
			 * runs (weights are constant); the activation halves, which
			 * that producer writes, only after pdl_wait. A stage's
			 * barrier expects both halves' bytes, so it completes only
			 * when the activation half has landed too. The activation
			 * half of stage 0 then queues behind those weight loads: with
			 * nothing to overlap (no PDL, or a predecessor that does not
			 * trigger early) a deep pre-issue delays the first MMA, so
			 * prestages is 0 without PDL and small with it. */
			const int my_tiles = blockIdx.x < tiles ? (tiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
			const int cap = prestages < STAGES ? prestages : STAGES;
			const int pre = my_tiles * k_tiles < cap ? my_tiles * k_tiles : cap;
			for (int i = 0; i < pre; i++) {
				const int t = blockIdx.x + (i / k_tiles) * gridDim.x, kt = i % k_tiles;
				bar_expect_tx(&full[i], C::STAGE_BYTES);
				for (int b = 0; b < NB; b++)
					tma_load_2d(smem + i * C::STAGE_BYTES + C::A_BYTES + b * C::B_BOX, &map_w,
						    (kt * NB + b) * KBYTES, (t / m_tiles) * BN, &full[i]);
			}
			pdl_wait();
			int s = 0, i = 0;
			unsigned phase = 0;
			for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
				const int m0 = (t % m_tiles) * C::TILE_M, n0 = (t / m_tiles) * BN;
				for (int kt = 0; kt < k_tiles; kt++, i++) {
					uint8_t *a = smem + s * C::STAGE_BYTES;
					if (i >= pre) {
						bar_wait(&empty[s], phase ^ 1);
						bar_expect_tx(&full[s], C::STAGE_BYTES);
						for (int b = 0; b < NB; b++)
							tma_load_2d(a + C::A_BYTES + b * C::B_BOX, &map_w,
								    (kt * NB + b) * KBYTES, n0, &full[s]);
					}
					for (int b = 0; b < NB; b++)
						tma_load_2d(a + b * C::A_BOX, &map_q, (kt * NB + b) * KBYTES, m0, &full[s]);
					if (++s == STAGES) {
						s = 0;
						phase ^= 1;
					}
				}
			}
		}
	} else {
		asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
		/* s_a, bias and y: the producer of q must have finished */
		pdl_wait();
		const int c = wg - 1;
		const bool leader = (threadIdx.x & 127) == 0;
		uint8_t *stage = smem + STAGES * C::STAGE_BYTES + c * C::EPI_BYTES;
		unsigned boxes = 0;
		/* ping-pong: consumer c takes every other tile of this CTA and
		 * skips the other's stages in the ring */
		int j = PP ? c : 0;
		unsigned pos = PP ? (unsigned)(c * k_tiles) : 0; /* stages consumed or skipped */
		unsigned turns = 0; /* main loops this consumer has run */
		int32_t d0[BN / 2], d1[PP ? BN / 2 : 1];
		for (int t = blockIdx.x + j * gridDim.x; t < tiles; t += (PP ? 2 : 1) * gridDim.x) {
			const int m0 = (t % m_tiles) * C::TILE_M, n0 = (t / m_tiles) * BN;
			int prev = -1;
			if (PP && (c == 1 || turns > 0))
				bar_wait(&turn[c], (c == 1 ? turns : turns - 1) & 1);
			for (int kt = 0; kt < k_tiles; kt++, pos++) {
				const int s = (int)(pos % STAGES);
				bar_wait(&full[s], (pos / STAGES) & 1);
				const uint8_t *a = smem + s * C::STAGE_BYTES + (PP ? 0 : c * 64 * KBYTES);
				const uint8_t *b = smem + s * C::STAGE_BYTES + C::A_BYTES;
				wgmma_fence();
#pragma unroll
				for (int step = 0; step < NB * (KBYTES / 32); step++) {
					const int box = step / (KBYTES / 32), kk = step % (KBYTES / 32);
					const uint64_t db = smem_desc(b + box * C::B_BOX + kk * 32);
					const uint64_t da = smem_desc(a + box * C::A_BOX + kk * 32);
					Wgmma<BN>::run(d0, da, db, kt > 0 || step > 0);
					if constexpr (PP)
						Wgmma<BN>::run(d1, smem_desc(a + box * C::A_BOX + 64 * KBYTES + kk * 32),
							       db, kt > 0 || step > 0);
				}
				wgmma_commit();
				/* keep this stage's MMAs in flight; the previous stage's
				 * are done once at most one group is pending */
				wgmma_wait<1>();
				if (prev >= 0 && leader)
					bar_arrive(&empty[prev]);
				prev = s;
			}
			wgmma_wait<0>();
			if (prev >= 0 && leader)
				bar_arrive(&empty[prev]);
			if (PP) {
				pos += k_tiles; /* the other consumer's tile */
				if (leader)
					bar_arrive(&turn[1 - c]);
				turns++;
			}

			const int mb = m0 + (PP ? 0 : c * 64);
			epilogue64<C, BN>(d0, mb, n0, M, N, s_a, s_w, bias, acc_out, y, &map_y, tma_y, stage,
					  1 + c, boxes);
			if constexpr (PP)
				epilogue64<C, BN>(d1, mb + 64, n0, M, N, s_a, s_w, bias, acc_out, y, &map_y, tma_y,
						  stage, 1 + c, boxes);
		}
		/* the TMA stores must have read shared memory before the CTA
		 * leaves */
		if (leader)
			tma_store_wait_read<0>();
	}
#endif
}

/* ---- host side ---- */

static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled;

static enum ctq_status get_encoder(struct ctq_error *err)
{
	if (encode_tiled)
		return CTQ_OK;
	cudaDriverEntryPointQueryResult q;
	void *fn = NULL;
	enum ctq_status st = CTQ_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn,
								      12000, cudaEnableDefault, &q),
				      err);
	if (st != CTQ_OK)
		return st;
	if (q != cudaDriverEntryPointSuccess || !fn)
		return ctq_error_set(err, CTQ_ERR_ENV, "cuTensorMapEncodeTiled",
				     "not found in the CUDA driver (query result %d)", (int)q);
	encode_tiled = (PFN_cuTensorMapEncodeTiled_v12000)fn;
	return CTQ_OK;
}

/* 2-D BF16 output (M, N) row-major, 64 × 64 boxes with the 128-byte
 * swizzle (the epilogue's staging layout). */
static enum ctq_status make_map_y(CUtensorMap *map, uint16_t *y, int64_t M, int64_t N,
				  struct ctq_error *err)
{
	const cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)M};
	const cuuint64_t strides[1] = {(cuuint64_t)N * 2};
	const cuuint32_t box[2] = {64, 64};
	const cuuint32_t estr[2] = {1, 1};
	CUresult r = encode_tiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)y, dims, strides,
				  box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
				  CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS)
		return ctq_error_set(err, CTQ_ERR_ENV, "cuTensorMapEncodeTiled",
				     "failed with CUresult %d for a (%lld, %lld) BF16 output", (int)r,
				     (long long)M, (long long)N);
	return CTQ_OK;
}

/* 2-D int8 tensor (rows, K) row-major, boxes of 128 bytes × box_rows. */
static enum ctq_status make_map(CUtensorMap *map, const int8_t *p, int64_t rows, int64_t K,
				int box_rows, struct ctq_error *err)
{
	const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
	const cuuint64_t strides[1] = {(cuuint64_t)K};
	const cuuint32_t box[2] = {KBYTES, (cuuint32_t)box_rows};
	const cuuint32_t estr[2] = {1, 1};
	CUresult r = encode_tiled(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)p, dims, strides, box,
				  estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
				  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS)
		return ctq_error_set(err, CTQ_ERR_ENV, "cuTensorMapEncodeTiled",
				     "failed with CUresult %d for a (%lld, %lld) int8 tensor", (int)r,
				     (long long)rows, (long long)K);
	return CTQ_OK;
}

static int sm_count(void)
{
	static int n;
	if (!n) {
		int dev = 0;
		if (cudaGetDevice(&dev) != cudaSuccess ||
		    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0)
			n = 132;
	}
	return n;
}

template <int CONSUMERS, int BN, int STAGES, bool PP, int A_ROWS = (PP ? 128 : 64 * CONSUMERS),
	  int NB = 1>
static enum ctq_status launch(const int8_t *q, const int8_t *w, const float *s_a, const float *s_w,
			      const float *bias, int64_t M, int64_t N, int64_t K, int32_t *acc,
			      uint16_t *y, void *stream, struct ctq_error *err)
{
	using C = Sm90Config<CONSUMERS, BN, STAGES, PP, A_ROWS, NB>;
	auto kernel = gemm_w8a8_sm90_kernel<CONSUMERS, BN, STAGES, PP, A_ROWS, NB>;
	/* the shared-memory opt-in is per device (tensor-parallel ranks run
	 * one GPU per thread in one process) */
	static unsigned long long attr_set;
	enum ctq_status st;
	int dev = 0;
	if ((st = CTQ_CUDA(cudaGetDevice(&dev), err)) != CTQ_OK)
		return st;
	const unsigned long long bit = 1ull << (dev & 63);
	if (!(__atomic_load_n(&attr_set, __ATOMIC_ACQUIRE) & bit)) {
		st = CTQ_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
						   C::SMEM),
			      err);
		if (st != CTQ_OK)
			return st;
		__atomic_fetch_or(&attr_set, bit, __ATOMIC_RELEASE);
	}
	if (A_ROWS < C::TILE_M && M > A_ROWS)
		return ctq_error_set(err, CTQ_ERR_USAGE, "M", "is %lld; this configuration loads %d rows",
				     (long long)M, A_ROWS);
	CUtensorMap mq, mw, my;
	memset(&my, 0, sizeof my);
	if ((st = make_map(&mq, q, M, K, A_ROWS, err)) != CTQ_OK ||
	    (st = make_map(&mw, w, N, K, BN, err)) != CTQ_OK)
		return st;
	const int tma_y = C::TMA_Y && y && !acc && N % 8 == 0 && (uintptr_t)y % 16 == 0;
	if (tma_y && (st = make_map_y(&my, y, M, N, err)) != CTQ_OK)
		return st;
	const int64_t tiles = ((M + C::TILE_M - 1) / C::TILE_M) * ((N + BN - 1) / BN);
	const int64_t sms = sm_count();
	const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);
	/* weight stages loaded before pdl_wait: SM90_PRESTAGES with PDL, none
	 * without (0 / 4 / 24 measured, docs/kernels.md) */
	const int prestages = ctq_pdl_on() ? SM90_PRESTAGES : 0;
	return CTQ_CUDA(ctq_launch_pdl(kernel, dim3(grid), dim3(C::THREADS), (size_t)C::SMEM,
				       (cudaStream_t)stream, mq, mw, s_a, s_w, bias, (int)M, (int)N, (int)K,
				       acc, y, my, tma_y, prestages),
			err);
}

/* Which configuration for an M × N × K product (ctq_gemm_sm90_pick):
 *   M <= 64            the small-M family (more stages, fewer rows loaded)
 *   M < 512            the fewest waves of tiles, cost-weighted
 *   M >= 512           a wave model fitted to forced-tile runs
 * Tried and dropped: a cluster of two CTAs sharing the weight tile by TMA
 * multicast (10-25% slower than {2, 256} at M = 1024..8192), and split-K
 * over a cluster with a distributed-shared-memory reduction for small M
 * (slower than no split at every M <= 128 on the Qwen3-4B shapes). */
#define N_TILES 9 /* 0..3, 5, 6, 8 cooperative, 4, 7 ping-pong; 9 is the small-M family */

/* Small M (<= 64, one M tile): the weights stream once, so the time is
 * the busiest SM's weight rows. The N tile is the width that puts the
 * fewest rows on the busiest SM, the wider one on a tie (fewer, larger
 * stages): N = 2560 takes 24 (107 tiles, one an SM), 6144 48 (128),
 * 19456 160 (122). CTQ_SM90_SMALL_BN forces a width. */
static const int small_widths[] = {32, 64, 160};

static int small_m_bn(int64_t N)
{
	const int forced = ctq_knobs()->sm90_small_bn;
	if (forced > 0)
		return forced;
	const int64_t sms = sm_count();
	int best = 0;
	int64_t best_rows = 0;
	for (size_t i = 0; i < sizeof small_widths / sizeof *small_widths; i++) {
		const int64_t bn = small_widths[i];
		const int64_t rows = ((N + bn - 1) / bn + sms - 1) / sms * bn;
		if (!best || rows <= best_rows) {
			best = (int)bn;
			best_rows = rows;
		}
	}
	return best;
}

int ctq_gemm_sm90_pick(int64_t M, int64_t N, int64_t K)
{
	if (M <= 64)
		return N_TILES;
	const int64_t sms = sm_count();
	if (M < 512) {
		/* the fewest waves of tiles, weighted by the per-element cost of
		 * smaller tiles (less operand reuse): at M = 128, N = 2560 this is
		 * 64 x 64 (80 tiles), not 128 x 128 (20 tiles) */
		static const struct {
			int bm, bn, tile;
			double cost;
		} cand[] = {{128, 256, 0, 1.00}, {128, 128, 1, 1.05}, {64, 128, 2, 1.35}, {64, 64, 3, 1.80}};
		int best = 1;
		double best_cost = 0;
		for (int i = 0; i < 4; i++) {
			const int64_t tiles = ((M + cand[i].bm - 1) / cand[i].bm) * ((N + cand[i].bn - 1) / cand[i].bn);
			const double cost = (double)((tiles + sms - 1) / sms) * cand[i].bm * cand[i].bn * cand[i].cost;
			if (i == 0 || cost < best_cost) {
				best = cand[i].tile;
				best_cost = cost;
			}
		}
		return best;
	}
	/* M >= 512: waves x BM x BN x (a K + b), the time of a wave of one
	 * tile per SM in units of its MACs at the INT8 peak, with a (the main
	 * loop) and b (per tile: fill and the epilogue not hidden) fitted to
	 * forced-tile runs at K = 2560 and 9728 (H200, revision c073124,
	 * reports/baselines/h200/bench-gemm-tiles.txt); within 1.7% of the
	 * best configuration at every Qwen3-4B point M = 512..8192. The 64 x
	 * 160 single-consumer tile (N = 2560 at M = 512: 128 tiles, one wave,
	 * where 128 x 128 fills 80 SMs) takes tile 2's per-element cost
	 * relative to tile 1 (1.35 / 1.05, the M < 512 model), not fitted.
	 * Ping-pong only with more tiles than SMs (a lone tile leaves the
	 * second consumer idle). */
	static const struct {
		int bm, bn, tile;
		bool pp;
		double a, b;
	} big[] = {{128, 256, 0, false, 1.100, 1313}, {128, 128, 1, false, 1.233, 1334},
		   {128, 128, 4, true, 1.301, 669},   {128, 160, 5, false, 1.211, 1730},
		   {128, 192, 6, false, 1.164, 1150}, {128, 160, 7, true, 1.258, 910},
		   {64, 160, 8, false, 1.585, 1715}};
	int best = 0;
	double best_cost = -1;
	for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
		const int64_t tiles = ((M + big[i].bm - 1) / big[i].bm) * ((N + big[i].bn - 1) / big[i].bn);
		if (big[i].pp && tiles <= sms)
			continue;
		const double cost = (double)((tiles + sms - 1) / sms) * big[i].bm * big[i].bn *
				    (big[i].a * (double)K + big[i].b);
		if (best_cost < 0 || cost < best_cost) {
			best = big[i].tile;
			best_cost = cost;
		}
	}
	return best;
}

extern "C" bool ctq_gemm_sm90_available(void)
{
	/* wgmma exists on 9.0 alone (sm_90a): an sm_100 or sm_120 image of
	 * this file has an empty kernel body */
	return ctq_cuda_dispatch_cc() == 90;
}

extern "C" bool ctq_gemm_sm90_fits(const int8_t *q, const int8_t *w, int64_t M, int64_t N, int64_t K,
				   unsigned defects)
{
	return defects == 0 && ctq_gemm_sm90_available() && K % 16 == 0 && K > 0 &&
	       ((uintptr_t)q % 16) == 0 && ((uintptr_t)w % 16) == 0 && M <= 0x7fffffff &&
	       N <= 0x7fffffff && K <= CTQ_K_MAX;
}

extern "C" enum ctq_status ctq_gemm_sm90_launch(const int8_t *q, const int8_t *w, const float *s_a,
						const float *s_w, const float *bias, int64_t M,
						int64_t N, int64_t K, int32_t *acc, uint16_t *y,
						int tile, void *stream, struct ctq_error *err)
{
	enum ctq_status st = get_encoder(err);
	if (st != CTQ_OK)
		return st;
	if (tile < 0) {
		/* CTQ_SM90_TILE forces one configuration (tuning experiments) */
		if ((st = ctq_knobs_check(err)))
			return st;
		tile = ctq_knobs()->sm90_tile >= 0 ? ctq_knobs()->sm90_tile : ctq_gemm_sm90_pick(M, N, K);
	}
	switch (tile) {
	case 0:
		return launch<2, 256, 4, false>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 1:
		return launch<2, 128, 6, false>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 2:
		return launch<1, 128, 8, false>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 3:
		return launch<1, 64, 8, false>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 4:
		return launch<2, 128, 6, true>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 5:
		return launch<2, 160, 5, false>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 6:
		return launch<2, 192, 4, false>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 7:
		return launch<2, 160, 5, true>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 8:
		return launch<1, 160, 7, false>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
	case 9: {
		if (M > 64)
			return launch<1, 64, 8, false>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err);
		/* per activation-row count (16, 32, 64): K boxes a stage (NB) and
		 * stages; docs/kernels.md "Small M: K boxes a stage" */
		const int bn = small_m_bn(N);
#define SMALL1(BN, R, NB, S) launch<1, BN, S, false, R, NB>(q, w, s_a, s_w, bias, M, N, K, acc, y, stream, err)
#define SMALL(BN, NB16, S16, NB32, S32, NB64, S64)                                               \
	if (bn == BN)                                                                              \
		return M <= 16 ? SMALL1(BN, 16, NB16, S16) : M <= 32 ? SMALL1(BN, 32, NB32, S32) \
			       : SMALL1(BN, 64, NB64, S64);
		SMALL(32, 4, 8, 2, 13, 2, 8)
		SMALL(64, 1, 16, 2, 8, 1, 12)
		SMALL(160, 1, 9, 1, 8, 1, 7)
#undef SMALL1
#undef SMALL
		return ctq_error_set(err, CTQ_ERR_USAGE, "CTQ_SM90_SMALL_BN", "is %d; the small-M N tiles are 32, 64 and 160", bn);
	}
	}
	return ctq_error_set(err, CTQ_ERR_USAGE, "tile", "is %d; the sm90 tiles are 0..%d", tile,
			     ctq_gemm_sm90_tiles() - 1);
}

extern "C" int ctq_gemm_sm90_tiles(void)
{
	return N_TILES + 1;
}
