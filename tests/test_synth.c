/* Criterion tests for quant/synth and `ctq make-model`: config fields and
 * tensor inventory per architecture, determinism (same seed -> same bytes,
 * whatever the thread count or shard size; another seed -> other bytes),
 * the initialisation statistics, outlier channels, the streaming sharded
 * writer against ctq_checkpoint_write, and the command's bad input and
 * failure paths (nothing left behind). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/threads.h"
#include "harness/commands.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/synth.h"

/* ---- helpers ---------------------------------------------------------------- */

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/ctq-synth-XXXXXX";
	cr_assert(mkdtemp(tmpl), "mkdtemp");
	return strdup(tmpl);
}

static char *join(const char *dir, const char *name)
{
	char *p = ctq_path_join(dir, name);
	cr_assert(p);
	return p;
}

/* Runs `ctq make-model` with the given arguments (NULL-terminated). */
static int make_model(const char *const *args)
{
	char *argv[32];
	int argc = 0;
	argv[argc++] = "make-model";
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	return ctq_cmd_make_model(argc, argv);
}

static void file_hash(const char *path, char hex[CTQ_SHA256_HEX])
{
	unsigned char d[CTQ_SHA256_BYTES];
	struct ctq_error err = {0};
	cr_assert_eq(ctq_sha256_file(path, d, &err), CTQ_OK, "%s: %s", path, err.message);
	ctq_sha256_hex(d, hex);
}

static cJSON *load_json(const char *dir, const char *name)
{
	char *p = join(dir, name);
	cJSON *v = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_load_file(p, 1 << 20, NULL, &v, &err), CTQ_OK, "%s: %s", p,
		     err.message);
	free(p);
	return v;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = ctq_json_get(o, key);
	cr_assert(cJSON_IsNumber(v), "config.%s is not a number", key);
	return v->valuedouble;
}

/* No "<base>.tmp-*" sibling of path is left. */
static void expect_no_leftovers(const char *parent, const char *base)
{
	DIR *d = opendir(parent);
	cr_assert(d);
	struct dirent *e;
	char prefix[256];
	snprintf(prefix, sizeof prefix, "%s.tmp-", base);
	while ((e = readdir(d)))
		cr_expect(strncmp(e->d_name, prefix, strlen(prefix)), "leftover %s/%s", parent,
			  e->d_name);
	closedir(d);
}

static float bf16_at(const struct ctq_st_tensor *t, size_t i)
{
	uint16_t h;
	memcpy(&h, (const unsigned char *)t->data + 2 * i, 2);
	return ctq_bf16_to_f32(h);
}

/* ---- config and inventory per architecture ---------------------------------- */

struct arch_case {
	const char *arch;
	const char *cls;
	double rope_theta;
	bool bias, qk_norm;
};

static const struct arch_case arch_cases[] = {
	{"qwen3", "Qwen3ForCausalLM", 1000000.0, false, true},
	{"qwen2", "Qwen2ForCausalLM", 1000000.0, true, false},
	{"llama", "LlamaForCausalLM", 500000.0, false, false},
};

/* Every expected tensor of a tiny model with L layers, checked for dtype
 * and shape; the checkpoint must hold nothing else. */
static void expect_inventory(const struct arch_case *a, const char *dir, long L, bool untied)
{
	const long H = 64, I = 176, V = 512, d = 16, q = 4 * d, kv = 2 * d;
	struct ctq_checkpoint ck;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&ck, dir, &err), CTQ_OK, "%s: %s", err.path, err.message);
	size_t n = 0;
	char name[128];
#define EXPECT(r, c, ...)                                                                   \
	do {                                                                                \
		snprintf(name, sizeof name, __VA_ARGS__);                                   \
		const struct ctq_st_tensor *t = ctq_checkpoint_find(&ck, name, NULL);       \
		cr_assert(t, "%s: %s missing", a->arch, name);                              \
		cr_expect_eq(t->dtype, CTQ_DTYPE_BF16, "%s: %s dtype", a->arch, name);      \
		if (r) {                                                                    \
			cr_expect(t->ndim == 2 && t->shape[0] == (r) && t->shape[1] == (c), \
				  "%s: %s shape [%lld,%lld], want [%ld,%ld]", a->arch,      \
				  name, (long long)t->shape[0], (long long)t->shape[1],     \
				  (long)(r), (long)(c));                                    \
		} else {                                                                    \
			cr_expect(t->ndim == 1 && t->shape[0] == (c), "%s: %s shape",       \
				  a->arch, name);                                           \
		}                                                                           \
		n++;                                                                        \
	} while (0)
	EXPECT(V, H, "model.embed_tokens.weight");
	for (long l = 0; l < L; l++) {
		EXPECT(q, H, "model.layers.%ld.self_attn.q_proj.weight", l);
		EXPECT(kv, H, "model.layers.%ld.self_attn.k_proj.weight", l);
		EXPECT(kv, H, "model.layers.%ld.self_attn.v_proj.weight", l);
		EXPECT(H, q, "model.layers.%ld.self_attn.o_proj.weight", l);
		if (a->bias) {
			EXPECT(0, q, "model.layers.%ld.self_attn.q_proj.bias", l);
			EXPECT(0, kv, "model.layers.%ld.self_attn.k_proj.bias", l);
			EXPECT(0, kv, "model.layers.%ld.self_attn.v_proj.bias", l);
		}
		if (a->qk_norm) {
			EXPECT(0, d, "model.layers.%ld.self_attn.q_norm.weight", l);
			EXPECT(0, d, "model.layers.%ld.self_attn.k_norm.weight", l);
		}
		EXPECT(I, H, "model.layers.%ld.mlp.gate_proj.weight", l);
		EXPECT(I, H, "model.layers.%ld.mlp.up_proj.weight", l);
		EXPECT(H, I, "model.layers.%ld.mlp.down_proj.weight", l);
		EXPECT(0, H, "model.layers.%ld.input_layernorm.weight", l);
		EXPECT(0, H, "model.layers.%ld.post_attention_layernorm.weight", l);
	}
	EXPECT(0, H, "model.norm.weight");
	if (untied)
		EXPECT(V, H, "lm_head.weight");
#undef EXPECT
	cr_expect_eq(ctq_checkpoint_count(&ck), n, "%s: %zu tensors, want %zu", a->arch,
		     ctq_checkpoint_count(&ck), n);
	cr_expect_null(ctq_checkpoint_find(&ck, untied ? "no.such.tensor" : "lm_head.weight", NULL));
	cr_expect_str_eq(ctq_st_metadata(&ck.files[0], "format"), "pt");
	ctq_checkpoint_close(&ck);
}

Test(synth, tiny_config_and_tensors_per_arch)
{
	char *root = make_tmpdir();
	for (size_t i = 0; i < sizeof arch_cases / sizeof *arch_cases; i++) {
		const struct arch_case *a = &arch_cases[i];
		for (int untied = 0; untied < 2; untied++) {
			char name[64];
			snprintf(name, sizeof name, "%s-%d", a->arch, untied);
			char *out = join(root, name);
			const char *args[] = {"--arch", a->arch, "--preset", "tiny", "--quiet", out,
					      untied ? "--untied" : NULL, NULL};
			cr_assert_eq(make_model(args), CTQ_EXIT_OK, "%s", name);

			cJSON *c = load_json(out, "config.json");
			const cJSON *archs = ctq_json_get(c, "architectures");
			cr_assert(cJSON_IsArray(archs) && cJSON_GetArraySize(archs) == 1);
			cr_expect_str_eq(cJSON_GetArrayItem(archs, 0)->valuestring, a->cls);
			cr_expect_str_eq(ctq_json_get(c, "model_type")->valuestring, a->arch);
			cr_expect_eq(num(c, "hidden_size"), 64);
			cr_expect_eq(num(c, "intermediate_size"), 176);
			cr_expect_eq(num(c, "num_hidden_layers"), 2);
			cr_expect_eq(num(c, "num_attention_heads"), 4);
			cr_expect_eq(num(c, "num_key_value_heads"), 2);
			cr_expect_eq(num(c, "head_dim"), 16);
			cr_expect_eq(num(c, "vocab_size"), 512);
			cr_expect_eq(num(c, "rms_norm_eps"), 1e-6);
			cr_expect_eq(num(c, "rope_theta"), a->rope_theta, "%s rope_theta", a->arch);
			cr_expect(num(c, "max_position_embeddings") > 0);
			cr_expect(num(c, "bos_token_id") < 512 && num(c, "eos_token_id") < 512);
			cr_expect_eq(cJSON_IsTrue(ctq_json_get(c, "tie_word_embeddings")), !untied);
			cr_expect_eq(cJSON_IsTrue(ctq_json_get(c, "attention_bias")), a->bias);
			cr_expect_str_eq(ctq_json_get(c, "torch_dtype")->valuestring, "bfloat16");
			cr_expect_str_eq(ctq_json_get(c, "hidden_act")->valuestring, "silu");
			cJSON *g = load_json(out, "generation_config.json");
			cr_expect_eq(num(g, "eos_token_id"), num(c, "eos_token_id"));
			cr_expect_eq(num(g, "bos_token_id"), num(c, "bos_token_id"));
			cJSON_Delete(g);
			cJSON_Delete(c);

			/* The files are what transformers writes: sorted keys,
			 * indent 2, a final newline. */
			char *cp = join(out, "config.json");
			char *text = NULL;
			size_t len = 0;
			struct ctq_error err = {0};
			cr_assert_eq(ctq_file_read(cp, 1 << 20, &text, &len, &err), CTQ_OK);
			cr_expect(!strncmp(text, "{\n  \"architectures\": [\n", 22), "%s", text);
			cr_expect(len > 2 && text[len - 1] == '\n' && text[len - 2] == '}');
			free(text);
			free(cp);

			expect_inventory(a, out, 2, untied);
			free(out);
		}
	}
	ctq_remove_tree(root);
	free(root);
}

/* The -shape presets, checked through their config only (the weights are
 * 1.2 and 8 GB): published Qwen3-0.6B / Qwen3-4B geometry. */
Test(synth, shape_presets_match_the_published_configs)
{
	static const struct {
		const char *preset;
		long hidden, layers, heads, kv, head_dim, inter, vocab;
	} want[] = {
		{"tiny", 64, 2, 4, 2, 16, 176, 512},
		{"qwen3-0.6b-shape", 1024, 28, 16, 8, 128, 3072, 151936},
		{"qwen3-4b-shape", 2560, 36, 32, 8, 128, 9728, 151936},
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		struct ctq_synth_spec s;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_synth_spec_init(&s, "qwen3", want[i].preset, &err), CTQ_OK);
		cJSON *c = NULL, *g = NULL;
		cr_assert_eq(ctq_synth_config(&s, &c, &g, &err), CTQ_OK, "%s", err.message);
		cr_expect_eq(num(c, "hidden_size"), want[i].hidden, "%s", want[i].preset);
		cr_expect_eq(num(c, "num_hidden_layers"), want[i].layers, "%s", want[i].preset);
		cr_expect_eq(num(c, "num_attention_heads"), want[i].heads, "%s", want[i].preset);
		cr_expect_eq(num(c, "num_key_value_heads"), want[i].kv, "%s", want[i].preset);
		cr_expect_eq(num(c, "head_dim"), want[i].head_dim, "%s", want[i].preset);
		cr_expect_eq(num(c, "intermediate_size"), want[i].inter, "%s", want[i].preset);
		cr_expect_eq(num(c, "vocab_size"), want[i].vocab, "%s", want[i].preset);
		cr_expect(cJSON_IsTrue(ctq_json_get(c, "tie_word_embeddings")), "%s", want[i].preset);
		cJSON_Delete(c);
		cJSON_Delete(g);
	}
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_synth_spec_init(&s, "qwen3", "qwen3-7b", &err), CTQ_ERR_USAGE);
	cr_expect(strstr(err.message, "qwen3-4b-shape"), "%s", err.message);
	ctq_error_clear(&err);
	cr_expect_eq(ctq_synth_spec_init(&s, "mistral", "tiny", &err), CTQ_ERR_USAGE);
	/* A spec that does not hold together. */
	ctq_error_clear(&err);
	cr_assert_eq(ctq_synth_spec_init(&s, "llama", "tiny", &err), CTQ_OK);
	s.num_key_value_heads = 3;
	cJSON *c = NULL, *g = NULL;
	cr_expect_eq(ctq_synth_config(&s, &c, &g, &err), CTQ_ERR_USAGE);
	cr_expect_null(c);
}

/* ---- determinism ------------------------------------------------------------- */

Test(synth, same_seed_same_bytes_any_thread_count_other_seed_differs)
{
	char *root = make_tmpdir();
	char *a = join(root, "a"), *b = join(root, "b"), *c = join(root, "c");
	const char *args_a[] = {"--arch", "qwen2", "--preset", "tiny", "--seed", "7", "--quiet", a, NULL};
	const char *args_b[] = {"--arch", "qwen2", "--preset", "tiny", "--seed", "7", "--quiet", b, NULL};
	const char *args_c[] = {"--arch", "qwen2", "--preset", "tiny", "--seed", "8", "--quiet", c, NULL};
	ctq_threads_set(1);
	cr_assert_eq(make_model(args_a), CTQ_EXIT_OK);
	ctq_threads_set(3);
	cr_assert_eq(make_model(args_b), CTQ_EXIT_OK);
	cr_assert_eq(make_model(args_c), CTQ_EXIT_OK);
	char ha[CTQ_SHA256_HEX], hb[CTQ_SHA256_HEX], hc[CTQ_SHA256_HEX];
	char *fa = join(a, "model.safetensors"), *fb = join(b, "model.safetensors"),
	     *fc = join(c, "model.safetensors");
	file_hash(fa, ha);
	file_hash(fb, hb);
	file_hash(fc, hc);
	cr_expect_str_eq(ha, hb, "seed 7 with 1 and 3 threads");
	cr_expect_str_neq(ha, hc, "seeds 7 and 8 gave the same weights");

	/* Seed 8 differs in every weight matrix, not only somewhere. */
	struct ctq_checkpoint ka, kc;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&ka, a, &err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_open(&kc, c, &err), CTQ_OK);
	for (size_t i = 0; i < ctq_checkpoint_count(&ka); i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&ka, i, NULL);
		const struct ctq_st_tensor *u = ctq_checkpoint_find(&kc, t->name, NULL);
		cr_assert(u);
		cr_expect(memcmp(t->data, u->data, t->n_bytes), "%s equal under seeds 7 and 8", t->name);
	}
	ctq_checkpoint_close(&ka);
	ctq_checkpoint_close(&kc);
	ctq_threads_set(2);
	ctq_remove_tree(root);
	free(fa), free(fb), free(fc), free(a), free(b), free(c), free(root);
}

/* Sharding changes the files, never the tensors: a 60 kB limit gives
 * several shards plus an index, holding the bytes of the single file. */
Test(synth, sharded_output_holds_the_same_tensors)
{
	char *root = make_tmpdir();
	char *one = join(root, "one"), *many = join(root, "many");
	const char *a1[] = {"--arch", "qwen3", "--preset", "tiny", "--untied", "--quiet", one, NULL};
	const char *a2[] = {"--arch", "qwen3", "--preset", "tiny", "--untied", "--quiet",
			    "--max-shard-bytes", "60000", many, NULL};
	cr_assert_eq(make_model(a1), CTQ_EXIT_OK);
	cr_assert_eq(make_model(a2), CTQ_EXIT_OK);
	struct ctq_checkpoint k1, k2;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&k1, one, &err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_open(&k2, many, &err), CTQ_OK, "%s: %s", err.path, err.message);
	cr_expect_not(k1.sharded);
	cr_expect(k2.sharded);
	cr_expect_gt(k2.n_files, 2);
	cr_assert_eq(ctq_checkpoint_count(&k1), ctq_checkpoint_count(&k2));
	for (size_t i = 0; i < ctq_checkpoint_count(&k1); i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&k1, i, NULL);
		const struct ctq_st_tensor *u = ctq_checkpoint_at(&k2, i, NULL);
		cr_assert_str_eq(t->name, u->name);
		cr_expect(t->n_bytes == u->n_bytes && !memcmp(t->data, u->data, t->n_bytes), "%s",
			  t->name);
	}
	ctq_checkpoint_close(&k1);
	ctq_checkpoint_close(&k2);
	ctq_remove_tree(root);
	free(one), free(many), free(root);
}

/* ---- statistics and outliers -------------------------------------------------- */

static void moments(const struct ctq_st_tensor *t, double *mean, double *sd)
{
	double s = 0, s2 = 0;
	for (uint64_t i = 0; i < t->n_elements; i++) {
		double v = bf16_at(t, i);
		s += v;
		s2 += v * v;
	}
	*mean = s / (double)t->n_elements;
	*sd = sqrt(s2 / (double)t->n_elements - *mean * *mean);
}

Test(synth, weights_follow_the_hf_initialisation)
{
	char *root = make_tmpdir();
	char *out = join(root, "m");
	const char *args[] = {"--arch", "qwen3", "--preset", "tiny", "--quiet", out, NULL};
	cr_assert_eq(make_model(args), CTQ_EXIT_OK);
	struct ctq_checkpoint ck;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&ck, out, &err), CTQ_OK);
	/* 32768 N(0, 0.02) draws: the standard error of the sample sd is
	 * 0.02 / sqrt(2 n) = 8e-5 and of the mean 1.1e-4, so +-1e-3 is
	 * more than 8 standard errors wide and cannot fail by chance. */
	double m, sd;
	moments(ctq_checkpoint_find(&ck, "model.embed_tokens.weight", NULL), &m, &sd);
	cr_expect(fabs(m) < 1e-3 && fabs(sd - 0.02) < 1e-3, "embed mean %g sd %g", m, sd);
	moments(ctq_checkpoint_find(&ck, "model.layers.1.mlp.down_proj.weight", NULL), &m, &sd);
	cr_expect(fabs(m) < 1e-3 && fabs(sd - 0.02) < 1e-3, "down_proj mean %g sd %g", m, sd);
	/* Norm weights: 1 + N(0, 0.02), so within 1 +- 0.15 (7.5 sd). */
	const struct ctq_st_tensor *ln =
		ctq_checkpoint_find(&ck, "model.layers.0.input_layernorm.weight", NULL);
	moments(ln, &m, &sd);
	cr_expect(fabs(m - 1.0) < 0.01 && sd > 0.005 && sd < 0.04, "norm mean %g sd %g", m, sd);
	for (uint64_t i = 0; i < ln->n_elements; i++)
		cr_expect(fabs(bf16_at(ln, i) - 1.0) < 0.15, "norm[%llu] = %g",
			  (unsigned long long)i, bf16_at(ln, i));
	ctq_checkpoint_close(&ck);
	ctq_remove_tree(root);
	free(out), free(root);
}

Test(synth, outliers_scale_four_norm_channels_in_every_layer)
{
	char *root = make_tmpdir();
	char *plain = join(root, "plain"), *out = join(root, "outliers");
	const char *a1[] = {"--arch", "llama", "--preset", "tiny", "--seed", "3", "--layers", "3",
			    "--quiet", plain, NULL};
	const char *a2[] = {"--arch", "llama", "--preset", "tiny", "--seed", "3", "--layers", "3",
			    "--outliers", "--quiet", out, NULL};
	cr_assert_eq(make_model(a1), CTQ_EXIT_OK);
	cr_assert_eq(make_model(a2), CTQ_EXIT_OK);

	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, "llama", "tiny", &err), CTQ_OK);
	s.seed = 3;
	long ch[CTQ_SYNTH_N_OUTLIERS];
	ctq_synth_outlier_channels(&s, ch);
	for (int i = 0; i < CTQ_SYNTH_N_OUTLIERS; i++) {
		cr_expect(ch[i] >= 0 && ch[i] < 64);
		if (i)
			cr_expect_gt(ch[i], ch[i - 1], "channels ascending and distinct");
	}
	/* Recorded in the config for whoever reads the model later. */
	cJSON *c = load_json(out, "config.json");
	const cJSON *prov = ctq_json_get(c, "ctq_synthetic");
	const cJSON *rec = ctq_json_get(prov, "outlier_channels");
	cr_assert(cJSON_IsArray(rec) && cJSON_GetArraySize(rec) == CTQ_SYNTH_N_OUTLIERS);
	for (int i = 0; i < CTQ_SYNTH_N_OUTLIERS; i++)
		cr_expect_eq(cJSON_GetArrayItem(rec, i)->valuedouble, (double)ch[i]);
	cr_expect(cJSON_IsTrue(ctq_json_get(prov, "outliers")));
	cr_expect_eq(num(c, "num_hidden_layers"), 3);
	cJSON_Delete(c);

	struct ctq_checkpoint kp, ko;
	cr_assert_eq(ctq_checkpoint_open(&kp, plain, &err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_open(&ko, out, &err), CTQ_OK);
	static const char *const norms[] = {"input_layernorm", "post_attention_layernorm"};
	for (int l = 0; l < 3; l++)
		for (int k = 0; k < 2; k++) {
			char name[96];
			snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, norms[k]);
			const struct ctq_st_tensor *p = ctq_checkpoint_find(&kp, name, NULL);
			const struct ctq_st_tensor *o = ctq_checkpoint_find(&ko, name, NULL);
			cr_assert(p && o, "%s", name);
			for (long i = 0; i < 64; i++) {
				bool hot = false;
				for (int j = 0; j < CTQ_SYNTH_N_OUTLIERS; j++)
					hot |= ch[j] == i;
				float vp = bf16_at(p, (size_t)i), vo = bf16_at(o, (size_t)i);
				/* The outlier value is the plain one x50, rounded
				 * to BF16 once more (relative step 2^-8). */
				if (hot)
					cr_expect(fabsf(vo - 50.0f * vp) <= 50.0f * vp / 256.0f &&
						  vo > 40.0f,
						  "%s[%ld] = %g, plain %g", name, i, vo, vp);
				else
					cr_expect_eq(vo, vp, "%s[%ld] changed", name, i);
			}
		}
	/* Nothing else changes: the projections are the same bytes. */
	for (size_t i = 0; i < ctq_checkpoint_count(&kp); i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&kp, i, NULL);
		if (strstr(t->name, "layernorm"))
			continue;
		const struct ctq_st_tensor *u = ctq_checkpoint_find(&ko, t->name, NULL);
		cr_assert(u);
		cr_expect(!memcmp(t->data, u->data, t->n_bytes), "%s differs", t->name);
	}
	ctq_checkpoint_close(&kp);
	ctq_checkpoint_close(&ko);
	ctq_remove_tree(root);
	free(plain), free(out), free(root);
}

/* ---- the streaming writer against ctq_checkpoint_write ------------------------ */

/* Tensors of 16..2000 bytes with a 600-byte limit: shards close as
 * huggingface_hub's split does, including a tensor over the limit that
 * takes a shard of its own ahead of the open one. Half are produced, half
 * borrowed. */
struct stream_case {
	const char *name;
	enum ctq_dtype dtype;
	int64_t rows, cols;
};

static const struct stream_case stream_cases[] = {
	{"a.weight", CTQ_DTYPE_BF16, 10, 10},   {"b.weight", CTQ_DTYPE_F32, 20, 4},
	{"big.weight", CTQ_DTYPE_I8, 50, 40},   {"c.bias", CTQ_DTYPE_F16, 1, 8},
	{"d.weight", CTQ_DTYPE_BF16, 16, 16},   {"e.weight", CTQ_DTYPE_I8, 7, 9},
	{"f.weight_scale", CTQ_DTYPE_BF16, 7, 1},
};
#define N_STREAM (sizeof stream_cases / sizeof *stream_cases)

static void fill_pattern(size_t i, void *dst, uint64_t n)
{
	unsigned char *p = dst;
	for (uint64_t k = 0; k < n; k++)
		p[k] = (unsigned char)(k * 31 + i * 7 + 1);
}

static enum ctq_status produce_pattern(void *ctx, size_t i, const struct ctq_stream_tensor *t,
				       void *dst, struct ctq_error *err)
{
	(void)err;
	size_t *calls = ctx;
	calls[i]++;
	fill_pattern(i, dst, t->n_bytes);
	return CTQ_OK;
}

static void compare_files(const char *a, const char *b, const char *name)
{
	char *pa = join(a, name), *pb = join(b, name);
	char *da = NULL, *db = NULL;
	size_t na = 0, nb = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(pa, 1 << 20, &da, &na, &err), CTQ_OK, "%s", pa);
	cr_assert_eq(ctq_file_read(pb, 1 << 20, &db, &nb, &err), CTQ_OK, "%s", pb);
	cr_expect(na == nb && !memcmp(da, db, na), "%s differs from ctq_checkpoint_write's", name);
	free(da), free(db), free(pa), free(pb);
}

/* --logit-gain G scales model.norm.weight by G (one BF16 rounding of
 * (1 + N(0, 0.02)) x G) and changes no other tensor; the config records it. */
Test(synth, logit_gain_scales_the_final_norm_only)
{
	char *root = make_tmpdir();
	char *plain = join(root, "plain"), *out = join(root, "gain");
	const char *a1[] = {"--arch", "qwen3", "--preset", "tiny", "--seed", "5", "--untied", "--quiet",
			    plain, NULL};
	const char *a2[] = {"--arch", "qwen3", "--preset", "tiny", "--seed", "5", "--untied",
			    "--logit-gain", "10", "--quiet", out, NULL};
	cr_assert_eq(make_model(a1), CTQ_EXIT_OK);
	cr_assert_eq(make_model(a2), CTQ_EXIT_OK);
	cJSON *c = load_json(out, "config.json");
	cr_expect_eq(ctq_json_get(ctq_json_get(c, "ctq_synthetic"), "logit_gain")->valuedouble, 10.0);
	cJSON_Delete(c);
	c = load_json(plain, "config.json");
	cr_expect_null(ctq_json_get(ctq_json_get(c, "ctq_synthetic"), "logit_gain"),
		       "no gain recorded without --logit-gain");
	cJSON_Delete(c);
	struct ctq_checkpoint kp, kg;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&kp, plain, &err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_open(&kg, out, &err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_count(&kp), ctq_checkpoint_count(&kg));
	for (size_t i = 0; i < ctq_checkpoint_count(&kp); i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&kp, i, NULL);
		const struct ctq_st_tensor *u = ctq_checkpoint_find(&kg, t->name, NULL);
		cr_assert(u && u->n_bytes == t->n_bytes, "%s", t->name);
		if (strcmp(t->name, "model.norm.weight")) {
			cr_expect(!memcmp(t->data, u->data, t->n_bytes), "%s differs", t->name);
			continue;
		}
		for (size_t k = 0; k < 64; k++) {
			float vp = bf16_at(t, k), vg = bf16_at(u, k);
			/* vp is 1 + e rounded once; vg is (1 + e) x 10 rounded once:
			 * within two BF16 steps of 10 vp. */
			cr_expect(fabsf(vg - 10.0f * vp) <= 2 * 10.0f * vp / 256.0f && vg > 9.0f,
				  "model.norm.weight[%zu] = %g, plain %g", k, vg, vp);
		}
	}
	ctq_checkpoint_close(&kp);
	ctq_checkpoint_close(&kg);
	ctq_remove_tree(root);
	free(plain), free(out), free(root);
}

Test(synth, stream_writer_lays_out_as_checkpoint_write)
{
	char *root = make_tmpdir();
	char *sdir = join(root, "stream"), *wdir = join(root, "write");
	struct ctq_stream_tensor t[N_STREAM];
	void *data[N_STREAM];
	size_t calls[N_STREAM] = {0};
	struct ctq_st_writer w;
	struct ctq_error err = {0};
	ctq_st_writer_init(&w);
	cr_assert_eq(ctq_st_writer_set_metadata(&w, "format", "pt", &err), CTQ_OK);
	for (size_t i = 0; i < N_STREAM; i++) {
		const struct stream_case *c = &stream_cases[i];
		memset(&t[i], 0, sizeof t[i]);
		t[i].name = c->name;
		t[i].dtype = c->dtype;
		t[i].ndim = c->rows > 1 || c->cols == 1 ? 2 : 1;
		t[i].shape[0] = t[i].ndim == 2 ? c->rows : c->cols;
		t[i].shape[1] = t[i].ndim == 2 ? c->cols : 0;
		t[i].n_bytes = (uint64_t)(c->rows * c->cols) * ctq_dtype_size(c->dtype);
		data[i] = malloc(t[i].n_bytes);
		fill_pattern(i, data[i], t[i].n_bytes);
		t[i].borrowed = i % 2 ? data[i] : NULL;
		cr_assert_eq(ctq_st_writer_add(&w, t[i].name, t[i].dtype, t[i].ndim, t[i].shape,
					       data[i], t[i].n_bytes, &err),
			     CTQ_OK, "%s", err.message);
	}
	for (int limited = 0; limited < 2; limited++) {
		uint64_t limit = limited ? 600 : 0;
		ctq_remove_tree(sdir);
		ctq_remove_tree(wdir);
		memset(calls, 0, sizeof calls);
		cr_assert_eq(ctq_stream_write(sdir, NULL, t, N_STREAM, limit, produce_pattern, calls, NULL,
					      NULL, &err),
			     CTQ_OK, "%s: %s", err.path, err.message);
		cr_assert_eq(ctq_checkpoint_write(wdir, &w, limit, &err), CTQ_OK, "%s", err.message);
		for (size_t i = 0; i < N_STREAM; i++)
			cr_expect_eq(calls[i], i % 2 ? 0u : 1u, "%s produced %zu times",
				     t[i].name, calls[i]);
		DIR *d = opendir(wdir);
		cr_assert(d);
		struct dirent *e;
		size_t n_files = 0;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			compare_files(sdir, wdir, e->d_name);
			n_files++;
		}
		closedir(d);
		/* 600 bytes: big (2000) is a shard at once, then [a b c] closes
		 * when d would tip it, then [d e f]: 3 shards + the index. */
		cr_expect_eq(n_files, limited ? 4u : 1u, "%zu files", n_files);
	}
	ctq_st_writer_free(&w);
	for (size_t i = 0; i < N_STREAM; i++)
		free(data[i]);
	ctq_remove_tree(root);
	free(sdir), free(wdir), free(root);
}

/* ---- the command: bad input and failures ---------------------------------------- */

Test(synth, command_rejects_bad_usage)
{
	char *root = make_tmpdir();
	char *out = join(root, "m");
	const struct {
		const char *id;
		const char *args[12];
	} bad[] = {
		{"bad-preset", {"--arch", "qwen3", "--preset", "qwen3-7b", out}},
		{"bad-arch", {"--arch", "gpt2", "--preset", "tiny", out}},
		{"no-out", {"--arch", "qwen3", "--preset", "tiny"}},
		{"no-arch", {"--preset", "tiny", out}},
		{"no-preset", {"--arch", "qwen3", out}},
		{"layers-zero", {"--arch", "qwen3", "--preset", "tiny", "--layers", "0", out}},
		{"seed-negative", {"--arch", "qwen3", "--preset", "tiny", "--seed", "-1", out}},
		{"seed-not-number", {"--arch", "qwen3", "--preset", "tiny", "--seed", "x", out}},
		{"unknown-option", {"--arch", "qwen3", "--preset", "tiny", "--bogus", out}},
		{"two-outs", {"--arch", "qwen3", "--preset", "tiny", out, out}},
		{"missing-value", {"--arch", "qwen3", "--preset"}},
		{"gain-zero", {"--arch", "qwen3", "--preset", "tiny", "--logit-gain", "0", out}},
		{"gain-negative", {"--arch", "qwen3", "--preset", "tiny", "--logit-gain", "-2", out}},
		{"gain-nan", {"--arch", "qwen3", "--preset", "tiny", "--logit-gain", "nan", out}},
		{"gain-huge", {"--arch", "qwen3", "--preset", "tiny", "--logit-gain", "1e5", out}},
		{"gain-trailing", {"--arch", "qwen3", "--preset", "tiny", "--logit-gain", "10x", out}},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cr_expect_eq(make_model(bad[i].args), CTQ_EXIT_USAGE, "%s", bad[i].id);
		cr_expect_not(ctq_path_exists(out), "%s created OUT", bad[i].id);
	}
	const char *help[] = {"--help", NULL};
	cr_expect_eq(make_model(help), CTQ_EXIT_OK);
	expect_no_leftovers(root, "m");
	ctq_remove_tree(root);
	free(out), free(root);
}

Test(synth, existing_out_is_kept_unless_forced)
{
	char *root = make_tmpdir();
	char *out = join(root, "m");
	char *marker = join(out, "keep.txt");
	struct ctq_error err = {0};
	cr_assert_eq(ctq_mkdirs(out, &err), CTQ_OK);
	const char *args[] = {"--arch", "qwen3", "--preset", "tiny", "--quiet", out, NULL};
	/* An empty folder is fine to fill. */
	cr_assert_eq(make_model(args), CTQ_EXIT_OK);
	cr_assert_eq(ctq_file_write_atomic(marker, "x", 1, &err), CTQ_OK);
	cr_expect_eq(make_model(args), CTQ_EXIT_USAGE);
	cr_expect(ctq_path_exists(marker), "a refused run touched OUT");
	const char *forced[] = {"--arch", "qwen3", "--preset", "tiny", "--quiet", "--force", out, NULL};
	cr_expect_eq(make_model(forced), CTQ_EXIT_OK);
	cr_expect_not(ctq_path_exists(marker), "--force must replace OUT");
	char *cfg = join(out, "config.json");
	cr_expect(ctq_path_exists(cfg));
	/* A trailing slash names the same folder. */
	char slashed[512];
	snprintf(slashed, sizeof slashed, "%s/", out);
	const char *again[] = {"--arch", "qwen3", "--preset", "tiny", "--quiet", "--force", slashed, NULL};
	cr_expect_eq(make_model(again), CTQ_EXIT_OK);
	cr_expect(ctq_path_exists(cfg));
	expect_no_leftovers(root, "m");
	ctq_remove_tree(root);
	free(cfg), free(marker), free(out), free(root);
}

/* Every allocation that can fail, failed in turn (a stride through the
 * count): each run must fail cleanly, leaving neither OUT nor a temporary
 * folder, until the budget is large enough and the model is written. */
Test(synth, failure_midway_leaves_nothing, .timeout = 120)
{
	char *root = make_tmpdir();
	char *out = join(root, "m");
	const char *args[] = {"--arch", "qwen2", "--preset", "tiny", "--quiet",
			      "--max-shard-bytes", "100000", out, NULL};
	bool written = false;
	int failures = 0;
	for (long n = 0; n < 100000 && !written; n = n < 40 ? n + 1 : n * 5 / 4) {
		ctq_alloc_fail_after(n);
		int rc = make_model(args);
		ctq_alloc_fail_after(-1);
		if (rc == CTQ_EXIT_OK) {
			written = true;
			break;
		}
		failures++;
		cr_expect_eq(rc, CTQ_EXIT_USAGE, "n=%ld: rc %d", n, rc);
		cr_expect_not(ctq_path_exists(out), "n=%ld: OUT exists after a failure", n);
		expect_no_leftovers(root, "m");
	}
	cr_expect(written, "never succeeded");
	cr_expect_gt(failures, 10, "the sweep must hit failures");
	ctq_remove_tree(root);
	free(out), free(root);
}
