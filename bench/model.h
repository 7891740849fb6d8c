/* ctq bench model, the engine: prefill (TTFT) and decode timings of one
 * checkpoint on one backend (tp ranks) over batch sizes and input lengths,
 * with seeded random prompts and greedy decoding of a fixed output length
 * (EOS ignored), plus the memory figures (weights, KV cache per token,
 * device memory before / after the load and its low-water mark during the
 * runs) and the load time with the page-cache state of the tensor files.
 * Every timing ends with a backend synchronisation (each forward call
 * returns its logits to the host), read on CLOCK_MONOTONIC. Not the option
 * parsing, the printing or the gains table (harness/cmd_bench_model.c),
 * not the CSV header (families/bench_model.h). */
#ifndef CTQ_BENCH_MODEL_H
#define CTQ_BENCH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "results/csv_out.h"

#define CTQ_BENCH_MODEL_MAX_LIST 16

struct ctq_bench_model_options {
	const char *backend; /* borrowed */
	long batches[CTQ_BENCH_MODEL_MAX_LIST], lens[CTQ_BENCH_MODEL_MAX_LIST];
	long out_len, warmup, reps, seed, tp;
	int n_b, n_l;
};

/* Medians over the timed reps of one (batch, input length). */
struct ctq_bench_model_cell {
	double ttft_ms, prefill_tps, decode_tps;
};

/* One timed run. */
struct ctq_bench_model_sample {
	long batch, len, rep;
	double ttft_s;            /* prefill of batch x len tokens */
	double mean_s, p50_s, p99_s; /* decode step times; NAN with out_len 1 */
	double prefill_tps, decode_tps;
	uint64_t output_digest; /* FNV-1a of the generated token ids (families/bench_model.h) */
};

typedef void (*ctq_bench_model_sample_fn)(void *ctx, const struct ctq_bench_model_sample *s);

/* One checkpoint loaded for measurement. Memory figures (free*, total,
 * min_free) are rank 0's and meaningful only when mem is set (a backend
 * with mem_info). */
struct ctq_bench_model {
	const struct ctq_bench_model_options *o; /* borrowed */
	const char *model;                        /* borrowed */
	struct ctq_model mdl;          /* the ranks, runners, device line, load time, weight bytes */
	double *steps;                 /* (out_len) decode step times of a run */
	double *samples;               /* (3, reps) ttft ms, prefill t/s, decode t/s */
	long max_b;                    /* the largest batch */
	bool mem;
	size_t free0, free1, total, min_free;
	double cached;                 /* page-cache fraction before the load; NAN unknown */
	uint64_t kv_tok, kv_tok_rank;  /* KV bytes per token: the model's, rank 0's */
};

/* Opens the backend ranks and loads model on each, sized for the largest
 * batch and input length of o. m is zeroed first and safe to close on
 * error. Errors: nomem, the backend's, the loader's, mem_info's. */
enum ctq_status ctq_bench_model_open(struct ctq_bench_model *m, const struct ctq_bench_model_options *o,
				     const char *model, struct ctq_error *err);

/* Runs every (batch, input length): warmup untimed runs, then reps timed
 * ones, each seeded afresh from o->seed; each timed run is passed to
 * on_sample (may be NULL) and written as a bench_model.csv row of role to
 * csv. cells (n_b x n_l, row-major by batch) receive the medians. */
enum ctq_status ctq_bench_model_measure(struct ctq_bench_model *m, const char *role, struct ctq_csv *csv,
					struct ctq_bench_model_cell *cells, ctq_bench_model_sample_fn on_sample,
					void *ctx, struct ctq_error *err);

void ctq_bench_model_close(struct ctq_bench_model *m);

#endif
