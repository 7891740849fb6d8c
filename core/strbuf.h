/* ctq growable string buffer for building messages, tables and files.
 * An allocation failure sticks (oom flag) and later appends are no-ops, so a
 * caller checks once at the end. Also the look-up of a name in a table of
 * names. */
#ifndef CTQ_CORE_STRBUF_H
#define CTQ_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct ctq_strbuf {
	char *data; /* NUL-terminated when len > 0 or after init */
	size_t len, cap;
	bool oom;
};

void ctq_strbuf_init(struct ctq_strbuf *sb);
void ctq_strbuf_free(struct ctq_strbuf *sb);
void ctq_strbuf_reset(struct ctq_strbuf *sb);
/* Room for extra more bytes and the NUL after them; false (and oom set)
 * when memory runs out. */
bool ctq_strbuf_reserve(struct ctq_strbuf *sb, size_t extra);
void ctq_strbuf_append(struct ctq_strbuf *sb, const char *s);
void ctq_strbuf_appendn(struct ctq_strbuf *sb, const char *s, size_t n);
void ctq_strbuf_printf(struct ctq_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The contents ("" when empty); valid until the next call. */
const char *ctq_strbuf_str(const struct ctq_strbuf *sb);

/* The index of the first of names[0..n-1] equal to s, or -1. */
long ctq_str_index(const char *s, const char *const *names, size_t n);

#endif
