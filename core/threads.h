/* OpenMP's thread numbers, or their absence: the product builds with
 * -fopenmp, the clang fuzz build without (Makefile, FUZZ_CFLAGS), where
 * every region is serial. The one place that asks, so that no caller
 * carries its own #ifdef _OPENMP. */
#ifndef CTQ_CORE_THREADS_H
#define CTQ_CORE_THREADS_H

#ifdef _OPENMP
#include <omp.h>
#endif

/* The threads a parallel region of this thread gets at most. */
static inline int ctq_threads_max(void)
{
#ifdef _OPENMP
	return omp_get_max_threads();
#else
	return 1;
#endif
}

/* This thread's number inside its parallel region (0 outside one): the
 * index of its per-thread scratch. */
static inline int ctq_thread_id(void)
{
#ifdef _OPENMP
	return omp_get_thread_num();
#else
	return 0;
#endif
}

/* The threads of this thread's later parallel regions (a tensor-parallel
 * rank's share of the cores). */
static inline void ctq_threads_set(int n)
{
#ifdef _OPENMP
	omp_set_num_threads(n);
#else
	(void)n;
#endif
}

#endif
