/* How many OpenMP threads one parallel region of the reference gets: one
 * thread per CTQ_REF_GRAIN operations of the region's work, at least one and
 * at most omp_get_max_threads(). A region of a tiny model (a decode step of
 * hidden 64 is a few thousand operations) then runs on the calling thread
 * alone: no team wakes, no barrier waits for a thread the scheduler has
 * parked, which is what made the CPU backend collapse when the cores were
 * shared (docs/architecture.md, "The reference backend's threads").
 * Results do not depend on the count (ref_ops.c, ref_gemm.c). Without
 * OpenMP (the clang fuzz build) every region is serial. */
#ifndef CTQ_REFERENCE_REF_THREADS_H
#define CTQ_REFERENCE_REF_THREADS_H

#include <stdint.h>

#include "core/threads.h"

/* Operations (multiply-adds, or element updates) below which one more
 * thread costs more than it saves: about 0.1-1 ms of one core's work,
 * against a fork and join of a few microseconds on idle cores and of a
 * scheduler time slice (milliseconds) on busy ones. */
#define CTQ_REF_GRAIN ((int64_t)1 << 20)

static inline int ctq_ref_threads(int64_t work)
{
	const int64_t max = ctq_threads_max();
	const int64_t t = work / CTQ_REF_GRAIN;
	return (int)(t < 1 ? 1 : t > max ? max : t);
}

#endif
