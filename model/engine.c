/* ctq batching engine (model/engine.h): a request queue, the slots of the
 * model's KV cache and one worker thread driving the model call by call.
 *
 * Locking: one mutex guards the queue, the slots, the published part of
 * every request (n_tokens, prompt_done, finish, the cancel / release flags)
 * and the statistics. The worker plans a call under the lock, runs the
 * forward pass and the sampling without it (it alone writes a request's
 * private fields and the token entries at or past n_tokens, which readers
 * never look at), then publishes under the lock and wakes the request's
 * waiter. A request is freed by whichever of the worker (done with it) and
 * the caller (released it) comes second. */
#include "model/engine.h"
#include "core/arena.h"
#include "core/rng.h"
#include "core/time.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ctq_engine_req {
	struct ctq_engine_req *next_q; /* the waiting queue */
	struct ctq_engine_req *next_done; /* ended, its on_done not yet called */
	int32_t *prompt;               /* (n_prompt) owned */
	int64_t n_prompt;
	struct ctq_engine_params p;
	struct ctq_rng rng;
	struct ctq_engine_token *toks;  /* (max(max_new, 1)) owned */
	struct ctq_engine_token *ptoks; /* (n_prompt) with echo_logprobs, else NULL */
	int64_t n_toks;                 /* published */
	int64_t fed;                    /* prompt tokens fed (worker) */
	int32_t slot, next;             /* slot (-1: none); the token the next decode feeds */
	bool prompt_done;               /* published */
	enum ctq_engine_finish finish;  /* published */
	bool cancel, released, engine_done;
	bool done_pending;              /* on the done list: its on_done is due */
	int64_t wake_above;             /* the waiter's `have`: no wake-up for fewer tokens */
	pthread_cond_t cond;
	double t_submit, t_admit, t_first, t_finish;
	struct ctq_error err;
};

struct ctq_engine {
	struct ctq_model *m;
	struct ctq_engine_options o;
	int64_t V, rows_cap;
	pthread_t thread;
	bool started, stopping;
	pthread_mutex_t mu;
	pthread_cond_t work;
	struct ctq_engine_req *q_head, *q_tail;
	struct ctq_engine_req *done_head; /* ended requests whose on_done is due (LIFO) */
	long n_waiting, n_running;
	struct ctq_engine_req **slot_req; /* (max_batch) */
	struct ctq_engine_req **order;    /* (n_order) the running requests, oldest admitted first */
	int64_t n_order;
	int32_t *ids, *slot, *pos;        /* (max_tokens) one call's tokens */
	int64_t *rows;                    /* (rows_cap) token rows whose logits come back */
	struct ctq_engine_req **row_req;  /* (rows_cap) their requests */
	int64_t *row_at;                  /* (rows_cap) prompt position of the row */
	float *logits;                    /* (rows_cap, V) */
	struct ctq_engine_cand *cand;     /* (V) sampling scratch */
	uint64_t seed_counter;
	struct ctq_engine_stats stats;
	struct ctq_engine_call *calls; /* (n_calls) with log_calls */
	size_t n_calls, cap_calls;
};

static void req_free(struct ctq_engine_req *x)
{
	if (!x)
		return;
	pthread_cond_destroy(&x->cond);
	ctq_free(x->prompt), ctq_free(x->toks), ctq_free(x->ptoks);
	ctq_free(x);
}

/* ---- sampling and log-probabilities ---------------------------------------------- */

/* Descending by logit, then ascending index: the order ctq_argmax picks. */
static int by_logit(const void *a, const void *b)
{
	const struct ctq_engine_cand *x = a, *y = b;
	if (x->logit != y->logit)
		return x->logit > y->logit ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

int32_t ctq_engine_sample(const float *logits, int64_t V, const struct ctq_engine_params *p,
			  struct ctq_rng *rng, struct ctq_engine_cand *c)
{
	if (p->temperature <= 0 || p->top_k == 1)
		return ctq_argmax(logits, V);
	for (int64_t i = 0; i < V; i++)
		c[i] = (struct ctq_engine_cand){.logit = logits[i], .id = (int32_t)i};
	qsort(c, (size_t)V, sizeof *c, by_logit);
	int64_t n = p->top_k > 0 && p->top_k < V ? p->top_k : V;
	const double mx = (double)c[0].logit / p->temperature;
	double sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += c[i].prob = exp((double)c[i].logit / p->temperature - mx);
	if (p->top_p < 1) {
		/* The smallest prefix whose probability reaches top_p. */
		double acc = 0;
		int64_t keep = 0;
		while (keep < n && acc < p->top_p * sum)
			acc += c[keep++].prob;
		n = keep ? keep : 1;
		sum = acc > 0 ? acc : c[0].prob;
	}
	double u = ctq_rng_uniform(rng) * sum, acc = 0;
	for (int64_t i = 0; i < n; i++) {
		acc += c[i].prob;
		if (u < acc)
			return c[i].id;
	}
	return c[n - 1].id;
}

/* log p(tok) and the n_top largest alternatives of one row: the log-softmax
 * in double, normalised as ctq_logprob is. */
static void fill_logprobs(const float *lg, int64_t V, int32_t tok, int n_top,
			  struct ctq_engine_token *t)
{
	double mx;
	const double lse = ctq_log_softmax_norm(lg, V, &mx);
	t->id = tok;
	t->logprob = (double)lg[tok] - mx - lse;
	t->n_top = 0;
	for (int k = 0; k < n_top && k < V; k++) {
		int64_t best = -1;
		for (int64_t i = 0; i < V; i++) {
			bool taken = false;
			for (int j = 0; j < k && !taken; j++)
				taken = t->top_id[j] == i;
			if (!taken && (best < 0 || lg[i] > lg[best]))
				best = i;
		}
		t->top_id[k] = (int32_t)best;
		t->top_lp[k] = (double)lg[best] - mx - lse;
		t->n_top = k + 1;
	}
}

/* ---- the worker ----------------------------------------------------------------- */

/* Under the lock: the request leaves its slot (or the queue was already
 * left) with finish f, its waiter is woken, and it is freed when released. */
static void finish_req(struct ctq_engine *e, struct ctq_engine_req *x, enum ctq_engine_finish f)
{
	if (x->slot >= 0) {
		e->slot_req[x->slot] = NULL;
		x->slot = -1;
		e->n_running--;
		int64_t i = 0;
		while (i < e->n_order && e->order[i] != x)
			i++;
		if (i < e->n_order) {
			memmove(&e->order[i], &e->order[i + 1], (size_t)(e->n_order - i - 1) * sizeof *e->order);
			e->n_order--;
		}
	}
	x->finish = f;
	x->t_finish = ctq_now_s();
	x->engine_done = true;
	e->stats.finished += f == CTQ_ENGINE_LENGTH || f == CTQ_ENGINE_STOP;
	e->stats.cancelled += f == CTQ_ENGINE_CANCELLED;
	e->stats.failed += f == CTQ_ENGINE_FAILED;
	pthread_cond_broadcast(&x->cond);
	if (x->released) {
		req_free(x);
	} else if (x->p.on_done) {
		x->done_pending = true;
		x->next_done = e->done_head;
		e->done_head = x;
	}
}

/* Under the lock, which it drops while they run: the on_done calls due, in
 * the order the requests ended. */
static void run_done(struct ctq_engine *e)
{
	struct ctq_engine_req *rev = NULL;
	while (e->done_head) {
		struct ctq_engine_req *x = e->done_head;
		e->done_head = x->next_done;
		x->done_pending = false;
		if (x->released) { /* released since it ended: no call */
			req_free(x);
			continue;
		}
		x->next_done = rev;
		rev = x;
	}
	pthread_mutex_unlock(&e->mu);
	while (rev) {
		struct ctq_engine_req *x = rev;
		rev = x->next_done; /* read first: on_done may release x */
		x->p.on_done(x->p.on_done_ctx, e, x);
	}
	pthread_mutex_lock(&e->mu);
}

/* Under the lock: drops cancelled requests, then fills free slots from the
 * queue. A request with nothing to compute (no new token, no prompt
 * log-probability) finishes at once. */
static void admit(struct ctq_engine *e)
{
	for (int64_t s = 0; s < e->o.max_batch; s++) {
		struct ctq_engine_req *x = e->slot_req[s];
		if (x && (x->cancel || e->stopping))
			finish_req(e, x, CTQ_ENGINE_CANCELLED);
	}
	while (e->q_head && (e->stopping || e->q_head->cancel)) {
		struct ctq_engine_req *x = e->q_head;
		e->q_head = x->next_q;
		e->n_waiting--;
		finish_req(e, x, CTQ_ENGINE_CANCELLED);
	}
	for (int64_t s = 0; s < e->o.max_batch && e->q_head; s++) {
		if (e->slot_req[s])
			continue;
		struct ctq_engine_req *x = e->q_head;
		e->q_head = x->next_q;
		e->n_waiting--;
		x->t_admit = ctq_now_s();
		if (x->p.max_new == 0 && !(x->p.echo_logprobs && x->n_prompt > 1)) {
			x->prompt_done = true;
			finish_req(e, x, CTQ_ENGINE_LENGTH);
			s--;
			continue;
		}
		x->slot = (int32_t)s;
		e->slot_req[s] = x;
		e->order[e->n_order++] = x;
		e->n_running++;
	}
	if (!e->q_head)
		e->q_tail = NULL;
}

/* Under the lock: lays out one call, decode tokens first, then prompt chunks,
 * both in admission order (the oldest request's prompt goes first: first
 * come, first served). Returns the token count; *n_rows the logit rows and
 * *n_decode the decode tokens. */
static int64_t plan_call(struct ctq_engine *e, int64_t *n_rows, int64_t *n_decode)
{
	int64_t T = 0, n = 0, echo_budget = e->o.echo_rows;
	for (int64_t i = 0; i < e->n_order; i++) {
		struct ctq_engine_req *x = e->order[i];
		if (x->fed < x->n_prompt)
			continue;
		e->ids[T] = x->next;
		e->slot[T] = x->slot;
		e->pos[T] = (int32_t)(x->n_prompt + x->n_toks - 1);
		e->rows[n] = T;
		e->row_req[n] = x;
		e->row_at[n++] = -1;
		T++;
	}
	*n_decode = T;
	for (int64_t i = 0; i < e->n_order && T < e->o.max_tokens; i++) {
		struct ctq_engine_req *x = e->order[i];
		if (x->fed >= x->n_prompt)
			continue;
		const bool echo = x->p.echo_logprobs;
		int64_t m = x->n_prompt - x->fed;
		if (m > e->o.max_tokens - T)
			m = e->o.max_tokens - T;
		if (echo && m > echo_budget)
			m = echo_budget;
		if (m <= 0)
			continue;
		if (echo)
			echo_budget -= m;
		for (int64_t j = 0; j < m; j++) {
			int64_t at = x->fed + j;
			e->ids[T] = x->prompt[at];
			e->slot[T] = x->slot;
			e->pos[T] = (int32_t)at;
			bool last = at == x->n_prompt - 1;
			if ((echo && !last) || (last && x->p.max_new > 0)) {
				e->rows[n] = T;
				e->row_req[n] = x;
				e->row_at[n++] = at;
			}
			T++;
		}
		x->fed += m;
	}
	*n_rows = n;
	return T;
}

/* Without the lock: the outcome of row k for its request (entries past the
 * published counts only). Returns the new token, or -1 for a prompt row. */
static int32_t use_row(struct ctq_engine *e, int64_t k)
{
	struct ctq_engine_req *x = e->row_req[k];
	const float *lg = e->logits + k * e->V;
	const int64_t at = e->row_at[k];
	const int ntop = x->p.logprobs < 0 ? 0 : x->p.logprobs;
	if (at >= 0 && at < x->n_prompt - 1) {
		fill_logprobs(lg, e->V, x->prompt[at + 1], ntop, &x->ptoks[at + 1]);
		return -1;
	}
	int32_t tok = ctq_engine_sample(lg, e->V, &x->p, &x->rng, e->cand);
	struct ctq_engine_token *t = &x->toks[x->n_toks];
	if (x->p.logprobs >= 0) {
		fill_logprobs(lg, e->V, tok, ntop, t);
	} else {
		*t = (struct ctq_engine_token){.id = tok, .logprob = NAN};
	}
	return tok;
}

/* Whether every row of the call wants only its greedy token (temperature
 * 0 or top_k 1, no log-probabilities, no echo row): then the runner picks on
 * the device and no logits come back. */
static bool picks_only(const struct ctq_engine *e, int64_t n_rows)
{
	for (int64_t k = 0; k < n_rows; k++) {
		const struct ctq_engine_req *x = e->row_req[k];
		const int64_t at = e->row_at[k];
		if ((at >= 0 && at < x->n_prompt - 1) || x->p.logprobs >= 0 ||
		    !(x->p.temperature <= 0 || x->p.top_k == 1))
			return false;
	}
	return true;
}

/* The call through ctq_model_forward_next: each row's greedy token, as
 * use_row would give it from the logits. */
static enum ctq_status use_picks(struct ctq_engine *e, int64_t T, int64_t n_rows, int32_t *toks,
				 struct ctq_error *err)
{
	enum ctq_status st =
		ctq_model_forward_next(e->m, e->ids, e->slot, e->pos, T, e->rows, n_rows, toks, err);
	for (int64_t k = 0; !st && k < n_rows; k++) {
		struct ctq_engine_req *x = e->row_req[k];
		x->toks[x->n_toks] = (struct ctq_engine_token){.id = toks[k], .logprob = NAN};
	}
	return st;
}

static bool is_stop(const struct ctq_engine *e, const struct ctq_engine_req *x, int32_t tok)
{
	if (!x->p.ignore_eos && tok == ctq_model_cfg(e->m)->eos_id)
		return true;
	for (int i = 0; i < x->p.n_stop_ids; i++)
		if (tok == x->p.stop_ids[i])
			return true;
	return false;
}

/* Under the lock: publishes the call's outcome (toks: the new token of
 * each row, -1 for prompt rows). */
static void publish(struct ctq_engine *e, int64_t n_rows, const int32_t *toks)
{
	const double now = ctq_now_s();
	for (int64_t s = 0; s < e->o.max_batch; s++) {
		struct ctq_engine_req *x = e->slot_req[s];
		if (x && !x->prompt_done && x->fed == x->n_prompt) {
			x->prompt_done = true;
			if (x->p.max_new == 0)
				finish_req(e, x, CTQ_ENGINE_LENGTH);
			else
				pthread_cond_broadcast(&x->cond);
		}
	}
	for (int64_t k = 0; k < n_rows; k++) {
		struct ctq_engine_req *x = e->row_req[k];
		if (toks[k] < 0 || x->engine_done)
			continue;
		if (!x->n_toks)
			x->t_first = now;
		x->next = toks[k];
		x->n_toks++;
		e->stats.generated_tokens++;
		if (is_stop(e, x, toks[k]))
			finish_req(e, x, CTQ_ENGINE_STOP);
		else if (x->n_toks == x->p.max_new)
			finish_req(e, x, CTQ_ENGINE_LENGTH);
		else if (x->n_toks > x->wake_above)
			pthread_cond_broadcast(&x->cond);
	}
}

static void *worker(void *arg)
{
	struct ctq_engine *e = arg;
	int32_t *toks = ctq_malloc((size_t)e->rows_cap * sizeof *toks);
	pthread_mutex_lock(&e->mu);
	for (;;) {
		admit(e);
		if (e->done_head) {
			run_done(e); /* their clients' next requests join the next call */
			continue;
		}
		if (e->stopping && !e->n_running && !e->q_head)
			break;
		if (!e->n_running) {
			pthread_cond_wait(&e->work, &e->mu);
			continue;
		}
		int64_t n_rows = 0, n_decode = 0, T = plan_call(e, &n_rows, &n_decode);
		pthread_mutex_unlock(&e->mu);
		struct ctq_error err = {0};
		enum ctq_status st = CTQ_OK;
		bool picked = false; /* the tokens came from the greedy picks (use_picks) */
		const double t_call = ctq_now_s();
		if (!toks)
			st = ctq_error_set(&err, CTQ_ERR_NOMEM, "engine", "out of memory");
		else if ((picked = picks_only(e, n_rows)))
			st = use_picks(e, T, n_rows, toks, &err);
		else
			st = ctq_model_forward(e->m, e->ids, e->slot, e->pos, T, e->rows, n_rows, e->logits, &err);
		for (int64_t k = 0; !st && !picked && k < n_rows; k++)
			toks[k] = use_row(e, k);
		const double t_done = ctq_now_s();
		pthread_mutex_lock(&e->mu);
		e->stats.calls++;
		e->stats.fed_tokens += T;
		e->stats.decode_tokens += n_decode;
		if (e->o.log_calls && ctq_grow((void **)&e->calls, &e->cap_calls, e->n_calls + 1, sizeof *e->calls))
			e->calls[e->n_calls++] = (struct ctq_engine_call){
				.start_s = t_call, .dur_s = t_done - t_call, .tokens = T, .decode = n_decode};
		if (st) {
			/* The call fails every request in it; the engine keeps serving. */
			for (int64_t s = 0; s < e->o.max_batch; s++) {
				struct ctq_engine_req *x = e->slot_req[s];
				if (x) {
					x->err = err;
					finish_req(e, x, CTQ_ENGINE_FAILED);
				}
			}
			continue;
		}
		publish(e, n_rows, toks);
	}
	pthread_mutex_unlock(&e->mu);
	ctq_free(toks);
	return NULL;
}

/* ---- the public side --------------------------------------------------------------- */

static void engine_buffers_free(struct ctq_engine *e)
{
	ctq_free(e->order), ctq_free(e->calls);
	ctq_free(e->slot_req), ctq_free(e->ids), ctq_free(e->slot), ctq_free(e->pos);
	ctq_free(e->rows), ctq_free(e->row_req), ctq_free(e->row_at), ctq_free(e->logits);
	ctq_free(e->cand);
}

enum ctq_status ctq_engine_start(struct ctq_engine **out, struct ctq_model *m,
				 const struct ctq_engine_options *o, struct ctq_error *err)
{
	*out = NULL;
	const struct ctq_model_limits *sh = &m->limits;
	if (!m->loaded || o->max_batch < 1 || o->max_batch > sh->max_slots || o->max_len < 2 ||
	    o->max_len > sh->max_len || o->max_tokens < o->max_batch || o->max_tokens > sh->max_tokens ||
	    o->echo_rows < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "engine",
				     "engine options out of range: max_batch %lld (slots %lld), max_len %lld (model %lld), max_tokens %lld (model %lld, >= max_batch), echo_rows %lld",
				     (long long)o->max_batch, (long long)sh->max_slots, (long long)o->max_len,
				     (long long)sh->max_len, (long long)o->max_tokens,
				     (long long)sh->max_tokens, (long long)o->echo_rows);
	struct ctq_engine *e = ctq_calloc(1, sizeof *e);
	if (!e)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "engine", "out of memory");
	e->m = m;
	e->o = *o;
	e->V = ctq_model_cfg(m)->vocab;
	e->rows_cap = o->max_batch + o->echo_rows;
	e->slot_req = ctq_calloc((size_t)o->max_batch, sizeof *e->slot_req);
	e->order = ctq_calloc((size_t)o->max_batch, sizeof *e->order);
	e->ids = ctq_malloc((size_t)o->max_tokens * 4);
	e->slot = ctq_malloc((size_t)o->max_tokens * 4);
	e->pos = ctq_malloc((size_t)o->max_tokens * 4);
	e->rows = ctq_malloc((size_t)e->rows_cap * sizeof *e->rows);
	e->row_req = ctq_malloc((size_t)e->rows_cap * sizeof *e->row_req);
	e->row_at = ctq_malloc((size_t)e->rows_cap * sizeof *e->row_at);
	e->logits = ctq_malloc((size_t)(e->rows_cap * e->V) * sizeof *e->logits);
	e->cand = ctq_malloc((size_t)e->V * sizeof *e->cand);
	if (!e->slot_req || !e->order || !e->ids || !e->slot || !e->pos || !e->rows || !e->row_req ||
	    !e->row_at || !e->logits || !e->cand) {
		engine_buffers_free(e);
		ctq_free(e);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "engine", "out of memory");
	}
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->work, NULL);
	e->seed_counter = (uint64_t)time(NULL) ^ ((uint64_t)(ctq_now_s() * 1e9) << 20);
	if (pthread_create(&e->thread, NULL, worker, e)) {
		pthread_mutex_destroy(&e->mu);
		pthread_cond_destroy(&e->work);
		engine_buffers_free(e);
		ctq_free(e);
		return ctq_error_set(err, CTQ_ERR_ENV, "engine", "cannot start the engine thread");
	}
	e->started = true;
	*out = e;
	return CTQ_OK;
}

void ctq_engine_stop(struct ctq_engine *e)
{
	pthread_mutex_lock(&e->mu);
	e->stopping = true;
	pthread_cond_signal(&e->work);
	pthread_mutex_unlock(&e->mu);
	if (e->started)
		pthread_join(e->thread, NULL);
	e->started = false;
}

void ctq_engine_free(struct ctq_engine *e)
{
	if (!e)
		return;
	ctq_engine_stop(e);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->work);
	engine_buffers_free(e);
	ctq_free(e);
}

static enum ctq_status check_params(const struct ctq_engine *e, const int32_t *prompt, int64_t n,
				    const struct ctq_engine_params *p, struct ctq_error *err)
{
	if (n < 1)
		return ctq_error_set(err, CTQ_ERR_USAGE, "prompt", "the prompt is empty");
	for (int64_t i = 0; i < n; i++)
		if (prompt[i] < 0 || prompt[i] >= e->V)
			return ctq_error_set(err, CTQ_ERR_USAGE, "prompt",
					     "token id %d at %lld is outside the vocabulary [0, %lld)",
					     prompt[i], (long long)i, (long long)e->V);
	if (p->max_new < 0 || n + p->max_new > e->o.max_len)
		return ctq_error_set(err, CTQ_ERR_USAGE, "max_tokens",
				     "prompt %lld + max_tokens %lld tokens exceed the cache of %lld positions",
				     (long long)n, (long long)p->max_new, (long long)e->o.max_len);
	if (!(p->temperature >= 0) || !(p->top_p > 0 && p->top_p <= 1) || p->logprobs < -1 ||
	    p->logprobs > CTQ_ENGINE_MAX_TOP || p->n_stop_ids < 0 ||
	    p->n_stop_ids > CTQ_ENGINE_MAX_STOP_IDS)
		return ctq_error_set(err, CTQ_ERR_USAGE, "params",
				     "sampling parameters out of range (temperature >= 0, 0 < top_p <= 1, logprobs -1..%d, stop ids 0..%d)",
				     CTQ_ENGINE_MAX_TOP, CTQ_ENGINE_MAX_STOP_IDS);
	return CTQ_OK;
}

enum ctq_status ctq_engine_submit(struct ctq_engine *e, const int32_t *prompt, int64_t n,
				  const struct ctq_engine_params *p, struct ctq_engine_req **req,
				  struct ctq_error *err)
{
	*req = NULL;
	enum ctq_status st = check_params(e, prompt, n, p, err);
	if (st)
		return st;
	struct ctq_engine_req *x = ctq_calloc(1, sizeof *x);
	if (!x)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "engine", "out of memory");
	x->prompt = ctq_malloc((size_t)n * sizeof *x->prompt);
	x->toks = ctq_calloc((size_t)(p->max_new > 0 ? p->max_new : 1), sizeof *x->toks);
	x->ptoks = p->echo_logprobs ? ctq_calloc((size_t)n, sizeof *x->ptoks) : NULL;
	if (!x->prompt || !x->toks || (p->echo_logprobs && !x->ptoks)) {
		ctq_free(x->prompt), ctq_free(x->toks), ctq_free(x->ptoks), ctq_free(x);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "engine", "out of memory");
	}
	memcpy(x->prompt, prompt, (size_t)n * sizeof *prompt);
	for (int64_t i = 0; x->ptoks && i < n; i++)
		x->ptoks[i] = (struct ctq_engine_token){.id = prompt[i], .logprob = NAN};
	x->n_prompt = n;
	x->p = *p;
	x->slot = -1;
	x->wake_above = -1;
	pthread_cond_init(&x->cond, NULL);
	x->t_submit = ctq_now_s();
	pthread_mutex_lock(&e->mu);
	if (e->stopping) {
		pthread_mutex_unlock(&e->mu);
		req_free(x);
		return ctq_error_set(err, CTQ_ERR_ENV, "engine", "the engine is stopping");
	}
	uint64_t seed = p->seeded ? p->seed : e->seed_counter++;
	ctq_rng_seed(&x->rng, seed);
	if (e->q_tail)
		e->q_tail->next_q = x;
	else
		e->q_head = x;
	e->q_tail = x;
	e->n_waiting++;
	e->stats.submitted++;
	pthread_cond_signal(&e->work);
	pthread_mutex_unlock(&e->mu);
	*req = x;
	return CTQ_OK;
}

static void view(const struct ctq_engine_req *x, struct ctq_engine_view *v)
{
	*v = (struct ctq_engine_view){
		.tokens = x->toks, .n_tokens = x->n_toks,
		.prompt = x->prompt_done ? x->ptoks : NULL, .n_prompt = x->n_prompt,
		.prompt_done = x->prompt_done, .finish = x->finish,
		.queued_s = x->t_admit > 0 ? x->t_admit - x->t_submit : 0,
		.first_s = x->n_toks ? x->t_first - x->t_submit : 0,
		.finish_s = x->engine_done ? x->t_finish - x->t_submit : 0};
}

bool ctq_engine_wait(struct ctq_engine *e, struct ctq_engine_req *x, int64_t have, double timeout_s,
		     struct ctq_engine_view *v)
{
	pthread_mutex_lock(&e->mu);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout_s >= 0) {
		double t = (double)until.tv_sec + until.tv_nsec * 1e-9 + timeout_s;
		until.tv_sec = (time_t)t;
		until.tv_nsec = (long)((t - floor(t)) * 1e9);
	}
	bool changed;
	while (!(changed = x->n_toks > have || x->finish != CTQ_ENGINE_RUNNING)) {
		x->wake_above = have;
		if (timeout_s < 0)
			pthread_cond_wait(&x->cond, &e->mu);
		else if (pthread_cond_timedwait(&x->cond, &e->mu, &until))
			break;
	}
	x->wake_above = -1;
	view(x, v);
	pthread_mutex_unlock(&e->mu);
	return changed;
}

void ctq_engine_cancel(struct ctq_engine *e, struct ctq_engine_req *x)
{
	pthread_mutex_lock(&e->mu);
	if (!x->engine_done) {
		x->cancel = true;
		pthread_cond_signal(&e->work);
	}
	pthread_mutex_unlock(&e->mu);
}

void ctq_engine_release(struct ctq_engine *e, struct ctq_engine_req *x)
{
	if (!x)
		return;
	pthread_mutex_lock(&e->mu);
	x->released = true;
	if (x->engine_done && !x->done_pending) {
		req_free(x);
	} else {
		x->cancel = true;
		pthread_cond_signal(&e->work);
	}
	pthread_mutex_unlock(&e->mu);
}

void ctq_engine_error(struct ctq_engine *e, struct ctq_engine_req *x, struct ctq_error *err)
{
	pthread_mutex_lock(&e->mu);
	if (err)
		*err = x->err;
	pthread_mutex_unlock(&e->mu);
}

long ctq_engine_active(struct ctq_engine *e)
{
	pthread_mutex_lock(&e->mu);
	long n = e->n_waiting + e->n_running;
	pthread_mutex_unlock(&e->mu);
	return n;
}

void ctq_engine_get_stats(struct ctq_engine *e, struct ctq_engine_stats *s)
{
	pthread_mutex_lock(&e->mu);
	*s = e->stats;
	pthread_mutex_unlock(&e->mu);
}

const struct ctq_engine_call *ctq_engine_calls(struct ctq_engine *e, size_t *n)
{
	pthread_mutex_lock(&e->mu);
	const struct ctq_engine_call *c = e->calls;
	*n = e->n_calls;
	pthread_mutex_unlock(&e->mu);
	return c;
}

enum ctq_status ctq_engine_complete(struct ctq_engine *e, const int32_t *prompt, int64_t n_prompt,
				    const struct ctq_engine_params *p, int32_t **out, int64_t *n_out,
				    enum ctq_engine_finish *finish, struct ctq_error *err)
{
	*out = NULL;
	*n_out = 0;
	struct ctq_engine_req *x = NULL;
	enum ctq_status st = ctq_engine_submit(e, prompt, n_prompt, p, &x, err);
	if (st)
		return st;
	struct ctq_engine_view v;
	ctq_engine_wait(e, x, INT64_MAX, -1, &v);
	if (finish)
		*finish = v.finish;
	if (v.finish == CTQ_ENGINE_FAILED) {
		struct ctq_error why = {0};
		ctq_engine_error(e, x, &why);
		st = ctq_error_set(err, why.status ? why.status : CTQ_ERR_ENV, why.path, "%s", why.message);
	} else if (v.finish == CTQ_ENGINE_CANCELLED) {
		st = ctq_error_set(err, CTQ_ERR_ENV, "engine", "the request was cancelled: the engine stopped");
	} else if (!(*out = ctq_malloc((size_t)(v.n_tokens ? v.n_tokens : 1) * sizeof **out))) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "engine", "out of memory");
	} else {
		for (int64_t i = 0; i < v.n_tokens; i++)
			(*out)[i] = v.tokens[i].id;
		*n_out = v.n_tokens;
	}
	ctq_engine_release(e, x);
	return st;
}
