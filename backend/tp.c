/* ctq tensor-parallel set-up (backend/tp.h): one place that opens the ranks
 * of a backend and joins them, and the in-process group that joins the
 * ranks of a host-memory backend (the runner waits on it). */
#include "backend/tp.h"
#include "core/arena.h"

#include <pthread.h>
#include <stdio.h>

#include <string.h>

/* ---- the in-process group (host memory backends) ---------------------------- */

struct ctq_tp_group {
	int tp;
	pthread_barrier_t bar;
	float **bufs;   /* (tp) each rank's buffer during an all-reduce */
	int failed;     /* a rank's forward failed: the others stop */
};

struct ctq_tp_group *ctq_tp_group_new(int tp)
{
	struct ctq_tp_group *g = ctq_calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->tp = tp;
	g->bufs = ctq_calloc((size_t)tp, sizeof *g->bufs);
	if (!g->bufs || pthread_barrier_init(&g->bar, NULL, (unsigned)tp)) {
		ctq_free(g->bufs);
		ctq_free(g);
		return NULL;
	}
	return g;
}

void ctq_tp_group_free(struct ctq_tp_group *g)
{
	if (!g)
		return;
	pthread_barrier_destroy(&g->bar);
	ctq_free(g->bufs);
	ctq_free(g);
}

void ctq_tp_group_allreduce_f32(struct ctq_tp_group *g, int rank, float *buf, int64_t n)
{
	g->bufs[rank] = buf;
	pthread_barrier_wait(&g->bar);
	if (rank == 0)
		for (int64_t i = 0; i < n; i++) {
			float s = g->bufs[0][i];
			for (int k = 1; k < g->tp; k++)
				s += g->bufs[k][i];
			g->bufs[0][i] = s;
		}
	pthread_barrier_wait(&g->bar);
	if (rank != 0)
		memcpy(buf, g->bufs[0], (size_t)n * sizeof(float));
	pthread_barrier_wait(&g->bar);
}

enum ctq_status ctq_backend_open_tp(struct ctq_backend *ranks, const char *name, int tp,
				    enum ctq_act_numerics numerics, struct ctq_tp_group **group,
				    struct ctq_error *err)
{
	const bool cuda = !strcmp(name, "cuda");
	enum ctq_status st;
	*group = NULL;
	for (int k = 0; k < tp; k++) {
		st = tp > 1 && cuda ? ctq_backend_cuda(&ranks[k], k, err)
				    : ctq_backend_open(&ranks[k], name, err);
		if (!st)
			st = ctq_backend_set_act_numerics(&ranks[k], numerics, err);
		if (st)
			return st;
	}
	if (tp <= 1)
		return CTQ_OK;
	if (cuda)
		return ctq_backend_cuda_tp_init(ranks, tp, err);
	if (!(*group = ctq_tp_group_new(tp)))
		return ctq_error_set(err, CTQ_ERR_NOMEM, "--tp", "out of memory");
	return CTQ_OK;
}

void ctq_backend_close_tp(struct ctq_backend *ranks, int tp, struct ctq_tp_group *group)
{
	for (int k = 0; ranks && k < tp; k++)
		ctq_backend_close(&ranks[k]);
	ctq_tp_group_free(group);
}

void ctq_backend_describe_tp(struct ctq_backend *b0, const char *name, int tp, char *buf, size_t cap)
{
	b0->ops->describe(b0, buf, cap);
	if (tp > 1) {
		size_t dl = strlen(buf);
		snprintf(buf + dl, cap - dl, " x %d ranks (tp %d, %s)", tp, tp,
			 !strcmp(name, "cuda") ? "NCCL" : "in-process");
	}
}
