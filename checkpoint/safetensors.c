/* ctq safetensors reader, writer and sharded checkpoints (see safetensors.h).
 *
 * Layout facts taken from the Python library (safetensors/src/tensor.rs,
 * `prepare` and `Metadata`'s Serialize) and from transformers /
 * huggingface_hub's sharding (`split_state_dict_into_shards_factory`,
 * `save_pretrained`), checked byte for byte by tests/test_safetensors.c
 * against tests/fixtures/oracle.safetensors.
 */
#include "checkpoint/safetensors.h"
#include "core/utf8.h"

#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"

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

/* Integers in headers are JSON numbers that cJSON holds as doubles; above
 * 2^53 they stop being exact, and no real offset or dimension gets there. */
#define JSON_INT_MAX 9007199254740992.0


/* ---- small helpers ------------------------------------------------------ */

/* Checkpoint error at "file:offset". */
__attribute__((format(printf, 4, 5)))
static enum ctq_status st_fail(struct ctq_error *err, const char *file,
			       uint64_t offset, const char *fmt, ...)
{
	char path[CTQ_PATH_MAX];
	snprintf(path, sizeof path, "%s:%" PRIu64, file, offset);
	va_list ap;
	va_start(ap, fmt);
	ctq_error_vset(err, CTQ_ERR_CHECKPOINT, path, fmt, ap);
	va_end(ap);
	return CTQ_ERR_CHECKPOINT;
}

static bool str_utf8(const char *s)
{
	size_t bad;
	return ctq_utf8_valid((const unsigned char *)s, strlen(s), &bad);
}

/* A JSON number that is an integer in [0, 2^53]. */
static bool json_u53(const cJSON *item, uint64_t *out)
{
	if (!cJSON_IsNumber(item))
		return false;
	double v = item->valuedouble;
	if (!isfinite(v) || v != floor(v) || v < 0 || v > JSON_INT_MAX)
		return false;
	*out = (uint64_t)v;
	return true;
}

/* What a JSON value is, for messages: "the string \"x\"", "-3", "an object". */
static const char *describe(const cJSON *item, char *buf, size_t cap)
{
	if (cJSON_IsNumber(item))
		snprintf(buf, cap, "%.17g", item->valuedouble);
	else if (cJSON_IsString(item))
		snprintf(buf, cap, "the string \"%.64s\"", item->valuestring);
	else if (cJSON_IsArray(item) || cJSON_IsObject(item))
		snprintf(buf, cap, "an %s", ctq_json_type_name(item));
	else
		snprintf(buf, cap, "%s", ctq_json_type_name(item));
	return buf;
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
	size_t len = 0;
	buf[0] = '\0';
	len += (size_t)snprintf(buf, cap, "[");
	for (int d = 0; d < ndim && len < cap; d++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64,
					d ? ", " : "", shape[d]);
	if (len < cap)
		snprintf(buf + len, cap - len, "]");
}

/* Elements and bytes of a shape; false on 64-bit overflow. */
static bool shape_bytes(int ndim, const int64_t *shape, enum ctq_dtype t,
			uint64_t *n_elements, uint64_t *n_bytes)
{
	uint64_t n = 1;
	for (int d = 0; d < ndim; d++) {
		uint64_t dim = (uint64_t)shape[d];
		if (dim && n > UINT64_MAX / dim)
			return false;
		n *= dim;
	}
	uint64_t size = ctq_dtype_size(t);
	if (n > UINT64_MAX / size)
		return false;
	*n_elements = n;
	*n_bytes = n * size;
	return true;
}

static const char *const known_dtypes =
	"F32, F16, BF16, I8, I32, I64, U8, F8_E4M3, F64, BOOL";

/* ---- reader ------------------------------------------------------------- */

/* Maps path; fills f->map and f->map_bytes. */
static enum ctq_status map_file(struct ctq_st_file *f, const char *path,
				struct ctq_error *err)
{
	const void *m = NULL;
	size_t n = 0;
	enum ctq_status st = ctq_file_map(path, "a .safetensors file", &m, &n, err);
	if (st)
		return st;
	if (n < 8) {
		ctq_file_unmap(m, n);
		return st_fail(err, path, 0,
			     "file is %lld bytes; a safetensors file starts with an 8-byte header length",
			     (long long)n);
	}
	f->map = m;
	f->map_bytes = n;
	return CTQ_OK;
}

/* Parses the header into *root (owned by the caller). */
static enum ctq_status parse_header(const struct ctq_st_file *f, cJSON **root,
				    struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	const char *path = f->path;
	char *text = NULL;
	size_t bad = 0;
	*root = NULL;
	if (!ctq_utf8_valid((const unsigned char *)f->header, f->header_bytes, &bad))
		return st_fail(err, path, 8 + bad,
			       "header byte 0x%02x is not valid UTF-8; expected a UTF-8 JSON object",
			       (unsigned char)f->header[bad]);
	/* cJSON gets its own NUL-terminated copy rather than the mapping. */
	text = ctq_malloc((size_t)f->header_bytes + 1);
	if (!text)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path,
				     "out of memory copying a %" PRIu64 "-byte header",
				     f->header_bytes);
	memcpy(text, f->header, (size_t)f->header_bytes);
	text[f->header_bytes] = '\0';
	struct ctq_json_limits lim = {
		.max_depth = 64,
		.max_string = (size_t)f->header_bytes,
	};
	struct ctq_error jerr = {0};
	st = ctq_json_parse(text, (size_t)f->header_bytes, "header", &lim, root,
			    &jerr);
	if (st == CTQ_ERR_NOMEM) {
		ctq_error_set(err, st, path, "%s", jerr.message);
		goto done;
	}
	if (st) {
		/* Syntax errors come back as "header:<byte>", duplicate keys as
		 * the JSON path of the key. */
		if (strncmp(jerr.path, "header:", 7) == 0)
			st = st_fail(err, path, 8 + strtoull(jerr.path + 7, NULL, 10),
				     "header is not valid JSON: %s", jerr.message);
		else
			st = st_fail(err, path, 8, "header JSON at %s: %s",
				     jerr.path, jerr.message);
		goto done;
	}
	if (!cJSON_IsObject(*root)) {
		st = st_fail(err, path, 8,
			     "header is a JSON %s; expected an object of tensors",
			     ctq_json_type_name(*root));
		cJSON_Delete(*root);
		*root = NULL;
	}
done:
	free(text);
	return st;
}

static enum ctq_status parse_metadata(struct ctq_st_file *f, const cJSON *meta,
				      struct ctq_error *err)
{
	char what[96];
	if (!cJSON_IsObject(meta))
		return st_fail(err, f->path, 8,
			       "__metadata__ is %s; expected an object of strings",
			       describe(meta, what, sizeof what));
	size_t n = (size_t)cJSON_GetArraySize(meta);
	f->has_metadata = true;
	f->metadata = ctq_arena_calloc(&f->arena, n, sizeof *f->metadata);
	if (!f->metadata && n)
		return ctq_error_set(err, CTQ_ERR_NOMEM, f->path, "out of memory");
	for (const cJSON *m = meta->child; m; m = m->next) {
		if (!cJSON_IsString(m))
			return st_fail(err, f->path, 8,
				       "__metadata__.%s is %s; expected a string",
				       m->string, describe(m, what, sizeof what));
		struct ctq_st_meta *kv = &f->metadata[f->n_metadata];
		kv->key = ctq_arena_strdup(&f->arena, m->string);
		kv->value = ctq_arena_strdup(&f->arena, m->valuestring);
		if (!kv->key || !kv->value)
			return ctq_error_set(err, CTQ_ERR_NOMEM, f->path,
					     "out of memory");
		f->n_metadata++;
	}
	return CTQ_OK;
}

/* Validates one header entry into t (data not yet set). */
static enum ctq_status parse_entry(struct ctq_st_file *f, const cJSON *obj,
				   struct ctq_st_tensor *t, struct ctq_error *err)
{
	const char *path = f->path;
	const char *name = obj->string;
	char what[96];
	if (!cJSON_IsObject(obj))
		return st_fail(err, path, 8,
			       "tensor \"%s\" is %s; expected an object with dtype, shape and data_offsets",
			       name, describe(obj, what, sizeof what));
	for (const cJSON *c = obj->child; c; c = c->next)
		if (strcmp(c->string, "dtype") && strcmp(c->string, "shape") &&
		    strcmp(c->string, "data_offsets"))
			return st_fail(err, path, 8,
				       "tensor \"%s\" has key \"%s\"; expected exactly dtype, shape and data_offsets",
				       name, c->string);
	const cJSON *dt = ctq_json_get(obj, "dtype");
	const cJSON *sh = ctq_json_get(obj, "shape");
	const cJSON *off = ctq_json_get(obj, "data_offsets");
	const char *missing = !dt ? "dtype" : !sh ? "shape" : !off ? "data_offsets" : NULL;
	if (missing)
		return st_fail(err, path, 8,
			       "tensor \"%s\" has no %s; expected exactly dtype, shape and data_offsets",
			       name, missing);

	if (!cJSON_IsString(dt))
		return st_fail(err, path, 8,
			       "tensor \"%s\": dtype is %s; expected one of %s",
			       name, describe(dt, what, sizeof what), known_dtypes);
	if (!ctq_dtype_parse(dt->valuestring, &t->dtype))
		return st_fail(err, path, 8,
			       "tensor \"%s\": dtype \"%s\" is unknown; expected one of %s",
			       name, dt->valuestring, known_dtypes);

	if (!cJSON_IsArray(sh))
		return st_fail(err, path, 8,
			       "tensor \"%s\": shape is %s; expected a list of 0 to %d non-negative integers",
			       name, describe(sh, what, sizeof what), CTQ_ST_MAX_NDIM);
	int ndim = cJSON_GetArraySize(sh);
	if (ndim > CTQ_ST_MAX_NDIM)
		return st_fail(err, path, 8,
			       "tensor \"%s\": shape has %d dimensions; expected at most %d",
			       name, ndim, CTQ_ST_MAX_NDIM);
	t->ndim = ndim;
	int d = 0;
	for (const cJSON *c = sh->child; c; c = c->next, d++) {
		uint64_t v;
		if (!json_u53(c, &v))
			return st_fail(err, path, 8,
				       "tensor \"%s\": shape[%d] is %s; expected a non-negative integer",
				       name, d, describe(c, what, sizeof what));
		t->shape[d] = (int64_t)v;
	}

	uint64_t begin, end;
	if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
	    !json_u53(off->child, &begin) || !json_u53(off->child->next, &end)) {
		char *text = cJSON_PrintUnformatted(off);
		enum ctq_status st = st_fail(
			err, path, 8,
			"tensor \"%s\": data_offsets is %.80s; expected [begin, end], two non-negative integers",
			name, text ? text : "unprintable");
		free(text);
		return st;
	}
	uint64_t at = f->data_start + begin; /* no overflow: both < 2^54 */
	char shp[160];
	shape_str(shp, sizeof shp, t->ndim, t->shape);
	if (begin > end)
		return st_fail(err, path, at,
			       "tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin; expected begin <= end",
			       name, begin, end);
	if (!shape_bytes(t->ndim, t->shape, t->dtype, &t->n_elements, &t->n_bytes))
		return st_fail(err, path, at,
			       "tensor \"%s\": shape %s of %s is more than 2^64 bytes",
			       name, shp, ctq_dtype_name(t->dtype));
	if (end - begin != t->n_bytes)
		return st_fail(err, path, at,
			       "tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
			       " bytes; dtype %s x shape %s (%" PRIu64 " elements) needs %" PRIu64,
			       name, begin, end, end - begin, ctq_dtype_name(t->dtype),
			       shp, t->n_elements, t->n_bytes);
	uint64_t data_area = (uint64_t)f->map_bytes - f->data_start;
	if (end > data_area)
		return st_fail(err, path, at,
			       "tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] end past the data area of %" PRIu64
			       " bytes; the file is truncated or the offsets are wrong",
			       name, begin, end, data_area);
	t->name = ctq_arena_strdup(&f->arena, name);
	if (!t->name)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	t->file_offset = at;
	t->data = f->map + at;
	return CTQ_OK;
}

static int cmp_by_offset(const void *a, const void *b)
{
	const struct ctq_st_tensor *x = *(const struct ctq_st_tensor *const *)a;
	const struct ctq_st_tensor *y = *(const struct ctq_st_tensor *const *)b;
	if (x->file_offset != y->file_offset)
		return x->file_offset < y->file_offset ? -1 : 1;
	if (x->n_bytes != y->n_bytes)
		return x->n_bytes < y->n_bytes ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The data area as the safetensors library (Metadata::validate and
 * read_metadata) requires it: tensors, in offset order, packed back to back
 * from offset 0 — each begins where the previous one ends (InvalidOffset
 * otherwise: a hole or an overlap) — and the last ends at the end of the
 * file (MetadataIncompleteBuffer otherwise). */
static enum ctq_status check_layout(const struct ctq_st_file *f,
				    struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	const struct ctq_st_tensor **order = ctq_malloc((f->n_tensors + 1) * sizeof *order);
	if (!order)
		return ctq_error_set(err, CTQ_ERR_NOMEM, f->path, "out of memory");
	for (size_t i = 0; i < f->n_tensors; i++)
		order[i] = &f->tensors[i];
	qsort(order, f->n_tensors, sizeof *order, cmp_by_offset);
	const uint64_t d = f->data_start;
	const struct ctq_st_tensor *prev = NULL;
	uint64_t at = d;
	for (size_t i = 0; i < f->n_tensors; i++) {
		const struct ctq_st_tensor *t = order[i];
		uint64_t end = t->file_offset + t->n_bytes;
		if (t->file_offset < at) {
			st = st_fail(err, f->path, t->file_offset,
				     "tensor \"%s\" (data_offsets [%" PRIu64 ", %" PRIu64
				     "]) overlaps tensor \"%s\" ([%" PRIu64 ", %" PRIu64
				     "]); expected disjoint byte ranges packed back to back",
				     t->name, t->file_offset - d, end - d, prev ? prev->name : "?",
				     prev ? prev->file_offset - d : 0, at - d);
			goto done;
		}
		if (t->file_offset > at && prev) {
			st = st_fail(err, f->path, at,
				     "tensor \"%s\" begins at data offset %" PRIu64 ", but tensor \"%s\" before it ends at %" PRIu64
				     ": a hole of %" PRIu64 " bytes; the safetensors library refuses it (InvalidOffset): tensors must be packed back to back from offset 0",
				     t->name, t->file_offset - d, prev->name, at - d, t->file_offset - at);
			goto done;
		}
		if (t->file_offset > at) {
			st = st_fail(err, f->path, at,
				     "tensor \"%s\" begins at data offset %" PRIu64 ", but it is the first tensor and the data area begins at 0"
				     ": a hole of %" PRIu64 " bytes; the safetensors library refuses it (InvalidOffset): tensors must be packed back to back from offset 0",
				     t->name, t->file_offset - d, t->file_offset - at);
			goto done;
		}
		prev = t;
		at = end;
	}
	if (at != (uint64_t)f->map_bytes)
		st = st_fail(err, f->path, at,
			     "the tensors end at data offset %" PRIu64 " but the data area holds %" PRIu64
			     " bytes: %" PRIu64 " bytes belong to no tensor; the safetensors library refuses it (MetadataIncompleteBuffer)",
			     at - d, (uint64_t)f->map_bytes - d, (uint64_t)f->map_bytes - at);
done:
	free(order);
	return st;
}

static int cmp_tensor_name(const void *a, const void *b)
{
	return strcmp(((const struct ctq_st_tensor *)a)->name,
		      ((const struct ctq_st_tensor *)b)->name);
}

enum ctq_status ctq_st_open(struct ctq_st_file *f, const char *path,
			    struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	cJSON *root = NULL;
	memset(f, 0, sizeof *f);
	ctq_arena_init(&f->arena);
	size_t plen = strlen(path);
	f->path = ctq_malloc(plen + 1);
	if (!f->path) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		goto done;
	}
	memcpy(f->path, path, plen + 1);
	st = map_file(f, path, err);
	if (st)
		goto done;

	uint64_t hlen = 0; /* u64 little-endian at byte 0 */
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | f->map[i];
	uint64_t after = (uint64_t)f->map_bytes - 8;
	if (hlen > CTQ_ST_MAX_HEADER_BYTES) {
		st = st_fail(err, path, 0,
			     "header length is %" PRIu64 " bytes; expected at most %" PRIu64
			     " (and at most the %" PRIu64 " bytes after the length field)",
			     hlen, CTQ_ST_MAX_HEADER_BYTES, after);
		goto done;
	}
	if (hlen > after) {
		st = st_fail(err, path, 0,
			     "header length is %" PRIu64 " bytes but only %" PRIu64
			     " bytes follow the length field; the file is truncated or not safetensors",
			     hlen, after);
		goto done;
	}
	f->header = (const char *)f->map + 8;
	f->header_bytes = hlen;
	f->data_start = 8 + hlen;

	st = parse_header(f, &root, err);
	if (st)
		goto done;
	size_t n = (size_t)cJSON_GetArraySize(root);
	const cJSON *meta = ctq_json_get(root, "__metadata__");
	f->tensors = ctq_arena_calloc(&f->arena, n, sizeof *f->tensors);
	if (!f->tensors && n) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		goto done;
	}
	for (const cJSON *c = root->child; c; c = c->next) {
		if (c == meta)
			st = parse_metadata(f, c, err);
		else
			st = parse_entry(f, c, &f->tensors[f->n_tensors++], err);
		if (st)
			goto done;
	}
	st = check_layout(f, err);
	if (st)
		goto done;
	qsort(f->tensors, f->n_tensors, sizeof *f->tensors, cmp_tensor_name);
done:
	cJSON_Delete(root);
	if (st)
		ctq_st_close(f);
	return st;
}

void ctq_st_close(struct ctq_st_file *f)
{
	if (!f)
		return;
	ctq_file_unmap(f->map, f->map_bytes);
	free(f->path);
	ctq_arena_free(&f->arena);
	memset(f, 0, sizeof *f);
}

static int cmp_key_tensor(const void *key, const void *elem)
{
	return strcmp(key, ((const struct ctq_st_tensor *)elem)->name);
}

const struct ctq_st_tensor *ctq_st_find(const struct ctq_st_file *f,
					const char *name)
{
	if (!f || !f->n_tensors || !name)
		return NULL;
	return bsearch(name, f->tensors, f->n_tensors, sizeof *f->tensors,
		       cmp_key_tensor);
}

const char *ctq_st_metadata(const struct ctq_st_file *f, const char *key)
{
	for (size_t i = 0; f && key && i < f->n_metadata; i++)
		if (strcmp(f->metadata[i].key, key) == 0)
			return f->metadata[i].value;
	return NULL;
}

/* ---- writer ------------------------------------------------------------- */

void ctq_st_writer_init(struct ctq_st_writer *w)
{
	memset(w, 0, sizeof *w);
	ctq_arena_init(&w->arena);
}

void ctq_st_writer_free(struct ctq_st_writer *w)
{
	if (!w)
		return;
	free(w->tensors);
	free(w->slots);
	free(w->metadata);
	ctq_arena_free(&w->arena);
	memset(w, 0, sizeof *w);
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3u;
	return h;
}

/* The slot holding name, or the empty slot where it would go. */
static size_t *find_slot(const struct ctq_st_writer *w, const char *name)
{
	size_t mask = w->n_slots - 1;
	for (size_t i = (size_t)name_hash(name) & mask;; i = (i + 1) & mask) {
		size_t *s = &w->slots[i];
		if (*s == 0 || strcmp(w->tensors[*s - 1].name, name) == 0)
			return s;
	}
}

/* Keeps the name index at most half full. */
static bool reserve_slots(struct ctq_st_writer *w, size_t n_tensors)
{
	if (n_tensors * 2 <= w->n_slots)
		return true;
	size_t cap = w->n_slots ? w->n_slots : 16;
	while (n_tensors * 2 > cap)
		cap *= 2;
	size_t *slots = ctq_malloc(cap * sizeof *slots);
	if (!slots)
		return false;
	memset(slots, 0, cap * sizeof *slots);
	free(w->slots);
	w->slots = slots;
	w->n_slots = cap;
	for (size_t i = 0; i < w->n_tensors; i++)
		*find_slot(w, w->tensors[i].name) = i + 1;
	return true;
}

enum ctq_status ctq_st_writer_add(struct ctq_st_writer *w, const char *name,
				  enum ctq_dtype dtype, int ndim,
				  const int64_t *shape, const void *data,
				  uint64_t n_bytes, struct ctq_error *err)
{
	const enum ctq_status bad = CTQ_ERR_CHECKPOINT;
	if (!name || !*name)
		return ctq_error_set(err, bad, "", "tensor name is empty; expected a non-empty UTF-8 name");
	if (!str_utf8(name))
		return ctq_error_set(err, bad, name, "tensor name is not valid UTF-8");
	if (strcmp(name, "__metadata__") == 0)
		return ctq_error_set(err, bad, name,
				     "\"__metadata__\" is reserved for the metadata; expected a tensor name");
	if ((unsigned)dtype >= CTQ_DTYPE_COUNT)
		return ctq_error_set(err, bad, name, "dtype %d is not a ctq dtype",
				     (int)dtype);
	if (ndim < 0 || ndim > CTQ_ST_MAX_NDIM)
		return ctq_error_set(err, bad, name,
				     "ndim is %d; expected 0 to %d", ndim,
				     CTQ_ST_MAX_NDIM);
	if (ndim > 0 && !shape)
		return ctq_error_set(err, bad, name, "shape is NULL for ndim %d", ndim);
	for (int d = 0; d < ndim; d++)
		if (shape[d] < 0)
			return ctq_error_set(err, bad, name,
					     "shape[%d] is %" PRId64 "; expected a non-negative size",
					     d, shape[d]);
	char shp[160];
	shape_str(shp, sizeof shp, ndim, shape);
	uint64_t n_el, need;
	if (!shape_bytes(ndim, shape, dtype, &n_el, &need))
		return ctq_error_set(err, bad, name,
				     "shape %s of %s is more than 2^64 bytes", shp,
				     ctq_dtype_name(dtype));
	if (need != n_bytes)
		return ctq_error_set(err, bad, name,
				     "n_bytes is %" PRIu64 "; dtype %s x shape %s needs %" PRIu64,
				     n_bytes, ctq_dtype_name(dtype), shp, need);
	if (n_bytes && !data)
		return ctq_error_set(err, bad, name, "data is NULL for %" PRIu64 " bytes",
				     n_bytes);

	if (!reserve_slots(w, w->n_tensors + 1))
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	size_t *slot = find_slot(w, name);
	if (*slot)
		return ctq_error_set(err, bad, name,
				     "tensor added twice; expected unique names");
	if (w->n_tensors == w->cap_tensors) {
		size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
		struct ctq_st_writer_entry *t =
			ctq_realloc(w->tensors, cap * sizeof *t);
		if (!t)
			return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
		w->tensors = t;
		w->cap_tensors = cap;
	}
	struct ctq_st_writer_entry *e = &w->tensors[w->n_tensors];
	memset(e, 0, sizeof *e);
	e->name = ctq_arena_strdup(&w->arena, name);
	if (!e->name)
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	e->dtype = dtype;
	e->ndim = ndim;
	for (int d = 0; d < ndim; d++)
		e->shape[d] = shape[d];
	e->data = data;
	e->n_bytes = n_bytes;
	*slot = ++w->n_tensors;
	return CTQ_OK;
}

enum ctq_status ctq_st_writer_set_metadata(struct ctq_st_writer *w,
					   const char *key, const char *value,
					   struct ctq_error *err)
{
	if (!key || !*key || !str_utf8(key))
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, "__metadata__",
				     "metadata key is empty or not UTF-8; expected a UTF-8 string");
	if (!value || !str_utf8(value))
		return ctq_error_set(err, CTQ_ERR_CHECKPOINT, "__metadata__",
				     "metadata value for \"%s\" is NULL or not UTF-8; expected a UTF-8 string",
				     key);
	char *v = ctq_arena_strdup(&w->arena, value);
	if (!v)
		return ctq_error_set(err, CTQ_ERR_NOMEM, key, "out of memory");
	for (size_t i = 0; i < w->n_metadata; i++) {
		if (strcmp(w->metadata[i].key, key) == 0) {
			w->metadata[i].value = v;
			return CTQ_OK;
		}
	}
	if (w->n_metadata == w->cap_metadata) {
		size_t cap = w->cap_metadata ? 2 * w->cap_metadata : 8;
		struct ctq_st_meta *m = ctq_realloc(w->metadata, cap * sizeof *m);
		if (!m)
			return ctq_error_set(err, CTQ_ERR_NOMEM, key, "out of memory");
		w->metadata = m;
		w->cap_metadata = cap;
	}
	char *k = ctq_arena_strdup(&w->arena, key);
	if (!k)
		return ctq_error_set(err, CTQ_ERR_NOMEM, key, "out of memory");
	w->metadata[w->n_metadata].key = k;
	w->metadata[w->n_metadata].value = v;
	w->n_metadata++;
	return CTQ_OK;
}

/* The Python library's Dtype declaration order (tensor.rs: "They MUST be in
 * increasing alignment order"), gaps left for the dtypes ctq does not read.
 * Layout sorts by it descending, so I64 precedes F64 and BF16 precedes F16. */
static int layout_rank(enum ctq_dtype t)
{
	switch (t) {
	case CTQ_DTYPE_BOOL: return 0;
	case CTQ_DTYPE_U8: return 1;
	case CTQ_DTYPE_I8: return 2;
	case CTQ_DTYPE_F8_E4M3: return 4;  /* after F8_E5M2 (3) */
	case CTQ_DTYPE_F16: return 7;      /* after I16 (5), U16 (6) */
	case CTQ_DTYPE_BF16: return 8;
	case CTQ_DTYPE_I32: return 9;
	case CTQ_DTYPE_F32: return 11;     /* after U32 (10) */
	case CTQ_DTYPE_F64: return 12;
	case CTQ_DTYPE_I64: return 13;
	default: return -1;
	}
}

static int cmp_layout(const void *a, const void *b)
{
	const struct ctq_st_writer_entry *x = *(const struct ctq_st_writer_entry *const *)a;
	const struct ctq_st_writer_entry *y = *(const struct ctq_st_writer_entry *const *)b;
	int rx = layout_rank(x->dtype), ry = layout_rank(y->dtype);
	if (rx != ry)
		return rx > ry ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_meta_key(const void *a, const void *b)
{
	return strcmp(((const struct ctq_st_meta *)a)->key,
		      ((const struct ctq_st_meta *)b)->key);
}

/* A JSON string as serde_json writes it: \" \\ \b \f \n \r \t, other
 * control characters as \u00xx, everything else (UTF-8 included) raw. */
static void json_str_serde(struct ctq_strbuf *sb, const char *s)
{
	ctq_strbuf_append(sb, "\"");
	const char *run = s;
	for (const char *p = s;; p++) {
		unsigned char c = (unsigned char)*p;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		ctq_strbuf_appendn(sb, run, (size_t)(p - run));
		run = p + 1;
		if (c == 0)
			break;
		/* The short escapes: esc_from[i] is written as a backslash and esc_to[i]. */
		static const char esc_from[] = "\"\\\b\f\n\r\t", esc_to[] = "\"\\bfnrt";
		const char *e = strchr(esc_from, c);
		if (e) {
			const char two[3] = {'\\', esc_to[e - esc_from], '\0'};
			ctq_strbuf_append(sb, two);
		} else {
			ctq_strbuf_printf(sb, "\\u%04x", c);
		}
	}
	ctq_strbuf_append(sb, "\"");
}

/* Writes the tensors sel[0..n) (indices into w->tensors) to path. */
enum ctq_status ctq_st_write_subset(const struct ctq_st_writer *w,
				    const size_t *sel, size_t n,
				    const char *path, struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	const struct ctq_st_writer_entry **order = NULL; /* (n) layout order */
	struct ctq_st_meta *meta = NULL;                 /* (n_metadata) by key */
	struct ctq_strbuf hdr;
	char tmp[4096];
	FILE *out = NULL;
	bool tmp_exists = false;
	ctq_strbuf_init(&hdr);

	order = ctq_malloc(n * sizeof *order);
	meta = ctq_malloc(w->n_metadata * sizeof *meta);
	if (!order || !meta) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = &w->tensors[sel[i]];
	qsort(order, n, sizeof *order, cmp_layout);
	if (w->n_metadata)
		memcpy(meta, w->metadata, w->n_metadata * sizeof *meta);
	qsort(meta, w->n_metadata, sizeof *meta, cmp_meta_key);

	ctq_strbuf_append(&hdr, "{");
	if (w->n_metadata) {
		ctq_strbuf_append(&hdr, "\"__metadata__\":{");
		for (size_t i = 0; i < w->n_metadata; i++) {
			if (i)
				ctq_strbuf_append(&hdr, ",");
			json_str_serde(&hdr, meta[i].key);
			ctq_strbuf_append(&hdr, ":");
			json_str_serde(&hdr, meta[i].value);
		}
		ctq_strbuf_append(&hdr, n ? "}," : "}");
	}
	uint64_t offset = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ctq_st_writer_entry *e = order[i];
		if (i)
			ctq_strbuf_append(&hdr, ",");
		json_str_serde(&hdr, e->name);
		ctq_strbuf_printf(&hdr, ":{\"dtype\":\"%s\",\"shape\":[",
				  ctq_dtype_name(e->dtype));
		for (int d = 0; d < e->ndim; d++)
			ctq_strbuf_printf(&hdr, "%s%" PRId64, d ? "," : "", e->shape[d]);
		if (e->n_bytes > UINT64_MAX - offset) {
			st = ctq_error_set(err, CTQ_ERR_IO, path,
					   "tensors add up to more than 2^64 bytes");
			goto done;
		}
		ctq_strbuf_printf(&hdr, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
				  offset, offset + e->n_bytes);
		offset += e->n_bytes;
	}
	ctq_strbuf_append(&hdr, "}");
	while (!hdr.oom && hdr.len % 8)
		ctq_strbuf_append(&hdr, " "); /* aligns the data area to 8 bytes */
	if (hdr.oom) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path,
				   "out of memory building the header");
		goto done;
	}

	int k = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	if (k < 0 || (size_t)k >= sizeof tmp) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "path too long");
		goto done;
	}
	out = fopen(tmp, "wb");
	if (!out) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "cannot create %s: %s",
				   tmp, strerror(errno));
		goto done;
	}
	tmp_exists = true;
	unsigned char len_le[8];
	for (int i = 0; i < 8; i++)
		len_le[i] = (unsigned char)((uint64_t)hdr.len >> (8 * i));
	bool ok = fwrite(len_le, 1, 8, out) == 8 &&
		  fwrite(hdr.data, 1, hdr.len, out) == hdr.len;
	for (size_t i = 0; ok && i < n; i++)
		ok = order[i]->n_bytes == 0 ||
		     fwrite(order[i]->data, 1, (size_t)order[i]->n_bytes, out) ==
			     order[i]->n_bytes;
	ok = ok && fflush(out) == 0;
	int e_write = errno;
	if (fclose(out) != 0 && ok) {
		ok = false;
		e_write = errno;
	}
	out = NULL;
	if (!ok) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "cannot write %s: %s", tmp,
				   strerror(e_write));
		goto done;
	}
	if (rename(tmp, path) != 0) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "cannot rename %s into place: %s",
				   tmp, strerror(errno));
		goto done;
	}
	tmp_exists = false;
done:
	if (out)
		fclose(out);
	if (tmp_exists)
		unlink(tmp);
	ctq_strbuf_free(&hdr);
	free(order);
	free(meta);
	return st;
}

enum ctq_status ctq_st_writer_write(const struct ctq_st_writer *w,
				    const char *path, struct ctq_error *err)
{
	size_t *all = ctq_malloc(w->n_tensors * sizeof *all);
	if (!all)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	for (size_t i = 0; i < w->n_tensors; i++)
		all[i] = i;
	enum ctq_status st = ctq_st_write_subset(w, all, w->n_tensors, path, err);
	free(all);
	return st;
}

