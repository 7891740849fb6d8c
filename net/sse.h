/* ctq server-sent events: an incremental parser of a text/event-stream body
 * (the WHATWG "event stream interpretation" reduced to what an OpenAI
 * streaming response uses). Bytes come in reads of any size, an event may be
 * split anywhere (inside a line, between CR and LF, inside a UTF-8
 * character); each complete event's data (its data: lines joined by LF) is
 * handed to a callback once its blank line arrives. Lines end in LF, CRLF or
 * CR; a line starting with ':' is a comment; a field's value loses one
 * leading space; fields other than data (event, id, retry) are ignored; a
 * UTF-8 byte order mark at the start of the stream is dropped. As the
 * WHATWG rules say, a blank line ends an event, an event with no data
 * field is not dispatched, and one whose data fields are all empty
 * ("data:" or "data") is dispatched with empty data (len 0: the spec's
 * own example; what an empty event means is the caller's, net/openai.h
 * takes it as a keep-alive); a stream that ends before an event's blank
 * line never dispatches that event.
 * What it is not: an HTTP client (net/http.h) or a JSON parser of the data
 * (net/openai.h). */
#ifndef CTQ_NET_SSE_H
#define CTQ_NET_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "core/strbuf.h"

/* Bytes one event's data may hold; a longer one is a parse-error (a server
 * that never sends a blank line cannot grow the client without bound). */
#define CTQ_SSE_MAX_EVENT ((size_t)1 << 22)

struct ctq_sse {
	struct ctq_strbuf line; /* the line read so far */
	struct ctq_strbuf data; /* the event's data so far */
	bool has_data;          /* a data field was seen in this event */
	bool after_cr;          /* the last byte was CR: a LF next ends no new line */
	bool started;           /* past the stream's first bytes (its BOM, if any) */
	unsigned char bom;      /* bytes of a UTF-8 BOM matched at the start */
	size_t events;          /* events dispatched */
};

/* Called with each event's data (NUL-terminated, len bytes, borrowed until
 * the call returns); a non-zero return stops the parse (ctq_sse_feed then
 * returns CTQ_OK and *stopped is set). */
typedef int (*ctq_sse_event_fn)(void *ctx, const char *data, size_t len);

void ctq_sse_init(struct ctq_sse *p);
void ctq_sse_free(struct ctq_sse *p);

/* Feeds n bytes. Errors: parse-error (an event over CTQ_SSE_MAX_EVENT
 * bytes), out-of-memory. stopped may be NULL. */
enum ctq_status ctq_sse_feed(struct ctq_sse *p, const char *bytes, size_t n, ctq_sse_event_fn fn,
			     void *ctx, bool *stopped, struct ctq_error *err);

#endif
