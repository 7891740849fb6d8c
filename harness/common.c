/* ctq harness helpers shared by the commands (see commands.h). */
#include "harness/commands.h"
#include "core/fileio.h"
#include "core/hf_config.h"
#include "backend/backend.h"
#include "core/json.h"
#include "core/split.h"
#include "results/run.h"
#include "checkpoint/hf_folder.h"
#include "core/time.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void ctq_print_error(const char *cmd, const struct ctq_error *err)
{
	fprintf(stderr, "ctq %s: %s", cmd, ctq_status_name(err->status));
	if (err->path[0])
		fprintf(stderr, " at %s", err->path);
	fprintf(stderr, ": %s\n", err->message);
}

int ctq_print_error_exit(const char *cmd, const struct ctq_error *err)
{
	ctq_print_error(cmd, err);
	return ctq_status_exit_code(err->status);
}

bool ctq_opt_out_ok(const char *cmd, const struct ctq_opt_out *out)
{
	struct ctq_error err = {0};
	if (!out->dir || !ctq_run_out_check(out->dir, out->force, &err))
		return true;
	ctq_print_error(cmd, &err);
	return false;
}

const char *ctq_opt_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "ctq: option %s needs a value (see --help)\n", argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

int ctq_opt_parse(const char *cmd, int argc, char **argv, const struct ctq_opt *opts,
		  const char **pos, int n_pos, void (*help)(void))
{
	int n_given = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return CTQ_EXIT_OK;
		}
		if (a[0] != '-' || !a[1]) {
			if (n_given >= n_pos) {
				if (n_pos)
					fprintf(stderr, "ctq %s: unexpected argument %s after %s (see --help)\n",
						cmd, a, pos[n_pos - 1]);
				else
					fprintf(stderr, "ctq %s: unexpected argument %s (see --help)\n", cmd, a);
				return CTQ_EXIT_USAGE;
			}
			pos[n_given++] = a;
			continue;
		}
		/* A --out entry answers to --force as well. */
		const struct ctq_opt *o = opts;
		while (o->name && strcmp(o->name, a) &&
		       !(o->kind == CTQ_OPT_KIND_OUT && !strcmp(a, "--force")))
			o++;
		if (!o->name) {
			fprintf(stderr, "ctq %s: unknown option %s (see --help)\n", cmd, a);
			return CTQ_EXIT_USAGE;
		}
		if (o->kind == CTQ_OPT_KIND_OUT && strcmp(a, o->name)) {
			((struct ctq_opt_out *)o->dst)->force = true;
			continue;
		}
		if (o->kind == CTQ_OPT_KIND_FLAG) {
			*(bool *)o->dst = true;
			continue;
		}
		const char *v = ctq_opt_value(argc, argv, &i);
		if (!v)
			return CTQ_EXIT_USAGE;
		if (o->kind == CTQ_OPT_KIND_STR)
			*(const char **)o->dst = v;
		else if (o->kind == CTQ_OPT_KIND_OUT)
			((struct ctq_opt_out *)o->dst)->dir = v;
		else if (o->kind == CTQ_OPT_KIND_INT ? !ctq_opt_int(cmd, a, v, o->min, o->max, o->dst)
						: !o->fn(cmd, a, v, o->dst))
			return CTQ_EXIT_USAGE;
	}
	return -1;
}

int ctq_opt_parse_need(const char *cmd, int argc, char **argv, const struct ctq_opt *opts,
		       const char **pos, int n_pos, void (*help)(void), const char *const *need,
		       const char *missing)
{
	int rc = ctq_opt_parse(cmd, argc, argv, opts, pos, n_pos, help);
	if (rc < 0 && !*need) {
		fprintf(stderr, "ctq %s: %s\n", cmd, missing);
		return CTQ_EXIT_USAGE;
	}
	return rc;
}

bool ctq_opt_int(const char *cmd, const char *opt, const char *v, long min,
		 long max, long *out)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < min || x > max) {
		fprintf(stderr, "ctq %s: %s is \"%s\"; expected an integer in [%ld, %ld]\n",
			cmd, opt, v, min, max);
		return false;
	}
	*out = x;
	return true;
}

int ctq_opt_split(const char *cmd, const char *opt, const char *v, char *buf, size_t size, const char **items,
		  int cap)
{
	struct ctq_error err = {0};
	const int n = ctq_split_list(opt, v, buf, size, items, cap, &err);
	if (n < 0)
		fprintf(stderr, "ctq %s: %s\n", cmd, err.message);
	return n;
}

int ctq_opt_int_list(const char *cmd, const char *opt, const char *v, long min, long max, long *out,
		     int cap)
{
	char buf[1024];
	const char *items[64];
	const int n = ctq_opt_split(cmd, opt, v, buf, sizeof buf, items, cap < 64 ? cap : 64);
	for (int i = 0; i < n; i++)
		if (!ctq_opt_int(cmd, opt, items[i], min, max, &out[i]))
			return -1;
	return n;
}

bool ctq_opt_fn_seconds(const char *cmd, const char *name, const char *v, void *dst)
{
	char *end;
	const double x = strtod(v, &end);
	if (end == v || *end || !(x >= 0.001 && x <= 1e7)) {
		fprintf(stderr, "ctq %s: %s is \"%s\"; expected seconds in [0.001, 1e7]\n", cmd, name, v);
		return false;
	}
	*(double *)dst = x;
	return true;
}

bool ctq_opt_fn_arrival(const char *cmd, const char *name, const char *v, void *dst)
{
	double *rate = dst;
	char *end = NULL;
	if (!strcmp(v, "closed")) {
		*rate = 0;
		return true;
	}
	if (!strncmp(v, "poisson:", 8) && (*rate = strtod(v + 8, &end)) > 0 && isfinite(*rate) &&
	    end && !*end)
		return true;
	fprintf(stderr, "ctq %s: %s is \"%s\"; expected closed or poisson:RATE with RATE > 0 "
			"requests per second\n", cmd, name, v);
	return false;
}

bool ctq_opt_act_numerics(const char *cmd, const char *v, enum ctq_act_numerics *out)
{
	if (ctq_act_numerics_parse(v, out))
		return true;
	fprintf(stderr, "ctq %s: --act-numerics is \"%s\"; expected ctq or transformers\n", cmd, v);
	return false;
}

bool ctq_opt_fn_act_numerics(const char *cmd, const char *name, const char *v, void *dst)
{
	(void)name;
	return ctq_opt_act_numerics(cmd, v, dst);
}

bool ctq_opt_act_numerics_backend(const char *cmd, enum ctq_act_numerics n, const char *backend)
{
	if (n == CTQ_ACT_NUMERICS_CTQ || !strcmp(backend, "reference"))
		return true;
	fprintf(stderr,
		"ctq %s: --act-numerics %s runs on the reference backend only, not --backend %s (the CUDA kernels implement ctq's numerics: amax / 127, an int8 GEMM)\n",
		cmd, ctq_act_numerics_name(n), backend);
	return false;
}

bool ctq_opt_model_config(const char *cmd, const char *opt, const char *path, cJSON **out, int *rc)
{
	if (out)
		*out = NULL;
	if (!path)
		return true;
	struct ctq_error err = {0};
	if (!ctq_path_is_dir(path)) {
		ctq_error_set(&err, CTQ_ERR_IO, path, "%s: %s", opt,
			      ctq_path_exists(path) ? "not a folder; expected a checkpoint folder"
						    : "no such file or folder");
	} else {
		cJSON *cfg = NULL;
		if (ctq_hf_config_load(path, &cfg, NULL, NULL, 0, &err) == CTQ_OK) {
			if (out)
				*out = cfg;
			else
				cJSON_Delete(cfg);
			return true;
		}
	}
	*rc = ctq_print_error_exit(cmd, &err);
	return false;
}

bool ctq_opt_model_dir(const char *cmd, const char *opt, const char *path, int *rc)
{
	return ctq_opt_model_config(cmd, opt, path, NULL, rc);
}

const char *ctq_opt_backend_default(const char *cmd)
{
	struct ctq_backend b;
	struct ctq_error err = {0};
	memset(&b, 0, sizeof b);
	if (ctq_backend_open(&b, "cuda", &err) == CTQ_OK) {
		char desc[256];
		b.ops->describe(&b, desc, sizeof desc);
		ctq_backend_close(&b);
		fprintf(stderr, "ctq %s: backend cuda (default: a CUDA device opens: %s)\n", cmd, desc);
		return "cuda";
	}
	fprintf(stderr, "ctq %s: backend reference (default: %s%s; --backend cuda to require the GPU)\n", cmd,
		strncmp(err.message, "no CUDA device", 14) ? "no CUDA device: " : "", err.message);
	return "reference";
}

/* ---- run directories and model folders ------------------------------------ */

enum ctq_status ctq_harness_run_write(struct ctq_run *run, const struct ctq_opt_out *out,
				      const char *command, int argc, char **argv,
				      enum ctq_status (*write)(void *ctx, struct ctq_run *run,
							       struct ctq_error *err),
				      void *ctx, struct ctq_error *err)
{
	enum ctq_status st = ctq_run_begin(run, out->dir, out->force, command, argc, argv, err);
	if (st || (st = write(ctx, run, err)) || (st = ctq_run_commit(run, err)))
		ctq_run_abort(run);
	return st;
}

/* ---- the progress line of eval and eval kld -------------------------------- */

void ctq_progress_line_start(struct ctq_progress_line *p)
{
	p->t0 = p->last = ctq_now_s();
}

double ctq_progress_line_rate(struct ctq_progress_line *p, size_t done, size_t total)
{
	if (!p->on)
		return -1;
	double t = ctq_now_s();
	if (done < total && t - p->last < 0.2)
		return -1;
	p->last = t;
	double el = t - p->t0;
	return el > 0 ? (double)done / el : 0;
}

void ctq_progress_line_print(struct ctq_progress_line *p, size_t done, size_t total,
			     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputc('\r', stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (done == total)
		fputc('\n', stderr);
	fflush(stderr);
	p->open = done < total;
}

int ctq_progress_line_fail(struct ctq_progress_line *p, const char *cmd,
			   const struct ctq_error *err)
{
	if (p->open)
		fputc('\n', stderr);
	return ctq_print_error_exit(cmd, err);
}

/* ---- output folders and progress (make-model, quantize) -------------------- */

bool ctq_out_dir_allowed(const char *cmd, const char *out, bool force, bool *replace)
{
	if (ctq_hf_folder_writable(out, force, replace))
		return true;
	fprintf(stderr, "ctq %s: %s already exists and is not an empty folder; refusing to replace it (--force replaces it)\n",
		cmd, out);
	return false;
}

void ctq_out_dir_trim(char *out)
{
	ctq_hf_folder_trim(out);
}

void ctq_progress_init(struct ctq_progress *p, const char *cmd, bool quiet)
{
	memset(p, 0, sizeof *p);
	p->cmd = cmd;
	p->quiet = quiet;
	p->t0_s = ctq_now_s();
}

double ctq_progress_elapsed_s(const struct ctq_progress *p)
{
	return ctq_now_s() - p->t0_s;
}

/* One line per tensor group (a decoder layer, the embeddings, ...): the
 * group is the name up to and including the layer number. */
void ctq_progress_print(void *ctx, const char *tensor, uint64_t bytes_done,
			uint64_t bytes_total)
{
	struct ctq_progress *p = ctx;
	if (p->quiet)
		return;
	size_t n = strlen(tensor);
	if (n > 12 && !strcmp(tensor + n - 12, ".safetensors")) {
		fprintf(stderr, "ctq %s: wrote %s  (%.1f s)\n", p->cmd, tensor,
			ctq_progress_elapsed_s(p));
		return;
	}
	const char *l = strstr(tensor, "layers.");
	if (l) {
		const char *e = l + strlen("layers.");
		while (*e >= '0' && *e <= '9')
			e++;
		n = (size_t)(e - tensor);
	} else if (strrchr(tensor, '.')) {
		n = (size_t)(strrchr(tensor, '.') - tensor);
	}
	if (n >= sizeof p->group)
		n = sizeof p->group - 1;
	if (!strncmp(p->group, tensor, n) && p->group[n] == '\0' && bytes_done < bytes_total)
		return;
	memcpy(p->group, tensor, n);
	p->group[n] = '\0';
	bool gb = bytes_total >= 1000000000ULL;
	double unit = gb ? 1e9 : 1e6;
	fprintf(stderr, "ctq %s: [%3.0f%%] %.2f of %.2f %s  %s  (%.1f s)\n", p->cmd,
		bytes_total ? 100.0 * (double)bytes_done / (double)bytes_total : 100.0,
		(double)bytes_done / unit, (double)bytes_total / unit, gb ? "GB" : "MB",
		p->group, ctq_progress_elapsed_s(p));
}
