/* Criterion tests for the deterministic random stream's jump (core/rng.c)
 * and the probes' weights drawn in parallel from it (conform/probe.c
 * ctq_probe_draw_weights): a jump of n lands where n draws do, and the
 * parallel drawing gives the serial loop's every value and leaves the
 * stream where the serial loop leaves it. The serial loop below is the
 * probes' drawing as it was before it ran on every core: the oracle. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "conform/probe.h"
#include "core/rng.h"

Test(rng, a_jump_of_n_lands_where_n_draws_do)
{
	static const uint64_t ns[] = {0, 1, 2, 63, 64, 65, 1000, 4097, 123457, 1u << 20};
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		struct ctq_rng a, b;
		ctq_rng_seed(&a, 0x5eed + i);
		b = a;
		for (uint64_t j = 0; j < ns[i]; j++)
			(void)ctq_rng_next(&a);
		ctq_rng_jump(&b, ns[i]);
		cr_expect_eq(memcmp(a.s, b.s, sizeof a.s), 0, "jump %llu", (unsigned long long)ns[i]);
		cr_expect_eq(ctq_rng_next(&a), ctq_rng_next(&b));
	}
	/* jumps compose: 3 + 5 = 8 */
	struct ctq_rng a, b;
	ctq_rng_seed(&a, 7);
	b = a;
	ctq_rng_jump(&a, 3);
	ctq_rng_jump(&a, 5);
	ctq_rng_jump(&b, 8);
	cr_expect_eq(memcmp(a.s, b.s, sizeof a.s), 0);
}

/* The probes' synthetic weights, one row after another from one stream. */
static void serial_weights(int8_t *wq, float *w_orig, float *sw, int64_t N, int64_t K,
			   enum ctq_probe_weights wp, struct ctq_rng *rng)
{
	for (int64_t n = 0; n < N; n++) {
		sw[n] = (float)((0.5 + ctq_rng_uniform(rng)) * 0.05 / 127.0);
		for (int64_t k = 0; k < K; k++) {
			int v;
			switch (wp) {
			case CTQ_PW_PM127: v = (ctq_rng_next(rng) & 1) ? 127 : -127; break;
			case CTQ_PW_CONSTANT: v = 64; break;
			default: v = (int)ctq_rng_below(rng, 255) - 127;
			}
			if (wp == CTQ_PW_ZERO_ROW && n == N / 2)
				v = 0;
			wq[n * K + k] = (int8_t)v;
			w_orig[n * K + k] = (float)v * sw[n];
		}
	}
}

Test(rng, parallel_probe_weights_are_the_serial_loops)
{
	/* K = 3001: blocks of 349 rows, so N = 1500 is five blocks, the last short */
	static const int64_t geo[][2] = {{3001, 1500}, {96, 48}, {5, 3}};
	for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++)
		for (int w = CTQ_PW_RANDOM; w < CTQ_PW_COUNT; w++) {
			const int64_t K = geo[g][0], N = geo[g][1];
			int8_t *q1 = malloc((size_t)(N * K)), *q2 = malloc((size_t)(N * K));
			float *f1 = malloc((size_t)(N * K) * sizeof(float)), *f2 = malloc((size_t)(N * K) * sizeof(float));
			float *s1 = malloc((size_t)N * sizeof(float)), *s2 = malloc((size_t)N * sizeof(float));
			cr_assert(q1 && q2 && f1 && f2 && s1 && s2);
			struct ctq_rng a, b;
			ctq_rng_seed(&a, 99 + (uint64_t)w);
			b = a;
			serial_weights(q1, f1, s1, N, K, (enum ctq_probe_weights)w, &a);
			ctq_probe_draw_weights(q2, f2, s2, N, K, (enum ctq_probe_weights)w, &b);
			const char *name = ctq_probe_weights_name((enum ctq_probe_weights)w);
			cr_expect_eq(memcmp(q1, q2, (size_t)(N * K)), 0, "%s %lldx%lld: values", name,
				     (long long)K, (long long)N);
			cr_expect_eq(memcmp(f1, f2, (size_t)(N * K) * sizeof(float)), 0, "%s: w_orig", name);
			cr_expect_eq(memcmp(s1, s2, (size_t)N * sizeof(float)), 0, "%s: scales", name);
			cr_expect_eq(memcmp(a.s, b.s, sizeof a.s), 0, "%s: the stream after", name);
			free(q1), free(q2), free(f1), free(f2), free(s1), free(s2);
		}
}
