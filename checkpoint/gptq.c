/* ctq GPTQ (checkpoint/gptq.h): Hessian sums, the dampened Cholesky inverse
 * and the block-wise rounding with error propagation, in f64. */
#include "checkpoint/gptq.h"
#include "checkpoint/quantize.h"
#include "core/arena.h"
#include "core/cpu.h"
#include "core/numerics.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GPTQ_X86 1
#include <immintrin.h>
#endif

/* Rows of x taken together in the Hessian's register tile. */
#define HT 4

/* The sum over k < n of a[k] * b[k], as eight partial sums (lane k % 8,
 * each in k order, every product and sum rounded on its own: the build
 * forbids contraction) added in one fixed order. An AVX-512 loop and the
 * portable one give the same bits, so a checkpoint does not depend on the
 * CPU that made it; the eight lanes are what make either fast (the single
 * running sum they replace was a chain of dependent additions). */
static double lanes_sum(const double l[8])
{
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

#ifdef GPTQ_X86
__attribute__((target("avx512f"))) static double dot8_avx512(const double *a, const double *b, int64_t n)
{
	__m512d s = _mm512_setzero_pd();
	int64_t k = 0;
	for (; k + 8 <= n; k += 8)
		s = _mm512_add_pd(s, _mm512_mul_pd(_mm512_loadu_pd(a + k), _mm512_loadu_pd(b + k)));
	double l[8];
	_mm512_storeu_pd(l, s);
	for (; k < n; k++)
		l[k % 8] += a[k] * b[k];
	return lanes_sum(l);
}
#endif


static double dot8_c(const double *a, const double *b, int64_t n)
{
	double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	int64_t k = 0;
	for (; k + 8 <= n; k += 8)
		for (int j = 0; j < 8; j++)
			l[j] += a[k + j] * b[k + j];
	for (; k < n; k++)
		l[k % 8] += a[k] * b[k];
	return lanes_sum(l);
}


static double dot8(const double *a, const double *b, int64_t n)
{
#ifdef GPTQ_X86
	if (ctq_cpu_has(CTQ_CPU_AVX512F))
		return dot8_avx512(a, b, n);
#endif
	return dot8_c(a, b, n);
}

enum ctq_status ctq_gptq_hessian_init(struct ctq_gptq_hessian *h, int64_t K,
				      struct ctq_error *err)
{
	memset(h, 0, sizeof *h);
	if (K < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "gptq", "a Hessian of %lld columns",
				     (long long)K);
	h->S = ctq_calloc((size_t)K * (size_t)K, sizeof *h->S);
	if (!h->S)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "gptq", "out of memory (Hessian %lld x %lld)",
				     (long long)K, (long long)K);
	h->K = K;
	return CTQ_OK;
}

void ctq_gptq_hessian_free(struct ctq_gptq_hessian *h)
{
	if (!h)
		return;
	ctq_free(h->S);
	memset(h, 0, sizeof *h);
}

void ctq_gptq_hessian_reset(struct ctq_gptq_hessian *h)
{
	if (h->S)
		memset(h->S, 0, (size_t)h->K * (size_t)h->K * sizeof *h->S);
	h->n_samples = h->n_tokens = 0;
}

enum ctq_status ctq_gptq_hessian_add(struct ctq_gptq_hessian *h, const float *x, int64_t M,
				     struct ctq_error *err)
{
	const int64_t K = h->K, Kp = (K + HT - 1) / HT * HT;
	if (M < 1) {
		h->n_samples++;
		return CTQ_OK;
	}
	/* (Kp, M) f64: x transposed, zero rows padding K to the tile; the
	 * products of two f32 are exact in f64. */
	double *xt = ctq_calloc((size_t)Kp * (size_t)M, sizeof *xt);
	if (!xt)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "gptq", "out of memory");
	for (int64_t t = 0; t < M; t++)
		for (int64_t k = 0; k < K; k++)
			xt[k * M + t] = (double)x[t * K + k];
	/* Upper triangle by HT x HT tiles of rows of xt (one call's tokens),
	 * each element one thread's dot8 over the tokens, so the result does
	 * not depend on the thread count. */
#pragma omp parallel for schedule(dynamic, 1)
	for (int64_t i0 = 0; i0 < Kp; i0 += HT) {
		for (int64_t j0 = i0; j0 < Kp; j0 += HT) {
			const double *a = xt + i0 * M, *b = xt + j0 * M;
			for (int ii = 0; ii < HT && i0 + ii < K; ii++)
				for (int jj = 0; jj < HT && j0 + jj < K; jj++)
					if (j0 + jj >= i0 + ii)
						h->S[(i0 + ii) * K + j0 + jj] += dot8(a + ii * M, b + jj * M, M);
		}
	}
	ctq_free(xt);
	h->n_samples++;
	h->n_tokens += M;
	return CTQ_OK;
}

/* In-place lower Cholesky of A (K, K) row-major, symmetric: A = L Lᵀ, the
 * strict upper triangle zeroed. false when A is not (numerically) positive
 * definite, as torch.linalg.cholesky raises. */
static bool cholesky_lower(double *A, int64_t K)
{
	for (int64_t j = 0; j < K; j++) {
		const double s = A[j * K + j] - dot8(A + j * K, A + j * K, j);
		if (!(s > 0.0) || !isfinite(s))
			return false;
		const double ljj = sqrt(s);
		A[j * K + j] = ljj;
#pragma omp parallel for schedule(static) if (K - j > 64)
		for (int64_t i = j + 1; i < K; i++)
			A[i * K + j] = (A[i * K + j] - dot8(A + i * K, A + j * K, j)) / ljj;
	}
	for (int64_t i = 0; i < K; i++)
		for (int64_t j = i + 1; j < K; j++)
			A[i * K + j] = 0.0;
	return true;
}

/* torch.cholesky_inverse: from L (K, K) lower, Hinv = (L Lᵀ)^-1 into out
 * (K, K), through T = (L^-1)ᵀ (upper, scratch): Hinv[a][b] = sum over k >=
 * max(a, b) of T[a][k] T[b][k]. */
static void cholesky_inverse(const double *L, int64_t K, double *T, double *out)
{
#pragma omp parallel for schedule(dynamic, 8)
	for (int64_t c = 0; c < K; c++) {
		double *tc = T + c * K; /* row c of T: column c of L^-1 */
		for (int64_t i = 0; i < c; i++)
			tc[i] = 0.0;
		for (int64_t i = c; i < K; i++)
			tc[i] = ((i == c ? 1.0 : 0.0) - dot8(L + i * K + c, tc + c, i - c)) / L[i * K + i];
	}
#pragma omp parallel for schedule(dynamic, 8)
	for (int64_t a = 0; a < K; a++)
		for (int64_t b = a; b < K; b++)
			out[a * K + b] = out[b * K + a] = dot8(T + a * K + b, T + b * K + b, K - b);
}

/* The library's apply_activation_ordering: column indices by descending
 * diag(H) (torch.argsort(descending=True)); equal diagonals keep index order
 * (torch's sort is not stable there, and only dead columns, which carry no
 * error, tie in practice). */
struct diag_entry {
	double d;
	int64_t i;
};

static int by_diag_desc(const void *a, const void *b)
{
	const struct diag_entry *x = a, *y = b;
	if (x->d != y->d)
		return x->d > y->d ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

enum ctq_status ctq_gptq_hinv_init(struct ctq_gptq_hinv *v, const struct ctq_gptq_hessian *h,
				   double dampening_frac, bool actorder, struct ctq_error *err)
{
	memset(v, 0, sizeof *v);
	const int64_t K = h->K;
	if (h->n_samples < 1 || !h->S)
		return ctq_error_set(err, CTQ_ERR_USAGE, "gptq",
				     "a Hessian without calibration samples");
	if (!(dampening_frac >= 0.0 && dampening_frac <= 1.0))
		return ctq_error_set(err, CTQ_ERR_USAGE, "gptq", "dampening_frac %g is outside [0, 1]",
				     dampening_frac);
	const size_t KK = (size_t)K * (size_t)K;
	double *A = ctq_malloc(KK * sizeof *A), *T = ctq_malloc(KK * sizeof *T);
	v->U = ctq_malloc(KK * sizeof *v->U);
	v->dead = ctq_calloc((size_t)K, sizeof *v->dead);
	v->perm = ctq_malloc((size_t)K * sizeof *v->perm);
	if (!A || !T || !v->U || !v->dead || !v->perm) {
		ctq_free(A);
		ctq_free(T);
		ctq_gptq_hinv_free(v);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "gptq", "out of memory (Hessian %lld x %lld)",
				     (long long)K, (long long)K);
	}
	v->K = K;
	/* H = 2 / n S, mirrored from the upper triangle, in column order perm
	 * (T holds the unpermuted H while perm is sorted) */
	const double f = 2.0 / (double)h->n_samples;
	for (int64_t i = 0; i < K; i++)
		for (int64_t j = i; j < K; j++)
			T[i * K + j] = T[j * K + i] = f * h->S[i * K + j];
	for (int64_t i = 0; i < K; i++)
		v->perm[i] = i;
	struct diag_entry *e = actorder ? ctq_malloc((size_t)K * sizeof *e) : NULL; /* (K) */
	if (actorder && !e) {
		ctq_free(A);
		ctq_free(T);
		ctq_gptq_hinv_free(v);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "gptq", "out of memory");
	}
	if (actorder) {
		for (int64_t i = 0; i < K; i++)
			e[i] = (struct diag_entry){T[i * K + i], i};
		qsort(e, (size_t)K, sizeof *e, by_diag_desc);
		for (int64_t i = 0; i < K; i++)
			v->perm[i] = e[i].i;
		ctq_free(e);
	}
	for (int64_t i = 0; i < K; i++)
		for (int64_t j = 0; j < K; j++)
			A[i * K + j] = T[v->perm[i] * K + v->perm[j]];
	double mean = 0.0;
	for (int64_t i = 0; i < K; i++) {
		if (A[i * K + i] == 0.0) {
			v->dead[i] = true;
			v->n_dead++;
			A[i * K + i] = 1.0;
		}
		mean += A[i * K + i];
	}
	const double damp = dampening_frac * (mean / (double)K);
	for (int64_t i = 0; i < K; i++)
		A[i * K + i] += damp;
	bool ok = cholesky_lower(A, K);
	if (ok) {
		cholesky_inverse(A, K, T, v->U);
		ok = cholesky_lower(v->U, K);
	}
	if (ok) {
		/* U = L2ᵀ, L2 the lower factor of Hinv now in v->U */
		for (int64_t i = 0; i < K; i++)
			for (int64_t j = i + 1; j < K; j++) {
				v->U[i * K + j] = v->U[j * K + i];
				v->U[j * K + i] = 0.0;
			}
	} else {
		v->fallback = true;
		memset(v->U, 0, KK * sizeof *v->U);
		for (int64_t i = 0; i < K; i++)
			v->U[i * K + i] = 1.0;
	}
	ctq_free(A);
	ctq_free(T);
	return CTQ_OK;
}

void ctq_gptq_hinv_free(struct ctq_gptq_hinv *v)
{
	if (!v)
		return;
	ctq_free(v->U);
	ctq_free(v->dead);
	ctq_free(v->perm);
	memset(v, 0, sizeof *v);
}

/* One row (GPTQ's rows are independent given U): wr (K) f32 the original
 * row, w (K) f64 scratch in v's column order, e (B) f64 scratch; q (K) out
 * in the weight's column order; returns the loss. */
/* w[j] -= a * u[j] for j < n: a product then a difference, each rounded
 * (no contraction), so the AVX-512 loop gives the scalar loop's bits. */
#ifdef GPTQ_X86
__attribute__((target("avx512f"))) static void axpy_sub_avx512(double *w, double a, const double *u, int64_t n)
{
	const __m512d va = _mm512_set1_pd(a);
	int64_t j = 0;
	for (; j + 8 <= n; j += 8)
		_mm512_storeu_pd(w + j, _mm512_sub_pd(_mm512_loadu_pd(w + j), _mm512_mul_pd(va, _mm512_loadu_pd(u + j))));
	for (; j < n; j++)
		w[j] -= a * u[j];
}
#endif

static void axpy_sub(double *w, double a, const double *u, int64_t n)
{
#ifdef GPTQ_X86
	if (ctq_cpu_has(CTQ_CPU_AVX512F)) {
		axpy_sub_avx512(w, a, u, n);
		return;
	}
#endif
	for (int64_t j = 0; j < n; j++)
		w[j] -= a * u[j];
}

/* GPTQ of R weight rows at once (each row's arithmetic exactly as alone:
 * the rows only share the reads of U, a K x K matrix that one row at a
 * time streamed from memory for every row). wr (R, K) f32, sc (R); w (R, K)
 * and e (R, B) scratch; q (R, K). Returns the rows' losses into loss (R). */
static void gptq_rows(const struct ctq_gptq_hinv *v, int64_t B, int R, const float *wr, const float *sc,
		      double *w, double *e, int8_t *q, double *loss)
{
	const int64_t K = v->K;
	const double *U = v->U;
	const int64_t *perm = v->perm;
	for (int r = 0; r < R; r++) {
		loss[r] = 0.0;
		for (int64_t k = 0; k < K; k++)
			w[r * K + k] = v->dead[k] ? 0.0 : (double)wr[r * K + perm[k]];
	}
	for (int64_t i1 = 0; i1 < K; i1 += B) {
		const int64_t i2 = i1 + B < K ? i1 + B : K;
		for (int64_t c = i1; c < i2; c++) {
			const double d = U[c * K + c];
			for (int r = 0; r < R; r++) {
				double *wrow = w + r * K;
				const int8_t qi = ctq_quantize((float)wrow[c], sc[r]);
				const double dq = (double)qi * (double)sc[r];
				q[r * K + perm[c]] = qi;
				const double res = wrow[c] - dq;
				loss[r] += res * res / (d * d);
				const double ec = res / d;
				e[r * B + c - i1] = ec;
				axpy_sub(wrow + c, ec, U + c * K + c, i2 - c);
			}
		}
		for (int64_t c = i1; c < i2; c++)
			for (int r = 0; r < R; r++)
				axpy_sub(w + r * K + i2, e[r * B + c - i1], U + c * K + i2, K - i2);
	}
	for (int r = 0; r < R; r++)
		loss[r] /= 2.0;
}

enum ctq_status ctq_gptq_weight(const void *w, enum ctq_dtype dtype, int64_t N, int64_t K,
				const struct ctq_gptq_hinv *v, int64_t block_size, const char *name,
				int8_t *q, void *scale, double *err2, double *norm2, double *loss,
				struct ctq_error *err)
{
	if (v->K != K || block_size < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, name,
				     "GPTQ of %lld columns with a Hessian of %lld, block size %lld",
				     (long long)K, (long long)v->K, (long long)block_size);
	/* The scales: the producer's round-to-nearest on the full weight (its
	 * q is overwritten below). */
	const int64_t bad = ctq_quantize_weight(w, dtype, N, K, q, scale, err2, norm2);
	if (bad == -2)
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	if (bad >= 0)
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				     "row %lld holds NaN or infinite values (or its scale overflows %s); refusing to quantize it",
				     (long long)bad, ctq_dtype_name(dtype));
	const size_t esz = ctq_dtype_size(dtype);
	double *row_loss = ctq_calloc((size_t)(N ? N : 1), sizeof *row_loss); /* (N) */
	bool nomem = row_loss == NULL;
	/* rows in groups of GPTQ_ROWS per task: a group reads U once */
	enum { GPTQ_ROWS = 8 };
#pragma omp parallel if (!nomem)
	{
		float *wr = ctq_malloc((size_t)K * GPTQ_ROWS * sizeof *wr);        /* (R, K) */
		double *wd = ctq_malloc((size_t)K * GPTQ_ROWS * sizeof *wd);       /* (R, K) */
		double *e = ctq_malloc((size_t)block_size * GPTQ_ROWS * sizeof *e); /* (R, block) */
		if (!wr || !wd || !e) {
#pragma omp atomic write
			nomem = true;
		}
#pragma omp for schedule(dynamic, 1)
		for (int64_t n0 = 0; n0 < N; n0 += GPTQ_ROWS) {
			if (!wr || !wd || !e)
				continue;
			const int R = N - n0 < GPTQ_ROWS ? (int)(N - n0) : GPTQ_ROWS;
			float sc[GPTQ_ROWS];
			for (int r = 0; r < R; r++) {
				ctq_convert_to_f32((const unsigned char *)w + (size_t)(n0 + r) * (size_t)K * esz, dtype,
						   (size_t)K, wr + (size_t)r * (size_t)K);
				sc[r] = ctq_float_at(scale, dtype, n0 + r);
			}
			int8_t *qr = q + (size_t)n0 * (size_t)K;
			gptq_rows(v, block_size, R, wr, sc, wd, e, qr, row_loss + n0);
			for (int r = 0; r < R; r++) {
				double e2 = 0.0;
				for (int64_t k = 0; k < K; k++) {
					const double d = (double)qr[r * K + k] * (double)sc[r] - (double)wr[r * K + k];
					e2 += d * d;
				}
				err2[n0 + r] = e2;
			}
		}
		ctq_free(wr);
		ctq_free(wd);
		ctq_free(e);
	}
	if (nomem) {
		ctq_free(row_loss);
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	}
	double sum = 0.0;
	for (int64_t n = 0; n < N; n++)
		sum += row_loss[n];
	if (loss)
		*loss = sum;
	ctq_free(row_loss);
	return CTQ_OK;
}
