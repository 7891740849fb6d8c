/* Criterion tests for quant/safetensors: writer/reader round trips, layout
 * and alignment, metadata, empty and scalar tensors, sharded checkpoints, a
 * table of malformed files and indexes (each a checkpoint-error naming
 * "file:offset"), and compatibility with the Python library through
 * tests/fixtures/oracle.safetensors + oracle.json (made by
 * tests/oracle/make_safetensors_fixture.py). Run from the repository root,
 * or set CTQ_FIXTURES to the fixtures folder. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/sha256.h"
#include "checkpoint/safetensors.h"

/* ---- helpers -------------------------------------------------------------- */

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/ctq-st-XXXXXX";
	cr_assert(mkdtemp(tmpl), "mkdtemp");
	return strdup(tmpl);
}

static char *join(const char *dir, const char *name)
{
	char *p = ctq_path_join(dir, name);
	cr_assert(p);
	return p;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f, "cannot create %s", path);
	cr_assert_eq(fwrite(data, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
}

static unsigned char *read_all(const char *path, size_t *n)
{
	char *buf = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(path, (size_t)1 << 30, &buf, n, &err), CTQ_OK,
		     "%s: %s", err.path, err.message);
	return (unsigned char *)buf;
}

/* A safetensors file: the length field (the header's real length, or
 * `declared` when lie is set), the header text, then data_bytes of data. */
static void write_st(const char *path, const char *header, bool lie,
		     uint64_t declared, size_t data_bytes)
{
	size_t hlen = strlen(header);
	uint64_t len = lie ? declared : hlen;
	size_t n = 8 + hlen + data_bytes;
	unsigned char *buf = calloc(1, n);
	cr_assert(buf);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)(len >> (8 * i));
	memcpy(buf + 8, header, hlen);
	for (size_t i = 0; i < data_bytes; i++)
		buf[8 + hlen + i] = (unsigned char)(i * 7 + 1);
	write_bytes(path, buf, n);
	free(buf);
}

/* err is a checkpoint-error whose path names `file` then ':' then the
 * offset want_off (any offset when want_off < 0), and whose message
 * contains every needle (NULL-terminated list). */
static void expect_checkpoint_error(const char *id, enum ctq_status st,
				    const struct ctq_error *err, const char *file,
				    long long want_off, const char *const *needles)
{
	cr_assert_eq(st, CTQ_ERR_CHECKPOINT, "%s: got %s (%s: %s)", id,
		     ctq_status_name(st), err->path, err->message);
	cr_assert_eq(err->status, CTQ_ERR_CHECKPOINT, "%s: err.status", id);
	const char *at = strstr(err->path, file);
	cr_assert(at, "%s: path \"%s\" does not name %s", id, err->path, file);
	const char *colon = strchr(at, ':');
	cr_assert(colon, "%s: path \"%s\" has no ':'", id, err->path);
	if (want_off >= 0)
		cr_assert_eq(strtoll(colon + 1, NULL, 10), want_off,
			     "%s: path \"%s\", want offset %lld (%s)", id, err->path,
			     want_off, err->message);
	for (size_t i = 0; needles && needles[i]; i++)
		cr_assert(strstr(err->message, needles[i]),
			  "%s: message \"%s\" lacks \"%s\"", id, err->message, needles[i]);
}

/* A small model: (name, dtype, shape, bytes) with patterned data. */
struct tdef {
	const char *name;
	enum ctq_dtype dtype;
	int ndim;
	int64_t shape[CTQ_ST_MAX_NDIM];
};

static const struct tdef small_model[] = {
	{"model.embed_tokens.weight", CTQ_DTYPE_BF16, 2, {4, 3}},
	{"model.layers.0.self_attn.q_proj.weight", CTQ_DTYPE_I8, 2, {3, 5}},
	{"model.layers.0.self_attn.q_proj.weight_scale", CTQ_DTYPE_F32, 2, {3, 1}},
	{"model.layers.0.mlp.down_proj.bias", CTQ_DTYPE_F16, 1, {3}},
	{"position_ids", CTQ_DTYPE_I64, 2, {1, 3}},
	{"double", CTQ_DTYPE_F64, 1, {1}},
	{"empty", CTQ_DTYPE_F32, 1, {0}},
	{"scalar", CTQ_DTYPE_I32, 0, {0}},
	{"fp8", CTQ_DTYPE_F8_E4M3, 1, {5}},
	{"mask", CTQ_DTYPE_BOOL, 1, {2}},
	{"u8", CTQ_DTYPE_U8, 1, {3}},
	{"quote\"back\\slash\nnewline \xc3\xa9", CTQ_DTYPE_U8, 1, {1}},
};
#define N_SMALL (sizeof small_model / sizeof small_model[0])

static uint64_t tdef_bytes(const struct tdef *t)
{
	uint64_t n = ctq_dtype_size(t->dtype);
	for (int d = 0; d < t->ndim; d++)
		n *= (uint64_t)t->shape[d];
	return n;
}

/* Adds tensors to w with data from bufs[i] (allocated here, caller frees). */
static void add_all(struct ctq_st_writer *w, const struct tdef *defs, size_t n,
		    unsigned char **bufs)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t nb = tdef_bytes(&defs[i]);
		bufs[i] = malloc(nb ? nb : 1);
		for (uint64_t k = 0; k < nb; k++)
			bufs[i][k] = (unsigned char)(i * 31 + k * 13 + 5);
		struct ctq_error err = {0};
		cr_assert_eq(ctq_st_writer_add(w, defs[i].name, defs[i].dtype, defs[i].ndim,
					       defs[i].shape, bufs[i], nb, &err),
			     CTQ_OK, "add %s: %s", defs[i].name, err.message);
	}
}

static void expect_tensor(const struct ctq_st_tensor *t, const struct tdef *d,
			  const unsigned char *data)
{
	cr_assert(t, "tensor %s missing", d->name);
	cr_assert_str_eq(t->name, d->name);
	cr_assert_eq(t->dtype, d->dtype, "%s dtype", d->name);
	cr_assert_eq(t->ndim, d->ndim, "%s ndim", d->name);
	for (int k = 0; k < d->ndim; k++)
		cr_assert_eq(t->shape[k], d->shape[k], "%s shape[%d]", d->name, k);
	cr_assert_eq(t->n_bytes, tdef_bytes(d), "%s n_bytes", d->name);
	if (t->n_bytes)
		cr_assert_arr_eq(t->data, data, t->n_bytes, "%s bytes", d->name);
	cr_assert_eq(t->file_offset % ctq_dtype_size(t->dtype), 0,
		     "%s at %llu is not aligned to its element size", d->name,
		     (unsigned long long)t->file_offset);
}

/* ---- writer and reader ---------------------------------------------------- */

Test(safetensors, round_trip_bytes_metadata_alignment)
{
	char *dir = make_tmpdir();
	char *path = join(dir, "rt.safetensors");
	struct ctq_st_writer w;
	unsigned char *bufs[N_SMALL];
	struct ctq_error err = {0};
	ctq_st_writer_init(&w);
	add_all(&w, small_model, N_SMALL, bufs);
	cr_assert_eq(ctq_st_writer_set_metadata(&w, "format", "pt", &err), CTQ_OK);
	cr_assert_eq(ctq_st_writer_set_metadata(&w, "b_key", "first", &err), CTQ_OK);
	cr_assert_eq(ctq_st_writer_set_metadata(&w, "b_key", "second", &err), CTQ_OK);
	cr_assert_eq(ctq_st_writer_write(&w, path, &err), CTQ_OK, "%s", err.message);

	struct ctq_st_file f;
	cr_assert_eq(ctq_st_open(&f, path, &err), CTQ_OK, "%s: %s", err.path, err.message);
	cr_assert_eq(f.n_tensors, N_SMALL);
	cr_assert_eq(f.data_start % 8, 0, "header not padded to 8: %llu",
		     (unsigned long long)f.data_start);
	cr_assert_eq(f.header[f.header_bytes - 1] == ' ' || f.header[f.header_bytes - 1] == '}', 1);
	for (size_t i = 0; i < N_SMALL; i++)
		expect_tensor(ctq_st_find(&f, small_model[i].name), &small_model[i], bufs[i]);
	for (size_t i = 1; i < f.n_tensors; i++)
		cr_assert(strcmp(f.tensors[i - 1].name, f.tensors[i].name) < 0, "not sorted by name");
	cr_assert_null(ctq_st_find(&f, "absent"));
	cr_assert(f.has_metadata);
	cr_assert_eq(f.n_metadata, 2);
	cr_assert_str_eq(f.metadata[0].key, "b_key", "metadata written sorted by key");
	cr_assert_str_eq(ctq_st_metadata(&f, "b_key"), "second");
	cr_assert_str_eq(ctq_st_metadata(&f, "format"), "pt");
	cr_assert(strncmp(f.header, "{\"__metadata__\":{", 17) == 0, "__metadata__ first");

	/* The file is exactly length + header + the data, no holes. */
	uint64_t sum = 0;
	for (size_t i = 0; i < N_SMALL; i++)
		sum += tdef_bytes(&small_model[i]);
	cr_assert_eq(f.map_bytes, f.data_start + sum);

	const struct ctq_st_tensor *e = ctq_st_find(&f, "empty");
	cr_assert_eq(e->ndim, 1);
	cr_assert_eq(e->n_elements, 0);
	const struct ctq_st_tensor *s = ctq_st_find(&f, "scalar");
	cr_assert_eq(s->ndim, 0);
	cr_assert_eq(s->n_elements, 1);
	cr_assert_eq(s->n_bytes, 4);

	/* Writing again from what was read reproduces the file byte for byte. */
	struct ctq_st_writer w2;
	ctq_st_writer_init(&w2);
	for (size_t i = 0; i < f.n_tensors; i++) {
		const struct ctq_st_tensor *t = &f.tensors[i];
		cr_assert_eq(ctq_st_writer_add(&w2, t->name, t->dtype, t->ndim, t->shape,
					       t->data, t->n_bytes, &err), CTQ_OK);
	}
	for (size_t i = 0; i < f.n_metadata; i++)
		ctq_st_writer_set_metadata(&w2, f.metadata[i].key, f.metadata[i].value, &err);
	char *path2 = join(dir, "rt2.safetensors");
	cr_assert_eq(ctq_st_writer_write(&w2, path2, &err), CTQ_OK, "%s", err.message);
	size_t n1, n2;
	unsigned char *b1 = read_all(path, &n1), *b2 = read_all(path2, &n2);
	cr_assert_eq(n1, n2);
	cr_assert_arr_eq(b1, b2, n1, "rewrite differs");

	free(b1);
	free(b2);
	ctq_st_writer_free(&w2);
	ctq_st_close(&f);
	ctq_st_close(&f); /* idempotent */
	ctq_st_close(NULL);
	ctq_st_writer_free(&w);
	ctq_st_writer_free(&w);
	for (size_t i = 0; i < N_SMALL; i++)
		free(bufs[i]);
	ctq_remove_tree(dir);
	free(path);
	free(path2);
	free(dir);
}

Test(safetensors, empty_file_and_no_metadata_match_the_library)
{
	/* The library's own test: no tensors, no metadata -> "{}" + 6 spaces. */
	char *dir = make_tmpdir();
	char *path = join(dir, "empty.safetensors");
	struct ctq_st_writer w;
	struct ctq_error err = {0};
	ctq_st_writer_init(&w);
	cr_assert_eq(ctq_st_writer_write(&w, path, &err), CTQ_OK, "%s", err.message);
	size_t n;
	unsigned char *b = read_all(path, &n);
	static const unsigned char want[] = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
	cr_assert_eq(n, sizeof want);
	cr_assert_arr_eq(b, want, n);
	struct ctq_st_file f;
	cr_assert_eq(ctq_st_open(&f, path, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(f.n_tensors, 0);
	cr_assert_not(f.has_metadata);
	cr_assert_null(ctq_st_find(&f, "x"));

	/* And its F32 [1,2,3] "attn.0" example, byte for byte. */
	const float v[6] = {0, 1, 2, 3, 4, 5};
	const int64_t shape[3] = {1, 2, 3};
	cr_assert_eq(ctq_st_writer_add(&w, "attn.0", CTQ_DTYPE_F32, 3, shape, v, sizeof v, &err), CTQ_OK);
	cr_assert_eq(ctq_st_writer_write(&w, path, &err), CTQ_OK);
	free(b);
	b = read_all(path, &n);
	const char *hdr = "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}";
	cr_assert_eq(n, 8 + 64 + 24);
	cr_assert_eq(b[0], 64);
	cr_assert(memcmp(b + 8, hdr, strlen(hdr)) == 0);
	cr_assert_arr_eq(b + 72, v, sizeof v);
	free(b);
	ctq_st_close(&f);
	ctq_st_writer_free(&w);
	ctq_remove_tree(dir);
	free(path);
	free(dir);
}

struct add_case {
	const char *id;
	const char *name;
	int dtype;
	int ndim;
	int64_t shape[CTQ_ST_MAX_NDIM + 1];
	uint64_t n_bytes;
	const char *needle;
};

Test(safetensors, writer_rejects_bad_tensors)
{
	static const struct add_case cases[] = {
		{"duplicate-name", "w", CTQ_DTYPE_F32, 1, {2}, 8, "added twice"},
		{"reserved-name", "__metadata__", CTQ_DTYPE_F32, 1, {2}, 8, "reserved"},
		{"empty-name", "", CTQ_DTYPE_F32, 1, {2}, 8, "empty"},
		{"non-utf8-name", "bad\xff", CTQ_DTYPE_F32, 1, {2}, 8, "UTF-8"},
		{"bytes-disagree", "x", CTQ_DTYPE_F32, 2, {2, 3}, 20, "needs 24"},
		{"negative-dim", "x", CTQ_DTYPE_F32, 1, {-1}, 0, "non-negative"},
		{"too-many-dims", "x", CTQ_DTYPE_F32, 9, {1, 1, 1, 1, 1, 1, 1, 1, 1}, 4, "ndim is 9"},
		{"bad-dtype", "x", CTQ_DTYPE_COUNT, 1, {1}, 1, "not a ctq dtype"},
		{"size-overflow", "x", CTQ_DTYPE_F64, 3, {1LL << 30, 1LL << 30, 1LL << 30}, 0, "2^64"},
	};
	static const float data[6];
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	struct ctq_error err = {0};
	const int64_t two[1] = {2};
	cr_assert_eq(ctq_st_writer_add(&w, "w", CTQ_DTYPE_F32, 1, two, data, 8, &err), CTQ_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct add_case *c = &cases[i];
		ctq_error_clear(&err);
		enum ctq_status st = ctq_st_writer_add(&w, c->name, (enum ctq_dtype)c->dtype, c->ndim,
						       c->shape, data, c->n_bytes, &err);
		cr_assert_eq(st, CTQ_ERR_CHECKPOINT, "safetensors/add/%s: %s", c->id,
			     ctq_status_name(st));
		cr_assert(strstr(err.message, c->needle), "safetensors/add/%s: \"%s\" lacks \"%s\"",
			  c->id, err.message, c->needle);
		cr_assert_eq(w.n_tensors, 1, "safetensors/add/%s changed the writer", c->id);
	}
	ctq_error_clear(&err);
	cr_assert_eq(ctq_st_writer_set_metadata(&w, "", "v", &err), CTQ_ERR_CHECKPOINT);
	ctq_st_writer_free(&w);
}

Test(safetensors, many_tensors_names_index_grows)
{
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	struct ctq_error err = {0};
	static const uint8_t one = 1;
	const int64_t shape[1] = {1};
	char name[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "t.%d", i);
		cr_assert_eq(ctq_st_writer_add(&w, name, CTQ_DTYPE_U8, 1, shape, &one, 1, &err), CTQ_OK);
	}
	for (int i = 0; i < 5000; i += 499) {
		snprintf(name, sizeof name, "t.%d", i);
		cr_assert_eq(ctq_st_writer_add(&w, name, CTQ_DTYPE_U8, 1, shape, &one, 1, &err),
			     CTQ_ERR_CHECKPOINT, "%s not found as a duplicate", name);
		ctq_error_clear(&err);
	}
	cr_assert_eq(w.n_tensors, 5000);
	ctq_st_writer_free(&w);
}

Test(safetensors, failed_write_leaves_no_temporary_file)
{
	char *dir = make_tmpdir();
	char *target = join(dir, "is_a_dir");
	cr_assert_eq(mkdir(target, 0777), 0);
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_st_writer_write(&w, target, &err), CTQ_ERR_IO);
	cr_assert(strstr(err.message, "rename"), "%s", err.message);
	DIR *d = opendir(dir);
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		n++;
		cr_assert_str_eq(e->d_name, "is_a_dir", "left behind: %s", e->d_name);
	}
	closedir(d);
	cr_assert_eq(n, 1);
	char *missing = join(dir, "no/such/dir/x.safetensors");
	ctq_error_clear(&err);
	cr_assert_eq(ctq_st_writer_write(&w, missing, &err), CTQ_ERR_IO);
	ctq_st_writer_free(&w);
	ctq_remove_tree(dir);
	free(target);
	free(missing);
	free(dir);
}

/* ---- malformed files ------------------------------------------------------ */

enum off_kind { AT_LENGTH, AT_HEADER, IN_HEADER, AT_DATA };

struct bad_file {
	const char *id;
	const char *header;  /* NULL: the raw bytes "abc" */
	bool lie;            /* write `declared` as the header length */
	uint64_t declared;
	size_t data_bytes;
	enum off_kind at;
	uint64_t begin;      /* AT_DATA: data_offsets begin of the culprit */
	const char *needle;
};

#define T(name, dt, shp, b, e) "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shp ",\"data_offsets\":[" #b "," #e "]}"
#define KEEP false, 0
#define LIE(n) true, (n)

static const struct bad_file bad_files[] = {
	{"shorter-than-8-bytes", NULL, KEEP, 0, AT_LENGTH, 0, "8-byte header length"},
	{"header-length-beyond-file", "{" T("a", "F32", "[1]", 0, 4) "}", LIE(1000), 4, AT_LENGTH, 0,
	 "follow the length field"},
	{"header-length-2^64-1", "{}", LIE(UINT64_MAX), 0, AT_LENGTH, 0, "expected at most"},
	{"header-length-over-100MiB", "{}", LIE(((uint64_t)100 << 20) + 1), 0, AT_LENGTH, 0,
	 "expected at most"},
	{"header-not-json", "{\"a\": {", KEEP, 0, IN_HEADER, 0, "not valid JSON"},
	{"header-trailing-garbage", "{} x", KEEP, 0, IN_HEADER, 0, "not valid JSON"},
	{"header-empty", "", KEEP, 0, IN_HEADER, 0, "not valid JSON"},
	{"header-not-utf8", "{\"\xff\":1}", KEEP, 0, IN_HEADER, 0, "UTF-8"},
	{"header-not-object", "[1, 2]", KEEP, 0, AT_HEADER, 0, "expected an object"},
	{"header-duplicate-key", "{" T("a", "U8", "[1]", 0, 1) "," T("a", "U8", "[1]", 1, 2) "}",
	 KEEP, 2, AT_HEADER, 0, "duplicate key"},
	{"entry-not-object", "{\"a\": 5}", KEEP, 0, AT_HEADER, 0, "expected an object"},
	{"entry-extra-key", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}",
	 KEEP, 1, AT_HEADER, 0, "has key \"x\""},
	{"entry-missing-shape", "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", KEEP, 1,
	 AT_HEADER, 0, "has no shape"},
	{"unknown-dtype", "{" T("a", "F4", "[2]", 0, 1) "}", KEEP, 1, AT_HEADER, 0,
	 "dtype \"F4\" is unknown"},
	{"unsupported-dtype-u16", "{" T("a", "U16", "[1]", 0, 2) "}", KEEP, 2, AT_HEADER, 0,
	 "unknown"},
	{"dtype-not-string", "{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,1]}}", KEEP, 1,
	 AT_HEADER, 0, "dtype is 4"},
	{"shape-negative", "{" T("a", "U8", "[-1]", 0, 1) "}", KEEP, 1, AT_HEADER, 0,
	 "shape[0] is -1"},
	{"shape-fractional", "{" T("a", "U8", "[1.5]", 0, 1) "}", KEEP, 1, AT_HEADER, 0,
	 "non-negative integer"},
	{"shape-nine-dims", "{" T("a", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) "}", KEEP, 1, AT_HEADER,
	 0, "9 dimensions"},
	{"shape-not-list", "{" T("a", "U8", "1", 0, 1) "}", KEEP, 1, AT_HEADER, 0,
	 "expected a list"},
	{"offsets-one-number", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", KEEP,
	 1, AT_HEADER, 0, "[begin, end]"},
	{"offsets-negative", "{" T("a", "U8", "[1]", -1, 0) "}", KEEP, 1, AT_HEADER, 0,
	 "[begin, end]"},
	{"offsets-reversed", "{" T("a", "U8", "[0]", 8, 4) "}", KEEP, 8, AT_DATA, 8,
	 "end before they begin"},
	{"offsets-out-of-range", "{" T("a", "U8", "[4]", 0, 4) "," T("b", "F32", "[2]", 4, 12) "}",
	 KEEP, 8, AT_DATA, 4, "past the data area of 8 bytes"},
	{"truncated-file", "{" T("a", "F32", "[16]", 0, 64) "}", KEEP, 63, AT_DATA, 0,
	 "truncated"},
	{"dtype-shape-disagree", "{" T("a", "F32", "[3]", 0, 8) "}", KEEP, 12, AT_DATA, 0,
	 "needs 12"},
	{"size-overflows-64-bits",
	 "{" T("a", "F64", "[9007199254740992,9007199254740992]", 0, 8) "}", KEEP, 8, AT_DATA, 0,
	 "2^64"},
	{"overlapping-offsets", "{" T("a", "U8", "[8]", 0, 8) "," T("b", "U8", "[8]", 4, 12) "}",
	 KEEP, 12, AT_DATA, 4, "overlaps tensor \"a\""},
	{"contained-overlap", "{" T("big", "U8", "[16]", 0, 16) "," T("x", "U8", "[2]", 4, 6) ","
	 T("y", "U8", "[2]", 10, 12) "}", KEEP, 16, AT_DATA, 4, "overlaps tensor \"big\""},
	{"metadata-not-object", "{\"__metadata__\": 3}", KEEP, 0, AT_HEADER, 0,
	 "__metadata__ is 3"},
	{"metadata-value-not-string", "{\"__metadata__\": {\"k\": 1}}", KEEP, 0, AT_HEADER, 0,
	 "__metadata__.k is 1"},
};

Test(safetensors, rejects_malformed_files)
{
	char *dir = make_tmpdir();
	for (size_t i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++) {
		const struct bad_file *c = &bad_files[i];
		char name[128];
		snprintf(name, sizeof name, "%s.safetensors", c->id);
		char *path = join(dir, name);
		if (c->header)
			write_st(path, c->header, c->lie, c->declared, c->data_bytes);
		else
			write_bytes(path, "abc", 3);
		struct ctq_st_file f;
		struct ctq_error err = {0};
		enum ctq_status st = ctq_st_open(&f, path, &err);
		long long off = -1;
		size_t hlen = c->header ? strlen(c->header) : 0;
		if (c->at == AT_LENGTH)
			off = 0;
		else if (c->at == AT_HEADER)
			off = 8;
		else if (c->at == AT_DATA)
			off = (long long)(8 + hlen + c->begin);
		char id[160];
		snprintf(id, sizeof id, "safetensors/bad/%s", c->id);
		const char *needles[] = {c->needle, NULL};
		expect_checkpoint_error(id, st, &err, name, off, needles);
		if (c->at == IN_HEADER) {
			long long at = strtoll(strrchr(err.path, ':') + 1, NULL, 10);
			cr_assert(at >= 8 && at <= (long long)(8 + hlen), "%s: offset %lld", id, at);
		}
		cr_assert_null(f.map, "%s: failed open left a mapping", id);
		ctq_st_close(&f);
		free(path);
	}
	ctq_remove_tree(dir);
	free(dir);
}

/* Zero-size tensors own no bytes and may sit at any boundary between
 * tensors (the safetensors library accepts [a 0..2, e 2..2, b 2..4]). */
Test(safetensors, empty_tensors_at_boundaries)
{
	char *dir = make_tmpdir();
	char *path = join(dir, "empty.safetensors");
	write_st(path, "{" T("a", "U8", "[2]", 0, 2) "," T("b", "U8", "[6]", 2, 8) ","
		 T("e", "F32", "[0,5]", 2, 2) "," T("s", "U8", "[]", 8, 9) "}", false, 0, 9);
	struct ctq_st_file f;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_st_open(&f, path, &err), CTQ_OK, "%s: %s", err.path, err.message);
	cr_assert_eq(f.n_tensors, 4);
	const struct ctq_st_tensor *b = ctq_st_find(&f, "b");
	cr_assert_eq(b->file_offset, f.data_start + 2);
	cr_assert_eq(((const unsigned char *)b->data)[0], (unsigned char)(2 * 7 + 1));
	cr_assert_eq(ctq_st_find(&f, "e")->n_elements, 0);
	cr_assert_eq(ctq_st_find(&f, "s")->ndim, 0);
	ctq_st_close(&f);
	ctq_remove_tree(dir);
	free(path);
	free(dir);
}

/* What the safetensors library (0.x, safe_open) refuses, checked against it:
 * a hole before the first tensor or between two ("invalid offset for
 * tensor"), bytes after the last one ("incomplete metadata, file not fully
 * covered"), an empty tensor inside another's bytes ("invalid offset"). */
Test(safetensors, refuses_holes_and_uncovered_bytes)
{
	/* The whole sentence of each hole: the first tensor's once read
	 * "nothing precedes it; the data area begins ends at 0". */
	static const struct {
		const char *id, *header;
		size_t data;
		const char *needle;
	} cases[] = {
		{"hole_before_first", "{" T("a", "U8", "[2]", 64, 66) "}", 66,
		 "tensor \"a\" begins at data offset 64, but it is the first tensor and the data area "
		 "begins at 0: a hole of 64 bytes"},
		{"hole_between", "{" T("a", "U8", "[2]", 0, 2) "," T("b", "U8", "[2]", 6, 8) "}", 8,
		 "tensor \"b\" begins at data offset 6, but tensor \"a\" before it ends at 2: a hole of 4 bytes"},
		{"trailing_bytes", "{" T("a", "U8", "[2]", 0, 2) "}", 10, "8 bytes belong to no tensor"},
		{"empty_inside_another", "{" T("a", "U8", "[2]", 0, 2) "," T("e", "F32", "[0,5]", 1, 1) "}", 2, "overlaps"},
	};
	char *dir = make_tmpdir();
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *path = join(dir, "bad.safetensors");
		write_st(path, cases[i].header, false, 0, cases[i].data);
		struct ctq_st_file f;
		struct ctq_error err = {0};
		enum ctq_status st = ctq_st_open(&f, path, &err);
		const char *needles[] = {cases[i].needle, NULL};
		expect_checkpoint_error(cases[i].id, st, &err, path, -1, needles);
		ctq_st_close(&f);
		free(path);
	}
	ctq_remove_tree(dir);
	free(dir);
}

Test(safetensors, missing_file_is_an_io_error)
{
	struct ctq_st_file f;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_st_open(&f, "/nonexistent/ctq/x.safetensors", &err), CTQ_ERR_IO);
	cr_assert(strstr(err.path, "x.safetensors"));
	ctq_st_close(&f);
}

/* ---- sharded checkpoints -------------------------------------------------- */

static const struct tdef shard_model[] = {
	{"t0", CTQ_DTYPE_F32, 1, {10}},      /* 40 bytes */
	{"t1", CTQ_DTYPE_BF16, 1, {20}},     /* 40 */
	{"t2.big", CTQ_DTYPE_I8, 2, {10, 10}}, /* 100: over the limit, own shard */
	{"t3", CTQ_DTYPE_I64, 1, {1}},       /* 8 */
	{"t4", CTQ_DTYPE_F16, 1, {30}},      /* 60 */
};
#define N_SHARD (sizeof shard_model / sizeof shard_model[0])

Test(safetensors, sharded_round_trip_like_transformers)
{
	char *dir = make_tmpdir();
	char *ck = join(dir, "ckpt");
	struct ctq_st_writer w;
	unsigned char *bufs[N_SHARD];
	struct ctq_error err = {0};
	ctq_st_writer_init(&w);
	add_all(&w, shard_model, N_SHARD, bufs);
	cr_assert_eq(ctq_st_writer_set_metadata(&w, "format", "pt", &err), CTQ_OK);
	cr_assert_eq(ctq_checkpoint_write(ck, &w, 64, &err), CTQ_OK, "%s: %s", err.path, err.message);

	/* huggingface_hub's split with a 64-byte limit, in insertion order:
	 * [t0] closes when t1 would tip it; t2 alone at once; [t1, t3]; [t4]. */
	static const char *const want_file[N_SHARD] = {
		"model-00001-of-00004.safetensors", "model-00003-of-00004.safetensors",
		"model-00002-of-00004.safetensors", "model-00003-of-00004.safetensors",
		"model-00004-of-00004.safetensors",
	};
	char *index = join(ck, CTQ_ST_INDEX_NAME);
	size_t n;
	char *text = (char *)read_all(index, &n);
	const char *want_index =
		"{\n  \"metadata\": {\n    \"total_size\": 248\n  },\n  \"weight_map\": {\n"
		"    \"t0\": \"model-00001-of-00004.safetensors\",\n"
		"    \"t1\": \"model-00003-of-00004.safetensors\",\n"
		"    \"t2.big\": \"model-00002-of-00004.safetensors\",\n"
		"    \"t3\": \"model-00003-of-00004.safetensors\",\n"
		"    \"t4\": \"model-00004-of-00004.safetensors\"\n  }\n}\n";
	cr_assert_str_eq(text, want_index);
	free(text);
	char *single = join(ck, CTQ_ST_SINGLE_NAME);
	cr_assert_not(ctq_path_exists(single));

	struct ctq_checkpoint c;
	cr_assert_eq(ctq_checkpoint_open(&c, ck, &err), CTQ_OK, "%s: %s", err.path, err.message);
	cr_assert(c.sharded);
	cr_assert_eq(c.n_files, 4);
	cr_assert_eq(ctq_checkpoint_count(&c), N_SHARD);
	for (size_t i = 0; i < N_SHARD; i++) {
		const char *file = NULL;
		const struct ctq_st_tensor *t = ctq_checkpoint_find(&c, shard_model[i].name, &file);
		expect_tensor(t, &shard_model[i], bufs[i]);
		cr_assert_str_eq(file, want_file[i], "%s", shard_model[i].name);
		const char *file_at = NULL;
		cr_assert_eq(ctq_checkpoint_at(&c, i, &file_at), t, "iteration is in name order");
		cr_assert_str_eq(file_at, file);
	}
	cr_assert_null(ctq_checkpoint_at(&c, N_SHARD, NULL));
	cr_assert_null(ctq_checkpoint_find(&c, "absent", NULL));
	for (size_t i = 0; i < c.n_files; i++)
		cr_assert_str_eq(ctq_st_metadata(&c.files[i], "format"), "pt");
	ctq_checkpoint_close(&c);
	ctq_checkpoint_close(&c);

	/* Rewritten without a limit: one model.safetensors, the stale index
	 * is gone, and the directory reads back as the single file. */
	cr_assert_eq(ctq_checkpoint_write(ck, &w, 0, &err), CTQ_OK, "%s", err.message);
	cr_assert(ctq_path_exists(single));
	cr_assert_not(ctq_path_exists(index));
	cr_assert_eq(ctq_checkpoint_open(&c, ck, &err), CTQ_OK, "%s", err.message);
	cr_assert_not(c.sharded);
	cr_assert_eq(ctq_checkpoint_count(&c), N_SHARD);
	for (size_t i = 0; i < N_SHARD; i++) {
		const char *file = NULL;
		expect_tensor(ctq_checkpoint_find(&c, shard_model[i].name, &file), &shard_model[i], bufs[i]);
		cr_assert_str_eq(file, CTQ_ST_SINGLE_NAME);
	}
	ctq_checkpoint_close(&c);

	/* A limit that holds everything also gives a single file. */
	cr_assert_eq(ctq_checkpoint_write(ck, &w, 248, &err), CTQ_OK);
	cr_assert_not(ctq_path_exists(index));

	ctq_st_writer_free(&w);
	for (size_t i = 0; i < N_SHARD; i++)
		free(bufs[i]);
	ctq_remove_tree(dir);
	free(index);
	free(single);
	free(ck);
	free(dir);
}

struct bad_ckpt {
	const char *id;
	const char *index;     /* index text, written as model.safetensors.index.json */
	bool shard2_corrupt;   /* write shard 2 truncated */
	const char *in_path;   /* err.path must contain this */
	const char *needles[4]; /* NULL-terminated */
};

/* Shard 1 ("model-00001-of-00002.safetensors") holds tensor "a"; shard 2
 * holds "b" (or is corrupt). */
static const struct bad_ckpt bad_ckpts[] = {
	{"index-names-missing-shard",
	 "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"c\": \"model-00009-of-00009.safetensors\"}}",
	 false, CTQ_ST_INDEX_NAME, {"\"c\"", "model-00009-of-00009.safetensors", "does not exist"}},
	{"index-tensor-absent-from-shard",
	 "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"b\": \"model-00001-of-00002.safetensors\"}}",
	 false, CTQ_ST_INDEX_NAME, {"\"b\"", "model-00001-of-00002.safetensors", "does not hold it"}},
	{"index-not-json", "{\"weight_map\": ", false, CTQ_ST_INDEX_NAME, {"not valid JSON"}},
	{"index-not-object", "[]", false, CTQ_ST_INDEX_NAME, {"expected an object"}},
	{"index-no-weight-map", "{\"metadata\": {}}", false, CTQ_ST_INDEX_NAME, {"weight_map", "missing"}},
	{"index-weight-map-not-object", "{\"weight_map\": []}", false, CTQ_ST_INDEX_NAME, {"array"}},
	{"index-value-not-string", "{\"weight_map\": {\"a\": 1}}", false, CTQ_ST_INDEX_NAME,
	 {"\"a\"", "shard file name"}},
	{"index-shard-path-escapes", "{\"weight_map\": {\"a\": \"../model-00001-of-00002.safetensors\"}}",
	 false, CTQ_ST_INDEX_NAME, {"..", "inside the checkpoint directory"}},
	{"index-shard-in-subdir", "{\"weight_map\": {\"a\": \"sub/x.safetensors\"}}", false,
	 CTQ_ST_INDEX_NAME, {"sub/x.safetensors"}},
	{"index-duplicate-tensor",
	 "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"a\": \"model-00001-of-00002.safetensors\"}}",
	 false, CTQ_ST_INDEX_NAME, {"duplicate key"}},
	{"shard-corrupt",
	 "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"b\": \"model-00002-of-00002.safetensors\"}}",
	 true, "model-00002-of-00002.safetensors", {"truncated"}},
};

Test(safetensors, rejects_malformed_checkpoints)
{
	char *dir = make_tmpdir();
	for (size_t i = 0; i < sizeof bad_ckpts / sizeof bad_ckpts[0]; i++) {
		const struct bad_ckpt *c = &bad_ckpts[i];
		char *ck = join(dir, c->id);
		cr_assert_eq(mkdir(ck, 0777), 0);
		char *s1 = join(ck, "model-00001-of-00002.safetensors");
		char *s2 = join(ck, "model-00002-of-00002.safetensors");
		char *ix = join(ck, CTQ_ST_INDEX_NAME);
		write_st(s1, "{" T("a", "U8", "[4]", 0, 4) "}", false, 0, 4);
		write_st(s2, "{" T("b", "U8", "[4]", 0, 4) "}", false, 0, c->shard2_corrupt ? 3 : 4);
		write_bytes(ix, c->index, strlen(c->index));
		struct ctq_checkpoint ckpt;
		struct ctq_error err = {0};
		enum ctq_status st = ctq_checkpoint_open(&ckpt, ck, &err);
		char id[160];
		snprintf(id, sizeof id, "safetensors/ckpt/%s", c->id);
		expect_checkpoint_error(id, st, &err, c->in_path, -1, c->needles);
		cr_assert_eq(ckpt.n_files, 0, "%s: failed open kept files", id);
		ctq_checkpoint_close(&ckpt);
		free(s1);
		free(s2);
		free(ix);
		free(ck);
	}
	ctq_remove_tree(dir);
	free(dir);
}

Test(safetensors, directory_without_checkpoint)
{
	char *dir = make_tmpdir();
	struct ctq_checkpoint c;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_checkpoint_open(&c, dir, &err), CTQ_ERR_CHECKPOINT);
	cr_assert_str_eq(err.path, dir);
	cr_assert(strstr(err.message, CTQ_ST_INDEX_NAME) && strstr(err.message, CTQ_ST_SINGLE_NAME));
	ctq_checkpoint_close(&c);
	ctq_error_clear(&err);
	char *file = join(dir, "plain");
	write_bytes(file, "x", 1);
	cr_assert_eq(ctq_checkpoint_open(&c, file, &err), CTQ_ERR_IO);
	ctq_remove_tree(dir);
	free(file);
	free(dir);
}

/* ---- compatibility with the Python library ---------------------------------- */

static char *fixture(const char *name)
{
	const char *dir = getenv("CTQ_FIXTURES");
	return join(dir && *dir ? dir : "tests/fixtures", name);
}

Test(safetensors, reads_and_rewrites_the_python_library_fixture)
{
	char *st_path = fixture("oracle.safetensors");
	char *json_path = fixture("oracle.json");
	struct ctq_error err = {0};
	cJSON *oracle = NULL;
	cr_assert_eq(ctq_json_load_file(json_path, 1 << 20, NULL, &oracle, &err), CTQ_OK,
		     "%s: %s (run from the repository root or set CTQ_FIXTURES)", err.path,
		     err.message);

	unsigned char digest[CTQ_SHA256_BYTES];
	char hex[CTQ_SHA256_HEX];
	cr_assert_eq(ctq_sha256_file(st_path, digest, &err), CTQ_OK, "%s", err.message);
	ctq_sha256_hex(digest, hex);
	cr_assert_str_eq(hex, ctq_json_get(oracle, "file_sha256")->valuestring,
			 "the fixture does not match oracle.json");

	struct ctq_st_file f;
	cr_assert_eq(ctq_st_open(&f, st_path, &err), CTQ_OK, "%s: %s", err.path, err.message);
	const cJSON *tensors = ctq_json_get(oracle, "tensors");
	cr_assert_eq((size_t)cJSON_GetArraySize(tensors), f.n_tensors);
	cr_assert(f.n_tensors >= 10, "a vacuous fixture");
	for (const cJSON *o = tensors->child; o; o = o->next) {
		const char *name = ctq_json_get(o, "name")->valuestring;
		const struct ctq_st_tensor *t = ctq_st_find(&f, name);
		cr_assert(t, "oracle/%s: not found", name);
		cr_assert_str_eq(ctq_dtype_name(t->dtype), ctq_json_get(o, "dtype")->valuestring,
				 "oracle/%s: dtype", name);
		const cJSON *shape = ctq_json_get(o, "shape");
		cr_assert_eq(t->ndim, cJSON_GetArraySize(shape), "oracle/%s: ndim", name);
		int d = 0;
		for (const cJSON *s = shape->child; s; s = s->next, d++)
			cr_assert_eq(t->shape[d], (int64_t)s->valuedouble, "oracle/%s: shape[%d]", name, d);
		ctq_sha256(t->data, (size_t)t->n_bytes, digest);
		ctq_sha256_hex(digest, hex);
		cr_assert_str_eq(hex, ctq_json_get(o, "sha256")->valuestring, "oracle/%s: bytes", name);
	}
	const cJSON *meta = ctq_json_get(oracle, "metadata");
	cr_assert_eq((size_t)cJSON_GetArraySize(meta), f.n_metadata);
	for (const cJSON *m = meta->child; m; m = m->next)
		cr_assert_str_eq(ctq_st_metadata(&f, m->string), m->valuestring);

	/* Spot-check the decoded values the generator chose. */
	float v[4];
	cr_assert(ctq_convert_to_f32(ctq_st_find(&f, "layers.0.weight")->data, CTQ_DTYPE_BF16, 4, v));
	cr_assert(v[0] == 1.0f && v[1] == -2.0f && v[2] == 0.5f && v[3] == 0x1p-133f);
	cr_assert(ctq_convert_to_f32(ctq_st_find(&f, "fp8")->data, CTQ_DTYPE_F8_E4M3, 4, v));
	cr_assert(v[0] == 1.0f && v[1] == 448.0f && v[2] == -448.0f && v[3] == 0x1p-9f);
	cr_assert(ctq_convert_to_f32(ctq_st_find(&f, "layers.0.scale")->data, CTQ_DTYPE_F16, 4, v));
	cr_assert(v[0] == 1.0f && v[1] == -0.5f && v[2] == 65504.0f);

	/* ctq's writer, given the same tensors, writes the library's bytes. */
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	for (size_t i = 0; i < f.n_tensors; i++) {
		const struct ctq_st_tensor *t = &f.tensors[i];
		cr_assert_eq(ctq_st_writer_add(&w, t->name, t->dtype, t->ndim, t->shape, t->data,
					       t->n_bytes, &err), CTQ_OK, "%s", err.message);
	}
	for (size_t i = 0; i < f.n_metadata; i++)
		cr_assert_eq(ctq_st_writer_set_metadata(&w, f.metadata[i].key, f.metadata[i].value, &err),
			     CTQ_OK);
	char *dir = make_tmpdir();
	char *out = join(dir, "ctq.safetensors");
	cr_assert_eq(ctq_st_writer_write(&w, out, &err), CTQ_OK, "%s", err.message);
	size_t n_lib, n_ctq;
	unsigned char *lib = read_all(st_path, &n_lib), *mine = read_all(out, &n_ctq);
	cr_assert_eq(n_ctq, n_lib, "ctq wrote %zu bytes, the library %zu", n_ctq, n_lib);
	for (size_t i = 0; i < n_lib; i++)
		cr_assert_eq(mine[i], lib[i], "first difference at byte %zu", i);

	free(lib);
	free(mine);
	ctq_st_writer_free(&w);
	ctq_st_close(&f);
	cJSON_Delete(oracle);
	ctq_remove_tree(dir);
	free(out);
	free(dir);
	free(st_path);
	free(json_path);
}

/* Failing the Nth allocation anywhere in writing, opening a sharded
 * checkpoint gives out-of-memory (or success), never a crash, a
 * leak (under SAN=1) or a half-filled struct. */
Test(safetensors, allocation_failures_are_clean)
{
	char *dir = make_tmpdir();
	char *ck = join(dir, "ckpt");
	struct ctq_st_writer w;
	unsigned char *bufs[N_SHARD];
	struct ctq_error err = {0};
	ctq_st_writer_init(&w);
	add_all(&w, shard_model, N_SHARD, bufs);
	cr_assert_eq(ctq_checkpoint_write(ck, &w, 64, &err), CTQ_OK, "%s", err.message);

	bool write_ok = false, open_ok = false;
	for (long n = 0; n < 400 && !(write_ok && open_ok); n++) {
		struct ctq_checkpoint c;
		ctq_error_clear(&err);
		ctq_alloc_fail_after(n);
		enum ctq_status st = ctq_checkpoint_open(&c, ck, &err);
		ctq_alloc_fail_after(-1);
		cr_assert(st == CTQ_OK || st == CTQ_ERR_NOMEM, "fail after %ld: %s (%s)", n,
			  ctq_status_name(st), err.message);
		if (st == CTQ_OK) {
			open_ok = true;
			cr_assert_eq(ctq_checkpoint_count(&c), N_SHARD);
		} else {
			cr_assert_eq(c.n_files, 0);
		}
		ctq_checkpoint_close(&c);

		char *out = join(dir, "again");
		ctq_error_clear(&err);
		ctq_alloc_fail_after(n);
		st = ctq_checkpoint_write(out, &w, 64, &err);
		ctq_alloc_fail_after(-1);
		cr_assert(st == CTQ_OK || st == CTQ_ERR_NOMEM,
			  "write, fail after %ld: %s (%s)", n, ctq_status_name(st), err.message);
		write_ok |= st == CTQ_OK;
		free(out);
	}
	cr_assert(write_ok && open_ok, "never succeeded within 400 allocations");
	ctq_st_writer_free(&w);
	for (size_t i = 0; i < N_SHARD; i++)
		free(bufs[i]);
	ctq_remove_tree(dir);
	free(ck);
	free(dir);
}
