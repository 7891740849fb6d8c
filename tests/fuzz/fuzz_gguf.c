/* Fuzz target: a GGUF file through ctq_gguf_open (header, metadata,
 * tensor infos), the typed metadata getters, dequantization of every tensor
 * of at most 1 Mi elements, and the import to a Hugging Face checkpoint
 * (ctq import-gguf) into the target's temporary folder, removed after each
 * input. */
#include "tests/fuzz/fuzz.h"

#include "checkpoint/gguf.h"

#define MAX_DEQUANT_ELEMENTS ((uint64_t)1 << 20)

static void walk_array(const struct ctq_gguf_value *a)
{
	if (a->type != CTQ_GGUF_ARRAY)
		return;
	for (uint64_t i = 0; i < a->v.arr.n && i < 4096; i++) {
		int64_t iv;
		double dv;
		(void)ctq_gguf_array_int(a, i, &iv);
		(void)ctq_gguf_array_float(a, i, &dv);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTQ_FUZZ_MAX_BYTES)
		return -1;
	char file[512], out[512];
	snprintf(file, sizeof file, "%s", ctq_fuzz_path("model.gguf"));
	snprintf(out, sizeof out, "%s", ctq_fuzz_path("hf"));
	ctq_fuzz_write(file, data, size);

	struct ctq_gguf_file f;
	struct ctq_error err = {0};
	memset(&f, 0, sizeof f);
	if (!ctq_gguf_open(&f, file, &err)) {
		for (size_t i = 0; i < f.n_kvs; i++) {
			(void)ctq_gguf_find_kv(&f, f.kvs[i].key);
			walk_array(&f.kvs[i].value);
		}
		uint64_t u;
		bool found;
		const struct ctq_gguf_value *v;
		struct ctq_error gerr = {0};
		(void)ctq_gguf_get_uint(&f, "llama.block_count", false, 1 << 20, &u, &found, &gerr);
		(void)ctq_gguf_get_string(&f, "general.architecture", false, &v, &gerr);
		(void)ctq_gguf_get_array(&f, "tokenizer.ggml.tokens", false, CTQ_GGUF_STRING, &v, &gerr);
		for (size_t i = 0; i < f.n_tensors; i++) {
			const struct ctq_gguf_tensor *t = &f.tensors[i];
			(void)ctq_gguf_find_tensor(&f, t->name);
			if (t->n_elements > MAX_DEQUANT_ELEMENTS || !ctq_ggml_type_dequantizable(t->type))
				continue;
			float *dst = malloc((size_t)t->n_elements * sizeof *dst);
			struct ctq_error derr = {0};
			if (dst)
				(void)ctq_gguf_dequantize(&f, t, dst, &derr);
			free(dst);
		}
	}
	ctq_gguf_close(&f);

	struct ctq_gguf_import_summary sum;
	struct ctq_error ierr = {0};
	memset(&sum, 0, sizeof sum);
	(void)ctq_gguf_import(file, out, true, &sum, &ierr);
	ctq_remove_tree(out);
	return 0;
}
