/* Tensor parallelism across GPUs of one host (NCCL all-reduce after the
 * row-parallel o_proj and down_proj): tp 2 against tp 1 on the same
 * checkpoints, BF16, W8A8 and hybrid. Skips visibly with fewer than two GPUs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "model/runner.h"
#include "checkpoint/quantize.h"
#include "checkpoint/synth.h"

#define T_PRE 16
#define T_DEC 16

static const struct ctq_runner_options base = {.max_slots = 2, .max_len = 64, .max_tokens = 32};

/* Prefill T_PRE tokens then T_DEC greedy steps on tp ranks (GPUs 0..tp-1);
 * returns every position's logits (T_PRE + T_DEC, V) and the greedy tokens. */
static float *run_tp(const char *dir, int tp, int32_t *greedy, int64_t *V_out)
{
	struct ctq_backend b[2];
	struct ctq_runner r[2];
	struct ctq_error err = {0};
	for (int k = 0; k < tp; k++)
		cr_assert_eq(ctq_backend_cuda(&b[k], k, &err), CTQ_OK, "%s", err.message);
	if (tp > 1)
		cr_assert_eq(ctq_backend_cuda_tp_init(b, tp, &err), CTQ_OK, "%s", err.message);
	for (int k = 0; k < tp; k++) {
		struct ctq_runner_options o = base;
		o.tp = tp;
		o.rank = k;
		cr_assert_eq(ctq_runner_load(&r[k], &b[k], dir, &o, &err), CTQ_OK, "rank %d: %s", k, err.message);
	}
	int64_t V = r[0].cfg.vocab;
	*V_out = V;
	float *lg = malloc((size_t)((T_PRE + T_DEC) * V) * 4);
	int32_t ids[T_PRE], slot[T_PRE] = {0}, pos[T_PRE];
	int64_t rows[T_PRE];
	for (int i = 0; i < T_PRE; i++)
		ids[i] = (int32_t)((i * 37 + 11) % V), pos[i] = i, rows[i] = i;
	cr_assert_eq(ctq_runner_tp_forward(r, tp, ids, slot, pos, T_PRE, rows, T_PRE, lg, &err), CTQ_OK, "%s",
		     err.message);
	for (int s = 0; s < T_DEC; s++) {
		const float *last = lg + (T_PRE - 1 + s) * V;
		int32_t best = 0;
		for (int64_t v = 1; v < V; v++)
			if (last[v] > last[best])
				best = (int32_t)v;
		greedy[s] = best;
		int32_t p = T_PRE + s, z32 = 0;
		int64_t z = 0;
		cr_assert_eq(ctq_runner_tp_forward(r, tp, &best, &z32, &p, 1, &z, 1, lg + (T_PRE + s) * V, &err),
			     CTQ_OK, "%s", err.message);
	}
	for (int k = 0; k < tp; k++) {
		ctq_runner_free(&r[k]);
		ctq_backend_close(&b[k]);
	}
	return lg;
}

static void make(const char *arch, const char *preset, long layers, char *dir, size_t cap,
		 const char *qdir, const char *ignore)
{
	snprintf(dir, cap, "/tmp/ctq-tp-gpu-XXXXXX");
	cr_assert(mkdtemp(dir));
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, arch, preset, &err), CTQ_OK);
	s.seed = 5;
	if (layers)
		s.num_hidden_layers = layers;
	cr_assert_eq(ctq_synth_write(&s, dir, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	if (qdir) {
		const char *ign[1] = {ignore};
		struct ctq_quantize_options qo = {.ignore = ign, .n_ignore = ignore ? 1 : 0};
		struct ctq_quantize_result res;
		memset(&res, 0, sizeof res);
		cr_assert_eq(ctq_quantize_checkpoint(dir, qdir, &qo, &res, &err), CTQ_OK, "%s", err.message);
		ctq_quantize_result_free(&res);
	}
}

Test(tp_gpu, tp2_matches_tp1, .timeout = 600)
{
	struct ctq_backend probe;
	struct ctq_error err = {0};
	if (ctq_backend_cuda(&probe, 1, &err))
		cr_skip_test("needs two GPUs: %s", err.message);
	ctq_backend_close(&probe);
	static const struct { const char *arch, *preset; long layers; int quant; const char *ignore; } cases[] = {
		{"qwen2", "tiny", 0, 0, NULL},
		{"qwen2", "tiny", 0, 1, NULL},
		{"llama", "tiny", 0, 1, "model.layers.0.self_attn.o_proj"},
		{"qwen3", "qwen3-0.6b-shape", 2, 0, NULL},
		{"qwen3", "qwen3-0.6b-shape", 2, 1, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char dir[64], qdir[96];
		snprintf(qdir, sizeof qdir, "/tmp/ctq-tp-gpu-q-%zu-%d", i, (int)getpid());
		make(cases[i].arch, cases[i].preset, cases[i].layers, dir, sizeof dir, cases[i].quant ? qdir : NULL,
		     cases[i].ignore);
		const char *m = cases[i].quant ? qdir : dir;
		int32_t g1[T_DEC], g2[T_DEC];
		int64_t V;
		float *a = run_tp(m, 1, g1, &V), *b = run_tp(m, 2, g2, &V);
		double num = 0, den = 0;
		int agree = 0, same = 0;
		for (int t = 0; t < T_PRE + T_DEC; t++) {
			int64_t x = 0, y = 0;
			for (int64_t v = 0; v < V; v++) {
				double d = (double)b[t * V + v] - a[t * V + v];
				num += d * d;
				den += (double)a[t * V + v] * a[t * V + v];
				if (a[t * V + v] > a[t * V + x])
					x = v;
				if (b[t * V + v] > b[t * V + y])
					y = v;
			}
			agree += x == y;
		}
		for (int s = 0; s < T_DEC; s++)
			same += g1[s] == g2[s];
		double rel = sqrt(num / den);
		printf("tp2 vs tp1 %s %s%s%s: logits rel-L2 %.3e, top-1 agreement %d/%d, greedy tokens %d/%d identical\n",
		       cases[i].arch, cases[i].preset, cases[i].quant ? " W8A8" : " BF16",
		       cases[i].ignore ? " hybrid" : "", rel, agree, T_PRE + T_DEC, same, T_DEC);
		/* BF16 partial sums all-reduced in BF16 against one GEMM; W8A8 ranks
		 * also quantize their own o/down input slices per token. */
		cr_expect(rel < (cases[i].quant ? 3e-2 : 1e-2), "%s: rel-L2 %g", cases[i].arch, rel);
		free(a), free(b);
		ctq_remove_tree(dir);
		if (cases[i].quant)
			ctq_remove_tree(qdir);
	}
}
