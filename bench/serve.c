/* ctq bench serve in process (bench/serve.h): the workload from the seed,
 * its clients over the batching engine, and the per-request and summary
 * measurements. Time is wall clock on CLOCK_MONOTONIC; the queue wait counts
 * in a request's latency and TTFT. */
#include "bench/serve.h"
#include "core/arena.h"
#include "core/rng.h"
#include "core/time.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Percentile q (0..1) of v (n, sorted), linear interpolation between ranks. */
static double pct(const double *v, size_t n, double q)
{
	if (!n)
		return NAN;
	double at = q * (double)(n - 1);
	size_t i = (size_t)floor(at);
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (at - (double)i) * (v[i + 1] - v[i]);
}

void ctq_bench_serve_workload_json(cJSON *m, long requests, long concurrency, long input_len,
				   long output_len, double rate, long seed)
{
	cJSON_AddNumberToObject(m, "requests", (double)requests);
	cJSON_AddNumberToObject(m, "concurrency", (double)concurrency);
	cJSON_AddNumberToObject(m, "input_tokens", (double)input_len);
	cJSON_AddNumberToObject(m, "output_tokens", (double)output_len);
	cJSON_AddStringToObject(m, "arrival", rate > 0 ? "poisson" : "closed");
	if (rate > 0)
		cJSON_AddNumberToObject(m, "rate_per_s", rate);
	cJSON_AddNumberToObject(m, "seed", (double)seed);
}

void ctq_bench_serve_workload(int32_t *prompts, double *arrivals, long requests, long input_len,
			      double rate, long seed, int64_t vocab)
{
	struct ctq_rng rng;
	ctq_rng_seed(&rng, (uint64_t)seed);
	double t_arr = 0;
	for (long i = 0; i < requests; i++) {
		int32_t *p = prompts + i * input_len;
		for (long t = 0; t < input_len; t++)
			p[t] = (int32_t)ctq_rng_below(&rng, (uint64_t)vocab);
		if (rate > 0) {
			t_arr += -log(1.0 - ctq_rng_uniform(&rng)) / rate;
			arrivals[i] = t_arr;
		} else if (arrivals) {
			arrivals[i] = 0;
		}
	}
}

void ctq_bench_serve_dist_of(struct ctq_bench_serve_dist *d, const char *name, double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	double sum = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	const double mean = n ? sum / (double)n : NAN;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	d->name = name;
	d->p50 = pct(v, n, 0.50);
	d->p90 = pct(v, n, 0.90);
	d->p99 = pct(v, n, 0.99);
	d->mean = mean;
	d->std = n ? sqrt(ss / (double)n) : NAN;
}

void ctq_bench_serve_dist_json(const struct ctq_bench_serve_dist *d, cJSON *m)
{
	cJSON *j = cJSON_AddObjectToObject(m, d->name);
	cJSON_AddNumberToObject(j, "mean", isnan(d->mean) ? -1 : d->mean);
	cJSON_AddNumberToObject(j, "std", isnan(d->std) ? -1 : d->std);
	cJSON_AddNumberToObject(j, "p50", isnan(d->p50) ? -1 : d->p50);
	cJSON_AddNumberToObject(j, "p90", isnan(d->p90) ? -1 : d->p90);
	cJSON_AddNumberToObject(j, "p99", isnan(d->p99) ? -1 : d->p99);
}

enum ctq_status ctq_bench_serve_open(struct ctq_bench_serve *s, const struct ctq_bench_serve_options *o,
				     struct ctq_error *err)
{
	memset(s, 0, sizeof *s);
	s->o = *o;
	const long n_req = o->requests;
	enum ctq_status st;
	s->q = ctq_calloc((size_t)n_req, sizeof *s->q);
	s->prompts = ctq_malloc((size_t)(n_req * o->input_len) * 4);
	s->outs = ctq_calloc((size_t)(n_req * o->output_len), 4);
	s->arrival = ctq_calloc((size_t)n_req, sizeof *s->arrival);
	s->tmp = ctq_malloc((size_t)n_req * sizeof *s->tmp);
	if (!s->q || !s->prompts || !s->outs || !s->arrival || !s->tmp)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
	const struct ctq_model_options mo = {
		.dir = o->model, .backend = o->backend, .tp = (int)o->tp, .numerics = CTQ_ACT_NUMERICS_CTQ,
		.limits = {.max_slots = o->max_batch, .max_len = o->cache_len, .max_tokens = o->max_tokens}};
	if ((st = ctq_model_open(&s->model, &mo, err)))
		return st;
	const struct ctq_engine_options eo = {.max_batch = o->max_batch, .max_len = o->cache_len,
					      .max_tokens = o->max_tokens, .echo_rows = 1, .log_calls = true};
	if ((st = ctq_engine_start(&s->engine, &s->model, &eo, err)))
		return st;
	ctq_bench_serve_workload(s->prompts, s->arrival, n_req, o->input_len, o->rate, o->seed,
				 ctq_model_cfg(&s->model)->vocab);
	return CTQ_OK;
}

/* ---- the clients --------------------------------------------------------------------- */

/* The clients of a run: requests are sent from the engine's on_done (a
 * client's next request as its last one ends, with no latency of its own:
 * the old scheduler's closed loop) and, on a schedule, from the caller's
 * thread when an arrival time comes while fewer than C are in flight. */
struct driver {
	struct ctq_bench_serve *s;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	long next, in_flight, ended;
	double t_end; /* when the last request ended (ctq_now_s) */
	struct ticket *tk; /* (requests) each request's on_done context */
};

struct ticket {
	struct driver *d;
	long i;
};

static void on_done(void *ctx, struct ctq_engine *e, struct ctq_engine_req *req);

/* Under d->mu: sends every request that is due. */
static void send_due(struct driver *d)
{
	struct ticket *tk = d->tk;
	struct ctq_bench_serve *s = d->s;
	const struct ctq_bench_serve_options *o = &s->o;
	for (;;) {
		const double now = ctq_now_s() - s->t0;
		if (d->next >= o->requests || d->in_flight >= o->concurrency ||
		    (o->rate > 0 && s->arrival[d->next] > now))
			return;
		const long i = d->next++;
		struct ctq_bench_serve_req *x = &s->q[i];
		x->arrival = o->rate > 0 ? s->arrival[i] : now;
		x->sent = now;
		tk[i] = (struct ticket){d, i};
		const struct ctq_engine_params p = {.max_new = o->output_len, .ignore_eos = true, .top_p = 1,
						    .logprobs = -1, .on_done = on_done, .on_done_ctx = &tk[i]};
		struct ctq_engine_req *req = NULL;
		struct ctq_error err = {0};
		if (ctq_engine_submit(s->engine, s->prompts + i * o->input_len, o->input_len, &p, &req, &err)) {
			x->state = CTQ_ENGINE_FAILED;
			snprintf(x->why, sizeof x->why, "%s", err.message);
			if (++d->ended == o->requests)
				d->t_end = ctq_now_s();
			continue;
		}
		d->in_flight++;
	}
}

/* On the engine's worker: what became of request tk->i, then the requests
 * now due. */
static void on_done(void *ctx, struct ctq_engine *e, struct ctq_engine_req *req)
{
	const struct ticket *tk = ctx;
	struct driver *d = tk->d;
	struct ctq_bench_serve *s = d->s;
	const struct ctq_bench_serve_options *o = &s->o;
	struct ctq_bench_serve_req *x = &s->q[tk->i];
	struct ctq_engine_view v;
	ctq_engine_wait(e, req, INT64_MAX, 0, &v);
	x->state = v.finish;
	x->generated = v.n_tokens;
	x->admitted = x->sent + v.queued_s;
	x->first = x->sent + v.first_s;
	x->finish = x->sent + v.finish_s;
	for (int64_t t = 0; t < v.n_tokens && t < o->output_len; t++)
		s->outs[tk->i * o->output_len + t] = v.tokens[t].id;
	if (v.finish == CTQ_ENGINE_FAILED) {
		struct ctq_error err = {0};
		ctq_engine_error(e, req, &err);
		snprintf(x->why, sizeof x->why, "%s", err.message);
	}
	ctq_engine_release(e, req);
	pthread_mutex_lock(&d->mu);
	d->in_flight--;
	if (++d->ended == o->requests)
		d->t_end = ctq_now_s();
	send_due(d);
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
}

static void summarize(struct ctq_bench_serve *s);

enum ctq_status ctq_bench_serve_run(struct ctq_bench_serve *s, struct ctq_error *err)
{
	const struct ctq_bench_serve_options *o = &s->o;
	struct ticket *tk = ctq_calloc((size_t)o->requests, sizeof *tk);
	if (!tk)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
	struct driver d = {.s = s, .tk = tk};
	pthread_mutex_init(&d.mu, NULL);
	pthread_cond_init(&d.cond, NULL);
	pthread_mutex_lock(&d.mu);
	s->t0 = ctq_now_s();
	send_due(&d);
	while (d.ended < o->requests) {
		if (o->rate <= 0 || d.next >= o->requests || d.in_flight >= o->concurrency) {
			pthread_cond_wait(&d.cond, &d.mu);
		} else {
			/* until the next arrival, or an end that frees a client */
			const double t = s->t0 + s->arrival[d.next];
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			const double at = (double)until.tv_sec + until.tv_nsec * 1e-9 + (t - ctq_now_s());
			until.tv_sec = (time_t)at;
			until.tv_nsec = (long)((at - floor(at)) * 1e9);
			pthread_cond_timedwait(&d.cond, &d.mu, &until);
		}
		send_due(&d);
	}
	pthread_mutex_unlock(&d.mu);
	s->stats.wall_s = d.t_end - s->t0;
	ctq_engine_stop(s->engine);
	pthread_cond_destroy(&d.cond);
	pthread_mutex_destroy(&d.mu);
	ctq_free(tk);
	struct ctq_engine_stats es;
	ctq_engine_get_stats(s->engine, &es);
	s->stats.calls = es.calls;
	s->stats.fed_tokens = es.fed_tokens;
	s->stats.decode_tokens = es.decode_tokens;
	s->calls = ctq_engine_calls(s->engine, &s->n_calls);
	for (long i = 0; i < o->requests; i++) {
		s->stats.finished += s->q[i].state == CTQ_ENGINE_LENGTH || s->q[i].state == CTQ_ENGINE_STOP;
		s->stats.failed += s->q[i].state == CTQ_ENGINE_FAILED;
	}
	summarize(s);
	return CTQ_OK;
}

static bool req_ok(const struct ctq_bench_serve_req *x)
{
	return x->state == CTQ_ENGINE_LENGTH || x->state == CTQ_ENGINE_STOP;
}

static void summarize(struct ctq_bench_serve *s)
{
	static const char *const names[CTQ_SERVE_N_DIST] = {"ttft_ms", "latency_ms", "tpot_ms", "queue_ms"};
	const long out_len = s->o.output_len;
	for (int d = 0; d < CTQ_SERVE_N_DIST; d++) {
		size_t n = 0;
		for (long i = 0; i < s->o.requests; i++) {
			const struct ctq_bench_serve_req *x = &s->q[i];
			if (!req_ok(x) || (d == CTQ_SERVE_TPOT && out_len < 2))
				continue;
			double v = d == CTQ_SERVE_TTFT	  ? x->first - x->arrival
				   : d == CTQ_SERVE_LATENCY ? x->finish - x->arrival
				   : d == CTQ_SERVE_TPOT    ? (x->finish - x->first) / (double)(out_len - 1)
							    : x->admitted - x->arrival;
			s->tmp[n++] = v * 1e3;
		}
		ctq_bench_serve_dist_of(&s->dist[d], names[d], s->tmp, n);
	}
}

void ctq_bench_serve_rows(const struct ctq_bench_serve *s, struct ctq_csv *csv)
{
	const struct ctq_bench_serve_options *o = &s->o;
	for (long i = 0; i < o->requests; i++) {
		const struct ctq_bench_serve_req *x = &s->q[i];
		const bool ok = req_ok(x);
		const bool failed = x->state == CTQ_ENGINE_FAILED || x->state == CTQ_ENGINE_CANCELLED;
		/* The greedy tokens, space-separated: scheduling must not change them. */
		char tok[24 * 64];
		size_t len = 0;
		tok[0] = '\0';
		for (int64_t t = 0; t < x->generated && t < o->output_len && len + 24 < sizeof tok; t++)
			len += (size_t)snprintf(tok + len, sizeof tok - len, t ? " %d" : "%d",
						s->outs[i * o->output_len + t]);
		struct ctq_bench_serve_row row = {
			.request = i, .input_len = o->input_len, .output_tokens = (long long)x->generated,
			.arrival_s = x->arrival, .queue_ms = NAN, .ttft_ms = NAN, .latency_ms = NAN, .tpot_ms = NAN,
			.status = ok ? "ok" : failed ? "error" : "not run", .tokens = tok,
			.reason = ok ? "" : failed ? (x->why[0] ? x->why : "cancelled") : ""};
		if (ok) {
			row.queue_ms = (x->admitted - x->arrival) * 1e3;
			row.ttft_ms = (x->first - x->arrival) * 1e3;
			row.latency_ms = (x->finish - x->arrival) * 1e3;
			if (o->output_len > 1)
				row.tpot_ms = (x->finish - x->first) * 1e3 / (double)(o->output_len - 1);
		}
		ctq_fam_bench_serve_csv_row(csv, &row);
	}
}

/* The forward calls of the run in two kinds: decode only, and those that
 * carry prompt chunks (with or without decode tokens): how many, their
 * median and p90 wall ms, the median tokens of a mixed call and the share
 * of the run's wall time in each kind. The serving step's cost against
 * what it carries, for the Step 13 breakdown. */
static void steps_json(const struct ctq_bench_serve *s, cJSON *m)
{
	cJSON *o = cJSON_AddObjectToObject(m, "forward_call_kinds");
	if (!o || !s->n_calls)
		return;
	double *v = ctq_malloc(s->n_calls * sizeof *v);
	if (!v)
		return;
	static const char *const kinds[2] = {"decode_only", "with_prefill"};
	for (int k = 0; k < 2; k++) {
		size_t n = 0;
		double sum = 0;
		for (size_t i = 0; i < s->n_calls; i++) {
			const struct ctq_engine_call *x = &s->calls[i];
			if ((x->tokens > x->decode) != (k == 1))
				continue;
			v[n++] = x->dur_s * 1e3;
			sum += x->dur_s;
		}
		cJSON *e = cJSON_AddObjectToObject(o, kinds[k]);
		if (!e)
			break;
		cJSON_AddNumberToObject(e, "calls", (double)n);
		cJSON_AddNumberToObject(e, "wall_share", s->stats.wall_s > 0 ? sum / s->stats.wall_s : 0);
		if (!n)
			continue;
		qsort(v, n, sizeof *v, cmp_double);
		cJSON_AddNumberToObject(e, "median_ms", pct(v, n, 0.5));
		cJSON_AddNumberToObject(e, "p90_ms", pct(v, n, 0.9));
		n = 0;
		for (size_t i = 0; i < s->n_calls; i++) {
			const struct ctq_engine_call *x = &s->calls[i];
			if ((x->tokens > x->decode) == (k == 1))
				v[n++] = (double)x->decode;
		}
		qsort(v, n, sizeof *v, cmp_double);
		cJSON_AddNumberToObject(e, "median_decode_tokens", pct(v, n, 0.5));
		if (k == 1) {
			n = 0;
			for (size_t i = 0; i < s->n_calls; i++)
				if (s->calls[i].tokens > s->calls[i].decode)
					v[n++] = (double)(s->calls[i].tokens - s->calls[i].decode);
			qsort(v, n, sizeof *v, cmp_double);
			cJSON_AddNumberToObject(e, "median_prompt_tokens", pct(v, n, 0.5));
		}
	}
	ctq_free(v);
}

void ctq_bench_serve_manifest(const struct ctq_bench_serve *s, cJSON *m)
{
	const struct ctq_bench_serve_options *o = &s->o;
	const struct ctq_bench_serve_stats *x = &s->stats;
	const double wall = x->wall_s, out_tokens = (double)x->finished * (double)o->output_len;
	cJSON_AddStringToObject(m, "engine", "in-process");
	cJSON_AddStringToObject(m, "model", o->model);
	cJSON_AddStringToObject(m, "device", s->model.device);
	ctq_bench_serve_workload_json(m, o->requests, o->concurrency, o->input_len, o->output_len,
				      o->rate, o->seed);
	cJSON_AddNumberToObject(m, "completed", (double)x->finished);
	cJSON_AddNumberToObject(m, "errors", (double)(o->requests - x->finished));
	cJSON_AddNumberToObject(m, "max_batch", (double)o->max_batch);
	cJSON_AddNumberToObject(m, "cache_len", (double)o->cache_len);
	cJSON_AddNumberToObject(m, "max_tokens", (double)o->max_tokens);
	cJSON_AddNumberToObject(m, "load_s", s->model.load_s);
	cJSON_AddNumberToObject(m, "total_s", wall);
	cJSON_AddNumberToObject(m, "requests_per_s", (double)x->finished / wall);
	cJSON_AddNumberToObject(m, "output_tokens_per_s", out_tokens / wall);
	cJSON_AddNumberToObject(m, "tokens_per_s", (double)x->fed_tokens / wall);
	cJSON_AddNumberToObject(m, "forward_calls", (double)x->calls);
	cJSON_AddNumberToObject(m, "decode_tokens", (double)x->decode_tokens);
	cJSON_AddNumberToObject(m, "graph_replays", (double)s->model.r[0].graph_replays);
	cJSON_AddNumberToObject(m, "tp", (double)o->tp);
	for (int d = 0; d < CTQ_SERVE_N_DIST; d++)
		ctq_bench_serve_dist_json(&s->dist[d], m);
	steps_json(s, m);
}

void ctq_bench_serve_free(struct ctq_bench_serve *s)
{
	if (!s)
		return;
	ctq_engine_free(s->engine);
	ctq_model_close(&s->model);
	ctq_free(s->q), ctq_free(s->prompts), ctq_free(s->outs), ctq_free(s->arrival), ctq_free(s->tmp);
	memset(s, 0, sizeof *s);
}
