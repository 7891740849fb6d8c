/* ctq serve's chat templates: the model folder's tokenizer_config.json
 * `chat_template` is Jinja, and ctq has no Jinja engine. It recognizes the
 * template families by their markers and renders them in C:
 *
 *   chatml   `<|im_start|>` (Qwen2 / Qwen2.5 / Qwen3, SmolLM2):
 *            <|im_start|>ROLE\nCONTENT<|im_end|>\n per message; a default
 *            system message when the template writes one as a literal and
 *            the first message is not a system one; <|im_start|>assistant\n
 *            when the template has an add_generation_prompt branch.
 *   llama3   `<|start_header_id|>` (Llama-3, 3.1): BOS, then
 *            <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT(trimmed)<|eot_id|>
 *            per message; templates that write "Cutting Knowledge Date" (3.1)
 *            get their system block (the template's default date
 *            "26 Jul 2024"); <|start_header_id|>assistant<|end_header_id|>\n\n.
 *
 * What it is not: tools, multimodal content, reasoning-content handling of
 * assistant turns, template variables other than add_generation_prompt. A
 * template that is absent or of another family is `none`: chat requests
 * get a 400 that says so (completions still work). */
#ifndef CTQ_SERVE_CHAT_H
#define CTQ_SERVE_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "core/strbuf.h"

enum ctq_chat_family { CTQ_CHAT_NONE, CTQ_CHAT_CHATML, CTQ_CHAT_LLAMA3 };

struct ctq_chat_template {
	enum ctq_chat_family family;
	bool generation_prompt;   /* the template has an add_generation_prompt branch */
	bool llama31_system;      /* llama3: the "Cutting Knowledge Date" system block */
	char default_system[1024]; /* chatml: "" when none */
	char bos[64];             /* llama3: tokenizer_config.json's bos_token */
	char why[160];            /* none: why (no template, unknown family) */
};

struct ctq_chat_message {
	const char *role;    /* system, user, assistant */
	const char *content;
};

/* Reads the tokenizer_config.json beside a tokenizer: dir is a model or
 * tokenizer folder, or a tokenizer.json file (its folder's). Absent: family
 * none. Errors: parse-error or io-error of that file. */
enum ctq_status ctq_chat_template_load(struct ctq_chat_template *t, const char *dir,
				       struct ctq_error *err);

/* Recognizes a template text (bos: the bos_token, may be NULL). */
void ctq_chat_template_detect(struct ctq_chat_template *t, const char *text, const char *bos);

/* "chatml", "llama3", "none". */
const char *ctq_chat_family_name(enum ctq_chat_family f);

/* Appends the prompt of msgs[0..n) to out. Errors: usage (family none, an
 * unknown role, no messages). */
enum ctq_status ctq_chat_render(const struct ctq_chat_template *t, const struct ctq_chat_message *msgs,
				size_t n, struct ctq_strbuf *out, struct ctq_error *err);

#endif
