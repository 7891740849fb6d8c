/* Criterion tests for the dispatch knobs (backend/knobs.c): defaults,
 * flags, integer ranges, the N tile of CTQ_SM90_SMALL_BN (0, 32, 64
 * or 160 only), the usage error naming the first bad variable, and the manifest's
 * record of every variable. The knobs are read once per process; Criterion
 * runs each test in a process of its own, so each sets its environment
 * before the first ctq_knobs(). */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/knobs.h"

static const char *const all[] = {
	"CTQ_ARCH", "CTQ_SM90_TILE", "CTQ_SM90_SMALL_BN", "CTQ_GEMV_MAX_M",
	"CTQ_ATTENTION_SIMPLE", "CTQ_ATTENTION_NO_MMA", "CTQ_ATTENTION_NO_GQA", "CTQ_NO_PDL",
	"CTQ_NO_GEMV_BF16", "CTQ_SANITIZE_MEMSET_CUBLAS",
};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		unsetenv(all[i]);
}

Test(knobs, defaults_when_nothing_is_set)
{
	clear_env();
	const struct ctq_knobs *k = ctq_knobs();
	cr_expect(!k->no_pdl && !k->no_gemv_bf16 && !k->sanitize_memset_cublas);
	cr_expect(!k->attention_simple && !k->attention_no_mma && !k->attention_no_gqa);
	cr_expect_eq(k->sm90_tile, -1);
	cr_expect_eq(k->sm90_small_bn, 0, "0: the N tile picked by N");
	cr_expect_eq(k->gemv_max_m, 1);
	cr_expect_eq(k->arch, 0, "0: dispatch by the GPU's own capability");
	struct ctq_error err = {0};
	cr_expect_eq(ctq_knobs_check(&err), CTQ_OK);
}

Test(knobs, flags_are_on_when_set_even_empty)
{
	clear_env();
	setenv("CTQ_NO_PDL", "", 1);
	setenv("CTQ_ATTENTION_NO_MMA", "1", 1);
	setenv("CTQ_ATTENTION_NO_GQA", "0", 1); /* any value, "0" included */
	const struct ctq_knobs *k = ctq_knobs();
	cr_expect(k->no_pdl && k->attention_no_mma && k->attention_no_gqa);
	cr_expect(!k->attention_simple);
}

Test(knobs, small_bn_takes_32_64_or_160)
{
	clear_env();
	setenv("CTQ_SM90_SMALL_BN", "160", 1);
	setenv("CTQ_SM90_TILE", "3", 1);
	setenv("CTQ_GEMV_MAX_M", "0", 1); /* 0 is in range: not the default */
	const struct ctq_knobs *k = ctq_knobs();
	cr_expect_eq(k->sm90_small_bn, 160);
	cr_expect_eq(k->sm90_tile, 3);
	cr_expect_eq(k->gemv_max_m, 0);
	struct ctq_error err = {0};
	cr_expect_eq(ctq_knobs_check(&err), CTQ_OK, "%s", err.message);
}

Test(knobs, small_bn_refuses_other_widths)
{
	clear_env();
	setenv("CTQ_SM90_SMALL_BN", "48", 1);
	const struct ctq_knobs *k = ctq_knobs();
	cr_expect_eq(k->sm90_small_bn, 0, "a refused value keeps the default");
	struct ctq_error err = {0};
	cr_assert_eq(ctq_knobs_check(&err), CTQ_ERR_USAGE);
	cr_expect_str_eq(err.path, "CTQ_SM90_SMALL_BN");
	cr_expect(strstr(err.message, "\"48\"") && strstr(err.message, "32, 64 or 160"), "%s", err.message);
}

Test(knobs, integers_out_of_range_or_malformed_are_usage_errors)
{
	clear_env();
	setenv("CTQ_GEMV_MAX_M", "4611686018427387905", 1); /* 2^62 + 1: one past the range */
	setenv("CTQ_SM90_TILE", "abc", 1); /* first in the table: the first bad one is named */
	const struct ctq_knobs *k = ctq_knobs();
	cr_expect_eq(k->gemv_max_m, 1);
	cr_expect_eq(k->sm90_tile, -1);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_knobs_check(&err), CTQ_ERR_USAGE);
	cr_expect_str_eq(err.path, "CTQ_SM90_TILE");
	cr_expect(strstr(err.message, "expected an integer"), "%s", err.message);
}

/* CTQ_ARCH takes the names of the architectures the build targets, as
 * compute capability x 10 (sm_90a: 90). */
Test(knobs, arch_takes_the_architecture_names)
{
	static const struct {
		const char *v;
		int cc;
	} ok[] = {{"sm_80", 80}, {"sm_86", 86}, {"sm_89", 89}, {"sm_90a", 90}, {"sm_100", 100}, {"sm_120", 120}};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		/* the knobs are read once per process: one child per value */
		pid_t pid = fork();
		cr_assert(pid >= 0);
		if (pid == 0) {
			clear_env();
			setenv("CTQ_ARCH", ok[i].v, 1);
			struct ctq_error err = {0};
			_exit(ctq_knobs()->arch == ok[i].cc && ctq_knobs_check(&err) == CTQ_OK ? 0 : 1);
		}
		int status = 0;
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "CTQ_ARCH=%s", ok[i].v);
	}
}

Test(knobs, arch_refuses_other_names)
{
	clear_env();
	setenv("CTQ_ARCH", "sm_90", 1); /* wgmma needs sm_90a: the plain name is not one of the targets */
	const struct ctq_knobs *k = ctq_knobs();
	cr_expect_eq(k->arch, 0, "a refused value keeps the default");
	struct ctq_error err = {0};
	cr_assert_eq(ctq_knobs_check(&err), CTQ_ERR_USAGE);
	cr_expect_str_eq(err.path, "CTQ_ARCH");
	cr_expect(strstr(err.message, "\"sm_90\"") && strstr(err.message, "sm_80, sm_86, sm_89, sm_90a, sm_100 or sm_120"),
		  "%s", err.message);
}

Test(knobs, the_manifest_records_every_variable)
{
	clear_env();
	setenv("CTQ_NO_GEMV_BF16", "1", 1);
	setenv("CTQ_SM90_SMALL_BN", "7", 1);
	cJSON *o = cJSON_CreateObject();
	ctq_knobs_to_json(o);
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "knobs");
	cr_assert(k);
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		cr_expect(cJSON_GetObjectItemCaseSensitive(k, all[i]), "%s is recorded", all[i]);
	/* every variable of knobs.c is in `all` (and "invalid" besides) */
	cr_expect_eq(cJSON_GetArraySize(k), (int)(sizeof all / sizeof *all) + 1);
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "CTQ_NO_GEMV_BF16")), "1");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(k, "CTQ_NO_PDL")));
	const char *bad = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "invalid"));
	cr_expect(bad && strstr(bad, "CTQ_SM90_SMALL_BN"), "%s", bad ? bad : "(none)");
	cJSON_Delete(o);
}

/* One table of knobs (docs/knobs.md) with the code's list, in order, and the
 * count it and the README state: adding or retiring a knob without its row
 * and reason fails here. */
Test(knobs, the_docs_table_and_the_readme_count_match_the_code)
{
	clear_env();
	cJSON *o = cJSON_CreateObject();
	ctq_knobs_to_json(o);
	const cJSON *knobs = cJSON_GetObjectItemCaseSensitive(o, "knobs");
	cr_assert(cJSON_IsObject(knobs));
	int n_code = 0;
	for (const cJSON *k = knobs->child; k; k = k->next)
		if (strcmp(k->string, "invalid"))
			n_code++;
	cr_expect_eq(n_code, (int)(sizeof all / sizeof *all), "the test's list is not the code's");

	FILE *f = fopen("docs/knobs.md", "r");
	cr_assert(f, "docs/knobs.md: cannot open (run from the repository root)");
	char line[2048];
	int n_rows = 0, stated = -1;
	const cJSON *k = knobs->child;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "## Other environment variables", 30))
			break; /* not knobs */
		const char *b = strstr(line, "**");
		if (b && sscanf(b, "**%d knobs**", &stated) == 1)
			continue;
		if (strncmp(line, "| `CTQ_", 7))
			continue;
		char name[64];
		cr_assert_eq(sscanf(line + 3, "%63[A-Z0-9_]", name), 1, "%s", line);
		while (k && !strcmp(k->string, "invalid"))
			k = k->next;
		cr_expect(k && !strcmp(k->string, name), "docs/knobs.md row %d is %s; the code's is %s", n_rows + 1,
			  name, k ? k->string : "(none)");
		/* what it does, who needs it, status: none empty */
		int cells = 0;
		for (const char *p = line; (p = strchr(p, '|')); p++)
			cells++;
		cr_expect_eq(cells, 6, "docs/knobs.md: %s has %d cells, expected 5", name, cells - 1);
		cr_expect(!strstr(line, "| |") && !strstr(line, "||"), "docs/knobs.md: %s has an empty cell", name);
		if (k)
			k = k->next;
		n_rows++;
	}
	fclose(f);
	cr_expect_eq(n_rows, n_code, "docs/knobs.md has %d rows, the code %d knobs", n_rows, n_code);
	cr_expect_eq(stated, n_code, "docs/knobs.md says %d knobs, the code has %d", stated, n_code);

	f = fopen("README.md", "r");
	cr_assert(f);
	int readme = -1;
	while (fgets(line, sizeof line, f)) {
		const char *p = strstr(line, " dispatch knobs (docs/knobs.md)");
		if (p) {
			while (p > line && p[-1] >= '0' && p[-1] <= '9')
				p--;
			readme = atoi(p);
		}
	}
	fclose(f);
	cr_expect_eq(readme, n_code, "README.md says \"%d dispatch knobs (docs/knobs.md)\", the code has %d", readme,
		     n_code);
	cJSON_Delete(o);
}

/* The other variables are read live, by name, through ctq_env. */
Test(knobs, env_reads_the_variable_at_each_call)
{
	unsetenv("CTQ_GNUPLOT");
	cr_expect_null(ctq_env(CTQ_ENV_GNUPLOT));
	setenv("CTQ_GNUPLOT", "none", 1);
	cr_expect_str_eq(ctq_env(CTQ_ENV_GNUPLOT), "none");
	setenv("CTQ_GNUPLOT", "/usr/bin/gnuplot", 1);
	cr_expect_str_eq(ctq_env(CTQ_ENV_GNUPLOT), "/usr/bin/gnuplot");
	cr_expect_str_eq(ctq_env_name(CTQ_ENV_REVISION), "CTQ_REVISION");
	cr_expect_str_eq(ctq_env_name(CTQ_ENV_TMPDIR), "TMPDIR");
	cr_expect_null(ctq_env(CTQ_ENV_COUNT));
}
