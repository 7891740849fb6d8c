/* net/sse.h and net/openai.h: the event-stream parser fed whole, split at
 * every byte boundary and byte by byte (the same events each time), its
 * line ends (LF, CRLF, CR, a CRLF split between reads), comments, fields
 * other than data, multi-line data, the event size bound; the parsing of
 * stream chunks, echo log-probabilities, error answers and endpoints. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "net/openai.h"
#include "net/sse.h"

struct events {
	char v[16][256];
	int n;
	int stop_at; /* stop after this many; 0: never */
};

static int collect(void *ctx, const char *data, size_t len)
{
	struct events *e = ctx;
	cr_assert(e->n < 16);
	cr_assert_eq(strlen(data), len, "data must be NUL-terminated at len");
	snprintf(e->v[e->n++], sizeof e->v[0], "%s", data);
	return e->stop_at && e->n == e->stop_at;
}

static const char stream[] =
	": a comment line\r\n"
	"data: {\"a\":1}\n\n"
	"event: message\n"
	"id: 7\n"
	"data: line one\n"
	"data:line two\n"
	"\n"
	"data: crlf\r\n\r\n"
	"data: cr only\r\r"
	"retry: 10\n"
	"data\n\n"          /* a field without a colon: empty data */
	"data:  two spaces\n\n"
	"\n\n"              /* blank lines without data dispatch nothing */
	"data: [DONE]\n\n"
	"data: unfinished"; /* no blank line: never dispatched */

static const char *const want[] = {"{\"a\":1}", "line one\nline two", "crlf", "cr only", "",
				   " two spaces", "[DONE]"};
#define N_WANT ((int)(sizeof want / sizeof *want))

static void check(const struct events *e, const char *how)
{
	cr_assert_eq(e->n, N_WANT, "%s: %d events, expected %d", how, e->n, N_WANT);
	for (int i = 0; i < N_WANT; i++)
		cr_expect_str_eq(e->v[i], want[i], "%s: event %d", how, i);
}

Test(sse, whole_stream)
{
	struct ctq_sse p;
	struct events e = {0};
	ctq_sse_init(&p);
	cr_assert_eq(ctq_sse_feed(&p, stream, sizeof stream - 1, collect, &e, NULL, NULL), CTQ_OK);
	check(&e, "whole");
	cr_expect_eq(p.events, (size_t)N_WANT);
	ctq_sse_free(&p);
	ctq_sse_free(&p); /* idempotent */
}

Test(sse, split_at_every_boundary)
{
	const size_t n = sizeof stream - 1;
	for (size_t cut = 0; cut <= n; cut++) {
		struct ctq_sse p;
		struct events e = {0};
		ctq_sse_init(&p);
		cr_assert_eq(ctq_sse_feed(&p, stream, cut, collect, &e, NULL, NULL), CTQ_OK);
		cr_assert_eq(ctq_sse_feed(&p, stream + cut, n - cut, collect, &e, NULL, NULL), CTQ_OK);
		char how[32];
		snprintf(how, sizeof how, "cut at %zu", cut);
		check(&e, how);
		ctq_sse_free(&p);
	}
	struct ctq_sse p;
	struct events e = {0};
	ctq_sse_init(&p);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(ctq_sse_feed(&p, stream + i, 1, collect, &e, NULL, NULL), CTQ_OK);
	check(&e, "byte by byte");
	ctq_sse_free(&p);
}

Test(sse, callback_stops)
{
	struct ctq_sse p;
	struct events e = {.stop_at = 2};
	bool stopped = false;
	ctq_sse_init(&p);
	cr_assert_eq(ctq_sse_feed(&p, stream, sizeof stream - 1, collect, &e, &stopped, NULL), CTQ_OK);
	cr_expect(stopped);
	cr_expect_eq(e.n, 2);
	ctq_sse_free(&p);
}

Test(sse, event_size_bound)
{
	struct ctq_sse p;
	struct events e = {0};
	struct ctq_error err = {0};
	ctq_sse_init(&p);
	static char big[1 << 16];
	memset(big, 'x', sizeof big);
	enum ctq_status st = ctq_sse_feed(&p, "data: ", 6, collect, &e, NULL, &err);
	for (size_t i = 0; !st && i <= CTQ_SSE_MAX_EVENT / sizeof big; i++)
		st = ctq_sse_feed(&p, big, sizeof big, collect, &e, NULL, &err);
	cr_expect_eq(st, CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "blank line"), "%s", err.message);
	cr_expect_eq(e.n, 0);
	ctq_sse_free(&p);
}

/* The WHATWG event-stream rules one at a time (html.spec.whatwg.org,
 * "Interpreting an event stream"): each stream, fed whole and byte by
 * byte, dispatches exactly these data. */
struct rule_case {
	const char *rule, *stream;
	size_t len; /* 0: strlen */
	const char *want[4];
	int n;
};

Test(sse, whatwg_rules)
{
	const struct rule_case cases[] = {
		/* the spec's own example: "data" alone and "data:" dispatch the empty
		 * string; two data lines join with one LF; the last block has no
		 * blank line, so it is never dispatched */
		{"spec example", "data\n\ndata\ndata\n\ndata:", 0, {"", "\n"}, 2},
		{"comments only", ": one\n:two\n\n: three\n\n", 0, {0}, 0},
		{"comment inside an event", "data: a\n: not data\ndata: b\n\n", 0, {"a\nb"}, 1},
		{"event, id, retry ignored", "event: x\nid: 1\nretry: 5\ndata: y\n\n", 0, {"y"}, 1},
		{"fields alone dispatch nothing", "event: x\nid: 2\n\nretry: 1\n\n", 0, {0}, 0},
		{"unknown fields ignored", "foo: bar\ndatax: no\ndata: z\n\n", 0, {"z"}, 1},
		{"CRLF", "data: a\r\ndata: b\r\n\r\n", 0, {"a\nb"}, 1},
		{"CR", "data: a\rdata: b\r\r", 0, {"a\nb"}, 1},
		{"LF", "data: a\ndata: b\n\n", 0, {"a\nb"}, 1},
		{"mixed ends", "data: a\rdata: b\r\n\ndata: c\n\r", 0, {"a\nb", "c"}, 2},
		{"one leading space dropped", "data:  x \n\ndata:y\n\n", 0, {" x ", "y"}, 2},
		{"a colon in the value", "data: {\"a\":1}\n\n", 0, {"{\"a\":1}"}, 1},
		{"BOM at the start",
		 "\xef\xbb\xbf"
		 "data: a\n\n",
		 0,
		 {"a"},
		 1},
		{"BOM only at the start",
		 "data: a\n\n\xef\xbb\xbf"
		 "data: b\n\n",
		 0,
		 {"a"},
		 1},
		{"partial BOM is text",
		 "\xef\xbb"
		 "data: a\n\ndata: b\n\n",
		 0,
		 {"b"},
		 1},
		{"end without blank line", "data: a\n\ndata: b\n", 0, {"a"}, 1},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct rule_case *k = &cases[c];
		const size_t n = k->len ? k->len : strlen(k->stream);
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			struct ctq_sse p;
			struct events e = {0};
			ctq_sse_init(&p);
			if (bytewise)
				for (size_t i = 0; i < n; i++)
					cr_assert_eq(
						ctq_sse_feed(&p, k->stream + i, 1, collect, &e, NULL, NULL),
						CTQ_OK);
			else
				cr_assert_eq(ctq_sse_feed(&p, k->stream, n, collect, &e, NULL, NULL), CTQ_OK);
			cr_expect_eq(e.n, k->n, "%s%s: %d events, want %d", k->rule,
				     bytewise ? " (bytewise)" : "", e.n, k->n);
			for (int i = 0; i < k->n && i < e.n; i++)
				cr_expect_str_eq(e.v[i], k->want[i], "%s: event %d", k->rule, i);
			ctq_sse_free(&p);
		}
	}
}

/* ---- OpenAI pieces ---- */

Test(openai, chunks)
{
	struct ctq_openai_chunk c;
	struct ctq_strbuf text;
	ctq_strbuf_init(&text);
	const char *tok = "{\"id\":\"x\",\"choices\":[{\"index\":0,\"text\":\" hi\",\"finish_reason\":null}]}";
	cr_assert_eq(ctq_openai_chunk_parse(tok, strlen(tok), &c, &text, NULL), CTQ_OK);
	cr_expect(c.has_choice && !c.finished && !c.done && c.usage_completion == -1);
	const char *last = "{\"choices\":[{\"text\":\"!\",\"finish_reason\":\"length\"}]}";
	cr_assert_eq(ctq_openai_chunk_parse(last, strlen(last), &c, &text, NULL), CTQ_OK);
	cr_expect(c.has_choice && c.finished && !c.stopped);
	const char *eos = "{\"choices\":[{\"text\":\"\",\"finish_reason\":\"stop\"}]}";
	cr_assert_eq(ctq_openai_chunk_parse(eos, strlen(eos), &c, NULL, NULL), CTQ_OK);
	cr_expect(c.has_choice && c.finished && c.stopped, "finish_reason stop: stopped early");
	const char *chat = "{\"choices\":[{\"delta\":{\"content\":\"?\"}}]}";
	cr_assert_eq(ctq_openai_chunk_parse(chat, strlen(chat), &c, &text, NULL), CTQ_OK);
	cr_expect_str_eq(ctq_strbuf_str(&text), " hi!?");
	const char *usage = "{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9}}";
	cr_assert_eq(ctq_openai_chunk_parse(usage, strlen(usage), &c, NULL, NULL), CTQ_OK);
	cr_expect(!c.has_choice, "an empty choices array is not a token (vLLM's rule)");
	cr_expect_eq(c.usage_completion, 9);
	cr_expect_eq(c.usage_prompt, 3);
	cr_assert_eq(ctq_openai_chunk_parse("[DONE]\n", 7, &c, NULL, NULL), CTQ_OK);
	cr_expect(c.done);
	const char *e = "{\"error\":{\"message\":\"too long\",\"code\":413}}";
	cr_assert_eq(ctq_openai_chunk_parse(e, strlen(e), &c, NULL, NULL), CTQ_OK);
	cr_expect(c.is_error);
	cr_expect_str_eq(c.error, "too long");
	/* An empty event (data: and a blank line) is a keep-alive, not an error. */
	const char *const blanks[] = {"", " ", "\n", "\r\n\t "};
	for (size_t i = 0; i < sizeof blanks / sizeof *blanks; i++) {
		cr_expect_eq(ctq_openai_chunk_parse(blanks[i], strlen(blanks[i]), &c, &text, NULL), CTQ_OK,
			     "blank event %zu", i);
		cr_expect(c.empty && !c.done && !c.has_choice && !c.finished && c.usage_completion == -1);
	}
	struct ctq_error err = {0};
	cr_expect_eq(ctq_openai_chunk_parse("{\"choices\":", 11, &c, NULL, &err), CTQ_ERR_PARSE);
	cr_expect_eq(ctq_openai_chunk_parse("{\"choices\":3}", 13, &c, NULL, &err), CTQ_ERR_PARSE);
	ctq_strbuf_free(&text);
}

Test(openai, echo_logprobs)
{
	const char *b = "{\"choices\":[{\"logprobs\":{\"tokens\":[\"a\",\"b\",\"c\",\"d\"],"
			"\"token_logprobs\":[null,-1.5,-0.25,-2.0]}}]}";
	double s = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_openai_echo_logprobs(b, strlen(b), 4, 2, 2, &s, "x", &err), CTQ_OK, "%s",
		     err.message);
	cr_expect(fabs(s - -2.25) < 1e-15, "%.17g", s);
	cr_expect_eq(ctq_openai_echo_logprobs(b, strlen(b), 4, 0, 2, &s, "x", &err), CTQ_ERR_PARSE,
		     "the first token's null is not a log-probability");
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_openai_echo_logprobs(b, strlen(b), 6, 2, 2, &s, "x", &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "not echoed"), "%s", err.message);
	const char *none = "{\"choices\":[{\"text\":\"\",\"logprobs\":null}]}";
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_openai_echo_logprobs(none, strlen(none), 1, 0, 1, &s, "x", &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "echo"), "%s", err.message);
	/* Implausible values are refused, naming the entry; rounding above 0
	 * and vLLM's -9999 for -inf are not. */
	static const struct {
		const char *v;
		bool ok;
	} lp[] = {{"-0.5", true},  {"0", true},      {"5e-5", true},    {"-9999.0", true},
		  {"0.5", false},  {"1e308", false}, {"1e999", false},  {"-1e999", false},
		  {"-1e5", false}, {"2e-4", false},  {"-1e308", false}, {"\"-1\"", false}};
	for (size_t i = 0; i < sizeof lp / sizeof *lp; i++) {
		char body[200];
		snprintf(body, sizeof body,
			 "{\"choices\":[{\"logprobs\":{\"token_logprobs\":[null,-1,%s]}}]}", lp[i].v);
		err = (struct ctq_error){0};
		enum ctq_status st =
			ctq_openai_echo_logprobs(body, strlen(body), 3, 1, 2, &s, "question 7", &err);
		cr_expect_eq(st, lp[i].ok ? CTQ_OK : CTQ_ERR_PARSE, "%s: %s", lp[i].v, err.message);
		if (!lp[i].ok) {
			cr_expect(strstr(err.message, "token_logprobs[2]"), "%s: %s", lp[i].v, err.message);
			cr_expect_str_eq(err.path, "question 7");
		}
	}
}

/* A string prompt's echo split at the context's end: by text_offset (in
 * characters, or bytes), else by count with usage; each refusal names why. */
Test(openai, echo_text_split)
{
	/* "ab é|cd": context "ab é" = 4 characters, 5 bytes; tokens "ab", " é", "cd", then one generated. */
	const char *b = "{\"choices\":[{\"logprobs\":{\"tokens\":[\"ab\",\" \u00e9\",\"cd\",\"!\"],"
			"\"text_offset\":[0,2,4,6],\"token_logprobs\":[null,-1.5,-0.25,-2.0]}}],"
			"\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}";
	const struct ctq_openai_text_split sp = {.ctx_chars = 4, .ctx_bytes = 5, .prompt_chars = 6,
						 .prompt_bytes = 7, .n_ctx = 2, .n_cont = 1};
	double s = 0;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_openai_echo_text_logprobs(b, strlen(b), &sp, &s, &n, "x", &err), CTQ_OK, "%s", err.message);
	cr_expect(fabs(s - -0.25) < 1e-15 && n == 1, "%.17g over %zu", s, n);
	/* Offsets in bytes (5, 7) find the same split. */
	const char *bb = "{\"choices\":[{\"logprobs\":{\"text_offset\":[0,2,5,7],"
			 "\"token_logprobs\":[null,-1.5,-0.25,-2.0]}}]}";
	cr_assert_eq(ctq_openai_echo_text_logprobs(bb, strlen(bb), &sp, &s, &n, "x", &err), CTQ_OK, "%s", err.message);
	cr_expect(fabs(s - -0.25) < 1e-15 && n == 1);
	/* No token starts at the context's end: refused. */
	const char *merged = "{\"choices\":[{\"logprobs\":{\"text_offset\":[0,3,6],"
			     "\"token_logprobs\":[null,-1.5,-2.0]}}]}";
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_openai_echo_text_logprobs(merged, strlen(merged), &sp, &s, &n, "x", &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "context's end"), "%s", err.message);
	/* No offsets: by count, the generated token told apart by usage. */
	const char *counted = "{\"choices\":[{\"logprobs\":{\"token_logprobs\":[null,-1.5,-0.25,-2.0]}}],"
			      "\"usage\":{\"completion_tokens\":1}}";
	cr_assert_eq(ctq_openai_echo_text_logprobs(counted, strlen(counted), &sp, &s, &n, "x", &err), CTQ_OK, "%s",
		     err.message);
	cr_expect(fabs(s - -0.25) < 1e-15 && n == 1);
	const struct ctq_openai_text_split other = {.ctx_chars = 4, .ctx_bytes = 5, .prompt_chars = 6,
						    .prompt_bytes = 7, .n_ctx = 1, .n_cont = 1};
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_openai_echo_text_logprobs(counted, strlen(counted), &other, &s, &n, "x", &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "tokenization differs"), "%s", err.message);
	const char *nousage = "{\"choices\":[{\"logprobs\":{\"token_logprobs\":[null,-1.5,-0.25]}}]}";
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_openai_echo_text_logprobs(nousage, strlen(nousage), &sp, &s, &n, "x", &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "cannot be checked"), "%s", err.message);
	/* No echoed log-probabilities at all (transformers serve ignores echo and logprobs). */
	const char *none = "{\"choices\":[{\"text\":\" a\",\"index\":0}],\"usage\":{\"completion_tokens\":1}}";
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_openai_echo_text_logprobs(none, strlen(none), &sp, &s, &n, "x", &err), CTQ_ERR_PARSE);
	cr_expect(strstr(err.message, "does not echo prompt log-probabilities") &&
			  strstr(err.message, "local-completions"),
		  "%s", err.message);
}

Test(openai, bodies_and_endpoints)
{
	char u[256];
	ctq_openai_endpoint("http://h:1/v1/", "completions", u, sizeof u);
	cr_expect_str_eq(u, "http://h:1/v1/completions");
	ctq_openai_endpoint("http://h:1/v1/completions", "completions", u, sizeof u);
	cr_expect_str_eq(u, "http://h:1/v1/completions");
	ctq_openai_endpoint("http://h:1/v1", "models", u, sizeof u);
	cr_expect_str_eq(u, "http://h:1/v1/models");
	struct ctq_strbuf b;
	ctq_strbuf_init(&b);
	const int32_t ids[] = {5, 0, 77};
	ctq_openai_stream_body(&b, "m\"x", ids, 3, NULL, 12, true);
	cr_expect_str_eq(ctq_strbuf_str(&b),
			 "{\"model\":\"m\\\"x\",\"prompt\":[5,0,77],\"max_tokens\":12,\"temperature\":0,"
			 "\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
	ctq_strbuf_reset(&b);
	ctq_openai_stream_body(&b, "m", ids, 3, "a\nb\x01", 1, true);
	cr_expect(strstr(ctq_strbuf_str(&b), "\"prompt\":\"a\\u000ab\\u0001\""), "%s", b.data);
	ctq_strbuf_reset(&b);
	/* The plain OpenAI API: no ignore_eos. */
	ctq_openai_stream_body(&b, "m", ids, 3, "hi", 4, false);
	cr_expect_str_eq(ctq_strbuf_str(&b),
			 "{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":4,\"temperature\":0,\"stream\":true,"
			 "\"stream_options\":{\"include_usage\":true}}");
	ctq_strbuf_reset(&b);
	ctq_openai_probe_body(&b, "m", ids, 3, NULL, true);
	cr_expect_str_eq(ctq_strbuf_str(&b),
			 "{\"model\":\"m\",\"prompt\":[5,0,77],\"max_tokens\":1,\"temperature\":0,\"ignore_eos\":true}");
	ctq_strbuf_reset(&b);
	ctq_openai_echo_body(&b, "m", ids, 2, NULL);
	cr_expect_str_eq(ctq_strbuf_str(&b), "{\"model\":\"m\",\"prompt\":[5,0],\"max_tokens\":0,\"echo\":true,"
					     "\"logprobs\":1,\"temperature\":0}");
	ctq_strbuf_reset(&b);
	ctq_openai_echo_body(&b, "m", ids, 2, "Q: x\nAnswer: A");
	cr_expect_str_eq(ctq_strbuf_str(&b), "{\"model\":\"m\",\"prompt\":\"Q: x\\u000aAnswer: A\",\"max_tokens\":1,"
					     "\"echo\":true,\"logprobs\":1,\"temperature\":0}");
	ctq_strbuf_free(&b);
	struct ctq_http_req r = {.status = 404, .failed = true};
	ctq_strbuf_init(&r.resp);
	ctq_strbuf_append(&r.resp, "{\"error\":{\"message\":\"The model `x` does not exist.\",\"code\":404}}");
	ctq_openai_error_reason(&r);
	cr_expect_str_eq(r.reason, "HTTP 404: The model `x` does not exist.");
	/* FastAPI's own error body (transformers serve). */
	struct ctq_http_req f = {.status = 422, .failed = true};
	ctq_strbuf_init(&f.resp);
	ctq_strbuf_append(&f.resp, "{\"detail\":\"Unexpected fields in the request: {'ignore_eos'}\"}");
	ctq_openai_error_reason(&f);
	cr_expect_str_eq(f.reason, "HTTP 422: Unexpected fields in the request: {'ignore_eos'}");
	ctq_http_req_free(&f);
	ctq_http_req_free(&r);
}
