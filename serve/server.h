/* ctq serve's HTTP server: an OpenAI-compatible API over the online engine
 * (model/engine.h) on libmicrohttpd, one thread per connection:
 *
 *   POST /v1/completions, /v1/chat/completions   (stream: server-sent events)
 *   GET  /v1/models, /health
 *
 * Request bodies go through serve/openai.h, prompts through the tokenizer
 * (chat: serve/chat.h first), generated text through serve/detok.h. A
 * streamed response writes one `data: {chunk}` event per generated token
 * from a content-reader callback that blocks on the engine until the next
 * token is out, then `data: [DONE]`; a client that goes away mid-stream,
 * or closes its connection while a non-streamed request runs, has its
 * request cancelled, which frees its slot. A completions request may carry
 * several prompts (one choice each). Errors are OpenAI error JSON (400,
 * 404, 405, 413, 500, 503) in UTF-8, and the server keeps serving. Memory,
 * connections and silence are bounded (docs/serving.md, "Bounded by
 * design"): bodies under a server-wide budget, scanned before parsed.
 * Draining answers 503 to new requests and waits for those in flight.
 *
 * Not the command (harness/cmd_serve.c: options, loading, signals). */
#ifndef CTQ_SERVE_SERVER_H
#define CTQ_SERVE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "model/engine.h"
#include "serve/chat.h"
#include "text/tokenizer.h"

struct ctq_serve_options {
	const char *host;       /* address to bind ("127.0.0.1", "::1", "0.0.0.0", a name) */
	int port;               /* 0: any free port (ctq_serve_port says which) */
	const char *model_name; /* the served name requests must give */
	int64_t max_len;        /* positions per request (prompt + max_tokens) */
	size_t max_body;        /* request body bytes; larger: 413 */
	size_t body_budget;     /* request bodies held at once, all connections; over: 503
				 * (0: CTQ_SERVE_BODY_BUDGET_BODIES x max_body) */
	unsigned max_connections; /* open connections (0: CTQ_SERVE_MAX_CONNECTIONS); one
				   * client address may hold a quarter */
	bool quiet;             /* no per-request log line */
	FILE *log;              /* where request lines go (stderr) */
};

/* Bounded by design (docs/serving.md): bodies held at once, connections
 * (threads), seconds a socket may stay silent, a connection thread's stack. */
#define CTQ_SERVE_BODY_BUDGET_BODIES 8
#define CTQ_SERVE_MAX_CONNECTIONS 4096u
#define CTQ_SERVE_IDLE_S 30
#define CTQ_SERVE_THREAD_STACK (1u << 20)
/* What one JSON value of a body costs while it is parsed (the budget's estimate). */
#define CTQ_SERVE_VALUE_BYTES 128

struct ctq_serve_stats {
	long requests; /* answered, any status */
	long failed;   /* answered with a status >= 400, or a stream that ended in error */
	long generations;
	int64_t prompt_tokens, completion_tokens;
};

struct ctq_server;

/* Starts listening. engine, tok and chat are borrowed for the server's
 * life. Errors: env (the address cannot be bound), usage (a host that does
 * not resolve), nomem. */
enum ctq_status ctq_serve_start(struct ctq_server **s, const struct ctq_serve_options *o,
				struct ctq_engine *engine, const struct ctq_tokenizer *tok,
				const struct ctq_chat_template *chat, struct ctq_error *err);

/* The port it listens on. */
int ctq_serve_port(const struct ctq_server *s);

/* New requests get 503 from now on; returns when none is in flight. */
void ctq_serve_drain(struct ctq_server *s);

/* Stops the daemon (closing idle connections), fills stats (may be NULL)
 * and frees the server. Drain first to let requests finish. Accepts NULL. */
void ctq_serve_stop(struct ctq_server *s, struct ctq_serve_stats *stats);

#endif
