/* ctq dispatch knobs: the environment variables that steer kernel choice
 * for tuning and debugging, each read once, validated, and recorded in the
 * run manifest (results/env.c). The one place that reads them: kernels and
 * backends take the struct, never getenv.
 *
 * What it is not: configuration. A run's meaning comes from its flags and
 * files; these only pick among implementations that must agree (or, for
 * CTQ_SANITIZE_MEMSET_CUBLAS, help a sanitizer). */
#ifndef CTQ_BACKEND_KNOBS_H
#define CTQ_BACKEND_KNOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cJSON cJSON;

/* Flags are on when the variable is set (to any value, "" included), as
 * before this struct existed; numbers must be decimal integers in range
 * (unset or "" keeps the default); CTQ_ARCH takes one of its names. */
struct ctq_knobs {
	int arch;                    /* CTQ_ARCH: dispatch as on this architecture, as
				      * compute capability x 10 (sm_80 80, sm_86 86,
				      * sm_89 89, sm_90a 90, sm_100 100, sm_120 120;
				      * 0 = the GPU's own): every choice made by compute
				      * capability (the W8A8 GEMM path, PDL) takes that
				      * architecture's answer, so one GPU runs each
				      * generation's code (kernels/arch.h) */
	int sm90_tile;               /* CTQ_SM90_TILE: forced sm90 tile, -1 = pick by shape */
	int sm90_small_bn;           /* CTQ_SM90_SMALL_BN: 32, 64 or 160, the N
				      * tile of the small-M family (0 = pick by N) */
	int64_t gemv_max_m;          /* CTQ_GEMV_MAX_M: largest M for the W8A8 GEMV where
				      * a tensor-core kernel takes the operands (default
				      * 1; kernels/gemm_w8a8.cu) */
	bool attention_simple;       /* CTQ_ATTENTION_SIMPLE: per-token attention kernel only */
	bool attention_no_mma;       /* CTQ_ATTENTION_NO_MMA: no tensor-core prefill */
	bool attention_no_gqa;       /* CTQ_ATTENTION_NO_GQA: no chunked GQA decode kernel */
	bool no_pdl;                 /* CTQ_NO_PDL: no programmatic dependent launch
				      * (kernels/pdl.cuh) */
	bool no_gemv_bf16;           /* CTQ_NO_GEMV_BF16: BF16 linears through cuBLAS only */
	bool sanitize_memset_cublas; /* CTQ_SANITIZE_MEMSET_CUBLAS: zero cuBLAS outputs
				      * first (compute-sanitizer initcheck) */
};

/* The knobs, read from the environment on the first call (thread-safe);
 * never NULL. An invalid value is replaced by its default here and
 * reported by ctq_knobs_check. */
const struct ctq_knobs *ctq_knobs(void);

/* CTQ_OK, or a usage error naming the first invalid variable and its value
 * (e.g. "CTQ_GEMV_MAX_M": "is \"abc\"; expected an integer 0..2^62").
 * Backends and launchers call it before they dispatch. */
enum ctq_status ctq_knobs_check(struct ctq_error *err);

/* Adds (or replaces) "knobs" in obj: every variable by name, its value as set (a string)
 * or null when unset, and "invalid" with the check's message when a value
 * was rejected. */
void ctq_knobs_to_json(cJSON *obj);

/* Whether the user chose how OpenMP threads wait (OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT set): the program makes them wait passively otherwise
 * (harness/main.c; docs/architecture.md, "The reference backend's threads"). */
bool ctq_knobs_omp_wait_chosen(void);

/* The rest of the environment ctq reads, which steers where things are,
 * not what a kernel does (docs/knobs.md, "Other environment variables").
 * Read at each call (tests and the plotter's child set them at run time),
 * never cached. */
enum ctq_env_var {
	CTQ_ENV_REVISION,        /* CTQ_REVISION: the git revision of a copied tree */
	CTQ_ENV_GNUPLOT,         /* CTQ_GNUPLOT: the gnuplot program, or "none" */
	CTQ_ENV_DEPS_PREFIX,     /* DEPS_PREFIX: packages unpacked for an offline host */
	CTQ_ENV_LD_LIBRARY_PATH, /* LD_LIBRARY_PATH: extended for that gnuplot's child */
	CTQ_ENV_TMPDIR,          /* TMPDIR: where conformance cases get scratch folders */
	CTQ_ENV_COUNT
};
/* The variable's value, NULL when unset. */
const char *ctq_env(enum ctq_env_var v);
/* Its name ("CTQ_REVISION", ...). */
const char *ctq_env_name(enum ctq_env_var v);

#ifdef __cplusplus
}
#endif

#endif
