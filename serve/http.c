/* ctq serve's HTTP server (serve/server.h) over libmicrohttpd, one thread
 * per connection: a generation request blocks its connection's thread on
 * the engine (non-stream: in the access handler; stream: in the content
 * reader), so connections never wait on one another; the engine's slots
 * are the only queue. */
#include "serve/server.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "core/time.h"
#include "serve/detok.h"
#include "serve/openai.h"

#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

struct ctq_server {
	struct ctq_serve_options o;
	struct MHD_Daemon *d;
	struct ctq_engine *engine;
	const struct ctq_tokenizer *tok;
	const struct ctq_chat_template *chat;
	int port;
	long long created;
	pthread_mutex_t mu;
	pthread_cond_t idle;
	bool draining;
	long in_flight;
	size_t body_bytes; /* request bodies held, against o.body_budget */
	uint64_t next_id;
	struct ctq_serve_stats stats;
};

/* One connection's request: its body as it arrives. */
struct conn {
	struct ctq_strbuf body;
	size_t reserved; /* bytes of the server's body budget this body holds */
	bool too_big;    /* over --max-body: the rest is dropped, then 413 */
	bool busy;       /* over the server's body budget: dropped, then 503 */
};

struct batch;

/* One prompt's generation, from submit to its last token. */
struct gen {
	struct batch *b;
	int index;         /* its choice */
	int32_t *prompt;   /* (n_prompt) owned */
	int64_t n_prompt;
	char *prompt_text; /* echo: the prompt as text (owned) */
	struct ctq_engine_req *req;
	int32_t *ids;      /* (max_new) generated so far */
	int64_t seen;      /* tokens handled */
	struct ctq_detok dt;
	struct ctq_oai_logprobs lp;
	bool prompt_handled, role_sent, done, failed;
	const char *finish;
	int64_t completion_tokens;
	struct ctq_error err;
};

/* One generation request: its prompts (one choice each), from parse to the
 * last byte sent. */
struct batch {
	struct ctq_server *s;
	struct ctq_oai_request rq;
	struct ctq_oai_head head;
	char id[48], path[32];
	double t0;
	struct gen *g; /* (n) */
	int n;
	bool eos, gone;
	struct ctq_strbuf out; /* stream: bytes not yet sent */
	size_t out_pos;
};

/* ---- responses ------------------------------------------------------------------ */

static void log_line(struct ctq_server *s, const char *method, const char *path, int status,
		     int64_t p, int64_t c, double t0)
{
	pthread_mutex_lock(&s->mu);
	s->stats.requests++;
	s->stats.failed += status >= 400;
	pthread_mutex_unlock(&s->mu);
	if (!s->o.quiet) {
		/* the path as the client sent it may be any bytes */
		char *safe = ctq_oai_utf8_fix(path, strlen(path));
		fprintf(s->o.log, "serve: %s %s %d prompt %lld completion %lld tokens %.1f ms\n", method,
			safe ? safe : "?", status, (long long)p, (long long)c, (ctq_now_s() - t0) * 1e3);
		free(safe);
	}
}

/* text (taken; JSON or empty) as the body: every byte valid UTF-8. */
static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *type, char *text)
{
	if (text) {
		char *fixed = ctq_oai_utf8_fix(text, strlen(text));
		free(text);
		if (!(text = fixed))
			return MHD_NO;
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(text ? strlen(text) : 0,
								 text ? text : (char *)"",
								 text ? MHD_RESPMEM_MUST_FREE
								      : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result res = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return res;
}

/* cJSON_PrintUnformatted allocates through cJSON's hooks (malloc). */
static enum MHD_Result send_json(struct MHD_Connection *c, int status, cJSON *o)
{
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	if (!text)
		return MHD_NO;
	return send_text(c, status, "application/json", text);
}

static enum MHD_Result send_error(struct ctq_server *s, struct MHD_Connection *c, const char *method,
				  const char *path, const struct ctq_oai_error *e, double t0)
{
	log_line(s, method, path, e->http, 0, 0, t0);
	if (!s->o.quiet) {
		char *safe = ctq_oai_utf8_fix(e->message, strlen(e->message));
		fprintf(s->o.log, "serve:   %s\n", safe ? safe : "?");
		free(safe);
	}
	return send_text(c, e->http, "application/json", ctq_oai_error_json(e));
}

/* ---- generation ------------------------------------------------------------------ */

static void gen_free(struct gen *g)
{
	if (g->req)
		ctq_engine_release(g->b->s->engine, g->req);
	ctq_detok_free(&g->dt);
	ctq_oai_logprobs_free(&g->lp);
	free(g->prompt);
	free(g->prompt_text);
	ctq_free(g->ids);
}

static void batch_free(struct batch *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->n; i++)
		gen_free(&b->g[i]);
	ctq_free(b->g);
	ctq_oai_request_free(&b->rq);
	ctq_strbuf_free(&b->out);
	ctq_free(b);
}

static bool batch_failed(const struct batch *b)
{
	for (int i = 0; i < b->n; i++)
		if (b->g[i].failed)
			return true;
	return false;
}

/* The request's end: its log line, the counters, and the drain wake-up. */
static void batch_end(struct batch *b, int status)
{
	struct ctq_server *s = b->s;
	int64_t p = 0, c = 0;
	for (int i = 0; i < b->n; i++)
		p += b->g[i].n_prompt, c += b->g[i].completion_tokens;
	log_line(s, "POST", b->path, batch_failed(b) ? 500 : status, p, c, b->t0);
	pthread_mutex_lock(&s->mu);
	s->stats.generations += b->n;
	s->stats.prompt_tokens += p;
	s->stats.completion_tokens += c;
	if (--s->in_flight == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
	batch_free(b);
}

/* The prompt ids: token ids as given, a string through the tokenizer (with
 * its special tokens, as vLLM's completions), or the chat template's text
 * (whose special tokens the template writes). */
static bool gen_prompt(struct gen *g, const struct ctq_oai_prompt *pr, struct ctq_oai_error *e)
{
	struct ctq_server *s = g->b->s;
	const struct ctq_oai_request *rq = &g->b->rq;
	struct ctq_error err = {0};
	size_t n = 0;
	if (pr && pr->ids) {
		g->prompt = ctq_malloc((size_t)pr->n_ids * sizeof *g->prompt);
		if (!g->prompt)
			return ctq_oai_fail(e, 500, NULL, "out of memory");
		memcpy(g->prompt, pr->ids, (size_t)pr->n_ids * sizeof *g->prompt);
		g->n_prompt = pr->n_ids;
		return true;
	}
	const char *text = pr ? pr->text : "";
	bool special = true;
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	if (rq->kind == CTQ_OAI_CHAT) {
		if (ctq_chat_render(s->chat, rq->msgs, rq->n_msgs, &sb, &err)) {
			ctq_strbuf_free(&sb);
			return ctq_oai_fail(e, err.status == CTQ_ERR_NOMEM ? 500 : 400, "messages", "%s",
					    err.message);
		}
		text = ctq_strbuf_str(&sb);
		special = false;
	}
	enum ctq_status st = ctq_tokenizer_encode(s->tok, text, strlen(text), special, &g->prompt, &n, &err);
	ctq_strbuf_free(&sb);
	if (st)
		return ctq_oai_fail(e, st == CTQ_ERR_NOMEM ? 500 : 400, "prompt", "%s", err.message);
	g->n_prompt = (int64_t)n;
	if (!n)
		return ctq_oai_fail(e, 400, "prompt", "the prompt has no tokens");
	return true;
}

/* Tokenize one prompt, check its length, submit. false: e says why. */
static bool gen_prepare(struct gen *g, const struct ctq_oai_prompt *pr, struct ctq_oai_error *e)
{
	struct batch *b = g->b;
	struct ctq_server *s = b->s;
	if (!gen_prompt(g, pr, e))
		return false;
	struct ctq_engine_params p = b->rq.p;
	if (!b->rq.max_tokens_set && b->rq.kind == CTQ_OAI_CHAT)
		p.max_new = s->o.max_len - g->n_prompt;
	if (g->n_prompt + p.max_new > s->o.max_len || p.max_new < 0 ||
	    (p.max_new == 0 && g->n_prompt >= s->o.max_len))
		return ctq_oai_fail(e, 413, b->rq.max_tokens_set ? "max_tokens" : "prompt",
				    "This model's maximum context length is %lld tokens. However, you requested %lld tokens (%lld in the messages, %lld in the completion).",
				    (long long)s->o.max_len, (long long)(g->n_prompt + (p.max_new > 0 ? p.max_new : 0)),
				    (long long)g->n_prompt, (long long)p.max_new);
	if (p.max_new == 0 && !b->rq.echo)
		return ctq_oai_fail(e, 400, "max_tokens", "max_tokens 0 needs echo");
	/* The tokenizer's end token stops generation too (vLLM adds it to the
	 * model's EOS), unless the request ignores EOS. */
	if (!p.ignore_eos && s->tok->eos_id >= 0 && p.n_stop_ids < CTQ_ENGINE_MAX_STOP_IDS)
		p.stop_ids[p.n_stop_ids++] = s->tok->eos_id;
	g->ids = ctq_calloc((size_t)(p.max_new > 0 ? p.max_new : 1), sizeof *g->ids);
	if (!g->ids)
		return ctq_oai_fail(e, 500, NULL, "out of memory");
	if (b->rq.echo) {
		size_t len = 0;
		if (pr && pr->text)
			g->prompt_text = ctq_strdup(pr->text);
		else if (ctq_tokenizer_decode(s->tok, g->prompt, (size_t)g->n_prompt, false, &g->prompt_text,
					      &len, NULL))
			g->prompt_text = NULL;
		if (!g->prompt_text)
			return ctq_oai_fail(e, 500, NULL, "out of memory");
	}
	ctq_detok_init(&g->dt, s->tok, b->rq.stop, b->rq.n_stop);
	if (p.logprobs >= 0)
		ctq_oai_logprobs_init(&g->lp, b->rq.kind == CTQ_OAI_CHAT);
	struct ctq_error err = {0};
	if (ctq_engine_submit(s->engine, g->prompt, g->n_prompt, &p, &g->req, &err))
		return ctq_oai_fail(e, err.status == CTQ_ERR_NOMEM ? 500 : err.status == CTQ_ERR_ENV ? 503 : 400,
				    err.path, "%s", err.message);
	return true;
}

/* Parse the body, then every prompt in order. false: e says why (b freed
 * by the caller; what was submitted is cancelled by its release). */
static bool batch_prepare(struct batch *b, const struct conn *cx, struct ctq_oai_error *e)
{
	struct ctq_server *s = b->s;
	if (!ctq_oai_request_parse(&b->rq, b->head.kind, ctq_strbuf_str(&cx->body), cx->body.len,
				   s->o.model_name, s->o.max_len, e))
		return false;
	int n = b->rq.kind == CTQ_OAI_CHAT ? 1 : b->rq.n_prompts;
	if (!(b->g = ctq_calloc((size_t)n, sizeof *b->g)))
		return ctq_oai_fail(e, 500, NULL, "out of memory");
	for (int i = 0; i < n; i++) {
		b->g[i].b = b;
		b->g[i].index = i;
		b->n = i + 1;
		if (!gen_prepare(&b->g[i], b->rq.kind == CTQ_OAI_CHAT ? NULL : &b->rq.prompts[i], e)) {
			if (n > 1 && strlen(e->message) + 24 < sizeof e->message) {
				char m[sizeof e->message];
				snprintf(m, sizeof m, "prompt %d: %s", i, e->message);
				memcpy(e->message, m, sizeof m);
			}
			return false;
		}
	}
	return true;
}

/* Appends one server-sent event holding o (taken). */
static void sse(struct batch *b, cJSON *o)
{
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	char *fixed = text ? ctq_oai_utf8_fix(text, strlen(text)) : NULL;
	free(text);
	if (!fixed) {
		b->out.oom = true;
		return;
	}
	ctq_strbuf_append(&b->out, "data: ");
	ctq_strbuf_append(&b->out, fixed);
	ctq_strbuf_append(&b->out, "\n\n");
	free(fixed);
}

/* A streamed chunk of text (prefix first: the echoed prompt). */
static void sse_chunk(struct gen *g, const char *prefix, const char *text, size_t len,
		      const char *finish)
{
	struct batch *b = g->b;
	struct ctq_strbuf t;
	ctq_strbuf_init(&t);
	ctq_strbuf_append(&t, prefix ? prefix : "");
	ctq_strbuf_appendn(&t, text, len);
	cJSON *lp = b->rq.p.logprobs >= 0 ? ctq_oai_logprobs_take(&g->lp) : NULL;
	sse(b, ctq_oai_chunk(&b->head, g->index, ctq_strbuf_str(&t), lp, finish,
			     b->rq.kind == CTQ_OAI_CHAT && !g->role_sent));
	g->role_sent = true;
	ctq_strbuf_free(&t);
}

/* The echoed prompt's log-probabilities, once the engine has them. */
static void gen_echo(struct gen *g, const struct ctq_engine_view *v)
{
	g->prompt_handled = true;
	if (!g->b->rq.echo || g->b->rq.p.logprobs < 0)
		return;
	for (int64_t j = 0; j < v->n_prompt && v->prompt; j++)
		ctq_oai_logprobs_add(&g->lp, g->b->s->tok, &v->prompt[j], j == 0);
}

/* The tokens that came since the last call: text, log-probabilities, stop
 * strings; a stream's events. */
static void gen_tokens(struct gen *g, const struct ctq_engine_view *v, bool stream)
{
	const struct ctq_oai_request *rq = &g->b->rq;
	const char *prefix = rq->echo && stream && !g->role_sent ? g->prompt_text : NULL;
	for (int64_t i = g->seen; i < v->n_tokens && !g->done; i++) {
		g->ids[i] = v->tokens[i].id;
		bool final = i == v->n_tokens - 1 && v->finish != CTQ_ENGINE_RUNNING;
		if (ctq_detok_update(&g->dt, g->ids, i + 1, final, &g->err))
			g->failed = true;
		if (rq->p.logprobs >= 0)
			ctq_oai_logprobs_add(&g->lp, g->b->s->tok, &v->tokens[i], false);
		g->completion_tokens = i + 1;
		if (g->dt.stopped) {
			ctq_engine_cancel(g->b->s->engine, g->req);
			g->finish = "stop";
			g->done = true;
		} else if (final) {
			g->finish = ctq_oai_finish_reason(v->finish);
			g->done = true;
		}
		if (stream) {
			const char *t;
			size_t n = ctq_detok_take(&g->dt, &t);
			sse_chunk(g, prefix, t, n, g->done ? g->finish : NULL);
			prefix = NULL;
		}
	}
	g->seen = v->n_tokens;
}

/* Waits (up to timeout_s) for the engine and takes what came; sets done.
 * Returns whether anything came. */
static bool gen_step(struct gen *g, bool stream, double timeout_s)
{
	struct ctq_engine_view v;
	bool changed = ctq_engine_wait(g->b->s->engine, g->req, g->seen, timeout_s, &v);
	if (!g->prompt_handled && v.prompt_done)
		gen_echo(g, &v);
	gen_tokens(g, &v, stream);
	if (g->done || v.finish == CTQ_ENGINE_RUNNING)
		return changed;
	/* Finished with no token left to carry the finish (max_tokens 0,
	 * cancelled, failed). */
	g->done = true;
	if (v.finish == CTQ_ENGINE_FAILED) {
		g->failed = true;
		ctq_engine_error(g->b->s->engine, g->req, &g->err);
	}
	g->finish = ctq_oai_finish_reason(v.finish);
	ctq_detok_update(&g->dt, g->ids, g->seen, true, NULL);
	if (stream && !g->failed) {
		const char *t;
		size_t n = ctq_detok_take(&g->dt, &t);
		sse_chunk(g, g->b->rq.echo && !g->role_sent ? g->prompt_text : NULL, t, n, g->finish);
	}
	return true;
}

/* One round over the prompts still running: what is there is taken at
 * once; when nothing is, waits up to timeout_s on the first one still
 * running. Returns false when every prompt is done. */
static bool batch_step(struct batch *b, bool stream, double timeout_s)
{
	bool any = false, running = false;
	struct gen *first = NULL;
	for (int i = 0; i < b->n; i++) {
		struct gen *g = &b->g[i];
		if (g->done)
			continue;
		running = true;
		if (b->n == 1) {
			first = g;
			break;
		}
		any |= gen_step(g, stream, 0);
		if (!g->done && !first)
			first = g;
	}
	if (!running)
		return false;
	if (!any && first)
		gen_step(first, stream, timeout_s);
	return true;
}

/* After every finish: usage (include_usage), an error event if one
 * failed, then [DONE]. */
static void batch_stream_tail(struct batch *b)
{
	struct gen *failed = NULL;
	int64_t p = 0, c = 0;
	for (int i = 0; i < b->n; i++) {
		p += b->g[i].n_prompt, c += b->g[i].completion_tokens;
		if (b->g[i].failed && !failed)
			failed = &b->g[i];
	}
	if (failed) {
		struct ctq_oai_error e;
		ctq_oai_fail(&e, 500, NULL, "generation failed: %s", failed->err.message);
		char *text = ctq_oai_error_json(&e);
		char *fixed = text ? ctq_oai_utf8_fix(text, strlen(text)) : NULL;
		ctq_strbuf_printf(&b->out, "data: %s\n\n", fixed ? fixed : "{}");
		free(text), free(fixed);
	} else if (b->rq.include_usage) {
		sse(b, ctq_oai_usage_chunk(&b->head, p, c));
	}
	ctq_strbuf_append(&b->out, "data: [DONE]\n\n");
	b->eos = true;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct batch *b = cls;
	while (b->out_pos >= b->out.len) {
		if (b->eos || b->out.oom)
			return MHD_CONTENT_READER_END_OF_STREAM;
		ctq_strbuf_reset(&b->out);
		b->out_pos = 0;
		if (!batch_step(b, true, b->n == 1 ? 1.0 : 0.05))
			batch_stream_tail(b);
	}
	size_t n = b->out.len - b->out_pos < max ? b->out.len - b->out_pos : max;
	memcpy(buf, b->out.data + b->out_pos, n);
	b->out_pos += n;
	return (ssize_t)n;
}

/* The stream is over (all sent, or the client went away): the request ends. */
static void stream_free(void *cls)
{
	struct batch *b = cls;
	if (!b->eos && !b->s->o.quiet)
		fprintf(b->s->o.log, "serve:   %s: the client went away mid-stream; request cancelled\n", b->id);
	batch_end(b, 200);
}

/* Whether the client of c has closed its side (or reset) while its
 * non-streamed request runs: nothing more is expected from it before the
 * answer, so end-of-file or an error means it left. A client that sends
 * its next request early (pipelining) has bytes waiting, not end-of-file. */
static bool client_gone(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return false;
	struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN};
	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLERR | POLLNVAL))
		return true;
	char byte;
	ssize_t k = recv(ci->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static enum MHD_Result batch_whole(struct MHD_Connection *c, struct batch *b)
{
	double last_check = ctq_now_s();
	while (batch_step(b, false, 0.25)) {
		if (ctq_now_s() - last_check < 0.2)
			continue;
		last_check = ctq_now_s();
		if (client_gone(c)) {
			/* As a stream's: cancelled, its slot freed. */
			for (int i = 0; i < b->n; i++)
				if (!b->g[i].done)
					ctq_engine_cancel(b->s->engine, b->g[i].req);
			if (!b->s->o.quiet)
				fprintf(b->s->o.log, "serve:   %s: the client went away before the answer; request cancelled\n",
					b->id);
			b->gone = true;
			batch_end(b, 499);
			return MHD_NO;
		}
	}
	struct gen *failed = NULL;
	for (int i = 0; i < b->n && !failed; i++)
		if (b->g[i].failed)
			failed = &b->g[i];
	if (failed) {
		struct ctq_oai_error e;
		ctq_oai_fail(&e, 500, NULL, "generation failed: %s", failed->err.message);
		enum MHD_Result r = send_text(c, 500, "application/json", ctq_oai_error_json(&e));
		batch_end(b, 500);
		return r;
	}
	cJSON *choices = cJSON_CreateArray();
	int64_t p = 0, n = 0;
	for (int i = 0; i < b->n; i++) {
		struct gen *g = &b->g[i];
		struct ctq_strbuf t;
		ctq_strbuf_init(&t);
		if (b->rq.echo)
			ctq_strbuf_append(&t, g->prompt_text);
		ctq_strbuf_appendn(&t, g->dt.text.data ? g->dt.text.data : "", g->dt.text.len);
		cJSON *lp = b->rq.p.logprobs >= 0 ? ctq_oai_logprobs_take(&g->lp) : NULL;
		cJSON_AddItemToArray(choices, ctq_oai_choice(b->rq.kind, i, ctq_strbuf_str(&t), t.len, lp,
							     g->finish));
		ctq_strbuf_free(&t);
		p += g->n_prompt, n += g->completion_tokens;
	}
	enum MHD_Result r = send_json(c, 200, ctq_oai_response(&b->head, choices, p, n));
	batch_end(b, 200);
	return r;
}

/* The body is parsed (or refused): its bytes leave the budget. */
static void body_release(struct ctq_server *s, struct conn *cx)
{
	pthread_mutex_lock(&s->mu);
	s->body_bytes -= cx->reserved;
	pthread_mutex_unlock(&s->mu);
	cx->reserved = 0;
	ctq_strbuf_free(&cx->body);
	ctq_strbuf_init(&cx->body);
}

/* A refusal before any generation: answered, not counted as a generation. */
static enum MHD_Result generate_refused(struct ctq_server *s, struct MHD_Connection *c,
					const char *path, struct batch *b, const struct ctq_oai_error *e,
					double t0)
{
	enum MHD_Result r = send_error(s, c, "POST", path, e, t0);
	pthread_mutex_lock(&s->mu);
	if (--s->in_flight == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
	batch_free(b);
	return r;
}

static enum MHD_Result generate(struct ctq_server *s, struct MHD_Connection *c, const char *path,
				enum ctq_oai_kind kind, struct conn *cx, double t0)
{
	struct ctq_oai_error e;
	pthread_mutex_lock(&s->mu);
	bool draining = s->draining;
	uint64_t id = s->next_id++;
	if (!draining)
		s->in_flight++;
	pthread_mutex_unlock(&s->mu);
	if (draining) {
		body_release(s, cx);
		ctq_oai_fail(&e, 503, NULL, "the server is shutting down");
		return send_error(s, c, "POST", path, &e, t0);
	}
	struct batch *b = ctq_calloc(1, sizeof *b);
	if (!b) {
		body_release(s, cx);
		pthread_mutex_lock(&s->mu);
		if (--s->in_flight == 0)
			pthread_cond_broadcast(&s->idle);
		pthread_mutex_unlock(&s->mu);
		return MHD_NO;
	}
	b->s = s;
	b->t0 = t0;
	snprintf(b->path, sizeof b->path, "%s", path);
	snprintf(b->id, sizeof b->id, "%s-%016llx", kind == CTQ_OAI_CHAT ? "chatcmpl" : "cmpl",
		 (unsigned long long)(id ^ ((uint64_t)s->created << 24)));
	b->head = (struct ctq_oai_head){kind, b->id, s->o.model_name, (long long)time(NULL)};
	ctq_strbuf_init(&b->out);
	/* What parsing and tokenizing will take joins the budget while they
	 * run: ~128 bytes a JSON value (cJSON's node and the allocator's
	 * overhead), the strings copied and at most one 4-byte id a byte of
	 * text. A body the scan refuses costs nothing more (the parse says
	 * why). */
	int64_t values = 0;
	bool ok = true;
	if (ctq_oai_scan_values(ctq_strbuf_str(&cx->body), cx->body.len, s->o.max_len,
				CTQ_OAI_VALUES_PER_LEN * s->o.max_len + CTQ_OAI_VALUES_SLACK, &values, NULL)) {
		size_t cost = (size_t)values * CTQ_SERVE_VALUE_BYTES + 4 * cx->body.len;
		if (cost + cx->reserved > s->o.body_budget) {
			ctq_oai_fail(&e, 413, NULL, "parsing this body would take %zu bytes, over the server's budget of %zu (--body-budget)",
				     cost + cx->reserved, s->o.body_budget);
			body_release(s, cx);
			return generate_refused(s, c, path, b, &e, t0);
		}
		pthread_mutex_lock(&s->mu);
		ok = s->body_bytes + cost <= s->o.body_budget;
		if (ok)
			s->body_bytes += cost;
		pthread_mutex_unlock(&s->mu);
		if (ok)
			cx->reserved += cost;
		else
			ctq_oai_fail(&e, 503, NULL, "parsing this body (%zu bytes of the server's budget of %zu) must wait; retry later",
				     cost, s->o.body_budget);
	}
	ok = ok && batch_prepare(b, cx, &e);
	body_release(s, cx);
	if (!ok)
		return generate_refused(s, c, path, b, &e, t0);
	if (!b->rq.stream)
		return batch_whole(c, b);
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read,
								   b, stream_free);
	if (!r) {
		batch_end(b, 500);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	enum MHD_Result res = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return res;
}

/* ---- routing ---------------------------------------------------------------------- */

static enum MHD_Result route(struct ctq_server *s, struct MHD_Connection *c, const char *url,
			     const char *method, struct conn *cx, double t0)
{
	static const char *const paths[] = {"/v1/completions", "/v1/chat/completions", "/v1/models",
					    "/health"};
	int which = -1;
	for (int i = 0; i < 4; i++)
		if (!strcmp(url, paths[i]))
			which = i;
	struct ctq_oai_error e;
	const bool post = !strcmp(method, "POST"), get = !strcmp(method, "GET");
	if (which < 0) {
		ctq_oai_fail(&e, 404, NULL, "no route %s %s (POST /v1/completions, /v1/chat/completions; GET /v1/models, /health)",
			     method, url);
		return send_error(s, c, method, url, &e, t0);
	}
	if ((which < 2 && !post) || (which >= 2 && !get)) {
		ctq_oai_fail(&e, 405, NULL, "%s takes %s, not %s", url, which < 2 ? "POST" : "GET", method);
		return send_error(s, c, method, url, &e, t0);
	}
	if (which < 2 && cx->too_big) {
		ctq_oai_fail(&e, 413, NULL, "the request body is over the limit of %zu bytes", s->o.max_body);
		return send_error(s, c, method, url, &e, t0);
	}
	if (which < 2 && cx->busy) {
		ctq_oai_fail(&e, 503, NULL, "the server holds %zu bytes of request bodies, its budget; retry later",
			     s->o.body_budget);
		return send_error(s, c, method, url, &e, t0);
	}
	if (which < 2)
		return generate(s, c, url, which == 0 ? CTQ_OAI_COMPLETION : CTQ_OAI_CHAT, cx, t0);
	pthread_mutex_lock(&s->mu);
	bool draining = s->draining;
	pthread_mutex_unlock(&s->mu);
	if (which == 3) {
		log_line(s, method, url, draining ? 503 : 200, 0, 0, t0);
		return send_text(c, draining ? 503 : 200, "text/plain", NULL);
	}
	log_line(s, method, url, 200, 0, 0, t0);
	return send_json(c, 200, ctq_oai_models(s->o.model_name, s->created, s->o.max_len));
}

struct header_count {
	int content_length, transfer_encoding;
	const char *cl_value;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	(void)kind;
	struct header_count *h = cls;
	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		h->content_length++;
		h->cl_value = value;
	}
	h->transfer_encoding += !strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	return MHD_YES;
}

/* What libmicrohttpd lets through and ctq refuses (400), before a body
 * byte is read: HTTP/1.1 without Host (RFC 9112 3.2), Content-Length given
 * twice (even with one value) or beside Transfer-Encoding (RFC 9112 6.3:
 * the framing is ambiguous, the shape of request smuggling). */
static bool headers_refused(struct MHD_Connection *c, const char *version, struct ctq_oai_error *e)
{
	struct header_count h = {0};
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &h);
	if (!strcmp(version, MHD_HTTP_VERSION_1_1) &&
	    !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
		return !ctq_oai_fail(e, 400, NULL, "an HTTP/1.1 request needs a Host header");
	if (h.content_length > 1)
		return !ctq_oai_fail(e, 400, NULL, "Content-Length is given %d times", h.content_length);
	if (h.content_length && h.transfer_encoding)
		return !ctq_oai_fail(e, 400, NULL, "Content-Length and Transfer-Encoding together");
	return false;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct ctq_server *s = cls;
	struct conn *cx = *con_cls;
	if (!cx) {
		struct ctq_oai_error e;
		if (headers_refused(c, version, &e))
			return send_error(s, c, method, url, &e, ctq_now_s());
		if (!(cx = ctq_calloc(1, sizeof *cx)))
			return MHD_NO;
		ctq_strbuf_init(&cx->body);
		*con_cls = cx;
		return MHD_YES;
	}
	if (*upload_size) {
		/* Past a limit the rest is read and dropped, then refused: one
		 * body over --max-body (413), or all bodies held at once over
		 * the server's budget (503). */
		size_t k = *upload_size;
		*upload_size = 0;
		if (cx->too_big || cx->busy)
			return MHD_YES;
		if (cx->body.len + k > s->o.max_body) {
			cx->too_big = true;
			body_release(s, cx);
			return MHD_YES;
		}
		pthread_mutex_lock(&s->mu);
		bool room = s->body_bytes + k <= s->o.body_budget;
		if (room)
			s->body_bytes += k;
		pthread_mutex_unlock(&s->mu);
		if (!room) {
			cx->busy = true;
			body_release(s, cx);
			return MHD_YES;
		}
		cx->reserved += k;
		if (!cx->body.data || cx->body.len == 0) {
			/* the declared length at once: no doubling past it */
			const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
								     MHD_HTTP_HEADER_CONTENT_LENGTH);
			unsigned long long want = cl ? strtoull(cl, NULL, 10) : 0;
			if (want > 0 && want <= s->o.max_body)
				ctq_strbuf_reserve(&cx->body, (size_t)want);
		}
		ctq_strbuf_appendn(&cx->body, upload, k);
		return cx->body.oom ? MHD_NO : MHD_YES;
	}
	return route(s, c, url, method, cx, ctq_now_s());
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	(void)c, (void)why;
	struct ctq_server *s = cls;
	struct conn *cx = *con_cls;
	if (!cx)
		return;
	body_release(s, cx);
	ctq_strbuf_free(&cx->body);
	ctq_free(cx);
	*con_cls = NULL;
}

/* ---- the server ------------------------------------------------------------------- */

static enum ctq_status resolve(const struct ctq_serve_options *o, struct sockaddr_storage *ss,
			       bool *v6, struct ctq_error *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(o->host, NULL, &hints, &res);
	if (rc || !res)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--host", "cannot resolve \"%s\": %s", o->host,
				     gai_strerror(rc));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*v6 = res->ai_family == AF_INET6;
	if (*v6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)o->port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)o->port);
	freeaddrinfo(res);
	return CTQ_OK;
}

enum ctq_status ctq_serve_start(struct ctq_server **out, const struct ctq_serve_options *o,
				struct ctq_engine *engine, const struct ctq_tokenizer *tok,
				const struct ctq_chat_template *chat, struct ctq_error *err)
{
	*out = NULL;
	struct sockaddr_storage ss;
	bool v6 = false;
	enum ctq_status st = resolve(o, &ss, &v6, err);
	if (st)
		return st;
	struct ctq_server *s = ctq_calloc(1, sizeof *s);
	if (!s)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "serve", "out of memory");
	s->o = *o;
	if (!s->o.log)
		s->o.log = stderr;
	s->engine = engine;
	s->tok = tok;
	s->chat = chat;
	s->created = (long long)time(NULL);
	s->next_id = (uint64_t)(ctq_now_s() * 1e6);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->idle, NULL);
	if (!s->o.body_budget)
		s->o.body_budget = CTQ_SERVE_BODY_BUDGET_BODIES * s->o.max_body;
	if (!s->o.max_connections)
		s->o.max_connections = CTQ_SERVE_MAX_CONNECTIONS;
	/* One thread per connection (a generation blocks its thread on the
	 * engine), so connections are cheap threads: a small stack, many of
	 * them; one client address may hold a quarter; an idle or stalled
	 * socket is closed after CTQ_SERVE_IDLE_S without a byte (docs/serving.md,
	 * "Bounded by design"). */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO |
			 (v6 ? MHD_USE_IPv6 : 0);
	s->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_CONNECTION_LIMIT, s->o.max_connections,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				s->o.max_connections / 4 > 0 ? s->o.max_connections / 4 : 1u,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CTQ_SERVE_IDLE_S,
				MHD_OPTION_THREAD_STACK_SIZE, (size_t)CTQ_SERVE_THREAD_STACK,
				MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
	if (!s->d) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->idle);
		ctq_free(s);
		return ctq_error_set(err, CTQ_ERR_ENV, "--port", "cannot listen on %s port %d (in use, or not an address of this host)",
				     o->host, o->port);
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : o->port;
	*out = s;
	return CTQ_OK;
}

int ctq_serve_port(const struct ctq_server *s)
{
	return s->port;
}

void ctq_serve_drain(struct ctq_server *s)
{
	pthread_mutex_lock(&s->mu);
	s->draining = true;
	while (s->in_flight > 0)
		pthread_cond_wait(&s->idle, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

void ctq_serve_stop(struct ctq_server *s, struct ctq_serve_stats *stats)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->draining = true;
	pthread_mutex_unlock(&s->mu);
	MHD_stop_daemon(s->d);
	if (stats)
		*stats = s->stats;
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->idle);
	ctq_free(s);
}
