/* ctq HTTP client over libcurl's multi interface (see http.h). */
#include "net/http.h"
#include "core/arena.h"
#include "core/time.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool curl_ready;

enum ctq_status ctq_http_init(struct ctq_http *h, struct ctq_error *err)
{
	memset(h, 0, sizeof *h);
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT))
			return ctq_error_set(err, CTQ_ERR_ENV, "libcurl", "curl_global_init failed");
		curl_ready = true;
	}
	h->multi = curl_multi_init();
	if (!h->multi)
		return ctq_error_set(err, CTQ_ERR_ENV, "libcurl", "curl_multi_init failed");
	return CTQ_OK;
}

void ctq_http_req_fail(struct ctq_http_req *r, const char *fmt, ...)
{
	if (r->failed)
		return;
	r->failed = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof r->reason, fmt, ap);
	va_end(ap);
	/* One line: an HTML error page's line ends become spaces. */
	for (char *c = r->reason; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
}

void ctq_http_req_free(struct ctq_http_req *r)
{
	if (r)
		ctq_strbuf_free(&r->resp);
}

/* Detaches r's easy handle from the multi handle and frees it. */
static void finish(struct ctq_http *h, struct ctq_http_req *r)
{
	if (r->easy) {
		curl_multi_remove_handle(h->multi, r->easy);
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		for (size_t i = 0; i < h->active; i++)
			if (h->live[i] == r) {
				h->live[i] = h->live[--h->active];
				break;
			}
	}
	curl_slist_free_all(r->headers);
	r->headers = NULL;
	r->done = true;
	r->t_end = ctq_now_s();
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
	struct ctq_http_req *r = ud;
	const size_t len = size * n;
	if (!r->status)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->status >= 400) {
		/* An error answer is kept for its reason: its start is enough. */
		if (r->resp.len + len <= CTQ_HTTP_MAX_KEPT)
			ctq_strbuf_appendn(&r->resp, p, len);
		return len;
	}
	if (!r->on_body) {
		/* A whole answer is kept: past the limit the request fails (an
		 * answer cut short would be parsed as a broken one). */
		if (r->resp.len + len > CTQ_HTTP_MAX_KEPT) {
			ctq_http_req_fail(r,
					  "the answer is too large: more than the client's limit of %zu MiB "
					  "(%zu bytes) for a non-streamed answer",
					  CTQ_HTTP_MAX_KEPT >> 20, CTQ_HTTP_MAX_KEPT);
			return 0;
		}
		ctq_strbuf_appendn(&r->resp, p, len);
		if (r->resp.oom) {
			ctq_http_req_fail(r, "out of memory keeping an answer of %zu bytes",
					  r->resp.len + len);
			return 0;
		}
		return len;
	}
	return r->on_body(r->ctx, r, p, len) ? 0 : len;
}

enum ctq_status ctq_http_start(struct ctq_http *h, struct ctq_http_req *r, struct ctq_error *err)
{
	r->status = 0;
	r->done = r->failed = false;
	r->reason[0] = r->curl_err[0] = '\0';
	ctq_strbuf_free(&r->resp);
	ctq_strbuf_init(&r->resp);
	if (h->active == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;
		struct ctq_http_req **v = ctq_realloc(h->live, cap * sizeof *v);
		if (!v)
			return ctq_error_set(err, CTQ_ERR_NOMEM, r->url, "out of memory");
		h->live = v;
		h->cap = cap;
	}
	CURL *e = curl_easy_init();
	if (!e)
		return ctq_error_set(err, CTQ_ERR_NOMEM, r->url, "curl_easy_init failed");
	r->easy = e;
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->curl_err);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	/* Loopback servers stay direct even when a proxy is configured, unless
	 * no_proxy says otherwise. */
	if (!getenv("no_proxy") && !getenv("NO_PROXY"))
		curl_easy_setopt(e, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
	if (r->timeout_ms > 0) {
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms);
		curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms);
	}
	struct curl_slist *hd = NULL;
	if (r->body) {
		hd = curl_slist_append(hd, "Content-Type: application/json");
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	}
	/* No "Expect: 100-continue" round trip before a large body. */
	hd = curl_slist_append(hd, "Expect:");
	r->headers = hd;
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hd);
	if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		r->easy = NULL;
		curl_slist_free_all(hd);
		r->headers = NULL;
		return ctq_error_set(err, CTQ_ERR_ENV, r->url, "curl_multi_add_handle failed");
	}
	h->live[h->active++] = r;
	r->t_start = ctq_now_s();
	return CTQ_OK;
}

/* The outcome of a transfer that ended with code c. */
static void judge(struct ctq_http_req *r, CURLcode c)
{
	if (!r->status)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->failed)
		return; /* the body callback's reason stands */
	if (c != CURLE_OK)
		ctq_http_req_fail(r, "%s%s%s", curl_easy_strerror(c), r->curl_err[0] ? ": " : "",
				  r->curl_err);
	else if (r->status >= 400)
		ctq_http_req_fail(r, "HTTP %ld: %.300s", r->status, ctq_strbuf_str(&r->resp));
	else if (r->status < 200 || r->status >= 300)
		ctq_http_req_fail(r, "HTTP %ld (expected 200)", r->status);
}

enum ctq_status ctq_http_poll(struct ctq_http *h, int wait_ms, ctq_http_done_fn done, void *ctx,
			      struct ctq_error *err)
{
	int running = 0;
	CURLMcode mc = curl_multi_perform(h->multi, &running);
	if (mc == CURLM_OK && wait_ms > 0)
		mc = curl_multi_poll(h->multi, NULL, 0, wait_ms, NULL);
	if (mc == CURLM_OK)
		mc = curl_multi_perform(h->multi, &running);
	if (mc != CURLM_OK)
		return ctq_error_set(err, CTQ_ERR_ENV, "libcurl", "multi interface: %s",
				     curl_multi_strerror(mc));
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct ctq_http_req *r = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		if (!r)
			continue;
		judge(r, m->data.result);
		finish(h, r);
		if (done)
			done(ctx, r);
	}
	return CTQ_OK;
}

void ctq_http_cancel(struct ctq_http *h, struct ctq_http_req *r, const char *reason)
{
	if (r->done || !r->easy)
		return;
	if (!r->status)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	ctq_http_req_fail(r, "%s", reason);
	finish(h, r);
}

void ctq_http_free(struct ctq_http *h)
{
	if (!h || !h->multi)
		return;
	while (h->active)
		ctq_http_cancel(h, h->live[h->active - 1], "client stopped");
	ctq_free(h->live);
	curl_multi_cleanup(h->multi);
	memset(h, 0, sizeof *h);
}

enum ctq_status ctq_http_fetch(struct ctq_http_req *r, struct ctq_error *err)
{
	struct ctq_http h;
	enum ctq_status st = ctq_http_init(&h, err);
	if (!st)
		st = ctq_http_start(&h, r, err);
	while (!st && !r->done)
		st = ctq_http_poll(&h, 100, NULL, NULL, err);
	ctq_http_free(&h);
	return st;
}
