/* Criterion tests for the probes' pipeline (conform/probe.h
 * ctq_probe_run_jobs): the next probe's inputs and CPU oracle computed on a
 * worker thread while the current one runs, and the weights drawn once per
 * run of jobs with the same (weights, acts) instead of once per M. Neither
 * may change a result: a session with overlap gives the rows of a serial
 * one, and every job of a list that switches patterns back and forth gives
 * the row of the same probe run alone (ctq_probe_run_many, which draws
 * everything afresh), clean and with a planted defect. The first backend
 * is slowed down so that the worker surely runs beside it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "conform/probe.h"
#include "conform/probe_session.h"
#include "core/json.h"
#include "core/rng.h"

/* A reference backend whose W8A8 linear takes 2 ms more: the worker
 * preparing the next probe then certainly runs while this one's output
 * is read back and compared, so buffers shared between the two show. */
static struct ctq_backend_ops slow_ops;
static enum ctq_status (*fast_linear)(struct ctq_backend *, const void *, const void *, const void *,
				      const void *, int64_t, int64_t, int64_t, void *, void *,
				      struct ctq_error *);

static enum ctq_status slow_linear(struct ctq_backend *b, const void *x, const void *w, const void *s_w,
				   const void *bias, int64_t M, int64_t N, int64_t K, void *y, void *ws,
				   struct ctq_error *err)
{
	enum ctq_status st = fast_linear(b, x, w, s_w, bias, M, N, K, y, ws, err);
	nanosleep(&(struct timespec){0, 2000000}, NULL);
	return st;
}

static void open_slow(struct ctq_backend *b)
{
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_reference(b, &err), CTQ_OK);
	slow_ops = *b->ops;
	fast_linear = slow_ops.w8a8_linear;
	slow_ops.w8a8_linear = slow_linear;
	b->ops = &slow_ops;
}

/* Every row of S as one string per row. */
static char **rows_text(const struct ctq_probe_session *S, int *n)
{
	*n = cJSON_GetArraySize(S->rows);
	char **t = calloc((size_t)*n, sizeof *t);
	cr_assert(t);
	for (int i = 0; i < *n; i++)
		cr_assert((t[i] = cJSON_PrintUnformatted(cJSON_GetArrayItem(S->rows, i))));
	return t;
}

/* A layer with real (BF16-valued) weights and a bias, K and N off every
 * tile. */
static void real_layer(struct ctq_probe_layer *L, float *w, float *bias, int64_t K, int64_t N)
{
	struct ctq_rng r;
	ctq_rng_seed(&r, 11);
	for (int64_t i = 0; i < N * K; i++)
		w[i] = (float)(0.05 * ctq_rng_normal(&r));
	for (int64_t n = 0; n < N; n++)
		bias[n] = (float)ctq_rng_normal(&r);
	*L = (struct ctq_probe_layer){.name = "model.layers.0.mlp.down_proj", .K = K, .N = N, .w = w,
				      .bias = bias};
}

/* One session over synthetic geometries and a real layer, every pattern
 * and four M, on a clean reference and one with a planted defect; rows
 * and tallies in *out. */
static char **session_rows(bool serial, int *n, size_t *passed, size_t *failed)
{
	struct ctq_backend b[2];
	struct ctq_error err = {0};
	open_slow(&b[0]);
	cr_assert_eq(ctq_backend_reference(&b[1], &err), CTQ_OK);
	b[1].defects = CTQ_DEFECT_SCALE_SHIFT;
	struct ctq_probe_policy policy;
	ctq_probe_policy_default(&policy);
	const int64_t ms[] = {1, 7, 64, 3};
	struct ctq_probe_session S = {.backends = b, .n_backends = 2, .ms = ms, .n_m = 4, .seed = 1,
				      .policy = &policy, .serial = serial};
	cr_assert_eq(ctq_probe_session_init(&S, &err), CTQ_OK);
	for (int w = 0; w < CTQ_PW_COUNT; w++)
		S.wsel[w] = true;
	for (int a = 0; a < CTQ_PA_COUNT; a++)
		S.asel[a] = true;
	struct ctq_probe_shapes shapes;
	cr_assert_eq(ctq_probe_shapes_parse("64:32,100:7,33:130", &shapes, &err), CTQ_OK);
	static const bool synthetic[CTQ_PW_COUNT] = {false, true, true, true, true};
	for (size_t l = 0; l < shapes.n; l++)
		cr_assert_eq(ctq_probe_session_layer(&S, &shapes.v[l], synthetic, S.asel, &err), CTQ_OK, "%s",
			     err.message);
	static float w[96 * 40], bias[40];
	struct ctq_probe_layer L;
	real_layer(&L, w, bias, 96, 40);
	static const bool real_w[CTQ_PW_COUNT] = {true, false, false, false, false};
	cr_assert_eq(ctq_probe_session_layer(&S, &L, real_w, S.asel, &err), CTQ_OK, "%s", err.message);
	char **t = rows_text(&S, n);
	*passed = S.passed;
	*failed = S.failed;
	ctq_probe_shapes_free(&shapes);
	ctq_probe_session_free(&S);
	ctq_backend_close(&b[0]);
	ctq_backend_close(&b[1]);
	return t;
}

Test(probe_overlap, session_with_overlap_equals_serial)
{
	int n0, n1;
	size_t p0, f0, p1, f1;
	char **serial = session_rows(true, &n0, &p0, &f0);
	char **overlap = session_rows(false, &n1, &p1, &f1);
	/* (3 geometries x 4 synthetic weights + 1 real) x 4 acts x 4 M x 2 backends */
	cr_assert_eq(n0, (3 * 4 + 1) * 4 * 4 * 2);
	cr_assert_eq(n1, n0);
	cr_expect_eq(p1, p0);
	cr_expect_eq(f1, f0);
	cr_expect_gt(p0, 0, "the clean backend passes");
	cr_expect_gt(f0, 0, "the planted defect fails");
	for (int i = 0; i < n0; i++)
		cr_assert_str_eq(overlap[i], serial[i], "row %d", i);
	for (int i = 0; i < n0; i++)
		free(serial[i]), free(overlap[i]);
	free(serial), free(overlap);
}

struct collected {
	struct ctq_probe_result r[32][2];
	int n;
};

static void collect(void *ctx, const struct ctq_probe_result *res, int n_be)
{
	struct collected *c = ctx;
	cr_assert_lt(c->n, 32);
	cr_assert_eq(n_be, 2);
	memcpy(c->r[c->n++], res, 2 * sizeof *res);
}

static void expect_same(const struct ctq_probe_result *got, const struct ctq_probe_result *want, size_t j)
{
	cJSON *a = ctq_probe_result_json(got), *b = ctq_probe_result_json(want);
	char *ta = cJSON_PrintUnformatted(a), *tb = cJSON_PrintUnformatted(b);
	cr_assert(ta && tb);
	cr_expect_str_eq(ta, tb, "job %zu", j);
	cr_expect_eq(got->max_m, want->max_m, "job %zu", j);
	cr_expect_eq(got->max_n, want->max_n, "job %zu", j);
	free(ta), free(tb);
	cJSON_Delete(a), cJSON_Delete(b);
}

/* Jobs that leave a (weights, acts) and come back to it, with and without
 * overlap, against each probe alone. */
Test(probe_overlap, jobs_equal_each_probe_alone)
{
	static const struct ctq_probe_job jobs[] = {
		{CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 1},      {CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 9},
		{CTQ_PW_PM127, CTQ_PA_GAUSSIAN, 1},       {CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 5},
		{CTQ_PW_RANDOM, CTQ_PA_OUTLIERS, 2},      {CTQ_PW_RANDOM, CTQ_PA_OUTLIERS, 2},
		{CTQ_PW_ZERO_ROW, CTQ_PA_ZERO_ROWS, 4},   {CTQ_PW_CHECKPOINT, CTQ_PA_BF16_LIMIT, 3},
		{CTQ_PW_CHECKPOINT, CTQ_PA_BF16_LIMIT, 17}, {CTQ_PW_CONSTANT, CTQ_PA_GAUSSIAN, 64},
	};
	const size_t n_jobs = sizeof jobs / sizeof *jobs;
	struct ctq_backend b[2];
	struct ctq_error err = {0};
	open_slow(&b[0]);
	cr_assert_eq(ctq_backend_reference(&b[1], &err), CTQ_OK);
	b[1].defects = CTQ_DEFECT_EPILOGUE_NAN;
	struct ctq_backend *bes[2] = {&b[0], &b[1]};
	struct ctq_probe_policy policy;
	ctq_probe_policy_default(&policy);
	static float w[72 * 33], bias[33];
	struct ctq_probe_layer L;
	real_layer(&L, w, bias, 72, 33);
	for (int overlap = 0; overlap < 2; overlap++) {
		static struct collected c;
		c.n = 0;
		cr_assert_eq(ctq_probe_run_jobs(bes, 2, &L, jobs, n_jobs, 5, &policy, overlap, collect, &c, &err),
			     CTQ_OK, "%s", err.message);
		cr_assert_eq(c.n, (int)n_jobs);
		for (size_t j = 0; j < n_jobs; j++) {
			struct ctq_probe_result alone[2];
			cr_assert_eq(ctq_probe_run_many(bes, 2, &L, jobs[j].weights, jobs[j].acts, jobs[j].M, 5, &policy,
							alone, &err),
				     CTQ_OK);
			cr_expect(alone[0].passed, "job %zu: %s", j, alone[0].reason);
			cr_expect(!alone[1].passed, "job %zu: the planted NaN passed", j);
			for (int bi = 0; bi < 2; bi++)
				expect_same(&c.r[j][bi], &alone[bi], j);
		}
	}
	ctq_probe_release();
	ctq_backend_close(&b[0]);
	ctq_backend_close(&b[1]);
}

/* A checkpoint job without weights is refused before any probe runs. */
Test(probe_overlap, checkpoint_job_without_weights_is_refused)
{
	static const struct ctq_probe_job jobs[] = {{CTQ_PW_RANDOM, CTQ_PA_GAUSSIAN, 1},
						    {CTQ_PW_CHECKPOINT, CTQ_PA_GAUSSIAN, 1}};
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_reference(&b, &err), CTQ_OK);
	struct ctq_backend *bes[1] = {&b};
	struct ctq_probe_policy policy;
	ctq_probe_policy_default(&policy);
	const struct ctq_probe_layer L = {.name = "8:8", .K = 8, .N = 8};
	struct collected c = {.n = 0};
	cr_expect_eq(ctq_probe_run_jobs(bes, 1, &L, jobs, 2, 1, &policy, true, NULL, &c, &err), CTQ_ERR_USAGE);
	cr_expect_str_eq(err.path, "8:8");
	ctq_backend_close(&b);
}
