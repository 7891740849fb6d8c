/* ctq batching engine: continuous batching of requests that arrive while it
 * runs, over the static KV cache of a model (model/model.h). It is the one
 * engine every command that generates runs: ctq serve (over HTTP), the
 * in-process ctq bench serve (the server's engine minus HTTP) and ctq
 * generate (one request). A worker thread drives the model one forward call
 * at a time: a decode token for every request past its prompt, then chunks
 * of the prompts of admitted requests, oldest admitted first, up to
 * max_tokens tokens a call. A request takes a free slot when it is admitted
 * (the rest queue, first come first served) and gives it back when it
 * finishes or is cancelled.
 *
 * Per request: greedy (ctq_argmax, the tie rule of ctq generate) or
 * temperature / top-k / top-p sampling from a per-request PRNG (seeded:
 * reproducible); max_new tokens, stopping at EOS unless ignore_eos, or at a
 * stop token id; the natural-log softmax over the full vocabulary of the
 * float32 logits (in double) of each generated token with its top
 * alternatives, and, for echo, of every prompt token after the first.
 *
 * Not text (stop strings and detokenization are the caller's: it cancels a
 * request when its text hits a stop string), not HTTP, not the workload or
 * the measurement of a benchmark (bench/serve.h). Thread safety: every function may be called from any thread, except
 * ctq_engine_start / ctq_engine_free. */
#ifndef CTQ_MODEL_ENGINE_H
#define CTQ_MODEL_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "model/model.h"

/* Top alternatives a token's log-probabilities may carry (OpenAI's limit). */
#define CTQ_ENGINE_MAX_TOP 5
/* Stop token ids a request may name. */
#define CTQ_ENGINE_MAX_STOP_IDS 16

struct ctq_engine_options {
	int64_t max_batch;  /* KV-cache slots the runners were loaded with */
	int64_t max_len;    /* positions per slot (runner max_len) */
	int64_t max_tokens; /* tokens per forward call (runner max_tokens) */
	int64_t echo_rows;  /* prompt rows with logits per call for echo requests, >= 1 */
	bool log_calls;     /* keep a record of every forward call (ctq_engine_calls) */
};

struct ctq_engine;
struct ctq_engine_req;

/* Called once when a request ends (any finish), on the worker thread,
 * without the engine's lock, before the worker plans its next call: a
 * client that sends its next request from here has it in that call, as an
 * ideal client with no latency would (ctq bench serve's closed loop). It may
 * call any engine function but ctq_engine_stop and ctq_engine_free, and
 * must not block. Not called for a request released before its end. */
typedef void (*ctq_engine_done_fn)(void *ctx, struct ctq_engine *e, struct ctq_engine_req *req);

struct ctq_engine_params {
	int64_t max_new;     /* new tokens at most, >= 0 (0: prompt log-probabilities only) */
	bool ignore_eos;
	double temperature;  /* 0: greedy */
	double top_p;        /* (0, 1]; 1: off */
	int64_t top_k;       /* <= 0: off */
	bool seeded;
	uint64_t seed;
	int logprobs;        /* -1: none; 0..CTQ_ENGINE_MAX_TOP alternatives a token */
	bool echo_logprobs;  /* log-probabilities of the prompt tokens too */
	int n_stop_ids;
	int32_t stop_ids[CTQ_ENGINE_MAX_STOP_IDS];
	ctq_engine_done_fn on_done; /* NULL: none */
	void *on_done_ctx;
};

/* One token with its log-probabilities (when asked for). */
struct ctq_engine_token {
	int32_t id;
	double logprob;      /* NaN when not asked for, or for the first prompt token */
	int n_top;
	int32_t top_id[CTQ_ENGINE_MAX_TOP];  /* largest first, first index on ties */
	double top_lp[CTQ_ENGINE_MAX_TOP];
};

enum ctq_engine_finish {
	CTQ_ENGINE_RUNNING,
	CTQ_ENGINE_LENGTH,    /* max_new tokens */
	CTQ_ENGINE_STOP,      /* EOS or a stop token id (the token is the last one out) */
	CTQ_ENGINE_CANCELLED, /* ctq_engine_cancel, or the engine stopped */
	CTQ_ENGINE_FAILED     /* a forward call failed (ctq_engine_error says why) */
};

/* What a request has so far (ctq_engine_wait). tokens and prompt stay valid
 * until ctq_engine_release; entries below n_tokens never change. */
struct ctq_engine_view {
	const struct ctq_engine_token *tokens; /* (n_tokens) generated */
	int64_t n_tokens;
	const struct ctq_engine_token *prompt; /* (n_prompt) with echo_logprobs once
						* prompt_done, else NULL */
	int64_t n_prompt;
	bool prompt_done;
	enum ctq_engine_finish finish;
	double queued_s, first_s; /* seconds from submit to admission / first token */
	double finish_s;          /* seconds from submit to the end (0 while running) */
};

struct ctq_engine_stats {
	long submitted, finished, cancelled, failed, calls;
	int64_t fed_tokens, generated_tokens;
	int64_t decode_tokens; /* of fed_tokens, those of decode steps (the rest: prompts) */
};

/* One forward call (log_calls): when it started (ctq_now_s), its wall time
 * (the model's call and the sampling; synchronised), the tokens it carried
 * and how many of them were decode tokens. */
struct ctq_engine_call {
	double start_s, dur_s;
	int64_t tokens, decode;
};

/* Starts the worker over the loaded model m (borrowed until
 * ctq_engine_free; its shape holds max_slots >= max_batch, max_len and
 * max_tokens at least as in o). Errors: usage (options out of range), nomem,
 * env (no thread). */
enum ctq_status ctq_engine_start(struct ctq_engine **e, struct ctq_model *m,
				 const struct ctq_engine_options *o, struct ctq_error *err);

/* Stops accepting, cancels what is queued or running and joins the worker
 * (ctq_engine_get_stats still works after it). Idempotent. */
void ctq_engine_stop(struct ctq_engine *e);

/* ctq_engine_stop, then frees the engine. Every request must have been released before (a
 * server drains first). Accepts NULL. */
void ctq_engine_free(struct ctq_engine *e);

/* Queues prompt (n_prompt ids, copied) under p. *req is returned owned
 * (ctq_engine_release). Errors: usage (an empty prompt, an id outside the
 * vocabulary, n_prompt + max_new over max_len, parameters out of range),
 * env (the engine is stopping), nomem. */
enum ctq_status ctq_engine_submit(struct ctq_engine *e, const int32_t *prompt, int64_t n_prompt,
				  const struct ctq_engine_params *p, struct ctq_engine_req **req,
				  struct ctq_error *err);

/* Blocks until the request has more than have tokens, or has finished, or
 * timeout_s passed (< 0: no timeout), then fills v. Returns whether
 * anything changed (more tokens or finished). */
bool ctq_engine_wait(struct ctq_engine *e, struct ctq_engine_req *req, int64_t have,
		     double timeout_s, struct ctq_engine_view *v);

/* Asks the worker to stop the request (a stop string, a client gone). */
void ctq_engine_cancel(struct ctq_engine *e, struct ctq_engine_req *req);

/* The caller is done with req (cancelled first when still running); the
 * engine frees it when its worker is done with it. Accepts NULL. */
void ctq_engine_release(struct ctq_engine *e, struct ctq_engine_req *req);

/* Why the request failed (a copy of the forward call's error). */
void ctq_engine_error(struct ctq_engine *e, struct ctq_engine_req *req, struct ctq_error *err);

/* Submits, waits for the end and releases: *out (n_out tokens, malloc'ed)
 * receives the generated ids, *finish (may be NULL) why it ended. A failed
 * forward call is the call's error; a request cancelled by a stopping engine
 * is env-error. */
enum ctq_status ctq_engine_complete(struct ctq_engine *e, const int32_t *prompt, int64_t n_prompt,
				    const struct ctq_engine_params *p, int32_t **out, int64_t *n_out,
				    enum ctq_engine_finish *finish, struct ctq_error *err);

/* The forward calls so far (log_calls; none otherwise), valid until the next
 * call or ctq_engine_free: read them after ctq_engine_stop. */
const struct ctq_engine_call *ctq_engine_calls(struct ctq_engine *e, size_t *n);

/* Requests queued or running. */
long ctq_engine_active(struct ctq_engine *e);
void ctq_engine_get_stats(struct ctq_engine *e, struct ctq_engine_stats *s);

/* Samples one token from logits (vocab) under p: greedy is ctq_argmax;
 * otherwise temperature, then top-k, then top-p over the tokens sorted by
 * logit (first index on ties), from rng's next uniform. cand: scratch
 * (vocab). Exposed for tests. */
struct ctq_rng;
struct ctq_engine_cand {
	float logit;
	int32_t id;
	double prob;
};
int32_t ctq_engine_sample(const float *logits, int64_t vocab, const struct ctq_engine_params *p,
			  struct ctq_rng *rng, struct ctq_engine_cand *cand);

#endif
