/* ctq eval kld: the token-level KL divergence, top-1 agreement and
 * perplexities of a candidate checkpoint against a reference on real text
 * (eval/kld.h), with a verdict against a policy (policies/kld.json). This
 * file parses the options, draws the progress bar and prints. */
#include "harness/commands.h"
#include "core/fileio.h"
#include "core/time.h"
#include "eval/kld.h"
#include "results/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SOURCES CTQ_KLD_MAX_SOURCES

static void help(void)
{
	printf("usage: ctq eval kld --model DIR --ref-model DIR [--text FILE]... [--data DIR]...\n"
	       "                    [options]\n"
	       "\n"
	       "Token-level distance of --model (candidate) from --ref-model (reference) on real\n"
	       "text, as llama.cpp's perplexity --kl-divergence measures it. Both models run over\n"
	       "the same tokens in windows of --ctx tokens; the second half of each window is\n"
	       "scored (every scored token has at least ctx/2 tokens of context). Per token:\n"
	       "KL(ref || new) over the full vocabulary (log-softmax in double of the f32\n"
	       "logits), whether the top-1 tokens agree, and the log-probability each model gives\n"
	       "the actual next token.\n"
	       "\n"
	       "options:\n"
	       "  --model DIR        candidate checkpoint (e.g. W8A8)\n"
	       "  --ref-model DIR    reference checkpoint (e.g. BF16); same tokenizer and vocabulary\n"
	       "  --text FILE        UTF-8 text, one source (repeatable)\n"
	       "  --data DIR         a benchmark folder in the official layout, named mmlu, ceval\n"
	       "                     or cmmlu (or BENCH=DIR): its questions, choices and answers\n"
	       "                     as text, question i of every subject before i + 1 (repeatable)\n"
	       "  --split S          split of --data (default val; cmmlu test)\n"
	       "  --ctx N            window, tokens (default %d, llama.cpp's)\n"
	       "  --stride N         tokens between window starts (default: --ctx)\n"
	       "  --max-tokens N     tokens of each source used, from its start (default all)\n"
	       "  --add-bos          the first token of each window becomes BOS (llama.cpp does)\n"
	       "  --save-text DIR    write the text of each --data source, the bytes tokenized,\n"
	       "                     to DIR/BENCH-SPLIT.txt (for llama.cpp's perplexity\n"
	       "                     --kl-divergence or tests/oracle/kld_hf.py on the same text)\n"
	       "  --tokenizer PATH   tokenizer.json or its folder (default: the models'; they\n"
	       "                     must be the same file)\n"
	       "  --backend B        cuda or reference (default: cuda when a CUDA device\n"
	       "                     opens, else reference; said on stderr)\n"
	       "  --tp N             tensor parallelism over N ranks (default 1)\n"
	       "  --policy FILE      thresholds of the verdict (default: built-in, which\n"
	       "                     policies/kld.json holds with the reasons)\n"
	       "  --reference-run DIR  judge --model against the run DIR of a reference recipe\n"
	       "                     (same model, same --ref-model, same windows), paired by\n"
	       "                     window: the policy's relative entries (mean KL within\n"
	       "                     1.5x the reference run's, top-1 at most 1 point below,\n"
	       "                     ppl excess within 1.5x), with the absolute mean KL bound\n"
	       "                     kept as the outer limit; this verdict sets the exit code\n"
	       "  --progress         progress on stderr even when it is not a terminal\n"
	       "  --out DIR          run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force            replace DIR when it is an existing ctq run directory\n"
	       "\n"
	       "Aggregates per source and overall: mean KL with a 95%% percentile-bootstrap\n"
	       "interval over windows (%d resamples), median, 90/99/99.9th percentiles and max;\n"
	       "top-1 agreement with its interval; each model's perplexity and their ratio. Verdict\n"
	       "(overall): non-inferior when the intervals of mean KL, top-1 and ppl ratio all lie\n"
	       "on the good side of the policy's thresholds, inferior when one lies wholly on the\n"
	       "bad side, inconclusive otherwise or with fewer than %d windows.\n"
	       "With --reference-run the relative verdict sets the exit code.\n"
	       "Writes eval_kld.csv (per window), eval_kld_summary.csv, eval_kld_hist.csv,\n"
	       "junit.xml, summary.md and the manifest.\n"
	       "\n"
	       "exit: 0 non-inferior; 1 inferior or inconclusive; 2 bad usage or input (a text\n"
	       "shorter than one window, models that tokenize differently); 3 no GPU for cuda.\n",
	       CTQ_KLD_DEFAULT_CTX, CTQ_KLD_BOOTSTRAP, CTQ_KLD_MIN_WINDOWS);
}

static void progress_cb(void *ctx, size_t done, size_t total)
{
	struct ctq_progress_line *p = ctx;
	double rate = ctq_progress_line_rate(p, done, total);
	if (rate >= 0)
		ctq_progress_line_print(p, done, total, "kld: %zu/%zu windows  %.2f windows/s  ETA %.0fs   ",
					done, total, rate, rate > 0 ? (double)(total - done) / rate : 0.0);
}

struct opts {
	struct ctq_kld_options k;
	const char *policy;
	struct ctq_opt_out out;
	bool progress;
	const char *texts[MAX_SOURCES], *data[MAX_SOURCES];
};

/* --text FILE / --data DIR, each a text source (dst: struct opts *). */
static bool opt_source(const char *cmd, const char *name, const char *v, void *dst)
{
	struct opts *o = dst;
	struct ctq_kld_options *k = &o->k;
	if (k->n_texts + k->n_data == MAX_SOURCES) {
		fprintf(stderr, "ctq %s: %s %s: at most %d text sources\n", cmd, name, v, MAX_SOURCES);
		return false;
	}
	if (!strcmp(name, "--text"))
		o->texts[k->n_texts++] = v;
	else
		o->data[k->n_data++] = v;
	return true;
}

/* Parses and checks the options; as ctq_opt_parse, -1 when the command may
 * run, else its exit code. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	struct ctq_kld_options *k = &o->k;
	k->ctx = CTQ_KLD_DEFAULT_CTX;
	k->tp = 1;
	k->texts = o->texts;
	k->data = o->data;
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--model", &k->model),
		CTQ_OPT_STR("--ref-model", &k->ref),
		CTQ_OPT_FN("--text", o, opt_source),
		CTQ_OPT_FN("--data", o, opt_source),
		CTQ_OPT_STR("--split", &k->split),
		CTQ_OPT_STR("--tokenizer", &k->tokenizer),
		CTQ_OPT_STR("--backend", &k->backend),
		CTQ_OPT_STR("--policy", &o->policy),
		CTQ_OPT_STR("--reference-run", &k->reference_run),
		CTQ_OPT_STR("--save-text", &k->save_text),
		CTQ_OPT_OUT(&o->out),
		CTQ_OPT_INT("--ctx", &k->ctx, 4, 1L << 20),
		CTQ_OPT_INT("--stride", &k->stride, 1, 1L << 20),
		CTQ_OPT_INT("--max-tokens", &k->max_tokens, 1, 1L << 40),
		CTQ_OPT_INT("--tp", &k->tp, 1, 8),
		CTQ_OPT_FLAG("--add-bos", &k->add_bos),
		CTQ_OPT_FLAG("--progress", &o->progress),
		CTQ_OPT_END,
	};
	int rc = ctq_opt_parse("eval kld", argc, argv, opts, NULL, 0, help);
	if (rc >= 0)
		return rc;
	if (!k->model || !k->ref) {
		fprintf(stderr, "ctq eval kld: --model DIR and --ref-model DIR are required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!k->n_texts && !k->n_data) {
		fprintf(stderr, "ctq eval kld: no text: give --text FILE or --data DIR (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_model_dir("eval kld", "--model", k->model, &rc) ||
	    !ctq_opt_model_dir("eval kld", "--ref-model", k->ref, &rc))
		return rc;
	if (!ctq_opt_out_ok("eval kld", &o->out))
		return CTQ_EXIT_USAGE;
	if (k->reference_run && !ctq_path_is_dir(k->reference_run)) {
		fprintf(stderr, "ctq eval kld: --reference-run %s is not a folder; expected a ctq eval kld run directory\n",
			k->reference_run);
		return CTQ_EXIT_USAGE;
	}
	return -1;
}

/* ctq_kld_write as ctq_harness_run_write's callback (dst: struct ctq_kld_run *). */
static enum ctq_status write_run(void *dst, struct ctq_run *run, struct ctq_error *err)
{
	return ctq_kld_write(dst, run, err);
}

int ctq_cmd_eval_kld(int argc, char **argv)
{
	struct opts o;
	memset(&o, 0, sizeof o);
	int rc = parse_opts(argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct ctq_error err = {0};
	struct ctq_kld_policy pol;
	struct ctq_kld_run r;
	struct ctq_run run;
	struct ctq_progress_line pg = {0};
	memset(&r, 0, sizeof r);
	ctq_kld_policy_default(&pol);
	enum ctq_status st = o.policy ? ctq_kld_policy_load(&pol, o.policy, &err) : CTQ_OK;
	o.k.policy = &pol;
	if (!st && !o.k.backend)
		o.k.backend = ctq_opt_backend_default("eval kld");
	if (st || (st = ctq_kld_open(&r, &o.k, &err)))
		goto out;
	printf("ctq eval kld: %zu source(s), %zu windows of %ld tokens (every %ld; %ld scored each), "
	       "vocabulary %lld, on %s\n",
	       r.n_src, r.n_win, r.o.ctx, r.o.stride, r.o.ctx - 1 - r.o.ctx / 2,
	       (long long)r.cand.vocab, r.device);
	for (size_t i = 0; i < r.n_src; i++)
		printf("  %s: %zu tokens used of %zu (%zu bytes), %zu windows\n", r.src[i].name,
		       r.src[i].n_ids, r.src[i].n_ids_all, r.src[i].n_bytes, r.src[i].n_windows);
	fflush(stdout);
	pg.on = o.progress || isatty(2);
	ctq_progress_line_start(&pg);
	if ((st = ctq_kld_score(&r, progress_cb, &pg, &err)) || (st = ctq_kld_summarize(&r, &err)))
		goto out;
	fputs(r.table.data, stdout);
	if ((st = ctq_harness_run_write(&run, &o.out, "eval kld", argc, argv, write_run, &r, &err)))
		goto out;
	const struct ctq_kld_agg *a = &r.agg[r.n_src];
	printf("results in %s\n", run.final_dir);
	printf("kld: mean %.6g nats, top-1 %.2f%%, ppl ref %.4g new %.4g, verdict %s (%s)", a->kl_mean,
	       100 * a->top1, a->ppl_ref, a->ppl_new, a->verdict, r.pol.source);
	if (r.rel.on)
		printf("; relative to %s: mean KL %.3fx, top-1 %+.2f points, verdict %s (%s, relative)",
		       r.o.reference_run, r.rel.kl_factor, 100 * r.rel.top1_diff, r.rel.verdict, r.pol.source);
	printf("\n");
out:
	rc = st ? ctq_progress_line_fail(&pg, "eval kld", &err) : r.pass ? CTQ_EXIT_OK : CTQ_EXIT_FAIL;
	ctq_kld_free(&r);
	return rc;
}
