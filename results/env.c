/* ctq environment capture (see env.h). */
#include "core/hf_config.h"
#include "core/fileio.h"
#include "results/env.h"
#include "core/arena.h"
#include "backend/knobs.h"
#include "core/json.h"
#include "core/json_write.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "reference/ref_ops.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef CTQ_BUILD_FLAGS
#define CTQ_BUILD_FLAGS "unknown (built without -DCTQ_BUILD_FLAGS)"
#endif

#if defined(__clang__)
#define CTQ_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define CTQ_COMPILER "gcc " __VERSION__
#else
#define CTQ_COMPILER "unknown"
#endif

#ifdef CTQ_HAVE_CUDA
/* The CUDA runtime and cuBLAS report their own versions through C-ABI
 * functions that need no device. Their headers are C++-leaning and not on
 * the cc include path, so the two prototypes are declared here (cudaError_t,
 * cublasStatus_t and libraryPropertyType are C enums: int-sized). */
int cudaRuntimeGetVersion(int *version);
int cudaDriverGetVersion(int *version);
int cublasGetProperty(int type, int *value);
#endif

/* The value of "key<spaces>: value" lines in a /proc file, first match. */
static bool proc_value(const char *file, const char *key, char *buf, size_t cap)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return false;
	char line[512];
	size_t kn = strlen(key);
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		if (strncmp(line, key, kn) != 0)
			continue;
		const char *c = line + kn;
		while (*c == ' ' || *c == '\t')
			c++;
		if (*c != ':')
			continue;
		c++;
		while (*c == ' ')
			c++;
		snprintf(buf, cap, "%s", c);
		size_t n = strlen(buf);
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
		found = true;
	}
	fclose(f);
	return found;
}

/* Physical cores: distinct (physical id, core id) pairs of /proc/cpuinfo;
 * 0 when the file does not say. */
static long physical_cores(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	long pairs[1024][2];
	long n = 0, phys = -1;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		long v;
		if (sscanf(line, "physical id : %ld", &v) == 1) {
			phys = v;
		} else if (sscanf(line, "core id : %ld", &v) == 1) {
			long i;
			for (i = 0; i < n; i++)
				if (pairs[i][0] == phys && pairs[i][1] == v)
					break;
			if (i == n && n < 1024) {
				pairs[n][0] = phys;
				pairs[n][1] = v;
				n++;
			}
		}
	}
	fclose(f);
	return n;
}

static void os_name(char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *f = fopen("/etc/os-release", "r");
	if (f) {
		char line[512];
		while (fgets(line, sizeof line, f)) {
			if (strncmp(line, "PRETTY_NAME=", 12) != 0)
				continue;
			char *v = line + 12;
			size_t n = strlen(v);
			while (n && (v[n - 1] == '\n' || v[n - 1] == '"'))
				v[--n] = '\0';
			if (*v == '"')
				v++;
			snprintf(buf, cap, "%s", v);
			break;
		}
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, cap, "unknown");
}

static cJSON *object_member(cJSON *parent, const char *key)
{
	cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key);
	if (cJSON_IsObject(o))
		return o;
	cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
	return cJSON_AddObjectToObject(parent, key);
}

static void set_string(cJSON *o, const char *key, const char *v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(o, key);
	cJSON_AddStringToObject(o, key, v && *v ? v : "unknown");
}

static void capture_host(cJSON *m)
{
	cJSON *host = object_member(m, "host");
	if (!host)
		return;
	char buf[512];
	os_name(buf, sizeof buf);
	set_string(host, "os", buf);
	if (!proc_value("/proc/cpuinfo", "model name", buf, sizeof buf))
		snprintf(buf, sizeof buf, "unknown");
	set_string(host, "cpu_model", buf);
	/* which code the CPU reference's GEMMs ran (reference/ref_gemm.c) */
	set_string(host, "reference_simd", ctq_ref_simd());
	long logical = sysconf(_SC_NPROCESSORS_ONLN), cores = physical_cores();
	cJSON_DeleteItemFromObjectCaseSensitive(host, "cpu_logical");
	cJSON_AddNumberToObject(host, "cpu_logical", (double)logical);
	cJSON_DeleteItemFromObjectCaseSensitive(host, "cpu_cores");
	cJSON_AddNumberToObject(host, "cpu_cores", (double)(cores > 0 ? cores : logical));
	ctq_read_cmd_line("cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null", buf,
		  sizeof buf);
	set_string(host, "cpu_governor", buf);
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	cJSON_DeleteItemFromObjectCaseSensitive(host, "memory_bytes");
	cJSON_AddNumberToObject(host, "memory_bytes",
				pages > 0 && page > 0 ? (double)pages * (double)page : 0);
	double load = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = -1;
		fclose(f);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(host, "load_avg_1m");
	if (load >= 0)
		cJSON_AddNumberToObject(host, "load_avg_1m", load);
	else
		cJSON_AddStringToObject(host, "load_avg_1m", "unknown");
}

static void capture_build(cJSON *m)
{
	cJSON_DeleteItemFromObjectCaseSensitive(m, "build");
	cJSON *b = cJSON_AddObjectToObject(m, "build");
	if (!b)
		return;
	cJSON_AddStringToObject(b, "compiler", CTQ_COMPILER);
	cJSON_AddStringToObject(b, "flags", CTQ_BUILD_FLAGS);
#ifdef CTQ_HAVE_CUDA
	cJSON_AddBoolToObject(b, "cuda", true);
#else
	cJSON_AddBoolToObject(b, "cuda", false);
#endif
#ifdef __SANITIZE_ADDRESS__
	cJSON_AddBoolToObject(b, "sanitizers", true);
#else
	cJSON_AddBoolToObject(b, "sanitizers", false);
#endif
}

static void capture_cuda(cJSON *m)
{
	cJSON_DeleteItemFromObjectCaseSensitive(m, "cuda");
#ifdef CTQ_HAVE_CUDA
	cJSON *c = cJSON_AddObjectToObject(m, "cuda");
	if (!c)
		return;
	char buf[64];
	int v = 0;
	if (cudaRuntimeGetVersion(&v) == 0 && v > 0)
		snprintf(buf, sizeof buf, "%d.%d", v / 1000, (v % 1000) / 10);
	else
		snprintf(buf, sizeof buf, "unknown");
	cJSON_AddStringToObject(c, "runtime_version", buf);
	v = 0;
	if (cudaDriverGetVersion(&v) == 0 && v > 0)
		snprintf(buf, sizeof buf, "%d.%d", v / 1000, (v % 1000) / 10);
	else
		snprintf(buf, sizeof buf, "none");
	cJSON_AddStringToObject(c, "driver_api_version", buf);
	int ma = 0, mi = 0, pa = 0;
	/* libraryPropertyType: MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2. */
	if (cublasGetProperty(0, &ma) == 0 && cublasGetProperty(1, &mi) == 0 &&
	    cublasGetProperty(2, &pa) == 0)
		snprintf(buf, sizeof buf, "%d.%d.%d", ma, mi, pa);
	else
		snprintf(buf, sizeof buf, "unknown");
	cJSON_AddStringToObject(c, "cublas_version", buf);
#else
	cJSON_AddStringToObject(m, "cuda", "none (built without CUDA)");
#endif
}

/* nvidia-smi fields, in query order; numeric ones become JSON numbers. */
static const struct {
	const char *query, *key;
	bool numeric;
} gpu_fields[] = {
	{"index", "index", true},
	{"name", "name", false},
	{"uuid", "uuid", false},
	{"pci.bus_id", "pci_bus_id", false},
	{"compute_cap", "compute_capability", false},
	{"memory.total", "memory_total_mib", true},
	{"clocks.sm", "clock_sm_mhz", true},
	{"clocks.mem", "clock_mem_mhz", true},
	{"clocks.max.sm", "clock_sm_max_mhz", true},
	{"clocks.max.mem", "clock_mem_max_mhz", true},
	{"clocks.applications.graphics", "clock_sm_application_mhz", true},
	{"power.limit", "power_limit_w", true},
	{"temperature.gpu", "temperature_c", true},
	{"pstate", "pstate", false},
	{"ecc.mode.current", "ecc", false},
	{"persistence_mode", "persistence_mode", false},
	{"mig.mode.current", "mig_mode", false},
	{"driver_version", "driver_version", false},
};
#define N_GPU_FIELDS (sizeof gpu_fields / sizeof *gpu_fields)

/* Runs nvidia-smi with the fields [0, n) and collects its output; false
 * when it is missing or refuses the query (an older nvidia-smi may not know
 * a field: the caller retries with fewer). */
static bool smi_query(size_t n, struct ctq_strbuf *out)
{
	struct ctq_strbuf cmd;
	ctq_strbuf_init(&cmd);
	ctq_strbuf_append(&cmd, "nvidia-smi --query-gpu=");
	for (size_t i = 0; i < n; i++)
		ctq_strbuf_printf(&cmd, "%s%s", i ? "," : "", gpu_fields[i].query);
	ctq_strbuf_append(&cmd, " --format=csv,noheader,nounits 2>/dev/null");
	ctq_strbuf_reset(out);
	FILE *p = cmd.oom ? NULL : popen(cmd.data, "r");
	ctq_strbuf_free(&cmd);
	if (!p)
		return false;
	char buf[1024];
	size_t k;
	while ((k = fread(buf, 1, sizeof buf, p)) > 0)
		ctq_strbuf_appendn(out, buf, k);
	int status = pclose(p);
	return status == 0 && out->len > 0 && !out->oom;
}

bool ctq_env_nvidia_smi_has_gpu(void)
{
	struct ctq_strbuf out;
	ctq_strbuf_init(&out);
	bool ok = smi_query(1, &out);
	ctq_strbuf_free(&out);
	return ok;
}

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\r'))
		s[--n] = '\0';
	size_t i = 0;
	while (s[i] == ' ')
		i++;
	memmove(s, s + i, strlen(s + i) + 1);
}

static void capture_gpus(cJSON *m, const struct ctq_env_options *opt)
{
	cJSON_DeleteItemFromObjectCaseSensitive(m, "gpus");
	cJSON_DeleteItemFromObjectCaseSensitive(m, "gpu_driver_version");
	if (!opt->query_gpus) {
		cJSON_AddStringToObject(m, "gpus", "not queried");
		return;
	}
	struct ctq_strbuf out;
	ctq_strbuf_init(&out);
	/* Full query first; then the fields every nvidia-smi since 2015 knows
	 * (index .. memory.total without compute_cap, which came later). */
	size_t n = N_GPU_FIELDS;
	bool ok = smi_query(n, &out);
	if (!ok) {
		n = 4;
		ok = smi_query(n, &out);
	}
	if (!ok) {
		ctq_strbuf_free(&out);
		cJSON_AddStringToObject(m, "gpus", "none");
		cJSON_AddStringToObject(m, "gpu_driver_version", "none");
		if (opt->cuda_device_desc)
			cJSON_AddStringToObject(m, "cuda_device", opt->cuda_device_desc);
		return;
	}
	cJSON *arr = cJSON_AddArrayToObject(m, "gpus");
	char driver[64] = "unknown";
	char *save = NULL;
	for (char *line = strtok_r(out.data, "\n", &save); line && arr;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *g = cJSON_CreateObject();
		if (!g)
			break;
		char *fs = NULL, *f = strtok_r(line, ",", &fs);
		for (size_t i = 0; i < n && f; i++, f = strtok_r(NULL, ",", &fs)) {
			trim(f);
			char *end;
			double v = strtod(f, &end);
			if (gpu_fields[i].numeric && end != f && !*end)
				cJSON_AddNumberToObject(g, gpu_fields[i].key, v);
			else
				cJSON_AddStringToObject(g, gpu_fields[i].key, f);
			if (!strcmp(gpu_fields[i].key, "driver_version"))
				snprintf(driver, sizeof driver, "%s", f);
		}
		/* nvidia-smi has no SM count; the CUDA backend's description of
		 * device 0 ("NAME (sm_90, 132 SMs, 139.8 GiB)") does. */
		const cJSON *idx = cJSON_GetObjectItemCaseSensitive(g, "index");
		const char *sms = opt->cuda_device_desc ? strstr(opt->cuda_device_desc, " SMs") : NULL;
		if (sms && cJSON_IsNumber(idx) && idx->valuedouble == 0) {
			const char *c = sms;
			while (c > opt->cuda_device_desc && c[-1] >= '0' && c[-1] <= '9')
				c--;
			cJSON_AddNumberToObject(g, "sms", atof(c));
		} else {
			cJSON_AddStringToObject(g, "sms", "unknown");
		}
		cJSON_AddItemToArray(arr, g);
	}
	ctq_strbuf_free(&out);
	cJSON_AddStringToObject(m, "gpu_driver_version", driver);
	if (opt->cuda_device_desc)
		cJSON_AddStringToObject(m, "cuda_device", opt->cuda_device_desc);
}

void ctq_env_capture(cJSON *manifest, const struct ctq_env_options *opt)
{
	static const struct ctq_env_options none = {0};
	if (!manifest)
		return;
	if (!opt)
		opt = &none;
	capture_host(manifest);
	capture_build(manifest);
	capture_cuda(manifest);
	capture_gpus(manifest, opt);
	ctq_knobs_to_json(manifest);
}

/* ---- the host's load around a run ------------------------------------------- */

bool ctq_proc_stat_parse(const char *text, struct ctq_cpu_ticks *out)
{
	memset(out, 0, sizeof *out);
	for (const char *line = text; line && *line;) {
		if (!strncmp(line, "cpu ", 4)) {
			/* user nice system idle iowait irq softirq steal guest guest_nice */
			unsigned long long v[8] = {0};
			int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
				       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
			if (n < 4)
				return false;
			out->busy = v[0] + v[1] + v[2] + v[5] + v[6];
			out->steal = v[7];
			out->total = out->busy + v[3] + v[4] + v[7];
			return true;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return false;
}

void ctq_host_load_between(const struct ctq_host_load_mark *a, const struct ctq_host_load_mark *b,
			   double hz, struct ctq_host_load *out)
{
	out->other_cpu = out->steal = NAN;
	if (!a->ok_cpu || !b->ok_cpu || !(hz > 0) || b->cpu.total <= a->cpu.total ||
	    b->cpu.busy < a->cpu.busy || b->cpu.steal < a->cpu.steal)
		return;
	double total = (double)(b->cpu.total - a->cpu.total);
	double busy_s = (double)(b->cpu.busy - a->cpu.busy) / hz;
	double other = busy_s - (b->self_cpu_s - a->self_cpu_s);
	out->other_cpu = (other > 0 ? other : 0) / (total / hz);
	out->steal = (double)(b->cpu.steal - a->cpu.steal) / total;
}

void ctq_host_load_mark(struct ctq_host_load_mark *m)
{
	memset(m, 0, sizeof *m);
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	m->wall_s = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		m->ok_load = fscanf(f, "%lf", &m->load_1m) == 1;
		fclose(f);
	}
	char buf[512]; /* the "cpu " line comes first */
	f = fopen("/proc/stat", "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
		m->ok_cpu = ctq_proc_stat_parse(buf, &m->cpu);
	}
	struct rusage self, kids;
	if (getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &kids) == 0) {
		const struct timeval tv[4] = {self.ru_utime, self.ru_stime, kids.ru_utime, kids.ru_stime};
		for (int i = 0; i < 4; i++)
			m->self_cpu_s += (double)tv[i].tv_sec + 1e-6 * (double)tv[i].tv_usec;
	} else {
		m->ok_cpu = false;
	}
}

static void add_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddStringToObject(o, key, "unknown");
}

void ctq_host_load_to_json(cJSON *manifest, const struct ctq_host_load_mark *a,
			   const struct ctq_host_load_mark *b)
{
	if (!manifest)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(manifest, "host_load");
	cJSON *o = cJSON_AddObjectToObject(manifest, "host_load");
	if (!o)
		return;
	struct ctq_host_load l;
	ctq_host_load_between(a, b, (double)sysconf(_SC_CLK_TCK), &l);
	add_num(o, "load_avg_1m_start", a->ok_load ? a->load_1m : NAN);
	add_num(o, "load_avg_1m_end", b->ok_load ? b->load_1m : NAN);
	add_num(o, "wall_s", b->wall_s - a->wall_s);
	add_num(o, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
	add_num(o, "self_cpu_s", a->ok_cpu && b->ok_cpu ? b->self_cpu_s - a->self_cpu_s : NAN);
	add_num(o, "other_cpu_fraction", l.other_cpu);
	add_num(o, "steal_fraction", l.steal);
}

/* ---- checkpoint provenance ------------------------------------------------ */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One tensor file's size and digest. */
struct file_hash {
	off_t bytes;
	unsigned char d[CTQ_SHA256_BYTES];
	enum ctq_status st;
	struct ctq_error err;
};

static void file_hash(const char *dir, const char *name, struct file_hash *h)
{
	memset(&h->err, 0, sizeof h->err);
	size_t n = strlen(dir) + strlen(name) + 2;
	char *path = ctq_malloc(n);
	if (!path) {
		h->st = ctq_error_set(&h->err, CTQ_ERR_NOMEM, dir, "out of memory");
		return;
	}
	snprintf(path, n, "%s/%s", dir, name);
	struct stat sb;
	if (stat(path, &sb) != 0)
		h->st = ctq_error_set(&h->err, CTQ_ERR_IO, path, "cannot stat");
	else if (!(h->st = ctq_sha256_file(path, h->d, &h->err)))
		h->bytes = sb.st_size;
	ctq_free(path);
}

static enum ctq_status file_entry(const char *name, const struct file_hash *h, cJSON *files,
				  struct ctq_error *err)
{
	char hex[CTQ_SHA256_HEX];
	ctq_sha256_hex(h->d, hex);
	cJSON *f = cJSON_CreateObject();
	if (!f)
		return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
	cJSON_AddStringToObject(f, "name", name);
	cJSON_AddNumberToObject(f, "bytes", (double)h->bytes);
	cJSON_AddStringToObject(f, "sha256", hex);
	cJSON_AddItemToArray(files, f);
	return CTQ_OK;
}

enum ctq_status ctq_env_checkpoint(const char *dir, const char *display, cJSON **out,
				   struct ctq_error *err)
{
	*out = NULL;
	cJSON *o = cJSON_CreateObject(), *cfg = NULL;
	char **names = NULL;
	size_t n_names = 0, cap = 0;
	enum ctq_status st = CTQ_OK;
	if (!o)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	cJSON_AddStringToObject(o, "path", display ? display : dir);

	unsigned char d[CTQ_SHA256_BYTES];
	char hex[CTQ_SHA256_HEX];
	if ((st = ctq_hf_config_load(dir, &cfg, hex, NULL, 0, err)))
		goto done;
	cJSON_AddStringToObject(o, "config_sha256", hex);
	const cJSON *qc = ctq_json_get(cfg, "quantization_config");
	if (!qc)
		qc = ctq_json_get(cfg, "compression_config");
	if (qc) {
		struct ctq_strbuf sb;
		ctq_strbuf_init(&sb);
		st = ctq_json_write_python(qc, -1, true, &sb);
		if (!st) {
			ctq_sha256(sb.data, sb.len, d);
			ctq_sha256_hex(d, hex);
		}
		ctq_strbuf_free(&sb);
		if (st) {
			st = ctq_error_set(err, st, "quantization_config", "cannot serialise the block");
			goto done;
		}
		const cJSON *qm = ctq_json_get(qc, "quant_method");
		cJSON_AddStringToObject(o, "quant_method",
					cJSON_IsString(qm) ? qm->valuestring : "unknown");
		cJSON_AddStringToObject(o, "quantization_config_sha256", hex);
	} else {
		cJSON_AddStringToObject(o, "quant_method", "none");
		cJSON_AddStringToObject(o, "quantization_config_sha256", "none");
	}

	DIR *dh = opendir(dir);
	if (!dh) {
		st = ctq_error_set(err, CTQ_ERR_IO, dir, "cannot open the folder");
		goto done;
	}
	struct dirent *e;
	while ((e = readdir(dh))) {
		if (!ends_with(e->d_name, ".safetensors") &&
		    !ends_with(e->d_name, ".safetensors.index.json"))
			continue;
		if (n_names == cap) {
			cap = cap ? 2 * cap : 8;
			char **nn = ctq_realloc(names, cap * sizeof *nn);
			if (!nn) {
				st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
				break;
			}
			names = nn;
		}
		if (!(names[n_names] = ctq_strdup(e->d_name))) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			break;
		}
		n_names++;
	}
	closedir(dh);
	if (st)
		goto done;
	qsort(names, n_names, sizeof *names, cmp_str);
	/* the shards hashed side by side (a 4B checkpoint's 12 GB took 40 s
	 * one after the other), listed in name order */
	struct file_hash *hs = ctq_calloc(n_names + 1, sizeof *hs);
	if (!hs) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_names < 8 ? (int)n_names + 1 : 8)
	for (size_t i = 0; i < n_names; i++)
		file_hash(dir, names[i], &hs[i]);
	cJSON *files = cJSON_AddArrayToObject(o, "files");
	for (size_t i = 0; i < n_names && !st; i++)
		st = hs[i].st ? ctq_error_set(err, hs[i].st, hs[i].err.path, "%s", hs[i].err.message)
			      : file_entry(names[i], &hs[i], files, err);
	ctq_free(hs);
done:
	for (size_t i = 0; i < n_names; i++)
		ctq_free(names[i]);
	ctq_free(names);
	cJSON_Delete(cfg);
	if (st)
		cJSON_Delete(o);
	else
		*out = o;
	return st;
}
