/* Which implementation each op ran: the named kernel paths. A qualification
 * report must say which code it qualified, so every dispatcher that
 * chooses among implementations (kernels/: the W8A8 GEMM by compute
 * capability and shape, the BF16 linear, attention) notes the path it took
 * here, and the run directory's manifest lists, per op, the paths taken
 * during that run ("kernel_paths"; results/run.c). The names are stable:
 * they appear in manifests, probe.csv and bench_gemm.csv.
 *
 * Counted per host-side dispatch: a CUDA graph counts the calls it
 * captured, not its replays. Host C (no CUDA), so a build without CUDA
 * reads and prints the names too.
 *
 * What it is not: the choice itself (each dispatcher in kernels/ owns its
 * rule) or a switch (CTQ_ARCH in backend/knobs.h forces the choices of
 * another GPU generation). */
#ifndef CTQ_BACKEND_PATHS_H
#define CTQ_BACKEND_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cJSON cJSON;

/* The ops with more than one implementation. */
enum ctq_kop {
	CTQ_KOP_GEMM_W8A8,  /* the W8A8 linear's int8 GEMM + fused epilogue */
	CTQ_KOP_LINEAR_BF16, /* the BF16 linear */
	CTQ_KOP_ATTENTION,  /* attention over the KV cache */
	CTQ_KOP_LAUNCH,     /* how the small kernels of a step launch */
	CTQ_KOP_COUNT
};

/* The W8A8 GEMM paths (kernels/gemm_w8a8.cu dispatches). */
enum ctq_gemm_path {
	CTQ_GEMM_PATH_SM90_WGMMA, /* "sm90-wgmma": Hopper wgmma + TMA (kernels/gemm_w8a8_sm90.cu) */
	CTQ_GEMM_PATH_SM80_MMA,   /* "sm80-mma": mma.sync + ldmatrix + cp.async (gemm_w8a8_sm80.cu) */
	CTQ_GEMM_PATH_GEMV,       /* "gemv": weight-streaming, M <= 16 (gemv_w8a8.cu) */
	CTQ_GEMM_PATH_DP4A,       /* "dp4a": the first-version tiled kernel, any operands */
	CTQ_GEMM_PATH_COUNT
};

/* The BF16 linear's paths. */
enum ctq_bf16_path { CTQ_BF16_PATH_CUBLAS, CTQ_BF16_PATH_GEMV, CTQ_BF16_PATH_COUNT };

/* Attention's kernels (kernels/attention.cu). */
enum ctq_att_path {
	CTQ_ATT_PATH_PREFILL_MMA,  /* "prefill-mma": tensor-core tiles of consecutive tokens */
	CTQ_ATT_PATH_DECODE_SPLIT, /* "decode-split": key chunks merged by a combine kernel */
	CTQ_ATT_PATH_GQA,          /* "gqa": one block per (token, KV head, chunk) */
	CTQ_ATT_PATH_SIMPLE,       /* "simple": one block per (token, head) */
	CTQ_ATT_PATH_COUNT
};

/* How the small kernels of a step launch. */
enum ctq_launch_path { CTQ_LAUNCH_PDL, CTQ_LAUNCH_PLAIN, CTQ_LAUNCH_PATH_COUNT };

/* "gemm_w8a8", "linear_bf16", "attention", "launch". */
const char *ctq_kop_name(enum ctq_kop op);
/* The stable name of path p of op ("sm80-mma", "cublas", ...); NULL when p
 * is out of range. */
const char *ctq_kpath_name(enum ctq_kop op, int p);
/* "sm90-wgmma", "sm80-mma", "gemv", "dp4a". */
const char *ctq_gemm_path_name(enum ctq_gemm_path p);
/* false when s names no W8A8 GEMM path. */
bool ctq_gemm_path_parse(const char *s, enum ctq_gemm_path *out);

/* Counts one dispatch of op on path p (thread-safe, lock-free). */
void ctq_kpath_note(enum ctq_kop op, int p);

/* The counts so far (a snapshot to subtract, see ctq_kpaths_to_json). */
#define CTQ_KPATH_MAX 4
struct ctq_kpath_counts {
	uint64_t n[CTQ_KOP_COUNT][CTQ_KPATH_MAX];
};
void ctq_kpaths_snapshot(struct ctq_kpath_counts *out);

/* Adds "kernel_paths" to obj: for each op that ran since `since` (NULL:
 * since the process began), the names of the paths it took, in the order
 * of the enums above, e.g. {"gemm_w8a8": ["sm80-mma", "gemv"], "launch":
 * ["plain"]}; an empty object when no GPU op ran. */
void ctq_kpaths_to_json(cJSON *obj, const struct ctq_kpath_counts *since);

/* The same as one line, "gemm_w8a8 sm80-mma+gemv; attention prefill-mma",
 * or "" when no GPU op ran, into buf (cap bytes). */
void ctq_kpaths_line(char *buf, size_t cap, const struct ctq_kpath_counts *since);

#ifdef __cplusplus
}
#endif

#endif
