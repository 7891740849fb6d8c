/* A comma-separated list, as options and plan fields write them
 * (--m 1,16,64, --wna16 w4a16-g128,w8a16, --subjects a,b): the one
 * splitter, so that every list refuses the same things, says so the same
 * way, and none is cut short or skips an entry. */
#ifndef CTQ_CORE_SPLIT_H
#define CTQ_CORE_SPLIT_H

#include <stddef.h>

#include "core/status.h"

/* Copies s into buf (size bytes), cuts it at each comma and points
 * items[0..count) at the entries. The count (>= 1), or -1 with err set
 * (usage, at what, e.g. "--m"; the message is whole: "--m is \"1,,2\"; an
 * entry is empty"): an empty list or entry, more than cap entries, or s
 * longer than size - 1 bytes. */
int ctq_split_list(const char *what, const char *s, char *buf, size_t size, const char **items, int cap,
		   struct ctq_error *err);

#endif
