/* ctq quantize: a BF16 / F16 / F32 Hugging Face checkpoint becomes a
 * compressed-tensors W8A8 INT8 checkpoint as llm-compressor writes one
 * (checkpoint/quantize.h), through a temporary folder renamed into place once
 * written, self-checked and reported (OUT/quantization_report.csv). */
#include "harness/commands.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "checkpoint/quantize.h"
#include "checkpoint/gptq.h"
#include "checkpoint/quantize_wna16.h"
#include "checkpoint/smooth.h"
#include "eval/calib.h"
#include "results/csv_out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPORT_NAME "quantization_report.csv"
#define RECIPE_NAME "recipe.yaml"

static void help(void)
{
	printf("usage: ctq quantize IN OUT [--ignore NAME|re:PATTERN]... [options]\n"
	       "\n"
	       "Quantizes the checkpoint folder IN (config.json + safetensors, BF16, F16 or F32)\n"
	       "to compressed-tensors W8A8 INT8 in the folder OUT, as llm-compressor's W8A8\n"
	       "scheme writes it: every Linear module but lm_head and the ignored ones gets an\n"
	       "I8 weight [N,K] and a per-channel weight_scale [N,1] in the weight's dtype\n"
	       "(symmetric, scale = row amax / 127 rounded to that dtype, round to nearest\n"
	       "even); activations are quantized per token at run time. Everything else is\n"
	       "copied byte for byte; config.json gains quantization_config (sorted keys,\n"
	       "indent 2); generation and tokenizer files are copied when present.\n"
	       "The written config is resolved back (strict) before OUT appears.\n"
	       "\n"
	       "options:\n"
	       "  --scheme S           w8a8 (the default, as above); w8a16 or w4a16: weight-only\n"
	       "                       int8 / int4 weights in compressed-tensors' pack-quantized\n"
	       "                       format (weight_packed I32, weight_scale, weight_shape),\n"
	       "                       presets W8A16 (per channel), W4A16 (groups of 128);\n"
	       "                       symmetric scale = group amax / (2^(b-1) - 1); strict\n"
	       "                       resolves such a checkpoint but does not execute it\n"
	       "  --group-size G       weight-only: one scale per G input columns (G must divide\n"
	       "                       every quantized module's K); default 128 for w4a16,\n"
	       "                       per channel for w8a16\n"
	       "  --asym               weight-only: zero points (W4A16_ASYM), packed along N in\n"
	       "                       weight_zero_point; scale = (max - min) / (2^b - 1)\n");
	printf("  --recipe R           rtn (the default): round-to-nearest as above, no data;\n"
	       "                       smoothquant: llm-compressor's SmoothQuantModifier, then\n"
	       "                       rtn. The BF16 model runs on --calib-backend over\n"
	       "                       the calibration windows; per hidden channel j the range\n"
	       "                       r_j (max - min) of each input_layernorm /\n"
	       "                       post_attention_layernorm output and w_j = 2 x\n"
	       "                       max |W[:, j]| over [q, k, v] / [gate, up]\n"
	       "                       give s_j = max(r_j^a / w_j^(1-a), 1e-5) (r_j where\n"
	       "                       w_j = 0); the balance weights' columns are multiplied\n"
	       "                       by s, the norm weight divided by it, in the weights'\n"
	       "                       dtype (docs/models.md quotes the library);\n"
	       "                       gptq: llm-compressor's GPTQModifier, layer by layer:\n"
	       "                       each layer's linears see the calibration windows\n"
	       "                       through the already-rounded layers before them\n"
	       "                       (unquantized activations, the rounded weights\n"
	       "                       dequantized, on --calib-backend, as the\n"
	       "                       library calibrates), their inputs' Hessians\n"
	       "                       H = 2/n sum x x^T drive the GPTQ rounding (per-channel\n"
	       "                       scales as rtn's, dampening and blocks below, columns\n"
	       "                       in order), and the rounded layer feeds the next;\n"
	       "                       smoothquant+gptq: smoothquant's smoothing, then gptq\n"
	       "                       on the smoothed model (Red Hat's W8A8 recipe)\n");
	printf("  --calib FILE         calibration text (UTF-8), tokenised with IN/tokenizer.json;\n"
	       "                       the calibrating recipes need it or --calib-ids\n"
	       "  --calib-ids FILE     calibration tokens instead: decimal token ids separated\n"
	       "                       by white space (no tokenizer needed, no BOS added)\n"
	       "  --calib-samples N    calibration windows (default 32)\n"
	       "  --calib-len L        tokens per window (default 512; a BOS first where the\n"
	       "                       tokenizer adds one), at seeded random offsets\n"
	       "  --seed S             window offsets' seed (default 0)\n"
	       "  --calib-backend B    where the calibrating recipes run the BF16 model:\n"
	       "                       reference (the default; f32 activations, exact, the\n"
	       "                       CPU) or cuda (BF16 activations, as PyTorch runs a\n"
	       "                       BF16 model; the observer gets their host copy)\n"
	       "  --save-calib FILE    write the calibration windows to FILE, one window a line\n"
	       "                       (decimal token ids, BOS included), so that another tool\n"
	       "                       calibrates on the same samples\n"
	       "  --smoothing-strength A  a in [0, 1] (default 0.8, llm-compressor's W8A8\n"
	       "                       examples; the modifier's own default is 0.5)\n"
	       "  --save-smoothed DIR  smoothquant recipes: keep the smoothed unquantized\n"
	       "                       checkpoint (what the quantizer rounds) in DIR, same\n"
	       "                       rules as OUT (--force replaces it)\n"
	       "  --dampening-frac F   gptq: F x mean(diag H) added to H's diagonal, F in\n"
	       "                       [0, 1] (default 0.01, the modifier's)\n"
	       "  --block-size B       gptq: columns rounded per block (default 128)\n"
	       "  --actorder A         gptq: static (the default): columns rounded in the order\n"
	       "                       of descending diag(H), un-permuted after, as\n"
	       "                       llm-compressor 0.14's GPTQModifier does for W8A8\n"
	       "                       (actorder static); none: in column order\n"
	       "  --ignore NAME        keep this Linear module unquantized (repeatable); the\n"
	       "                       module is listed in quantization_config.ignore\n"
	       "  --ignore re:PATTERN  keep every Linear module PATTERN matches (Python\n"
	       "                       re.match); the matches are listed by name\n"
	       "  --max-shard-bytes N  shard size limit (default 5000000000, transformers' 5GB)\n"
	       "  --weight-bits N      round the weights to an N-bit symmetric grid, N 2..8\n"
	       "                       (scale = row amax / (2^(N-1) - 1), q clamped to\n"
	       "                       +-(2^(N-1) - 1)), stored as int8: a simulation of lower\n"
	       "                       precision that runs as any W8A8 checkpoint (config.json\n"
	       "                       records ctq_simulated_weight_bits); 8, the default, is W8A8\n"
	       "  --force              replace OUT if it exists and is not empty\n"
	       "  --quiet              no progress on stderr\n"
	       "\n"
	       "OUT/quantization_report.csv: module, N, K, rel_l2 (||q*s - w|| / ||w|| per\n"
	       "module, w the smoothed weight under smoothquant); OUT/recipe.yaml: the recipe\n"
	       "as llm-compressor would write it (SmoothQuantModifier with its strength and\n"
	       "mappings, then QuantizationModifier or GPTQModifier W8A8); stdout gets a\n"
	       "summary line with the recipe and the mean and max rel-L2.\n"
	       "\n"
	       "exit: 0 written; 1 the written checkpoint failed its self-check (nothing is\n"
	       "      left behind); 2 bad usage or bad input (OUT is not created).\n");
}

static enum ctq_status write_report(const char *dir, const struct ctq_quantize_result *r,
				    struct ctq_error *err)
{
	static const char *const header[] = {"module", "N", "K", "rel_l2"};
	char *path = ctq_path_join(dir, REPORT_NAME);
	if (!path)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	struct ctq_csv csv;
	enum ctq_status st = ctq_csv_open(&csv, path, header, 4, err);
	if (!st) {
		for (size_t i = 0; i < r->n_modules; i++) {
			const struct ctq_quantize_module *m = &r->modules[i];
			ctq_csv_field(&csv, m->name);
			ctq_csv_fieldf(&csv, "%lld", (long long)m->N);
			ctq_csv_fieldf(&csv, "%lld", (long long)m->K);
			ctq_csv_fieldf(&csv, "%.17g", m->rel_l2);
			ctq_csv_end_row(&csv);
		}
		st = ctq_csv_close(&csv, err);
	}
	free(path);
	return st;
}

/* A YAML single-quoted scalar. */
static void yaml_quoted(FILE *f, const char *v)
{
	fputc('\'', f);
	for (; *v; v++) {
		if (*v == '\'')
			fputc('\'', f);
		fputc(*v, f);
	}
	fputc('\'', f);
}

/* OUT/recipe.yaml: the recipe as llm-compressor's oneshot saves it beside
 * the model (stage, modifiers, their arguments), so that the checkpoint
 * says how it was made. The calibration set is no recipe field; a comment
 * records it. */
static enum ctq_status write_recipe(const char *dir, const struct ctq_quantize_result *r,
				    const char *recipe, bool smooth, double alpha, bool gptq,
				    const struct ctq_calib_gptq_options *go, const char *calib,
				    long samples, long len, long seed, const char *calib_backend,
				    const struct ctq_packed_args *wa, struct ctq_error *err)
{
	char *path = ctq_path_join(dir, RECIPE_NAME);
	if (!path)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	FILE *f = fopen(path, "w");
	if (!f) {
		enum ctq_status st = ctq_error_set(err, CTQ_ERR_IO, path, "cannot create");
		free(path);
		return st;
	}
	fprintf(f, "# written by ctq quantize --recipe %s", recipe);
	if (smooth || gptq) {
		fprintf(f, "; calibration: %ld window(s) of %ld tokens of ", samples, len);
		for (const char *c = calib; *c; c++)
			fputc(*c == '\n' ? ' ' : *c, f);
		fprintf(f, ", seed %ld, on the %s backend", seed, calib_backend);
	}
	fprintf(f, "\ndefault_stage:\n  default_modifiers:\n");
	if (smooth)
		fprintf(f, "    SmoothQuantModifier:\n"
			   "      smoothing_strength: %.15g\n"
			   "      mappings:\n"
			   "      - - ['re:.*q_proj', 're:.*k_proj', 're:.*v_proj']\n"
			   "        - 're:.*input_layernorm'\n"
			   "      - - ['re:.*gate_proj', 're:.*up_proj']\n"
			   "        - 're:.*post_attention_layernorm'\n"
			   "      ignore: []\n",
			alpha);
	fprintf(f, "    %s:\n      targets: [Linear]\n      ignore: [",
		gptq ? "GPTQModifier" : "QuantizationModifier");
	for (size_t i = 0; i < r->n_ignore; i++) {
		fputs(i ? ", " : "", f);
		yaml_quoted(f, r->ignore[i]);
	}
	const char *preset = wa->bits ? ctq_wna16_preset(wa) : "W8A8";
	if (preset) {
		fprintf(f, "]\n      scheme: %s\n", preset);
	} else {
		/* No preset writes these args: the group spelled out. */
		fprintf(f, "]\n      config_groups:\n        group_0:\n          targets: [Linear]\n"
			   "          weights: {num_bits: %d, type: int, symmetric: %s, strategy: %s",
			wa->bits, wa->asym ? "false" : "true", wa->group_size > 0 ? "group" : "channel");
		if (wa->group_size > 0)
			fprintf(f, ", group_size: %lld", (long long)wa->group_size);
		fprintf(f, "}\n");
	}
	if (gptq)
		fprintf(f, "      block_size: %lld\n      dampening_frac: %.15g\n      actorder: %s\n"
			   "      offload_hessians: false\n",
			(long long)go->block_size, go->dampening_frac, go->actorder ? "static" : "null");
	bool bad = ferror(f) != 0;
	bad |= fclose(f) != 0;
	enum ctq_status st = bad ? ctq_error_set(err, CTQ_ERR_IO, path, "cannot write") : CTQ_OK;
	free(path);
	return st;
}

/* Whether a and b name the same existing folder (same device and inode). */
static bool same_dir(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* The --ignore values, in order (argc slots: at most one per argument). */
struct ignore_list {
	const char **v;
	size_t n;
};

/* --ignore NAME | re:PATTERN, repeatable (dst: struct ignore_list *). */
static bool opt_ignore(const char *cmd, const char *name, const char *v, void *dst)
{
	struct ignore_list *l = dst;
	if (!v[0] || !strcmp(v, "re:")) {
		fprintf(stderr, "ctq %s: %s needs a module name or re:PATTERN\n", cmd, name);
		return false;
	}
	l->v[l->n++] = v;
	return true;
}

int ctq_cmd_quantize(int argc, char **argv)
{
	const char *pos[2] = {NULL, NULL};
	const char *in = NULL;
	char *out = NULL;
	struct ignore_list ig = {ctq_calloc((size_t)(argc > 0 ? argc : 1), sizeof *ig.v), 0};
	const char **ignore = ig.v; /* (argc) */
	long max_shard = 0, weight_bits = 8;
	long calib_samples = 32, calib_len = 512, seed = 0;
	const char *recipe = "rtn", *calib = NULL, *calib_ids_path = NULL, *alpha_s = NULL;
	const char *damp_s = NULL, *save_calib = NULL, *calib_backend = NULL;
	char *save_smoothed = NULL;
	const char *save_smoothed_arg = NULL;
	bool replace_smoothed = false;
	long block_size = CTQ_GPTQ_DEFAULT_BLOCK;
	struct ctq_calib_gptq_options gopt = {.dampening_frac = CTQ_GPTQ_DEFAULT_DAMPENING,
					      .block_size = CTQ_GPTQ_DEFAULT_BLOCK,
					      .actorder = true};
	const char *actorder_s = NULL;
	struct ctq_calib_gptq_result gres;
	memset(&gres, 0, sizeof gres);
	char rtmp[4096] = "";
	const char *scheme = "w8a8";
	long group_size = -1;
	bool asym = false;
	struct ctq_packed_args wa = {0};
	double alpha = CTQ_SMOOTH_DEFAULT_ALPHA;
	bool force = false, quiet = false;
	int32_t *calib_ids = NULL;
	struct ctq_smooth_stats stats;
	memset(&stats, 0, sizeof stats);
	struct ctq_smooth_result sres;
	memset(&sres, 0, sizeof sres);
	char stmp[4096] = "";
	int rc = CTQ_EXIT_USAGE;
	struct ctq_quantize_result res;
	memset(&res, 0, sizeof res);
	char tmp[4096] = "";
	if (!ignore) {
		fprintf(stderr, "ctq quantize: out of memory\n");
		return CTQ_EXIT_USAGE;
	}
	const struct ctq_opt opts[] = {
		CTQ_OPT_FLAG("--force", &force),
		CTQ_OPT_FLAG("--quiet", &quiet),
		CTQ_OPT_FN("--ignore", &ig, opt_ignore),
		CTQ_OPT_INT("--weight-bits", &weight_bits, 2, 8),
		CTQ_OPT_STR("--scheme", &scheme),
		CTQ_OPT_INT("--group-size", &group_size, 1, 1L << 24),
		CTQ_OPT_FLAG("--asym", &asym),
		CTQ_OPT_INT("--max-shard-bytes", &max_shard, 1, 1L << 62),
		CTQ_OPT_STR("--recipe", &recipe),
		CTQ_OPT_STR("--calib", &calib),
		CTQ_OPT_STR("--calib-ids", &calib_ids_path),
		CTQ_OPT_INT("--calib-samples", &calib_samples, 1, 1L << 20),
		CTQ_OPT_INT("--calib-len", &calib_len, 2, 1L << 20),
		CTQ_OPT_INT("--seed", &seed, 0, 0x7fffffffL),
		CTQ_OPT_STR("--smoothing-strength", &alpha_s),
		CTQ_OPT_STR("--dampening-frac", &damp_s),
		CTQ_OPT_INT("--block-size", &block_size, 1, 1L << 20),
		CTQ_OPT_STR("--save-calib", &save_calib),
		CTQ_OPT_STR("--calib-backend", &calib_backend),
		CTQ_OPT_STR("--actorder", &actorder_s),
		CTQ_OPT_STR("--save-smoothed", &save_smoothed_arg),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse("quantize", argc, argv, opts, pos, 2, help);
	if (prc >= 0) {
		rc = prc;
		goto out;
	}
	size_t n_ignore = ig.n;
	in = pos[0];
	if (!in || !pos[1]) {
		fprintf(stderr, "ctq quantize: IN and OUT are required (see --help)\n");
		goto out;
	}
	if (!(out = ctq_strdup(pos[1]))) {
		fprintf(stderr, "ctq quantize: out of memory\n");
		goto out;
	}
	ctq_out_dir_trim(out);
	if (!strcmp(scheme, "w8a16") || !strcmp(scheme, "w4a16")) {
		wa.bits = scheme[1] - '0';
		wa.group_size = group_size > 0 ? group_size : wa.bits == 4 ? CTQ_WNA16_GROUP_DEFAULT : 0;
		wa.asym = asym;
	} else if (strcmp(scheme, "w8a8")) {
		fprintf(stderr, "ctq quantize: --scheme %s is unknown; expected w8a8, w8a16 or w4a16\n",
			scheme);
		goto out;
	}
	if (!wa.bits && (group_size > 0 || asym)) {
		fprintf(stderr, "ctq quantize: --%s belongs to the weight-only schemes (--scheme w8a16 "
			"or w4a16); w8a8 weights are per channel and symmetric\n",
			asym ? "asym" : "group-size");
		goto out;
	}
	if (wa.bits && weight_bits != 8) {
		fprintf(stderr, "ctq quantize: --weight-bits simulates a grid inside W8A8; with --scheme "
			"%s the weights are stored at %d bits already\n", scheme, wa.bits);
		goto out;
	}
	const bool smooth = !strcmp(recipe, "smoothquant") || !strcmp(recipe, "smoothquant+gptq");
	const bool gptq = !strcmp(recipe, "gptq") || !strcmp(recipe, "smoothquant+gptq");
	if (!smooth && !gptq && strcmp(recipe, "rtn")) {
		fprintf(stderr, "ctq quantize: --recipe %s is unknown; expected rtn, smoothquant, gptq or smoothquant+gptq\n",
			recipe);
		goto out;
	}
	if (damp_s) {
		char *end;
		gopt.dampening_frac = strtod(damp_s, &end);
		if (!damp_s[0] || *end || !(gopt.dampening_frac >= 0.0 && gopt.dampening_frac <= 1.0)) {
			fprintf(stderr, "ctq quantize: --dampening-frac %s is not a number in [0, 1]\n", damp_s);
			goto out;
		}
	}
	gopt.block_size = block_size;
	if (actorder_s && strcmp(actorder_s, "static") && strcmp(actorder_s, "none")) {
		fprintf(stderr, "ctq quantize: --actorder %s is unknown; expected static or none\n", actorder_s);
		goto out;
	}
	gopt.actorder = !actorder_s || !strcmp(actorder_s, "static");
	if (!gptq && (damp_s || block_size != CTQ_GPTQ_DEFAULT_BLOCK || actorder_s)) {
		fprintf(stderr, "ctq quantize: --%s belongs to --recipe gptq or smoothquant+gptq (the recipe is %s)\n",
			damp_s ? "dampening-frac" : actorder_s ? "actorder" : "block-size", recipe);
		goto out;
	}
	if (gptq && weight_bits != 8) {
		fprintf(stderr, "ctq quantize: --weight-bits %ld: --recipe %s writes W8A8 (8)\n", weight_bits,
			recipe);
		goto out;
	}
	if (gptq && wa.bits) {
		fprintf(stderr, "ctq quantize: --recipe %s writes W8A8; --scheme %s is round to nearest "
			"(rtn) or smoothquant\n", recipe, scheme);
		goto out;
	}
	if (alpha_s) {
		char *end;
		alpha = strtod(alpha_s, &end);
		if (!alpha_s[0] || *end || !(alpha >= 0.0 && alpha <= 1.0)) {
			fprintf(stderr, "ctq quantize: --smoothing-strength %s is not a number in [0, 1]\n",
				alpha_s);
			goto out;
		}
	}
	if (!smooth && alpha_s) {
		fprintf(stderr, "ctq quantize: --smoothing-strength belongs to --recipe smoothquant (the recipe is %s)\n",
			recipe);
		goto out;
	}
	if (!smooth && !gptq && (calib || calib_ids_path)) {
		fprintf(stderr, "ctq quantize: --%s belongs to a calibrating recipe (the recipe is rtn)\n",
			calib ? "calib" : "calib-ids");
		goto out;
	}
	if ((smooth || gptq) && !calib == !calib_ids_path) {
		fprintf(stderr, "ctq quantize: --recipe %s needs %s\n", recipe,
			calib ? "one of --calib and --calib-ids, not both"
			      : "--calib FILE (calibration text) or --calib-ids FILE (token ids)");
		goto out;
	}
	if (!smooth && !gptq && save_calib) {
		fprintf(stderr, "ctq quantize: --save-calib belongs to a calibrating recipe (the recipe is rtn)\n");
		goto out;
	}
	if (calib_backend && strcmp(calib_backend, "reference") && strcmp(calib_backend, "cuda")) {
		fprintf(stderr, "ctq quantize: --calib-backend is reference or cuda, not '%s'\n", calib_backend);
		goto out;
	}
	if (!smooth && !gptq && calib_backend) {
		fprintf(stderr, "ctq quantize: --calib-backend belongs to a calibrating recipe (the recipe is %s)\n",
			recipe);
		goto out;
	}
	if (!calib_backend)
		calib_backend = "reference";
	gopt.backend = calib_backend;
	if (!smooth && save_smoothed_arg) {
		fprintf(stderr, "ctq quantize: --save-smoothed belongs to --recipe smoothquant or "
			"smoothquant+gptq (the recipe is %s)\n", recipe);
		goto out;
	}
	const char *calib_src = calib ? calib : calib_ids_path;
	if (!ctq_path_is_dir(in)) {
		fprintf(stderr, "ctq quantize: IN %s is not a folder; expected a Hugging Face checkpoint folder\n",
			in);
		goto out;
	}
	if (same_dir(in, out)) {
		fprintf(stderr, "ctq quantize: OUT %s is IN; write the quantized checkpoint elsewhere\n",
			out);
		goto out;
	}
	bool replace;
	if (!ctq_out_dir_allowed("quantize", out, force, &replace))
		goto out;
	if (save_smoothed_arg) {
		if (!(save_smoothed = ctq_strdup(save_smoothed_arg))) {
			fprintf(stderr, "ctq quantize: out of memory\n");
			goto out;
		}
		ctq_out_dir_trim(save_smoothed);
		if (same_dir(in, save_smoothed) || !strcmp(save_smoothed, out)) {
			fprintf(stderr, "ctq quantize: --save-smoothed %s is IN or OUT; name another folder\n",
				save_smoothed);
			goto out;
		}
		if (!ctq_out_dir_allowed("quantize", save_smoothed, force, &replace_smoothed))
			goto out;
	}

	struct ctq_error err = {0};
	enum ctq_status st;
	struct ctq_progress prog;
	ctq_progress_init(&prog, "quantize", quiet);
	const char *src = in; /* what the quantizer reads: IN, or its smoothed copy */
	int64_t n_text = 0;
	if ((smooth || gptq) &&
	    (st = calib ? ctq_calib_windows(in, calib, calib_samples, calib_len, (uint64_t)seed,
					    &calib_ids, &n_text, &err)
			: ctq_calib_windows_ids(calib_ids_path, calib_samples, calib_len, (uint64_t)seed,
						&calib_ids, &n_text, &err)))
		goto fail;
	if (save_calib && (st = ctq_calib_windows_write(save_calib, calib_ids, calib_samples, calib_len,
							&err)))
		goto fail;
	if (smooth) {
		/* calibrate, then smooth into a temporary folder beside OUT (or
		 * beside --save-smoothed's folder, to be renamed into it) */
		if (!quiet)
			fprintf(stderr, "ctq quantize: calibrating on %ld x %ld tokens of %s (%s backend)\n",
				calib_samples, calib_len, calib_src, calib_backend);
		if ((st = ctq_calib_smooth_stats(in, calib_backend, calib_ids, calib_samples, calib_len, &stats,
						 &err)))
			goto fail;
		if ((st = ctq_tmpdir_beside(save_smoothed ? save_smoothed : out, stmp, sizeof stmp, &err))) {
			stmp[0] = '\0';
			goto fail;
		}
		if ((st = ctq_smooth_checkpoint(in, stmp, &stats, alpha, &sres, &err)))
			goto fail;
		src = stmp;
	}
	if ((st = ctq_tmpdir_beside(out, tmp, sizeof tmp, &err))) {
		tmp[0] = '\0';
		goto fail;
	}
	struct ctq_quantize_options opt = {
		.ignore = ignore,
		.n_ignore = n_ignore,
		.max_shard_bytes = (uint64_t)max_shard,
		.weight_bits = (int)weight_bits,
		.wna16 = wa,
		.progress = ctq_progress_print,
		.progress_ctx = &prog,
	};
	if (gptq) {
		/* a round-to-nearest pass names the modules to quantize (the
		 * quantizer owns the ignore rules and checks the checkpoint);
		 * GPTQ calibrates the unquantized model on those, and its
		 * weights are written in place of the round-to-nearest ones */
		if ((st = ctq_tmpdir_beside(out, rtmp, sizeof rtmp, &err))) {
			rtmp[0] = '\0';
			goto fail;
		}
		if (!quiet)
			fprintf(stderr, "ctq quantize: GPTQ layer by layer on %ld x %ld tokens of %s (%s backend)\n",
				calib_samples, calib_len, calib_src, calib_backend);
		opt.progress = NULL;
		if ((st = ctq_quantize_checkpoint(src, rtmp, &opt, &res, &err)))
			goto fail;
		const char **names = ctq_calloc(res.n_modules + 1, sizeof *names); /* (n_modules) */
		if (!names) {
			st = ctq_error_set(&err, CTQ_ERR_NOMEM, "quantize", "out of memory");
			goto fail;
		}
		for (size_t i = 0; i < res.n_modules; i++)
			names[i] = res.modules[i].name;
		gopt.progress = ctq_progress_print;
		gopt.progress_ctx = &prog;
		st = ctq_calib_gptq(src, names, res.n_modules, calib_ids, calib_samples, calib_len, &gopt,
				    &gres, &err);
		ctq_free(names);
		ctq_quantize_result_free(&res);
		if (st)
			goto fail;
		ctq_remove_tree(rtmp);
		rtmp[0] = '\0';
		opt.progress = ctq_progress_print;
		opt.weight_fn = ctq_calib_gptq_weight;
		opt.weight_ctx = &gres;
	}
	if ((st = ctq_quantize_checkpoint(src, tmp, &opt, &res, &err)))
		goto fail;
	if (stmp[0] && save_smoothed) {
		if ((st = ctq_tmpdir_commit(stmp, save_smoothed, replace_smoothed, &err)))
			goto fail;
		stmp[0] = '\0';
	} else if (stmp[0]) {
		ctq_remove_tree(stmp);
		stmp[0] = '\0';
	}
	if ((st = write_report(tmp, &res, &err)) ||
	    (st = write_recipe(tmp, &res, recipe, smooth, alpha, gptq, &gopt, calib_src, calib_samples,
			       calib_len, seed, calib_backend, &wa, &err)))
		goto fail;
	if ((st = ctq_tmpdir_commit(tmp, out, replace, &err)))
		goto fail;
	tmp[0] = '\0';

	char grid[48] = "";
	if (weight_bits < 8)
		snprintf(grid, sizeof grid, " (weights on a %ld-bit grid)", weight_bits);
	printf("ctq quantize: recipe %s", recipe);
	if (smooth)
		printf(" (smoothing_strength %g, %lld norm(s) and %lld linear(s) smoothed, scales %.3g..%.3g; "
		       "calibration %ld x %ld tokens of %s (%lld tokens), seed %ld)",
		       alpha, (long long)sres.n_norms, (long long)sres.n_linears, (double)sres.scale_min,
		       (double)sres.scale_max, calib_samples, calib_len, calib_src, (long long)n_text, seed);
	if (gptq) {
		printf(" (gptq dampening_frac %g, block_size %ld, actorder %s, %lld Hessian(s) fell back to round to nearest, "
		       "%lld dead column(s)", gopt.dampening_frac, block_size,
		       gopt.actorder ? "static" : "none", (long long)gres.n_fallback,
		       (long long)gres.n_dead);
		if (!smooth)
			printf("; calibration %ld x %ld tokens of %s (%lld tokens), seed %ld", calib_samples,
			       calib_len, calib_src, (long long)n_text, seed);
		printf(")");
	}
	char what[128] = "W8A8 INT8", groups[32] = "per channel";
	if (wa.group_size > 0)
		snprintf(groups, sizeof groups, "group %lld", (long long)wa.group_size);
	if (wa.bits)
		snprintf(what, sizeof what, "%s (%d-bit weights, %s%s, pack-quantized)",
			 ctq_wna16_preset(&wa) ? ctq_wna16_preset(&wa) : ctq_wna16_scheme_name(&wa),
			 wa.bits, groups, wa.asym ? ", asymmetric" : "");
	printf(": %zu module(s) quantized to %s%s, %zu tensor(s) copied, ignore [",
	       res.n_modules, what, grid, res.n_copied);
	for (size_t i = 0; i < res.n_ignore; i++)
		printf("%s%s", i ? ", " : "", res.ignore[i]);
	double bytes = (double)res.n_bytes;
	printf("]; weight rel-L2 mean %.3e, max %.3e (%s); wrote %s (%.2f %s) in %.1f s\n",
	       res.rel_l2_mean, res.rel_l2_max,
	       res.rel_l2_max_module ? res.rel_l2_max_module : "-", out,
	       bytes >= 1e9 ? bytes / 1e9 : bytes / 1e6, bytes >= 1e9 ? "GB" : "MB",
	       ctq_progress_elapsed_s(&prog));
	rc = CTQ_EXIT_OK;
	goto out;
fail:
	/* the backend names its own flag; here the calibration's is meant */
	if (!strncmp(err.path, "--backend", 9)) {
		char path[CTQ_PATH_MAX];
		snprintf(path, sizeof path, "--calib-backend%s", err.path + 9);
		snprintf(err.path, sizeof err.path, "%s", path);
	}
	ctq_print_error("quantize", &err);
	rc = res.self_check_failed ? CTQ_EXIT_FAIL : ctq_status_exit_code(st);
out:
	if (tmp[0])
		ctq_remove_tree(tmp);
	if (stmp[0])
		ctq_remove_tree(stmp);
	if (rtmp[0])
		ctq_remove_tree(rtmp);
	ctq_calib_gptq_result_free(&gres);
	ctq_free(calib_ids);
	ctq_smooth_stats_free(&stats);
	ctq_quantize_result_free(&res);
	free(ignore);
	free(save_smoothed);
	free(out);
	return rc;
}
