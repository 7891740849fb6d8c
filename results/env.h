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
 * written; nothing here samples during a run. The host's load is two marks,
 * at a run's start and end (ctq_host_load_*, recorded by results/run.c as
 * "host_load").
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

/* ---- the host's load around a run ------------------------------------------- */

/* The aggregate "cpu" line of /proc/stat, in clock ticks (USER_HZ). */
struct ctq_cpu_ticks {
	unsigned long long busy;  /* user + nice + system + irq + softirq (guest is in user) */
	unsigned long long steal; /* taken by the hypervisor for other guests */
	unsigned long long total; /* busy + idle + iowait + steal */
};

/* Parses the "cpu " line of the text of /proc/stat into *out; false when
 * the text has no such line with at least the four first fields (older
 * kernels lack iowait .. steal: they count 0). Pure. */
bool ctq_proc_stat_parse(const char *text, struct ctq_cpu_ticks *out);

/* One end of a run: the clock, /proc/loadavg's 1-minute load, the ticks of
 * /proc/stat and this process's own CPU time (getrusage: itself and its
 * waited-for children, in seconds). ok_* say what could be read. */
struct ctq_host_load_mark {
	double wall_s, load_1m, self_cpu_s;
	struct ctq_cpu_ticks cpu;
	bool ok_load, ok_cpu;
};

/* What a run shared its host with between two marks, as fractions of all
 * the host's CPU time (the total ticks of /proc/stat between the marks,
 * i.e. the wall time times the cores the kernel counts):
 *   other_cpu = (busy ticks / hz - this process's own CPU seconds) / (total ticks / hz),
 *   steal     = steal ticks / total ticks.
 * NaN where a mark could not read /proc/stat or no tick passed. hz is
 * sysconf(_SC_CLK_TCK). Pure. */
struct ctq_host_load {
	double other_cpu, steal;
};
void ctq_host_load_between(const struct ctq_host_load_mark *a, const struct ctq_host_load_mark *b,
			   double hz, struct ctq_host_load *out);

/* Reads a mark now. */
void ctq_host_load_mark(struct ctq_host_load_mark *m);

/* Adds "host_load" to manifest from the marks taken at a run's start (a)
 * and end (b): {"load_avg_1m_start", "load_avg_1m_end", "wall_s",
 * "cpus", "self_cpu_s", "other_cpu_fraction", "steal_fraction"}; what
 * could not be read is "unknown". Fractions as ctq_host_load_between. */
void ctq_host_load_to_json(cJSON *manifest, const struct ctq_host_load_mark *a,
			   const struct ctq_host_load_mark *b);

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
