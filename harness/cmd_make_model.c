/* ctq make-model: writes a synthetic Hugging Face checkpoint (Qwen3, Qwen2 or
 * Llama shapes, BF16 random weights; checkpoint/synth.h) through a temporary
 * directory renamed into place when complete. */
#include "harness/commands.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "checkpoint/synth.h"
#include "core/time.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void help(void)
{
	printf("usage: ctq make-model --arch A --preset P [options] OUT\n"
	       "\n"
	       "Writes a synthetic BF16 checkpoint with Hugging Face names and config fields\n"
	       "into the folder OUT: config.json, generation_config.json, model.safetensors\n"
	       "(or shards of at most 5 GB plus model.safetensors.index.json; a DiT uses\n"
	       "diffusers' names, diffusion_pytorch_model.safetensors). Weights are\n"
	       "N(0, 0.02) (transformers' initializer_range), norms 1 + N(0, 0.02); the same\n"
	       "seed gives the same bytes whatever the thread count.\n"
	       "\n"
	       "options:\n"
	       "  --arch A             qwen3, qwen2 (q/k/v biases) or llama; or, for inspect,\n"
	       "                       probe --model and quantize only (the runner does not\n"
	       "                       execute them), qwen3_moe (--preset tiny: 8 experts of\n"
	       "                       32; qwen3-30b-a3b-shape: 128 of 768, hidden 2048) or\n"
	       "                       qwen_image_dit (a diffusers Qwen-Image DiT; tiny: inner\n"
	       "                       64; qwen-image-shape: 60 blocks, inner 3072)\n"
	       "  --preset P           tiny               hidden 64, 2 layers, 4/2 heads, vocab 512\n"
	       "                       qwen3-0.6b-shape   hidden 1024, 28 layers, 16/8 heads (~1.2 GB)\n"
	       "                       qwen3-4b-shape     hidden 2560, 36 layers, 32/8 heads (~8 GB)\n"
	       "  --layers N           override the number of decoder layers\n"
	       "  --vocab N            override the vocabulary size (e.g. 2048 for the small\n"
	       "                       tokenizer fixtures of tests/fixtures/tokenizers)\n"
	       "  --seed S             random seed (default 0), 0..2^53\n"
	       "  --outliers           4 hidden channels (fixed by the seed) of every\n"
	       "                       input_layernorm / post_attention_layernorm weight x50,\n"
	       "                       so q/k/v and gate/up inputs carry outlier channels\n"
	       "  --untied             write lm_head.weight (tie_word_embeddings false)\n"
	       "  --logit-gain G       multiply model.norm.weight by G (default 1), and so every\n"
	       "                       logit: random weights give near-uniform next-token\n"
	       "                       distributions, G ~30 a trained model's peaked ones\n"
	       "  --max-shard-bytes N  shard size limit (default 5000000000, transformers' 5GB)\n"
	       "  --force              replace OUT if it exists and is not empty\n"
	       "  --quiet              no progress on stderr\n"
	       "\n"
	       "exit: 0 written; 2 bad usage, OUT exists, or the folder cannot be written.\n");
}

/* ---- the command ------------------------------------------------------------ */

/* --logit-gain: a finite number in (0, 10000]. */
static bool opt_gain(const char *cmd, const char *name, const char *v, void *dst)
{
	char *end;
	double g = strtod(v, &end);
	if (end == v || *end || !(g > 0 && g <= 1e4)) {
		fprintf(stderr, "ctq %s: %s '%s': expected a number in (0, 10000]\n", cmd, name, v);
		return false;
	}
	*(double *)dst = g;
	return true;
}

/* Progress that also keeps the model's size: the writer's bytes_total. */
struct sized_progress {
	struct ctq_progress p;
	uint64_t total_bytes;
};

static void sized_print(void *ctx, const char *tensor, uint64_t done, uint64_t total)
{
	struct sized_progress *s = ctx;
	s->total_bytes = total;
	ctq_progress_print(&s->p, tensor, done, total);
}

int ctq_cmd_make_model(int argc, char **argv)
{
	const char *arch = NULL, *preset = NULL, *out_arg = NULL;
	long layers = 0, seed = 0, max_shard = 0, vocab = 0;
	double logit_gain = 1.0;
	bool outliers = false, untied = false, force = false, quiet = false;
	const struct ctq_opt opts[] = {
		CTQ_OPT_FLAG("--outliers", &outliers),
		CTQ_OPT_FLAG("--untied", &untied),
		CTQ_OPT_FLAG("--force", &force),
		CTQ_OPT_FLAG("--quiet", &quiet),
		CTQ_OPT_STR("--arch", &arch),
		CTQ_OPT_STR("--preset", &preset),
		CTQ_OPT_INT("--vocab", &vocab, 2, 1L << 22),
		CTQ_OPT_INT("--layers", &layers, 1, 4096),
		CTQ_OPT_INT("--seed", &seed, 0, 9007199254740992L),
		CTQ_OPT_INT("--max-shard-bytes", &max_shard, 1, 1L << 62),
		CTQ_OPT_FN("--logit-gain", &logit_gain, opt_gain),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse("make-model", argc, argv, opts, &out_arg, 1, help);
	if (prc >= 0)
		return prc;
	if (!out_arg || !arch || !preset) {
		fprintf(stderr, "ctq make-model: --arch, --preset and OUT are required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	char *out = ctq_strdup(out_arg);
	if (!out) {
		fprintf(stderr, "ctq make-model: out of memory\n");
		return CTQ_EXIT_USAGE;
	}
	ctq_out_dir_trim(out);

	struct ctq_synth_spec spec;
	struct ctq_error err = {0};
	enum ctq_status st = ctq_synth_spec_init(&spec, arch, preset, &err);
	if (st) {
		ctq_print_error("make-model", &err);
		goto usage;
	}
	if (layers)
		spec.num_hidden_layers = layers;
	if (vocab)
		spec.vocab_size = vocab;
	spec.seed = (uint64_t)seed;
	spec.outliers = outliers;
	spec.tie_word_embeddings = !untied;
	spec.logit_gain = logit_gain;

	bool replace;
	if (!ctq_out_dir_allowed("make-model", out, force, &replace))
		goto usage;
	char tmp[4096];
	if ((st = ctq_tmpdir_beside(out, tmp, sizeof tmp, &err))) {
		ctq_print_error("make-model", &err);
		free(out);
		return ctq_status_exit_code(st);
	}
	struct sized_progress prog = {.total_bytes = 0};
	ctq_progress_init(&prog.p, "make-model", quiet);
	st = ctq_synth_write(&spec, tmp, (uint64_t)max_shard, sized_print, &prog, &err);
	if (!st)
		st = ctq_tmpdir_commit(tmp, out, replace, &err);
	if (st) {
		ctq_remove_tree(tmp);
		ctq_print_error("make-model", &err);
		free(out);
		return ctq_status_exit_code(st);
	}
	/* Parameters: every tensor is BF16 (2 bytes). */
	const double bytes = (double)prog.total_bytes, params = bytes / 2;
	char gain_note[48] = "";
	if (logit_gain != 1.0)
		snprintf(gain_note, sizeof gain_note, ", logit gain %g", logit_gain);
	printf("ctq make-model: wrote %s (%s, preset %s, %ld layers, %.2fM parameters, %.2f %s BF16, seed %ld%s%s%s) in %.1f s\n",
	       out, spec.arch, spec.preset, spec.num_hidden_layers, params / 1e6,
	       bytes >= 1e9 ? bytes / 1e9 : bytes / 1e6, bytes >= 1e9 ? "GB" : "MB", seed,
	       outliers ? ", outliers" : "", untied ? ", untied" : "", gain_note,
	       ctq_progress_elapsed_s(&prog.p));
	free(out);
	return CTQ_EXIT_OK;
usage:
	free(out);
	return CTQ_EXIT_USAGE;
}
