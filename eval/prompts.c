/* ctq eval prompts (see prompts.h): the renderers, one function per piece. */
#include "eval/prompts.h"

#include <stdint.h>
#include <string.h>

const char *ctq_protocol_name(enum ctq_protocol p)
{
	return p == CTQ_PROTO_ORIGINAL ? "original" : p == CTQ_PROTO_LM_EVAL ? "lm-eval" : "?";
}

enum ctq_protocol ctq_protocol_parse(const char *name)
{
	if (!strcmp(name, "original"))
		return CTQ_PROTO_ORIGINAL;
	if (!strcmp(name, "lm-eval"))
		return CTQ_PROTO_LM_EVAL;
	return CTQ_PROTO_COUNT;
}

const char *ctq_protocol_id(enum ctq_bench b, enum ctq_protocol p)
{
	static const char *const ids[CTQ_BENCH_COUNT][CTQ_PROTO_COUNT] = {
		{"mmlu-hendrycks", "mmlu-lm-eval"},
		{"ceval-official", "ceval-lm-eval"},
		{"cmmlu-official", NULL},
	};
	return b < CTQ_BENCH_COUNT && p < CTQ_PROTO_COUNT ? ids[b][p] : NULL;
}

enum ctq_overflow ctq_protocol_overflow(enum ctq_bench b, enum ctq_protocol p)
{
	if (p == CTQ_PROTO_LM_EVAL)
		return CTQ_OVERFLOW_LEFT_TRUNCATE;
	return b == CTQ_BENCH_CMMLU ? CTQ_OVERFLOW_DROP_LONGEST : CTQ_OVERFLOW_DROP_LAST_SHOT;
}

bool ctq_protocol_macro(enum ctq_bench b, enum ctq_protocol p)
{
	return p == CTQ_PROTO_ORIGINAL && (b == CTQ_BENCH_CEVAL || b == CTQ_BENCH_CMMLU);
}

const char *ctq_prompt_continuation(enum ctq_bench b, enum ctq_protocol p, int k)
{
	static const char *const spaced[4] = {" A", " B", " C", " D"};
	static const char *const bare[4] = {"A", "B", "C", "D"};
	if (k < 0 || k > 3)
		return NULL;
	/* Hendrycks reads the tokens " A".." D"; lm-eval appends its target
	 * delimiter " "; C-Eval and CMMLU score the bare letter. */
	return p == CTQ_PROTO_LM_EVAL || b == CTQ_BENCH_MMLU ? spaced[k] : bare[k];
}

/* ---- Python str.strip ---------------------------------------------------------- */

/* str.isspace: bidirectional class WS, B or S, or category Zs. */
static bool py_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Decodes the code point at s[i] (valid UTF-8 assumed: the loader checks),
 * returning its length. */
static size_t cp_at(const unsigned char *s, size_t n, size_t i, uint32_t *c)
{
	unsigned char b = s[i];
	size_t len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : 4;
	if (i + len > n)
		len = 1;
	uint32_t v = len == 1 ? b : len == 2 ? (b & 0x1Fu) : len == 3 ? (b & 0x0Fu) : (b & 0x07u);
	for (size_t k = 1; k < len; k++)
		v = (v << 6) | (s[i + k] & 0x3Fu);
	*c = v;
	return len;
}

void ctq_py_strip(const char *str, size_t n, size_t *start, size_t *len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t a = 0, e = n;
	uint32_t c;
	while (a < e) {
		size_t l = cp_at(s, n, a, &c);
		if (!py_space(c))
			break;
		a += l;
	}
	while (e > a) {
		size_t b = e - 1;
		while (b > a && (s[b] & 0xC0) == 0x80)
			b--;
		cp_at(s, n, b, &c);
		if (!py_space(c))
			break;
		e = b;
	}
	*start = a;
	*len = e - a;
}

/* ---- renderers ------------------------------------------------------------------ */

void ctq_prompt_header(struct ctq_strbuf *sb, enum ctq_bench b, enum ctq_protocol p,
		       const struct ctq_subject_meta *subject)
{
	const char *name = subject->name;
	switch (b) {
	case CTQ_BENCH_MMLU:
		ctq_strbuf_append(sb, "The following are multiple choice questions (with answers) about");
		if (p == CTQ_PROTO_ORIGINAL) {
			/* format_subject: " " + word for every word, after the
			 * template's own space: "about  abstract algebra." */
			ctq_strbuf_append(sb, " ");
			for (const char *w = name; *w;) {
				const char *us = strchr(w, '_');
				size_t n = us ? (size_t)(us - w) : strlen(w);
				ctq_strbuf_append(sb, " ");
				ctq_strbuf_appendn(sb, w, n);
				if (!us)
					break;
				w = us + 1;
			}
		} else {
			ctq_strbuf_append(sb, " ");
			for (const char *c = name; *c; c++)
				ctq_strbuf_appendn(sb, *c == '_' ? " " : c, 1);
		}
		ctq_strbuf_append(sb, ".\n\n");
		break;
	case CTQ_BENCH_CEVAL:
		ctq_strbuf_printf(sb, "以下是中国关于%s%s的单项选择题，请选出其中的正确答案。\n\n",
				  subject->name_zh, p == CTQ_PROTO_ORIGINAL ? "考试" : "");
		break;
	case CTQ_BENCH_CMMLU:
		ctq_strbuf_printf(sb, "以下是关于%s的单项选择题，请直接给出正确答案的选项。\n\n",
				  subject->name_zh);
		break;
	default:
		break;
	}
}

void ctq_prompt_item(struct ctq_strbuf *sb, enum ctq_bench b, enum ctq_protocol p,
		     const struct ctq_question *q, bool with_answer)
{
	static const char letters[] = "ABCD";
	if (b == CTQ_BENCH_CMMLU)
		ctq_strbuf_append(sb, "题目：");
	if (p == CTQ_PROTO_LM_EVAL) {
		size_t a, n;
		ctq_py_strip(q->question, strlen(q->question), &a, &n);
		ctq_strbuf_appendn(sb, q->question + a, n);
	} else {
		ctq_strbuf_append(sb, q->question);
	}
	for (int k = 0; k < 4; k++)
		ctq_strbuf_printf(sb, "\n%c. %s", letters[k], q->choice[k]);
	ctq_strbuf_append(sb, b == CTQ_BENCH_MMLU    ? "\nAnswer:"
			      : b == CTQ_BENCH_CEVAL ? "\n答案："
						     : "\n答案是：");
	if (with_answer) {
		/* The answer is the scored continuation of the same letter. */
		ctq_strbuf_append(sb, ctq_prompt_continuation(b, p, q->answer - 'A'));
		ctq_strbuf_append(sb, "\n\n");
	}
}

enum ctq_status ctq_prompt_render(struct ctq_strbuf *sb, enum ctq_bench b, enum ctq_protocol p,
				  const struct ctq_subject_meta *subject,
				  const struct ctq_question *const *shots, size_t n_shots,
				  const struct ctq_question *q, struct ctq_error *err)
{
	if (!ctq_protocol_id(b, p))
		return ctq_error_set(err, CTQ_ERR_USAGE, "--protocol",
				     "%s has no %s protocol (the spec defines none)", ctq_bench_name(b),
				     ctq_protocol_name(p));
	if ((b == CTQ_BENCH_CEVAL || b == CTQ_BENCH_CMMLU) && !subject->name_zh)
		return ctq_error_set(err, CTQ_ERR_USAGE, subject->name, "no Chinese subject name");
	for (size_t i = 0; i < n_shots; i++)
		if (shots[i]->answer < 'A' || shots[i]->answer > 'D')
			return ctq_error_set(err, CTQ_ERR_USAGE, subject->name,
					     "few-shot example %s has no answer", shots[i]->id);
	ctq_prompt_header(sb, b, p, subject);
	for (size_t i = 0; i < n_shots; i++)
		ctq_prompt_item(sb, b, p, shots[i], true);
	ctq_prompt_item(sb, b, p, q, false);
	if (sb->oom)
		return ctq_error_set(err, CTQ_ERR_NOMEM, subject->name, "out of memory");
	return CTQ_OK;
}
