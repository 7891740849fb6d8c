/* Criterion tests for a probe session (conform/probe_session.h), the engine
 * of ctq probe without its printing:
 *   - --shapes: the presets and K:N lists, and what is refused;
 *   - a session over synthetic geometries: one result per (weights, acts,
 *     M, backend) selected, each handed to on_result in order and kept as a
 *     probe.json row, the tallies counting a planted defect as failed;
 *   - over a checkpoint: every linear module with its real weights, then the
 *     synthetic patterns once per distinct (K, N);
 *   - the JSON of a result (NaN quantization error as null, the bit-exact
 *     counts only where checked) and the manifest's summary. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/quantize.h"
#include "checkpoint/synth.h"
#include "conform/probe_session.h"
#include "core/fileio.h"
#include "core/json.h"

TestSuite(probe_session);

Test(probe_session, shapes_presets_and_lists)
{
	static const struct {
		const char *s;
		size_t n;
		const char *first;
		int64_t K, N; /* of the last */
	} good[] = {
		{"qwen3-4b", 4, "qkv_proj", 9728, 2560},
		{"qwen3-0.6b", 4, "qkv_proj", 3072, 1024},
		{"tiny", 4, "qkv_proj", 176, 64},
		{"64:32", 1, "64:32", 64, 32},
		{"64:32,1048576:1", 2, "64:32", 1048576, 1},
		{"4:4,", 1, "4:4", 4, 4},
	};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		struct ctq_probe_shapes s;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_probe_shapes_parse(good[i].s, &s, &err), CTQ_OK, "%s: %s", good[i].s,
			     err.message);
		cr_expect_eq(s.n, good[i].n, "%s", good[i].s);
		cr_expect_str_eq(s.v[0].name, good[i].first, "%s", good[i].s);
		cr_expect_eq(s.v[s.n - 1].K, good[i].K, "%s", good[i].s);
		cr_expect_eq(s.v[s.n - 1].N, good[i].N, "%s", good[i].s);
		ctq_probe_shapes_free(&s);
	}
	static const char *const bad[] = {"", "qwen3", "3:x", ":3", "0:3", "3:0", "3:3:3", ",",
					  "4:4,3:", "1048577:1", "1:1048577", "4;4"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct ctq_probe_shapes s;
		struct ctq_error err = {0};
		cr_expect_eq(ctq_probe_shapes_parse(bad[i], &s, &err), CTQ_ERR_USAGE, "\"%s\"", bad[i]);
		cr_expect_str_eq(err.path, bad[i]);
		ctq_probe_shapes_free(&s);
	}
}

/* What on_result saw. */
struct seen {
	int n;
	char layers[64][64];
	char backends[64][32];
};

static void collect(void *ctx, const struct ctq_probe_result *r)
{
	struct seen *s = ctx;
	cr_assert_lt(s->n, 64);
	snprintf(s->layers[s->n], sizeof s->layers[s->n], "%s", r->layer);
	snprintf(s->backends[s->n], sizeof s->backends[s->n], "%s", r->backend);
	s->n++;
}

static void select_one(struct ctq_probe_session *S, enum ctq_probe_weights w, enum ctq_probe_acts a)
{
	memset(S->wsel, 0, sizeof S->wsel);
	memset(S->asel, 0, sizeof S->asel);
	S->wsel[w] = true;
	S->asel[a] = true;
}

Test(probe_session, layers_give_one_result_per_combination_and_backend)
{
	struct ctq_backend b[CTQ_PROBE_MAX_BACKENDS];
	memset(b, 0, sizeof b);
	int n = 0;
	struct ctq_error err = {0};
	/* a reference with a planted defect: the defect is set on every
	 * backend the function opens */
	cr_assert_eq(ctq_probe_backends_open(b, &n, true, false, NULL, CTQ_DEFECT_EPILOGUE_NAN,
					     CTQ_ACT_NUMERICS_CTQ, &err),
		     CTQ_OK, "%s", err.message);
	cr_assert_eq(n, 1);
	cr_expect_eq(b[0].defects, CTQ_DEFECT_EPILOGUE_NAN);
	struct ctq_probe_policy policy;
	ctq_probe_policy_default(&policy);
	const int64_t ms[] = {1, 3};
	struct seen seen = {0};
	struct ctq_probe_session S = {.backends = b, .n_backends = n, .ms = ms, .n_m = 2, .seed = 1,
				      .policy = &policy, .on_result = collect, .ctx = &seen};
	cr_assert_eq(ctq_probe_session_init(&S, &err), CTQ_OK);
	memset(S.wsel, 0, sizeof S.wsel);
	memset(S.asel, 0, sizeof S.asel);
	S.wsel[CTQ_PW_RANDOM] = S.wsel[CTQ_PW_CONSTANT] = true;
	S.asel[CTQ_PA_GAUSSIAN] = true;
	struct ctq_probe_shapes shapes;
	cr_assert_eq(ctq_probe_shapes_parse("32:16,16:8", &shapes, &err), CTQ_OK);
	for (size_t l = 0; l < shapes.n; l++)
		cr_assert_eq(ctq_probe_session_layer(&S, &shapes.v[l], S.wsel, S.asel, &err), CTQ_OK, "%s",
			     err.message);
	/* 2 layers x 2 weights x 1 acts x 2 M x 1 backend */
	cr_expect_eq(seen.n, 8);
	cr_expect_eq(cJSON_GetArraySize(S.rows), 8);
	cr_expect_eq(S.passed + S.failed, 8);
	cr_expect_eq(S.failed, 8, "a NaN in the epilogue fails every probe");
	cr_expect_str_eq(seen.layers[0], "32:16");
	cr_expect_str_eq(seen.layers[7], "16:8");
	const cJSON *row = cJSON_GetArrayItem(S.rows, 0);
	cr_expect_str_eq(ctq_json_get(row, "layer")->valuestring, "32:16");
	cr_expect(cJSON_IsFalse(ctq_json_get(row, "passed")));
	cr_expect(cJSON_IsString(ctq_json_get(row, "reason")));

	/* the summary carries the tallies and what was probed */
	const struct ctq_probe_summary sum = {.backend = "reference", .numerics = CTQ_ACT_NUMERICS_CTQ,
					      .seed = 1, .policy = policy.source};
	cJSON *o = ctq_probe_summary_json(&sum, &S);
	cr_assert(o);
	cr_expect_eq(ctq_json_get(o, "failed")->valueint, 8);
	cr_expect_eq(ctq_json_get(o, "passed")->valueint, 0);
	cr_expect_str_eq(ctq_json_get(o, "backend")->valuestring, "reference");
	cr_expect_null(ctq_json_get(o, "kernel_lib"));
	cr_expect_null(ctq_json_get(o, "model"));
	cJSON_Delete(o);
	ctq_probe_shapes_free(&shapes);
	ctq_probe_session_free(&S);
	ctq_backend_close(&b[0]);

	/* the same probes clean pass */
	n = 0;
	memset(b, 0, sizeof b);
	cr_assert_eq(ctq_probe_backends_open(b, &n, true, false, NULL, 0, CTQ_ACT_NUMERICS_CTQ, &err),
		     CTQ_OK);
	struct ctq_probe_session C = {.backends = b, .n_backends = n, .ms = ms, .n_m = 2, .seed = 1,
				      .policy = &policy};
	cr_assert_eq(ctq_probe_session_init(&C, &err), CTQ_OK);
	select_one(&C, CTQ_PW_RANDOM, CTQ_PA_OUTLIERS);
	struct ctq_probe_layer L = {.name = "x", .K = 32, .N = 16};
	cr_assert_eq(ctq_probe_session_layer(&C, &L, C.wsel, C.asel, &err), CTQ_OK);
	cr_expect_eq(C.passed, 2);
	cr_expect_eq(C.failed, 0);
	ctq_probe_session_free(&C);
	ctq_backend_close(&b[0]);
}

Test(probe_session, a_checkpoint_probes_its_linears_then_their_geometries)
{
	char dir[] = "/tmp/ctq-probe-session-XXXXXX";
	cr_assert(mkdtemp(dir));
	char bf16[128], w8a8[128];
	snprintf(bf16, sizeof bf16, "%s/bf16", dir);
	snprintf(w8a8, sizeof w8a8, "%s/w8a8", dir);
	struct ctq_synth_spec spec;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&spec, "qwen3", "tiny", &err), CTQ_OK);
	cr_assert_eq(ctq_synth_write(&spec, bf16, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	struct ctq_quantize_result res;
	cr_assert_eq(ctq_quantize_checkpoint(bf16, w8a8, NULL, &res, &err), CTQ_OK, "%s", err.message);

	const char *models[] = {bf16, w8a8};
	for (int m = 0; m < 2; m++) {
		struct ctq_backend b[CTQ_PROBE_MAX_BACKENDS];
		memset(b, 0, sizeof b);
		int n = 0;
		cr_assert_eq(ctq_probe_backends_open(b, &n, true, false, NULL, 0, CTQ_ACT_NUMERICS_CTQ, &err),
			     CTQ_OK);
		struct ctq_probe_policy policy;
		ctq_probe_policy_default(&policy);
		const int64_t ms[] = {2};
		struct seen seen = {0};
		struct ctq_probe_session S = {.backends = b, .n_backends = n, .ms = ms, .n_m = 1,
					      .seed = 1, .policy = &policy, .on_result = collect,
					      .ctx = &seen};
		cr_assert_eq(ctq_probe_session_init(&S, &err), CTQ_OK);
		select_one(&S, CTQ_PW_CONSTANT, CTQ_PA_ZERO_ROWS);
		memset(S.real_asel, 0, sizeof S.real_asel);
		S.real_asel[CTQ_PA_GAUSSIAN] = true;
		cr_assert_eq(ctq_probe_session_model(&S, models[m], &err), CTQ_OK, "%s: %s", models[m],
			     err.message);
		/* tiny qwen3: 2 layers x 7 linears (q, k, v, o, gate, up, down)
		 * and lm_head, then the distinct (K, N): q and o 64:64, k and v
		 * 64:32, gate and up 64:176, down 176:64, lm_head 64:512 -> 5 */
		cr_expect_eq(seen.n, 15 + 5, "%s: %d results", models[m], seen.n);
		cr_expect(strstr(seen.layers[0], "layers.0.self_attn.q_proj"), "%s", seen.layers[0]);
		cr_expect(strstr(seen.layers[14], "lm_head"), "%s", seen.layers[14]);
		for (int i = 15; i < seen.n; i++)
			cr_expect(strchr(seen.layers[i], ':'), "%s", seen.layers[i]);
		cr_expect_str_eq(seen.layers[19], "64:512");
		cr_expect_eq(S.failed, 0, "%s", models[m]);
		ctq_probe_session_free(&S);
		ctq_backend_close(&b[0]);
	}
	char missing[160];
	snprintf(missing, sizeof missing, "%s/none", dir);
	struct ctq_probe_session S = {.n_m = 0};
	cr_assert_eq(ctq_probe_session_init(&S, &err), CTQ_OK);
	err = (struct ctq_error){0};
	cr_expect_eq(ctq_probe_session_model(&S, missing, &err), CTQ_ERR_IO);
	ctq_probe_session_free(&S);
	ctq_remove_tree(dir);
}

Test(probe_session, result_json_null_and_optional_members)
{
	struct ctq_probe_result r;
	memset(&r, 0, sizeof r);
	snprintf(r.layer, sizeof r.layer, "L");
	r.quant_rel_l2 = NAN;
	r.q_mismatch = r.s_mismatch = r.y_mismatch = -1;
	r.passed = true;
	cJSON *o = ctq_probe_result_json(&r);
	cr_assert(o);
	cr_expect(cJSON_IsNull(ctq_json_get(o, "quant_rel_l2")));
	cr_expect_null(ctq_json_get(o, "q_mismatch"));
	cr_expect_null(ctq_json_get(o, "y_mismatch"));
	cr_expect_null(ctq_json_get(o, "reason"), "a passed probe has no reason");
	cJSON_Delete(o);
	r.quant_rel_l2 = 0.25;
	r.q_mismatch = 3;
	r.s_mismatch = 0;
	r.y_mismatch = 5;
	r.passed = false;
	snprintf(r.reason, sizeof r.reason, "why");
	o = ctq_probe_result_json(&r);
	cr_assert(o);
	cr_expect_eq(ctq_json_get(o, "quant_rel_l2")->valuedouble, 0.25);
	cr_expect_eq(ctq_json_get(o, "q_mismatch")->valueint, 3);
	cr_expect_eq(ctq_json_get(o, "s_mismatch")->valueint, 0);
	cr_expect_eq(ctq_json_get(o, "y_mismatch")->valueint, 5);
	cr_expect_str_eq(ctq_json_get(o, "reason")->valuestring, "why");
	cJSON_Delete(o);
}
