/* ctq deterministic random numbers (splitmix64 seeding xoshiro256**), the
 * same sequence on every platform for a given seed: synthetic models,
 * probe inputs and benchmark prompts are reproducible from their seed. */
#ifndef CTQ_CORE_RNG_H
#define CTQ_CORE_RNG_H

#include <math.h>
#include <stdint.h>

struct ctq_rng {
	uint64_t s[4];
};

static inline uint64_t ctq_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void ctq_rng_seed(struct ctq_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = ctq_splitmix64(&seed);
}

static inline uint64_t ctq_rng_next(struct ctq_rng *r)
{
	uint64_t *s = r->s;
	uint64_t x = s[1] * 5, result = ((x << 7) | (x >> 57)) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return result;
}

/* Advances r by n draws, as n calls of ctq_rng_next would, in about 64
 * matrix-vector products over GF(2) (core/rng.c): a thread can start its
 * share of one stream where the serial loop would reach it. */
void ctq_rng_jump(struct ctq_rng *r, uint64_t n);

/* Uniform in [0, 1) with 53 random bits. */
static inline double ctq_rng_uniform(struct ctq_rng *r)
{
	return (double)(ctq_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n). */
static inline uint64_t ctq_rng_below(struct ctq_rng *r, uint64_t n)
{
	return n ? ctq_rng_next(r) % n : 0;
}

/* Standard normal (Box-Muller; one value per call for simplicity). */
static inline double ctq_rng_normal(struct ctq_rng *r)
{
	double u1 = ctq_rng_uniform(r), u2 = ctq_rng_uniform(r);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
