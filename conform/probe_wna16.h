/* Probes of weight-only kernels (ABI version 2's gemm_wna16,
 * include/ctq_kernel_plugin.h): one layer geometry at a time, BF16
 * activations of the W8A8 probe's patterns (conform/probe.h) times int4 /
 * int8 weights in compressed-tensors' pack-quantized layout, per channel
 * or per group, symmetric or with zero points. The weights are synthetic
 * codes (random, the grid's extremes, a constant, a zero output channel)
 * with scales of a typical linear, or real float weights quantized by
 * ctq's producer (checkpoint/quantize_wna16.h). Each run reports NaN/Inf,
 * an all-zero output, the worst element, rel-L2 to the dequantized CPU
 * reference (reference/ref_wna16.h: the kernel's error) and rel-L2 to the
 * FP64 product with the unquantized weights (the quantization error; the
 * dequantized ones for synthetic codes), bit-exact outputs where the
 * plug-in declares WNA16_EXACT, judged by the probe policy. Results are
 * struct ctq_probe_result rows, written and tallied as the W8A8 ones;
 * kernel_path names the layout (w4a16-g128, w8a16, ...).
 *
 * What it is not: a probe of ctq's own backends (none runs weight-only
 * layers) or of the model runner. */
#ifndef CTQ_CONFORM_PROBE_WNA16_H
#define CTQ_CONFORM_PROBE_WNA16_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "conform/probe.h"
#include "conform/probe_session.h"
#include "core/status.h"
#include "include/ctq_kernel_plugin.h"

/* One weight-only layout: w{4|8}a16[-asym][-gG] (no -g: per channel). */
struct ctq_wna16_cfg {
	int bits;
	int64_t group_size; /* 0: per channel */
	bool asym;
	char name[32];
};

bool ctq_wna16_cfg_parse(const char *s, struct ctq_wna16_cfg *out);
/* The layouts probed by default for a plug-in with capability bits caps:
 * w4a16-g128, w4a16-asym-g128 and w8a16, those it declares; at most 3
 * into out. Returns the count. */
int ctq_wna16_cfg_defaults(uint32_t caps, struct ctq_wna16_cfg *out);
/* Whether caps declare c, and, for a group layout, whether G divides K. */
bool ctq_wna16_cfg_declared(uint32_t caps, const struct ctq_wna16_cfg *c);
bool ctq_wna16_cfg_fits(const struct ctq_wna16_cfg *c, int64_t K);

/* At most this many layouts a run. */
#define CTQ_WNA16_MAX_LAYOUTS 8

/* The weight-only layouts a probe or benchmark of plug-in pt (loaded from
 * path) takes into cfgs: list (--wna16 A,B,...), each one pt declares, or,
 * list NULL, the defaults it declares (ctq_wna16_cfg_defaults). *n is 0
 * for a plug-in without gemm_wna16 and no list. Usage errors: a list for a
 * plug-in without gemm_wna16; an empty list or entry, more than
 * CTQ_WNA16_MAX_LAYOUTS, a layout that does not parse or that pt does not
 * declare; a gemm_wna16 plug-in that declares none of the defaults. */
enum ctq_status ctq_wna16_layouts(const struct ctq_kernel_plugin *pt, const char *path, const char *list,
				  struct ctq_wna16_cfg *cfgs, int *n, struct ctq_error *err);

/* One (layer, layout, weights, acts, M) on plug-in backend b (a version-2
 * plug-in with gemm_wna16; ctq_backend_plugin). wp CTQ_PW_CHECKPOINT needs
 * L->w. Resource failures and the plug-in's failures are returned; a
 * failing probe is a result with passed false. */
enum ctq_status ctq_probe_wna16_run(struct ctq_backend *b, const struct ctq_probe_layer *L,
				    const struct ctq_wna16_cfg *c, enum ctq_probe_weights wp,
				    enum ctq_probe_acts ap, int64_t M, uint64_t seed,
				    const struct ctq_probe_policy *policy, struct ctq_probe_result *r,
				    struct ctq_error *err);

/* Every selected (layout, weights, acts, M) of layer L on backend b into
 * session S (rows, tallies, on_result), the layouts cfgs (n_cfg) that fit
 * L's K; *n_skipped counts what was not run: a (layer, layout) pair whose
 * group does not divide K, and zero-rows at M = 1 (its one row is zero, so
 * the output is the bias whatever the weights: a pass would prove
 * nothing). */
enum ctq_status ctq_probe_wna16_layer(struct ctq_probe_session *S, struct ctq_backend *b,
				      const struct ctq_probe_layer *L,
				      const struct ctq_wna16_cfg *cfgs, int n_cfg,
				      size_t *n_skipped, struct ctq_error *err);

/* The pack-quantized modules of model folder dir (its ct plan: weight-only
 * schemes are not executed by strict, but their weights are read and
 * probed) with their stored weights, under S->real_asel and S->ms, on
 * plug-in backend b; the FP64 yardstick is the dequantized weight. A
 * module of another format, or a layout the plug-in does not declare, is
 * counted in *n_skipped. Errors: those of opening dir, a plan entry in
 * error (its status, the module named), ctq_packed_read's, usage when no
 * module was probed. */
enum ctq_status ctq_probe_wna16_model(struct ctq_probe_session *S, struct ctq_backend *b,
				      const char *dir, size_t *n_skipped, struct ctq_error *err);

#endif
