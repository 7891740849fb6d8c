/* ctq eval (see eval.h): question preparation (render, shot rules,
 * lm-eval's context / continuation split) and the batched scorer. */
#include "eval/eval.h"
#include "core/arena.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "stats/accuracy.h"
#include "core/time.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SHOTS 5

int ctq_eval_argmax4(const double lp[4])
{
	int best = 0;
	for (int k = 1; k < 4; k++)
		if (lp[k] > lp[best])
			best = k;
	return best;
}

void ctq_eval_set_free(struct ctq_eval_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->items[i].ctx);
		for (int k = 0; k < 4; k++)
			free(s->items[i].cont[k]);
	}
	free(s->items);
	memset(s, 0, sizeof *s);
}

/* ---- preparation ----------------------------------------------------------------- */

/* The shot candidates of item i of subject s: the dev rows in file order,
 * without the item itself when the evaluated split is dev. */
static size_t shot_pool(const struct ctq_eval_data *d, size_t s, size_t i,
			const struct ctq_question **pool, size_t cap)
{
	const struct ctq_eval_subject *sub = &d->subjects[s];
	bool same = !strcmp(d->split, "dev");
	size_t n = 0;
	for (size_t j = 0; j < sub->dev.n && n < cap; j++)
		if (!(same && j == i))
			pool[n++] = &sub->dev.q[j];
	return n;
}

enum ctq_status ctq_eval_render(struct ctq_strbuf *sb, const struct ctq_eval_data *d,
				const struct ctq_eval_options *o, size_t s, size_t i, int k,
				struct ctq_error *err)
{
	const struct ctq_question *pool[MAX_SHOTS];
	size_t n = shot_pool(d, s, i, pool, MAX_SHOTS);
	if (k < 0 || (size_t)k > n)
		return ctq_error_set(err, CTQ_ERR_USAGE, d->subjects[s].meta->name,
				     "%d shots asked for; %zu dev rows available", k, n);
	return ctq_prompt_render(sb, o->bench, o->protocol, d->subjects[s].meta, pool, (size_t)k,
				 &d->subjects[s].items.q[i], err);
}

static enum ctq_status encode(const struct ctq_tokenizer *t, const char *text, size_t n,
			      int32_t **ids, size_t *n_ids, struct ctq_error *err)
{
	*ids = NULL;
	*n_ids = 0;
	return ctq_tokenizer_encode(t, text, n, false, ids, n_ids, err);
}

static size_t count_tokens(const struct ctq_tokenizer *t, const char *text, size_t n,
			   enum ctq_status *st, struct ctq_error *err)
{
	int32_t *ids;
	size_t m = 0;
	if (!*st)
		*st = encode(t, text, n, &ids, &m, err);
	if (!*st)
		free(ids);
	return m;
}

/* Python's len(s) - len(s.rstrip()) in bytes: the trailing whitespace. */
static size_t trailing_space(const char *s, size_t n)
{
	size_t a, len;
	ctq_py_strip(s, n, &a, &len);
	return len ? n - (a + len) : n;
}

/* encode(context + moved + continuation) split after the context's ids. */
static enum ctq_status split_whole(const struct ctq_tokenizer *t, const char *ctx, size_t n_ctx,
				   const char *cont, size_t n_cont, const int32_t *ctx_ids,
				   size_t n_ctx_ids, struct ctq_strbuf *tmp, int32_t **cont_ids,
				   size_t *n_cont_ids, bool *merged, struct ctq_error *err)
{
	*cont_ids = NULL;
	*n_cont_ids = 0;
	ctq_strbuf_reset(tmp);
	ctq_strbuf_appendn(tmp, ctx, n_ctx);
	ctq_strbuf_appendn(tmp, cont, n_cont);
	if (tmp->oom)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	int32_t *whole = NULL;
	size_t n_whole = 0;
	enum ctq_status st = encode(t, tmp->data, tmp->len, &whole, &n_whole, err);
	if (st)
		return st;
	if (n_whole <= n_ctx_ids) {
		free(whole);
		return ctq_error_set(err, CTQ_ERR_PARSE, "eval",
				     "the continuation \"%.*s\" encodes to no token after its context (lm-eval asserts the same)",
				     (int)n_cont, cont);
	}
	if (memcmp(whole, ctx_ids, n_ctx_ids * sizeof *ctx_ids))
		*merged = true;
	*n_cont_ids = n_whole - n_ctx_ids;
	memmove(whole, whole + n_ctx_ids, *n_cont_ids * sizeof *whole);
	*cont_ids = whole;
	return CTQ_OK;
}

enum ctq_status ctq_eval_encode_pair(const struct ctq_tokenizer *t, const char *context,
				     size_t n_context, const char *continuation,
				     int32_t **ctx_ids, size_t *n_ctx_ids, int32_t **cont_ids,
				     size_t *n_cont_ids, bool *merged, struct ctq_error *err)
{
	*ctx_ids = *cont_ids = NULL;
	*n_ctx_ids = *n_cont_ids = 0;
	*merged = false;
	size_t sp = trailing_space(context, n_context), nc = n_context - sp;
	struct ctq_strbuf cont, tmp;
	ctq_strbuf_init(&cont);
	ctq_strbuf_init(&tmp);
	ctq_strbuf_appendn(&cont, context + nc, sp);
	ctq_strbuf_append(&cont, continuation);
	enum ctq_status st = cont.oom ? ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory")
				      : encode(t, context, nc, ctx_ids, n_ctx_ids, err);
	if (!st)
		st = split_whole(t, context, nc, cont.data, cont.len, *ctx_ids, *n_ctx_ids, &tmp, cont_ids,
				 n_cont_ids, merged, err);
	if (st) {
		free(*ctx_ids);
		*ctx_ids = NULL;
		*n_ctx_ids = 0;
	}
	ctq_strbuf_free(&cont);
	ctq_strbuf_free(&tmp);
	return st;
}

/* Tokenizes the rendered prompt of item it into its context and the four
 * continuations as ctq_eval_encode_pair does, encoding the context once. */
static enum ctq_status tokenize(struct ctq_eval_item *it, const struct ctq_strbuf *prompt,
				const struct ctq_eval_options *o, const struct ctq_tokenizer *t,
				struct ctq_strbuf *tmp, struct ctq_error *err)
{
	/* The protocols' prompts end at the answer cue, never in whitespace,
	 * but the move is lm-eval's and costs nothing. */
	size_t sp = trailing_space(prompt->data, prompt->len), nc = prompt->len - sp;
	size_t n_ctx = 0;
	int32_t *ctx = NULL;
	struct ctq_strbuf cont;
	ctq_strbuf_init(&cont);
	enum ctq_status st = encode(t, prompt->data, nc, &ctx, &n_ctx, err);
	for (int k = 0; k < 4 && !st; k++) {
		ctq_strbuf_reset(&cont);
		ctq_strbuf_appendn(&cont, prompt->data + nc, sp);
		ctq_strbuf_append(&cont, ctq_prompt_continuation(o->bench, o->protocol, k));
		size_t n = 0;
		st = cont.oom ? ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory")
			      : split_whole(t, prompt->data, nc, cont.data, cont.len, ctx, n_ctx, tmp,
					    &it->cont[k], &n, &it->merged, err);
		it->n_cont[k] = (int64_t)n;
	}
	ctq_strbuf_free(&cont);
	if (!st) {
		size_t bos = o->add_bos ? 1 : 0;
		it->ctx = ctq_malloc((n_ctx + bos) * sizeof(int32_t));
		if (!it->ctx) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
		} else {
			if (bos)
				it->ctx[0] = o->bos_id;
			if (n_ctx)
				memcpy(it->ctx + bos, ctx, n_ctx * sizeof(int32_t));
			it->n_ctx = (int64_t)(n_ctx + bos);
			it->n_prompt = it->n_ctx;
		}
	}
	free(ctx);
	return st;
}

static void drop_tokens(struct ctq_eval_item *it)
{
	free(it->ctx);
	it->ctx = NULL;
	it->n_ctx = 0;
	for (int k = 0; k < 4; k++) {
		free(it->cont[k]);
		it->cont[k] = NULL;
		it->n_cont[k] = 0;
	}
	it->merged = false;
}

static int64_t max_cont(const struct ctq_eval_item *it)
{
	int64_t m = 0;
	for (int k = 0; k < 4; k++)
		if (it->n_cont[k] > m)
			m = it->n_cont[k];
	return m;
}

static bool fits(const struct ctq_eval_item *it, int64_t max_context)
{
	return it->n_ctx + max_cont(it) - 1 <= max_context;
}

static void sha_of(const struct ctq_strbuf *sb, char hex[65])
{
	unsigned char dg[CTQ_SHA256_BYTES];
	ctq_sha256(sb->data, sb->len, dg);
	ctq_sha256_hex(dg, hex);
}

/* Renders header (optional) + shots + question into sb. */
static enum ctq_status render_parts(struct ctq_strbuf *sb, const struct ctq_eval_options *o,
				    const struct ctq_subject_meta *meta, bool header,
				    const struct ctq_question *const *shots, size_t n_shots,
				    const struct ctq_question *q, struct ctq_error *err)
{
	ctq_strbuf_reset(sb);
	if (header)
		return ctq_prompt_render(sb, o->bench, o->protocol, meta, shots, n_shots, q, err);
	ctq_prompt_item(sb, o->bench, o->protocol, q, false);
	return sb->oom ? ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory") : CTQ_OK;
}

/* CMMLU gen_prompt's rule: with the pieces' token counts, drop every shot
 * of the largest count while the shots' total is at least what the header
 * and question leave; keep only the question (no header) when those two
 * alone exceed the limit. Writes the shots kept into keep (in order). */
static enum ctq_status cmmlu_shots(const struct ctq_eval_options *o,
				   const struct ctq_subject_meta *meta,
				   const struct ctq_question *const *pool, size_t k,
				   const struct ctq_question *q, const struct ctq_tokenizer *t,
				   struct ctq_strbuf *tmp, const struct ctq_question **keep,
				   size_t *n_keep, bool *header, struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	int64_t limit = o->max_context;
	ctq_strbuf_reset(tmp);
	ctq_prompt_header(tmp, o->bench, o->protocol, meta);
	int64_t start_end = (int64_t)count_tokens(t, tmp->data, tmp->len, &st, err);
	ctq_strbuf_reset(tmp);
	ctq_prompt_item(tmp, o->bench, o->protocol, q, false);
	start_end += (int64_t)count_tokens(t, tmp->data, tmp->len, &st, err);
	*n_keep = 0;
	*header = true;
	if (st)
		return st;
	if (start_end > limit) {
		*header = false;
		return CTQ_OK;
	}
	int64_t len[MAX_SHOTS];
	bool in[MAX_SHOTS];
	for (size_t j = 0; j < k && !st; j++) {
		ctq_strbuf_reset(tmp);
		ctq_prompt_item(tmp, o->bench, o->protocol, pool[j], true);
		len[j] = (int64_t)count_tokens(t, tmp->data, tmp->len, &st, err);
		in[j] = true;
	}
	if (st)
		return st;
	for (;;) {
		int64_t sum = 0, longest = -1;
		for (size_t j = 0; j < k; j++)
			if (in[j]) {
				sum += len[j];
				longest = len[j] > longest ? len[j] : longest;
			}
		if (longest < 0 || sum < limit - start_end)
			break;
		for (size_t j = 0; j < k; j++)
			if (in[j] && len[j] == longest)
				in[j] = false;
	}
	for (size_t j = 0; j < k; j++)
		if (in[j])
			keep[(*n_keep)++] = pool[j];
	return CTQ_OK;
}

static enum ctq_status prepare_item(struct ctq_eval_item *it, const struct ctq_eval_data *d,
				    const struct ctq_eval_options *o, const struct ctq_tokenizer *t,
				    struct ctq_strbuf *sb, struct ctq_strbuf *tmp,
				    size_t *fewer, struct ctq_error *err)
{
	const struct ctq_eval_subject *sub = &d->subjects[it->subject];
	const struct ctq_question *q = &sub->items.q[it->index];
	const struct ctq_question *pool[MAX_SHOTS];
	size_t n_pool = shot_pool(d, it->subject, it->index, pool, MAX_SHOTS);
	size_t k = (size_t)o->shots < n_pool ? (size_t)o->shots : n_pool;
	enum ctq_overflow rule = ctq_protocol_overflow(o->bench, o->protocol);
	enum ctq_status st;
	if (rule == CTQ_OVERFLOW_DROP_LONGEST) {
		const struct ctq_question *keep[MAX_SHOTS];
		size_t n_keep = 0;
		bool header = true;
		if ((st = cmmlu_shots(o, sub->meta, pool, k, q, t, tmp, keep, &n_keep, &header, err)) ||
		    (st = render_parts(sb, o, sub->meta, header, keep, n_keep, q, err)))
			return st;
		if (n_keep < k || !header)
			*fewer = 1;
		it->shots = (int)n_keep;
		sha_of(sb, it->sha256);
		if ((st = tokenize(it, sb, o, t, tmp, err)))
			return st;
	} else {
		for (;;) {
			if ((st = render_parts(sb, o, sub->meta, true, pool, k, q, err)))
				return st;
			it->shots = (int)k;
			sha_of(sb, it->sha256);
			if ((st = tokenize(it, sb, o, t, tmp, err)))
				return st;
			if (fits(it, o->max_context) || rule == CTQ_OVERFLOW_LEFT_TRUNCATE || k == 0)
				break;
			drop_tokens(it);
			k--;
			*fewer = 1;
		}
	}
	if (!fits(it, o->max_context)) {
		int64_t drop = it->n_ctx + max_cont(it) - 1 - o->max_context;
		if (drop >= it->n_ctx)
			return ctq_error_set(err, CTQ_ERR_USAGE, sub->path,
					     "question %s: the continuation alone exceeds the %lld-token context",
					     q->id, (long long)o->max_context);
		memmove(it->ctx, it->ctx + drop, (size_t)(it->n_ctx - drop) * sizeof(int32_t));
		it->n_ctx -= drop;
		it->truncated = true;
	}
	return CTQ_OK;
}

enum ctq_status ctq_eval_prepare(struct ctq_eval_set *s, const struct ctq_eval_data *d,
				 const struct ctq_eval_options *o, const struct ctq_tokenizer *t,
				 struct ctq_error *err)
{
	memset(s, 0, sizeof *s);
	if (o->shots < 0 || o->shots > MAX_SHOTS || o->max_context < 2)
		return ctq_error_set(err, CTQ_ERR_USAGE, "eval",
				     "shots %d (0..%d), max context %lld (at least 2)", o->shots, MAX_SHOTS,
				     (long long)o->max_context);
	if (!ctq_protocol_id(o->bench, o->protocol))
		return ctq_error_set(err, CTQ_ERR_USAGE, "--protocol",
				     "%s has no %s protocol (the spec defines none)",
				     ctq_bench_name(o->bench), ctq_protocol_name(o->protocol));
	if (o->add_bos && o->bos_id < 0)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--add-bos", "the tokenizer names no BOS token");
	size_t n = 0;
	for (size_t i = 0; i < d->n; i++) {
		size_t m = d->subjects[i].items.n;
		n += o->limit && o->limit < m ? o->limit : m;
	}
	s->items = ctq_calloc(n ? n : 1, sizeof *s->items);
	if (!s->items)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	for (size_t i = 0; i < d->n; i++) {
		size_t m = d->subjects[i].items.n;
		m = o->limit && o->limit < m ? o->limit : m;
		for (size_t j = 0; j < m; j++)
			s->items[s->n++] = (struct ctq_eval_item){.subject = i, .index = j};
	}
	/* The first failing item (by index) names the error, whatever the
	 * thread order. */
	size_t fail_at = SIZE_MAX;
	enum ctq_status fail_st = CTQ_OK;
	struct ctq_error fail_err = {0};
	size_t fewer = 0;
	const long nn = (long)s->n;
#pragma omp parallel reduction(+ : fewer)
	{
		struct ctq_strbuf sb, tmp;
		ctq_strbuf_init(&sb);
		ctq_strbuf_init(&tmp);
#pragma omp for schedule(dynamic, 4)
		for (long i = 0; i < nn; i++) {
			struct ctq_error e = {0};
			size_t f = 0;
			enum ctq_status st = prepare_item(&s->items[i], d, o, t, &sb, &tmp, &f, &e);
			fewer += f;
			if (st) {
#pragma omp critical(ctq_eval_prepare_error)
				if ((size_t)i < fail_at) {
					fail_at = (size_t)i;
					fail_st = st;
					fail_err = e;
				}
			}
		}
		ctq_strbuf_free(&sb);
		ctq_strbuf_free(&tmp);
	}
	if (fail_st) {
		if (err && !err->status)
			*err = fail_err;
		ctq_eval_set_free(s);
		return fail_st;
	}
	s->n_fewer_shots = fewer;
	for (size_t i = 0; i < s->n; i++) {
		const struct ctq_eval_item *it = &s->items[i];
		int64_t len = it->n_ctx + max_cont(it) - 1;
		s->max_len = len > s->max_len ? len : s->max_len;
		s->n_truncated += it->truncated;
		s->n_merged += it->merged;
		s->n_multi_token += max_cont(it) > 1;
	}
	return CTQ_OK;
}

/* ---- scoring ---------------------------------------------------------------------- */

/* Items that share a token prefix: consecutive items of one subject with
 * the same shot count, none truncated. */
struct group {
	size_t first, end, next; /* items [first, end); next not yet assigned */
	int64_t lcp;             /* common prefix tokens, < every member's n_ctx */
	int64_t suffix_mean;     /* mean tokens after the prefix */
	long held;               /* slots holding this prefix */
};

struct slot {
	long g;                  /* group whose prefix the KV holds, -1 none */
	bool busy;
	size_t item;
	int phase;               /* 0: context; 1..4: tail of choice phase-1 */
	const int32_t *feed;     /* tokens of the segment being fed */
	int64_t n_feed, done, pos0;
	bool rows_all;           /* a row per fed token (tails) or only the last */
	int64_t steady;          /* tokens per question once the prefix is held */
};

struct row_ref {
	long slot;
	int64_t j;               /* tail token index, -1 for the context's last */
};

static enum ctq_status make_groups(const struct ctq_eval_set *s, struct group **out, long *n_out,
				   struct ctq_error *err)
{
	struct group *g = ctq_calloc(s->n ? s->n : 1, sizeof *g);
	if (!g)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	long n = 0;
	for (size_t i = 0; i < s->n;) {
		const struct ctq_eval_item *a = &s->items[i];
		size_t e = i + 1;
		while (!a->truncated && e < s->n && s->items[e].subject == a->subject &&
		       s->items[e].shots == a->shots && !s->items[e].truncated)
			e++;
		int64_t lcp = a->n_ctx - 1, sum = 0;
		for (size_t j = i + 1; j < e; j++) {
			const struct ctq_eval_item *b = &s->items[j];
			int64_t m = b->n_ctx - 1 < lcp ? b->n_ctx - 1 : lcp, k = 0;
			while (k < m && b->ctx[k] == a->ctx[k])
				k++;
			lcp = k;
		}
		for (size_t j = i; j < e; j++)
			sum += s->items[j].n_ctx - lcp;
		g[n++] = (struct group){.first = i, .end = e, .next = i, .lcp = lcp,
					.suffix_mean = sum / (int64_t)(e - i)};
		i = e;
	}
	*out = g;
	*n_out = n;
	return CTQ_OK;
}

/* The next tail (a continuation of several tokens) of slot sl's item after
 * choice `after`, or finishes the item. Returns true when it finished. */
static bool next_phase(struct slot *sl, const struct ctq_eval_set *s, int after)
{
	const struct ctq_eval_item *it = &s->items[sl->item];
	for (int k = after + 1; k < 4; k++)
		if (it->n_cont[k] > 1) {
			sl->phase = k + 1;
			sl->feed = it->cont[k];
			sl->n_feed = it->n_cont[k] - 1;
			sl->done = 0;
			sl->pos0 = it->n_ctx;
			sl->rows_all = true;
			return false;
		}
	sl->busy = false;
	return true;
}

static void start_item(struct slot *sl, struct group *g, const struct ctq_eval_set *s,
		       bool prefix_held)
{
	const struct ctq_eval_item *it = &s->items[g->next];
	sl->item = g->next++;
	sl->busy = true;
	sl->phase = 0;
	sl->pos0 = prefix_held ? g->lcp : 0;
	sl->feed = it->ctx + sl->pos0;
	sl->n_feed = it->n_ctx - sl->pos0;
	sl->done = 0;
	sl->rows_all = false;
	sl->steady = g->suffix_mean;
}

/* Every token id of s inside the model's vocabulary of V entries. */
static enum ctq_status check_vocab(const struct ctq_eval_set *s, int64_t V, struct ctq_error *err)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct ctq_eval_item *it = &s->items[i];
		for (int64_t t = 0; t < it->n_ctx; t++)
			if (it->ctx[t] < 0 || it->ctx[t] >= V)
				return ctq_error_set(err, CTQ_ERR_USAGE, "--tokenizer",
						     "token id %d is outside the model's vocabulary of %lld",
						     it->ctx[t], (long long)V);
		for (int k = 0; k < 4; k++)
			for (int64_t t = 0; t < it->n_cont[k]; t++)
				if (it->cont[k][t] < 0 || it->cont[k][t] >= V)
					return ctq_error_set(err, CTQ_ERR_USAGE, "--tokenizer",
							     "token id %d is outside the model's vocabulary of %lld",
							     it->cont[k][t], (long long)V);
	}
	return CTQ_OK;
}

/* The scheduler of one ctq_eval_score call: its groups, its slots and the
 * buffers of one forward call. */
struct sched {
	const struct ctq_eval_set *s;
	struct group *groups;    /* (n_groups) */
	long n_groups;
	long unstarted;          /* groups before this index have all started */
	struct slot *slots;      /* (n_slots) */
	long n_slots;
	int64_t T_max, V;        /* tokens per call; vocabulary */
	long rows_cap;           /* rows of logits per call */
	int32_t *ids, *sl_of, *pos; /* (T_max) a call's tokens, their slots, their positions */
	int64_t *rows;           /* (rows_cap) tokens of the call whose logits come back */
	struct row_ref *refs;    /* (rows_cap) what each row scores */
	float *logits;           /* (rows_cap, V) */
	double *lse;             /* (rows_cap) log-sum-exp of each row */
};

/* Idle slots: the held prefix's next question first (free), then a group no
 * slot holds yet (its prefix is needed once anyway), then, while a call's
 * steady-state tokens stay under half of max_tokens, a second slot for a
 * group with at least two questions left per slot (parallelism that costs
 * a prefix). */
static void fill_slots(struct sched *S)
{
	struct group *groups = S->groups;
	const long n_groups = S->n_groups;
	int64_t steady = 0;
	for (long i = 0; i < S->n_slots; i++)
		if (S->slots[i].busy)
			steady += S->slots[i].steady;
	for (long i = 0; i < S->n_slots; i++) {
		struct slot *sl = &S->slots[i];
		if (sl->busy)
			continue;
		if (sl->g >= 0 && groups[sl->g].next < groups[sl->g].end) {
			start_item(sl, &groups[sl->g], S->s, true);
			steady += sl->steady;
			continue;
		}
		if (sl->g >= 0)
			groups[sl->g].held--, sl->g = -1;
		while (S->unstarted < n_groups && (groups[S->unstarted].held > 0 ||
						   groups[S->unstarted].next == groups[S->unstarted].end))
			S->unstarted++;
		long pick = -1;
		for (long g = S->unstarted; g < n_groups && pick < 0; g++)
			if (groups[g].held == 0 && groups[g].next < groups[g].end)
				pick = g;
		if (pick < 0 && 2 * steady < S->T_max) {
			double best = 0;
			for (long g = 0; g < n_groups; g++) {
				size_t rem = groups[g].end - groups[g].next;
				double ratio = (double)rem / (double)(groups[g].held + 1);
				if (rem && ratio >= 2.0 && ratio > best)
					best = ratio, pick = g;
			}
		}
		if (pick < 0)
			continue;
		sl->g = pick;
		groups[pick].held++;
		start_item(sl, &groups[pick], S->s, false);
		steady += sl->steady;
	}
}

/* Builds call number `call`: every busy slot's next tokens, round-robin from
 * a rotating start so a long prefix cannot starve the others. Returns the
 * tokens (0: nothing to feed); *n_rows the rows of logits asked for. */
static int64_t build_call(struct sched *S, long call, long *n_rows_out)
{
	const int64_t T_max = S->T_max;
	const long n_slots = S->n_slots, rows_cap = S->rows_cap;
	int64_t T = 0;
	long n_rows = 0;
	for (long q = 0; q < n_slots && T < T_max; q++) {
		long i = (q + call) % n_slots;
		struct slot *sl = &S->slots[i];
		if (!sl->busy)
			continue;
		int64_t m = sl->n_feed - sl->done;
		if (m > T_max - T)
			m = T_max - T;
		if (sl->rows_all && m > rows_cap - n_rows)
			m = rows_cap - n_rows;
		else if (!sl->rows_all && sl->done + m == sl->n_feed && n_rows == rows_cap)
			m--;
		for (int64_t j = 0; j < m; j++) {
			int64_t at = sl->done + j;
			S->ids[T] = sl->feed[at];
			S->sl_of[T] = (int32_t)i;
			S->pos[T] = (int32_t)(sl->pos0 + at);
			if (sl->rows_all || at == sl->n_feed - 1) {
				S->rows[n_rows] = T;
				S->refs[n_rows++] = (struct row_ref){i, sl->rows_all ? at : -1};
			}
			T++;
		}
		sl->done += m;
	}
	*n_rows_out = n_rows;
	return T;
}

/* Adds the call's n_rows rows of logits to the log-probabilities of their
 * items' choices and moves their slots on. Returns the questions finished. */
static size_t score_rows(struct sched *S, long n_rows, double (*logprob)[4])
{
	const int64_t V = S->V;
	const float *logits = S->logits;
	double *lse = S->lse;
	size_t done = 0;
#pragma omp parallel for schedule(static)
	for (long k = 0; k < n_rows; k++) {
		const float *lg = logits + (size_t)k * (size_t)V;
		double mx = -INFINITY, sum = 0;
		for (int64_t v = 0; v < V; v++)
			mx = lg[v] > mx ? lg[v] : mx;
		for (int64_t v = 0; v < V; v++)
			sum += exp((double)lg[v] - mx);
		lse[k] = mx + log(sum);
	}
	for (long k = 0; k < n_rows; k++) {
		const float *lg = logits + (size_t)k * (size_t)V;
		struct slot *sl = &S->slots[S->refs[k].slot];
		const struct ctq_eval_item *it = &S->s->items[sl->item];
		double *lp = logprob[sl->item];
		if (sl->phase == 0) {
			for (int q = 0; q < 4; q++)
				lp[q] = (double)lg[it->cont[q][0]] - lse[k];
			done += next_phase(sl, S->s, -1);
		} else {
			int q = sl->phase - 1;
			int64_t j = S->refs[k].j;
			lp[q] += (double)lg[it->cont[q][j + 1]] - lse[k];
			if (j == it->n_cont[q] - 2)
				done += next_phase(sl, S->s, q);
		}
	}
	return done;
}

enum ctq_status ctq_eval_score(struct ctq_model *m, const struct ctq_eval_set *s,
			       double (*logprob)[4], ctq_eval_progress_fn progress, void *pctx,
			       struct ctq_eval_counters *counters, struct ctq_error *err)
{
	const int64_t V = ctq_model_cfg(m)->vocab, T_max = m->limits.max_tokens;
	const long n_slots = (long)m->limits.max_slots;
	if (s->max_len > m->limits.max_len || n_slots < 1 || T_max < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "eval",
				     "the model holds %lld positions in %ld slots; the longest question needs %lld",
				     (long long)m->limits.max_len, n_slots, (long long)s->max_len);
	enum ctq_status st = check_vocab(s, V, err);
	if (st)
		return st;
	struct sched S = {.s = s, .n_slots = n_slots, .T_max = T_max, .V = V,
			  .rows_cap = n_slots + 256};
	const long rows_cap = S.rows_cap;
	double t0 = ctq_now_s();
	st = make_groups(s, &S.groups, &S.n_groups, err);
	S.slots = ctq_calloc((size_t)n_slots, sizeof *S.slots);
	S.ids = ctq_malloc((size_t)T_max * 4);
	S.sl_of = ctq_malloc((size_t)T_max * 4);
	S.pos = ctq_malloc((size_t)T_max * 4);
	S.rows = ctq_malloc((size_t)rows_cap * 8);
	S.refs = ctq_malloc((size_t)rows_cap * sizeof *S.refs);
	S.logits = ctq_malloc((size_t)rows_cap * (size_t)V * 4);
	S.lse = ctq_malloc((size_t)rows_cap * sizeof *S.lse);
	if (!st && (!S.slots || !S.ids || !S.sl_of || !S.pos || !S.rows || !S.refs || !S.logits ||
		    !S.lse))
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory for %ld rows of logits",
				   rows_cap);
	for (long i = 0; i < n_slots && S.slots; i++)
		S.slots[i].g = -1;
	struct ctq_eval_counters c = {0};
	for (size_t i = 0; i < s->n; i++) {
		const struct ctq_eval_item *it = &s->items[i];
		c.prompt_tokens += it->n_ctx;
		for (int k = 0; k < 4; k++)
			c.prompt_tokens += it->n_cont[k] - 1;
	}
	size_t done = 0;
	for (long call = 0; !st && done < s->n; call++) {
		fill_slots(&S);
		long n_rows = 0;
		int64_t T = build_call(&S, call, &n_rows);
		if (T == 0) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, "eval", "scheduler stalled with %zu questions left",
					   s->n - done);
			break;
		}
		if ((st = ctq_model_forward(m, S.ids, S.sl_of, S.pos, T, S.rows, n_rows, S.logits, err)))
			break;
		c.tokens_fed += T;
		c.calls++;
		done += score_rows(&S, n_rows, logprob);
		if (progress)
			progress(pctx, done, s->n);
	}
	c.seconds = ctq_now_s() - t0;
	if (counters)
		*counters = c;
	free(S.groups);
	free(S.slots);
	free(S.ids);
	free(S.sl_of);
	free(S.pos);
	free(S.rows);
	free(S.refs);
	free(S.logits);
	free(S.lse);
	return st;
}
