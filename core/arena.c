/* ctq host arena (see arena.h). */
#include "core/arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ctq_arena_block {
	struct ctq_arena_block *next;
	size_t cap, used;
	_Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK_MIN ((size_t)64 * 1024)

static long alloc_budget = -1;

void ctq_alloc_fail_after(long n) { alloc_budget = n; }

static int alloc_allowed(void)
{
	if (alloc_budget < 0)
		return 1;
	if (alloc_budget == 0)
		return 0;
	alloc_budget--;
	return 1;
}

void *ctq_malloc(size_t n_bytes)
{
	return alloc_allowed() ? malloc(n_bytes ? n_bytes : 1) : NULL;
}

void *ctq_realloc(void *p, size_t n_bytes)
{
	return alloc_allowed() ? realloc(p, n_bytes ? n_bytes : 1) : NULL;
}

void *ctq_calloc(size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size)
		return NULL;
	return alloc_allowed() ? calloc(count ? count : 1, size ? size : 1) : NULL;
}

char *ctq_strdup(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = ctq_malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

bool ctq_grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 64;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return false;
		c *= 2;
	}
	if (elem && c > SIZE_MAX / elem)
		return false;
	void *p = ctq_realloc(*v, c * elem);
	if (!p)
		return false;
	*v = p;
	*cap = c;
	return true;
}

void ctq_free(void *p)
{
	free(p);
}

void ctq_arena_init(struct ctq_arena *a)
{
	a->head = NULL;
	a->n_bytes = 0;
}

void ctq_arena_free(struct ctq_arena *a)
{
	if (!a)
		return;
	struct ctq_arena_block *b = a->head;
	while (b) {
		struct ctq_arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
	a->n_bytes = 0;
}

void *ctq_arena_alloc(struct ctq_arena *a, size_t n_bytes)
{
	if (n_bytes > SIZE_MAX / 2)
		return NULL;
	size_t need = (n_bytes + 15) & ~(size_t)15;
	struct ctq_arena_block *b = a->head;
	if (!b || b->cap - b->used < need) {
		size_t cap = need > ARENA_BLOCK_MIN ? need : ARENA_BLOCK_MIN;
		b = ctq_malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += need;
	a->n_bytes += need;
	memset(p, 0, need);
	return p;
}

void *ctq_arena_calloc(struct ctq_arena *a, size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size)
		return NULL;
	return ctq_arena_alloc(a, count * size);
}

char *ctq_arena_strndup(struct ctq_arena *a, const char *s, size_t n)
{
	char *d = ctq_arena_alloc(a, n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *ctq_arena_strdup(struct ctq_arena *a, const char *s)
{
	return s ? ctq_arena_strndup(a, s, strlen(s)) : NULL;
}

char *ctq_arena_vprintf(struct ctq_arena *a, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	char *d = n >= 0 ? ctq_arena_alloc(a, (size_t)n + 1) : NULL;
	if (d)
		vsnprintf(d, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return d;
}

char *ctq_arena_printf(struct ctq_arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *d = ctq_arena_vprintf(a, fmt, ap);
	va_end(ap);
	return d;
}
