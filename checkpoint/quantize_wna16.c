/* Weight-only pack-quantized producer (see quantize_wna16.h). */
#include "checkpoint/quantize_wna16.h"
#include "checkpoint/quantize.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/numerics.h"
#include "core/threads.h"

#include <math.h>
#include <string.h>

const char *ctq_wna16_scheme_name(const struct ctq_packed_args *a)
{
	if (a->bits == 4)
		return a->asym ? "w4a16-asym" : "w4a16";
	return a->asym ? "w8a16-asym" : "w8a16";
}

const char *ctq_wna16_preset(const struct ctq_packed_args *a)
{
	if (a->bits == 4 && a->group_size == CTQ_WNA16_GROUP_DEFAULT)
		return a->asym ? "W4A16_ASYM" : "W4A16";
	if (a->bits == 8 && a->group_size == 0 && !a->asym)
		return "W8A16";
	return NULL;
}

cJSON *ctq_wna16_config_block(const struct ctq_packed_args *a, const char *const *ignore,
			      size_t n_ignore)
{
	/* W8A8's block, every field in place, changed where weight-only
	 * differs: no input activations, the weights' bits, strategy, group
	 * size and symmetry, and the format. zp_dtype stays null: the library
	 * defaults it to int8 for int weights of up to 8 bits. */
	cJSON *b = ctq_quantize_config_block(ignore, n_ignore);
	if (!b)
		return NULL;
	cJSON *g0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "config_groups"),
						     "group_0");
	cJSON *w = cJSON_GetObjectItemCaseSensitive(g0, "weights");
	bool ok = g0 && w;
	ok = ok && cJSON_ReplaceItemInObjectCaseSensitive(g0, "format", cJSON_CreateString("pack-quantized"));
	ok = ok && cJSON_ReplaceItemInObjectCaseSensitive(g0, "input_activations", cJSON_CreateNull());
	ok = ok && cJSON_ReplaceItemInObjectCaseSensitive(w, "num_bits", cJSON_CreateNumber(a->bits));
	ok = ok && cJSON_ReplaceItemInObjectCaseSensitive(w, "strategy",
							  cJSON_CreateString(a->group_size > 0 ? "group" : "channel"));
	ok = ok && cJSON_ReplaceItemInObjectCaseSensitive(w, "group_size",
							  a->group_size > 0 ? cJSON_CreateNumber((double)a->group_size)
									    : cJSON_CreateNull());
	ok = ok && cJSON_ReplaceItemInObjectCaseSensitive(w, "symmetric", cJSON_CreateBool(!a->asym));
	ok = ok && cJSON_ReplaceItemInObjectCaseSensitive(b, "format", cJSON_CreateString("pack-quantized"));
	if (!ok) {
		cJSON_Delete(b);
		return NULL;
	}
	return b;
}

int64_t ctq_wna16_quantize_weight(const void *w, enum ctq_dtype dtype, int64_t N, int64_t K,
				  const struct ctq_packed_args *a, int32_t *packed, void *scale,
				  int32_t *zero_packed, double *err2, double *norm2)
{
	const size_t esz = ctq_dtype_size(dtype);
	const int bits = a->bits;
	const int64_t G = ctq_packed_groups(K, a->group_size);
	const int64_t gs = a->group_size > 0 ? a->group_size : K;
	const int64_t words = ctq_pack_words(K, bits);
	const int n_threads = ctq_threads_max();
	/* (n_threads, K) f32 rows and (n_threads, K) int8 rows; zero points
	 * (N, G) int8, packed once every row is done. */
	float *rows = ctq_malloc((size_t)n_threads * (size_t)K * sizeof *rows);
	int8_t *qrows = ctq_malloc((size_t)n_threads * (size_t)K);
	int8_t *zeros = a->asym ? ctq_malloc((size_t)(N * G)) : NULL;
	if (!rows || !qrows || (a->asym && !zeros)) {
		ctq_free(rows);
		ctq_free(qrows);
		ctq_free(zeros);
		return -2;
	}
#pragma omp parallel for schedule(static)
	for (int64_t n = 0; n < N; n++) {
		const int tid = ctq_thread_id();
		float *wr = rows + (size_t)tid * (size_t)K; /* (K) */
		int8_t *qr = qrows + (size_t)tid * (size_t)K; /* (K) */
		ctq_convert_to_f32((const unsigned char *)w + (size_t)n * (size_t)K * esz, dtype,
				   (size_t)K, wr);
		double e2 = 0.0, w2 = 0.0;
		bool bad = false;
		for (int64_t g = 0; g < G; g++) {
			const int64_t k0 = g * gs, k1 = k0 + gs < K ? k0 + gs : K;
			float amax = 0.0f, lo = 0.0f, hi = 0.0f;
			for (int64_t k = k0; k < k1; k++) {
				amax = ctq_amax_update(amax, wr[k]);
				lo = wr[k] < lo ? wr[k] : lo;
				hi = wr[k] > hi ? wr[k] : hi;
			}
			const size_t si = (size_t)(n * G + g);
			float s;
			int z = 0;
			if (a->asym) {
				s = ctq_float_store(scale, dtype, (int64_t)si, ctq_wna16_scale_asym(lo, hi, bits));
				z = ctq_wna16_zero_point(lo, s, bits);
				zeros[si] = (int8_t)z;
			} else {
				s = ctq_float_store(scale, dtype, (int64_t)si, ctq_weight_scale_bits(amax, bits));
			}
			if (!isfinite(amax) || !isfinite(s)) {
				bad = true;
				break;
			}
			for (int64_t k = k0; k < k1; k++) {
				const int q = a->asym ? ctq_wna16_quantize_asym(wr[k], s, z, bits)
						      : ctq_quantize_bits(wr[k], s, bits);
				qr[k] = (int8_t)q;
				const double d = (double)ctq_wna16_dequant(q, z, s) - (double)wr[k];
				e2 += d * d;
				w2 += (double)wr[k] * (double)wr[k];
			}
		}
		if (bad) {
			err2[n] = NAN;
			norm2[n] = 0.0;
			continue;
		}
		ctq_pack_rows(qr, 1, K, bits, packed + (size_t)n * (size_t)words);
		err2[n] = e2;
		norm2[n] = w2;
	}
	int64_t first_bad = -1;
	for (int64_t n = 0; n < N && first_bad < 0; n++)
		if (isnan(err2[n]))
			first_bad = n;
	if (a->asym && first_bad < 0)
		ctq_pack_dim0(zeros, N, G, bits, zero_packed);
	ctq_free(rows);
	ctq_free(qrows);
	ctq_free(zeros);
	return first_bad;
}
