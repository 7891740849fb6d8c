/* ctq bench serve: serving load on one backend, in process. The batching
 * engine ctq serve runs (model/engine.h) serves N requests (seeded random
 * prompts, a fixed number of new tokens, EOS ignored) with continuous
 * batching over a static KV cache of --max-batch slots: each forward call
 * carries one decode token for every request past its prompt plus chunks
 * of the prompts of admitted ones, oldest first, up to --max-tokens
 * tokens. Arrivals are closed-loop (C clients, each sends its next request
 * when the last one ends) or Poisson at a rate (at most C in flight; the
 * rest wait, and the wait counts in their latency and TTFT). This file
 * parses the options and prints; the workload and its measurement are
 * bench/serve.h. */
#include "harness/commands.h"
#include "bench/serve.h"
#include "results/csv_out.h"
#include "results/run.h"
#include "families/bench_serve.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: ctq bench serve --model DIR [options]\n"
	       "\n"
	       "Serves N requests in process through ctq serve's batching engine (continuous\n"
	       "batching over a static KV cache; what the server runs, minus HTTP) and reports\n"
	       "total time, request rate, output tokens/s, per-request latency and TTFT\n"
	       "percentiles, and errors (which must be 0).\n"
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
	       "  --backend B          cuda or reference (default: cuda when a CUDA device\n"
	       "                       opens, else reference; said on stderr)\n"
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
	       "for cuda.\n"
	       "\n"
	       "ctq bench serve --url URL --tokenizer PATH sends the same workload to an\n"
	       "OpenAI-compatible server instead (ctq bench serve --url x --help).\n");
}

struct serve_opts {
	struct ctq_bench_serve_options so;
	struct ctq_opt_out out;
};

/* As ctq_opt_parse: -1 when the command may run, else its exit code. */
static int parse(int argc, char **argv, struct serve_opts *o)
{
	*o = (struct serve_opts){.so = {.backend = NULL, .requests = 64, .concurrency = 8, .input_len = 128,
					.output_len = 32, .seed = 1, .max_tokens = -1, .tp = 1}};
	struct ctq_bench_serve_options *so = &o->so;
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--model", &so->model),
		CTQ_OPT_STR("--backend", &so->backend),
		CTQ_OPT_OUT(&o->out),
		CTQ_OPT_INT("--requests", &so->requests, 1, 1L << 20),
		CTQ_OPT_INT("--concurrency", &so->concurrency, 1, 4096),
		CTQ_OPT_INT("--max-batch", &so->max_batch, 1, 4096),
		CTQ_OPT_INT("--cache-len", &so->cache_len, 2, 1L << 20),
		CTQ_OPT_INT("--input-len", &so->input_len, 1, 1L << 20),
		CTQ_OPT_INT("--output-len", &so->output_len, 1, 1L << 20),
		CTQ_OPT_INT("--max-tokens", &so->max_tokens, 1, 1L << 20),
		CTQ_OPT_INT("--seed", &so->seed, 0, 0x7fffffffL),
		CTQ_OPT_INT("--tp", &so->tp, 1, 8),
		CTQ_OPT_FN("--arrival", &so->rate, ctq_opt_fn_arrival),
		CTQ_OPT_END,
	};
	int rc = ctq_opt_parse_need("bench serve", argc, argv, opts, NULL, 0, help, &so->model,
				    "--model DIR is required (see --help)");
	if (rc >= 0)
		return rc;
	if (!ctq_opt_model_dir("bench serve", "--model", so->model, &rc))
		return rc;
	if (!so->backend)
		so->backend = ctq_opt_backend_default("bench serve");
	if (!so->max_batch)
		so->max_batch = so->concurrency;
	if (!so->cache_len)
		so->cache_len = so->input_len + so->output_len;
	if (so->max_tokens < 0)
		so->max_tokens = !strcmp(so->backend, "reference") ? 512 : 2048;
	if (so->input_len + so->output_len > so->cache_len) {
		fprintf(stderr, "ctq bench serve: a request needs %ld positions (--input-len %ld + "
				"--output-len %ld) but --cache-len is %ld\n",
			so->input_len + so->output_len, so->input_len, so->output_len, so->cache_len);
		return CTQ_EXIT_USAGE;
	}
	if (so->max_tokens < so->max_batch) {
		fprintf(stderr, "ctq bench serve: --max-tokens %ld cannot hold one decode token for "
				"each of --max-batch %ld sequences\n", so->max_tokens, so->max_batch);
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_out_ok("bench serve", &o->out))
		return CTQ_EXIT_USAGE;
	return -1;
}

static const char *const header[] = {CTQ_BENCH_SERVE_CSV_COLUMNS};

/* bench_serve.csv and the manifest's bench_serve member (dst: struct
 * ctq_serve_results *), then the summary. */
static enum ctq_status write_results(void *dst, struct ctq_run *run, struct ctq_error *err)
{
	const struct ctq_serve_results *r = dst;
	struct ctq_csv csv;
	char path[1200];
	enum ctq_status st = ctq_csv_open(&csv, ctq_run_path(run, "bench_serve.csv", path, sizeof path),
					  header, sizeof header / sizeof *header, err);
	if (st)
		return st;
	r->fill(r->s, &csv, cJSON_AddObjectToObject(run->manifest, "bench_serve"));
	if ((st = ctq_csv_close(&csv, err)))
		return st;
	r->print_summary(r->s);
	return CTQ_OK;
}

enum ctq_status ctq_bench_serve_results(const struct ctq_serve_results *r, const struct ctq_opt_out *out,
					int argc, char **argv, struct ctq_error *err)
{
	struct ctq_run run;
	enum ctq_status st = ctq_harness_run_write(&run, out, "bench-serve", argc, argv, write_results,
						   (void *)r, err);
	if (!st)
		printf("bench serve: results in %s/ (bench_serve.csv)\n", run.final_dir);
	return st;
}

static void fill(const void *s, struct ctq_csv *csv, struct cJSON *manifest)
{
	ctq_bench_serve_rows(s, csv);
	ctq_bench_serve_manifest(s, manifest);
}

static void print_summary(const void *p)
{
	const struct ctq_bench_serve *s = p;
	const struct ctq_bench_serve_stats *x = &s->stats;
	const double wall = x->wall_s, out_tokens = (double)x->finished * (double)s->o.output_len;
	printf("  %ld requests in %.3f s: %.2f requests/s, %.1f output tokens/s, %.1f tokens/s through "
	       "the model; %ld forward calls (%.1f tokens each)\n",
	       x->finished, wall, (double)x->finished / wall, out_tokens / wall,
	       (double)x->fed_tokens / wall, x->calls,
	       x->calls ? (double)x->fed_tokens / (double)x->calls : 0.0);
	printf("  %-12s %10s %10s %10s %10s\n", "ms", "mean", "p50", "p90", "p99");
	for (int d = 0; d < CTQ_SERVE_N_DIST; d++)
		printf("  %-12s %10.3f %10.3f %10.3f %10.3f\n", s->dist[d].name, s->dist[d].mean,
		       s->dist[d].p50, s->dist[d].p90, s->dist[d].p99);
	printf("  errors: %ld\n", s->o.requests - x->finished);
}

int ctq_cmd_bench_serve(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--url"))
			return ctq_cmd_bench_serve_url(argc, argv);
	struct serve_opts o;
	int rc = parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct ctq_error err = {0};
	struct ctq_bench_serve s;
	const struct ctq_bench_serve_options *so = &o.so;
	enum ctq_status st = ctq_bench_serve_open(&s, so, &err);
	if (!st) {
		printf("ctq bench serve: %s on %s; %ld requests of %ld + %ld tokens, concurrency %ld, "
		       "%ld slots of %ld positions, %ld tokens per call, arrival %s",
		       so->model, s.model.device, so->requests, so->input_len, so->output_len, so->concurrency,
		       so->max_batch, so->cache_len, so->max_tokens, so->rate > 0 ? "poisson" : "closed");
		if (so->rate > 0)
			printf(" at %g requests/s", so->rate);
		printf("; load %.2f s\n", s.model.load_s);
		fflush(stdout);
		/* A run that could not start every client still writes what was served. */
		if (ctq_bench_serve_run(&s, &err))
			ctq_print_error("bench serve", &err);
		st = ctq_bench_serve_results(&(struct ctq_serve_results){&s, fill, print_summary},
					     &o.out, argc, argv, &err);
	}
	rc = st ? ctq_print_error_exit("bench serve", &err)
		: s.stats.finished != so->requests ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
	ctq_bench_serve_free(&s);
	return rc;
}
