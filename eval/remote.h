/* ctq eval --url: the scoring of eval/eval.h through an OpenAI-compatible
 * server instead of the model runner, lm-eval's local-completions
 * loglikelihood method. The questions are the same items (rendered and
 * tokenized by ctq_eval_prepare with the same tokenizer, so the same
 * context and continuation ids); for each item and each of its four
 * choices one POST /v1/completions with prompt = context ids followed by
 * the choice's continuation ids, max_tokens 0, echo, logprobs 1,
 * temperature 0, and logprob[i][k] = the sum of
 * choices[0].logprobs.token_logprobs over the continuation's positions
 * (n_ctx .. n_ctx + n_cont - 1). That is the quantity the in-process scorer
 * computes (the log-softmax of the logits at each continuation position,
 * summed), whatever the number of continuation tokens; top_logprobs would
 * not do, since a letter need not be among a server's top 5. Four requests
 * per question, concurrency in flight on one thread (net/http.h). Any
 * failed request stops the scoring with an error naming the question
 * (index, subject, row), the choice and the reason: an evaluation has no
 * partial result.
 * A server that refuses token-id prompts (llama-cpp-python's server: 500,
 * transformers serve: 400) is found by the first request: when it is
 * answered >= 400, the same choice goes again as a string prompt, the
 * context and continuation ids decoded (lm-eval's local-completions with
 * string prompts, max_tokens 1), and when that is answered every request
 * goes as text. The continuation's log-probabilities are then the echoed
 * tokens after the context, found by the server's own tokens: the echoed
 * token whose logprobs.text_offset is the context's end (in characters or
 * bytes) starts the continuation and the prompt's end ends it; without
 * text_offset the echoed prompt (token_logprobs less usage's generated
 * tokens) must be exactly ctq's context + continuation count, the last
 * n_cont scored. Where the split cannot be checked (no echoed token starts
 * at the context's end, counts differ, no text_offset and no usage) or the
 * server echoes no prompt log-probabilities, the scoring stops with a
 * parse-error saying so (exit 2). A request the server refused or did not finish (HTTP
 * error, refused connection, time limit, an answer over net/http.h's
 * CTQ_HTTP_MAX_KEPT) is an env error (exit 3: the remote side cannot do
 * what was asked); an answer without the echoed log-probabilities, or with
 * one that is no log-probability (outside [CTQ_OPENAI_LOGPROB_MIN,
 * CTQ_OPENAI_LOGPROB_MAX], not finite), is a parse-error (bad input, exit
 * 2). What it is not: the prompts, the
 * tallies or the verdicts (eval/run.h). */
#ifndef CTQ_EVAL_REMOTE_H
#define CTQ_EVAL_REMOTE_H

#include "eval/eval.h"

/* The request limit when none is given (request_timeout_s <= 0). */
#define CTQ_EVAL_REMOTE_TIMEOUT_S 300.0

struct ctq_eval_remote_options {
	const char *url;          /* borrowed: base URL, http://HOST:PORT/v1 */
	const char *model;        /* borrowed: the served model name */
	long concurrency;         /* requests in flight */
	double request_timeout_s; /* each request; <= 0: CTQ_EVAL_REMOTE_TIMEOUT_S */
	const struct ctq_tokenizer *tok; /* borrowed: decodes string prompts; NULL: ids only */
};

/* What the first request learned. */
struct ctq_eval_remote_info {
	bool text_prompts; /* the server refused token ids: string prompts sent */
	char learned[700]; /* one line saying so (with the server's reason); empty otherwise */
	size_t cont_differ; /* string prompts: continuations whose echoed token count is not ctq's */
};

/* Scores every item of s: logprob[i][k] as above; progress (may be NULL)
 * after each answer with the questions whose four choices are in; counters
 * (may be NULL): tokens_fed = prompt_tokens = the tokens sent (ctq's count),
 * calls = the requests, seconds; info (may be NULL) what the first request
 * learned. Errors: env (a failed request, libcurl), parse-error
 * (an answer without plausible log-probabilities), out-of-memory. */
enum ctq_status ctq_eval_remote_score(const struct ctq_eval_remote_options *o, const struct ctq_eval_set *s,
				      double (*logprob)[4], ctq_eval_progress_fn progress, void *ctx,
				      struct ctq_eval_counters *counters, struct ctq_eval_remote_info *info,
				      struct ctq_error *err);

#endif
