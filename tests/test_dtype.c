/* Criterion tests for core/dtype: names, exhaustive bf16 / f16 round trips,
 * round-to-nearest-even ties, overflow, subnormals, NaN handling, every
 * e4m3fn code against a table derived from the format definition, and the
 * bulk converters. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"

static uint32_t bits(float f) { return ctq_f32_bits(f); }
static float from_bits(uint32_t u) { return ctq_f32_from_bits(u); }

Test(dtype, names_sizes_and_parse_round_trip)
{
	static const struct {
		enum ctq_dtype t;
		const char *name;
		size_t size;
	} cases[] = {
		{CTQ_DTYPE_F32, "F32", 4},   {CTQ_DTYPE_F16, "F16", 2},
		{CTQ_DTYPE_BF16, "BF16", 2}, {CTQ_DTYPE_I8, "I8", 1},
		{CTQ_DTYPE_I32, "I32", 4},   {CTQ_DTYPE_I64, "I64", 8},
		{CTQ_DTYPE_U8, "U8", 1},     {CTQ_DTYPE_F8_E4M3, "F8_E4M3", 1},
		{CTQ_DTYPE_F64, "F64", 8},   {CTQ_DTYPE_BOOL, "BOOL", 1},
	};
	cr_assert_eq(sizeof cases / sizeof cases[0], CTQ_DTYPE_COUNT);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum ctq_dtype t = CTQ_DTYPE_COUNT;
		cr_assert_str_eq(ctq_dtype_name(cases[i].t), cases[i].name);
		cr_assert_eq(ctq_dtype_size(cases[i].t), cases[i].size, "%s", cases[i].name);
		cr_assert(ctq_dtype_parse(cases[i].name, &t), "%s", cases[i].name);
		cr_assert_eq(t, cases[i].t, "%s", cases[i].name);
	}
	static const char *const bad[] = {"f32", "F8_E5M2", "U16", "", "BF16 ", "F4"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		enum ctq_dtype t = CTQ_DTYPE_F32;
		cr_assert_not(ctq_dtype_parse(bad[i], &t), "\"%s\" parsed", bad[i]);
		cr_assert_eq(t, CTQ_DTYPE_F32, "parse failure wrote *out");
	}
	cr_assert_not(ctq_dtype_parse(NULL, NULL));
	cr_assert_str_eq(ctq_dtype_name(CTQ_DTYPE_COUNT), "?");
	cr_assert_eq(ctq_dtype_size(CTQ_DTYPE_COUNT), 0);
}

/* Every bf16 pattern widens exactly and narrows back to itself; NaNs stay
 * NaN with their sign. */
Test(dtype, bf16_all_65536_round_trip)
{
	size_t n_nan = 0;
	for (uint32_t h = 0; h <= 0xffff; h++) {
		float f = ctq_bf16_to_f32((uint16_t)h);
		cr_assert_eq(bits(f), h << 16, "bf16 0x%04x widened to 0x%08x", h, bits(f));
		uint16_t back = ctq_f32_to_bf16(f);
		if ((h & 0x7fff) > 0x7f80) {
			n_nan++;
			cr_assert(isnan(ctq_bf16_to_f32(back)), "bf16 NaN 0x%04x -> 0x%04x", h, back);
			cr_assert_eq(back & 0x8000, h & 0x8000, "NaN 0x%04x lost its sign", h);
			cr_assert_eq(back, h | 0x0040, "NaN 0x%04x not quieted in place", h);
		} else {
			cr_assert_eq(back, h, "bf16 0x%04x -> f32 -> 0x%04x", h, back);
		}
	}
	cr_assert_eq(n_nan, 2 * 127, "NaN count");
}

/* Every f16 pattern widens exactly (compared to ldexp of its fields) and
 * narrows back to itself; NaNs stay NaN with sign and quiet bit. */
Test(dtype, f16_all_65536_round_trip)
{
	for (uint32_t h = 0; h <= 0xffff; h++) {
		int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
		float f = ctq_f16_to_f32((uint16_t)h);
		if (exp == 0x1f && mant) {
			cr_assert(isnan(f), "f16 0x%04x not NaN", h);
			cr_assert_eq(bits(f), (uint32_t)sign << 31 | 0x7f800000u | (uint32_t)mant << 13,
				     "f16 NaN 0x%04x payload", h);
			uint16_t back = ctq_f32_to_f16(f);
			cr_assert_eq(back, h | 0x0200, "f16 NaN 0x%04x -> 0x%04x", h, back);
			continue;
		}
		double want = exp == 0x1f ? INFINITY
			      : exp == 0  ? ldexp(mant, -24)
					  : ldexp(1024 + mant, exp - 25);
		if (sign)
			want = -want;
		cr_assert_eq((double)f, want, "f16 0x%04x -> %a, want %a", h, (double)f, want);
		cr_assert_eq(signbit(f) != 0, sign == 1, "f16 0x%04x sign", h);
		uint16_t back = ctq_f32_to_f16(f);
		cr_assert_eq(back, h, "f16 0x%04x -> f32 %a -> 0x%04x", h, (double)f, back);
	}
}

struct narrow_case {
	const char *id;
	uint32_t f32;
	uint16_t want;
};

Test(dtype, bf16_round_to_nearest_even)
{
	static const struct narrow_case cases[] = {
		{"tie-down-to-even", 0x3F808000, 0x3F80},  /* 1.00390625: tie, 0x3F80 even */
		{"tie-up-to-even", 0x3F818000, 0x3F82},    /* tie, 0x3F81 odd -> 0x3F82 */
		{"below-half", 0x3F807FFF, 0x3F80},
		{"above-half", 0x3F808001, 0x3F81},
		{"neg-tie-to-even", 0xBF818000, 0xBF82},
		{"carry-into-exponent", 0x3FFF8000, 0x4000},
		{"max-finite-stays", 0x7F7F0000, 0x7F7F},
		{"overflow-to-inf", 0x7F7F8000, 0x7F80},   /* tie past max: even is inf */
		{"max-f32-to-inf", 0x7F7FFFFF, 0x7F80},
		{"neg-overflow", 0xFF7FFFFF, 0xFF80},
		{"inf", 0x7F800000, 0x7F80},
		{"neg-inf", 0xFF800000, 0xFF80},
		{"zero", 0x00000000, 0x0000},
		{"neg-zero", 0x80000000, 0x8000},
		{"f32-subnormal-tie", 0x00008000, 0x0000},
		{"f32-subnormal-up", 0x00018000, 0x0002},
		{"snan-low-payload", 0x7F800001, 0x7FC0},  /* NaN never becomes inf */
		{"qnan", 0x7FC00000, 0x7FC0},
		{"neg-nan", 0xFFC12345, 0xFFC1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint16_t got = ctq_f32_to_bf16(from_bits(cases[i].f32));
		cr_assert_eq(got, cases[i].want, "dtype/bf16/%s: 0x%08x -> 0x%04x, want 0x%04x",
			     cases[i].id, cases[i].f32, got, cases[i].want);
	}
}

Test(dtype, f16_round_to_nearest_even_overflow_and_subnormals)
{
	static const struct narrow_case cases[] = {
		{"one", 0x3F800000, 0x3C00},
		{"tie-down-to-even", 0x3F801000, 0x3C00},    /* 1 + 2^-11 */
		{"tie-up-to-even", 0x3F803000, 0x3C02},      /* 1 + 3*2^-11 */
		{"above-half", 0x3F801001, 0x3C01},
		{"max-finite", 0x477FE000, 0x7BFF},          /* 65504 */
		{"below-overflow-tie", 0x477FEFFF, 0x7BFF},  /* just under 65520 */
		{"overflow-tie-to-inf", 0x477FF000, 0x7C00}, /* 65520 */
		{"overflow", 0x47800000, 0x7C00},            /* 65536 */
		{"huge", 0x7F7FFFFF, 0x7C00},
		{"neg-overflow", 0xC77FF000, 0xFC00},
		{"inf", 0x7F800000, 0x7C00},
		{"neg-inf", 0xFF800000, 0xFC00},
		{"min-normal", 0x38800000, 0x0400},          /* 2^-14 */
		{"max-subnormal", 0x387FC000, 0x03FF},       /* 1023 * 2^-24 */
		{"round-up-to-min-normal", 0x387FE000, 0x0400},
		{"min-subnormal", 0x33800000, 0x0001},       /* 2^-24 */
		{"half-min-subnormal-tie-to-zero", 0x33000000, 0x0000}, /* 2^-25 */
		{"above-half-min-subnormal", 0x33000001, 0x0001},
		{"three-halves-min-tie-up", 0x33C00000, 0x0002},       /* 1.5 * 2^-24 */
		{"five-halves-min-tie-down", 0x34200000, 0x0002},      /* 2.5 * 2^-24 */
		{"tiny-to-zero", 0x00000001, 0x0000},
		{"neg-tiny-to-neg-zero", 0x80000001, 0x8000},
		{"neg-min-subnormal", 0xB3800000, 0x8001},
		{"neg-zero", 0x80000000, 0x8000},
		{"snan-low-payload", 0x7F800001, 0x7E00},
		{"qnan-payload", 0x7FC02000, 0x7E01},
		{"neg-nan", 0xFFC00000, 0xFE00},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint16_t got = ctq_f32_to_f16(from_bits(cases[i].f32));
		cr_assert_eq(got, cases[i].want, "dtype/f16/%s: 0x%08x -> 0x%04x, want 0x%04x",
			     cases[i].id, cases[i].f32, got, cases[i].want);
	}
}

/* f32 -> f16 against a reference that rounds in double: for a sweep of
 * f32 patterns across the whole half range the nearest half (ties to even)
 * is found by comparing distances to the two neighbours. */
Test(dtype, f16_narrowing_matches_nearest_even_search)
{
	for (uint32_t u = 0x33000000u; u <= 0x47800000u; u += 0x1357u) {
		float f = from_bits(u);
		uint16_t got = ctq_f32_to_f16(f);
		/* Largest half <= f, then decide between it and the next one. */
		uint16_t lo = 0;
		for (int step = 1 << 14; step; step >>= 1)
			if (lo + step <= 0x7c00 && ctq_f16_to_f32((uint16_t)(lo + step)) <= f)
				lo = (uint16_t)(lo + step);
		uint16_t want = lo;
		if (lo < 0x7c00) {
			double dl = (double)f - ctq_f16_to_f32(lo);
			double dh = (lo + 1 == 0x7c00 ? 65536.0 : (double)ctq_f16_to_f32((uint16_t)(lo + 1))) - (double)f;
			if (dh < dl || (dh == dl && (lo & 1)))
				want = (uint16_t)(lo + 1);
		}
		cr_assert_eq(got, want, "dtype/f16/sweep 0x%08x (%a): got 0x%04x want 0x%04x",
			     u, (double)f, got, want);
	}
}

/* e4m3fn from its definition: sign, 4-bit exponent with bias 7, 3-bit
 * mantissa, subnormals at exponent 0, S.1111.111 NaN, no infinities. */
static double e4m3_ref(unsigned b, bool *nan)
{
	unsigned s = b >> 7, e = (b >> 3) & 0xf, m = b & 7;
	*nan = e == 15 && m == 7;
	double mag = e == 0 ? ldexp(m / 8.0, 1 - 7) : ldexp(1.0 + m / 8.0, (int)e - 7);
	return s ? -mag : mag;
}

Test(dtype, f8_e4m3fn_all_256_codes)
{
	double max = 0;
	int n_nan = 0;
	for (unsigned b = 0; b < 256; b++) {
		bool nan;
		double want = e4m3_ref(b, &nan);
		float got = ctq_f8e4m3_to_f32((uint8_t)b);
		if (nan) {
			n_nan++;
			cr_assert(isnan(got), "dtype/e4m3/0x%02x: %a, want NaN", b, (double)got);
			cr_assert_eq(signbit(got) != 0, (b & 0x80) != 0, "0x%02x NaN sign", b);
			continue;
		}
		cr_assert(isfinite(got), "dtype/e4m3/0x%02x not finite", b);
		cr_assert_eq((double)got, want, "dtype/e4m3/0x%02x: %a, want %a", b, (double)got, want);
		cr_assert_eq(signbit(got) != 0, (b & 0x80) != 0, "0x%02x sign", b);
		if (fabs(want) > max)
			max = fabs(want);
	}
	cr_assert_eq(n_nan, 2, "exactly 0x7f and 0xff are NaN");
	cr_assert_eq(max, 448.0);
	cr_assert_eq(ctq_f8e4m3_to_f32(0x7e), 448.0f);
	cr_assert_eq(ctq_f8e4m3_to_f32(0x01), 0x1p-9f, "smallest subnormal");
	cr_assert_eq(ctq_f8e4m3_to_f32(0x07), 7 * 0x1p-9f, "largest subnormal");
	cr_assert_eq(ctq_f8e4m3_to_f32(0x08), 0x1p-6f, "smallest normal");
	cr_assert_eq(ctq_f8e4m3_to_f32(0x38), 1.0f);
	cr_assert_eq(bits(ctq_f8e4m3_to_f32(0x80)), 0x80000000u, "negative zero");
	cr_assert_eq(ctq_f8e4m3_to_f32(0x78), 256.0f, "0x78 is finite (no inf in fn)");
}

Test(dtype, bulk_to_f32_every_dtype_unaligned)
{
	/* Each source starts one byte into the buffer to prove unaligned reads. */
	unsigned char buf[1 + 4 * 8];
	float out[4];
	const float f32[4] = {1.5f, -2.0f, 0.0f, 65504.0f};

	memcpy(buf + 1, f32, sizeof f32);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_F32, 4, out));
	cr_assert_arr_eq(out, f32, sizeof f32);

	uint16_t h[4], b[4];
	ctq_convert_f32_to_f16(f32, 4, h);
	memcpy(buf + 1, h, sizeof h);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_F16, 4, out));
	cr_assert_arr_eq(out, f32, sizeof f32);

	ctq_convert_f32_to_bf16(f32, 4, b);
	cr_assert_eq(b[0], 0x3FC0);
	memcpy(buf + 1, b, sizeof b);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_BF16, 4, out));
	cr_assert_eq(out[0], 1.5f);
	cr_assert_eq(out[3], 65536.0f, "65504 rounds to the bf16 65536");

	const double f64[4] = {0.1, -1e300, 3.0, 1.0 + 0x1p-24};
	memcpy(buf + 1, f64, sizeof f64);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_F64, 4, out));
	cr_assert_eq(out[0], 0.1f);
	cr_assert(isinf(out[1]) && out[1] < 0);
	cr_assert_eq(out[2], 3.0f);
	cr_assert_eq(out[3], 1.0f, "tie rounds to even");

	const int8_t i8[4] = {-128, 127, 0, -1};
	memcpy(buf + 1, i8, sizeof i8);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_I8, 4, out));
	cr_assert(out[0] == -128.0f && out[1] == 127.0f && out[3] == -1.0f);

	const int32_t i32[4] = {INT32_MIN, 16777217, -5, 0};
	memcpy(buf + 1, i32, sizeof i32);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_I32, 4, out));
	cr_assert(out[0] == -2147483648.0f && out[1] == 16777216.0f && out[2] == -5.0f);

	const int64_t i64[4] = {INT64_MIN, 1, -1, 1000};
	memcpy(buf + 1, i64, sizeof i64);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_I64, 4, out));
	cr_assert(out[0] == -0x1p63f && out[1] == 1.0f && out[2] == -1.0f && out[3] == 1000.0f);

	const uint8_t u8[4] = {0, 255, 1, 128}, e4[4] = {0x38, 0x7e, 0xfe, 0x7f}, bo[4] = {0, 1, 2, 255};
	memcpy(buf + 1, u8, 4);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_U8, 4, out));
	cr_assert(out[1] == 255.0f && out[3] == 128.0f);
	memcpy(buf + 1, e4, 4);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_F8_E4M3, 4, out));
	cr_assert(out[0] == 1.0f && out[1] == 448.0f && out[2] == -448.0f && isnan(out[3]));
	memcpy(buf + 1, bo, 4);
	cr_assert(ctq_convert_to_f32(buf + 1, CTQ_DTYPE_BOOL, 4, out));
	cr_assert(out[0] == 0.0f && out[1] == 1.0f && out[2] == 1.0f && out[3] == 1.0f);

	out[0] = 42.0f;
	cr_assert_not(ctq_convert_to_f32(buf, CTQ_DTYPE_COUNT, 1, out));
	cr_assert_eq(out[0], 42.0f, "an unknown dtype writes nothing");
	cr_assert(ctq_convert_to_f32(NULL, CTQ_DTYPE_F32, 0, out), "n == 0 is fine");
}
