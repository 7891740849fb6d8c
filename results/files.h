/* ctq result files of a run directory: finds the CSVs ctq commands write
 * anywhere below a run directory (a plan run keeps one folder per step) and
 * reads its manifest. Report and compare both start here.
 *
 * What it is not: a schema validator; each reader checks the columns it
 * needs when it loads a file. Nor does it know the result families: which
 * file names are results, and of which family, the caller says
 * (ctq_family_by_file, families/registry.h, the families' one
 * registration).
 */
#ifndef CTQ_RESULTS_FILES_H
#define CTQ_RESULTS_FILES_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"

struct ctq_result_file {
	int fam;       /* what family_of said: an enum ctq_family (families/registry.h) */
	char rel[512]; /* path relative to the run directory */
	char dir[512]; /* its folder relative to the run directory; "" at the top */
};

struct ctq_results {
	struct ctq_result_file *v; /* (n) owned, sorted by rel */
	size_t n;
};

/* Walks run_dir (at most 8 levels; hidden entries, symbolic links, plots/
 * and unfinished *.tmp-* or replaced *.old-* folders skipped) for the
 * regular files whose name family_of maps to a family (>= 0; -1: not a
 * result file). io-error when run_dir is not a readable folder; no result
 * files is not an error. */
enum ctq_status ctq_results_find(struct ctq_results *r, const char *run_dir,
				 int (*family_of)(const char *file_name), struct ctq_error *err);
void ctq_results_free(struct ctq_results *r);

/* run_dir/manifest.json parsed into *out (owned; NULL without one). A
 * manifest that exists but does not parse is a parse-error. */
enum ctq_status ctq_results_manifest(const char *run_dir, cJSON **out, struct ctq_error *err);

/* A string member of a JSON object by dotted path ("git.revision"); def
 * when missing or not a string. */
const char *ctq_json_str_at(const cJSON *root, const char *dotted, const char *def);

#endif
