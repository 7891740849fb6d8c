/* Comma-separated lists (see split.h). */
#include "core/split.h"

#include <string.h>

int ctq_split_list(const char *what, const char *s, char *buf, size_t size, const char **items, int cap,
		   struct ctq_error *err)
{
	const size_t len = strlen(s);
	if (!len) {
		ctq_error_set(err, CTQ_ERR_USAGE, what, "%s is empty; expected ENTRY[,ENTRY...]", what);
		return -1;
	}
	if (len >= size) {
		ctq_error_set(err, CTQ_ERR_USAGE, what, "%s is %zu bytes long; expected at most %zu", what,
			      len, size - 1);
		return -1;
	}
	memcpy(buf, s, len + 1);
	int n = 0;
	for (char *p = buf;; p++) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (!*p) {
			ctq_error_set(err, CTQ_ERR_USAGE, what, "%s is \"%s\"; an entry is empty", what, s);
			return -1;
		}
		if (n == cap) {
			ctq_error_set(err, CTQ_ERR_USAGE, what, "%s is \"%s\"; expected at most %d entries",
				      what, s, cap);
			return -1;
		}
		items[n++] = p;
		if (!comma)
			return n;
		p = comma;
	}
}
