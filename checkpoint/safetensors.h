/* ctq safetensors I/O: a validating reader of Hugging Face .safetensors files
 * (memory-mapped, zero-copy), a writer that lays files out byte for byte as
 * the Python `safetensors` library does, and sharded Hugging Face checkpoints
 * (model.safetensors.index.json + shards, or a single model.safetensors).
 *
 * The format: an 8-byte little-endian header length N, N bytes of JSON
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
 * {str: str}}, then the data area; offsets count from the data area's start.
 *
 * Every file is untrusted: lengths, offsets, overlaps, dtypes, shapes and
 * sizes are checked before any tensor is handed out. Failures are
 * checkpoint-error with path "file:offset", where the offset is 0 for the
 * length field, 8 (or the exact byte, for JSON syntax) for the header, and the
 * tensor's absolute byte offset in the file for problems with its data.
 *
 * What it is not: a converter (core/dtype.h converts elements), or a reader
 * of other safetensors dtypes (U16, I16, U32, U64, F8_E5M2, ...: rejected as
 * unknown). Tensor data is little-endian; ctq runs on little-endian hosts.
 */
#ifndef CTQ_CHECKPOINT_SAFETENSORS_H
#define CTQ_CHECKPOINT_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/status.h"

#define CTQ_ST_MAX_NDIM 8
/* Headers longer than this are refused as absurd (the Python library's own
 * limit is 100,000,000 bytes; real headers are well under 10 MiB). */
#define CTQ_ST_MAX_HEADER_BYTES ((uint64_t)100 << 20)
#define CTQ_ST_INDEX_NAME "model.safetensors.index.json"
#define CTQ_ST_SINGLE_NAME "model.safetensors"
/* The file stems a checkpoint folder's safetensors go by: transformers'
 * (model.safetensors[.index.json], model-0000i-of-0000N.safetensors) and
 * diffusers' (diffusion_pytorch_model.*: a DiT's transformer/ folder). */
#define CTQ_ST_STEM "model"
#define CTQ_ST_DIFFUSERS_STEM "diffusion_pytorch_model"

/* One tensor of an open file. Everything it points to belongs to the file
 * and lives until ctq_st_close. */
struct ctq_st_tensor {
	const char *name;
	enum ctq_dtype dtype;
	int ndim;                        /* 0 (a scalar) .. CTQ_ST_MAX_NDIM */
	int64_t shape[CTQ_ST_MAX_NDIM];  /* shape[ndim..] are 0 */
	uint64_t n_elements, n_bytes;    /* n_bytes == n_elements * dtype size */
	uint64_t file_offset;            /* absolute offset of byte 0 in the file */
	const void *data;                /* (n_bytes) little-endian, row-major, in
					  * the read-only mapping; may be unaligned
					  * in files ctq did not write: read it
					  * with memcpy or ctq_convert_to_f32 */
};

/* One __metadata__ pair (both strings owned by the file or writer). */
struct ctq_st_meta {
	const char *key;
	const char *value;
};

struct ctq_st_file {
	char *path;                      /* owned copy of the path opened */
	const unsigned char *map;        /* (map_bytes) the whole file, read-only */
	size_t map_bytes;
	const char *header;              /* (header_bytes) the JSON header, in the
					  * mapping, not NUL-terminated */
	uint64_t header_bytes;
	uint64_t data_start;             /* 8 + header_bytes */
	struct ctq_st_tensor *tensors;   /* (n_tensors) sorted by name (strcmp),
					  * not in header or offset order */
	size_t n_tensors;
	bool has_metadata;               /* the header had a __metadata__ key */
	struct ctq_st_meta *metadata;    /* (n_metadata) in header order */
	size_t n_metadata;
	struct ctq_arena arena;          /* names, metadata, the tensor table */
};

/* Maps and validates the safetensors file at path (borrowed). On success f
 * owns the mapping until ctq_st_close. Holes between tensors and bytes after
 * the last tensor are accepted; overlapping tensors are not.
 * Errors: io-error (cannot open, stat or map; not a regular file),
 * checkpoint-error at "path:offset" (too short; header length absurd or past
 * the end; header not UTF-8, not JSON, not an object, or with duplicate keys;
 * an entry that is not exactly {dtype, shape, data_offsets}; unknown dtype;
 * shape not 0..8 non-negative integers; offsets not [begin, end] integers with
 * begin <= end <= data area size (a truncated file); byte size != dtype size
 * x elements, overflow included; overlapping tensors; __metadata__ not an
 * object of strings), out-of-memory. On any result f may be passed to
 * ctq_st_close. */
enum ctq_status ctq_st_open(struct ctq_st_file *f, const char *path,
			    struct ctq_error *err);

/* Unmaps and frees; accepts NULL, a zeroed struct and an already closed one.
 * Every tensor pointer taken from f dies here. */
void ctq_st_close(struct ctq_st_file *f);

/* The tensor called name (binary search), or NULL. Borrowed from f. */
const struct ctq_st_tensor *ctq_st_find(const struct ctq_st_file *f,
					const char *name);

/* The __metadata__ value for key, or NULL. Borrowed from f. */
const char *ctq_st_metadata(const struct ctq_st_file *f, const char *key);

/* ---- writer ---------------------------------------------------------------- */

struct ctq_st_writer_entry {
	const char *name;                /* owned by the writer's arena */
	enum ctq_dtype dtype;
	int ndim;
	int64_t shape[CTQ_ST_MAX_NDIM];
	const void *data;                /* (n_bytes) borrowed from the caller */
	uint64_t n_bytes;
};

/* Tensors to write. The writer copies names, shapes and metadata; tensor
 * data is borrowed and must stay valid and unchanged until the last write. */
struct ctq_st_writer {
	struct ctq_st_writer_entry *tensors; /* (n_tensors) in the order added */
	size_t n_tensors, cap_tensors;
	size_t *slots;                   /* (n_slots) open-addressing name index:
					  * tensor index + 1, 0 when empty */
	size_t n_slots;
	struct ctq_st_meta *metadata;    /* (n_metadata) in the order first set */
	size_t n_metadata, cap_metadata;
	struct ctq_arena arena;
};

void ctq_st_writer_init(struct ctq_st_writer *w);
/* Frees what the writer owns (never the borrowed data); accepts NULL and a
 * freed writer; idempotent. */
void ctq_st_writer_free(struct ctq_st_writer *w);

/* Adds a tensor: name (copied), dtype, ndim in 0..8, shape (ndim entries,
 * copied; may be NULL when ndim == 0), data (borrowed until the last write;
 * may be NULL when n_bytes == 0), n_bytes == dtype size x product(shape).
 * Errors: checkpoint-error with the tensor name as path (empty, non-UTF-8 or
 * reserved "__metadata__" name; name already added; bad dtype, ndim or
 * dimension; n_bytes disagreeing with dtype and shape; size overflow),
 * out-of-memory. On error the writer is unchanged. */
enum ctq_status ctq_st_writer_add(struct ctq_st_writer *w, const char *name,
				  enum ctq_dtype dtype, int ndim,
				  const int64_t *shape, const void *data,
				  uint64_t n_bytes, struct ctq_error *err);

/* Sets __metadata__[key] = value (both copied; a second set of the same key
 * replaces the value). Metadata keys are written sorted by key.
 * Errors: checkpoint-error (empty or non-UTF-8 key, non-UTF-8 value),
 * out-of-memory. */
enum ctq_status ctq_st_writer_set_metadata(struct ctq_st_writer *w,
					   const char *key, const char *value,
					   struct ctq_error *err);

/* Writes every tensor to path as the Python library would: header JSON
 * (compact, __metadata__ first when set, then tensors in layout order)
 * padded with spaces to a multiple of 8 bytes, then the data of each tensor,
 * laid out sorted by the library's dtype order descending (I64, F64, F32,
 * I32, BF16, F16, F8_E4M3, I8, U8, BOOL: widest first, so every tensor is
 * aligned to its element size) and then by name (bytewise). Data is
 * streamed from the borrowed buffers into path.tmp.<pid>, which is renamed
 * onto path when complete and removed on any failure.
 * Errors: io-error (create, write, rename), out-of-memory. */
enum ctq_status ctq_st_writer_write(const struct ctq_st_writer *w,
				    const char *path, struct ctq_error *err);

/* ---- sharded checkpoints -------------------------------------------------- */

/* One tensor of a checkpoint and the shard that holds it. */
struct ctq_checkpoint_entry {
	const struct ctq_st_tensor *tensor; /* borrowed from files[file] */
	size_t file;                        /* index into files / file_names */
};

struct ctq_checkpoint {
	char *dir;                       /* owned copy */
	const char *stem;                /* CTQ_ST_STEM or CTQ_ST_DIFFUSERS_STEM: its files' names */
	bool sharded;                    /* read through the index */
	struct ctq_st_file *files;       /* (n_files) each shard opened once,
					  * sorted by file name */
	const char **file_names;         /* (n_files) names inside dir */
	size_t n_files;
	struct ctq_checkpoint_entry *entries; /* (n_entries) sorted by tensor name */
	size_t n_entries;
	struct ctq_arena arena;
};

/* Opens the checkpoint in dir (borrowed): model.safetensors.index.json when
 * present, else model.safetensors; failing both, diffusers' names
 * (diffusion_pytorch_model.safetensors.index.json, then
 * diffusion_pytorch_model.safetensors), c->stem saying which. The index must be a JSON object whose
 * weight_map is an object of tensor name -> shard file name (no '/', no "..",
 * not empty); every shard must exist and is opened (and validated) once;
 * every mapped tensor must be in its shard. A shard's tensors that the
 * weight_map does not list are not entries (as transformers ignores them).
 * Errors: checkpoint-error (neither file present, with the directory as path;
 * index problems with path "index-file:JSON path", e.g.
 * ".../model.safetensors.index.json:weight_map.lm_head.weight", naming the
 * tensor and the shard; any ctq_st_open error of a shard), io-error (dir is
 * not a directory; unreadable files), out-of-memory. On any result c may be
 * passed to ctq_checkpoint_close. */
enum ctq_status ctq_checkpoint_open(struct ctq_checkpoint *c, const char *dir,
				    struct ctq_error *err);

/* Closes every shard and frees; accepts NULL, zeroed and closed structs. */
void ctq_checkpoint_close(struct ctq_checkpoint *c);

/* The tensor called name, or NULL. When file is non-NULL it receives the
 * shard's file name (borrowed from c). */
const struct ctq_st_tensor *ctq_checkpoint_find(const struct ctq_checkpoint *c,
						const char *name,
						const char **file);

/* Iteration in tensor-name order: entry i < ctq_checkpoint_count(c). */
size_t ctq_checkpoint_count(const struct ctq_checkpoint *c);
const struct ctq_st_tensor *ctq_checkpoint_at(const struct ctq_checkpoint *c,
					      size_t i, const char **file);

/* Writes the writer's tensors into dir (created if missing) as transformers'
 * save_pretrained does: one model.safetensors when the total fits in
 * max_shard_bytes (0: no limit), else model-0000i-of-0000N.safetensors
 * shards plus model.safetensors.index.json ({"metadata": {"total_size"},
 * "weight_map"}, sorted keys, indent 2). Shards are filled in the order the
 * tensors were added, a new shard starting when the next tensor would pass
 * the limit; a tensor larger than the limit gets a shard of its own
 * (huggingface_hub's split_state_dict_into_shards). Every shard carries the
 * writer's metadata. Each file is written atomically, the index last; a
 * stale index (single-file result) or stale model.safetensors (sharded
 * result) left by an earlier write is removed so the directory reads back as
 * written; shards of an earlier write with another shard count stay (no
 * index names them). w and its data are borrowed.
 * Errors: io-error, out-of-memory. */
enum ctq_status ctq_checkpoint_write(const char *dir,
				     const struct ctq_st_writer *w,
				     uint64_t max_shard_bytes,
				     struct ctq_error *err);

/* Bytes of tensor i of a caller's tensor list (for ctq_st_split_shards). */
typedef uint64_t (*ctq_st_size_fn)(const void *tensors, size_t i);

/* huggingface_hub's split_state_dict_into_shards over n tensors in list
 * order (max_shard_bytes 0: no limit): a tensor over the limit is a shard
 * of its own at once; otherwise the open shard closes when the next tensor
 * would tip it over. Fills shard_of (n) with each tensor's shard number,
 * *total_bytes with the sum of the sizes, and returns the shard count.
 * pending (n) is scratch. Shared by ctq_checkpoint_write and
 * ctq_stream_write so that both name the same shards. */
size_t ctq_st_split_shards(const void *tensors, size_t n, ctq_st_size_fn size_of,
			   uint64_t max_shard_bytes, size_t *shard_of,
			   size_t *pending, uint64_t *total_bytes);

/* Writes the tensors sel[0..n) (indices into w's tensors) to path, one
 * safetensors file (checkpoint/safetensors.c; used by the sharded writer in
 * checkpoint/shards.c). */
enum ctq_status ctq_st_write_subset(const struct ctq_st_writer *w, const size_t *sel, size_t n,
				    const char *path, struct ctq_error *err);

#endif
