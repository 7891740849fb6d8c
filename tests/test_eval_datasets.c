/* Criterion tests for eval/datasets: the CSV loader on edge cases (quoting,
 * multi-line fields, CRLF, BOM, spaces, bad rows with file:line), the
 * samples under datasets/, and the real benchmark files in
 * ../shared/datasets (skipped when that folder is absent): record counts
 * and field digests against Python's csv module
 * (tests/oracle/eval_data_digests.py), and subject tables that cover every
 * real subject with the category counts their sources state. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/sha256.h"
#include "eval/datasets.h"

#define REAL "../shared/datasets"

static void parse_ok(struct ctq_question_file *f, enum ctq_bench b, const char *text)
{
	struct ctq_error err = {0};
	enum ctq_status st = ctq_question_file_parse(f, b, text, strlen(text), "t.csv", &err);
	cr_assert_eq(st, CTQ_OK, "%s: %s", err.path, err.message);
}

Test(eval_datasets, mmlu_quoting_multiline_crlf_spaces)
{
	struct ctq_question_file f;
	parse_ok(&f, CTQ_BENCH_MMLU,
		 "Plain?,1,2,3,4,A\r\n"
		 "\"Has, a comma and \"\"quotes\"\"\", x ,\"y\",z,w,B\r\n"
		 "\"Two\nlines\",a,b,c,None,C\n"
		 "\n"
		 " lead and trail ,a,b,c,d,D");
	cr_assert_eq(f.n, 4);
	cr_expect_str_eq(f.q[0].question, "Plain?");
	cr_expect_str_eq(f.q[0].choice[3], "4");
	cr_expect_eq(f.q[0].answer, 'A');
	cr_expect_str_eq(f.q[0].id, "0");
	cr_expect_str_eq(f.q[1].question, "Has, a comma and \"quotes\"");
	/* Unquoted spaces are data (pandas and Python's csv keep them). */
	cr_expect_str_eq(f.q[1].choice[0], " x ");
	cr_expect_str_eq(f.q[1].choice[1], "y");
	cr_expect_str_eq(f.q[2].question, "Two\nlines");
	cr_expect_str_eq(f.q[2].choice[3], "None");
	cr_expect_str_eq(f.q[3].question, " lead and trail ");
	cr_expect_eq(f.q[3].answer, 'D');
	/* Lines where records start, blank line included. */
	cr_expect_eq(f.q[0].line, 1);
	cr_expect_eq(f.q[1].line, 2);
	cr_expect_eq(f.q[2].line, 3);
	cr_expect_eq(f.q[3].line, 6);
	cr_expect_str_eq(f.q[3].id, "3");
	ctq_question_file_free(&f);
	ctq_question_file_free(&f); /* idempotent */

	/* A quote inside an unquoted field is a literal character, as Python's
	 * csv and pandas read it (the real MMLU college_medicine val file has
	 * one). */
	parse_ok(&f, CTQ_BENCH_MMLU, "Nietzsche\u2019s Truth?\",a,b\"c,d,e,A\n");
	cr_assert_eq(f.n, 1);
	cr_expect_str_eq(f.q[0].question, "Nietzsche\u2019s Truth?\"");
	cr_expect_str_eq(f.q[0].choice[1], "b\"c");
	ctq_question_file_free(&f);
}

Test(eval_datasets, bom_and_header_layouts)
{
	struct ctq_question_file f;
	parse_ok(&f, CTQ_BENCH_CEVAL,
		 "\xEF\xBB\xBFid,question,A,B,C,D,answer,explanation\r\n"
		 "0,问题一____。,甲,乙,丙,丁,B,\"1. 第一步\n2. 第二步\"\r\n");
	cr_assert_eq(f.n, 1);
	cr_expect(f.has_answers && f.has_explanation);
	cr_expect_str_eq(f.q[0].id, "0");
	cr_expect_str_eq(f.q[0].question, "问题一____。");
	cr_expect_eq(f.q[0].answer, 'B');
	cr_expect_str_eq(f.q[0].explanation, "1. 第一步\n2. 第二步");
	ctq_question_file_free(&f);

	/* The released C-Eval test layout: no answer column. */
	parse_ok(&f, CTQ_BENCH_CEVAL, "id,question,A,B,C,D\r\n7,q,a,b,c,d\r\n");
	cr_expect(!f.has_answers);
	cr_expect_eq(f.q[0].answer, 0);
	cr_expect_str_eq(f.q[0].id, "7");
	ctq_question_file_free(&f);

	parse_ok(&f, CTQ_BENCH_CMMLU, ",Question,A,B,C,D,Answer\n0,问,a,b,c,d,C\n1,问二,a,b,c,d,A\n");
	cr_assert_eq(f.n, 2);
	cr_expect_str_eq(f.q[1].id, "1");
	cr_expect_str_eq(f.q[1].question, "问二");
	cr_expect_eq(f.q[1].answer, 'A');
	cr_expect_eq(f.q[1].line, 3);
	ctq_question_file_free(&f);
}

static const struct {
	const char *id;
	enum ctq_bench bench;
	const char *text;
	const char *path;      /* expected error path */
	const char *contains;  /* expected in the message */
	size_t len;            /* bytes of text; 0: strlen */
} bad[] = {
	{"mmlu/five-columns", CTQ_BENCH_MMLU, "q,a,b,c,d,A\nq,a,b,c,d\n", "t.csv:2", "5 fields; expected 6", 0},
	{"mmlu/eight-columns", CTQ_BENCH_MMLU, "q,a,b,c,d,A,x,y,z\n", "t.csv:1", "9 fields", 0},
	{"mmlu/answer-E", CTQ_BENCH_MMLU, "q,a,b,c,d,A\n\"x\ny\",a,b,c,d,E\n", "t.csv:2", "\"E\"", 0},
	{"mmlu/answer-space", CTQ_BENCH_MMLU, "q,a,b,c,d, A\n", "t.csv:1", "\" A\"", 0},
	{"mmlu/answer-lowercase", CTQ_BENCH_MMLU, "q,a,b,c,d,a\n", "t.csv:1", "one of A, B, C, D", 0},
	{"mmlu/line-after-multiline", CTQ_BENCH_MMLU, "\"1\n2\n3\",a,b,c,d,A\nq,a,b,c,d\n", "t.csv:4", "5 fields", 0},
	{"mmlu/bad-utf8", CTQ_BENCH_MMLU, "q,a,b\xff,c,d,A\n", "t.csv:1", "column 3 is not valid UTF-8", 0},
	{"mmlu/overlong-utf8", CTQ_BENCH_MMLU, "q,\xC0\xAF,b,c,d,A\n", "t.csv:1", "not valid UTF-8", 0},
	{"mmlu/nul-byte", CTQ_BENCH_MMLU, "q,a,b,c,d,A\nq,a\0x,b,c,d,A\n", "t.csv:2", "column 2", 26},
	/* An unterminated quote swallows the rest of the file into one field. */
	{"mmlu/unterminated-quote", CTQ_BENCH_MMLU, "q,a,b,c,d,A\n\"open,a,b,c,d,A\nq,a,b,c,d,A\n", "t.csv:2", "1 fields", 0},
	{"mmlu/unterminated-last", CTQ_BENCH_MMLU, "q,a,b,c,d,\"A\n", "t.csv:1", "answer is \"A\n\"", 0},
	{"mmlu/empty", CTQ_BENCH_MMLU, "", NULL, NULL, 0},
	{"ceval/header", CTQ_BENCH_CEVAL, "id,question,A,B,C,D,ans\n", "t.csv:1", "header is \"id,question,A,B,C,D,ans\"", 0},
	{"ceval/short-row", CTQ_BENCH_CEVAL, "id,question,A,B,C,D,answer\n0,q,a,b,c,d\n", "t.csv:2", "6 fields; expected 7", 0},
	{"ceval/empty", CTQ_BENCH_CEVAL, "", "t.csv", "empty file", 0},
	{"cmmlu/header", CTQ_BENCH_CMMLU, "id,Question,A,B,C,D,Answer\n", "t.csv:1", "expected \",Question,A,B,C,D,Answer\"", 0},
	{"cmmlu/answer", CTQ_BENCH_CMMLU, ",Question,A,B,C,D,Answer\n0,q,a,b,c,d,AB\n", "t.csv:2", "\"AB\"", 0},
};

Test(eval_datasets, bad_files_name_file_and_line)
{
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct ctq_question_file f;
		struct ctq_error err = {0};
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
		enum ctq_status st = ctq_question_file_parse(&f, bad[i].bench, bad[i].text, len, "t.csv",
							     &err);
		if (!bad[i].path) {
			/* An empty MMLU file has no records and no header to miss. */
			cr_expect_eq(st, CTQ_OK, "%s: %s", bad[i].id, err.message);
			cr_expect_eq(f.n, 0, "%s", bad[i].id);
			ctq_question_file_free(&f);
			continue;
		}
		cr_expect_eq(st, CTQ_ERR_PARSE, "%s: status %s (%s)", bad[i].id, ctq_status_name(st),
			     err.message);
		cr_expect_str_eq(err.path, bad[i].path, "%s: path %s, message %s", bad[i].id, err.path,
				 err.message);
		cr_expect(strstr(err.message, bad[i].contains), "%s: \"%s\" lacks \"%s\"", bad[i].id,
			  err.message, bad[i].contains);
		cr_expect_null(f.q, "%s: freed on failure", bad[i].id);
	}
}

/* One long quoted question on line 2 of an MMLU file: just under
 * CTQ_DATASET_MAX_FIELD_BYTES reads (the buffer grows geometrically); past
 * it, closed or not, a parse-error at t.csv:2. */
Test(eval_datasets, a_field_is_bounded, .timeout = 30)
{
	size_t big = CTQ_DATASET_MAX_FIELD_BYTES + 4096;
	char *text = malloc(big + 256);
	cr_assert(text);
	for (int over = 0; over <= 1; over++)
		for (int closed = 0; closed <= 1; closed++) {
			size_t q = over ? big : CTQ_DATASET_MAX_FIELD_BYTES - 16;
			size_t n = (size_t)sprintf(text, "a,b,c,d,e,A\n\"");
			memset(text + n, 'x', q);
			n += q;
			if (closed)
				n += (size_t)sprintf(text + n, "\",1,2,3,4,B\n");
			struct ctq_question_file f;
			struct ctq_error err = {0};
			enum ctq_status st = ctq_question_file_parse(&f, CTQ_BENCH_MMLU, text, n, "t.csv", &err);
			if (!over && closed) {
				cr_expect_eq(st, CTQ_OK, "%s", err.message);
				cr_expect_eq(f.n, 2);
				ctq_question_file_free(&f);
				continue;
			}
			cr_expect_eq(st, CTQ_ERR_PARSE, "over %d closed %d", over, closed);
			cr_expect_str_eq(err.path, "t.csv:2", "over %d closed %d: %s", over, closed, err.message);
			if (over)
				cr_expect(strstr(err.message, "longer than"), "%s", err.message);
		}
	free(text);
}

Test(eval_datasets, samples_load_in_every_layout)
{
	static const struct {
		enum ctq_bench b;
		const char *split;
		size_t subjects, questions;
		bool answers;
	} want[] = {
		{CTQ_BENCH_MMLU, "dev", 4, 20, true},   {CTQ_BENCH_MMLU, "val", 4, 8, true},
		{CTQ_BENCH_MMLU, "test", 4, 16, true},  {CTQ_BENCH_CEVAL, "dev", 4, 20, true},
		{CTQ_BENCH_CEVAL, "val", 4, 12, true},  {CTQ_BENCH_CEVAL, "test", 4, 12, false},
		{CTQ_BENCH_CMMLU, "dev", 4, 20, true},  {CTQ_BENCH_CMMLU, "test", 4, 16, true},
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		char dir[64];
		snprintf(dir, sizeof dir, "datasets/%s", ctq_bench_name(want[i].b));
		struct ctq_eval_data d;
		struct ctq_error err = {0};
		enum ctq_status st = ctq_eval_data_load(&d, want[i].b, dir, want[i].split, NULL, 0,
							true, &err);
		cr_assert_eq(st, CTQ_OK, "%s %s: %s: %s", dir, want[i].split, err.path, err.message);
		size_t nq = 0;
		for (size_t s = 0; s < d.n; s++) {
			nq += d.subjects[s].items.n;
			cr_expect_eq(d.subjects[s].items.has_answers, want[i].answers);
			cr_expect_eq(d.subjects[s].dev.n, 5, "%s: 5 dev rows", d.subjects[s].meta->name);
			if (s)
				cr_expect(strcmp(d.subjects[s - 1].meta->name, d.subjects[s].meta->name) < 0);
		}
		cr_expect_eq(d.n, want[i].subjects, "%s %s subjects", dir, want[i].split);
		cr_expect_eq(nq, want[i].questions, "%s %s questions", dir, want[i].split);
		ctq_eval_data_free(&d);
	}
}

Test(eval_datasets, split_and_subject_selection_errors)
{
	struct ctq_eval_data d;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_eval_data_load(&d, CTQ_BENCH_CMMLU, "datasets/cmmlu", "val", NULL, 0, false, &err),
		     CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "cmmlu has dev and test"), "%s", err.message);
	const char *one[] = {"anatomy"};
	memset(&err, 0, sizeof err);
	cr_assert_eq(ctq_eval_data_load(&d, CTQ_BENCH_MMLU, "datasets/mmlu", "test", one, 1, true, &err),
		     CTQ_OK, "%s", err.message);
	cr_expect_eq(d.n, 1);
	cr_expect_str_eq(d.subjects[0].meta->category, "other");
	cr_expect_str_eq(d.subjects[0].meta->category_lm_eval, "STEM");
	ctq_eval_data_free(&d);
	const char *unknown[] = {"astrology"};
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_eval_data_load(&d, CTQ_BENCH_MMLU, "datasets/mmlu", "test", unknown, 1, false, &err),
		     CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "not one of the 57 mmlu subjects"), "%s", err.message);
	const char *absent[] = {"virology"}; /* a real subject the sample lacks */
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_eval_data_load(&d, CTQ_BENCH_MMLU, "datasets/mmlu", "test", absent, 1, false, &err),
		     CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "has no file"), "%s", err.message);
	const char *twice[] = {"anatomy", "anatomy"};
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_eval_data_load(&d, CTQ_BENCH_MMLU, "datasets/mmlu", "test", twice, 2, false, &err),
		     CTQ_ERR_USAGE);
	memset(&err, 0, sizeof err);
	cr_expect_eq(ctq_eval_data_load(&d, CTQ_BENCH_MMLU, "/nonexistent", "test", NULL, 0, false, &err),
		     CTQ_ERR_IO);
}

/* ---- the real files ---------------------------------------------------------------- */

static const struct {
	const char *bench, *split;
	size_t files, records;
	const char *sha256;
} real[] = {
	/* tests/oracle/eval_data_digests.py; counts as in shared/datasets/SOURCES.md */
	{"mmlu", "dev", 57, 285, "202024b74a22a5bc6335980a1a52229feae7dd75df8769ee1bdae4ad5a8458d0"},
	{"mmlu", "val", 57, 1531, "0bb95b0d783588d0a52b9749747c2b7a122652aad10f2bdd2b7dbe7d07d258d0"},
	{"mmlu", "test", 57, 14042, "e5eaf7e0e98c8d521f464d6926b96d7a94d43abc18382241da921965b4f3c8ea"},
	{"ceval", "dev", 52, 260, "9f7bf5235f3a60a986539cfed5ac8a6d347622e25d5445d5338e62c9bf6d8253"},
	{"ceval", "val", 52, 1346, "1a136c90f83f3210244a03c7d69873cd4903f7452e205102ba8022bceb4e8a66"},
	{"ceval", "test", 52, 12342, "02cca876f99980fb35c729a660b11966c53f2537c750feb01e9a28f5bc978bef"},
	{"cmmlu", "dev", 67, 335, "6c8584c9fe1c8460fad5748537efac94f23779a6b34052c445e47834c776b582"},
	{"cmmlu", "test", 67, 11582, "e02cf223ba2757608e8c4b1586f43b26968496cc7bbd0ff21ae2e7dd83a89fef"},
};

static void field(struct ctq_sha256 *h, const char *s, bool last)
{
	ctq_sha256_update(h, s, strlen(s));
	ctq_sha256_update(h, last ? "\x1e" : "\x1f", 1);
}

Test(eval_datasets, real_files_parse_as_python_csv)
{
	if (!ctq_path_is_dir(REAL))
		cr_skip_test("%s is absent: the real benchmark files are not here", REAL);
	for (size_t i = 0; i < sizeof real / sizeof *real; i++) {
		enum ctq_bench b = ctq_bench_parse(real[i].bench);
		char dir[128];
		snprintf(dir, sizeof dir, REAL "/%s", real[i].bench);
		struct ctq_eval_data d;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_eval_data_load(&d, b, dir, real[i].split, NULL, 0, false, &err), CTQ_OK,
			     "%s %s: %s: %s", dir, real[i].split, err.path, err.message);
		struct ctq_sha256 h;
		ctq_sha256_init(&h);
		size_t n = 0;
		for (size_t s = 0; s < d.n; s++) {
			const struct ctq_question_file *f = &d.subjects[s].items;
			for (size_t j = 0; j < f->n; j++, n++) {
				const struct ctq_question *q = &f->q[j];
				char ans[2] = {q->answer, 0};
				if (b != CTQ_BENCH_MMLU)
					field(&h, q->id, false);
				field(&h, q->question, false);
				for (int k = 0; k < 4; k++)
					field(&h, q->choice[k], k == 3 && !f->has_answers);
				if (f->has_answers)
					field(&h, ans, !f->has_explanation);
				if (f->has_explanation)
					field(&h, q->explanation, true);
			}
		}
		unsigned char dg[CTQ_SHA256_BYTES];
		char hex[CTQ_SHA256_HEX];
		ctq_sha256_final(&h, dg);
		ctq_sha256_hex(dg, hex);
		cr_expect_eq(d.n, real[i].files, "%s %s: %zu subjects", real[i].bench, real[i].split, d.n);
		cr_expect_eq(n, real[i].records, "%s %s: %zu records", real[i].bench, real[i].split, n);
		cr_expect_str_eq(hex, real[i].sha256, "%s %s: field digest", real[i].bench, real[i].split);
		/* The C-Eval test split loads, without answers. */
		if (b == CTQ_BENCH_CEVAL && !strcmp(real[i].split, "test"))
			cr_expect(!d.subjects[0].items.has_answers);
		ctq_eval_data_free(&d);
	}
}

Test(eval_datasets, tables_cover_every_real_subject)
{
	if (!ctq_path_is_dir(REAL))
		cr_skip_test("%s is absent: the real benchmark files are not here", REAL);
	static const struct {
		enum ctq_bench b;
		const char *split;
	} each[] = {{CTQ_BENCH_MMLU, "test"}, {CTQ_BENCH_CEVAL, "val"}, {CTQ_BENCH_CMMLU, "test"}};
	for (size_t i = 0; i < 3; i++) {
		char dir[128];
		snprintf(dir, sizeof dir, REAL "/%s", ctq_bench_name(each[i].b));
		/* Loading every subject file fails on one not in the table. */
		struct ctq_eval_data d;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_eval_data_load(&d, each[i].b, dir, each[i].split, NULL, 0, true, &err),
			     CTQ_OK, "%s: %s: %s", dir, err.path, err.message);
		size_t nt;
		ctq_subject_table(each[i].b, &nt);
		cr_expect_eq(d.n, nt, "%s: %zu files, %zu table entries", dir, d.n, nt);
		for (size_t s = 0; s < d.n; s++)
			cr_expect_eq(d.subjects[s].dev.n, 5, "%s: 5 dev rows", d.subjects[s].meta->name);
		ctq_eval_data_free(&d);
	}
}

static size_t count_cat(enum ctq_bench b, const char *cat, bool lm_eval)
{
	size_t n, c = 0;
	const struct ctq_subject_meta *t = ctq_subject_table(b, &n);
	for (size_t i = 0; i < n; i++)
		c += !strcmp(lm_eval ? t[i].category_lm_eval : t[i].category, cat);
	return c;
}

Test(eval_datasets, category_counts_match_their_sources)
{
	/* hendrycks/test categories.py: STEM 18, humanities 13, social sciences
	 * 12, other 14; lm-eval: anatomy in STEM (19 / 13 / 12 / 13). */
	cr_expect_eq(count_cat(CTQ_BENCH_MMLU, "STEM", false), 18);
	cr_expect_eq(count_cat(CTQ_BENCH_MMLU, "humanities", false), 13);
	cr_expect_eq(count_cat(CTQ_BENCH_MMLU, "social sciences", false), 12);
	cr_expect_eq(count_cat(CTQ_BENCH_MMLU, "other", false), 14);
	cr_expect_eq(count_cat(CTQ_BENCH_MMLU, "STEM", true), 19);
	cr_expect_eq(count_cat(CTQ_BENCH_MMLU, "other", true), 13);
	/* C-Eval subject_mapping.json: 20 / 10 / 11 / 11; Hard 8. */
	cr_expect_eq(count_cat(CTQ_BENCH_CEVAL, "STEM", false), 20);
	cr_expect_eq(count_cat(CTQ_BENCH_CEVAL, "Social Science", false), 10);
	cr_expect_eq(count_cat(CTQ_BENCH_CEVAL, "Humanities", false), 11);
	cr_expect_eq(count_cat(CTQ_BENCH_CEVAL, "Other", false), 11);
	size_t n, hard = 0, cn = 0;
	const struct ctq_subject_meta *t = ctq_subject_table(CTQ_BENCH_CEVAL, &n);
	for (size_t i = 0; i < n; i++) {
		hard += t[i].hard;
		cr_expect(t[i].name_zh && t[i].name_zh[0], "%s has a Chinese name", t[i].name);
	}
	cr_expect_eq(hard, 8);
	cr_expect_str_eq(ctq_subject_find(CTQ_BENCH_CEVAL, "clinical_medicine")->category, "Other");
	/* CMMLU categories.py: 67 subjects; the counts follow from its
	 * subcategory map. */
	t = ctq_subject_table(CTQ_BENCH_CMMLU, &n);
	cr_expect_eq(n, 67);
	for (size_t i = 0; i < n; i++)
		cn += t[i].china_specific;
	cr_expect_eq(cn, 15);
	cr_expect_eq(count_cat(CTQ_BENCH_CMMLU, "STEM", false), 17);
	cr_expect_eq(count_cat(CTQ_BENCH_CMMLU, "Humanities", false), 13);
	cr_expect_eq(count_cat(CTQ_BENCH_CMMLU, "Social Science", false), 22);
	cr_expect_eq(count_cat(CTQ_BENCH_CMMLU, "Other", false), 15);
	cr_expect_str_eq(ctq_subject_find(CTQ_BENCH_CMMLU, "world_religions")->category, "Humanities");
	/* Every table entry's category is one of the benchmark's. */
	for (int b = 0; b < CTQ_BENCH_COUNT; b++) {
		size_t nc;
		const char *const *cats = ctq_bench_categories((enum ctq_bench)b, &nc);
		t = ctq_subject_table((enum ctq_bench)b, &n);
		for (size_t i = 0; i < n; i++) {
			bool found = false;
			for (size_t c = 0; c < nc; c++)
				found |= !strcmp(cats[c], t[i].category);
			cr_expect(found, "%s: category %s", t[i].name, t[i].category);
			if (i)
				cr_expect(strcmp(t[i - 1].name, t[i].name) < 0, "%s sorted", t[i].name);
		}
	}
}
