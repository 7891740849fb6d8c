/* ctq bench gemm: W8A8 GEMM throughput against M for each linear shape of a
 * preset or a checkpoint. Each point (shape, M) is checked bit-exact
 * against the CPU reference on a subset of rows, then timed side by side in
 * this process: ctq_w8a8 (quantization + GEMM + epilogue), ctq_gemm,
 * ctq_quantize, cuBLAS BF16 and cuBLASLt int8 (kernels/gemm_timing.h, the
 * driver). Metrics, CSV, plots and targets: bench/gemm.h. */
#include "checkpoint/target.h"
#include "harness/commands.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/numerics.h"
#include "core/rng.h"
#include "kernels/gemm_timing.h"
#include "quant/resolve.h"
#include "checkpoint/safetensors.h"
#include "bench/gemm.h"
#include "bench/gemm_session.h"
#include "backend/plugin.h"
#include "results/csv_out.h"
#include "results/env.h"
#include "results/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHAPES 64
#define MAX_M 32

static void help(void)
{
	printf("usage: ctq bench gemm [--shapes PRESET|K:N,... | --model DIR] [options]\n"
	       "\n"
	       "Times the W8A8 GEMM against M for each linear shape, side by side with cuBLAS:\n"
	       "  ctq_w8a8      per-token quantization + int8 GEMM + fused epilogue (end to end)\n"
	       "  ctq_gemm      int8 GEMM + fused epilogue on pre-quantized activations\n"
	       "  ctq_quantize  the quantization kernel alone\n"
	       "  cublas_bf16   cublasGemmEx, BF16 in and out, FP32 compute\n"
	       "  cublaslt_i8   cuBLASLt int8 x int8 -> int32 (COMPUTE_32I, TN)\n"
	       "Every point is first checked bit-exact against the CPU reference (q, scales,\n"
	       "int32 accumulators and BF16 outputs on a subset of rows, all columns).\n"
	       "\n"
	       "options:\n"
	       "  --shapes S        qwen3-4b (K:N 2560:6144, 4096:2560, 2560:19456, 9728:2560;\n"
	       "                    default), qwen3-0.6b, or a list of K:N\n"
	       "  --model DIR       the distinct (K, N) of a checkpoint's W8A8 linear modules,\n"
	       "                    fused as served (q/k/v, gate/up); all linear modules but\n"
	       "                    lm_head for a checkpoint without W8A8 modules\n"
	       "  --m LIST          token counts (default 1,16,32,64,128,256,512,1024,2048,4096,8192)\n"
	       "  --warmup N        untimed graph launches per implementation (default 3)\n"
	       "  --samples N       timed graph launches (default 30; 20 or more for a baseline)\n"
	       "  --check-rows N    rows compared with the reference per point (default 32)\n"
	       "  --device N        CUDA device (default 0)\n"
	       "  --seed S          input seed (default 1)\n"
	       "  --peak-tops X     INT8 dense peak in TOPS (default: by device name; H200 1979)\n"
	       "  --hbm-gbps X      memory bandwidth in GB/s (default: by device name; H200 4800)\n"
	       "  --out DIR         run directory (default runs/<UTC time>-<revision>)\n"
	       "  --force           replace DIR when it is an existing ctq run directory (any\n"
	       "                    other non-empty DIR is refused)\n"
	       "  --impl LIB        also time a CUDA kernel plug-in (a .so exporting\n"
	       "                    ctq_kernel_plugin, include/ctq_kernel_plugin.h): its quantize +\n"
	       "                    gemm_w8a8 end to end, timed exactly as ctq_w8a8, after a check\n"
	       "                    on the same rows (NaN/Inf, rel-L2 <= %g, bit-exact where it\n"
	       "                    declares it); rows in bench_gemm_plugin.csv, impl = its name.\n"
	       "                    A CPU plug-in is refused (this benchmark times on the GPU;\n"
	       "                    probe one with ctq probe --kernel-lib), as is a bad plug-in\n"
	       "                    (exit 2). A weight-only plug-in (ABI version 2, gemm_wna16)\n"
	       "                    is timed on the point's BF16 activations with the point's\n"
	       "                    weights quantized by ctq into each layout (rows NAME:LAYOUT,\n"
	       "                    %%HBM of the packed weights), checked against the weight-only\n"
	       "                    reference first (bit for bit where it declares WNA16_EXACT)\n"
	       "  --wna16 LIST      the weight-only layouts timed (w{4|8}a16[-asym][-gG], comma-\n"
	       "                    separated; default: w4a16-g128, w4a16-asym-g128, w8a16, those\n"
	       "                    the plug-in declares); needs --impl\n"
	       "  --paths LIST      also time ctq_gemm on each W8A8 kernel path named, forced\n"
	       "                    (sm90-wgmma, sm80-mma, gemv, dp4a; comma-separated): rows\n"
	       "                    impl = ctq_gemm@PATH, each checked bit-exact first; a path\n"
	       "                    that cannot take a point on this GPU (sm90-wgmma off compute\n"
	       "                    9.0, gemv above M = 16) gets a row saying so, untimed\n"
	       "\n"
	       "Timing: each implementation cycles through enough copies of its buffers that\n"
	       "one pass touches at least 3x the L2; a CUDA graph of consecutive calls (at\n"
	       "least %.0f us) is one sample, timed with CUDA events; per-call median, min, cv.\n"
	       "Writes bench_gemm.csv, bench_gemm_samples.csv, manifest.json and\n"
	       "plots/gemm_<shape>.png (TOPS against M, with gnuplot); `ctq report RUN` checks\n"
	       "the targets.\n"
	       "exit: 0 done; 1 a ctq (or plug-in) output differs from the reference; 2 bad\n"
	       "      usage or input (a bad plug-in included); 3 no GPU (or a build without CUDA).\n",
	       CTQ_GEMM_PLUGIN_REL_L2_MAX, CTQ_GEMM_MIN_GRAPH_US);
}

struct opts {
	const char *shapes, *model, *impl, *wna16;
	struct ctq_opt_out out;
	long m[MAX_M];
	int n_m;
	long warmup, samples, check_rows, device, seed;
	double peak_tops, hbm_gbps;
	int paths[CTQ_GEMM_PATH_COUNT]; /* --paths, in the order given */
	int n_paths;
};

/* --paths P,P,... (dst: struct opts *). */
static bool opt_paths(const char *cmd, const char *name, const char *v, void *dst)
{
	struct opts *o = dst;
	char buf[256];
	const char *items[16];
	const int n = ctq_opt_split(cmd, name, v, buf, sizeof buf, items, 16);
	o->n_paths = 0;
	for (int k = 0; k < n; k++) {
		enum ctq_gemm_path p;
		if (!ctq_gemm_path_parse(items[k], &p)) {
			fprintf(stderr,
				"ctq %s: %s names \"%s\"; expected sm90-wgmma, sm80-mma, gemv or dp4a\n", cmd,
				name, items[k]);
			return false;
		}
		bool dup = false;
		for (int i = 0; i < o->n_paths; i++)
			dup = dup || o->paths[i] == (int)p;
		if (!dup)
			o->paths[o->n_paths++] = (int)p;
	}
	return n > 0;
}

static bool parse_double(const char *opt, const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || !(d > 0) || isinf(d)) {
		fprintf(stderr, "ctq bench gemm: %s is \"%s\"; expected a positive number\n", opt, v);
		return false;
	}
	*out = d;
	return true;
}

static bool add_shape(struct ctq_gemm_shape *s, size_t *n, const char *name, int64_t K, int64_t N)
{
	for (size_t i = 0; i < *n; i++)
		if (s[i].K == K && s[i].N == N) {
			size_t l = strlen(s[i].name);
			if (!strstr(s[i].name, name) && l + strlen(name) + 1 < sizeof s[i].name)
				snprintf(s[i].name + l, sizeof s[i].name - l, "+%s", name);
			return true;
		}
	if (*n == MAX_SHAPES)
		return false;
	snprintf(s[*n].name, sizeof s[*n].name, "%s", name);
	s[*n].K = K;
	s[*n].N = N;
	(*n)++;
	return true;
}

/* A preset or a K:N list; false on a bad value (printed). */
static bool shapes_from_arg(const char *arg, struct ctq_gemm_shape *s, size_t *n)
{
	static const struct {
		const char *preset, *name;
		int64_t K, N;
	} presets[] = {
		{"qwen3-4b", "qkv_proj", 2560, 6144},      {"qwen3-4b", "o_proj", 4096, 2560},
		{"qwen3-4b", "gate_up_proj", 2560, 19456}, {"qwen3-4b", "down_proj", 9728, 2560},
		{"qwen3-0.6b", "qkv_proj", 1024, 4096},    {"qwen3-0.6b", "o_proj", 2048, 1024},
		{"qwen3-0.6b", "gate_up_proj", 1024, 6144}, {"qwen3-0.6b", "down_proj", 3072, 1024},
	};
	*n = 0;
	for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
		if (!strcmp(arg, presets[i].preset))
			add_shape(s, n, presets[i].name, presets[i].K, presets[i].N);
	if (*n)
		return true;
	const char *c = arg;
	while (*c) {
		char *end;
		long long K = strtoll(c, &end, 10), N;
		if (end == c || *end != ':')
			goto bad;
		c = end + 1;
		N = strtoll(c, &end, 10);
		if (end == c || (*end && *end != ',') || K < 1 || N < 1 || K > CTQ_K_MAX || N > (1LL << 20))
			goto bad;
		char name[48];
		snprintf(name, sizeof name, "%lld:%lld", K, N);
		if (!add_shape(s, n, name, K, N))
			goto bad;
		c = *end ? end + 1 : end;
	}
	if (*n)
		return true;
bad:
	fprintf(stderr, "ctq bench gemm: --shapes is \"%s\"; expected qwen3-4b, qwen3-0.6b or K:N[,K:N...] "
			"(K <= %ld, at most %d shapes)\n",
		arg, CTQ_K_MAX, MAX_SHAPES);
	return false;
}

/* The distinct (K, N) of a checkpoint's linear modules, read from the
 * weight tensors; the members of a fused set (q/k/v, gate/up) add up to one
 * GEMM as serving engines run them. */
static enum ctq_status shapes_from_model(const char *dir, struct ctq_gemm_shape *s, size_t *n,
					 struct ctq_error *err)
{
	struct ctq_target tg;
	const struct ctq_plan *plan = &tg.plan;
	const struct ctq_modules *mods = &tg.mods;
	*n = 0;
	enum ctq_status st = ctq_target_open_plan(&tg, dir, err);
	if (st || (st = ctq_checkpoint_open(&tg.ck, dir, err)))
		goto done;
	bool any_w8a8 = false;
	for (size_t i = 0; i < plan->n; i++)
		any_w8a8 |= plan->entries[i].scheme && !strcmp(plan->entries[i].scheme, "w8a8-int8");
	for (size_t i = 0; i < mods->n && !st; i++) {
		const struct ctq_module *m = &mods->v[i];
		const struct ctq_plan_entry *e = &plan->entries[i];
		if (m->kind != CTQ_MODULE_LINEAR)
			continue;
		const char *leaf = strrchr(m->name, '.') ? strrchr(m->name, '.') + 1 : m->name;
		if (any_w8a8 ? !e->scheme || strcmp(e->scheme, "w8a8-int8") : !strcmp(leaf, "lm_head"))
			continue;
		/* A fused set is taken once, at its first member. */
		const struct ctq_fused_set *f = m->fused >= 0 ? &mods->fused[m->fused] : NULL;
		if (f && f->members[0] != i)
			continue;
		int64_t K = 0, N = 0;
		size_t nm = f ? f->n_members : 1;
		for (size_t j = 0; j < nm && !st; j++) {
			const char *name = mods->v[f ? f->members[j] : i].name;
			char tn[CTQ_PATH_MAX + 16];
			snprintf(tn, sizeof tn, "%s.weight", name);
			const struct ctq_st_tensor *t = ctq_checkpoint_find(&tg.ck, tn, NULL);
			if (!t) {
				if (!strcmp(leaf, "lm_head"))
					break; /* tied to the embeddings */
				st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, tn, "is missing from %s", dir);
			} else if (t->ndim != 2 || (K && t->shape[1] != K)) {
				st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, tn,
						   "has %d dimensions or a K unlike its fused set's %lld", t->ndim,
						   (long long)K);
			} else {
				K = t->shape[1];
				N += t->shape[0];
			}
		}
		if (!st && K && N && !add_shape(s, n, f ? f->key : leaf, K, N))
			st = ctq_error_set(err, CTQ_ERR_USAGE, dir, "has more than %d distinct linear shapes",
					   MAX_SHAPES);
	}
	if (!st && !*n)
		st = ctq_error_set(err, CTQ_ERR_CHECKPOINT, dir, "has no linear module to benchmark");
done:
	ctq_target_close(&tg);
	return st;
}

/* --impl: the plug-in loaded and checked before any device or run
 * directory; a CPU one is refused. Exit code, or -1 to go on. */
static int plugin_open(struct ctq_gemm_session *S, const char *path, const char *wna16)
{
	struct ctq_error err = {0};
	if (ctq_kernel_lib_open(&S->lib, path, &err))
		return ctq_print_error_exit("bench gemm", &err);
	if (S->lib.t->device != CTQ_KERNEL_PLUGIN_DEVICE_CUDA) {
		fprintf(stderr, "ctq bench gemm: --impl %s is the CPU plug-in %s; this benchmark times "
				"CUDA kernels (graphs, events) and has no CPU timing path: probe it with "
				"ctq probe --kernel-lib %s\n", path, S->lib.t->name, path);
		ctq_kernel_lib_close(&S->lib);
		return CTQ_EXIT_USAGE;
	}
	if (ctq_wna16_layouts(S->lib.t, path, wna16, S->o.wna16, &S->o.n_wna16, &err)) {
		ctq_kernel_lib_close(&S->lib);
		return ctq_print_error_exit("bench gemm", &err);
	}
	return -1;
}

static void print_summary(const struct ctq_gemm_session *S)
{
	printf("\n%-20s %6s %10s %10s %8s %7s %8s %10s %8s %10s %10s %7s\n", "shape", "M", "w8a8 us",
	       "gemm us", "TOPS", "%peak", "%HBM(w)", "bf16 us", "speedup", "i8 us", "quant us", "%HBM");
	for (size_t i = 0; i + CTQ_GEMM_IMPL_COUNT <= S->n_rows; i += CTQ_GEMM_IMPL_COUNT) {
		const struct ctq_gemm_row *r = &S->rows[i];
		const struct ctq_gemm_row *g = &r[CTQ_GEMM_GEMM], *q = &r[CTQ_GEMM_QUANTIZE];
		printf("%-20.20s %6lld %10.2f %10.2f %8.1f %7.1f %8.1f %10.2f %7.2fx %10.2f %10.2f %7.1f\n",
		       r->shape, (long long)r->M, r[CTQ_GEMM_W8A8].time_us_median, g->time_us_median, g->tops,
		       g->pct_int8_peak, g->pct_hbm_weights, r[CTQ_GEMM_BF16].time_us_median, g->speedup_vs_bf16,
		       r[CTQ_GEMM_I8].time_us_median, q->time_us_median, q->pct_hbm);
	}
	if (S->n_prows)
		printf("\n%-20s %6s %-20s %10s %8s %7s %8s  %s\n", "shape", "M", "plug-in", "w8a8 us", "TOPS",
		       "%peak", "speedup", "check");
	for (size_t i = 0; i < S->n_prows; i++) {
		const struct ctq_gemm_row *p = &S->prows[i];
		printf("%-20.20s %6lld %-20.20s %10.2f %8.1f %7.1f %7.2fx  %s\n", p->shape, (long long)p->M,
		       p->impl_label, p->time_us_median, p->tops, p->pct_int8_peak, p->speedup_vs_bf16,
		       p->check);
	}
}

/* One line per target over every shape; `ctq report` lists them per shape. */
static enum ctq_status print_targets(const struct ctq_gemm_session *S, struct ctq_error *err)
{
	struct ctq_gemm_target *t = NULL;
	size_t nt = 0;
	enum ctq_status st = ctq_gemm_targets(S->rows, S->n_rows, &t, &nt, err);
	if (st)
		return st;
	printf("\ntargets (per shape: ctq report RUN):\n");
	for (int id = 0; id < CTQ_GEMM_TGT_COUNT; id++) {
		const char *detail, *shape;
		enum ctq_gemm_verdict v = ctq_gemm_target_overall(t, nt, (enum ctq_gemm_target_id)id, &detail, &shape);
		printf("  %-12s %s%s%s%s%s\n", ctq_gemm_verdict_name(v),
		       ctq_gemm_target_text((enum ctq_gemm_target_id)id), shape ? " -- " : "", shape ? shape : "",
		       detail ? ": " : "", detail ? detail : "");
	}
	free(t);
	return CTQ_OK;
}


/* --m M,M,... (dst: struct opts *). */
static bool opt_m(const char *cmd, const char *name, const char *v, void *dst)
{
	struct opts *o = dst;
	o->n_m = ctq_opt_int_list(cmd, name, v, 1, 1L << 20, o->m, MAX_M);
	return o->n_m > 0;
}

/* --peak-tops / --hbm-gbps X (dst: double *). */
static bool opt_positive(const char *cmd, const char *name, const char *v, void *dst)
{
	(void)cmd;
	return parse_double(name, v, dst);
}

/* Parses and checks the options; as ctq_opt_parse, -1 when the command may
 * run, else its exit code. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.shapes = NULL, .m = {1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192},
			   .n_m = 11, .warmup = 3, .samples = 30, .check_rows = 32, .seed = 1};
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--shapes", &o->shapes),
		CTQ_OPT_STR("--model", &o->model),
		CTQ_OPT_OUT(&o->out),
		CTQ_OPT_STR("--impl", &o->impl),
		CTQ_OPT_STR("--wna16", &o->wna16),
		CTQ_OPT_FN("--m", o, opt_m),
		CTQ_OPT_INT("--warmup", &o->warmup, 0, 1000),
		CTQ_OPT_INT("--samples", &o->samples, 1, 10000),
		CTQ_OPT_INT("--check-rows", &o->check_rows, 1, 1024),
		CTQ_OPT_INT("--device", &o->device, 0, 1023),
		CTQ_OPT_INT("--seed", &o->seed, 0, 0x7fffffffL),
		CTQ_OPT_FN("--peak-tops", &o->peak_tops, opt_positive),
		CTQ_OPT_FN("--hbm-gbps", &o->hbm_gbps, opt_positive),
		CTQ_OPT_FN("--paths", o, opt_paths),
		CTQ_OPT_END,
	};
	int rc = ctq_opt_parse("bench gemm", argc, argv, opts, NULL, 0, help);
	if (rc >= 0)
		return rc;
	if (o->shapes && o->model) {
		fprintf(stderr, "ctq bench gemm: give --shapes or --model, not both\n");
		return CTQ_EXIT_USAGE;
	}
	if (!ctq_opt_out_ok("bench gemm", &o->out))
		return CTQ_EXIT_USAGE;
	if (o->wna16 && !o->impl) {
		fprintf(stderr, "ctq bench gemm: --wna16 times a weight-only plug-in: it needs --impl\n");
		return CTQ_EXIT_USAGE;
	}
	return -1;
}

/* The shapes of --model or --shapes, printed; -1 or an exit code. */
static int load_shapes(const struct opts *o, struct ctq_gemm_shape *shapes, size_t *n_shapes, char *source,
		       size_t cap)
{
	struct ctq_error err = {0};
	if (o->model) {
		if (shapes_from_model(o->model, shapes, n_shapes, &err)) {
			return ctq_print_error_exit("bench gemm", &err);
		}
		snprintf(source, cap, "checkpoint %s", o->model);
	} else {
		if (!shapes_from_arg(o->shapes ? o->shapes : "qwen3-4b", shapes, n_shapes))
			return CTQ_EXIT_USAGE;
		snprintf(source, cap, "--shapes %s", o->shapes ? o->shapes : "qwen3-4b");
	}
	printf("bench gemm: %zu shape(s) from %s:", *n_shapes, source);
	for (size_t i = 0; i < *n_shapes; i++)
		printf("%s %s K=%lld N=%lld", i ? "," : "", shapes[i].name, (long long)shapes[i].K,
		       (long long)shapes[i].N);
	printf("\n");
	fflush(stdout);
	if (o->samples < 20)
		fprintf(stderr, "ctq bench gemm: warning: %ld samples; a baseline wants 20 or more\n", o->samples);
	return -1;
}

/* The plug-in, then the device: a bad plug-in exits 2 and no device
 * exits 3, before any run directory. -1 or an exit code (S closed). */
static int open_device(struct ctq_gemm_session *S, const struct opts *o)
{
	struct ctq_error err = {0};
	int prc = o->impl ? plugin_open(S, o->impl, o->wna16) : -1;
	if (prc >= 0)
		return prc;
	if (ctq_gemm_bench_open(&S->b, (int)o->device, &S->dev, &err) ||
	    (S->lib.t && ctq_kernel_lib_init(&S->lib, &err))) {
		ctq_print_error("bench gemm", &err);
		ctq_gemm_bench_close(S->b);
		ctq_kernel_lib_close(&S->lib);
		return ctq_status_exit_code(err.status);
	}
	if (S->lib.t) {
		ctq_gemm_bench_set_plugin(S->b, S->lib.t, S->lib.path);
		printf("bench gemm: kernel plug-in %s (%s)\n", S->lib.t->name, S->lib.path);
	}
	ctq_gemm_peaks_for(S->dev.name, o->peak_tops, o->hbm_gbps, &S->peaks);
	char pk[64] = "unknown INT8 TOPS", bw[64] = "unknown GB/s";
	if (!isnan(S->peaks.int8_tops))
		snprintf(pk, sizeof pk, "%.0f INT8 TOPS", S->peaks.int8_tops);
	if (!isnan(S->peaks.hbm_gbps))
		snprintf(bw, sizeof bw, "%.0f GB/s", S->peaks.hbm_gbps);
	printf("bench gemm: %s, sm_%d%d, %d SMs, L2 %.1f MiB; peaks: %s, %s (%s)\n", S->dev.name,
	       S->dev.major, S->dev.minor, S->dev.sms, (double)S->dev.l2_bytes / 1048576.0, pk, bw,
	       S->peaks.source);
	fflush(stdout);
	return -1;
}

/* The session's progress and failure lines, on stderr as they come. */
static void say(void *ctx, bool error, const char *line)
{
	(void)ctx, (void)error;
	fprintf(stderr, "%s\n", line);
}

/* The exit code of a finished run: 1 when ctq or the plug-in failed a check. */
static int final_rc(const struct ctq_gemm_session *S)
{
	int rc = CTQ_EXIT_OK;
	if (S->failures) {
		fprintf(stderr, "ctq bench gemm: %zu of %zu point(s) differ from the reference; first: %s\n",
			S->failures, S->points, S->first_failure);
		rc = CTQ_EXIT_FAIL;
	}
	if (S->plugin_failures) {
		fprintf(stderr, "ctq bench gemm: plug-in %s fails the check at %zu of %zu point(s); first: %s\n",
			S->lib.t->name, S->plugin_failures, S->points, S->plugin_first_failure);
		rc = CTQ_EXIT_FAIL;
	}
	return rc;
}

int ctq_cmd_bench_gemm(int argc, char **argv)
{
	struct opts o;
	int prc = parse_opts(argc, argv, &o);
	if (prc >= 0)
		return prc;
	struct ctq_gemm_shape shapes[MAX_SHAPES];
	size_t n_shapes = 0;
	struct ctq_error err = {0};
	char source[1100];
	if ((prc = load_shapes(&o, shapes, &n_shapes, source, sizeof source)) >= 0)
		return prc;
	struct ctq_gemm_session S;
	memset(&S, 0, sizeof S);
	S.o.warmup = o.warmup, S.o.samples = o.samples, S.o.check_rows = o.check_rows;
	S.o.n_paths = o.n_paths;
	memcpy(S.o.paths, o.paths, sizeof o.paths);
	S.say = say;
	S.n_points = n_shapes * (size_t)o.n_m;
	if ((prc = open_device(&S, &o)) >= 0)
		return prc;

	struct ctq_run run;
	struct ctq_gemm_host h;
	memset(&run, 0, sizeof run);
	memset(&h, 0, sizeof h);
	int rc = CTQ_EXIT_USAGE;
	if (ctq_run_begin(&run, o.out.dir, o.out.force, "bench-gemm", argc, argv, &err))
		goto fail;
	char desc[400], plot_note[400];
	snprintf(desc, sizeof desc, "%s (sm_%d%d, %d SMs, %.1f GiB)", S.dev.name, S.dev.major, S.dev.minor,
		 S.dev.sms, (double)S.dev.mem_bytes / 1073741824.0);
	ctq_env_capture(run.manifest, &(struct ctq_env_options){.query_gpus = true, .cuda_device_desc = desc});
	long m_max = 1;
	for (int i = 0; i < o.n_m; i++)
		m_max = o.m[i] > m_max ? o.m[i] : m_max;
	for (size_t s = 0; s < n_shapes; s++) {
		if (ctq_gemm_host_make(&h, m_max, shapes[s].N, shapes[s].K, (uint64_t)o.seed * 1000003u + s, &err))
			goto fail;
		for (int i = 0; i < o.n_m; i++)
			if (ctq_gemm_session_point(&S, &shapes[s], &h, o.m[i], &err))
				goto fail;
		ctq_gemm_host_free(&h);
	}
	ctq_gemm_bench_close(S.b);
	S.b = NULL;
	snprintf(desc, sizeof desc, "%s (sm_%d%d, %d SMs, L2 %.1f MiB, %.1f GiB)", S.dev.name, S.dev.major,
		 S.dev.minor, S.dev.sms, (double)S.dev.l2_bytes / 1048576.0, (double)S.dev.mem_bytes / 1073741824.0);
	struct ctq_gemm_run_info info = {
		.device = desc, .device_name = S.dev.name, .device_index = (int)o.device,
		.l2_bytes = S.dev.l2_bytes, .peaks = S.peaks, .samples = (int)o.samples,
		.warmup = (int)o.warmup, .check_rows = (int)o.check_rows, .min_graph_us = CTQ_GEMM_MIN_GRAPH_US,
		.seed = o.seed, .shapes_from = source, .m = o.m, .n_m = o.n_m, .points = S.points,
		.ctq_failures = S.failures, .i8_failures = S.i8_failures,
		.first_failure = S.failures ? S.first_failure : NULL};
	if (ctq_gemm_write(run.tmp_dir, run.manifest, &info, S.rows, S.n_rows, S.samples, (size_t)o.samples,
			   plot_note, sizeof plot_note, &err) ||
	    (S.lib.t && ctq_gemm_session_plugin_write(&S, run.tmp_dir, run.manifest, &err)))
		goto fail;
	print_summary(&S);
	if (print_targets(&S, &err))
		goto fail;
	if (plot_note[0])
		printf("bench gemm: %s\n", plot_note);
	char final_dir[sizeof run.final_dir];
	snprintf(final_dir, sizeof final_dir, "%s", run.final_dir);
	if (ctq_run_commit(&run, &err))
		goto fail;
	printf("\nbench gemm: results in %s/ (bench_gemm.csv, %s, manifest.json, plots/)\n", final_dir,
	       CTQ_GEMM_SAMPLES_FILE);
	rc = final_rc(&S);
	goto done;
fail:
	rc = ctq_print_error_exit("bench gemm", &err);
	ctq_run_abort(&run);
done:
	ctq_gemm_host_free(&h);
	ctq_gemm_session_free(&S);
	return rc;
}
