/* ctq OpenAI-compatible completions API, client side (see openai.h). */
#include "net/openai.h"
#include "core/json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void ctq_openai_endpoint(const char *base, const char *name, char *out, size_t cap)
{
	size_t n = strlen(base), k = strlen(name);
	while (n && base[n - 1] == '/')
		n--;
	if (n > k && base[n - k - 1] == '/' && !memcmp(base + n - k, name, k))
		snprintf(out, cap, "%.*s", (int)n, base);
	else
		snprintf(out, cap, "%.*s/%s", (int)n, base, name);
}

/* s as a JSON string: quotes, backslashes and control bytes escaped, UTF-8
 * passed through. */
static void json_str(struct ctq_strbuf *out, const char *s)
{
	ctq_strbuf_appendn(out, "\"", 1);
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			ctq_strbuf_appendn(out, e, 2);
		} else if (c < 0x20) {
			ctq_strbuf_printf(out, "\\u%04x", c);
		} else {
			ctq_strbuf_appendn(out, p, 1);
		}
	}
	ctq_strbuf_appendn(out, "\"", 1);
}

static void json_ids(struct ctq_strbuf *out, const int32_t *ids, size_t n)
{
	ctq_strbuf_append(out, "[");
	for (size_t i = 0; i < n; i++)
		ctq_strbuf_printf(out, i ? ",%d" : "%d", ids[i]);
	ctq_strbuf_append(out, "]");
}

void ctq_openai_stream_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n,
			    const char *text, long max_tokens)
{
	ctq_strbuf_append(out, "{\"model\":");
	json_str(out, model);
	ctq_strbuf_append(out, ",\"prompt\":");
	if (text)
		json_str(out, text);
	else
		json_ids(out, ids, n);
	ctq_strbuf_printf(out,
			  ",\"max_tokens\":%ld,\"temperature\":0,\"ignore_eos\":true,\"stream\":true,"
			  "\"stream_options\":{\"include_usage\":true}}",
			  max_tokens);
}

void ctq_openai_echo_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n)
{
	ctq_strbuf_append(out, "{\"model\":");
	json_str(out, model);
	ctq_strbuf_append(out, ",\"prompt\":");
	json_ids(out, ids, n);
	ctq_strbuf_append(out, ",\"max_tokens\":0,\"echo\":true,\"logprobs\":1,\"temperature\":0}");
}

static long count_of(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e15 ? (long)v->valuedouble
										 : -1;
}

enum ctq_status ctq_openai_chunk_parse(const char *data, size_t len, struct ctq_openai_chunk *c,
				       struct ctq_strbuf *text, struct ctq_error *err)
{
	memset(c, 0, sizeof *c);
	c->usage_completion = c->usage_prompt = -1;
	while (len && (data[len - 1] == ' ' || data[len - 1] == '\n' || data[len - 1] == '\r' ||
		       data[len - 1] == '\t'))
		len--;
	if (!len) {
		c->empty = true;
		return CTQ_OK;
	}
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		c->done = true;
		return CTQ_OK;
	}
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_parse(data, len, "stream chunk", NULL, &root, err);
	if (st)
		return st;
	const cJSON *e = ctq_json_get(root, "error");
	if (e) {
		const cJSON *m = ctq_json_get(e, "message");
		c->is_error = true;
		snprintf(c->error, sizeof c->error, "%s",
			 cJSON_IsString(m) ? m->valuestring : cJSON_IsString(e) ? e->valuestring : "error");
		cJSON_Delete(root);
		return CTQ_OK;
	}
	const cJSON *ch = ctq_json_get(root, "choices"), *u = ctq_json_get(root, "usage");
	if ((ch && !cJSON_IsArray(ch) && !cJSON_IsNull(ch)) || (u && !cJSON_IsObject(u) && !cJSON_IsNull(u))) {
		cJSON_Delete(root);
		return ctq_error_set(err, CTQ_ERR_PARSE, "stream chunk",
				     "choices must be an array and usage an object");
	}
	const cJSON *c0 = cJSON_IsArray(ch) ? cJSON_GetArrayItem(ch, 0) : NULL;
	if (c0) {
		c->has_choice = true;
		const cJSON *t = ctq_json_get(c0, "text");
		if (!t)
			t = ctq_json_get(ctq_json_get(c0, "delta"), "content");
		if (text && cJSON_IsString(t))
			ctq_strbuf_append(text, t->valuestring);
		const cJSON *fr = ctq_json_get(c0, "finish_reason");
		c->finished = fr && !cJSON_IsNull(fr);
	}
	if (cJSON_IsObject(u)) {
		c->usage_completion = count_of(ctq_json_get(u, "completion_tokens"));
		c->usage_prompt = count_of(ctq_json_get(u, "prompt_tokens"));
	}
	cJSON_Delete(root);
	return CTQ_OK;
}

enum ctq_status ctq_openai_echo_logprobs(const char *body, size_t len, size_t prompt_n, size_t from,
					 size_t n, double *sum, const char *path, struct ctq_error *err)
{
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_parse(body, len, path, NULL, &root, err);
	if (st)
		return st;
	const cJSON *ch = ctq_json_get(root, "choices");
	const cJSON *tl = ctq_json_get(ctq_json_get(cJSON_IsArray(ch) ? cJSON_GetArrayItem(ch, 0) : NULL,
						    "logprobs"),
				       "token_logprobs");
	size_t have = cJSON_IsArray(tl) ? (size_t)cJSON_GetArraySize(tl) : 0;
	if (!cJSON_IsArray(tl))
		st = ctq_error_set(err, CTQ_ERR_PARSE, path,
				   "the answer has no choices[0].logprobs.token_logprobs array (does the "
				   "server support echo with logprobs?)");
	else if (have < prompt_n || have < from + n)
		st = ctq_error_set(err, CTQ_ERR_PARSE, path,
				   "choices[0].logprobs.token_logprobs has %zu entries for a prompt of %zu "
				   "tokens (the prompt was not echoed)",
				   have, prompt_n);
	double s = 0;
	for (size_t i = from; i < from + n && !st; i++) {
		const cJSON *v = cJSON_GetArrayItem(tl, (int)i);
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
			st = ctq_error_set(
				err, CTQ_ERR_PARSE, path,
				"choices[0].logprobs.token_logprobs[%zu] is %s; expected a finite number", i,
				cJSON_IsNumber(v) ? "not finite" : ctq_json_type_name(v));
		else if (v->valuedouble > CTQ_OPENAI_LOGPROB_MAX || v->valuedouble < CTQ_OPENAI_LOGPROB_MIN)
			st = ctq_error_set(
				err, CTQ_ERR_PARSE, path,
				"choices[0].logprobs.token_logprobs[%zu] is %.17g: not a "
				"log-probability (expected one in [%g, %g]: <= 0 but for rounding, "
				"and no lower than vLLM's -9999 for -inf)",
				i, v->valuedouble, CTQ_OPENAI_LOGPROB_MIN, CTQ_OPENAI_LOGPROB_MAX);
		else
			s += v->valuedouble;
	}
	cJSON_Delete(root);
	if (!st)
		*sum = s;
	return st;
}

void ctq_openai_error_reason(struct ctq_http_req *r)
{
	if (r->status < 400 || !r->resp.len)
		return;
	cJSON *root = NULL;
	if (ctq_json_parse(r->resp.data, r->resp.len, "error", NULL, &root, NULL))
		return;
	const cJSON *e = ctq_json_get(root, "error");
	const cJSON *m = cJSON_IsObject(e) ? ctq_json_get(e, "message") : e;
	if (cJSON_IsString(m))
		snprintf(r->reason, sizeof r->reason, "HTTP %ld: %s", r->status, m->valuestring);
	for (char *c = r->reason; *c; c++) /* one line, as ctq_http_req_fail's */
		if ((unsigned char)*c < 0x20)
			*c = ' ';
	cJSON_Delete(root);
}

enum ctq_status ctq_openai_models(const char *base, long timeout_ms, char *name, size_t cap,
				  long *max_model_len, struct ctq_error *err)
{
	char url[2048];
	ctq_openai_endpoint(base, "models", url, sizeof url);
	struct ctq_http_req r = {.url = url, .timeout_ms = timeout_ms};
	enum ctq_status st = ctq_http_fetch(&r, err);
	if (!st && r.failed) {
		ctq_openai_error_reason(&r);
		st = ctq_error_set(err, CTQ_ERR_ENV, url, "the server gave no model list: %s", r.reason);
	}
	cJSON *root = NULL;
	if (!st)
		st = ctq_json_parse(r.resp.data, r.resp.len, url, NULL, &root, err);
	const cJSON *d = ctq_json_get(root, "data");
	const cJSON *m0 = cJSON_IsArray(d) ? cJSON_GetArrayItem(d, 0) : NULL;
	const cJSON *id = ctq_json_get(m0, "id");
	if (!st && !cJSON_IsString(id))
		st = ctq_error_set(err, CTQ_ERR_IO, url, "lists no model (data[0].id); name it with --served-name");
	if (!st) {
		snprintf(name, cap, "%s", id->valuestring);
		long ml = count_of(ctq_json_get(m0, "max_model_len"));
		if (max_model_len)
			*max_model_len = ml > 0 ? ml : 0;
	}
	cJSON_Delete(root);
	ctq_http_req_free(&r);
	return st;
}
