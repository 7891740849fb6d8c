/* ctq eval datasets (see datasets.h): the subject tables with their sources,
 * the CSV loader over libcsv, and the split loader. */
#include "eval/datasets.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/strbuf.h"

#include <csv.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger than any official file (the biggest, MMLU professional_law_test,
 * is about 2 MB). */
#define MAX_FILE_BYTES ((size_t)64 << 20)
/* Bytes handed to libcsv at a time, and its smallest growth step. */
#define PARSE_CHUNK ((size_t)64 << 10)

const char *ctq_bench_name(enum ctq_bench b)
{
	static const char *const names[] = {"mmlu", "ceval", "cmmlu"};
	return b < CTQ_BENCH_COUNT ? names[b] : "?";
}

enum ctq_bench ctq_bench_parse(const char *name)
{
	for (int b = 0; b < CTQ_BENCH_COUNT; b++)
		if (!strcmp(name, ctq_bench_name((enum ctq_bench)b)))
			return (enum ctq_bench)b;
	return CTQ_BENCH_COUNT;
}

/* ---- subject tables ---------------------------------------------------------
 *
 * MMLU: hendrycks/test categories.py (commit 4450500): subject -> one of 17
 * subcategories -> one of 4 categories (STEM 18, humanities 13, social
 * sciences 12, other 14). lm-eval's mmlu groups (lm_eval/tasks/mmlu/default,
 * the `group` of each mmlu_<subject>.yaml) agree except that anatomy is STEM
 * there (STEM 19, other 13; spec/evaluation-and-benchmarking.md §1.1). Each
 * protocol reports its own tool's categories, so category numbers compare
 * with that tool's; the overall micro average is the same under both. */
#define M(name, sub, cat) {name, NULL, sub, cat, cat, false, false}
#define STEM "STEM"
#define HUM "humanities"
#define SOC "social sciences"
#define OTH "other"
static const struct ctq_subject_meta mmlu_table[] = {
	M("abstract_algebra", "math", STEM),
	{"anatomy", NULL, "health", OTH, STEM, false, false},
	M("astronomy", "physics", STEM),
	M("business_ethics", "business", OTH),
	M("clinical_knowledge", "health", OTH),
	M("college_biology", "biology", STEM),
	M("college_chemistry", "chemistry", STEM),
	M("college_computer_science", "computer science", STEM),
	M("college_mathematics", "math", STEM),
	M("college_medicine", "health", OTH),
	M("college_physics", "physics", STEM),
	M("computer_security", "computer science", STEM),
	M("conceptual_physics", "physics", STEM),
	M("econometrics", "economics", SOC),
	M("electrical_engineering", "engineering", STEM),
	M("elementary_mathematics", "math", STEM),
	M("formal_logic", "philosophy", HUM),
	M("global_facts", "other", OTH),
	M("high_school_biology", "biology", STEM),
	M("high_school_chemistry", "chemistry", STEM),
	M("high_school_computer_science", "computer science", STEM),
	M("high_school_european_history", "history", HUM),
	M("high_school_geography", "geography", SOC),
	M("high_school_government_and_politics", "politics", SOC),
	M("high_school_macroeconomics", "economics", SOC),
	M("high_school_mathematics", "math", STEM),
	M("high_school_microeconomics", "economics", SOC),
	M("high_school_physics", "physics", STEM),
	M("high_school_psychology", "psychology", SOC),
	M("high_school_statistics", "math", STEM),
	M("high_school_us_history", "history", HUM),
	M("high_school_world_history", "history", HUM),
	M("human_aging", "health", OTH),
	M("human_sexuality", "culture", SOC),
	M("international_law", "law", HUM),
	M("jurisprudence", "law", HUM),
	M("logical_fallacies", "philosophy", HUM),
	M("machine_learning", "computer science", STEM),
	M("management", "business", OTH),
	M("marketing", "business", OTH),
	M("medical_genetics", "health", OTH),
	M("miscellaneous", "other", OTH),
	M("moral_disputes", "philosophy", HUM),
	M("moral_scenarios", "philosophy", HUM),
	M("nutrition", "health", OTH),
	M("philosophy", "philosophy", HUM),
	M("prehistory", "history", HUM),
	M("professional_accounting", "other", OTH),
	M("professional_law", "law", HUM),
	M("professional_medicine", "health", OTH),
	M("professional_psychology", "psychology", SOC),
	M("public_relations", "politics", SOC),
	M("security_studies", "politics", SOC),
	M("sociology", "culture", SOC),
	M("us_foreign_policy", "politics", SOC),
	M("virology", "health", OTH),
	M("world_religions", "philosophy", HUM),
};
#undef M
static const char *const mmlu_categories[] = {STEM, HUM, SOC, OTH};
#undef STEM
#undef HUM
#undef SOC
#undef OTH

/* C-Eval: hkust-nlp/ceval subject_mapping.json (handle -> English name,
 * Chinese name, category; STEM 20, Social Science 10, Humanities 11, Other
 * 11; one older revision of the file omits clinical_medicine's category,
 * which the README counts under Other). C-Eval Hard (README): advanced
 * mathematics, discrete mathematics, probability and statistics, college
 * chemistry, college physics, high school mathematics, chemistry, physics. */
#define C(name, zh, cat, hard) {name, zh, NULL, cat, NULL, hard, false}
static const struct ctq_subject_meta ceval_table[] = {
	C("accountant", "注册会计师", "Other", false),
	C("advanced_mathematics", "高等数学", "STEM", true),
	C("art_studies", "艺术学", "Humanities", false),
	C("basic_medicine", "基础医学", "Other", false),
	C("business_administration", "工商管理", "Social Science", false),
	C("chinese_language_and_literature", "中国语言文学", "Humanities", false),
	C("civil_servant", "公务员", "Other", false),
	C("clinical_medicine", "临床医学", "Other", false),
	C("college_chemistry", "大学化学", "STEM", true),
	C("college_economics", "大学经济学", "Social Science", false),
	C("college_physics", "大学物理", "STEM", true),
	C("college_programming", "大学编程", "STEM", false),
	C("computer_architecture", "计算机组成", "STEM", false),
	C("computer_network", "计算机网络", "STEM", false),
	C("discrete_mathematics", "离散数学", "STEM", true),
	C("education_science", "教育学", "Social Science", false),
	C("electrical_engineer", "注册电气工程师", "STEM", false),
	C("environmental_impact_assessment_engineer", "环境影响评价工程师", "Other", false),
	C("fire_engineer", "注册消防工程师", "Other", false),
	C("high_school_biology", "高中生物", "STEM", false),
	C("high_school_chemistry", "高中化学", "STEM", true),
	C("high_school_chinese", "高中语文", "Humanities", false),
	C("high_school_geography", "高中地理", "Social Science", false),
	C("high_school_history", "高中历史", "Humanities", false),
	C("high_school_mathematics", "高中数学", "STEM", true),
	C("high_school_physics", "高中物理", "STEM", true),
	C("high_school_politics", "高中政治", "Social Science", false),
	C("ideological_and_moral_cultivation", "思想道德修养与法律基础", "Humanities", false),
	C("law", "法学", "Humanities", false),
	C("legal_professional", "法律职业资格", "Humanities", false),
	C("logic", "逻辑学", "Humanities", false),
	C("mao_zedong_thought", "毛泽东思想和中国特色社会主义理论体系概论", "Social Science", false),
	C("marxism", "马克思主义基本原理", "Social Science", false),
	C("metrology_engineer", "注册计量师", "STEM", false),
	C("middle_school_biology", "初中生物", "STEM", false),
	C("middle_school_chemistry", "初中化学", "STEM", false),
	C("middle_school_geography", "初中地理", "Social Science", false),
	C("middle_school_history", "初中历史", "Humanities", false),
	C("middle_school_mathematics", "初中数学", "STEM", false),
	C("middle_school_physics", "初中物理", "STEM", false),
	C("middle_school_politics", "初中政治", "Social Science", false),
	C("modern_chinese_history", "近代史纲要", "Humanities", false),
	C("operating_system", "操作系统", "STEM", false),
	C("physician", "医师资格", "Other", false),
	C("plant_protection", "植物保护", "Other", false),
	C("probability_and_statistics", "概率统计", "STEM", true),
	C("professional_tour_guide", "导游资格", "Humanities", false),
	C("sports_science", "体育学", "Other", false),
	C("tax_accountant", "税务师", "Other", false),
	C("teacher_qualification", "教师资格", "Social Science", false),
	C("urban_and_rural_planner", "注册城乡规划师", "Other", false),
	C("veterinary_medicine", "兽医学", "STEM", false),
};
#undef C
static const char *const ceval_categories[] = {"STEM", "Social Science", "Humanities", "Other"};

/* CMMLU: haonan-li/CMMLU src/categories.py (commit 7aa0f6f): name_en2zh,
 * subcategories (one or two per subject) and categories, which map
 * subcategories to STEM, Humanities, Social Science, Other and "China
 * specific". A subject whose subcategories include "china specific" counts
 * in that group as well as in its other category, as the official
 * get_results does. The spec gives no CMMLU categories; these are the
 * official ones. */
#define X(name, zh, sub, cat, cn) {name, zh, sub, cat, NULL, false, cn}
static const struct ctq_subject_meta cmmlu_table[] = {
	X("agronomy", "农学", "other", "Other", false),
	X("anatomy", "解剖学", "biology", "STEM", false),
	X("ancient_chinese", "古汉语", "linguistics", "Social Science", true),
	X("arts", "艺术学", "arts", "Humanities", false),
	X("astronomy", "天文学", "physics", "STEM", false),
	X("business_ethics", "商业伦理", "business", "Social Science", false),
	X("chinese_civil_service_exam", "中国公务员考试", "politics", "Social Science", true),
	X("chinese_driving_rule", "中国驾驶规则", "other", "Other", true),
	X("chinese_food_culture", "中国饮食文化", "culture", "Social Science", true),
	X("chinese_foreign_policy", "中国外交政策", "politics", "Social Science", true),
	X("chinese_history", "中国历史", "history", "Humanities", true),
	X("chinese_literature", "中国文学", "literature", "Humanities", true),
	X("chinese_teacher_qualification", "中国教师资格", "education", "Social Science", true),
	X("clinical_knowledge", "临床知识", "other", "Other", false),
	X("college_actuarial_science", "大学精算学", "math", "STEM", false),
	X("college_education", "大学教育学", "education", "Social Science", false),
	X("college_engineering_hydrology", "大学工程水文学", "engineering", "STEM", false),
	X("college_law", "大学法律", "law", "Humanities", false),
	X("college_mathematics", "大学数学", "math", "STEM", false),
	X("college_medical_statistics", "大学医学统计", "statistics", "STEM", false),
	X("college_medicine", "大学医学", "other", "Other", false),
	X("computer_science", "计算机科学", "computer science", "STEM", false),
	X("computer_security", "计算机安全", "other", "Other", false),
	X("conceptual_physics", "概念物理学", "physics", "STEM", false),
	X("construction_project_management", "建设工程管理", "other", "Other", true),
	X("economics", "经济学", "economics", "Social Science", false),
	X("education", "教育学", "education", "Social Science", false),
	X("electrical_engineering", "电气工程", "engineering", "STEM", false),
	X("elementary_chinese", "小学语文", "linguistics", "Social Science", true),
	X("elementary_commonsense", "小学常识", "other", "Other", true),
	X("elementary_information_and_technology", "小学信息技术", "other", "Other", false),
	X("elementary_mathematics", "初等数学", "math", "STEM", false),
	X("ethnology", "民族学", "culture", "Social Science", true),
	X("food_science", "食品科学", "other", "Other", false),
	X("genetics", "遗传学", "biology", "STEM", false),
	X("global_facts", "全球事实", "global", "Humanities", false),
	X("high_school_biology", "高中生物", "biology", "STEM", false),
	X("high_school_chemistry", "高中化学", "chemistry", "STEM", false),
	X("high_school_geography", "高中地理", "geography", "Social Science", false),
	X("high_school_mathematics", "高中数学", "math", "STEM", false),
	X("high_school_physics", "高中物理学", "physics", "STEM", false),
	X("high_school_politics", "高中政治", "politics", "Social Science", true),
	X("human_sexuality", "人类性行为", "other", "Other", false),
	X("international_law", "国际法学", "law", "Humanities", false),
	X("journalism", "新闻学", "sociology", "Social Science", false),
	X("jurisprudence", "法理学", "law", "Humanities", false),
	X("legal_and_moral_basis", "法律与道德基础", "other", "Other", false),
	X("logical", "逻辑学", "philosophy", "Humanities", false),
	X("machine_learning", "机器学习", "computer science", "STEM", false),
	X("management", "管理学", "business", "Social Science", false),
	X("marketing", "市场营销", "business", "Social Science", false),
	X("marxist_theory", "马克思主义理论", "philosophy", "Humanities", false),
	X("modern_chinese", "现代汉语", "linguistics", "Social Science", true),
	X("nutrition", "营养学", "other", "Other", false),
	X("philosophy", "哲学", "philosophy", "Humanities", false),
	X("professional_accounting", "专业会计", "business", "Social Science", false),
	X("professional_law", "专业法学", "law", "Humanities", false),
	X("professional_medicine", "专业医学", "other", "Other", false),
	X("professional_psychology", "专业心理学", "psychology", "Social Science", false),
	X("public_relations", "公共关系", "politics", "Social Science", false),
	X("security_study", "安全研究", "politics", "Social Science", false),
	X("sociology", "社会学", "culture", "Social Science", false),
	X("sports_science", "体育学", "other", "Other", false),
	X("traditional_chinese_medicine", "中医中药", "other", "Other", true),
	X("virology", "病毒学", "biology", "STEM", false),
	X("world_history", "世界历史", "history", "Humanities", false),
	X("world_religions", "世界宗教", "global", "Humanities", false),
};
#undef X
static const char *const cmmlu_categories[] = {"STEM", "Humanities", "Social Science", "Other"};

const struct ctq_subject_meta *ctq_subject_table(enum ctq_bench b, size_t *n)
{
	switch (b) {
	case CTQ_BENCH_MMLU:
		*n = sizeof mmlu_table / sizeof *mmlu_table;
		return mmlu_table;
	case CTQ_BENCH_CEVAL:
		*n = sizeof ceval_table / sizeof *ceval_table;
		return ceval_table;
	case CTQ_BENCH_CMMLU:
		*n = sizeof cmmlu_table / sizeof *cmmlu_table;
		return cmmlu_table;
	default:
		*n = 0;
		return NULL;
	}
}

const struct ctq_subject_meta *ctq_subject_find(enum ctq_bench b, const char *name)
{
	size_t n;
	const struct ctq_subject_meta *t = ctq_subject_table(b, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

const char *const *ctq_bench_categories(enum ctq_bench b, size_t *n)
{
	switch (b) {
	case CTQ_BENCH_MMLU:
		*n = 4;
		return mmlu_categories;
	case CTQ_BENCH_CEVAL:
		*n = 4;
		return ceval_categories;
	case CTQ_BENCH_CMMLU:
		*n = 4;
		return cmmlu_categories;
	default:
		*n = 0;
		return NULL;
	}
}

/* ---- CSV ---------------------------------------------------------------------- */

#define MAX_COLS 8

/* Parser state: libcsv calls field() per field and row() per record. */
struct parse {
	struct ctq_question_file *f;
	enum ctq_bench bench;
	const char *path;
	struct ctq_error *err;
	enum ctq_status st;
	size_t cap;
	long line;            /* line being fed (1-based) */
	long rec_line;        /* line the current record started on */
	bool rec_pending;     /* the next non-empty line starts a record */
	bool header_done;
	size_t n_cols;        /* columns per row (from the header or fixed) */
	int col_answer, col_expl; /* column indices, -1 when absent */
	char *fields[MAX_COLS];
	size_t n_fields;
	bool overflow;        /* more than MAX_COLS fields in this row */
	size_t overflow_n;
};

/* libcsv trims spaces and tabs around unquoted fields by default; pandas and
 * Python's csv keep them, and so must we (the bytes are the prompt). */
static int no_space(unsigned char c)
{
	(void)c;
	return 0;
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		size_t len;
		unsigned cp;
		if (c == 0) {
			return false; /* text has no NUL (Python's csv refuses it too) */
		} else if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			len = 2, cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			len = 3, cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			len = 4, cp = c & 0x07;
		} else {
			return false;
		}
		if (i + len > n)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		/* Overlong forms, surrogates and code points past U+10FFFF. */
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
			return false;
		i += len;
	}
	return true;
}

static void failf(struct parse *p, long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void failf(struct parse *p, long line, const char *fmt, ...)
{
	if (p->st)
		return;
	char where[CTQ_PATH_MAX], msg[CTQ_MESSAGE_MAX];
	snprintf(where, sizeof where, "%s:%ld", p->path, line);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	p->st = ctq_error_set(p->err, CTQ_ERR_PARSE, where, "%s", msg);
}

static void on_field(void *data, size_t len, void *ctx)
{
	struct parse *p = ctx;
	if (p->st)
		return;
	if (p->n_fields == MAX_COLS) {
		p->overflow = true;
		p->overflow_n++;
		return;
	}
	if (len > CTQ_DATASET_MAX_FIELD_BYTES) {
		failf(p, p->rec_line, "column %zu is longer than %zu bytes (CTQ_DATASET_MAX_FIELD_BYTES)",
		      p->n_fields + 1, CTQ_DATASET_MAX_FIELD_BYTES);
		return;
	}
	if (!utf8_valid(data, len)) {
		failf(p, p->rec_line, "column %zu is not valid UTF-8 text (or holds a NUL byte)",
		      p->n_fields + 1);
		return;
	}
	char *s = ctq_arena_strndup(&p->f->arena, data ? data : "", data ? len : 0);
	if (!s) {
		p->st = ctq_error_set(p->err, CTQ_ERR_NOMEM, p->path, "out of memory");
		return;
	}
	p->fields[p->n_fields++] = s;
}

/* Expected header cells per benchmark. */
static const char *const ceval_header[] = {"id", "question", "A", "B", "C", "D", "answer",
					   "explanation"};
static const char *const cmmlu_header[] = {"", "Question", "A", "B", "C", "D", "Answer"};

static void header_row(struct parse *p)
{
	const char *const *want = p->bench == CTQ_BENCH_CEVAL ? ceval_header : cmmlu_header;
	size_t min = p->bench == CTQ_BENCH_CEVAL ? 6 : 7, max = p->bench == CTQ_BENCH_CEVAL ? 8 : 7;
	char got[512] = "";
	for (size_t i = 0; i < p->n_fields; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "," : "", p->fields[i]);
	bool ok = !p->overflow && p->n_fields >= min && p->n_fields <= max;
	for (size_t i = 0; ok && i < p->n_fields; i++)
		ok = !strcmp(p->fields[i], want[i]);
	if (!ok) {
		failf(p, p->rec_line, "header is \"%s\"; expected %s", got,
		     p->bench == CTQ_BENCH_CEVAL
			     ? "\"id,question,A,B,C,D\" then optionally answer and explanation"
			     : "\",Question,A,B,C,D,Answer\"");
		return;
	}
	p->n_cols = p->n_fields;
	if (p->bench == CTQ_BENCH_CEVAL) {
		p->col_answer = p->n_cols >= 7 ? 6 : -1;
		p->col_expl = p->n_cols == 8 ? 7 : -1;
	} else {
		p->col_answer = 6;
		p->col_expl = -1;
	}
	p->f->has_answers = p->col_answer >= 0;
	p->f->has_explanation = p->col_expl >= 0;
	p->header_done = true;
}

static void on_row(int term, void *ctx)
{
	(void)term;
	struct parse *p = ctx;
	if (p->st)
		return;
	if (!p->header_done) {
		header_row(p);
		goto next;
	}
	size_t nf = p->n_fields + p->overflow_n;
	if (nf != p->n_cols) {
		failf(p, p->rec_line, "record has %zu fields; expected %zu (%s)", nf, p->n_cols,
		      p->bench == CTQ_BENCH_MMLU ? "question,A,B,C,D,answer" : "as the header");
		goto next;
	}
	if (p->f->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		struct ctq_question *q = ctq_realloc(p->f->q, cap * sizeof *q);
		if (!q) {
			p->st = ctq_error_set(p->err, CTQ_ERR_NOMEM, p->path, "out of memory");
			goto next;
		}
		p->f->q = q;
		p->cap = cap;
	}
	struct ctq_question *q = &p->f->q[p->f->n];
	memset(q, 0, sizeof *q);
	size_t c0 = p->bench == CTQ_BENCH_MMLU ? 0 : 1; /* question column */
	if (p->bench == CTQ_BENCH_MMLU) {
		q->id = ctq_arena_printf(&p->f->arena, "%zu", p->f->n);
		if (!q->id) {
			p->st = ctq_error_set(p->err, CTQ_ERR_NOMEM, p->path, "out of memory");
			goto next;
		}
	} else {
		q->id = p->fields[0];
	}
	q->question = p->fields[c0];
	for (int k = 0; k < 4; k++)
		q->choice[k] = p->fields[c0 + 1 + (size_t)k];
	int ca = p->bench == CTQ_BENCH_MMLU ? 5 : p->col_answer;
	if (ca >= 0) {
		const char *a = p->fields[ca];
		if (strlen(a) != 1 || a[0] < 'A' || a[0] > 'D') {
			failf(p, p->rec_line, "answer is \"%s\"; expected one of A, B, C, D", a);
			goto next;
		}
		q->answer = a[0];
	}
	if (p->col_expl >= 0)
		q->explanation = p->fields[p->col_expl];
	q->line = p->rec_line;
	p->f->n++;
next:
	p->n_fields = 0;
	p->overflow = false;
	p->overflow_n = 0;
	p->rec_pending = true;
}

void ctq_question_file_free(struct ctq_question_file *f)
{
	if (!f)
		return;
	free(f->q);
	ctq_arena_free(&f->arena);
	memset(f, 0, sizeof *f);
}

enum ctq_status ctq_question_file_parse(struct ctq_question_file *f, enum ctq_bench b,
					const char *text, size_t len, const char *path,
					struct ctq_error *err)
{
	memset(f, 0, sizeof *f);
	ctq_arena_init(&f->arena);
	if (b >= CTQ_BENCH_COUNT)
		return ctq_error_set(err, CTQ_ERR_USAGE, path, "unknown benchmark");
	struct ctq_error local = {0};
	struct parse p = {.f = f, .bench = b, .path = path, .err = err ? err : &local,
			  .rec_pending = true, .col_answer = -1, .col_expl = -1};
	if (b == CTQ_BENCH_MMLU) {
		p.header_done = true;
		p.n_cols = 6;
		f->has_answers = true;
	}
	/* A UTF-8 byte order mark is not part of the first field. */
	if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
		text += 3, len -= 3;
	/* Not CSV_STRICT: it rejects a quote inside an unquoted field, which
	 * pandas and Python's csv take literally (MMLU college_medicine_val). */
	struct csv_parser cp;
	if (csv_init(&cp, CSV_STRICT_FINI) != 0) {
		ctq_question_file_free(f);
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	}
	csv_set_space_func(&cp, no_space);
	/* Fed one line at a time so that records and errors know their line. */
	size_t off = 0;
	while (off < len && !p.st) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (text + off)) + 1 : len - off;
		p.line++;
		/* The first line after a record that is not blank starts the
		 * next one (libcsv skips blank lines between records). */
		bool blank = (n == 1 && text[off] == '\n') ||
			     (n == 2 && text[off] == '\r' && text[off + 1] == '\n');
		if (p.rec_pending && !blank) {
			p.rec_pending = false;
			p.rec_line = p.line;
		}
		/* A long line goes in chunks: before each, libcsv's growth step
		 * (a fixed blk_size, 128 bytes by default: a long field copied
		 * quadratically) is set to its buffer's size so far, so the
		 * buffer doubles; the field being read is bounded after each. */
		for (size_t done = 0; done < n && !p.st;) {
			size_t k = n - done < PARSE_CHUNK ? n - done : PARSE_CHUNK;
			size_t have = csv_get_buffer_size(&cp);
			csv_set_blk_size(&cp, have > PARSE_CHUNK ? have : PARSE_CHUNK);
			if (csv_parse(&cp, text + off + done, k, on_field, on_row, &p) != k && !p.st) {
				char where[CTQ_PATH_MAX];
				snprintf(where, sizeof where, "%s:%ld", path, p.line);
				p.st = ctq_error_set(p.err,
						     csv_error(&cp) == CSV_ENOMEM ? CTQ_ERR_NOMEM : CTQ_ERR_PARSE,
						     where, "malformed CSV: %s", csv_strerror(csv_error(&cp)));
			}
			done += k;
			if (!p.st && cp.entry_pos > CTQ_DATASET_MAX_FIELD_BYTES)
				failf(&p, p.rec_line, "a field is longer than %zu bytes "
				      "(CTQ_DATASET_MAX_FIELD_BYTES); an unterminated quote?",
				      CTQ_DATASET_MAX_FIELD_BYTES);
		}
		off += n;
	}
	if (!p.st && csv_fini(&cp, on_field, on_row, &p) != 0 && !p.st) {
		char where[CTQ_PATH_MAX];
		snprintf(where, sizeof where, "%s:%ld", path, p.rec_line ? p.rec_line : p.line);
		p.st = ctq_error_set(p.err, CTQ_ERR_PARSE, where,
				     "malformed CSV at the end of the file: %s (an unterminated quoted field?)",
				     csv_strerror(csv_error(&cp)));
	}
	csv_free(&cp);
	if (!p.st && !p.header_done)
		p.st = ctq_error_set(p.err, CTQ_ERR_PARSE, path, "empty file; expected a header row");
	if (p.st)
		ctq_question_file_free(f);
	return p.st;
}

/* ctq_question_file_load's ctq_file_parse_fn. */
struct question_load {
	struct ctq_question_file *f;
	enum ctq_bench b;
};

static enum ctq_status parse_loaded(void *ctx, const char *text, size_t len, const char *path,
				    struct ctq_error *err)
{
	const struct question_load *q = ctx;
	return ctq_question_file_parse(q->f, q->b, text, len, path, err);
}

enum ctq_status ctq_question_file_load(struct ctq_question_file *f, enum ctq_bench b,
				       const char *path, struct ctq_error *err)
{
	struct question_load q = {f, b};
	memset(f, 0, sizeof *f);
	return ctq_file_parse(path, MAX_FILE_BYTES, parse_loaded, &q, err);
}

/* ---- splits ------------------------------------------------------------------- */

char *ctq_subject_path(enum ctq_bench b, const char *dir, const char *split,
		       const char *subject)
{
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	if (b == CTQ_BENCH_CMMLU)
		ctq_strbuf_printf(&sb, "%s/%s/%s.csv", dir, split, subject);
	else
		ctq_strbuf_printf(&sb, "%s/%s/%s_%s.csv", dir, split, subject, split);
	if (sb.oom) {
		ctq_strbuf_free(&sb);
		return NULL;
	}
	return sb.data;
}

void ctq_eval_data_free(struct ctq_eval_data *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		ctq_question_file_free(&d->subjects[i].items);
		ctq_question_file_free(&d->subjects[i].dev);
		free(d->subjects[i].path);
		free(d->subjects[i].dev_path);
	}
	free(d->subjects);
	memset(d, 0, sizeof *d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The subject handles of the files in <dir>/<split>/, sorted; owned. */
static enum ctq_status list_subjects(enum ctq_bench b, const char *dir, const char *split,
				     char ***out, size_t *n, struct ctq_error *err)
{
	*out = NULL;
	*n = 0;
	char *folder = ctq_path_join(dir, split);
	if (!folder)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	DIR *dh = opendir(folder);
	if (!dh) {
		enum ctq_status st = ctq_error_set(err, CTQ_ERR_IO, folder,
						   "cannot open the %s split folder (expected %s/%s/ under --data)",
						   split, ctq_bench_name(b), split);
		free(folder);
		return st;
	}
	char suffix[16];
	snprintf(suffix, sizeof suffix, b == CTQ_BENCH_CMMLU ? ".csv" : "_%s.csv", split);
	size_t ls = strlen(suffix), cap = 0;
	enum ctq_status st = CTQ_OK;
	struct dirent *e;
	while (!st && (e = readdir(dh))) {
		size_t ln = strlen(e->d_name);
		if (ln <= ls || strcmp(e->d_name + ln - ls, suffix) || e->d_name[0] == '.')
			continue;
		if (!ctq_grow((void **)out, &cap, *n + 1, sizeof **out)) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, folder, "out of memory");
			break;
		}
		char *name = strndup(e->d_name, ln - ls);
		if (!name) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, folder, "out of memory");
			break;
		}
		(*out)[(*n)++] = name;
	}
	closedir(dh);
	if (!st && *n == 0)
		st = ctq_error_set(err, CTQ_ERR_IO, folder, "holds no *%s file", suffix);
	if (st) {
		for (size_t i = 0; i < *n; i++)
			free((*out)[i]);
		free(*out);
		*out = NULL;
		*n = 0;
	} else {
		qsort(*out, *n, sizeof **out, cmp_str);
	}
	free(folder);
	return st;
}

enum ctq_status ctq_eval_data_load(struct ctq_eval_data *d, enum ctq_bench b, const char *dir,
				   const char *split, const char *const *subjects,
				   size_t n_subjects, bool with_dev, struct ctq_error *err)
{
	memset(d, 0, sizeof *d);
	d->bench = b;
	bool split_ok = !strcmp(split, "dev") || !strcmp(split, "test") ||
			(b != CTQ_BENCH_CMMLU && !strcmp(split, "val"));
	if (b >= CTQ_BENCH_COUNT || !split_ok)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--split",
				     "%s has no split \"%s\" (%s)", ctq_bench_name(b), split,
				     b == CTQ_BENCH_CMMLU ? "cmmlu has dev and test" : "dev, val, test");
	snprintf(d->split, sizeof d->split, "%s", split);
	char **names = NULL;
	size_t n = 0;
	enum ctq_status st = CTQ_OK;
	if (subjects && n_subjects) {
		names = ctq_calloc(n_subjects, sizeof *names);
		if (!names)
			return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		for (size_t i = 0; i < n_subjects && !st; i++) {
			for (size_t j = 0; j < i; j++)
				if (!strcmp(subjects[j], subjects[i]))
					st = ctq_error_set(err, CTQ_ERR_USAGE, "--subjects",
							   "subject %s is named twice", subjects[i]);
			if (!st && !(names[n++] = ctq_strdup(subjects[i])))
				st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		}
	} else {
		st = list_subjects(b, dir, split, &names, &n, err);
	}
	if (!st && !(d->subjects = ctq_calloc(n, sizeof *d->subjects)))
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	for (size_t i = 0; i < n && !st; i++) {
		struct ctq_eval_subject *s = &d->subjects[d->n];
		s->meta = ctq_subject_find(b, names[i]);
		s->path = ctq_subject_path(b, dir, split, names[i]);
		if (!s->path) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			break;
		}
		d->n++;
		if (!s->meta) {
			size_t nt;
			ctq_subject_table(b, &nt);
			st = ctq_error_set(err, subjects ? CTQ_ERR_USAGE : CTQ_ERR_PARSE,
					   subjects ? "--subjects" : s->path,
					   "\"%s\" is not one of the %zu %s subjects", names[i], nt,
					   ctq_bench_name(b));
			break;
		}
		if (subjects && !ctq_path_exists(s->path)) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, "--subjects", "subject %s has no file %s",
					   names[i], s->path);
			break;
		}
		if ((st = ctq_question_file_load(&s->items, b, s->path, err)))
			break;
		if (with_dev) {
			s->dev_path = ctq_subject_path(b, dir, "dev", names[i]);
			if (!s->dev_path)
				st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			else if (!strcmp(split, "dev"))
				st = ctq_question_file_load(&s->dev, b, s->dev_path, err);
			else if (!ctq_path_exists(s->dev_path))
				st = ctq_error_set(err, CTQ_ERR_IO, s->dev_path,
						   "missing: the dev split is the few-shot source (use --shots 0 without it)");
			else
				st = ctq_question_file_load(&s->dev, b, s->dev_path, err);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (st)
		ctq_eval_data_free(d);
	return st;
}
