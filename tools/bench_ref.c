/* bench_ref: a reference GEMM's fast path (reference/ref_gemm.c) against
 * its scalar definition on one shape, on this CPU with its threads
 * (OMP_NUM_THREADS caps them): the median wall time of each over REPS runs,
 * their ratio, and whether every output has the same bits. i8 (the
 * default): ctq_ref_gemm_i8 against ctq_ref_gemm_i8_scalar; f32:
 * ctq_ref_gemm_f32 against ctq_ref_gemm_f32_scalar. Issue 34's target shape
 * is the default: qwen3-4b's gate_up (K 2560, N 19456) at M = 64. Not a
 * test (timings belong to measurements: README, "The cost").
 * usage: build/tools/bench_ref [f32] [M K N [REPS]] */
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "reference/ref_ops.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One GEMM of the benchmark: its inputs, and the fast path or the scalar
 * definition into out. */
struct job {
	bool f32;
	int64_t M, N, K;
	const void *x, *w; /* int8 q and w, or f32 x and w */
};

static void run(const struct job *j, bool fast, void *out)
{
	struct ctq_error err = {0};
	if (j->f32)
		(fast ? ctq_ref_gemm_f32 : ctq_ref_gemm_f32_scalar)(j->x, j->w, NULL, j->M, j->N, j->K, out);
	else if ((fast ? ctq_ref_gemm_i8 : ctq_ref_gemm_i8_scalar)(j->x, j->w, j->M, j->N, j->K, out, &err)) {
		fprintf(stderr, "bench_ref: %s\n", err.message);
		exit(1);
	}
}

static double median_ms(const struct job *j, bool fast, void *out, int reps)
{
	double t[64];
	for (int r = 0; r < reps; r++) {
		const double t0 = now_ms();
		run(j, fast, out);
		t[r] = now_ms() - t0;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp_double);
	return t[reps / 2];
}

int main(int argc, char **argv)
{
	const bool f32 = argc > 1 && !strcmp(argv[1], "f32");
	argc -= f32;
	argv += f32;
	if (argc != 1 && argc != 4 && argc != 5) {
		fprintf(stderr, "usage: bench_ref [f32] [M K N [REPS]]\n");
		return 2;
	}
	const int64_t M = argc > 1 ? atoll(argv[1]) : 64, K = argc > 1 ? atoll(argv[2]) : 2560,
		      N = argc > 1 ? atoll(argv[3]) : 19456;
	int reps = argc > 4 ? atoi(argv[4]) : 3;
	if (M < 1 || K < 1 || N < 1 || reps < 1 || reps > 64) {
		fprintf(stderr, "bench_ref: M, K, N >= 1 and 1 <= REPS <= 64\n");
		return 2;
	}
	const size_t el = f32 ? 4 : 1; /* input element bytes; outputs are 4 either way */
	void *x = malloc((size_t)(M * K) * el), *w = malloc((size_t)(N * K) * el);
	void *a = malloc((size_t)(M * N) * 4), *b = malloc((size_t)(M * N) * 4);
	if (!x || !w || !a || !b) {
		fprintf(stderr, "bench_ref: out of memory\n");
		return 1;
	}
	struct ctq_rng r;
	ctq_rng_seed(&r, 1);
	for (int64_t i = 0; i < M * K; i++)
		if (f32)
			((float *)x)[i] = (float)ctq_rng_normal(&r);
		else
			((int8_t *)x)[i] = (int8_t)((int)ctq_rng_below(&r, 256) - 128);
	for (int64_t i = 0; i < N * K; i++)
		if (f32)
			((float *)w)[i] = (float)(0.02 * ctq_rng_normal(&r));
		else
			((int8_t *)w)[i] = (int8_t)((int)ctq_rng_below(&r, 255) - 127);
	const struct job j = {f32, M, N, K, x, w};
	const double fast = median_ms(&j, true, a, reps), scalar = median_ms(&j, false, b, reps);
	const int same = !memcmp(a, b, (size_t)(M * N) * 4);
	printf("%sM %lld K %lld N %lld, %d threads, simd %s: scalar %.1f ms, fast %.1f ms, %.1fx, %s\n",
	       f32 ? "f32 " : "", (long long)M, (long long)K, (long long)N, omp_get_max_threads(), ctq_ref_simd(),
	       scalar, fast, scalar / fast, same ? "identical" : "DIFFERENT");
	free(x), free(w), free(a), free(b);
	return same ? 0 : 1;
}
