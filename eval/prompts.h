/* ctq eval prompts: byte-exact renderers of the multiple-choice prompt
 * protocols of spec/evaluation-and-benchmarking.md §1, and what each scores.
 *
 *   mmlu-hendrycks   hendrycks/test evaluate.py: "The following are multiple
 *                    choice questions (with answers) about" + " w" for each
 *                    underscore-separated word of the subject (hence two
 *                    spaces after "about") + ".\n\n"; each shot is
 *                    question + "\nA. a" .. "\nD. d" + "\nAnswer:" + " X\n\n";
 *                    the question ends at "Answer:"; continuations " A".." D".
 *   mmlu-lm-eval     lm-evaluation-harness mmlu (default): description "The
 *                    following are multiple choice questions (with answers)
 *                    about " + subject with "_" -> " " + ".\n\n"; doc_to_text
 *                    question.strip() + "\nA. a" .. "\nD. d" + "\nAnswer:";
 *                    shots are doc_to_text + " " (target_delimiter) + letter
 *                    + "\n\n" (fewshot_delimiter); continuations " A".." D".
 *   ceval-official   hkust-nlp/ceval (README, tutorial, evaluators): header
 *                    "以下是中国关于{Chinese name}考试的单项选择题，请选出其中的正确答案。\n\n";
 *                    shots question + "\nA. a" .. "\nD. d" + "\n答案：" + X +
 *                    "\n\n"; the question ends at "答案："; continuations
 *                    "A".."D" (no space).
 *   ceval-lm-eval    lm-eval ceval-valid: description "以下是中国关于{Chinese
 *                    name}的单项选择题，请选出其中的正确答案。\n\n" (no 考试);
 *                    doc_to_text question.strip() + choices + "\n答案："; shots
 *                    + " " + X + "\n\n"; continuations " A".." D".
 *   cmmlu-official   haonan-li/CMMLU src/mp_utils.py: header "以下是关于{Chinese
 *                    name}的单项选择题，请直接给出正确答案的选项。\n\n"; shots
 *                    "题目：" + question + choices + "\n答案是：" + X + "\n\n";
 *                    the question ends at "答案是："; continuations "A".."D".
 *
 * Fields are used as the file holds them (no stripping except lm-eval's
 * question.strip(), which is Python's str.strip: Unicode whitespace). The
 * official scripts read the CSVs with pandas; pandas >= 2.0 would turn the
 * option text "None" (12 options in the MMLU val and test files) into NaN,
 * printed "nan", which the pandas of the published runs did not do: ctq
 * keeps "None".
 *
 * What it is not: chain-of-thought or chat-template prompts.
 */
#ifndef CTQ_EVAL_PROMPTS_H
#define CTQ_EVAL_PROMPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "eval/datasets.h"

enum ctq_protocol {
	CTQ_PROTO_ORIGINAL, /* the benchmark authors' own scripts */
	CTQ_PROTO_LM_EVAL,  /* EleutherAI lm-evaluation-harness */
	CTQ_PROTO_COUNT
};

/* "original", "lm-eval"; parse returns CTQ_PROTO_COUNT when unknown. */
const char *ctq_protocol_name(enum ctq_protocol p);
enum ctq_protocol ctq_protocol_parse(const char *name);

/* The stable id of a benchmark's protocol ("mmlu-hendrycks", ...), or NULL
 * when ctq does not define it (cmmlu has no lm-eval protocol in the spec). */
const char *ctq_protocol_id(enum ctq_bench b, enum ctq_protocol p);

/* What a protocol does when a prompt does not fit the model's context. */
enum ctq_overflow {
	CTQ_OVERFLOW_DROP_LAST_SHOT, /* Hendrycks crop loop (C-Eval "drop one or two
				      * shots"): k-1 shots, the first k-1 dev rows */
	CTQ_OVERFLOW_DROP_LONGEST,   /* CMMLU gen_prompt: remove the longest shots */
	CTQ_OVERFLOW_LEFT_TRUNCATE,  /* lm-eval: keep the last tokens */
};
enum ctq_overflow ctq_protocol_overflow(enum ctq_bench b, enum ctq_protocol p);

/* Whether the protocol's own overall average is the macro one (mean of
 * subject accuracies: ceval-official, cmmlu-official) or micro. */
bool ctq_protocol_macro(enum ctq_bench b, enum ctq_protocol p);

/* The continuation scored for choice k (0..3): " A" or "A" (static). */
const char *ctq_prompt_continuation(enum ctq_bench b, enum ctq_protocol p, int k);

/* Appends the header (subject description and blank line). */
void ctq_prompt_header(struct ctq_strbuf *sb, enum ctq_bench b, enum ctq_protocol p,
		       const struct ctq_subject_meta *subject);
/* Appends one item: a shot (with_answer: the answer and the separator) or
 * the evaluated question (ending at the answer cue). */
void ctq_prompt_item(struct ctq_strbuf *sb, enum ctq_bench b, enum ctq_protocol p,
		     const struct ctq_question *q, bool with_answer);

/* Appends header + shots (n_shots, each with its answer) + q. Errors:
 * usage (an undefined protocol, a shot with no answer), out-of-memory. */
enum ctq_status ctq_prompt_render(struct ctq_strbuf *sb, enum ctq_bench b, enum ctq_protocol p,
				  const struct ctq_subject_meta *subject,
				  const struct ctq_question *const *shots, size_t n_shots,
				  const struct ctq_question *q, struct ctq_error *err);

/* Python's str.strip() on UTF-8: the span of s (n bytes) without leading and
 * trailing Unicode whitespace (str.isspace). */
void ctq_py_strip(const char *s, size_t n, size_t *start, size_t *len);

#endif
