/* ctq HTTP client: many concurrent requests on one thread over libcurl's
 * multi interface (curl_multi_poll). The caller starts requests when it
 * wants (a schedule, a concurrency limit), polls, and is told of each one
 * that ended. A response body of a 2xx answer streams into a callback as it
 * arrives (server-sent events go to net/sse.h from there); an answer >= 400
 * keeps its body for the reason. Every request has a time limit, so nothing
 * waits forever on a stalled server; a refused connection, a dropped
 * transfer, a time-out or an HTTP error is a failed request with its reason,
 * never an error of the client. What it is not: a JSON or OpenAI layer
 * (net/openai.h). */
#ifndef CTQ_NET_HTTP_H
#define CTQ_NET_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "core/strbuf.h"

/* Bytes of a body without a callback kept: a longer 2xx answer fails the
 * request ("the answer is too large", naming the limit); an error answer
 * (>= 400) is kept up to this many bytes, the rest dropped. */
#define CTQ_HTTP_MAX_KEPT ((size_t)64 << 20)

struct ctq_http_req;

/* Called with each piece of a 2xx response body; a non-zero return stops the
 * transfer (the request fails; set the reason with ctq_http_req_fail first). */
typedef int (*ctq_http_body_fn)(void *ctx, struct ctq_http_req *r, const char *p, size_t n);

struct ctq_http_req {
	/* set by the caller */
	const char *url;          /* borrowed */
	const char *body;         /* borrowed: a JSON POST when non-NULL, else a GET */
	size_t body_len;
	long timeout_ms;          /* the whole transfer, connection included; 0: none */
	ctq_http_body_fn on_body; /* NULL: the body is kept in resp */
	void *ctx;
	/* filled */
	long status;              /* HTTP status; 0 when no answer came */
	bool done, failed;
	char reason[512];         /* why it failed */
	struct ctq_strbuf resp;   /* the body kept (see on_body), or an error answer's */
	double t_start, t_end;    /* ctq_now_s() when started and when it ended */
	/* private */
	void *easy;
	void *headers;
	char curl_err[256];
};

struct ctq_http {
	void *multi;
	struct ctq_http_req **live; /* (active) the requests running, cap entries */
	size_t active, cap;
};

/* Errors: env (libcurl cannot start), out-of-memory. */
enum ctq_status ctq_http_init(struct ctq_http *h, struct ctq_error *err);

/* Stops every request still running (each failed, "client stopped") and
 * frees the handles. Idempotent. */
void ctq_http_free(struct ctq_http *h);

/* Starts r (borrowed until it is done; its caller fields set, the rest
 * zeroed or left from ctq_http_req_reset). Errors: out-of-memory, env. */
enum ctq_status ctq_http_start(struct ctq_http *h, struct ctq_http_req *r, struct ctq_error *err);

/* Called once for each request that ended, from ctq_http_poll. */
typedef void (*ctq_http_done_fn)(void *ctx, struct ctq_http_req *r);

/* Moves the transfers on, waiting at most wait_ms for something to happen,
 * and reports each request that ended to done (may be NULL). Errors: env
 * (libcurl's multi interface failed). */
enum ctq_status ctq_http_poll(struct ctq_http *h, int wait_ms, ctq_http_done_fn done, void *ctx,
			      struct ctq_error *err);

/* Stops r while it runs (a time limit of the caller): failed with reason,
 * done, reported to no callback. */
void ctq_http_cancel(struct ctq_http *h, struct ctq_http_req *r, const char *reason);

/* Marks r failed with a reason (first one wins; control bytes become
 * spaces, so it prints on one line); for body callbacks. */
void ctq_http_req_fail(struct ctq_http_req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Frees what a request holds (its kept body). */
void ctq_http_req_free(struct ctq_http_req *r);

/* One request, waited for (a GET of /v1/models): r ends done, failed or
 * not. Errors: those of ctq_http_init / start / poll. */
enum ctq_status ctq_http_fetch(struct ctq_http_req *r, struct ctq_error *err);

#endif
