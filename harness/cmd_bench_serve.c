/* ctq bench serve: serving load on one backend. An in-process scheduler
 * runs N requests (seeded random prompts, a fixed number of new tokens,
 * EOS ignored) with continuous batching over a static KV cache of
 * --max-batch slots: each forward call carries one decode token for every
 * request past its prompt plus chunks of the prompts of newly admitted
 * ones, up to --max-tokens tokens. Arrivals are closed-loop (C clients,
 * each sends its next request when the last one ends) or Poisson at a
 * rate (at most C in flight; the rest wait in a queue, and the wait counts
 * in their latency and TTFT). Time is wall clock on CLOCK_MONOTONIC; each
 * forward call returns its logits to the host, so it is synchronised. */
#include "harness/commands.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "model/runner.h"
#include "backend/backend.h"
#include "results/csv_out.h"
#include "results/run.h"
#include "core/time.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void help(void)
{
	printf("usage: ctq bench serve --model DIR [options]\n"
	       "\n"
	       "Serves N requests through an in-process scheduler with continuous batching\n"
	       "over a static KV cache and reports total time, request rate, output tokens/s,\n"
	       "per-request latency and TTFT percentiles, and errors (which must be 0).\n"
	       "\n"
	       "options:\n"
	       "  --requests N         requests to serve (default 64)\n"
	       "  --concurrency C      requests in flight at most (default 8)\n"
	       "  --max-batch B        KV-cache slots, sequences per forward call (default C)\n"
	       "  --cache-len L        positions per slot (default input + output length)\n"
	       "  --input-len N        prompt tokens per request (default 128)\n"
	       "  --output-len N       new tokens per request, EOS ignored (default 32)\n"
	       "  --max-tokens N       tokens per forward call, decode tokens first, then\n"
	       "                       prompt chunks (default 2048; 512 on reference)\n"
	       "  --arrival A          closed (default: C clients back to back) or\n"
	       "                       poisson:RATE (requests per second, seeded)\n"
	       "  --seed S             prompt and arrival seed (default 1)\n"
	       "  --backend B          cuda (default) or reference\n"
	       "  --tp N               tensor parallelism over N ranks (default 1): GPUs 0..N-1\n"
	       "                       with NCCL, or N in-process ranks on the reference backend\n"
	       "  --out DIR            run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force              replace DIR when it is an existing ctq run directory\n"
	       "                       (any other non-empty DIR is refused)\n"
	       "\n"
	       "Latency runs from a request's arrival to its last token; TTFT from arrival to\n"
	       "its first new token; TPOT = (latency - TTFT) / (output tokens - 1).\n"
	       "Writes bench_serve.csv (one row per request, with its greedy tokens, the first\n"
	       "64 of them) and the summary in manifest.json.\n"
	       "exit: 0 done with 0 errors; 1 a request failed; 2 bad usage or input; 3 no GPU\n"
	       "for cuda.\n");
}

static void sleep_s(double s)
{
	if (s <= 0)
		return;
	struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	nanosleep(&t, NULL);
}

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

enum req_state { REQ_WAITING, REQ_PREFILL, REQ_DECODE, REQ_DONE, REQ_FAILED };

struct req {
	double arrival, admitted, first, finish; /* seconds from the start */
	enum req_state state;
	int32_t slot;
	int64_t fed;       /* prompt tokens fed so far */
	int64_t generated; /* new tokens so far */
	int32_t next;      /* the token to feed in the next decode step */
	int32_t *prompt;   /* (input_len) */
	int32_t *out;      /* (output_len) the greedy tokens */
};

struct serve_opts {
	const char *model, *backend, *out;
	long requests, concurrency, max_batch, cache_len, input_len, output_len, max_tokens, seed, tp;
	double rate; /* 0: closed loop */
	bool force;
};

static int parse(int argc, char **argv, struct serve_opts *o)
{
	*o = (struct serve_opts){.backend = "cuda", .requests = 64, .concurrency = 8, .input_len = 128,
				 .output_len = 32, .seed = 1, .max_tokens = -1, .tp = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return -1;
		}
		if (!strcmp(a, "--force")) {
			o->force = true;
			continue;
		}
		if (!(v = ctq_opt_value(argc, argv, &i)))
			return CTQ_EXIT_USAGE;
		bool ok = true;
		if (!strcmp(a, "--model"))
			o->model = v;
		else if (!strcmp(a, "--backend"))
			o->backend = v;
		else if (!strcmp(a, "--out"))
			o->out = v;
		else if (!strcmp(a, "--requests"))
			ok = ctq_opt_int("bench serve", a, v, 1, 1L << 20, &o->requests);
		else if (!strcmp(a, "--concurrency"))
			ok = ctq_opt_int("bench serve", a, v, 1, 4096, &o->concurrency);
		else if (!strcmp(a, "--max-batch"))
			ok = ctq_opt_int("bench serve", a, v, 1, 4096, &o->max_batch);
		else if (!strcmp(a, "--cache-len"))
			ok = ctq_opt_int("bench serve", a, v, 2, 1L << 20, &o->cache_len);
		else if (!strcmp(a, "--input-len"))
			ok = ctq_opt_int("bench serve", a, v, 1, 1L << 20, &o->input_len);
		else if (!strcmp(a, "--output-len"))
			ok = ctq_opt_int("bench serve", a, v, 1, 1L << 20, &o->output_len);
		else if (!strcmp(a, "--max-tokens"))
			ok = ctq_opt_int("bench serve", a, v, 1, 1L << 20, &o->max_tokens);
		else if (!strcmp(a, "--seed"))
			ok = ctq_opt_int("bench serve", a, v, 0, 0x7fffffffL, &o->seed);
		else if (!strcmp(a, "--tp"))
			ok = ctq_opt_int("bench serve", a, v, 1, 8, &o->tp);
		else if (!strcmp(a, "--arrival")) {
			char *end = NULL;
			if (!strcmp(v, "closed"))
				o->rate = 0;
			else if (!strncmp(v, "poisson:", 8) && (o->rate = strtod(v + 8, &end)) > 0 &&
				 isfinite(o->rate) && end && !*end)
				;
			else {
				fprintf(stderr, "ctq bench serve: --arrival is \"%s\"; expected closed or "
						"poisson:RATE with RATE > 0 requests per second\n", v);
				return CTQ_EXIT_USAGE;
			}
		} else {
			fprintf(stderr, "ctq bench serve: unknown option %s (see --help)\n", a);
			return CTQ_EXIT_USAGE;
		}
		if (!ok)
			return CTQ_EXIT_USAGE;
	}
	if (!o->model) {
		fprintf(stderr, "ctq bench serve: --model DIR is required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_model_dir("bench serve", "--model", o->model))
		return ctq_status_exit_code(CTQ_ERR_IO);
	if (!o->max_batch)
		o->max_batch = o->concurrency;
	if (!o->cache_len)
		o->cache_len = o->input_len + o->output_len;
	if (o->max_tokens < 0)
		o->max_tokens = !strcmp(o->backend, "reference") ? 512 : 2048;
	if (o->input_len + o->output_len > o->cache_len) {
		fprintf(stderr, "ctq bench serve: a request needs %ld positions (--input-len %ld + "
				"--output-len %ld) but --cache-len is %ld\n",
			o->input_len + o->output_len, o->input_len, o->output_len, o->cache_len);
		return CTQ_EXIT_USAGE;
	}
	if (o->max_tokens < o->max_batch) {
		fprintf(stderr, "ctq bench serve: --max-tokens %ld cannot hold one decode token for "
				"each of --max-batch %ld sequences\n", o->max_tokens, o->max_batch);
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_out_ok("bench serve", o->out, o->force))
		return CTQ_EXIT_USAGE;
	return 0;
}

static const char *const header[] = {
	"request", "input_tokens", "output_tokens", "arrival_s", "queue_ms", "ttft_ms",
	"latency_ms", "tpot_ms", "status", "tokens",
};

int ctq_cmd_bench_serve(int argc, char **argv)
{
	struct serve_opts o;
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? CTQ_EXIT_OK : rc;
	const long n_req = o.requests, in_flight = o.concurrency < o.max_batch ? o.concurrency : o.max_batch;
	struct ctq_error err = {0};
	const int tp = (int)o.tp;
	struct ctq_backend bk[8];
	struct ctq_runner rk[8];
	struct ctq_tp_group *group = NULL;
	struct ctq_backend *const b0 = &bk[0];
	struct ctq_runner *const r0 = &rk[0];
	struct ctq_run run;
	struct ctq_csv csv;
	memset(bk, 0, sizeof bk);
	memset(rk, 0, sizeof rk);
	memset(&run, 0, sizeof run);
	memset(&csv, 0, sizeof csv);
	struct req *q = calloc((size_t)n_req, sizeof *q);
	int32_t *pool = malloc((size_t)(n_req * o.input_len) * 4);
	int32_t *outs = malloc((size_t)(n_req * o.output_len) * 4);
	int32_t *ids = malloc((size_t)o.max_tokens * 4), *slot = malloc((size_t)o.max_tokens * 4);
	int32_t *pos = malloc((size_t)o.max_tokens * 4);
	int64_t *rows = malloc((size_t)o.max_batch * 8);
	long *row_req = malloc((size_t)o.max_batch * sizeof *row_req);
	int32_t *slot_req = malloc((size_t)o.max_batch * 4);
	double *tmp = malloc((size_t)n_req * sizeof *tmp);
	float *logits = NULL;
	rc = CTQ_EXIT_USAGE;
	if (!q || !pool || !outs || !ids || !slot || !pos || !rows || !row_req || !slot_req || !tmp) {
		ctq_error_set(&err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
		goto fail;
	}
	/* With --tp on CUDA, rank k runs on GPU k and the ranks share one NCCL
	 * clique; on the reference backend the ranks are threads of this process. */
	const bool cuda = !strcmp(o.backend, "cuda");
	for (int k = 0; k < tp; k++)
		if (tp > 1 && cuda ? ctq_backend_cuda(&bk[k], k, &err) : ctq_backend_open(&bk[k], o.backend, &err))
			goto fail;
	if (tp > 1 && (cuda ? ctq_backend_cuda_tp_init(bk, tp, &err)
			    : !(group = ctq_tp_group_new(tp)) &&
				      ctq_error_set(&err, CTQ_ERR_NOMEM, "--tp", "out of memory")))
		goto fail;
	double t_load = ctq_now_s();
	for (int k = 0; k < tp; k++) {
		struct ctq_runner_options opt = {.max_slots = o.max_batch, .max_len = o.cache_len,
						 .max_tokens = o.max_tokens, .tp = tp, .rank = k,
						 .group = group};
		if (ctq_runner_load(&rk[k], &bk[k], o.model, &opt, &err))
			goto fail;
	}
	t_load = ctq_now_s() - t_load;
	const int64_t V = r0->cfg.vocab;
	logits = malloc((size_t)(o.max_batch * V) * 4);
	if (!logits) {
		ctq_error_set(&err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
		goto fail;
	}

	/* Prompts and arrival times, from the seed alone. */
	struct ctq_rng rng;
	ctq_rng_seed(&rng, (uint64_t)o.seed);
	double t_arr = 0;
	for (long i = 0; i < n_req; i++) {
		q[i].prompt = pool + i * o.input_len;
		q[i].out = outs + i * o.output_len;
		for (long t = 0; t < o.input_len; t++)
			q[i].prompt[t] = (int32_t)ctq_rng_below(&rng, (uint64_t)V);
		if (o.rate > 0) {
			t_arr += -log(1.0 - ctq_rng_uniform(&rng)) / o.rate;
			q[i].arrival = t_arr;
		}
		q[i].slot = -1;
	}
	for (long s = 0; s < o.max_batch; s++)
		slot_req[s] = -1;
	char desc[256];
	b0->ops->describe(b0, desc, sizeof desc);
	if (tp > 1) {
		size_t dl = strlen(desc);
		snprintf(desc + dl, sizeof desc - dl, " x %d ranks (tp %d, %s)", tp, tp,
			 cuda ? "NCCL" : "in-process");
	}
	printf("ctq bench serve: %s on %s; %ld requests of %ld + %ld tokens, concurrency %ld, %ld slots "
	       "of %ld positions, %ld tokens per call, arrival %s",
	       o.model, desc, n_req, o.input_len, o.output_len, o.concurrency, o.max_batch, o.cache_len,
	       o.max_tokens, o.rate > 0 ? "poisson" : "closed");
	if (o.rate > 0)
		printf(" at %g requests/s", o.rate);
	printf("; load %.2f s\n", t_load);
	fflush(stdout);

	/* The scheduler. Closed loop: request i arrives when a client is free,
	 * i.e. at the start for the first C and when an earlier one finishes;
	 * arrived (assigned) requests wait for a slot. Poisson: requests arrive
	 * on their schedule and at most C are served at once. */
	long next = 0, active = 0, finished = 0, failed = 0, calls = 0;
	long assigned = o.rate > 0 ? n_req : (o.concurrency < n_req ? o.concurrency : n_req);
	const long serve_cap = o.rate > 0 ? in_flight : o.max_batch;
	int64_t fed_total = 0, decode_tokens = 0;
	const double t0 = ctq_now_s();
	while (finished + failed < n_req) {
		double now = ctq_now_s() - t0;
		/* Admit arrived requests while a client and a slot are free. */
		while (next < assigned && active < serve_cap && q[next].arrival <= now) {
			struct req *x = &q[next];
			int32_t s = 0;
			while (slot_req[s] >= 0)
				s++;
			slot_req[s] = (int32_t)next;
			x->slot = s;
			x->state = REQ_PREFILL;
			x->admitted = now;
			active++;
			next++;
		}
		if (!active) {
			/* Only a Poisson schedule can leave nothing to run. */
			if (o.rate <= 0 || next >= n_req) {
				ctq_error_set(&err, CTQ_ERR_ENV, "bench serve", "scheduler stalled with no request in flight");
				ctq_print_error("bench serve", &err);
				break;
			}
			sleep_s(q[next].arrival - (ctq_now_s() - t0));
			continue;
		}
		/* One forward call: decode tokens first, then prompt chunks. */
		int64_t T = 0, n_rows = 0;
		for (long s = 0; s < o.max_batch; s++) {
			long i = slot_req[s];
			if (i < 0 || q[i].state != REQ_DECODE)
				continue;
			ids[T] = q[i].next;
			slot[T] = (int32_t)s;
			pos[T] = (int32_t)(o.input_len + q[i].generated - 1);
			rows[n_rows] = T;
			row_req[n_rows++] = i;
			T++;
		}
		decode_tokens += T;
		/* Prompts in admission order (oldest first). */
		for (long i = 0; i < next && T < o.max_tokens; i++) {
			struct req *x = &q[i];
			if (x->state != REQ_PREFILL)
				continue;
			int64_t m = o.input_len - x->fed;
			if (m > o.max_tokens - T)
				m = o.max_tokens - T;
			for (int64_t j = 0; j < m; j++) {
				ids[T] = x->prompt[x->fed + j];
				slot[T] = x->slot;
				pos[T] = (int32_t)(x->fed + j);
				T++;
			}
			x->fed += m;
			if (x->fed == o.input_len) {
				rows[n_rows] = T - 1;
				row_req[n_rows++] = i;
			}
		}
		if (tp > 1 ? ctq_runner_tp_forward(rk, tp, ids, slot, pos, T, rows, n_rows, logits, &err)
			   : ctq_runner_forward(r0, ids, slot, pos, T, rows, n_rows, logits, &err)) {
			/* Every request in flight fails with the call; the run stops. */
			for (long s = 0; s < o.max_batch; s++)
				if (slot_req[s] >= 0) {
					q[slot_req[s]].state = REQ_FAILED;
					failed++;
				}
			ctq_print_error("bench serve", &err);
			break;
		}
		calls++;
		fed_total += T;
		now = ctq_now_s() - t0;
		for (int64_t k = 0; k < n_rows; k++) {
			struct req *x = &q[row_req[k]];
			x->next = ctq_argmax(logits + k * V, V);
			x->out[x->generated] = x->next;
			if (x->state == REQ_PREFILL) {
				x->state = REQ_DECODE;
				x->first = now;
			}
			x->generated++;
			if (x->generated == o.output_len) {
				x->state = REQ_DONE;
				x->finish = now;
				slot_req[x->slot] = -1;
				active--;
				finished++;
				if (assigned < n_req)
					q[assigned++].arrival = now; /* the client sends its next */
			}
		}
	}
	const double wall = ctq_now_s() - t0;

	/* Results. */
	char path[1200];
	if (ctq_run_begin(&run, o.out, o.force, "bench-serve", argc, argv, &err) ||
	    ctq_csv_open(&csv, ctq_run_path(&run, "bench_serve.csv", path, sizeof path), header,
			 sizeof header / sizeof *header, &err))
		goto fail;
	for (long i = 0; i < n_req; i++) {
		const struct req *x = &q[i];
		bool ok = x->state == REQ_DONE;
		ctq_csv_fieldf(&csv, "%ld", i);
		ctq_csv_fieldf(&csv, "%ld", o.input_len);
		ctq_csv_fieldf(&csv, "%lld", (long long)x->generated);
		ctq_csv_fieldf(&csv, "%.6f", x->arrival);
		if (ok) {
			ctq_csv_fieldf(&csv, "%.6f", (x->admitted - x->arrival) * 1e3);
			ctq_csv_fieldf(&csv, "%.6f", (x->first - x->arrival) * 1e3);
			ctq_csv_fieldf(&csv, "%.6f", (x->finish - x->arrival) * 1e3);
			if (o.output_len > 1)
				ctq_csv_fieldf(&csv, "%.6f", (x->finish - x->first) * 1e3 / (double)(o.output_len - 1));
			else
				ctq_csv_field(&csv, "");
		} else {
			for (int k = 0; k < 4; k++)
				ctq_csv_field(&csv, "");
		}
		ctq_csv_field(&csv, ok ? "ok" : x->state == REQ_FAILED ? "error" : "not run");
		/* The greedy tokens, space-separated: scheduling must not change them. */
		char tok[24 * 64];
		size_t len = 0;
		tok[0] = '\0';
		for (int64_t t = 0; t < x->generated && len + 24 < sizeof tok; t++)
			len += (size_t)snprintf(tok + len, sizeof tok - len, t ? " %d" : "%d", x->out[t]);
		ctq_csv_field(&csv, tok);
		ctq_csv_end_row(&csv);
	}
	if (ctq_csv_close(&csv, &err))
		goto fail;
	const long errors = n_req - finished;
	struct {
		const char *name;
		double p50, p90, p99, mean;
	} dist[4] = {{"ttft_ms", 0, 0, 0, 0}, {"latency_ms", 0, 0, 0, 0}, {"tpot_ms", 0, 0, 0, 0}, {"queue_ms", 0, 0, 0, 0}};
	for (int d = 0; d < 4; d++) {
		size_t n = 0;
		double sum = 0;
		for (long i = 0; i < n_req; i++) {
			const struct req *x = &q[i];
			if (x->state != REQ_DONE || (d == 2 && o.output_len < 2))
				continue;
			double v = d == 0 ? x->first - x->arrival
				   : d == 1 ? x->finish - x->arrival
				   : d == 2 ? (x->finish - x->first) / (double)(o.output_len - 1)
					    : x->admitted - x->arrival;
			tmp[n++] = v * 1e3;
			sum += v * 1e3;
		}
		qsort(tmp, n, sizeof *tmp, cmp_double);
		dist[d].p50 = pct(tmp, n, 0.50);
		dist[d].p90 = pct(tmp, n, 0.90);
		dist[d].p99 = pct(tmp, n, 0.99);
		dist[d].mean = n ? sum / (double)n : NAN;
	}
	const double out_tokens = (double)finished * (double)o.output_len;
	printf("  %ld requests in %.3f s: %.2f requests/s, %.1f output tokens/s, %.1f tokens/s through "
	       "the model; %ld forward calls (%.1f tokens each)\n",
	       finished, wall, (double)finished / wall, out_tokens / wall, (double)fed_total / wall, calls,
	       calls ? (double)fed_total / (double)calls : 0.0);
	printf("  %-12s %10s %10s %10s %10s\n", "ms", "mean", "p50", "p90", "p99");
	for (int d = 0; d < 4; d++)
		printf("  %-12s %10.3f %10.3f %10.3f %10.3f\n", dist[d].name, dist[d].mean, dist[d].p50,
		       dist[d].p90, dist[d].p99);
	printf("  errors: %ld\n", errors);
	cJSON *m = cJSON_AddObjectToObject(run.manifest, "bench_serve");
	cJSON_AddStringToObject(m, "model", o.model);
	cJSON_AddStringToObject(m, "device", desc);
	cJSON_AddNumberToObject(m, "requests", (double)n_req);
	cJSON_AddNumberToObject(m, "completed", (double)finished);
	cJSON_AddNumberToObject(m, "errors", (double)errors);
	cJSON_AddNumberToObject(m, "concurrency", (double)o.concurrency);
	cJSON_AddNumberToObject(m, "max_batch", (double)o.max_batch);
	cJSON_AddNumberToObject(m, "cache_len", (double)o.cache_len);
	cJSON_AddNumberToObject(m, "max_tokens", (double)o.max_tokens);
	cJSON_AddNumberToObject(m, "input_tokens", (double)o.input_len);
	cJSON_AddNumberToObject(m, "output_tokens", (double)o.output_len);
	cJSON_AddStringToObject(m, "arrival", o.rate > 0 ? "poisson" : "closed");
	if (o.rate > 0)
		cJSON_AddNumberToObject(m, "rate_per_s", o.rate);
	cJSON_AddNumberToObject(m, "seed", (double)o.seed);
	cJSON_AddNumberToObject(m, "load_s", t_load);
	cJSON_AddNumberToObject(m, "total_s", wall);
	cJSON_AddNumberToObject(m, "requests_per_s", (double)finished / wall);
	cJSON_AddNumberToObject(m, "output_tokens_per_s", out_tokens / wall);
	cJSON_AddNumberToObject(m, "tokens_per_s", (double)fed_total / wall);
	cJSON_AddNumberToObject(m, "forward_calls", (double)calls);
	cJSON_AddNumberToObject(m, "decode_tokens", (double)decode_tokens);
	cJSON_AddNumberToObject(m, "graph_replays", (double)r0->graph_replays);
	cJSON_AddNumberToObject(m, "tp", tp);
	for (int d = 0; d < 4; d++) {
		cJSON *j = cJSON_AddObjectToObject(m, dist[d].name);
		cJSON_AddNumberToObject(j, "mean", isnan(dist[d].mean) ? -1 : dist[d].mean);
		cJSON_AddNumberToObject(j, "p50", isnan(dist[d].p50) ? -1 : dist[d].p50);
		cJSON_AddNumberToObject(j, "p90", isnan(dist[d].p90) ? -1 : dist[d].p90);
		cJSON_AddNumberToObject(j, "p99", isnan(dist[d].p99) ? -1 : dist[d].p99);
	}
	char final_dir[sizeof run.final_dir];
	snprintf(final_dir, sizeof final_dir, "%s", run.final_dir);
	if (ctq_run_commit(&run, &err))
		goto fail;
	printf("bench serve: results in %s/ (bench_serve.csv)\n", final_dir);
	rc = errors ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
	goto done;
fail:
	ctq_print_error("bench serve", &err);
	rc = ctq_status_exit_code(err.status);
	ctq_csv_close(&csv, NULL);
	ctq_run_abort(&run);
done:
	free(q), free(pool), free(outs), free(ids), free(slot), free(pos), free(rows), free(row_req);
	free(slot_req), free(tmp), free(logits);
	for (int k = 0; k < tp; k++) {
		ctq_runner_free(&rk[k]);
		ctq_backend_close(&bk[k]);
	}
	ctq_tp_group_free(group);
	return rc;
}
