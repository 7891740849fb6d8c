/* compressed-tensors preset schemes (spec §3.1, version history §3.2). */
#include "quant/qconfig.h"

#include <stdio.h>
#include <string.h>

static struct ctq_qargs *new_args(struct ctq_arena *a, int bits,
				  enum ctq_qtype type, enum ctq_strategy s,
				  int group_size)
{
	struct ctq_qargs *x = ctq_arena_alloc(a, sizeof *x);
	if (!x)
		return NULL;
	x->num_bits = bits;
	x->type = type;
	x->symmetric = true;
	x->strategy = s;
	if (group_size) {
		x->has_group_size = true;
		x->group_size = group_size;
	}
	x->observer = "memoryless_minmax";
	x->zp_dtype = type == CTQ_QTYPE_FLOAT ? "float8_e4m3fn" : "int8";
	x->path = "(preset)";
	return x;
}

static struct ctq_qargs *dyn(struct ctq_qargs *x)
{
	if (x) {
		x->dynamic = CTQ_DYNAMIC_TRUE;
		x->observer = NULL;
	}
	return x;
}

/* First version (major*10000+minor*100+patch) in which each name exists. */
static const struct {
	const char *name;
	int since;
} availability[] = {
	{"UNQUANTIZED", 0}, {"W8A16", 0}, {"W4A16", 0}, {"W4A16_ASYM", 0},
	{"W8A8", 0}, {"INT8", 0}, {"W4A8", 0}, {"FP8", 0}, {"FP8_DYNAMIC", 0},
	{"NVFP4A16", 1000}, {"NVFP4", 1000}, {"FP8_BLOCK", 1100},
	{"MXFP4A16", 1300}, {"MXFP4", 1300}, {"W4AFP8", 1400},
	{"MXFP8A16", 1500}, {"MXFP8", 1500},
	{"MXFP4XFP8", 2000}, {"MXFP6A16", 2000}, {"MXFP6A8", 2000},
};

/* Generic W{x}A{y} presets of 0.18 (`_int_wnam`): x in 2..8, y in {4,8,16},
 * x <= y. Returns false when the name is not of that form. */
static bool parse_wnam(const char *name, int *w, int *a)
{
	char tail;
	if (sscanf(name, "W%dA%d%c", w, a, &tail) != 2)
		return false;
	char canon[16];
	snprintf(canon, sizeof canon, "W%dA%d", *w, *a);
	if (strcmp(canon, name) != 0)
		return false;
	return *w >= 2 && *w <= 8 && (*a == 4 || *a == 8 || *a == 16) && *w <= *a;
}

bool ctq_preset_expand(const char *name, int version, struct ctq_arena *arena,
		       struct ctq_qscheme *s, const char **format)
{
	int since = -1;
	for (size_t i = 0; i < sizeof availability / sizeof *availability; i++)
		if (strcmp(name, availability[i].name) == 0)
			since = availability[i].since;
	int w = 0, a = 0;
	bool wnam = parse_wnam(name, &w, &a);
	if (since < 0 && !(wnam && version >= 1800))
		return false;
	if (since > version)
		return false;

	s->weights = s->input = s->output = NULL;
	*format = NULL;
	const enum ctq_qtype I = CTQ_QTYPE_INT, F = CTQ_QTYPE_FLOAT;
	struct ctq_qargs *W = NULL, *A = NULL;

	if (!strcmp(name, "UNQUANTIZED")) {
		*format = "dense";
		return true;
	} else if (!strcmp(name, "W8A8") || !strcmp(name, "INT8")) {
		W = new_args(arena, 8, I, CTQ_STRATEGY_CHANNEL, -1);
		A = dyn(new_args(arena, 8, I, CTQ_STRATEGY_TOKEN, 0));
		*format = "int-quantized";
	} else if (!strcmp(name, "W8A16") && version < 1600) {
		/* <= 0.15.x: per channel (§3.2). */
		W = new_args(arena, 8, I, CTQ_STRATEGY_CHANNEL, -1);
		*format = "pack-quantized";
	} else if (!strcmp(name, "W4A16_ASYM")) {
		W = new_args(arena, 4, I, CTQ_STRATEGY_GROUP, 128);
		if (W)
			W->symmetric = false;
		*format = "pack-quantized";
	} else if (!strcmp(name, "W4AFP8")) {
		W = new_args(arena, 4, I, CTQ_STRATEGY_GROUP, 128);
		A = dyn(new_args(arena, 8, F, CTQ_STRATEGY_TOKEN, 0));
		*format = "int-quantized";
	} else if (!strcmp(name, "FP8")) {
		W = new_args(arena, 8, F, CTQ_STRATEGY_TENSOR, 0);
		A = new_args(arena, 8, F, CTQ_STRATEGY_TENSOR, 0);
		if (A)
			A->observer = "static_minmax";
		*format = "float-quantized";
	} else if (!strcmp(name, "FP8_DYNAMIC")) {
		W = new_args(arena, 8, F, CTQ_STRATEGY_CHANNEL, -1);
		A = dyn(new_args(arena, 8, F, CTQ_STRATEGY_TOKEN, 0));
		*format = "float-quantized";
	} else if (!strcmp(name, "FP8_BLOCK")) {
		W = new_args(arena, 8, F, CTQ_STRATEGY_BLOCK, 0);
		if (W) {
			W->has_block = true;
			W->block[0] = W->block[1] = 128;
		}
		A = dyn(new_args(arena, 8, F, CTQ_STRATEGY_GROUP, 128));
		*format = "float-quantized";
	} else if (!strcmp(name, "NVFP4A16") || !strcmp(name, "NVFP4")) {
		W = new_args(arena, 4, F, CTQ_STRATEGY_TENSOR_GROUP, 16);
		if (W)
			W->scale_dtype = "float8_e4m3fn";
		if (!strcmp(name, "NVFP4")) {
			A = new_args(arena, 4, F, CTQ_STRATEGY_TENSOR_GROUP, 16);
			if (A) {
				A->dynamic = CTQ_DYNAMIC_LOCAL;
				A->observer = "static_minmax";
				A->scale_dtype = "float8_e4m3fn";
			}
		}
		*format = "nvfp4-pack-quantized";
	} else if (!strcmp(name, "MXFP4A16") || !strcmp(name, "MXFP4") ||
		   !strcmp(name, "MXFP8A16") || !strcmp(name, "MXFP8")) {
		int bits = name[2] == 'F' && name[4] == '8' ? 8 : 4;
		W = new_args(arena, bits, F, CTQ_STRATEGY_GROUP, 32);
		if (W)
			W->scale_dtype = W->zp_dtype = "uint8";
		if (strstr(name, "A16") == NULL) {
			A = dyn(new_args(arena, bits, F, CTQ_STRATEGY_GROUP, 32));
			if (A)
				A->scale_dtype = A->zp_dtype = "uint8";
		}
		*format = bits == 8 ? "mxfp8-quantized" : "mxfp4-pack-quantized";
	} else if (!strcmp(name, "MXFP4XFP8")) {
		/* 0.20: MXFP4 weights, dynamic FP8 activations per group of 128. */
		W = new_args(arena, 4, F, CTQ_STRATEGY_GROUP, 32);
		if (W)
			W->scale_dtype = W->zp_dtype = "uint8";
		A = dyn(new_args(arena, 8, F, CTQ_STRATEGY_GROUP, 128));
		*format = "mxfp4-pack-quantized";
	} else if (!strcmp(name, "MXFP6A16") || !strcmp(name, "MXFP6A8")) {
		/* 0.20: MXFP6 (FP6 E2M3) weights by 32 with uint8 (E8M0) scales;
		 * A8: dynamic MXFP8 activations. */
		W = new_args(arena, 6, F, CTQ_STRATEGY_GROUP, 32);
		if (W)
			W->scale_dtype = W->zp_dtype = "uint8";
		if (!strcmp(name, "MXFP6A8")) {
			A = dyn(new_args(arena, 8, F, CTQ_STRATEGY_GROUP, 32));
			if (A)
				A->scale_dtype = A->zp_dtype = "uint8";
		}
		*format = "mxfp6-pack-quantized";
	} else if (wnam) {
		/* W4A16, W8A16 (>= 0.16: group 128), W4A8 and the 0.18 set. */
		W = new_args(arena, w, I, CTQ_STRATEGY_GROUP, 128);
		if (a < 16)
			A = dyn(new_args(arena, a, I, CTQ_STRATEGY_TOKEN, 0));
		*format = a < 16 ? "int-quantized" : "pack-quantized";
	} else {
		return false;
	}
	s->weights = W;
	s->input = A;
	return true;
}
