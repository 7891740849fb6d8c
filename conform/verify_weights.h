/* ctq verify-weights: a quantized checkpoint's weights held against the
 * checkpoint it was made from. For every quantized module (the ct
 * profile's plan of QUANT, so that weight-only schemes resolve too) its
 * tensors are unpacked and dequantized (w^ = (q - z) * s, per channel or
 * per group: W8A8 int-quantized, pack-quantized int4 / int8 through
 * checkpoint/packed.h) and compared with the source weight: shape, rel-L2
 * ||w^ - w|| / ||w||, the largest absolute error, NaN / Inf, judged against
 * the policy's threshold for the module's scheme. Every other tensor of
 * the source must be in QUANT byte for byte, and QUANT may hold no tensor
 * that is neither a source tensor nor a quantized module's.
 *
 * What it catches: a checkpoint built with another scheme than its config
 * says, a transposed or mis-grouped scale, a dropped or extra tensor, a
 * module whose packed weights were shuffled. What it is not: an accuracy
 * measurement of the model (eval), or a kernel check (probe).
 */
#ifndef CTQ_CONFORM_VERIFY_WEIGHTS_H
#define CTQ_CONFORM_VERIFY_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/policy.h"
#include "core/status.h"

#define CTQ_VW_POLICY_FILE "policies/verify_weights.json"
#define CTQ_VW_MAX_SCHEMES 32

struct ctq_vw_policy {
	char scheme[CTQ_VW_MAX_SCHEMES][32]; /* (n) scheme names */
	double rel_l2_max[CTQ_VW_MAX_SCHEMES];
	int n;
	char source[CTQ_POLICY_SOURCE_MAX]; /* where the numbers came from */
};

/* The built-in policy (policies/verify_weights.json, embedded). */
void ctq_vw_policy_default(struct ctq_vw_policy *p);
/* Reads a policy file over p: entries of rel_l2_max replace or add.
 * Errors: io-error, parse-error, usage (a value that is not a number >= 0,
 * too many schemes). */
enum ctq_status ctq_vw_policy_load(struct ctq_vw_policy *p, const char *path,
				   struct ctq_error *err);

/* One checked module, or one tensor that failed the inventory. */
struct ctq_vw_row {
	const char *tensor;  /* the source tensor (module.weight), or the odd one */
	const char *module;  /* "" for an inventory row */
	const char *scheme;  /* the plan's scheme; "copy" / "extra" for inventory rows */
	int64_t N, K;
	double rel_l2, max_abs_err; /* NaN where not computed */
	int64_t nonfinite;          /* NaN or Inf in w^ or w */
	double rel_l2_max;          /* the threshold; < 0 when there is none */
	bool passed;
	const char *reason;         /* why it failed, or what passed */
};

struct ctq_vw_result {
	struct ctq_arena arena;
	struct ctq_vw_row *rows; /* (n_rows): modules in model order, then inventory failures */
	size_t n_rows, cap_rows;
	size_t n_modules, n_failed, n_copied; /* quantized modules checked; rows failed;
						* source tensors found identical */
	double rel_l2_min, rel_l2_max;       /* over the quantized modules that passed or not */
};

void ctq_vw_result_free(struct ctq_vw_result *r);

/* Checks QUANT against REF (model folders) under policy p; r is
 * initialised and filled (free it whatever the result). A failing check is
 * a row with passed false, not an error. Errors: those of opening QUANT
 * (ctq_target_open, ct profile) and REF (ctq_checkpoint_open), usage when
 * QUANT quantizes no module, out-of-memory. */
enum ctq_status ctq_verify_weights(const char *quant, const char *ref,
				   const struct ctq_vw_policy *p, struct ctq_vw_result *r,
				   struct ctq_error *err);

#endif
