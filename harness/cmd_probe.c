/* ctq probe: kernel isolation per linear geometry, on the reference
 * backend, the CUDA backend, a kernel plug-in, or several: the options, the
 * table printed as the probes run, probe.csv / probe.json / the manifest
 * into a run directory, and exit 1 on any failure. The probes, their
 * session and its tallies are conform/'s (conform/probe_session.h); the
 * CSV row is the probe family's (families/probe.h). */
#include "harness/commands.h"
#include "backend/plugin.h"
#include "conform/probe_session.h"
#include "conform/probe_wna16.h"
#include "core/json.h"
#include "families/probe.h"
#include "results/csv_out.h"
#include "results/run.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: ctq probe [--shapes PRESET|K:N,...] [options]\n"
	       "\n"
	       "Runs the W8A8 linear (per-token quantization, int8 GEMM, epilogue) of each\n"
	       "layer geometry in isolation and compares it with the exact-quantized CPU\n"
	       "reference (kernel error) and the FP64 unquantized product (quantization error).\n"
	       "\n"
	       "options:\n"
	       "  --model DIR       a checkpoint: every linear module with its real weights\n"
	       "                    (W8A8 as stored, BF16 quantized per channel), plus the\n"
	       "                    synthetic weight patterns on each distinct geometry\n"
	       "  --shapes S        qwen3-4b (2560:6144, 4096:2560, 2560:19456, 9728:2560),\n"
	       "                    qwen3-0.6b, tiny, or a list of K:N (default qwen3-4b)\n"
	       "  --real-acts LIST  activation patterns for the real weights (default\n"
	       "                    gaussian,outliers)\n"
	       "  --backend B       reference (default), cuda, or both\n"
	       "  --kernel-lib LIB  a kernel plug-in (a .so exporting ctq_kernel_plugin, see\n"
	       "                    include/ctq_kernel_plugin.h) probed through the same path\n"
	       "                    as ctq's backends, named by the plug-in in BACKEND and\n"
	       "                    probe.csv; plus bit-exact q, scale and output checks when it\n"
	       "                    declares them. Alone it replaces the default backend; with\n"
	       "                    --backend both are probed. An unloadable file, a missing\n"
	       "                    entry symbol or another ABI version: exit 2. A CPU\n"
	       "                    plug-in's calls each run in a child process: one that\n"
	       "                    crashes, exits or outlasts --kernel-timeout is exit 3,\n"
	       "                    naming the plug-in, the function and M, N, K (a CUDA\n"
	       "                    plug-in runs in ctq's process; docs/probing.md)\n"
	       "  --wna16 LIST      a weight-only plug-in (ABI version 2, gemm_wna16): the\n"
	       "                    layouts probed, w4a16[-asym][-gG] or w8a16[-asym][-gG] (no\n"
	       "                    -g: per channel; default: w4a16-g128, w4a16-asym-g128 and\n"
	       "                    w8a16, those the plug-in declares), against the dequantized\n"
	       "                    CPU reference (reference/ref_wna16.h) and the FP64 product;\n"
	       "                    a layout whose group does not divide K, and zero-rows at\n"
	       "                    M = 1, are not run (counted apart, never as passed)\n"
	       "  --kernel-timeout S  seconds one call of the plug-in may take (default 600;\n"
	       "                    1 to 86400); a CUDA plug-in past it ends ctq, saying so\n"
	       "  --act-numerics N  ctq (default) or transformers: the reference backend runs\n"
	       "                    compressed-tensors' fake quantization (amax / 127.5, BF16\n"
	       "                    dequantization, a float GEMM; docs/semantics.md); KERNEL-L2\n"
	       "                    is then its distance to ctq's formula, reported, not judged\n"
	       "  --weights LIST    random,pm127,constant,zero-row (default: all of them)\n"
	       "  --acts LIST       gaussian,outliers,zero-rows,bf16-limit (default: all)\n"
	       "  --m LIST          token counts (default 64)\n"
	       "  --policy FILE     thresholds (default: built-in; see policies/probe.json)\n"
	       "  --seed S          input seed (default 1)\n"
	       "  --out DIR         run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force           replace DIR when it is an existing ctq run directory (any\n"
	       "                    other non-empty DIR is refused)\n"
	       "  --inject-defect D test only: scale-shift, epilogue-nan or transposed-w\n"
	       "\n"
	       "exit: 0 every probe passed; 1 a probe failed; 2 bad usage or a bad plug-in;\n"
	       "      3 no GPU for cuda (or a CUDA plug-in), or a plug-in call failed, crashed\n"
	       "        or hung.\n");
}

/* A list of names into sel[0..count): each parsed by parse, or a message
 * naming the entry and what the option takes. */
static bool parse_list(const char *cmd, const char *name, const char *s, bool *sel, int count,
		       bool (*parse)(const char *, int *), const char *takes)
{
	char buf[256];
	const char *items[16];
	const int n = ctq_opt_split(cmd, name, s, buf, sizeof buf, items, 16);
	if (n < 0)
		return false;
	for (int i = 0; i < count; i++)
		sel[i] = false;
	for (int k = 0; k < n; k++) {
		int v;
		if (!parse(items[k], &v)) {
			fprintf(stderr, "ctq %s: %s names \"%s\"; it takes %s\n", cmd, name, items[k], takes);
			return false;
		}
		sel[v] = true;
	}
	return true;
}

static bool parse_w(const char *s, int *v)
{
	enum ctq_probe_weights w;
	if (!ctq_probe_weights_parse(s, &w) || w == CTQ_PW_CHECKPOINT)
		return false;
	*v = (int)w;
	return true;
}

static bool parse_a(const char *s, int *v)
{
	enum ctq_probe_acts a;
	if (!ctq_probe_acts_parse(s, &a))
		return false;
	*v = (int)a;
	return true;
}

static const char *const csv_header[] = {CTQ_PROBE_CSV_COLUMNS};

static void print_header(struct ctq_backend *backends, int n_backends,
			 enum ctq_act_numerics numerics, const struct ctq_probe_policy *policy)
{
	for (int i = 0; i < n_backends; i++) {
		char desc[256];
		backends[i].ops->describe(&backends[i], desc, sizeof desc);
		printf("backend %s: %s\n", backends[i].ops->name, desc);
	}
	if (numerics != CTQ_ACT_NUMERICS_CTQ)
		printf("numerics: %s (KERNEL-L2 is the distance to ctq's exact-quantized reference, not judged)\n",
		       ctq_act_numerics_name(numerics));
	else
		printf("policy: kernel rel-L2 <= %g; ", policy->kernel_rel_l2_max);
	printf("%squantization rel-L2 <= %g gaussian, %g outliers, %g zero-rows (%s)\n\n",
	       numerics != CTQ_ACT_NUMERICS_CTQ ? "policy: " : "", policy->quant_rel_l2_max[CTQ_PA_GAUSSIAN],
	       policy->quant_rel_l2_max[CTQ_PA_OUTLIERS], policy->quant_rel_l2_max[CTQ_PA_ZERO_ROWS],
	       policy->source);
	printf("%-14s %6s %6s %5s %-10s %-10s %-9s %5s %5s %11s %11s  %s\n", "LAYER", "K", "N", "M",
	       "WEIGHTS", "ACTS", "BACKEND", "NaN", "Inf", "KERNEL-L2", "QUANT-L2", "VERDICT");
}

/* What each result does as it comes: the table's row (its header with
 * the first), probe.csv's row. */
struct printer {
	const struct ctq_probe_session *S;
	enum ctq_act_numerics numerics;
	struct ctq_csv *csv;
	bool header_printed;
	bool wna16; /* weight-only rows: WEIGHTS shows the layout too */
};

static void on_result(void *ctx, const struct ctq_probe_result *r)
{
	struct printer *P = ctx;
	if (!P->header_printed)
		print_header(P->S->backends, P->S->n_backends, P->numerics, P->S->policy);
	P->header_printed = true;
	char weights[64];
	snprintf(weights, sizeof weights, "%s%s%s", P->wna16 ? r->kernel_path : "", P->wna16 ? ":" : "",
		 ctq_probe_weights_name(r->weights));
	printf("%-14s %6lld %6lld %5lld %-10s %-10s %-9s %5lld %5lld %11.3e %11.3e  %s\n", r->layer,
	       (long long)r->K, (long long)r->N, (long long)r->M, weights,
	       ctq_probe_acts_name(r->acts), r->backend, (long long)r->nan_count,
	       (long long)r->inf_count, r->kernel_rel_l2, r->quant_rel_l2, r->passed ? "pass" : "FAIL");
	if (!r->passed)
		printf("    %s\n", r->reason);
	fflush(stdout);
	ctq_fam_probe_csv_row(P->csv, r);
}

struct probe_opts {
	const char *shapes, *backend, *policy_path, *model, *kernel_lib, *m_list, *wna16;
	bool backend_given;
	struct ctq_opt_out out;
	bool real_asel[CTQ_PA_COUNT], wsel[CTQ_PW_COUNT], asel[CTQ_PA_COUNT];
	long seed, kernel_timeout;
	unsigned defects;
	enum ctq_act_numerics numerics;
	int64_t ms[16];
	size_t n_m;
	bool use_ref, use_cuda;
};

/* --acts / --real-acts A,B,... (dst: bool[CTQ_PA_COUNT]). */
static bool opt_acts(const char *cmd, const char *name, const char *v, void *dst)
{
	return parse_list(cmd, name, v, dst, CTQ_PA_COUNT, parse_a,
			  "gaussian, outliers, zero-rows, bf16-limit");
}

/* --weights A,B,... (dst: bool[CTQ_PW_COUNT]). */
static bool opt_weights(const char *cmd, const char *name, const char *v, void *dst)
{
	return parse_list(cmd, name, v, dst, CTQ_PW_COUNT, parse_w, "random, pm127, constant, zero-row");
}

/* --inject-defect D, repeatable (dst: unsigned *, CTQ_DEFECT_* bits). */
static bool opt_defect(const char *cmd, const char *name, const char *v, void *dst)
{
	unsigned *defects = dst;
	if (!strcmp(v, "scale-shift"))
		*defects |= CTQ_DEFECT_SCALE_SHIFT;
	else if (!strcmp(v, "epilogue-nan"))
		*defects |= CTQ_DEFECT_EPILOGUE_NAN;
	else if (!strcmp(v, "transposed-w"))
		*defects |= CTQ_DEFECT_TRANSPOSED_W;
	else {
		fprintf(stderr, "ctq %s: %s takes scale-shift, epilogue-nan, transposed-w\n", cmd, name);
		return false;
	}
	return true;
}

/* The checks after the options: --m's list, the backends, the combinations
 * refused. -1 when they pass, else the exit code. */
static int check_opts(struct probe_opts *o)
{
	long ms[sizeof o->ms / sizeof *o->ms];
	const int n_m = ctq_opt_int_list("probe", "--m", o->m_list, 1, 1 << 20, ms, (int)(sizeof ms / sizeof *ms));
	if (n_m < 0)
		return CTQ_EXIT_USAGE;
	for (o->n_m = 0; o->n_m < (size_t)n_m; o->n_m++)
		o->ms[o->n_m] = ms[o->n_m];
	o->use_ref = !strcmp(o->backend, "reference") || !strcmp(o->backend, "both");
	o->use_cuda = !strcmp(o->backend, "cuda") || !strcmp(o->backend, "both");
	if (!o->use_ref && !o->use_cuda) {
		fprintf(stderr, "ctq probe: --backend is \"%s\"; expected reference, cuda or both\n",
			o->backend);
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_act_numerics_backend("probe", o->numerics, o->backend))
		return CTQ_EXIT_USAGE;
	if (o->kernel_lib && (o->defects || o->numerics != CTQ_ACT_NUMERICS_CTQ)) {
		fprintf(stderr, "ctq probe: --kernel-lib takes neither --inject-defect (a plug-in plants its "
				"own defects) nor --act-numerics (a plug-in implements ctq's numerics)\n");
		return CTQ_EXIT_USAGE;
	}
	if (o->kernel_lib && !o->backend_given)
		o->use_ref = o->use_cuda = false;
	if (o->wna16 && !o->kernel_lib) {
		fprintf(stderr, "ctq probe: --wna16 probes a weight-only plug-in: it needs --kernel-lib\n");
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_out_ok("probe", &o->out))
		return CTQ_EXIT_USAGE;
	return -1;
}

/* Parses and checks the options; as ctq_opt_parse, -1 when the command may
 * run, else its exit code. */
static int parse_opts(int argc, char **argv, struct probe_opts *o)
{
	*o = (struct probe_opts){.shapes = "qwen3-4b", .m_list = "64", .seed = 1,
				 .kernel_timeout = (long)CTQ_PLUGIN_TIMEOUT_DEFAULT_S,
				 .numerics = CTQ_ACT_NUMERICS_CTQ,
				 .real_asel = {true, true, false, false},
				 .wsel = {false, true, true, true, true},
				 .asel = {true, true, true, true}};
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--shapes", &o->shapes),
		CTQ_OPT_STR("--model", &o->model),
		CTQ_OPT_FN("--real-acts", o->real_asel, opt_acts),
		CTQ_OPT_STR("--backend", &o->backend),
		CTQ_OPT_STR("--kernel-lib", &o->kernel_lib),
		CTQ_OPT_STR("--wna16", &o->wna16),
		CTQ_OPT_INT("--kernel-timeout", &o->kernel_timeout, 1, 86400),
		CTQ_OPT_FN("--act-numerics", &o->numerics, ctq_opt_fn_act_numerics),
		CTQ_OPT_STR("--policy", &o->policy_path),
		CTQ_OPT_OUT(&o->out),
		CTQ_OPT_STR("--m", &o->m_list),
		CTQ_OPT_INT("--seed", &o->seed, 0, 0x7fffffffL),
		CTQ_OPT_FN("--weights", o->wsel, opt_weights),
		CTQ_OPT_FN("--acts", o->asel, opt_acts),
		CTQ_OPT_FN("--inject-defect", &o->defects, opt_defect),
		CTQ_OPT_END,
	};
	int rc = ctq_opt_parse("probe", argc, argv, opts, NULL, 0, help);
	if (rc >= 0)
		return rc;
	o->backend_given = o->backend != NULL;
	if (!o->backend)
		o->backend = "reference";
	return check_opts(o);
}

/* probe.json and the manifest's "probe" object. */
static enum ctq_status write_results(struct ctq_run *run, const struct probe_opts *o,
				     const struct ctq_probe_session *S, const char *plugin_name,
				     struct ctq_error *err)
{
	char *text = cJSON_Print(S->rows);
	enum ctq_status st = text ? ctq_run_write_file(run, "probe.json", text, strlen(text), err)
				  : ctq_error_set(err, CTQ_ERR_NOMEM, "probe.json", "out of memory");
	free(text);
	if (st)
		return st;
	const struct ctq_probe_summary sum = {
		.backend = o->kernel_lib && !o->backend_given ? "none" : o->backend,
		.kernel_lib = o->kernel_lib,
		.kernel_plugin = plugin_name,
		.numerics = o->numerics,
		.model = o->model,
		.seed = o->seed,
		.policy = S->policy->source,
	};
	cJSON *summary = ctq_probe_summary_json(&sum, S);
	if (!summary)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "manifest", "out of memory");
	cJSON_AddItemToObject(run->manifest, "probe", summary);
	return CTQ_OK;
}

int ctq_cmd_probe(int argc, char **argv)
{
	struct probe_opts o;
	int prc = parse_opts(argc, argv, &o);
	if (prc >= 0)
		return prc;
	struct ctq_probe_policy policy;
	ctq_probe_policy_default(&policy);
	struct ctq_error err = {0};
	if (o.policy_path && ctq_probe_policy_load(&policy, o.policy_path, &err)) {
		ctq_print_error("probe", &err);
		return CTQ_EXIT_USAGE;
	}
	struct ctq_probe_shapes shapes;
	enum ctq_status st = ctq_probe_shapes_parse(o.shapes, &shapes, &err);
	if (st) {
		fprintf(stderr, st == CTQ_ERR_NOMEM ? "ctq probe: out of memory\n"
				       : "ctq probe: --shapes is \"%s\"; expected qwen3-4b, qwen3-0.6b, tiny or K:N[,K:N...]\n",
			o.shapes);
		ctq_probe_shapes_free(&shapes);
		return CTQ_EXIT_USAGE;
	}
	struct ctq_backend backends[CTQ_PROBE_MAX_BACKENDS];
	int rc = CTQ_EXIT_USAGE;
	memset(backends, 0, sizeof backends);
	struct ctq_run run;
	memset(&run, 0, sizeof run);
	struct ctq_csv csv;
	memset(&csv, 0, sizeof csv);
	struct ctq_probe_session S = {.backends = backends, .ms = o.ms, .n_m = o.n_m,
				      .seed = (uint64_t)o.seed, .policy = &policy};
	memcpy(S.wsel, o.wsel, sizeof S.wsel);
	memcpy(S.asel, o.asel, sizeof S.asel);
	memcpy(S.real_asel, o.real_asel, sizeof S.real_asel);
	struct printer P = {&S, o.numerics, &csv, false, false};
	S.on_result = on_result;
	S.ctx = &P;
	if (ctq_probe_session_init(&S, &err) ||
	    ctq_probe_backends_open(backends, &S.n_backends, o.use_ref, o.use_cuda, o.kernel_lib,
				    o.defects, o.numerics, &err))
		goto fail;
	if (o.kernel_lib) {
		ctq_backend_plugin_set_timeout(&backends[S.n_backends - 1], (double)o.kernel_timeout);
		S.serial = true; /* a CPU plug-in's calls fork: no worker thread beside them */
	}
	/* A weight-only plug-in (ABI 2 without the W8A8 pair) leaves the W8A8
	 * probes to ctq's backends and runs the weight-only ones alone. */
	const int n_opened = S.n_backends;
	struct ctq_backend *plug = o.kernel_lib ? &backends[n_opened - 1] : NULL;
	const struct ctq_kernel_plugin *pt = plug ? ctq_backend_plugin_table(plug) : NULL;
	struct ctq_wna16_cfg cfgs[CTQ_WNA16_MAX_LAYOUTS];
	int n_cfg = 0;
	if (pt && !pt->gemm_w8a8)
		S.n_backends--;
	if (pt && (st = ctq_wna16_layouts(pt, o.kernel_lib, o.wna16, cfgs, &n_cfg, &err)))
		goto fail;
	/* The kernel threshold is for kernels of ctq's formula. */
	if (o.numerics != CTQ_ACT_NUMERICS_CTQ)
		policy.kernel_rel_l2_max = -1.0;
	if (ctq_run_begin(&run, o.out.dir, o.out.force, "probe", argc, argv, &err) ||
	    ctq_run_csv_open(&run, "probe.csv", &csv, csv_header, sizeof csv_header / sizeof *csv_header,
			     &err))
		goto fail;
	if (o.model && S.n_backends)
		st = ctq_probe_session_model(&S, o.model, &err);
	for (size_t l = 0; l < shapes.n && !o.model && S.n_backends && !st; l++)
		st = ctq_probe_session_layer(&S, &shapes.v[l], S.wsel, S.asel, &err);
	size_t n_skipped = 0;
	if (n_cfg) {
		/* the table's header names the plug-in */
		S.backends = plug;
		S.n_backends = 1;
		P.wna16 = true;
	}
	if (n_cfg && o.model && !st)
		st = ctq_probe_wna16_model(&S, plug, o.model, &n_skipped, &err);
	for (size_t l = 0; l < shapes.n && n_cfg && !o.model && !st; l++)
		st = ctq_probe_wna16_layer(&S, plug, &shapes.v[l], cfgs, n_cfg, &n_skipped, &err);
	S.backends = backends;
	S.n_backends = n_opened;
	if (st)
		goto fail;
	if (n_skipped)
		printf("probe: %zu weight-only probe(s) not run: a layout whose group size does not "
		       "divide K or that the plug-in does not declare, a module that is not "
		       "pack-quantized, or zero-rows at M = 1 (the output is the bias alone)\n",
		       n_skipped);
	if (ctq_csv_close(&csv, &err) ||
	    write_results(&run, &o, &S, o.kernel_lib ? backends[S.n_backends - 1].ops->name : NULL, &err))
		goto fail;
	char final_dir[sizeof run.final_dir];
	snprintf(final_dir, sizeof final_dir, "%s", run.final_dir);
	if (ctq_run_commit(&run, &err))
		goto fail;
	printf("\nprobe: results in %s/ (probe.csv, probe.json)\n", final_dir);
	printf("probe: %zu passed, %zu failed\n", S.passed, S.failed);
	rc = S.failed ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
	goto done;
fail:
	rc = ctq_print_error_exit("probe", &err);
	ctq_csv_close(&csv, NULL);
	ctq_run_abort(&run);
done:
	ctq_probe_session_free(&S);
	for (int i = 0; i < S.n_backends; i++)
		ctq_backend_close(&backends[i]);
	ctq_probe_shapes_free(&shapes);
	return rc;
}
