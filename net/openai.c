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

static void completion_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n,
			    const char *text)
{
	ctq_strbuf_append(out, "{\"model\":");
	json_str(out, model);
	ctq_strbuf_append(out, ",\"prompt\":");
	if (text)
		json_str(out, text);
	else
		json_ids(out, ids, n);
}

void ctq_openai_stream_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n,
			    const char *text, long max_tokens, bool ignore_eos)
{
	completion_body(out, model, ids, n, text);
	ctq_strbuf_printf(out,
			  ",\"max_tokens\":%ld,\"temperature\":0%s,\"stream\":true,"
			  "\"stream_options\":{\"include_usage\":true}}",
			  max_tokens, ignore_eos ? ",\"ignore_eos\":true" : "");
}

void ctq_openai_probe_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n,
			   const char *text, bool ignore_eos)
{
	completion_body(out, model, ids, n, text);
	ctq_strbuf_printf(out, ",\"max_tokens\":1,\"temperature\":0%s}",
			  ignore_eos ? ",\"ignore_eos\":true" : "");
}

void ctq_openai_echo_body(struct ctq_strbuf *out, const char *model, const int32_t *ids, size_t n,
			  const char *text)
{
	completion_body(out, model, ids, n, text);
	ctq_strbuf_printf(out, ",\"max_tokens\":%d,\"echo\":true,\"logprobs\":1,\"temperature\":0}",
			  text ? 1 : 0);
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
		c->stopped = cJSON_IsString(fr) && !strcmp(fr->valuestring, "stop");
	}
	if (cJSON_IsObject(u)) {
		c->usage_completion = count_of(ctq_json_get(u, "completion_tokens"));
		c->usage_prompt = count_of(ctq_json_get(u, "prompt_tokens"));
	}
	cJSON_Delete(root);
	return CTQ_OK;
}

/* *sum = tl[from .. end), each a plausible log-probability. */
static enum ctq_status sum_logprobs(const cJSON *tl, size_t from, size_t end, double *sum, const char *path,
				    struct ctq_error *err)
{
	double s = 0;
	for (size_t i = from; i < end; i++) {
		const cJSON *v = cJSON_GetArrayItem(tl, (int)i);
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
			return ctq_error_set(
				err, CTQ_ERR_PARSE, path,
				"choices[0].logprobs.token_logprobs[%zu] is %s; expected a finite number", i,
				cJSON_IsNumber(v) ? "not finite" : ctq_json_type_name(v));
		if (v->valuedouble > CTQ_OPENAI_LOGPROB_MAX || v->valuedouble < CTQ_OPENAI_LOGPROB_MIN)
			return ctq_error_set(
				err, CTQ_ERR_PARSE, path,
				"choices[0].logprobs.token_logprobs[%zu] is %.17g: not a "
				"log-probability (expected one in [%g, %g]: <= 0 but for rounding, "
				"and no lower than vLLM's -9999 for -inf)",
				i, v->valuedouble, CTQ_OPENAI_LOGPROB_MIN, CTQ_OPENAI_LOGPROB_MAX);
		s += v->valuedouble;
	}
	*sum = s;
	return CTQ_OK;
}

static const cJSON *choice_logprobs(const cJSON *root)
{
	const cJSON *ch = ctq_json_get(root, "choices");
	return ctq_json_get(cJSON_IsArray(ch) ? cJSON_GetArrayItem(ch, 0) : NULL, "logprobs");
}

enum ctq_status ctq_openai_echo_logprobs(const char *body, size_t len, size_t prompt_n, size_t from,
					 size_t n, double *sum, const char *path, struct ctq_error *err)
{
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_parse(body, len, path, NULL, &root, err);
	if (st)
		return st;
	const cJSON *tl = ctq_json_get(choice_logprobs(root), "token_logprobs");
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
	if (!st)
		st = sum_logprobs(tl, from, from + n, sum, path, err);
	cJSON_Delete(root);
	return st;
}

/* Whether offs (n offsets) is a non-decreasing array of counts. */
static bool offsets_ok(const cJSON *offs, size_t n)
{
	double prev = 0;
	for (size_t i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetArrayItem(offs, (int)i);
		if (!cJSON_IsNumber(v) || v->valuedouble < prev || v->valuedouble > 1e15)
			return false;
		prev = v->valuedouble;
	}
	return true;
}

/* The echoed range [from, end) of tokens from the one at offset ctx to the
 * last before offset prompt; false when no token starts at ctx. */
static bool split_by_offset(const cJSON *offs, size_t n, size_t ctx, size_t prompt, size_t *from, size_t *end)
{
	size_t k = 0;
	while (k < n && cJSON_GetArrayItem(offs, (int)k)->valuedouble < (double)ctx)
		k++;
	if (k == n || cJSON_GetArrayItem(offs, (int)k)->valuedouble != (double)ctx)
		return false;
	size_t e = k;
	while (e < n && cJSON_GetArrayItem(offs, (int)e)->valuedouble < (double)prompt)
		e++;
	*from = k, *end = e;
	return e > k;
}

enum ctq_status ctq_openai_echo_text_logprobs(const char *body, size_t len, const struct ctq_openai_text_split *sp,
					      double *sum, size_t *n_scored, const char *path,
					      struct ctq_error *err)
{
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_parse(body, len, path, NULL, &root, err);
	if (st)
		return st;
	const cJSON *lp = choice_logprobs(root);
	const cJSON *tl = ctq_json_get(lp, "token_logprobs"), *offs = ctq_json_get(lp, "text_offset");
	const size_t have = cJSON_IsArray(tl) ? (size_t)cJSON_GetArraySize(tl) : 0;
	const long gen = count_of(ctq_json_get(ctq_json_get(root, "usage"), "completion_tokens"));
	size_t from = 0, end = 0;
	if (!have) {
		st = ctq_error_set(err, CTQ_ERR_PARSE, path,
				   "the server does not echo prompt log-probabilities: the answer to echo with "
				   "logprobs has no choices[0].logprobs.token_logprobs%s (lm-eval's "
				   "local-completions needs them)",
				   cJSON_IsArray(tl) ? " entries" : " array");
	} else if (cJSON_IsArray(offs) && (size_t)cJSON_GetArraySize(offs) == have) {
		if (!offsets_ok(offs, have))
			st = ctq_error_set(err, CTQ_ERR_PARSE, path,
					   "choices[0].logprobs.text_offset is not a non-decreasing list of offsets");
		else if (!split_by_offset(offs, have, sp->ctx_chars, sp->prompt_chars, &from, &end) &&
			 !split_by_offset(offs, have, sp->ctx_bytes, sp->prompt_bytes, &from, &end))
			st = ctq_error_set(
				err, CTQ_ERR_PARSE, path,
				"no echoed token starts at the context's end (character %zu of %zu, by "
				"choices[0].logprobs.text_offset): the server's tokens do not split at the "
				"context, or it does not echo the prompt, so the continuation's "
				"log-probabilities cannot be checked",
				sp->ctx_chars, sp->prompt_chars);
	} else if (gen < 0 || (size_t)gen > have) {
		st = ctq_error_set(err, CTQ_ERR_PARSE, path,
				   "the answer has neither choices[0].logprobs.text_offset nor a "
				   "usage.completion_tokens that tells the echoed prompt from generated "
				   "tokens: the split at the context cannot be checked");
	} else if (have - (size_t)gen != sp->n_ctx + sp->n_cont) {
		st = ctq_error_set(err, CTQ_ERR_PARSE, path,
				   "the server echoed %zu prompt tokens where ctq's tokenizer makes %zu (context) "
				   "+ %zu (continuation), and gave no text_offset: its tokenization differs, or "
				   "it does not echo the prompt, so the split at the context cannot be checked",
				   have - (size_t)gen, sp->n_ctx, sp->n_cont);
	} else {
		from = sp->n_ctx, end = sp->n_ctx + sp->n_cont;
	}
	if (!st)
		st = sum_logprobs(tl, from, end, sum, path, err);
	if (!st)
		*n_scored = end - from;
	cJSON_Delete(root);
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
	if (!e) /* FastAPI's own errors (transformers serve): {"detail": "..."} */
		m = ctq_json_get(root, "detail");
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
