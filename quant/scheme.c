/* ctq scheme classification (see scheme.h). */
#include "quant/scheme.h"

#include <stdio.h>
#include <string.h>

bool ctq_scheme_is_unquantized(const struct ctq_qscheme *s)
{
	return !s->weights && !s->input && !s->output;
}

static bool is_fp(const struct ctq_qargs *a, int bits)
{
	return a && a->type == CTQ_QTYPE_FLOAT && a->num_bits == bits;
}

static bool is_int(const struct ctq_qargs *a, int bits)
{
	return a && a->type == CTQ_QTYPE_INT && a->num_bits == bits;
}

static bool is_w8a8_exact(const struct ctq_qscheme *s)
{
	const struct ctq_qargs *w = s->weights, *a = s->input;
	return is_int(w, 8) && w->symmetric && w->dynamic == CTQ_DYNAMIC_FALSE &&
	       (w->strategy == CTQ_STRATEGY_CHANNEL ||
		w->strategy == CTQ_STRATEGY_TENSOR) &&
	       is_int(a, 8) && a->strategy == CTQ_STRATEGY_TOKEN &&
	       a->dynamic == CTQ_DYNAMIC_TRUE && a->symmetric && !s->output;
}

const char *ctq_scheme_name(const struct ctq_qscheme *s, char *buf, size_t cap)
{
	const struct ctq_qargs *w = s->weights, *a = s->input;
	if (ctq_scheme_is_unquantized(s)) {
		snprintf(buf, cap, "unquantized");
	} else if (!w) {
		snprintf(buf, cap, "activation-only");
	} else if (is_w8a8_exact(s)) {
		snprintf(buf, cap, "w8a8-int8");
	} else if (is_int(w, 8) && is_int(a, 8)) {
		const char *q = a->dynamic == CTQ_DYNAMIC_FALSE ? "static"
				: !w->symmetric || !a->symmetric ? "asym"
				: (w->strategy != CTQ_STRATEGY_CHANNEL &&
				   w->strategy != CTQ_STRATEGY_TENSOR) ? "group"
				: s->output ? "out8"
				: "other";
		snprintf(buf, cap, "w8a8-int8-%s", q);
	} else if (w->type == CTQ_QTYPE_INT) {
		if (!a)
			snprintf(buf, cap, "w%da16%s", w->num_bits,
				 w->symmetric ? "" : "-asym");
		else if (a->type == CTQ_QTYPE_INT)
			snprintf(buf, cap, "w%da%d", w->num_bits, a->num_bits);
		else
			snprintf(buf, cap, "w%dafp%d", w->num_bits, a->num_bits);
	} else if (is_fp(w, 8) && w->strategy == CTQ_STRATEGY_BLOCK) {
		snprintf(buf, cap, "fp8-block");
	} else if (is_fp(w, 8) && w->strategy == CTQ_STRATEGY_GROUP &&
		   w->group_size == 32) {
		snprintf(buf, cap, a ? "mxfp8" : "mxfp8a16");
	} else if (is_fp(w, 8)) {
		if (!a)
			snprintf(buf, cap, "fp8-a16");
		else if (is_fp(a, 8))
			snprintf(buf, cap, a->dynamic != CTQ_DYNAMIC_FALSE
						   ? "fp8-dynamic"
						   : "fp8");
		else
			snprintf(buf, cap, "wfp8a%d", a->num_bits);
	} else if (is_fp(w, 4) && w->strategy == CTQ_STRATEGY_TENSOR_GROUP &&
		   w->group_size == 16) {
		snprintf(buf, cap, a ? "nvfp4" : "nvfp4a16");
	} else if (is_fp(w, 4) && w->strategy == CTQ_STRATEGY_GROUP &&
		   w->group_size == 32) {
		snprintf(buf, cap, !a ? "mxfp4a16" : is_fp(a, 8) ? "mxfp4xfp8" : "mxfp4");
	} else if (is_fp(w, 6) && w->strategy == CTQ_STRATEGY_GROUP &&
		   w->group_size == 32) {
		if (!a)
			snprintf(buf, cap, "mxfp6a16");
		else
			snprintf(buf, cap, "mxfp6a%s%d",
				 a->type == CTQ_QTYPE_FLOAT ? "" : "int", a->num_bits);
	} else {
		if (a)
			snprintf(buf, cap, "wfp%da%s%d", w->num_bits,
				 a->type == CTQ_QTYPE_FLOAT ? "fp" : "",
				 a->num_bits);
		else
			snprintf(buf, cap, "wfp%da16", w->num_bits);
	}
	return buf;
}

static const char *dyn_name(enum ctq_dynamic d)
{
	return d == CTQ_DYNAMIC_TRUE ? "true" : d == CTQ_DYNAMIC_LOCAL ? "\"local\"" : "false";
}

/* Whether q (the scheme's `field`) is 8-bit int; if not, why into reason. */
static bool is_int8(const struct ctq_qargs *q, const char *field, char *reason, size_t cap)
{
	if (q->type != CTQ_QTYPE_INT)
		snprintf(reason, cap, "%s.type is %s; executable schemes need int", field,
			 ctq_qtype_name(q->type));
	else if (q->num_bits != 8)
		snprintf(reason, cap, "%s.num_bits is %d; executable schemes need 8", field,
			 q->num_bits);
	else
		return true;
	return false;
}

enum ctq_status ctq_scheme_check_exec(const struct ctq_qscheme *s,
				      const char *format, char *reason,
				      size_t cap)
{
	const struct ctq_qargs *w = s->weights, *a = s->input;
#define FAIL(...) do { snprintf(reason, cap, __VA_ARGS__); \
		return CTQ_ERR_UNSUPPORTED_SCHEME; } while (0)
	reason[0] = '\0';
	if (ctq_scheme_is_unquantized(s))
		return CTQ_OK;
	if (!w)
		FAIL("weights is null; executable schemes need int8 weights");
	if (!is_int8(w, "weights", reason, cap))
		return CTQ_ERR_UNSUPPORTED_SCHEME;
	if (w->strategy != CTQ_STRATEGY_CHANNEL &&
	    w->strategy != CTQ_STRATEGY_TENSOR)
		FAIL("weights.strategy is %s; executable schemes need channel or tensor",
		     ctq_strategy_name(w->strategy));
	if (!w->symmetric)
		FAIL("weights.symmetric is false; executable schemes need symmetric weights");
	if (w->dynamic != CTQ_DYNAMIC_FALSE)
		FAIL("weights.dynamic is %s; executable schemes need static weights",
		     dyn_name(w->dynamic));
	if (!a)
		FAIL("input_activations is null; executable schemes need int8 dynamic per-token activations");
	if (!is_int8(a, "input_activations", reason, cap))
		return CTQ_ERR_UNSUPPORTED_SCHEME;
	if (a->strategy != CTQ_STRATEGY_TOKEN)
		FAIL("input_activations.strategy is %s; executable schemes need token",
		     ctq_strategy_name(a->strategy));
	if (a->dynamic != CTQ_DYNAMIC_TRUE)
		FAIL("input_activations.dynamic is %s; executable schemes need dynamic activations",
		     dyn_name(a->dynamic));
	if (!a->symmetric)
		FAIL("input_activations.symmetric is false; executable schemes need symmetric activations");
	if (s->output)
		FAIL("output_activations is set; executable schemes do not quantize outputs");
#undef FAIL
	if (!format || (strcmp(format, "int-quantized") &&
			strcmp(format, "naive-quantized"))) {
		snprintf(reason, cap,
			 "format is %s%s%s; w8a8-int8 executes int-quantized or naive-quantized weights",
			 format ? "\"" : "", format ? format : "missing",
			 format ? "\"" : "");
		return CTQ_ERR_UNSUPPORTED_FORMAT;
	}
	return CTQ_OK;
}

bool ctq_format_is_activation(const char *f)
{
	/* vLLM 0.26.0's is_activation_quantization_format (the spec's main
	 * adds mxfp4-pack-quantized; no release has it). */
	static const char *const fmts[] = {
		"naive-quantized", "int-quantized", "float-quantized",
		"nvfp4-pack-quantized",
	};
	if (!f)
		return false;
	for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
		if (!strcmp(f, fmts[i]))
			return true;
	return false;
}

static bool st_in(const struct ctq_qargs *a, enum ctq_strategy x,
		  enum ctq_strategy y)
{
	return a && (a->strategy == x || a->strategy == y);
}

static bool is_static(const struct ctq_qargs *a)
{
	return a && a->dynamic == CTQ_DYNAMIC_FALSE;
}

static bool is_dynamic(const struct ctq_qargs *a)
{
	return a && a->dynamic != CTQ_DYNAMIC_FALSE;
}

static bool nvfp4(const struct ctq_qargs *a)
{
	return is_fp(a, 4) && a->strategy == CTQ_STRATEGY_TENSOR_GROUP &&
	       a->group_size == 16 && a->symmetric;
}

const char *ctq_scheme_vllm_class(const struct ctq_qscheme *s,
				  const char *f, bool embedding, bool *value_error,
				  char *reason, size_t cap)
{
	const struct ctq_qargs *W = s->weights, *A = s->input, *O = s->output;
	reason[0] = '\0';
	*value_error = false;
	if (!W) {
		snprintf(reason, cap, "weights is null");
		return NULL;
	}
	if (embedding) {
		/* get_quant_method tests the weights alone:
		 * _is_wNa16_group_channel(weights, None) and type int —
		 * whatever the group's activations or format. */
		if (W->type == CTQ_QTYPE_INT && is_static(W) &&
		    st_in(W, CTQ_STRATEGY_GROUP, CTQ_STRATEGY_CHANNEL))
			return "CompressedTensorsEmbeddingWNA16Int";
		*value_error = true;
		snprintf(reason, cap,
			 "compressed-tensors embeddings only support weight-only INT group/channel (WNA16) quantization");
		return NULL;
	}
	if (nvfp4(W)) {
		if (!A)
			return "CompressedTensorsW4A4Fp4(use_a16)";
		if (nvfp4(A))
			return "CompressedTensorsW4A4Fp4";
		*value_error = true;
		snprintf(reason, cap,
			 "For NVFP4 weights, input quantization must also be NVFP4 format, None for NVFP4A16");
		return NULL;
	}
	if (is_fp(W, 4) && W->strategy == CTQ_STRATEGY_GROUP &&
	    W->group_size == 32 && W->symmetric)
		return "CompressedTensorsW4A4Mxfp4";
	if (is_fp(W, 8) && W->strategy == CTQ_STRATEGY_GROUP &&
	    W->group_size == 32 && W->symmetric && W->scale_dtype &&
	    strstr(W->scale_dtype, "uint8"))
		return "CompressedTensorsW8A8Mxfp8";
	if (W->num_bits == 4 && W->strategy == CTQ_STRATEGY_GROUP && A &&
	    A->num_bits == 8 && A->strategy == CTQ_STRATEGY_TOKEN &&
	    is_static(W) && is_dynamic(A) && W->symmetric && A->symmetric) {
		/* _is_fp8_w4a8 tests no types; the scheme's constructor then
		 * wants group 128 (ValueError). */
		if (!W->has_group_size || W->group_size != 128) {
			*value_error = true;
			snprintf(reason, cap, "W4A8 kernels require group quantization with group size 128");
			return NULL;
		}
		return "CompressedTensorsW4A8Fp8";
	}
	bool f_pack = f && !strcmp(f, "pack-quantized");
	bool f_int = f && !strcmp(f, "int-quantized");
	bool w_int_static_cg = W->type == CTQ_QTYPE_INT && is_static(W) &&
			       st_in(W, CTQ_STRATEGY_CHANNEL, CTQ_STRATEGY_GROUP);
	if ((f_pack || f_int) && w_int_static_cg && is_int(A, 8) &&
	    A->strategy == CTQ_STRATEGY_TENSOR && is_static(A) && is_int(O, 8) &&
	    O->strategy == CTQ_STRATEGY_TENSOR && is_static(O))
		return "CompressedTensorsWNA8O8Int";
	/* _is_wNaM_int: symmetric dynamic int activations per token or group,
	 * then WNA8Int (8-bit) or WNA4Int (4-bit); other widths fall through. */
	if (A && f_pack && w_int_static_cg && A->type == CTQ_QTYPE_INT &&
	    A->symmetric && is_dynamic(A) &&
	    st_in(A, CTQ_STRATEGY_TOKEN, CTQ_STRATEGY_GROUP)) {
		if (A->num_bits == 8)
			return "CompressedTensorsWNA8Int";
		if (A->num_bits == 4)
			return "CompressedTensorsWNA4Int";
	}
	if (st_in(W, CTQ_STRATEGY_CHANNEL, CTQ_STRATEGY_GROUP) && is_static(W) &&
	    !A && f_pack) {
		/* CompressedTensorsWNA16's constructor (vLLM 0.26.0): a group
		 * size unless per channel, bits 2..8, zero points for 4 or 8
		 * bits only; each a ValueError. */
		*value_error = true;
		if (!W->has_group_size && W->strategy != CTQ_STRATEGY_CHANNEL) {
			snprintf(reason, cap, "Pack-quantized format requires group quantization or channelwise quantization, but found no group size and strategy is not channelwise.");
			return NULL;
		}
		if (W->num_bits < 2 || W->num_bits > 8) {
			snprintf(reason, cap, "Unsupported num_bits = %d. Supported num_bits = [2, 3, 4, 5, 6, 7, 8]", W->num_bits);
			return NULL;
		}
		if (!W->symmetric && W->num_bits != 4 && W->num_bits != 8) {
			snprintf(reason, cap, "Asymmetric quantization not supported for num_bits = %d. Supported: [4, 8]", W->num_bits);
			return NULL;
		}
		*value_error = false;
		return "CompressedTensorsWNA16";
	}
	if (ctq_format_is_activation(f)) {
		/* _is_fp8_w8a8 / _is_fp8_w8a16 test the types, not the bit
		 * widths: any float weights (and float activations). */
		bool w_fp8_ok = W->type == CTQ_QTYPE_FLOAT && W->symmetric && is_static(W) &&
				(W->strategy == CTQ_STRATEGY_TENSOR ||
				 W->strategy == CTQ_STRATEGY_CHANNEL ||
				 W->strategy == CTQ_STRATEGY_BLOCK);
		if (w_fp8_ok && A && A->type == CTQ_QTYPE_FLOAT &&
		    (is_dynamic(A) ||
		     (A->symmetric && A->strategy == CTQ_STRATEGY_TENSOR))) {
			/* CompressedTensorsW8A8Fp8: block weights need dynamic
			 * activations (assert not is_static_input_scheme). */
			if (W->strategy == CTQ_STRATEGY_BLOCK && !is_dynamic(A)) {
				snprintf(reason, cap, "AssertionError in CompressedTensorsW8A8Fp8: block weights with static input activations");
				return NULL;
			}
			return "CompressedTensorsW8A8Fp8";
		}
		if (w_fp8_ok)
			return "CompressedTensorsW8A16Fp8";
		if (A && W->num_bits == 8 && A->num_bits == 8 &&
		    st_in(W, CTQ_STRATEGY_TENSOR, CTQ_STRATEGY_CHANNEL) &&
		    W->symmetric) {
			if (A->strategy == CTQ_STRATEGY_TENSOR && is_static(W) &&
			    is_static(A))
				return "CompressedTensorsW8A8Int8(static)";
			if (A->strategy == CTQ_STRATEGY_TOKEN && is_static(W) &&
			    is_dynamic(A))
				return "CompressedTensorsW8A8Int8";
		}
		if (A && W->num_bits == 4 && A->num_bits == 8 &&
		    st_in(W, CTQ_STRATEGY_GROUP, CTQ_STRATEGY_CHANNEL) &&
		    A->strategy == CTQ_STRATEGY_TOKEN && W->symmetric &&
		    is_static(W) && is_dynamic(A))
			return "CompressedTensorsW4A8Int";
	}
	snprintf(reason, cap,
		 "No compressed-tensors compatible scheme was found (format %s)",
		 f ? f : "None");
	return NULL;
}

const char *ctq_kv_scheme_name(const struct ctq_qargs *a, char *buf, size_t cap)
{
	snprintf(buf, cap, "kv-%s%d", ctq_qtype_name(a->type), a->num_bits);
	return buf;
}
