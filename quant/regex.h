/* ctq `re:` targets: Python re.match semantics (anchored at the start only,
 * no implicit end anchor) through PCRE2, with match and depth limits because
 * the patterns come from untrusted checkpoints. Compiled patterns are cached
 * per cache object; the cache is not thread-safe.
 */
#ifndef CTQ_QUANT_REGEX_H
#define CTQ_QUANT_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define CTQ_REGEX_MATCH_LIMIT 1000000u
#define CTQ_REGEX_DEPTH_LIMIT 10000u

struct ctq_regex_entry;

struct ctq_regex_cache {
	struct ctq_regex_entry *entries;
	size_t n, cap;
	size_t *slots;     /* open-addressing index: entry + 1, 0 = empty */
	size_t n_slots;    /* a power of two, > 2 n */
	void *match_ctx;   /* pcre2_match_context_8 * */
	void *match_data;  /* pcre2_match_data_8 *, one ovector pair, reused */
	/* Direct-mapped memo of pattern pointer -> entry: callers pass the
	 * same config strings again and again. */
	const char *memo_ptr[1024];
	size_t memo_entry[1024];
};

void ctq_regex_cache_init(struct ctq_regex_cache *c);
void ctq_regex_cache_free(struct ctq_regex_cache *c);

/* re.match(pattern, subject). pattern is without the "re:" prefix; path
 * names where the pattern sits (for errors). A pattern that does not compile
 * or exceeds the match limit is invalid-config at path. */
enum ctq_status ctq_regex_match(struct ctq_regex_cache *c, const char *pattern,
				const char *path, const char *subject,
				bool *matched, struct ctq_error *err);

#endif
