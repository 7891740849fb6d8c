/* ctq SHA-256 (see sha256.h), written from FIPS 180-4 §4.1.2, §5.1.1,
 * §5.3.3 and §6.2. */
#define _GNU_SOURCE
#include "core/sha256.h"
#include "core/cpu.h"
#include "core/fileio.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

/* First 32 bits of the fractional parts of the cube roots of the first 64
 * primes (§4.2.2). */
static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64];
	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
		       (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
	uint32_t e = h[4], f = h[5], g = h[6], k = h[7];
	for (int t = 0; t < 64; t++) {
		uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = k + S1 + ch + K[t] + w[t];
		uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = S0 + maj;
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += k;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SHA_X86 1
#include <immintrin.h>

/* n blocks with the x86 SHA extensions (Goldmont, Ice Lake, Zen and later):
 * the same compression function, four rounds per two sha256rnds2 on the
 * state held as ABEF / CDGH, the message schedule by sha256msg1 / msg2
 * (W[t] = sigma1(W[t-2]) + W[t-7] + sigma0(W[t-15]) + W[t-16], four words a
 * step). About 5x the portable loop; tests/test_sha256.c holds both to the
 * NIST vectors and to each other. */
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_ni(uint32_t h[8], const unsigned char *p,
								    size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0xb1);   /* CDAB */
	__m128i st1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(h + 4)), 0x1b); /* EFGH */
	__m128i st0 = _mm_alignr_epi8(tmp, st1, 8);  /* ABEF */
	st1 = _mm_blend_epi16(st1, tmp, 0xf0);       /* CDGH */
	for (; n; n--, p += 64) {
		const __m128i abef = st0, cdgh = st1;
		__m128i w[4];
		for (int g = 0; g < 16; g++) {
			__m128i m;
			if (g < 4) {
				m = w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
			} else {
				/* W[g] from W[g-4] .. W[g-1], w[] indexed mod 4 */
				__m128i x = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
				x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
				m = w[g & 3] = _mm_sha256msg2_epu32(x, w[(g + 3) & 3]);
			}
			m = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)(K + 4 * g)));
			st1 = _mm_sha256rnds2_epu32(st1, st0, m);
			st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(m, 0x0e));
		}
		st0 = _mm_add_epi32(st0, abef);
		st1 = _mm_add_epi32(st1, cdgh);
	}
	tmp = _mm_shuffle_epi32(st0, 0x1b);          /* FEBA */
	st1 = _mm_shuffle_epi32(st1, 0xb1);          /* DCHG */
	_mm_storeu_si128((__m128i *)h, _mm_blend_epi16(tmp, st1, 0xf0));    /* DCBA */
	_mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(st1, tmp, 8)); /* HGFE */
}
#endif

/* ctq_sha256_portable's cap: 1 the SHA extensions where the CPU has them */
static int sha_ni_cap = 1;

int ctq_sha256_portable(int portable)
{
	__atomic_store_n(&sha_ni_cap, portable ? 0 : 1, __ATOMIC_RELAXED);
	return portable;
}

static void compress_n(uint32_t h[8], const unsigned char *p, size_t n)
{
#ifdef SHA_X86
	if (ctq_cpu_has(CTQ_CPU_SHA) && __atomic_load_n(&sha_ni_cap, __ATOMIC_RELAXED)) {
		compress_ni(h, p, n);
		return;
	}
#endif
	for (; n; n--, p += 64)
		compress(h, p);
}

void ctq_sha256_init(struct ctq_sha256 *s)
{
	static const uint32_t h0[8] = { /* §5.3.3 */
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memcpy(s->h, h0, sizeof h0);
	s->n_bytes = 0;
	s->block_len = 0;
}

void ctq_sha256_update(struct ctq_sha256 *s, const void *data, size_t n)
{
	const unsigned char *p = data;
	s->n_bytes += n;
	if (s->block_len) {
		size_t take = 64 - s->block_len < n ? 64 - s->block_len : n;
		memcpy(s->block + s->block_len, p, take);
		s->block_len += take;
		p += take;
		n -= take;
		if (s->block_len < 64)
			return;
		compress_n(s->h, s->block, 1);
		s->block_len = 0;
	}
	compress_n(s->h, p, n / 64);
	p += n / 64 * 64;
	n %= 64;
	if (n)
		memcpy(s->block, p, n);
	s->block_len = n;
}

void ctq_sha256_final(struct ctq_sha256 *s, unsigned char out[CTQ_SHA256_BYTES])
{
	/* §5.1.1: a one bit, zeros to 56 mod 64, the bit length big-endian. */
	uint64_t bits = s->n_bytes * 8;
	s->block[s->block_len++] = 0x80;
	if (s->block_len > 56) {
		memset(s->block + s->block_len, 0, 64 - s->block_len);
		compress_n(s->h, s->block, 1);
		s->block_len = 0;
	}
	memset(s->block + s->block_len, 0, 56 - s->block_len);
	for (int i = 0; i < 8; i++)
		s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	compress_n(s->h, s->block, 1);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
	s->block_len = 0;
}

void ctq_sha256(const void *data, size_t n, unsigned char out[CTQ_SHA256_BYTES])
{
	struct ctq_sha256 s;
	ctq_sha256_init(&s);
	ctq_sha256_update(&s, data, n);
	ctq_sha256_final(&s, out);
}

void ctq_sha256_hex(const unsigned char digest[CTQ_SHA256_BYTES],
		    char hex[CTQ_SHA256_HEX])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < CTQ_SHA256_BYTES; i++) {
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 0xf];
	}
	hex[2 * CTQ_SHA256_BYTES] = '\0';
}

enum ctq_status ctq_sha256_file(const char *path,
				unsigned char out[CTQ_SHA256_BYTES],
				struct ctq_error *err)
{
	int fd;
	struct stat sb;
	enum ctq_status st = ctq_file_open_regular(path, "a regular file", &fd, &sb, err);
	if (st)
		return st;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		int e = errno;
		close(fd);
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot open: %s", strerror(e));
	}
	struct ctq_sha256 s;
	ctq_sha256_init(&s);
	unsigned char buf[1 << 16];
	size_t r;
	while ((r = fread(buf, 1, sizeof buf, f)) > 0)
		ctq_sha256_update(&s, buf, r);
	if (ferror(f)) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "read failed: %s",
				   strerror(errno));
		goto done;
	}
	ctq_sha256_final(&s, out);
done:
	fclose(f);
	return st;
}
