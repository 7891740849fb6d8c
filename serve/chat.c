/* ctq serve's chat templates (serve/chat.h). */
#include "serve/chat.h"
#include "core/fileio.h"
#include "core/json.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *ctq_chat_family_name(enum ctq_chat_family f)
{
	return f == CTQ_CHAT_CHATML ? "chatml" : f == CTQ_CHAT_LLAMA3 ? "llama3" : "none";
}

/* A Jinja string literal's text from s (up to a quote, a brace or end),
 * with \n escapes turned into newlines, into out; false when it holds
 * anything but plain text. */
static bool literal_until(const char *s, const char *end_marker, char *out, size_t cap)
{
	const char *e = strstr(s, end_marker);
	if (!e)
		return false;
	size_t k = 0;
	for (const char *c = s; c < e; c++) {
		if (*c == '\'' || *c == '"' || *c == '{' || *c == '}' || k + 1 >= cap)
			return false;
		if (c[0] == '\\' && c[1] == 'n') {
			out[k++] = '\n';
			c++;
		} else {
			out[k++] = *c;
		}
	}
	out[k] = '\0';
	return k > 0;
}

/* The first "<|im_start|>system\n<text><|im_end|>" with a plain literal text. */
static void chatml_default_system(struct ctq_chat_template *t, const char *text)
{
	static const char head[] = "<|im_start|>system";
	for (const char *p = strstr(text, head); p; p = strstr(p + 1, head)) {
		const char *q = p + sizeof head - 1;
		if (q[0] == '\\' && q[1] == 'n')
			q += 2;
		else if (q[0] == '\n')
			q++;
		else
			continue;
		if (literal_until(q, "<|im_end|>", t->default_system, sizeof t->default_system))
			return;
	}
	t->default_system[0] = '\0';
}

void ctq_chat_template_detect(struct ctq_chat_template *t, const char *text, const char *bos)
{
	memset(t, 0, sizeof *t);
	if (!text) {
		snprintf(t->why, sizeof t->why, "the model has no chat_template in tokenizer_config.json");
		return;
	}
	t->generation_prompt = strstr(text, "add_generation_prompt") != NULL;
	if (strstr(text, "<|start_header_id|>")) {
		t->family = CTQ_CHAT_LLAMA3;
		t->llama31_system = strstr(text, "Cutting Knowledge Date") != NULL;
		snprintf(t->bos, sizeof t->bos, "%s", bos ? bos : "");
	} else if (strstr(text, "<|im_start|>")) {
		t->family = CTQ_CHAT_CHATML;
		chatml_default_system(t, text);
	} else {
		snprintf(t->why, sizeof t->why,
			 "the model's chat_template is of no family ctq renders (chatml <|im_start|>, llama3 <|start_header_id|>)");
	}
}

/* A token field of tokenizer_config.json: a string or {"content": ...}. */
static const char *token_field(const cJSON *cfg, const char *key)
{
	const cJSON *v = ctq_json_get(cfg, key);
	if (cJSON_IsObject(v))
		v = ctq_json_get(v, "content");
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

enum ctq_status ctq_chat_template_load(struct ctq_chat_template *t, const char *dir,
				       struct ctq_error *err)
{
	char path[1024];
	struct stat sb;
	const char *slash = strrchr(dir, '/');
	if (stat(dir, &sb) == 0 && S_ISREG(sb.st_mode)) /* a tokenizer.json: the folder it is in */
		snprintf(path, sizeof path, "%.*s/tokenizer_config.json", slash ? (int)(slash - dir) : 1,
			 slash ? dir : ".");
	else
		snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
	if (stat(path, &sb)) {
		ctq_chat_template_detect(t, NULL, NULL);
		return CTQ_OK;
	}
	struct ctq_json_limits lim = ctq_json_default_limits;
	lim.max_string = (size_t)1 << 20; /* chat templates run to tens of KB */
	cJSON *cfg = NULL;
	enum ctq_status st = ctq_json_load_file(path, (size_t)64 << 20, &lim, &cfg, err);
	if (st)
		return st;
	const cJSON *tpl = ctq_json_get(cfg, "chat_template");
	const char *text = cJSON_IsString(tpl) ? tpl->valuestring : NULL;
	/* A list of named templates: the one called "default". */
	if (cJSON_IsArray(tpl))
		for (const cJSON *x = tpl->child; x && !text; x = x->next) {
			const cJSON *name = ctq_json_get(x, "name"), *body = ctq_json_get(x, "template");
			if (cJSON_IsString(name) && !strcmp(name->valuestring, "default") &&
			    cJSON_IsString(body))
				text = body->valuestring;
		}
	ctq_chat_template_detect(t, text, token_field(cfg, "bos_token"));
	cJSON_Delete(cfg);
	return CTQ_OK;
}

/* Jinja's |trim: leading and trailing whitespace off. */
static void append_trimmed(struct ctq_strbuf *out, const char *s)
{
	const char *e = s + strlen(s);
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	ctq_strbuf_appendn(out, s, (size_t)(e - s));
}

static void render_llama3(const struct ctq_chat_template *t, const struct ctq_chat_message *m,
			  size_t n, struct ctq_strbuf *out)
{
	ctq_strbuf_append(out, t->bos);
	size_t i = 0;
	if (t->llama31_system) {
		ctq_strbuf_append(out, "<|start_header_id|>system<|end_header_id|>\n\n"
				       "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
		if (!strcmp(m[0].role, "system")) {
			append_trimmed(out, m[0].content);
			i = 1;
		}
		ctq_strbuf_append(out, "<|eot_id|>");
	}
	for (; i < n; i++) {
		ctq_strbuf_printf(out, "<|start_header_id|>%s<|end_header_id|>\n\n", m[i].role);
		append_trimmed(out, m[i].content);
		ctq_strbuf_append(out, "<|eot_id|>");
	}
	if (t->generation_prompt)
		ctq_strbuf_append(out, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

enum ctq_status ctq_chat_render(const struct ctq_chat_template *t, const struct ctq_chat_message *m,
				size_t n, struct ctq_strbuf *out, struct ctq_error *err)
{
	if (t->family == CTQ_CHAT_NONE)
		return ctq_error_set(err, CTQ_ERR_USAGE, "messages", "%s; use /v1/completions", t->why);
	if (!n)
		return ctq_error_set(err, CTQ_ERR_USAGE, "messages", "messages is empty");
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].role, "system") && strcmp(m[i].role, "user") &&
		    strcmp(m[i].role, "assistant"))
			return ctq_error_set(err, CTQ_ERR_USAGE, "messages",
					     "messages[%zu].role is \"%s\"; expected system, user or assistant",
					     i, m[i].role);
	if (t->family == CTQ_CHAT_LLAMA3) {
		render_llama3(t, m, n, out);
	} else {
		if (t->default_system[0] && strcmp(m[0].role, "system"))
			ctq_strbuf_printf(out, "<|im_start|>system\n%s<|im_end|>\n", t->default_system);
		for (size_t i = 0; i < n; i++)
			ctq_strbuf_printf(out, "<|im_start|>%s\n%s<|im_end|>\n", m[i].role, m[i].content);
		if (t->generation_prompt)
			ctq_strbuf_append(out, "<|im_start|>assistant\n");
	}
	if (out->oom)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "serve", "out of memory");
	return CTQ_OK;
}
