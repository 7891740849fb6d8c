/* Criterion tests for conform/verify_weights and `ctq verify-weights`: the
 * checkpoints ctq quantize writes (W8A8, w4a16, w4a16 asymmetric) pass
 * against their source, and planted defects fail naming the module or
 * tensor: a scale off by a factor, scales shifted by one group, the config
 * of another group size, a dropped tensor, an extra tensor, a module's
 * weight taken from another module. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/safetensors.h"
#include "conform/verify_weights.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/fileio.h"
#include "harness/commands.h"

static int run_cmd(int (*cmd)(int, char **), const char *name, const char *const *args)
{
	char *argv[40];
	int argc = 0;
	argv[argc++] = (char *)name;
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	return cmd(argc, argv);
}

static char *root, *src;

static char *sub(const char *name)
{
	char *p = ctq_path_join(root, name);
	cr_assert(p);
	return p;
}

/* ctq quantize src root/name --quiet extra... */
static char *quantized(const char *name, const char *const *extra)
{
	char *out = sub(name);
	const char *args[16] = {src, out, "--quiet"};
	int n = 3;
	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	cr_assert_eq(run_cmd(ctq_cmd_quantize, "quantize", args), CTQ_EXIT_OK, "quantize %s", name);
	return out;
}

static void setup(void)
{
	char tmpl[] = "/tmp/ctq-vw-XXXXXX";
	cr_assert(mkdtemp(tmpl));
	root = strdup(tmpl);
	src = sub("bf16");
	const char *args[] = {"--arch", "qwen3", "--preset", "tiny", "--seed", "3", "--quiet", src, NULL};
	cr_assert_eq(run_cmd(ctq_cmd_make_model, "make-model", args), CTQ_EXIT_OK);
}

static void teardown(void)
{
	ctq_remove_tree(root);
	free(src);
	free(root);
}

static void copy_file(const char *from_dir, const char *to_dir, const char *name)
{
	char *a = ctq_path_join(from_dir, name), *b = ctq_path_join(to_dir, name);
	char *data = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(a, 1 << 24, &data, &n, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_file_write_atomic(b, data, n, &err), CTQ_OK, "%s", err.message);
	free(data);
	free(a);
	free(b);
}

enum edit { E_NONE, E_SCALE_X4, E_SCALE_SHIFT, E_DROP, E_EXTRA, E_SWAP_WEIGHT };

/* dir_from's tensors into dir_to (config.json from cfg_from) with one edit
 * on module M's tensors (or the model's norm). */
#define M "model.layers.1.mlp.up_proj"
static void rewrite(const char *dir_from, const char *cfg_from, const char *dir_to, enum edit e)
{
	struct ctq_error err = {0};
	struct ctq_checkpoint ck;
	cr_assert_eq(ctq_checkpoint_open(&ck, dir_from, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_mkdirs(dir_to, &err), CTQ_OK);
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	void *owned = NULL;
	for (size_t i = 0; i < ctq_checkpoint_count(&ck); i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&ck, i, NULL);
		const void *data = t->data;
		if (e == E_DROP && !strcmp(t->name, "model.norm.weight"))
			continue;
		if ((e == E_SCALE_X4 || e == E_SCALE_SHIFT) && !strcmp(t->name, M ".weight_scale")) {
			cr_assert_eq(t->dtype, CTQ_DTYPE_BF16);
			uint16_t *s = malloc(t->n_bytes);
			memcpy(s, t->data, t->n_bytes);
			const size_t n = (size_t)t->n_elements;
			if (e == E_SCALE_X4)
				for (size_t k = 0; k < n; k++)
					s[k] = ctq_f32_to_bf16(4.0f * ctq_bf16_to_f32(s[k]));
			else /* every row's groups rotated by one: a group stride off by one */
				for (size_t k = 0; k < n; k++)
					s[k] = ((const uint16_t *)t->data)[(k + 1) % n];
			owned = s;
			data = s;
		}
		if (e == E_SWAP_WEIGHT && !strcmp(t->name, M ".weight_packed")) {
			const struct ctq_st_tensor *g = ctq_checkpoint_find(&ck, "model.layers.1.mlp.gate_proj.weight_packed", NULL);
			cr_assert(g && g->n_bytes == t->n_bytes);
			data = g->data;
		}
		cr_assert_eq(ctq_st_writer_add(&w, t->name, t->dtype, t->ndim, t->shape, data, t->n_bytes, &err),
			     CTQ_OK, "%s", err.message);
	}
	static const float extra[4] = {1, 2, 3, 4};
	const int64_t shape[1] = {4};
	if (e == E_EXTRA)
		cr_assert_eq(ctq_st_writer_add(&w, "model.stray.bias", CTQ_DTYPE_F32, 1, shape, extra,
					       sizeof extra, &err), CTQ_OK);
	char *path = ctq_path_join(dir_to, "model.safetensors");
	cr_assert_eq(ctq_st_writer_write(&w, path, &err), CTQ_OK, "%s", err.message);
	free(path);
	free(owned);
	ctq_st_writer_free(&w);
	ctq_checkpoint_close(&ck);
	copy_file(cfg_from, dir_to, "config.json");
}

static const struct ctq_vw_row *row_of(const struct ctq_vw_result *r, const char *tensor)
{
	for (size_t i = 0; i < r->n_rows; i++)
		if (!strcmp(r->rows[i].tensor, tensor))
			return &r->rows[i];
	return NULL;
}

TestSuite(verify_weights, .init = setup, .fini = teardown);

Test(verify_weights, quantize_output_passes_against_its_source)
{
	static const char *const w8a8[] = {NULL};
	static const char *const w4[] = {"--scheme", "w4a16", "--group-size", "16", NULL};
	static const char *const w4a[] = {"--scheme", "w4a16", "--group-size", "16", "--asym", NULL};
	static const char *const w8[] = {"--scheme", "w8a16", NULL};
	const char *const *schemes[] = {w8a8, w4, w4a, w8};
	static const char *const names[] = {"w8a8", "w4a16", "w4a16-asym", "w8a16"};
	static const double lo[] = {0.002, 0.03, 0.03, 0.002}, hi[] = {0.012, 0.15, 0.12, 0.012};
	struct ctq_vw_policy p;
	ctq_vw_policy_default(&p);
	cr_assert_str_eq(p.source, CTQ_VW_POLICY_FILE " (built in)");
	for (size_t s = 0; s < 4; s++) {
		char *q = quantized(names[s], schemes[s]);
		struct ctq_vw_result r;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_verify_weights(q, src, &p, &r, &err), CTQ_OK, "%s: %s", names[s], err.message);
		cr_expect_eq(r.n_modules, 14, "%s", names[s]);
		cr_expect_eq(r.n_failed, 0, "%s: %s", names[s], r.n_rows ? r.rows[0].reason : "");
		cr_expect_eq(r.n_copied, 10, "%s", names[s]);
		cr_expect(r.rel_l2_min > lo[s] && r.rel_l2_max < hi[s], "%s: rel-L2 %g..%g", names[s],
			  r.rel_l2_min, r.rel_l2_max);
		for (size_t i = 0; i < r.n_rows; i++)
			cr_expect(r.rows[i].max_abs_err > 0 && r.rows[i].nonfinite == 0);
		ctq_vw_result_free(&r);
		/* the command: exit 0, verify.csv in its run directory */
		char *out = sub("vw");
		const char *args[] = {q, "--ref", src, "--out", out, "--force", NULL};
		cr_expect_eq(run_cmd(ctq_cmd_verify_weights, "verify-weights", args), CTQ_EXIT_OK, "%s", names[s]);
		char *csv = ctq_path_join(out, "verify.csv");
		cr_expect(ctq_path_exists(csv), "%s", csv);
		free(csv);
		free(out);
		free(q);
	}
}

struct defect {
	const char *id;
	enum edit e;
	const char *cfg; /* the config's source: "g16" (the same) or "g8" */
	const char *tensor, *scheme, *reason;
	size_t n_failed;
};

static const struct defect defects[] = {
	{"scale-x4", E_SCALE_X4, "g16", M ".weight", "w4a16", "exceeds", 1},
	{"scale-group-shift", E_SCALE_SHIFT, "g16", M ".weight", "w4a16", "exceeds", 1},
	/* group 16 tensors under a config that says group 8: every module */
	{"config-of-group-8", E_NONE, "g8", M ".weight", "w4a16", "weight_scale", 14},
	{"dropped-tensor", E_DROP, "g16", "model.norm.weight", "copy", "missing", 1},
	{"extra-tensor", E_EXTRA, "g16", "model.stray.bias", "extra", "neither", 1},
	{"swapped-weight", E_SWAP_WEIGHT, "g16", M ".weight", "w4a16", "exceeds", 1},
};

Test(verify_weights, planted_defects_fail_naming_the_tensor)
{
	static const char *const g16[] = {"--scheme", "w4a16", "--group-size", "16", NULL};
	static const char *const g8[] = {"--scheme", "w4a16", "--group-size", "8", NULL};
	char *q16 = quantized("g16", g16), *q8 = quantized("g8", g8);
	struct ctq_vw_policy p;
	ctq_vw_policy_default(&p);
	for (size_t d = 0; d < sizeof defects / sizeof *defects; d++) {
		const struct defect *df = &defects[d];
		char *bad = sub(df->id);
		rewrite(q16, strcmp(df->cfg, "g8") ? q16 : q8, bad, df->e);
		struct ctq_vw_result r;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_verify_weights(bad, src, &p, &r, &err), CTQ_OK, "%s: %s", df->id, err.message);
		cr_expect_eq(r.n_failed, df->n_failed, "%s: %zu failed", df->id, r.n_failed);
		const struct ctq_vw_row *row = row_of(&r, df->tensor);
		cr_assert(row, "%s: no row for %s", df->id, df->tensor);
		cr_expect(!row->passed, "%s", df->id);
		cr_expect_str_eq(row->scheme, df->scheme, "%s", df->id);
		cr_expect(strstr(row->reason, df->reason), "%s: %s", df->id, row->reason);
		ctq_vw_result_free(&r);
		char *out = sub("vw-bad");
		const char *args[] = {bad, "--ref", src, "--out", out, "--force", NULL};
		cr_expect_eq(run_cmd(ctq_cmd_verify_weights, "verify-weights", args), CTQ_EXIT_FAIL, "%s", df->id);
		free(out);
		free(bad);
	}
	free(q16);
	free(q8);
}

Test(verify_weights, bad_usage_and_policy)
{
	const char *no_ref[] = {src, NULL};
	cr_expect_eq(run_cmd(ctq_cmd_verify_weights, "verify-weights", no_ref), CTQ_EXIT_USAGE);
	/* an unquantized checkpoint has nothing to verify */
	const char *self[] = {src, "--ref", src, "--out", "/tmp/ctq-vw-never", NULL};
	cr_expect_eq(run_cmd(ctq_cmd_verify_weights, "verify-weights", self), CTQ_EXIT_USAGE);
	cr_expect(!ctq_path_exists("/tmp/ctq-vw-never"));
	/* a policy without the scheme's threshold gives no verdict: fail */
	static const char *const w4[] = {"--scheme", "w4a16", "--group-size", "16", NULL};
	char *q = quantized("w4", w4);
	struct ctq_vw_policy p = {.source = "empty"};
	struct ctq_vw_result r;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_verify_weights(q, src, &p, &r, &err), CTQ_OK);
	cr_expect_eq(r.n_failed, 14);
	cr_expect(strstr(r.rows[0].reason, "no rel_l2_max"), "%s", r.rows[0].reason);
	ctq_vw_result_free(&r);
	/* a policy file: a tighter threshold fails every module */
	char *pol = sub("tight.json");
	const char *text = "{\"rel_l2_max\": {\"w4a16\": 0.001}}";
	cr_assert_eq(ctq_file_write_atomic(pol, text, strlen(text), &err), CTQ_OK);
	ctq_vw_policy_default(&p);
	cr_assert_eq(ctq_vw_policy_load(&p, pol, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_verify_weights(q, src, &p, &r, &err), CTQ_OK);
	cr_expect_eq(r.n_failed, 14);
	ctq_vw_result_free(&r);
	const char *bad = "{\"rel_l2_max\": {\"w4a16\": -1}}";
	cr_assert_eq(ctq_file_write_atomic(pol, bad, strlen(bad), &err), CTQ_OK);
	cr_expect_eq(ctq_vw_policy_load(&p, pol, &err), CTQ_ERR_USAGE);
	free(pol);
	free(q);
}

/* verify.csv is a result family: a report section, and a regression when a
 * module that passed fails. */
Test(verify_weights, report_section_and_compare_regression)
{
	static const char *const g16[] = {"--scheme", "w4a16", "--group-size", "16", NULL};
	char *q = quantized("g16", g16), *bad = sub("bad");
	rewrite(q, q, bad, E_SCALE_X4);
	char *good_run = sub("run-good"), *bad_run = sub("run-bad"), *cmp = sub("cmp");
	const char *a1[] = {q, "--ref", src, "--out", good_run, NULL};
	const char *a2[] = {bad, "--ref", src, "--out", bad_run, NULL};
	cr_assert_eq(run_cmd(ctq_cmd_verify_weights, "verify-weights", a1), CTQ_EXIT_OK);
	cr_assert_eq(run_cmd(ctq_cmd_verify_weights, "verify-weights", a2), CTQ_EXIT_FAIL);
	const char *rep[] = {bad_run, NULL};
	cr_assert_eq(run_cmd(ctq_cmd_report, "report", rep), CTQ_EXIT_OK);
	char *md_path = ctq_path_join(bad_run, "summary.md"), *md = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(md_path, 1 << 24, &md, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect(strstr(md, "Weights against their source"), "%s", md);
	cr_expect(strstr(md, "14 quantized modules, 14 rows: 1 failed"), "%s", md);
	cr_expect(strstr(md, M ".weight"), "%s", md);
	free(md);
	free(md_path);
	const char *c[] = {good_run, bad_run, "--out", cmp, "--quiet", NULL};
	cr_expect_eq(run_cmd(ctq_cmd_compare, "compare", c), CTQ_EXIT_FAIL);
	char *csv_path = ctq_path_join(cmp, "compare.csv"), *csv = NULL;
	if (ctq_file_read(csv_path, 1 << 24, &csv, &n, &err) == CTQ_OK) {
		cr_expect(strstr(csv, M ".weight") && strstr(csv, "verdict pass -> fail"), "%s", csv);
		free(csv);
	} else {
		cr_expect_fail("%s: %s", csv_path, err.message);
	}
	free(csv_path);
	free(q);
	free(bad);
	free(good_run);
	free(bad_run);
	free(cmp);
}
