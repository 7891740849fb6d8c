/* Criterion tests for checkpoint/packed (compressed-tensors pack-quantized
 * tensors) and `ctq quantize --scheme w8a16|w4a16`: the packer's words
 * against the library's documented examples, pack / unpack round trips
 * (padding, both packed dimensions), a module's tensors validated on read,
 * and quantized tiny models read back and dequantized against their
 * source. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/packed.h"
#include "checkpoint/quantize_wna16.h"
#include "checkpoint/safetensors.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/numerics.h"
#include "harness/commands.h"
#include "quant/resolve.h"
#include "checkpoint/target.h"

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/ctq-packed-XXXXXX";
	cr_assert(mkdtemp(tmpl), "mkdtemp");
	return strdup(tmpl);
}

static int run_cmd(int (*cmd)(int, char **), const char *name, const char *const *args)
{
	char *argv[40];
	int argc = 0;
	argv[argc++] = (char *)name;
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	return cmd(argc, argv);
}

/* pack_to_int32's docstring: 8-bit [1, 2] -> 33409; 4-bit -8..-1 are
 * u = 0..7, nibble j at bits 4j: 0x76543210; a short row pads with u = 0. */
Test(packed, words_match_the_library)
{
	const int8_t q8[2] = {1, 2};
	int32_t w;
	ctq_pack_rows(q8, 1, 2, 8, &w);
	cr_expect_eq(w, 33409);
	const int8_t q4[8] = {-8, -7, -6, -5, -4, -3, -2, -1};
	ctq_pack_rows(q4, 1, 8, 4, &w);
	cr_expect_eq((uint32_t)w, 0x76543210u);
	const int8_t q1[1] = {7};
	ctq_pack_rows(q1, 1, 1, 4, &w);
	cr_expect_eq((uint32_t)w, 0xfu);
	/* 8-bit 127 in the top byte: the word's sign bit (int32 wraps). */
	const int8_t q8b[4] = {0, 0, 0, 127};
	ctq_pack_rows(q8b, 1, 4, 8, &w);
	cr_expect_eq((uint32_t)w, 0xff808080u);
	/* dim 0: the column's consecutive rows share a word. */
	const int8_t z[3 * 2] = {1, -8, 2, 0, 3, 7}; /* (3, 2) */
	int32_t zp[2];                                /* (1, 2) */
	ctq_pack_dim0(z, 3, 2, 4, zp);
	cr_expect_eq((uint32_t)zp[0], 0xba9u);
	cr_expect_eq((uint32_t)zp[1], 0xf80u);
}

Test(packed, round_trips_every_width_and_padding)
{
	static const int bits[] = {4, 8};
	uint32_t seed = 7;
	for (size_t b = 0; b < 2; b++)
		for (int64_t cols = 1; cols <= 37; cols += 3) {
			const int64_t rows = 5, words = ctq_pack_words(cols, bits[b]);
			int8_t q[5 * 37], back[5 * 37];
			int32_t p[5 * 37], pz[37 * 37];
			for (int64_t i = 0; i < rows * cols; i++) {
				seed = seed * 1664525u + 1013904223u;
				q[i] = (int8_t)(ctq_wna16_qmin(bits[b]) +
						(int)((seed >> 8) % (uint32_t)(1 << bits[b])));
			}
			ctq_pack_rows(q, rows, cols, bits[b], p);
			ctq_unpack_rows(p, rows, cols, bits[b], back);
			cr_expect(!memcmp(q, back, (size_t)(rows * cols)), "rows bits %d cols %lld",
				  bits[b], (long long)cols);
			for (int64_t r = 0; r < rows; r++)
				for (int64_t k = 0; k < cols; k++)
					cr_expect_eq(ctq_pack_get(p + r * words, k, bits[b]), q[r * cols + k]);
			/* dim 0: cols rows of 5 columns */
			ctq_pack_dim0(q, cols, rows, bits[b], pz);
			memset(back, 0, sizeof back);
			ctq_unpack_dim0(pz, cols, rows, bits[b], back);
			cr_expect(!memcmp(q, back, (size_t)(rows * cols)), "dim0 bits %d rows %lld",
				  bits[b], (long long)cols);
		}
}

Test(packed, numerics_of_the_asymmetric_grid)
{
	/* [-1, 3] on 4 bits: s = 4 / 15, z = rint(-8 + 3.75) = -4 */
	const float s = ctq_wna16_scale_asym(-1.0f, 3.0f, 4);
	cr_expect_float_eq(s, 4.0f / 15.0f, 1e-7f);
	const int z = ctq_wna16_zero_point(-1.0f, s, 4);
	cr_expect_eq(z, -4);
	cr_expect_eq(ctq_wna16_quantize_asym(-1.0f, s, z, 4), -8);
	cr_expect_eq(ctq_wna16_quantize_asym(3.0f, s, z, 4), 7);
	cr_expect_eq(ctq_wna16_quantize_asym(0.0f, s, z, 4), z);
	cr_expect_eq(ctq_wna16_quantize_asym(100.0f, s, z, 4), 7);
	cr_expect_eq(ctq_wna16_quantize_asym(NAN, s, z, 4), z);
	cr_expect_eq(ctq_wna16_dequant(z, z, s), 0.0f);
	/* all positive: lo widens to 0, so 0 is on the grid (z = qmin) */
	const float s2 = ctq_wna16_scale_asym(1.0f, 2.0f, 8);
	cr_expect_eq(ctq_wna16_zero_point(1.0f, s2, 8), -128);
	/* all zero: the clamped minimum scale, never 0 */
	cr_expect_gt(ctq_wna16_scale_asym(0.0f, 0.0f, 4), 0.0f);
}

/* ---- one module's tensors, validated on read ------------------------------ */

struct bad_case {
	const char *id;
	const char *drop;       /* suffix of a tensor left out, or NULL */
	int packed_cols;        /* weight_packed's columns (1 is right for K = 8, 4 bits) */
	int scale_cols;         /* weight_scale's columns (2 is right for group 4) */
	bool asym;              /* read as asymmetric */
	bool nonzero_zp;        /* write a non-zero weight_zero_point */
	bool nan_scale;
	const char *path_suffix, *message;
};

static const struct bad_case bad_cases[] = {
	{"good", NULL, 1, 2, false, false, false, NULL, NULL},
	{"no-shape", "weight_shape", 1, 2, false, false, false, "weight_shape", "missing"},
	{"no-packed", "weight_packed", 1, 2, false, false, false, "weight_packed", "missing"},
	{"packed-cols", NULL, 2, 2, false, false, false, "weight_packed", "expected I32 [3, 1]"},
	{"scale-groups", NULL, 1, 1, false, false, false, "weight_scale", "expected a float [3, 2]"},
	{"asym-no-zp", NULL, 1, 2, true, false, false, "weight_zero_point", "missing"},
	{"sym-nonzero-zp", NULL, 1, 2, false, true, false, "weight_zero_point", "non-zero"},
	{"nan-scale", NULL, 1, 2, false, false, true, "weight_scale", "finite positive"},
};

Test(packed, read_validates_every_tensor)
{
	char *dir = make_tmpdir();
	for (size_t c = 0; c < sizeof bad_cases / sizeof *bad_cases; c++) {
		const struct bad_case *bc = &bad_cases[c];
		struct ctq_st_writer w;
		struct ctq_error err = {0};
		ctq_st_writer_init(&w);
		const int64_t nk[2] = {3, 8};
		int32_t packed[3 * 2] = {0x12345678, 0, 0x0, 0, 0x7f, 0};
		float scale[3 * 2] = {0.5f, 0.25f, 1.0f, 2.0f, 0.125f, 4.0f};
		if (bc->nan_scale)
			scale[3] = NAN;
		int32_t zp[1 * 2] = {0x1, 0};
		const int64_t s_shape[1] = {2}, p_shape[2] = {3, bc->packed_cols},
			      sc_shape[2] = {3, bc->scale_cols}, z_shape[2] = {1, 2};
		if (!bc->drop || strcmp(bc->drop, "weight_shape"))
			cr_assert_eq(ctq_st_writer_add(&w, "m.weight_shape", CTQ_DTYPE_I64, 1, s_shape, nk,
						       sizeof nk, &err), CTQ_OK);
		if (!bc->drop || strcmp(bc->drop, "weight_packed"))
			cr_assert_eq(ctq_st_writer_add(&w, "m.weight_packed", CTQ_DTYPE_I32, 2, p_shape,
						       packed, (uint64_t)(3 * bc->packed_cols) * 4, &err),
				     CTQ_OK);
		cr_assert_eq(ctq_st_writer_add(&w, "m.weight_scale", CTQ_DTYPE_F32, 2, sc_shape, scale,
					       (uint64_t)(3 * bc->scale_cols) * 4, &err), CTQ_OK);
		if (bc->nonzero_zp)
			cr_assert_eq(ctq_st_writer_add(&w, "m.weight_zero_point", CTQ_DTYPE_I32, 2, z_shape,
						       zp, sizeof zp, &err), CTQ_OK);
		char *path = ctq_path_join(dir, "model.safetensors");
		cr_assert_eq(ctq_st_writer_write(&w, path, &err), CTQ_OK, "%s", err.message);
		free(path);
		ctq_st_writer_free(&w);

		struct ctq_checkpoint ck;
		cr_assert_eq(ctq_checkpoint_open(&ck, dir, &err), CTQ_OK, "%s: %s", bc->id, err.message);
		const struct ctq_packed_args a = {.bits = 4, .group_size = 4, .asym = bc->asym};
		struct ctq_packed_module m;
		struct ctq_error e = {0};
		enum ctq_status st = ctq_packed_read(&ck, "m", &a, &m, &e);
		if (!bc->message) {
			cr_expect_eq(st, CTQ_OK, "%s: %s", bc->id, e.message);
			cr_expect_eq(m.N, 3);
			cr_expect_eq(m.K, 8);
			/* 0x12345678: u = 8,7,6,5,4,3,2,1 -> q = 0,-1,...,-7 */
			for (int k = 0; k < 8; k++)
				cr_expect_eq(m.q[k], -k, "q[0][%d]", k);
			float row[8];
			ctq_packed_dequant_row(&m, 0, row);
			cr_expect_eq(row[1], -0.5f);
			cr_expect_eq(row[5], -1.25f);
			ctq_packed_free(&m);
		} else {
			cr_expect_eq(st, CTQ_ERR_CHECKPOINT, "%s", bc->id);
			char want[64];
			snprintf(want, sizeof want, "m.%s", bc->path_suffix);
			cr_expect_str_eq(e.path, want, "%s", bc->id);
			cr_expect(strstr(e.message, bc->message), "%s: %s", bc->id, e.message);
			cr_expect_null(m.q, "%s: freed on error", bc->id);
		}
		ctq_checkpoint_close(&ck);
	}
	free(dir);
}

/* ---- ctq quantize --scheme ------------------------------------------------- */

static char *tiny(const char *root)
{
	char *out = ctq_path_join(root, "bf16");
	const char *args[] = {"--arch", "qwen3", "--preset", "tiny", "--seed", "5", "--quiet", out, NULL};
	cr_assert_eq(run_cmd(ctq_cmd_make_model, "make-model", args), CTQ_EXIT_OK);
	return out;
}

struct scheme_case {
	const char *id;
	const char *args[6];
	struct ctq_packed_args a;
	const char *scheme;
	double max_rel_l2; /* the grid's expected error on the tiny model's weights */
};

static const struct scheme_case scheme_cases[] = {
	{"w8a16", {"--scheme", "w8a16", NULL}, {8, 0, false}, "w8a16", 0.012},
	{"w4a16-g16", {"--scheme", "w4a16", "--group-size", "16", NULL}, {4, 16, false}, "w4a16", 0.15},
	{"w4a16-g16-asym", {"--scheme", "w4a16", "--group-size", "16", "--asym", NULL}, {4, 16, true},
	 "w4a16-asym", 0.12},
	{"w8a16-g16-asym", {"--scheme", "w8a16", "--group-size", "16", "--asym", NULL}, {8, 16, true},
	 "w8a16-asym", 0.01},
};

Test(packed, quantized_checkpoints_read_back_against_their_source)
{
	char *root = make_tmpdir();
	char *src = tiny(root);
	struct ctq_error err = {0};
	struct ctq_checkpoint sck;
	cr_assert_eq(ctq_checkpoint_open(&sck, src, &err), CTQ_OK, "%s", err.message);
	for (size_t c = 0; c < sizeof scheme_cases / sizeof *scheme_cases; c++) {
		const struct scheme_case *sc = &scheme_cases[c];
		char *out = ctq_path_join(root, sc->id);
		const char *args[12] = {src, out, "--quiet"};
		int n = 3;
		for (const char *const *a = sc->args; *a; a++)
			args[n++] = *a;
		args[n] = NULL;
		cr_assert_eq(run_cmd(ctq_cmd_quantize, "quantize", args), CTQ_EXIT_OK, "%s", sc->id);

		/* ct resolves every Linear but lm_head to the scheme; strict
		 * resolves it too and refuses to execute it */
		struct ctq_target t;
		cr_assert_eq(ctq_target_open(&t, out, CTQ_SEM_CT, CTQ_TARGET_TENSORS, &err), CTQ_OK,
			     "%s: %s", sc->id, err.message);
		size_t n_quant = 0;
		for (size_t i = 0; i < t.mods.n; i++) {
			const struct ctq_module *m = &t.mods.v[i];
			if (m->kind != CTQ_MODULE_LINEAR || !strcmp(m->name, "lm_head"))
				continue;
			cr_expect_str_eq(t.plan.entries[i].scheme, sc->scheme, "%s %s", sc->id, m->name);
			struct ctq_packed_module pm;
			cr_assert_eq(ctq_packed_read(&t.ck, m->name, &sc->a, &pm, &err), CTQ_OK, "%s %s: %s",
				     sc->id, m->name, err.message);
			char wname[256];
			snprintf(wname, sizeof wname, "%s.weight", m->name);
			const struct ctq_st_tensor *w = ctq_checkpoint_find(&sck, wname, NULL);
			cr_assert(w);
			cr_expect_eq(pm.N, w->shape[0]);
			cr_expect_eq(pm.K, w->shape[1]);
			float *ref = malloc((size_t)pm.K * sizeof *ref), *deq = malloc((size_t)pm.K * sizeof *deq);
			double e2 = 0, w2 = 0;
			for (int64_t r = 0; r < pm.N; r++) {
				ctq_convert_to_f32((const char *)w->data + (size_t)(r * pm.K) * 2, w->dtype,
						   (size_t)pm.K, ref);
				ctq_packed_dequant_row(&pm, r, deq);
				for (int64_t k = 0; k < pm.K; k++) {
					e2 += ((double)deq[k] - ref[k]) * ((double)deq[k] - ref[k]);
					w2 += (double)ref[k] * ref[k];
				}
			}
			const double rel = sqrt(e2 / w2);
			cr_expect(rel > 0.0 && rel < sc->max_rel_l2, "%s %s: rel-L2 %g", sc->id, m->name, rel);
			free(ref);
			free(deq);
			ctq_packed_free(&pm);
			n_quant++;
		}
		cr_expect_eq(n_quant, 14, "%s", sc->id);
		ctq_target_close(&t);
		free(out);
	}
	ctq_checkpoint_close(&sck);
	ctq_remove_tree(root);
	free(src);
	free(root);
}

Test(packed, quantize_scheme_refusals)
{
	char *root = make_tmpdir();
	char *src = tiny(root);
	char *out = ctq_path_join(root, "out");
	static const char *const bad[][6] = {
		{"--scheme", "w3a16", NULL},
		{"--scheme", "w4a16", "--group-size", "32", NULL}, /* K = 176 of down_proj */
		{"--asym", NULL},
		{"--group-size", "64", NULL},
		{"--scheme", "w4a16", "--weight-bits", "4", NULL},
	};
	for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
		const char *args[12] = {src, out, "--quiet"};
		int n = 3;
		for (const char *const *a = bad[c]; *a; a++)
			args[n++] = *a;
		args[n] = NULL;
		cr_expect_eq(run_cmd(ctq_cmd_quantize, "quantize", args), CTQ_EXIT_USAGE, "case %zu", c);
		cr_expect(!ctq_path_exists(out), "case %zu left OUT behind", c);
	}
	ctq_remove_tree(root);
	free(out);
	free(src);
	free(root);
}
