/* ctq sharded Hugging Face checkpoints (checkpoint/safetensors.h): a folder
 * of one model.safetensors or of shards named by model.safetensors.index.json,
 * opened as one tensor table, and written back the way transformers'
 * save_pretrained splits them. The single-file reader and writer are in
 * checkpoint/safetensors.c. */
#include "checkpoint/safetensors.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The index file is JSON of at most this size. */
#define INDEX_MAX_BYTES ((size_t)64 << 20)

/* Checkpoint error at "index-file:JSON path". */
__attribute__((format(printf, 4, 5)))
static enum ctq_status index_fail(struct ctq_error *err, const char *file,
				  const char *json_path, const char *fmt, ...)
{
	char path[CTQ_PATH_MAX];
	snprintf(path, sizeof path, "%s:%s", file, json_path);
	va_list ap;
	va_start(ap, fmt);
	ctq_error_vset(err, CTQ_ERR_CHECKPOINT, path, fmt, ap);
	va_end(ap);
	return CTQ_ERR_CHECKPOINT;
}

/* ---- sharded checkpoints: reading ---------------------------------------- */

void ctq_checkpoint_close(struct ctq_checkpoint *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->files && i < c->n_files; i++)
		ctq_st_close(&c->files[i]);
	free(c->dir);
	ctq_arena_free(&c->arena);
	memset(c, 0, sizeof *c);
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_entry_name(const void *a, const void *b)
{
	return strcmp(((const struct ctq_checkpoint_entry *)a)->tensor->name,
		      ((const struct ctq_checkpoint_entry *)b)->tensor->name);
}

static bool shard_name_ok(const char *s)
{
	return *s && !strchr(s, '/') && !strchr(s, '\\') && !strstr(s, "..");
}

/* One shard file: the whole checkpoint is model.safetensors. */
static enum ctq_status open_single(struct ctq_checkpoint *c, const char *file, const char *name,
				   struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	c->files = ctq_arena_calloc(&c->arena, 1, sizeof *c->files);
	c->file_names = ctq_arena_calloc(&c->arena, 1, sizeof *c->file_names);
	if (!c->files || !c->file_names)
		return ctq_error_set(err, CTQ_ERR_NOMEM, file, "out of memory");
	c->file_names[0] = name;
	st = ctq_st_open(&c->files[0], file, err);
	if (st)
		return st;
	c->n_files = 1;
	const struct ctq_st_file *f = &c->files[0];
	c->entries = ctq_arena_calloc(&c->arena, f->n_tensors, sizeof *c->entries);
	if (!c->entries && f->n_tensors)
		return ctq_error_set(err, CTQ_ERR_NOMEM, file, "out of memory");
	for (size_t i = 0; i < f->n_tensors; i++)
		c->entries[i].tensor = &f->tensors[i]; /* already in name order */
	c->n_entries = f->n_tensors;
	return CTQ_OK;
}

static enum ctq_status open_index(struct ctq_checkpoint *c, const char *index,
				  struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	cJSON *root = NULL;
	char *shard = NULL;
	const char **names = NULL; /* (n_map) shard name per weight_map entry */
	struct ctq_error jerr = {0};

	st = ctq_json_load_file(index, INDEX_MAX_BYTES, NULL, &root, &jerr);
	if (st) {
		/* Syntax errors come back as "index:<byte>", duplicate keys as
		 * the JSON path of the key. */
		if (st == CTQ_ERR_PARSE && strncmp(jerr.path, index, strlen(index)) == 0)
			st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, jerr.path,
					   "index is not valid JSON: %s", jerr.message);
		else if (st == CTQ_ERR_PARSE)
			st = index_fail(err, index, jerr.path, "index is not valid JSON: %s",
					jerr.message);
		else
			ctq_error_set(err, st, jerr.path, "%s", jerr.message);
		goto done;
	}
	if (!cJSON_IsObject(root)) {
		st = index_fail(err, index, "", "index is a JSON %s; expected an object with a weight_map",
				ctq_json_type_name(root));
		goto done;
	}
	const cJSON *map = ctq_json_get(root, "weight_map");
	if (!cJSON_IsObject(map)) {
		st = index_fail(err, index, "weight_map",
				"weight_map is %s; expected an object of tensor name -> shard file name",
				map ? ctq_json_type_name(map) : "missing");
		goto done;
	}
	size_t n_map = (size_t)cJSON_GetArraySize(map);
	names = ctq_malloc(n_map * sizeof *names);
	if (!names) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, index, "out of memory");
		goto done;
	}
	size_t i = 0;
	for (const cJSON *m = map->child; m; m = m->next, i++) {
		char jp[CTQ_PATH_MAX];
		ctq_json_path_key(jp, sizeof jp, "weight_map", m->string);
		if (!cJSON_IsString(m)) {
			st = index_fail(err, index, jp,
					"tensor \"%s\" maps to a JSON %s; expected a shard file name",
					m->string, ctq_json_type_name(m));
			goto done;
		}
		if (!shard_name_ok(m->valuestring)) {
			st = index_fail(err, index, jp,
					"tensor \"%s\" maps to \"%s\"; expected a file name inside the checkpoint directory (no '/', '\\\\' or \"..\")",
					m->string, m->valuestring);
			goto done;
		}
		names[i] = m->valuestring;
	}

	/* Distinct shard names, sorted; each opened once. */
	const char **uniq = ctq_arena_calloc(&c->arena, n_map, sizeof *uniq);
	if (!uniq && n_map) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, index, "out of memory");
		goto done;
	}
	if (n_map)
		memcpy(uniq, names, n_map * sizeof *uniq);
	qsort(uniq, n_map, sizeof *uniq, cmp_strp);
	size_t n_files = 0;
	for (i = 0; i < n_map; i++)
		if (n_files == 0 || strcmp(uniq[n_files - 1], uniq[i]) != 0)
			uniq[n_files++] = uniq[i];
	c->files = ctq_arena_calloc(&c->arena, n_files, sizeof *c->files);
	if (!c->files && n_files) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, index, "out of memory");
		goto done;
	}
	c->file_names = uniq;
	for (i = 0; i < n_files; i++) {
		uniq[i] = ctq_arena_strdup(&c->arena, uniq[i]);
		free(shard);
		shard = uniq[i] ? ctq_path_join(c->dir, uniq[i]) : NULL;
		if (!uniq[i] || !shard) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, index, "out of memory");
			goto done;
		}
		if (!ctq_path_exists(shard)) {
			const char *who = "";
			for (const cJSON *m = map->child; m && !*who; m = m->next)
				if (strcmp(m->valuestring, uniq[i]) == 0)
					who = m->string;
			char jp[CTQ_PATH_MAX];
			ctq_json_path_key(jp, sizeof jp, "weight_map", who);
			st = index_fail(err, index, jp,
					"tensor \"%s\" maps to shard \"%s\", which does not exist in %s",
					who, uniq[i], c->dir);
			goto done;
		}
		st = ctq_st_open(&c->files[i], shard, err);
		if (st)
			goto done;
		c->n_files = i + 1;
	}

	c->entries = ctq_arena_calloc(&c->arena, n_map, sizeof *c->entries);
	if (!c->entries && n_map) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, index, "out of memory");
		goto done;
	}
	for (const cJSON *m = map->child; m; m = m->next) {
		const char **hit = bsearch(&m->valuestring, uniq, n_files,
					   sizeof *uniq, cmp_strp);
		size_t fi = (size_t)(hit - uniq);
		const struct ctq_st_tensor *t = ctq_st_find(&c->files[fi], m->string);
		if (!t) {
			char jp[CTQ_PATH_MAX];
			ctq_json_path_key(jp, sizeof jp, "weight_map", m->string);
			st = index_fail(err, index, jp,
					"tensor \"%s\" is mapped to shard \"%s\", which does not hold it (%zu tensors there)",
					m->string, uniq[fi], c->files[fi].n_tensors);
			goto done;
		}
		c->entries[c->n_entries].tensor = t;
		c->entries[c->n_entries].file = fi;
		c->n_entries++;
	}
	qsort(c->entries, c->n_entries, sizeof *c->entries, cmp_entry_name);
done:
	free(names);
	free(shard);
	cJSON_Delete(root);
	return st;
}

enum ctq_status ctq_checkpoint_open(struct ctq_checkpoint *c, const char *dir,
				    struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	char *index = NULL, *single = NULL;
	memset(c, 0, sizeof *c);
	ctq_arena_init(&c->arena);
	if (!ctq_path_is_dir(dir)) {
		st = ctq_error_set(err, CTQ_ERR_IO, dir,
				   "is not a directory; expected a checkpoint directory");
		goto done;
	}
	size_t n = strlen(dir);
	c->dir = ctq_malloc(n + 1);
	if (!c->dir) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	memcpy(c->dir, dir, n + 1);
	static const char *const stems[] = {CTQ_ST_STEM, CTQ_ST_DIFFUSERS_STEM};
	static const char *const singles[] = {CTQ_ST_SINGLE_NAME, CTQ_ST_DIFFUSERS_STEM ".safetensors"};
	static const char *const indexes[] = {CTQ_ST_INDEX_NAME, CTQ_ST_DIFFUSERS_STEM ".safetensors.index.json"};
	bool found = false;
	for (int i = 0; i < 2 && !found && !st; i++) {
		free(index);
		free(single);
		index = ctq_path_join(dir, indexes[i]);
		single = ctq_path_join(dir, singles[i]);
		if (!index || !single) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			break;
		}
		c->stem = stems[i];
		if ((found = ctq_path_exists(index))) {
			c->sharded = true;
			st = open_index(c, index, err);
		} else if ((found = ctq_path_exists(single))) {
			st = open_single(c, single, singles[i], err);
		}
	}
	if (!found && !st)
		st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, dir,
				   "holds neither %s nor %s (nor diffusers' %s.safetensors[.index.json]); "
				   "expected a Hugging Face checkpoint",
				   CTQ_ST_INDEX_NAME, CTQ_ST_SINGLE_NAME, CTQ_ST_DIFFUSERS_STEM);
done:
	free(index);
	free(single);
	if (st)
		ctq_checkpoint_close(c);
	return st;
}

static int cmp_key_entry(const void *key, const void *elem)
{
	return strcmp(key, ((const struct ctq_checkpoint_entry *)elem)->tensor->name);
}

const struct ctq_st_tensor *ctq_checkpoint_find(const struct ctq_checkpoint *c,
						const char *name,
						const char **file)
{
	const struct ctq_checkpoint_entry *e = NULL;
	if (c && name && c->n_entries)
		e = bsearch(name, c->entries, c->n_entries, sizeof *c->entries,
			    cmp_key_entry);
	if (file)
		*file = e ? c->file_names[e->file] : NULL;
	return e ? e->tensor : NULL;
}

size_t ctq_checkpoint_count(const struct ctq_checkpoint *c)
{
	return c ? c->n_entries : 0;
}

const struct ctq_st_tensor *ctq_checkpoint_at(const struct ctq_checkpoint *c,
					      size_t i, const char **file)
{
	bool ok = c && i < c->n_entries;
	if (file)
		*file = ok ? c->file_names[c->entries[i].file] : NULL;
	return ok ? c->entries[i].tensor : NULL;
}

/* ---- sharded checkpoints: writing ---------------------------------------- */

/* A JSON string as Python's json.dumps writes it (ensure_ascii): \" \\ \n
 * \r \t \b \f, every other character outside ' '..'~' as \uxxxx (UTF-16
 * surrogate pairs past U+FFFF). s is valid UTF-8 (the writer checks). */
static void json_str_python(struct ctq_strbuf *sb, const char *s)
{
	ctq_strbuf_append(sb, "\"");
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			ctq_strbuf_appendn(sb, (const char *)p, 1);
			p++;
			continue;
		}
		switch (c) {
		case '"': ctq_strbuf_append(sb, "\\\""); p++; continue;
		case '\\': ctq_strbuf_append(sb, "\\\\"); p++; continue;
		case '\n': ctq_strbuf_append(sb, "\\n"); p++; continue;
		case '\r': ctq_strbuf_append(sb, "\\r"); p++; continue;
		case '\t': ctq_strbuf_append(sb, "\\t"); p++; continue;
		case '\b': ctq_strbuf_append(sb, "\\b"); p++; continue;
		case '\f': ctq_strbuf_append(sb, "\\f"); p++; continue;
		default: break;
		}
		uint32_t cp;
		int len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
		cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
		for (int k = 1; k < len; k++)
			cp = cp << 6 | (p[k] & 0x3f);
		p += len;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			ctq_strbuf_printf(sb, "\\u%04x\\u%04x", 0xd800 + (cp >> 10),
					  0xdc00 + (cp & 0x3ff));
		} else {
			ctq_strbuf_printf(sb, "\\u%04x", cp);
		}
	}
	ctq_strbuf_append(sb, "\"");
}

static int cmp_writer_name(const void *a, const void *b)
{
	const struct ctq_st_writer_entry *x = *(const struct ctq_st_writer_entry *const *)a;
	const struct ctq_st_writer_entry *y = *(const struct ctq_st_writer_entry *const *)b;
	return strcmp(x->name, y->name);
}

size_t ctq_st_split_shards(const void *tensors, size_t n, ctq_st_size_fn size_of,
			   uint64_t max_shard_bytes, size_t *shard_of,
			   size_t *pending, uint64_t *total_bytes)
{
	uint64_t limit = max_shard_bytes ? max_shard_bytes : UINT64_MAX;
	uint64_t total = 0, cur = 0;
	size_t n_pending = 0, n_shards = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t b = size_of(tensors, i);
		total += b;
		if (b > limit) {
			shard_of[i] = n_shards++;
			continue;
		}
		if (n_pending && cur + b > limit) {
			for (size_t k = 0; k < n_pending; k++)
				shard_of[pending[k]] = n_shards;
			n_shards++;
			n_pending = 0;
			cur = 0;
		}
		pending[n_pending++] = i;
		cur += b;
	}
	if (n_pending) {
		for (size_t k = 0; k < n_pending; k++)
			shard_of[pending[k]] = n_shards;
		n_shards++;
	}
	*total_bytes = total;
	return n_shards;
}

/* Removes dir/name when it is there: the file of the other layout (the
 * index after a single-file write, the single file after shards) that an
 * earlier write may have left. */
static void remove_stale(const char *dir, const char *name)
{
	char *path = ctq_path_join(dir, name);
	if (path && ctq_path_exists(path))
		unlink(path);
	free(path);
}

static uint64_t writer_entry_bytes(const void *tensors, size_t i)
{
	return ((const struct ctq_st_writer_entry *)tensors)[i].n_bytes;
}

enum ctq_status ctq_checkpoint_write(const char *dir,
				     const struct ctq_st_writer *w,
				     uint64_t max_shard_bytes,
				     struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	size_t n = w->n_tensors;
	size_t *shard_of = NULL; /* (n) shard number of each tensor */
	size_t *pending = NULL;  /* (n) tensors of the shard being filled */
	size_t *sel = NULL;      /* (n) one shard's tensors */
	const struct ctq_st_writer_entry **by_name = NULL; /* (n) */
	char **names = NULL;     /* (n_shards) shard file names */
	char *path = NULL;
	struct ctq_strbuf idx;
	size_t n_shards = 0;
	ctq_strbuf_init(&idx);

	st = ctq_mkdirs(dir, err);
	if (st)
		goto done;
	shard_of = ctq_malloc(n * sizeof *shard_of);
	pending = ctq_malloc(n * sizeof *pending);
	sel = ctq_malloc(n * sizeof *sel);
	if (!shard_of || !pending || !sel) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}

	uint64_t total = 0;
	n_shards = ctq_st_split_shards(w->tensors, n, writer_entry_bytes, max_shard_bytes,
				       shard_of, pending, &total);

	if (n_shards <= 1) {
		path = ctq_path_join(dir, CTQ_ST_SINGLE_NAME);
		if (!path) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			goto done;
		}
		for (size_t i = 0; i < n; i++)
			sel[i] = i;
		st = ctq_st_write_subset(w, sel, n, path, err);
		if (!st)
			remove_stale(dir, CTQ_ST_INDEX_NAME);
		goto done;
	}

	names = ctq_malloc(n_shards * sizeof *names);
	if (!names) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	memset(names, 0, n_shards * sizeof *names);
	for (size_t s = 0; s < n_shards; s++) {
		char name[64];
		snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1,
			 n_shards);
		names[s] = ctq_malloc(strlen(name) + 1);
		if (names[s])
			memcpy(names[s], name, strlen(name) + 1);
		free(path);
		path = ctq_path_join(dir, name);
		if (!names[s] || !path) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			goto done;
		}
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (shard_of[i] == s)
				sel[k++] = i;
		st = ctq_st_write_subset(w, sel, k, path, err);
		if (st)
			goto done;
	}

	/* The index as transformers writes it: json.dumps(indent=2,
	 * sort_keys=True) + "\n". */
	by_name = ctq_malloc(n * sizeof *by_name);
	if (!by_name) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		by_name[i] = &w->tensors[i];
	qsort(by_name, n, sizeof *by_name, cmp_writer_name);
	ctq_strbuf_printf(&idx, "{\n  \"metadata\": {\n    \"total_size\": %" PRIu64
			  "\n  },\n  \"weight_map\": {", total);
	for (size_t i = 0; i < n; i++) {
		size_t s = shard_of[(size_t)(by_name[i] - w->tensors)];
		ctq_strbuf_append(&idx, i ? ",\n    " : "\n    ");
		json_str_python(&idx, by_name[i]->name);
		ctq_strbuf_append(&idx, ": ");
		json_str_python(&idx, names[s]);
	}
	ctq_strbuf_append(&idx, "\n  }\n}\n");
	if (idx.oom) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	free(path);
	path = ctq_path_join(dir, CTQ_ST_INDEX_NAME);
	if (!path) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	st = ctq_file_write_atomic(path, idx.data, idx.len, err);
	if (!st)
		remove_stale(dir, CTQ_ST_SINGLE_NAME);
done:
	for (size_t s = 0; names && s < n_shards; s++)
		free(names[s]);
	free(names);
	free(by_name);
	free(shard_of);
	free(pending);
	free(sel);
	free(path);
	ctq_strbuf_free(&idx);
	return st;
}
