/* Criterion tests for reference/ref_wna16 (the weight-only GEMM oracle)
 * and the weight-only probe's layouts (conform/probe_wna16.h): the
 * reference against the ABI's rules written out one output at a time from
 * unpacked codes, for every bits / group / zero-point layout and edge
 * shapes (M = 1, K not a multiple of the pack factor, a partial last
 * group), independent of the thread count; layout names parsed and
 * refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "checkpoint/packed.h"
#include "conform/probe_wna16.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "reference/ref_wna16.h"

struct layout_case {
	int bits;
	int64_t group, M, N, K;
	bool asym, bias;
};

static const struct layout_case cases[] = {
	{4, 0, 1, 3, 5, false, false},   /* M 1, K below one word */
	{4, 8, 3, 9, 40, true, true},    /* N not a multiple of 8: zero points padded */
	{4, 16, 5, 8, 37, true, false},  /* a partial last group */
	{8, 0, 4, 7, 13, false, true},
	{8, 4, 2, 5, 12, true, true},
	{4, 128, 7, 16, 256, false, true},
};

/* y by the header's rules, from the codes, one output at a time. */
static uint16_t rule(const uint16_t *x, const int8_t *q, const int8_t *z, const float *s,
		     const float *bias, const struct layout_case *c, int64_t m, int64_t n)
{
	const int64_t G = c->group ? c->group : c->K, ng = (c->K + G - 1) / G;
	float acc = 0.0f;
	for (int64_t k = 0; k < c->K; k++) {
		const int64_t g = k / G;
		const float w = (float)(q[n * c->K + k] - (c->asym ? z[n * ng + g] : 0)) * s[n * ng + g];
		const float p = ctq_bf16_to_f32(x[m * c->K + k]) * w;
		acc = acc + p;
	}
	return ctq_f32_to_bf16(acc + (bias ? bias[n] : 0.0f));
}

Test(ref_wna16, follows_the_abi_rules_bit_for_bit)
{
	struct ctq_rng rng;
	ctq_rng_seed(&rng, 42);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const struct layout_case *c = &cases[i];
		const int64_t G = ctq_packed_groups(c->K, c->group);
		const int qmin = ctq_wna16_qmin(c->bits), span = 1 << c->bits;
		uint16_t x[7 * 256], y[7 * 16], y1[7 * 16];
		int8_t q[16 * 256], z[16 * 64];
		float s[16 * 64], bias[16];
		int32_t wp[16 * 256], zp[16 * 64];
		for (int64_t j = 0; j < c->M * c->K; j++)
			x[j] = ctq_f32_to_bf16((float)ctq_rng_normal(&rng));
		for (int64_t j = 0; j < c->N * c->K; j++)
			q[j] = (int8_t)(qmin + (int)ctq_rng_below(&rng, (uint64_t)span));
		for (int64_t j = 0; j < c->N * G; j++) {
			s[j] = (float)(0.001 + 0.01 * ctq_rng_uniform(&rng));
			z[j] = (int8_t)(qmin + (int)ctq_rng_below(&rng, (uint64_t)span));
		}
		for (int64_t n = 0; n < c->N; n++)
			bias[n] = (float)ctq_rng_normal(&rng);
		ctq_pack_rows(q, c->N, c->K, c->bits, wp);
		ctq_pack_dim0(z, c->N, G, c->bits, zp);
		struct ctq_error err = {0};
		cr_assert_eq(ctq_ref_gemm_wna16(x, wp, s, c->asym ? zp : NULL, c->bias ? bias : NULL, c->M,
						c->N, c->K, c->bits, c->group, y, &err), CTQ_OK, "%s", err.message);
		for (int64_t m = 0; m < c->M; m++)
			for (int64_t n = 0; n < c->N; n++)
				cr_expect_eq(y[m * c->N + n],
					     rule(x, q, z, s, c->bias ? bias : NULL, c, m, n),
					     "case %zu [%lld, %lld]", i, (long long)m, (long long)n);
#ifdef _OPENMP
		const int t = omp_get_max_threads();
		omp_set_num_threads(1);
		cr_assert_eq(ctq_ref_gemm_wna16(x, wp, s, c->asym ? zp : NULL, c->bias ? bias : NULL, c->M,
						c->N, c->K, c->bits, c->group, y1, &err), CTQ_OK);
		omp_set_num_threads(t);
		cr_expect(!memcmp(y, y1, (size_t)(c->M * c->N) * 2), "case %zu: threads change bits", i);
#endif
		(void)y1;
	}
}

Test(ref_wna16, nan_and_refusals)
{
	/* a NaN activation poisons its row only */
	uint16_t x[2 * 8], y[2 * 2];
	for (int k = 0; k < 16; k++)
		x[k] = ctq_f32_to_bf16(1.0f);
	x[3] = 0x7fc0;
	int8_t q[2 * 8] = {1, 2, 3, 4, 5, 6, 7, -8, 0, 0, 0, 0, 0, 0, 0, 1};
	int32_t wp[2];
	ctq_pack_rows(q, 2, 8, 4, wp);
	const float s[2] = {0.5f, 2.0f};
	struct ctq_error err = {0};
	cr_assert_eq(ctq_ref_gemm_wna16(x, wp, s, NULL, NULL, 2, 2, 8, 4, 0, y, &err), CTQ_OK);
	cr_expect(isnan(ctq_bf16_to_f32(y[0])) && isnan(ctq_bf16_to_f32(y[1])));
	cr_expect_eq(ctq_bf16_to_f32(y[2]), 10.0f); /* (1+2+...+7-8) * 0.5 */
	cr_expect_eq(ctq_bf16_to_f32(y[3]), 2.0f);
	cr_expect_eq(ctq_ref_gemm_wna16(x, wp, s, NULL, NULL, 2, 2, 8, 3, 0, y, &err), CTQ_ERR_USAGE);
}

Test(ref_wna16, layout_names)
{
	struct ctq_wna16_cfg c;
	cr_assert(ctq_wna16_cfg_parse("w4a16-asym-g128", &c));
	cr_expect(c.bits == 4 && c.asym && c.group_size == 128);
	cr_assert(ctq_wna16_cfg_parse("w8a16", &c));
	cr_expect(c.bits == 8 && !c.asym && c.group_size == 0);
	static const char *const bad[] = {"w4a16-g0", "w4a16-g", "w4a16-gx", "w3a16", "w4a16-asymm",
					  "w4a16-g128-asym", "W4A16", ""};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		cr_expect(!ctq_wna16_cfg_parse(bad[i], &c), "%s", bad[i]);
	struct ctq_wna16_cfg d[3];
	cr_expect_eq(ctq_wna16_cfg_defaults(CTQ_KERNEL_PLUGIN_WNA16_INT4 | CTQ_KERNEL_PLUGIN_WNA16_INT8 |
						    CTQ_KERNEL_PLUGIN_WNA16_GROUPS | CTQ_KERNEL_PLUGIN_WNA16_ASYM,
					    d), 3);
	/* int8 per channel only: w8a16 alone */
	cr_expect_eq(ctq_wna16_cfg_defaults(CTQ_KERNEL_PLUGIN_WNA16_INT8, d), 1);
	cr_expect_str_eq(d[0].name, "w8a16");
	cr_expect(!ctq_wna16_cfg_fits(&c, 0) || c.group_size == 0);
	cr_assert(ctq_wna16_cfg_parse("w4a16-g16", &c));
	cr_expect(ctq_wna16_cfg_fits(&c, 176) && !ctq_wna16_cfg_fits(&c, 100));
}
