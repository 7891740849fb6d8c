/* ctq verify-weights QUANT --ref SRC: every quantized module of QUANT
 * dequantized and held against SRC's weight (conform/verify_weights.h);
 * a table on stdout, verify.csv and the manifest's "verify_weights" object
 * in a run directory. */
#include "harness/commands.h"
#include "conform/verify_weights.h"
#include "families/verify_weights.h"
#include "results/csv_out.h"
#include "results/run.h"

#include <string.h>

static void help(void)
{
	printf("usage: ctq verify-weights QUANT --ref SRC [--policy FILE] [--out DIR] [--force]\n"
	       "\n"
	       "Holds the quantized checkpoint folder QUANT against SRC, the checkpoint it was made\n"
	       "from: every quantized module (the config resolved under the ct profile, so\n"
	       "weight-only schemes count) is unpacked and dequantized, w = (q - z) * s per\n"
	       "channel or group (int-quantized int8, pack-quantized int4 / int8), and compared\n"
	       "with SRC's weight: shape, rel-L2 ||w^ - w|| / ||w||, the largest absolute error,\n"
	       "NaN / Inf, judged against the scheme's rel_l2_max. Every other tensor of SRC must\n"
	       "be in QUANT byte for byte, and QUANT may hold no tensor that is neither SRC's nor\n"
	       "a quantized module's.\n"
	       "\n"
	       "options:\n"
	       "  --ref SRC        the source checkpoint folder (BF16, F16 or F32); required\n"
	       "  --policy FILE    thresholds per scheme (default: built in, see\n"
	       "                   policies/verify_weights.json); entries replace the built-in ones\n"
	       "  --out DIR        run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force          replace DIR when it is a ctq run directory\n"
	       "\n"
	       "DIR/verify.csv: tensor, module, scheme, N, K, rel_l2, max_abs_err, nonfinite,\n"
	       "rel_l2_max, verdict, reason: one row per quantized module, then one per tensor\n"
	       "missing, differing or extra.\n"
	       "\n"
	       "exit: 0 every check passed; 1 a module or tensor failed (named on stderr);\n"
	       "      2 bad usage or a folder that cannot be read.\n");
}

static enum ctq_status write_csv(const struct ctq_run *run, const struct ctq_vw_result *r,
				 struct ctq_error *err)
{
	static const char *const header[] = {CTQ_VERIFY_WEIGHTS_CSV_COLUMNS};
	struct ctq_csv csv;
	enum ctq_status st = ctq_run_csv_open(run, "verify.csv", &csv, header,
					      sizeof header / sizeof *header, err);
	if (st)
		return st;
	for (size_t i = 0; i < r->n_rows; i++)
		ctq_fam_verify_weights_csv_row(&csv, &r->rows[i]);
	return ctq_csv_close(&csv, err);
}

int ctq_cmd_verify_weights(int argc, char **argv)
{
	const char *pos[1] = {NULL};
	const char *ref = NULL, *policy_path = NULL;
	struct ctq_opt_out out = {0};
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--ref", &ref),
		CTQ_OPT_STR("--policy", &policy_path),
		CTQ_OPT_OUT(&out),
		CTQ_OPT_END,
	};
	int rc = ctq_opt_parse("verify-weights", argc, argv, opts, pos, 1, help);
	if (rc >= 0)
		return rc;
	if (!pos[0] || !ref) {
		fprintf(stderr, "ctq verify-weights: QUANT and --ref SRC are required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_out_ok("verify-weights", &out))
		return CTQ_EXIT_USAGE;
	struct ctq_vw_policy policy;
	ctq_vw_policy_default(&policy);
	struct ctq_error err = {0};
	struct ctq_vw_result r;
	memset(&r, 0, sizeof r);
	struct ctq_run run;
	memset(&run, 0, sizeof run);
	if (policy_path && ctq_vw_policy_load(&policy, policy_path, &err)) {
		ctq_print_error("verify-weights", &err);
		return CTQ_EXIT_USAGE;
	}
	if (ctq_verify_weights(pos[0], ref, &policy, &r, &err) ||
	    ctq_run_begin(&run, out.dir, out.force, "verify-weights", argc, argv, &err) ||
	    write_csv(&run, &r, &err))
		goto fail;
	cJSON *sum = cJSON_CreateObject();
	if (!sum || !cJSON_AddStringToObject(sum, "quant", pos[0]) ||
	    !cJSON_AddStringToObject(sum, "ref", ref) ||
	    !cJSON_AddStringToObject(sum, "policy", policy.source) ||
	    !cJSON_AddNumberToObject(sum, "modules", (double)r.n_modules) ||
	    !cJSON_AddNumberToObject(sum, "tensors_copied", (double)r.n_copied) ||
	    !cJSON_AddNumberToObject(sum, "failed", (double)r.n_failed) ||
	    !cJSON_AddItemToObject(run.manifest, "verify_weights", sum)) {
		cJSON_Delete(sum);
		ctq_error_set(&err, CTQ_ERR_NOMEM, "manifest", "out of memory");
		goto fail;
	}
	char final_dir[sizeof run.final_dir];
	snprintf(final_dir, sizeof final_dir, "%s", run.final_dir);
	if (ctq_run_commit(&run, &err))
		goto fail;
	printf("%-52s %-11s %6s %6s %10s %10s %8s  %s\n", "module", "scheme", "N", "K", "rel_l2",
	       "max_abs", "limit", "verdict");
	for (size_t i = 0; i < r.n_rows; i++) {
		const struct ctq_vw_row *w = &r.rows[i];
		if (!w->module[0])
			continue;
		printf("%-52s %-11s %6lld %6lld %10.4g %10.4g %8.4g  %s\n", w->module, w->scheme,
		       (long long)w->N, (long long)w->K, w->rel_l2, w->max_abs_err, w->rel_l2_max,
		       w->passed ? "pass" : "FAIL");
	}
	for (size_t i = 0; i < r.n_rows; i++)
		if (!r.rows[i].passed)
			fprintf(stderr, "ctq verify-weights: FAIL %s (%s): %s\n", r.rows[i].tensor,
				r.rows[i].scheme, r.rows[i].reason);
	printf("verify-weights: %zu module(s), rel-L2 %.4g..%.4g, %zu tensor(s) identical to the "
	       "source, %zu check(s) failed; results in %s/verify.csv\n",
	       r.n_modules, r.rel_l2_min, r.rel_l2_max, r.n_copied, r.n_failed, final_dir);
	rc = r.n_failed ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
	goto done;
fail:
	rc = ctq_print_error_exit("verify-weights", &err);
	ctq_run_abort(&run);
done:
	ctq_vw_result_free(&r);
	return rc;
}
