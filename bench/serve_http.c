/* ctq bench serve --url, the engine (see serve_http.h). */
#include "bench/serve_http.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/time.h"
#include "net/openai.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ctq_server_profile_name(enum ctq_server_profile p)
{
	return p == CTQ_PROFILE_VLLM ? "vllm" : p == CTQ_PROFILE_OPENAI ? "openai" : "auto";
}

int ctq_server_profile_parse(const char *s)
{
	return !strcmp(s, "auto")	? CTQ_PROFILE_AUTO
	       : !strcmp(s, "vllm")	? CTQ_PROFILE_VLLM
	       : !strcmp(s, "openai") ? CTQ_PROFILE_OPENAI
				      : -1;
}

/* Characters of the server's reason kept in the learned line (llama-cpp-python
 * answers a token-id prompt with pydantic's error for each id). */
#define LEARNED_REASON 200

/* One probe: *answered says whether it got a 2xx answer; reason (cap
 * bytes) and *status say why not. */
static enum ctq_status probe_once(struct ctq_bench_http *s, bool text, bool eos, bool *answered, char *reason,
				  size_t cap, long *status, struct ctq_error *err)
{
	struct ctq_strbuf b;
	ctq_strbuf_init(&b);
	ctq_openai_probe_body(&b, s->model, s->prompts, (size_t)s->o.input_len, text ? s->texts[0] : NULL, eos);
	if (b.oom) {
		ctq_strbuf_free(&b);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
	}
	struct ctq_http_req r = {.url = s->endpoint, .body = b.data, .body_len = b.len,
				 .timeout_ms = (long)(s->o.request_timeout_s * 1e3)};
	enum ctq_status st = ctq_http_fetch(&r, err);
	if (!st) {
		ctq_openai_error_reason(&r);
		*answered = !r.failed;
		*status = r.status;
		snprintf(reason, cap, "%s", r.reason);
	}
	ctq_http_req_free(&r);
	ctq_strbuf_free(&b);
	return st;
}

enum ctq_status ctq_bench_http_probe(struct ctq_bench_http *s, struct ctq_error *err)
{
	const enum ctq_prompt_format pf = s->o.prompt_format;
	const bool text0 = pf == CTQ_PROMPT_TEXT;
	const struct {
		bool text, eos;
	} tries[3] = {{text0, true}, {text0, false}, {true, false}};
	const int n_tries = pf == CTQ_PROMPT_DEFAULT ? 3 : 2;
	char reason[3][400] = {{0}};
	int k = 0;
	for (; k < n_tries; k++) {
		bool ok = false;
		long status = 0;
		enum ctq_status st = probe_once(s, tries[k].text, tries[k].eos, &ok, reason[k], sizeof reason[k],
						&status, err);
		if (st)
			return st;
		if (ok)
			break;
		if (status < 400) /* no answer at all: nothing to learn */
			return ctq_error_set(err, CTQ_ERR_ENV, s->endpoint, "the probe request got no answer: %s",
					     reason[k]);
	}
	if (k == n_tries)
		return ctq_error_set(err, CTQ_ERR_ENV, s->endpoint,
				     "the server refused the probe request in every form (%s): %s",
				     pf == CTQ_PROMPT_DEFAULT ? "token ids with and without ignore_eos, text"
				     : text0			? "text with and without ignore_eos"
								: "token ids with and without ignore_eos",
				     reason[0]);
	s->prompt_text = tries[k].text;
	s->ignore_eos = tries[k].eos;
	s->profile = k == 0 ? CTQ_PROFILE_VLLM : CTQ_PROFILE_OPENAI;
	const char *what = s->prompt_text ? "text" : "token-id";
	if (k == 0)
		snprintf(s->learned, sizeof s->learned, "server takes %s prompts and ignore_eos: profile vllm", what);
	else if (k == 1)
		snprintf(s->learned, sizeof s->learned,
			 "server refuses ignore_eos (%.*s%s); sending %s prompts without it (profile openai: "
			 "output lengths may vary)",
			 LEARNED_REASON, reason[0], strlen(reason[0]) > LEARNED_REASON ? "..." : "", what);
	else
		snprintf(s->learned, sizeof s->learned,
			 "server refuses token-id prompts (%.*s%s); sending text without ignore_eos (profile "
			 "openai: output lengths may vary)",
			 LEARNED_REASON, reason[1], strlen(reason[1]) > LEARNED_REASON ? "..." : "");
	return CTQ_OK;
}

enum ctq_status ctq_bench_http_open(struct ctq_bench_http *s, const struct ctq_bench_http_options *o,
				    struct ctq_error *err)
{
	memset(s, 0, sizeof *s);
	s->o = *o;
	const long n = o->requests;
	if (n < 1 || o->concurrency < 1 || o->input_len < 1 || o->output_len < 1 || !o->url ||
	    !o->tokenizer || !(o->request_timeout_s > 0))
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench serve --url",
				     "needs a URL, a tokenizer, requests, concurrency, lengths and a "
				     "request time limit above 0");
	ctq_openai_endpoint(o->url, "completions", s->endpoint, sizeof s->endpoint);
	if (ctq_path_is_dir(o->tokenizer))
		snprintf(s->tok_path, sizeof s->tok_path, "%s/tokenizer.json", o->tokenizer);
	else
		snprintf(s->tok_path, sizeof s->tok_path, "%s", o->tokenizer);
	enum ctq_status st = ctq_tokenizer_load(&s->tok, o->tokenizer, err);
	if (st)
		return st;
	s->vocab = (int64_t)ctq_tokenizer_vocab_size(&s->tok);
	if (o->model)
		snprintf(s->model, sizeof s->model, "%s", o->model);
	else if ((st = ctq_openai_models(o->url, (long)(o->request_timeout_s * 1e3), s->model,
					 sizeof s->model, NULL, err)))
		return st;
	s->total_limit_s = o->total_timeout_s > 0
				   ? o->total_timeout_s
				   : o->request_timeout_s * (double)((n + o->concurrency - 1) / o->concurrency) +
					     (o->rate > 0 ? (double)n / o->rate : 0) + 10;
	/* The prompts' text is needed whenever it may be sent. */
	const bool need_text = o->prompt_format == CTQ_PROMPT_TEXT ||
			       (o->profile != CTQ_PROFILE_VLLM && o->prompt_format != CTQ_PROMPT_IDS);
	s->prompts = ctq_malloc((size_t)n * (size_t)o->input_len * sizeof *s->prompts);
	s->q = ctq_calloc((size_t)n, sizeof *s->q);
	double *arr = ctq_calloc((size_t)n, sizeof *arr);
	if (need_text)
		s->texts = ctq_calloc((size_t)n, sizeof *s->texts);
	if (!s->prompts || !s->q || !arr || (need_text && !s->texts)) {
		ctq_free(arr);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
	}
	ctq_bench_serve_workload(s->prompts, arr, n, o->input_len, o->rate, o->seed, s->vocab);
	for (long i = 0; i < n && need_text && !st; i++) {
		size_t tl = 0;
		st = ctq_tokenizer_decode(&s->tok, s->prompts + i * o->input_len, (size_t)o->input_len, false,
					  &s->texts[i], &tl, err);
	}
	if (!st && o->profile == CTQ_PROFILE_AUTO) {
		st = ctq_bench_http_probe(s, err);
	} else {
		s->profile = o->profile;
		s->ignore_eos = o->profile == CTQ_PROFILE_VLLM;
		s->prompt_text = o->prompt_format == CTQ_PROMPT_TEXT ||
				 (o->profile == CTQ_PROFILE_OPENAI && o->prompt_format != CTQ_PROMPT_IDS);
	}
	for (long i = 0; i < n && !st; i++) {
		struct ctq_bench_http_req *x = &s->q[i];
		x->arrival = arr[i];
		x->sent = x->first = x->last = NAN;
		x->usage_tokens = -1;
		x->owner = s;
		ctq_strbuf_init(&x->body);
		ctq_strbuf_init(&x->text);
		ctq_sse_init(&x->sse);
		ctq_openai_stream_body(&x->body, s->model, s->prompts + i * o->input_len, (size_t)o->input_len,
				       s->prompt_text ? s->texts[i] : NULL, o->output_len, s->ignore_eos);
		if (x->body.oom)
			st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
	}
	ctq_free(arr);
	return st;
}

/* ---- one stream -------------------------------------------------------------------- */

static int on_event(void *ctx, const char *data, size_t len)
{
	struct ctq_bench_http_req *x = ctx;
	if (x->got_done)
		return 0;
	struct ctq_openai_chunk c;
	struct ctq_error e = {0};
	if (ctq_openai_chunk_parse(data, len, &c, &x->text, &e)) {
		ctq_http_req_fail(&x->http, "a stream event is not a completion chunk: %s", e.message);
		return 1;
	}
	if (c.is_error) {
		ctq_http_req_fail(&x->http, "the server sent an error in the stream: %s", c.error);
		return 1;
	}
	if (c.empty)
		return 0;
	if (c.done) {
		x->got_done = true;
		return 0;
	}
	x->finished |= c.finished;
	x->stopped |= c.stopped;
	if (c.has_choice) {
		const double t = ctq_now_s() - x->owner->t0;
		if (isnan(x->first)) {
			x->first = t;
		} else {
			if (x->n_itl == x->cap_itl) {
				size_t cap = x->cap_itl ? 2 * x->cap_itl : 64;
				double *v = ctq_realloc(x->itl, cap * sizeof *v);
				if (!v) {
					ctq_http_req_fail(&x->http, "out of memory");
					return 1;
				}
				x->itl = v, x->cap_itl = cap;
			}
			x->itl[x->n_itl++] = t - x->last;
		}
		x->last = t;
		x->chunks++;
	}
	if (c.usage_completion >= 0)
		x->usage_tokens = c.usage_completion;
	return 0;
}

static int on_body(void *ctx, struct ctq_http_req *r, const char *p, size_t n)
{
	struct ctq_bench_http_req *x = ctx;
	struct ctq_error e = {0};
	bool stopped = false;
	if (ctq_sse_feed(&x->sse, p, n, on_event, x, &stopped, &e)) {
		ctq_http_req_fail(r, "%s", e.message);
		return 1;
	}
	return stopped;
}

/* The verdict on a request whose transfer ended. */
static void judge(struct ctq_bench_http *s, struct ctq_bench_http_req *x)
{
	struct ctq_http_req *r = &x->http;
	x->state = CTQ_HREQ_FAILED;
	if (r->failed) {
		ctq_openai_error_reason(r);
		snprintf(x->reason, sizeof x->reason, "%s", r->reason);
		x->refused = r->status == 0 || r->status >= 400;
	} else if (!x->finished && x->usage_tokens != s->o.output_len) {
		snprintf(x->reason, sizeof x->reason,
			 "cut short: the stream ended %s after %ld token chunks, with no finish_reason",
			 x->got_done ? "with data: [DONE]" : "(the server closed it)", x->chunks);
		if (x->usage_tokens >= 0)
			snprintf(x->reason + strlen(x->reason), sizeof x->reason - strlen(x->reason),
				 " and usage saying %ld tokens of the %ld asked", x->usage_tokens,
				 s->o.output_len);
	} else if (!x->chunks) {
		snprintf(x->reason, sizeof x->reason, "the stream carried no token");
	} else if (x->usage_tokens >= 0 && x->usage_tokens != s->o.output_len &&
		   (s->ignore_eos || x->usage_tokens > s->o.output_len)) {
		snprintf(x->reason, sizeof x->reason, "%ld tokens generated of the %ld asked%s", x->usage_tokens,
			 s->o.output_len, s->ignore_eos ? " (is ignore_eos honoured?)" : "");
	} else {
		x->state = CTQ_HREQ_OK;
	}
	if (x->state == CTQ_HREQ_OK) {
		x->output_tokens = x->usage_tokens;
		if (x->output_tokens < 0) {
			int32_t *ids = NULL;
			size_t n = 0;
			if (!ctq_tokenizer_encode(&s->tok, x->text.data, x->text.len, false, &ids, &n, NULL))
				x->output_tokens = (int64_t)n;
			free(ids);
		} else {
			s->tokens_from_usage++;
		}
		/* Without ignore_eos a request may end at EOS: served, counted. */
		x->early = !s->ignore_eos &&
			   (x->usage_tokens >= 0 ? x->usage_tokens < s->o.output_len : x->stopped);
		s->stopped_early += x->early;
		s->completed++;
		s->output_tokens += x->output_tokens > 0 ? x->output_tokens : 0;
	} else {
		s->failed++;
		s->refused += x->refused;
	}
	ctq_http_req_free(r);
	ctq_sse_free(&x->sse);
}

static void on_done(void *ctx, struct ctq_http_req *r)
{
	struct ctq_bench_http_req *x = r->ctx;
	judge(ctx, x);
}

static enum ctq_status send_one(struct ctq_http *h, struct ctq_bench_http *s, struct ctq_bench_http_req *x,
				struct ctq_error *err)
{
	x->http = (struct ctq_http_req){.url = s->endpoint, .body = x->body.data, .body_len = x->body.len,
					.timeout_ms = (long)(s->o.request_timeout_s * 1e3), .on_body = on_body,
					.ctx = x};
	x->state = CTQ_HREQ_RUNNING;
	x->sent = ctq_now_s() - s->t0;
	if (s->o.rate <= 0)
		x->arrival = x->sent;
	return ctq_http_start(h, &x->http, err);
}

/* ---- the run -------------------------------------------------------------------------- */

static void summarize(struct ctq_bench_http *s)
{
	static const char *const names[CTQ_HSERVE_N_DIST] = {"ttft_ms", "latency_ms", "tpot_ms", "itl_ms",
							     "queue_ms"};
	const long n = s->o.requests;
	size_t n_itl = 0;
	for (long i = 0; i < n; i++)
		n_itl += s->q[i].state == CTQ_HREQ_OK ? s->q[i].n_itl : 0;
	double *v = ctq_malloc((n_itl > (size_t)n ? n_itl : (size_t)n) * sizeof *v + 1);
	for (int d = 0; d < CTQ_HSERVE_N_DIST && v; d++) {
		size_t k = 0;
		for (long i = 0; i < n; i++) {
			const struct ctq_bench_http_req *x = &s->q[i];
			if (x->state != CTQ_HREQ_OK)
				continue;
			if (d == CTQ_HSERVE_ITL)
				for (size_t j = 0; j < x->n_itl; j++)
					v[k++] = x->itl[j] * 1e3;
			else if (d == CTQ_HSERVE_TTFT)
				v[k++] = (x->first - x->sent) * 1e3;
			else if (d == CTQ_HSERVE_LATENCY)
				v[k++] = (x->last - x->sent) * 1e3;
			else if (d == CTQ_HSERVE_QUEUE)
				v[k++] = (x->sent - x->arrival) * 1e3;
			else if (x->output_tokens > 1)
				v[k++] = (x->last - x->first) * 1e3 / (double)(x->output_tokens - 1);
		}
		ctq_bench_serve_dist_of(&s->dist[d], names[d], v, k);
	}
	ctq_free(v);
}

/* The next request is due: closed loop whenever a client is free, Poisson
 * at its arrival time (and a free client). */
static bool due(const struct ctq_bench_http *s, long next, size_t active, double now)
{
	return next < s->o.requests && (long)active < s->o.concurrency &&
	       (s->o.rate <= 0 || s->q[next].arrival <= now);
}

enum ctq_status ctq_bench_http_run(struct ctq_bench_http *s, struct ctq_error *err)
{
	struct ctq_http h;
	enum ctq_status st = ctq_http_init(&h, err);
	if (st)
		return st;
	const long n = s->o.requests;
	long next = 0;
	double t_first = NAN, t_last = 0, last_progress = -1;
	s->t0 = ctq_now_s();
	while (!st) {
		double now = ctq_now_s() - s->t0;
		if (now > s->total_limit_s) {
			char why[128];
			snprintf(why, sizeof why, "the overall time limit of %.1f s passed", s->total_limit_s);
			for (long i = 0; i < n; i++)
				if (s->q[i].state == CTQ_HREQ_RUNNING) {
					ctq_http_cancel(&h, &s->q[i].http, why);
					judge(s, &s->q[i]);
				}
			break;
		}
		while (!st && due(s, next, h.active, now)) {
			st = send_one(&h, s, &s->q[next++], err);
			if (isnan(t_first))
				t_first = now;
		}
		if (st || (next == n && h.active == 0))
			break;
		int wait_ms = 50;
		if (s->o.rate > 0 && next < n && (long)h.active < s->o.concurrency) {
			double w = (s->q[next].arrival - now) * 1e3;
			wait_ms = w < 0 ? 0 : w < wait_ms ? (int)w + 1 : wait_ms;
		}
		long ended = s->completed + s->failed;
		st = ctq_http_poll(&h, wait_ms, on_done, s, err);
		if (s->completed + s->failed != ended)
			t_last = ctq_now_s() - s->t0;
		if (s->progress && now - last_progress >= 0.2) {
			last_progress = now;
			s->progress(s->progress_ctx, s->completed + s->failed, s->failed, n);
		}
	}
	ctq_http_free(&h);
	for (long i = 0; i < n; i++)
		s->not_run += s->q[i].state == CTQ_HREQ_NOT_RUN;
	s->wall_s = isnan(t_first) ? 0 : t_last - t_first;
	if (s->progress)
		s->progress(s->progress_ctx, s->completed + s->failed, s->failed, n);
	summarize(s);
	return st;
}

/* ---- results ---------------------------------------------------------------------------- */

void ctq_bench_http_rows(const struct ctq_bench_http *s, struct ctq_csv *csv)
{
	const struct ctq_bench_http_options *o = &s->o;
	for (long i = 0; i < o->requests; i++) {
		const struct ctq_bench_http_req *x = &s->q[i];
		const bool ok = x->state == CTQ_HREQ_OK, sent = x->state != CTQ_HREQ_NOT_RUN;
		struct ctq_bench_serve_row row = {
			.request = i, .input_len = o->input_len,
			.output_tokens = (long long)(ok ? x->output_tokens : x->chunks), .arrival_s = x->arrival,
			.queue_ms = NAN, .ttft_ms = NAN, .latency_ms = NAN, .tpot_ms = NAN,
			.status = ok ? "ok" : sent ? "error" : "not run", .tokens = "",
			.reason = ok ? "" : sent ? x->reason : "not sent: the overall time limit passed"};
		if (sent)
			row.queue_ms = (x->sent - x->arrival) * 1e3;
		if (ok) {
			row.ttft_ms = (x->first - x->sent) * 1e3;
			row.latency_ms = (x->last - x->sent) * 1e3;
			if (x->output_tokens > 1)
				row.tpot_ms = (x->last - x->first) * 1e3 / (double)(x->output_tokens - 1);
		}
		ctq_fam_bench_serve_csv_row(csv, &row);
	}
}

void ctq_bench_http_tokens_from(const struct ctq_bench_http *s, char *out, size_t cap)
{
	const long text = s->completed - s->tokens_from_usage;
	if (!text)
		snprintf(out, cap, "usage");
	else if (!s->tokens_from_usage)
		snprintf(out, cap, "text re-encoded");
	else
		snprintf(out, cap, "usage (%ld requests), text re-encoded (%ld)", s->tokens_from_usage, text);
}

void ctq_bench_http_manifest(const struct ctq_bench_http *s, cJSON *m)
{
	const struct ctq_bench_http_options *o = &s->o;
	const double wall = s->wall_s > 0 ? s->wall_s : NAN;
	char device[2300];
	snprintf(device, sizeof device, "OpenAI-compatible server at %s", o->url);
	cJSON_AddStringToObject(m, "engine", "http");
	cJSON_AddStringToObject(m, "url", o->url);
	cJSON_AddStringToObject(m, "endpoint", s->endpoint);
	cJSON_AddStringToObject(m, "model", s->model);
	cJSON_AddStringToObject(m, "device", device);
	cJSON_AddStringToObject(m, "tokenizer", s->tok_path);
	cJSON_AddStringToObject(m, "prompt_format", s->prompt_text ? "text" : "token-ids");
	cJSON_AddStringToObject(m, "server_profile", ctq_server_profile_name(s->profile));
	cJSON_AddStringToObject(m, "server_profile_asked", ctq_server_profile_name(o->profile));
	cJSON_AddStringToObject(m, "prompt_format_asked",
				o->prompt_format == CTQ_PROMPT_IDS    ? "token-ids"
				: o->prompt_format == CTQ_PROMPT_TEXT ? "text"
								      : "the profile's");
	cJSON_AddStringToObject(m, "probe", s->learned);
	cJSON_AddBoolToObject(m, "ignore_eos", s->ignore_eos);
	cJSON_AddStringToObject(m, "output_lengths", s->ignore_eos ? "exact (ignore_eos)" : "may vary (no ignore_eos)");
	cJSON_AddNumberToObject(m, "stopped_early", (double)s->stopped_early);
	char from[160];
	ctq_bench_http_tokens_from(s, from, sizeof from);
	cJSON_AddStringToObject(m, "output_tokens_from", from);
	cJSON_AddNumberToObject(m, "vocab", (double)s->vocab);
	ctq_bench_serve_workload_json(m, o->requests, o->concurrency, o->input_len, o->output_len,
				      o->rate, o->seed);
	cJSON_AddNumberToObject(m, "completed", (double)s->completed);
	cJSON_AddNumberToObject(m, "errors", (double)(o->requests - s->completed));
	cJSON_AddNumberToObject(m, "not_run", (double)s->not_run);
	cJSON_AddNumberToObject(m, "refused", (double)s->refused);
	cJSON_AddNumberToObject(m, "request_timeout_s", o->request_timeout_s);
	cJSON_AddNumberToObject(m, "total_timeout_s", s->total_limit_s);
	cJSON_AddNumberToObject(m, "total_s", s->wall_s);
	cJSON_AddNumberToObject(m, "requests_per_s", isnan(wall) ? 0 : (double)s->completed / wall);
	cJSON_AddNumberToObject(m, "output_tokens_per_s", isnan(wall) ? 0 : (double)s->output_tokens / wall);
	cJSON_AddNumberToObject(m, "tokens_per_s",
				isnan(wall) ? 0
					    : ((double)s->completed * (double)o->input_len +
					       (double)s->output_tokens) / wall);
	for (int d = 0; d < CTQ_HSERVE_N_DIST; d++)
		ctq_bench_serve_dist_json(&s->dist[d], m);
}

void ctq_bench_http_free(struct ctq_bench_http *s)
{
	if (!s)
		return;
	for (long i = 0; s->q && i < s->o.requests; i++) {
		struct ctq_bench_http_req *x = &s->q[i];
		ctq_http_req_free(&x->http);
		ctq_sse_free(&x->sse);
		ctq_strbuf_free(&x->body);
		ctq_strbuf_free(&x->text);
		ctq_free(x->itl);
		if (s->texts)
			free(s->texts[i]);
	}
	ctq_free(s->q);
	ctq_free(s->texts);
	ctq_free(s->prompts);
	ctq_tokenizer_free(&s->tok);
	memset(s, 0, sizeof *s);
}
