/* ctq serving scheduler (model/scheduler.h): continuous batching over the
 * runner's static KV cache. Each forward call brings back the greedy pick
 * of every output row (ctq_runner_forward_next: picked on the device where
 * the backend can, one int32 a sequence instead of its vocab logits; the
 * tensor-parallel path picks on the host from rank 0's logits), so it is
 * synchronised and wall-clock times are the device's. */
#include "model/scheduler.h"
#include "core/arena.h"
#include "core/time.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

static void sleep_s(double s)
{
	if (s <= 0)
		return;
	struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	nanosleep(&t, NULL);
}

void ctq_sched_free(struct ctq_sched *c)
{
	if (!c)
		return;
	ctq_free(c->ids), ctq_free(c->slot), ctq_free(c->pos), ctq_free(c->rows);
	ctq_free(c->row_req), ctq_free(c->slot_req), ctq_free(c->logits), ctq_free(c->next);
	ctq_free(c->steps);
	*c = (struct ctq_sched){0};
}

enum ctq_status ctq_sched_init(struct ctq_sched *c, const struct ctq_sched_options *o, int64_t V,
			       int tp, struct ctq_error *err)
{
	*c = (struct ctq_sched){.o = *o, .vocab = V, .tp = tp};
	c->ids = ctq_malloc((size_t)o->max_tokens * 4);
	c->slot = ctq_malloc((size_t)o->max_tokens * 4);
	c->pos = ctq_malloc((size_t)o->max_tokens * 4);
	c->rows = ctq_malloc((size_t)o->max_batch * 8);
	c->row_req = ctq_malloc((size_t)o->max_batch * sizeof *c->row_req);
	c->slot_req = ctq_malloc((size_t)o->max_batch * 4);
	c->next = ctq_malloc((size_t)o->max_batch * 4);
	if (tp > 1)
		c->logits = ctq_malloc((size_t)(o->max_batch * V) * 4);
	if (!c->ids || !c->slot || !c->pos || !c->rows || !c->row_req || !c->slot_req || !c->next ||
	    (tp > 1 && !c->logits))
		return ctq_error_set(err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
	for (long s = 0; s < o->max_batch; s++)
		c->slot_req[s] = -1;
	return CTQ_OK;
}

/* Lays out one forward call: decode tokens first, then prompt chunks in
 * admission order (requests before next). Returns its token count T;
 * *n_rows receives the rows whose logits come back. */
static int64_t call_plan(struct ctq_sched *c, struct ctq_sched_req *q, long next, int64_t *n_rows,
			 int64_t *decode_tokens)
{
	const struct ctq_sched_options *o = &c->o;
	int64_t T = 0, n = 0;
	for (long s = 0; s < o->max_batch; s++) {
		long i = c->slot_req[s];
		if (i < 0 || q[i].state != CTQ_REQ_DECODE)
			continue;
		c->ids[T] = q[i].next;
		c->slot[T] = (int32_t)s;
		c->pos[T] = (int32_t)(o->input_len + q[i].generated - 1);
		c->rows[n] = T;
		c->row_req[n++] = i;
		T++;
	}
	*decode_tokens += T;
	for (long i = 0; i < next && T < o->max_tokens; i++) {
		struct ctq_sched_req *x = &q[i];
		if (x->state != CTQ_REQ_PREFILL)
			continue;
		int64_t m = o->input_len - x->fed;
		if (m > o->max_tokens - T)
			m = o->max_tokens - T;
		for (int64_t j = 0; j < m; j++) {
			c->ids[T] = x->prompt[x->fed + j];
			c->slot[T] = x->slot;
			c->pos[T] = (int32_t)(x->fed + j);
			T++;
		}
		x->fed += m;
		if (x->fed == o->input_len) {
			c->rows[n] = T - 1;
			c->row_req[n++] = i;
		}
	}
	*n_rows = n;
	return T;
}

/* One forward call of T tokens; c->next[0..n_rows-1] receives the greedy
 * pick of each row (ctq_argmax's rule on every path). */
static enum ctq_status forward_next(struct ctq_sched *c, struct ctq_runner *r, int tp, int64_t T,
				    int64_t n_rows, struct ctq_error *err)
{
	if (tp <= 1)
		return ctq_runner_forward_next(&r[0], c->ids, c->slot, c->pos, T, c->rows, n_rows, c->next,
					       err);
	if (tp != c->tp)
		return ctq_error_set(err, CTQ_ERR_USAGE, "bench serve",
				     "scheduler sized for tp %d, run with tp %d", c->tp, tp);
	enum ctq_status st =
		ctq_runner_tp_forward(r, tp, c->ids, c->slot, c->pos, T, c->rows, n_rows, c->logits, err);
	for (int64_t k = 0; !st && k < n_rows; k++)
		c->next[k] = ctq_argmax(c->logits + k * c->vocab, c->vocab);
	return st;
}

/* Closed loop: request i arrives when a client is free, i.e. at the start
 * for the first C and when an earlier one finishes; arrived (assigned)
 * requests wait for a slot. Scheduled: requests arrive on their schedule
 * and at most C are served at once. */
enum ctq_status ctq_sched_run(struct ctq_sched *c, struct ctq_runner *r, int tp,
			      struct ctq_sched_req *q, long n_req, struct ctq_sched_stats *stats,
			      struct ctq_error *err)
{
	const struct ctq_sched_options *o = &c->o;
	const long in_flight = o->concurrency < o->max_batch ? o->concurrency : o->max_batch;
	long next = 0, active = 0;
	long assigned = o->rate > 0 ? n_req : (o->concurrency < n_req ? o->concurrency : n_req);
	const long serve_cap = o->rate > 0 ? in_flight : o->max_batch;
	enum ctq_status st = CTQ_OK;
	*stats = (struct ctq_sched_stats){0};
	c->n_steps = 0;
	const double t0 = ctq_now_s();
	while (stats->finished + stats->failed < n_req) {
		double now = ctq_now_s() - t0;
		/* Admit arrived requests while a client and a slot are free. */
		while (next < assigned && active < serve_cap && q[next].arrival <= now) {
			struct ctq_sched_req *x = &q[next];
			int32_t s = 0;
			while (c->slot_req[s] >= 0)
				s++;
			c->slot_req[s] = (int32_t)next;
			x->slot = s;
			x->state = CTQ_REQ_PREFILL;
			x->admitted = now;
			active++;
			next++;
		}
		if (!active) {
			/* Only a schedule can leave nothing to run. */
			if (o->rate <= 0 || next >= n_req) {
				st = ctq_error_set(err, CTQ_ERR_ENV, "bench serve",
						   "scheduler stalled with no request in flight");
				break;
			}
			sleep_s(q[next].arrival - (ctq_now_s() - t0));
			continue;
		}
		int64_t n_rows = 0, n_decode = stats->decode_tokens;
		int64_t T = call_plan(c, q, next, &n_rows, &stats->decode_tokens);
		n_decode = stats->decode_tokens - n_decode;
		if (!ctq_grow((void **)&c->steps, &c->cap_steps, c->n_steps + 1, sizeof *c->steps))
			st = ctq_error_set(err, CTQ_ERR_NOMEM, "bench serve", "out of memory");
		const double t_call = ctq_now_s() - t0;
		if (st || (st = forward_next(c, r, tp, T, n_rows, err))) {
			/* Every request in flight fails with the call; the run stops. */
			for (long s = 0; s < o->max_batch; s++)
				if (c->slot_req[s] >= 0) {
					q[c->slot_req[s]].state = CTQ_REQ_FAILED;
					stats->failed++;
				}
			break;
		}
		stats->calls++;
		stats->fed_tokens += T;
		now = ctq_now_s() - t0;
		c->steps[c->n_steps++] = (struct ctq_sched_step){.start_s = t_call, .dur_s = now - t_call,
								 .tokens = T, .decode = n_decode};
		for (int64_t k = 0; k < n_rows; k++) {
			struct ctq_sched_req *x = &q[c->row_req[k]];
			x->next = c->next[k];
			x->out[x->generated] = x->next;
			if (x->state == CTQ_REQ_PREFILL) {
				x->state = CTQ_REQ_DECODE;
				x->first = now;
			}
			x->generated++;
			if (x->generated == o->output_len) {
				x->state = CTQ_REQ_DONE;
				x->finish = now;
				c->slot_req[x->slot] = -1;
				active--;
				stats->finished++;
				if (assigned < n_req)
					q[assigned++].arrival = now; /* the client sends its next */
			}
		}
	}
	stats->wall_s = ctq_now_s() - t0;
	return st;
}
