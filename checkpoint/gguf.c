/* ctq GGUF reader, dequantizer and llama -> Hugging Face converter
 * (see gguf.h). Sections: type tables; a bounds-checked cursor; metadata
 * values; ctq_gguf_open; typed getters; dequantization; the rotary
 * un-permutation; the import (tensor mapping, config.json,
 * tokenizer.json). */
#include "checkpoint/gguf.h"
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
#include <sys/mman.h>
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
static const char *shown(const char *s, size_t len, char *buf, size_t cap)
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
__attribute__((format(printf, 5, 6)))
static enum ctq_status fail_at(struct ctq_error *err, enum ctq_status s,
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

#define GG_FAIL(f, off, ...) fail_at(err, CTQ_ERR_CHECKPOINT, (f)->path, (off), __VA_ARGS__)

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
		return fail_at(err, CTQ_ERR_CHECKPOINT, path, 0,
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

static enum ctq_status read_kvs(struct cursor *c)
{
	struct ctq_error *err = c->err;
	struct ctq_gguf_file *f = c->f;
	for (size_t i = 0; i < f->n_kvs; i++) {
		struct ctq_gguf_kv *kv = &f->kvs[i];
		kv->file_offset = c->off;
		uint64_t type;
		enum ctq_status st = cur_string(c, "metadata key", true, &kv->key, NULL);
		if (st)
			return st;
		uint64_t at = c->off;
		if ((st = cur_uint(c, 4, "metadata value type", &type)))
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
		enum ctq_status st = cur_string(c, "tensor name", true, &t->name, NULL);
		if (st)
			return st;
		at = c->off;
		if ((st = cur_uint(c, 4, "tensor n_dims", &n_dims)))
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
	for (size_t i = 1; i < f->n_kvs; i++) {
		const struct ctq_gguf_kv *a = f->kv_sorted[i - 1], *b = f->kv_sorted[i];
		if (!strcmp(a->key, b->key)) {
			const struct ctq_gguf_kv *later = a->file_offset > b->file_offset ? a : b;
			const struct ctq_gguf_kv *first = later == a ? b : a;
			return GG_FAIL(f, later->file_offset,
				       "duplicate metadata key \"%s\" (first at offset %" PRIu64 ")",
				       later->key, first->file_offset);
		}
	}
	for (size_t i = 1; i < f->n_tensors; i++) {
		const struct ctq_gguf_tensor *a = f->tensor_sorted[i - 1], *b = f->tensor_sorted[i];
		if (!strcmp(a->name, b->name)) {
			const struct ctq_gguf_tensor *later = a->info_offset > b->info_offset ? a : b;
			const struct ctq_gguf_tensor *first = later == a ? b : a;
			return GG_FAIL(f, later->info_offset,
				       "duplicate tensor name \"%s\" (first at offset %" PRIu64 ")",
				       later->name, first->info_offset);
		}
	}
	return CTQ_OK;
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
	if (f->map)
		munmap((void *)f->map, f->map_bytes);
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
				     bool required, const struct ctq_gguf_kv **kv,
				     struct ctq_error *err)
{
	*kv = ctq_gguf_find_kv(f, key);
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
	enum ctq_status st = find_required(f, key, required, &kv, err);
	if (found)
		*found = kv != NULL;
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
	enum ctq_status st = find_required(f, key, required, &kv, err);
	if (found)
		*found = kv != NULL;
	if (st || !kv)
		return st;
	if (kv->value.type != CTQ_GGUF_FLOAT32 && kv->value.type != CTQ_GGUF_FLOAT64)
		return wrong_type(f, kv, "FLOAT32 or FLOAT64", err);
	*out = kv->value.v.f;
	return CTQ_OK;
}

enum ctq_status ctq_gguf_get_bool(const struct ctq_gguf_file *f, const char *key,
				  bool required, bool *out, bool *found,
				  struct ctq_error *err)
{
	const struct ctq_gguf_kv *kv;
	enum ctq_status st = find_required(f, key, required, &kv, err);
	if (found)
		*found = kv != NULL;
	if (st || !kv)
		return st;
	if (kv->value.type != CTQ_GGUF_BOOL)
		return wrong_type(f, kv, "BOOL", err);
	*out = kv->value.v.b;
	return CTQ_OK;
}

enum ctq_status ctq_gguf_get_string(const struct ctq_gguf_file *f, const char *key,
				    bool required, const struct ctq_gguf_value **out,
				    struct ctq_error *err)
{
	const struct ctq_gguf_kv *kv;
	enum ctq_status st = find_required(f, key, required, &kv, err);
	*out = NULL;
	if (st || !kv)
		return st;
	if (kv->value.type != CTQ_GGUF_STRING)
		return wrong_type(f, kv, "STRING", err);
	*out = &kv->value;
	return CTQ_OK;
}

enum ctq_status ctq_gguf_get_array(const struct ctq_gguf_file *f, const char *key,
				   bool required, enum ctq_gguf_vtype elem,
				   const struct ctq_gguf_value **out,
				   struct ctq_error *err)
{
	const struct ctq_gguf_kv *kv;
	enum ctq_status st = find_required(f, key, required, &kv, err);
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
		return fail_at(err, CTQ_ERR_UNSUPPORTED_FORMAT, f->path, t->info_offset,
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
static int64_t unpermuted_src_row(int64_t r, int64_t head_dim)
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
		memcpy(dst + r * row_len, src + unpermuted_src_row(r, hd) * row_len,
		       (size_t)row_len * sizeof *dst);
	return true;
}

/* ---- import: the llama tensor map ------------------------------------------ */

/* What a tensor is, for its expected shape and the rotary un-permutation. */
enum role {
	R_EMBED, R_NORM, R_Q, R_K, R_V, R_O, R_GATE, R_UP, R_DOWN, R_LM_HEAD,
};

/* Per-layer tensors: GGUF suffix after "blk.N.", HF suffix after
 * "model.layers.N.", role, bias, required. */
static const struct layer_map {
	const char *gguf, *hf;
	enum role role;
	bool bias;
} layer_map[] = {
	{"attn_norm.weight", "input_layernorm.weight", R_NORM, false},
	{"attn_q.weight", "self_attn.q_proj.weight", R_Q, false},
	{"attn_k.weight", "self_attn.k_proj.weight", R_K, false},
	{"attn_v.weight", "self_attn.v_proj.weight", R_V, false},
	{"attn_output.weight", "self_attn.o_proj.weight", R_O, false},
	{"ffn_norm.weight", "post_attention_layernorm.weight", R_NORM, false},
	{"ffn_gate.weight", "mlp.gate_proj.weight", R_GATE, false},
	{"ffn_up.weight", "mlp.up_proj.weight", R_UP, false},
	{"ffn_down.weight", "mlp.down_proj.weight", R_DOWN, false},
	{"attn_q.bias", "self_attn.q_proj.bias", R_Q, true},
	{"attn_k.bias", "self_attn.k_proj.bias", R_K, true},
	{"attn_v.bias", "self_attn.v_proj.bias", R_V, true},
	{"attn_output.bias", "self_attn.o_proj.bias", R_O, true},
	{"ffn_gate.bias", "mlp.gate_proj.bias", R_GATE, true},
	{"ffn_up.bias", "mlp.up_proj.bias", R_UP, true},
	{"ffn_down.bias", "mlp.down_proj.bias", R_DOWN, true},
};
#define N_LAYER_MAP (sizeof layer_map / sizeof *layer_map)
#define N_LAYER_WEIGHTS 9 /* the first nine entries: required in every layer */

struct hparams {
	uint64_t n_layers, hidden, inter, n_head, n_kv, head_dim, context, vocab;
	double rope_theta, eps;
	bool attn_bias, mlp_bias, tied;
	cJSON *rope_scaling;           /* owned; NULL: none */
};

/* One output tensor. */
struct plan_item {
	const struct ctq_gguf_tensor *t;
	const char *hf_name;           /* in the import arena */
	int64_t shape[2];              /* HF shape; ndim 1 uses shape[0] */
	int ndim;
	int64_t permute_heads;         /* > 0: un-permute rows with this many heads */
	uint16_t *bf16;                /* (n_elements) inside the output buffer */
};

struct import {
	struct ctq_gguf_file f;
	struct ctq_error *err;
	struct hparams hp;
	struct plan_item *items;       /* (n_items) */
	size_t n_items;
	struct ctq_arena arena;
	/* tokenizer */
	const struct ctq_gguf_value *tokens, *merges, *token_type, *pre, *chat_template;
	uint64_t special[4];           /* bos, eos, unk, pad */
	bool has_special[4];
	bool add_bos, add_eos;
	const char **sorted_tokens;    /* (tokens->v.arr.n) for lookups */
	size_t n_added;
};

static const char *const special_keys[4] = {
	"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
	"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
};
enum { SP_BOS, SP_EOS, SP_UNK, SP_PAD };

/* The shortest decimal that reads back as the same float32, as a double:
 * FLOAT32 metadata (9.999999747378752e-06) becomes what the producer wrote
 * in its config.json (1e-05). Other doubles come back unchanged. */
static double f32_shortest(double v)
{
	float x = (float)v;
	if ((double)x != v || !isfinite(v))
		return v;
	char buf[32];
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, (double)x);
		if (strtof(buf, NULL) == x)
			return strtod(buf, NULL);
	}
	return v;
}

#define IM_FAIL(im, off, ...) fail_at((im)->err, CTQ_ERR_CHECKPOINT, (im)->f.path, (off), __VA_ARGS__)
#define IM_UNSUP(im, off, ...) fail_at((im)->err, CTQ_ERR_UNSUPPORTED_FORMAT, (im)->f.path, (off), __VA_ARGS__)

static enum ctq_status nomem(struct import *im)
{
	return ctq_error_set(im->err, CTQ_ERR_NOMEM, im->f.path, "out of memory");
}

static enum ctq_status read_rope_scaling(struct import *im)
{
	char sb[128];
	struct ctq_gguf_file *f = &im->f;
	struct ctq_error *err = im->err;
	const struct ctq_gguf_value *type;
	double factor = 1.0, linear = 1.0;
	bool has_factor = false, has_linear = false, has_orig = false;
	uint64_t orig = 0;
	enum ctq_status st;
	if ((st = ctq_gguf_get_string(f, "llama.rope.scaling.type", false, &type, err)) ||
	    (st = ctq_gguf_get_float(f, "llama.rope.scaling.factor", false, &factor,
				     &has_factor, err)) ||
	    (st = ctq_gguf_get_float(f, "llama.rope.scale_linear", false, &linear,
				     &has_linear, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.rope.scaling.original_context_length", false,
				    UINT32_MAX, &orig, &has_orig, err)))
		return st;
	const char *kind = type ? type->v.str.s : (has_linear && linear != 1.0 ? "linear" : "none");
	if (!type && has_linear) {
		factor = linear;
		has_factor = true;
	}
	if (!strcmp(kind, "none"))
		return CTQ_OK;
	uint64_t at = type ? type->file_offset : 0;
	if (strcmp(kind, "linear") && strcmp(kind, "yarn"))
		return IM_UNSUP(im, at, "llama.rope.scaling.type is \"%s\"; ctq converts none, linear and yarn",
				shown(kind, strlen(kind), sb, sizeof sb));
	if (!has_factor || !(factor > 0) || !isfinite(factor))
		return IM_FAIL(im, at, "rope scaling \"%s\" needs a positive llama.rope.scaling.factor",
			       kind);
	if (!strcmp(kind, "yarn") && !has_orig)
		return IM_FAIL(im, at, "rope scaling yarn needs llama.rope.scaling.original_context_length");
	cJSON *o = cJSON_CreateObject();
	if (!o || !cJSON_AddNumberToObject(o, "factor", f32_shortest(factor)) ||
	    (has_orig && !strcmp(kind, "yarn") &&
	     !cJSON_AddNumberToObject(o, "original_max_position_embeddings", (double)orig)) ||
	    !cJSON_AddStringToObject(o, "rope_type", kind)) {
		cJSON_Delete(o);
		return nomem(im);
	}
	im->hp.rope_scaling = o;
	return CTQ_OK;
}

static enum ctq_status read_hparams(struct import *im)
{
	char sb[128];
	struct ctq_gguf_file *f = &im->f;
	struct ctq_error *err = im->err;
	struct hparams *hp = &im->hp;
	const struct ctq_gguf_value *arch;
	enum ctq_status st = ctq_gguf_get_string(f, "general.architecture", true, &arch, err);
	if (st)
		return st;
	if (strcmp(arch->v.str.s, "llama"))
		return IM_UNSUP(im, arch->file_offset,
				"general.architecture is \"%s\"; ctq imports llama only",
				shown(arch->v.str.s, (size_t)arch->v.str.len, sb, sizeof sb));
	uint64_t key_len = 0, val_len = 0, rope_dim = 0;
	bool has_kv, has_key_len, has_val_len, has_rope_dim, has_theta;
	const uint64_t dim_max = (uint64_t)1 << 20;
	if ((st = ctq_gguf_get_uint(f, "llama.block_count", true, 1 << 16, &hp->n_layers, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.context_length", true, (uint64_t)1 << 31, &hp->context, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.embedding_length", true, dim_max, &hp->hidden, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.feed_forward_length", true, dim_max, &hp->inter, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.attention.head_count", true, 1 << 16, &hp->n_head, NULL, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.attention.head_count_kv", false, 1 << 16, &hp->n_kv, &has_kv, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.attention.key_length", false, dim_max, &key_len, &has_key_len, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.attention.value_length", false, dim_max, &val_len, &has_val_len, err)) ||
	    (st = ctq_gguf_get_uint(f, "llama.rope.dimension_count", false, dim_max, &rope_dim, &has_rope_dim, err)) ||
	    (st = ctq_gguf_get_float(f, "llama.rope.freq_base", false, &hp->rope_theta, &has_theta, err)) ||
	    (st = ctq_gguf_get_float(f, "llama.attention.layer_norm_rms_epsilon", true, &hp->eps, NULL, err)))
		return st;
	if (!has_theta)
		hp->rope_theta = 10000.0; /* llama.cpp's default for llama */
	if (!has_kv)
		hp->n_kv = hp->n_head;
	const struct ctq_gguf_kv *kv;
	if (!hp->n_layers || !hp->hidden || !hp->inter || !hp->n_head || !hp->n_kv ||
	    !hp->context) {
		kv = ctq_gguf_find_kv(f, !hp->n_layers ? "llama.block_count"
					 : !hp->hidden ? "llama.embedding_length"
					 : !hp->inter ? "llama.feed_forward_length"
					 : !hp->n_head ? "llama.attention.head_count"
					 : !hp->n_kv ? "llama.attention.head_count_kv"
						     : "llama.context_length");
		return IM_FAIL(im, kv ? kv->file_offset : 0, "metadata \"%s\" is 0; expected a positive value",
			       kv ? kv->key : "?");
	}
	if (hp->n_head % hp->n_kv) {
		kv = ctq_gguf_find_kv(f, "llama.attention.head_count_kv");
		return IM_FAIL(im, kv ? kv->file_offset : 0,
			       "llama.attention.head_count %" PRIu64 " is not a multiple of head_count_kv %" PRIu64,
			       hp->n_head, hp->n_kv);
	}
	if (has_key_len) {
		hp->head_dim = key_len;
	} else if (hp->hidden % hp->n_head) {
		kv = ctq_gguf_find_kv(f, "llama.attention.head_count");
		return IM_FAIL(im, kv->file_offset,
			       "llama.embedding_length %" PRIu64 " is not a multiple of head_count %" PRIu64
			       " and llama.attention.key_length is absent", hp->hidden, hp->n_head);
	} else {
		hp->head_dim = hp->hidden / hp->n_head;
	}
	if (!hp->head_dim || hp->head_dim % 2) {
		kv = ctq_gguf_find_kv(f, has_key_len ? "llama.attention.key_length" : "llama.attention.head_count");
		return IM_FAIL(im, kv->file_offset, "head_dim is %" PRIu64 "; expected a positive even number",
			       hp->head_dim);
	}
	if (has_val_len && val_len != hp->head_dim) {
		kv = ctq_gguf_find_kv(f, "llama.attention.value_length");
		return IM_UNSUP(im, kv->file_offset,
				"llama.attention.value_length %" PRIu64 " differs from the key length %" PRIu64
				"; transformers' llama has one head_dim", val_len, hp->head_dim);
	}
	if (has_rope_dim && rope_dim != hp->head_dim) {
		kv = ctq_gguf_find_kv(f, "llama.rope.dimension_count");
		return IM_UNSUP(im, kv->file_offset,
				"llama.rope.dimension_count %" PRIu64 " differs from head_dim %" PRIu64
				" (partial rotary); ctq converts full-rotary llama only", rope_dim, hp->head_dim);
	}
	if (!(hp->eps > 0) || !isfinite(hp->eps)) {
		kv = ctq_gguf_find_kv(f, "llama.attention.layer_norm_rms_epsilon");
		return IM_FAIL(im, kv->file_offset, "layer_norm_rms_epsilon is %g; expected a positive number",
			       hp->eps);
	}
	if (!(hp->rope_theta > 0) || !isfinite(hp->rope_theta)) {
		kv = ctq_gguf_find_kv(f, "llama.rope.freq_base");
		return IM_FAIL(im, kv->file_offset, "rope.freq_base is %g; expected a positive number",
			       hp->rope_theta);
	}
	hp->eps = f32_shortest(hp->eps);
	hp->rope_theta = f32_shortest(hp->rope_theta);
	return read_rope_scaling(im);
}

/* Parses "blk.N.rest": N (no sign, no leading zeros) and rest. */
static bool parse_block(const char *name, uint64_t *n, const char **rest)
{
	if (strncmp(name, "blk.", 4))
		return false;
	const char *p = name + 4;
	if (*p < '0' || *p > '9' || (*p == '0' && p[1] != '.'))
		return false;
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p++ - '0');
	}
	if (*p != '.')
		return false;
	*n = v;
	*rest = p + 1;
	return true;
}

/* Expected HF shape of a tensor of role r (rows, cols; cols 0 for 1-D). */
static void expected_shape(const struct hparams *hp, enum role r, bool bias,
			   int64_t *rows, int64_t *cols)
{
	int64_t h = (int64_t)hp->hidden, q = (int64_t)(hp->n_head * hp->head_dim);
	int64_t kvd = (int64_t)(hp->n_kv * hp->head_dim), ff = (int64_t)hp->inter;
	int64_t v = (int64_t)hp->vocab;
	switch (r) {
	case R_EMBED:
	case R_LM_HEAD: *rows = v; *cols = h; break;
	case R_NORM: *rows = h; *cols = 0; break;
	case R_Q: *rows = q; *cols = h; break;
	case R_K:
	case R_V: *rows = kvd; *cols = h; break;
	case R_O: *rows = h; *cols = q; break;
	case R_GATE:
	case R_UP: *rows = ff; *cols = h; break;
	case R_DOWN: *rows = h; *cols = ff; break;
	}
	if (bias)
		*cols = 0;
}

static enum ctq_status add_item(struct import *im, const struct ctq_gguf_tensor *t,
				const char *hf_name, enum role r, bool bias)
{
	int64_t rows = 0, cols = 0;
	expected_shape(&im->hp, r, bias, &rows, &cols);
	int want_dims = cols ? 2 : 1;
	bool ok = t->n_dims == want_dims &&
		  (cols ? t->ne[0] == cols && t->ne[1] == rows : t->ne[0] == rows);
	if (!ok) {
		char got[96];
		int n = snprintf(got, sizeof got, "[");
		for (int d = 0; d < t->n_dims && n > 0 && (size_t)n < sizeof got; d++)
			n += snprintf(got + n, sizeof got - (size_t)n, "%s%" PRId64, d ? ", " : "",
				      t->ne[d]);
		if (n > 0 && (size_t)n < sizeof got)
			snprintf(got + n, sizeof got - (size_t)n, "]");
		if (cols)
			return IM_FAIL(im, t->info_offset,
				       "tensor \"%s\" has GGUF dims %s; expected [%" PRId64 ", %" PRId64
				       "] (HF %s [%" PRId64 ", %" PRId64 "]) from the llama.* metadata",
				       t->name, got, cols, rows, hf_name, rows, cols);
		return IM_FAIL(im, t->info_offset,
			       "tensor \"%s\" has GGUF dims %s; expected [%" PRId64 "] from the llama.* metadata",
			       t->name, got, rows);
	}
	if (!ctq_ggml_type_dequantizable(t->type))
		return IM_UNSUP(im, t->info_offset,
				"tensor \"%s\" has type %s, which ctq does not dequantize "
				"(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)",
				t->name, ctq_ggml_type_name(t->type));
	struct plan_item *it = &im->items[im->n_items++];
	it->t = t;
	it->hf_name = hf_name;
	it->ndim = want_dims;
	it->shape[0] = rows;
	it->shape[1] = cols;
	if (r == R_Q)
		it->permute_heads = (int64_t)im->hp.n_head;
	else if (r == R_K)
		it->permute_heads = (int64_t)im->hp.n_kv;
	return CTQ_OK;
}

/* Maps every GGUF tensor to its HF name and checks shapes, types, and that
 * the model is complete. */
static enum ctq_status plan_tensors(struct import *im)
{
	struct ctq_gguf_file *f = &im->f;
	struct hparams *hp = &im->hp;
	const struct ctq_gguf_tensor *embd = ctq_gguf_find_tensor(f, "token_embd.weight");
	if (!embd)
		return IM_FAIL(im, 0, "tensor \"token_embd.weight\" is missing");
	if (embd->n_dims != 2 || embd->ne[0] != (int64_t)hp->hidden)
		return IM_FAIL(im, embd->info_offset,
			       "tensor \"token_embd.weight\" has %d dim(s), ne[0] = %" PRId64
			       "; expected [%" PRIu64 ", vocab]", embd->n_dims, embd->ne[0], hp->hidden);
	hp->vocab = (uint64_t)embd->ne[1];
	hp->tied = ctq_gguf_find_tensor(f, "output.weight") == NULL;
	im->items = ctq_arena_calloc(&im->arena, f->n_tensors ? f->n_tensors : 1,
				     sizeof *im->items);
	/* seen[layer * N_LAYER_MAP + k] */
	bool *seen = ctq_arena_calloc(&im->arena, (size_t)hp->n_layers * N_LAYER_MAP, 1);
	if (!im->items || !seen)
		return nomem(im);
	enum ctq_status st;
	for (size_t i = 0; i < f->n_tensors; i++) {
		const struct ctq_gguf_tensor *t = &f->tensors[i];
		uint64_t layer;
		const char *rest;
		if (!strcmp(t->name, "token_embd.weight")) {
			st = add_item(im, t, "model.embed_tokens.weight", R_EMBED, false);
		} else if (!strcmp(t->name, "output_norm.weight")) {
			st = add_item(im, t, "model.norm.weight", R_NORM, false);
		} else if (!strcmp(t->name, "output.weight")) {
			st = add_item(im, t, "lm_head.weight", R_LM_HEAD, false);
		} else if (!strcmp(t->name, "rope_freqs.weight")) {
			st = IM_UNSUP(im, t->info_offset,
				      "tensor \"rope_freqs.weight\" (llama3-style rope scaling factors) "
				      "cannot be expressed as a transformers rope_scaling; not converted");
		} else if (parse_block(t->name, &layer, &rest)) {
			size_t k = 0;
			while (k < N_LAYER_MAP && strcmp(rest, layer_map[k].gguf))
				k++;
			if (k == N_LAYER_MAP)
				return IM_FAIL(im, t->info_offset,
					       "tensor \"%s\" is not part of a llama layer (expected blk.N.{attn_norm,"
					       "attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,ffn_up,ffn_down}.weight "
					       "or a projection .bias)", t->name);
			if (layer >= hp->n_layers)
				return IM_FAIL(im, t->info_offset,
					       "tensor \"%s\": layer %" PRIu64 " is past llama.block_count %" PRIu64,
					       t->name, layer, hp->n_layers);
			seen[layer * N_LAYER_MAP + k] = true;
			const char *hf = ctq_arena_printf(&im->arena, "model.layers.%" PRIu64 ".%s",
							  layer, layer_map[k].hf);
			if (!hf)
				return nomem(im);
			st = add_item(im, t, hf, layer_map[k].role, layer_map[k].bias);
			if (!st && layer_map[k].bias) {
				if (layer_map[k].role == R_GATE || layer_map[k].role == R_UP ||
				    layer_map[k].role == R_DOWN)
					hp->mlp_bias = true;
				else
					hp->attn_bias = true;
			}
		} else {
			return IM_FAIL(im, t->info_offset,
				       "tensor \"%s\" is not part of a llama model (expected token_embd, "
				       "output_norm, output or blk.N.*)", t->name);
		}
		if (st)
			return st;
	}
	if (!ctq_gguf_find_tensor(f, "output_norm.weight"))
		return IM_FAIL(im, 0, "tensor \"output_norm.weight\" is missing");
	/* Every layer has the nine weights; biases are all there or all absent
	 * per family (transformers' attention_bias / mlp_bias cover all
	 * projections of every layer). */
	for (uint64_t l = 0; l < hp->n_layers; l++)
		for (size_t k = 0; k < N_LAYER_MAP; k++) {
			bool is_mlp = layer_map[k].role == R_GATE || layer_map[k].role == R_UP ||
				      layer_map[k].role == R_DOWN;
			bool need = k < N_LAYER_WEIGHTS ||
				    (layer_map[k].bias && (is_mlp ? hp->mlp_bias : hp->attn_bias));
			if (need && !seen[l * N_LAYER_MAP + k])
				return IM_FAIL(im, 0, "tensor \"blk.%" PRIu64 ".%s\" is missing%s", l,
					       layer_map[k].gguf,
					       layer_map[k].bias ? " (other layers have this bias)" : "");
		}
	return CTQ_OK;
}

/* ---- import: the tokenizer ----------------------------------------------------- */

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_key_str(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

static bool vocab_has(const struct import *im, const char *s)
{
	return bsearch(s, im->sorted_tokens, (size_t)im->tokens->v.arr.n,
		       sizeof *im->sorted_tokens, cmp_key_str) != NULL;
}

/* Token id of a sorted-table entry (its string lives in the tokens array). */
static uint64_t token_id_of(const struct import *im, const char *s)
{
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	for (uint64_t i = 0; i < im->tokens->v.arr.n; i++)
		if (items[i].v.str.s == s)
			return i;
	return UINT64_MAX;
}

static enum ctq_status read_tokenizer(struct import *im)
{
	char sb[128];
	struct ctq_gguf_file *f = &im->f;
	struct ctq_error *err = im->err;
	const struct ctq_gguf_value *model;
	enum ctq_status st;
	if ((st = ctq_gguf_get_string(f, "tokenizer.ggml.model", true, &model, err)))
		return st;
	if (strcmp(model->v.str.s, "gpt2"))
		return IM_UNSUP(im, model->file_offset,
				"tokenizer.ggml.model is \"%s\"; ctq converts \"gpt2\" (byte-level BPE) tokenizers only",
				shown(model->v.str.s, (size_t)model->v.str.len, sb, sizeof sb));
	if ((st = ctq_gguf_get_string(f, "tokenizer.ggml.pre", false, &im->pre, err)) ||
	    (st = ctq_gguf_get_array(f, "tokenizer.ggml.tokens", true, CTQ_GGUF_STRING,
				     &im->tokens, err)) ||
	    (st = ctq_gguf_get_array(f, "tokenizer.ggml.merges", true, CTQ_GGUF_STRING,
				     &im->merges, err)) ||
	    (st = ctq_gguf_get_array(f, "tokenizer.ggml.token_type", false, CTQ_GGUF_INT32,
				     &im->token_type, err)) ||
	    (st = ctq_gguf_get_string(f, "tokenizer.chat_template", false, &im->chat_template, err)) ||
	    (st = ctq_gguf_get_bool(f, "tokenizer.ggml.add_bos_token", false, &im->add_bos, NULL, err)) ||
	    (st = ctq_gguf_get_bool(f, "tokenizer.ggml.add_eos_token", false, &im->add_eos, NULL, err)))
		return st;
	uint64_t n = im->tokens->v.arr.n;
	const struct ctq_gguf_kv *kv = ctq_gguf_find_kv(f, "tokenizer.ggml.tokens");
	if (n == 0 || n > im->hp.vocab)
		return IM_FAIL(im, kv->file_offset,
			       "tokenizer.ggml.tokens has %" PRIu64 " token(s); expected 1..%" PRIu64
			       " (the rows of token_embd.weight)", n, im->hp.vocab);
	if (im->token_type && im->token_type->v.arr.n != n) {
		kv = ctq_gguf_find_kv(f, "tokenizer.ggml.token_type");
		return IM_FAIL(im, kv->file_offset,
			       "tokenizer.ggml.token_type has %" PRIu64 " entries; expected %" PRIu64
			       " (one per token)", im->token_type->v.arr.n, n);
	}
	for (int s = 0; s < 4; s++)
		if ((st = ctq_gguf_get_uint(f, special_keys[s], false, n - 1, &im->special[s],
					    &im->has_special[s], err)))
			return st;
	if (im->chat_template &&
	    (!ctq_utf8_valid((const unsigned char *)im->chat_template->v.str.s,
			     (size_t)im->chat_template->v.str.len, NULL) ||
	     strlen(im->chat_template->v.str.s) != im->chat_template->v.str.len))
		return IM_FAIL(im, im->chat_template->file_offset,
			       "tokenizer.chat_template is not UTF-8 text without NUL bytes");
	/* Tokens: UTF-8, no NUL, not empty, unique. */
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	im->sorted_tokens = ctq_arena_calloc(&im->arena, (size_t)n, sizeof *im->sorted_tokens);
	if (!im->sorted_tokens)
		return nomem(im);
	for (uint64_t i = 0; i < n; i++) {
		const struct ctq_gguf_value *t = &items[i];
		if (!t->v.str.len || strlen(t->v.str.s) != t->v.str.len ||
		    !ctq_utf8_valid((const unsigned char *)t->v.str.s, (size_t)t->v.str.len, NULL))
			return IM_FAIL(im, t->file_offset,
				       "token %" PRIu64 " is empty, holds a NUL byte or is not UTF-8", i);
		im->sorted_tokens[i] = t->v.str.s;
		if (im->token_type) {
			int64_t ty;
			ctq_gguf_array_int(im->token_type, i, &ty);
			if (ty < 0 || ty > 6)
				return IM_FAIL(im, im->token_type->file_offset + 12 + 4 * i,
					       "token %" PRIu64 " has token_type %" PRId64
					       "; expected 0..6 (llama_token_type)", i, ty);
			if (ty == 3 || ty == 4)
				im->n_added++;
		}
	}
	qsort(im->sorted_tokens, (size_t)n, sizeof *im->sorted_tokens, cmp_str_ptr);
	for (uint64_t i = 1; i < n; i++)
		if (!strcmp(im->sorted_tokens[i - 1], im->sorted_tokens[i])) {
			uint64_t a = token_id_of(im, im->sorted_tokens[i - 1]);
			uint64_t b = token_id_of(im, im->sorted_tokens[i]);
			uint64_t later = a > b ? a : b;
			return IM_FAIL(im, items[later].file_offset,
				       "token %" PRIu64 " \"%s\" duplicates token %" PRIu64
				       "; a tokenizer.json vocab maps each string to one id",
				       later, shown(items[later].v.str.s, (size_t)items[later].v.str.len, sb, sizeof sb),
				       a < b ? a : b);
		}
	/* Merges: "left right", both sides and their concatenation in the
	 * vocab, as tokenizers' BPE builder requires. */
	const struct ctq_gguf_value *m = im->merges->v.arr.items;
	size_t cap = 0;
	char *buf = NULL;
	st = CTQ_OK;
	for (uint64_t i = 0; i < im->merges->v.arr.n && !st; i++) {
		const char *s = m[i].v.str.s;
		size_t len = (size_t)m[i].v.str.len;
		const char *sp = memchr(s, ' ', len);
		if (strlen(s) != len || !ctq_utf8_valid((const unsigned char *)s, len, NULL) || !sp || sp == s ||
		    sp == s + len - 1 || memchr(sp + 1, ' ', len - (size_t)(sp - s) - 1)) {
			st = IM_FAIL(im, m[i].file_offset,
				     "merge %" PRIu64 " \"%s\" is not two tokens separated by one space", i,
				     shown(s, len, sb, sizeof sb));
			break;
		}
		if (len + 1 > cap) {
			char *nb = ctq_realloc(buf, len + 1);
			if (!nb) {
				st = nomem(im);
				break;
			}
			buf = nb;
			cap = len + 1;
		}
		size_t nl = (size_t)(sp - s);
		memcpy(buf, s, nl);
		buf[nl] = '\0';
		const char *miss = NULL;
		if (!vocab_has(im, buf))
			miss = "left";
		if (!miss && !vocab_has(im, sp + 1))
			miss = "right";
		if (!miss) {
			memcpy(buf + nl, sp + 1, len - nl - 1);
			buf[len - 1] = '\0';
			if (!vocab_has(im, buf))
				miss = "merged";
		}
		if (miss)
			st = IM_FAIL(im, m[i].file_offset,
				     "merge %" PRIu64 " \"%s\": its %s token is not in tokenizer.ggml.tokens",
				     i, shown(s, len, sb, sizeof sb), miss);
	}
	free(buf);
	return st;
}

/* Pre-tokenizer for tokenizer.ggml.pre, matching llama.cpp's regex chains
 * (llama-vocab.cpp):
 * - "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone":
 *   llama.cpp splits every digit ("\p{N}") and then applies the GPT-2 regex.
 *   Hugging Face writes this as SmolLM2's tokenizer.json does:
 *   Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=
 *   false, trim_offsets=true, use_regex=true)].
 * - "gpt2", "mpt", "olmo": the GPT-2 regex alone: ByteLevel(use_regex=true).
 * Anything else (absent / "default", llama-bpe, qwen2, ...) uses regexes
 * this table does not express, and is refused rather than guessed. */
static cJSON *byte_level(bool add_prefix_space, bool trim_offsets)
{
	cJSON *o = cJSON_CreateObject();
	if (o && cJSON_AddStringToObject(o, "type", "ByteLevel") &&
	    cJSON_AddBoolToObject(o, "add_prefix_space", add_prefix_space) &&
	    cJSON_AddBoolToObject(o, "trim_offsets", trim_offsets) &&
	    cJSON_AddBoolToObject(o, "use_regex", true))
		return o;
	cJSON_Delete(o);
	return NULL;
}

static const char *const digits_pre[] = {"smollm", "starcoder", "refact", "command-r",
					  "codeshell", "exaone"};
static const char *const gpt2_pre[] = {"gpt2", "mpt", "olmo"};

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

static enum ctq_status pre_tokenizer(struct import *im, cJSON **out)
{
	char sb[128];
	const char *pre = im->pre ? im->pre->v.str.s : NULL;
	*out = NULL;
	if (pre && in_list(pre, gpt2_pre, sizeof gpt2_pre / sizeof *gpt2_pre)) {
		*out = byte_level(false, true);
		return *out ? CTQ_OK : nomem(im);
	}
	if (pre && in_list(pre, digits_pre, sizeof digits_pre / sizeof *digits_pre)) {
		cJSON *seq = cJSON_CreateObject(), *list, *digits;
		if (!seq || !cJSON_AddStringToObject(seq, "type", "Sequence") ||
		    !(list = cJSON_AddArrayToObject(seq, "pretokenizers")) ||
		    !(digits = cJSON_CreateObject())) {
			cJSON_Delete(seq);
			return nomem(im);
		}
		cJSON_AddItemToArray(list, digits);
		cJSON *bl = byte_level(false, true);
		if (!cJSON_AddStringToObject(digits, "type", "Digits") ||
		    !cJSON_AddBoolToObject(digits, "individual_digits", true) || !bl) {
			cJSON_Delete(bl);
			cJSON_Delete(seq);
			return nomem(im);
		}
		cJSON_AddItemToArray(list, bl);
		*out = seq;
		return CTQ_OK;
	}
	return IM_UNSUP(im, im->pre ? im->pre->file_offset : 0,
			"tokenizer.ggml.pre is %s%s%s; ctq converts the pre-tokenizers smollm, starcoder, "
			"refact, command-r, codeshell, exaone (digits split, then GPT-2) and gpt2, mpt, "
			"olmo (GPT-2)", pre ? "\"" : "",
			pre ? shown(pre, (size_t)im->pre->v.str.len, sb, sizeof sb)
			    : "absent (llama.cpp's legacy default)",
			pre ? "\"" : "");
}

static int64_t token_type_of(const struct import *im, uint64_t id)
{
	int64_t ty = 1;
	if (im->token_type)
		ctq_gguf_array_int(im->token_type, id, &ty);
	return ty;
}

/* A TemplateProcessing post-processor adding BOS / EOS around each
 * sequence, as transformers writes for llama-3-style tokenizers. */
static cJSON *template_piece(const char *kind, const char *id, int type_id)
{
	cJSON *o = cJSON_CreateObject(), *in = cJSON_CreateObject();
	if (!o || !in || !cJSON_AddStringToObject(in, "id", id) ||
	    !cJSON_AddNumberToObject(in, "type_id", type_id)) {
		cJSON_Delete(o);
		cJSON_Delete(in);
		return NULL;
	}
	cJSON_AddItemToObject(o, kind, in);
	return o;
}

static cJSON *template_processing(const struct import *im)
{
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	const char *bos = im->add_bos ? items[im->special[SP_BOS]].v.str.s : NULL;
	const char *eos = im->add_eos ? items[im->special[SP_EOS]].v.str.s : NULL;
	cJSON *o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "type", "TemplateProcessing"))
		goto oom;
	for (int pair = 0; pair < 2; pair++) {
		cJSON *a = cJSON_AddArrayToObject(o, pair ? "pair" : "single");
		if (!a)
			goto oom;
		for (int s = 0; s <= pair; s++) {
			cJSON *p;
			if (bos) {
				if (!(p = template_piece("SpecialToken", bos, s)))
					goto oom;
				cJSON_AddItemToArray(a, p);
			}
			if (!(p = template_piece("Sequence", s ? "B" : "A", s)))
				goto oom;
			cJSON_AddItemToArray(a, p);
			if (eos) {
				if (!(p = template_piece("SpecialToken", eos, s)))
					goto oom;
				cJSON_AddItemToArray(a, p);
			}
		}
	}
	cJSON *sp = cJSON_AddObjectToObject(o, "special_tokens");
	if (!sp)
		goto oom;
	for (int k = 0; k < 2; k++) {
		const char *tok = k ? eos : bos;
		uint64_t id = im->special[k ? SP_EOS : SP_BOS];
		if (!tok || cJSON_GetObjectItemCaseSensitive(sp, tok))
			continue;
		cJSON *e = cJSON_CreateObject(), *ids, *toks;
		if (!e)
			goto oom;
		cJSON_AddItemToObject(sp, tok, e);
		if (!cJSON_AddStringToObject(e, "id", tok) ||
		    !(ids = cJSON_AddArrayToObject(e, "ids")) ||
		    !(toks = cJSON_AddArrayToObject(e, "tokens")))
			goto oom;
		cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)id));
		cJSON_AddItemToArray(toks, cJSON_CreateString(tok));
	}
	return o;
oom:
	cJSON_Delete(o);
	return NULL;
}

/* tokenizer.json as the `tokenizers` library lays it out. */
static enum ctq_status tokenizer_json(struct import *im, cJSON **out)
{
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	uint64_t n = im->tokens->v.arr.n;
	cJSON *pre = NULL, *root = cJSON_CreateObject();
	enum ctq_status st = CTQ_OK;
	*out = NULL;
	if ((im->add_bos && !im->has_special[SP_BOS]) || (im->add_eos && !im->has_special[SP_EOS])) {
		const struct ctq_gguf_kv *kv = ctq_gguf_find_kv(
			&im->f, im->add_bos && !im->has_special[SP_BOS] ? "tokenizer.ggml.add_bos_token"
									: "tokenizer.ggml.add_eos_token");
		st = IM_FAIL(im, kv->file_offset, "%s is true but the token id is missing", kv->key);
		goto done;
	}
	if ((st = pre_tokenizer(im, &pre)))
		goto done;
	if (!root || !cJSON_AddStringToObject(root, "version", "1.0") ||
	    !cJSON_AddNullToObject(root, "truncation") || !cJSON_AddNullToObject(root, "padding"))
		goto oom;
	cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
	if (!added)
		goto oom;
	for (uint64_t i = 0; i < n; i++) {
		int64_t ty = token_type_of(im, i);
		if (ty != 3 && ty != 4)
			continue;
		cJSON *o = cJSON_CreateObject();
		if (!o)
			goto oom;
		cJSON_AddItemToArray(added, o);
		if (!cJSON_AddNumberToObject(o, "id", (double)i) ||
		    !cJSON_AddStringToObject(o, "content", items[i].v.str.s) ||
		    !cJSON_AddBoolToObject(o, "single_word", false) ||
		    !cJSON_AddBoolToObject(o, "lstrip", false) ||
		    !cJSON_AddBoolToObject(o, "rstrip", false) ||
		    !cJSON_AddBoolToObject(o, "normalized", false) ||
		    !cJSON_AddBoolToObject(o, "special", ty == 3))
			goto oom;
	}
	if (!cJSON_AddNullToObject(root, "normalizer"))
		goto oom;
	cJSON_AddItemToObject(root, "pre_tokenizer", pre);
	pre = NULL;
	cJSON *post = byte_level(true, false);
	if (!post)
		goto oom;
	if (im->add_bos || im->add_eos) {
		cJSON *seq = cJSON_CreateObject(), *list, *tp = template_processing(im);
		if (!seq || !tp || !cJSON_AddStringToObject(seq, "type", "Sequence") ||
		    !(list = cJSON_AddArrayToObject(seq, "processors"))) {
			cJSON_Delete(seq);
			cJSON_Delete(tp);
			cJSON_Delete(post);
			goto oom;
		}
		cJSON_AddItemToArray(list, post);
		cJSON_AddItemToArray(list, tp);
		post = seq;
	}
	cJSON_AddItemToObject(root, "post_processor", post);
	cJSON *dec = byte_level(true, true);
	if (!dec)
		goto oom;
	cJSON_AddItemToObject(root, "decoder", dec);
	cJSON *model = cJSON_AddObjectToObject(root, "model");
	if (!model || !cJSON_AddStringToObject(model, "type", "BPE") ||
	    !cJSON_AddNullToObject(model, "dropout") || !cJSON_AddNullToObject(model, "unk_token") ||
	    !cJSON_AddNullToObject(model, "continuing_subword_prefix") ||
	    !cJSON_AddNullToObject(model, "end_of_word_suffix") ||
	    !cJSON_AddBoolToObject(model, "fuse_unk", false) ||
	    !cJSON_AddBoolToObject(model, "byte_fallback", false) ||
	    !cJSON_AddBoolToObject(model, "ignore_merges", false))
		goto oom;
	cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
	cJSON *merges = cJSON_AddArrayToObject(model, "merges");
	if (!vocab || !merges)
		goto oom;
	for (uint64_t i = 0; i < n; i++)
		if (!cJSON_AddNumberToObject(vocab, items[i].v.str.s, (double)i))
			goto oom;
	const struct ctq_gguf_value *m = im->merges->v.arr.items;
	for (uint64_t i = 0; i < im->merges->v.arr.n; i++) {
		cJSON *s = cJSON_CreateString(m[i].v.str.s);
		if (!s)
			goto oom;
		cJSON_AddItemToArray(merges, s);
	}
	*out = root;
	root = NULL;
	goto done;
oom:
	st = nomem(im);
done:
	cJSON_Delete(pre);
	cJSON_Delete(root);
	return st;
}

/* tokenizer_config.json, keys in sorted order (transformers writes it with
 * sort_keys=True; added_tokens_decoder in id order, as Python sorts the
 * int keys before turning them into strings). */
static enum ctq_status tokenizer_config_json(struct import *im, cJSON **out)
{
	const struct ctq_gguf_value *items = im->tokens->v.arr.items;
	cJSON *root = cJSON_CreateObject(), *dec;
	*out = NULL;
	if (!root || !(dec = cJSON_AddObjectToObject(root, "added_tokens_decoder")))
		goto oom;
	for (uint64_t i = 0; i < im->tokens->v.arr.n; i++) {
		int64_t ty = token_type_of(im, i);
		if (ty != 3 && ty != 4)
			continue;
		char id[24];
		snprintf(id, sizeof id, "%" PRIu64, i);
		cJSON *o = cJSON_AddObjectToObject(dec, id);
		if (!o || !cJSON_AddStringToObject(o, "content", items[i].v.str.s) ||
		    !cJSON_AddBoolToObject(o, "lstrip", false) ||
		    !cJSON_AddBoolToObject(o, "normalized", false) ||
		    !cJSON_AddBoolToObject(o, "rstrip", false) ||
		    !cJSON_AddBoolToObject(o, "single_word", false) ||
		    !cJSON_AddBoolToObject(o, "special", ty == 3))
			goto oom;
	}
	if (im->has_special[SP_BOS] &&
	    !cJSON_AddStringToObject(root, "bos_token", items[im->special[SP_BOS]].v.str.s))
		goto oom;
	if (im->chat_template &&
	    !cJSON_AddStringToObject(root, "chat_template", im->chat_template->v.str.s))
		goto oom;
	if (!cJSON_AddBoolToObject(root, "clean_up_tokenization_spaces", false))
		goto oom;
	if (im->has_special[SP_EOS] &&
	    !cJSON_AddStringToObject(root, "eos_token", items[im->special[SP_EOS]].v.str.s))
		goto oom;
	if (!cJSON_AddNumberToObject(root, "model_max_length", (double)im->hp.context))
		goto oom;
	if (im->has_special[SP_PAD] &&
	    !cJSON_AddStringToObject(root, "pad_token", items[im->special[SP_PAD]].v.str.s))
		goto oom;
	if (!cJSON_AddStringToObject(root, "tokenizer_class", "GPT2Tokenizer"))
		goto oom;
	if (im->has_special[SP_UNK] &&
	    !cJSON_AddStringToObject(root, "unk_token", items[im->special[SP_UNK]].v.str.s))
		goto oom;
	*out = root;
	return CTQ_OK;
oom:
	cJSON_Delete(root);
	return nomem(im);
}

/* ---- import: config.json ------------------------------------------------------- */

static enum ctq_status config_json(struct import *im, cJSON **config, cJSON **gen)
{
	const struct hparams *hp = &im->hp;
	cJSON *c = cJSON_CreateObject(), *g = cJSON_CreateObject(), *arch;
	*config = *gen = NULL;
	if (!c || !g || !(arch = cJSON_AddArrayToObject(c, "architectures")))
		goto oom;
	cJSON_AddItemToArray(arch, cJSON_CreateString("LlamaForCausalLM"));
	if (!cJSON_AddBoolToObject(c, "attention_bias", hp->attn_bias) ||
	    !cJSON_AddNumberToObject(c, "attention_dropout", 0.0) ||
	    !cJSON_AddNumberToObject(c, "head_dim", (double)hp->head_dim) ||
	    !cJSON_AddStringToObject(c, "hidden_act", "silu") ||
	    !cJSON_AddNumberToObject(c, "hidden_size", (double)hp->hidden) ||
	    !cJSON_AddNumberToObject(c, "intermediate_size", (double)hp->inter) ||
	    !cJSON_AddNumberToObject(c, "max_position_embeddings", (double)hp->context) ||
	    !cJSON_AddBoolToObject(c, "mlp_bias", hp->mlp_bias) ||
	    !cJSON_AddStringToObject(c, "model_type", "llama") ||
	    !cJSON_AddNumberToObject(c, "num_attention_heads", (double)hp->n_head) ||
	    !cJSON_AddNumberToObject(c, "num_hidden_layers", (double)hp->n_layers) ||
	    !cJSON_AddNumberToObject(c, "num_key_value_heads", (double)hp->n_kv) ||
	    !cJSON_AddNumberToObject(c, "pretraining_tp", 1) ||
	    !cJSON_AddNumberToObject(c, "rms_norm_eps", hp->eps) ||
	    !cJSON_AddNumberToObject(c, "rope_theta", hp->rope_theta) ||
	    !cJSON_AddBoolToObject(c, "tie_word_embeddings", hp->tied) ||
	    !cJSON_AddStringToObject(c, "torch_dtype", "bfloat16") ||
	    !cJSON_AddBoolToObject(c, "use_cache", true) ||
	    !cJSON_AddNumberToObject(c, "vocab_size", (double)hp->vocab))
		goto oom;
	if (hp->rope_scaling) {
		cJSON *rs = cJSON_Duplicate(hp->rope_scaling, true);
		if (!rs)
			goto oom;
		cJSON_AddItemToObject(c, "rope_scaling", rs);
	} else if (!cJSON_AddNullToObject(c, "rope_scaling")) {
		goto oom;
	}
	if (!cJSON_AddBoolToObject(g, "_from_model_config", true))
		goto oom;
	static const char *const id_keys[4] = {"bos_token_id", "eos_token_id", NULL, "pad_token_id"};
	for (int s = 0; s < 4; s++) {
		if (!id_keys[s] || !im->has_special[s])
			continue;
		if (!cJSON_AddNumberToObject(c, id_keys[s], (double)im->special[s]) ||
		    !cJSON_AddNumberToObject(g, id_keys[s], (double)im->special[s]))
			goto oom;
	}
	*config = c;
	*gen = g;
	return CTQ_OK;
oom:
	cJSON_Delete(c);
	cJSON_Delete(g);
	return nomem(im);
}

/* ---- import: writing ------------------------------------------------------------- */

static enum ctq_status write_json(const char *dir, const char *name, const cJSON *v,
				  bool sort_keys, struct ctq_error *err)
{
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	enum ctq_status st = ctq_json_write_python(v, 2, sort_keys, &sb);
	char *path = ctq_path_join(dir, name);
	if (st == CTQ_ERR_PARSE)
		st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, name,
				   "cannot be written as JSON (invalid text)");
	else if (st || !path)
		st = ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	else {
		ctq_strbuf_append(&sb, "\n");
		st = sb.oom ? ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory")
			    : ctq_file_write_atomic(path, sb.data, sb.len, err);
	}
	free(path);
	ctq_strbuf_free(&sb);
	return st;
}

/* Dequantizes every planned tensor into one BF16 buffer (owned, returned in
 * *buf) and adds it to the writer. */
static enum ctq_status convert_tensors(struct import *im, struct ctq_st_writer *w,
				       uint16_t **buf, struct ctq_gguf_import_summary *sum)
{
	uint64_t total = 0, max_el = 0;
	for (size_t i = 0; i < im->n_items; i++) {
		total += im->items[i].t->n_elements;
		if (im->items[i].t->n_elements > max_el)
			max_el = im->items[i].t->n_elements;
	}
	/* Every element came from at least half a byte of the file. */
	if (total > SIZE_MAX / 2 || max_el > SIZE_MAX / sizeof(float))
		return nomem(im);
	*buf = ctq_malloc((size_t)total * 2);
	float *scratch = ctq_malloc((size_t)max_el * sizeof *scratch); /* (max_el) f32 */
	enum ctq_status st = CTQ_OK;
	if (!*buf || !scratch) {
		st = nomem(im);
		goto done;
	}
	uint16_t *dst = *buf;
	for (size_t i = 0; i < im->n_items; i++) {
		struct plan_item *it = &im->items[i];
		const struct ctq_gguf_tensor *t = it->t;
		if ((st = ctq_gguf_dequantize(&im->f, t, scratch, im->err)))
			goto done;
		/* (rows, K) row-major in both layouts; only the row order
		 * changes for q / k. */
		int64_t k = t->ne[0], rows = (int64_t)(t->n_elements / (uint64_t)k);
		if (it->ndim == 1) {
			k = 1;
			rows = t->ne[0];
		}
		int64_t hd = it->permute_heads ? rows / it->permute_heads : 0;
		for (int64_t r = 0; r < rows; r++) {
			int64_t src = hd ? unpermuted_src_row(r, hd) : r;
			ctq_convert_f32_to_bf16(scratch + src * k, (size_t)k, dst + r * k);
		}
		it->bf16 = dst;
		dst += t->n_elements;
		if ((st = ctq_st_writer_add(w, it->hf_name, CTQ_DTYPE_BF16, it->ndim, it->shape,
					    it->bf16, t->n_elements * 2, im->err)))
			goto done;
		sum->n_params += t->n_elements;
		sum->n_bytes += t->n_elements * 2;
		if (t->type < sizeof sum->n_type / sizeof *sum->n_type)
			sum->n_type[t->type]++;
	}
	sum->n_tensors = im->n_items;
done:
	free(scratch);
	return st;
}

/* HF's default max_shard_size ("5GB"). */
#define HF_MAX_SHARD_BYTES ((uint64_t)5000000000)

enum ctq_status ctq_gguf_import(const char *gguf_path, const char *out_dir,
				bool replace,
				struct ctq_gguf_import_summary *summary,
				struct ctq_error *err)
{
	struct import im;
	memset(&im, 0, sizeof im);
	im.err = err;
	ctq_arena_init(&im.arena);
	struct ctq_gguf_import_summary sum;
	memset(&sum, 0, sizeof sum);
	struct ctq_st_writer w;
	ctq_st_writer_init(&w);
	cJSON *tok = NULL, *tok_cfg = NULL, *cfg = NULL, *gen = NULL;
	uint16_t *buf = NULL;
	char tmp[4096] = "";
	enum ctq_status st;
	if (ctq_path_exists(out_dir) && !replace) {
		st = ctq_error_set(err, CTQ_ERR_IO, out_dir, "already exists; not replaced");
		goto done;
	}
	if ((st = ctq_gguf_open(&im.f, gguf_path, err)) || (st = read_hparams(&im)) ||
	    (st = plan_tensors(&im)) || (st = read_tokenizer(&im)) ||
	    (st = tokenizer_json(&im, &tok)) || (st = tokenizer_config_json(&im, &tok_cfg)) ||
	    (st = config_json(&im, &cfg, &gen)) || (st = convert_tensors(&im, &w, &buf, &sum)) ||
	    /* as save_pretrained writes it; transformers checks the format */
	    (st = ctq_st_writer_set_metadata(&w, "format", "pt", err)))
		goto done;
	if ((st = ctq_tmpdir_beside(out_dir, tmp, sizeof tmp, err))) {
		tmp[0] = '\0';
		goto done;
	}
	if ((st = ctq_checkpoint_write(tmp, &w, HF_MAX_SHARD_BYTES, err)) ||
	    (st = write_json(tmp, "config.json", cfg, true, err)) ||
	    (st = write_json(tmp, "generation_config.json", gen, true, err)) ||
	    (st = write_json(tmp, "tokenizer.json", tok, false, err)) ||
	    (st = write_json(tmp, "tokenizer_config.json", tok_cfg, false, err)) ||
	    (st = ctq_tmpdir_commit(tmp, out_dir, replace, err)))
		goto done;
	tmp[0] = '\0';
	snprintf(sum.architecture, sizeof sum.architecture, "llama");
	sum.n_layers = im.hp.n_layers;
	sum.hidden = im.hp.hidden;
	sum.intermediate = im.hp.inter;
	sum.n_head = im.hp.n_head;
	sum.n_head_kv = im.hp.n_kv;
	sum.head_dim = im.hp.head_dim;
	sum.vocab = im.hp.vocab;
	sum.context = im.hp.context;
	sum.rope_theta = im.hp.rope_theta;
	sum.rms_eps = im.hp.eps;
	sum.tied = im.hp.tied;
	sum.n_tokens = (size_t)im.tokens->v.arr.n;
	sum.n_merges = (size_t)im.merges->v.arr.n;
	sum.n_added = im.n_added;
	snprintf(sum.pre, sizeof sum.pre, "%s", im.pre ? im.pre->v.str.s : "");
	sum.has_chat_template = im.chat_template != NULL;
	if (summary)
		*summary = sum;
done:
	if (tmp[0])
		ctq_remove_tree(tmp);
	cJSON_Delete(tok);
	cJSON_Delete(tok_cfg);
	cJSON_Delete(cfg);
	cJSON_Delete(gen);
	cJSON_Delete(im.hp.rope_scaling);
	ctq_st_writer_free(&w);
	free(buf);
	ctq_gguf_close(&im.f);
	ctq_arena_free(&im.arena);
	return st;
}
