/* ctq serving scheduler: continuous batching of requests over the static
 * KV cache of a runner (model/runner.h). Each forward call carries one
 * decode token for every request past its prompt plus chunks of the
 * prompts of newly admitted ones (oldest first), up to max_tokens tokens;
 * a request takes a free slot when it is admitted and gives it back when
 * its last token is out. Arrivals are closed-loop (C clients, each sends
 * its next request when the last one ends) or on a schedule (arrival
 * times set by the caller; at most C in flight, the rest wait). Time is
 * wall clock (core/time.h) from the start of ctq_sched_run. Not the
 * workload (bench/serve.h makes the prompts and arrivals) and not the
 * measurement. */
#ifndef CTQ_MODEL_SCHEDULER_H
#define CTQ_MODEL_SCHEDULER_H

#include <stdint.h>

#include "core/status.h"
#include "model/runner.h"

enum ctq_req_state { CTQ_REQ_WAITING, CTQ_REQ_PREFILL, CTQ_REQ_DECODE, CTQ_REQ_DONE, CTQ_REQ_FAILED };

/* One request. The caller sets prompt, out, arrival (scheduled arrivals;
 * closed loop: 0, the scheduler sets them as clients free up), slot = -1
 * and the rest to zero. */
struct ctq_sched_req {
	double arrival, admitted, first, finish; /* seconds from the start */
	enum ctq_req_state state;
	int32_t slot;
	int64_t fed;       /* prompt tokens fed so far */
	int64_t generated; /* new tokens so far */
	int32_t next;      /* the token to feed in the next decode step */
	int32_t *prompt;   /* (input_len) borrowed */
	int32_t *out;      /* (output_len) borrowed: the greedy tokens */
};

struct ctq_sched_options {
	int64_t max_batch;   /* KV-cache slots the runners were loaded with */
	int64_t input_len;   /* prompt tokens per request */
	int64_t output_len;  /* new tokens per request, EOS ignored */
	int64_t max_tokens;  /* tokens per forward call, >= max_batch */
	int64_t concurrency; /* requests in flight at most (closed loop: clients) */
	double rate;         /* > 0: the arrival times are a schedule; 0: closed loop */
};

/* One forward call of a run: what it carried and how long it took (wall
 * clock, synchronised: the device's time plus the host's between calls is
 * not in it). */
struct ctq_sched_step {
	double start_s, dur_s; /* from the start of the run */
	int64_t tokens;        /* every token of the call */
	int64_t decode;        /* of which decode tokens (the rest: prompt chunks) */
};

struct ctq_sched_stats {
	long finished, failed, calls;
	int64_t fed_tokens;    /* every token through the model */
	int64_t decode_tokens; /* of which decode steps */
	double wall_s;
};

/* A scheduler: its options and the buffers of one forward call. */
struct ctq_sched {
	struct ctq_sched_options o;
	int64_t vocab;
	int tp; /* the ranks it was sized for */
	int32_t *ids, *slot, *pos; /* (max_tokens) */
	int64_t *rows;             /* (max_batch) the token rows whose logits come back */
	long *row_req;             /* (max_batch) their requests */
	int32_t *slot_req;         /* (max_batch) the request in each slot, -1 free */
	int32_t *next;             /* (max_batch) the greedy pick of each row */
	float *logits;             /* (max_batch, vocab) tp > 1 only: rank 0's logits */
	struct ctq_sched_step *steps; /* (n_steps) the last run's forward calls */
	size_t n_steps, cap_steps;
};

/* Sizes the call buffers for o and a model of vocab tokens served on tp
 * ranks (<= 1: one runner, whose greedy picks come back without logits);
 * nomem. On error c is still safe to free. */
enum ctq_status ctq_sched_init(struct ctq_sched *c, const struct ctq_sched_options *o, int64_t vocab,
			       int tp, struct ctq_error *err);
void ctq_sched_free(struct ctq_sched *c);

/* Serves q[0..n_req-1] on one runner (tp <= 1) or the tp ranks r[0..tp-1]
 * and fills stats. A failed forward call (its error) fails every request in
 * flight and ends the run; a schedule that leaves nothing to run is
 * env-error. Either way the requests keep their state and stats are
 * filled, so that the caller can still write what was served. c->steps
 * then holds the run's forward calls (c->n_steps), until the next run. */
enum ctq_status ctq_sched_run(struct ctq_sched *c, struct ctq_runner *r, int tp,
			      struct ctq_sched_req *q, long n_req, struct ctq_sched_stats *stats,
			      struct ctq_error *err);

#endif
