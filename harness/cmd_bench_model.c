/* ctq bench model: prefill (TTFT) and decode throughput of a checkpoint on a
 * backend over batch sizes and input lengths, with seeded random prompts and
 * greedy decoding of a fixed output length (EOS ignored); memory as a result
 * (weights, KV cache per token, resident and peak device memory, the largest
 * batch × context that fits); load time with the page-cache state; and with
 * --ref-model the two side by side with gain columns. Every timing ends with
 * a backend synchronisation, read on CLOCK_MONOTONIC. */
#define _GNU_SOURCE
#include "harness/commands.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "model/runner.h"
#include "backend/backend.h"
#include "results/csv_out.h"
#include "results/run.h"
#include "core/time.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void help(void)
{
	printf("usage: ctq bench model --model DIR [options]\n"
	       "\n"
	       "Times prefill (time to first token) and decode of greedy generation with\n"
	       "seeded random prompts, EOS ignored; reports memory and load time.\n"
	       "\n"
	       "options:\n"
	       "  --ref-model DIR    baseline checkpoint (e.g. BF16): run first, gains reported\n"
	       "  --backend B        cuda (default) or reference\n"
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

static double median(double *v, long n)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Fraction of the checkpoint's tensor files resident in the page cache
 * (mincore over a read-only mapping), so load times say cold or warm. */
static double page_cache_fraction(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return NAN;
	size_t pages = 0, resident = 0;
	long ps = sysconf(_SC_PAGESIZE);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 12 || strcmp(e->d_name + n - 12, ".safetensors"))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int fd;
		struct stat sb;
		if (ctq_file_open_regular(path, "a .safetensors file", &fd, &sb, NULL))
			continue;
		if (sb.st_size == 0) {
			close(fd);
			continue;
		}
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			continue;
		size_t np = ((size_t)sb.st_size + (size_t)ps - 1) / (size_t)ps;
		unsigned char *vec = malloc(np);
		if (vec && mincore(m, (size_t)sb.st_size, vec) == 0)
			for (size_t i = 0; i < np; i++)
				resident += vec[i] & 1;
		pages += np;
		free(vec);
		munmap(m, (size_t)sb.st_size);
	}
	closedir(d);
	return pages ? (double)resident / (double)pages : NAN;
}

static const char *const header[] = {
	"role", "model", "backend", "batch", "input_tokens", "output_tokens", "rep", "ttft_ms",
	"prefill_tokens_per_s", "decode_ms_per_step", "decode_tokens_per_s", "tpot_p50_ms",
	"tpot_p99_ms", "weight_bytes", "kv_bytes_per_token", "device_resident_bytes",
	"device_peak_bytes",
};

static const char *const gain_header[] = {
	"batch", "input_tokens", "output_tokens", "ttft_ref_ms", "ttft_new_ms", "ttft_reduction",
	"prefill_ref_tokens_per_s", "prefill_new_tokens_per_s", "prefill_gain",
	"decode_ref_tokens_per_s", "decode_new_tokens_per_s", "decode_gain",
};

struct cell {
	double ttft_ms, prefill_tps, decode_tps; /* medians over reps */
};

struct ctx {
	const char *backend;
	long batches[16], lens[16], out_len, warmup, reps, seed, tp;
	int n_b, n_l;
	struct ctq_csv *csv;
	cJSON *manifest;
};

/* One timed run: prefill batch × len tokens, then out_len - 1 decode steps. */
/* One forward pass on one runner or on the tp ranks r[0..tp-1]. */
static enum ctq_status fwd(struct ctq_runner *r, int tp, const int32_t *ids, const int32_t *slot,
			   const int32_t *pos, int64_t T, const int64_t *rows, int64_t n_rows,
			   float *logits, struct ctq_error *err)
{
	return tp > 1 ? ctq_runner_tp_forward(r, tp, ids, slot, pos, T, rows, n_rows, logits, err)
		      : ctq_runner_forward(r, ids, slot, pos, T, rows, n_rows, logits, err);
}

static enum ctq_status run_once(struct ctq_runner *r, int tp, long batch, long len, long out_len,
				struct ctq_rng *rng, double *ttft, double *steps,
				struct ctq_error *err)
{
	const int64_t V = r->cfg.vocab, T = batch * len;
	int32_t *ids = malloc((size_t)T * 4), *slot = malloc((size_t)T * 4), *pos = malloc((size_t)T * 4);
	int64_t *rows = malloc((size_t)batch * 8), *local = malloc((size_t)batch * 8);
	float *logits = malloc((size_t)(batch * V) * 4);
	enum ctq_status st = CTQ_OK;
	if (!ids || !slot || !pos || !rows || !local || !logits) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench", "out of memory");
		goto done;
	}
	for (long s = 0; s < batch; s++)
		for (long i = 0; i < len; i++) {
			ids[s * len + i] = (int32_t)ctq_rng_below(rng, (uint64_t)V);
			slot[s * len + i] = (int32_t)s;
			pos[s * len + i] = (int32_t)i;
		}
	double t0 = ctq_now_s();
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
		for (int64_t s = 0; s < nseq; s++)
			local[s] = s * len + len - 1;
		st = fwd(r, tp, ids + off, slot + off, pos + off, nseq * len, local, nseq,
			 logits + (off / len) * V, err);
		off += nseq * len;
	}
	*ttft = ctq_now_s() - t0;
	for (long step = 1; step < out_len && !st; step++) {
		for (long s = 0; s < batch; s++) {
			ids[s] = ctq_argmax(logits + s * V, V);
			slot[s] = (int32_t)s;
			pos[s] = (int32_t)(len + step - 1);
			rows[s] = s;
		}
		double t1 = ctq_now_s();
		st = fwd(r, tp, ids, slot, pos, batch, rows, batch, logits, err);
		steps[step - 1] = ctq_now_s() - t1;
	}
done:
	free(ids), free(slot), free(pos), free(rows), free(local), free(logits);
	return st;
}

static enum ctq_status bench_one(struct ctx *C, const char *role, const char *model,
				 struct cell *cells, struct ctq_error *err)
{
	long max_b = 1, max_l = 1;
	for (int i = 0; i < C->n_b; i++)
		max_b = C->batches[i] > max_b ? C->batches[i] : max_b;
	for (int i = 0; i < C->n_l; i++)
		max_l = C->lens[i] > max_l ? C->lens[i] : max_l;
	const int tp = (int)C->tp;
	struct ctq_backend bk[8];
	struct ctq_runner rk[8];
	struct ctq_tp_group *group = NULL;
	memset(bk, 0, sizeof bk);
	memset(rk, 0, sizeof rk);
	struct ctq_backend *const b0 = &bk[0];
	struct ctq_runner *const r0 = &rk[0];
	double *steps = malloc((size_t)C->out_len * sizeof *steps);
	double *samples = malloc((size_t)C->reps * 3 * sizeof *samples);
	enum ctq_status st;
	if (!steps || !samples) {
		free(steps), free(samples);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench", "out of memory");
	}
	/* With --tp on CUDA, rank k runs on GPU k and the ranks share one NCCL
	 * clique; on the reference backend the ranks are threads of this process. */
	const bool cuda = !strcmp(C->backend, "cuda");
	st = CTQ_OK;
	for (int k = 0; k < tp && !st; k++)
		st = tp > 1 && cuda ? ctq_backend_cuda(&bk[k], k, err) : ctq_backend_open(&bk[k], C->backend, err);
	if (!st && tp > 1)
		st = cuda ? ctq_backend_cuda_tp_init(bk, tp, err)
		     : !(group = ctq_tp_group_new(tp)) ? ctq_error_set(err, CTQ_ERR_NOMEM, "--tp", "out of memory")
						       : CTQ_OK;
	if (st) {
		free(steps), free(samples);
		for (int k = 0; k < tp; k++)
			ctq_backend_close(&bk[k]);
		ctq_tp_group_free(group);
		return st;
	}
	struct ctq_runner_options opt = {
		.max_slots = max_b, .max_len = max_l + C->out_len,
		.max_tokens = max_l > 8192 ? max_l : (max_b * max_l < 8192 ? max_b * max_l : 8192),
		.tp = tp, .group = group};
	if (opt.max_tokens < max_b)
		opt.max_tokens = max_b;
	size_t free0 = 0, free1 = 0, total = 0, min_free = 0;
	bool mem = b0->ops->mem_info && !b0->ops->mem_info(b0, &free0, &total, err);
	double cached = page_cache_fraction(model);
	double tl = ctq_now_s();
	for (int k = 0; k < tp && !st; k++) {
		opt.rank = k;
		st = ctq_runner_load(&rk[k], &bk[k], model, &opt, err);
	}
	if (st)
		goto done;
	tl = ctq_now_s() - tl;
	if (mem && (st = b0->ops->mem_info(b0, &free1, &total, err)))
		goto done;
	min_free = free1;
	const struct ctq_model_config *c = &r0->cfg;
	const uint64_t kv_tok = (uint64_t)(2 * c->layers * c->kv_heads * c->head_dim) * b0->ops->act_bytes;
	/* Rank 0 holds its share of the KV heads. */
	const uint64_t kv_tok_rank = tp > 1 ? (uint64_t)(2 * c->layers * r0->kv_local * c->head_dim) *
						      b0->ops->act_bytes
					    : kv_tok;
	uint64_t weight_bytes = 0;
	for (int k = 0; k < tp; k++)
		weight_bytes += rk[k].weight_bytes;
	char desc[256];
	b0->ops->describe(b0, desc, sizeof desc);
	if (tp > 1) {
		size_t dl = strlen(desc);
		snprintf(desc + dl, sizeof desc - dl, " x %d ranks (tp %d, %s)", tp, tp,
			 cuda ? "NCCL" : "in-process");
	}
	if (!cJSON_GetObjectItemCaseSensitive(C->manifest, "device"))
		cJSON_AddStringToObject(C->manifest, "device", desc);
	printf("\n[%s] %s on %s: %lld linear modules W8A8, %lld BF16\n", role, model, desc,
	       (long long)r0->n_quantized, (long long)r0->n_dense);
	printf("  weights %.3f GB; KV cache %llu bytes per token (%lld layers x %lld kv heads x %lld x 2 x %zu B)\n",
	       (double)weight_bytes / 1e9, (unsigned long long)kv_tok, (long long)c->layers,
	       (long long)c->kv_heads, (long long)c->head_dim, b0->ops->act_bytes);
	if (tp > 1)
		printf("  rank 0 of %d: weights %.3f GB, KV cache %llu bytes per token\n", tp,
		       (double)r0->weight_bytes / 1e9, (unsigned long long)kv_tok_rank);
	printf("  load %.2f s with %.0f%% of the tensor files in the page cache (%s)\n", tl,
	       100.0 * (isnan(cached) ? 0 : cached),
	       isnan(cached) ? "unknown" : cached > 0.9 ? "warm" : cached < 0.1 ? "cold" : "partly warm");
	if (mem) {
		const uint64_t loaded = (uint64_t)(free0 - free1);
		const uint64_t kv_alloc = (uint64_t)(opt.max_slots * opt.max_len) * kv_tok_rank;
		const uint64_t room = (uint64_t)free1 + kv_alloc;
		printf("  device%s: %.2f GB taken by the load (weights, KV cache for %lld x %lld, scratch); %.2f GB free of %.2f\n",
		       tp > 1 ? " (rank 0)" : "", (double)loaded / 1e9, (long long)opt.max_slots, (long long)opt.max_len,
		       (double)free1 / 1e9, (double)total / 1e9);
		printf("  largest KV cache that fits beside the weights: %.0f tokens (e.g. batch %ld x context %.0f)\n",
		       (double)room / (double)kv_tok_rank, max_b,
		       (double)room / (double)kv_tok_rank / (double)max_b);
		cJSON *mj = cJSON_AddObjectToObject(C->manifest, role);
		cJSON_AddStringToObject(mj, "model", model);
		cJSON_AddNumberToObject(mj, "weight_bytes", (double)weight_bytes);
		cJSON_AddNumberToObject(mj, "tp", tp);
		cJSON_AddNumberToObject(mj, "kv_bytes_per_token", (double)kv_tok);
		cJSON_AddNumberToObject(mj, "load_s", tl);
		cJSON_AddNumberToObject(mj, "page_cache_fraction", isnan(cached) ? -1 : cached);
		cJSON_AddNumberToObject(mj, "device_total_bytes", (double)total);
		cJSON_AddNumberToObject(mj, "kv_tokens_that_fit", (double)room / (double)kv_tok_rank);
	}
	printf("  %-6s %6s %6s %10s %12s %12s %12s %10s\n", "batch", "input", "output", "TTFT ms",
	       "prefill t/s", "decode ms", "decode t/s", "TPOT p99");
	for (int bi = 0; bi < C->n_b && !st; bi++)
		for (int li = 0; li < C->n_l && !st; li++) {
			struct ctq_rng rng;
			ctq_rng_seed(&rng, (uint64_t)C->seed);
			long nrep = 0;
			for (long rep = -C->warmup; rep < C->reps && !st; rep++) {
				double ttft = 0;
				if ((st = run_once(rk, tp, C->batches[bi], C->lens[li], C->out_len, &rng, &ttft, steps, err)))
					break;
				size_t fr = 0, tot = 0;
				if (mem && !b0->ops->mem_info(b0, &fr, &tot, err) && fr < min_free)
					min_free = fr;
				if (rep < 0)
					continue;
				long ns = C->out_len - 1;
				double sum = 0;
				for (long s = 0; s < ns; s++)
					sum += steps[s];
				double mean = ns > 0 ? sum / (double)ns : NAN;
				double p50 = ns > 0 ? median(steps, ns) : NAN; /* sorts steps */
				double p99 = ns > 0 ? steps[(long)floor(0.99 * (double)(ns - 1))] : NAN;
				double pre_tps = (double)(C->batches[bi] * C->lens[li]) / ttft;
				double dec_tps = (double)C->batches[bi] / mean;
				samples[nrep] = ttft * 1e3;
				samples[C->reps + nrep] = pre_tps;
				samples[2 * C->reps + nrep] = dec_tps;
				nrep++;
				printf("  %-6ld %6ld %6ld %10.2f %12.0f %12.3f %12.1f %10.3f\n", C->batches[bi],
				       C->lens[li], C->out_len, ttft * 1e3, pre_tps, mean * 1e3, dec_tps, p99 * 1e3);
				struct ctq_csv *w = C->csv;
				ctq_csv_field(w, role);
				ctq_csv_field(w, model);
				ctq_csv_field(w, C->backend);
				ctq_csv_fieldf(w, "%ld", C->batches[bi]);
				ctq_csv_fieldf(w, "%ld", C->lens[li]);
				ctq_csv_fieldf(w, "%ld", C->out_len);
				ctq_csv_fieldf(w, "%ld", rep);
				ctq_csv_fieldf(w, "%.6f", ttft * 1e3);
				ctq_csv_fieldf(w, "%.3f", pre_tps);
				ctq_csv_fieldf(w, "%.6f", mean * 1e3);
				ctq_csv_fieldf(w, "%.3f", dec_tps);
				ctq_csv_fieldf(w, "%.6f", p50 * 1e3);
				ctq_csv_fieldf(w, "%.6f", p99 * 1e3);
				ctq_csv_fieldf(w, "%llu", (unsigned long long)weight_bytes);
				ctq_csv_fieldf(w, "%llu", (unsigned long long)kv_tok);
				if (mem) {
					ctq_csv_fieldf(w, "%llu", (unsigned long long)(total - free1));
					ctq_csv_fieldf(w, "%llu", (unsigned long long)(total - min_free));
				} else {
					ctq_csv_field(w, "");
					ctq_csv_field(w, "");
				}
				ctq_csv_end_row(w);
				fflush(stdout);
			}
			struct cell *cl = &cells[bi * C->n_l + li];
			cl->ttft_ms = median(samples, nrep);
			cl->prefill_tps = median(samples + C->reps, nrep);
			cl->decode_tps = median(samples + 2 * C->reps, nrep);
		}
	if (!st && mem)
		printf("  device memory: resident %.2f GB after load, peak %.2f GB during the runs\n",
		       (double)(total - free1) / 1e9, (double)(total - min_free) / 1e9);
	if (!st)
		printf("  forward passes replayed as device graphs: %lld\n", (long long)r0->graph_replays);
done:
	free(steps);
	free(samples);
	for (int k = 0; k < tp; k++) {
		ctq_runner_free(&rk[k]);
		ctq_backend_close(&bk[k]);
	}
	ctq_tp_group_free(group);
	return st;
}

int ctq_cmd_bench_model(int argc, char **argv)
{
	const char *model = NULL, *ref = NULL, *out = NULL;
	bool force = false;
	struct ctx C = {.backend = "cuda", .batches = {1}, .lens = {128}, .out_len = 32, .warmup = 1,
			.reps = 3, .seed = 1, .n_b = 1, .n_l = 1, .tp = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return CTQ_EXIT_OK;
		}
		if (!strcmp(a, "--force")) {
			force = true;
			continue;
		}
		if (!(v = ctq_opt_value(argc, argv, &i)))
			return CTQ_EXIT_USAGE;
		if (!strcmp(a, "--model"))
			model = v;
		else if (!strcmp(a, "--ref-model"))
			ref = v;
		else if (!strcmp(a, "--backend"))
			C.backend = v;
		else if (!strcmp(a, "--out"))
			out = v;
		else if (!strcmp(a, "--batch")) {
			if ((C.n_b = parse_list(v, C.batches, 16, 256)) < 0)
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--input-len")) {
			if ((C.n_l = parse_list(v, C.lens, 16, 1 << 17)) < 0)
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--output-len")) {
			if (!ctq_opt_int("bench model", a, v, 1, 1 << 16, &C.out_len))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--warmup")) {
			if (!ctq_opt_int("bench model", a, v, 0, 100, &C.warmup))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--reps")) {
			if (!ctq_opt_int("bench model", a, v, 1, 1000, &C.reps))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--tp")) {
			if (!ctq_opt_int("bench model", a, v, 1, 8, &C.tp))
				return CTQ_EXIT_USAGE;
		} else if (!strcmp(a, "--seed")) {
			if (!ctq_opt_int("bench model", a, v, 0, 0x7fffffffL, &C.seed))
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
	if (!ctq_opt_model_dir("bench model", "--model", model) ||
	    !ctq_opt_model_dir("bench model", "--ref-model", ref))
		return ctq_status_exit_code(CTQ_ERR_IO);
	if (!ctq_opt_out_ok("bench model", out, force))
		return CTQ_EXIT_USAGE;
	struct ctq_error err = {0};
	struct ctq_run run;
	struct ctq_csv csv, gcsv;
	memset(&run, 0, sizeof run);
	memset(&csv, 0, sizeof csv);
	memset(&gcsv, 0, sizeof gcsv);
	size_t n_cells = (size_t)(C.n_b * C.n_l);
	struct cell *ref_cells = calloc(n_cells, sizeof *ref_cells), *new_cells = calloc(n_cells, sizeof *new_cells);
	int rc = CTQ_EXIT_USAGE;
	char path[1200];
	if (!ref_cells || !new_cells) {
		ctq_error_set(&err, CTQ_ERR_NOMEM, "bench", "out of memory");
		goto fail;
	}
	if (ctq_run_begin(&run, out, force, "bench-model", argc, argv, &err) ||
	    ctq_csv_open(&csv, ctq_run_path(&run, "bench_model.csv", path, sizeof path), header,
			 sizeof header / sizeof *header, &err))
		goto fail;
	C.csv = &csv;
	C.manifest = cJSON_AddObjectToObject(run.manifest, "bench_model");
	cJSON_AddStringToObject(C.manifest, "timing", "wall clock after backend synchronisation");
	cJSON_AddNumberToObject(C.manifest, "tp", (double)C.tp);
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
		for (int bi = 0; bi < C.n_b; bi++)
			for (int li = 0; li < C.n_l; li++) {
				const struct cell *a = &ref_cells[bi * C.n_l + li], *n = &new_cells[bi * C.n_l + li];
				double red = 1.0 - n->ttft_ms / a->ttft_ms, pg = n->prefill_tps / a->prefill_tps,
				       dg = n->decode_tps / a->decode_tps;
				printf("%-6ld %6ld  %8.2fms %8.2fms %7.1f%%  %12.0f %12.0f %6.2fx  %12.1f %12.1f %6.2fx\n",
				       C.batches[bi], C.lens[li], a->ttft_ms, n->ttft_ms, 100 * red, a->prefill_tps,
				       n->prefill_tps, pg, a->decode_tps, n->decode_tps, dg);
				ctq_csv_fieldf(&gcsv, "%ld", C.batches[bi]);
				ctq_csv_fieldf(&gcsv, "%ld", C.lens[li]);
				ctq_csv_fieldf(&gcsv, "%ld", C.out_len);
				ctq_csv_fieldf(&gcsv, "%.6f", a->ttft_ms);
				ctq_csv_fieldf(&gcsv, "%.6f", n->ttft_ms);
				ctq_csv_fieldf(&gcsv, "%.6f", red);
				ctq_csv_fieldf(&gcsv, "%.3f", a->prefill_tps);
				ctq_csv_fieldf(&gcsv, "%.3f", n->prefill_tps);
				ctq_csv_fieldf(&gcsv, "%.6f", pg);
				ctq_csv_fieldf(&gcsv, "%.3f", a->decode_tps);
				ctq_csv_fieldf(&gcsv, "%.3f", n->decode_tps);
				ctq_csv_fieldf(&gcsv, "%.6f", dg);
				ctq_csv_end_row(&gcsv);
			}
		if (ctq_csv_close(&gcsv, &err))
			goto fail;
	}
	char final_dir[sizeof run.final_dir];
	snprintf(final_dir, sizeof final_dir, "%s", run.final_dir);
	if (ctq_run_commit(&run, &err))
		goto fail;
	printf("\nbench model: results in %s/ (bench_model.csv%s)\n", final_dir,
	       ref ? ", bench_model_gains.csv" : "");
	rc = CTQ_EXIT_OK;
	goto done;
fail:
	ctq_print_error("bench model", &err);
	rc = ctq_status_exit_code(err.status);
	ctq_csv_close(&csv, NULL);
	ctq_csv_close(&gcsv, NULL);
	ctq_run_abort(&run);
done:
	free(ref_cells);
	free(new_cells);
	return rc;
}
