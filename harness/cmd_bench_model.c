/* ctq bench model: prefill (TTFT) and decode throughput of a checkpoint on a
 * backend, over batch sizes and input lengths, with seeded random prompts and
 * greedy decoding of a fixed output length (EOS ignored). Every timing ends
 * with a backend synchronisation, read on CLOCK_MONOTONIC. */
#include "harness/commands.h"
#include "core/rng.h"
#include "model/runner.h"
#include "reports/csv.h"
#include "reports/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void help(void)
{
	printf("usage: ctq bench model --model DIR [options]\n"
	       "\n"
	       "Times prefill (time to first token) and decode of greedy generation with\n"
	       "seeded random prompts, EOS ignored.\n"
	       "\n"
	       "options:\n"
	       "  --backend B        cuda (default) or reference\n"
	       "  --batch LIST       sequences per run (default 1)\n"
	       "  --input-len LIST   prompt tokens (default 128)\n"
	       "  --output-len N     generated tokens (default 32)\n"
	       "  --warmup N         untimed runs first (default 1)\n"
	       "  --reps N           timed runs (default 3)\n"
	       "  --seed S           prompt seed (default 1)\n"
	       "  --out DIR          run directory (default runs/<UTC time>-<revision>)\n"
	       "\n"
	       "exit: 0 done; 2 bad usage or input; 3 no GPU for cuda.\n");
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_list(const char *s, long *v, int cap, long max)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	int n = 0;
	for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
		if (n == cap || !ctq_opt_int("bench model", "list", t, 1, max, &v[n]))
			return -1;
		n++;
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static const char *const header[] = {
	"backend", "batch", "input_tokens", "output_tokens", "rep", "ttft_ms", "prefill_tokens_per_s",
	"decode_ms_per_step", "decode_tokens_per_s", "tpot_p50_ms", "tpot_p99_ms", "weight_bytes",
};

/* One timed run: prefill batch × len tokens, then out_len - 1 decode steps. */
static enum ctq_status run_once(struct ctq_runner *r, long batch, long len, long out_len,
				struct ctq_rng *rng, double *ttft, double *steps,
				struct ctq_error *err)
{
	const int64_t V = r->cfg.vocab, T = batch * len;
	int32_t *ids = malloc((size_t)T * 4), *slot = malloc((size_t)T * 4), *pos = malloc((size_t)T * 4);
	int64_t *rows = malloc((size_t)batch * 8);
	float *logits = malloc((size_t)(batch * V) * 4);
	enum ctq_status st = CTQ_OK;
	if (!ids || !slot || !pos || !rows || !logits) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench", "out of memory");
		goto done;
	}
	for (long s = 0; s < batch; s++) {
		for (long i = 0; i < len; i++) {
			ids[s * len + i] = (int32_t)ctq_rng_below(rng, (uint64_t)V);
			slot[s * len + i] = (int32_t)s;
			pos[s * len + i] = (int32_t)i;
		}
		rows[s] = s * len + len - 1;
	}
	double t0 = now_s();
	for (int64_t off = 0; off < T && !st;) {
		/* Whole sequences per call, as many as fit in max_tokens. */
		int64_t per = r->opt.max_tokens / len;
		if (per < 1) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, "--input-len",
					   "%ld exceeds the runner's %lld tokens per call", len,
					   (long long)r->opt.max_tokens);
			break;
		}
		int64_t nseq = (T - off) / len < per ? (T - off) / len : per;
		int64_t local[512];
		for (int64_t s = 0; s < nseq; s++)
			local[s] = s * len + len - 1;
		st = ctq_runner_forward(r, ids + off, slot + off, pos + off, nseq * len, local, nseq,
					logits + (off / len) * V, err);
		off += nseq * len;
	}
	*ttft = now_s() - t0;
	for (long step = 1; step < out_len && !st; step++) {
		for (long s = 0; s < batch; s++) {
			const float *lg = logits + s * V;
			int64_t best = 0;
			for (int64_t i = 1; i < V; i++)
				if (lg[i] > lg[best])
					best = i;
			ids[s] = (int32_t)best;
			slot[s] = (int32_t)s;
			pos[s] = (int32_t)(len + step - 1);
			rows[s] = s;
		}
		double t1 = now_s();
		st = ctq_runner_forward(r, ids, slot, pos, batch, rows, batch, logits, err);
		steps[step - 1] = now_s() - t1;
	}
done:
	free(ids), free(slot), free(pos), free(rows), free(logits);
	return st;
}

int ctq_cmd_bench_model(int argc, char **argv)
{
	const char *model = NULL, *backend = "cuda", *out = NULL;
	long batches[16] = {1}, lens[16] = {128}, out_len = 32, warmup = 1, reps = 3, seed = 1;
	int n_b = 1, n_l = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return CTQ_EXIT_OK;
		}
		if (!(v = ctq_opt_value(argc, argv, &i)))
			return CTQ_EXIT_USAGE;
		if (!strcmp(a, "--model"))
			model = v;
		else if (!strcmp(a, "--backend"))
			backend = v;
		else if (!strcmp(a, "--out"))
			out = v;
		else if (!strcmp(a, "--batch")) {
			if ((n_b = parse_list(v, batches, 16, 256)) < 0)
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--input-len")) {
			if ((n_l = parse_list(v, lens, 16, 1 << 17)) < 0)
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--output-len")) {
			if (!ctq_opt_int("bench model", a, v, 1, 1 << 16, &out_len))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--warmup")) {
			if (!ctq_opt_int("bench model", a, v, 0, 100, &warmup))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--reps")) {
			if (!ctq_opt_int("bench model", a, v, 1, 1000, &reps))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--seed")) {
			if (!ctq_opt_int("bench model", a, v, 0, 0x7fffffffL, &seed))
				return CTQ_EXIT_USAGE;
		} else {
			fprintf(stderr, "ctq bench model: unknown option %s (see --help)\n", a);
			return CTQ_EXIT_USAGE;
		}
	}
	if (!model) {
		fprintf(stderr, "ctq bench model: --model DIR is required (see --help)\n");
		return CTQ_EXIT_USAGE;
	}
	long max_b = 1, max_l = 1;
	for (int i = 0; i < n_b; i++)
		max_b = batches[i] > max_b ? batches[i] : max_b;
	for (int i = 0; i < n_l; i++)
		max_l = lens[i] > max_l ? lens[i] : max_l;
	struct ctq_error err = {0};
	struct ctq_backend b;
	struct ctq_runner r;
	struct ctq_run run;
	struct ctq_csv csv;
	memset(&r, 0, sizeof r);
	memset(&run, 0, sizeof run);
	memset(&csv, 0, sizeof csv);
	int rc = CTQ_EXIT_USAGE;
	double *steps = NULL;
	if (ctq_backend_open(&b, backend, &err))
		goto fail;
	struct ctq_runner_options opt = {
		.max_slots = max_b, .max_len = max_l + out_len,
		.max_tokens = max_l > 8192 ? max_l : (max_b * max_l < 8192 ? max_b * max_l : 8192)};
	if (opt.max_tokens < max_b)
		opt.max_tokens = max_b;
	double tl = now_s();
	if (ctq_runner_load(&r, &b, model, &opt, &err))
		goto fail;
	tl = now_s() - tl;
	char desc[256];
	b.ops->describe(&b, desc, sizeof desc);
	printf("model %s on %s: %lld linear modules W8A8, %lld BF16; %.2f GB of weights; loaded in %.2f s\n",
	       model, desc, (long long)r.n_quantized, (long long)r.n_dense, (double)r.weight_bytes / 1e9, tl);
	steps = malloc((size_t)out_len * sizeof *steps);
	char path[1200];
	if (!steps || ctq_run_begin(&run, out, "bench-model", argc, argv, &err) ||
	    ctq_csv_open(&csv, ctq_run_path(&run, "bench_model.csv", path, sizeof path), header,
			 sizeof header / sizeof *header, &err))
		goto fail;
	printf("%-6s %6s %6s %10s %12s %12s %12s %10s\n", "batch", "input", "output", "TTFT ms",
	       "prefill t/s", "decode ms", "decode t/s", "TPOT p99");
	for (int bi = 0; bi < n_b; bi++)
		for (int li = 0; li < n_l; li++) {
			struct ctq_rng rng;
			ctq_rng_seed(&rng, (uint64_t)seed);
			for (long rep = -warmup; rep < reps; rep++) {
				double ttft = 0;
				if (run_once(&r, batches[bi], lens[li], out_len, &rng, &ttft, steps, &err))
					goto fail;
				if (rep < 0)
					continue;
				double sum = 0;
				double *sorted = malloc((size_t)out_len * sizeof *sorted);
				for (long s = 0; s + 1 < out_len; s++) {
					sum += steps[s];
					sorted[s] = steps[s];
				}
				long ns = out_len - 1;
				qsort(sorted, (size_t)(ns > 0 ? ns : 0), sizeof *sorted, cmp_double);
				double mean = ns > 0 ? sum / (double)ns : NAN;
				double p50 = ns > 0 ? sorted[ns / 2] : NAN;
				double p99 = ns > 0 ? sorted[(long)floor(0.99 * (double)(ns - 1))] : NAN;
				free(sorted);
				double pre_tps = (double)(batches[bi] * lens[li]) / ttft;
				double dec_tps = (double)batches[bi] / mean;
				printf("%-6ld %6ld %6ld %10.2f %12.0f %12.3f %12.1f %10.3f\n", batches[bi], lens[li],
				       out_len, ttft * 1e3, pre_tps, mean * 1e3, dec_tps, p99 * 1e3);
				ctq_csv_field(&csv, backend);
				ctq_csv_fieldf(&csv, "%ld", batches[bi]);
				ctq_csv_fieldf(&csv, "%ld", lens[li]);
				ctq_csv_fieldf(&csv, "%ld", out_len);
				ctq_csv_fieldf(&csv, "%ld", rep);
				ctq_csv_fieldf(&csv, "%.6f", ttft * 1e3);
				ctq_csv_fieldf(&csv, "%.3f", pre_tps);
				ctq_csv_fieldf(&csv, "%.6f", mean * 1e3);
				ctq_csv_fieldf(&csv, "%.3f", dec_tps);
				ctq_csv_fieldf(&csv, "%.6f", p50 * 1e3);
				ctq_csv_fieldf(&csv, "%.6f", p99 * 1e3);
				ctq_csv_fieldf(&csv, "%llu", (unsigned long long)r.weight_bytes);
				ctq_csv_end_row(&csv);
				fflush(stdout);
			}
		}
	if (ctq_csv_close(&csv, &err))
		goto fail;
	printf("forward passes replayed as device graphs: %lld\n", (long long)r.graph_replays);
	cJSON *bm = cJSON_AddObjectToObject(run.manifest, "bench_model");
	cJSON_AddStringToObject(bm, "model", model);
	cJSON_AddStringToObject(bm, "device", desc);
	cJSON_AddNumberToObject(bm, "weight_bytes", (double)r.weight_bytes);
	cJSON_AddNumberToObject(bm, "load_s", tl);
	cJSON_AddStringToObject(bm, "timing", "wall clock after backend synchronisation");
	if (ctq_run_commit(&run, &err))
		goto fail;
	rc = CTQ_EXIT_OK;
	goto done;
fail:
	ctq_print_error("bench model", &err);
	rc = ctq_status_exit_code(err.status);
	ctq_csv_close(&csv, NULL);
	ctq_run_abort(&run);
done:
	free(steps);
	ctq_runner_free(&r);
	ctq_backend_close(&b);
	return rc;
}
