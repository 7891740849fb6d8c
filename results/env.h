/* ctq environment capture for run manifests (DESIGN.md "Results"): the
 * host (OS, CPU model, cores, governor, memory), the build (compiler, the
 * flags the Makefile passed as CTQ_BUILD_FLAGS, CUDA on or off), the CUDA
 * runtime and cuBLAS versions this binary loaded, every GPU nvidia-smi
 * reports (name, capability, memory, clocks, power limit, ECC, persistence,
 * MIG, driver), and checkpoint provenance (tensor-file sha256 and the digest
 * of the quantization_config block).
 *
 * GPU details come from `nvidia-smi --query-gpu=... --format=csv` through
 * popen, so nothing here needs a CUDA context; where nvidia-smi is missing
 * the manifest says "none". The SM count, which nvidia-smi does not report,
 * is taken from the CUDA backend's description when the caller has one.
 *
 * What it is not: a monitor. Clocks are sampled once, when the manifest is
 * written; nothing here samples during a run.
 */
#ifndef CTQ_RESULTS_ENV_H
#define CTQ_RESULTS_ENV_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "core/status.h"

struct ctq_env_options {
	bool query_gpus;              /* run nvidia-smi (false: "gpus": "not queried") */
	const char *cuda_device_desc; /* the CUDA backend's describe() of device 0, or NULL */
};

/* Adds to manifest (borrowed, a JSON object): members of "host" (os,
 * cpu_model, cpu_logical, cpu_cores, cpu_governor, memory_bytes,
 * load_avg_1m), "build", "cuda" and "gpus". Never fails: what cannot be
 * read is written as "unknown" (allocation failures leave members out). */
void ctq_env_capture(cJSON *manifest, const struct ctq_env_options *opt);

/* Whether nvidia-smi lists at least one GPU (a cheap check that needs no
 * CUDA context). */
bool ctq_env_nvidia_smi_has_gpu(void);

/* Provenance of the checkpoint folder dir, recorded under the name shown
 * (display may differ from dir, e.g. a final run path for a temporary one):
 *   {"path", "quant_method", "quantization_config_sha256", "config_sha256",
 *    "files": [{"name", "bytes", "sha256"}]}
 * over every *.safetensors and *.safetensors.index.json file. The digest is
 * sha256 of the block as Python's json.dumps(block, sort_keys=True) writes
 * it (core/json_write.h), "none" without a quantization_config. *out is
 * owned by the caller. Errors: io-error, parse-error (config.json),
 * out-of-memory. */
enum ctq_status ctq_env_checkpoint(const char *dir, const char *display, cJSON **out,
				   struct ctq_error *err);

#endif
