/* ctq Unicode NFC for the tokenizer's "NFC" normalizer (see tokenizer.h):
 * canonical decomposition, canonical ordering, canonical composition, as in
 * UAX #15, over tables generated from Python's unicodedata
 * (text/nfc_data.h, tools/gen-tokenizer-nfc.py). Hangul syllables are
 * decomposed and composed algorithmically. */
#include "text/tokenizer.h"
#include "core/arena.h"
#include "core/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct nfc_ccc_range {
	uint32_t lo, hi;
	uint8_t ccc;
};
struct nfc_decomp {
	uint32_t cp, d0, d1;
};
struct nfc_comp {
	uint32_t first, second, composite;
};
struct nfc_range {
	uint32_t lo, hi;
};

#include "text/nfc_data.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Hangul syllable arithmetic (Unicode chapter 3.12). */
#define HANGUL_S 0xAC00u
#define HANGUL_L 0x1100u
#define HANGUL_V 0x1161u
#define HANGUL_T 0x11A7u
#define HANGUL_L_COUNT 19u
#define HANGUL_V_COUNT 21u
#define HANGUL_T_COUNT 28u
#define HANGUL_N (HANGUL_V_COUNT * HANGUL_T_COUNT)
#define HANGUL_S_COUNT (HANGUL_L_COUNT * HANGUL_N)

/* bsearch comparators: a code point against a range or a table entry. */
static int cmp_ccc_range(const void *key, const void *elem)
{
	uint32_t cp = *(const uint32_t *)key;
	const struct nfc_ccc_range *r = elem;
	return cp < r->lo ? -1 : cp > r->hi;
}

static uint8_t ccc_of(uint32_t cp)
{
	if (cp < 0x300)
		return 0;
	const struct nfc_ccc_range *r =
		bsearch(&cp, nfc_ccc, N_ELEMS(nfc_ccc), sizeof nfc_ccc[0], cmp_ccc_range);
	return r ? r->ccc : 0;
}

static int cmp_range(const void *key, const void *elem)
{
	uint32_t cp = *(const uint32_t *)key;
	const struct nfc_range *r = elem;
	return cp < r->lo ? -1 : cp > r->hi;
}

static bool qc_not_yes(uint32_t cp)
{
	return bsearch(&cp, nfc_qc_not_yes, N_ELEMS(nfc_qc_not_yes), sizeof nfc_qc_not_yes[0],
		       cmp_range) != NULL;
}

static int cmp_decomp(const void *key, const void *elem)
{
	uint32_t cp = *(const uint32_t *)key;
	const struct nfc_decomp *d = elem;
	return cp < d->cp ? -1 : cp > d->cp;
}

static const struct nfc_decomp *decomp_of(uint32_t cp)
{
	return bsearch(&cp, nfc_decomp, N_ELEMS(nfc_decomp), sizeof nfc_decomp[0], cmp_decomp);
}

/* Key: the pair (first, second) as a struct nfc_comp. */
static int cmp_comp(const void *key, const void *elem)
{
	const struct nfc_comp *k = key, *c = elem;
	if (k->first != c->first)
		return k->first < c->first ? -1 : 1;
	return k->second < c->second ? -1 : k->second > c->second;
}

/* The primary composite of a + b, or 0. */
static uint32_t compose_pair(uint32_t a, uint32_t b)
{
	if (a >= HANGUL_L && a < HANGUL_L + HANGUL_L_COUNT && b >= HANGUL_V &&
	    b < HANGUL_V + HANGUL_V_COUNT)
		return HANGUL_S + ((a - HANGUL_L) * HANGUL_V_COUNT + (b - HANGUL_V)) * HANGUL_T_COUNT;
	if (a >= HANGUL_S && a < HANGUL_S + HANGUL_S_COUNT && (a - HANGUL_S) % HANGUL_T_COUNT == 0 &&
	    b > HANGUL_T && b < HANGUL_T + HANGUL_T_COUNT)
		return a + (b - HANGUL_T);
	const struct nfc_comp key = {a, b, 0};
	const struct nfc_comp *c =
		bsearch(&key, nfc_comp, N_ELEMS(nfc_comp), sizeof nfc_comp[0], cmp_comp);
	return c ? c->composite : 0;
}

/* A growable code point buffer; the first allocation failure sticks. */
struct cps {
	uint32_t *v; /* (cap) code points */
	uint8_t *ccc; /* (cap) their combining classes */
	size_t n, cap;
	bool oom;
};

static void cps_push(struct cps *c, uint32_t cp)
{
	if (c->oom)
		return;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		uint32_t *v = ctq_realloc(c->v, cap * sizeof *v);
		if (!v) {
			c->oom = true;
			return;
		}
		c->v = v;
		uint8_t *k = ctq_realloc(c->ccc, cap);
		if (!k) {
			c->oom = true;
			return;
		}
		c->ccc = k;
		c->cap = cap;
	}
	c->v[c->n] = cp;
	c->ccc[c->n] = ccc_of(cp);
	c->n++;
}

/* Full canonical decomposition of cp, appended to c. Decompositions nest at
 * most a few levels deep (the longest full decomposition is 4 code points). */
static void decompose(struct cps *c, uint32_t cp, int depth)
{
	if (cp >= HANGUL_S && cp < HANGUL_S + HANGUL_S_COUNT) {
		uint32_t s = cp - HANGUL_S;
		cps_push(c, HANGUL_L + s / HANGUL_N);
		cps_push(c, HANGUL_V + (s % HANGUL_N) / HANGUL_T_COUNT);
		if (s % HANGUL_T_COUNT)
			cps_push(c, HANGUL_T + s % HANGUL_T_COUNT);
		return;
	}
	const struct nfc_decomp *d = depth < 8 ? decomp_of(cp) : NULL;
	if (!d) {
		cps_push(c, cp);
		return;
	}
	decompose(c, d->d0, depth + 1);
	if (d->d1)
		decompose(c, d->d1, depth + 1);
}

/* Stable sort of v[lo, hi) by combining class (all non-zero): insertion sort
 * for short runs, a counting sort for long ones (Zalgo text). */
static bool reorder_run(struct cps *c, size_t lo, size_t hi)
{
	size_t n = hi - lo;
	if (n < 32) {
		for (size_t i = lo + 1; i < hi; i++)
			for (size_t j = i; j > lo && c->ccc[j - 1] > c->ccc[j]; j--) {
				uint32_t t = c->v[j];
				c->v[j] = c->v[j - 1];
				c->v[j - 1] = t;
				uint8_t k = c->ccc[j];
				c->ccc[j] = c->ccc[j - 1];
				c->ccc[j - 1] = k;
			}
		return true;
	}
	uint32_t *tmp = ctq_malloc(n * sizeof *tmp);
	if (!tmp)
		return false;
	size_t start[257] = {0};
	for (size_t i = lo; i < hi; i++)
		start[c->ccc[i] + 1]++;
	for (size_t k = 1; k < 257; k++)
		start[k] += start[k - 1];
	for (size_t i = lo; i < hi; i++)
		tmp[start[c->ccc[i]]++] = c->v[i];
	memcpy(c->v + lo, tmp, n * sizeof *tmp);
	for (size_t i = lo; i < hi; i++)
		c->ccc[i] = ccc_of(c->v[i]);
	free(tmp);
	return true;
}

/* UAX #15 quick check: true when text is certainly NFC already (every
 * character NFC_Quick_Check=Yes, combining classes in canonical order). Code
 * points below U+0300 (lead bytes below 0xCC) always pass. */
static bool is_nfc_quick(const unsigned char *s, size_t len)
{
	uint8_t last = 0;
	for (size_t i = 0; i < len;) {
		if (s[i] < 0xCC) {
			last = 0;
			i += s[i] < 0x80 ? 1 : 2;
			continue;
		}
		size_t n;
		uint32_t cp = ctq_utf8_decode(s + i, &n);
		i += n;
		uint8_t ccc = ccc_of(cp);
		if ((ccc && last > ccc) || qc_not_yes(cp))
			return false;
		last = ccc;
	}
	return true;
}

enum ctq_status ctq_tokenizer_nfc(const char *text, size_t len, char **out,
				  size_t *out_len, struct ctq_error *err)
{
	const unsigned char *s = (const unsigned char *)text;
	*out = NULL;
	*out_len = 0;
	if (is_nfc_quick(s, len)) {
		char *copy = ctq_malloc(len + 1);
		if (!copy)
			return ctq_error_set(err, CTQ_ERR_NOMEM, NULL, "out of memory (NFC of %zu bytes)", len);
		memcpy(copy, text, len);
		copy[len] = '\0';
		*out = copy;
		*out_len = len;
		return CTQ_OK;
	}

	struct cps c = {0};
	for (size_t i = 0, n; i < len && !c.oom; i += n)
		decompose(&c, ctq_utf8_decode(s + i, &n), 0);
	bool ok = !c.oom;
	for (size_t i = 0; ok && i < c.n;) {
		if (c.ccc[i] == 0) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < c.n && c.ccc[j] != 0)
			j++;
		if (j - i > 1)
			ok = reorder_run(&c, i, j);
		i = j;
	}

	/* Canonical composition (UAX #15): a character combines with the last
	 * starter unless a character of the same or higher class lies between. */
	size_t n_out = 0;
	if (ok && c.n > 0) {
		size_t starter = 0;
		uint32_t starter_cp = c.v[0];
		int last_class = c.ccc[0] ? 256 : 0;
		n_out = 1;
		for (size_t i = 1; i < c.n; i++) {
			uint32_t cp = c.v[i];
			int cls = c.ccc[i];
			uint32_t composite = compose_pair(starter_cp, cp);
			if (composite && (last_class < cls || last_class == 0)) {
				c.v[starter] = composite;
				starter_cp = composite;
				continue;
			}
			if (cls == 0) {
				starter = n_out;
				starter_cp = cp;
			}
			last_class = cls;
			c.v[n_out++] = cp;
		}
	}

	char *dst = ok ? ctq_malloc(n_out * 4 + 1) : NULL;
	if (!dst) {
		free(c.v);
		free(c.ccc);
		return ctq_error_set(err, CTQ_ERR_NOMEM, NULL, "out of memory (NFC of %zu bytes)", len);
	}
	size_t k = 0;
	for (size_t i = 0; i < n_out; i++)
		k += ctq_utf8_encode(dst + k, c.v[i]);
	dst[k] = '\0';
	free(c.v);
	free(c.ccc);
	*out = dst;
	*out_len = k;
	return CTQ_OK;
}

const char *ctq_tokenizer_nfc_unicode_version(void)
{
	return CTQ_NFC_UNICODE_VERSION;
}
