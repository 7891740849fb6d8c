/* ctq result files of a run directory: finds the CSVs ctq commands write
 * (conform.csv, probe.csv, bench_model.csv, bench_gemm.csv,
 * eval_questions.csv, bench_serve.csv) anywhere below a run directory (a plan run keeps one
 * folder per step) and reads its manifest. Report and compare both start
 * here.
 *
 * What it is not: a schema validator; each reader checks the columns it
 * needs when it loads a file.
 */
#ifndef CTQ_RESULTS_FILES_H
#define CTQ_RESULTS_FILES_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"

enum ctq_family {
	CTQ_FAM_CONFORM,     /* conform.csv: one row per conformance check */
	CTQ_FAM_PROBE,       /* probe.csv: one row per kernel probe */
	CTQ_FAM_BENCH_MODEL, /* bench_model.csv: one row per timed repetition */
	CTQ_FAM_BENCH_GEMM,  /* bench_gemm.csv: kernel throughput against M */
	CTQ_FAM_EVAL,        /* eval_questions.csv: one row per question */
	CTQ_FAM_BENCH_SERVE, /* bench_serve.csv: one row per served request */
	CTQ_FAM_EVAL_KLD,    /* eval_kld.csv: one row per window of text (ctq eval kld) */
	CTQ_FAM_COUNT
};

/* "conformance", "probe", "timing", "gemm", "accuracy", "serving". */
const char *ctq_family_name(enum ctq_family f);
/* The file name the family is written as. */
const char *ctq_family_file(enum ctq_family f);

struct ctq_result_file {
	enum ctq_family fam;
	char rel[512]; /* path relative to the run directory */
	char dir[512]; /* its folder relative to the run directory; "" at the top */
};

struct ctq_results {
	struct ctq_result_file *v; /* (n) owned, sorted by rel */
	size_t n;
};

/* Walks run_dir (at most 8 levels; hidden entries, symbolic links, plots/
 * and unfinished *.tmp-* or replaced *.old-* folders skipped). io-error when run_dir is not a
 * readable folder; no result files is not an error. */
enum ctq_status ctq_results_find(struct ctq_results *r, const char *run_dir,
				 struct ctq_error *err);
void ctq_results_free(struct ctq_results *r);

/* run_dir/manifest.json parsed into *out (owned; NULL without one). A
 * manifest that exists but does not parse is a parse-error. */
enum ctq_status ctq_results_manifest(const char *run_dir, cJSON **out, struct ctq_error *err);

/* A string member of a JSON object by dotted path ("git.revision"); def
 * when missing or not a string. */
const char *ctq_json_str_at(const cJSON *root, const char *dotted, const char *def);

#endif
