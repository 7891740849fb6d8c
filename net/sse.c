/* ctq server-sent events parser (see sse.h). */
#include "net/sse.h"

#include <string.h>

void ctq_sse_init(struct ctq_sse *p)
{
	memset(p, 0, sizeof *p);
	ctq_strbuf_init(&p->line);
	ctq_strbuf_init(&p->data);
}

void ctq_sse_free(struct ctq_sse *p)
{
	if (!p)
		return;
	ctq_strbuf_free(&p->line);
	ctq_strbuf_free(&p->data);
	memset(p, 0, sizeof *p);
}

/* One complete line (without its end): a field, a comment, or the blank
 * line that dispatches the event. Returns the callback's value. */
static int take_line(struct ctq_sse *p, ctq_sse_event_fn fn, void *ctx)
{
	const char *s = ctq_strbuf_str(&p->line);
	size_t n = p->line.len;
	int rc = 0;
	if (n == 0) {
		if (p->has_data) {
			p->events++;
			rc = fn(ctx, ctq_strbuf_str(&p->data), p->data.len);
		}
		ctq_strbuf_reset(&p->data);
		p->has_data = false;
	} else if (s[0] != ':') {
		const char *colon = memchr(s, ':', n);
		size_t name_len = colon ? (size_t)(colon - s) : n;
		const char *v = colon ? colon + 1 : s + n;
		size_t vn = (size_t)(s + n - v);
		if (vn && *v == ' ')
			v++, vn--;
		if (name_len == 4 && !memcmp(s, "data", 4)) {
			if (p->has_data)
				ctq_strbuf_appendn(&p->data, "\n", 1);
			ctq_strbuf_appendn(&p->data, v, vn);
			p->has_data = true;
		}
	}
	ctq_strbuf_reset(&p->line);
	return rc;
}

enum ctq_status ctq_sse_feed(struct ctq_sse *p, const char *bytes, size_t n, ctq_sse_event_fn fn,
			     void *ctx, bool *stopped, struct ctq_error *err)
{
	if (stopped)
		*stopped = false;
	size_t i = 0;
	/* A byte order mark (EF BB BF) at the very start is not part of the
	 * first line; the bytes of a partial match that fails are. */
	static const char bom[3] = {'\xef', '\xbb', '\xbf'};
	while (!p->started && i < n) {
		if (bytes[i] == bom[p->bom]) {
			i++;
			p->started = ++p->bom == 3;
			continue;
		}
		ctq_strbuf_appendn(&p->line, bom, p->bom);
		p->started = true;
	}
	while (i < n) {
		if (p->after_cr && bytes[i] == '\n') {
			p->after_cr = false;
			i++;
			continue;
		}
		p->after_cr = false;
		/* The run of bytes up to the next line end joins the line at once. */
		size_t j = i;
		while (j < n && bytes[j] != '\n' && bytes[j] != '\r')
			j++;
		if (p->line.len + (j - i) + p->data.len > CTQ_SSE_MAX_EVENT)
			return ctq_error_set(err, CTQ_ERR_PARSE, "event-stream",
					     "an event of more than %zu bytes (no blank line ends it)",
					     CTQ_SSE_MAX_EVENT);
		ctq_strbuf_appendn(&p->line, bytes + i, j - i);
		if (p->line.oom || p->data.oom)
			return ctq_error_set(err, CTQ_ERR_NOMEM, "event-stream", "out of memory");
		if (j == n)
			break;
		p->after_cr = bytes[j] == '\r';
		i = j + 1;
		if (take_line(p, fn, ctx)) {
			if (stopped)
				*stopped = true;
			return CTQ_OK;
		}
		if (p->data.oom)
			return ctq_error_set(err, CTQ_ERR_NOMEM, "event-stream", "out of memory");
	}
	return CTQ_OK;
}
