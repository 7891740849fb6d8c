/* Criterion tests for quant/quantize and `ctq quantize`: a tiny synthetic
 * model (quant/synth) quantized and read back. Checked: the tensor
 * inventory (I8 weights, [N,1] scales in the model dtype, everything else
 * byte for byte), bit equality with the reference quantizer
 * (reference/ref_ops.h) for BF16 and with the formula for F16 / F32 models,
 * the rel-L2 of dequantized weights, the written quantization_config
 * (golden text) and its strict resolution, hybrid and regex ignores, aux
 * files, sharding, thread-count independence, and that bad input and
 * failures midway leave no OUT behind. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/json_write.h"
#include "core/numerics.h"
#include "core/sha256.h"
#include "core/threads.h"
#include "harness/commands.h"
#include "checkpoint/loader.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "checkpoint/quantize.h"
#include "quant/resolve.h"
#include "checkpoint/safetensors.h"
#include "reference/ref_ops.h"

/* quantization_config as compressed-tensors' ModelCompressor writes it for
 * W8A8 on Linear with ignore [o_proj of layer 0, lm_head]: the golden text
 * is python3's json.dumps(block, indent=2, sort_keys=True) of the block
 * written out field by field from spec §1.2 / §2.3 (every QuantizationArgs
 * field, CT >= 0.14 defaults). */
static const char golden_block[] =
	"{\n"
	"  \"config_groups\": {\n"
	"    \"group_0\": {\n"
	"      \"format\": \"int-quantized\",\n"
	"      \"input_activations\": {\n"
	"        \"actorder\": null,\n"
	"        \"block_structure\": null,\n"
	"        \"dynamic\": true,\n"
	"        \"group_size\": null,\n"
	"        \"num_bits\": 8,\n"
	"        \"observer\": null,\n"
	"        \"observer_kwargs\": {},\n"
	"        \"scale_dtype\": null,\n"
	"        \"strategy\": \"token\",\n"
	"        \"symmetric\": true,\n"
	"        \"type\": \"int\",\n"
	"        \"zp_dtype\": null\n"
	"      },\n"
	"      \"output_activations\": null,\n"
	"      \"targets\": [\n"
	"        \"Linear\"\n"
	"      ],\n"
	"      \"weights\": {\n"
	"        \"actorder\": null,\n"
	"        \"block_structure\": null,\n"
	"        \"dynamic\": false,\n"
	"        \"group_size\": null,\n"
	"        \"num_bits\": 8,\n"
	"        \"observer\": \"memoryless_minmax\",\n"
	"        \"observer_kwargs\": {},\n"
	"        \"scale_dtype\": null,\n"
	"        \"strategy\": \"channel\",\n"
	"        \"symmetric\": true,\n"
	"        \"type\": \"int\",\n"
	"        \"zp_dtype\": null\n"
	"      }\n"
	"    }\n"
	"  },\n"
	"  \"format\": \"int-quantized\",\n"
	"  \"global_compression_ratio\": null,\n"
	"  \"ignore\": [\n"
	"    \"model.layers.0.self_attn.o_proj\",\n"
	"    \"lm_head\"\n"
	"  ],\n"
	"  \"kv_cache_scheme\": null,\n"
	"  \"quant_method\": \"compressed-tensors\",\n"
	"  \"quantization_status\": \"compressed\",\n"
	"  \"sparsity_config\": {},\n"
	"  \"transform_config\": {},\n"
	"  \"version\": \"0.14.0\"\n"
	"}"
	;

/* ---- helpers ---------------------------------------------------------------- */

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/ctq-quant-XXXXXX";
	cr_assert(mkdtemp(tmpl), "mkdtemp");
	return strdup(tmpl);
}

static char *join(const char *dir, const char *name)
{
	char *p = ctq_path_join(dir, name);
	cr_assert(p);
	return p;
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

/* A tiny synthetic model in root/name. extra: more make-model options
 * (NULL-terminated, may be NULL). */
static char *tiny(const char *root, const char *name, const char *arch, const char *const *extra)
{
	char *out = join(root, name);
	const char *args[24] = {"--arch", arch, "--preset", "tiny", "--seed", "11", "--quiet", out};
	int n = 8;
	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	cr_assert_eq(run_cmd(ctq_cmd_make_model, "make-model", args), CTQ_EXIT_OK, "make-model %s", name);
	return out;
}

/* ctq quantize IN OUT --quiet [extra...]. */
static int quantize(const char *in, const char *out, const char *const *extra)
{
	const char *args[24] = {in, out, "--quiet"};
	int n = 3;
	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	return run_cmd(ctq_cmd_quantize, "quantize", args);
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

static void file_hash(const char *dir, const char *name, char hex[CTQ_SHA256_HEX])
{
	char *p = join(dir, name);
	unsigned char d[CTQ_SHA256_BYTES];
	struct ctq_error err = {0};
	cr_assert_eq(ctq_sha256_file(p, d, &err), CTQ_OK, "%s: %s", p, err.message);
	ctq_sha256_hex(d, hex);
	free(p);
}

static float *to_f32(const struct ctq_st_tensor *t)
{
	float *f = malloc(t->n_elements * sizeof *f);
	cr_assert(f && ctq_convert_to_f32(t->data, t->dtype, t->n_elements, f));
	return f;
}

static bool same_tensor(const struct ctq_st_tensor *a, const struct ctq_st_tensor *b)
{
	return a->dtype == b->dtype && a->ndim == b->ndim &&
	       !memcmp(a->shape, b->shape, sizeof a->shape) && a->n_bytes == b->n_bytes &&
	       !memcmp(a->data, b->data, a->n_bytes);
}

/* The Linear modules of the model in dir, from its config.json. */
static void linear_modules(const char *dir, struct ctq_modules *m)
{
	cJSON *c = load_json(dir, "config.json");
	struct ctq_error err = {0};
	ctq_modules_init(m);
	cr_assert_eq(ctq_modules_from_config(m, c, "", NULL, &err), CTQ_OK, "%s", err.message);
	cJSON_Delete(c);
}

static bool listed(const char *const *names, const char *name)
{
	for (; *names; names++)
		if (!strcmp(*names, name))
			return true;
	return false;
}

/* rel-L2 bounds for tiny models' N(0, 0.02) weights, K = 64 or 176:
 * round-to-nearest with step s = amax / 127 leaves an error of rms s/sqrt(12)
 * per element; the amax of K normal draws is ~2.4 (K=64) to ~2.9 (K=176)
 * standard deviations, so rel-L2 ~ 5.5e-3 to 6.6e-3 (5.7e-3 .. 6.7e-3
 * measured). 3e-3 .. 1e-2 leaves x1.5 either way; a copied weight (0), or a
 * scale off by 2 (1.3e-2: amax / 63.5), falls outside. */
#define REL_L2_MIN 3e-3
#define REL_L2_MAX 1e-2

/* Checks OUT against IN: every Linear module except lm_head and `ignored`
 * (NULL-terminated) is I8 + scale equal to the reference; every other
 * tensor is the same bytes; nothing else is there. Returns the number of
 * quantized modules. */
static size_t expect_quantized(const char *in, const char *out, const char *const *ignored)
{
	struct ctq_checkpoint ci, co;
	struct ctq_error err = {0};
	struct ctq_modules mods;
	cr_assert_eq(ctq_checkpoint_open(&ci, in, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_checkpoint_open(&co, out, &err), CTQ_OK, "%s: %s", err.path, err.message);
	linear_modules(in, &mods);
	size_t n_quant = 0;
	for (size_t i = 0; i < mods.n; i++) {
		const char *m = mods.v[i].name;
		if (mods.v[i].kind != CTQ_MODULE_LINEAR || !strcmp(m, "lm_head") || listed(ignored, m))
			continue;
		char wn[160], sn[160];
		snprintf(wn, sizeof wn, "%s.weight", m);
		snprintf(sn, sizeof sn, "%s.weight_scale", m);
		const struct ctq_st_tensor *w = ctq_checkpoint_find(&ci, wn, NULL);
		const struct ctq_st_tensor *q = ctq_checkpoint_find(&co, wn, NULL);
		const struct ctq_st_tensor *s = ctq_checkpoint_find(&co, sn, NULL);
		cr_assert(w && q && s, "%s: weight or scale missing", m);
		int64_t N = w->shape[0], K = w->shape[1];
		cr_expect(q->dtype == CTQ_DTYPE_I8 && q->ndim == 2 && q->shape[0] == N &&
			  q->shape[1] == K, "%s: weight is %s, not I8 [%lld,%lld]", m,
			  ctq_dtype_name(q->dtype), (long long)N, (long long)K);
		cr_expect(s->dtype == w->dtype && s->ndim == 2 && s->shape[0] == N && s->shape[1] == 1,
			  "%s: scale is %s [%lld,...], want %s [N,1]", m, ctq_dtype_name(s->dtype),
			  (long long)s->shape[0], ctq_dtype_name(w->dtype));
		float *wf = to_f32(w);
		if (w->dtype == CTQ_DTYPE_BF16) {
			/* Bit for bit the reference producer quantizer. */
			int8_t *rq = malloc((size_t)(N * K));
			uint16_t *rs = malloc((size_t)N * sizeof *rs);
			ctq_ref_quantize_weight_rows(wf, N, K, rq, rs);
			cr_expect(!memcmp(rq, q->data, (size_t)(N * K)), "%s: q differs from ref", m);
			cr_expect(!memcmp(rs, s->data, (size_t)N * 2), "%s: scale differs from ref", m);
			free(rq);
			free(rs);
		}
		float *sf = to_f32(s);
		double e2 = 0, w2 = 0;
		for (int64_t n = 0; n < N; n++)
			for (int64_t k = 0; k < K; k++) {
				double d = (double)((const int8_t *)q->data)[n * K + k] * sf[n] - wf[n * K + k];
				e2 += d * d;
				w2 += (double)wf[n * K + k] * wf[n * K + k];
			}
		double rel = sqrt(e2 / w2);
		cr_expect(rel > REL_L2_MIN && rel < REL_L2_MAX, "%s: rel-L2 %g", m, rel);
		free(sf);
		free(wf);
		n_quant++;
	}
	/* Every input tensor not quantized is in OUT as it was. */
	size_t n_in = ctq_checkpoint_count(&ci);
	for (size_t i = 0; i < n_in; i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&ci, i, NULL);
		const struct ctq_st_tensor *u = ctq_checkpoint_find(&co, t->name, NULL);
		cr_assert(u, "%s missing from OUT", t->name);
		if (u->dtype == CTQ_DTYPE_I8)
			continue;
		cr_expect(same_tensor(t, u), "%s was not copied byte for byte", t->name);
	}
	cr_expect_eq(ctq_checkpoint_count(&co), n_in + n_quant, "OUT holds %zu tensors, want %zu",
		     ctq_checkpoint_count(&co), n_in + n_quant);
	ctq_modules_free(&mods);
	ctq_checkpoint_close(&ci);
	ctq_checkpoint_close(&co);
	return n_quant;
}

/* The written config resolves (strict) to w8a8-int8 on every quantized
 * module and unquantized on the rest; its ignore list is `ignore`
 * (NULL-terminated, in this order). */
static void expect_resolution(const char *out, const char *const *ignore)
{
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_plan plan;
	struct ctq_error err = {0};
	memset(&plan, 0, sizeof plan);
	cr_assert_eq(ctq_qconfig_load(&cfg, out, NULL, &err), CTQ_OK, "%s: %s", err.path, err.message);
	ctq_modules_init(&mods);
	cr_assert_eq(ctq_modules_from_config(&mods, cfg.raw, "", NULL, &err), CTQ_OK);
	cr_assert_eq(ctq_plan_resolve(&plan, &cfg, &mods, CTQ_SEM_STRICT, NULL, &err), CTQ_OK,
		     "%s", err.message);
	cr_expect(ctq_plan_executable(&plan));
	size_t n = 0;
	while (ignore[n])
		n++;
	cr_assert_eq(cfg.n_ignore, n, "ignore has %zu entries, want %zu", cfg.n_ignore, n);
	for (size_t i = 0; i < n; i++)
		cr_expect_str_eq(cfg.ignore[i], ignore[i], "ignore[%zu]", i);
	for (size_t i = 0; i < mods.n; i++) {
		const struct ctq_plan_entry *e = &plan.entries[i];
		const struct ctq_module *m = &mods.v[i];
		cr_assert_eq(e->error, CTQ_OK, "%s: %s", m->name, e->message);
		if (m->kind == CTQ_MODULE_LINEAR && !listed(ignore, m->name)) {
			cr_expect_str_eq(e->scheme, "w8a8-int8", "%s", m->name);
		} else {
			cr_expect_str_eq(e->scheme, "unquantized", "%s", m->name);
			if (m->kind == CTQ_MODULE_LINEAR)
				cr_expect_eq(e->by, CTQ_BY_IGNORE, "%s", m->name);
		}
	}
	/* The loader accepts what the quantizer wrote, every Linear module
	 * (a tied lm_head included). */
	struct ctq_checkpoint ck;
	cr_assert_eq(ctq_checkpoint_open(&ck, out, &err), CTQ_OK, "%s", err.message);
	size_t n_loaded = 0, n_linear = 0;
	for (size_t i = 0; i < mods.n; i++)
		n_linear += mods.v[i].kind == CTQ_MODULE_LINEAR;
	cr_expect_eq(ctq_load_check(&ck, &plan, &n_loaded, &err), CTQ_OK, "loader: %s at %s: %s",
		     ctq_status_name(err.status), err.path, err.message);
	cr_expect_eq(n_loaded, n_linear);
	ctq_checkpoint_close(&ck);
	ctq_plan_free(&plan);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
}

/* ---- the W8A8 checkpoint ------------------------------------------------------ */

Test(quantize, every_arch_quantizes_to_the_reference)
{
	static const char *const archs[] = {"qwen3", "qwen2", "llama"};
	char *root = make_tmpdir();
	for (size_t a = 0; a < 3; a++) {
		char name[32];
		snprintf(name, sizeof name, "%s-in", archs[a]);
		const char *untied[] = {"--untied", NULL};
		char *in = tiny(root, name, archs[a], untied);
		snprintf(name, sizeof name, "%s-out", archs[a]);
		char *out = join(root, name);
		cr_assert_eq(quantize(in, out, NULL), CTQ_EXIT_OK, "%s", archs[a]);
		const char *none[] = {NULL};
		/* 2 layers x 7 projections; lm_head (untied here) stays BF16. */
		cr_expect_eq(expect_quantized(in, out, none), 14u, "%s", archs[a]);
		const char *ign[] = {"lm_head", NULL};
		expect_resolution(out, ign);
		free(in);
		free(out);
	}
	ctq_remove_tree(root);
	free(root);
}

Test(quantize, config_keeps_every_field_and_adds_the_producer_block)
{
	char *root = make_tmpdir();
	char *in = tiny(root, "in", "qwen3", NULL);
	char *out = join(root, "out");
	const char *hybrid[] = {"--ignore", "model.layers.0.self_attn.o_proj", NULL};
	cr_assert_eq(quantize(in, out, hybrid), CTQ_EXIT_OK);
	cJSON *ci = load_json(in, "config.json"), *co = load_json(out, "config.json");
	for (const cJSON *f = ci->child; f; f = f->next)
		cr_expect(cJSON_Compare(f, ctq_json_get(co, f->string), true), "%s changed", f->string);
	cr_expect_eq(cJSON_GetArraySize(co), cJSON_GetArraySize(ci) + 1);
	const cJSON *qc = ctq_json_get(co, "quantization_config");
	cr_assert(qc);
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	cr_assert_eq(ctq_json_write_python(qc, 2, true, &sb), CTQ_OK);
	cr_expect_str_eq(ctq_strbuf_str(&sb), golden_block);
	ctq_strbuf_free(&sb);
	/* The file itself is json.dumps(indent=2, sort_keys=True) + "\n":
	 * what ctq_json_write_python gives for the parsed file. */
	char *cp = join(out, "config.json");
	char *text = NULL;
	size_t len = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(cp, 1 << 20, &text, &len, &err), CTQ_OK);
	ctq_strbuf_init(&sb);
	cr_assert_eq(ctq_json_write_python(co, 2, true, &sb), CTQ_OK);
	ctq_strbuf_append(&sb, "\n");
	cr_expect_str_eq(text, ctq_strbuf_str(&sb));
	ctq_strbuf_free(&sb);
	free(text);
	free(cp);
	cJSON_Delete(ci);
	cJSON_Delete(co);
	ctq_remove_tree(root);
	free(in), free(out), free(root);
}

Test(quantize, hybrid_keeps_an_ignored_projection_bf16)
{
	char *root = make_tmpdir();
	char *in = tiny(root, "in", "qwen3", NULL);
	char *out = join(root, "out");
	const char *args[] = {"--ignore", "model.layers.0.self_attn.o_proj", NULL};
	cr_assert_eq(quantize(in, out, args), CTQ_EXIT_OK);
	const char *ign[] = {"model.layers.0.self_attn.o_proj", "lm_head", NULL};
	cr_expect_eq(expect_quantized(in, out, ign), 13u);
	expect_resolution(out, ign);
	struct ctq_checkpoint co;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&co, out, &err), CTQ_OK);
	const struct ctq_st_tensor *w =
		ctq_checkpoint_find(&co, "model.layers.0.self_attn.o_proj.weight", NULL);
	cr_assert(w);
	cr_expect_eq(w->dtype, CTQ_DTYPE_BF16);
	cr_expect_null(ctq_checkpoint_find(&co, "model.layers.0.self_attn.o_proj.weight_scale", NULL));
	cr_expect(ctq_checkpoint_find(&co, "model.layers.1.self_attn.o_proj.weight_scale", NULL));
	ctq_checkpoint_close(&co);

	/* A whole fused set may be ignored: gate and up of layer 1. */
	char *out2 = join(root, "out2");
	const char *pair[] = {"--ignore", "re:model\\.layers\\.1\\.mlp\\.(gate|up)_proj", NULL};
	cr_assert_eq(quantize(in, out2, pair), CTQ_EXIT_OK);
	const char *ign2[] = {"model.layers.1.mlp.gate_proj", "model.layers.1.mlp.up_proj", "lm_head",
			      NULL};
	cr_expect_eq(expect_quantized(in, out2, ign2), 12u);
	expect_resolution(out2, ign2);
	free(out2);
	ctq_remove_tree(root);
	free(in), free(out), free(root);
}

/* re: entries are written as the explicit names they match (§5.1.7), in
 * model order, lm_head last; an exact entry repeating a match is listed
 * once. */
Test(quantize, regex_ignore_expands_to_explicit_names)
{
	char *root = make_tmpdir();
	char *in = tiny(root, "in", "llama", NULL);
	char *out = join(root, "out");
	const char *args[] = {"--ignore", "re:.*down_proj", "--ignore", "model.layers.1.mlp.down_proj",
			      "--ignore", "lm_head", NULL};
	cr_assert_eq(quantize(in, out, args), CTQ_EXIT_OK);
	const char *ign[] = {"model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj", "lm_head",
			     NULL};
	cr_expect_eq(expect_quantized(in, out, ign), 12u);
	expect_resolution(out, ign);
	char *cp = join(out, "config.json");
	char *text = NULL;
	size_t len = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(cp, 1 << 20, &text, &len, &err), CTQ_OK);
	cr_expect_null(strstr(text, "re:"), "a regex was written to the config");
	free(text);
	free(cp);
	ctq_remove_tree(root);
	free(in), free(out), free(root);
}

Test(quantize, report_and_summary_match_the_weights)
{
	char *root = make_tmpdir();
	char *in = tiny(root, "in", "qwen3", NULL);
	char *out = join(root, "out");
	struct ctq_quantize_result res;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_mkdirs(out, &err), CTQ_OK);
	cr_assert_eq(ctq_quantize_checkpoint(in, out, NULL, &res, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(res.n_modules, 14u);
	cr_expect_eq(res.n_ignore, 1u);
	cr_expect_str_eq(res.ignore[0], "lm_head");
	cr_expect_eq(res.n_tensors, 24u + 14u);
	cr_expect_eq(res.n_copied, 24u - 14u);
	double sum = 0, max = 0;
	for (size_t i = 0; i < res.n_modules; i++) {
		const struct ctq_quantize_module *m = &res.modules[i];
		cr_expect(m->rel_l2 > REL_L2_MIN && m->rel_l2 < REL_L2_MAX, "%s: %g", m->name, m->rel_l2);
		cr_expect_eq(m->dtype, CTQ_DTYPE_BF16);
		cr_expect(m->K == 64 || m->K == 176, "%s: K %lld", m->name, (long long)m->K);
		sum += m->rel_l2;
		max = fmax(max, m->rel_l2);
	}
	cr_expect(fabs(res.rel_l2_mean - sum / 14) < 1e-15);
	cr_expect_eq(res.rel_l2_max, max);
	cr_expect_str_eq(res.modules[0].name, "model.layers.0.self_attn.q_proj", "model order");
	ctq_quantize_result_free(&res);
	ctq_quantize_result_free(&res);

	/* Through the command: the CSV holds one row per module. */
	char *out2 = join(root, "out2");
	cr_assert_eq(quantize(in, out2, NULL), CTQ_EXIT_OK);
	char *csv = join(out2, "quantization_report.csv");
	char *text = NULL;
	size_t len = 0;
	cr_assert_eq(ctq_file_read(csv, 1 << 20, &text, &len, &err), CTQ_OK);
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	cr_expect_eq(lines, 15u, "header + 14 modules, got %zu lines", lines);
	cr_expect(strstr(text, "module") == text || strstr(text, "\"module\"") == text, "%s", text);
	cr_expect(strstr(text, "model.layers.1.mlp.down_proj"));
	free(text);
	free(csv);
	ctq_remove_tree(root);
	free(in), free(out), free(out2), free(root);
}

/* ---- F16 and F32 models -------------------------------------------------------- */

/* Rewrites the BF16 checkpoint in `in` as dtype (F16 or F32) into dir,
 * with row 0 of layer 0's q_proj set to zero. */
static void convert_model(const char *in, const char *dir, enum ctq_dtype dtype)
{
	struct ctq_checkpoint ck;
	struct ctq_st_writer w;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&ck, in, &err), CTQ_OK);
	ctq_st_writer_init(&w);
	size_t n = ctq_checkpoint_count(&ck);
	void **bufs = calloc(n, sizeof *bufs);
	for (size_t i = 0; i < n; i++) {
		const struct ctq_st_tensor *t = ctq_checkpoint_at(&ck, i, NULL);
		float *f = to_f32(t);
		if (!strcmp(t->name, "model.layers.0.self_attn.q_proj.weight"))
			memset(f, 0, (size_t)t->shape[1] * sizeof *f);
		if (dtype == CTQ_DTYPE_F16) {
			uint16_t *h = malloc(t->n_elements * 2);
			ctq_convert_f32_to_f16(f, t->n_elements, h);
			free(f);
			bufs[i] = h;
		} else {
			bufs[i] = f;
		}
		cr_assert_eq(ctq_st_writer_add(&w, t->name, dtype, t->ndim, t->shape, bufs[i],
					       t->n_elements * ctq_dtype_size(dtype), &err),
			     CTQ_OK);
	}
	cr_assert_eq(ctq_checkpoint_write(dir, &w, 0, &err), CTQ_OK, "%s", err.message);
	char *src = join(in, "config.json"), *dst = join(dir, "config.json");
	char *text = NULL;
	size_t len = 0;
	cr_assert_eq(ctq_file_read(src, 1 << 20, &text, &len, &err), CTQ_OK);
	cr_assert_eq(ctq_file_write_atomic(dst, text, len, &err), CTQ_OK);
	free(text), free(src), free(dst);
	ctq_st_writer_free(&w);
	for (size_t i = 0; i < n; i++)
		free(bufs[i]);
	free(bufs);
	ctq_checkpoint_close(&ck);
}

/* F16 / F32 weights: the scale is max(amax / 127, f32 eps) rounded to the
 * model dtype and stored in it; q = clamp(rint(w / s)) with that stored s.
 * A zero row gets the eps scale and q = 0. */
Test(quantize, f16_and_f32_models_keep_their_dtype)
{
	static const enum ctq_dtype dtypes[] = {CTQ_DTYPE_F16, CTQ_DTYPE_F32};
	char *root = make_tmpdir();
	char *bf = tiny(root, "bf16", "qwen2", NULL);
	for (size_t d = 0; d < 2; d++) {
		enum ctq_dtype dt = dtypes[d];
		char name[32];
		snprintf(name, sizeof name, "%s-in", ctq_dtype_name(dt));
		char *in = join(root, name);
		snprintf(name, sizeof name, "%s-out", ctq_dtype_name(dt));
		char *out = join(root, name);
		convert_model(bf, in, dt);
		cr_assert_eq(quantize(in, out, NULL), CTQ_EXIT_OK, "%s", ctq_dtype_name(dt));
		const char *none[] = {NULL};
		cr_expect_eq(expect_quantized(in, out, none), 14u);

		struct ctq_checkpoint ci, co;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_checkpoint_open(&ci, in, &err), CTQ_OK);
		cr_assert_eq(ctq_checkpoint_open(&co, out, &err), CTQ_OK);
		static const char *const mods[] = {"model.layers.0.self_attn.q_proj",
						   "model.layers.1.mlp.down_proj"};
		for (size_t m = 0; m < 2; m++) {
			char wn[128], sn[128];
			snprintf(wn, sizeof wn, "%s.weight", mods[m]);
			snprintf(sn, sizeof sn, "%s.weight_scale", mods[m]);
			const struct ctq_st_tensor *w = ctq_checkpoint_find(&ci, wn, NULL);
			const struct ctq_st_tensor *q = ctq_checkpoint_find(&co, wn, NULL);
			const struct ctq_st_tensor *s = ctq_checkpoint_find(&co, sn, NULL);
			cr_assert(w && q && s);
			cr_expect_eq(s->dtype, dt);
			float *wf = to_f32(w), *sf = to_f32(s);
			int64_t N = w->shape[0], K = w->shape[1];
			for (int64_t n = 0; n < N; n++) {
				float amax = 0;
				for (int64_t k = 0; k < K; k++)
					amax = fmaxf(amax, fabsf(wf[n * K + k]));
				float s32 = fmaxf(amax / 127.0f, FLT_EPSILON);
				float want = dt == CTQ_DTYPE_F16 ? ctq_f16_to_f32(ctq_f32_to_f16(s32)) : s32;
				cr_expect_eq(sf[n], want, "%s row %lld: scale %g, want %g", mods[m],
					     (long long)n, sf[n], want);
				for (int64_t k = 0; k < K; k++)
					cr_expect_eq(((const int8_t *)q->data)[n * K + k],
						     ctq_quantize(wf[n * K + k], want), "%s [%lld,%lld]",
						     mods[m], (long long)n, (long long)k);
			}
			if (m == 0) {
				cr_expect_eq(sf[0], dt == CTQ_DTYPE_F16 ? ctq_f16_to_f32(ctq_f32_to_f16(FLT_EPSILON))
									 : FLT_EPSILON);
				for (int64_t k = 0; k < K; k++)
					cr_expect_eq(((const int8_t *)q->data)[k], 0);
			}
			free(wf), free(sf);
		}
		ctq_checkpoint_close(&ci);
		ctq_checkpoint_close(&co);
		free(in), free(out);
	}
	ctq_remove_tree(root);
	free(bf), free(root);
}

/* ---- files, shards, threads ------------------------------------------------------ */

Test(quantize, aux_files_are_copied_and_shards_hold_the_same_tensors)
{
	char *root = make_tmpdir();
	const char *shard[] = {"--max-shard-bytes", "60000", "--untied", NULL};
	char *in = tiny(root, "in", "qwen3", shard);
	static const char *const aux[] = {"tokenizer.json", "tokenizer_config.json",
					  "special_tokens_map.json"};
	struct ctq_error err = {0};
	for (size_t i = 0; i < 3; i++) {
		char *p = join(in, aux[i]);
		cr_assert_eq(ctq_file_write_atomic(p, aux[i], strlen(aux[i]), &err), CTQ_OK);
		free(p);
	}
	char *one = join(root, "one"), *many = join(root, "many");
	cr_assert_eq(quantize(in, one, NULL), CTQ_EXIT_OK);
	const char *limit[] = {"--max-shard-bytes", "30000", NULL};
	cr_assert_eq(quantize(in, many, limit), CTQ_EXIT_OK);
	const char *none[] = {NULL};
	cr_expect_eq(expect_quantized(in, many, none), 14u);
	static const char *const copied[] = {"tokenizer.json", "tokenizer_config.json",
					     "special_tokens_map.json", "generation_config.json"};
	for (size_t i = 0; i < 4; i++) {
		char hi[CTQ_SHA256_HEX], ho[CTQ_SHA256_HEX];
		file_hash(in, copied[i], hi);
		file_hash(many, copied[i], ho);
		cr_expect_str_eq(hi, ho, "%s not copied", copied[i]);
	}
	struct ctq_checkpoint c1, c2;
	cr_assert_eq(ctq_checkpoint_open(&c1, one, &err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_open(&c2, many, &err), CTQ_OK);
	cr_expect(c2.sharded && c2.n_files > 3, "%zu files", c2.n_files);
	cr_assert_eq(ctq_checkpoint_count(&c1), ctq_checkpoint_count(&c2));
	for (size_t i = 0; i < ctq_checkpoint_count(&c1); i++)
		cr_expect(same_tensor(ctq_checkpoint_at(&c1, i, NULL), ctq_checkpoint_at(&c2, i, NULL)),
			  "%s", ctq_checkpoint_at(&c1, i, NULL)->name);
	ctq_checkpoint_close(&c1);
	ctq_checkpoint_close(&c2);
	ctq_remove_tree(root);
	free(in), free(one), free(many), free(root);
}

Test(quantize, output_does_not_depend_on_the_thread_count)
{
	char *root = make_tmpdir();
	char *in = tiny(root, "in", "qwen3", NULL);
	char *a = join(root, "a"), *b = join(root, "b");
	ctq_threads_set(1);
	cr_assert_eq(quantize(in, a, NULL), CTQ_EXIT_OK);
	ctq_threads_set(3);
	cr_assert_eq(quantize(in, b, NULL), CTQ_EXIT_OK);
	static const char *const files[] = {"model.safetensors", "quantization_report.csv",
					    "config.json"};
	for (size_t i = 0; i < 3; i++) {
		char ha[CTQ_SHA256_HEX], hb[CTQ_SHA256_HEX];
		file_hash(a, files[i], ha);
		file_hash(b, files[i], hb);
		cr_expect_str_eq(ha, hb, "%s differs between 1 and 3 threads", files[i]);
	}
	ctq_remove_tree(root);
	free(in), free(a), free(b), free(root);
}

/* ---- bad input and failures ---------------------------------------------------- */

Test(quantize, bad_usage_and_bad_input_leave_no_out)
{
	char *root = make_tmpdir();
	char *in = tiny(root, "in", "qwen3", NULL);
	char *out = join(root, "out");
	char *missing = join(root, "absent");
	const struct {
		const char *id;
		const char *args[10];
	} bad[] = {
		{"missing-in", {missing, out}},
		{"no-out", {in}},
		{"no-args", {NULL}},
		{"three-paths", {in, out, missing}},
		{"unknown-option", {in, out, "--bogus"}},
		{"ignore-no-value", {in, out, "--ignore"}},
		{"ignore-empty", {in, out, "--ignore", ""}},
		{"ignore-not-a-module", {in, out, "--ignore", "model.layers.9.self_attn.o_proj"}},
		{"ignore-not-linear", {in, out, "--ignore", "model.embed_tokens"}},
		{"ignore-attention", {in, out, "--ignore", "model.layers.0.self_attn"}},
		{"ignore-regex-matches-nothing", {in, out, "--ignore", "re:.*experts"}},
		{"ignore-regex-bad", {in, out, "--ignore", "re:(unclosed"}},
		{"ignore-splits-qkv", {in, out, "--ignore", "model.layers.0.self_attn.q_proj"}},
		{"ignore-splits-gate-up", {in, out, "--ignore", "re:.*gate_proj"}},
		{"out-is-in", {in, in}},
		{"shard-limit-zero", {in, out, "--max-shard-bytes", "0"}},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int rc = run_cmd(ctq_cmd_quantize, "quantize", bad[i].args);
		cr_expect_eq(rc, CTQ_EXIT_USAGE, "%s: rc %d", bad[i].id, rc);
		cr_expect_not(ctq_path_exists(out), "%s created OUT", bad[i].id);
		expect_no_leftovers(root, "out");
	}
	const char *help[] = {"--help", NULL};
	cr_expect_eq(run_cmd(ctq_cmd_quantize, "quantize", help), CTQ_EXIT_OK);
	/* IN is still intact after "out-is-in". */
	char *cfg = join(in, "config.json");
	cr_expect(ctq_path_exists(cfg));
	free(cfg);

	/* An already quantized checkpoint is refused. */
	cr_assert_eq(quantize(in, out, NULL), CTQ_EXIT_OK);
	char *again = join(root, "again");
	cr_expect_eq(quantize(out, again, NULL), CTQ_EXIT_USAGE);
	cr_expect_not(ctq_path_exists(again));
	/* OUT exists and is not empty: kept unless --force. */
	char hash0[CTQ_SHA256_HEX], hash1[CTQ_SHA256_HEX];
	file_hash(out, "model.safetensors", hash0);
	const char *hybrid[] = {"--ignore", "model.layers.0.self_attn.o_proj", NULL};
	cr_expect_eq(quantize(in, out, hybrid), CTQ_EXIT_USAGE);
	file_hash(out, "model.safetensors", hash1);
	cr_expect_str_eq(hash0, hash1, "a refused run changed OUT");
	const char *forced[] = {"--ignore", "model.layers.0.self_attn.o_proj", "--force", NULL};
	cr_expect_eq(quantize(in, out, forced), CTQ_EXIT_OK);
	file_hash(out, "model.safetensors", hash1);
	cr_expect_str_neq(hash0, hash1, "--force did not replace OUT");
	expect_no_leftovers(root, "out");
	ctq_remove_tree(root);
	free(in), free(out), free(missing), free(again), free(root);
}

/* config.json variants: "quantization_config": null is an unquantized
 * model (replaced, never duplicated); a text_config (multimodal) model is
 * refused, since its vision Linear modules are not enumerated. */
Test(quantize, config_variants)
{
	char *root = make_tmpdir();
	char *in = tiny(root, "in", "qwen3", NULL);
	char *cfg_path = join(in, "config.json");
	struct ctq_error err = {0};
	cJSON *c = load_json(in, "config.json");
	cJSON_AddNullToObject(c, "quantization_config");
	cr_assert_eq(ctq_json_save_hf(cfg_path, c, &err), CTQ_OK);
	char *out = join(root, "out");
	cr_assert_eq(quantize(in, out, NULL), CTQ_EXIT_OK);
	char *written = join(out, "config.json");
	char *text = NULL;
	size_t len = 0;
	cr_assert_eq(ctq_file_read(written, 1 << 20, &text, &len, &err), CTQ_OK);
	cr_expect(strstr(text, "\"quantization_config\": {"), "%s", text);
	cr_expect_null(strstr(strstr(text, "\"quantization_config\"") + 1, "\"quantization_config\""),
		       "quantization_config written twice");
	free(text);
	const char *ign[] = {"lm_head", NULL};
	expect_resolution(out, ign);

	cJSON_AddItemToObject(c, "text_config", cJSON_CreateObject());
	cr_assert_eq(ctq_json_save_hf(cfg_path, c, &err), CTQ_OK);
	char *out2 = join(root, "out2");
	cr_expect_eq(quantize(in, out2, NULL), CTQ_EXIT_USAGE);
	cr_expect_not(ctq_path_exists(out2));
	expect_no_leftovers(root, "out2");
	cJSON_Delete(c);
	ctq_remove_tree(root);
	free(in), free(cfg_path), free(out), free(written), free(out2), free(root);
}

/* Inputs that fail midway through: no weights file, a truncated one, a
 * weight missing from the file, a NaN in a weight. Each is exit 2 and
 * leaves neither OUT nor a temporary folder. */
Test(quantize, broken_inputs_leave_nothing)
{
	char *root = make_tmpdir();
	char *src = tiny(root, "src", "qwen3", NULL);
	char *out = join(root, "out");
	struct ctq_error err = {0};
	char *st_src = join(src, "model.safetensors");
	char *data = NULL;
	size_t len = 0;
	cr_assert_eq(ctq_file_read(st_src, 1 << 24, &data, &len, &err), CTQ_OK);
	char *cfg_text = NULL;
	size_t cfg_len = 0;
	char *cfg_src = join(src, "config.json");
	cr_assert_eq(ctq_file_read(cfg_src, 1 << 20, &cfg_text, &cfg_len, &err), CTQ_OK);

	for (int c = 0; c < 4; c++) {
		char name[16];
		snprintf(name, sizeof name, "in%d", c);
		char *in = join(root, name);
		cr_assert_eq(ctq_mkdirs(in, &err), CTQ_OK);
		char *cfg = join(in, "config.json"), *st = join(in, "model.safetensors");
		cr_assert_eq(ctq_file_write_atomic(cfg, cfg_text, cfg_len, &err), CTQ_OK);
		if (c == 1) {
			cr_assert_eq(ctq_file_write_atomic(st, data, len / 2, &err), CTQ_OK);
		} else if (c == 2) {
			/* Config with 3 layers, weights with 2. */
			cJSON *j = NULL;
			cr_assert_eq(ctq_json_parse(cfg_text, cfg_len, "c", NULL, &j, &err), CTQ_OK);
			cJSON_ReplaceItemInObjectCaseSensitive(j, "num_hidden_layers",
							       cJSON_CreateNumber(3));
			cr_assert_eq(ctq_json_save_hf(cfg, j, &err), CTQ_OK);
			cJSON_Delete(j);
			cr_assert_eq(ctq_file_write_atomic(st, data, len, &err), CTQ_OK);
		} else if (c == 3) {
			/* A NaN (bf16 0x7fc0) in layer 1's up_proj. */
			cr_assert_eq(ctq_file_write_atomic(st, data, len, &err), CTQ_OK);
			struct ctq_st_file f;
			cr_assert_eq(ctq_st_open(&f, st, &err), CTQ_OK);
			const struct ctq_st_tensor *t = ctq_st_find(&f, "model.layers.1.mlp.up_proj.weight");
			cr_assert(t);
			uint64_t off = t->file_offset + 2 * 70;
			ctq_st_close(&f);
			data[off] = (char)0xc0;
			data[off + 1] = 0x7f;
			cr_assert_eq(ctq_file_write_atomic(st, data, len, &err), CTQ_OK);
		}
		int rc = quantize(in, out, NULL);
		cr_expect_eq(rc, CTQ_EXIT_USAGE, "case %d: rc %d", c, rc);
		cr_expect_not(ctq_path_exists(out), "case %d left OUT", c);
		expect_no_leftovers(root, "out");
		free(cfg), free(st), free(in);
	}
	/* The library names the NaN row. */
	char *in3 = join(root, "in3");
	char *dir = join(root, "lib");
	struct ctq_quantize_result res;
	ctq_error_clear(&err);
	cr_expect_eq(ctq_quantize_checkpoint(in3, dir, NULL, &res, &err), CTQ_ERR_CHECKPOINT);
	cr_expect_str_eq(err.path, "model.layers.1.mlp.up_proj.weight");
	cr_expect(strstr(err.message, "row 1 "), "%s", err.message);
	ctq_quantize_result_free(&res);
	free(data), free(cfg_text), free(st_src), free(cfg_src), free(in3), free(dir);
	ctq_remove_tree(root);
	free(src), free(out), free(root);
}

/* A config whose sizes contradict the tensors: transformers refuses to load
 * it (size mismatch for ...weight), so quantize must refuse it too, naming
 * the first contradicted weight, instead of writing a checkpoint eval
 * rejects later. */
Test(quantize, config_contradicting_the_tensors_is_refused)
{
	char *root = make_tmpdir();
	char *src = tiny(root, "src", "qwen3", NULL);
	struct ctq_error err = {0};
	char *cfg_path = join(src, "config.json");
	cJSON *j = NULL;
	cr_assert_eq(ctq_json_load_file(cfg_path, 1 << 20, NULL, &j, &err), CTQ_OK, "%s", err.message);
	const cJSON *is = cJSON_GetObjectItemCaseSensitive(j, "intermediate_size");
	cr_assert(cJSON_IsNumber(is));
	cJSON_ReplaceItemInObjectCaseSensitive(j, "intermediate_size",
					       cJSON_CreateNumber(is->valuedouble * 2));
	cr_assert_eq(ctq_json_save_hf(cfg_path, j, &err), CTQ_OK);
	cJSON_Delete(j);
	char *dir = join(root, "out");
	struct ctq_quantize_result res;
	ctq_error_clear(&err);
	cr_expect_eq(ctq_quantize_checkpoint(src, dir, NULL, &res, &err), CTQ_ERR_CHECKPOINT);
	cr_expect_str_eq(err.path, "model.layers.0.mlp.gate_proj.weight");
	cr_expect(strstr(err.message, "size mismatch"), "%s", err.message);
	cr_expect_not(ctq_path_exists(dir));
	ctq_quantize_result_free(&res);
	ctq_remove_tree(root);
	free(cfg_path), free(dir), free(src), free(root);
}

/* Every allocation failed in turn (a stride through the count): each run
 * fails cleanly with nothing left, until the checkpoint is written. */
Test(quantize, allocation_failures_leave_nothing, .timeout = 120)
{
	char *root = make_tmpdir();
	const char *shard[] = {"--max-shard-bytes", "60000", NULL};
	char *in = tiny(root, "in", "qwen2", shard);
	char *out = join(root, "out");
	const char *args[] = {"--ignore", "re:.*o_proj", "--max-shard-bytes", "40000", NULL};
	bool written = false;
	int failures = 0;
	for (long n = 0; n < 1000000 && !written; n = n < 40 ? n + 1 : n * 5 / 4) {
		ctq_alloc_fail_after(n);
		int rc = quantize(in, out, args);
		ctq_alloc_fail_after(-1);
		if (rc == CTQ_EXIT_OK) {
			written = true;
			break;
		}
		failures++;
		cr_expect_eq(rc, CTQ_EXIT_USAGE, "n=%ld: rc %d", n, rc);
		cr_expect_not(ctq_path_exists(out), "n=%ld: OUT exists after a failure", n);
		expect_no_leftovers(root, "out");
	}
	cr_expect(written, "never succeeded");
	cr_expect_gt(failures, 10, "the sweep must hit failures");
	ctq_remove_tree(root);
	free(in), free(out), free(root);
}
