/* ctq serve's OpenAI layer (serve/openai.h). */
#include "serve/openai.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/utf8.h"
#include "serve/detok.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ctq_oai_fail(struct ctq_oai_error *e, int http, const char *param, const char *fmt, ...)
{
	e->http = http;
	e->type = http == 404 ? "NotFoundError" : http == 503 ? "ServiceUnavailableError"
			      : http >= 500 ? "InternalServerError" : "invalid_request_error";
	snprintf(e->param, sizeof e->param, "%s", param ? param : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	return false;
}

char *ctq_oai_error_json(const struct ctq_oai_error *e)
{
	cJSON *root = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(o, "message", e->message);
	cJSON_AddStringToObject(o, "type", e->type ? e->type : "invalid_request_error");
	if (e->param[0])
		cJSON_AddStringToObject(o, "param", e->param);
	else
		cJSON_AddNullToObject(o, "param");
	cJSON_AddNumberToObject(o, "code", e->http);
	char *s = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return s;
}

/* ---- request fields ------------------------------------------------------------- */

static bool present(const cJSON *v)
{
	return v && !cJSON_IsNull(v);
}

/* A number within [lo, hi] (integral when integral); absent or null keeps *out. */
static bool num_field(const cJSON *root, const char *key, double lo, double hi, bool integral,
		      double *out, bool *set, struct ctq_oai_error *e)
{
	const cJSON *v = ctq_json_get(root, key);
	if (!present(v))
		return true;
	double x = v->valuedouble;
	if (!cJSON_IsNumber(v) || !isfinite(x) || x < lo || x > hi || (integral && x != floor(x)))
		return ctq_oai_fail(e, 400, key, "%s must be %s in [%g, %g]; got %s", key,
				    integral ? "an integer" : "a number", lo, hi,
				    cJSON_IsNumber(v) ? "a value out of range" : ctq_json_type_name(v));
	*out = x;
	if (set)
		*set = true;
	return true;
}

static bool bool_field(const cJSON *root, const char *key, bool *out, struct ctq_oai_error *e)
{
	const cJSON *v = ctq_json_get(root, key);
	if (!present(v))
		return true;
	if (!cJSON_IsBool(v))
		return ctq_oai_fail(e, 400, key, "%s must be a boolean; got %s", key, ctq_json_type_name(v));
	*out = cJSON_IsTrue(v);
	return true;
}

/* Fields ctq does not implement: refused unless absent or at their neutral value. */
static bool unsupported(const cJSON *root, struct ctq_oai_error *e)
{
	static const struct {
		const char *key;
		double neutral;
	} nums[] = {{"presence_penalty", 0}, {"frequency_penalty", 0}, {"repetition_penalty", 1},
		    {"best_of", 1}, {"min_p", 0}, {"min_tokens", 0}};
	for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
		const cJSON *v = ctq_json_get(root, nums[i].key);
		if (present(v) && (!cJSON_IsNumber(v) || v->valuedouble != nums[i].neutral))
			return ctq_oai_fail(e, 400, nums[i].key, "%s is not supported by ctq serve (only %g)",
					    nums[i].key, nums[i].neutral);
	}
	static const char *const absent[] = {"suffix", "tools", "functions", "logit_bias",
					     "guided_json", "guided_regex", "guided_choice", "tool_choice"};
	for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) {
		const cJSON *v = ctq_json_get(root, absent[i]);
		if (present(v) && !((cJSON_IsArray(v) || cJSON_IsObject(v)) && !v->child))
			return ctq_oai_fail(e, 400, absent[i], "%s is not supported by ctq serve", absent[i]);
	}
	const cJSON *rf = ctq_json_get(root, "response_format");
	const cJSON *rft = ctq_json_get(rf, "type");
	if (present(rf) && !(cJSON_IsString(rft) && !strcmp(rft->valuestring, "text")))
		return ctq_oai_fail(e, 400, "response_format", "response_format other than text is not supported by ctq serve");
	return true;
}

static bool stop_field(struct ctq_oai_request *r, struct ctq_oai_error *e)
{
	const cJSON *v = ctq_json_get(r->root, "stop");
	if (!present(v))
		return true;
	if (cJSON_IsString(v)) {
		if (!v->valuestring[0])
			return ctq_oai_fail(e, 400, "stop", "stop must not be an empty string");
		r->stop[r->n_stop++] = v->valuestring;
		return true;
	}
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > CTQ_OAI_MAX_STOP)
		return ctq_oai_fail(e, 400, "stop", "stop must be a string or an array of at most %d strings",
				    CTQ_OAI_MAX_STOP);
	for (const cJSON *s = v->child; s; s = s->next) {
		if (!cJSON_IsString(s) || !s->valuestring[0])
			return ctq_oai_fail(e, 400, "stop", "stop must hold non-empty strings");
		r->stop[r->n_stop++] = s->valuestring;
	}
	return true;
}

static bool stop_ids_field(struct ctq_oai_request *r, struct ctq_oai_error *e)
{
	const cJSON *ids = ctq_json_get(r->root, "stop_token_ids");
	if (!present(ids))
		return true;
	if (!cJSON_IsArray(ids) || cJSON_GetArraySize(ids) > CTQ_ENGINE_MAX_STOP_IDS)
		return ctq_oai_fail(e, 400, "stop_token_ids", "stop_token_ids must be an array of at most %d token ids",
				    CTQ_ENGINE_MAX_STOP_IDS);
	for (const cJSON *s = ids->child; s; s = s->next) {
		if (!cJSON_IsNumber(s) || s->valuedouble != floor(s->valuedouble) || s->valuedouble < 0 ||
		    s->valuedouble > 0x7fffffff)
			return ctq_oai_fail(e, 400, "stop_token_ids", "stop_token_ids must hold token ids");
		r->p.stop_ids[r->p.n_stop_ids++] = (int32_t)s->valuedouble;
	}
	return true;
}

/* A token-id array into prompt p (ids from the arena). */
static bool id_array(struct ctq_oai_request *r, struct ctq_oai_prompt *p, const cJSON *a,
		     struct ctq_oai_error *e)
{
	int n = cJSON_GetArraySize(a);
	p->ids = ctq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *p->ids);
	if (!p->ids)
		return ctq_oai_fail(e, 500, NULL, "out of memory");
	for (const cJSON *x = a->child; x; x = x->next) {
		if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || x->valuedouble < 0 ||
		    x->valuedouble > 0x7fffffff)
			return ctq_oai_fail(e, 400, "prompt", "prompt must be a string or an array of token ids (integers >= 0)");
		p->ids[p->n_ids++] = (int32_t)x->valuedouble;
	}
	if (!n)
		return ctq_oai_fail(e, 400, "prompt", "prompt is empty");
	return true;
}

/* One prompt: a non-empty string or an id array. */
static bool one_prompt(struct ctq_oai_request *r, struct ctq_oai_prompt *p, const cJSON *v,
		       struct ctq_oai_error *e)
{
	if (cJSON_IsString(v)) {
		if (!v->valuestring[0])
			return ctq_oai_fail(e, 400, "prompt", "prompt is empty");
		p->text = v->valuestring;
		return true;
	}
	if (cJSON_IsArray(v))
		return id_array(r, p, v, e);
	return ctq_oai_fail(e, 400, "prompt", "prompt must be a string or an array of token ids; got %s",
			    ctq_json_type_name(v));
}

/* A string, an id array, or (as vLLM) a list of strings or of id lists:
 * one choice each, in order. */
static bool prompt_field(struct ctq_oai_request *r, struct ctq_oai_error *e)
{
	const cJSON *v = ctq_json_get(r->root, "prompt");
	if (!present(v))
		return ctq_oai_fail(e, 400, "prompt", "prompt is required");
	const bool list = cJSON_IsArray(v) && v->child &&
			  (cJSON_IsString(v->child) || cJSON_IsArray(v->child));
	int n = list ? cJSON_GetArraySize(v) : 1;
	if (n > CTQ_OAI_MAX_PROMPTS)
		return ctq_oai_fail(e, 400, "prompt", "ctq serve takes at most %d prompts a request; got %d",
				    CTQ_OAI_MAX_PROMPTS, n);
	r->prompts = ctq_arena_calloc(&r->arena, (size_t)n, sizeof *r->prompts);
	if (!r->prompts)
		return ctq_oai_fail(e, 500, NULL, "out of memory");
	if (!list) {
		r->n_prompts = 1;
		return one_prompt(r, &r->prompts[0], v, e);
	}
	for (const cJSON *x = v->child; x; x = x->next) {
		if (cJSON_IsString(x) != cJSON_IsString(v->child) || !(cJSON_IsString(x) || cJSON_IsArray(x)))
			return ctq_oai_fail(e, 400, "prompt", "a list of prompts holds strings or token-id lists, not both (prompt %d)",
					    r->n_prompts);
		if (!one_prompt(r, &r->prompts[r->n_prompts++], x, e))
			return false;
	}
	return true;
}

/* A message's content: a string, or text parts concatenated. */
static bool content_of(struct ctq_oai_request *r, const cJSON *c, size_t i, const char **out,
		       struct ctq_oai_error *e)
{
	if (cJSON_IsString(c)) {
		*out = c->valuestring;
		return true;
	}
	if (!present(c)) {
		*out = "";
		return true;
	}
	if (!cJSON_IsArray(c))
		return ctq_oai_fail(e, 400, "messages", "messages[%zu].content must be a string or text parts", i);
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	for (const cJSON *p = c->child; p; p = p->next) {
		const cJSON *type = ctq_json_get(p, "type"), *text = ctq_json_get(p, "text");
		if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text)) {
			ctq_strbuf_free(&sb);
			return ctq_oai_fail(e, 400, "messages", "messages[%zu].content: only text parts are supported", i);
		}
		ctq_strbuf_append(&sb, text->valuestring);
	}
	*out = ctq_arena_strdup(&r->arena, ctq_strbuf_str(&sb));
	bool oom = sb.oom || !*out;
	ctq_strbuf_free(&sb);
	return oom ? ctq_oai_fail(e, 500, NULL, "out of memory") : true;
}

static bool messages_field(struct ctq_oai_request *r, struct ctq_oai_error *e)
{
	const cJSON *v = ctq_json_get(r->root, "messages");
	if (!cJSON_IsArray(v) || !v->child)
		return ctq_oai_fail(e, 400, "messages", "messages must be a non-empty array");
	size_t n = (size_t)cJSON_GetArraySize(v), i = 0;
	r->msgs = ctq_arena_calloc(&r->arena, n, sizeof *r->msgs);
	if (!r->msgs)
		return ctq_oai_fail(e, 500, NULL, "out of memory");
	for (const cJSON *m = v->child; m; m = m->next, i++) {
		const cJSON *role = ctq_json_get(m, "role");
		if (!cJSON_IsString(role))
			return ctq_oai_fail(e, 400, "messages", "messages[%zu].role must be a string", i);
		r->msgs[i].role = role->valuestring;
		if (!content_of(r, ctq_json_get(m, "content"), i, &r->msgs[i].content, e))
			return false;
	}
	r->n_msgs = n;
	return true;
}

/* logprobs / echo (completions) or logprobs + top_logprobs (chat). */
static bool logprob_fields(struct ctq_oai_request *r, struct ctq_oai_error *e)
{
	double x = -1;
	if (r->kind == CTQ_OAI_COMPLETION) {
		if (!num_field(r->root, "logprobs", 0, CTQ_ENGINE_MAX_TOP, true, &x, NULL, e) ||
		    !bool_field(r->root, "echo", &r->echo, e))
			return false;
		r->p.logprobs = (int)x;
		r->p.echo_logprobs = r->echo && r->p.logprobs >= 0;
		return true;
	}
	if (ctq_json_get(r->root, "echo") && cJSON_IsTrue(ctq_json_get(r->root, "echo")))
		return ctq_oai_fail(e, 400, "echo", "echo is a completions field");
	if (!bool_field(r->root, "logprobs", &r->chat_logprobs, e) ||
	    !num_field(r->root, "top_logprobs", 0, CTQ_ENGINE_MAX_TOP, true, &x, NULL, e))
		return false;
	if (x >= 0 && !r->chat_logprobs)
		return ctq_oai_fail(e, 400, "top_logprobs", "top_logprobs needs logprobs: true");
	r->p.logprobs = r->chat_logprobs ? (x >= 0 ? (int)x : 0) : -1;
	return true;
}

static bool sampling_fields(struct ctq_oai_request *r, struct ctq_oai_error *e)
{
	double mt = 16, n = 1, k = -1, seed = 0;
	const char *mt_key = r->kind == CTQ_OAI_CHAT && present(ctq_json_get(r->root, "max_completion_tokens"))
				     ? "max_completion_tokens" : "max_tokens";
	r->p.temperature = 0;
	r->p.top_p = 1;
	if (!num_field(r->root, mt_key, 0, 1 << 30, true, &mt, &r->max_tokens_set, e) ||
	    !num_field(r->root, "temperature", 0, 1e6, false, &r->p.temperature, NULL, e) ||
	    !num_field(r->root, "top_p", 0, 1, false, &r->p.top_p, NULL, e) ||
	    !num_field(r->root, "top_k", -1, 1 << 30, true, &k, NULL, e) ||
	    !num_field(r->root, "seed", -9007199254740992.0, 9007199254740992.0, true, &seed,
		       &r->p.seeded, e) ||
	    !num_field(r->root, "n", 1, 1 << 20, true, &n, NULL, e) ||
	    !bool_field(r->root, "ignore_eos", &r->p.ignore_eos, e))
		return false;
	if (n != 1)
		return ctq_oai_fail(e, 400, "n", "ctq serve returns one choice a request (n = 1); got n = %g", n);
	if (r->p.top_p <= 0)
		return ctq_oai_fail(e, 400, "top_p", "top_p must be in (0, 1]");
	if (mt == 0 && r->kind == CTQ_OAI_CHAT)
		return ctq_oai_fail(e, 400, mt_key, "%s must be at least 1", mt_key);
	r->p.max_new = (int64_t)mt;
	r->p.top_k = (int64_t)k;
	r->p.seed = (uint64_t)(int64_t)seed;
	return true;
}

static bool stream_fields(struct ctq_oai_request *r, struct ctq_oai_error *e)
{
	if (!bool_field(r->root, "stream", &r->stream, e))
		return false;
	const cJSON *so = ctq_json_get(r->root, "stream_options");
	if (!present(so))
		return true;
	if (!cJSON_IsObject(so))
		return ctq_oai_fail(e, 400, "stream_options", "stream_options must be an object");
	return bool_field(so, "include_usage", &r->include_usage, e);
}

bool ctq_oai_scan_values(const char *body, size_t len, int64_t max_elems, int64_t max_values,
			 int64_t *n, bool *array)
{
	/* Element counts of the open arrays (-1: an object); deeper than the
	 * stack, arrays go uncounted here and the parser's depth limit refuses. */
	int64_t stack[128];
	int depth = 0;
	int64_t values = 0;
	bool in_string = false, pending = false; /* a value begun in the innermost container */
	for (size_t i = 0; i < len; i++) {
		const char c = body[i];
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':')
			continue;
		if (c == ']' || c == '}') {
			if (depth > 0)
				depth--;
			pending = true; /* the container is a value of its parent */
			continue;
		}
		if (c == ',') {
			pending = false;
			continue;
		}
		/* c begins a value (or is junk the parser will refuse) */
		if (!pending) {
			pending = true;
			if (++values > max_values)
				goto over_values;
			if (depth > 0 && depth <= (int)(sizeof stack / sizeof *stack) && stack[depth - 1] >= 0 &&
			    ++stack[depth - 1] > max_elems) {
				if (n)
					*n = stack[depth - 1];
				if (array)
					*array = true;
				return false;
			}
		}
		if (c == '"') {
			in_string = true;
		} else if (c == '[' || c == '{') {
			if (depth < (int)(sizeof stack / sizeof *stack))
				stack[depth] = c == '[' ? 0 : -1;
			depth++;
			pending = false;
		}
	}
	if (n)
		*n = values;
	return true;
over_values:
	if (n)
		*n = values;
	if (array)
		*array = false;
	return false;
}

bool ctq_oai_request_parse(struct ctq_oai_request *r, enum ctq_oai_kind kind, const char *body,
			   size_t len, const char *model, int64_t max_len, struct ctq_oai_error *e)
{
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->p.logprobs = -1;
	ctq_arena_init(&r->arena);
	struct ctq_error err = {0};
	size_t bad = 0;
	if (!ctq_utf8_valid(body, len, &bad))
		return ctq_oai_fail(e, 400, NULL, "the body is not valid UTF-8 (byte %zu)", bad);
	/* Bounded before materialised: cJSON spends ~100 bytes a value. */
	int64_t count = 0;
	bool array = false;
	const int64_t max_values = CTQ_OAI_VALUES_PER_LEN * max_len + CTQ_OAI_VALUES_SLACK;
	if (!ctq_oai_scan_values(body, len, max_len, max_values, &count, &array))
		return array ? ctq_oai_fail(e, 413, kind == CTQ_OAI_CHAT ? "messages" : "prompt",
					    "an array of more than %lld elements: a prompt holds at most %lld tokens (--max-len)",
					    (long long)max_len, (long long)max_len)
			     : ctq_oai_fail(e, 413, NULL,
					    "the body holds more than %lld JSON values (%d per --max-len position, plus %d)",
					    (long long)max_values, CTQ_OAI_VALUES_PER_LEN, CTQ_OAI_VALUES_SLACK);
	/* A prompt string may be as long as the body. */
	struct ctq_json_limits lim = ctq_json_default_limits;
	lim.max_string = len > lim.max_string ? len : lim.max_string;
	if (ctq_json_parse(body, len, "request", &lim, &r->root, &err))
		return ctq_oai_fail(e, 400, NULL, "the body is not valid JSON: %s at %s", err.message, err.path);
	if (!cJSON_IsObject(r->root))
		return ctq_oai_fail(e, 400, NULL, "the body must be a JSON object");
	const cJSON *m = ctq_json_get(r->root, "model");
	if (present(m) && !cJSON_IsString(m))
		return ctq_oai_fail(e, 400, "model", "model must be a string");
	if (present(m) && strcmp(m->valuestring, model))
		return ctq_oai_fail(e, 404, "model", "The model `%s` does not exist (this server serves `%s`).",
				    m->valuestring, model);
	if (!unsupported(r->root, e) || !sampling_fields(r, e) || !stream_fields(r, e) ||
	    !stop_field(r, e) || !stop_ids_field(r, e) || !logprob_fields(r, e))
		return false;
	return kind == CTQ_OAI_COMPLETION ? prompt_field(r, e) : messages_field(r, e);
}

void ctq_oai_request_free(struct ctq_oai_request *r)
{
	cJSON_Delete(r->root);
	ctq_arena_free(&r->arena);
	memset(r, 0, sizeof *r);
}

/* ---- log-probabilities ------------------------------------------------------------ */

void ctq_oai_logprobs_init(struct ctq_oai_logprobs *l, bool chat)
{
	memset(l, 0, sizeof *l);
	l->chat = chat;
	ctq_strbuf_init(&l->piece);
	l->obj = cJSON_CreateObject();
	if (chat) {
		l->tokens = cJSON_AddArrayToObject(l->obj, "content");
	} else {
		l->tokens = cJSON_AddArrayToObject(l->obj, "tokens");
		l->values = cJSON_AddArrayToObject(l->obj, "token_logprobs");
		l->tops = cJSON_AddArrayToObject(l->obj, "top_logprobs");
		l->offsets = cJSON_AddArrayToObject(l->obj, "text_offset");
	}
}

static cJSON *lp_number(double v)
{
	return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(isinf(v) ? -9999.0 : v);
}

static cJSON *bytes_of(const char *s)
{
	cJSON *a = cJSON_CreateArray();
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(*c));
	return a;
}

static void add_chat(struct ctq_oai_logprobs *l, const struct ctq_tokenizer *tok,
		     const struct ctq_engine_token *t)
{
	cJSON *o = cJSON_CreateObject(), *tops;
	ctq_detok_piece(tok, t->id, &l->piece);
	cJSON_AddStringToObject(o, "token", ctq_strbuf_str(&l->piece));
	cJSON_AddItemToObject(o, "logprob", lp_number(t->logprob));
	cJSON_AddItemToObject(o, "bytes", bytes_of(ctq_strbuf_str(&l->piece)));
	tops = cJSON_AddArrayToObject(o, "top_logprobs");
	for (int k = 0; k < t->n_top; k++) {
		cJSON *x = cJSON_CreateObject();
		ctq_detok_piece(tok, t->top_id[k], &l->piece);
		cJSON_AddStringToObject(x, "token", ctq_strbuf_str(&l->piece));
		cJSON_AddItemToObject(x, "logprob", lp_number(t->top_lp[k]));
		cJSON_AddItemToObject(x, "bytes", bytes_of(ctq_strbuf_str(&l->piece)));
		cJSON_AddItemToArray(tops, x);
	}
	cJSON_AddItemToArray(l->tokens, o);
}

void ctq_oai_logprobs_add(struct ctq_oai_logprobs *l, const struct ctq_tokenizer *tok,
			  const struct ctq_engine_token *t, bool first_prompt)
{
	if (!l->obj)
		return;
	if (l->chat) {
		add_chat(l, tok, t);
		return;
	}
	size_t chars = ctq_detok_piece(tok, t->id, &l->piece);
	cJSON_AddItemToArray(l->tokens, cJSON_CreateString(ctq_strbuf_str(&l->piece)));
	cJSON_AddItemToArray(l->values, first_prompt ? cJSON_CreateNull() : lp_number(t->logprob));
	cJSON_AddItemToArray(l->offsets, cJSON_CreateNumber((double)l->offset));
	l->offset += (int64_t)chars;
	if (first_prompt) {
		cJSON_AddItemToArray(l->tops, cJSON_CreateNull());
		return;
	}
	/* The top alternatives, then the token itself when it is not one of
	 * them (vLLM's dict holds both); a piece already there is kept. */
	cJSON *d = cJSON_CreateObject();
	for (int k = 0; k <= t->n_top; k++) {
		int32_t id = k < t->n_top ? t->top_id[k] : t->id;
		double lp = k < t->n_top ? t->top_lp[k] : t->logprob;
		ctq_detok_piece(tok, id, &l->piece);
		if (!cJSON_GetObjectItemCaseSensitive(d, ctq_strbuf_str(&l->piece)))
			cJSON_AddItemToObject(d, ctq_strbuf_str(&l->piece), lp_number(lp));
	}
	cJSON_AddItemToArray(l->tops, d);
}

cJSON *ctq_oai_logprobs_take(struct ctq_oai_logprobs *l)
{
	cJSON *o = l->obj;
	bool chat = l->chat;
	int64_t offset = l->offset;
	ctq_strbuf_free(&l->piece);
	ctq_oai_logprobs_init(l, chat);
	l->offset = offset;
	return o;
}

void ctq_oai_logprobs_free(struct ctq_oai_logprobs *l)
{
	cJSON_Delete(l->obj);
	ctq_strbuf_free(&l->piece);
	memset(l, 0, sizeof *l);
}

/* ---- responses ---------------------------------------------------------------------- */

const char *ctq_oai_finish_reason(enum ctq_engine_finish f)
{
	return f == CTQ_ENGINE_LENGTH ? "length" : f == CTQ_ENGINE_STOP ? "stop" : "abort";
}

static cJSON *head_obj(const struct ctq_oai_head *h, const char *object)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", h->id);
	cJSON_AddStringToObject(o, "object", object);
	cJSON_AddNumberToObject(o, "created", (double)h->created);
	cJSON_AddStringToObject(o, "model", h->model);
	return o;
}

/* Ends choice c (index and text already in it) with its logprobs (taken
 * owned; NULL: null) and finish_reason (NULL: null). */
static void end_choice(cJSON *c, cJSON *logprobs, const char *finish)
{
	if (logprobs)
		cJSON_AddItemToObject(c, "logprobs", logprobs);
	else
		cJSON_AddNullToObject(c, "logprobs");
	if (finish)
		cJSON_AddStringToObject(c, "finish_reason", finish);
	else
		cJSON_AddNullToObject(c, "finish_reason");
}

/* end_choice, then c as o's only choice. */
static void add_choice(cJSON *o, cJSON *c, cJSON *logprobs, const char *finish)
{
	end_choice(c, logprobs, finish);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), c);
}

cJSON *ctq_oai_chunk(const struct ctq_oai_head *h, int index, const char *text, cJSON *logprobs,
		     const char *finish, bool role)
{
	const bool chat = h->kind == CTQ_OAI_CHAT;
	cJSON *o = head_obj(h, chat ? "chat.completion.chunk" : "text_completion");
	cJSON *c = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "index", index);
	if (chat) {
		cJSON *d = cJSON_AddObjectToObject(c, "delta");
		if (role)
			cJSON_AddStringToObject(d, "role", "assistant");
		cJSON_AddStringToObject(d, "content", text);
	} else {
		cJSON_AddStringToObject(c, "text", text);
	}
	add_choice(o, c, logprobs, finish);
	return o;
}

cJSON *ctq_oai_usage(int64_t prompt, int64_t completion)
{
	cJSON *u = cJSON_CreateObject();
	cJSON_AddNumberToObject(u, "prompt_tokens", (double)prompt);
	cJSON_AddNumberToObject(u, "completion_tokens", (double)completion);
	cJSON_AddNumberToObject(u, "total_tokens", (double)(prompt + completion));
	return u;
}

cJSON *ctq_oai_usage_chunk(const struct ctq_oai_head *h, int64_t prompt, int64_t completion)
{
	cJSON *o = head_obj(h, h->kind == CTQ_OAI_CHAT ? "chat.completion.chunk" : "text_completion");
	cJSON_AddArrayToObject(o, "choices");
	cJSON_AddItemToObject(o, "usage", ctq_oai_usage(prompt, completion));
	return o;
}

cJSON *ctq_oai_choice(enum ctq_oai_kind kind, int index, const char *text, size_t text_len,
		      cJSON *logprobs, const char *finish)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "index", index);
	/* text may hold NUL bytes (a token of byte 0): cJSON strings end at
	 * the first, as vLLM's JSON would carry \u0000; cut there. */
	char *t = ctq_malloc(text_len + 1);
	if (t) {
		memcpy(t, text, text_len);
		t[text_len] = '\0';
	}
	if (kind == CTQ_OAI_CHAT) {
		cJSON *m = cJSON_AddObjectToObject(c, "message");
		cJSON_AddStringToObject(m, "role", "assistant");
		cJSON_AddStringToObject(m, "content", t ? t : "");
	} else {
		cJSON_AddStringToObject(c, "text", t ? t : "");
	}
	ctq_free(t);
	end_choice(c, logprobs, finish);
	return c;
}

cJSON *ctq_oai_response(const struct ctq_oai_head *h, cJSON *choices, int64_t prompt,
			int64_t completion)
{
	cJSON *o = head_obj(h, h->kind == CTQ_OAI_CHAT ? "chat.completion" : "text_completion");
	cJSON_AddItemToObject(o, "choices", choices ? choices : cJSON_CreateArray());
	cJSON_AddItemToObject(o, "usage", ctq_oai_usage(prompt, completion));
	return o;
}

char *ctq_oai_utf8_fix(const char *text, size_t len)
{
	/* each bad byte becomes at most 3 */
	char *out = len < SIZE_MAX / 3 ? ctq_malloc(3 * len + 1) : NULL, *w = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		bool complete = false;
		size_t k = ctq_utf8_valid_prefix(text + i, len - i, &complete);
		if (k && complete) {
			memcpy(w, text + i, k);
			w += k;
			i += k;
			continue;
		}
		memcpy(w, "\xEF\xBF\xBD", 3);
		w += 3;
		i += k ? k : 1;
	}
	*w = '\0';
	return out;
}

cJSON *ctq_oai_models(const char *model, long long created, int64_t max_model_len)
{
	cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "object", "list");
	cJSON_AddStringToObject(m, "id", model);
	cJSON_AddStringToObject(m, "object", "model");
	cJSON_AddNumberToObject(m, "created", (double)created);
	cJSON_AddStringToObject(m, "owned_by", "ctq");
	cJSON_AddStringToObject(m, "root", model);
	cJSON_AddNumberToObject(m, "max_model_len", (double)max_model_len);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), m);
	return o;
}
