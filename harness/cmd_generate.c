/* ctq generate: greedy text from a checkpoint for a human check — the
 * prompt through the checkpoint's tokenizer.json, the runner on a backend,
 * the new tokens decoded and printed with timings. */
#include "harness/commands.h"
#include "model/runner.h"
#include "model/tokenizer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void help(void)
{
	printf("usage: ctq generate --model DIR --prompt TEXT [options]\n"
	       "\n"
	       "Greedy decoding for a human check of a checkpoint (BF16, W8A8 or hybrid).\n"
	       "\n"
	       "options:\n"
	       "  --max-new-tokens N  tokens to generate (default 64)\n"
	       "  --backend B         reference (default) or cuda\n"
	       "  --tokenizer PATH    tokenizer.json (default: the model folder's)\n"
	       "  --chat              wrap the prompt in the model's ChatML turn markers\n"
	       "                      (<|im_start|>user ... <|im_end|> <|im_start|>assistant)\n"
	       "  --ignore-eos        keep going past the end-of-sequence token\n"
	       "  --tp N              tensor parallelism over N ranks: GPUs 0..N-1 with NCCL\n"
	       "                      (cuda), or N in-process ranks (reference)\n"
	       "\n"
	       "exit: 0 done; 2 bad usage or input; 3 no GPU for cuda.\n");
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int ctq_cmd_generate(int argc, char **argv)
{
	const char *model = NULL, *prompt = NULL, *backend = "reference", *tok_path = NULL;
	long max_new = 64, tp = 1;
	bool chat = false, ignore_eos = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return CTQ_EXIT_OK;
		} else if (!strcmp(a, "--chat")) {
			chat = true;
		} else if (!strcmp(a, "--ignore-eos")) {
			ignore_eos = true;
		} else if (!strcmp(a, "--tp")) {
			const char *v = ctq_opt_value(argc, argv, &i);
			if (!v || !ctq_opt_int("generate", a, v, 1, 8, &tp))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--model") || !strcmp(a, "--prompt") || !strcmp(a, "--backend") ||
			   !strcmp(a, "--tokenizer") || !strcmp(a, "--max-new-tokens")) {
			const char *v = ctq_opt_value(argc, argv, &i);
			if (!v)
				return CTQ_EXIT_USAGE;
			if (!strcmp(a, "--model"))
				model = v;
			else if (!strcmp(a, "--prompt"))
				prompt = v;
			else if (!strcmp(a, "--backend"))
				backend = v;
			else if (!strcmp(a, "--tokenizer"))
				tok_path = v;
			else if (!ctq_opt_int("generate", a, v, 1, 1 << 20, &max_new))
				return CTQ_EXIT_USAGE;
		} else {
			fprintf(stderr, "ctq generate: unknown argument %s (see --help)\n", a);
			return CTQ_EXIT_USAGE;
		}
	}
	if (!model || !prompt) {
		fprintf(stderr, "ctq generate: --model DIR and --prompt TEXT are required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	struct ctq_error err = {0};
	struct ctq_tokenizer tok;
	struct ctq_backend b[8];
	struct ctq_runner r[8];
	struct ctq_tp_group *group = NULL;
	memset(&tok, 0, sizeof tok);
	memset(b, 0, sizeof b);
	memset(r, 0, sizeof r);
	int32_t *ids = NULL, *out = NULL;
	char *text = NULL, *wrapped = NULL;
	int rc = CTQ_EXIT_USAGE;
	if (ctq_tokenizer_load(&tok, tok_path ? tok_path : model, &err))
		goto fail;
	const char *p = prompt;
	if (chat) {
		size_t n = strlen(prompt) + 96;
		wrapped = malloc(n);
		if (!wrapped) {
			ctq_error_set(&err, CTQ_ERR_NOMEM, "generate", "out of memory");
			goto fail;
		}
		snprintf(wrapped, n, "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n", prompt);
		p = wrapped;
	}
	size_t n_ids = 0;
	if (ctq_tokenizer_encode(&tok, p, strlen(p), true, &ids, &n_ids, &err))
		goto fail;
	bool cuda = !strcmp(backend, "cuda");
	for (long k = 0; k < tp; k++)
		if (cuda ? ctq_backend_cuda(&b[k], (int)k, &err) : ctq_backend_open(&b[k], backend, &err))
			goto fail;
	if (tp > 1 && (cuda ? ctq_backend_cuda_tp_init(b, (int)tp, &err)
			    : !(group = ctq_tp_group_new((int)tp)) &&
				      ctq_error_set(&err, CTQ_ERR_NOMEM, "--tp", "out of memory")))
		goto fail;
	double t0 = now_s();
	for (long k = 0; k < tp; k++) {
		struct ctq_runner_options opt = {.max_slots = 1,
						 .max_len = (int64_t)n_ids + max_new + 1,
						 .max_tokens = (int64_t)n_ids > 1024 ? 1024 : (int64_t)n_ids,
						 .tp = (int)tp, .rank = (int)k, .group = group};
		if (ctq_runner_load(&r[k], &b[k], model, &opt, &err))
			goto fail;
	}
	double t1 = now_s();
	int64_t n_out = 0;
	if (ctq_runner_generate(r, (int)tp, ids, (int64_t)n_ids, max_new, ignore_eos, &out, &n_out, &err))
		goto fail;
	double t2 = now_s();
	size_t len = 0;
	if (ctq_tokenizer_decode(&tok, out, (size_t)n_out, true, &text, &len, &err))
		goto fail;
	fwrite(text, 1, len, stdout);
	printf("\n");
	fprintf(stderr,
		"ctq generate: %zu prompt + %lld new tokens on %s (tp %ld); %lld W8A8 and %lld BF16 linear modules; load %.2f s, generate %.2f s (%.1f tokens/s)\n",
		n_ids, (long long)n_out, backend, tp, (long long)r[0].n_quantized, (long long)r[0].n_dense, t1 - t0,
		t2 - t1, (double)n_out / (t2 - t1));
	rc = CTQ_EXIT_OK;
	goto done;
fail:
	ctq_print_error("generate", &err);
	rc = ctq_status_exit_code(err.status);
done:
	free(ids), free(out), free(text), free(wrapped);
	for (long k = 0; k < tp; k++) {
		ctq_runner_free(&r[k]);
		ctq_backend_close(&b[k]);
	}
	ctq_tp_group_free(group);
	ctq_tokenizer_free(&tok);
	return rc;
}
