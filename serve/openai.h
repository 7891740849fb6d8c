/* ctq serve's OpenAI layer: the request bodies of POST /v1/completions and
 * /v1/chat/completions parsed and validated into engine parameters, and the
 * response bodies (whole and streamed chunks) built, as vLLM's
 * OpenAI-compatible server writes them (docs in docs/serving.md, "ctq serve").
 *
 * Greedy by default (temperature 0); a field ctq cannot honour (n > 1,
 * best_of > 1, penalties, logit_bias, suffix, tools) is a
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
/* Prompts in one completions request (a list of strings or of id lists). */
#define CTQ_OAI_MAX_PROMPTS 64
/* JSON values in one request body, counted before it is parsed: a token
 * id is one, so ids over all prompts stay under this many times --max-len
 * (plus CTQ_OAI_VALUES_SLACK for the other fields). */
#define CTQ_OAI_VALUES_PER_LEN 8
#define CTQ_OAI_VALUES_SLACK 4096

enum ctq_oai_kind { CTQ_OAI_COMPLETION, CTQ_OAI_CHAT };

struct ctq_oai_error {
	int http;           /* 400, 404, 413, 503, ... */
	const char *type;   /* "invalid_request_error", "NotFoundError", ... */
	char param[64];     /* "" for null */
	char message[768];
};

/* One completions prompt: text (borrowed from root) or token ids (arena). */
struct ctq_oai_prompt {
	const char *text;
	int32_t *ids;
	int64_t n_ids;
};

struct ctq_oai_request {
	enum ctq_oai_kind kind;
	cJSON *root;                    /* owned: the body */
	struct ctq_arena arena;         /* what the request owns besides root */
	struct ctq_oai_prompt *prompts; /* completions: (n_prompts) from the arena, in order */
	int n_prompts;                  /* completions: 1..CTQ_OAI_MAX_PROMPTS; chat: 0 */
	struct ctq_chat_message *msgs;  /* chat: (n_msgs) from the arena */
	size_t n_msgs;
	struct ctq_engine_params p;     /* logprobs -1 unless asked for */
	bool max_tokens_set;            /* else the default: 16 (completions), the rest of the cache (chat) */
	bool stream, include_usage, echo, chat_logprobs;
	const char *stop[CTQ_OAI_MAX_STOP]; /* borrowed from root */
	int n_stop;
};

/* Parses body (len bytes) for kind; model is the served name, max_len the
 * positions of one request. The body must be UTF-8 (else 400, before
 * anything is parsed); before a JSON value is materialised the body is
 * scanned, and an array of more than max_len elements, or more than
 * CTQ_OAI_VALUES_PER_LEN * max_len + CTQ_OAI_VALUES_SLACK values in all, is
 * refused (413), so a request's parse costs O(max_len) nodes whatever its
 * body. false with e filled (400, 404, 413) when the request is refused. r
 * is freed either way by ctq_oai_request_free. */
bool ctq_oai_request_parse(struct ctq_oai_request *r, enum ctq_oai_kind kind, const char *body,
			   size_t len, const char *model, int64_t max_len, struct ctq_oai_error *e);

/* The body scan alone: true when no array holds more than max_elems
 * elements and the body no more than max_values values (*n, if non-NULL:
 * the values); else false with *n the count that broke the rule and
 * *array whether it was one array's. Strings are skipped (escapes
 * included); allocates nothing. */
bool ctq_oai_scan_values(const char *body, size_t len, int64_t max_elems, int64_t max_values,
			 int64_t *n, bool *array);

/* text (NUL-terminated) with every ill-formed UTF-8 sequence replaced by
 * U+FFFD (maximal subparts, as the Unicode standard counts them): what
 * every response goes through, so each is valid UTF-8 (and JSON stays
 * JSON: bytes >= 0x80 only occur inside strings). From ctq_malloc (free()
 * takes it, as libmicrohttpd's MHD_RESPMEM_MUST_FREE does); NULL when out
 * of memory. */
char *ctq_oai_utf8_fix(const char *text, size_t len);
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

/* A streamed chunk of choice index: text (NUL-terminated), logprobs
 * (taken, may be NULL), finish NULL while running; role: chat's first
 * chunk. Owned cJSON. */
cJSON *ctq_oai_chunk(const struct ctq_oai_head *h, int index, const char *text, cJSON *logprobs,
		     const char *finish, bool role);
/* The usage object; a chunk with "choices":[] and usage (include_usage). */
cJSON *ctq_oai_usage(int64_t prompt, int64_t completion);
cJSON *ctq_oai_usage_chunk(const struct ctq_oai_head *h, int64_t prompt, int64_t completion);
/* One choice of a whole response (text_len bytes, cut at a NUL). */
cJSON *ctq_oai_choice(enum ctq_oai_kind kind, int index, const char *text, size_t text_len,
		      cJSON *logprobs, const char *finish);
/* The whole response over choices (an array, taken). */
cJSON *ctq_oai_response(const struct ctq_oai_head *h, cJSON *choices, int64_t prompt,
			int64_t completion);
/* GET /v1/models. */
cJSON *ctq_oai_models(const char *model, long long created, int64_t max_model_len);

/* "length", "stop", "abort" for an engine finish (stop string: "stop"). */
const char *ctq_oai_finish_reason(enum ctq_engine_finish f);

#endif
