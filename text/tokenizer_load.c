/* ctq tokenizer loading (see tokenizer.h): tokenizer.json (model, added
 * tokens, normalizer, pre-tokenizer, post-processor) and
 * tokenizer_config.json, validated as untrusted input. */
#include "text/tokenizer_internal.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GPT-2 regex that ByteLevel(use_regex=true) splits with. */
static const char gpt2_pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Rust regex's Unicode \w (the library's single_word check). */
static const char word_char_pattern[] =
	"[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]";

/* ---- loading ---------------------------------------------------------------- */

struct loader {
	struct ctq_tokenizer_impl *T;
	const char *file;
	struct ctq_error *err;
};

static enum ctq_status fail(struct loader *L, enum ctq_status st, const char *path,
			    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum ctq_status fail(struct loader *L, enum ctq_status st, const char *path,
			    const char *fmt, ...)
{
	char msg[CTQ_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ctq_error_set(L->err, st, path, "%s (in %s)", msg, L->file);
}

static enum ctq_status nomem(struct loader *L, const char *path)
{
	return fail(L, CTQ_ERR_NOMEM, path, "out of memory");
}

static void key_path(char *dst, const char *base, const char *key)
{
	ctq_json_path_key(dst, CTQ_PATH_MAX, base, key);
}

static void index_path(char *dst, const char *base, size_t i)
{
	ctq_json_path_index(dst, CTQ_PATH_MAX, base, i);
}

/* obj.key into *out when it is present, not null and of the kind is()
 * accepts (expected names that kind for the error); NULL otherwise. */
static enum ctq_status get_kind(struct loader *L, const cJSON *obj, const char *base,
				const char *key, cJSON_bool (*is)(const cJSON *),
				const char *expected, const cJSON **out)
{
	const cJSON *v = ctq_json_get(obj, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return CTQ_OK;
	if (!is(v)) {
		char p[CTQ_PATH_MAX];
		key_path(p, base, key);
		return fail(L, CTQ_ERR_INVALID_CONFIG, p, "is %s; expected %s",
			    ctq_json_type_name(v), expected);
	}
	*out = v;
	return CTQ_OK;
}

/* obj.key as a bool: absent or null gives dflt. */
static enum ctq_status get_bool(struct loader *L, const cJSON *obj, const char *base,
				const char *key, bool dflt, bool *out)
{
	const cJSON *v;
	enum ctq_status st = get_kind(L, obj, base, key, cJSON_IsBool, "true or false", &v);
	*out = v ? cJSON_IsTrue(v) : dflt;
	return st;
}

/* obj.key as a string, or NULL when absent or null. */
static enum ctq_status get_string(struct loader *L, const cJSON *obj, const char *base,
				  const char *key, const char **out)
{
	const cJSON *v;
	enum ctq_status st = get_kind(L, obj, base, key, cJSON_IsString, "a string", &v);
	*out = v ? v->valuestring : NULL;
	return st;
}

/* The "type" of a component object. */
static enum ctq_status get_type(struct loader *L, const cJSON *obj, const char *base,
				const char **type)
{
	char p[CTQ_PATH_MAX];
	key_path(p, base, "type");
	if (!cJSON_IsObject(obj))
		return fail(L, CTQ_ERR_INVALID_CONFIG, base, "is %s; expected an object",
			    ctq_json_type_name(obj));
	const cJSON *v = ctq_json_get(obj, "type");
	if (!cJSON_IsString(v))
		return fail(L, CTQ_ERR_INVALID_CONFIG, p, "is %s; expected a string",
			    ctq_json_type_name(v));
	*type = v->valuestring;
	return CTQ_OK;
}

/* True when PCRE2 knows name as a script (\p{sc:name}). */
static bool is_script_name(const char *name, size_t n)
{
	char buf[96];
	if (n == 0 || n > 64 || memchr(name, ':', n) || memchr(name, '=', n) || name[0] == '^')
		return false;
	int len = snprintf(buf, sizeof buf, "\\p{sc:%.*s}", (int)n, name);
	int code;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)buf, (size_t)len, PCRE2_UTF | PCRE2_UCP, &code,
				       &off, NULL);
	pcre2_code_free(re);
	return re != NULL;
}

/* Makes PCRE2 read a pattern as Oniguruma does (outside \Q...\E):
 *   \s, \S    -> \p{White_Space}, \P{White_Space} (PCRE2's \s also takes U+180E);
 *   \p{Han}   -> \p{sc:Han}: Oniguruma's script classes are the Script
 *               property, PCRE2's plain form is Script_Extensions (which puts
 *               U+3001 and U+3002 in Han).
 * Everything else is passed through. */
static char *rewrite_pattern(const char *p, size_t n, size_t *out_len)
{
	struct ctq_strbuf b = {0};
	for (size_t i = 0; i < n;) {
		if (p[i] != '\\' || i + 1 >= n) {
			ctq_strbuf_appendn(&b, p + i, 1);
			i++;
			continue;
		}
		char c = p[i + 1];
		const char *close = (c == 'p' || c == 'P') && i + 2 < n && p[i + 2] == '{'
					    ? memchr(p + i + 3, '}', n - i - 3)
					    : NULL;
		if (close && is_script_name(p + i + 3, (size_t)(close - (p + i + 3)))) {
			ctq_strbuf_appendn(&b, p + i, 3);
			ctq_strbuf_appendn(&b, "sc:", 3);
			ctq_strbuf_appendn(&b, p + i + 3, (size_t)(close - (p + i + 3)) + 1);
			i = (size_t)(close - p) + 1;
			continue;
		}
		if (c == 's')
			ctq_strbuf_appendn(&b, "\\p{White_Space}", 15);
		else if (c == 'S')
			ctq_strbuf_appendn(&b, "\\P{White_Space}", 15);
		else if (c == 'Q') {
			size_t j = i + 2;
			while (j < n && !(p[j] == '\\' && j + 1 < n && p[j + 1] == 'E'))
				j++;
			j = j < n ? j + 2 : n;
			ctq_strbuf_appendn(&b, p + i, j - i);
			i = j;
			continue;
		} else
			ctq_strbuf_appendn(&b, p + i, 2);
		i += 2;
	}
	ctq_strbuf_appendn(&b, "", 0);
	if (b.oom) {
		free(b.data);
		return NULL;
	}
	*out_len = b.len;
	return b.data;
}

static enum ctq_status compile_regex(struct loader *L, const char *pattern, const char *path,
				     pcre2_code **out)
{
	size_t n;
	char *rewritten = rewrite_pattern(pattern, strlen(pattern), &n);
	if (!rewritten)
		return nomem(L, path);
	int code;
	PCRE2_SIZE off;
	/* UTF + UCP: \p{L}, case folding and classes are Unicode, as in
	 * Oniguruma; MULTILINE: ^ and $ are line anchors, as in Oniguruma;
	 * NEVER_BACKSLASH_C: no match may end inside a character. */
	*out = pcre2_compile((PCRE2_SPTR)rewritten, n,
			     PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE | PCRE2_NEVER_BACKSLASH_C,
			     &code, &off, NULL);
	free(rewritten);
	if (!*out) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(code, msg, sizeof msg);
		if (code == PCRE2_ERROR_NOMEMORY)
			return nomem(L, path);
		return fail(L, CTQ_ERR_INVALID_CONFIG, path,
			    "regex \"%.200s\" does not compile: %s (near offset %zu)", pattern,
			    (const char *)msg, (size_t)off);
	}
	return CTQ_OK;
}

static enum ctq_status add_step(struct loader *L, const struct pre_step *s, const char *path)
{
	struct ctq_tokenizer_impl *T = L->T;
	struct pre_step *v = ctq_realloc(T->steps, (T->n_steps + 1) * sizeof *v);
	if (!v)
		return nomem(L, path);
	T->steps = v;
	T->steps[T->n_steps++] = *s;
	return CTQ_OK;
}

/* A Sequence: node[key] must be an array; fn loads each item at
 * path.key[i], one level deeper. */
typedef enum ctq_status (*item_loader)(struct loader *L, const cJSON *item, const char *path,
				       int depth, void *ctx);

static enum ctq_status load_sequence(struct loader *L, const cJSON *node, const char *path,
				     const char *key, int depth, item_loader fn, void *ctx)
{
	char p[CTQ_PATH_MAX];
	const cJSON *list = ctq_json_get(node, key);
	key_path(p, path, key);
	if (!cJSON_IsArray(list))
		return fail(L, CTQ_ERR_INVALID_CONFIG, p, "is %s; expected an array",
			    ctq_json_type_name(list));
	size_t i = 0;
	for (const cJSON *c = list->child; c; c = c->next, i++) {
		char q[CTQ_PATH_MAX];
		index_path(q, p, i);
		enum ctq_status st = fn(L, c, q, depth + 1, ctx);
		if (st)
			return st;
	}
	return CTQ_OK;
}

/* An item_loader; ctx: bool *, set when a ByteLevel step is seen. */
static enum ctq_status load_pre_tokenizer(struct loader *L, const cJSON *node, const char *path,
					  int depth, void *ctx)
{
	bool *has_byte_level = ctx;
	const char *type;
	char p[CTQ_PATH_MAX];
	enum ctq_status st = get_type(L, node, path, &type);
	if (st)
		return st;
	if (depth > MAX_NESTING)
		return fail(L, CTQ_ERR_INVALID_CONFIG, path,
			    "pre-tokenizer Sequences nested deeper than %d", MAX_NESTING);
	if (strcmp(type, "Sequence") == 0)
		return load_sequence(L, node, path, "pretokenizers", depth, load_pre_tokenizer,
				     has_byte_level);
	struct pre_step s = {.kind = STEP_SPLIT, .behavior = SPLIT_ISOLATED};
	if (strcmp(type, "ByteLevel") == 0) {
		bool use_regex;
		s.kind = STEP_BYTE_LEVEL;
		if ((st = get_bool(L, node, path, "add_prefix_space", true, &s.add_prefix_space)) ||
		    (st = get_bool(L, node, path, "use_regex", true, &use_regex)))
			return st;
		if (use_regex) {
			key_path(p, path, "use_regex");
			if ((st = compile_regex(L, gpt2_pattern, p, &s.re)))
				return st;
		}
		*has_byte_level = true;
	} else if (strcmp(type, "Digits") == 0) {
		bool individual;
		if ((st = get_bool(L, node, path, "individual_digits", false, &individual)))
			return st;
		key_path(p, path, "individual_digits");
		if ((st = compile_regex(L, individual ? "\\p{N}" : "\\p{N}+", p, &s.re)))
			return st;
	} else if (strcmp(type, "Split") == 0) {
		static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
						    "MergedWithNext", "Contiguous"};
		const char *behavior;
		if ((st = get_string(L, node, path, "behavior", &behavior)) ||
		    (st = get_bool(L, node, path, "invert", false, &s.invert)))
			return st;
		key_path(p, path, "behavior");
		size_t k = 0;
		while (behavior && k < 5 && strcmp(behavior, names[k]) != 0)
			k++;
		if (!behavior || k == 5)
			return fail(L, CTQ_ERR_INVALID_CONFIG, p,
				    "is %s%s%s; expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous",
				    behavior ? "\"" : "missing", behavior ? behavior : "",
				    behavior ? "\"" : "");
		s.behavior = (enum split_behavior)k;
		const cJSON *pat = ctq_json_get(node, "pattern");
		key_path(p, path, "pattern");
		const cJSON *str = ctq_json_get(pat, "String"), *re = ctq_json_get(pat, "Regex");
		if (!cJSON_IsObject(pat) || cJSON_GetArraySize(pat) != 1 ||
		    !(cJSON_IsString(str) || cJSON_IsString(re)))
			return fail(L, CTQ_ERR_INVALID_CONFIG, p,
				    "is %s; expected {\"String\": ...} or {\"Regex\": ...}",
				    ctq_json_type_name(pat));
		if (re) {
			char q[CTQ_PATH_MAX];
			key_path(q, p, "Regex");
			if ((st = compile_regex(L, re->valuestring, q, &s.re)))
				return st;
		} else {
			s.literal_len = strlen(str->valuestring);
			s.literal = ctq_arena_strdup(&L->T->arena, str->valuestring);
			if (!s.literal)
				return nomem(L, p);
		}
	} else {
		key_path(p, path, "type");
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, p,
			    "is \"%s\"; supported pre-tokenizers: ByteLevel, Split, Digits, Sequence",
			    type);
	}
	st = add_step(L, &s, path);
	if (st)
		pcre2_code_free(s.re);
	return st;
}

/* Stores text as the token of id (copied into the arena). */
static enum ctq_status set_token(struct loader *L, int32_t id, const char *text, size_t n,
				 const char *path)
{
	char *copy = ctq_arena_strndup(&L->T->arena, text, n);
	if (!copy)
		return nomem(L, path);
	L->T->tok[id] = copy;
	L->T->tok_len[id] = (uint32_t)n;
	return CTQ_OK;
}

static enum ctq_status load_vocab(struct loader *L, const cJSON *vocab, size_t n_added_max)
{
	struct ctq_tokenizer_impl *T = L->T;
	if (!cJSON_IsObject(vocab))
		return fail(L, CTQ_ERR_INVALID_CONFIG, "model.vocab", "is %s; expected an object",
			    ctq_json_type_name(vocab));
	size_t n = (size_t)cJSON_GetArraySize(vocab);
	if (n == 0 || n + n_added_max > (size_t)CTQ_TOKENIZER_MAX_IDS)
		return fail(L, CTQ_ERR_INVALID_CONFIG, "model.vocab",
			    "holds %zu tokens (and %zu added tokens); expected 1 to %ld in all", n,
			    n_added_max, CTQ_TOKENIZER_MAX_IDS);
	size_t cap = n + n_added_max;
	T->tok = ctq_malloc(cap * sizeof *T->tok);
	T->tok_len = ctq_malloc(cap * sizeof *T->tok_len);
	T->special = ctq_malloc(cap);
	if (!T->tok || !T->tok_len || !T->special || !ctq_tok_str_index_init(&T->index, cap))
		return nomem(L, "model.vocab");
	memset(T->tok, 0, cap * sizeof *T->tok);
	memset(T->special, 0, cap);
	T->n_model = T->n_ids = n;
	for (const cJSON *c = vocab->child; c; c = c->next) {
		long id;
		size_t len = strlen(c->string);
		enum { ENTRY_OK, BAD_ID, REPEATED_ID, BAD_UTF8 } problem = ENTRY_OK;
		if (ctq_json_int(c, "model.vocab", 0, (long)n - 1, &id, NULL))
			problem = BAD_ID;
		else if (T->tok[id])
			problem = REPEATED_ID;
		else if (!ctq_utf8_valid(c->string, len, NULL))
			problem = BAD_UTF8;
		if (problem != ENTRY_OK) {
			/* An entry's path is formatted only for its error. */
			char p[CTQ_PATH_MAX];
			key_path(p, "model.vocab", c->string);
			if (problem == BAD_ID)
				return fail(L, CTQ_ERR_INVALID_CONFIG, p,
					    "is %s; the vocab holds %zu tokens, so ids are integers in [0, %zu)",
					    cJSON_IsNumber(c) ? "out of range" : ctq_json_type_name(c), n,
					    n);
			if (problem == REPEATED_ID)
				return fail(L, CTQ_ERR_INVALID_CONFIG, p,
					    "id %ld is also the id of \"%.100s\"; each id must be used once",
					    id, T->tok[id]);
			return fail(L, CTQ_ERR_INVALID_CONFIG, p, "token is not valid UTF-8");
		}
		enum ctq_status st = set_token(L, (int32_t)id, c->string, len, "model.vocab");
		if (st)
			return st;
		if (ctq_tok_str_index_insert(T, (int32_t)id) >= 0) {
			char p[CTQ_PATH_MAX];
			key_path(p, "model.vocab", c->string);
			return fail(L, CTQ_ERR_INVALID_CONFIG, p,
				    "token appears twice in the vocab (a NUL inside a token?)");
		}
	}
	return CTQ_OK;
}

/* One merge: "a b" (legacy) or ["a", "b"]. */
static enum ctq_status load_merge(struct loader *L, const cJSON *m, const char *p, bool legacy,
				  int32_t rank, struct ctq_strbuf *scratch)
{
	struct ctq_tokenizer_impl *T = L->T;
	const char *a, *b;
	size_t na, nb;
	if (legacy) {
		if (!cJSON_IsString(m))
			return fail(L, CTQ_ERR_INVALID_CONFIG, p,
				    "is %s; expected a string \"a b\" like the merges before it",
				    ctq_json_type_name(m));
		const char *s = m->valuestring;
		const char *sp = strchr(s, ' ');
		if (!sp || strchr(sp + 1, ' '))
			return fail(L, CTQ_ERR_INVALID_CONFIG, p,
				    "is \"%.100s\"; expected two tokens separated by one space", s);
		a = s;
		na = (size_t)(sp - s);
		b = sp + 1;
		nb = strlen(b);
	} else {
		if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) != 2 || !cJSON_IsString(m->child) ||
		    !cJSON_IsString(m->child->next))
			return fail(L, CTQ_ERR_INVALID_CONFIG, p,
				    "is %s; expected a pair [\"a\", \"b\"] like the merges before it",
				    ctq_json_type_name(m));
		a = m->child->valuestring;
		na = strlen(a);
		b = m->child->next->valuestring;
		nb = strlen(b);
	}
	int32_t ia = ctq_tok_str_index_find(T, a, na), ib = ctq_tok_str_index_find(T, b, nb);
	scratch->len = 0;
	ctq_strbuf_appendn(scratch, a, na);
	ctq_strbuf_appendn(scratch, b, nb);
	if (scratch->oom)
		return nomem(L, p);
	int32_t im = ctq_tok_str_index_find(T, scratch->data, scratch->len);
	const char *missing = NULL;
	size_t nmissing = 0;
	if (ia < 0 || (size_t)ia >= T->n_model) {
		missing = a;
		nmissing = na;
	} else if (ib < 0 || (size_t)ib >= T->n_model) {
		missing = b;
		nmissing = nb;
	} else if (im < 0 || (size_t)im >= T->n_model) {
		missing = scratch->data;
		nmissing = scratch->len;
	}
	if (missing)
		return fail(L, CTQ_ERR_INVALID_CONFIG, p,
			    "merge of \"%.*s\" and \"%.*s\" needs \"%.*s\", which is not in model.vocab",
			    (int)(na > 100 ? 100 : na), a, (int)(nb > 100 ? 100 : nb), b,
			    (int)(nmissing > 200 ? 200 : nmissing), missing);
	ctq_tok_merge_index_put(&T->merges, ia, ib, rank, im);
	return CTQ_OK;
}

static enum ctq_status load_model(struct loader *L, const cJSON *model, size_t n_added_max)
{
	struct ctq_tokenizer_impl *T = L->T;
	const char *type, *s;
	enum ctq_status st = get_type(L, model, "model", &type);
	if (st)
		return st;
	if (strcmp(type, "BPE") != 0)
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, "model.type",
			    "is \"%s\"; only BPE models are supported", type);
	const cJSON *dropout = ctq_json_get(model, "dropout");
	if (dropout && !cJSON_IsNull(dropout) &&
	    !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0.0))
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, "model.dropout",
			    "is %s; BPE dropout is not supported (expected null)",
			    ctq_json_type_name(dropout));
	bool byte_fallback;
	if ((st = get_bool(L, model, "model", "byte_fallback", false, &byte_fallback)) ||
	    (st = get_bool(L, model, "model", "fuse_unk", false, &T->fuse_unk)) ||
	    (st = get_bool(L, model, "model", "ignore_merges", false, &T->ignore_merges)))
		return st;
	if (byte_fallback)
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, "model.byte_fallback",
			    "is true; byte_fallback is not supported");
	static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
	for (int k = 0; k < 2; k++) {
		if ((st = get_string(L, model, "model", affixes[k], &s)))
			return st;
		if (s && *s) {
			char p[CTQ_PATH_MAX];
			key_path(p, "model", affixes[k]);
			return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, p,
				    "is \"%.100s\"; only null or \"\" is supported", s);
		}
	}
	if ((st = load_vocab(L, ctq_json_get(model, "vocab"), n_added_max)))
		return st;

	T->unk_id = -1;
	if ((st = get_string(L, model, "model", "unk_token", &s)))
		return st;
	if (s) {
		T->unk_id = ctq_tok_str_index_find(T, s, strlen(s));
		if (T->unk_id < 0)
			return fail(L, CTQ_ERR_INVALID_CONFIG, "model.unk_token",
				    "is \"%.100s\", which is not in model.vocab", s);
	}

	const cJSON *merges = ctq_json_get(model, "merges");
	if (!merges || cJSON_IsNull(merges))
		return ctq_tok_merge_index_init(&T->merges, 0) ? CTQ_OK : nomem(L, "model.merges");
	if (!cJSON_IsArray(merges))
		return fail(L, CTQ_ERR_INVALID_CONFIG, "model.merges", "is %s; expected an array",
			    ctq_json_type_name(merges));
	size_t n = (size_t)cJSON_GetArraySize(merges);
	if (n > (size_t)INT32_MAX)
		return fail(L, CTQ_ERR_INVALID_CONFIG, "model.merges", "holds too many merges");
	if (!ctq_tok_merge_index_init(&T->merges, n))
		return nomem(L, "model.merges");
	bool legacy = n > 0 && cJSON_IsString(merges->child);
	struct ctq_strbuf scratch = {0};
	int32_t rank = 0;
	size_t i = 0;
	for (const cJSON *m = merges->child; m; m = m->next, i++) {
		/* The library drops "#version" lines of merges.txt; they take no rank. */
		if (legacy && cJSON_IsString(m) && strncmp(m->valuestring, "#version", 8) == 0)
			continue;
		char p[CTQ_PATH_MAX];
		index_path(p, "model.merges", i);
		if ((st = load_merge(L, m, p, legacy, rank++, &scratch)))
			break;
	}
	free(scratch.data);
	return st;
}

static int cmp_match_order(const void *pa, const void *pb, const struct added_token *added)
{
	const struct added_token *a = &added[*(const size_t *)pa], *b = &added[*(const size_t *)pb];
	unsigned char fa = (unsigned char)a->pattern[0], fb = (unsigned char)b->pattern[0];
	if (fa != fb)
		return fa < fb ? -1 : 1;
	if (a->pattern_len != b->pattern_len)
		return a->pattern_len > b->pattern_len ? -1 : 1;
	size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
	return ia < ib ? -1 : ia > ib;
}

/* Insertion sort (the sets are small: tens to a few hundred tokens); qsort
 * has no context argument in C11. */
static bool build_match_set(struct ctq_tokenizer_impl *T, struct match_set *set,
			    bool normalized)
{
	size_t n = 0;
	for (size_t i = 0; i < T->n_added; i++)
		n += (!T->added[i].special && T->added[i].normalized) == normalized;
	set->order = ctq_malloc((n ? n : 1) * sizeof *set->order);
	if (!set->order)
		return false;
	set->n = 0;
	/* The library's order: special tokens first, then the others. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < T->n_added; i++) {
			const struct added_token *a = &T->added[i];
			if ((!a->special && a->normalized) == normalized && a->special == (pass == 0))
				set->order[set->n++] = i;
		}
	for (size_t i = 1; i < set->n; i++)
		for (size_t j = i; j > 0 && cmp_match_order(&set->order[j - 1], &set->order[j],
							    T->added) > 0; j--) {
			size_t t = set->order[j];
			set->order[j] = set->order[j - 1];
			set->order[j - 1] = t;
		}
	size_t k = 0;
	for (int b = 0; b < 256; b++) {
		set->first[b] = k;
		while (k < set->n && (unsigned char)T->added[set->order[k]].pattern[0] == b)
			k++;
	}
	set->first[256] = k;
	return true;
}

static enum ctq_status load_added_tokens(struct loader *L, const cJSON *list)
{
	struct ctq_tokenizer_impl *T = L->T;
	enum ctq_status st = CTQ_OK;
	size_t n = list ? (size_t)cJSON_GetArraySize(list) : 0;
	T->added = ctq_arena_calloc(&T->arena, n ? n : 1, sizeof *T->added);
	if (!T->added)
		return nomem(L, "added_tokens");
	/* Which added token each id already belongs to, to reject repeats. */
	int32_t *owner = ctq_malloc((T->n_model + n + 1) * sizeof *owner);
	if (!owner)
		return nomem(L, "added_tokens");
	memset(owner, 0xFF, (T->n_model + n + 1) * sizeof *owner);
	size_t i = 0;
	for (const cJSON *c = list ? list->child : NULL; c; c = c->next, i++) {
		char p[CTQ_PATH_MAX], q[CTQ_PATH_MAX];
		index_path(p, "added_tokens", i);
		struct added_token *a = &T->added[i];
		if (!cJSON_IsObject(c)) {
			st = fail(L, CTQ_ERR_INVALID_CONFIG, p, "is %s; expected an object",
				  ctq_json_type_name(c));
			break;
		}
		const char *content;
		long id;
		const cJSON *idv = ctq_json_get(c, "id");
		key_path(q, p, "id");
		if (ctq_json_int(idv, q, 0, CTQ_TOKENIZER_MAX_IDS - 1, &id, NULL)) {
			st = fail(L, CTQ_ERR_INVALID_CONFIG, q,
				  "is %s; expected an integer id in [0, %ld)",
				  cJSON_IsNumber(idv) ? "out of range" : ctq_json_type_name(idv),
				  CTQ_TOKENIZER_MAX_IDS);
			break;
		}
		if ((st = get_string(L, c, p, "content", &content)) ||
		    (st = get_bool(L, c, p, "special", false, &a->special)) ||
		    (st = get_bool(L, c, p, "single_word", false, &a->single_word)) ||
		    (st = get_bool(L, c, p, "lstrip", false, &a->lstrip)) ||
		    (st = get_bool(L, c, p, "rstrip", false, &a->rstrip)) ||
		    (st = get_bool(L, c, p, "normalized", true, &a->normalized)))
			break;
		key_path(q, p, "content");
		if (!content || !*content) {
			st = fail(L, CTQ_ERR_INVALID_CONFIG, q, "is %s; expected a non-empty string",
				  content ? "empty" : "missing");
			break;
		}
		size_t len = strlen(content);
		if (!ctq_utf8_valid(content, len, NULL)) {
			st = fail(L, CTQ_ERR_INVALID_CONFIG, q, "is not valid UTF-8");
			break;
		}
		/* The library keeps the vocab's id for a content the vocab holds and
		 * numbers the others after the vocab, in file order. */
		int32_t known = ctq_tok_str_index_find(T, content, len);
		int32_t expect = known >= 0 ? known : (int32_t)T->n_ids;
		if (known >= 0 && owner[known] >= 0) {
			st = fail(L, CTQ_ERR_INVALID_CONFIG, q,
				  "\"%.100s\" is already added_tokens[%d]", content, owner[known]);
			break;
		}
		if (id != expect) {
			key_path(q, p, "id");
			st = fail(L, CTQ_ERR_INVALID_CONFIG, q,
				  "is %ld, but the tokenizers library gives \"%.100s\" id %d (%s)", id,
				  content, expect,
				  known >= 0 ? "its id in model.vocab"
					     : "added tokens outside the vocab are numbered after it, in order");
			break;
		}
		if (known < 0) {
			if ((st = set_token(L, expect, content, len, q)))
				break;
			ctq_tok_str_index_insert(T, expect);
			T->n_ids++;
		}
		owner[expect] = (int32_t)i;
		a->content = T->tok[expect];
		a->len = len;
		a->id = expect;
		T->special[expect] = a->special;
		T->n_added++;
	}
	free(owner);
	return st;
}

/* NFC of the normalized added tokens' contents: they are matched against
 * normalized text. */
static enum ctq_status prepare_added_patterns(struct loader *L)
{
	struct ctq_tokenizer_impl *T = L->T;
	for (size_t i = 0; i < T->n_added; i++) {
		struct added_token *a = &T->added[i];
		a->pattern = a->content;
		a->pattern_len = a->len;
		if (!a->normalized || a->special || !T->nfc)
			continue;
		char *nfc;
		size_t n;
		if (ctq_tokenizer_nfc(a->content, a->len, &nfc, &n, NULL))
			return nomem(L, "added_tokens");
		a->pattern = ctq_arena_strndup(&T->arena, nfc, n);
		a->pattern_len = n;
		free(nfc);
		if (!a->pattern)
			return nomem(L, "added_tokens");
		if (n == 0) /* NFC never empties a non-empty string; keep the guard */
			return fail(L, CTQ_ERR_INVALID_CONFIG, "added_tokens",
				    "an added token normalizes to nothing");
	}
	if (!build_match_set(T, &T->raw_set, false) || !build_match_set(T, &T->normalized_set, true))
		return nomem(L, "added_tokens");
	return CTQ_OK;
}

/* TemplateProcessing's `single` template: ids before and after $A. */
static enum ctq_status load_template(struct loader *L, const cJSON *node, const char *path)
{
	struct ctq_tokenizer_impl *T = L->T;
	char p[CTQ_PATH_MAX];
	const cJSON *single = ctq_json_get(node, "single");
	const cJSON *specials = ctq_json_get(node, "special_tokens");
	key_path(p, path, "single");
	if (!cJSON_IsArray(single))
		return fail(L, CTQ_ERR_INVALID_CONFIG, p, "is %s; expected an array",
			    ctq_json_type_name(single));
	if (T->n_prefix || T->n_suffix)
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, path,
			    "a second TemplateProcessing; only one is supported");
	bool seen_a = false;
	size_t i = 0;
	for (const cJSON *item = single->child; item; item = item->next, i++) {
		char q[CTQ_PATH_MAX], r[CTQ_PATH_MAX];
		index_path(q, p, i);
		const cJSON *seq = ctq_json_get(item, "Sequence");
		const cJSON *sp = ctq_json_get(item, "SpecialToken");
		if (!cJSON_IsObject(item) || cJSON_GetArraySize(item) != 1 || !(seq || sp))
			return fail(L, CTQ_ERR_INVALID_CONFIG, q,
				    "expected {\"SpecialToken\": {...}} or {\"Sequence\": {...}}");
		const char *name;
		char id_path[CTQ_PATH_MAX];
		key_path(r, q, seq ? "Sequence" : "SpecialToken");
		enum ctq_status st = get_string(L, seq ? seq : sp, r, "id", &name);
		if (st)
			return st;
		key_path(id_path, r, "id");
		if (!name)
			return fail(L, CTQ_ERR_INVALID_CONFIG, id_path, "is missing; expected a string");
		if (seq) {
			if (strcmp(name, "A") != 0 || seen_a)
				return fail(L, CTQ_ERR_INVALID_CONFIG, id_path,
					    "is \"%s\"; the single template holds sequence \"A\" once",
					    name);
			seen_a = true;
			continue;
		}
		const cJSON *entry = ctq_json_get(specials, name);
		char sp_path[CTQ_PATH_MAX], entry_path[CTQ_PATH_MAX], s[CTQ_PATH_MAX];
		key_path(sp_path, path, "special_tokens");
		key_path(entry_path, sp_path, name);
		const cJSON *ids = ctq_json_get(entry, "ids");
		if (!cJSON_IsArray(ids))
			return fail(L, CTQ_ERR_INVALID_CONFIG, entry_path,
				    "special token \"%s\" of the template has no \"ids\" array", name);
		key_path(s, entry_path, "ids");
		size_t k = 0;
		for (const cJSON *v = ids->child; v; v = v->next, k++) {
			char t[CTQ_PATH_MAX];
			index_path(t, s, k);
			long id;
			if (ctq_json_int(v, t, 0, (long)T->n_ids - 1, &id, NULL))
				return fail(L, CTQ_ERR_INVALID_CONFIG, t,
					    "is not a token id (the tokenizer has ids [0, %zu))",
					    T->n_ids);
			size_t *count = seen_a ? &T->n_suffix : &T->n_prefix;
			int32_t *dst = seen_a ? T->suffix : T->prefix;
			if (*count == MAX_TEMPLATE_IDS)
				return fail(L, CTQ_ERR_INVALID_CONFIG, p,
					    "adds more than %d ids", MAX_TEMPLATE_IDS);
			dst[(*count)++] = (int32_t)id;
		}
	}
	if (!seen_a)
		return fail(L, CTQ_ERR_INVALID_CONFIG, p, "has no {\"Sequence\": {\"id\": \"A\"}}");
	return CTQ_OK;
}

/* A normalizer of type "NFC". */
static enum ctq_status load_nfc(struct loader *L, const cJSON *node, const char *path)
{
	(void)node;
	(void)path;
	L->T->nfc = true;
	return CTQ_OK;
}

/* An optional component of tokenizer.json: the types ctq implements, each
 * with its loader (NULL: nothing to load), or a Sequence of them under
 * seq_key; supported lists them for the error. */
struct component {
	const char *seq_key, *supported;
	struct {
		const char *type;
		enum ctq_status (*load)(struct loader *L, const cJSON *node, const char *path);
	} types[2];
};

static const struct component normalizer = {
	"normalizers", "normalizers: NFC and a Sequence of NFC", {{"NFC", load_nfc}}};
static const struct component post_processor = {
	"processors", "post-processors: ByteLevel, TemplateProcessing, Sequence",
	{{"ByteLevel", NULL /* offsets only */}, {"TemplateProcessing", load_template}}};

/* An item_loader; ctx: its struct component. An absent or null node is no
 * component. */
static enum ctq_status load_component(struct loader *L, const cJSON *node, const char *path,
				      int depth, void *ctx)
{
	const struct component *c = ctx;
	if (!node || cJSON_IsNull(node))
		return CTQ_OK;
	const char *type;
	enum ctq_status st = get_type(L, node, path, &type);
	if (st)
		return st;
	for (size_t i = 0; i < sizeof c->types / sizeof c->types[0] && c->types[i].type; i++)
		if (strcmp(type, c->types[i].type) == 0)
			return c->types[i].load ? c->types[i].load(L, node, path) : CTQ_OK;
	if (strcmp(type, "Sequence") == 0 && depth < MAX_NESTING)
		return load_sequence(L, node, path, c->seq_key, depth, load_component, ctx);
	char p[CTQ_PATH_MAX];
	key_path(p, path, "type");
	return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, p, "is \"%s\"; supported %s", type, c->supported);
}

static enum ctq_status load_root(struct loader *L, const cJSON *root)
{
	enum ctq_status st;
	const char *s;
	if (!cJSON_IsObject(root))
		return fail(L, CTQ_ERR_INVALID_CONFIG, "", "the file holds %s; expected an object",
			    ctq_json_type_name(root));
	if ((st = get_string(L, root, "", "version", &s)))
		return st;
	if (s && strcmp(s, "1.0") != 0)
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, "version",
			    "is \"%.50s\"; expected \"1.0\"", s);
	static const char *const unsupported[] = {"truncation", "padding"};
	for (int k = 0; k < 2; k++) {
		const cJSON *v = ctq_json_get(root, unsupported[k]);
		if (v && !cJSON_IsNull(v))
			return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, unsupported[k],
				    "is %s; %s is not supported (expected null)",
				    ctq_json_type_name(v), unsupported[k]);
	}
	const cJSON *added = ctq_json_get(root, "added_tokens");
	if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
		return fail(L, CTQ_ERR_INVALID_CONFIG, "added_tokens", "is %s; expected an array",
			    ctq_json_type_name(added));
	if (added && cJSON_IsNull(added))
		added = NULL;
	size_t n_added = added ? (size_t)cJSON_GetArraySize(added) : 0;
	if (n_added > (size_t)CTQ_TOKENIZER_MAX_IDS)
		return fail(L, CTQ_ERR_INVALID_CONFIG, "added_tokens", "holds too many tokens");

	if ((st = load_model(L, ctq_json_get(root, "model"), n_added)) ||
	    (st = load_component(L, ctq_json_get(root, "normalizer"), "normalizer", 0,
				   (void *)&normalizer)) ||
	    (st = load_added_tokens(L, added)) || (st = prepare_added_patterns(L)))
		return st;

	const cJSON *pre = ctq_json_get(root, "pre_tokenizer");
	bool has_byte_level = false;
	if (!pre || cJSON_IsNull(pre))
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, "pre_tokenizer",
			    "is null; a byte-level tokenizer needs a ByteLevel pre-tokenizer");
	if ((st = load_pre_tokenizer(L, pre, "pre_tokenizer", 0, &has_byte_level)))
		return st;
	if (!has_byte_level)
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, "pre_tokenizer",
			    "has no ByteLevel step; only byte-level BPE is supported");
	if ((st = load_component(L, ctq_json_get(root, "post_processor"), "post_processor", 0,
				 (void *)&post_processor)))
		return st;
	const cJSON *dec = ctq_json_get(root, "decoder");
	const char *type = NULL;
	if (!dec || cJSON_IsNull(dec))
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, "decoder",
			    "is null; expected a ByteLevel decoder");
	if ((st = get_type(L, dec, "decoder", &type)))
		return st;
	if (strcmp(type, "ByteLevel") != 0)
		return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, "decoder.type",
			    "is \"%s\"; only the ByteLevel decoder is supported", type);
	return CTQ_OK;
}

/* bos_token / eos_token of tokenizer_config.json: a string, an object with
 * "content", or null. */
static enum ctq_status config_token(struct loader *L, const cJSON *cfg, const char *key,
				    int32_t *id)
{
	const cJSON *v = ctq_json_get(cfg, key);
	*id = -1;
	if (!v || cJSON_IsNull(v))
		return CTQ_OK;
	const cJSON *content = cJSON_IsObject(v) ? ctq_json_get(v, "content") : v;
	if (!cJSON_IsString(content))
		return fail(L, CTQ_ERR_INVALID_CONFIG, key,
			    "is %s; expected a token string or {\"content\": ...}",
			    ctq_json_type_name(v));
	*id = ctq_tok_str_index_find(L->T, content->valuestring, strlen(content->valuestring));
	if (*id < 0)
		return fail(L, CTQ_ERR_INVALID_CONFIG, key,
			    "is \"%.100s\", which is not a token of tokenizer.json",
			    content->valuestring);
	return CTQ_OK;
}

static enum ctq_status load_config(struct ctq_tokenizer *t, const char *dir,
				   struct ctq_error *err)
{
	char *path = ctq_path_join(dir, "tokenizer_config.json");
	if (!path)
		return ctq_error_set(err, CTQ_ERR_NOMEM, NULL, "out of memory");
	enum ctq_status st = CTQ_OK;
	int32_t bos = -1, eos = -1;
	if (ctq_path_exists(path)) {
		/* Chat templates make long strings: allow 1 MiB ones here. */
		struct ctq_json_limits lim = ctq_json_default_limits;
		lim.max_string = (size_t)1 << 20;
		cJSON *cfg = NULL;
		st = ctq_json_load_file(path, (size_t)16 << 20, &lim, &cfg, err);
		if (!st) {
			struct loader L = {.T = t->impl, .file = path, .err = err};
			if (!cJSON_IsObject(cfg))
				st = fail(&L, CTQ_ERR_INVALID_CONFIG, "", "expected an object");
			if (!st)
				st = config_token(&L, cfg, "bos_token", &bos);
			if (!st)
				st = config_token(&L, cfg, "eos_token", &eos);
		}
		cJSON_Delete(cfg);
	}
	free(path);
	if (st)
		return st;
	const struct ctq_tokenizer_impl *T = t->impl;
	t->adds_bos = T->n_prefix > 0;
	t->adds_eos = T->n_suffix > 0;
	t->bos_id = T->n_prefix ? T->prefix[0] : bos;
	t->eos_id = eos >= 0 ? eos : T->n_suffix ? T->suffix[T->n_suffix - 1] : -1;
	return CTQ_OK;
}

static char *dup_n(const char *s, size_t n)
{
	char *d = ctq_malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static void init_byte_map(struct ctq_tokenizer_impl *T)
{
	/* bytes_to_unicode: printable Latin-1 bytes map to themselves, the
	 * other 68 bytes to U+0100.. in byte order. */
	uint32_t next = 256;
	memset(T->char_byte, 0xFF, sizeof T->char_byte);
	for (int b = 0; b < 256; b++) {
		bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
				 (b >= 0xAE && b <= 0xFF);
		uint32_t cp = printable ? (uint32_t)b : next++;
		T->char_byte[cp] = (int16_t)b;
		char u[4]; /* cp <= U+0143: at most 2 bytes */
		T->byte_utf8_len[b] = (uint8_t)ctq_utf8_encode(u, cp);
		memcpy(T->byte_utf8[b], u, T->byte_utf8_len[b]);
	}
}

/* The empty tokenizer: nothing loaded, no BOS or EOS id. */
static void clear(struct ctq_tokenizer *t)
{
	memset(t, 0, sizeof *t);
	t->bos_id = t->eos_id = -1;
}

enum ctq_status ctq_tokenizer_load(struct ctq_tokenizer *t, const char *path,
				   struct ctq_error *err)
{
	clear(t);
	char *file = NULL, *dir = NULL;
	cJSON *root = NULL;
	enum ctq_status st = CTQ_OK;
	if (ctq_path_is_dir(path)) {
		file = ctq_path_join(path, "tokenizer.json");
		dir = dup_n(path, strlen(path));
	} else {
		const char *slash = strrchr(path, '/');
		file = dup_n(path, strlen(path));
		dir = !slash ? dup_n(".", 1) : dup_n(path, slash == path ? 1 : (size_t)(slash - path));
	}
	if (!file || !dir) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		goto done;
	}
	if ((st = ctq_json_load_file(file, CTQ_TOKENIZER_MAX_FILE_BYTES, NULL, &root, err)))
		goto done;
	t->impl = ctq_malloc(sizeof *t->impl);
	if (!t->impl) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, file, "out of memory");
		goto done;
	}
	memset(t->impl, 0, sizeof *t->impl);
	ctq_arena_init(&t->impl->arena);
	init_byte_map(t->impl);
	struct loader L = {.T = t->impl, .file = file, .err = err};
	if ((st = load_root(&L, root)))
		goto done;
	cJSON_Delete(root);
	root = NULL;

	pcre2_match_context *mc = pcre2_match_context_create(NULL);
	if (!mc) {
		st = nomem(&L, "");
		goto done;
	}
	pcre2_set_match_limit(mc, REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(mc, REGEX_DEPTH_LIMIT);
	t->impl->match_ctx = mc;
	if ((st = compile_regex(&L, word_char_pattern, "added_tokens", &t->impl->word_re)))
		goto done;
	st = load_config(t, dir, err);
done:
	cJSON_Delete(root);
	free(file);
	free(dir);
	if (st)
		ctq_tokenizer_free(t);
	return st;
}

/* Frees what ctq_tokenizer_load built (NULL: nothing). */
static void impl_free(struct ctq_tokenizer_impl *T)
{
	if (!T)
		return;
	for (size_t i = 0; i < T->n_steps; i++)
		pcre2_code_free(T->steps[i].re);
	free(T->steps);
	free(T->tok);
	free(T->tok_len);
	free(T->special);
	free(T->index.slots);
	ctq_tok_merge_index_free(&T->merges);
	free(T->raw_set.order);
	free(T->normalized_set.order);
	pcre2_match_context_free(T->match_ctx);
	pcre2_code_free(T->word_re);
	ctq_arena_free(&T->arena);
	free(T);
}

void ctq_tokenizer_free(struct ctq_tokenizer *t)
{
	if (!t)
		return;
	impl_free(t->impl);
	clear(t);
}
