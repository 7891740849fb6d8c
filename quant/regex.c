/* ctq `re:` matching through PCRE2 (see regex.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "quant/regex.h"
#include "core/arena.h"

#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ctq_regex_entry {
	char *pattern;
	pcre2_code *code;       /* NULL when compilation failed */
	char compile_error[256];
	size_t error_offset;
};

void ctq_regex_cache_init(struct ctq_regex_cache *c)
{
	c->entries = NULL;
	c->n = c->cap = 0;
	c->slots = NULL;
	c->n_slots = 0;
	c->match_ctx = NULL;
	c->match_data = NULL;
	memset(c->memo_ptr, 0, sizeof c->memo_ptr);
}

void ctq_regex_cache_free(struct ctq_regex_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		pcre2_code_free(c->entries[i].code);
		free(c->entries[i].pattern);
	}
	free(c->entries);
	free(c->slots);
	pcre2_match_context_free(c->match_ctx);
	pcre2_match_data_free(c->match_data);
	ctq_regex_cache_init(c);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Rebuilds the index with room for 4x the entries (load <= 1/2). */
static bool reindex(struct ctq_regex_cache *c, size_t want)
{
	size_t n = 16;
	while (n < 4 * want)
		n *= 2;
	size_t *slots = ctq_malloc(n * sizeof *slots);
	if (!slots)
		return false;
	memset(slots, 0, n * sizeof *slots);
	for (size_t i = 0; i < c->n; i++) {
		size_t k = (size_t)hash_str(c->entries[i].pattern) & (n - 1);
		while (slots[k])
			k = (k + 1) & (n - 1);
		slots[k] = i + 1;
	}
	free(c->slots);
	c->slots = slots;
	c->n_slots = n;
	return true;
}

/* The cached entry of a pattern, compiled on first use. A config may carry
 * thousands of targets and every (target, module) pair is matched under each
 * profile: lookups go through a hash index, not a scan. */
static struct ctq_regex_entry *lookup(struct ctq_regex_cache *c,
				      const char *pattern)
{
	uint64_t h = hash_str(pattern);
	if (c->n_slots) {
		for (size_t k = (size_t)h & (c->n_slots - 1); c->slots[k];
		     k = (k + 1) & (c->n_slots - 1))
			if (!strcmp(c->entries[c->slots[k] - 1].pattern, pattern))
				return &c->entries[c->slots[k] - 1];
	}
	if (2 * (c->n + 1) >= c->n_slots && !reindex(c, c->n + 1))
		return NULL;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct ctq_regex_entry *e =
			ctq_realloc(c->entries, cap * sizeof *e);
		if (!e)
			return NULL;
		c->entries = e;
		c->cap = cap;
	}
	struct ctq_regex_entry *e = &c->entries[c->n];
	memset(e, 0, sizeof *e);
	size_t len = strlen(pattern);
	e->pattern = ctq_malloc(len + 1);
	if (!e->pattern)
		return NULL;
	memcpy(e->pattern, pattern, len + 1);
	int code;
	PCRE2_SIZE off;
	/* Python 3 str patterns are Unicode: \w, \d, \s follow Unicode
	 * properties (PCRE2_UCP). re.match anchors at the start only. */
	e->code = pcre2_compile((PCRE2_SPTR)pattern, len,
				PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &code,
				&off, NULL);
	if (!e->code) {
		pcre2_get_error_message(code, (PCRE2_UCHAR *)e->compile_error,
					sizeof e->compile_error);
		e->error_offset = off;
	} else {
		/* JIT where PCRE2 has it (same matches; the match limit still
		 * applies, deep recursion fails with PCRE2_ERROR_JIT_STACKLIMIT
		 * instead of the depth limit); the interpreter otherwise. */
		(void)pcre2_jit_compile(e->code, PCRE2_JIT_COMPLETE);
	}
	size_t k = (size_t)h & (c->n_slots - 1);
	while (c->slots[k])
		k = (k + 1) & (c->n_slots - 1);
	c->slots[k] = c->n + 1;
	c->n++;
	return e;
}

enum ctq_status ctq_regex_match(struct ctq_regex_cache *c, const char *pattern,
				const char *path, const char *subject,
				bool *matched, struct ctq_error *err)
{
	*matched = false;
	if (!c->match_ctx) {
		pcre2_match_context *mc = pcre2_match_context_create(NULL);
		if (!mc)
			return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		pcre2_set_match_limit(mc, CTQ_REGEX_MATCH_LIMIT);
		pcre2_set_depth_limit(mc, CTQ_REGEX_DEPTH_LIMIT);
		c->match_ctx = mc;
	}
	size_t slot = (size_t)(((uint64_t)(uintptr_t)pattern * 0x9E3779B97F4A7C15ull) >> 54);
	struct ctq_regex_entry *e;
	/* The string is compared too: a cache may outlive the config whose
	 * strings filled the memo, and an address can come back reused. */
	if (c->memo_ptr[slot] == pattern &&
	    !strcmp(c->entries[c->memo_entry[slot]].pattern, pattern)) {
		e = &c->entries[c->memo_entry[slot]];
	} else {
		e = lookup(c, pattern);
		if (!e)
			return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		c->memo_ptr[slot] = pattern;
		c->memo_entry[slot] = (size_t)(e - c->entries);
	}
	if (!e->code)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
				     "regex \"re:%s\" does not compile: %s at offset %zu",
				     pattern, e->compile_error, e->error_offset);
	if (!c->match_data) {
		/* Only match / no match is asked: one ovector pair suffices. */
		c->match_data = pcre2_match_data_create(1, NULL);
		if (!c->match_data)
			return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	int rc = pcre2_match(e->code, (PCRE2_SPTR)subject, strlen(subject), 0, 0,
			     c->match_data, c->match_ctx);
	if (rc >= 0) {
		*matched = true;
		return CTQ_OK;
	}
	if (rc == PCRE2_ERROR_NOMATCH)
		return CTQ_OK;
	PCRE2_UCHAR msg[256];
	pcre2_get_error_message(rc, msg, sizeof msg);
	size_t n = strlen(subject);
	return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
			     "regex \"re:%.200s\" failed on \"%.80s%s\" (%zu bytes): %s (match limit %u, depth limit %u)",
			     pattern, subject, n > 80 ? "..." : "", n,
			     (const char *)msg, CTQ_REGEX_MATCH_LIMIT,
			     CTQ_REGEX_DEPTH_LIMIT);
}
