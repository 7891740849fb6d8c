/* The built-in policies are the policies/ files themselves (embedded by the
 * build, core/embedded.h): each default parses, names its file, and equals
 * loading that file from disk entry for entry. A value kept in C again
 * would have to be written into the file too, or this fails. */
#include <criterion/criterion.h>
#include <string.h>

#include "conform/probe.h"
#include "core/embedded.h"
#include "core/policy.h"
#include "eval/kld.h"
#include "families/verdict.h"

Test(policies, the_build_embeds_every_policy_file)
{
	static const char *const files[] = {CTQ_PROBE_POLICY_FILE, CTQ_KLD_POLICY_FILE, CTQ_COMPARE_POLICY_FILE};
	for (size_t i = 0; i < 3; i++) {
		size_t len = 0;
		const char *t = ctq_embedded(files[i], &len);
		cr_assert(t && len > 100, "%s is not embedded", files[i]);
		cr_expect_eq(strlen(t), len, "%s: NUL-terminated, no NUL inside", files[i]);
	}
	cr_expect_null(ctq_embedded("policies/none.json", NULL));
	cJSON *root = (cJSON *)1;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_embedded_json("policies/none.json", &root, &err), CTQ_ERR_IO);
	cr_expect_null(root);
	cr_expect_str_eq(err.path, "policies/none.json");
	cr_assert_eq(ctq_embedded_json(CTQ_KLD_POLICY_FILE, &root, &err), CTQ_OK, "%s", err.message);
	cr_expect(cJSON_IsObject(root));
	cJSON_Delete(root);
}

Test(policies, probe_default_is_its_file)
{
	struct ctq_probe_policy d, f;
	ctq_probe_policy_default(&d);
	cr_expect_str_eq(d.source, CTQ_PROBE_POLICY_FILE " (built in)");
	memset(&f, 0, sizeof f);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_probe_policy_load(&f, CTQ_PROBE_POLICY_FILE, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(d.kernel_rel_l2_max, f.kernel_rel_l2_max);
	cr_expect_gt(d.kernel_rel_l2_max, 0);
	for (int a = 0; a < CTQ_PA_COUNT; a++)
		cr_expect_eq(d.quant_rel_l2_max[a], f.quant_rel_l2_max[a], "pattern %d", a);
}

Test(policies, kld_default_is_its_file)
{
	struct ctq_kld_policy d, f;
	ctq_kld_policy_default(&d);
	cr_expect_str_eq(d.source, CTQ_KLD_POLICY_FILE " (built in)");
	memset(&f, 0, sizeof f);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_kld_policy_load(&f, CTQ_KLD_POLICY_FILE, &err), CTQ_OK, "%s", err.message);
	for (int k = 0; k < CTQ_KLD_N_CRIT; k++) {
		cr_expect_eq(d.v[k], f.v[k], "%s", ctq_kld_criterion_name(k));
		cr_expect_gt(d.v[k], 0, "%s", ctq_kld_criterion_name(k));
		cr_expect_str_eq(d.reason[k], f.reason[k]);
		cr_expect(d.reason[k][0], "%s has no reason", ctq_kld_criterion_name(k));
	}
}

Test(policies, compare_default_is_its_file)
{
	struct ctq_compare_policy d, f;
	ctq_compare_policy_default(&d);
	cr_expect_str_eq(d.source, CTQ_COMPARE_POLICY_FILE " (built in)");
	memset(&f, 0, sizeof f);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_compare_policy_load(&f, CTQ_COMPARE_POLICY_FILE, &err), CTQ_OK, "%s", err.message);
	for (int k = 0; k < CTQ_POL_COUNT; k++) {
		cr_expect_eq(d.v[k], f.v[k], "%s", ctq_compare_policy_name(k));
		cr_expect_str_eq(d.reason[k], f.reason[k]);
		cr_expect(d.reason[k][0] && strcmp(d.reason[k], "(no reason given in the policy file)"),
			  "%s: the built-in policy gives no reason", ctq_compare_policy_name(k));
	}
}

/* core/policy.c, the one shell of all four: a built-in file that does not
 * apply (here: one the build does not carry) leaves every number 0 and
 * says why in source; a user's file that does not load leaves the policy
 * and its source as they were. */
struct toy_policy {
	double limit;
	char source[CTQ_POLICY_SOURCE_MAX];
};

static enum ctq_status toy_apply(void *policy, const cJSON *root, const char *where, struct ctq_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "limit");
	if (!cJSON_IsNumber(v))
		return ctq_error_set(err, CTQ_ERR_USAGE, where, "limit: a number");
	((struct toy_policy *)policy)->limit = v->valuedouble;
	return CTQ_OK;
}

Test(policies, a_broken_builtin_leaves_zero_and_says_so)
{
	struct toy_policy p = {.limit = 7};
	ctq_policy_default(&p, sizeof p, "policies/none.json", toy_apply, p.source);
	cr_expect_eq(p.limit, 0);
	cr_expect(strstr(p.source, "the built-in policies/none.json does not parse: a broken build ("), "%s",
		  p.source);
	/* an embedded file that is not this owner's: applies nothing, also broken */
	p.limit = 7;
	ctq_policy_default(&p, sizeof p, CTQ_KLD_POLICY_FILE, toy_apply, p.source);
	cr_expect_eq(p.limit, 0);
	cr_expect(strstr(p.source, "a broken build") && strstr(p.source, "limit: a number"), "%s", p.source);

	struct ctq_error err = {0};
	snprintf(p.source, sizeof p.source, "kept");
	p.limit = 3;
	cr_expect_eq(ctq_policy_load(&p, "/nonexistent/policy.json", toy_apply, p.source, &err), CTQ_ERR_IO);
	cr_expect_str_eq(err.path, "/nonexistent/policy.json");
	cr_expect_eq(p.limit, 3);
	cr_expect_str_eq(p.source, "kept");
}
