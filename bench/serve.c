/* ctq bench serve, the engine (bench/serve.h): the workload from the seed,
 * the scheduler run, and the per-request and summary measurements. Time is
 * wall clock on CLOCK_MONOTONIC; the queue wait counts in a request's
 * latency and TTFT. */
#include "bench/serve.h"
#include "core/arena.h"
#include "core/rng.h"
#include "core/time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Prompts and arrival times, from the seed alone. */
static void workload(struct ctq_bench_serve *s, int64_t V)
{
	const struct ctq_bench_serve_options *o = &s->o;
	ctq_bench_serve_workload(s->prompts, s->tmp, o->requests, o->input_len, o->rate, o->seed, V);
	for (long i = 0; i < o->requests; i++) {
		struct ctq_sched_req *x = &s->q[i];
		x->prompt = s->prompts + i * o->input_len;
		x->out = s->outs + i * o->output_len;
		x->arrival = s->tmp[i];
		x->slot = -1;
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
	const int tp = (int)o->tp;
	enum ctq_status st;
	s->q = ctq_calloc((size_t)n_req, sizeof *s->q);
	s->prompts = ctq_malloc((size_t)(n_req * o->input_len) * 4);
	s->outs = ctq_malloc((size_t)(n_req * o->output_len) * 4);
	s->tmp = ctq_malloc((size_t)n_req * sizeof *s->tmp);
	if (!s->q || !s->prompts || !s->outs || !s->tmp)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
	if ((st = ctq_backend_open_tp(s->bk, o->backend, tp, CTQ_ACT_NUMERICS_CTQ, &s->group, err)))
		return st;
	double t_load = ctq_now_s();
	for (int k = 0; k < tp; k++) {
		struct ctq_runner_options opt = {.max_slots = o->max_batch, .max_len = o->cache_len,
						 .max_tokens = o->max_tokens, .tp = tp, .rank = k,
						 .group = s->group};
		if ((st = ctq_runner_load(&s->rk[k], &s->bk[k], o->model, &opt, err)))
			return st;
	}
	s->load_s = ctq_now_s() - t_load;
	const int64_t V = s->rk[0].cfg.vocab;
	struct ctq_sched_options so = {.max_batch = o->max_batch, .input_len = o->input_len,
				       .output_len = o->output_len, .max_tokens = o->max_tokens,
				       .concurrency = o->concurrency, .rate = o->rate};
	if ((st = ctq_sched_init(&s->sched, &so, V, tp, err)))
		return st;
	workload(s, V);
	ctq_backend_describe_tp(&s->bk[0], o->backend, tp, s->device, sizeof s->device);
	return CTQ_OK;
}

static void summarize(struct ctq_bench_serve *s)
{
	static const char *const names[CTQ_SERVE_N_DIST] = {"ttft_ms", "latency_ms", "tpot_ms", "queue_ms"};
	const long out_len = s->o.output_len;
	for (int d = 0; d < CTQ_SERVE_N_DIST; d++) {
		size_t n = 0;
		for (long i = 0; i < s->o.requests; i++) {
			const struct ctq_sched_req *x = &s->q[i];
			if (x->state != CTQ_REQ_DONE || (d == CTQ_SERVE_TPOT && out_len < 2))
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

enum ctq_status ctq_bench_serve_run(struct ctq_bench_serve *s, struct ctq_error *err)
{
	enum ctq_status st = ctq_sched_run(&s->sched, s->rk, (int)s->o.tp, s->q, s->o.requests,
					   &s->stats, err);
	summarize(s);
	return st;
}

void ctq_bench_serve_row_csv(struct ctq_csv *csv, const struct ctq_bench_serve_row *r)
{
	ctq_csv_fieldf(csv, "%ld", r->request);
	ctq_csv_fieldf(csv, "%ld", r->input_len);
	ctq_csv_fieldf(csv, "%lld", r->output_tokens);
	ctq_csv_fieldf(csv, "%.6f", r->arrival_s);
	const double ms[4] = {r->queue_ms, r->ttft_ms, r->latency_ms, r->tpot_ms};
	for (int k = 0; k < 4; k++) {
		if (isnan(ms[k]))
			ctq_csv_field(csv, "");
		else
			ctq_csv_fieldf(csv, "%.6f", ms[k]);
	}
	ctq_csv_field(csv, r->status);
	ctq_csv_field(csv, r->tokens);
	ctq_csv_field(csv, r->reason);
	ctq_csv_end_row(csv);
}

void ctq_bench_serve_rows(const struct ctq_bench_serve *s, struct ctq_csv *csv)
{
	const struct ctq_bench_serve_options *o = &s->o;
	for (long i = 0; i < o->requests; i++) {
		const struct ctq_sched_req *x = &s->q[i];
		bool ok = x->state == CTQ_REQ_DONE;
		/* The greedy tokens, space-separated: scheduling must not change them. */
		char tok[24 * 64];
		size_t len = 0;
		tok[0] = '\0';
		for (int64_t t = 0; t < x->generated && len + 24 < sizeof tok; t++)
			len += (size_t)snprintf(tok + len, sizeof tok - len, t ? " %d" : "%d", x->out[t]);
		struct ctq_bench_serve_row row = {
			.request = i, .input_len = o->input_len, .output_tokens = (long long)x->generated,
			.arrival_s = x->arrival, .queue_ms = NAN, .ttft_ms = NAN, .latency_ms = NAN, .tpot_ms = NAN,
			.status = ok ? "ok" : x->state == CTQ_REQ_FAILED ? "error" : "not run", .tokens = tok,
			.reason = ok ? "" : x->state == CTQ_REQ_FAILED ? "the scheduler failed" : ""};
		if (ok) {
			row.queue_ms = (x->admitted - x->arrival) * 1e3;
			row.ttft_ms = (x->first - x->arrival) * 1e3;
			row.latency_ms = (x->finish - x->arrival) * 1e3;
			if (o->output_len > 1)
				row.tpot_ms = (x->finish - x->first) * 1e3 / (double)(o->output_len - 1);
		}
		ctq_bench_serve_row_csv(csv, &row);
	}
}

/* The forward calls of the run in two kinds: decode only, and those that
 * carry prompt chunks (with or without decode tokens): how many, their
 * median and p90 wall ms, the median tokens of a mixed call and the share
 * of the run's wall time in each kind. The serving step's cost against
 * what it carries, for the Step 13 breakdown. */
static void steps_json(const struct ctq_bench_serve *s, cJSON *m)
{
	const struct ctq_sched *c = &s->sched;
	cJSON *o = cJSON_AddObjectToObject(m, "forward_call_kinds");
	if (!o || !c->n_steps)
		return;
	double *v = ctq_malloc(c->n_steps * sizeof *v);
	if (!v)
		return;
	static const char *const kinds[2] = {"decode_only", "with_prefill"};
	for (int k = 0; k < 2; k++) {
		size_t n = 0;
		double sum = 0;
		for (size_t i = 0; i < c->n_steps; i++) {
			const struct ctq_sched_step *x = &c->steps[i];
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
		for (size_t i = 0; i < c->n_steps; i++) {
			const struct ctq_sched_step *x = &c->steps[i];
			if ((x->tokens > x->decode) == (k == 1))
				v[n++] = (double)x->decode;
		}
		qsort(v, n, sizeof *v, cmp_double);
		cJSON_AddNumberToObject(e, "median_decode_tokens", pct(v, n, 0.5));
		if (k == 1) {
			n = 0;
			for (size_t i = 0; i < c->n_steps; i++)
				if (c->steps[i].tokens > c->steps[i].decode)
					v[n++] = (double)(c->steps[i].tokens - c->steps[i].decode);
			qsort(v, n, sizeof *v, cmp_double);
			cJSON_AddNumberToObject(e, "median_prompt_tokens", pct(v, n, 0.5));
		}
	}
	ctq_free(v);
}

void ctq_bench_serve_manifest(const struct ctq_bench_serve *s, cJSON *m)
{
	const struct ctq_bench_serve_options *o = &s->o;
	const struct ctq_sched_stats *x = &s->stats;
	const double wall = x->wall_s, out_tokens = (double)x->finished * (double)o->output_len;
	cJSON_AddStringToObject(m, "engine", "in-process");
	cJSON_AddStringToObject(m, "model", o->model);
	cJSON_AddStringToObject(m, "device", s->device);
	ctq_bench_serve_workload_json(m, o->requests, o->concurrency, o->input_len, o->output_len,
				      o->rate, o->seed);
	cJSON_AddNumberToObject(m, "completed", (double)x->finished);
	cJSON_AddNumberToObject(m, "errors", (double)(o->requests - x->finished));
	cJSON_AddNumberToObject(m, "max_batch", (double)o->max_batch);
	cJSON_AddNumberToObject(m, "cache_len", (double)o->cache_len);
	cJSON_AddNumberToObject(m, "max_tokens", (double)o->max_tokens);
	cJSON_AddNumberToObject(m, "load_s", s->load_s);
	cJSON_AddNumberToObject(m, "total_s", wall);
	cJSON_AddNumberToObject(m, "requests_per_s", (double)x->finished / wall);
	cJSON_AddNumberToObject(m, "output_tokens_per_s", out_tokens / wall);
	cJSON_AddNumberToObject(m, "tokens_per_s", (double)x->fed_tokens / wall);
	cJSON_AddNumberToObject(m, "forward_calls", (double)x->calls);
	cJSON_AddNumberToObject(m, "decode_tokens", (double)x->decode_tokens);
	cJSON_AddNumberToObject(m, "graph_replays", (double)s->rk[0].graph_replays);
	cJSON_AddNumberToObject(m, "tp", (double)o->tp);
	for (int d = 0; d < CTQ_SERVE_N_DIST; d++)
		ctq_bench_serve_dist_json(&s->dist[d], m);
	steps_json(s, m);
}

void ctq_bench_serve_free(struct ctq_bench_serve *s)
{
	if (!s)
		return;
	ctq_sched_free(&s->sched);
	ctq_free(s->q), ctq_free(s->prompts), ctq_free(s->outs), ctq_free(s->tmp);
	ctq_runner_close_tp(s->rk, s->bk, (int)s->o.tp, s->group);
	memset(s, 0, sizeof *s);
}
