/* A test-only OpenAI-compatible server on 127.0.0.1 (libmicrohttpd, one
 * thread per connection, port chosen by the system) with behaviours picked
 * by the first segment of the request path, so that one server plays every
 * case: http://127.0.0.1:PORT/<mode>/v1 is the base URL of a mode.
 *   normal    a stream of max_tokens token events (" a" each), the first
 *             after first_ms, the next ones gap_ms apart, each event written
 *             in two pieces; then a usage chunk and data: [DONE]
 *   nousage   the same without the usage chunk
 *   short     two tokens fewer than asked, usage saying so, [DONE]
 *   http500   HTTP 500 with OpenAI's error JSON ("mock failure")
 *   errevent  one token, then data: {"error": {"message": "boom"}}, [DONE]
 *   drop      three tokens, then the connection closes (no [DONE])
 *   stall     one token, then nothing for up to 5 s, then a close
 *   echo      non-stream echo + logprobs of a token-id prompt: token i > 0
 *             gets mock_logprob(ids[i-1], ids[i]), token 0 null (as vLLM)
 *   earlydone one token without a finish_reason, then data: [DONE] and a
 *             clean close (llama-cpp-python's server when a request waits)
 *   cut       three tokens without a finish_reason, then a clean close (the
 *             chunked body ends properly; no usage, no [DONE])
 *   nodone    as normal (finish_reason on the last token, usage) but the
 *             stream closes cleanly without [DONE] (transformers serve)
 *   keepalive as normal, each token event preceded by an empty event
 *             (data: and a blank line), a comment, event: / id: / retry:
 *             fields, and its JSON split over two data: lines, with CRLF,
 *             CR and LF line ends mixed
 *   badlp     as echo, the prompt's last token's log-probability replaced
 *             by the text in bad_logprob (a JSON number)
 *   big       a 200 JSON answer of big_bytes bytes (Content-Length given)
 * Servers that are not vLLM (each refusal counted in refused):
 *   llamacpp  llama-cpp-python's server: a token-id prompt is HTTP 500
 *             (pydantic's "Input should be a valid string"); ignore_eos is
 *             taken and ignored; streams have no usage, end on a
 *             finish_reason and [DONE], and every second stream stops
 *             early (two tokens fewer, finish_reason "stop", as at EOS);
 *             echo of a string prompt: its tokens (the test's tokenizer,
 *             tok), text_offset, the table's log-probabilities and one
 *             generated token
 *   tfserve   transformers serve: a field it does not know (ignore_eos)
 *             is 422 {"detail": ...}, a prompt that is not a string 400
 *             {"detail": "prompt must be a string."}; streams end with a
 *             chunk holding the finish_reason and usage, no [DONE]; echo
 *             and logprobs are ignored (no logprobs in the answer)
 *   textecho  refuses token-id prompts (400, OpenAI's error JSON); echo of
 *             a string prompt as llamacpp's without text_offset / tokens
 *             (the client splits by count, with usage)
 *   noeos     refuses ignore_eos (400), takes token ids; streams as normal
 * GET .../v1/models lists one model, "mock-model". Every completions body
 * is checked for the fields the client must send (an echo body: echo,
 * logprobs, max_tokens 0 with token ids or 1 with a string; a stream body:
 * stream, include_usage, and for the vLLM-like modes above ignore_eos); a
 * body that lacks one is answered 400 and counted in bad_bodies. A probe
 * (neither stream nor echo) gets a one-token answer. An echo body sent to
 * a stream mode gets that mode's answer. */
#ifndef CTQ_TESTS_MOCK_OPENAI_H
#define CTQ_TESTS_MOCK_OPENAI_H

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "text/tokenizer.h"

struct mock_openai {
	struct MHD_Daemon *d;
	int port;
	long first_ms, gap_ms;
	volatile int stopping;
	pthread_mutex_t mu;
	int bad_bodies, requests;
	char first_body[8192]; /* the first completions body received */
	char bad_logprob[40];  /* badlp's value, as JSON */
	size_t big_bytes;      /* big's answer size */
	int refused;           /* requests a non-vLLM mode refused as that server does */
	int streams;           /* stream requests of the non-vLLM modes */
	int with_eos, with_ids; /* completions bodies carrying ignore_eos / a token-id prompt */
	const struct ctq_tokenizer *tok; /* borrowed: tokenizes string prompts to echo */
};

/* The fixed table of the echo mode: a log-probability from the previous
 * token and this one, in (-10, 0). */
static inline double mock_logprob(int prev, int tok)
{
	return -0.05 - (double)((prev * 31 + tok * 17) % 997) / 100.0;
}

static inline void mock_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

enum mock_mode {
	MOCK_NORMAL,
	MOCK_NOUSAGE,
	MOCK_SHORT,
	MOCK_HTTP500,
	MOCK_ERREVENT,
	MOCK_DROP,
	MOCK_STALL,
	MOCK_ECHO,
	MOCK_EARLYDONE,
	MOCK_CUT,
	MOCK_NODONE,
	MOCK_KEEPALIVE,
	MOCK_BADLP,
	MOCK_BIG,
	MOCK_LLAMACPP,
	MOCK_TFSERVE,
	MOCK_TEXTECHO,
	MOCK_NOEOS,
	MOCK_UNKNOWN
};

static inline enum mock_mode mock_mode_of(const char *url)
{
	static const char *const names[] = {"normal", "nousage",   "short", "http500",   "errevent",
					    "drop",   "stall",     "echo",  "earlydone", "cut",
					    "nodone", "keepalive", "badlp", "big",       "llamacpp",
					    "tfserve", "textecho", "noeos"};
	for (int i = 0; i < MOCK_UNKNOWN; i++) {
		size_t n = strlen(names[i]);
		if (url[0] == '/' && !strncmp(url + 1, names[i], n) && url[n + 1] == '/')
			return (enum mock_mode)i;
	}
	return MOCK_UNKNOWN;
}

struct mock_stream {
	struct mock_openai *m;
	enum mock_mode mode;
	long n, i; /* tokens to send, sent */
	int stage; /* 0 tokens, 1 usage, 2 done, 3 end */
	char buf[1024];
	size_t len, off;
	bool split; /* the second half of an event is pending */
	bool early; /* llamacpp: this stream stops early at "EOS" */
};

static ssize_t mock_reader(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct mock_stream *s = cls;
	if (s->off < s->len) {
		size_t n = s->len - s->off;
		/* The first half of an event now, the rest a moment later. */
		if (s->split && s->off == 0 && s->mode == MOCK_NORMAL)
			n = s->len / 2;
		else if (s->off)
			mock_sleep_ms(1);
		n = n < max ? n : max;
		memcpy(out, s->buf + s->off, n);
		s->off += n;
		return (ssize_t)n;
	}
	s->off = s->len = 0;
	long limit = s->mode == MOCK_SHORT || s->early             ? s->n - 2
		     : s->mode == MOCK_DROP || s->mode == MOCK_CUT ? 3
		     : s->mode == MOCK_EARLYDONE                   ? 1
								   : s->n;
	/* Whether the last token carries its finish_reason (transformers
	 * serve sends it in a chunk of its own, with usage). */
	const bool finish = s->mode != MOCK_EARLYDONE && s->mode != MOCK_CUT && s->mode != MOCK_TFSERVE;
	if (s->stage == 0 && (s->mode == MOCK_STALL || s->mode == MOCK_ERREVENT) &&
	    (s->i == 1 || s->n == 0)) {
		if (s->mode == MOCK_ERREVENT) {
			s->len = (size_t)snprintf(s->buf, sizeof s->buf,
						  "data: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\n");
			s->stage = 2;
			return mock_reader(cls, pos, out, max);
		}
		for (int k = 0; k < 500 && !s->m->stopping; k++)
			mock_sleep_ms(10);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	if (s->stage == 0 && s->i < limit) {
		mock_sleep_ms(s->i == 0 ? s->m->first_ms : s->m->gap_ms);
		const char *fr = s->i + 1 == limit && finish ? s->early ? "\"stop\"" : "\"length\"" : "null";
		if (s->mode == MOCK_KEEPALIVE)
			s->len = (size_t)snprintf(
				s->buf, sizeof s->buf,
				"data:\r\n\r\n: keep-alive\r"
				"event: completion\nid: %ld\r\nretry: 1000\n"
				"data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\r"
				"data: \"created\":1,\"model\":\"mock-model\",\"choices\":[{\"index\":0,"
				"\"text\":\" a\",\"logprobs\":null,\"finish_reason\":%s}]}\r\n\n",
				s->i, fr);
		else
			s->len = (size_t)snprintf(
				s->buf, sizeof s->buf,
				"data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\","
				"\"created\":1,\"model\":\"mock-model\",\"choices\":[{\"index\":0,"
				"\"text\":\" a\",\"logprobs\":null,\"finish_reason\":%s}]}\n\n",
				fr);
		s->i++;
		s->split = true;
		return mock_reader(cls, pos, out, max);
	}
	s->split = false;
	if (s->stage == 0) {
		if (s->mode == MOCK_DROP)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (s->mode == MOCK_CUT)
			return MHD_CONTENT_READER_END_OF_STREAM;
		s->stage = s->mode == MOCK_NOUSAGE || s->mode == MOCK_EARLYDONE || s->mode == MOCK_LLAMACPP ? 2 : 1;
		if (s->mode == MOCK_TFSERVE) {
			s->len = (size_t)snprintf(
				s->buf, sizeof s->buf,
				"data: {\"id\":\"req-1\",\"object\":\"text_completion\",\"created\":1,"
				"\"model\":\"mock-model\",\"choices\":[{\"text\":\"\",\"index\":0,"
				"\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":%ld,"
				"\"prompt_tokens\":1,\"total_tokens\":%ld}}\n\n",
				limit, limit + 1);
			s->stage = 3;
			return mock_reader(cls, pos, out, max);
		}
	}
	if (s->stage == 1) {
		s->len = (size_t)snprintf(s->buf, sizeof s->buf,
					  "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,"
					  "\"model\":\"mock-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
					  "\"completion_tokens\":%ld,\"total_tokens\":%ld}}\n\n",
					  limit, limit + 1);
		s->stage = s->mode == MOCK_NODONE ? 3 : 2;
		return mock_reader(cls, pos, out, max);
	}
	if (s->stage == 2) {
		s->len = (size_t)snprintf(s->buf, sizeof s->buf, "data: [DONE]\n\n");
		s->stage = 3;
		return mock_reader(cls, pos, out, max);
	}
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static enum MHD_Result mock_send(struct MHD_Connection *c, unsigned code, const char *type,
				 const char *body)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", type);
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* The echo answer: the prompt's ids back with their table log-probs (the
 * last one replaced by bad when bad is non-NULL). */
static enum MHD_Result mock_echo(struct MHD_Connection *c, const cJSON *prompt, const char *bad)
{
	int n = cJSON_GetArraySize(prompt);
	size_t cap = 256 + (size_t)n * 48;
	char *b = malloc(cap);
	size_t len = (size_t)snprintf(b, cap, "{\"id\":\"cmpl-e\",\"object\":\"text_completion\",\"created\":1,"
					      "\"model\":\"mock-model\",\"choices\":[{\"index\":0,\"text\":\"\","
					      "\"logprobs\":{\"token_logprobs\":[");
	for (int i = 0; i < n; i++) {
		int cur = cJSON_GetArrayItem(prompt, i)->valueint;
		if (i == 0)
			len += (size_t)snprintf(b + len, cap - len, "null");
		else if (bad && i == n - 1)
			len += (size_t)snprintf(b + len, cap - len, ",%s", bad);
		else
			len += (size_t)snprintf(b + len, cap - len, ",%.17g",
						mock_logprob(cJSON_GetArrayItem(prompt, i - 1)->valueint, cur));
	}
	snprintf(b + len, cap - len, "]},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%d,"
				     "\"completion_tokens\":0,\"total_tokens\":%d}}", n, n);
	enum MHD_Result r = mock_send(c, 200, "application/json", b);
	free(b);
	return r;
}

/* The echo of a string prompt (llamacpp, textecho): its tokens by m->tok,
 * the table's log-probabilities (the first null), then one generated
 * token; text_offset and tokens when offsets. */
static enum MHD_Result mock_echo_text(struct MHD_Connection *c, const struct mock_openai *m, const char *prompt,
				      bool offsets)
{
	int32_t *ids = NULL;
	size_t n = 0;
	if (!m->tok || ctq_tokenizer_encode(m->tok, prompt, strlen(prompt), false, &ids, &n, NULL) || !n) {
		free(ids);
		return mock_send(c, 500, "application/json", "{\"error\":{\"message\":\"mock: no tokenizer\"}}");
	}
	struct ctq_strbuf b, toks, offs;
	ctq_strbuf_init(&b), ctq_strbuf_init(&toks), ctq_strbuf_init(&offs);
	ctq_strbuf_append(&b, "{\"id\":\"cmpl-t\",\"object\":\"text_completion\",\"created\":1,\"model\":"
			      "\"mock-model\",\"choices\":[{\"index\":0,\"text\":\"\",\"logprobs\":{"
			      "\"token_logprobs\":[null");
	size_t chars = 0;
	for (size_t i = 0; i <= n; i++) {
		/* token n is the generated one: the last prompt token again */
		const int32_t tok = i < n ? ids[i] : ids[n - 1];
		if (i)
			ctq_strbuf_printf(&b, ",%.17g", mock_logprob(i < n ? ids[i - 1] : ids[n - 1], tok));
		char *t = NULL;
		size_t tl = 0;
		ctq_tokenizer_decode(m->tok, &tok, 1, false, &t, &tl, NULL);
		ctq_strbuf_printf(&offs, i ? ",%zu" : "%zu", chars);
		ctq_strbuf_append(&toks, i ? ",\"" : "\"");
		for (size_t k = 0; t && k < tl; k++) {
			chars += ((unsigned char)t[k] & 0xC0) != 0x80;
			if (t[k] == '"' || t[k] == '\\')
				ctq_strbuf_appendn(&toks, "\\", 1);
			if ((unsigned char)t[k] >= 0x20)
				ctq_strbuf_appendn(&toks, t + k, 1);
		}
		ctq_strbuf_append(&toks, "\"");
		free(t);
	}
	ctq_strbuf_append(&b, "]");
	if (offsets)
		ctq_strbuf_printf(&b, ",\"text_offset\":[%s],\"tokens\":[%s]", ctq_strbuf_str(&offs),
				  ctq_strbuf_str(&toks));
	ctq_strbuf_printf(&b, "},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%zu,"
			      "\"completion_tokens\":1,\"total_tokens\":%zu}}", n, n + 1);
	enum MHD_Result r = mock_send(c, 200, "application/json", ctq_strbuf_str(&b));
	ctq_strbuf_free(&b), ctq_strbuf_free(&toks), ctq_strbuf_free(&offs);
	free(ids);
	return r;
}

/* The non-vLLM modes' refusals: NULL when the body is taken, else the
 * answer (*code set). */
static const char *mock_refusal(const cJSON *j, enum mock_mode mode, unsigned *code)
{
	const bool ids = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "prompt"));
	const bool eos = cJSON_GetObjectItemCaseSensitive(j, "ignore_eos") != NULL;
	if (mode == MOCK_TFSERVE && eos)
		return *code = 422, "{\"detail\":\"Unexpected fields in the request: {'ignore_eos'}\"}";
	if (mode == MOCK_TFSERVE && ids)
		return *code = 400, "{\"detail\":\"prompt must be a string.\"}";
	if (mode == MOCK_LLAMACPP && ids)
		return *code = 500, "{\"error\":{\"message\":\"[{'type': 'string_type', 'loc': ('body', "
				    "'prompt', 'str'), 'msg': 'Input should be a valid string'}]\",\"type\":"
				    "\"internal_server_error\",\"param\":null,\"code\":null}}";
	if (mode == MOCK_TEXTECHO && ids)
		return *code = 400, "{\"error\":{\"message\":\"token-id prompts are not supported\",\"type\":"
				    "\"invalid_request_error\",\"code\":400}}";
	if (mode == MOCK_NOEOS && eos)
		return *code = 400, "{\"error\":{\"message\":\"unknown field ignore_eos\",\"type\":"
				    "\"invalid_request_error\",\"code\":400}}";
	return NULL;
}

/* Whether a completions body has what the client must send. */
static bool mock_body_ok(const cJSON *j, enum mock_mode mode)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "prompt");
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "model")) ||
	    !(cJSON_IsArray(p) || cJSON_IsString(p)) ||
	    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "max_tokens")) ||
	    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "temperature")))
		return false;
	const bool echo = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "echo"));
	const bool stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream"));
	const double max_tokens = cJSON_GetObjectItemCaseSensitive(j, "max_tokens")->valuedouble;
	if ((mode == MOCK_ECHO || mode == MOCK_BADLP) && !echo)
		return !stream && max_tokens == 1; /* a probe */
	if (echo)
		return cJSON_GetObjectItemCaseSensitive(j, "logprobs") &&
		       (cJSON_IsArray(p) ? max_tokens == 0 : max_tokens == 1);
	if (!stream)
		return max_tokens == 1; /* a probe */
	const bool vllm_like = mode < MOCK_LLAMACPP;
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(j, "stream_options");
	return (!vllm_like || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ignore_eos"))) &&
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "include_usage"));
}

/* big's body: spaces (the client must refuse it before parsing). */
static ssize_t mock_big_reader(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)cls, (void)pos;
	memset(out, ' ', max);
	return (ssize_t)max;
}

static void mock_free_stream(void *cls)
{
	free(cls);
}

struct mock_conn {
	char *body;
	size_t len;
};

static enum MHD_Result mock_handler(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	(void)version;
	struct mock_openai *m = cls;
	struct mock_conn *mc = *con_cls;
	if (!mc) {
		*con_cls = mc = calloc(1, sizeof *mc);
		return MHD_YES;
	}
	if (*upload_size) {
		mc->body = realloc(mc->body, mc->len + *upload_size + 1);
		memcpy(mc->body + mc->len, upload, *upload_size);
		mc->len += *upload_size;
		mc->body[mc->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	if (!strcmp(method, "GET") && strstr(url, "/v1/models"))
		return mock_send(c, 200, "application/json",
				 "{\"object\":\"list\",\"data\":[{\"id\":\"mock-model\",\"object\":\"model\","
				 "\"created\":1,\"owned_by\":\"ctq\",\"max_model_len\":4096}]}");
	enum mock_mode mode = mock_mode_of(url);
	if (strcmp(method, "POST") || mode == MOCK_UNKNOWN || !strstr(url, "/v1/completions"))
		return mock_send(c, 404, "application/json",
				 "{\"error\":{\"message\":\"no such route\",\"type\":\"NotFoundError\",\"code\":404}}");
	cJSON *j = cJSON_ParseWithLength(mc->body ? mc->body : "", mc->len);
	pthread_mutex_lock(&m->mu);
	m->requests++;
	if (!m->first_body[0] && mc->body)
		snprintf(m->first_body, sizeof m->first_body, "%s", mc->body);
	bool ok = j && mock_body_ok(j, mode);
	m->bad_bodies += !ok;
	unsigned code = 0;
	const char *refusal = ok ? mock_refusal(j, mode, &code) : NULL;
	m->refused += refusal != NULL;
	const bool stream = j && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream"));
	const bool echo = j && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "echo"));
	const bool early = ok && !refusal && stream && mode == MOCK_LLAMACPP && (m->streams % 2);
	m->streams += ok && !refusal && stream && mode >= MOCK_LLAMACPP;
	m->with_eos += j && cJSON_GetObjectItemCaseSensitive(j, "ignore_eos") != NULL;
	m->with_ids += j && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "prompt"));
	pthread_mutex_unlock(&m->mu);
	enum MHD_Result ret;
	const cJSON *prompt = j ? cJSON_GetObjectItemCaseSensitive(j, "prompt") : NULL;
	if (!ok)
		ret = mock_send(c, 400, "application/json",
				"{\"error\":{\"message\":\"a field is missing\",\"type\":\"invalid_request_error\",\"code\":400}}");
	else if (refusal)
		ret = mock_send(c, code, "application/json", refusal);
	else if (mode == MOCK_HTTP500)
		ret = mock_send(c, 500, "application/json",
				"{\"error\":{\"message\":\"mock failure\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}");
	else if (echo && (mode == MOCK_LLAMACPP || mode == MOCK_TEXTECHO))
		ret = mock_echo_text(c, m, prompt->valuestring, mode == MOCK_LLAMACPP);
	else if (!stream && !echo) /* a probe: one token */
		ret = mock_send(c, 200, "application/json",
				"{\"id\":\"cmpl-p\",\"object\":\"text_completion\",\"created\":1,\"model\":"
				"\"mock-model\",\"choices\":[{\"index\":0,\"text\":\" a\",\"logprobs\":null,"
				"\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":1,"
				"\"completion_tokens\":1,\"total_tokens\":2}}");
	else if (echo && mode == MOCK_TFSERVE) /* echo and logprobs ignored */
		ret = mock_send(c, 200, "application/json",
				"{\"id\":\"req-1\",\"object\":\"text_completion\",\"created\":1,\"model\":"
				"\"mock-model\",\"choices\":[{\"text\":\" a\",\"index\":0,\"finish_reason\":"
				"\"length\"}],\"usage\":{\"completion_tokens\":1,\"prompt_tokens\":1,"
				"\"total_tokens\":2}}");
	else if (mode == MOCK_ECHO || mode == MOCK_BADLP)
		ret = mock_echo(c, cJSON_GetObjectItemCaseSensitive(j, "prompt"),
				mode == MOCK_BADLP ? m->bad_logprob : NULL);
	else if (mode == MOCK_BIG) {
		struct MHD_Response *r =
			MHD_create_response_from_callback(m->big_bytes, 1 << 16, mock_big_reader, NULL, NULL);
		MHD_add_response_header(r, "Content-Type", "application/json");
		ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
	} else {
		struct mock_stream *s = calloc(1, sizeof *s);
		s->m = m;
		s->mode = mode;
		s->early = early;
		s->n = (long)cJSON_GetObjectItemCaseSensitive(j, "max_tokens")->valuedouble;
		struct MHD_Response *r =
			MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, mock_reader, s, mock_free_stream);
		MHD_add_response_header(r, "Content-Type", "text/event-stream");
		ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
	}
	cJSON_Delete(j);
	return ret;
}

static void mock_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)c, (void)toe;
	struct mock_conn *mc = *con_cls;
	if (mc) {
		free(mc->body);
		free(mc);
	}
	*con_cls = NULL;
}

/* Starts the server on a free loopback port; 0 on success. */
static inline int mock_openai_start(struct mock_openai *m, long first_ms, long gap_ms)
{
	memset(m, 0, sizeof *m);
	pthread_mutex_init(&m->mu, NULL);
	m->first_ms = first_ms;
	m->gap_ms = gap_ms;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	m->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
				NULL, mock_handler, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
				MHD_OPTION_NOTIFY_COMPLETED, mock_completed, m, MHD_OPTION_END);
	if (!m->d)
		return -1;
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : 0;
	return m->port ? 0 : -1;
}

static inline void mock_openai_stop(struct mock_openai *m)
{
	m->stopping = 1;
	if (m->d)
		MHD_stop_daemon(m->d);
	m->d = NULL;
	pthread_mutex_destroy(&m->mu);
}

/* A loopback port nothing listens on (bound, then closed). */
static inline int mock_closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return ntohs(a.sin_port);
}

#endif
