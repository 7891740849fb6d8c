/* ctq model handle: one checkpoint opened for a command. It owns the
 * backend ranks (one, or tp of them with their group: an NCCL clique on
 * cuda, an in-process group elsewhere), one runner per rank and the parsed
 * model fields (r[0].cfg), and it is the one place that knows whether a
 * forward call runs on one rank or on tp (ctq_model_forward*). Every command
 * that runs a model opens it here: serve, generate, eval, eval kld, bench
 * model, bench serve.
 *
 * Two phases, so that a command can check its device before its long
 * preparation and run several checkpoints on one device: ctq_model_open_ranks
 * (the device), then ctq_model_load (the checkpoint; ctq_model_unload drops
 * it and keeps the ranks). ctq_model_open does both. A second handle may run
 * on the ranks of a first (ctq_model_share_ranks: eval kld keeps the
 * reference and the candidate loaded side by side).
 *
 * Not the runner (model/runner.h: one rank's weights, caches and forward
 * pass), not batching (model/engine.h), not the backends' set-up
 * (backend/tp.h). */
#ifndef CTQ_MODEL_MODEL_H
#define CTQ_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "backend/tp.h"
#include "model/runner.h"

/* What a loaded checkpoint must hold: KV-cache slots, positions per slot,
 * tokens per forward call, and the runner's A/B switches. */
struct ctq_model_limits {
	int64_t max_slots, max_len, max_tokens;
	bool no_graphs, no_fuse;
	ctq_observe_fn observe; /* ctq_runner_options.observe (or NULL) */
	void *observe_ctx;
	ctq_layer_end_fn layer_end; /* ctq_runner_options.layer_end (or NULL) */
	void *layer_end_ctx;
};

struct ctq_model_options {
	const char *dir;     /* the checkpoint folder (borrowed) */
	const char *backend; /* cuda, reference, ... (borrowed) */
	int tp;              /* ranks, 1..CTQ_TP_MAX */
	enum ctq_act_numerics numerics;
	struct ctq_model_limits limits;
};

struct ctq_model {
	const char *backend; /* borrowed */
	int tp;
	struct ctq_backend *b;          /* (tp) own_b, or the ranks of another handle */
	struct ctq_tp_group *group;     /* owned unless shared */
	bool ranks_open, own_ranks, loaded;
	struct ctq_backend own_b[CTQ_TP_MAX];
	struct ctq_runner r[CTQ_TP_MAX];
	const char *dir;                /* the loaded checkpoint (borrowed) */
	struct ctq_model_limits limits;
	double load_s;                  /* the last ctq_model_load's wall time */
	int64_t n_quantized, n_dense;   /* linear modules by scheme (rank 0's plan) */
	uint64_t weight_bytes;          /* bytes of weights over every rank */
	char device[256];               /* rank 0's description, with the ranks */
	float *logits;                  /* (logits_rows, vocab) tp > 1: the greedy picks' logits */
	int64_t logits_rows;
};

/* Opens the tp ranks of backend `backend` with activation numerics
 * (ctq_backend_open_tp: usage-error for an unknown backend or numerics it
 * lacks, env-error without CUDA / GPUs / NCCL) and describes them in
 * m->device. m is zeroed first; on error it is safe to close. */
enum ctq_status ctq_model_open_ranks(struct ctq_model *m, const char *backend, int tp,
				     enum ctq_act_numerics numerics, struct ctq_error *err);

/* m (zeroed first) runs on the ranks of `from` (opened), which must stay open
 * until m is closed. */
void ctq_model_share_ranks(struct ctq_model *m, const struct ctq_model *from);

/* Loads the checkpoint in dir on every rank (ctq_runner_load's errors). m must have ranks and nothing loaded.
 * On error what was loaded is dropped. */
enum ctq_status ctq_model_load(struct ctq_model *m, const char *dir, const struct ctq_model_limits *limits,
			       struct ctq_error *err);

/* Drops the checkpoint, keeps the ranks. Accepts an unloaded handle. */
void ctq_model_unload(struct ctq_model *m);

/* ctq_model_open_ranks, then ctq_model_load. On error m is safe to close. */
enum ctq_status ctq_model_open(struct ctq_model *m, const struct ctq_model_options *o,
			       struct ctq_error *err);

/* Unloads, then closes the ranks it owns. Accepts a zeroed or closed handle. */
void ctq_model_close(struct ctq_model *m);

/* The loaded checkpoint's model fields. */
static inline const struct ctq_model_config *ctq_model_cfg(const struct ctq_model *m)
{
	return &m->r[0].cfg;
}

/* One forward call on every rank (ctq_runner_forward; with tp > 1 the ranks
 * run concurrently, ctq_runner_tp_forward, and the logits are rank 0's).
 * ids, slot, pos: host (T); rows: host (n_rows) indices into the T tokens;
 * logits: host f32 (n_rows, vocab). */
enum ctq_status ctq_model_forward(struct ctq_model *m, const int32_t *ids, const int32_t *slot,
				  const int32_t *pos, int64_t T, const int64_t *rows, int64_t n_rows,
				  float *logits, struct ctq_error *err);

/* The same call giving each row's greedy pick (ctq_argmax's rule) into next
 * (host, n_rows): on the device where one rank's backend can pick
 * (ctq_runner_forward_next), from rank 0's logits on the host otherwise. */
enum ctq_status ctq_model_forward_next(struct ctq_model *m, const int32_t *ids, const int32_t *slot,
				       const int32_t *pos, int64_t T, const int64_t *rows, int64_t n_rows,
				       int32_t *next, struct ctq_error *err);

#endif
