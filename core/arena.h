/* ctq host arena: a chain of blocks from which a data structure with one
 * lifetime (a parsed config, a plan, a suite case) takes all its memory, freed
 * at once. Not thread-safe. Allocation failures return NULL; a test hook can
 * make the Nth allocation fail (ctq_alloc_fail_after).
 */
#ifndef CTQ_CORE_ARENA_H
#define CTQ_CORE_ARENA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct ctq_arena_block;

struct ctq_arena {
	struct ctq_arena_block *head;
	size_t n_bytes; /* bytes handed out, for diagnostics */
};

void ctq_arena_init(struct ctq_arena *a);
void ctq_arena_free(struct ctq_arena *a); /* idempotent; accepts zeroed */

/* Zero-filled, 16-byte aligned; NULL on exhaustion or overflow. */
void *ctq_arena_alloc(struct ctq_arena *a, size_t n_bytes);
void *ctq_arena_calloc(struct ctq_arena *a, size_t count, size_t size);
char *ctq_arena_strdup(struct ctq_arena *a, const char *s);
char *ctq_arena_strndup(struct ctq_arena *a, const char *s, size_t n);
char *ctq_arena_printf(struct ctq_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
char *ctq_arena_vprintf(struct ctq_arena *a, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Process-wide allocation hooks for tests: after n further successful
 * allocations (arena blocks and ctq_malloc), every allocation fails.
 * n < 0 disables the hook. */
void ctq_alloc_fail_after(long n);
void *ctq_malloc(size_t n_bytes);
void *ctq_realloc(void *p, size_t n_bytes);
/* Zero-filled count * size bytes; NULL on overflow or under the hook. */
void *ctq_calloc(size_t count, size_t size);
/* A copy of s (NULL: NULL) through ctq_malloc; NULL when memory runs out. */
char *ctq_strdup(const char *s);
/* Frees what ctq_malloc, ctq_calloc, ctq_realloc or ctq_strdup returned
 * (NULL: no-op). */
void ctq_free(void *p);
/* Grows the array *v of *cap elements of elem bytes (through ctq_realloc,
 * doubling from 64) until it holds need; false (v untouched) when memory
 * runs out or the size overflows. */
bool ctq_grow(void **v, size_t *cap, size_t need, size_t elem);

#endif
