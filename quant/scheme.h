/* ctq scheme classification: the stable name of a group's numeric family
 * (docs/semantics.md "Scheme names"), ctq's own executability rule (strict),
 * and the scheme class vLLM main would select (spec §6.3).
 */
#ifndef CTQ_QUANT_SCHEME_H
#define CTQ_QUANT_SCHEME_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "quant/qconfig.h"

#define CTQ_SCHEME_NAME_MAX 48

/* Writes the family name into buf and returns buf. */
const char *ctq_scheme_name(const struct ctq_qscheme *s, char *buf, size_t cap);

/* True when the scheme quantizes nothing (no weights, inputs or outputs). */
bool ctq_scheme_is_unquantized(const struct ctq_qscheme *s);

/* ctq's executable rule: w8a8-int8 (int8 symmetric static channel/tensor
 * weights, int8 symmetric dynamic per-token activations, no output
 * quantization) stored int-quantized or naive-quantized. Returns CTQ_OK, or
 * unsupported-scheme / unsupported-format with `reason` naming the first
 * offending field, its value and what is needed. */
enum ctq_status ctq_scheme_check_exec(const struct ctq_qscheme *s,
				      const char *format, char *reason,
				      size_t cap);

/* The vLLM main scheme class for the args and format (SM 9.0 assumed), or
 * NULL with `reason` when vLLM selects none; *value_error tells whether vLLM
 * raises ValueError there (the LM head catches that one) rather than
 * NotImplementedError. embedding: the layer is a VocabParallelEmbedding
 * (int weights by channel or group, static, whatever the activations). */
const char *ctq_scheme_vllm_class(const struct ctq_qscheme *s,
				  const char *format, bool embedding,
				  bool *value_error, char *reason, size_t cap);

/* vLLM's activation-quantization formats (§4.1). */
bool ctq_format_is_activation(const char *format);

/* KV-cache family name for kv_cache_scheme args: "kv-<type><bits>". */
const char *ctq_kv_scheme_name(const struct ctq_qargs *a, char *buf, size_t cap);

#endif
