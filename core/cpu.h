/* ctq CPU features: what the x86 CPU this runs on offers, detected once
 * (the compiler's __builtin_cpu_supports, which also checks that the OS
 * saves the vector state; cpuid for SHA, which compilers do not agree to
 * name), for the code that picks a SIMD path at run time: the reference's
 * GEMMs (reference/ref_gemm.c), GPTQ's sums (checkpoint/gptq.c) and
 * SHA-256 (core/sha256.c). Read from any thread. Elsewhere than x86-64
 * every feature is absent.
 *
 * What it is not: a dispatch policy (each caller keeps its own choice and
 * test hooks). */
#ifndef CTQ_CORE_CPU_H
#define CTQ_CORE_CPU_H

#include <stdbool.h>

enum ctq_cpu_feature {
	CTQ_CPU_AVX2,
	CTQ_CPU_AVX512F,
	CTQ_CPU_AVX512_VNNI_BW, /* AVX-512 VNNI and BW together */
	CTQ_CPU_SHA,            /* the SHA extensions with SSSE3 and SSE4.1 */
};

bool ctq_cpu_has(enum ctq_cpu_feature f);

#endif
