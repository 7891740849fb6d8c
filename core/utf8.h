/* ctq UTF-8: validation for untrusted text (safetensors headers, GGUF
 * strings, tokenizer input): well-formed UTF-8 only — no overlong forms,
 * surrogates or code points past U+10FFFF — as JSON writers and the
 * `tokenizers` library require; and the one decoder / encoder the text
 * code uses on text already validated. Not a Unicode database. */
#ifndef CTQ_CORE_UTF8_H
#define CTQ_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when the n bytes at s are well-formed UTF-8; otherwise false with
 * *bad (if non-NULL) set to the offset of the first bad sequence. */
bool ctq_utf8_valid(const void *s, size_t n, size_t *bad);

/* Length of the maximal valid UTF-8 sequence at s[0, n), n > 0 (0 when s[0]
 * cannot start one), following the Unicode "maximal subpart" rule (what
 * U+FFFD replacement counts as one error). *complete tells whether it is a
 * whole character. */
size_t ctq_utf8_valid_prefix(const void *s, size_t n, bool *complete);

/* The helpers below take valid UTF-8 (checked by the functions above). */

/* Length of the sequence starting with lead byte c. */
static inline size_t ctq_utf8_seq_len(unsigned char c)
{
	return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* The code point at s; its length in *n_bytes. */
static inline uint32_t ctq_utf8_decode(const void *src, size_t *n_bytes)
{
	const unsigned char *s = src;
	size_t n = ctq_utf8_seq_len(s[0]);
	uint32_t cp = n == 1 ? s[0] : n == 2 ? s[0] & 0x1Fu : n == 3 ? s[0] & 0x0Fu : s[0] & 0x07u;
	for (size_t i = 1; i < n; i++)
		cp = (cp << 6) | (s[i] & 0x3Fu);
	*n_bytes = n;
	return cp;
}

/* Start of the last character of s[0, n), n > 0. */
static inline size_t ctq_utf8_last(const char *s, size_t n)
{
	size_t i = n - 1;
	while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
		i--;
	return i;
}

/* Writes code point cp (<= U+10FFFF) at dst (4 bytes of room); returns
 * the number of bytes written. */
static inline size_t ctq_utf8_encode(char *dst, uint32_t cp)
{
	if (cp < 0x80) {
		dst[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		dst[0] = (char)(0xC0 | (cp >> 6));
		dst[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		dst[0] = (char)(0xE0 | (cp >> 12));
		dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		dst[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	dst[0] = (char)(0xF0 | (cp >> 18));
	dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	dst[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

#endif
