/* CUDA runner tests: the same tiny synthetic checkpoints on the CUDA backend
 * (BF16 activations) and on the reference backend (f32), BF16 and W8A8, and
 * against Hugging Face transformers' goldens when CTQ_FIXTURES holds them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "eval/calib.h"
#include "model/runner.h"
#include "checkpoint/quantize.h"
#include "checkpoint/synth.h"

#define T_TOK 24

static const struct ctq_runner_options opts = {.max_slots = 4, .max_len = 64, .max_tokens = 32};

static void make_model(char *dir, size_t cap, const char *arch, const char *qdir)
{
	snprintf(dir, cap, "/tmp/ctq-gpu-runner-XXXXXX");
	cr_assert(mkdtemp(dir));
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, arch, "tiny", &err), CTQ_OK);
	s.seed = 1;
	cr_assert_eq(ctq_synth_write(&s, dir, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	if (qdir) {
		struct ctq_quantize_result res;
		memset(&res, 0, sizeof res);
		cr_assert_eq(ctq_quantize_checkpoint(dir, qdir, NULL, &res, &err), CTQ_OK, "%s", err.message);
		ctq_quantize_result_free(&res);
	}
}

static float *logits_fused(const char *backend, const char *dir, bool no_graphs, bool no_fuse)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_open(&b, backend, &err), CTQ_OK, "%s", err.message);
	struct ctq_runner r;
	struct ctq_runner_options o = opts;
	o.no_graphs = no_graphs;
	o.no_fuse = no_fuse;
	cr_assert_eq(ctq_runner_load(&r, &b, dir, &o, &err), CTQ_OK, "%s", err.message);
	int64_t V = r.cfg.vocab;
	int32_t ids[T_TOK], slot[T_TOK] = {0}, pos[T_TOK];
	int64_t rows[T_TOK];
	for (int i = 0; i < T_TOK; i++)
		ids[i] = (int32_t)((i * 37 + 11) % V), pos[i] = i, rows[i] = i;
	float *lg = malloc((size_t)(T_TOK * V) * 4);
	/* Prefill 16, then decode: exercises the cache on the device too. */
	cr_assert_eq(ctq_runner_forward(&r, ids, slot, pos, 16, rows, 16, lg, &err), CTQ_OK, "%s", err.message);
	for (int t = 16; t < T_TOK; t++) {
		int64_t z = 0;
		cr_assert_eq(ctq_runner_forward(&r, &ids[t], slot, &pos[t], 1, &z, 1, lg + t * V, &err), CTQ_OK);
	}
	/* The 16-token prefill (every row's logits) and the 8 decode steps. */
	if (!strcmp(backend, "cuda") && !no_graphs)
		cr_expect_eq(r.graph_replays, T_TOK - 16 + 1, "graph replays %lld, expected %d",
			     (long long)r.graph_replays, T_TOK - 16 + 1);
	ctq_runner_free(&r);
	ctq_backend_close(&b);
	return lg;
}

static float *logits_with(const char *backend, const char *dir, bool no_graphs)
{
	return logits_fused(backend, dir, no_graphs, false);
}

static float *logits_on(const char *backend, const char *dir)
{
	return logits_with(backend, dir, false);
}

static double rel_l2(const float *a, const float *b, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)a[i] - b[i];
		num += d * d;
		den += (double)b[i] * b[i];
	}
	return sqrt(num / den);
}

Test(runner_gpu, cuda_matches_reference_and_transformers, .timeout = 300)
{
	static const char *const archs[] = {"qwen3", "qwen2", "llama"};
	const char *fx = getenv("CTQ_FIXTURES");
	for (int a = 0; a < 3; a++) {
		char dir[64], qdir[96];
		snprintf(qdir, sizeof qdir, "/tmp/ctq-gpu-runner-w8a8-%s-%d", archs[a], (int)getpid());
		make_model(dir, sizeof dir, archs[a], qdir);
		float *ref = logits_on("reference", dir), *gpu = logits_on("cuda", dir);
		float *ref8 = logits_on("reference", qdir), *gpu8 = logits_on("cuda", qdir);
		const size_t n = (size_t)T_TOK * 512;
		double d16 = rel_l2(gpu, ref, n), d8 = rel_l2(gpu8, ref8, n), dq = rel_l2(gpu8, gpu, n);
		printf("%s: cuda vs reference BF16 %.3e, W8A8 %.3e; W8A8 vs BF16 on cuda %.3e\n", archs[a],
		       d16, d8, dq);
		/* BF16 activations against f32 ones through two layers: BF16
		 * rounding, ~2^-8. Under W8A8 the differently rounded activations
		 * also flip int8 roundings (one 1/127 step each) before every
		 * linear, so the bound doubles. */
		cr_expect(d16 < 1e-2, "%s BF16: cuda vs reference rel-L2 %g", archs[a], d16);
		cr_expect(d8 < 2e-2, "%s W8A8: cuda vs reference rel-L2 %g", archs[a], d8);
		if (fx) {
			char path[512];
			snprintf(path, sizeof path, "%s/oracle/hf-logits-%s-tiny.json", fx, archs[a]);
			cJSON *g = NULL;
			struct ctq_error err = {0};
			if (ctq_json_load_file(path, 64u << 20, NULL, &g, &err) == CTQ_OK) {
				float *hf = malloc(n * 4);
				int t = 0;
				for (const cJSON *row = ctq_json_get(g, "logits")->child; row && t < T_TOK; row = row->next, t++) {
					int v = 0;
					for (const cJSON *x = row->child; x && v < 512; x = x->next, v++)
						hf[t * 512 + v] = (float)x->valuedouble;
				}
				double dh = rel_l2(gpu, hf, n);
				printf("%s: cuda vs transformers rel-L2 %.3e\n", archs[a], dh);
				cr_expect(dh <= 1e-2, "%s: cuda vs transformers rel-L2 %g", archs[a], dh);
				free(hf);
				cJSON_Delete(g);
			}
		}
		free(ref), free(gpu), free(ref8), free(gpu8);
		ctq_remove_tree(dir);
		ctq_remove_tree(qdir);
	}
}

Test(runner_gpu, graph_replay_equals_direct_launches, .timeout = 120)
{
	char dir[64], qdir[96];
	snprintf(qdir, sizeof qdir, "/tmp/ctq-gpu-graph-w8a8-%d", (int)getpid());
	make_model(dir, sizeof dir, "qwen3", qdir);
	const char *dirs[2] = {dir, qdir};
	for (int i = 0; i < 2; i++) {
		float *g = logits_with("cuda", dirs[i], false), *d = logits_with("cuda", dirs[i], true);
		cr_expect(!memcmp(g, d, (size_t)T_TOK * 512 * 4), "%s: graph replay differs from direct launches",
			  i ? "W8A8" : "BF16");
		free(g), free(d);
	}
	ctq_remove_tree(dir);
	ctq_remove_tree(qdir);
}

/* The fused W8A8 producers (quantization inside RMSNorm and SiLU·mul) give
 * the same bits as the op then the quantization kernel, on the GPU too. */
Test(runner_gpu, fused_producers_bit_identical_on_the_gpu, .timeout = 120)
{
	static const char *archs[] = {"qwen3", "qwen2", "llama"};
	for (int a = 0; a < 3; a++) {
		char dir[64], qdir[96];
		snprintf(qdir, sizeof qdir, "/tmp/ctq-gpu-fuse-%s-%d", archs[a], (int)getpid());
		make_model(dir, sizeof dir, archs[a], qdir);
		float *f = logits_fused("cuda", qdir, false, false), *p = logits_fused("cuda", qdir, false, true);
		int64_t V = 0; /* the vocabulary, from the checkpoint */
		{
			struct ctq_backend b;
			struct ctq_error err = {0};
			struct ctq_runner r;
			cr_assert_eq(ctq_backend_open(&b, "reference", &err), CTQ_OK);
			cr_assert_eq(ctq_runner_load(&r, &b, qdir, &opts, &err), CTQ_OK, "%s", err.message);
			V = r.cfg.vocab;
			ctq_runner_free(&r);
			ctq_backend_close(&b);
		}
		const size_t n = (size_t)(T_TOK * V);
		cr_expect(!memcmp(f, p, n * sizeof *f), "%s: fused and unfused CUDA logits differ (rel-L2 %g)",
			  archs[a], rel_l2(f, p, n));
		free(f);
		free(p);
		ctq_remove_tree(dir);
		ctq_remove_tree(qdir);
	}
}

/* ctq_runner_forward_next picks on the device (rows_argmax): the same
 * tokens as ctq_argmax over the logits ctq_runner_forward returns, in the
 * graph path (every row, T <= 64) and in the lm_head-on-chosen-rows path,
 * BF16 and W8A8. */
Test(runner_gpu, device_pick_equals_host_argmax, .timeout = 120)
{
	char dir[64], qdir[96];
	snprintf(qdir, sizeof qdir, "/tmp/ctq-gpu-pick-w8a8-%d", (int)getpid());
	make_model(dir, sizeof dir, "qwen3", qdir);
	const char *dirs[2] = {dir, qdir};
	for (int m = 0; m < 2; m++) {
		struct ctq_backend b;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_backend_open(&b, "cuda", &err), CTQ_OK, "%s", err.message);
		cr_assert(b.ops->rows_argmax, "the CUDA backend has no rows_argmax");
		struct ctq_runner r;
		cr_assert_eq(ctq_runner_load(&r, &b, dirs[m], &opts, &err), CTQ_OK, "%s", err.message);
		const int64_t V = r.cfg.vocab;
		int32_t ids[T_TOK], slot[T_TOK], pos[T_TOK], next[T_TOK];
		int64_t all[T_TOK], last[4];
		for (int i = 0; i < T_TOK; i++)
			ids[i] = (int32_t)((i * 53 + 7) % V), slot[i] = i % 4, pos[i] = i / 4, all[i] = i;
		float *lg = malloc((size_t)(T_TOK * V) * 4);
		cr_assert(lg);
		/* every row (the graph path), twice: capture, then replay */
		for (int rep = 0; rep < 2; rep++) {
			cr_assert_eq(ctq_runner_forward(&r, ids, slot, pos, 8, all, 8, lg, &err), CTQ_OK, "%s",
				     err.message);
			cr_assert_eq(ctq_runner_forward_next(&r, ids, slot, pos, 8, all, 8, next, &err), CTQ_OK,
				     "%s", err.message);
			for (int i = 0; i < 8; i++)
				cr_expect_eq(next[i], ctq_argmax(lg + i * V, V), "%s row %d: device pick %d, host %d",
					     m ? "W8A8" : "BF16", i, next[i], ctq_argmax(lg + i * V, V));
		}
		/* chosen rows of a longer prefill (lm_head on those rows only) */
		for (int s = 0; s < 4; s++)
			last[s] = T_TOK - 4 + s;
		cr_assert_eq(ctq_runner_forward(&r, ids, slot, pos, T_TOK, last, 4, lg, &err), CTQ_OK);
		cr_assert_eq(ctq_runner_forward_next(&r, ids, slot, pos, T_TOK, last, 4, next, &err), CTQ_OK);
		for (int i = 0; i < 4; i++)
			cr_expect_eq(next[i], ctq_argmax(lg + i * V, V), "%s prefill row %d: device pick %d, host %d",
				     m ? "W8A8" : "BF16", i, next[i], ctq_argmax(lg + i * V, V));
		free(lg);
		ctq_runner_free(&r);
		ctq_backend_close(&b);
	}
	ctq_remove_tree(dir);
	ctq_remove_tree(qdir);
}

/* Calibration on CUDA (BF16 activations, the observer and the layer-wise
 * hook given host f32 copies) against the reference's (f32) on the same
 * windows: SmoothQuant's per-channel ranges agree to about BF16 precision
 * (and differ somewhere: the CUDA run really ran in BF16), GPTQ's scales
 * are the weights' own (equal) and its roundings mostly agree. */
Test(runner_gpu, calibration_on_cuda_tracks_the_reference, .timeout = 300)
{
	char dir[64];
	make_model(dir, sizeof dir, "qwen3", NULL);
	enum { N_WIN = 4, LEN = 64 };
	int32_t ids[N_WIN * LEN];
	for (int i = 0; i < N_WIN * LEN; i++)
		ids[i] = (int32_t)((i * 7919 + 13) % 512); /* tiny: vocabulary 512 */
	struct ctq_error err = {0};
	struct ctq_smooth_stats a, c;
	cr_assert_eq(ctq_calib_smooth_stats(dir, "reference", ids, N_WIN, LEN, &a, &err), CTQ_OK, "%s",
		     err.message);
	cr_assert_eq(ctq_calib_smooth_stats(dir, "cuda", ids, N_WIN, LEN, &c, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(a.n_rows, c.n_rows);
	cr_assert_eq(a.layers, c.layers);
	const size_t cells = (size_t)(a.layers * CTQ_SMOOTH_N_MAPPINGS * a.hidden);
	double worst = 0.0;
	for (size_t i = 0; i < cells; i++) {
		const double range = (double)a.max[i] - a.min[i];
		cr_assert(range > 0, "channel %zu never varied", i);
		const double d = fmax(fabs((double)a.max[i] - c.max[i]), fabs((double)a.min[i] - c.min[i])) / range;
		worst = fmax(worst, d);
	}
	cr_log_info("smoothquant ranges, cuda vs reference: worst channel differs by %.4g of its range", worst);
	cr_expect(worst < 0.05, "a channel's min or max differs by %.4g of its range", worst);
	cr_expect(worst > 0.0, "the CUDA statistics equal the reference's to the bit: no BF16 run?");
	ctq_smooth_stats_free(&a);
	ctq_smooth_stats_free(&c);

	struct ctq_calib_gptq_options o = {.dampening_frac = CTQ_GPTQ_DEFAULT_DAMPENING,
					   .block_size = CTQ_GPTQ_DEFAULT_BLOCK, .actorder = true,
					   .backend = "reference"};
	struct ctq_calib_gptq_result gr, gc;
	cr_assert_eq(ctq_calib_gptq(dir, NULL, 0, ids, N_WIN, LEN, &o, &gr, &err), CTQ_OK, "%s", err.message);
	o.backend = "cuda";
	cr_assert_eq(ctq_calib_gptq(dir, NULL, 0, ids, N_WIN, LEN, &o, &gc, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(gr.n_mods, gc.n_mods);
	cr_assert_eq(gc.n_tokens, (int64_t)N_WIN * LEN);
	cr_assert_eq(gc.n_fallback, 0);
	int64_t total = 0, same = 0, far = 0;
	double sum_abs = 0.0;
	for (size_t m = 0; m < gr.n_mods; m++) {
		const struct ctq_calib_gptq_module *x = &gr.mods[m], *y = &gc.mods[m];
		cr_assert_str_eq(x->name, y->name);
		cr_assert(x->N == y->N && x->K == y->K && x->dtype == y->dtype);
		cr_assert_eq(memcmp(x->scale, y->scale, (size_t)x->N * ctq_dtype_size(x->dtype)), 0,
			     "%s: the scales are the weights' and must not depend on the backend", x->name);
		for (int64_t k = 0; k < x->N * x->K; k++) {
			const int dq = abs((int)x->q[k] - (int)y->q[k]);
			same += dq == 0;
			far += dq > 2;
			sum_abs += dq;
			total++;
		}
	}
	cr_log_info("gptq, cuda vs reference: %.4f of %lld q equal, mean |dq| %.4f, %lld off by more than 2",
		    (double)same / (double)total, (long long)total, sum_abs / (double)total, (long long)far);
	cr_expect((double)same / (double)total > 0.8, "only %.4f of the GPTQ q agree", (double)same / (double)total);
	cr_expect(sum_abs / (double)total < 0.3, "mean |dq| %.4f", sum_abs / (double)total);
	ctq_calib_gptq_result_free(&gr);
	ctq_calib_gptq_result_free(&gc);
}
