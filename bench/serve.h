/* ctq bench serve, in process: a seeded serving workload (random prompts,
 * a fixed number of new tokens, closed-loop or Poisson arrivals) served by
 * the batching engine ctq serve runs (model/engine.h), minus HTTP and
 * minus a client's latency: a closed-loop client sends its next request
 * from the engine's on_done, so that it joins the next forward call. And
 * its measurement: per-request rows of
 * bench_serve.csv, the latency / TTFT / TPOT / queue distributions and the
 * manifest summary.
 * Not the option parsing or the printing (harness/cmd_bench_serve.c), not
 * the CSV header (families/bench_serve.h). */
#ifndef CTQ_BENCH_SERVE_H
#define CTQ_BENCH_SERVE_H

#include <cjson/cJSON.h>

#include "families/bench_serve.h"
#include "model/engine.h"
#include "model/model.h"
#include "results/csv_out.h"

struct ctq_bench_serve_options {
	const char *model, *backend; /* borrowed */
	long requests, concurrency, max_batch, cache_len, input_len, output_len, max_tokens, seed, tp;
	double rate; /* requests per second, Poisson; 0: closed loop */
};

/* One distribution, in ms; NAN when no request gives a sample. */
struct ctq_bench_serve_dist {
	const char *name;
	double p50, p90, p99, mean, std; /* std: population (numpy's default, as vLLM) */
};

/* The seeded workload every engine serves (in process, or over HTTP in
 * bench/serve_http.h): prompts (requests, input_len) of uniform ids below
 * vocab and, when rate > 0, Poisson arrival times (requests) in seconds
 * from the start; arrivals may be NULL when rate is 0. The same seed and
 * vocab give the same draws. */
void ctq_bench_serve_workload(int32_t *prompts, double *arrivals, long requests, long input_len,
			      double rate, long seed, int64_t vocab);

/* The workload's fields of a bench_serve manifest (requests, concurrency,
 * input and output tokens, arrival, rate_per_s, seed): written once for
 * every engine, since ctq compare matches an HTTP run with an in-process
 * one on them. */
void ctq_bench_serve_workload_json(cJSON *m, long requests, long concurrency, long input_len,
				   long output_len, double rate, long seed);

/* Fills d (name borrowed) from the n samples v, sorted in place: mean,
 * population std and linearly interpolated percentiles; NAN when n is 0. */
void ctq_bench_serve_dist_of(struct ctq_bench_serve_dist *d, const char *name, double *v, size_t n);

/* Adds d to the manifest object m as name: {mean, std, p50, p90, p99}
 * (-1 for a missing value). */
void ctq_bench_serve_dist_json(const struct ctq_bench_serve_dist *d, cJSON *m);

enum { CTQ_SERVE_TTFT, CTQ_SERVE_LATENCY, CTQ_SERVE_TPOT, CTQ_SERVE_QUEUE, CTQ_SERVE_N_DIST };

/* What became of one request: seconds from the start of the run. */
struct ctq_bench_serve_req {
	double arrival, sent, admitted, first, finish;
	enum ctq_engine_finish state; /* RUNNING: never sent */
	int64_t generated;
	char why[160]; /* a failed request's error */
};

/* The run's totals. */
struct ctq_bench_serve_stats {
	long finished, failed, calls;
	int64_t fed_tokens;    /* every token through the model */
	int64_t decode_tokens; /* of which decode steps */
	double wall_s;
};

struct ctq_bench_serve {
	struct ctq_bench_serve_options o;
	struct ctq_model model;
	struct ctq_engine *engine;
	struct ctq_bench_serve_req *q; /* (requests) */
	int32_t *prompts;              /* (requests, input_len) */
	int32_t *outs;                 /* (requests, output_len) */
	double *arrival;               /* (requests) the schedule (rate > 0) */
	double *tmp;                   /* (requests) sorting space */
	double t0;                     /* the run's start (ctq_now_s) */
	const struct ctq_engine_call *calls; /* (n_calls) the run's forward calls */
	size_t n_calls;
	struct ctq_bench_serve_stats stats;
	struct ctq_bench_serve_dist dist[CTQ_SERVE_N_DIST];
};

/* Opens the model (model/model.h), starts the engine and draws the
 * workload from the seed. s is zeroed first; on error it is safe to free.
 * Errors: nomem, the backend's (usage, env), the loader's. */
enum ctq_status ctq_bench_serve_open(struct ctq_bench_serve *s, const struct ctq_bench_serve_options *o,
				     struct ctq_error *err);

/* Serves every request through the engine, at most concurrency in flight:
 * closed loop, a client sends its next request when its last one ends (from
 * the engine's on_done); on a schedule, a request is sent at its arrival
 * time, or when a client frees up if later (the wait counts in its latency).
 * Then stops the engine and summarises. A failed forward call fails the
 * requests in it, which the rows say; the run goes on. Errors: nomem. */
enum ctq_status ctq_bench_serve_run(struct ctq_bench_serve *s, struct ctq_error *err);

/* Writes one bench_serve.csv row per request into csv (opened with the
 * family's header). */
void ctq_bench_serve_rows(const struct ctq_bench_serve *s, struct ctq_csv *csv);

/* Adds the run's summary to m (the manifest's "bench_serve" object). */
void ctq_bench_serve_manifest(const struct ctq_bench_serve *s, cJSON *m);

void ctq_bench_serve_free(struct ctq_bench_serve *s);

#endif
