/* ctq bench model, the engine (bench/model.h). */
#define _GNU_SOURCE
#include "bench/model.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/time.h"
#include "families/bench_model.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
		unsigned char *vec = ctq_malloc(np);
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

/* One timed run: prefill batch x len tokens, then out_len - 1 decode steps. */
/* 64-bit FNV-1a over n token ids, continuing from h. */
static uint64_t fnv_ids(uint64_t h, const int32_t *ids, long n)
{
	for (long i = 0; i < n; i++)
		for (int b = 0; b < 4; b++) {
			h ^= (uint64_t)(((uint32_t)ids[i] >> (8 * b)) & 0xffu);
			h *= 0x100000001b3ull;
		}
	return h;
}

/* One timed run: prefill batch x len tokens, then out_len - 1 decode steps.
 * Each call ends with the greedy pick of its rows (ctq_model_forward_next):
 * a serving engine's step ends with its sampling, so the pick is part of
 * what a step costs. */
static enum ctq_status run_once(struct ctq_model *mdl, long batch, long len, long out_len,
				struct ctq_rng *rng, double *ttft, double *steps, uint64_t *digest,
				struct ctq_error *err)
{
	const int64_t V = ctq_model_cfg(mdl)->vocab, T = batch * len;
	int32_t *ids = ctq_malloc((size_t)T * 4), *slot = ctq_malloc((size_t)T * 4), *pos = ctq_malloc((size_t)T * 4);
	int64_t *rows = ctq_malloc((size_t)batch * 8), *local = ctq_malloc((size_t)batch * 8);
	int32_t *next = ctq_malloc((size_t)batch * 4);
	enum ctq_status st = CTQ_OK;
	if (!ids || !slot || !pos || !rows || !local || !next) {
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
		int64_t per = mdl->limits.max_tokens / len;
		if (per < 1) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, "--input-len",
					   "%ld exceeds the runner's %lld tokens per call", len,
					   (long long)mdl->limits.max_tokens);
			break;
		}
		int64_t nseq = (T - off) / len < per ? (T - off) / len : per;
		for (int64_t s = 0; s < nseq; s++)
			local[s] = s * len + len - 1;
		st = ctq_model_forward_next(mdl, ids + off, slot + off, pos + off, nseq * len, local, nseq,
					    next + off / len, err);
		off += nseq * len;
	}
	*ttft = ctq_now_s() - t0;
	*digest = fnv_ids(0xcbf29ce484222325ull, next, batch);
	for (long step = 1; step < out_len && !st; step++) {
		for (long s = 0; s < batch; s++) {
			ids[s] = next[s];
			slot[s] = (int32_t)s;
			pos[s] = (int32_t)(len + step - 1);
			rows[s] = s;
		}
		double t1 = ctq_now_s();
		st = ctq_model_forward_next(mdl, ids, slot, pos, batch, rows, batch, next, err);
		steps[step - 1] = ctq_now_s() - t1;
		*digest = fnv_ids(*digest, next, batch);
	}
done:
	free(ids), free(slot), free(pos), free(rows), free(local), free(next);
	return st;
}

enum ctq_status ctq_bench_model_open(struct ctq_bench_model *m, const struct ctq_bench_model_options *o,
				     const char *model, struct ctq_error *err)
{
	memset(m, 0, sizeof *m);
	m->o = o;
	m->model = model;
	long max_b = 1, max_l = 1;
	for (int i = 0; i < o->n_b; i++)
		max_b = o->batches[i] > max_b ? o->batches[i] : max_b;
	for (int i = 0; i < o->n_l; i++)
		max_l = o->lens[i] > max_l ? o->lens[i] : max_l;
	m->max_b = max_b;
	const int tp = (int)o->tp;
	struct ctq_model *const mdl = &m->mdl;
	enum ctq_status st;
	m->steps = ctq_malloc((size_t)o->out_len * sizeof *m->steps);
	m->samples = ctq_malloc((size_t)o->reps * 3 * sizeof *m->samples);
	if (!m->steps || !m->samples)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench", "out of memory");
	if ((st = ctq_model_open_ranks(mdl, o->backend, tp, CTQ_ACT_NUMERICS_CTQ, err)))
		return st;
	struct ctq_backend *const b0 = &mdl->b[0];
	struct ctq_model_limits shape = {
		.max_slots = max_b, .max_len = max_l + o->out_len,
		.max_tokens = max_l > 8192 ? max_l : (max_b * max_l < 8192 ? max_b * max_l : 8192)};
	if (shape.max_tokens < max_b)
		shape.max_tokens = max_b;
	m->mem = b0->ops->mem_info && !b0->ops->mem_info(b0, &m->free0, &m->total, err);
	m->cached = page_cache_fraction(model);
	if ((st = ctq_model_load(mdl, model, &shape, err)))
		return st;
	struct ctq_runner *const r0 = &mdl->r[0];
	if (m->mem && (st = b0->ops->mem_info(b0, &m->free1, &m->total, err)))
		return st;
	m->min_free = m->free1;
	const struct ctq_model_config *c = &r0->cfg;
	m->kv_tok = (uint64_t)(2 * c->layers * c->kv_heads * c->head_dim) * b0->ops->act_bytes;
	/* Rank 0 holds its share of the KV heads. */
	m->kv_tok_rank = tp > 1 ? (uint64_t)(2 * c->layers * r0->kv_local * c->head_dim) * b0->ops->act_bytes
				: m->kv_tok;
	return CTQ_OK;
}

/* One repetition as bench_model.csv's row (the family writes it). */
static void csv_row(const struct ctq_bench_model *m, const char *role, const struct ctq_bench_model_sample *x,
		    struct ctq_csv *w)
{
	const struct ctq_bench_model_row r = {
		.role = role,
		.model = m->model,
		.backend = m->o->backend,
		.batch = x->batch,
		.input_tokens = x->len,
		.output_tokens = m->o->out_len,
		.rep = x->rep,
		.ttft_s = x->ttft_s,
		.prefill_tps = x->prefill_tps,
		.decode_mean_s = x->mean_s,
		.decode_tps = x->decode_tps,
		.tpot_p50_s = x->p50_s,
		.tpot_p99_s = x->p99_s,
		.weight_bytes = m->mdl.weight_bytes,
		.kv_bytes_per_token = m->kv_tok,
		.has_device_bytes = m->mem,
		.device_resident_bytes = m->mem ? (uint64_t)(m->total - m->free1) : 0,
		.device_peak_bytes = m->mem ? (uint64_t)(m->total - m->min_free) : 0,
		.output_digest = x->output_digest};
	ctq_fam_bench_model_csv_row(w, &r);
}

/* The warmup and timed runs of one (batch, len); the medians into cl. */
static enum ctq_status measure_cell(struct ctq_bench_model *m, const char *role, long batch, long len,
				    struct ctq_csv *csv, struct ctq_bench_model_cell *cl,
				    ctq_bench_model_sample_fn on_sample, void *ctx, struct ctq_error *err)
{
	const struct ctq_bench_model_options *o = m->o;
	struct ctq_backend *const b0 = &m->mdl.b[0];
	double *steps = m->steps, *samples = m->samples;
	enum ctq_status st = CTQ_OK;
	struct ctq_rng rng;
	ctq_rng_seed(&rng, (uint64_t)o->seed);
	long nrep = 0;
	for (long rep = -o->warmup; rep < o->reps && !st; rep++) {
		double ttft = 0;
		uint64_t digest = 0;
		if ((st = run_once(&m->mdl, batch, len, o->out_len, &rng, &ttft, steps, &digest, err)))
			break;
		size_t fr = 0, tot = 0;
		if (m->mem && !b0->ops->mem_info(b0, &fr, &tot, err) && fr < m->min_free)
			m->min_free = fr;
		if (rep < 0)
			continue;
		long ns = o->out_len - 1;
		double sum = 0;
		for (long s = 0; s < ns; s++)
			sum += steps[s];
		struct ctq_bench_model_sample x = {.batch = batch, .len = len, .rep = rep, .ttft_s = ttft,
						   .output_digest = digest};
		x.mean_s = ns > 0 ? sum / (double)ns : NAN;
		x.p50_s = ns > 0 ? median(steps, ns) : NAN; /* sorts steps */
		x.p99_s = ns > 0 ? steps[(long)floor(0.99 * (double)(ns - 1))] : NAN;
		x.prefill_tps = (double)(batch * len) / ttft;
		x.decode_tps = (double)batch / x.mean_s;
		samples[nrep] = ttft * 1e3;
		samples[o->reps + nrep] = x.prefill_tps;
		samples[2 * o->reps + nrep] = x.decode_tps;
		nrep++;
		if (on_sample)
			on_sample(ctx, &x);
		csv_row(m, role, &x, csv);
	}
	if (st)
		return st;
	cl->ttft_ms = median(samples, nrep);
	cl->prefill_tps = median(samples + o->reps, nrep);
	cl->decode_tps = median(samples + 2 * o->reps, nrep);
	return CTQ_OK;
}

enum ctq_status ctq_bench_model_measure(struct ctq_bench_model *m, const char *role, struct ctq_csv *csv,
					struct ctq_bench_model_cell *cells, ctq_bench_model_sample_fn on_sample,
					void *ctx, struct ctq_error *err)
{
	const struct ctq_bench_model_options *o = m->o;
	enum ctq_status st = CTQ_OK;
	for (int bi = 0; bi < o->n_b && !st; bi++)
		for (int li = 0; li < o->n_l && !st; li++)
			st = measure_cell(m, role, o->batches[bi], o->lens[li], csv, &cells[bi * o->n_l + li],
					  on_sample, ctx, err);
	return st;
}

void ctq_bench_model_close(struct ctq_bench_model *m)
{
	if (!m)
		return;
	ctq_free(m->steps);
	ctq_free(m->samples);
	ctq_model_close(&m->mdl);
	memset(m, 0, sizeof *m);
}
