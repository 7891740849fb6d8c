/* ctq eval: multiple-choice accuracy by the log-probability of each answer
 * letter's continuation, on the model runner (model/runner.h).
 *
 * Preparation (ctq_eval_prepare): each question is rendered by its protocol
 * (eval/prompts.h) with the first k dev rows as shots (when the evaluated
 * split is dev itself, the question's own row is skipped and the next row
 * taken, as lm-eval does), and tokenized as lm-eval's _encode_pair does:
 * context = encode(prompt), whole = encode(prompt + continuation),
 * continuation tokens = whole[len(context):] (so a token that merges across
 * the boundary is scored as the continuation's, and the context keeps its
 * own encoding). Encoding adds no special tokens; add_bos prepends one BOS.
 *
 * Context limit: a prompt fits when its tokens plus the continuation's
 * (minus the last, which is predicted, not fed) are at most max_context.
 * One that does not fit is handled by the protocol's rule
 * (ctq_protocol_overflow): Hendrycks and C-Eval take k-1 shots (the first
 * k-1 dev rows) until it fits; CMMLU removes the longest shots as its
 * gen_prompt does (and keeps only the question when header + question alone
 * are too long); lm-eval keeps the last tokens (left truncation). When no
 * shot is left and it still does not fit, every protocol falls back to left
 * truncation, and the item says so.
 *
 * Scoring (ctq_eval_score): one forward pass per question. The log-softmax
 * at the last context position gives the first token of all four
 * continuations at once; a continuation of several tokens (rare) is fed
 * after the context in the same KV slot and its tokens' log-probabilities
 * summed, as lm-eval sums them. Questions of one subject share the header
 * and shots, so their token prefix is computed once per KV slot and kept:
 * a slot holding a subject's prefix evaluates its next question by feeding
 * only the tokens after the common prefix (the runner attends to positions
 * 0..pos of the slot; the new tokens overwrite the previous question's).
 * Many slots run in each forward call, up to the runner's max_tokens.
 *
 * What it is not: generation, chat templates or regex answer extraction.
 */
#ifndef CTQ_EVAL_EVAL_H
#define CTQ_EVAL_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "eval/datasets.h"
#include "eval/prompts.h"
#include "model/model.h"
#include "text/tokenizer.h"

struct ctq_eval_options {
	enum ctq_bench bench;
	enum ctq_protocol protocol;
	int shots;            /* 0..5 requested */
	int64_t max_context;  /* positions a prompt and its continuation may use */
	size_t limit;         /* questions per subject (0: all) */
	bool add_bos;         /* prepend bos_id */
	int32_t bos_id;
};

/* One question ready to score. */
struct ctq_eval_item {
	size_t subject, index;  /* into ctq_eval_data: subjects[subject].items.q[index] */
	int shots;              /* shots used */
	bool truncated;         /* left-truncated to max_context */
	bool merged;            /* encode(prompt + continuation) did not start with
				 * encode(prompt) for some letter */
	char sha256[65];        /* of the rendered prompt's bytes */
	int64_t n_prompt;       /* tokens of the prompt before any truncation */
	int32_t *ctx;           /* (n_ctx) tokens fed before the continuation, owned */
	int64_t n_ctx;
	int32_t *cont[4];       /* (n_cont[k]) continuation tokens of choice k, owned */
	int64_t n_cont[4];
};

struct ctq_eval_set {
	struct ctq_eval_item *items; /* (n) subject by subject, file order */
	size_t n;
	int64_t max_len;             /* positions the longest item uses */
	size_t n_fewer_shots, n_truncated, n_merged, n_multi_token;
};

/* Renders and tokenizes the questions of d (the first o->limit of each
 * subject) with tokenizer t (borrowed; used from several threads).
 * Errors: usage (bad options, a protocol the benchmark lacks), parse-error
 * (a continuation that encodes to no token), invalid-config (tokenizer
 * errors), out-of-memory. On failure *s is left freed. */
enum ctq_status ctq_eval_prepare(struct ctq_eval_set *s, const struct ctq_eval_data *d,
				 const struct ctq_eval_options *o, const struct ctq_tokenizer *t,
				 struct ctq_error *err);
void ctq_eval_set_free(struct ctq_eval_set *s);

/* lm-eval's TemplateLM._encode_pair: trailing whitespace of the context
 * moves to the front of the continuation; ctx_ids = encode(context),
 * cont_ids = encode(context + continuation)[len(ctx_ids):]. *merged says
 * that encode(context + continuation) does not start with ctx_ids (a token
 * merged across the boundary); lm-eval scores cont_ids after ctx_ids all
 * the same. Both arrays returned owned (free()). Errors: parse-error when
 * the continuation is left no token (lm-eval asserts), and those of
 * ctq_tokenizer_encode. */
enum ctq_status ctq_eval_encode_pair(const struct ctq_tokenizer *t, const char *context,
				     size_t n_context, const char *continuation,
				     int32_t **ctx_ids, size_t *n_ctx_ids, int32_t **cont_ids,
				     size_t *n_cont_ids, bool *merged, struct ctq_error *err);

/* Renders the prompt of item i of subject s as prepare does with k shots
 * (no tokenization): for goldens and the per-question CSV. */
enum ctq_status ctq_eval_render(struct ctq_strbuf *sb, const struct ctq_eval_data *d,
				const struct ctq_eval_options *o, size_t s, size_t i, int k,
				struct ctq_error *err);

struct ctq_eval_counters {
	int64_t tokens_fed;    /* tokens through the model (prefixes counted once per slot) */
	int64_t prompt_tokens; /* tokens of all contexts and continuations as if unshared */
	int64_t calls;         /* forward calls */
	double seconds;        /* wall time of the scoring */
};

/* Called after each forward call: questions done of total. */
typedef void (*ctq_eval_progress_fn)(void *ctx, size_t done, size_t total);

/* Scores every item of s on the loaded model m (ctq_model_forward):
 * logprob[i][k] = sum of the log-probabilities of choice k's continuation
 * tokens after item i's context. m's max_len must be at least s->max_len.
 * progress may be NULL; counters may be NULL. Errors: usage (the model's
 * limits too small), and those of ctq_model_forward. */
enum ctq_status ctq_eval_score(struct ctq_model *m, const struct ctq_eval_set *s,
			       double (*logprob)[4], ctq_eval_progress_fn progress, void *ctx,
			       struct ctq_eval_counters *counters, struct ctq_error *err);

/* The index (0..3) of the largest of four log-probabilities; the first on
 * ties, as numpy's argmax. */
int ctq_eval_argmax4(const double lp[4]);

#endif
