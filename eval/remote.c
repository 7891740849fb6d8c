/* ctq eval --url: scoring through a server's completions endpoint (see
 * remote.h). */
#include "eval/remote.h"
#include "core/arena.h"
#include "core/time.h"
#include "net/http.h"
#include "net/openai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One request in flight: item, choice, its body and transfer. */
struct job {
	size_t item;
	int choice;
	struct ctq_openai_text_split split; /* string prompts: where the context ends */
	struct ctq_strbuf body;
	struct ctq_http_req http;
};

struct scoring {
	const struct ctq_eval_remote_options *o;
	const struct ctq_eval_set *s;
	double (*lp)[4];
	unsigned char *have;  /* (n) choices scored per item */
	size_t items_done;
	char endpoint[2048];
	bool text; /* string prompts */
	size_t cont_differ; /* string prompts: continuations the server tokenized otherwise */
	enum ctq_status st;
	struct ctq_error *err;
};

static size_t utf8_chars(const char *p, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)p[i] & 0xC0) != 0x80;
	return c;
}

/* Renders job j's body for choice k (item k / 4, choice k % 4): the ids,
 * or with sc->text their text and where its context ends. */
static enum ctq_status job_body(const struct scoring *sc, struct job *j, size_t k, struct ctq_error *err)
{
	const struct ctq_eval_item *it = &sc->s->items[k / 4];
	const int c = (int)(k % 4);
	const size_t n = (size_t)(it->n_ctx + it->n_cont[c]);
	int32_t *ids = ctq_malloc(n * sizeof *ids);
	if (!ids)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval --url", "out of memory");
	memcpy(ids, it->ctx, (size_t)it->n_ctx * sizeof *ids);
	memcpy(ids + it->n_ctx, it->cont[c], (size_t)it->n_cont[c] * sizeof *ids);
	char *all = NULL, *ctx = NULL;
	size_t n_all = 0, n_ctx = 0;
	enum ctq_status st = CTQ_OK;
	if (sc->text && !(st = ctq_tokenizer_decode(sc->o->tok, ids, n, false, &all, &n_all, err)) &&
	    !(st = ctq_tokenizer_decode(sc->o->tok, ids, (size_t)it->n_ctx, false, &ctx, &n_ctx, err)) &&
	    (n_ctx > n_all || memcmp(ctx, all, n_ctx)))
		st = ctq_error_set(err, CTQ_ERR_PARSE, "eval --url",
				   "question %zu choice %c: the context's text is no prefix of the prompt's "
				   "(a character cut at the boundary): no string prompt can be split there",
				   k / 4, 'A' + c);
	if (!st) {
		j->split = (struct ctq_openai_text_split){.ctx_chars = utf8_chars(all, n_ctx), .ctx_bytes = n_ctx,
							  .prompt_chars = utf8_chars(all, n_all),
							  .prompt_bytes = n_all, .n_ctx = (size_t)it->n_ctx,
							  .n_cont = (size_t)it->n_cont[c]};
		ctq_strbuf_reset(&j->body);
		ctq_openai_echo_body(&j->body, sc->o->model, ids, n, sc->text ? all : NULL);
		if (j->body.oom)
			st = ctq_error_set(err, CTQ_ERR_NOMEM, "eval --url", "out of memory");
	}
	free(all);
	free(ctx);
	ctq_free(ids);
	j->item = k / 4;
	j->choice = c;
	return st;
}

static long timeout_ms(const struct scoring *sc)
{
	return (long)(1e3 * (sc->o->request_timeout_s > 0 ? sc->o->request_timeout_s : CTQ_EVAL_REMOTE_TIMEOUT_S));
}

static enum ctq_status job_start(struct scoring *sc, struct ctq_http *h, struct job *j, size_t k,
				 struct ctq_error *err)
{
	enum ctq_status st = job_body(sc, j, k, err);
	if (st)
		return st;
	ctq_http_req_free(&j->http);
	j->http = (struct ctq_http_req){.url = sc->endpoint, .body = j->body.data, .body_len = j->body.len,
					.timeout_ms = timeout_ms(sc), .ctx = j};
	return ctq_http_start(h, &j->http, err);
}

/* The first choice sent alone with token ids, and when the server answers
 * it >= 400, as text: the prompt format of the run (sc->text, info). A
 * failure of the first form that is no refusal, or a tokenizer-less run,
 * leaves ids (the scoring then fails with the reason). */
static enum ctq_status probe(struct scoring *sc, struct ctq_eval_remote_info *info, struct ctq_error *err)
{
	struct job j = {0};
	ctq_strbuf_init(&j.body);
	enum ctq_status st = job_body(sc, &j, 0, err);
	struct ctq_http_req r = {.url = sc->endpoint, .body = j.body.data, .body_len = j.body.len,
				 .timeout_ms = timeout_ms(sc)};
	if (!st)
		st = ctq_http_fetch(&r, err);
	const struct ctq_eval_item *it = &sc->s->items[0];
	char where[160];
	snprintf(where, sizeof where, "%s question 0 (subject %zu, row %zu) choice A", sc->endpoint, it->subject,
		 it->index);
	if (!st && r.failed && r.status >= 400 && sc->o->tok) {
		ctq_openai_error_reason(&r);
		char ids_reason[400];
		snprintf(ids_reason, sizeof ids_reason, "%s", r.reason);
		sc->text = true;
		ctq_http_req_free(&r);
		st = job_body(sc, &j, 0, err);
		r = (struct ctq_http_req){.url = sc->endpoint, .body = j.body.data, .body_len = j.body.len,
					  .timeout_ms = timeout_ms(sc)};
		if (!st)
			st = ctq_http_fetch(&r, err);
		if (!st && r.failed) {
			ctq_openai_error_reason(&r);
			st = ctq_error_set(err, CTQ_ERR_ENV, where,
					   "the server refused the first request with token ids (%s) and as "
					   "text (%s)",
					   ids_reason, r.reason);
		}
		if (!st)
			snprintf(info->learned, sizeof info->learned,
				 "server refuses token-id prompts (%.200s%s); sending context + continuation as "
				 "text, the continuation split at the context's end by the echoed tokens",
				 ids_reason, strlen(ids_reason) > 200 ? "..." : "");
	}
	info->text_prompts = sc->text;
	ctq_http_req_free(&r);
	ctq_strbuf_free(&j.body);
	return st;
}

static void job_done(void *ctx, struct ctq_http_req *r)
{
	struct scoring *sc = ctx;
	struct job *j = r->ctx;
	if (sc->st)
		return;
	const struct ctq_eval_item *it = &sc->s->items[j->item];
	char where[160];
	snprintf(where, sizeof where, "%s question %zu (subject %zu, row %zu) choice %c", sc->endpoint,
		 j->item, it->subject, it->index, 'A' + j->choice);
	if (r->failed) {
		ctq_openai_error_reason(r);
		sc->st = ctq_error_set(sc->err, CTQ_ERR_ENV, where, "%s: %s",
				       r->status >= 400 || !r->status ? "the server refused the request"
								      : "the request failed",
				       r->reason);
		return;
	}
	double sum = 0;
	size_t scored = 0;
	if (sc->text)
		sc->st = ctq_openai_echo_text_logprobs(r->resp.data, r->resp.len, &j->split, &sum, &scored, where,
						       sc->err);
	else
		sc->st = ctq_openai_echo_logprobs(r->resp.data, r->resp.len,
						  (size_t)(it->n_ctx + it->n_cont[j->choice]), (size_t)it->n_ctx,
						  (size_t)it->n_cont[j->choice], &sum, where, sc->err);
	if (sc->st)
		return;
	sc->cont_differ += sc->text && scored != (size_t)it->n_cont[j->choice];
	sc->lp[j->item][j->choice] = sum;
	if (++sc->have[j->item] == 4)
		sc->items_done++;
}

enum ctq_status ctq_eval_remote_score(const struct ctq_eval_remote_options *o, const struct ctq_eval_set *s,
				      double (*logprob)[4], ctq_eval_progress_fn progress, void *ctx,
				      struct ctq_eval_counters *counters, struct ctq_eval_remote_info *info,
				      struct ctq_error *err)
{
	struct ctq_eval_remote_info dummy;
	if (!info)
		info = &dummy;
	memset(info, 0, sizeof *info);
	const size_t n_jobs = s->n * 4;
	const size_t conc = (size_t)(o->concurrency > 0 ? o->concurrency : 1);
	const size_t n_slots = conc < n_jobs ? conc : n_jobs ? n_jobs : 1;
	struct scoring sc = {.o = o, .s = s, .lp = logprob, .err = err};
	ctq_openai_endpoint(o->url, "completions", sc.endpoint, sizeof sc.endpoint);
	struct job *jobs = ctq_calloc(n_slots, sizeof *jobs);
	sc.have = ctq_calloc(s->n ? s->n : 1, 1);
	struct ctq_http h;
	memset(&h, 0, sizeof h);
	if (!jobs || !sc.have) {
		ctq_free(jobs), ctq_free(sc.have);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval --url", "out of memory");
	}
	for (size_t i = 0; i < n_slots; i++)
		ctq_strbuf_init(&jobs[i].body);
	double t0 = ctq_now_s();
	int64_t sent_tokens = 0;
	size_t next = 0, reported = 0;
	enum ctq_status st = n_jobs ? probe(&sc, info, err) : CTQ_OK;
	if (!st)
		st = ctq_http_init(&h, err);
	while (!st && !sc.st && (next < n_jobs || h.active)) {
		/* Refill the free slots: a slot is free when its request is done. */
		for (size_t i = 0; i < n_slots && next < n_jobs && !st; i++) {
			if (jobs[i].http.url && !jobs[i].http.done)
				continue;
			const struct ctq_eval_item *it = &s->items[next / 4];
			sent_tokens += it->n_ctx + it->n_cont[next % 4];
			st = job_start(&sc, &h, &jobs[i], next++, err);
		}
		if (!st)
			st = ctq_http_poll(&h, 100, job_done, &sc, err);
		if (progress && sc.items_done != reported) {
			reported = sc.items_done;
			progress(ctx, reported, s->n);
		}
	}
	ctq_http_free(&h);
	for (size_t i = 0; i < n_slots; i++) {
		ctq_http_req_free(&jobs[i].http);
		ctq_strbuf_free(&jobs[i].body);
	}
	ctq_free(jobs);
	ctq_free(sc.have);
	info->cont_differ = sc.cont_differ;
	if (counters)
		*counters = (struct ctq_eval_counters){.tokens_fed = sent_tokens, .prompt_tokens = sent_tokens,
						       .calls = (int64_t)next, .seconds = ctq_now_s() - t0};
	return st ? st : sc.st;
}
