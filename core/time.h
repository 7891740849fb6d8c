/* ctq wall-clock helpers: the one monotonic clock every timer reads.
 *
 * What it is not: a benchmark timer for the GPU (CUDA events live with the
 * kernels) or a calendar (results/run.c stamps UTC times). */
#ifndef CTQ_CORE_TIME_H
#define CTQ_CORE_TIME_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC: differences are durations, immune to
 * changes of the wall clock. */
static inline double ctq_now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
