/* Criterion tests for quant/loader: plan-driven loading of W8A8 and BF16
 * modules from safetensors checkpoints, every rejection with the module and
 * tensor in the error, and TP slices. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/fileio.h"
#include "helpers.h"
#include "checkpoint/loader.h"

/* hidden 8, 2 heads of 4, 1 kv head, intermediate 16, vocab 32. */
#define SHAPE "\"model_type\": \"qwen3\", \"num_hidden_layers\": 1, \"hidden_size\": 8, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 4, \"intermediate_size\": 16, \"vocab_size\": 32, \"tie_word_embeddings\": true"
#define W8A8_CFG "{" SHAPE ", \"quantization_config\": {\"format\": \"int-quantized\", \"config_groups\": {\"group_0\": " W8A8_SCHEME("[\"Linear\"]") "}, \"ignore\": [\"lm_head\"]}}"

struct fixture {
	char dir[64];
	struct ctq_st_writer w;
	int8_t i8[8][16 * 16];
	uint16_t bf16[8][32 * 16];
	uint16_t scale[8][32];
	int n_i8, n_bf16, n_scale;
};

static void add(struct fixture *f, const char *name, enum ctq_dtype dt, int64_t r, int64_t c,
		const void *data)
{
	struct ctq_error err = {0};
	int64_t shape[2] = {r, c};
	int nd = c ? 2 : 1;
	cr_assert_eq(ctq_st_writer_add(&f->w, name, dt, nd, shape, data,
				       (uint64_t)(r * (c ? c : 1)) * ctq_dtype_size(dt), &err), CTQ_OK,
		     "%s", err.message);
}

/* Adds a W8A8 linear: weight[n][k] = (n * 7 + k) % 100 - 50, scale (n+1)/1000. */
static void add_w8a8(struct fixture *f, const char *m, int64_t N, int64_t K, enum ctq_dtype sdt,
		     bool skip_scale)
{
	int8_t *w = f->i8[f->n_i8++];
	uint16_t *s = f->scale[f->n_scale++];
	for (int64_t n = 0; n < N; n++) {
		for (int64_t k = 0; k < K; k++)
			w[n * K + k] = (int8_t)((n * 7 + k) % 100 - 50);
		s[n] = ctq_f32_to_bf16((float)(n + 1) / 1000.0f);
	}
	char name[128];
	snprintf(name, sizeof name, "%s.weight", m);
	add(f, name, CTQ_DTYPE_I8, N, K, w);
	if (!skip_scale) {
		snprintf(name, sizeof name, "%s.weight_scale", m);
		add(f, name, sdt, N, 1, s);
	}
}

static void add_bf16(struct fixture *f, const char *name, int64_t N, int64_t K)
{
	uint16_t *w = f->bf16[f->n_bf16++];
	for (int64_t i = 0; i < N * (K ? K : 1); i++)
		w[i] = ctq_f32_to_bf16((float)(i % 13) / 13.0f);
	add(f, name, CTQ_DTYPE_BF16, N, K, w);
}

static void start(struct fixture *f)
{
	memset(f, 0, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "/tmp/ctq-loader-XXXXXX");
	cr_assert(mkdtemp(f->dir));
	ctq_st_writer_init(&f->w);
}

/* Every linear of the 1-layer model; `broken` names one to leave out. */
static void add_all(struct fixture *f, const char *broken)
{
	static const struct { const char *m; int64_t N, K; } lin[] = {
		{"model.layers.0.self_attn.q_proj", 8, 8}, {"model.layers.0.self_attn.k_proj", 4, 8},
		{"model.layers.0.self_attn.v_proj", 4, 8}, {"model.layers.0.self_attn.o_proj", 8, 8},
		{"model.layers.0.mlp.gate_proj", 16, 8},   {"model.layers.0.mlp.up_proj", 16, 8},
		{"model.layers.0.mlp.down_proj", 8, 16},
	};
	for (size_t i = 0; i < 7; i++)
		if (!broken || strcmp(broken, lin[i].m))
			add_w8a8(f, lin[i].m, lin[i].N, lin[i].K, CTQ_DTYPE_BF16, false);
	add_bf16(f, "model.embed_tokens.weight", 32, 8);
}

static void finish(struct fixture *f, const char *config, struct resolved *r, struct ctq_checkpoint *ck)
{
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_write(f->dir, &f->w, 0, &err), CTQ_OK, "%s", err.message);
	char path[128];
	snprintf(path, sizeof path, "%s/config.json", f->dir);
	cr_assert_eq(ctq_file_write_atomic(path, config, strlen(config), &err), CTQ_OK);
	memset(r, 0, sizeof *r);
	ctq_modules_init(&r->mods);
	cr_assert_eq(ctq_qconfig_load(&r->cfg, f->dir, NULL, &r->err), CTQ_OK, "%s", r->err.message);
	cr_assert_eq(ctq_modules_from_config(&r->mods, r->cfg.raw, "", NULL, &r->err), CTQ_OK);
	cr_assert_eq(ctq_plan_resolve(&r->plan, &r->cfg, &r->mods, CTQ_SEM_STRICT, NULL, &r->err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_open(ck, f->dir, &err), CTQ_OK, "%s", err.message);
}

static void stop(struct fixture *f, struct resolved *r, struct ctq_checkpoint *ck)
{
	ctq_checkpoint_close(ck);
	resolved_free(r);
	ctq_st_writer_free(&f->w);
	ctq_remove_tree(f->dir);
}

Test(loader, loads_every_module_of_a_w8a8_checkpoint)
{
	struct fixture f;
	struct resolved r;
	struct ctq_checkpoint ck;
	start(&f);
	add_all(&f, NULL);
	finish(&f, W8A8_CFG, &r, &ck);
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_load_check(&ck, &r.plan, &n, &err), CTQ_OK, "%s: %s", err.path, err.message);
	cr_expect_eq(n, 8, "7 projections and the tied lm_head");
	struct ctq_shard_plan sp;
	cr_assert_eq(ctq_shard_plan_build(&sp, &r.plan, 1, &err), CTQ_OK);
	struct ctq_linear l;
	long m = ctq_modules_find(&r.mods, "model.layers.0.mlp.down_proj");
	cr_assert_eq(ctq_load_linear(&ck, &r.plan, &sp, (size_t)m, 0, &l, &err), CTQ_OK);
	cr_expect(l.quantized);
	cr_expect_eq(l.N, 8);
	cr_expect_eq(l.K, 16);
	cr_expect_eq(l.w_i8[3 * 16 + 5], (int8_t)((3 * 7 + 5) % 100 - 50));
	cr_expect_eq(l.scale[3], ctq_bf16_to_f32(ctq_f32_to_bf16(4.0f / 1000.0f)));
	ctq_linear_free(&l);
	m = ctq_modules_find(&r.mods, "lm_head");
	cr_assert_eq(ctq_load_linear(&ck, &r.plan, &sp, (size_t)m, 0, &l, &err), CTQ_OK, "%s", err.message);
	cr_expect(!l.quantized && l.w_bf16 && l.N == 32 && l.K == 8, "tied lm_head reads the embedding");
	ctq_linear_free(&l);
	ctq_shard_plan_free(&sp);
	stop(&f, &r, &ck);
}

Test(loader, tp_slices_rows_columns_and_scales)
{
	struct fixture f;
	struct resolved r;
	struct ctq_checkpoint ck;
	start(&f);
	add_all(&f, NULL);
	finish(&f, W8A8_CFG, &r, &ck);
	struct ctq_error err = {0};
	struct ctq_shard_plan sp;
	cr_assert_eq(ctq_shard_plan_build(&sp, &r.plan, 2, &err), CTQ_OK, "%s", err.message);
	struct ctq_linear l;
	long q = ctq_modules_find(&r.mods, "model.layers.0.self_attn.q_proj");
	cr_assert_eq(ctq_load_linear(&ck, &r.plan, &sp, (size_t)q, 1, &l, &err), CTQ_OK);
	cr_expect_eq(l.N, 4);
	cr_expect_eq(l.w_i8[0], (int8_t)((4 * 7 + 0) % 100 - 50), "rank 1 starts at row 4");
	cr_expect_eq(l.scale[0], ctq_bf16_to_f32(ctq_f32_to_bf16(5.0f / 1000.0f)));
	ctq_linear_free(&l);
	long o = ctq_modules_find(&r.mods, "model.layers.0.self_attn.o_proj");
	cr_assert_eq(ctq_load_linear(&ck, &r.plan, &sp, (size_t)o, 1, &l, &err), CTQ_OK);
	cr_expect_eq(l.N, 8);
	cr_expect_eq(l.K, 4);
	cr_expect_eq(l.w_i8[2 * 4 + 1], (int8_t)((2 * 7 + 5) % 100 - 50), "rank 1 takes columns 4..8");
	cr_expect_eq(l.scale[7], ctq_bf16_to_f32(ctq_f32_to_bf16(8.0f / 1000.0f)), "row-parallel scales full");
	ctq_linear_free(&l);
	ctq_shard_plan_free(&sp);
	stop(&f, &r, &ck);
}

struct bad_case {
	const char *id;
	void (*mutate)(struct fixture *f);
	const char *path;     /* expected error path */
	const char *message;  /* substring */
};

static void no_scale(struct fixture *f)
{
	add_all(f, "model.layers.0.mlp.up_proj");
	add_w8a8(f, "model.layers.0.mlp.up_proj", 16, 8, CTQ_DTYPE_BF16, true);
}

static void missing_weight(struct fixture *f)
{
	add_all(f, "model.layers.0.mlp.up_proj");
}

static void zero_scale(struct fixture *f)
{
	add_all(f, "model.layers.0.mlp.up_proj");
	add_w8a8(f, "model.layers.0.mlp.up_proj", 16, 8, CTQ_DTYPE_BF16, true);
	uint16_t *s = f->scale[f->n_scale++];
	for (int i = 0; i < 16; i++)
		s[i] = ctq_f32_to_bf16(i == 9 ? 0.0f : 0.01f);
	add(f, "model.layers.0.mlp.up_proj.weight_scale", CTQ_DTYPE_BF16, 16, 1, s);
}

static void nan_scale(struct fixture *f)
{
	add_all(f, "model.layers.0.mlp.up_proj");
	add_w8a8(f, "model.layers.0.mlp.up_proj", 16, 8, CTQ_DTYPE_BF16, true);
	uint16_t *s = f->scale[f->n_scale++];
	for (int i = 0; i < 16; i++)
		s[i] = i == 2 ? 0x7fc0 : ctq_f32_to_bf16(-0.01f * (i == 5));
	add(f, "model.layers.0.mlp.up_proj.weight_scale", CTQ_DTYPE_BF16, 16, 1, s);
}

static void wrong_scale_shape(struct fixture *f)
{
	add_all(f, "model.layers.0.mlp.up_proj");
	add_w8a8(f, "model.layers.0.mlp.up_proj", 16, 8, CTQ_DTYPE_BF16, true);
	add(f, "model.layers.0.mlp.up_proj.weight_scale", CTQ_DTYPE_BF16, 8, 2, f->scale[0]);
}

static void bf16_weight_in_w8a8(struct fixture *f)
{
	add_all(f, "model.layers.0.mlp.up_proj");
	add_bf16(f, "model.layers.0.mlp.up_proj.weight", 16, 8);
	add(f, "model.layers.0.mlp.up_proj.weight_scale", CTQ_DTYPE_BF16, 16, 1, f->scale[0]);
}

static void wrong_weight_shape(struct fixture *f)
{
	add_all(f, "model.layers.0.mlp.up_proj");
	add_w8a8(f, "model.layers.0.mlp.up_proj", 8, 16, CTQ_DTYPE_BF16, false);
}

static void static_input_scale(struct fixture *f)
{
	add_all(f, NULL);
	add(f, "model.layers.0.mlp.up_proj.input_scale", CTQ_DTYPE_BF16, 1, 0, f->scale[0]);
}

static void nonzero_zero_point(struct fixture *f)
{
	add_all(f, NULL);
	int8_t *zp = f->i8[f->n_i8++];
	memset(zp, 0, 16);
	zp[3] = 1;
	add(f, "model.layers.0.mlp.up_proj.weight_zero_point", CTQ_DTYPE_I8, 16, 1, zp);
}

static void scale_on_unquantized_lm_head(struct fixture *f)
{
	add_all(f, NULL);
	add_w8a8(f, "lm_head", 32, 8, CTQ_DTYPE_BF16, false);
}

static const struct bad_case bad_cases[] = {
	{"missing-scale", no_scale, "model.layers.0.mlp.up_proj.weight_scale", "missing"},
	{"missing-weight", missing_weight, "model.layers.0.mlp.up_proj.weight", "missing"},
	{"zero-scale", zero_scale, "model.layers.0.mlp.up_proj.weight_scale", "channel 9 is 0"},
	{"nan-or-negative-scale", nan_scale, "model.layers.0.mlp.up_proj.weight_scale", "finite and positive"},
	{"scale-shape", wrong_scale_shape, "model.layers.0.mlp.up_proj.weight_scale", "[8, 2]"},
	{"bf16-weight-under-w8a8", bf16_weight_in_w8a8, "model.layers.0.mlp.up_proj.weight", "needs I8"},
	{"weight-shape", wrong_weight_shape, "model.layers.0.mlp.up_proj.weight", "expected [16, 8]"},
	{"static-input-scale", static_input_scale, "model.layers.0.mlp.up_proj.input_scale", "dynamically"},
	{"nonzero-zero-point", nonzero_zero_point, "model.layers.0.mlp.up_proj.weight_zero_point", "non-zero"},
	{"quantized-unquantized-module", scale_on_unquantized_lm_head, "lm_head.weight_scale", "unquantized"},
};

Test(loader, rejections_name_module_and_tensor)
{
	for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
		const struct bad_case *c = &bad_cases[i];
		struct fixture f;
		struct resolved r;
		struct ctq_checkpoint ck;
		start(&f);
		c->mutate(&f);
		finish(&f, W8A8_CFG, &r, &ck);
		size_t n = 0;
		struct ctq_error err = {0};
		cr_expect_eq(ctq_load_check(&ck, &r.plan, &n, &err), CTQ_ERR_CHECKPOINT, "loader/%s: %s",
			     c->id, err.message);
		cr_expect_str_eq(err.path, c->path, "loader/%s", c->id);
		cr_expect(strstr(err.message, c->message), "loader/%s: %s", c->id, err.message);
		stop(&f, &r, &ck);
	}
}

Test(loader, stale_all_zero_zero_points_are_ignored)
{
	struct fixture f;
	struct resolved r;
	struct ctq_checkpoint ck;
	start(&f);
	add_all(&f, NULL);
	int8_t *zp = f.i8[f.n_i8++];
	memset(zp, 0, 16);
	add(&f, "model.layers.0.mlp.up_proj.weight_zero_point", CTQ_DTYPE_I8, 16, 1, zp);
	finish(&f, W8A8_CFG, &r, &ck);
	size_t n = 0;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_load_check(&ck, &r.plan, &n, &err), CTQ_OK, "%s", err.message);
	stop(&f, &r, &ck);
}

#include "conform/tpcheck.h"

Test(loader, tp2_reproduces_tp1_numerically)
{
	struct fixture f;
	struct resolved r;
	struct ctq_checkpoint ck;
	start(&f);
	add_all(&f, NULL);
	finish(&f, W8A8_CFG, &r, &ck);
	for (size_t i = 0; i < r.mods.n; i++) {
		if (r.mods.v[i].kind != CTQ_MODULE_LINEAR)
			continue;
		struct ctq_tp_result t;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_tp_check_linear(&ck, &r.plan, i, 2, 5, 11, &t, &err), CTQ_OK, "%s", err.message);
		cr_expect(t.passed, "%s", t.reason);
		if (t.quantized)
			cr_expect(t.int32_exact, "%s", t.module);
	}
	stop(&f, &r, &ck);
}
