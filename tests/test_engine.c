/* Criterion tests for the model handle (model/model.c) and the batching
 * engine (model/engine.c) on the CPU reference, over the tiny synthetic
 * W8A8 checkpoint (tests/model_fixture.h):
 *   - a handle opens, loads, unloads and loads again on the same ranks; a
 *     second handle shares them; loading without ranks is a usage error;
 *   - ctq_model_forward_next picks what ctq_argmax picks from
 *     ctq_model_forward's logits, on one rank and on two;
 *   - requests submitted at once, more than there are slots, with prompts
 *     cut into chunks across calls, give the tokens of the tests' own
 *     one-token-a-call decoder (tests/greedy.h), and the call log adds up;
 *   - ctq_engine_complete refuses what does not fit, and says why;
 *   - on_done runs on the worker, once a request, and a request sent from it
 *     is served (a closed loop with no client latency). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "model/engine.h"
#include "model/model.h"
#include "tests/greedy.h"
#include "tests/model_fixture.h"

static void open_model(struct ctq_model *m, const char *dir, int tp, int64_t slots, int64_t len,
		       int64_t tokens)
{
	struct ctq_error err = {0};
	const struct ctq_model_options o = {.dir = dir, .backend = "reference", .tp = tp,
					    .limits = {.max_slots = slots, .max_len = len, .max_tokens = tokens}};
	cr_assert_eq(ctq_model_open(m, &o, &err), CTQ_OK, "%s", err.message);
}

Test(model, loads_unloads_and_shares_ranks, .timeout = 120)
{
	struct fixture f;
	fixture_make(&f, "model", 0, 11);
	struct ctq_model a, b, none;
	struct ctq_error err = {0};
	open_model(&a, f.w8a8, 1, 1, 32, 32);
	cr_expect_eq(a.n_quantized, 7 * ctq_model_cfg(&a)->layers, "every decoder linear is W8A8");
	cr_expect_gt(a.weight_bytes, 0);
	cr_expect(a.device[0], "the device is described");
	const struct ctq_model_limits lim = {.max_slots = 2, .max_len = 16, .max_tokens = 16};
	cr_expect_eq(ctq_model_load(&a, f.bf16, &lim, &err), CTQ_ERR_USAGE, "a second load is refused");
	ctq_model_unload(&a);
	cr_assert_eq(ctq_model_load(&a, f.bf16, &lim, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(a.n_quantized, 0, "the BF16 checkpoint now");
	ctq_model_share_ranks(&b, &a);
	cr_assert_eq(ctq_model_load(&b, f.w8a8, &lim, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(b.r[0].b, &a.b[0], "the shared handle runs on the first one's backend");
	ctq_model_close(&b); /* leaves a's ranks open */
	int32_t id = 1, slot = 0, pos = 0, next = -1;
	int64_t row = 0;
	cr_expect_eq(ctq_model_forward_next(&a, &id, &slot, &pos, 1, &row, 1, &next, &err), CTQ_OK, "%s",
		     err.message);
	ctq_model_close(&a);
	memset(&none, 0, sizeof none);
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_model_load(&none, f.w8a8, &lim, &err), CTQ_ERR_USAGE);
	cr_expect_neq(strstr(err.message, "no backend ranks"), NULL, "%s", err.message);
	ctq_model_close(&none);
	fixture_drop(&f);
}

Test(model, forward_next_is_the_argmax_of_forward, .timeout = 120)
{
	struct fixture f;
	fixture_make(&f, "model", 0, 12);
	for (int tp = 1; tp <= 2; tp++) {
		struct ctq_model m;
		open_model(&m, f.w8a8, tp, 2, 32, 32);
		const int64_t V = ctq_model_cfg(&m)->vocab;
		int32_t ids[12], slot[12], pos[12], next[2];
		struct ctq_rng rng;
		ctq_rng_seed(&rng, 7);
		for (int i = 0; i < 12; i++) {
			ids[i] = (int32_t)ctq_rng_below(&rng, (uint64_t)V);
			slot[i] = i / 6;
			pos[i] = i % 6;
		}
		int64_t rows[2] = {5, 11};
		float *lg = malloc((size_t)(2 * V) * sizeof *lg);
		cr_assert(lg);
		struct ctq_error err = {0};
		cr_assert_eq(ctq_model_forward(&m, ids, slot, pos, 12, rows, 2, lg, &err), CTQ_OK, "%s",
			     err.message);
		cr_assert_eq(ctq_model_forward_next(&m, ids, slot, pos, 12, rows, 2, next, &err), CTQ_OK, "%s",
			     err.message);
		for (int k = 0; k < 2; k++)
			cr_expect_eq(next[k], ctq_argmax(lg + k * V, V), "tp %d row %d", tp, k);
		free(lg);
		ctq_model_close(&m);
	}
	fixture_drop(&f);
}

struct job {
	struct ctq_engine *e;
	const int32_t *prompt;
	int64_t n, max_new;
	int32_t *out;
	int64_t n_out;
	enum ctq_status st;
};

static void *run_job(void *arg)
{
	struct job *j = arg;
	const struct ctq_engine_params p = {.max_new = j->max_new, .ignore_eos = true, .top_p = 1,
					    .logprobs = -1};
	struct ctq_error err = {0};
	j->st = ctq_engine_complete(j->e, j->prompt, j->n, &p, &j->out, &j->n_out, NULL, &err);
	return NULL;
}

Test(engine, concurrent_requests_give_the_greedy_tokens, .timeout = 180)
{
	enum { N = 6, MAXP = 21, NEW = 9 };
	struct fixture f;
	fixture_make(&f, "engine", 0, 13);
	struct ctq_model m, plain;
	/* 3 slots for 6 requests; 8 tokens a call: every prompt is cut. */
	open_model(&m, f.w8a8, 1, 3, MAXP + NEW, 8);
	open_model(&plain, f.w8a8, 1, 1, MAXP + NEW, MAXP);
	const int64_t V = ctq_model_cfg(&m)->vocab;
	struct ctq_engine *e = NULL;
	struct ctq_error err = {0};
	const struct ctq_engine_options eo = {.max_batch = 3, .max_len = MAXP + NEW, .max_tokens = 8,
					      .echo_rows = 1, .log_calls = true};
	cr_assert_eq(ctq_engine_start(&e, &m, &eo, &err), CTQ_OK, "%s", err.message);
	int32_t prompts[N][MAXP];
	struct job jobs[N];
	pthread_t th[N];
	struct ctq_rng rng;
	ctq_rng_seed(&rng, 21);
	for (int i = 0; i < N; i++) {
		const int64_t n = 5 + 3 * i; /* 5 .. 20 */
		for (int64_t t = 0; t < n; t++)
			prompts[i][t] = (int32_t)ctq_rng_below(&rng, (uint64_t)V);
		jobs[i] = (struct job){.e = e, .prompt = prompts[i], .n = n, .max_new = NEW - (i % 3)};
		cr_assert_eq(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
	}
	int64_t fed = 0, want_fed = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(jobs[i].st, CTQ_OK, "request %d", i);
		int32_t *want = NULL;
		int64_t n_want = 0;
		test_greedy(&plain.r[0], prompts[i], jobs[i].n, jobs[i].max_new, true, &want, &n_want);
		cr_assert_eq(jobs[i].n_out, n_want, "request %d", i);
		for (int64_t t = 0; t < n_want; t++)
			cr_expect_eq(jobs[i].out[t], want[t], "request %d token %lld", i, (long long)t);
		want_fed += jobs[i].n + jobs[i].max_new - 1;
		free(want);
		free(jobs[i].out);
	}
	ctq_engine_stop(e);
	size_t n_calls = 0;
	const struct ctq_engine_call *calls = ctq_engine_calls(e, &n_calls);
	struct ctq_engine_stats st;
	ctq_engine_get_stats(e, &st);
	cr_expect_eq((long)n_calls, st.calls);
	int64_t decode = 0;
	for (size_t i = 0; i < n_calls; i++) {
		cr_expect_leq(calls[i].tokens, 8, "call %zu carries at most max_tokens", i);
		cr_expect_leq(calls[i].decode, calls[i].tokens);
		cr_expect_geq(calls[i].dur_s, 0);
		fed += calls[i].tokens;
		decode += calls[i].decode;
	}
	cr_expect_eq(fed, want_fed, "every prompt token once, every new token but the last once");
	cr_expect_eq(fed, st.fed_tokens);
	cr_expect_eq(decode, st.decode_tokens);
	cr_expect_eq(st.finished, N);
	ctq_engine_free(e);
	ctq_model_close(&plain);
	ctq_model_close(&m);
	fixture_drop(&f);
}

Test(engine, complete_refuses_what_does_not_fit, .timeout = 120)
{
	struct fixture f;
	fixture_make(&f, "engine", 0, 14);
	struct ctq_model m;
	open_model(&m, f.w8a8, 1, 1, 16, 16);
	struct ctq_engine *e = NULL;
	struct ctq_error err = {0};
	const struct ctq_engine_options too_big = {.max_batch = 2, .max_len = 16, .max_tokens = 16, .echo_rows = 1};
	cr_expect_eq(ctq_engine_start(&e, &m, &too_big, &err), CTQ_ERR_USAGE, "2 slots on a model of 1");
	const struct ctq_engine_options eo = {.max_batch = 1, .max_len = 16, .max_tokens = 16, .echo_rows = 1};
	cr_assert_eq(ctq_engine_start(&e, &m, &eo, &(struct ctq_error){0}), CTQ_OK);
	const int32_t prompt[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	const struct ctq_engine_params p = {.max_new = 5, .top_p = 1, .logprobs = -1};
	int32_t *out = NULL;
	int64_t n_out = -1;
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_engine_complete(e, prompt, 12, &p, &out, &n_out, NULL, &err), CTQ_ERR_USAGE);
	cr_expect_neq(strstr(err.message, "exceed the cache of 16 positions"), NULL, "%s", err.message);
	cr_expect_eq(out, NULL);
	cr_expect_eq(n_out, 0);
	const struct ctq_engine_params none = {.max_new = 0, .top_p = 1, .logprobs = -1};
	enum ctq_engine_finish fin = CTQ_ENGINE_RUNNING;
	cr_expect_eq(ctq_engine_complete(e, prompt, 4, &none, &out, &n_out, &fin, &err), CTQ_OK);
	cr_expect_eq(n_out, 0);
	cr_expect_eq(fin, CTQ_ENGINE_LENGTH);
	free(out);
	ctq_engine_free(e);
	ctq_model_close(&m);
	fixture_drop(&f);
}

/* A closed loop through on_done: each request's end sends the next. */
struct chain {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	const int32_t (*prompts)[8];
	int sent, ended, n;
	int32_t out[4][6];
	int64_t n_out[4];
	bool worker_thread_ok;
	pthread_t main_thread;
};

static void chain_done(void *ctx, struct ctq_engine *e, struct ctq_engine_req *req);

static void chain_send(struct chain *c, struct ctq_engine *e)
{
	const struct ctq_engine_params p = {.max_new = 6, .ignore_eos = true, .top_p = 1, .logprobs = -1,
					    .on_done = chain_done, .on_done_ctx = c};
	struct ctq_engine_req *req = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_engine_submit(e, c->prompts[c->sent++], 8, &p, &req, &err), CTQ_OK, "%s", err.message);
}

static void chain_done(void *ctx, struct ctq_engine *e, struct ctq_engine_req *req)
{
	struct chain *c = ctx;
	struct ctq_engine_view v;
	ctq_engine_wait(e, req, INT64_MAX, 0, &v);
	pthread_mutex_lock(&c->mu);
	const int i = c->ended++;
	c->worker_thread_ok &= !pthread_equal(pthread_self(), c->main_thread);
	c->n_out[i] = v.n_tokens;
	for (int64_t t = 0; t < v.n_tokens && t < 6; t++)
		c->out[i][t] = v.tokens[t].id;
	ctq_engine_release(e, req);
	if (c->sent < c->n)
		chain_send(c, e);
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->mu);
}

Test(engine, on_done_sends_the_next_request_from_the_worker, .timeout = 120)
{
	struct fixture f;
	fixture_make(&f, "engine", 0, 15);
	struct ctq_model m, plain;
	open_model(&m, f.w8a8, 1, 1, 16, 16);
	open_model(&plain, f.w8a8, 1, 1, 16, 16);
	struct ctq_engine *e = NULL;
	struct ctq_error err = {0};
	const struct ctq_engine_options eo = {.max_batch = 1, .max_len = 16, .max_tokens = 16, .echo_rows = 1};
	cr_assert_eq(ctq_engine_start(&e, &m, &eo, &err), CTQ_OK, "%s", err.message);
	static const int32_t prompts[4][8] = {{1, 2, 3, 4, 5, 6, 7, 8}, {9, 10, 11, 12, 13, 14, 15, 16},
					     {3, 1, 4, 1, 5, 9, 2, 6}, {2, 7, 1, 8, 2, 8, 1, 8}};
	struct chain c = {.prompts = prompts, .n = 4, .worker_thread_ok = true, .main_thread = pthread_self()};
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cond, NULL);
	pthread_mutex_lock(&c.mu);
	chain_send(&c, e);
	while (c.ended < c.n)
		pthread_cond_wait(&c.cond, &c.mu);
	pthread_mutex_unlock(&c.mu);
	cr_expect(c.worker_thread_ok, "on_done runs on the engine's worker");
	for (int i = 0; i < 4; i++) {
		int32_t *want = NULL;
		int64_t n_want = 0;
		test_greedy(&plain.r[0], prompts[i], 8, 6, true, &want, &n_want);
		cr_assert_eq(c.n_out[i], n_want, "request %d", i);
		for (int64_t t = 0; t < n_want; t++)
			cr_expect_eq(c.out[i][t], want[t], "request %d token %lld", i, (long long)t);
		free(want);
	}
	struct ctq_engine_stats st;
	ctq_engine_stop(e);
	ctq_engine_get_stats(e, &st);
	/* one slot, each prompt in one call, then 5 decode calls: no call is lost
	 * or shared between two requests of the chain */
	cr_expect_eq(st.calls, 4 * 6);
	cr_expect_eq(st.finished, 4);
	ctq_engine_free(e);
	ctq_model_close(&plain);
	ctq_model_close(&m);
	pthread_cond_destroy(&c.cond);
	pthread_mutex_destroy(&c.mu);
	fixture_drop(&f);
}
