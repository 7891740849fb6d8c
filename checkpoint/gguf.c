/* ctq GGUF reader and dequantizer (see gguf.h). Sections: type tables; a
 * bounds-checked cursor; metadata values; ctq_gguf_open; typed getters;
 * dequantization; the rotary un-permutation. The llama -> Hugging Face
 * import lives in gguf_import.c and gguf_tokenizer.c. */
#include "checkpoint/gguf.h"
#include "checkpoint/gguf_internal.h"
#include "core/utf8.h"

#include "core/dtype.h"
#include "core/fileio.h"
#include "core/json_write.h"
#include "core/strbuf.h"
#include "checkpoint/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- type tables ---------------------------------------------------------- */

static const char *const vtype_names[CTQ_GGUF_VTYPE_COUNT] = {
	"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
	"BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
};

/* Bytes of a scalar value type; 0 for STRING, ARRAY and unknown ids. */
static uint64_t vtype_size(uint32_t t)
{
	switch (t) {
	case CTQ_GGUF_UINT8:
	case CTQ_GGUF_INT8:
	case CTQ_GGUF_BOOL:
		return 1;
	case CTQ_GGUF_UINT16:
	case CTQ_GGUF_INT16:
		return 2;
	case CTQ_GGUF_UINT32:
	case CTQ_GGUF_INT32:
	case CTQ_GGUF_FLOAT32:
		return 4;
	case CTQ_GGUF_UINT64:
	case CTQ_GGUF_INT64:
	case CTQ_GGUF_FLOAT64:
		return 8;
	default:
		return 0;
	}
}

const char *ctq_gguf_vtype_name(uint32_t t)
{
	return t < CTQ_GGUF_VTYPE_COUNT ? vtype_names[t] : "?";
}

/* ggml's type table (ggml.c type_traits; gguf-py GGML_QUANT_SIZES): name,
 * elements per block, bytes per block. Ids 4, 5 (removed Q4_2, Q4_3) and
 * 31..33, 36..38 (removed interleaved types) are not types. */
static const struct {
	const char *name;
	uint32_t block, bytes;
} ggml_types[] = {
	[0] = {"F32", 1, 4},        [1] = {"F16", 1, 2},
	[2] = {"Q4_0", 32, 18},     [3] = {"Q4_1", 32, 20},
	[6] = {"Q5_0", 32, 22},     [7] = {"Q5_1", 32, 24},
	[8] = {"Q8_0", 32, 34},     [9] = {"Q8_1", 32, 40},
	[10] = {"Q2_K", 256, 84},   [11] = {"Q3_K", 256, 110},
	[12] = {"Q4_K", 256, 144},  [13] = {"Q5_K", 256, 176},
	[14] = {"Q6_K", 256, 210},  [15] = {"Q8_K", 256, 292},
	[16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
	[18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
	[20] = {"IQ4_NL", 32, 18},  [21] = {"IQ3_S", 256, 110},
	[22] = {"IQ2_S", 256, 82},  [23] = {"IQ4_XS", 256, 136},
	[24] = {"I8", 1, 1},        [25] = {"I16", 1, 2},
	[26] = {"I32", 1, 4},       [27] = {"I64", 1, 8},
	[28] = {"F64", 1, 8},       [29] = {"IQ1_M", 256, 56},
	[30] = {"BF16", 1, 2},      [34] = {"TQ1_0", 256, 54},
	[35] = {"TQ2_0", 256, 66},  [39] = {"MXFP4", 32, 17},
};
#define N_GGML_TYPES (sizeof ggml_types / sizeof *ggml_types)

const char *ctq_ggml_type_name(uint32_t t)
{
	return t < N_GGML_TYPES ? ggml_types[t].name : NULL;
}

bool ctq_ggml_type_layout(uint32_t t, uint32_t *block, uint32_t *type_bytes)
{
	if (t >= N_GGML_TYPES || !ggml_types[t].name)
		return false;
	*block = ggml_types[t].block;
	*type_bytes = ggml_types[t].bytes;
	return true;
}

bool ctq_ggml_type_dequantizable(uint32_t t)
{
	switch (t) {
	case CTQ_GGML_F32:
	case CTQ_GGML_F16:
	case CTQ_GGML_BF16:
	case CTQ_GGML_Q8_0:
	case CTQ_GGML_Q4_0:
	case CTQ_GGML_Q4_1:
		return true;
	default:
		return false;
	}
}

/* ---- errors and the cursor ------------------------------------------------ */


static bool has_control(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

/* s (len bytes, from the file) for an error message: as it is when it is
 * UTF-8 without control characters, else with every byte outside printable
 * ASCII written as \xNN; cut at about 80 bytes. Returns buf. */
const char *ctq_gguf_shown(const char *s, size_t len, char *buf, size_t cap)
{
	const unsigned char *u = (const unsigned char *)s;
	bool plain = ctq_utf8_valid(u, len, NULL) && !has_control(u, len);
	size_t o = 0;
	for (size_t i = 0; i < len && o + 8 < cap; i++) {
		if (o >= 80 && (!plain || (u[i] & 0xc0) != 0x80)) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (plain || (u[i] >= 0x20 && u[i] < 0x7f))
			buf[o++] = (char)u[i];
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", u[i]);
	}
	buf[o] = '\0';
	return buf;
}

/* Error of class s at "file:offset". */
enum ctq_status ctq_gguf_fail_at(struct ctq_error *err, enum ctq_status s,
			       const char *file, uint64_t offset,
			       const char *fmt, ...)
{
	char path[CTQ_PATH_MAX];
	snprintf(path, sizeof path, "%s:%" PRIu64, file, offset);
	va_list ap;
	va_start(ap, fmt);
	ctq_error_vset(err, s, path, fmt, ap);
	va_end(ap);
	return s;
}

#define GG_FAIL(f, off, ...) ctq_gguf_fail_at(err, CTQ_ERR_CHECKPOINT, (f)->path, (off), __VA_ARGS__)

/* Reads the file front to back; every read is checked against the end. */
struct cursor {
	struct ctq_gguf_file *f;
	uint64_t off;                  /* next byte to read */
	struct ctq_error *err;
};

static uint64_t cur_left(const struct cursor *c)
{
	return c->f->map_bytes - c->off;
}

/* Fails unless n bytes remain; what names the field. */
static enum ctq_status cur_need(struct cursor *c, uint64_t n, const char *what)
{
	if (n <= cur_left(c))
		return CTQ_OK;
	struct ctq_error *err = c->err;
	return GG_FAIL(c->f, c->off,
		       "truncated: %s needs %" PRIu64 " byte(s) but the file ends %" PRIu64
		       " byte(s) later (file size %zu)",
		       what, n, cur_left(c), c->f->map_bytes);
}

static uint64_t le_read(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static enum ctq_status cur_uint(struct cursor *c, unsigned n, const char *what,
				uint64_t *out)
{
	enum ctq_status st = cur_need(c, n, what);
	if (st)
		return st;
	*out = le_read(c->f->map + c->off, n);
	c->off += n;
	return CTQ_OK;
}

/* A GGUF string: u64 length + bytes. Copied into the arena with a NUL.
 * name_rules: a key or tensor name (1..CTQ_GGUF_MAX_NAME bytes of UTF-8
 * without NUL or control bytes, so that messages and JSON can quote it). */
static enum ctq_status cur_string(struct cursor *c, const char *what,
				  bool name_rules, const char **s, uint64_t *len)
{
	struct ctq_error *err = c->err;
	uint64_t at = c->off, n;
	enum ctq_status st = cur_uint(c, 8, what, &n);
	if (st)
		return st;
	if (name_rules && (n == 0 || n > CTQ_GGUF_MAX_NAME))
		return GG_FAIL(c->f, at, "%s is %" PRIu64 " bytes long; expected 1..%d",
			       what, n, CTQ_GGUF_MAX_NAME);
	if (n > cur_left(c))
		return GG_FAIL(c->f, at,
			       "truncated: %s of %" PRIu64 " byte(s) runs past the end of the file (%" PRIu64
			       " byte(s) remain)", what, n, cur_left(c));
	const char *src = (const char *)c->f->map + c->off;
	if (name_rules && (memchr(src, '\0', (size_t)n) ||
			   !ctq_utf8_valid((const unsigned char *)src, (size_t)n, NULL) ||
			   has_control((const unsigned char *)src, (size_t)n)))
		return GG_FAIL(c->f, at, "%s is not UTF-8 text without NUL or control bytes", what);
	/* n < file size, so n + 1 cannot overflow. */
	char *copy = ctq_arena_alloc(&c->f->arena, (size_t)n + 1);
	if (!copy)
		return ctq_error_set(err, CTQ_ERR_NOMEM, c->f->path, "out of memory");
	memcpy(copy, src, (size_t)n);
	copy[n] = '\0';
	*s = copy;
	if (len)
		*len = n;
	c->off += n;
	return CTQ_OK;
}

/* ---- metadata values ------------------------------------------------------ */

/* Smallest number of bytes any value of type t occupies (for bounding counts
 * before allocating); 0 for an unknown type. */
static uint64_t vtype_min_bytes(uint32_t t)
{
	if (t == CTQ_GGUF_STRING)
		return 8;
	if (t == CTQ_GGUF_ARRAY)
		return 12;
	return vtype_size(t);
}

static enum ctq_status read_value(struct cursor *c, uint32_t type, int depth,
				  struct ctq_gguf_value *v);

static enum ctq_status read_array(struct cursor *c, int depth,
				  struct ctq_gguf_value *v)
{
	struct ctq_error *err = c->err;
	uint64_t at = c->off, elem, n;
	enum ctq_status st = cur_uint(c, 4, "array element type", &elem);
	if (st)
		return st;
	if (elem >= CTQ_GGUF_VTYPE_COUNT)
		return GG_FAIL(c->f, at, "array element type %" PRIu64
			       " is unknown; expected 0..12 (gguf_type)", elem);
	if (elem == CTQ_GGUF_ARRAY && depth + 1 >= CTQ_GGUF_MAX_ARRAY_DEPTH)
		return GG_FAIL(c->f, at, "arrays nested deeper than %d levels",
			       CTQ_GGUF_MAX_ARRAY_DEPTH);
	uint64_t at_n = c->off;
	st = cur_uint(c, 8, "array length", &n);
	if (st)
		return st;
	uint64_t min = vtype_min_bytes((uint32_t)elem);
	if (n > cur_left(c) / min)
		return GG_FAIL(c->f, at_n,
			       "array of %" PRIu64 " %s element(s) cannot fit in the %" PRIu64
			       " byte(s) that remain (each takes at least %" PRIu64 ")",
			       n, vtype_names[elem], cur_left(c), min);
	v->v.arr.elem = (enum ctq_gguf_vtype)elem;
	v->v.arr.n = n;
	if (elem != CTQ_GGUF_STRING && elem != CTQ_GGUF_ARRAY) {
		v->v.arr.raw = c->f->map + c->off;
		if (elem == CTQ_GGUF_BOOL)
			for (uint64_t i = 0; i < n; i++)
				if (v->v.arr.raw[i] > 1)
					return GG_FAIL(c->f, c->off + i,
						       "bool array element %" PRIu64 " is %u; expected 0 or 1",
						       i, v->v.arr.raw[i]);
		c->off += n * min;
		return CTQ_OK;
	}
	struct ctq_gguf_value *items =
		ctq_arena_calloc(&c->f->arena, n ? (size_t)n : 1, sizeof *items);
	if (!items)
		return ctq_error_set(err, CTQ_ERR_NOMEM, c->f->path, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		st = read_value(c, (uint32_t)elem, depth + 1, &items[i]);
		if (st)
			return st;
	}
	v->v.arr.items = items;
	return CTQ_OK;
}

static enum ctq_status read_value(struct cursor *c, uint32_t type, int depth,
				  struct ctq_gguf_value *v)
{
	struct ctq_error *err = c->err;
	v->type = (enum ctq_gguf_vtype)type;
	v->file_offset = c->off;
	uint64_t u;
	enum ctq_status st;
	switch (type) {
	case CTQ_GGUF_STRING:
		return cur_string(c, "string value", false, &v->v.str.s, &v->v.str.len);
	case CTQ_GGUF_ARRAY:
		return read_array(c, depth, v);
	case CTQ_GGUF_BOOL:
		st = cur_uint(c, 1, "bool value", &u);
		if (st)
			return st;
		if (u > 1)
			return GG_FAIL(c->f, v->file_offset,
				       "bool value is %" PRIu64 "; expected 0 or 1", u);
		v->v.b = u != 0;
		return CTQ_OK;
	case CTQ_GGUF_FLOAT32:
		st = cur_uint(c, 4, "FLOAT32 value", &u);
		if (!st)
			v->v.f = (double)ctq_f32_from_bits((uint32_t)u);
		return st;
	case CTQ_GGUF_FLOAT64:
		st = cur_uint(c, 8, "FLOAT64 value", &u);
		if (!st)
			memcpy(&v->v.f, &u, sizeof u);
		return st;
	case CTQ_GGUF_INT8:
	case CTQ_GGUF_INT16:
	case CTQ_GGUF_INT32:
	case CTQ_GGUF_INT64: {
		unsigned n = (unsigned)vtype_size(type);
		st = cur_uint(c, n, vtype_names[type], &u);
		if (st)
			return st;
		/* sign-extend from n bytes */
		if (n < 8 && (u >> (8 * n - 1)) & 1)
			u |= ~(uint64_t)0 << (8 * n);
		memcpy(&v->v.i, &u, sizeof u);
		return CTQ_OK;
	}
	case CTQ_GGUF_UINT8:
	case CTQ_GGUF_UINT16:
	case CTQ_GGUF_UINT32:
	case CTQ_GGUF_UINT64:
		return cur_uint(c, (unsigned)vtype_size(type), vtype_names[type], &v->v.u);
	default:
		return GG_FAIL(c->f, v->file_offset - 4,
			       "value type %u is unknown; expected 0..12 (gguf_type)", type);
	}
}

/* ---- open ------------------------------------------------------------------- */

static enum ctq_status map_file(struct ctq_gguf_file *f, const char *path,
				struct ctq_error *err)
{
	const void *m = NULL;
	size_t n = 0;
	enum ctq_status st = ctq_file_map(path, "a .gguf file", &m, &n, err);
	if (st)
		return st;
	if (n < 24) {
		ctq_file_unmap(m, n);
		return ctq_gguf_fail_at(err, CTQ_ERR_CHECKPOINT, path, 0,
			     "file is %lld bytes; a GGUF file starts with a 24-byte header (magic, version, two counts)",
			     (long long)n);
	}
	f->map = m;
	f->map_bytes = n;
	return CTQ_OK;
}

static int cmp_kv_ptr(const void *a, const void *b)
{
	return strcmp((*(const struct ctq_gguf_kv *const *)a)->key,
		      (*(const struct ctq_gguf_kv *const *)b)->key);
}

static int cmp_tensor_ptr(const void *a, const void *b)
{
	return strcmp((*(const struct ctq_gguf_tensor *const *)a)->name,
		      (*(const struct ctq_gguf_tensor *const *)b)->name);
}

static int cmp_tensor_offset(const void *a, const void *b)
{
	uint64_t x = (*(const struct ctq_gguf_tensor *const *)a)->offset;
	uint64_t y = (*(const struct ctq_gguf_tensor *const *)b)->offset;
	return x < y ? -1 : x > y;
}

/* Header: magic, version, counts. */
static enum ctq_status read_header(struct cursor *c, uint64_t *n_tensors,
				   uint64_t *n_kvs)
{
	struct ctq_error *err = c->err;
	struct ctq_gguf_file *f = c->f;
	if (memcmp(f->map, "GGUF", 4) != 0)
		return GG_FAIL(f, 0, "bad magic %02x %02x %02x %02x; expected \"GGUF\" (47 47 55 46)",
			       f->map[0], f->map[1], f->map[2], f->map[3]);
	c->off = 4;
	uint64_t version;
	enum ctq_status st = cur_uint(c, 4, "version", &version);
	if (st)
		return st;
	if (version != 2 && version != 3) {
		if ((version & 0xffff) == 0)
			return GG_FAIL(f, 4, "version field reads %" PRIu64
				       " little-endian; this looks like a big-endian GGUF, which ctq does not read",
				       version);
		return GG_FAIL(f, 4, "version %" PRIu64 " is not supported; expected 2 or 3%s",
			       version, version == 1 ? " (version 1 has 32-bit counts; re-convert the model)" : "");
	}
	f->version = (uint32_t)version;
	if ((st = cur_uint(c, 8, "tensor count", n_tensors)) ||
	    (st = cur_uint(c, 8, "metadata count", n_kvs)))
		return st;
	/* A kv takes at least 8 + 1 (key) + 4 + 1 bytes; a tensor info at
	 * least 8 + 1 (name) + 4 + 8 (one dim) + 4 + 8. */
	uint64_t left = cur_left(c);
	if (*n_kvs > left / 14)
		return GG_FAIL(f, 16, "metadata count %" PRIu64
			       " cannot fit in the %" PRIu64 " byte(s) that follow (each entry takes at least 14)",
			       *n_kvs, left);
	if (*n_tensors > left / 33)
		return GG_FAIL(f, 8, "tensor count %" PRIu64
			       " cannot fit in the %" PRIu64 " byte(s) that follow (each tensor info takes at least 33)",
			       *n_tensors, left);
	if (*n_kvs * 14 + *n_tensors * 33 > left)
		return GG_FAIL(f, 8, "tensor count %" PRIu64 " and metadata count %" PRIu64
			       " cannot both fit in the %" PRIu64 " byte(s) that follow",
			       *n_tensors, *n_kvs, left);
	return CTQ_OK;
}

/* A metadata key or tensor name and the uint32 that follows it (value
 * type, n_dims); *at receives the uint32's offset for its errors. */
static enum ctq_status cur_name_u32(struct cursor *c, const char *name_what, const char **name,
				    const char *what, uint64_t *v, uint64_t *at)
{
	enum ctq_status st = cur_string(c, name_what, true, name, NULL);
	if (st)
		return st;
	*at = c->off;
	return cur_uint(c, 4, what, v);
}

static enum ctq_status read_kvs(struct cursor *c)
{
	struct ctq_error *err = c->err;
	struct ctq_gguf_file *f = c->f;
	for (size_t i = 0; i < f->n_kvs; i++) {
		struct ctq_gguf_kv *kv = &f->kvs[i];
		kv->file_offset = c->off;
		uint64_t type, at;
		enum ctq_status st = cur_name_u32(c, "metadata key", &kv->key, "metadata value type",
						  &type, &at);
		if (st)
			return st;
		if (type >= CTQ_GGUF_VTYPE_COUNT)
			return GG_FAIL(f, at, "metadata \"%s\" has value type %" PRIu64
				       "; expected 0..12 (gguf_type)", kv->key, type);
		if ((st = read_value(c, (uint32_t)type, 0, &kv->value)))
			return st;
	}
	return CTQ_OK;
}

static enum ctq_status read_tensor_infos(struct cursor *c)
{
	struct ctq_error *err = c->err;
	struct ctq_gguf_file *f = c->f;
	for (size_t i = 0; i < f->n_tensors; i++) {
		struct ctq_gguf_tensor *t = &f->tensors[i];
		t->info_offset = c->off;
		uint64_t n_dims, type, at;
		enum ctq_status st = cur_name_u32(c, "tensor name", &t->name, "tensor n_dims", &n_dims,
						  &at);
		if (st)
			return st;
		if (n_dims < 1 || n_dims > CTQ_GGUF_MAX_DIMS)
			return GG_FAIL(f, at, "tensor \"%s\" has n_dims %" PRIu64 "; expected 1..%d",
				       t->name, n_dims, CTQ_GGUF_MAX_DIMS);
		t->n_dims = (int)n_dims;
		uint64_t n_el = 1;
		for (int d = 0; d < CTQ_GGUF_MAX_DIMS; d++) {
			uint64_t ne = 1;
			at = c->off;
			if (d < t->n_dims && (st = cur_uint(c, 8, "tensor dimension", &ne)))
				return st;
			if (ne < 1 || ne > (uint64_t)INT64_MAX)
				return GG_FAIL(f, at, "tensor \"%s\" dimension %d is %" PRIu64
					       "; expected 1..2^63-1", t->name, d, ne);
			if (n_el > (uint64_t)INT64_MAX / ne)
				return GG_FAIL(f, at, "tensor \"%s\": element count overflows int64 at dimension %d",
					       t->name, d);
			n_el *= ne;
			t->ne[d] = (int64_t)ne;
		}
		t->n_elements = n_el;
		at = c->off;
		if ((st = cur_uint(c, 4, "tensor type", &type)))
			return st;
		uint32_t block, bytes;
		if (!ctq_ggml_type_layout((uint32_t)type, &block, &bytes))
			return GG_FAIL(f, at, "tensor \"%s\" has unknown ggml type %" PRIu64,
				       t->name, type);
		t->type = (uint32_t)type;
		if ((uint64_t)t->ne[0] % block)
			return GG_FAIL(f, at, "tensor \"%s\": row length ne[0] = %" PRId64
				       " is not a multiple of the %s block size %u",
				       t->name, t->ne[0], ggml_types[type].name, block);
		uint64_t n_blocks = n_el / block;
		if (n_blocks > UINT64_MAX / bytes)
			return GG_FAIL(f, at, "tensor \"%s\": byte size overflows", t->name);
		t->n_bytes = n_blocks * bytes;
		if ((st = cur_uint(c, 8, "tensor offset", &t->offset)))
			return st;
	}
	return CTQ_OK;
}

/* general.alignment, the data section, each tensor's bytes and overlaps. */
static enum ctq_status place_tensors(struct cursor *c)
{
	struct ctq_error *err = c->err;
	struct ctq_gguf_file *f = c->f;
	f->alignment = CTQ_GGUF_DEFAULT_ALIGNMENT;
	const struct ctq_gguf_kv *al = ctq_gguf_find_kv(f, "general.alignment");
	if (al) {
		if (al->value.type != CTQ_GGUF_UINT32)
			return GG_FAIL(f, al->file_offset, "general.alignment is %s; expected UINT32",
				       vtype_names[al->value.type]);
		uint64_t a = al->value.v.u;
		if (a == 0 || (a & (a - 1)))
			return GG_FAIL(f, al->value.file_offset,
				       "general.alignment is %" PRIu64 "; expected a power of two", a);
		f->alignment = a;
	}
	uint64_t end = c->off; /* end of the tensor infos: <= file size */
	uint64_t pad = (f->alignment - end % f->alignment) % f->alignment;
	f->data_start = end + pad;
	uint64_t data_bytes = f->data_start <= f->map_bytes ? f->map_bytes - f->data_start : 0;
	if (f->n_tensors && f->data_start > f->map_bytes)
		return GG_FAIL(f, end, "truncated: the data section starts at %" PRIu64
			       " (aligned to %" PRIu64 ") but the file ends at %zu",
			       f->data_start, f->alignment, f->map_bytes);
	for (size_t i = 0; i < f->n_tensors; i++) {
		struct ctq_gguf_tensor *t = &f->tensors[i];
		if (t->offset % f->alignment)
			return GG_FAIL(f, t->info_offset, "tensor \"%s\": offset %" PRIu64
				       " is not a multiple of the alignment %" PRIu64,
				       t->name, t->offset, f->alignment);
		if (t->offset > data_bytes || t->n_bytes > data_bytes - t->offset)
			return GG_FAIL(f, t->info_offset,
				       "tensor \"%s\": data [%" PRIu64 ", %" PRIu64 ") of the data section "
				       "(file bytes from %" PRIu64 ") runs past the end of the file (%" PRIu64
				       " data byte(s)); truncated file?",
				       t->name, t->offset,
				       t->offset + (t->n_bytes < UINT64_MAX - t->offset ? t->n_bytes : 0),
				       f->data_start, data_bytes);
		t->file_offset = f->data_start + t->offset;
		t->data = f->map + t->file_offset;
	}
	const struct ctq_gguf_tensor **by_off =
		ctq_arena_calloc(&f->arena, f->n_tensors ? f->n_tensors : 1, sizeof *by_off);
	if (!by_off)
		return ctq_error_set(err, CTQ_ERR_NOMEM, f->path, "out of memory");
	for (size_t i = 0; i < f->n_tensors; i++)
		by_off[i] = &f->tensors[i];
	qsort(by_off, f->n_tensors, sizeof *by_off, cmp_tensor_offset);
	for (size_t i = 1; i < f->n_tensors; i++) {
		const struct ctq_gguf_tensor *a = by_off[i - 1], *b = by_off[i];
		if (a->offset + a->n_bytes > b->offset)
			return GG_FAIL(f, b->info_offset,
				       "tensor \"%s\" at data offset %" PRIu64 " overlaps tensor \"%s\" [%" PRIu64
				       ", %" PRIu64 ")", b->name, b->offset, a->name, a->offset,
				       a->offset + a->n_bytes);
	}
	return CTQ_OK;
}

/* Neighbours a (at offset a_off) and b of a sorted index: equal names are
 * an error at the later one of the two. */
static enum ctq_status check_distinct(const struct ctq_gguf_file *f, const char *what,
				      const char *a, uint64_t a_off, const char *b,
				      uint64_t b_off, struct ctq_error *err)
{
	if (strcmp(a, b))
		return CTQ_OK;
	uint64_t later = a_off > b_off ? a_off : b_off, first = a_off > b_off ? b_off : a_off;
	return GG_FAIL(f, later, "duplicate %s \"%s\" (first at offset %" PRIu64 ")", what, a,
		       first);
}

/* Sorted name indexes; duplicates are errors. */
static enum ctq_status build_indexes(struct ctq_gguf_file *f, struct ctq_error *err)
{
	f->kv_sorted = ctq_arena_calloc(&f->arena, f->n_kvs ? f->n_kvs : 1,
					sizeof *f->kv_sorted);
	f->tensor_sorted = ctq_arena_calloc(&f->arena, f->n_tensors ? f->n_tensors : 1,
					    sizeof *f->tensor_sorted);
	if (!f->kv_sorted || !f->tensor_sorted)
		return ctq_error_set(err, CTQ_ERR_NOMEM, f->path, "out of memory");
	for (size_t i = 0; i < f->n_kvs; i++)
		f->kv_sorted[i] = &f->kvs[i];
	for (size_t i = 0; i < f->n_tensors; i++)
		f->tensor_sorted[i] = &f->tensors[i];
	qsort(f->kv_sorted, f->n_kvs, sizeof *f->kv_sorted, cmp_kv_ptr);
	qsort(f->tensor_sorted, f->n_tensors, sizeof *f->tensor_sorted, cmp_tensor_ptr);
	enum ctq_status st = CTQ_OK;
	for (size_t i = 1; !st && i < f->n_kvs; i++) {
		const struct ctq_gguf_kv *a = f->kv_sorted[i - 1], *b = f->kv_sorted[i];
		st = check_distinct(f, "metadata key", a->key, a->file_offset, b->key,
				    b->file_offset, err);
	}
	for (size_t i = 1; !st && i < f->n_tensors; i++) {
		const struct ctq_gguf_tensor *a = f->tensor_sorted[i - 1], *b = f->tensor_sorted[i];
		st = check_distinct(f, "tensor name", a->name, a->info_offset, b->name,
				    b->info_offset, err);
	}
	return st;
}

enum ctq_status ctq_gguf_open(struct ctq_gguf_file *f, const char *path,
			      struct ctq_error *err)
{
	memset(f, 0, sizeof *f);
	ctq_arena_init(&f->arena);
	enum ctq_status st;
	f->path = ctq_arena_strdup(&f->arena, path);
	if (!f->path)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	if ((st = map_file(f, path, err)))
		goto done;
	struct cursor c = {.f = f, .off = 0, .err = err};
	uint64_t n_tensors = 0, n_kvs = 0;
	if ((st = read_header(&c, &n_tensors, &n_kvs)))
		goto done;
	/* Counts are bounded by the file size above, so these fit a size_t. */
	f->n_kvs = (size_t)n_kvs;
	f->n_tensors = (size_t)n_tensors;
	f->kvs = ctq_arena_calloc(&f->arena, f->n_kvs ? f->n_kvs : 1, sizeof *f->kvs);
	f->tensors = ctq_arena_calloc(&f->arena, f->n_tensors ? f->n_tensors : 1,
				      sizeof *f->tensors);
	if (!f->kvs || !f->tensors) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		goto done;
	}
	if ((st = read_kvs(&c)) || (st = read_tensor_infos(&c)) ||
	    (st = build_indexes(f, err)) || (st = place_tensors(&c)))
		goto done;
done:
	if (st)
		ctq_gguf_close(f);
	return st;
}

void ctq_gguf_close(struct ctq_gguf_file *f)
{
	if (!f)
		return;
	ctq_file_unmap(f->map, f->map_bytes);
	ctq_arena_free(&f->arena);
	memset(f, 0, sizeof *f);
}

static int cmp_key_kv(const void *key, const void *elem)
{
	return strcmp(key, (*(const struct ctq_gguf_kv *const *)elem)->key);
}

static int cmp_key_tensor(const void *key, const void *elem)
{
	return strcmp(key, (*(const struct ctq_gguf_tensor *const *)elem)->name);
}

const struct ctq_gguf_kv *ctq_gguf_find_kv(const struct ctq_gguf_file *f,
					   const char *key)
{
	if (!f->n_kvs || !f->kv_sorted)
		return NULL;
	const struct ctq_gguf_kv *const *p =
		bsearch(key, f->kv_sorted, f->n_kvs, sizeof *f->kv_sorted, cmp_key_kv);
	return p ? *p : NULL;
}

const struct ctq_gguf_tensor *ctq_gguf_find_tensor(const struct ctq_gguf_file *f,
						   const char *name)
{
	if (!f->n_tensors || !f->tensor_sorted)
		return NULL;
	const struct ctq_gguf_tensor *const *p =
		bsearch(name, f->tensor_sorted, f->n_tensors, sizeof *f->tensor_sorted,
			cmp_key_tensor);
	return p ? *p : NULL;
}

/* ---- typed getters ---------------------------------------------------------- */

/* The kv for key; a missing required key is an error at "file:0". */
static enum ctq_status find_required(const struct ctq_gguf_file *f, const char *key,
				     bool required, const struct ctq_gguf_kv **kv, bool *found,
				     struct ctq_error *err)
{
	*kv = ctq_gguf_find_kv(f, key);
	if (found)
		*found = *kv != NULL;
	if (!*kv && required)
		return GG_FAIL(f, 0, "metadata key \"%s\" is missing", key);
	return CTQ_OK;
}

static enum ctq_status wrong_type(const struct ctq_gguf_file *f,
				  const struct ctq_gguf_kv *kv, const char *expected,
				  struct ctq_error *err)
{
	if (kv->value.type == CTQ_GGUF_ARRAY)
		return GG_FAIL(f, kv->file_offset, "metadata \"%s\" is an ARRAY of %s; expected %s",
			       kv->key, vtype_names[kv->value.v.arr.elem], expected);
	return GG_FAIL(f, kv->file_offset, "metadata \"%s\" is %s; expected %s", kv->key,
		       vtype_names[kv->value.type], expected);
}

/* find_required, then a value of one of the types in mask (bits 1 << type;
 * expected names them). */
static enum ctq_status find_typed(const struct ctq_gguf_file *f, const char *key, bool required,
				  bool *found, unsigned mask, const char *expected,
				  const struct ctq_gguf_kv **kv, struct ctq_error *err)
{
	enum ctq_status st = find_required(f, key, required, kv, found, err);
	if (!st && *kv && !(mask & (1u << (*kv)->value.type)))
		return wrong_type(f, *kv, expected, err);
	return st;
}

static bool is_unsigned(enum ctq_gguf_vtype t)
{
	return t == CTQ_GGUF_UINT8 || t == CTQ_GGUF_UINT16 || t == CTQ_GGUF_UINT32 ||
	       t == CTQ_GGUF_UINT64;
}

static bool is_signed(enum ctq_gguf_vtype t)
{
	return t == CTQ_GGUF_INT8 || t == CTQ_GGUF_INT16 || t == CTQ_GGUF_INT32 ||
	       t == CTQ_GGUF_INT64;
}

enum ctq_status ctq_gguf_get_uint(const struct ctq_gguf_file *f, const char *key,
				  bool required, uint64_t max, uint64_t *out,
				  bool *found, struct ctq_error *err)
{
	const struct ctq_gguf_kv *kv;
	enum ctq_status st = find_required(f, key, required, &kv, found, err);
	if (st || !kv)
		return st;
	uint64_t u;
	if (is_unsigned(kv->value.type))
		u = kv->value.v.u;
	else if (is_signed(kv->value.type) && kv->value.v.i >= 0)
		u = (uint64_t)kv->value.v.i;
	else if (is_signed(kv->value.type))
		return GG_FAIL(f, kv->value.file_offset, "metadata \"%s\" is %" PRId64
			       "; expected a non-negative integer", key, kv->value.v.i);
	else
		return wrong_type(f, kv, "an integer", err);
	if (u > max)
		return GG_FAIL(f, kv->value.file_offset, "metadata \"%s\" is %" PRIu64
			       "; expected at most %" PRIu64, key, u, max);
	*out = u;
	return CTQ_OK;
}

enum ctq_status ctq_gguf_get_float(const struct ctq_gguf_file *f, const char *key,
				   bool required, double *out, bool *found,
				   struct ctq_error *err)
{
	const struct ctq_gguf_kv *kv;
	enum ctq_status st = find_typed(f, key, required, found,
					1u << CTQ_GGUF_FLOAT32 | 1u << CTQ_GGUF_FLOAT64,
					"FLOAT32 or FLOAT64", &kv, err);
	if (!st && kv)
		*out = kv->value.v.f;
	return st;
}

enum ctq_status ctq_gguf_get_bool(const struct ctq_gguf_file *f, const char *key,
				  bool required, bool *out, bool *found,
				  struct ctq_error *err)
{
	const struct ctq_gguf_kv *kv;
	enum ctq_status st = find_typed(f, key, required, found, 1u << CTQ_GGUF_BOOL, "BOOL", &kv, err);
	if (!st && kv)
		*out = kv->value.v.b;
	return st;
}

enum ctq_status ctq_gguf_get_string(const struct ctq_gguf_file *f, const char *key,
				    bool required, const struct ctq_gguf_value **out,
				    struct ctq_error *err)
{
	const struct ctq_gguf_kv *kv;
	enum ctq_status st = find_typed(f, key, required, NULL, 1u << CTQ_GGUF_STRING, "STRING", &kv,
					err);
	*out = !st && kv ? &kv->value : NULL;
	return st;
}

enum ctq_status ctq_gguf_get_array(const struct ctq_gguf_file *f, const char *key,
				   bool required, enum ctq_gguf_vtype elem,
				   const struct ctq_gguf_value **out,
				   struct ctq_error *err)
{
	const struct ctq_gguf_kv *kv;
	enum ctq_status st = find_required(f, key, required, &kv, NULL, err);
	*out = NULL;
	if (st || !kv)
		return st;
	if (kv->value.type != CTQ_GGUF_ARRAY ||
	    (elem != CTQ_GGUF_VTYPE_COUNT && kv->value.v.arr.elem != elem)) {
		char want[48];
		snprintf(want, sizeof want, "an ARRAY of %s",
			 elem == CTQ_GGUF_VTYPE_COUNT ? "any type" : vtype_names[elem]);
		return wrong_type(f, kv, want, err);
	}
	*out = &kv->value;
	return CTQ_OK;
}

bool ctq_gguf_array_int(const struct ctq_gguf_value *a, uint64_t i, int64_t *out)
{
	if (a->type != CTQ_GGUF_ARRAY || i >= a->v.arr.n || !a->v.arr.raw)
		return false;
	enum ctq_gguf_vtype t = a->v.arr.elem;
	unsigned n = (unsigned)vtype_size(t);
	if (!is_signed(t) && !is_unsigned(t) && t != CTQ_GGUF_BOOL)
		return false;
	uint64_t u = le_read(a->v.arr.raw + i * n, n);
	if (is_signed(t) && n < 8 && (u >> (8 * n - 1)) & 1)
		u |= ~(uint64_t)0 << (8 * n);
	if (t == CTQ_GGUF_UINT64 && u > (uint64_t)INT64_MAX)
		return false;
	memcpy(out, &u, sizeof u);
	return true;
}

bool ctq_gguf_array_float(const struct ctq_gguf_value *a, uint64_t i, double *out)
{
	if (a->type != CTQ_GGUF_ARRAY || i >= a->v.arr.n || !a->v.arr.raw)
		return false;
	if (a->v.arr.elem == CTQ_GGUF_FLOAT32) {
		*out = ctq_f32_from_bits((uint32_t)le_read(a->v.arr.raw + i * 4, 4));
		return true;
	}
	if (a->v.arr.elem == CTQ_GGUF_FLOAT64) {
		uint64_t u = le_read(a->v.arr.raw + i * 8, 8);
		memcpy(out, &u, sizeof u);
		return true;
	}
	int64_t v;
	if (!ctq_gguf_array_int(a, i, &v))
		return false;
	*out = (double)v;
	return true;
}

/* ---- dequantization ---------------------------------------------------------- */

/* Block layouts, little-endian, as ggml-common.h declares them:
 *   block_q8_0 { ggml_half d; int8_t qs[32]; }                   34 bytes
 *   block_q4_0 { ggml_half d; uint8_t qs[16]; }                  18 bytes
 *   block_q4_1 { ggml_half d; ggml_half m; uint8_t qs[16]; }     20 bytes
 * In the 4-bit blocks byte j holds element j in its low nibble and element
 * j + 16 in its high nibble (dequantize_row_q4_0/1). Each product and sum is
 * rounded on its own (separate statements, -ffp-contract=off), as numpy
 * computes gguf.quants.dequantize: d * q then + m. */
static uint16_t rd16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

bool ctq_ggml_dequantize_row(uint32_t type, const void *src, int64_t k, float *dst)
{
	const unsigned char *p = src;
	if (k < 0 || !ctq_ggml_type_dequantizable(type) ||
	    k % (int64_t)ggml_types[type].block)
		return false;
	switch (type) {
	case CTQ_GGML_F32:
		for (int64_t i = 0; i < k; i++)
			dst[i] = ctq_f32_from_bits((uint32_t)le_read(p + 4 * i, 4));
		return true;
	case CTQ_GGML_F16:
		for (int64_t i = 0; i < k; i++)
			dst[i] = ctq_f16_to_f32(rd16(p + 2 * i));
		return true;
	case CTQ_GGML_BF16:
		for (int64_t i = 0; i < k; i++)
			dst[i] = ctq_bf16_to_f32(rd16(p + 2 * i));
		return true;
	case CTQ_GGML_Q8_0:
		for (int64_t b = 0; b < k / 32; b++, p += 34) {
			float d = ctq_f16_to_f32(rd16(p));
			for (int j = 0; j < 32; j++)
				dst[b * 32 + j] = (float)(int8_t)p[2 + j] * d;
		}
		return true;
	case CTQ_GGML_Q4_0:
		for (int64_t b = 0; b < k / 32; b++, p += 18) {
			float d = ctq_f16_to_f32(rd16(p));
			for (int j = 0; j < 16; j++) {
				dst[b * 32 + j] = (float)((p[2 + j] & 0x0f) - 8) * d;
				dst[b * 32 + j + 16] = (float)((p[2 + j] >> 4) - 8) * d;
			}
		}
		return true;
	case CTQ_GGML_Q4_1:
		for (int64_t b = 0; b < k / 32; b++, p += 20) {
			float d = ctq_f16_to_f32(rd16(p));
			float m = ctq_f16_to_f32(rd16(p + 2));
			for (int j = 0; j < 16; j++) {
				float lo = (float)(p[4 + j] & 0x0f) * d;
				float hi = (float)(p[4 + j] >> 4) * d;
				dst[b * 32 + j] = lo + m;
				dst[b * 32 + j + 16] = hi + m;
			}
		}
		return true;
	default:
		return false;
	}
}

enum ctq_status ctq_gguf_dequantize(const struct ctq_gguf_file *f,
				    const struct ctq_gguf_tensor *t, float *dst,
				    struct ctq_error *err)
{
	if (!ctq_ggml_type_dequantizable(t->type))
		return ctq_gguf_fail_at(err, CTQ_ERR_UNSUPPORTED_FORMAT, f->path, t->info_offset,
			       "tensor \"%s\" has type %s, which ctq does not dequantize "
			       "(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)",
			       t->name, ctq_ggml_type_name(t->type));
	/* Row by row, so that k stays a block multiple and offsets fit. */
	uint64_t rows = t->n_elements / (uint64_t)t->ne[0];
	uint64_t row_bytes = t->n_bytes / rows;
	const unsigned char *src = t->data;
	for (uint64_t r = 0; r < rows; r++)
		ctq_ggml_dequantize_row(t->type, src + r * row_bytes, t->ne[0],
					dst + r * (uint64_t)t->ne[0]);
	return CTQ_OK;
}

/* ---- llama.cpp's rotary permutation ------------------------------------------ */

/* llama.cpp's convert_hf_to_gguf.py (LlamaModel.permute) writes attn_q and
 * attn_k of llama models as
 *     w.reshape(n_head, 2, head_dim / 2, K).swapaxes(1, 2).reshape(rows, K)
 * (n_head = the q heads for attn_q, the kv heads for attn_k), turning
 * transformers' rotate_half layout (the two rotary halves of a head are rows
 * [0, hd/2) and [hd/2, hd)) into ggml's adjacent-pair layout. So GGUF row
 * h*hd + 2*i + j holds HF row h*hd + j*(hd/2) + i, for i < hd/2, j in {0,1}.
 * The inverse used here: HF row r, with h = r / hd, j = (r % hd) / (hd/2),
 * i = r % (hd/2), is GGUF row h*hd + 2*i + j. */
int64_t ctq_gguf_unpermuted_src_row(int64_t r, int64_t head_dim)
{
	int64_t half = head_dim / 2;
	int64_t h = r / head_dim, within = r % head_dim;
	int64_t j = within / half, i = within % half;
	return h * head_dim + 2 * i + j;
}

bool ctq_gguf_unpermute_rows(const float *src, float *dst, int64_t rows,
			     int64_t row_len, int64_t n_head)
{
	if (n_head < 1 || rows < 1 || row_len < 1 || rows % n_head ||
	    (rows / n_head) % 2)
		return false;
	int64_t hd = rows / n_head;
	for (int64_t r = 0; r < rows; r++)
		memcpy(dst + r * row_len, src + ctq_gguf_unpermuted_src_row(r, hd) * row_len,
		       (size_t)row_len * sizeof *dst);
	return true;
}
