/* ctq bench serve --url: the serving workload of ctq bench serve sent to
 * any OpenAI-compatible server (ctq serve, vLLM, llama.cpp's llama-server)
 * as streamed completions, measured on the client as vLLM's bench serve
 * measures (bench/serve_http.h), into the same bench_serve.csv family so
 * that compare and report work across engines. This file parses the
 * options, draws the progress line and prints. */
#include "harness/commands.h"
#include "bench/serve_http.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_REQUEST_TIMEOUT_S 300.0

static void help(void)
{
	printf("usage: ctq bench serve --url http://HOST:PORT/v1 --tokenizer PATH [options]\n"
	       "\n"
	       "Sends the workload of ctq bench serve (seeded random prompts of exactly\n"
	       "--input-len token ids, --output-len new tokens, closed-loop or Poisson\n"
	       "arrivals) to an OpenAI-compatible server as streamed completions\n"
	       "(POST URL/completions: stream, stream_options.include_usage, max_tokens =\n"
	       "output length, temperature 0; ignore_eos and token-id prompts as the\n"
	       "server profile says) from one client thread, and\n"
	       "reports TTFT, TPOT, ITL and end-to-end latency percentiles, request and token\n"
	       "throughput, and errors (which must be 0).\n"
	       "\n"
	       "options:\n"
	       "  --url URL            the server's base URL, e.g. http://127.0.0.1:8000/v1\n"
	       "  --model NAME         the served model name (default: the first of\n"
	       "                       GET URL/models)\n"
	       "  --tokenizer PATH     the model folder or its tokenizer.json: the vocabulary\n"
	       "                       the prompt ids are drawn from, the text of\n"
	       "                       --prompt-format text, and the output tokens counted when\n"
	       "                       the server sends no usage\n"
	       "  --server-profile P   what the server takes: vllm (token-id prompts and\n"
	       "                       vLLM's ignore_eos: vLLM, SGLang, llama.cpp's\n"
	       "                       llama-server, ctq serve), openai (the plain OpenAI API:\n"
	       "                       text prompts, no ignore_eos, so a request may stop\n"
	       "                       early: llama-cpp-python's server, transformers serve)\n"
	       "                       or auto (default: one probe request of max_tokens 1\n"
	       "                       first, token ids + ignore_eos, then token ids alone,\n"
	       "                       then text alone; the first answered 2xx settles it,\n"
	       "                       and one line says what the server refused; a server\n"
	       "                       that refuses token ids gets no ignore_eos, as\n"
	       "                       llama-cpp-python's takes it and ignores it)\n"
	       "  --prompt-format F    ids (the prompt as a token-id array, exactly\n"
	       "                       --input-len tokens) or text (the ids decoded; the server\n"
	       "                       re-encodes it, so its length may differ); default: the\n"
	       "                       profile's (ids for vllm, text for openai); given, it\n"
	       "                       wins over the profile's (auto then probes with it)\n"
	       "  --requests N         requests to send (default 64)\n"
	       "  --concurrency C      requests in flight at most (default 8)\n"
	       "  --input-len N        prompt tokens per request (default 128)\n"
	       "  --output-len N       new tokens per request (default 32): max_tokens, and\n"
	       "                       with ignore_eos exactly that many\n"
	       "  --arrival A          closed (default: C clients back to back) or\n"
	       "                       poisson:RATE (requests per second, seeded)\n"
	       "  --seed S             prompt and arrival seed (default 1)\n"
	       "  --request-timeout S  seconds one request may take, connection to [DONE]\n"
	       "                       (default %.0f); past it the request fails\n"
	       "  --timeout S          seconds the whole run may take (default: request\n"
	       "                       timeout x ceil(N / C) + N / RATE + 10); requests not\n"
	       "                       sent by then are \"not run\"\n"
	       "  --progress           progress on stderr even when it is not a terminal\n"
	       "  --out DIR            run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force              replace DIR when it is an existing ctq run directory\n",
	       DEFAULT_REQUEST_TIMEOUT_S);
	printf("\n"
	       "Measured as vLLM's bench serve: TTFT from sending to the first streamed event\n"
	       "with a choice; ITL every gap between such events (pooled); latency (E2EL) from\n"
	       "sending to the last; TPOT = (E2EL - TTFT) / (output tokens - 1); output tokens\n"
	       "from usage.completion_tokens, else the text re-encoded; queue_ms the wait for a\n"
	       "free client (Poisson). Throughput over first send to last completion.\n"
	       "A request is served only when the server says it finished: a finish_reason,\n"
	       "or usage with the asked number of tokens (data: [DONE] is optional after a\n"
	       "finish_reason, and is no end without one). A request fails (status error,\n"
	       "with the reason in the error column) on an HTTP error, an error event, a\n"
	       "refused connection, a stream cut short (no finish_reason, with or without\n"
	       "[DONE]) or dropped, its time limit, or fewer tokens than asked when usage\n"
	       "says so and ignore_eos was sent. Without ignore_eos (profile openai) a\n"
	       "request with a finish_reason (length or stop) is served even with fewer\n"
	       "tokens; those are counted as stopped early, and the summary and the manifest\n"
	       "(server_profile, probe, ignore_eos, output_lengths, stopped_early,\n"
	       "output_tokens_from) say that output lengths may vary.\n"
	       "The prompts equal the in-process bench serve's for the same seed when the\n"
	       "model's vocabulary size equals the tokenizer's.\n"
	       "Writes bench_serve.csv (one row per request; the tokens column is empty) and\n"
	       "the summary in manifest.json (engine \"http\", url).\n"
	       "exit: 0 every request served; 1 a request failed; 2 bad usage or input, or\n"
	       "the server named no model; 3 the server refused (every request answered\n"
	       "HTTP >= 400 or not at all: a refused connection, no answer; GET URL/models\n"
	       "refused; or the auto probe refused in every form or unanswered), with a\n"
	       "one-line reason, or libcurl could not start.\n");
}

struct url_opts {
	struct ctq_bench_http_options h;
	struct ctq_opt_out out;
	bool progress;
};

/* --prompt-format ids | text (dst: enum ctq_prompt_format *). */
static bool opt_prompt_format(const char *cmd, const char *name, const char *v, void *dst)
{
	if (strcmp(v, "ids") && strcmp(v, "text")) {
		fprintf(stderr, "ctq %s: %s is \"%s\"; expected ids or text\n", cmd, name, v);
		return false;
	}
	*(enum ctq_prompt_format *)dst = !strcmp(v, "text") ? CTQ_PROMPT_TEXT : CTQ_PROMPT_IDS;
	return true;
}

/* --server-profile auto | vllm | openai (dst: enum ctq_server_profile *). */
static bool opt_profile(const char *cmd, const char *name, const char *v, void *dst)
{
	int p = ctq_server_profile_parse(v);
	if (p < 0) {
		fprintf(stderr, "ctq %s: %s is \"%s\"; expected auto, vllm or openai\n", cmd, name, v);
		return false;
	}
	*(enum ctq_server_profile *)dst = (enum ctq_server_profile)p;
	return true;
}

/* As ctq_opt_parse: -1 when the command may run, else its exit code. */
static int parse(int argc, char **argv, struct url_opts *o)
{
	*o = (struct url_opts){.h = {.requests = 64, .concurrency = 8, .input_len = 128, .output_len = 32,
				     .seed = 1, .request_timeout_s = DEFAULT_REQUEST_TIMEOUT_S}};
	struct ctq_bench_http_options *h = &o->h;
	/* The in-process engine's options (--backend, --max-batch, ...) are
	 * unknown here: they do not apply to a server. */
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--url", &h->url),
		CTQ_OPT_STR("--model", &h->model),
		CTQ_OPT_STR("--tokenizer", &h->tokenizer),
		CTQ_OPT_OUT(&o->out),
		CTQ_OPT_FLAG("--progress", &o->progress),
		CTQ_OPT_INT("--requests", &h->requests, 1, 1L << 20),
		CTQ_OPT_INT("--concurrency", &h->concurrency, 1, 4096),
		CTQ_OPT_INT("--input-len", &h->input_len, 1, 1L << 20),
		CTQ_OPT_INT("--output-len", &h->output_len, 1, 1L << 20),
		CTQ_OPT_INT("--seed", &h->seed, 0, 0x7fffffffL),
		CTQ_OPT_FN("--request-timeout", &h->request_timeout_s, ctq_opt_fn_seconds),
		CTQ_OPT_FN("--timeout", &h->total_timeout_s, ctq_opt_fn_seconds),
		CTQ_OPT_FN("--prompt-format", &h->prompt_format, opt_prompt_format),
		CTQ_OPT_FN("--server-profile", &h->profile, opt_profile),
		CTQ_OPT_FN("--arrival", &h->rate, ctq_opt_fn_arrival),
		CTQ_OPT_END,
	};
	int rc = ctq_opt_parse("bench serve", argc, argv, opts, NULL, 0, help);
	if (rc >= 0)
		return rc;
	if (!o->h.url || strncmp(o->h.url, "http", 4)) {
		fprintf(stderr, "ctq bench serve: --url needs an http:// or https:// URL (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!o->h.tokenizer) {
		fprintf(stderr, "ctq bench serve: --url needs --tokenizer PATH (the model folder or its "
				"tokenizer.json; see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_out_ok("bench serve", &o->out))
		return CTQ_EXIT_USAGE;
	return -1;
}

static void progress(void *ctx, long done, long failed, long total)
{
	if (!*(bool *)ctx)
		return;
	fprintf(stderr, "\rbench serve: %ld/%ld requests ended, %ld failed   %s", done, total, failed,
		done == total ? "\n" : "");
	fflush(stderr);
}

static void fill(const void *s, struct ctq_csv *csv, struct cJSON *manifest)
{
	ctq_bench_http_rows(s, csv);
	ctq_bench_http_manifest(s, manifest);
}

static void print_summary(const void *p)
{
	const struct ctq_bench_http *s = p;
	const double wall = s->wall_s;
	printf("  %ld requests served in %.3f s: %.2f requests/s, %.1f output tokens/s, %.1f tokens/s "
	       "(input + output)\n",
	       s->completed, wall, wall > 0 ? (double)s->completed / wall : 0,
	       wall > 0 ? (double)s->output_tokens / wall : 0,
	       wall > 0 ? ((double)s->completed * (double)s->o.input_len + (double)s->output_tokens) / wall
			: 0);
	printf("  %-12s %10s %10s %10s %10s %10s\n", "ms", "mean", "std", "p50", "p90", "p99");
	for (int d = 0; d < CTQ_HSERVE_N_DIST; d++)
		printf("  %-12s %10.3f %10.3f %10.3f %10.3f %10.3f\n", s->dist[d].name, s->dist[d].mean,
		       s->dist[d].std, s->dist[d].p50, s->dist[d].p90, s->dist[d].p99);
	char from[160];
	ctq_bench_http_tokens_from(s, from, sizeof from);
	if (s->ignore_eos)
		printf("  profile %s (%s prompts, ignore_eos): output tokens from %s\n",
		       ctq_server_profile_name(s->profile), s->prompt_text ? "text" : "token-id", from);
	else
		printf("  profile %s (%s prompts, no ignore_eos): output lengths may vary; %ld of %ld served "
		       "requests stopped early (fewer tokens than the %ld asked, or finish_reason stop); "
		       "output tokens from %s\n",
		       ctq_server_profile_name(s->profile), s->prompt_text ? "text" : "token-id", s->stopped_early,
		       s->completed, s->o.output_len, from);
	printf("  errors: %ld (%ld failed, %ld not run)\n", s->o.requests - s->completed, s->failed,
	       s->not_run);
	for (long i = 0, shown = 0; i < s->o.requests && shown < 3; i++)
		if (s->q[i].state == CTQ_HREQ_FAILED) {
			printf("  request %ld: %s\n", i, s->q[i].reason);
			shown++;
		}
}

int ctq_cmd_bench_serve_url(int argc, char **argv)
{
	struct url_opts o;
	int rc = parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct ctq_error err = {0};
	struct ctq_bench_http s;
	bool show = o.progress || isatty(2);
	if (ctq_bench_http_open(&s, &o.h, &err))
		goto fail;
	s.progress = progress;
	s.progress_ctx = &show;
	if (s.learned[0])
		printf("ctq bench serve: %s\n", s.learned);
	printf("ctq bench serve: %s at %s; %ld requests of %ld + %ld tokens (%s prompts), concurrency "
	       "%ld, arrival %s",
	       s.model, s.endpoint, o.h.requests, o.h.input_len, o.h.output_len,
	       s.prompt_text ? "text" : "token-id", o.h.concurrency, o.h.rate > 0 ? "poisson" : "closed");
	if (o.h.rate > 0)
		printf(" at %g requests/s", o.h.rate);
	printf("; limits %.0f s per request, %.0f s in all\n", o.h.request_timeout_s, s.total_limit_s);
	fflush(stdout);
	if (ctq_bench_http_run(&s, &err) ||
	    ctq_bench_serve_results(&(struct ctq_serve_results){&s, fill, print_summary}, &o.out, argc,
				    argv, &err))
		goto fail;
	rc = s.completed == o.h.requests ? CTQ_EXIT_OK : CTQ_EXIT_FAIL;
	if (s.refused && s.refused == o.h.requests - s.not_run) {
		/* Nothing was served: the server (or the network) refused, which is
		 * no measurement of it. */
		const struct ctq_bench_http_req *x = s.q;
		while (!x->refused)
			x++;
		fprintf(stderr, "ctq bench serve: %s refused every request (%ld of %ld): %s\n", s.endpoint,
			s.refused, o.h.requests - s.not_run, x->reason);
		rc = CTQ_EXIT_ENV;
	}
	goto done;
fail:
	rc = ctq_print_error_exit("bench serve", &err);
done:
	ctq_bench_http_free(&s);
	return rc;
}
