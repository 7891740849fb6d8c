/* A session of kernel probes (ctq probe): the layer geometries (a preset or
 * K:N), the backends probed, and every selected (layer, weights, acts, M)
 * combination run on each of them (conform/probe.h ctq_probe_run_many),
 * from synthetic geometries or from a checkpoint's linear modules with
 * their real weights; the tallies and one JSON row per result
 * (probe.json). Each result also goes to the caller's on_result, in order
 * (ctq probe prints it and writes probe.csv's row, families/probe.h). */
#ifndef CTQ_CONFORM_PROBE_SESSION_H
#define CTQ_CONFORM_PROBE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "conform/probe.h"
#include "core/status.h"

struct cJSON;

/* Layer geometries: a preset (qwen3-4b, qwen3-0.6b, tiny: qkv_proj,
 * o_proj, gate_up_proj, down_proj) or a list of K:N, each 1 to 2^20, named
 * "K:N". */
struct ctq_probe_shapes {
	struct ctq_probe_layer *v;
	size_t n;
	char (*names)[48]; /* the K:N names of a list; NULL for a preset */
};

/* Parses s into out (zeroed first). Errors: usage-error (not a preset or a
 * K:N list; path s), out-of-memory. ctq_probe_shapes_free releases out,
 * also after an error. */
enum ctq_status ctq_probe_shapes_parse(const char *s, struct ctq_probe_shapes *out,
				       struct ctq_error *err);
void ctq_probe_shapes_free(struct ctq_probe_shapes *s);

#define CTQ_PROBE_MAX_BACKENDS 3

/* Opens the backends probed, in order: the reference (use_ref), CUDA
 * device 0 (use_cuda), the kernel plug-in kernel_lib (non-NULL); defects
 * and numerics are set on ctq's own (a plug-in implements ctq's numerics
 * and plants its own defects). *n counts those opened, which the caller
 * closes, also on error. */
enum ctq_status ctq_probe_backends_open(struct ctq_backend *b, int *n, bool use_ref, bool use_cuda,
					const char *kernel_lib, unsigned defects,
					enum ctq_act_numerics numerics, struct ctq_error *err);

struct ctq_probe_session {
	/* set by the caller */
	struct ctq_backend *backends; /* at most CTQ_PROBE_MAX_BACKENDS */
	int n_backends;
	const int64_t *ms; /* token counts */
	size_t n_m;
	uint64_t seed;
	const struct ctq_probe_policy *policy;
	bool wsel[CTQ_PW_COUNT], asel[CTQ_PA_COUNT]; /* synthetic patterns probed */
	bool real_asel[CTQ_PA_COUNT];                /* acts for a checkpoint's weights */
	/* each probe's inputs and oracle computed after the previous probe
	 * ran, not beside it (ctq_probe_run_jobs' overlap): for a backend
	 * that forks (a CPU plug-in), and to compare the two in tests */
	bool serial;
	/* each result, as it comes (may be NULL) */
	void (*on_result)(void *ctx, const struct ctq_probe_result *r);
	void *ctx;
	/* filled */
	struct cJSON *rows; /* probe.json: ctq_probe_result_json of each result */
	size_t passed, failed;
};

/* Starts S's rows and tallies (the caller's fields are kept). Errors:
 * out-of-memory. */
enum ctq_status ctq_probe_session_init(struct ctq_probe_session *S, struct ctq_error *err);
/* Frees the rows and the probes' host buffers (ctq_probe_release). */
void ctq_probe_session_free(struct ctq_probe_session *S);

/* Every selected (weights, acts, M) of layer L on every backend; the
 * oracle once per combination, the weights once per (weights, acts), the
 * next combination's inputs and oracle computed while one runs on the
 * backends unless S->serial (conform/probe.h ctq_probe_run_jobs). */
enum ctq_status ctq_probe_session_layer(struct ctq_probe_session *S, const struct ctq_probe_layer *L,
					const bool *wsel, const bool *asel, struct ctq_error *err);
/* The linear modules of model folder dir with their real weights (W8A8 as
 * stored, BF16 quantized per channel) under real_asel, then the synthetic
 * patterns on each distinct (K, N) in order of appearance. A plan entry in
 * error fails with its status, the module named. */
enum ctq_status ctq_probe_session_model(struct ctq_probe_session *S, const char *dir,
					struct ctq_error *err);

/* One result as probe.json's row (quant_rel_l2 null when NaN; the
 * bit-exact counts where checked; reason when failed). NULL when out of
 * memory. */
struct cJSON *ctq_probe_result_json(const struct ctq_probe_result *r);

/* The manifest's "probe" object: what was probed and the tallies. */
struct ctq_probe_summary {
	const char *backend;       /* --backend as given, "none" for a plug-in alone */
	const char *kernel_lib;    /* or NULL */
	const char *kernel_plugin; /* the plug-in's name, with kernel_lib */
	enum ctq_act_numerics numerics;
	const char *model; /* or NULL */
	long seed;
	const char *policy; /* where the thresholds came from */
};
struct cJSON *ctq_probe_summary_json(const struct ctq_probe_summary *s,
				     const struct ctq_probe_session *S);

#endif
