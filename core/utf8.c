/* ctq UTF-8 validation (see utf8.h). */
#include "core/utf8.h"

size_t ctq_utf8_valid_prefix(const void *src, size_t n, bool *complete)
{
	const unsigned char *s = src;
	unsigned char c = s[0];
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;
	*complete = false;
	if (c < 0x80) {
		*complete = true;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
		need = 1;
	else if (c == 0xE0) {
		need = 2;
		lo = 0xA0;
	} else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
		need = 2;
	else if (c == 0xED) {
		need = 2;
		hi = 0x9F;
	} else if (c == 0xF0) {
		need = 3;
		lo = 0x90;
	} else if (c >= 0xF1 && c <= 0xF3)
		need = 3;
	else if (c == 0xF4) {
		need = 3;
		hi = 0x8F;
	} else
		return 0;
	size_t j = 1;
	for (size_t k = 0; k < need; k++, j++) {
		if (j >= n)
			return j;
		unsigned char b = s[j];
		if (b < (k == 0 ? lo : 0x80) || b > (k == 0 ? hi : 0xBF))
			return j;
	}
	*complete = true;
	return j;
}

bool ctq_utf8_valid(const void *data, size_t n, size_t *bad)
{
	const unsigned char *s = data;
	for (size_t i = 0; i < n;) {
		bool complete;
		size_t k = ctq_utf8_valid_prefix(s + i, n - i, &complete);
		if (!complete) {
			if (bad)
				*bad = i;
			return false;
		}
		i += k;
	}
	return true;
}
