/* ctq import-gguf: converts a llama-architecture GGUF file (llama.cpp's
 * format) into a Hugging Face BF16 checkpoint folder that the rest of ctq
 * (and transformers) loads: config.json, generation_config.json,
 * model.safetensors, tokenizer.json, tokenizer_config.json. */
#include "harness/commands.h"
#include "checkpoint/gguf.h"
#include "core/time.h"

#include <string.h>
#include <time.h>

static void help(void)
{
	printf("usage: ctq import-gguf FILE OUT [--force]\n"
	       "\n"
	       "Converts the GGUF model FILE (general.architecture \"llama\") into a Hugging Face\n"
	       "checkpoint folder OUT with BF16 weights:\n"
	       "  model.safetensors        tensors under transformers' LlamaForCausalLM names;\n"
	       "                           F32, F16, BF16, Q8_0, Q4_0 and Q4_1 are dequantized;\n"
	       "                           attn_q / attn_k rows are put back from llama.cpp's\n"
	       "                           rotary order into transformers' rotate_half order\n"
	       "  config.json, generation_config.json   from the llama.* metadata\n"
	       "  tokenizer.json, tokenizer_config.json from tokenizer.ggml.* (gpt2 BPE only)\n"
	       "The folder is written beside OUT and renamed into place when complete.\n"
	       "\n"
	       "options:\n"
	       "  --force    replace OUT when it exists\n"
	       "\n"
	       "exit: 0 converted; 2 bad usage, a malformed or unsupported file, or a write error.\n");
}

static void print_summary(const char *file, const char *out,
			  const struct ctq_gguf_import_summary *s, double seconds)
{
	printf("imported %s -> %s in %.2f s\n", file, out, seconds);
	printf("  model: %s, %llu layers, hidden %llu, intermediate %llu, heads %llu (kv %llu), "
	       "head_dim %llu\n",
	       s->architecture, (unsigned long long)s->n_layers, (unsigned long long)s->hidden,
	       (unsigned long long)s->intermediate, (unsigned long long)s->n_head,
	       (unsigned long long)s->n_head_kv, (unsigned long long)s->head_dim);
	printf("  vocab %llu, context %llu, rope_theta %g, rms_norm_eps %g, %s\n",
	       (unsigned long long)s->vocab, (unsigned long long)s->context, s->rope_theta,
	       s->rms_eps, s->tied ? "tied embeddings" : "separate lm_head");
	printf("  weights: %zu tensors, %llu parameters, %.1f MB BF16; source types:",
	       s->n_tensors, (unsigned long long)s->n_params, (double)s->n_bytes / 1e6);
	for (size_t t = 0; t < sizeof s->n_type / sizeof *s->n_type; t++)
		if (s->n_type[t])
			printf(" %s x%zu", ctq_ggml_type_name((uint32_t)t), s->n_type[t]);
	printf("\n  tokenizer: gpt2 BPE, pre \"%s\", %zu tokens, %zu merges, %zu added, "
	       "chat template %s\n",
	       s->pre, s->n_tokens, s->n_merges, s->n_added, s->has_chat_template ? "yes" : "no");
}

int ctq_cmd_import_gguf(int argc, char **argv)
{
	const char *pos[2] = {NULL, NULL}; /* FILE OUT */
	bool force = false;
	const struct ctq_opt opts[] = {
		CTQ_OPT_FLAG("--force", &force),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse("import-gguf", argc, argv, opts, pos, 2, help);
	if (prc >= 0)
		return prc;
	const char *file = pos[0], *out = pos[1];
	if (!file || !out) {
		fprintf(stderr, "ctq import-gguf: FILE and OUT are required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	struct ctq_gguf_import_summary sum;
	struct ctq_error err = {0};
	double t0 = ctq_now_s();
	enum ctq_status st = ctq_gguf_import(file, out, force, &sum, &err);
	if (st) {
		ctq_print_error("import-gguf", &err);
		if (st == CTQ_ERR_IO && !force && strstr(err.message, "already exists"))
			fprintf(stderr, "ctq import-gguf: pass --force to replace %s\n", out);
		return ctq_status_exit_code(st);
	}
	print_summary(file, out, &sum, ctq_now_s() - t0);
	return CTQ_EXIT_OK;
}
