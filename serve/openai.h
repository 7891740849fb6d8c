/* ctq serve's OpenAI layer: the request bodies of POST /v1/completions and
 * /v1/chat/completions parsed and validated into engine parameters, and the
 * response bodies (whole and streamed chunks) built, as vLLM's
 * OpenAI-compatible server writes them (docs in docs/serving.md, "ctq serve").
 *
 * Greedy by default (temperature 0); a field ctq cannot honour (n > 1,
 * best_of > 1, penalties, logit_bias, suffix, tools, several prompts) is a
 * 400 that names it, never silently ignored. Fields of no effect on the
 * output (user, ...) are accepted. Not HTTP (serve/http.c) and not text
 * (serve/detok.h, serve/chat.h). */
#ifndef CTQ_SERVE_OPENAI_H
#define CTQ_SERVE_OPENAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/arena.h"
#include "core/strbuf.h"
#include "model/engine.h"
#include "serve/chat.h"
#include "text/tokenizer.h"

#define CTQ_OAI_MAX_STOP 16

enum ctq_oai_kind { CTQ_OAI_COMPLETION, CTQ_OAI_CHAT };

struct ctq_oai_error {
	int http;           /* 400, 404, 413, 503, ... */
	const char *type;   /* "invalid_request_error", "NotFoundError", ... */
	char param[64];     /* "" for null */
	char message[768];
};

struct ctq_oai_request {
	enum ctq_oai_kind kind;
	cJSON *root;                    /* owned: the body */
	struct ctq_arena arena;         /* what the request owns besides root */
	const char *prompt_text;        /* completions: the prompt string, or NULL */
	int32_t *prompt_ids;            /* completions: (n_prompt_ids) from the arena, or NULL */
	int64_t n_prompt_ids;
	struct ctq_chat_message *msgs;  /* chat: (n_msgs) from the arena */
	size_t n_msgs;
	struct ctq_engine_params p;     /* logprobs -1 unless asked for */
	bool max_tokens_set;            /* else the default: 16 (completions), the rest of the cache (chat) */
	bool stream, include_usage, echo, chat_logprobs;
	const char *stop[CTQ_OAI_MAX_STOP]; /* borrowed from root */
	int n_stop;
};

/* Parses body (len bytes) for kind; model is the served name. false with e
 * filled (400, 404) when the request is refused. r is freed either way by
 * ctq_oai_request_free. */
bool ctq_oai_request_parse(struct ctq_oai_request *r, enum ctq_oai_kind kind, const char *body,
			   size_t len, const char *model, struct ctq_oai_error *e);
void ctq_oai_request_free(struct ctq_oai_request *r);

/* Fills e and returns false (for one-line refusals). */
bool ctq_oai_fail(struct ctq_oai_error *e, int http, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* {"error":{"message","type","param","code"}} as a malloc'ed string. */
char *ctq_oai_error_json(const struct ctq_oai_error *e);

/* Log-probabilities as a response carries them: completions' {tokens,
 * token_logprobs, top_logprobs, text_offset} or chat's {content: [...]}. */
struct ctq_oai_logprobs {
	bool chat;
	cJSON *obj, *tokens, *values, *tops, *offsets; /* obj owned until taken */
	int64_t offset;                                 /* text_offset so far, in characters */
	struct ctq_strbuf piece;
};
void ctq_oai_logprobs_init(struct ctq_oai_logprobs *l, bool chat);
/* Adds one token; first_prompt: the first prompt token (null entries). */
void ctq_oai_logprobs_add(struct ctq_oai_logprobs *l, const struct ctq_tokenizer *tok,
			  const struct ctq_engine_token *t, bool first_prompt);
/* The object (owned by the caller, NULL when out of memory); l is reset. */
cJSON *ctq_oai_logprobs_take(struct ctq_oai_logprobs *l);
void ctq_oai_logprobs_free(struct ctq_oai_logprobs *l);

/* What every response names. */
struct ctq_oai_head {
	enum ctq_oai_kind kind;
	const char *id, *model;
	long long created;
};

/* A streamed chunk: text (NUL-terminated), logprobs (taken, may be NULL),
 * finish NULL while running; role: chat's first chunk. Owned cJSON. */
cJSON *ctq_oai_chunk(const struct ctq_oai_head *h, const char *text, cJSON *logprobs,
		     const char *finish, bool role);
/* The usage object; a chunk with "choices":[] and usage (include_usage). */
cJSON *ctq_oai_usage(int64_t prompt, int64_t completion);
cJSON *ctq_oai_usage_chunk(const struct ctq_oai_head *h, int64_t prompt, int64_t completion);
/* The whole response. */
cJSON *ctq_oai_response(const struct ctq_oai_head *h, const char *text, size_t text_len,
			cJSON *logprobs, const char *finish, int64_t prompt, int64_t completion);
/* GET /v1/models. */
cJSON *ctq_oai_models(const char *model, long long created, int64_t max_model_len);

/* "length", "stop", "abort" for an engine finish (stop string: "stop"). */
const char *ctq_oai_finish_reason(enum ctq_engine_finish f);

#endif
