/* ctq eval datasets: loaders for the official CSV layouts of MMLU, C-Eval and
 * CMMLU, and the subject tables (names, Chinese names, categories) of each.
 *
 * Layouts (one file per subject and split, RFC 4180 CSV parsed by libcsv,
 * UTF-8, an optional BOM, LF or CRLF line ends, quoted fields may span lines;
 * as pandas and Python's csv read them, spaces around unquoted fields are
 * data and a quote inside an unquoted field is a literal character, which
 * one released MMLU file relies on):
 *   mmlu   <dir>/<split>/<subject>_<split>.csv  no header; 6 columns
 *          question,A,B,C,D,answer (Hendrycks' data.tar)
 *   ceval  <dir>/<split>/<subject>_<split>.csv  header id,question,A,B,C,D
 *          then answer (dev, val) then explanation (dev); the released test
 *          split has no answer column: it loads, unlabeled, and cannot be
 *          scored
 *   cmmlu  <dir>/<split>/<subject>.csv  header ",Question,A,B,C,D,Answer"
 *          (the first column is a row index)
 * Every row must have the header's column count, and every answer is
 * exactly one of A, B, C, D. Errors name file:line (the line a record
 * starts on, 1-based, counting the header).
 *
 * What it is not: a general CSV library (results/csv_out.h writes CSV), or a
 * downloader: the data is read from a folder the caller names.
 */
#ifndef CTQ_EVAL_DATASETS_H
#define CTQ_EVAL_DATASETS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/arena.h"
#include "core/status.h"

enum ctq_bench {
	CTQ_BENCH_MMLU,
	CTQ_BENCH_CEVAL,
	CTQ_BENCH_CMMLU,
	CTQ_BENCH_COUNT
};

/* "mmlu", "ceval", "cmmlu"; parse returns CTQ_BENCH_COUNT when unknown. */
const char *ctq_bench_name(enum ctq_bench b);
enum ctq_bench ctq_bench_parse(const char *name);

/* One multiple-choice question, as the file holds it (bytes unchanged). */
struct ctq_question {
	const char *id;          /* ceval id / cmmlu index column; mmlu: row number from 0 */
	const char *question;
	const char *choice[4];   /* A, B, C, D */
	char answer;             /* 'A'..'D', or 0 when the split has no answers */
	const char *explanation; /* ceval dev only, else NULL */
	long line;               /* 1-based line where the record starts */
};

/* One subject's entry in a benchmark's table. */
struct ctq_subject_meta {
	const char *name;        /* the file handle, e.g. "abstract_algebra" */
	const char *name_zh;     /* Chinese name (ceval, cmmlu), else NULL */
	const char *subcategory; /* mmlu: Hendrycks' subcategory; cmmlu: its first subcategory */
	const char *category;    /* mmlu: Hendrycks' categories.py; ceval, cmmlu: their own */
	const char *category_lm_eval; /* mmlu: lm-eval's group (differs for anatomy), else NULL */
	bool hard;               /* ceval: in C-Eval Hard */
	bool china_specific;     /* cmmlu: also counted in "China specific" */
};

/* The table of a benchmark (static storage), n entries. */
const struct ctq_subject_meta *ctq_subject_table(enum ctq_bench b, size_t *n);
/* The entry of a subject, or NULL. */
const struct ctq_subject_meta *ctq_subject_find(enum ctq_bench b, const char *name);
/* The benchmark's category names in report order (static storage). */
const char *const *ctq_bench_categories(enum ctq_bench b, size_t *n);

/* The questions of one file. Memory: one arena. */
struct ctq_question_file {
	struct ctq_arena arena;
	struct ctq_question *q; /* (n) in file order */
	size_t n;
	bool has_answers;       /* the layout has an answer column */
	bool has_explanation;
};

/* The longest CSV field (a question, a choice, an explanation) read: 1 MiB,
 * far above any benchmark's (MMLU's longest question is under 5 KB). The
 * parser's buffer grows geometrically up to it. */
#define CTQ_DATASET_MAX_FIELD_BYTES ((size_t)1 << 20)

/* Parses one file of benchmark b. Errors: io-error (unreadable, not a
 * regular file, too large), parse-error (malformed CSV, a field over
 * CTQ_DATASET_MAX_FIELD_BYTES, invalid UTF-8, wrong header, wrong column
 * count, answer not A-D), out-of-memory; each at path:line. On failure
 * *f is left freed. */
enum ctq_status ctq_question_file_load(struct ctq_question_file *f, enum ctq_bench b,
				       const char *path, struct ctq_error *err);
/* Same, from a buffer (path only names it in errors). */
enum ctq_status ctq_question_file_parse(struct ctq_question_file *f, enum ctq_bench b,
					const char *text, size_t len, const char *path,
					struct ctq_error *err);
void ctq_question_file_free(struct ctq_question_file *f);

/* The path of a subject's file: <dir>/<split>/<subject>_<split>.csv (mmlu,
 * ceval) or <dir>/<split>/<subject>.csv (cmmlu). Owned (free()); NULL on OOM. */
char *ctq_subject_path(enum ctq_bench b, const char *dir, const char *split,
		       const char *subject);

/* A benchmark split loaded for evaluation. */
struct ctq_eval_subject {
	const struct ctq_subject_meta *meta; /* table entry */
	struct ctq_question_file items;      /* the evaluated split */
	struct ctq_question_file dev;        /* few-shot source (empty when not loaded) */
	char *path, *dev_path;               /* owned */
};

struct ctq_eval_data {
	enum ctq_bench bench;
	char split[8];
	struct ctq_eval_subject *subjects; /* (n) sorted by name (C locale) */
	size_t n;
};

/* Loads split ("dev", "val", "test"; cmmlu has dev and test) of benchmark b
 * from dir. subjects (n_subjects, borrowed; NULL / 0 for all) selects
 * subjects by name; otherwise every subject file in <dir>/<split>/ is taken.
 * with_dev loads each subject's dev file too (the few-shot source). Every
 * subject must be in the benchmark's table. Errors: usage (unknown split,
 * a named subject with no file), io-error (missing folder), parse-error
 * (a file, or a subject not in the table), out-of-memory. On failure *d is
 * left freed. */
enum ctq_status ctq_eval_data_load(struct ctq_eval_data *d, enum ctq_bench b, const char *dir,
				   const char *split, const char *const *subjects,
				   size_t n_subjects, bool with_dev, struct ctq_error *err);
void ctq_eval_data_free(struct ctq_eval_data *d);

#endif
