/* ctq_rng_jump: n steps of xoshiro256** at once.
 *
 * The generator's state update (ctq_rng_next without its output) is linear
 * over GF(2): xors, shifts and rotations of the 256 state bits. So n steps
 * are the 256 x 256 bit matrix T^n applied to the state, and T^n is the
 * product of the T^(2^k) for the bits k of n. The 64 powers T^(2^k) are
 * built once (each the square of the one before, 512 KiB in all, about
 * 10 ms) and kept by columns: jump_cols[k][j] = T^(2^k) e_j, so applying
 * one is the xor of the columns of the state's set bits. The result is the
 * state n calls of ctq_rng_next leave, bit for bit: a stream can be split
 * among threads without changing one value it draws. */
#include "core/rng.h"

#include <pthread.h>
#include <string.h>

static uint64_t jump_cols[64][256][4];
static pthread_once_t jump_once = PTHREAD_ONCE_INIT;

/* out = M in, M given by its columns, 4 words each (out may be in). */
static void apply(const uint64_t *cols, const uint64_t in[4], uint64_t out[4])
{
	uint64_t r[4] = {0, 0, 0, 0};
	for (int w = 0; w < 4; w++)
		for (uint64_t bits = in[w]; bits; bits &= bits - 1) {
			const uint64_t *c = cols + 4 * (w * 64 + __builtin_ctzll(bits));
			r[0] ^= c[0];
			r[1] ^= c[1];
			r[2] ^= c[2];
			r[3] ^= c[3];
		}
	memcpy(out, r, sizeof r);
}

static void build_jumps(void)
{
	for (int j = 0; j < 256; j++) {
		struct ctq_rng e = {{0, 0, 0, 0}};
		e.s[j / 64] = 1ULL << (j % 64);
		(void)ctq_rng_next(&e);
		memcpy(jump_cols[0][j], e.s, sizeof e.s);
	}
	for (int k = 1; k < 64; k++)
		for (int j = 0; j < 256; j++)
			apply(&jump_cols[k - 1][0][0], jump_cols[k - 1][j], jump_cols[k][j]);
}

void ctq_rng_jump(struct ctq_rng *r, uint64_t n)
{
	if (!n)
		return;
	pthread_once(&jump_once, build_jumps);
	for (int k = 0; k < 64; k++)
		if (n >> k & 1)
			apply(&jump_cols[k][0][0], r->s, r->s);
}
