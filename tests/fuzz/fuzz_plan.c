/* Fuzz target: a run plan (ctq run PLAN) through the plan loader and
 * validator (plan/plan.c ctq_runplan_load), reached through
 * ctq_run_plan_check (harness/commands.h), which checks it against the
 * registry's commands as ctq run does. The plan is only validated, never run. */
#include "tests/fuzz/fuzz.h"

#include "harness/commands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTQ_FUZZ_MAX_BYTES)
		return -1;
	char file[512];
	snprintf(file, sizeof file, "%s", ctq_fuzz_path("plan.json"));
	ctq_fuzz_write(file, data, size);
	struct ctq_error err = {0};
	(void)ctq_run_plan_check(file, &err);
	return 0;
}
