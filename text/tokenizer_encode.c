/* ctq tokenizer encoding (see tokenizer.h): added-token splitting, the
 * pre-tokenizer steps, byte-level mapping and BPE merges in the `tokenizers`
 * library's heap order, then the template. */
#include "text/tokenizer_internal.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unicode White_Space (Rust's char::is_whitespace and regex \s). */
static bool is_white_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
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
	struct ctq_strbuf text;
	size_t *off, *len; /* (cap) */
	size_t n, cap;
	bool oom;
};

/* Scratch of one encode call. */
struct workspace {
	pcre2_match_data *md;
	struct pieces a, b;
	struct ctq_strbuf tmp;
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
	p->text.len = 0;
	p->n = 0;
}

static void pieces_free(struct pieces *p)
{
	free(p->text.data);
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
	size_t start = p->text.len;
	if (map) {
		if (!ctq_strbuf_reserve(&p->text, 2 * n)) {
			p->oom = true;
			return;
		}
		for (size_t i = 0; i < n; i++) {
			unsigned char b = (unsigned char)s[i];
			memcpy(p->text.data + p->text.len, T->byte_utf8[b], T->byte_utf8_len[b]);
			p->text.len += T->byte_utf8_len[b];
		}
		p->text.data[p->text.len] = '\0';
	} else {
		ctq_strbuf_appendn(&p->text, s, n);
	}
	if (p->text.oom) {
		p->oom = true;
		return;
	}
	p->off[p->n] = start;
	p->len[p->n] = p->text.len - start;
	p->n++;
}

static bool spans_push(struct workspace *w, size_t start, size_t end, bool is_match)
{
	if (!ctq_grow((void **)&w->spans, &w->cap_spans, w->n_spans + 1, sizeof *w->spans))
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
				pos = me + ctq_utf8_seq_len((unsigned char)s[me]);
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
	case SPLIT_CONTIGUOUS:
	case SPLIT_MERGED_WITH_PREVIOUS: {
		/* A span joins the kept one before it: contiguous, when both are
		 * matches or both are not; merged-with-previous, when it is a
		 * match after a non-match. */
		const bool contiguous = st->behavior == SPLIT_CONTIGUOUS;
		bool previous = false;
		for (size_t i = 0; i < n; i++) {
			bool m = v[i].is_match;
			bool join = contiguous ? m == previous : m && !previous;
			if (join && k > 0)
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
		const char *s = in->text.data + in->off[i];
		size_t n = in->len[i];
		bool map = st->kind == STEP_BYTE_LEVEL;
		if (map && st->add_prefix_space && s[0] != ' ') {
			w->tmp.len = 0;
			ctq_strbuf_appendn(&w->tmp, " ", 1);
			ctq_strbuf_appendn(&w->tmp, s, n);
			if (w->tmp.oom)
				return CTQ_ERR_NOMEM;
			s = w->tmp.data;
			n = w->tmp.len;
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
	if (!ctq_grow((void **)&w->heap, &w->cap_heap, w->n_heap + 1, sizeof *w->heap))
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
	int32_t id = ctq_tok_str_index_find(T, s, n);
	return id >= 0 && (size_t)id < T->n_model ? id : -1;
}

static bool bpe_add(struct workspace *w, size_t *n_sym, int32_t id, uint32_t len)
{
	if (!ctq_grow((void **)&w->sym, &w->cap_sym, *n_sym + 1, sizeof *w->sym))
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
			ctq_tok_ids_push(out, id);
			return out->oom ? CTQ_ERR_NOMEM : CTQ_OK;
		}
	}
	size_t n_sym = 0;
	bool unk = false;
	uint32_t unk_len = 0;
	for (size_t i = 0; i < n;) {
		size_t clen = ctq_utf8_seq_len((unsigned char)s[i]);
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
		if (ctq_tok_merge_index_get(&T->merges, sym[i].id, sym[i + 1].id, &rank, &merged) &&
		    !heap_push(w, (struct bpe_merge){rank, (int32_t)i, merged}))
			return CTQ_ERR_NOMEM;
	while (w->n_heap) {
		struct bpe_merge top = heap_pop(w);
		struct bpe_symbol *cur = &sym[top.pos];
		if (cur->len == 0 || cur->next < 0)
			continue;
		int32_t next = cur->next;
		/* A stale entry: the pair at pos changed since it was queued. */
		if (!ctq_tok_merge_index_get(&T->merges, cur->id, sym[next].id, &rank, &merged) ||
		    merged != top.merged)
			continue;
		cur->id = top.merged;
		cur->len += sym[next].len;
		cur->next = sym[next].next;
		sym[next].len = 0;
		if (cur->next >= 0)
			sym[cur->next].prev = top.pos;
		if (cur->prev >= 0 &&
		    ctq_tok_merge_index_get(&T->merges, sym[cur->prev].id, cur->id, &rank, &merged) &&
		    !heap_push(w, (struct bpe_merge){rank, cur->prev, merged}))
			return CTQ_ERR_NOMEM;
		if (cur->next >= 0 &&
		    ctq_tok_merge_index_get(&T->merges, cur->id, sym[cur->next].id, &rank, &merged) &&
		    !heap_push(w, (struct bpe_merge){rank, top.pos, merged}))
			return CTQ_ERR_NOMEM;
	}
	for (size_t i = 0; i < n_sym; i++)
		if (sym[i].len)
			ctq_tok_ids_push(out, sym[i].id);
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
		enum ctq_status st = bpe_word(T, cur->text.data + cur->off[i], cur->len[i], w, out);
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
	if (!ctq_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
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
					   !is_word_char(T, s + ctq_utf8_last(s, start),
							 start - ctq_utf8_last(s, start), w->md);
			bool stop_space = stop == n || !is_word_char(T, s + stop, n - stop, w->md);
			if (!start_space || !stop_space)
				continue;
		}
		if (a->lstrip) {
			size_t k = start;
			while (k > 0) {
				size_t c = ctq_utf8_last(s, k), len;
				if (!is_white_space(ctq_utf8_decode((const unsigned char *)s + c, &len)))
					break;
				k = c;
			}
			start = k > start_offset ? k : start_offset;
		}
		if (a->rstrip) {
			while (stop < n) {
				size_t len;
				if (!is_white_space(ctq_utf8_decode((const unsigned char *)s + stop, &len)))
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
	struct ctq_strbuf b = {0};
	const unsigned char *s = (const unsigned char *)text;
	ctq_strbuf_reserve(&b, len);
	for (size_t i = 0; i < len && !b.oom;) {
		bool complete;
		size_t k = ctq_utf8_valid_prefix(s + i, len - i, &complete);
		if (complete) {
			ctq_strbuf_appendn(&b, text + i, k);
			i += k;
		} else {
			ctq_strbuf_appendn(&b, "\xEF\xBF\xBD", 3); /* U+FFFD */
			i += k ? k : 1;
		}
	}
	ctq_strbuf_appendn(&b, "", 0); /* NUL-terminates, also when len == 0 */
	if (b.oom) {
		free(b.data);
		*out = NULL;
		*out_len = 0;
		return ctq_error_set(err, CTQ_ERR_NOMEM, NULL, "out of memory (%zu bytes of text)",
				     len);
	}
	*out = b.data;
	*out_len = b.len;
	return CTQ_OK;
}

static void workspace_free(struct workspace *w)
{
	pcre2_match_data_free(w->md);
	pieces_free(&w->a);
	pieces_free(&w->b);
	free(w->tmp.data);
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

	if (!ctq_utf8_valid(text, len, NULL)) {
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
			ctq_tok_ids_push(&out, T->prefix[i]);
	if (!find_added(T, &T->raw_set, clean, clean_len, &w, &raw)) {
		st = CTQ_ERR_NOMEM;
		goto done;
	}
	for (size_t i = 0; i < raw.n && !st; i++) {
		if (raw.v[i].id >= 0) {
			ctq_tok_ids_push(&out, raw.v[i].id);
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
				ctq_tok_ids_push(&out, norm.v[k].id);
			else
				st = encode_piece(T, seg + norm.v[k].start,
						  norm.v[k].end - norm.v[k].start, &w, &out, err);
		}
	}
	if (!st && add_special_tokens)
		for (size_t i = 0; i < T->n_suffix; i++)
			ctq_tok_ids_push(&out, T->suffix[i]);
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
