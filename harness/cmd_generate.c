/* ctq generate: greedy text from a checkpoint for a human check — the
 * prompt through the checkpoint's tokenizer.json (or token ids as given),
 * one request through the batching engine (model/engine.h, the engine ctq
 * serve runs) on the model (model/model.h), the new tokens decoded and
 * printed with timings;
 * optionally the logits of every prompt position into a JSON file, the
 * layout of tests/oracle/hf_logits.py's goldens, for comparisons with
 * transformers. */
#include "harness/commands.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "model/engine.h"
#include "model/model.h"
#include "serve/chat.h"
#include "text/tokenizer.h"
#include "core/time.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void help(void)
{
	printf("usage: ctq generate --model DIR (--prompt TEXT | --ids LIST) [options]\n"
	       "\n"
	       "Greedy decoding for a human check of a checkpoint (BF16, W8A8 or hybrid).\n"
	       "\n"
	       "options:\n"
	       "  --prompt TEXT       the prompt, through the tokenizer\n"
	       "  --ids LIST          the prompt as comma-separated token ids (no tokenizer\n"
	       "                      needed: new tokens print as ids unless --tokenizer)\n"
	       "  --max-new-tokens N  tokens to generate, 0 for none (default 64)\n"
	       "  --backend B         cuda or reference (default: cuda when a CUDA device\n"
	       "                      opens, else reference; said on stderr)\n"
	       "  --act-numerics N    W8A8 activation numerics: ctq (default: amax / 127, an\n"
	       "                      int8 GEMM, as vLLM) or transformers (compressed-tensors'\n"
	       "                      fake quantization: amax / 127.5, BF16 dequantization, a\n"
	       "                      float GEMM; reference backend only; docs/semantics.md)\n"
	       "  --logits-out FILE   also write the logits of every prompt position as JSON\n"
	       "                      {model, arch, backend, act_numerics, ids, logits} (the\n"
	       "                      layout of tests/oracle/hf_logits.py's goldens)\n"
	       "  --tokenizer PATH    tokenizer.json (default: the model folder's)\n"
	       "  --chat              render the prompt as one user turn with the model's chat\n"
	       "                      template (tokenizer_config.json: ChatML or Llama-3, as\n"
	       "                      ctq serve renders it)\n"
	       "                      (<|im_start|>user ... <|im_end|> <|im_start|>assistant)\n"
	       "  --ignore-eos        keep going past the end-of-sequence token\n"
	       "  --tp N              tensor parallelism over N ranks: GPUs 0..N-1 with NCCL\n"
	       "                      (cuda), or N in-process ranks (reference)\n"
	       "\n"
	       "exit: 0 done; 2 bad usage or input; 3 no GPU for cuda.\n");
}

/* "1,2,3" -> malloc'ed ids; false (printed) on a malformed list. */
static bool parse_ids(const char *s, int32_t **out, size_t *n)
{
	size_t cap = 1;
	for (const char *c = s; *c; c++)
		cap += *c == ',';
	int32_t *v = ctq_malloc(cap * sizeof *v);
	if (!v) {
		fprintf(stderr, "ctq generate: out of memory\n");
		return false;
	}
	size_t k = 0;
	for (const char *c = s;;) {
		char *end;
		errno = 0;
		long x = strtol(c, &end, 10);
		if (errno || end == c || x < 0 || x > 0x7fffffffL || (*end && *end != ',')) {
			fprintf(stderr, "ctq generate: --ids is \"%s\"; expected comma-separated token ids >= 0\n", s);
			free(v);
			return false;
		}
		v[k++] = (int32_t)x;
		if (!*end)
			break;
		c = end + 1;
	}
	*out = v;
	*n = k;
	return true;
}

/* The logits of every prompt position (forward passes of at most
 * max_tokens positions in slot 0, every row kept) into path. */
static enum ctq_status write_logits(struct ctq_model *mo, const char *path, const char *model,
				    const char *backend, const int32_t *ids, int64_t n,
				    struct ctq_error *err)
{
	const struct ctq_model_config *cfg = ctq_model_cfg(mo);
	const int64_t V = cfg->vocab, chunk = mo->limits.max_tokens;
	float *lg = ctq_malloc((size_t)(n * V) * sizeof *lg);
	int32_t *slot = ctq_calloc((size_t)chunk, sizeof *slot), *pos = ctq_malloc((size_t)chunk * sizeof *pos);
	int64_t *rows = ctq_malloc((size_t)chunk * sizeof *rows);
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	cJSON *head = cJSON_CreateObject();
	char *text = NULL;
	enum ctq_status st = CTQ_OK;
	if (!lg || !slot || !pos || !rows || !head) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		goto done;
	}
	for (int64_t p0 = 0; p0 < n && !st; p0 += chunk) {
		int64_t m = n - p0 < chunk ? n - p0 : chunk;
		for (int64_t i = 0; i < m; i++)
			pos[i] = (int32_t)(p0 + i), rows[i] = i;
		st = ctq_model_forward(mo, ids + p0, slot, pos, m, rows, m, lg + p0 * V, err);
	}
	if (st)
		goto done;
	/* The small members through cJSON (escaping), the logits appended as
	 * %.9g (which reads back to the same float); a non-finite one as null. */
	cJSON_AddStringToObject(head, "model", model);
	cJSON_AddStringToObject(head, "arch", cfg->arch);
	cJSON_AddStringToObject(head, "backend", backend);
	cJSON_AddStringToObject(head, "act_numerics", ctq_act_numerics_name(mo->b[0].act_numerics));
	cJSON_AddNumberToObject(head, "tp", mo->tp);
	cJSON *ja = cJSON_AddArrayToObject(head, "ids");
	for (int64_t i = 0; ja && i < n; i++)
		cJSON_AddItemToArray(ja, cJSON_CreateNumber(ids[i]));
	if (!ja || !(text = cJSON_PrintUnformatted(head))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		goto done;
	}
	ctq_strbuf_appendn(&sb, text, strlen(text) - 1); /* without the closing brace */
	ctq_strbuf_append(&sb, ",\"logits\":[");
	for (int64_t t = 0; t < n; t++) {
		ctq_strbuf_append(&sb, t ? ",[" : "[");
		for (int64_t v = 0; v < V; v++) {
			float x = lg[t * V + v];
			if (isfinite(x))
				ctq_strbuf_printf(&sb, v ? ",%.9g" : "%.9g", (double)x);
			else
				ctq_strbuf_append(&sb, v ? ",null" : "null");
		}
		ctq_strbuf_append(&sb, "]");
	}
	ctq_strbuf_append(&sb, "]}\n");
	st = ctq_strbuf_write_atomic(&sb, path, err);
done:
	free(lg), free(slot), free(pos), free(rows);
	cJSON_free(text);
	cJSON_Delete(head);
	ctq_strbuf_free(&sb);
	return st;
}

int ctq_cmd_generate(int argc, char **argv)
{
	const char *model = NULL, *prompt = NULL, *ids_arg = NULL, *backend = NULL;
	const char *tok_path = NULL, *logits_out = NULL;
	long max_new = 64, tp = 1;
	bool chat = false, ignore_eos = false;
	enum ctq_act_numerics numerics = CTQ_ACT_NUMERICS_CTQ;
	const struct ctq_opt opts[] = {
		CTQ_OPT_FLAG("--chat", &chat),
		CTQ_OPT_FLAG("--ignore-eos", &ignore_eos),
		CTQ_OPT_INT("--tp", &tp, 1, 8),
		CTQ_OPT_FN("--act-numerics", &numerics, ctq_opt_fn_act_numerics),
		CTQ_OPT_STR("--model", &model),
		CTQ_OPT_STR("--prompt", &prompt),
		CTQ_OPT_STR("--ids", &ids_arg),
		CTQ_OPT_STR("--logits-out", &logits_out),
		CTQ_OPT_STR("--backend", &backend),
		CTQ_OPT_STR("--tokenizer", &tok_path),
		CTQ_OPT_INT("--max-new-tokens", &max_new, 0, 1 << 20),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse("generate", argc, argv, opts, NULL, 0, help);
	if (prc >= 0)
		return prc;
	if (!model || !prompt == !ids_arg) {
		fprintf(stderr, "ctq generate: --model DIR and one of --prompt TEXT or --ids LIST are required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	int mrc = 0;
	if (!ctq_opt_model_dir("generate", "--model", model, &mrc))
		return mrc;
	if (ids_arg && chat) {
		fprintf(stderr, "ctq generate: --chat wraps a --prompt; it does not apply to --ids\n");
		return CTQ_EXIT_USAGE;
	}
	if (!backend)
		backend = numerics != CTQ_ACT_NUMERICS_CTQ ? "reference" : ctq_opt_backend_default("generate");
	if (!ctq_opt_act_numerics_backend("generate", numerics, backend))
		return CTQ_EXIT_USAGE;
	struct ctq_error err = {0};
	struct ctq_tokenizer tok;
	struct ctq_model mo;
	struct ctq_engine *engine = NULL;
	memset(&tok, 0, sizeof tok);
	memset(&mo, 0, sizeof mo);
	int32_t *ids = NULL, *out = NULL;
	char *text = NULL;
	int rc = CTQ_EXIT_USAGE;
	size_t n_ids = 0;
	/* With --ids the tokenizer only decodes, and only when named. */
	const bool have_tok = !ids_arg || tok_path;
	if (have_tok && ctq_tokenizer_load(&tok, tok_path ? tok_path : model, &err)) {
		/* a synthetic checkpoint (ctq make-model) has none: say how to give
		 * one, or to pass token ids */
		size_t n = strlen(err.message);
		if (err.status == CTQ_ERR_IO && !tok_path && n + 1 < sizeof err.message)
			snprintf(err.message + n, sizeof err.message - n,
				 " (a model folder without a tokenizer: --tokenizer PATH, or --ids LIST)");
		goto fail;
	}
	if (ids_arg) {
		if (!parse_ids(ids_arg, &ids, &n_ids))
			goto done;
	} else {
		const char *p = prompt;
		struct ctq_strbuf sb;
		ctq_strbuf_init(&sb);
		if (chat) {
			/* the model's own template, as ctq serve renders it
			 * (serve/chat.h): it writes its special tokens itself */
			struct ctq_chat_template t;
			const struct ctq_chat_message m = {"user", prompt};
			if (ctq_chat_template_load(&t, tok_path ? tok_path : model, &err))
				goto fail;
			if (t.family == CTQ_CHAT_NONE) {
				ctq_error_set(&err, CTQ_ERR_USAGE, "--chat", "needs the model's chat template: %s", t.why);
				goto fail;
			}
			if (ctq_chat_render(&t, &m, 1, &sb, &err)) {
				ctq_strbuf_free(&sb);
				goto fail;
			}
			p = ctq_strbuf_str(&sb);
		}
		const enum ctq_status est = ctq_tokenizer_encode(&tok, p, strlen(p), !chat, &ids, &n_ids, &err);
		ctq_strbuf_free(&sb);
		if (est)
			goto fail;
	}
	/* One slot; whole prompts per call up to 1024 tokens. */
	const struct ctq_model_options mopt = {
		.dir = model, .backend = backend, .tp = (int)tp, .numerics = numerics,
		.limits = {.max_slots = 1, .max_len = (int64_t)n_ids + max_new + 1,
			  .max_tokens = n_ids > 1024 ? 1024 : n_ids > 1 ? (int64_t)n_ids : 1}};
	if (ctq_model_open(&mo, &mopt, &err))
		goto fail;
	const double t_load = mo.load_s;
	if (logits_out && write_logits(&mo, logits_out, model, backend, ids, (int64_t)n_ids, &err))
		goto fail;
	const struct ctq_engine_options eo = {.max_batch = 1, .max_len = mopt.limits.max_len,
					      .max_tokens = mopt.limits.max_tokens, .echo_rows = 1};
	const struct ctq_engine_params gp = {.max_new = max_new, .ignore_eos = ignore_eos, .top_p = 1,
					     .logprobs = -1};
	if (ctq_engine_start(&engine, &mo, &eo, &err))
		goto fail;
	const double t1 = ctq_now_s();
	int64_t n_out = 0;
	if (ctq_engine_complete(engine, ids, (int64_t)n_ids, &gp, &out, &n_out, NULL, &err))
		goto fail;
	const double t2 = ctq_now_s();
	if (have_tok) {
		size_t len = 0;
		if (ctq_tokenizer_decode(&tok, out, (size_t)n_out, true, &text, &len, &err))
			goto fail;
		fwrite(text, 1, len, stdout);
	} else {
		for (int64_t i = 0; i < n_out; i++)
			printf(i ? " %d" : "%d", out[i]);
	}
	printf("\n");
	fprintf(stderr,
		"ctq generate: %zu prompt + %lld new tokens on %s (tp %ld, %s numerics); %lld W8A8 and %lld BF16 linear modules; load %.2f s, generate %.2f s (%.1f tokens/s)%s%s\n",
		n_ids, (long long)n_out, backend, tp, ctq_act_numerics_name(numerics), (long long)mo.n_quantized,
		(long long)mo.n_dense, t_load, t2 - t1, (double)n_out / (t2 - t1),
		logits_out ? "; logits in " : "", logits_out ? logits_out : "");
	rc = CTQ_EXIT_OK;
	goto done;
fail:
	rc = ctq_print_error_exit("generate", &err);
done:
	free(ids), free(out), free(text);
	ctq_engine_free(engine);
	ctq_model_close(&mo);
	ctq_tokenizer_free(&tok);
	return rc;
}
