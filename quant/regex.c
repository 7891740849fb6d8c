/* ctq `re:` matching through PCRE2 (see regex.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "quant/regex.h"
#include "core/arena.h"

#include <pcre2.h>
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
	c->match_ctx = NULL;
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
	pcre2_match_context_free(c->match_ctx);
	ctq_regex_cache_init(c);
}

static struct ctq_regex_entry *lookup(struct ctq_regex_cache *c,
				      const char *pattern)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->entries[i].pattern, pattern) == 0)
			return &c->entries[i];
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
	}
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
	struct ctq_regex_entry *e = lookup(c, pattern);
	if (!e)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	if (!e->code)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path,
				     "regex \"re:%s\" does not compile: %s at offset %zu",
				     pattern, e->compile_error, e->error_offset);
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(e->code, NULL);
	if (!md)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	int rc = pcre2_match(e->code, (PCRE2_SPTR)subject, strlen(subject), 0, 0,
			     md, c->match_ctx);
	pcre2_match_data_free(md);
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
