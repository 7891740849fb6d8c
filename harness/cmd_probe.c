/* ctq probe: kernel isolation per linear geometry (conform/probe.h), on the
 * reference backend, the CUDA backend, or both; CSV + JSON into a run
 * directory and exit 1 on any failure. */
#include "checkpoint/target.h"
#include "harness/commands.h"
#include "core/arena.h"
#include "conform/probe.h"
#include "core/dtype.h"
#include "checkpoint/loader.h"
#include "quant/regex.h"
#include "quant/resolve.h"
#include "core/fileio.h"
#include "results/csv_out.h"
#include "results/run.h"
#include "families/probe.h"
#include "backend/plugin.h"

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
	       "                    entry symbol or another ABI version: exit 2\n"
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
	       "      3 no GPU for cuda (or a CUDA plug-in), or a plug-in call failed.\n");
}

struct shape {
	const char *name;
	int64_t K, N;
};

static const struct shape qwen3_4b[] = {
	{"qkv_proj", 2560, 6144}, {"o_proj", 4096, 2560}, {"gate_up_proj", 2560, 19456},
	{"down_proj", 9728, 2560}};
static const struct shape qwen3_06b[] = {
	{"qkv_proj", 1024, 4096}, {"o_proj", 2048, 1024}, {"gate_up_proj", 1024, 6144},
	{"down_proj", 3072, 1024}};
static const struct shape tiny[] = {
	{"qkv_proj", 64, 128}, {"o_proj", 64, 64}, {"gate_up_proj", 64, 352}, {"down_proj", 176, 64}};

static int parse_shapes(const char *s, struct ctq_probe_layer **out, size_t *n)
{
	const struct shape *preset = NULL;
	size_t np = 0;
	if (!strcmp(s, "qwen3-4b"))
		preset = qwen3_4b, np = 4;
	else if (!strcmp(s, "qwen3-0.6b"))
		preset = qwen3_06b, np = 4;
	else if (!strcmp(s, "tiny"))
		preset = tiny, np = 4;
	if (preset) {
		*out = ctq_calloc(np, sizeof **out);
		if (!*out)
			return -1;
		for (size_t i = 0; i < np; i++)
			(*out)[i] = (struct ctq_probe_layer){.name = preset[i].name, .K = preset[i].K, .N = preset[i].N};
		*n = np;
		return 0;
	}
	size_t cap = 1;
	for (const char *c = s; *c; c++)
		cap += *c == ',';
	*out = ctq_calloc(cap, sizeof **out);
	if (!*out)
		return -1;
	*n = 0;
	const char *c = s;
	while (*c) {
		char *end;
		long long K = strtoll(c, &end, 10);
		if (end == c || *end != ':')
			return 1;
		c = end + 1;
		long long N = strtoll(c, &end, 10);
		if (end == c || (*end && *end != ',') || K < 1 || N < 1 || K > (1LL << 20) || N > (1LL << 20))
			return 1;
		char *name = ctq_malloc(48);
		if (!name)
			return -1;
		snprintf(name, 48, "%lld:%lld", K, N);
		(*out)[(*n)++] = (struct ctq_probe_layer){.name = name, .K = K, .N = N};
		c = *end ? end + 1 : end;
	}
	return *n ? 0 : 1;
}

static bool parse_list(const char *s, bool *sel, int count,
		       bool (*parse)(const char *, int *))
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	for (int i = 0; i < count; i++)
		sel[i] = false;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		int v;
		if (!parse(tok, &v))
			return false;
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

static void csv_row(struct ctq_csv *w, const struct ctq_probe_result *r)
{
	ctq_csv_field(w, r->layer);
	ctq_csv_fieldf(w, "%lld", (long long)r->K);
	ctq_csv_fieldf(w, "%lld", (long long)r->N);
	ctq_csv_fieldf(w, "%lld", (long long)r->M);
	ctq_csv_field(w, ctq_probe_weights_name(r->weights));
	ctq_csv_field(w, ctq_probe_acts_name(r->acts));
	ctq_csv_field(w, r->backend);
	ctq_csv_field(w, r->kernel_path);
	ctq_csv_fieldf(w, "%lld", (long long)r->nan_count);
	ctq_csv_fieldf(w, "%lld", (long long)r->inf_count);
	ctq_csv_fieldf(w, "%lld", (long long)r->nonfinite_mismatch);
	ctq_csv_field(w, r->all_zero ? "true" : "false");
	ctq_csv_fieldf(w, "%.17g", r->max_abs_err);
	ctq_csv_fieldf(w, "%lld", (long long)r->max_m);
	ctq_csv_fieldf(w, "%lld", (long long)r->max_n);
	ctq_csv_fieldf(w, "%.9g", r->ref_at_max);
	ctq_csv_fieldf(w, "%.9g", r->got_at_max);
	ctq_csv_fieldf(w, "%.17g", r->kernel_rel_l2);
	ctq_csv_fieldf(w, "%.17g", r->quant_rel_l2);
	ctq_csv_field(w, r->passed ? "pass" : "fail");
	ctq_csv_field(w, r->reason);
	ctq_csv_end_row(w);
}

static cJSON *json_row(const struct ctq_probe_result *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "layer", r->layer);
	cJSON_AddNumberToObject(o, "K", (double)r->K);
	cJSON_AddNumberToObject(o, "N", (double)r->N);
	cJSON_AddNumberToObject(o, "M", (double)r->M);
	cJSON_AddStringToObject(o, "weights", ctq_probe_weights_name(r->weights));
	cJSON_AddStringToObject(o, "acts", ctq_probe_acts_name(r->acts));
	cJSON_AddStringToObject(o, "backend", r->backend);
	cJSON_AddStringToObject(o, "kernel_path", r->kernel_path);
	cJSON_AddNumberToObject(o, "nan_count", (double)r->nan_count);
	cJSON_AddNumberToObject(o, "inf_count", (double)r->inf_count);
	cJSON_AddNumberToObject(o, "nonfinite_mismatch", (double)r->nonfinite_mismatch);
	cJSON_AddBoolToObject(o, "all_zero", r->all_zero);
	cJSON_AddNumberToObject(o, "max_abs_err", r->max_abs_err);
	cJSON_AddNumberToObject(o, "kernel_rel_l2", r->kernel_rel_l2);
	if (r->quant_rel_l2 == r->quant_rel_l2)
		cJSON_AddNumberToObject(o, "quant_rel_l2", r->quant_rel_l2);
	else
		cJSON_AddNullToObject(o, "quant_rel_l2");
	if (r->q_mismatch >= 0) {
		cJSON_AddNumberToObject(o, "q_mismatch", (double)r->q_mismatch);
		cJSON_AddNumberToObject(o, "s_mismatch", (double)r->s_mismatch);
	}
	if (r->y_mismatch >= 0)
		cJSON_AddNumberToObject(o, "y_mismatch", (double)r->y_mismatch);
	cJSON_AddBoolToObject(o, "passed", r->passed);
	if (!r->passed)
		cJSON_AddStringToObject(o, "reason", r->reason);
	return o;
}

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

/* One probe session: the backends, the policy, the outputs, the tallies.
 * The header goes out with the first row, so that an error before any
 * row (a checkpoint that does not open) prints no table. */
struct session {
	struct ctq_backend *backends;
	int n_backends;
	const int64_t *ms;
	size_t n_m;
	long seed;
	const struct ctq_probe_policy *policy;
	struct ctq_csv *csv;
	cJSON *rows;
	size_t passed, failed;
	enum ctq_act_numerics numerics;
	bool header_printed;
};

/* Every selected (weights, acts, M, backend) combination of one layer. */
static enum ctq_status run_layer(struct session *S, const struct ctq_probe_layer *L,
				 const bool *wsel, const bool *asel, struct ctq_error *err)
{
	struct ctq_backend *bes[3];
	for (int bi = 0; bi < S->n_backends && bi < 3; bi++)
		bes[bi] = &S->backends[bi];
	for (int w = 0; w < CTQ_PW_COUNT; w++)
		for (int a = 0; a < CTQ_PA_COUNT; a++)
			for (size_t mi = 0; mi < S->n_m; mi++) {
				if (!wsel[w] || !asel[a])
					continue;
				/* the oracle once, every backend held to it */
				struct ctq_probe_result res[3];
				enum ctq_status st = ctq_probe_run_many(bes, S->n_backends, L,
									(enum ctq_probe_weights)w,
									(enum ctq_probe_acts)a, S->ms[mi],
									(uint64_t)S->seed, S->policy, res, err);
				if (st)
					return st;
				for (int bi = 0; bi < S->n_backends; bi++) {
					const struct ctq_probe_result *r = &res[bi];
					r->passed ? S->passed++ : S->failed++;
					if (!S->header_printed)
						print_header(S->backends, S->n_backends, S->numerics, S->policy);
					S->header_printed = true;
					printf("%-14s %6lld %6lld %5lld %-10s %-10s %-9s %5lld %5lld %11.3e %11.3e  %s\n",
					       r->layer, (long long)r->K, (long long)r->N, (long long)r->M,
					       ctq_probe_weights_name(r->weights), ctq_probe_acts_name(r->acts),
					       r->backend, (long long)r->nan_count, (long long)r->inf_count,
					       r->kernel_rel_l2, r->quant_rel_l2, r->passed ? "pass" : "FAIL");
					if (!r->passed)
						printf("    %s\n", r->reason);
					fflush(stdout);
					csv_row(S->csv, r);
					cJSON_AddItemToArray(S->rows, json_row(r));
				}
			}
	return CTQ_OK;
}

/* The checkpoint's linear modules with their real weights, then the
 * synthetic patterns on each distinct (K, N). */
static enum ctq_status run_model(struct session *S, const char *dir, const bool *wsel,
				 const bool *asel, const bool *real_asel, struct ctq_error *err)
{
	struct ctq_target tg;
	const struct ctq_plan *plan = &tg.plan;
	const struct ctq_modules *mods = &tg.mods;
	struct ctq_shard_plan sp;
	memset(&sp, 0, sizeof sp);
	enum ctq_status st = ctq_harness_plan_open(&tg, dir, err);
	int64_t (*geo)[2] = NULL;
	size_t n_geo = 0;
	if (st)
		goto done;
	if (plan->n_errors) {
		for (size_t i = 0; i < plan->n; i++)
			if (plan->entries[i].error) {
				st = ctq_error_set(err, plan->entries[i].error, mods->v[i].name, "%s",
						   plan->entries[i].message);
				goto done;
			}
	}
	if ((st = ctq_checkpoint_open(&tg.ck, dir, err)) || (st = ctq_shard_plan_build(&sp, plan, 1, err)))
		goto done;
	geo = ctq_calloc(mods->n + 1, sizeof *geo);
	if (!geo) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	bool real_w[CTQ_PW_COUNT] = {true, false, false, false, false};
	for (size_t i = 0; i < mods->n && !st; i++) {
		if (mods->v[i].kind != CTQ_MODULE_LINEAR)
			continue;
		struct ctq_linear l;
		if ((st = ctq_load_linear(&tg.ck, plan, &sp, i, 0, &l, err)))
			break;
		float *wf = NULL;
		struct ctq_probe_layer L = {.name = l.name, .K = l.K, .N = l.N, .bias = l.bias};
		if (l.quantized) {
			L.wq = l.w_i8;
			L.sw = l.scale;
		} else {
			wf = ctq_malloc((size_t)(l.N * l.K) * sizeof *wf);
			if (!wf) {
				ctq_linear_free(&l);
				st = ctq_error_set(err, CTQ_ERR_NOMEM, l.name, "out of memory");
				break;
			}
			ctq_convert_to_f32(l.w_bf16, CTQ_DTYPE_BF16, (size_t)(l.N * l.K), wf);
			L.w = wf;
		}
		st = run_layer(S, &L, real_w, real_asel, err);
		size_t g;
		for (g = 0; g < n_geo; g++)
			if (geo[g][0] == l.K && geo[g][1] == l.N)
				break;
		if (g == n_geo) {
			geo[n_geo][0] = l.K;
			geo[n_geo][1] = l.N;
			n_geo++;
		}
		free(wf);
		ctq_linear_free(&l);
	}
	for (size_t g = 0; g < n_geo && !st; g++) {
		char name[48];
		snprintf(name, sizeof name, "%lld:%lld", (long long)geo[g][0], (long long)geo[g][1]);
		struct ctq_probe_layer L = {.name = name, .K = geo[g][0], .N = geo[g][1]};
		st = run_layer(S, &L, wsel, asel, err);
	}
done:
	free(geo);
	ctq_shard_plan_free(&sp);
	ctq_target_close(&tg);
	return st;
}

/* The backends probed, in order: reference, cuda, the plug-in; *n counts
 * those opened (closed by the caller, also on error). */
static enum ctq_status open_backends(struct ctq_backend *b, int *n, bool use_ref, bool use_cuda,
				     const char *kernel_lib, unsigned defects,
				     enum ctq_act_numerics numerics, struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	if (use_ref && !(st = ctq_backend_reference(&b[*n], err)))
		(*n)++;
	if (!st && use_cuda && !(st = ctq_backend_cuda(&b[*n], 0, err)))
		(*n)++;
	for (int i = 0; i < *n && !st; i++) {
		b[i].defects = defects;
		st = ctq_backend_set_act_numerics(&b[i], numerics, err);
	}
	if (!st && kernel_lib && !(st = ctq_backend_plugin(&b[*n], kernel_lib, err)))
		(*n)++;
	return st;
}

struct probe_opts {
	const char *shapes, *backend, *policy_path, *model, *kernel_lib, *m_list;
	bool backend_given;
	struct ctq_opt_out out;
	bool real_asel[CTQ_PA_COUNT], wsel[CTQ_PW_COUNT], asel[CTQ_PA_COUNT];
	long seed;
	unsigned defects;
	enum ctq_act_numerics numerics;
	int64_t ms[16];
	size_t n_m;
	bool use_ref, use_cuda;
};

/* --acts / --real-acts A,B,... (dst: bool[CTQ_PA_COUNT]). */
static bool opt_acts(const char *cmd, const char *name, const char *v, void *dst)
{
	if (parse_list(v, dst, CTQ_PA_COUNT, parse_a))
		return true;
	fprintf(stderr, "ctq %s: %s takes gaussian, outliers, zero-rows, bf16-limit\n", cmd, name);
	return false;
}

/* --weights A,B,... (dst: bool[CTQ_PW_COUNT]). */
static bool opt_weights(const char *cmd, const char *name, const char *v, void *dst)
{
	if (parse_list(v, dst, CTQ_PW_COUNT, parse_w))
		return true;
	fprintf(stderr, "ctq %s: %s takes random, pm127, constant, zero-row\n", cmd, name);
	return false;
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
	char buf[256];
	snprintf(buf, sizeof buf, "%s", o->m_list);
	for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
		long m;
		if (o->n_m == 16 || !ctq_opt_int("probe", "--m", t, 1, 1 << 20, &m))
			return CTQ_EXIT_USAGE;
		o->ms[o->n_m++] = m;
	}
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
	if (!ctq_opt_out_ok("probe", &o->out))
		return CTQ_EXIT_USAGE;
	return -1;
}

/* Parses and checks the options; as ctq_opt_parse, -1 when the command may
 * run, else its exit code. */
static int parse_opts(int argc, char **argv, struct probe_opts *o)
{
	*o = (struct probe_opts){.shapes = "qwen3-4b", .m_list = "64", .seed = 1,
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
				     const struct session *S, const char *plugin_name,
				     const struct ctq_probe_policy *policy, struct ctq_error *err)
{
	char path[1200];
	char *text = cJSON_Print(S->rows);
	if (!text || ctq_file_write_atomic(ctq_run_path(run, "probe.json", path, sizeof path), text,
					   strlen(text), err)) {
		free(text);
		if (!err->status)
			ctq_error_set(err, CTQ_ERR_NOMEM, "probe.json", "out of memory");
		return err->status;
	}
	free(text);
	cJSON *summary = cJSON_AddObjectToObject(run->manifest, "probe");
	cJSON_AddStringToObject(summary, "backend",
				o->kernel_lib && !o->backend_given ? "none" : o->backend);
	if (o->kernel_lib) {
		cJSON_AddStringToObject(summary, "kernel_lib", o->kernel_lib);
		cJSON_AddStringToObject(summary, "kernel_plugin", plugin_name);
	}
	cJSON_AddStringToObject(summary, "act_numerics", ctq_act_numerics_name(o->numerics));
	if (o->model)
		cJSON_AddStringToObject(summary, "model", o->model);
	cJSON_AddNumberToObject(summary, "passed", (double)S->passed);
	cJSON_AddNumberToObject(summary, "failed", (double)S->failed);
	cJSON_AddNumberToObject(summary, "seed", (double)o->seed);
	cJSON_AddStringToObject(summary, "policy", policy->source);
	return CTQ_OK;
}

int ctq_cmd_probe(int argc, char **argv)
{
	struct probe_opts o;
	int prc = parse_opts(argc, argv, &o);
	if (prc >= 0)
		return prc;
	const char *shapes = o.shapes, *model = o.model, *kernel_lib = o.kernel_lib;
	enum ctq_act_numerics numerics = o.numerics;
	struct ctq_probe_policy policy;
	ctq_probe_policy_default(&policy);
	struct ctq_error err = {0};
	if (o.policy_path && ctq_probe_policy_load(&policy, o.policy_path, &err)) {
		ctq_print_error("probe", &err);
		return CTQ_EXIT_USAGE;
	}
	struct ctq_probe_layer *layers = NULL;
	size_t n_layers = 0;
	int pr = parse_shapes(shapes, &layers, &n_layers);
	if (pr) {
		fprintf(stderr, pr < 0 ? "ctq probe: out of memory\n"
				       : "ctq probe: --shapes is \"%s\"; expected qwen3-4b, qwen3-0.6b, tiny or K:N[,K:N...]\n",
			shapes);
		free(layers);
		return CTQ_EXIT_USAGE;
	}
	struct ctq_backend backends[3];
	int n_backends = 0, rc = CTQ_EXIT_USAGE;
	memset(backends, 0, sizeof backends);
	struct ctq_run run;
	memset(&run, 0, sizeof run);
	struct ctq_csv csv;
	memset(&csv, 0, sizeof csv);
	cJSON *rows = cJSON_CreateArray();
	if (open_backends(backends, &n_backends, o.use_ref, o.use_cuda, kernel_lib, o.defects, numerics,
			  &err))
		goto fail;
	/* The kernel threshold is for kernels of ctq's formula. */
	if (numerics != CTQ_ACT_NUMERICS_CTQ)
		policy.kernel_rel_l2_max = -1.0;
	char path[1200];
	if (ctq_run_begin(&run, o.out.dir, o.out.force, "probe", argc, argv, &err) ||
	    ctq_csv_open(&csv, ctq_run_path(&run, "probe.csv", path, sizeof path), csv_header,
			 sizeof csv_header / sizeof *csv_header, &err))
		goto fail;
	struct session S = {backends, n_backends, o.ms, o.n_m, o.seed, &policy, &csv, rows, 0, 0, numerics, false};
	enum ctq_status rst = CTQ_OK;
	if (model)
		rst = run_model(&S, model, o.wsel, o.asel, o.real_asel, &err);
	for (size_t l = 0; l < n_layers && !model && !rst; l++)
		rst = run_layer(&S, &layers[l], o.wsel, o.asel, &err);
	if (rst)
		goto fail;
	size_t passed = S.passed, failed = S.failed;
	if (ctq_csv_close(&csv, &err) ||
	    write_results(&run, &o, &S, kernel_lib ? backends[n_backends - 1].ops->name : NULL, &policy,
			  &err))
		goto fail;
	char final_dir[sizeof run.final_dir];
	snprintf(final_dir, sizeof final_dir, "%s", run.final_dir);
	if (ctq_run_commit(&run, &err))
		goto fail;
	printf("\nprobe: results in %s/ (probe.csv, probe.json)\n", final_dir);
	printf("probe: %zu passed, %zu failed\n", passed, failed);
	rc = failed ? CTQ_EXIT_FAIL : CTQ_EXIT_OK;
	goto done;
fail:
	rc = ctq_print_error_exit("probe", &err);
	ctq_csv_close(&csv, NULL);
	ctq_run_abort(&run);
done:
	ctq_probe_release();
	cJSON_Delete(rows);
	for (int i = 0; i < n_backends; i++)
		ctq_backend_close(&backends[i]);
	if (layers && strchr(shapes, ':'))
		for (size_t i = 0; i < n_layers; i++)
			free((char *)layers[i].name);
	free(layers);
	return rc;
}
