/* ctq bench serve --url, the engine: the seeded serving workload of
 * bench/serve.h (same prompts for the same seed and vocabulary, same
 * closed-loop or Poisson arrivals) sent to any OpenAI-compatible server as
 * streamed completions (net/openai.h over net/http.h, one thread), and its
 * measurement as vLLM's bench serve defines it, on the client's
 * CLOCK_MONOTONIC:
 *   sent    just before the request goes out; queue = sent - arrival (the
 *           wait for a free client under Poisson arrivals; 0 closed loop)
 *   TTFT    sent -> the first event with a choices entry
 *   ITL     every gap between two such events, pooled over requests
 *   E2EL    sent -> the last such event (latency_ms)
 *   TPOT    (E2EL - TTFT) / (output tokens - 1), requests with > 1 token
 *   output tokens: usage.completion_tokens when the server sends usage,
 *           else the generated text re-encoded with the tokenizer
 *   throughput: completed requests, output tokens, input + output tokens
 *           over the duration, first send to last completion.
 * A request is served ("ok") only when the server says it finished: a
 * choice with a finish_reason came, or usage said exactly output_len
 * completion tokens; then at least one token event must have come and,
 * when the server reported usage, exactly output_len tokens were generated
 * (ignore_eos). Under the plain OpenAI API (profile openai, no ignore_eos)
 * a request is served on its finish_reason whatever the count: one that
 * ended with finish_reason "stop" or fewer tokens than asked "stopped
 * early" (counted; output lengths then vary). data: [DONE] is not needed when the stream closes cleanly
 * (transformers serve never sends it), and is no proof of an end: a stream
 * that stops without a finish_reason is cut short, with or without [DONE]
 * (llama-cpp-python's server ends a running stream with [DONE] alone when
 * another request waits). An HTTP error, an error event, a refused
 * connection, a stream cut short or dropped, or its time limit is a failed
 * request ("error", with the reason); a failed request that never got a
 * 2xx answer (HTTP >= 400, no connection, no answer) is also "refused"
 * (the run's refused count: every request refused is the server's or the
 * network's failure, not a measurement); requests the overall limit leaves
 * unsent are "not run". Not the option parsing or printing
 * (harness/cmd_bench_serve_url.c), not the CSV header
 * (families/bench_serve.h). */
#ifndef CTQ_BENCH_SERVE_HTTP_H
#define CTQ_BENCH_SERVE_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bench/serve.h"
#include "core/strbuf.h"
#include "net/http.h"
#include "net/sse.h"
#include "results/csv_out.h"
#include "text/tokenizer.h"

/* What the requests assume of the server. vllm: token-id prompts and
 * vLLM's ignore_eos, every request exactly output_len tokens (vLLM, SGLang,
 * llama.cpp's llama-server, ctq serve). openai: the plain OpenAI API, text
 * prompts (the ids decoded) and no ignore_eos, so a request may stop early
 * (llama-cpp-python's server refuses token ids and ignores ignore_eos;
 * transformers serve refuses both). auto: one probe request first
 * (ctq_bench_http_probe) settles on one of them. */
enum ctq_server_profile { CTQ_PROFILE_AUTO, CTQ_PROFILE_VLLM, CTQ_PROFILE_OPENAI };

/* "auto", "vllm", "openai"; and back (-1 when unknown). */
const char *ctq_server_profile_name(enum ctq_server_profile p);
int ctq_server_profile_parse(const char *s);

/* The prompt format asked: the profile's (ids for vllm, text for openai),
 * or one given explicitly, which wins. */
enum ctq_prompt_format { CTQ_PROMPT_DEFAULT, CTQ_PROMPT_IDS, CTQ_PROMPT_TEXT };

struct ctq_bench_http_options {
	const char *url;       /* borrowed: the server's base URL, http://HOST:PORT/v1 */
	const char *model;     /* borrowed: the served name; NULL: GET /v1/models' first */
	const char *tokenizer; /* borrowed: tokenizer.json or a folder holding one */
	long requests, concurrency, input_len, output_len, seed;
	double rate;              /* requests per second, Poisson; 0: closed loop */
	enum ctq_server_profile profile;
	enum ctq_prompt_format prompt_format;
	double request_timeout_s; /* each request, connection to [DONE] */
	double total_timeout_s;   /* the whole run; 0: derived (see ctq_bench_http_open) */
};

enum ctq_hreq_state { CTQ_HREQ_NOT_RUN, CTQ_HREQ_RUNNING, CTQ_HREQ_OK, CTQ_HREQ_FAILED };

/* One request; times in seconds from the start of the run, NAN unset. */
struct ctq_bench_http_req {
	double arrival, sent, first, last;
	enum ctq_hreq_state state;
	long chunks;          /* token-bearing events */
	long usage_tokens;    /* usage.completion_tokens, -1 none */
	int64_t output_tokens;
	bool got_done;        /* data: [DONE] came */
	bool finished;        /* a choice with a finish_reason came */
	bool refused;         /* failed without a 2xx answer (see above) */
	bool stopped;         /* a choice with finish_reason "stop" came */
	bool early;           /* served with fewer tokens than asked (profile openai) */
	double *itl;          /* (n_itl) gaps, seconds */
	size_t n_itl, cap_itl;
	char reason[512];
	struct ctq_http_req http;
	struct ctq_sse sse;
	struct ctq_strbuf body, text;
	struct ctq_bench_http *owner;
};

enum { CTQ_HSERVE_TTFT, CTQ_HSERVE_LATENCY, CTQ_HSERVE_TPOT, CTQ_HSERVE_ITL, CTQ_HSERVE_QUEUE,
       CTQ_HSERVE_N_DIST };

/* Called from the run loop at most every 200 ms and once at the end. */
typedef void (*ctq_bench_http_progress_fn)(void *ctx, long done, long failed, long total);

struct ctq_bench_http {
	struct ctq_bench_http_options o;
	char model[256], endpoint[2048], tok_path[1024];
	struct ctq_tokenizer tok;
	int64_t vocab;
	int32_t *prompts;               /* (requests, input_len) */
	char **texts;                   /* (requests) decoded prompts, for text prompts */
	enum ctq_server_profile profile; /* the one settled on (never auto after the probe) */
	bool prompt_text;               /* the prompts go as text */
	bool ignore_eos;                /* ignore_eos is sent */
	char learned[1200];             /* what the probe learned, one line; empty without one */
	long stopped_early;             /* of the completed: fewer tokens than asked */
	long tokens_from_usage;         /* of the completed: output tokens from usage */
	struct ctq_bench_http_req *q;   /* (requests) */
	double t0, wall_s, total_limit_s;
	long completed, failed, not_run;
	long refused;                   /* of the failed: no 2xx answer */
	int64_t output_tokens;          /* of the completed requests */
	struct ctq_bench_serve_dist dist[CTQ_HSERVE_N_DIST];
	ctq_bench_http_progress_fn progress;
	void *progress_ctx;
};

/* Loads the tokenizer, asks the server its model name when o->model is
 * NULL (GET /v1/models; errors io-error naming the URL), draws the
 * workload (ids below the tokenizer's vocabulary size), settles the
 * profile (auto: ctq_bench_http_probe) and renders the request bodies. The overall limit, when o->total_timeout_s is 0, is
 * request_timeout x ceil(requests / concurrency) + requests / rate + 10 s.
 * s is zeroed first; on error it is safe to free. Errors: usage, nomem,
 * the tokenizer's, the probe's. */
enum ctq_status ctq_bench_http_open(struct ctq_bench_http *s, const struct ctq_bench_http_options *o,
				    struct ctq_error *err);

/* The probe of profile auto, one non-streamed request of max_tokens 1 with
 * the first prompt at a time until one is answered 2xx: token ids +
 * ignore_eos (profile vllm); then token ids alone (openai with id prompts:
 * the server refuses ignore_eos); then text alone (openai: it refuses
 * token ids; ignore_eos is not sent to a server that refuses ids, as
 * llama-cpp-python's takes it and ignores it). An explicit prompt format
 * keeps its prompts: text + ignore_eos, then text alone. Sets s->profile,
 * s->prompt_text, s->ignore_eos and s->learned (what was refused, with the
 * server's reason). Errors: env when every form is refused or nothing
 * answers (with the first reason), libcurl's. */
enum ctq_status ctq_bench_http_probe(struct ctq_bench_http *s, struct ctq_error *err);

/* Sends every request on its schedule, at most concurrency in flight,
 * until each has ended or the overall limit stops the rest, then
 * summarizes. Failed requests are results, not errors. Errors: env
 * (libcurl), nomem. */
enum ctq_status ctq_bench_http_run(struct ctq_bench_http *s, struct ctq_error *err);

/* One bench_serve.csv row per request into csv (opened with the family's
 * header); the tokens column is empty (a server answers text, not ids);
 * output_tokens of a failed request counts the token events that came. */
void ctq_bench_http_rows(const struct ctq_bench_http *s, struct ctq_csv *csv);

/* Where the served requests' output token counts came from: "usage",
 * "text re-encoded" or both with their counts. */
void ctq_bench_http_tokens_from(const struct ctq_bench_http *s, char *out, size_t cap);

/* The run's summary into m (the manifest's "bench_serve" object). */
void ctq_bench_http_manifest(const struct ctq_bench_http *s, cJSON *m);

void ctq_bench_http_free(struct ctq_bench_http *s);

#endif
