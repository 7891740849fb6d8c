/* Fuzz target: a conformance suite case file through ctq_suite_load (file
 * and case validation), then every case that needs no synthetic checkpoint
 * run under each profile it names (ctq_case_run, what `ctq conform` does).
 * Numeric cases (`checkpoint`) are validated but not run: they build a
 * model in a folder of their own under /tmp, sized by the case. */
#include "tests/fuzz/fuzz.h"

#include "conform/suite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTQ_FUZZ_MAX_BYTES)
		return -1;
	char dir[512];
	snprintf(dir, sizeof dir, "%s", ctq_fuzz_path("suite"));
	struct ctq_error err = {0};
	if (!ctq_path_is_dir(dir) && ctq_mkdirs(dir, &err)) {
		fprintf(stderr, "ctq fuzz: %s: %s\n", dir, err.message);
		abort();
	}
	char file[600];
	snprintf(file, sizeof file, "%s/case.json", dir);
	ctq_fuzz_write(file, data, size);

	struct ctq_suite s;
	memset(&s, 0, sizeof s);
	if (!ctq_suite_load(&s, dir, &err)) {
		struct ctq_checks checks;
		memset(&checks, 0, sizeof checks);
		for (size_t i = 0; i < s.n_cases; i++) {
			const struct ctq_case *c = &s.cases[i];
			if (c->checkpoint)
				continue;
			for (int sem = 0; sem < CTQ_SEM_COUNT; sem++) {
				struct ctq_error rerr = {0};
				if (c->sem[sem])
					(void)ctq_case_run(c, (enum ctq_semantics)sem, &checks, &rerr);
			}
		}
		ctq_checks_free(&checks);
	}
	ctq_suite_free(&s);
	return 0;
}
