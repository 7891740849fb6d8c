/* ctq GGUF import: a validating reader of GGUF model files (llama.cpp's
 * format, versions 2 and 3, little-endian, memory-mapped), dequantization of
 * the common tensor types to f32, and the conversion of a llama-architecture
 * GGUF into a Hugging Face BF16 checkpoint folder (config.json,
 * generation_config.json, model.safetensors, tokenizer.json,
 * tokenizer_config.json).
 *
 * The format (all integers little-endian):
 *   "GGUF" | u32 version | u64 tensor_count | u64 kv_count
 *   kv_count x { string key | u32 value_type | value }
 *   tensor_count x { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type
 *                    | u64 offset }
 *   padding to general.alignment (u32, a power of two; default 32)
 *   data section: each tensor at data_start + offset (offset a multiple of
 *   the alignment), (ne[0] / block) x type_size x ne[1] x ... bytes.
 * A string is u64 length + bytes (no NUL); an array is u32 element type +
 * u64 count + elements (arrays of arrays allowed). ne[0] is the fastest-
 * varying dimension (a row's length K): GGUF [K, N] is row-major [N, K].
 *
 * Every file is untrusted: counts are checked against the bytes that remain
 * before anything is allocated, strings and arrays against the end of the
 * file, dims against zero, the ggml limit of 4 and int64 overflow, block
 * multiples, offsets against the alignment, the data section and each other.
 * Failures are checkpoint-error with path "file:offset", the offset being the
 * absolute byte position of the field that is wrong (for a tensor's data, the
 * position of its tensor info, since that is where the offset is written).
 *
 * What it is not: a GGUF writer, a reader of big-endian or version-1 files
 * (refused), or a dequantizer of the k-quants / i-quants (the reader sizes
 * them so such files open, but ctq_gguf_dequantize refuses them by name).
 * Tensor data is little-endian; ctq runs on little-endian hosts.
 */
#ifndef CTQ_CHECKPOINT_GGUF_H
#define CTQ_CHECKPOINT_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/status.h"

#define CTQ_GGUF_MAX_DIMS 4          /* GGML_MAX_DIMS */
#define CTQ_GGUF_DEFAULT_ALIGNMENT 32
#define CTQ_GGUF_MAX_NAME 1024        /* bytes in a key or tensor name */
#define CTQ_GGUF_MAX_ARRAY_DEPTH 8    /* arrays of arrays of ... */

/* Metadata value types (gguf_type). */
enum ctq_gguf_vtype {
	CTQ_GGUF_UINT8 = 0,
	CTQ_GGUF_INT8 = 1,
	CTQ_GGUF_UINT16 = 2,
	CTQ_GGUF_INT16 = 3,
	CTQ_GGUF_UINT32 = 4,
	CTQ_GGUF_INT32 = 5,
	CTQ_GGUF_FLOAT32 = 6,
	CTQ_GGUF_BOOL = 7,
	CTQ_GGUF_STRING = 8,
	CTQ_GGUF_ARRAY = 9,
	CTQ_GGUF_UINT64 = 10,
	CTQ_GGUF_INT64 = 11,
	CTQ_GGUF_FLOAT64 = 12,
	CTQ_GGUF_VTYPE_COUNT
};

/* Tensor types (ggml_type) that ctq dequantizes; any other id the reader
 * knows the block layout of is accepted by ctq_gguf_open and refused by
 * ctq_gguf_dequantize. */
enum ctq_ggml_type {
	CTQ_GGML_F32 = 0,
	CTQ_GGML_F16 = 1,
	CTQ_GGML_Q4_0 = 2,  /* 32 values: f16 d, 16 bytes; (nibble - 8) * d */
	CTQ_GGML_Q4_1 = 3,  /* 32 values: f16 d, f16 m, 16 bytes; nibble * d + m */
	CTQ_GGML_Q8_0 = 8,  /* 32 values: f16 d, 32 x int8; q * d */
	CTQ_GGML_BF16 = 30
};

/* "STRING", "UINT32", ...; "?" outside the enum. */
const char *ctq_gguf_vtype_name(uint32_t t);
/* "Q4_1", "Q4_K", ...; NULL for an id ggml does not define. */
const char *ctq_ggml_type_name(uint32_t t);
/* Elements per block and bytes per block; false for an unknown id. */
bool ctq_ggml_type_layout(uint32_t t, uint32_t *block, uint32_t *type_bytes);
/* True for the types ctq_gguf_dequantize handles. */
bool ctq_ggml_type_dequantizable(uint32_t t);

/* One metadata value. Strings are copied into the file's arena with a NUL
 * after len bytes (they may hold NULs and invalid UTF-8 of their own; keys
 * and tensor names may not). Numeric and bool arrays point into the mapping
 * (unaligned: read with the ctq_gguf_array_* accessors). */
struct ctq_gguf_value {
	enum ctq_gguf_vtype type;
	uint64_t file_offset;          /* where the value starts in the file */
	union {
		uint64_t u;            /* UINT8..UINT64 */
		int64_t i;             /* INT8..INT64 */
		double f;              /* FLOAT32 (exact), FLOAT64 */
		bool b;
		struct {
			const char *s; /* (len + 1) NUL-terminated */
			uint64_t len;
		} str;
		struct {
			enum ctq_gguf_vtype elem;
			uint64_t n;
			const unsigned char *raw;          /* numeric / bool:
							    * (n x elem size) */
			const struct ctq_gguf_value *items; /* STRING / ARRAY: (n) */
		} arr;
	} v;
};

struct ctq_gguf_kv {
	const char *key;               /* NUL-terminated, non-empty */
	uint64_t file_offset;          /* where the key's length field starts */
	struct ctq_gguf_value value;
};

struct ctq_gguf_tensor {
	const char *name;
	uint32_t type;                 /* ggml_type id (enum ctq_ggml_type or
					* another id of known layout) */
	int n_dims;                    /* 1..4 */
	int64_t ne[CTQ_GGUF_MAX_DIMS]; /* ggml order, ne[0] fastest; unused = 1 */
	uint64_t n_elements, n_bytes;
	uint64_t offset;               /* as written: from the data section */
	uint64_t file_offset;          /* absolute offset of the first byte */
	uint64_t info_offset;          /* absolute offset of its tensor info */
	const void *data;              /* (n_bytes) in the read-only mapping */
};

struct ctq_gguf_file {
	char *path;                    /* owned copy */
	const unsigned char *map;      /* (map_bytes) the whole file */
	size_t map_bytes;
	uint32_t version;              /* 2 or 3 */
	struct ctq_gguf_kv *kvs;       /* (n_kvs) in file order */
	size_t n_kvs;
	struct ctq_gguf_tensor *tensors; /* (n_tensors) in file order */
	size_t n_tensors;
	uint64_t alignment;
	uint64_t data_start;           /* absolute offset of the data section */
	const struct ctq_gguf_kv **kv_sorted;         /* (n_kvs) by key */
	const struct ctq_gguf_tensor **tensor_sorted; /* (n_tensors) by name */
	struct ctq_arena arena;        /* keys, names, strings, tables */
};

/* Maps and validates the GGUF file at path (borrowed). On success f owns the
 * mapping until ctq_gguf_close.
 * Errors: io-error (cannot open, stat or map; not a regular file),
 * checkpoint-error at "path:offset" (too short; bad magic; version not 2 or
 * 3, with a hint for big-endian files; a count that cannot fit in the bytes
 * that remain; a string or array running past the end; a key or name empty,
 * over CTQ_GGUF_MAX_NAME, not UTF-8, or holding a NUL or control byte; an
 * unknown value type; arrays
 * nested deeper than CTQ_GGUF_MAX_ARRAY_DEPTH; a bool byte other than 0/1;
 * a duplicate key or tensor name; general.alignment not a UINT32 power of
 * two; n_dims outside 1..4; a dim < 1; an element count overflowing int64;
 * an unknown ggml type; ne[0] not a multiple of the type's block; an offset
 * not a multiple of the alignment, past the end of the file (a truncated
 * file) or overlapping another tensor), out-of-memory. On any result f may
 * be passed to ctq_gguf_close. */
enum ctq_status ctq_gguf_open(struct ctq_gguf_file *f, const char *path,
			      struct ctq_error *err);

/* Unmaps and frees; accepts NULL, a zeroed struct and a closed one. */
void ctq_gguf_close(struct ctq_gguf_file *f);

/* Lookups (binary search); NULL when absent. Borrowed from f. */
const struct ctq_gguf_kv *ctq_gguf_find_kv(const struct ctq_gguf_file *f,
					   const char *key);
const struct ctq_gguf_tensor *ctq_gguf_find_tensor(const struct ctq_gguf_file *f,
						   const char *name);

/* Typed metadata access. Each returns CTQ_OK and fills *out, or a
 * checkpoint-error: at "path:offset" of the kv when its type does not fit
 * (any unsigned or non-negative signed integer type for get_uint, within
 * max; FLOAT32 / FLOAT64 for get_float; STRING; ARRAY of elem (elem
 * CTQ_GGUF_VTYPE_COUNT: any)), and at "path:0" naming the key when it is
 * absent and required. When required is false and the key is absent the
 * call returns CTQ_OK and *found (if non-NULL) is false, *out untouched. */
enum ctq_status ctq_gguf_get_uint(const struct ctq_gguf_file *f, const char *key,
				  bool required, uint64_t max, uint64_t *out,
				  bool *found, struct ctq_error *err);
enum ctq_status ctq_gguf_get_float(const struct ctq_gguf_file *f, const char *key,
				   bool required, double *out, bool *found,
				   struct ctq_error *err);
enum ctq_status ctq_gguf_get_bool(const struct ctq_gguf_file *f, const char *key,
				  bool required, bool *out, bool *found,
				  struct ctq_error *err);
enum ctq_status ctq_gguf_get_string(const struct ctq_gguf_file *f, const char *key,
				    bool required, const struct ctq_gguf_value **out,
				    struct ctq_error *err);
enum ctq_status ctq_gguf_get_array(const struct ctq_gguf_file *f, const char *key,
				   bool required, enum ctq_gguf_vtype elem,
				   const struct ctq_gguf_value **out,
				   struct ctq_error *err);

/* Element i (< arr.n) of a numeric array, converted; false when the element
 * type is not an integer (int) or not numeric (float). */
bool ctq_gguf_array_int(const struct ctq_gguf_value *a, uint64_t i, int64_t *out);
bool ctq_gguf_array_float(const struct ctq_gguf_value *a, uint64_t i, double *out);

/* ---- dequantization --------------------------------------------------------- */

/* Decodes k elements (k a multiple of the type's block) of a dequantizable
 * type from src (unaligned, borrowed) into dst (k floats). The formulas are
 * ggml's dequantize_row_* with every product and sum rounded separately
 * (no contraction), so results are bit-identical to gguf.quants.dequantize.
 * Returns false (writing nothing) for a type that is not dequantizable or a
 * k that is not a block multiple. */
bool ctq_ggml_dequantize_row(uint32_t type, const void *src, int64_t k, float *dst);

/* Dequantizes a whole tensor into dst ((n_elements) floats, caller-owned).
 * Errors: unsupported-format at "path:info_offset" naming the tensor and its
 * type when the type is not dequantizable. */
enum ctq_status ctq_gguf_dequantize(const struct ctq_gguf_file *f,
				    const struct ctq_gguf_tensor *t, float *dst,
				    struct ctq_error *err);

/* ---- llama.cpp's rotary permutation ---------------------------------------- */

/* llama.cpp's converter reorders the rows of attn_q / attn_k of llama
 * models so that its rotary kernel can rotate adjacent pairs (see
 * gguf.c). This puts rows back in Hugging Face order (rotate_half halves):
 * src and dst are (n_head * head_dim, row_len) row-major f32 and must not
 * overlap; head_dim = rows / n_head must be even. Returns false (writing
 * nothing) when rows is not n_head x an even head_dim. */
bool ctq_gguf_unpermute_rows(const float *src, float *dst, int64_t rows,
			     int64_t row_len, int64_t n_head);

/* ---- conversion to a Hugging Face checkpoint -------------------------------- */

/* What an import produced, for the command to print. */
struct ctq_gguf_import_summary {
	char architecture[32];
	uint64_t n_layers, hidden, intermediate, n_head, n_head_kv, head_dim;
	uint64_t vocab, context;
	double rope_theta, rms_eps;
	bool tied;
	size_t n_tensors;              /* tensors written */
	uint64_t n_params, n_bytes;    /* elements and BF16 bytes written */
	size_t n_type[64];             /* source tensors per ggml type id < 64 */
	size_t n_tokens, n_merges, n_added;
	char pre[64];                  /* tokenizer.ggml.pre ("" when absent) */
	bool has_chat_template;
};

/* Converts the llama-architecture GGUF at gguf_path into a Hugging Face BF16
 * checkpoint folder out_dir: model.safetensors (tensors renamed as
 * transformers' LlamaForCausalLM names them, GGUF [K, N] written as [N, K],
 * q/k rows un-permuted), config.json and generation_config.json (from the
 * llama.* and tokenizer.ggml.* metadata, json.dumps(indent=2,
 * sort_keys=True) as transformers writes them), tokenizer.json (a
 * `tokenizers` BPE tokenizer from tokenizer.ggml.tokens / merges /
 * token_type / pre) and tokenizer_config.json (special tokens, chat
 * template). Everything is written into a temporary folder beside out_dir
 * and renamed onto it when complete; an existing out_dir is replaced only
 * when replace is true. summary (optional) is filled on success.
 * Errors: any ctq_gguf_open error; checkpoint-error (missing or ill-typed
 * metadata; a missing, unexpected or ill-shaped tensor, named; token /
 * merge lists that are inconsistent: duplicate tokens, merges that are not
 * two tokens separated by one space, tokens that are not UTF-8 or hold a
 * NUL, ids out of range); unsupported-format (an architecture other than
 * llama; a tensor type ctq does not dequantize; a tokenizer model other than
 * gpt2 or a pre-tokenizer ctq cannot express; rope scaling other than none,
 * linear or yarn; partial rotary); io-error (out_dir exists and replace is
 * false; writes); out-of-memory. */
enum ctq_status ctq_gguf_import(const char *gguf_path, const char *out_dir,
				bool replace,
				struct ctq_gguf_import_summary *summary,
				struct ctq_error *err);

#endif
