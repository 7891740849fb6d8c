/* ctq growable string buffer (see strbuf.h). */
#include "core/strbuf.h"
#include "core/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctq_strbuf_init(struct ctq_strbuf *sb)
{
	sb->data = NULL;
	sb->len = sb->cap = 0;
	sb->oom = false;
}

void ctq_strbuf_free(struct ctq_strbuf *sb)
{
	if (!sb)
		return;
	free(sb->data);
	ctq_strbuf_init(sb);
}

void ctq_strbuf_reset(struct ctq_strbuf *sb)
{
	sb->len = 0;
	if (sb->data)
		sb->data[0] = '\0';
}

bool ctq_strbuf_reserve(struct ctq_strbuf *sb, size_t extra)
{
	if (sb->oom)
		return false;
	if (extra > SIZE_MAX / 2 - sb->len ||
	    !ctq_grow((void **)&sb->data, &sb->cap, sb->len + extra + 1, 1)) {
		sb->oom = true;
		return false;
	}
	return true;
}

void ctq_strbuf_appendn(struct ctq_strbuf *sb, const char *s, size_t n)
{
	if (!ctq_strbuf_reserve(sb, n))
		return;
	if (n)
		memcpy(sb->data + sb->len, s, n);
	sb->len += n;
	sb->data[sb->len] = '\0';
}

void ctq_strbuf_append(struct ctq_strbuf *sb, const char *s)
{
	ctq_strbuf_appendn(sb, s, strlen(s));
}

void ctq_strbuf_printf(struct ctq_strbuf *sb, const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n >= 0 && ctq_strbuf_reserve(sb, (size_t)n)) {
		vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
		sb->len += (size_t)n;
	}
	va_end(ap2);
}

const char *ctq_strbuf_str(const struct ctq_strbuf *sb)
{
	return sb->data ? sb->data : "";
}

long ctq_str_index(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return (long)i;
	return -1;
}
