/* compressed-tensors pack-quantized tensors: packing, unpacking and one
 * module's read (see packed.h). */
#include "checkpoint/packed.h"
#include "core/arena.h"
#include "core/numerics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t ctq_packed_groups(int64_t K, int64_t group_size)
{
	return group_size > 0 ? (K + group_size - 1) / group_size : 1;
}

const char *ctq_packed_layout(const struct ctq_qargs *w, const char *format,
			      struct ctq_packed_args *a, bool *packed)
{
	*packed = false;
	if (!w || w->type != CTQ_QTYPE_INT)
		return "its weights are not int: ctq dequantizes int-quantized and pack-quantized int weights";
	if (w->strategy != CTQ_STRATEGY_CHANNEL && w->strategy != CTQ_STRATEGY_GROUP &&
	    w->strategy != CTQ_STRATEGY_TENSOR)
		return "its weight strategy is not tensor, channel or group";
	if (w->actorder != CTQ_ACTORDER_NONE)
		return "its weights have an activation order (weight_g_idx), which ctq does not apply";
	a->bits = w->num_bits;
	a->group_size = w->strategy == CTQ_STRATEGY_GROUP ? w->group_size : 0;
	a->asym = !w->symmetric;
	*packed = format && !strcmp(format, "pack-quantized");
	if (*packed && (a->bits == 4 || a->bits == 8) && w->strategy != CTQ_STRATEGY_TENSOR)
		return NULL;
	if (!*packed && a->bits == 8 && !a->asym && format &&
	    (!strcmp(format, "int-quantized") || !strcmp(format, "naive-quantized")))
		return NULL;
	return "its format and bits are not pack-quantized int4 / int8 or int-quantized symmetric int8";
}

void ctq_pack_rows(const int8_t *q, int64_t rows, int64_t cols, int bits, int32_t *out)
{
	const int64_t pf = ctq_pack_factor(bits), words = ctq_pack_words(cols, bits);
	const uint32_t mask = (1u << bits) - 1u, off = 1u << (bits - 1);
	for (int64_t r = 0; r < rows; r++) {
		const int8_t *qr = q + r * cols;
		for (int64_t w = 0; w < words; w++) {
			uint32_t v = 0;
			for (int64_t j = 0; j < pf && w * pf + j < cols; j++)
				v |= (((uint32_t)(int32_t)qr[w * pf + j] + off) & mask) << (j * bits);
			memcpy(&out[r * words + w], &v, sizeof v);
		}
	}
}

void ctq_unpack_rows(const int32_t *p, int64_t rows, int64_t cols, int bits, int8_t *q)
{
	const int64_t words = ctq_pack_words(cols, bits);
	for (int64_t r = 0; r < rows; r++)
		for (int64_t k = 0; k < cols; k++)
			q[r * cols + k] = (int8_t)ctq_pack_get(p + r * words, k, bits);
}

void ctq_pack_dim0(const int8_t *z, int64_t rows, int64_t cols, int bits, int32_t *out)
{
	const int64_t pf = ctq_pack_factor(bits), words = ctq_pack_words(rows, bits);
	const uint32_t mask = (1u << bits) - 1u, off = 1u << (bits - 1);
	for (int64_t w = 0; w < words; w++)
		for (int64_t c = 0; c < cols; c++) {
			uint32_t v = 0;
			for (int64_t j = 0; j < pf && w * pf + j < rows; j++)
				v |= (((uint32_t)(int32_t)z[(w * pf + j) * cols + c] + off) & mask)
				     << (j * bits);
			memcpy(&out[w * cols + c], &v, sizeof v);
		}
}

void ctq_unpack_dim0(const int32_t *p, int64_t rows, int64_t cols, int bits, int8_t *z)
{
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++)
			z[r * cols + c] = (int8_t)ctq_pack_get_dim0(p, r, c, cols, bits);
}

void ctq_packed_free(struct ctq_packed_module *m)
{
	if (!m)
		return;
	ctq_free(m->q);
	ctq_free(m->scale);
	ctq_free(m->zero);
	ctq_free(m->packed);
	ctq_free(m->zero_packed);
	memset(m, 0, sizeof *m);
}

void ctq_packed_dequant_row(const struct ctq_packed_module *m, int64_t n, float *w)
{
	const int64_t G = m->a.group_size > 0 ? m->a.group_size : m->K;
	for (int64_t k = 0; k < m->K; k++) {
		const int64_t g = k / G;
		const int z = m->zero ? m->zero[n * m->n_groups + g] : 0;
		w[k] = ctq_wna16_dequant(m->q[n * m->K + k], z, m->scale[n * m->n_groups + g]);
	}
}

/* t is [d0, d1] of dtype (d1 < 0: 1-D [d0]). */
static bool shape_is(const struct ctq_st_tensor *t, enum ctq_dtype dtype, int64_t d0, int64_t d1)
{
	if (t->dtype != dtype)
		return false;
	if (d1 < 0)
		return t->ndim == 1 && t->shape[0] == d0;
	return t->ndim == 2 && t->shape[0] == d0 && t->shape[1] == d1;
}

static const struct ctq_st_tensor *find(const struct ctq_checkpoint *ck, const char *module,
					const char *suffix, char *name, size_t cap)
{
	snprintf(name, cap, "%s.%s", module, suffix);
	return ctq_checkpoint_find(ck, name, NULL);
}

enum ctq_status ctq_packed_read(const struct ctq_checkpoint *ck, const char *module,
				const struct ctq_packed_args *a, struct ctq_packed_module *out,
				struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	char name[CTQ_PATH_MAX];
	memset(out, 0, sizeof *out);
	out->a = *a;
	if (a->bits != 4 && a->bits != 8)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, module,
				     "pack-quantized with num_bits %d; ctq reads 4 and 8", a->bits);
	const struct ctq_st_tensor *ts = find(ck, module, "weight_shape", name, sizeof name);
	if (!ts)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "is missing; a pack-quantized module stores its (N, K) there");
	int64_t nk[2] = {0, 0};
	if (ts->dtype == CTQ_DTYPE_I64 && ts->ndim == 1 && ts->shape[0] == 2) {
		memcpy(nk, ts->data, sizeof nk);
	} else if (ts->dtype == CTQ_DTYPE_I32 && ts->ndim == 1 && ts->shape[0] == 2) {
		int32_t v[2];
		memcpy(v, ts->data, sizeof v);
		nk[0] = v[0];
		nk[1] = v[1];
	} else {
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "is %s with %d dimension(s); expected I64 [2] (N, K)",
				     ctq_dtype_name(ts->dtype), ts->ndim);
	}
	if (nk[0] < 1 || nk[1] < 1 || nk[0] > (1L << 24) || nk[1] > (1L << 24))
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "holds (%lld, %lld); expected two sizes from 1 to 2^24",
				     (long long)nk[0], (long long)nk[1]);
	const int64_t N = nk[0], K = nk[1], G = ctq_packed_groups(K, a->group_size);
	const int64_t words = ctq_pack_words(K, a->bits), zrows = ctq_pack_words(N, a->bits);
	out->N = N;
	out->K = K;
	out->n_groups = G;
	const struct ctq_st_tensor *tp = find(ck, module, "weight_packed", name, sizeof name);
	if (!tp)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name, "is missing");
	if (!shape_is(tp, CTQ_DTYPE_I32, N, words))
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "is %s [%lld, %lld]; expected I32 [%lld, %lld] (weight_shape (%lld, "
				     "%lld), %d bits: %d values per int32)", ctq_dtype_name(tp->dtype),
				     (long long)tp->shape[0], (long long)tp->shape[1], (long long)N,
				     (long long)words, (long long)N, (long long)K, a->bits,
				     ctq_pack_factor(a->bits));
	const struct ctq_st_tensor *tsc = find(ck, module, "weight_scale", name, sizeof name);
	if (!tsc)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name, "is missing");
	if ((tsc->dtype != CTQ_DTYPE_BF16 && tsc->dtype != CTQ_DTYPE_F16 &&
	     tsc->dtype != CTQ_DTYPE_F32) || tsc->ndim != 2 || tsc->shape[0] != N ||
	    tsc->shape[1] != G)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "is %s [%lld, %lld]; expected a float [%lld, %lld] (%s)",
				     ctq_dtype_name(tsc->dtype), (long long)tsc->shape[0],
				     (long long)tsc->shape[1], (long long)N, (long long)G,
				     a->group_size > 0 ? "one scale per group of columns" : "per channel");
	out->scale_dtype = tsc->dtype;
	char zname[CTQ_PATH_MAX];
	const struct ctq_st_tensor *tz = find(ck, module, "weight_zero_point", zname, sizeof zname);
	if (a->asym && !tz)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, zname,
				     "is missing; the scheme is asymmetric");
	if (a->asym && !shape_is(tz, CTQ_DTYPE_I32, zrows, G))
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, zname,
				     "is %s [%lld, %lld]; expected I32 [%lld, %lld] (packed along dim 0)",
				     ctq_dtype_name(tz->dtype), (long long)tz->shape[0],
				     (long long)tz->shape[1], (long long)zrows, (long long)G);

	out->q = ctq_malloc((size_t)(N * K));
	out->scale = ctq_malloc((size_t)(N * G) * sizeof *out->scale);
	out->packed = ctq_malloc((size_t)(N * words) * sizeof *out->packed);
	if (a->asym) {
		out->zero = ctq_malloc((size_t)(N * G));
		out->zero_packed = ctq_malloc((size_t)(zrows * G) * sizeof *out->zero_packed);
	}
	if (!out->q || !out->scale || !out->packed || (a->asym && (!out->zero || !out->zero_packed))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, module, "out of memory");
		goto fail;
	}
	memcpy(out->packed, tp->data, tp->n_bytes);
	ctq_unpack_rows(out->packed, N, K, a->bits, out->q);
	ctq_convert_to_f32(tsc->data, tsc->dtype, (size_t)(N * G), out->scale);
	for (int64_t i = 0; i < N * G; i++)
		if (!(isfinite(out->scale[i]) && out->scale[i] > 0.0f)) {
			st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
					   "element [%lld, %lld] is %g; expected a finite positive scale",
					   (long long)(i / G), (long long)(i % G), (double)out->scale[i]);
			goto fail;
		}
	if (a->asym) {
		memcpy(out->zero_packed, tz->data, tz->n_bytes);
		ctq_unpack_dim0(out->zero_packed, N, G, a->bits, out->zero);
	} else if (tz) {
		/* A symmetric module's zero point, as old producers wrote it:
		 * all zero in any int dtype, else the checkpoint says asym. */
		bool zero = tz->dtype == CTQ_DTYPE_I8 || shape_is(tz, CTQ_DTYPE_I32, zrows, G);
		for (uint64_t i = 0; zero && tz->dtype == CTQ_DTYPE_I8 && i < tz->n_bytes; i++)
			zero = ((const signed char *)tz->data)[i] == 0;
		for (int64_t i = 0; zero && tz->dtype == CTQ_DTYPE_I32 && i < N * G; i++) {
			/* element (n, g): word (n / pf, g), slot n % pf (maybe unaligned) */
			const int64_t n = i / G, g = i % G, pf = ctq_pack_factor(a->bits);
			int32_t word;
			memcpy(&word, (const char *)tz->data + (size_t)((n / pf) * G + g) * sizeof word,
			       sizeof word);
			zero = ctq_pack_get(&word, n % pf, a->bits) == 0;
		}
		if (!zero) {
			st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, zname,
					   "is present with non-zero values but the scheme is symmetric");
			goto fail;
		}
	}
	return CTQ_OK;
fail:
	ctq_packed_free(out);
	return st;
}
