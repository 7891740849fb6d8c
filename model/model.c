/* ctq model handle (model/model.h): the backend ranks, a runner per rank,
 * and the one switch between one rank and tp. */
#include "model/model.h"
#include "core/arena.h"
#include "core/time.h"

#include <string.h>

enum ctq_status ctq_model_open_ranks(struct ctq_model *m, const char *backend, int tp,
				     enum ctq_act_numerics numerics, struct ctq_error *err)
{
	memset(m, 0, sizeof *m);
	if (tp < 1 || tp > CTQ_TP_MAX)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--tp", "is %d; 1 to %d ranks", tp, CTQ_TP_MAX);
	m->backend = backend;
	m->tp = tp;
	m->b = m->own_b;
	m->own_ranks = true;
	m->ranks_open = true; /* from here on close closes what opened */
	enum ctq_status st = ctq_backend_open_tp(m->b, backend, tp, numerics, &m->group, err);
	if (!st)
		ctq_backend_describe_tp(&m->b[0], backend, tp, m->device, sizeof m->device);
	return st;
}

void ctq_model_share_ranks(struct ctq_model *m, const struct ctq_model *from)
{
	memset(m, 0, sizeof *m);
	m->backend = from->backend;
	m->tp = from->tp;
	m->b = from->b;
	m->group = from->group;
	m->ranks_open = true;
	memcpy(m->device, from->device, sizeof m->device);
}

enum ctq_status ctq_model_load(struct ctq_model *m, const char *dir, const struct ctq_model_limits *limits,
			       struct ctq_error *err)
{
	if (!m->ranks_open || m->loaded)
		return ctq_error_set(err, CTQ_ERR_USAGE, dir, "the model handle has %s",
				     m->loaded ? "a checkpoint loaded already" : "no backend ranks");
	m->dir = dir;
	m->limits = *limits;
	m->loaded = true; /* unload frees what a failed load left */
	m->n_quantized = m->n_dense = 0;
	m->weight_bytes = 0;
	const double t0 = ctq_now_s();
	for (int k = 0; k < m->tp; k++) {
		const struct ctq_runner_options opt = {
			.max_slots = limits->max_slots, .max_len = limits->max_len, .max_tokens = limits->max_tokens,
			.tp = m->tp, .rank = k, .group = m->group, .no_graphs = limits->no_graphs,
			.no_fuse = limits->no_fuse, .observe = limits->observe,
			.observe_ctx = limits->observe_ctx, .layer_end = limits->layer_end,
			.layer_end_ctx = limits->layer_end_ctx};
		const enum ctq_status st = ctq_runner_load(&m->r[k], &m->b[k], dir, &opt, err);
		if (st) {
			ctq_model_unload(m);
			return st;
		}
		m->weight_bytes += m->r[k].weight_bytes;
	}
	m->load_s = ctq_now_s() - t0;
	m->n_quantized = m->r[0].n_quantized;
	m->n_dense = m->r[0].n_dense;
	return CTQ_OK;
}

void ctq_model_unload(struct ctq_model *m)
{
	if (!m || !m->loaded)
		return;
	for (int k = 0; k < m->tp; k++)
		ctq_runner_free(&m->r[k]);
	ctq_free(m->logits);
	m->logits = NULL;
	m->logits_rows = 0;
	m->loaded = false;
	m->dir = NULL;
}

enum ctq_status ctq_model_open(struct ctq_model *m, const struct ctq_model_options *o,
			       struct ctq_error *err)
{
	enum ctq_status st = ctq_model_open_ranks(m, o->backend, o->tp, o->numerics, err);
	return st ? st : ctq_model_load(m, o->dir, &o->limits, err);
}

void ctq_model_close(struct ctq_model *m)
{
	if (!m)
		return;
	ctq_model_unload(m);
	if (m->ranks_open && m->own_ranks)
		ctq_backend_close_tp(m->b, m->tp, m->group);
	memset(m, 0, sizeof *m);
}

enum ctq_status ctq_model_forward(struct ctq_model *m, const int32_t *ids, const int32_t *slot,
				  const int32_t *pos, int64_t T, const int64_t *rows, int64_t n_rows,
				  float *logits, struct ctq_error *err)
{
	if (m->tp > 1)
		return ctq_runner_tp_forward(m->r, m->tp, ids, slot, pos, T, rows, n_rows, logits, err);
	return ctq_runner_forward(&m->r[0], ids, slot, pos, T, rows, n_rows, logits, err);
}

enum ctq_status ctq_model_forward_next(struct ctq_model *m, const int32_t *ids, const int32_t *slot,
				       const int32_t *pos, int64_t T, const int64_t *rows, int64_t n_rows,
				       int32_t *next, struct ctq_error *err)
{
	if (m->tp <= 1)
		return ctq_runner_forward_next(&m->r[0], ids, slot, pos, T, rows, n_rows, next, err);
	const int64_t V = ctq_model_cfg(m)->vocab;
	if (n_rows > m->logits_rows) {
		ctq_free(m->logits);
		m->logits_rows = 0;
		if (!(m->logits = ctq_malloc((size_t)(n_rows * V) * sizeof *m->logits)))
			return ctq_error_set(err, CTQ_ERR_NOMEM, "tp", "out of memory");
		m->logits_rows = n_rows;
	}
	enum ctq_status st = ctq_model_forward(m, ids, slot, pos, T, rows, n_rows, m->logits, err);
	for (int64_t k = 0; !st && k < n_rows; k++)
		next[k] = ctq_argmax(m->logits + k * V, V);
	return st;
}
