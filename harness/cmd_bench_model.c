/* ctq bench model: prefill (TTFT) and decode throughput of a checkpoint on a
 * backend over batch sizes and input lengths, with seeded random prompts and
 * greedy decoding of a fixed output length (EOS ignored); memory as a result
 * (weights, KV cache per token, resident and peak device memory, the largest
 * batch × context that fits); load time with the page-cache state; and with
 * --ref-model the two side by side with gain columns. Every timing ends with
 * a backend synchronisation, read on CLOCK_MONOTONIC. This file parses the
 * options and prints; the measurement is bench/model.h. */
#include "harness/commands.h"
#include "core/arena.h"
#include "bench/model.h"
#include "results/csv_out.h"
#include "results/run.h"
#include "families/bench_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: ctq bench model --model DIR [options]\n"
	       "\n"
	       "Times prefill (time to first token) and decode of greedy generation with\n"
	       "seeded random prompts, EOS ignored; reports memory and load time.\n"
	       "\n"
	       "options:\n"
	       "  --ref-model DIR    baseline checkpoint (e.g. BF16): run first, gains reported\n"
	       "  --backend B        cuda or reference (default: cuda when a CUDA device\n"
	       "                     opens, else reference; said on stderr)\n"
	       "  --batch LIST       sequences per run (default 1)\n"
	       "  --input-len LIST   prompt tokens (default 128)\n"
	       "  --output-len N     generated tokens (default 32)\n"
	       "  --warmup N         untimed runs first (default 1)\n"
	       "  --reps N           timed runs (default 3)\n"
	       "  --seed S           prompt seed (default 1)\n"
	       "  --tp N             tensor parallelism over N ranks (default 1): GPUs 0..N-1\n"
	       "                     with NCCL, or N in-process ranks on the reference backend;\n"
	       "                     memory figures are rank 0's\n"
	       "  --out DIR          run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force            replace DIR when it is an existing ctq run directory (any\n"
	       "                     other non-empty DIR is refused)\n"
	       "\n"
	       "Gains are ratios of medians: TTFT reduction = 1 - new/ref; prefill and decode\n"
	       "gain = new/ref tokens per second.\n"
	       "exit: 0 done; 2 bad usage or input; 3 no GPU for cuda.\n");
}

/* --batch LIST and --input-len LIST (dst: the options). */
static bool opt_batch(const char *cmd, const char *name, const char *v, void *dst)
{
	struct ctq_bench_model_options *o = dst;
	return (o->n_b = ctq_opt_int_list(cmd, name, v, 1, 256, o->batches, CTQ_BENCH_MODEL_MAX_LIST)) > 0;
}

static bool opt_input_len(const char *cmd, const char *name, const char *v, void *dst)
{
	struct ctq_bench_model_options *o = dst;
	return (o->n_l = ctq_opt_int_list(cmd, name, v, 1, 1 << 17, o->lens, CTQ_BENCH_MODEL_MAX_LIST)) > 0;
}

static const char *const header[] = {CTQ_BENCH_MODEL_CSV_COLUMNS};

static const char *const gain_header[] = {CTQ_BENCH_MODEL_GAINS_CSV_COLUMNS};

struct ctx {
	struct ctq_bench_model_options o;
	struct ctq_csv *csv;
	cJSON *manifest;
};

static void print_sample(void *ctx, const struct ctq_bench_model_sample *x)
{
	const struct ctx *C = ctx;
	printf("  %-6ld %6ld %6ld %10.2f %12.0f %12.3f %12.1f %10.3f\n", x->batch, x->len, C->o.out_len,
	       x->ttft_s * 1e3, x->prefill_tps, x->mean_s * 1e3, x->decode_tps, x->p99_s * 1e3);
	fflush(stdout);
}

/* What the load gives: the modules, weights, KV cache, load time, device
 * memory; and the memory part of the manifest. */
static void print_loaded(struct ctx *C, const char *role, const struct ctq_bench_model *m)
{
	const struct ctq_runner *r0 = &m->mdl.r[0];
	const struct ctq_model_config *c = &r0->cfg;
	const size_t act_bytes = m->mdl.b[0].ops->act_bytes;
	const int tp = (int)C->o.tp;
	const double cached = m->cached;
	if (!cJSON_GetObjectItemCaseSensitive(C->manifest, "device"))
		cJSON_AddStringToObject(C->manifest, "device", m->mdl.device);
	printf("\n[%s] %s on %s: %lld linear modules W8A8, %lld BF16\n", role, m->model, m->mdl.device,
	       (long long)r0->n_quantized, (long long)r0->n_dense);
	printf("  weights %.3f GB; KV cache %llu bytes per token (%lld layers x %lld kv heads x %lld x 2 x %zu B)\n",
	       (double)m->mdl.weight_bytes / 1e9, (unsigned long long)m->kv_tok, (long long)c->layers,
	       (long long)c->kv_heads, (long long)c->head_dim, act_bytes);
	if (tp > 1)
		printf("  rank 0 of %d: weights %.3f GB, KV cache %llu bytes per token\n", tp,
		       (double)r0->weight_bytes / 1e9, (unsigned long long)m->kv_tok_rank);
	printf("  load %.2f s with %.0f%% of the tensor files in the page cache (%s)\n", m->mdl.load_s,
	       100.0 * (isnan(cached) ? 0 : cached),
	       isnan(cached) ? "unknown" : cached > 0.9 ? "warm" : cached < 0.1 ? "cold" : "partly warm");
	if (!m->mem)
		return;
	const uint64_t loaded = (uint64_t)(m->free0 - m->free1);
	const uint64_t kv_alloc = (uint64_t)(m->mdl.limits.max_slots * m->mdl.limits.max_len) * m->kv_tok_rank;
	const uint64_t room = (uint64_t)m->free1 + kv_alloc;
	printf("  device%s: %.2f GB taken by the load (weights, KV cache for %lld x %lld, scratch); %.2f GB free of %.2f\n",
	       tp > 1 ? " (rank 0)" : "", (double)loaded / 1e9, (long long)m->mdl.limits.max_slots,
	       (long long)m->mdl.limits.max_len, (double)m->free1 / 1e9, (double)m->total / 1e9);
	printf("  largest KV cache that fits beside the weights: %.0f tokens (e.g. batch %ld x context %.0f)\n",
	       (double)room / (double)m->kv_tok_rank, m->max_b,
	       (double)room / (double)m->kv_tok_rank / (double)m->max_b);
	cJSON *mj = cJSON_AddObjectToObject(C->manifest, role);
	cJSON_AddStringToObject(mj, "model", m->model);
	cJSON_AddNumberToObject(mj, "weight_bytes", (double)m->mdl.weight_bytes);
	cJSON_AddNumberToObject(mj, "tp", tp);
	cJSON_AddNumberToObject(mj, "kv_bytes_per_token", (double)m->kv_tok);
	cJSON_AddNumberToObject(mj, "load_s", m->mdl.load_s);
	cJSON_AddNumberToObject(mj, "page_cache_fraction", isnan(cached) ? -1 : cached);
	cJSON_AddNumberToObject(mj, "device_total_bytes", (double)m->total);
	cJSON_AddNumberToObject(mj, "kv_tokens_that_fit", (double)room / (double)m->kv_tok_rank);
}

static enum ctq_status bench_one(struct ctx *C, const char *role, const char *model,
				 struct ctq_bench_model_cell *cells, struct ctq_error *err)
{
	struct ctq_bench_model m;
	enum ctq_status st = ctq_bench_model_open(&m, &C->o, model, err);
	if (st)
		goto done;
	print_loaded(C, role, &m);
	printf("  %-6s %6s %6s %10s %12s %12s %12s %10s\n", "batch", "input", "output", "TTFT ms",
	       "prefill t/s", "decode ms", "decode t/s", "TPOT p99");
	if ((st = ctq_bench_model_measure(&m, role, C->csv, cells, print_sample, C, err)))
		goto done;
	if (m.mem)
		printf("  device memory: resident %.2f GB after load, peak %.2f GB during the runs\n",
		       (double)(m.total - m.free1) / 1e9, (double)(m.total - m.min_free) / 1e9);
	printf("  forward passes replayed as device graphs: %lld\n", (long long)m.mdl.r[0].graph_replays);
done:
	ctq_bench_model_close(&m);
	return st;
}

int ctq_cmd_bench_model(int argc, char **argv)
{
	const char *model = NULL, *ref = NULL;
	struct ctq_opt_out out = {0};
	struct ctx C = {.o = {.backend = NULL, .batches = {1}, .lens = {128}, .out_len = 32,
			      .warmup = 1, .reps = 3, .seed = 1, .n_b = 1, .n_l = 1, .tp = 1}};
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--model", &model),
		CTQ_OPT_STR("--ref-model", &ref),
		CTQ_OPT_STR("--backend", &C.o.backend),
		CTQ_OPT_OUT(&out),
		CTQ_OPT_FN("--batch", &C.o, opt_batch),
		CTQ_OPT_FN("--input-len", &C.o, opt_input_len),
		CTQ_OPT_INT("--output-len", &C.o.out_len, 1, 1 << 16),
		CTQ_OPT_INT("--warmup", &C.o.warmup, 0, 100),
		CTQ_OPT_INT("--reps", &C.o.reps, 1, 1000),
		CTQ_OPT_INT("--tp", &C.o.tp, 1, 8),
		CTQ_OPT_INT("--seed", &C.o.seed, 0, 0x7fffffffL),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse_need("bench model", argc, argv, opts, NULL, 0, help, &model,
				     "--model DIR is required (see --help)");
	if (prc >= 0)
		return prc;
	if (!ctq_opt_model_dir("bench model", "--model", model, &prc) ||
	    !ctq_opt_model_dir("bench model", "--ref-model", ref, &prc))
		return prc;
	if (!ctq_opt_out_ok("bench model", &out))
		return CTQ_EXIT_USAGE;
	if (!C.o.backend)
		C.o.backend = ctq_opt_backend_default("bench model");
	struct ctq_error err = {0};
	struct ctq_run run;
	struct ctq_csv csv, gcsv;
	memset(&run, 0, sizeof run);
	memset(&csv, 0, sizeof csv);
	memset(&gcsv, 0, sizeof gcsv);
	size_t n_cells = (size_t)(C.o.n_b * C.o.n_l);
	struct ctq_bench_model_cell *ref_cells = ctq_calloc(n_cells, sizeof *ref_cells),
				    *new_cells = ctq_calloc(n_cells, sizeof *new_cells);
	int rc = CTQ_EXIT_USAGE;
	char path[1200];
	if (!ref_cells || !new_cells) {
		ctq_error_set(&err, CTQ_ERR_NOMEM, "bench", "out of memory");
		goto fail;
	}
	if (ctq_run_begin(&run, out.dir, out.force, "bench-model", argc, argv, &err) ||
	    ctq_csv_open(&csv, ctq_run_path(&run, "bench_model.csv", path, sizeof path), header,
			 sizeof header / sizeof *header, &err))
		goto fail;
	C.csv = &csv;
	C.manifest = cJSON_AddObjectToObject(run.manifest, "bench_model");
	cJSON_AddStringToObject(C.manifest, "timing", "wall clock after backend synchronisation");
	cJSON_AddNumberToObject(C.manifest, "tp", (double)C.o.tp);
	if ((ref && bench_one(&C, "ref", ref, ref_cells, &err)) || bench_one(&C, "new", model, new_cells, &err))
		goto fail;
	if (ctq_csv_close(&csv, &err))
		goto fail;
	if (ref) {
		if (ctq_csv_open(&gcsv, ctq_run_path(&run, "bench_model_gains.csv", path, sizeof path),
				 gain_header, sizeof gain_header / sizeof *gain_header, &err))
			goto fail;
		printf("\n%-6s %6s  %10s %10s %8s  %12s %12s %7s  %12s %12s %7s\n", "batch", "input", "TTFT ref",
		       "TTFT new", "reduct.", "prefill ref", "prefill new", "gain", "decode ref", "decode new",
		       "gain");
		for (int bi = 0; bi < C.o.n_b; bi++)
			for (int li = 0; li < C.o.n_l; li++) {
				const struct ctq_bench_model_cell *a = &ref_cells[bi * C.o.n_l + li], *n = &new_cells[bi * C.o.n_l + li];
				double red = 1.0 - n->ttft_ms / a->ttft_ms, pg = n->prefill_tps / a->prefill_tps,
				       dg = n->decode_tps / a->decode_tps;
				printf("%-6ld %6ld  %8.2fms %8.2fms %7.1f%%  %12.0f %12.0f %6.2fx  %12.1f %12.1f %6.2fx\n",
				       C.o.batches[bi], C.o.lens[li], a->ttft_ms, n->ttft_ms, 100 * red, a->prefill_tps,
				       n->prefill_tps, pg, a->decode_tps, n->decode_tps, dg);
				const struct ctq_bench_model_gain_row g = {.batch = C.o.batches[bi],
									   .input_tokens = C.o.lens[li],
									   .output_tokens = C.o.out_len,
									   .ttft_ref_ms = a->ttft_ms,
									   .ttft_new_ms = n->ttft_ms,
									   .ttft_reduction = red,
									   .prefill_ref_tps = a->prefill_tps,
									   .prefill_new_tps = n->prefill_tps,
									   .prefill_gain = pg,
									   .decode_ref_tps = a->decode_tps,
									   .decode_new_tps = n->decode_tps,
									   .decode_gain = dg};
				ctq_fam_bench_model_gains_csv_row(&gcsv, &g);
			}
		if (ctq_csv_close(&gcsv, &err))
			goto fail;
	}
	if (ctq_run_commit(&run, &err))
		goto fail;
	printf("\nbench model: results in %s/ (bench_model.csv%s)\n", run.final_dir,
	       ref ? ", bench_model_gains.csv" : "");
	rc = CTQ_EXIT_OK;
	goto done;
fail:
	rc = ctq_print_error_exit("bench model", &err);
	ctq_csv_close(&csv, NULL);
	ctq_csv_close(&gcsv, NULL);
	ctq_run_abort(&run);
done:
	free(ref_cells);
	free(new_cells);
	return rc;
}
