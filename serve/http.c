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

#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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
	uint64_t next_id;
	struct ctq_serve_stats stats;
};

/* One connection's request: its body as it arrives. */
struct conn {
	struct ctq_strbuf body;
	bool too_big;
};

/* One generation request, from parse to the last byte sent. */
struct gen {
	struct ctq_server *s;
	struct ctq_oai_request rq;
	struct ctq_oai_head head;
	char id[48], path[32];
	double t0;
	int32_t *prompt;   /* (n_prompt) owned */
	int64_t n_prompt;
	char *prompt_text; /* echo: the prompt as text (owned) */
	struct ctq_engine_req *req;
	int32_t *ids;      /* (max_new) generated so far */
	int64_t seen;      /* tokens handled */
	struct ctq_detok dt;
	struct ctq_oai_logprobs lp;
	bool prompt_handled, role_sent, finish_sent, done, eos, failed;
	const char *finish;
	int64_t completion_tokens;
	struct ctq_strbuf out; /* stream: bytes not yet sent */
	size_t out_pos;
	struct ctq_error err;
};

/* ---- responses ------------------------------------------------------------------ */

static void log_line(struct ctq_server *s, const char *method, const char *path, int status,
		     int64_t p, int64_t c, double t0)
{
	pthread_mutex_lock(&s->mu);
	s->stats.requests++;
	s->stats.failed += status >= 400;
	pthread_mutex_unlock(&s->mu);
	if (!s->o.quiet)
		fprintf(s->o.log, "serve: %s %s %d prompt %lld completion %lld tokens %.1f ms\n", method,
			path, status, (long long)p, (long long)c, (ctq_now_s() - t0) * 1e3);
}

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *type, char *text)
{
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
	if (!s->o.quiet)
		fprintf(s->o.log, "serve:   %s\n", e->message);
	return send_text(c, e->http, "application/json", ctq_oai_error_json(e));
}

/* ---- generation ------------------------------------------------------------------ */

static void gen_free(struct gen *g)
{
	if (!g)
		return;
	if (g->req)
		ctq_engine_release(g->s->engine, g->req);
	ctq_oai_request_free(&g->rq);
	ctq_detok_free(&g->dt);
	ctq_oai_logprobs_free(&g->lp);
	ctq_strbuf_free(&g->out);
	free(g->prompt);
	free(g->prompt_text);
	ctq_free(g->ids);
	ctq_free(g);
}

/* The request's end: its log line, the counters, and the drain wake-up. */
static void gen_end(struct gen *g, int status)
{
	struct ctq_server *s = g->s;
	log_line(s, "POST", g->path, g->failed ? 500 : status, g->n_prompt, g->completion_tokens, g->t0);
	pthread_mutex_lock(&s->mu);
	s->stats.generations++;
	s->stats.prompt_tokens += g->n_prompt;
	s->stats.completion_tokens += g->completion_tokens;
	if (--s->in_flight == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
	gen_free(g);
}

/* The prompt ids: token ids as given, a string through the tokenizer (with
 * its special tokens, as vLLM's completions), or the chat template's text
 * (whose special tokens the template writes). */
static bool gen_prompt(struct gen *g, struct ctq_oai_error *e)
{
	struct ctq_server *s = g->s;
	struct ctq_error err = {0};
	size_t n = 0;
	if (g->rq.prompt_ids) {
		g->prompt = ctq_malloc((size_t)g->rq.n_prompt_ids * sizeof *g->prompt);
		if (!g->prompt)
			return ctq_oai_fail(e, 500, NULL, "out of memory");
		memcpy(g->prompt, g->rq.prompt_ids, (size_t)g->rq.n_prompt_ids * sizeof *g->prompt);
		g->n_prompt = g->rq.n_prompt_ids;
		return true;
	}
	const char *text = g->rq.prompt_text;
	bool special = true;
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	if (g->rq.kind == CTQ_OAI_CHAT) {
		if (ctq_chat_render(s->chat, g->rq.msgs, g->rq.n_msgs, &sb, &err)) {
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

/* Parse, tokenize, check lengths, submit. false: e says why (g freed by the caller). */
static bool gen_prepare(struct gen *g, enum ctq_oai_kind kind, const struct conn *cx,
			struct ctq_oai_error *e)
{
	struct ctq_server *s = g->s;
	if (!ctq_oai_request_parse(&g->rq, kind, ctq_strbuf_str(&cx->body), cx->body.len,
				   s->o.model_name, e) ||
	    !gen_prompt(g, e))
		return false;
	struct ctq_engine_params p = g->rq.p;
	if (!g->rq.max_tokens_set && kind == CTQ_OAI_CHAT)
		p.max_new = s->o.max_len - g->n_prompt;
	if (g->n_prompt + p.max_new > s->o.max_len || p.max_new < 0 ||
	    (p.max_new == 0 && g->n_prompt >= s->o.max_len))
		return ctq_oai_fail(e, 413, g->rq.max_tokens_set ? "max_tokens" : "prompt",
				    "This model's maximum context length is %lld tokens. However, you requested %lld tokens (%lld in the messages, %lld in the completion).",
				    (long long)s->o.max_len, (long long)(g->n_prompt + (p.max_new > 0 ? p.max_new : 0)),
				    (long long)g->n_prompt, (long long)p.max_new);
	if (p.max_new == 0 && !g->rq.echo)
		return ctq_oai_fail(e, 400, "max_tokens", "max_tokens 0 needs echo");
	/* The tokenizer's end token stops generation too (vLLM adds it to the
	 * model's EOS), unless the request ignores EOS. */
	if (!p.ignore_eos && s->tok->eos_id >= 0 && p.n_stop_ids < CTQ_ENGINE_MAX_STOP_IDS)
		p.stop_ids[p.n_stop_ids++] = s->tok->eos_id;
	g->ids = ctq_calloc((size_t)(p.max_new > 0 ? p.max_new : 1), sizeof *g->ids);
	if (!g->ids)
		return ctq_oai_fail(e, 500, NULL, "out of memory");
	if (g->rq.echo) {
		size_t len = 0;
		if (g->rq.prompt_text)
			g->prompt_text = ctq_strdup(g->rq.prompt_text);
		else if (ctq_tokenizer_decode(s->tok, g->prompt, (size_t)g->n_prompt, false, &g->prompt_text,
					      &len, NULL))
			g->prompt_text = NULL;
		if (!g->prompt_text)
			return ctq_oai_fail(e, 500, NULL, "out of memory");
	}
	ctq_detok_init(&g->dt, s->tok, g->rq.stop, g->rq.n_stop);
	if (p.logprobs >= 0)
		ctq_oai_logprobs_init(&g->lp, kind == CTQ_OAI_CHAT);
	struct ctq_error err = {0};
	if (ctq_engine_submit(s->engine, g->prompt, g->n_prompt, &p, &g->req, &err))
		return ctq_oai_fail(e, err.status == CTQ_ERR_NOMEM ? 500 : err.status == CTQ_ERR_ENV ? 503 : 400,
				    err.path, "%s", err.message);
	return true;
}

/* Appends one server-sent event holding o (taken). */
static void sse(struct gen *g, cJSON *o)
{
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	if (!text) {
		g->out.oom = true;
		return;
	}
	ctq_strbuf_append(&g->out, "data: ");
	ctq_strbuf_append(&g->out, text);
	ctq_strbuf_append(&g->out, "\n\n");
	free(text);
}

/* A streamed chunk of text (prefix first: the echoed prompt). */
static void sse_chunk(struct gen *g, const char *prefix, const char *text, size_t len,
		      const char *finish)
{
	struct ctq_strbuf t;
	ctq_strbuf_init(&t);
	ctq_strbuf_append(&t, prefix ? prefix : "");
	ctq_strbuf_appendn(&t, text, len);
	cJSON *lp = g->rq.p.logprobs >= 0 ? ctq_oai_logprobs_take(&g->lp) : NULL;
	sse(g, ctq_oai_chunk(&g->head, ctq_strbuf_str(&t), lp, finish,
			     g->rq.kind == CTQ_OAI_CHAT && !g->role_sent));
	g->role_sent = true;
	g->finish_sent = finish != NULL;
	ctq_strbuf_free(&t);
}

/* The echoed prompt's log-probabilities, once the engine has them. */
static void gen_echo(struct gen *g, const struct ctq_engine_view *v)
{
	g->prompt_handled = true;
	if (!g->rq.echo || g->rq.p.logprobs < 0)
		return;
	for (int64_t j = 0; j < v->n_prompt && v->prompt; j++)
		ctq_oai_logprobs_add(&g->lp, g->s->tok, &v->prompt[j], j == 0);
}

/* The tokens that came since the last call: text, log-probabilities, stop
 * strings; a stream's events. */
static void gen_tokens(struct gen *g, const struct ctq_engine_view *v, bool stream)
{
	const char *prefix = g->rq.echo && stream && !g->role_sent ? g->prompt_text : NULL;
	for (int64_t i = g->seen; i < v->n_tokens && !g->done; i++) {
		g->ids[i] = v->tokens[i].id;
		bool final = i == v->n_tokens - 1 && v->finish != CTQ_ENGINE_RUNNING;
		if (ctq_detok_update(&g->dt, g->ids, i + 1, final, &g->err))
			g->failed = true;
		if (g->rq.p.logprobs >= 0)
			ctq_oai_logprobs_add(&g->lp, g->s->tok, &v->tokens[i], false);
		g->completion_tokens = i + 1;
		if (g->dt.stopped) {
			ctq_engine_cancel(g->s->engine, g->req);
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

/* Waits (up to timeout_s) for the engine and takes what came; sets done. */
static void gen_step(struct gen *g, bool stream, double timeout_s)
{
	struct ctq_engine_view v;
	ctq_engine_wait(g->s->engine, g->req, g->seen, timeout_s, &v);
	if (!g->prompt_handled && v.prompt_done)
		gen_echo(g, &v);
	gen_tokens(g, &v, stream);
	if (g->done || v.finish == CTQ_ENGINE_RUNNING)
		return;
	/* Finished with no token left to carry the finish (max_tokens 0,
	 * cancelled, failed). */
	g->done = true;
	if (v.finish == CTQ_ENGINE_FAILED) {
		g->failed = true;
		ctq_engine_error(g->s->engine, g->req, &g->err);
	}
	g->finish = ctq_oai_finish_reason(v.finish);
	ctq_detok_update(&g->dt, g->ids, g->seen, true, NULL);
	if (stream && !g->failed) {
		const char *t;
		size_t n = ctq_detok_take(&g->dt, &t);
		sse_chunk(g, g->rq.echo && !g->role_sent ? g->prompt_text : NULL, t, n, g->finish);
	}
}

/* After the finish: usage (include_usage), an error event if it failed,
 * then [DONE]. */
static void gen_stream_tail(struct gen *g)
{
	if (g->failed) {
		struct ctq_oai_error e;
		ctq_oai_fail(&e, 500, NULL, "generation failed: %s", g->err.message);
		char *text = ctq_oai_error_json(&e);
		ctq_strbuf_printf(&g->out, "data: %s\n\n", text ? text : "{}");
		free(text);
	} else if (g->rq.include_usage) {
		sse(g, ctq_oai_usage_chunk(&g->head, g->n_prompt, g->completion_tokens));
	}
	ctq_strbuf_append(&g->out, "data: [DONE]\n\n");
	g->eos = true;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct gen *g = cls;
	while (g->out_pos >= g->out.len) {
		if (g->eos || g->out.oom)
			return MHD_CONTENT_READER_END_OF_STREAM;
		ctq_strbuf_reset(&g->out);
		g->out_pos = 0;
		if (g->done)
			gen_stream_tail(g);
		else
			gen_step(g, true, 1.0);
	}
	size_t n = g->out.len - g->out_pos < max ? g->out.len - g->out_pos : max;
	memcpy(buf, g->out.data + g->out_pos, n);
	g->out_pos += n;
	return (ssize_t)n;
}

/* The stream is over (all sent, or the client went away): the request ends. */
static void stream_free(void *cls)
{
	struct gen *g = cls;
	if (!g->eos && !g->s->o.quiet)
		fprintf(g->s->o.log, "serve:   %s: the client went away mid-stream; request cancelled\n", g->id);
	gen_end(g, 200);
}

static enum MHD_Result gen_whole(struct MHD_Connection *c, struct gen *g)
{
	while (!g->done)
		gen_step(g, false, -1);
	if (g->failed) {
		struct ctq_oai_error e;
		ctq_oai_fail(&e, 500, NULL, "generation failed: %s", g->err.message);
		enum MHD_Result r = send_text(c, 500, "application/json", ctq_oai_error_json(&e));
		gen_end(g, 500);
		return r;
	}
	struct ctq_strbuf t;
	ctq_strbuf_init(&t);
	if (g->rq.echo)
		ctq_strbuf_append(&t, g->prompt_text);
	ctq_strbuf_appendn(&t, g->dt.text.data ? g->dt.text.data : "", g->dt.text.len);
	cJSON *lp = g->rq.p.logprobs >= 0 ? ctq_oai_logprobs_take(&g->lp) : NULL;
	cJSON *o = ctq_oai_response(&g->head, ctq_strbuf_str(&t), t.len, lp, g->finish, g->n_prompt,
				    g->completion_tokens);
	ctq_strbuf_free(&t);
	enum MHD_Result r = send_json(c, 200, o);
	gen_end(g, 200);
	return r;
}

static enum MHD_Result generate(struct ctq_server *s, struct MHD_Connection *c, const char *path,
				enum ctq_oai_kind kind, const struct conn *cx, double t0)
{
	struct ctq_oai_error e;
	pthread_mutex_lock(&s->mu);
	bool draining = s->draining;
	uint64_t id = s->next_id++;
	if (!draining)
		s->in_flight++;
	pthread_mutex_unlock(&s->mu);
	if (draining) {
		ctq_oai_fail(&e, 503, NULL, "the server is shutting down");
		return send_error(s, c, "POST", path, &e, t0);
	}
	struct gen *g = ctq_calloc(1, sizeof *g);
	if (!g) {
		pthread_mutex_lock(&s->mu);
		s->in_flight--;
		pthread_mutex_unlock(&s->mu);
		return MHD_NO;
	}
	g->s = s;
	g->t0 = t0;
	snprintf(g->path, sizeof g->path, "%s", path);
	snprintf(g->id, sizeof g->id, "%s-%016llx", kind == CTQ_OAI_CHAT ? "chatcmpl" : "cmpl",
		 (unsigned long long)(id ^ ((uint64_t)s->created << 24)));
	g->head = (struct ctq_oai_head){kind, g->id, s->o.model_name, (long long)time(NULL)};
	ctq_strbuf_init(&g->out);
	if (!gen_prepare(g, kind, cx, &e)) {
		enum MHD_Result r = send_error(s, c, "POST", path, &e, t0);
		/* Counted as answered by send_error, not as a generation. */
		pthread_mutex_lock(&s->mu);
		if (--s->in_flight == 0)
			pthread_cond_broadcast(&s->idle);
		pthread_mutex_unlock(&s->mu);
		gen_free(g);
		return r;
	}
	if (!g->rq.stream)
		return gen_whole(c, g);
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read,
								   g, stream_free);
	if (!r) {
		gen_end(g, 500);
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	(void)version;
	struct ctq_server *s = cls;
	struct conn *cx = *con_cls;
	if (!cx) {
		if (!(cx = ctq_calloc(1, sizeof *cx)))
			return MHD_NO;
		ctq_strbuf_init(&cx->body);
		*con_cls = cx;
		return MHD_YES;
	}
	if (*upload_size) {
		/* Past the limit the rest is read and dropped, then refused. */
		if (cx->body.len + *upload_size > s->o.max_body)
			cx->too_big = true;
		else
			ctq_strbuf_appendn(&cx->body, upload, *upload_size);
		*upload_size = 0;
		return cx->body.oom ? MHD_NO : MHD_YES;
	}
	return route(s, c, url, method, cx, ctq_now_s());
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	(void)cls, (void)c, (void)why;
	struct conn *cx = *con_cls;
	if (!cx)
		return;
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
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO |
			 (v6 ? MHD_USE_IPv6 : 0);
	s->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)512,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_END);
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
