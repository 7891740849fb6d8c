/* ctq OpenAI-compatible completions API, client side: the request bodies the
 * benchmark and the evaluation send to POST /v1/completions, the parsing of
 * a streamed chunk, of an echo + logprobs answer, of an error answer and of
 * GET /v1/models — the fields vLLM's server defines and ctq serve, vLLM and
 * llama.cpp's llama-server share. What it is not: the transport
 * (net/http.h), the event-stream framing (net/sse.h), or a measurement. */
#ifndef CTQ_NET_OPENAI_H
#define CTQ_NET_OPENAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "net/http.h"

/* BASE/name from a base URL (http://host:port/v1; trailing slashes
 * dropped) and an endpoint name ("completions", "models"); a BASE already
 * ending in "/name" is taken as it is. Truncates at cap. */
void ctq_openai_endpoint(const char *base, const char *name, char *out, size_t cap);

/* The streaming request of the serving benchmark: model, prompt (the token
 * ids, or text when text is non-NULL), max_tokens, temperature 0,
 * ignore_eos (vLLM's extension; left out when ignore_eos is false: the
 * plain OpenAI API), stream with stream_options.include_usage. Appended
 * to out; out->oom on failure. */
void ctq_openai_stream_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n,
			    const char *text, long max_tokens, bool ignore_eos);

/* The probe of what a server takes: the same prompt and ignore_eos choice,
 * max_tokens 1, temperature 0, not streamed. */
void ctq_openai_probe_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n,
			   const char *text, bool ignore_eos);

/* The scoring request of the evaluation (lm-eval's local-completions
 * loglikelihood): model, prompt = ids, max_tokens 0, echo, logprobs 1,
 * temperature 0. With text non-NULL the prompt is that string and
 * max_tokens 1, as lm-eval sends string prompts: some servers read
 * max_tokens 0 as "up to the context's end" (llama-cpp-python); the one
 * generated token comes after the echoed prompt and is not scored. */
void ctq_openai_echo_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n,
			  const char *text);

/* One event of a completions stream. */
struct ctq_openai_chunk {
	bool empty;         /* data empty or blank: a keep-alive, carries nothing */
	bool done;          /* the "[DONE]" sentinel */
	bool has_choice;    /* a choices entry: a token-bearing chunk (vLLM's rule) */
	bool finished;      /* its finish_reason is set */
	bool stopped;       /* ... and it is "stop" (EOS or a stop string, not the length) */
	long usage_completion; /* usage.completion_tokens, -1 when absent */
	long usage_prompt;     /* usage.prompt_tokens, -1 when absent */
	bool is_error;      /* the server sent {"error": ...} in the stream */
	char error[300];
};

/* Parses one event's data; the choice's text (choices[0].text, or a chat
 * chunk's delta.content) is appended to text (may be NULL). Empty or blank
 * data is no error (c->empty). Errors: parse-error (not JSON, or choices /
 * usage of the wrong type). */
enum ctq_status ctq_openai_chunk_parse(const char *data, size_t len, struct ctq_openai_chunk *c,
				       struct ctq_strbuf *text, struct ctq_error *err);

/* The range a log-probability from a server must lie in. Above: a
 * log-probability is <= 0; a server computing log-softmax in float32 may
 * round one of a near-certain token a little above 0 (a few ulps of logits
 * up to ~100: ulp(64) = 7.6e-6), so 1e-4 is allowed and changes no
 * choice. Below: vLLM sends -9999.0 for a log-probability of -inf
 * (serving_completion clamps it), and the log-softmax of a real model's
 * logits (bf16 / fp16, spanning a few hundred at most) is far above that;
 * -1e4 keeps vLLM's clamp and refuses sentinels and garbage (-1e308). */
#define CTQ_OPENAI_LOGPROB_MAX 1e-4
#define CTQ_OPENAI_LOGPROB_MIN -1e4

/* From a non-stream answer with echo + logprobs: *sum = the sum of
 * choices[0].logprobs.token_logprobs[from .. from + n), each a finite
 * number in [CTQ_OPENAI_LOGPROB_MIN, CTQ_OPENAI_LOGPROB_MAX] (a null, a
 * missing entry or a number outside is an error). prompt_n, when > 0, is
 * the number of prompt tokens sent: an answer whose token_logprobs are
 * fewer is an error (the server did not echo the prompt). Errors:
 * parse-error naming what is missing, with path as the file. */
enum ctq_status ctq_openai_echo_logprobs(const char *body, size_t len, size_t prompt_n, size_t from,
					 size_t n, double *sum, const char *path, struct ctq_error *err);

/* The echoed prompt of a string prompt, split at the context's end: the
 * answer's choices[0].logprobs holds the prompt's tokens (then, maybe,
 * generated ones). The context is ctx_chars characters (ctx_bytes bytes)
 * of a prompt of prompt_chars characters (prompt_bytes bytes); the
 * continuation is the echoed tokens from the one whose text_offset is the
 * context's end to the last one before the prompt's end (offsets in
 * characters as vLLM and llama-cpp-python count them, or in bytes). Without
 * text_offset the split is by count: the echoed prompt (token_logprobs less
 * usage.completion_tokens) must be exactly n_ctx + n_cont tokens, ctq's
 * tokenization, and the continuation is the last n_cont. *sum and *n_scored
 * as ctq_openai_echo_logprobs over that range. Errors: parse-error saying
 * why the split cannot be checked (no token starts at the context's end,
 * counts that differ, no usage to tell the generated tokens apart) or that
 * the server does not echo the prompt's log-probabilities. */
struct ctq_openai_text_split {
	size_t ctx_chars, ctx_bytes, prompt_chars, prompt_bytes;
	size_t n_ctx, n_cont; /* ctq's tokens of the context and the continuation */
};
enum ctq_status ctq_openai_echo_text_logprobs(const char *body, size_t len, const struct ctq_openai_text_split *sp,
					      double *sum, size_t *n_scored, const char *path,
					      struct ctq_error *err);

/* Rewrites the reason of a failed answer >= 400 with the server's
 * error.message when its body is OpenAI's error JSON (or FastAPI's
 * {"detail": "..."} as transformers serve answers). */
void ctq_openai_error_reason(struct ctq_http_req *r);

/* GET BASE/models: the first model's id into name (truncated at cap) and
 * its max_model_len (0 when not given). Errors: env (the server refused or
 * gave no answer: a refused connection, an HTTP error, a time-out; with the
 * reason), io-error (no model listed), parse-error. */
enum ctq_status ctq_openai_models(const char *base, long timeout_ms, char *name, size_t cap,
				  long *max_model_len, struct ctq_error *err);

#endif
