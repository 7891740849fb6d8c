/* ctq tensor-parallel set-up: opens the tp ranks of one backend for the
 * commands that run a model (eval, generate, bench model, bench serve).
 * On CUDA with tp > 1, rank k runs on GPU k and the ranks share one NCCL
 * clique; on the reference backend the ranks are threads of this process
 * joined by an in-process group (ctq_tp_group, below). Not the
 * shard planner (quant/shard.h) and not the all-reduce itself. */
#ifndef CTQ_BACKEND_TP_H
#define CTQ_BACKEND_TP_H

#include <stdint.h>

#include "core/status.h"
#include "backend/backend.h"

/* The most ranks a command opens (--tp 1..8). */
#define CTQ_TP_MAX 8

struct ctq_tp_group;

/* Opens ranks[0..tp-1] (caller-allocated, zeroed) as backend `name` and
 * sets each one's activation numerics; with tp > 1 joins them: an NCCL
 * clique on cuda, or *group (returned owned; ctq_tp_group_free) elsewhere.
 * *group stays NULL with tp <= 1 or on cuda. Stops at the first error:
 * usage-error for an unknown backend or numerics it lacks, env-error
 * without CUDA / GPUs / NCCL, nomem ("--tp"). On error the ranks opened so
 * far stay open: the caller closes them (ctq_backend_close_tp). */
enum ctq_status ctq_backend_open_tp(struct ctq_backend *ranks, const char *name, int tp,
				    enum ctq_act_numerics numerics, struct ctq_tp_group **group,
				    struct ctq_error *err);

/* The in-process group of tp ranks of a host-memory backend (ctq_calloc'ed;
 * ctq_tp_group_free): a barrier and the ranks' buffers. */
struct ctq_tp_group *ctq_tp_group_new(int tp);
void ctq_tp_group_free(struct ctq_tp_group *g);
/* Sums the ranks' f32 buffers (n values) in rank order into every rank's
 * buffer; every rank of g calls it with its own buf. */
void ctq_tp_group_allreduce_f32(struct ctq_tp_group *g, int rank, float *buf, int64_t n);

/* Closes ranks[0..tp-1] and frees group; accepts NULL / closed ranks. */
void ctq_backend_close_tp(struct ctq_backend *ranks, int tp, struct ctq_tp_group *group);

/* Writes rank 0's description into buf (cap bytes), with tp > 1 followed by
 * " x <tp> ranks (tp <tp>, NCCL)" on cuda, "in-process" on other backends
 * `name`: the device line of bench model and bench serve. */
void ctq_backend_describe_tp(struct ctq_backend *b0, const char *name, int tp, char *buf, size_t cap);

#endif
