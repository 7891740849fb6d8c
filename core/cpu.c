/* ctq CPU features (see cpu.h). */
#include "core/cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

static int detect(void)
{
	unsigned a, b, c, d;
	int m = 0;
	__builtin_cpu_init();
	m |= __builtin_cpu_supports("avx2") ? 1 << CTQ_CPU_AVX2 : 0;
	m |= __builtin_cpu_supports("avx512f") ? 1 << CTQ_CPU_AVX512F : 0;
	m |= __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") ? 1 << CTQ_CPU_AVX512_VNNI_BW
											 : 0;
	/* SHA: leaf 7 EBX bit 29; SSSE3 and SSE4.1: leaf 1 ECX bits 9 and 19 */
	if (__get_cpuid(1, &a, &b, &c, &d) && (c >> 9 & 1) && (c >> 19 & 1) &&
	    __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1))
		m |= 1 << CTQ_CPU_SHA;
	return m;
}
#else
static int detect(void)
{
	return 0;
}
#endif

bool ctq_cpu_has(enum ctq_cpu_feature f)
{
	/* a first detection done twice writes the same value */
	static int bits = -1;
	int m = __atomic_load_n(&bits, __ATOMIC_RELAXED);
	if (m < 0) {
		m = detect();
		__atomic_store_n(&bits, m, __ATOMIC_RELAXED);
	}
	return m >> f & 1;
}
