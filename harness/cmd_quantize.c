/* ctq quantize: a BF16 / F16 / F32 Hugging Face checkpoint becomes a
 * compressed-tensors W8A8 INT8 checkpoint as llm-compressor writes one
 * (checkpoint/quantize.h), through a temporary folder renamed into place once
 * written, self-checked and reported (OUT/quantization_report.csv). */
#include "harness/commands.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "checkpoint/quantize.h"
#include "results/csv_out.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPORT_NAME "quantization_report.csv"

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
	       "module); stdout gets a summary line with the mean and max rel-L2.\n"
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
	bool force = false, quiet = false;
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
		CTQ_OPT_INT("--max-shard-bytes", &max_shard, 1, 1L << 62),
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

	struct ctq_error err = {0};
	enum ctq_status st = ctq_tmpdir_beside(out, tmp, sizeof tmp, &err);
	if (st) {
		tmp[0] = '\0';
		goto fail;
	}
	struct ctq_progress prog;
	ctq_progress_init(&prog, "quantize", quiet);
	struct ctq_quantize_options opt = {
		.ignore = ignore,
		.n_ignore = n_ignore,
		.max_shard_bytes = (uint64_t)max_shard,
		.weight_bits = (int)weight_bits,
		.progress = ctq_progress_print,
		.progress_ctx = &prog,
	};
	if ((st = ctq_quantize_checkpoint(in, tmp, &opt, &res, &err)))
		goto fail;
	if ((st = write_report(tmp, &res, &err)))
		goto fail;
	if ((st = ctq_tmpdir_commit(tmp, out, replace, &err)))
		goto fail;
	tmp[0] = '\0';

	char grid[48] = "";
	if (weight_bits < 8)
		snprintf(grid, sizeof grid, " (weights on a %ld-bit grid)", weight_bits);
	printf("ctq quantize: %zu module(s) quantized to W8A8 INT8%s, %zu tensor(s) copied, ignore [",
	       res.n_modules, grid, res.n_copied);
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
	ctq_print_error("quantize", &err);
	rc = res.self_check_failed ? CTQ_EXIT_FAIL : ctq_status_exit_code(st);
out:
	if (tmp[0])
		ctq_remove_tree(tmp);
	ctq_quantize_result_free(&res);
	free(ignore);
	free(out);
	return rc;
}
