/* ctq byte-level BPE tokenizer over Hugging Face tokenizer.json (see
 * tokenizer.h). Each stage mirrors the `tokenizers` library (Rust) step for
 * step, because byte-identical ids are the requirement:
 *
 *   bytes --U+FFFD for invalid UTF-8--> text
 *   text --added tokens that are special or not normalized--> segments
 *   segment --normalizer (NFC)--> --added tokens that are normalized--> pieces
 *   piece --pre-tokenizer steps (Split / Digits / ByteLevel)--> words
 *   word --BPE merges by rank (the library's heap order)--> ids
 *   ids --template (BOS/EOS) when add_special_tokens--> result
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/tokenizer.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"

#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PCRE2 limits for patterns from untrusted files: a bound on the work of one
 * match call (a pathological pattern fails instead of hanging) and on the
 * backtracking depth. Generous: the GPT-2 / Llama-3 / Qwen2 patterns need a
 * few steps per byte. */
#define REGEX_MATCH_LIMIT 50000000u
#define REGEX_DEPTH_LIMIT 100000u

/* Pre-tokenizer nesting (Sequence in Sequence) and template length bounds. */
#define MAX_NESTING 16
#define MAX_TEMPLATE_IDS 64

/* The GPT-2 regex that ByteLevel(use_regex=true) splits with. */
static const char gpt2_pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Rust regex's Unicode \w (the library's single_word check). */
static const char word_char_pattern[] =
	"[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]";

enum split_behavior {
	SPLIT_REMOVED,
	SPLIT_ISOLATED,
	SPLIT_MERGED_WITH_PREVIOUS,
	SPLIT_MERGED_WITH_NEXT,
	SPLIT_CONTIGUOUS
};

enum step_kind { STEP_SPLIT, STEP_BYTE_LEVEL };

/* One pre-tokenizer step. Digits is a Split on \p{N} (Rust's
 * char::is_numeric: Nd, Nl, No), Isolated per character or per run. */
struct pre_step {
	enum step_kind kind;
	pcre2_code *re;       /* Split regex, ByteLevel's GPT-2 regex, or NULL */
	char *literal;        /* Split String pattern (when re is NULL) */
	size_t literal_len;
	enum split_behavior behavior;
	bool invert;
	bool add_prefix_space; /* ByteLevel */
};

struct added_token {
	const char *content; /* arena */
	size_t len;
	const char *pattern; /* what is matched: content, or NFC(content) when normalized */
	size_t pattern_len;
	int32_t id;
	bool special, single_word, lstrip, rstrip, normalized;
};

/* Added tokens matched against one kind of text, ordered by first byte and,
 * within a first byte, longest first: the first that matches at the leftmost
 * position is the leftmost-longest match. */
struct match_set {
	size_t *order; /* (n) indices into added */
	size_t n;
	size_t first[257]; /* order[first[b] .. first[b + 1]) begin with byte b */
};

/* Open-addressing map from token text to id; the text lives in tok[id]. */
struct str_index {
	int32_t *slots; /* (cap) id, or -1 when free */
	size_t cap;     /* power of two */
};

/* Open-addressing map from a pair of ids to (rank, merged id); key and
 * value share a slot so that a probe touches one cache line. */
#define MERGE_FREE UINT64_MAX
struct merge_slot {
	uint64_t key; /* left << 32 | right, MERGE_FREE when free */
	int32_t rank, merged;
};
struct merge_index {
	struct merge_slot *slots; /* (cap) */
	size_t cap;
};

struct ctq_tokenizer_impl {
	struct ctq_arena arena; /* token text, added tokens */
	size_t n_model;          /* model vocab: ids [0, n_model) */
	size_t n_ids;            /* n_model + added tokens outside the vocab */
	const char **tok;        /* (n_ids) byte-level text for vocab ids, content for added */
	uint32_t *tok_len;       /* (n_ids) bytes */
	uint8_t *special;        /* (n_ids) 1 for special added tokens */
	struct str_index index;  /* all of tok */
	struct merge_index merges;
	int32_t unk_id; /* -1: characters outside the vocab are dropped, as the library does */
	bool fuse_unk, ignore_merges;

	struct added_token *added;
	size_t n_added;
	struct match_set raw_set, normalized_set;

	bool nfc;
	struct pre_step *steps;
	size_t n_steps;

	int32_t prefix[MAX_TEMPLATE_IDS], suffix[MAX_TEMPLATE_IDS];
	size_t n_prefix, n_suffix;

	pcre2_match_context *match_ctx;
	pcre2_code *word_re;

	/* GPT-2's bytes_to_unicode: byte -> UTF-8 of its printable character,
	 * and back (characters U+0021..U+0143). */
	char byte_utf8[256][2];
	uint8_t byte_utf8_len[256];
	int16_t char_byte[0x144];
};

/* ---- small helpers -------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static uint64_t hash_pair(uint64_t k)
{
	k ^= k >> 33; /* murmur3 finalizer */
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static size_t pow2_at_least(size_t n)
{
	size_t c = 16;
	while (c < n)
		c *= 2;
	return c;
}

/* Length of the UTF-8 sequence starting with byte c (valid text only). */
static size_t utf8_len(unsigned char c)
{
	return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

static uint32_t utf8_decode(const unsigned char *s, size_t *n_bytes)
{
	size_t n = utf8_len(s[0]);
	uint32_t cp = n == 1 ? s[0] : n == 2 ? s[0] & 0x1Fu : n == 3 ? s[0] & 0x0Fu : s[0] & 0x07u;
	for (size_t i = 1; i < n; i++)
		cp = (cp << 6) | (s[i] & 0x3Fu);
	*n_bytes = n;
	return cp;
}

/* Start of the last character of s[0, n), n > 0. */
static size_t utf8_last(const char *s, size_t n)
{
	size_t i = n - 1;
	while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
		i--;
	return i;
}

/* Unicode White_Space (Rust's char::is_whitespace and regex \s). */
static bool is_white_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Length of the maximal valid UTF-8 sequence at s[0, n) (0 when s[0] cannot
 * start one), following the Unicode "maximal subpart" rule. *complete tells
 * whether it is a whole character. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t n, bool *complete)
{
	unsigned char c = s[0];
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;
	*complete = false;
	if (c < 0x80) {
		*complete = true;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
		need = 1;
	else if (c == 0xE0) {
		need = 2;
		lo = 0xA0;
	} else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
		need = 2;
	else if (c == 0xED) {
		need = 2;
		hi = 0x9F;
	} else if (c == 0xF0) {
		need = 3;
		lo = 0x90;
	} else if (c >= 0xF1 && c <= 0xF3)
		need = 3;
	else if (c == 0xF4) {
		need = 3;
		hi = 0x8F;
	} else
		return 0;
	size_t j = 1;
	for (size_t k = 0; k < need; k++, j++) {
		if (j >= n)
			return j;
		unsigned char b = s[j];
		if (b < (k == 0 ? lo : 0x80) || b > (k == 0 ? hi : 0xBF))
			return j;
	}
	*complete = true;
	return j;
}

static bool utf8_is_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		bool complete;
		size_t k = utf8_valid_prefix(u + i, n - i, &complete);
		if (!complete)
			return false;
		i += k;
	}
	return true;
}

/* ---- growable buffers (an allocation failure sticks) ---------------------- */

struct bytes {
	char *v;
	size_t n, cap;
	bool oom;
};

static bool bytes_reserve(struct bytes *b, size_t extra)
{
	if (b->oom)
		return false;
	if (extra > SIZE_MAX / 2 - b->n) {
		b->oom = true;
		return false;
	}
	if (b->n + extra + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->n + extra + 1)
		cap *= 2;
	char *v = ctq_realloc(b->v, cap);
	if (!v) {
		b->oom = true;
		return false;
	}
	b->v = v;
	b->cap = cap;
	return true;
}

static void bytes_append(struct bytes *b, const void *s, size_t n)
{
	if (!bytes_reserve(b, n))
		return;
	if (n)
		memcpy(b->v + b->n, s, n);
	b->n += n;
	b->v[b->n] = '\0';
}

struct ids {
	int32_t *v;
	size_t n, cap;
	bool oom;
};

static void ids_push(struct ids *a, int32_t id)
{
	if (a->oom)
		return;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		int32_t *v = ctq_realloc(a->v, cap * sizeof *v);
		if (!v) {
			a->oom = true;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = id;
}

/* Generic array growth for the workspace's typed arrays. */
static bool grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *p = ctq_realloc(*v, c * elem);
	if (!p)
		return false;
	*v = p;
	*cap = c;
	return true;
}

/* ---- indexes ---------------------------------------------------------------- */

static bool str_index_init(struct str_index *x, size_t n)
{
	x->cap = pow2_at_least(2 * n + 1);
	x->slots = ctq_malloc(x->cap * sizeof *x->slots);
	if (!x->slots)
		return false;
	memset(x->slots, 0xFF, x->cap * sizeof *x->slots);
	return true;
}

static int32_t str_index_find(const struct ctq_tokenizer_impl *T, const char *s, size_t n)
{
	const struct str_index *x = &T->index;
	size_t mask = x->cap - 1;
	for (size_t i = hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
		int32_t id = x->slots[i];
		if (id < 0)
			return -1;
		if (T->tok_len[id] == n && memcmp(T->tok[id], s, n) == 0)
			return id;
	}
}

/* Inserts tok[id]; returns the id already holding that text, or -1. */
static int32_t str_index_insert(struct ctq_tokenizer_impl *T, int32_t id)
{
	struct str_index *x = &T->index;
	size_t mask = x->cap - 1;
	const char *s = T->tok[id];
	size_t n = T->tok_len[id];
	for (size_t i = hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
		int32_t o = x->slots[i];
		if (o < 0) {
			x->slots[i] = id;
			return -1;
		}
		if (T->tok_len[o] == n && memcmp(T->tok[o], s, n) == 0)
			return o;
	}
}

static bool merge_index_init(struct merge_index *m, size_t n)
{
	m->cap = pow2_at_least(2 * n + 1);
	m->slots = ctq_malloc(m->cap * sizeof *m->slots);
	if (!m->slots)
		return false;
	for (size_t i = 0; i < m->cap; i++)
		m->slots[i].key = MERGE_FREE;
	return true;
}

static void merge_index_free(struct merge_index *m)
{
	free(m->slots);
	memset(m, 0, sizeof *m);
}

/* A later merge of the same pair replaces the earlier one, as the library's
 * HashMap collect does. */
static void merge_index_put(struct merge_index *m, int32_t a, int32_t b, int32_t rank,
			    int32_t merged)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = m->cap - 1;
	size_t i = hash_pair(key) & mask;
	while (m->slots[i].key != MERGE_FREE && m->slots[i].key != key)
		i = (i + 1) & mask;
	m->slots[i] = (struct merge_slot){key, rank, merged};
}

static bool merge_index_get(const struct merge_index *m, int32_t a, int32_t b,
			    int32_t *rank, int32_t *merged)
{
	if (!m->cap)
		return false;
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = m->cap - 1;
	for (size_t i = hash_pair(key) & mask;; i = (i + 1) & mask) {
		const struct merge_slot *e = &m->slots[i];
		if (e->key == MERGE_FREE)
			return false;
		if (e->key == key) {
			*rank = e->rank;
			*merged = e->merged;
			return true;
		}
	}
}

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

/* obj.key as a bool: absent or null gives dflt. */
static enum ctq_status get_bool(struct loader *L, const cJSON *obj, const char *base,
				const char *key, bool dflt, bool *out)
{
	const cJSON *v = ctq_json_get(obj, key);
	*out = dflt;
	if (!v || cJSON_IsNull(v))
		return CTQ_OK;
	if (!cJSON_IsBool(v)) {
		char p[CTQ_PATH_MAX];
		key_path(p, base, key);
		return fail(L, CTQ_ERR_INVALID_CONFIG, p, "is %s; expected true or false",
			    ctq_json_type_name(v));
	}
	*out = cJSON_IsTrue(v);
	return CTQ_OK;
}

/* obj.key as a string, or NULL when absent or null. */
static enum ctq_status get_string(struct loader *L, const cJSON *obj, const char *base,
				  const char *key, const char **out)
{
	const cJSON *v = ctq_json_get(obj, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return CTQ_OK;
	if (!cJSON_IsString(v)) {
		char p[CTQ_PATH_MAX];
		key_path(p, base, key);
		return fail(L, CTQ_ERR_INVALID_CONFIG, p, "is %s; expected a string",
			    ctq_json_type_name(v));
	}
	*out = v->valuestring;
	return CTQ_OK;
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
	struct bytes b = {0};
	for (size_t i = 0; i < n;) {
		if (p[i] != '\\' || i + 1 >= n) {
			bytes_append(&b, p + i, 1);
			i++;
			continue;
		}
		char c = p[i + 1];
		const char *close = (c == 'p' || c == 'P') && i + 2 < n && p[i + 2] == '{'
					    ? memchr(p + i + 3, '}', n - i - 3)
					    : NULL;
		if (close && is_script_name(p + i + 3, (size_t)(close - (p + i + 3)))) {
			bytes_append(&b, p + i, 3);
			bytes_append(&b, "sc:", 3);
			bytes_append(&b, p + i + 3, (size_t)(close - (p + i + 3)) + 1);
			i = (size_t)(close - p) + 1;
			continue;
		}
		if (c == 's')
			bytes_append(&b, "\\p{White_Space}", 15);
		else if (c == 'S')
			bytes_append(&b, "\\P{White_Space}", 15);
		else if (c == 'Q') {
			size_t j = i + 2;
			while (j < n && !(p[j] == '\\' && j + 1 < n && p[j + 1] == 'E'))
				j++;
			j = j < n ? j + 2 : n;
			bytes_append(&b, p + i, j - i);
			i = j;
			continue;
		} else
			bytes_append(&b, p + i, 2);
		i += 2;
	}
	bytes_append(&b, "", 0);
	if (b.oom) {
		free(b.v);
		return NULL;
	}
	*out_len = b.n;
	return b.v;
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

static enum ctq_status load_pre_tokenizer(struct loader *L, const cJSON *node, const char *path,
					  int depth, bool *has_byte_level);

static enum ctq_status pre_tokenizer_item(struct loader *L, const cJSON *item, const char *path,
					  int depth, void *ctx)
{
	return load_pre_tokenizer(L, item, path, depth, ctx);
}

static enum ctq_status load_pre_tokenizer(struct loader *L, const cJSON *node, const char *path,
					  int depth, bool *has_byte_level)
{
	const char *type;
	char p[CTQ_PATH_MAX];
	enum ctq_status st = get_type(L, node, path, &type);
	if (st)
		return st;
	if (depth > MAX_NESTING)
		return fail(L, CTQ_ERR_INVALID_CONFIG, path,
			    "pre-tokenizer Sequences nested deeper than %d", MAX_NESTING);
	if (strcmp(type, "Sequence") == 0)
		return load_sequence(L, node, path, "pretokenizers", depth, pre_tokenizer_item,
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

static enum ctq_status load_normalizer(struct loader *L, const cJSON *node, const char *path,
				       int depth);

static enum ctq_status normalizer_item(struct loader *L, const cJSON *item, const char *path,
				       int depth, void *ctx)
{
	(void)ctx;
	return load_normalizer(L, item, path, depth);
}

static enum ctq_status load_normalizer(struct loader *L, const cJSON *node, const char *path,
				       int depth)
{
	if (!node || cJSON_IsNull(node))
		return CTQ_OK;
	const char *type;
	enum ctq_status st = get_type(L, node, path, &type);
	if (st)
		return st;
	if (strcmp(type, "NFC") == 0) {
		L->T->nfc = true;
		return CTQ_OK;
	}
	if (strcmp(type, "Sequence") == 0 && depth < MAX_NESTING)
		return load_sequence(L, node, path, "normalizers", depth, normalizer_item, NULL);
	char p[CTQ_PATH_MAX];
	key_path(p, path, "type");
	return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, p,
		    "is \"%s\"; supported normalizers: NFC and a Sequence of NFC", type);
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
	if (!T->tok || !T->tok_len || !T->special || !str_index_init(&T->index, cap))
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
		else if (!utf8_is_valid(c->string, len))
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
		if (str_index_insert(T, (int32_t)id) >= 0) {
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
				  int32_t rank, struct bytes *scratch)
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
	int32_t ia = str_index_find(T, a, na), ib = str_index_find(T, b, nb);
	scratch->n = 0;
	bytes_append(scratch, a, na);
	bytes_append(scratch, b, nb);
	if (scratch->oom)
		return nomem(L, p);
	int32_t im = str_index_find(T, scratch->v, scratch->n);
	const char *missing = NULL;
	size_t nmissing = 0;
	if (ia < 0 || (size_t)ia >= T->n_model) {
		missing = a;
		nmissing = na;
	} else if (ib < 0 || (size_t)ib >= T->n_model) {
		missing = b;
		nmissing = nb;
	} else if (im < 0 || (size_t)im >= T->n_model) {
		missing = scratch->v;
		nmissing = scratch->n;
	}
	if (missing)
		return fail(L, CTQ_ERR_INVALID_CONFIG, p,
			    "merge of \"%.*s\" and \"%.*s\" needs \"%.*s\", which is not in model.vocab",
			    (int)(na > 100 ? 100 : na), a, (int)(nb > 100 ? 100 : nb), b,
			    (int)(nmissing > 200 ? 200 : nmissing), missing);
	merge_index_put(&T->merges, ia, ib, rank, im);
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
		T->unk_id = str_index_find(T, s, strlen(s));
		if (T->unk_id < 0)
			return fail(L, CTQ_ERR_INVALID_CONFIG, "model.unk_token",
				    "is \"%.100s\", which is not in model.vocab", s);
	}

	const cJSON *merges = ctq_json_get(model, "merges");
	if (!merges || cJSON_IsNull(merges))
		return merge_index_init(&T->merges, 0) ? CTQ_OK : nomem(L, "model.merges");
	if (!cJSON_IsArray(merges))
		return fail(L, CTQ_ERR_INVALID_CONFIG, "model.merges", "is %s; expected an array",
			    ctq_json_type_name(merges));
	size_t n = (size_t)cJSON_GetArraySize(merges);
	if (n > (size_t)INT32_MAX)
		return fail(L, CTQ_ERR_INVALID_CONFIG, "model.merges", "holds too many merges");
	if (!merge_index_init(&T->merges, n))
		return nomem(L, "model.merges");
	bool legacy = n > 0 && cJSON_IsString(merges->child);
	struct bytes scratch = {0};
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
	free(scratch.v);
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
		if (!utf8_is_valid(content, len)) {
			st = fail(L, CTQ_ERR_INVALID_CONFIG, q, "is not valid UTF-8");
			break;
		}
		/* The library keeps the vocab's id for a content the vocab holds and
		 * numbers the others after the vocab, in file order. */
		int32_t known = str_index_find(T, content, len);
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
			str_index_insert(T, expect);
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

static enum ctq_status load_post_processor(struct loader *L, const cJSON *node, const char *path,
					   int depth);

static enum ctq_status post_processor_item(struct loader *L, const cJSON *item, const char *path,
					   int depth, void *ctx)
{
	(void)ctx;
	return load_post_processor(L, item, path, depth);
}

static enum ctq_status load_post_processor(struct loader *L, const cJSON *node, const char *path,
					   int depth)
{
	if (!node || cJSON_IsNull(node))
		return CTQ_OK;
	const char *type;
	enum ctq_status st = get_type(L, node, path, &type);
	if (st)
		return st;
	if (strcmp(type, "ByteLevel") == 0) /* offsets only */
		return CTQ_OK;
	if (strcmp(type, "TemplateProcessing") == 0)
		return load_template(L, node, path);
	if (strcmp(type, "Sequence") == 0 && depth < MAX_NESTING)
		return load_sequence(L, node, path, "processors", depth, post_processor_item, NULL);
	char p[CTQ_PATH_MAX];
	key_path(p, path, "type");
	return fail(L, CTQ_ERR_UNSUPPORTED_FORMAT, p,
		    "is \"%s\"; supported post-processors: ByteLevel, TemplateProcessing, Sequence",
		    type);
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
	    (st = load_normalizer(L, ctq_json_get(root, "normalizer"), "normalizer", 0)) ||
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
	if ((st = load_post_processor(L, ctq_json_get(root, "post_processor"), "post_processor",
				      0)))
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
	*id = str_index_find(L->T, content->valuestring, strlen(content->valuestring));
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
		if (cp < 0x80) {
			T->byte_utf8[b][0] = (char)cp;
			T->byte_utf8_len[b] = 1;
		} else {
			T->byte_utf8[b][0] = (char)(0xC0 | (cp >> 6));
			T->byte_utf8[b][1] = (char)(0x80 | (cp & 0x3F));
			T->byte_utf8_len[b] = 2;
		}
	}
}

enum ctq_status ctq_tokenizer_load(struct ctq_tokenizer *t, const char *path,
				   struct ctq_error *err)
{
	memset(t, 0, sizeof *t);
	t->bos_id = t->eos_id = -1;
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

void ctq_tokenizer_free(struct ctq_tokenizer *t)
{
	if (!t)
		return;
	struct ctq_tokenizer_impl *T = t->impl;
	if (T) {
		for (size_t i = 0; i < T->n_steps; i++)
			pcre2_code_free(T->steps[i].re);
		free(T->steps);
		free(T->tok);
		free(T->tok_len);
		free(T->special);
		free(T->index.slots);
		merge_index_free(&T->merges);
		free(T->raw_set.order);
		free(T->normalized_set.order);
		pcre2_match_context_free(T->match_ctx);
		pcre2_code_free(T->word_re);
		ctq_arena_free(&T->arena);
		free(T);
	}
	memset(t, 0, sizeof *t);
	t->bos_id = t->eos_id = -1;
}

/* ---- encoding --------------------------------------------------------------- */

struct span {
	size_t start, end;
	bool is_match;
};

struct bpe_symbol {
	int32_t id;
	int32_t prev, next; /* -1 at the ends */
	uint32_t len;       /* bytes; 0 once merged into its left neighbour */
};

struct bpe_merge {
	int32_t rank, pos, merged;
};

/* Pieces of text: spans of one byte buffer. */
struct pieces {
	struct bytes text;
	size_t *off, *len; /* (cap) */
	size_t n, cap;
	bool oom;
};

/* Scratch of one encode call. */
struct workspace {
	pcre2_match_data *md;
	struct pieces a, b;
	struct bytes tmp;
	struct span *spans;
	size_t n_spans, cap_spans;
	struct bpe_symbol *sym;
	size_t cap_sym;
	struct bpe_merge *heap;
	size_t n_heap, cap_heap;
	bool oom;
};

static void pieces_reset(struct pieces *p)
{
	p->text.n = 0;
	p->n = 0;
}

static void pieces_free(struct pieces *p)
{
	free(p->text.v);
	free(p->off);
	free(p->len);
}

/* Appends a piece made of n bytes of s (mapped through the byte-level
 * alphabet when map is set). Empty pieces are dropped, as the library drops
 * empty splits. */
static void pieces_add(const struct ctq_tokenizer_impl *T, struct pieces *p, const char *s,
		       size_t n, bool map)
{
	if (n == 0 || p->oom)
		return;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		size_t *off = ctq_realloc(p->off, cap * sizeof *off);
		if (off)
			p->off = off;
		size_t *len = off ? ctq_realloc(p->len, cap * sizeof *len) : NULL;
		if (!len) {
			p->oom = true;
			return;
		}
		p->len = len;
		p->cap = cap;
	}
	size_t start = p->text.n;
	if (map) {
		if (!bytes_reserve(&p->text, 2 * n)) {
			p->oom = true;
			return;
		}
		for (size_t i = 0; i < n; i++) {
			unsigned char b = (unsigned char)s[i];
			memcpy(p->text.v + p->text.n, T->byte_utf8[b], T->byte_utf8_len[b]);
			p->text.n += T->byte_utf8_len[b];
		}
		p->text.v[p->text.n] = '\0';
	} else {
		bytes_append(&p->text, s, n);
	}
	if (p->text.oom) {
		p->oom = true;
		return;
	}
	p->off[p->n] = start;
	p->len[p->n] = p->text.n - start;
	p->n++;
}

static bool spans_push(struct workspace *w, size_t start, size_t end, bool is_match)
{
	if (!grow((void **)&w->spans, &w->cap_spans, w->n_spans + 1, sizeof *w->spans))
		return false;
	w->spans[w->n_spans++] = (struct span){start, end, is_match};
	return true;
}

static enum ctq_status regex_error(int rc, size_t n, struct ctq_error *err)
{
	PCRE2_UCHAR msg[256];
	pcre2_get_error_message(rc, msg, sizeof msg);
	if (rc == PCRE2_ERROR_NOMEMORY || rc == PCRE2_ERROR_HEAPLIMIT)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "pre_tokenizer",
				     "regex on a %zu-byte piece: %s", n, (const char *)msg);
	return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "pre_tokenizer",
			     "regex failed on a %zu-byte piece: %s (match limit %u, depth limit %u)",
			     n, (const char *)msg, REGEX_MATCH_LIMIT, REGEX_DEPTH_LIMIT);
}

/* The library's Pattern::find_matches: spans covering s, each a match or the
 * text between matches. Empty matches produce empty spans (dropped later);
 * the search then resumes one character on. */
static enum ctq_status find_spans(const struct ctq_tokenizer_impl *T, const struct pre_step *st,
				  const char *s, size_t n, struct workspace *w,
				  struct ctq_error *err)
{
	w->n_spans = 0;
	size_t prev = 0;
	if (n == 0)
		return CTQ_OK;
	if (!st->re) {
		size_t m = st->literal_len;
		if (m == 0)
			return spans_push(w, 0, n, false) ? CTQ_OK : CTQ_ERR_NOMEM;
		for (size_t i = 0; i + m <= n;) {
			if (memcmp(s + i, st->literal, m) != 0) {
				i++;
				continue;
			}
			if ((prev != i && !spans_push(w, prev, i, false)) ||
			    !spans_push(w, i, i + m, true))
				return CTQ_ERR_NOMEM;
			prev = i += m;
		}
	} else {
		size_t pos = 0;
		while (pos <= n) {
			int rc = pcre2_match(st->re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, w->md,
					     T->match_ctx);
			if (rc == PCRE2_ERROR_NOMATCH)
				break;
			if (rc < 0)
				return regex_error(rc, n, err);
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(w->md);
			size_t ms = ov[0], me = ov[1];
			if ((prev != ms && !spans_push(w, prev, ms, false)) ||
			    !spans_push(w, ms, me, true))
				return CTQ_ERR_NOMEM;
			prev = me;
			if (me > ms)
				pos = me;
			else if (me < n)
				pos = me + utf8_len((unsigned char)s[me]);
			else
				break;
		}
	}
	if (prev != n && !spans_push(w, prev, n, false))
		return CTQ_ERR_NOMEM;
	return CTQ_OK;
}

/* NormalizedString::split: spans -> the kept ranges, by behaviour. Works in
 * place on w->spans (is_match becomes "remove"). */
static void apply_behavior(const struct pre_step *st, struct workspace *w)
{
	size_t n = w->n_spans, k = 0;
	struct span *v = w->spans;
	if (st->invert)
		for (size_t i = 0; i < n; i++)
			v[i].is_match = !v[i].is_match;
	switch (st->behavior) {
	case SPLIT_ISOLATED:
		for (size_t i = 0; i < n; i++)
			v[i].is_match = false;
		return;
	case SPLIT_REMOVED:
		return;
	case SPLIT_CONTIGUOUS: {
		bool previous = false;
		for (size_t i = 0; i < n; i++) {
			bool m = v[i].is_match;
			if (m == previous && k > 0)
				v[k - 1].end = v[i].end;
			else
				v[k++] = (struct span){v[i].start, v[i].end, false};
			previous = m;
		}
		break;
	}
	case SPLIT_MERGED_WITH_PREVIOUS: {
		bool previous = false;
		for (size_t i = 0; i < n; i++) {
			bool m = v[i].is_match;
			if (m && !previous && k > 0)
				v[k - 1].end = v[i].end;
			else
				v[k++] = (struct span){v[i].start, v[i].end, false};
			previous = m;
		}
		break;
	}
	case SPLIT_MERGED_WITH_NEXT: {
		/* Right to left; the kept spans fill v[wr, n) from the end, so
		 * every write lands at or after the span being read. */
		bool previous = false;
		size_t wr = n;
		for (size_t i = n; i-- > 0;) {
			struct span cur = v[i];
			if (cur.is_match && !previous && wr < n)
				v[wr].start = cur.start;
			else
				v[--wr] = (struct span){cur.start, cur.end, false};
			previous = cur.is_match;
		}
		k = n - wr;
		memmove(v, v + wr, k * sizeof *v);
		break;
	}
	}
	w->n_spans = k;
}

/* One pre-tokenizer step over every piece of in, into out. */
static enum ctq_status run_step(const struct ctq_tokenizer_impl *T, const struct pre_step *st,
				const struct pieces *in, struct pieces *out, struct workspace *w,
				struct ctq_error *err)
{
	pieces_reset(out);
	for (size_t i = 0; i < in->n; i++) {
		const char *s = in->text.v + in->off[i];
		size_t n = in->len[i];
		bool map = st->kind == STEP_BYTE_LEVEL;
		if (map && st->add_prefix_space && s[0] != ' ') {
			w->tmp.n = 0;
			bytes_append(&w->tmp, " ", 1);
			bytes_append(&w->tmp, s, n);
			if (w->tmp.oom)
				return CTQ_ERR_NOMEM;
			s = w->tmp.v;
			n = w->tmp.n;
		}
		if (map && !st->re) {
			pieces_add(T, out, s, n, true);
			continue;
		}
		enum ctq_status rc = find_spans(T, st, s, n, w, err);
		if (rc)
			return rc;
		apply_behavior(st, w);
		for (size_t k = 0; k < w->n_spans; k++)
			if (!w->spans[k].is_match)
				pieces_add(T, out, s + w->spans[k].start,
					   w->spans[k].end - w->spans[k].start, map);
	}
	return out->oom ? CTQ_ERR_NOMEM : CTQ_OK;
}

/* Min-heap on (rank, pos): the library's BinaryHeap<Merge> order. */
static bool heap_less(const struct bpe_merge *a, const struct bpe_merge *b)
{
	return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static bool heap_push(struct workspace *w, struct bpe_merge m)
{
	if (!grow((void **)&w->heap, &w->cap_heap, w->n_heap + 1, sizeof *w->heap))
		return false;
	size_t i = w->n_heap++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!heap_less(&m, &w->heap[parent]))
			break;
		w->heap[i] = w->heap[parent];
		i = parent;
	}
	w->heap[i] = m;
	return true;
}

static struct bpe_merge heap_pop(struct workspace *w)
{
	struct bpe_merge top = w->heap[0];
	struct bpe_merge last = w->heap[--w->n_heap];
	size_t i = 0, n = w->n_heap;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && heap_less(&w->heap[c + 1], &w->heap[c]))
			c++;
		if (!heap_less(&w->heap[c], &last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (n)
		w->heap[i] = last;
	return top;
}

static int32_t model_id(const struct ctq_tokenizer_impl *T, const char *s, size_t n)
{
	int32_t id = str_index_find(T, s, n);
	return id >= 0 && (size_t)id < T->n_model ? id : -1;
}

static bool bpe_add(struct workspace *w, size_t *n_sym, int32_t id, uint32_t len)
{
	if (!grow((void **)&w->sym, &w->cap_sym, *n_sym + 1, sizeof *w->sym))
		return false;
	int32_t i = (int32_t)*n_sym;
	if (i > 0)
		w->sym[i - 1].next = i;
	w->sym[i] = (struct bpe_symbol){id, i - 1, -1, len};
	(*n_sym)++;
	return true;
}

/* The library's BPE::tokenize for one word (already in the byte-level
 * alphabet): whole-word lookup under ignore_merges, else one symbol per
 * character (unknown characters become unk_token or are dropped) and merges
 * applied lowest rank first, leftmost first. */
static enum ctq_status bpe_word(const struct ctq_tokenizer_impl *T, const char *s, size_t n,
				struct workspace *w, struct ids *out)
{
	if (T->ignore_merges) {
		int32_t id = model_id(T, s, n);
		if (id >= 0) {
			ids_push(out, id);
			return out->oom ? CTQ_ERR_NOMEM : CTQ_OK;
		}
	}
	size_t n_sym = 0;
	bool unk = false;
	uint32_t unk_len = 0;
	for (size_t i = 0; i < n;) {
		size_t clen = utf8_len((unsigned char)s[i]);
		int32_t id = model_id(T, s + i, clen);
		if (id >= 0) {
			if (unk && !bpe_add(w, &n_sym, T->unk_id, unk_len))
				return CTQ_ERR_NOMEM;
			unk = false;
			if (!bpe_add(w, &n_sym, id, (uint32_t)clen))
				return CTQ_ERR_NOMEM;
		} else if (T->unk_id >= 0) {
			if (unk && T->fuse_unk) {
				unk_len += (uint32_t)clen;
			} else {
				if (unk && !bpe_add(w, &n_sym, T->unk_id, unk_len))
					return CTQ_ERR_NOMEM;
				unk = true;
				unk_len = (uint32_t)clen;
			}
		}
		i += clen;
	}
	if (unk && !bpe_add(w, &n_sym, T->unk_id, unk_len))
		return CTQ_ERR_NOMEM;

	struct bpe_symbol *sym = w->sym;
	int32_t rank, merged;
	w->n_heap = 0;
	for (size_t i = 0; i + 1 < n_sym; i++)
		if (merge_index_get(&T->merges, sym[i].id, sym[i + 1].id, &rank, &merged) &&
		    !heap_push(w, (struct bpe_merge){rank, (int32_t)i, merged}))
			return CTQ_ERR_NOMEM;
	while (w->n_heap) {
		struct bpe_merge top = heap_pop(w);
		struct bpe_symbol *cur = &sym[top.pos];
		if (cur->len == 0 || cur->next < 0)
			continue;
		int32_t next = cur->next;
		/* A stale entry: the pair at pos changed since it was queued. */
		if (!merge_index_get(&T->merges, cur->id, sym[next].id, &rank, &merged) ||
		    merged != top.merged)
			continue;
		cur->id = top.merged;
		cur->len += sym[next].len;
		cur->next = sym[next].next;
		sym[next].len = 0;
		if (cur->next >= 0)
			sym[cur->next].prev = top.pos;
		if (cur->prev >= 0 &&
		    merge_index_get(&T->merges, sym[cur->prev].id, cur->id, &rank, &merged) &&
		    !heap_push(w, (struct bpe_merge){rank, cur->prev, merged}))
			return CTQ_ERR_NOMEM;
		if (cur->next >= 0 &&
		    merge_index_get(&T->merges, cur->id, sym[cur->next].id, &rank, &merged) &&
		    !heap_push(w, (struct bpe_merge){rank, top.pos, merged}))
			return CTQ_ERR_NOMEM;
	}
	for (size_t i = 0; i < n_sym; i++)
		if (sym[i].len)
			ids_push(out, sym[i].id);
	return out->oom ? CTQ_ERR_NOMEM : CTQ_OK;
}

/* Pre-tokenizes one normalized piece of text and runs BPE on every word. */
static enum ctq_status encode_piece(const struct ctq_tokenizer_impl *T, const char *s, size_t n,
				    struct workspace *w, struct ids *out, struct ctq_error *err)
{
	struct pieces *cur = &w->a, *next = &w->b;
	pieces_reset(cur);
	pieces_add(T, cur, s, n, false);
	if (cur->oom)
		return CTQ_ERR_NOMEM;
	for (size_t k = 0; k < T->n_steps; k++) {
		enum ctq_status st = run_step(T, &T->steps[k], cur, next, w, err);
		if (st)
			return st;
		struct pieces *t = cur;
		cur = next;
		next = t;
	}
	for (size_t i = 0; i < cur->n; i++) {
		enum ctq_status st = bpe_word(T, cur->text.v + cur->off[i], cur->len[i], w, out);
		if (st)
			return st;
	}
	return CTQ_OK;
}

struct split {
	size_t start, end;
	int32_t id; /* an added token, or -1 for text */
};

struct splits {
	struct split *v;
	size_t n, cap;
};

static bool splits_push(struct splits *s, size_t start, size_t end, int32_t id)
{
	if (!grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
		return false;
	s->v[s->n++] = (struct split){start, end, id};
	return true;
}

static bool is_word_char(const struct ctq_tokenizer_impl *T, const char *s, size_t n,
			 pcre2_match_data *md)
{
	return pcre2_match(T->word_re, (PCRE2_SPTR)s, n, 0, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK,
			   md, T->match_ctx) > 0;
}

/* The library's AddedVocabulary::find_matches over s: leftmost-longest
 * matches, filtered by single_word, widened by lstrip / rstrip. */
static bool find_added(const struct ctq_tokenizer_impl *T, const struct match_set *set,
		       const char *s, size_t n, struct workspace *w, struct splits *out)
{
	out->n = 0;
	if (n == 0)
		return true;
	size_t start_offset = 0, pos = 0;
	while (pos < n && set->n) {
		const struct added_token *a = NULL;
		size_t start = pos;
		for (; start < n; start++) {
			unsigned char b = (unsigned char)s[start];
			for (size_t k = set->first[b]; k < set->first[b + 1] && !a; k++) {
				const struct added_token *c = &T->added[set->order[k]];
				if (c->pattern_len <= n - start &&
				    memcmp(s + start, c->pattern, c->pattern_len) == 0)
					a = c;
			}
			if (a)
				break;
		}
		if (!a)
			break;
		size_t stop = start + a->pattern_len;
		pos = stop;
		if (a->single_word) {
			bool start_space = start == 0 ||
					   !is_word_char(T, s + utf8_last(s, start),
							 start - utf8_last(s, start), w->md);
			bool stop_space = stop == n || !is_word_char(T, s + stop, n - stop, w->md);
			if (!start_space || !stop_space)
				continue;
		}
		if (a->lstrip) {
			size_t k = start;
			while (k > 0) {
				size_t c = utf8_last(s, k), len;
				if (!is_white_space(utf8_decode((const unsigned char *)s + c, &len)))
					break;
				k = c;
			}
			start = k > start_offset ? k : start_offset;
		}
		if (a->rstrip) {
			while (stop < n) {
				size_t len;
				if (!is_white_space(utf8_decode((const unsigned char *)s + stop, &len)))
					break;
				stop += len;
			}
		}
		if (start_offset < start && !splits_push(out, start_offset, start, -1))
			return false;
		if (!splits_push(out, start, stop, a->id))
			return false;
		start_offset = stop;
	}
	if (start_offset != n && !splits_push(out, start_offset, n, -1))
		return false;
	return true;
}

enum ctq_status ctq_tokenizer_utf8_sanitize(const char *text, size_t len, char **out,
					    size_t *out_len, struct ctq_error *err)
{
	struct bytes b = {0};
	const unsigned char *s = (const unsigned char *)text;
	bytes_reserve(&b, len);
	for (size_t i = 0; i < len && !b.oom;) {
		bool complete;
		size_t k = utf8_valid_prefix(s + i, len - i, &complete);
		if (complete) {
			bytes_append(&b, s + i, k);
			i += k;
		} else {
			bytes_append(&b, "\xEF\xBF\xBD", 3); /* U+FFFD */
			i += k ? k : 1;
		}
	}
	bytes_append(&b, "", 0); /* NUL-terminates, also when len == 0 */
	if (b.oom) {
		free(b.v);
		*out = NULL;
		*out_len = 0;
		return ctq_error_set(err, CTQ_ERR_NOMEM, NULL, "out of memory (%zu bytes of text)",
				     len);
	}
	*out = b.v;
	*out_len = b.n;
	return CTQ_OK;
}

static void workspace_free(struct workspace *w)
{
	pcre2_match_data_free(w->md);
	pieces_free(&w->a);
	pieces_free(&w->b);
	free(w->tmp.v);
	free(w->spans);
	free(w->sym);
	free(w->heap);
}

enum ctq_status ctq_tokenizer_encode(const struct ctq_tokenizer *t, const char *text,
				     size_t len, bool add_special_tokens, int32_t **ids,
				     size_t *n_ids, struct ctq_error *err)
{
	*ids = NULL;
	*n_ids = 0;
	const struct ctq_tokenizer_impl *T = t ? t->impl : NULL;
	if (!T)
		return ctq_error_set(err, CTQ_ERR_USAGE, NULL, "tokenizer is not loaded");
	if (!text && len)
		return ctq_error_set(err, CTQ_ERR_USAGE, NULL, "text is NULL");
	struct workspace w = {0};
	struct ids out = {0};
	struct splits raw = {0}, norm = {0};
	char *owned = NULL, *normalized = NULL;
	const char *clean = text;
	size_t clean_len = len;
	enum ctq_status st = CTQ_OK;

	if (!utf8_is_valid(text, len)) {
		if ((st = ctq_tokenizer_utf8_sanitize(text, len, &owned, &clean_len, err)))
			goto done;
		clean = owned;
	}
	w.md = pcre2_match_data_create(1, NULL);
	if (!w.md) {
		st = CTQ_ERR_NOMEM;
		goto done;
	}
	if (add_special_tokens)
		for (size_t i = 0; i < T->n_prefix; i++)
			ids_push(&out, T->prefix[i]);
	if (!find_added(T, &T->raw_set, clean, clean_len, &w, &raw)) {
		st = CTQ_ERR_NOMEM;
		goto done;
	}
	for (size_t i = 0; i < raw.n && !st; i++) {
		if (raw.v[i].id >= 0) {
			ids_push(&out, raw.v[i].id);
			continue;
		}
		const char *seg = clean + raw.v[i].start;
		size_t seg_len = raw.v[i].end - raw.v[i].start;
		if (T->nfc) {
			free(normalized);
			normalized = NULL;
			if ((st = ctq_tokenizer_nfc(seg, seg_len, &normalized, &seg_len, err)))
				break;
			seg = normalized;
		}
		if (!find_added(T, &T->normalized_set, seg, seg_len, &w, &norm)) {
			st = CTQ_ERR_NOMEM;
			break;
		}
		for (size_t k = 0; k < norm.n && !st; k++) {
			if (norm.v[k].id >= 0)
				ids_push(&out, norm.v[k].id);
			else
				st = encode_piece(T, seg + norm.v[k].start,
						  norm.v[k].end - norm.v[k].start, &w, &out, err);
		}
	}
	if (!st && add_special_tokens)
		for (size_t i = 0; i < T->n_suffix; i++)
			ids_push(&out, T->suffix[i]);
	if (!st && out.oom)
		st = CTQ_ERR_NOMEM;
done:
	if (st == CTQ_ERR_NOMEM)
		ctq_error_set(err, CTQ_ERR_NOMEM, NULL, "out of memory encoding %zu bytes", len);
	free(owned);
	free(normalized);
	free(raw.v);
	free(norm.v);
	workspace_free(&w);
	if (st) {
		free(out.v);
		return st;
	}
	if (out.n == 0) {
		free(out.v);
		out.v = NULL;
	}
	*ids = out.v;
	*n_ids = out.n;
	return CTQ_OK;
}

/* ---- decoding and lookups --------------------------------------------------- */

enum ctq_status ctq_tokenizer_decode(const struct ctq_tokenizer *t, const int32_t *ids, size_t n,
				     bool skip_special_tokens, char **text, size_t *len,
				     struct ctq_error *err)
{
	*text = NULL;
	*len = 0;
	const struct ctq_tokenizer_impl *T = t ? t->impl : NULL;
	if (!T)
		return ctq_error_set(err, CTQ_ERR_USAGE, NULL, "tokenizer is not loaded");
	struct bytes raw = {0};
	bytes_append(&raw, "", 0);
	for (size_t i = 0; i < n && !raw.oom; i++) {
		int32_t id = ids[i];
		if (id < 0 || (size_t)id >= T->n_ids)
			continue;
		if (skip_special_tokens && T->special[id])
			continue;
		/* ByteLevel decoder: a token whose every character is in the
		 * byte-level alphabet gives those bytes, any other its own text. */
		const char *s = T->tok[id];
		size_t m = T->tok_len[id], mark = raw.n;
		bool all = true;
		for (size_t k = 0; k < m && all;) {
			size_t clen;
			uint32_t cp = utf8_decode((const unsigned char *)s + k, &clen);
			all = cp < 0x144 && T->char_byte[cp] >= 0;
			if (all) {
				char b = (char)T->char_byte[cp];
				bytes_append(&raw, &b, 1);
			}
			k += clen;
		}
		if (!all) {
			raw.n = mark;
			bytes_append(&raw, s, m);
		}
	}
	enum ctq_status st = CTQ_OK;
	if (raw.oom)
		st = ctq_error_set(err, CTQ_ERR_NOMEM, NULL, "out of memory decoding %zu ids", n);
	else
		st = ctq_tokenizer_utf8_sanitize(raw.v, raw.n, text, len, err);
	free(raw.v);
	return st;
}

int32_t ctq_tokenizer_token_to_id(const struct ctq_tokenizer *t, const char *token)
{
	if (!t || !t->impl || !token)
		return -1;
	return str_index_find(t->impl, token, strlen(token));
}

const char *ctq_tokenizer_id_to_token(const struct ctq_tokenizer *t, int32_t id)
{
	if (!t || !t->impl || id < 0 || (size_t)id >= t->impl->n_ids)
		return NULL;
	return t->impl->tok[id];
}

size_t ctq_tokenizer_vocab_size(const struct ctq_tokenizer *t)
{
	return t && t->impl ? t->impl->n_ids : 0;
}

bool ctq_tokenizer_is_special(const struct ctq_tokenizer *t, int32_t id)
{
	return t && t->impl && id >= 0 && (size_t)id < t->impl->n_ids && t->impl->special[id];
}
