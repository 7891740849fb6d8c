/* ctq UTF-8 validation (see utf8.h). */
#include "core/utf8.h"

bool ctq_utf8_valid(const void *data, size_t n, size_t *bad)
{
	const unsigned char *s = data;
	size_t skip;
	if (!bad)
		bad = &skip;
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		size_t len;
		unsigned lo = 0x80, hi = 0xbf;
		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			if (c == 0xe0)
				lo = 0xa0;
			else if (c == 0xed)
				hi = 0x9f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f;
		} else {
			*bad = i;
			return false;
		}
		if (n - i < len) {
			*bad = i;
			return false;
		}
		for (size_t k = 1; k < len; k++) {
			unsigned b = s[i + k];
			if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) {
				*bad = i;
				return false;
			}
		}
		i += len;
	}
	return true;
}
