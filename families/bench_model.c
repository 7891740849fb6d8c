/* The bench model family (see bench_model.h). */
#include "families/bench_model.h"
#include "core/hf_config.h"
#include "core/arena.h"
#include "families/verdict.h"
#include "core/json.h"
#include "core/fileio.h"
#include "results/csv_out.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctq_fam_bench_model_csv_row(struct ctq_csv *w, const struct ctq_bench_model_row *r)
{
	ctq_csv_field(w, r->role);
	ctq_csv_field(w, r->model);
	ctq_csv_field(w, r->backend);
	ctq_csv_fieldf(w, "%ld", r->batch);
	ctq_csv_fieldf(w, "%ld", r->input_tokens);
	ctq_csv_fieldf(w, "%ld", r->output_tokens);
	ctq_csv_fieldf(w, "%ld", r->rep);
	ctq_csv_fieldf(w, "%.6f", r->ttft_s * 1e3);
	ctq_csv_fieldf(w, "%.3f", r->prefill_tps);
	ctq_csv_fieldf(w, "%.6f", r->decode_mean_s * 1e3);
	ctq_csv_fieldf(w, "%.3f", r->decode_tps);
	ctq_csv_fieldf(w, "%.6f", r->tpot_p50_s * 1e3);
	ctq_csv_fieldf(w, "%.6f", r->tpot_p99_s * 1e3);
	ctq_csv_fieldf(w, "%llu", (unsigned long long)r->weight_bytes);
	ctq_csv_fieldf(w, "%llu", (unsigned long long)r->kv_bytes_per_token);
	if (r->has_device_bytes) {
		ctq_csv_fieldf(w, "%llu", (unsigned long long)r->device_resident_bytes);
		ctq_csv_fieldf(w, "%llu", (unsigned long long)r->device_peak_bytes);
	} else {
		ctq_csv_field(w, "");
		ctq_csv_field(w, "");
	}
	ctq_csv_fieldf(w, "%016llx", (unsigned long long)r->output_digest);
	ctq_csv_end_row(w);
}

void ctq_fam_bench_model_gains_csv_row(struct ctq_csv *w, const struct ctq_bench_model_gain_row *r)
{
	ctq_csv_fieldf(w, "%ld", r->batch);
	ctq_csv_fieldf(w, "%ld", r->input_tokens);
	ctq_csv_fieldf(w, "%ld", r->output_tokens);
	ctq_csv_fieldf(w, "%.6f", r->ttft_ref_ms);
	ctq_csv_fieldf(w, "%.6f", r->ttft_new_ms);
	ctq_csv_fieldf(w, "%.6f", r->ttft_reduction);
	ctq_csv_fieldf(w, "%.3f", r->prefill_ref_tps);
	ctq_csv_fieldf(w, "%.3f", r->prefill_new_tps);
	ctq_csv_fieldf(w, "%.6f", r->prefill_gain);
	ctq_csv_fieldf(w, "%.3f", r->decode_ref_tps);
	ctq_csv_fieldf(w, "%.3f", r->decode_new_tps);
	ctq_csv_fieldf(w, "%.6f", r->decode_gain);
	ctq_csv_end_row(w);
}

/* ---- comparison -------------------------------------------------------------- */

static const char *const timing_metrics[] = {"ttft_ms", "decode_ms_per_step"};

enum ctq_status ctq_fam_bench_model_compare(struct ctq_cmp_pair *x, struct ctq_error *err)
{
	/* bench model --ref-model writes both roles into one file: the role is
	 * part of the key when both sides have it. */
	static const char *const keys_role[] = {"role", "backend", "batch", "input_tokens",
						"output_tokens"};
	const bool role = ctq_cmp_has_role(x->base_path) && ctq_cmp_has_role(x->new_path);
	const char *const *keys = role ? keys_role : keys_role + 1;
	const int nk = role ? 5 : 4;
	int cb[7], cn[7];
	enum ctq_status st = ctq_cmp_pair_load(x, keys, nk, false, cb, cn, err);
	if (st || (st = ctq_cmp_need_cols(&x->tb, x->base_path, timing_metrics, 2, cb + nk, err)) ||
	    (st = ctq_cmp_need_cols(&x->tn, x->new_path, timing_metrics, 2, cn + nk, err)))
		return st;
	return ctq_cmp_timing_keys(x, CTQ_FAM_BENCH_MODEL, timing_metrics, 2, nk, cb, cn, NULL, false, err);
}

/* ---- trend ------------------------------------------------------------------- */

enum ctq_status ctq_fam_bench_model_trend(struct ctq_trend *t, size_t run, const struct ctq_table *tb,
					  const char *path, const char *file, struct ctq_error *err)
{
	static const char *const keys_role[] = {"role", "backend", "batch", "input_tokens",
						"output_tokens"};
	const bool role = ctq_table_col(tb, "role") >= 0;
	return ctq_trend_medians(t, run, CTQ_FAM_BENCH_MODEL, file, tb, path,
				 role ? keys_role : keys_role + 1, role ? 5 : 4, timing_metrics, 2,
				 "ms", err);
}

/* ---- report section ------------------------------------------------------------ */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_of(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* What the checkpoint folder dir is, for labels: "W<w>A<a>" (the bits of
 * the first quantization config group; A16 without input activations) when
 * config.json has a quantization_config, else its dtype in capitals
 * ("bfloat16" -> "BF16"); "model" when config.json cannot be read. */
static void model_kind(const char *dir, char *buf, size_t cap)
{
	snprintf(buf, cap, "model");
	cJSON *c = NULL;
	if (!*dir || ctq_hf_config_load(dir, &c, NULL, NULL, 0, NULL))
		return;
	const cJSON *q = ctq_json_get(c, "quantization_config");
	if (cJSON_IsObject(q)) {
		const cJSON *g = ctq_json_get(q, "config_groups");
		g = cJSON_IsObject(g) ? g->child : NULL;
		const cJSON *w = ctq_json_get(ctq_json_get(g, "weights"), "num_bits");
		const cJSON *a = ctq_json_get(ctq_json_get(g, "input_activations"), "num_bits");
		if (cJSON_IsNumber(w))
			snprintf(buf, cap, "W%dA%d", (int)w->valuedouble, cJSON_IsNumber(a) ? (int)a->valuedouble : 16);
		else
			snprintf(buf, cap, "quantized");
	} else {
		const char *d = ctq_json_str_at(c, "torch_dtype", NULL);
		d = d ? d : ctq_json_str_at(c, "dtype", NULL);
		static const char *const names[][2] = {{"bfloat16", "BF16"}, {"float16", "FP16"},
						       {"float32", "FP32"}};
		for (size_t i = 0; d && i < sizeof names / sizeof *names; i++)
			if (!strcmp(d, names[i][0]))
				snprintf(buf, cap, "%s", names[i][1]);
	}
	cJSON_Delete(c);
}

enum ctq_status ctq_fam_bench_model_report(struct ctq_rep *r, const struct ctq_result_file *f)
{
	struct ctq_perf_case **cases = &r->perf;
	size_t *n_cases = &r->n_perf, *cap = &r->cap_perf;
	/* With --ref-model one file holds both roles: a case is (role, backend,
	 * batch, input, output). */
	static const char *const names[] = {"backend", "batch", "input_tokens", "output_tokens",
					    "ttft_ms", "prefill_tokens_per_s", "decode_ms_per_step",
					    "decode_tokens_per_s", "weight_bytes", "role", "model"};
	struct ctq_rep_table R;
	enum ctq_status st = ctq_rep_load_result(r, f, names, 11, 9, &R);
	if (st)
		return st;
	const int crole = R.col[9], cmodel = R.col[10];
	/* The role (ref, new) is shown only where one file holds both. */
	bool two_roles = false;
	for (size_t i = 1; crole >= 0 && i < R.t.n_rows; i++)
		two_roles |= strcmp(ctq_table_get(&R.t, i, crole), ctq_table_get(&R.t, 0, crole)) != 0;
	char model[400] = "", v[300];
	if (ctq_rep_step_option(r->dir, r->display, f->dir, "--model", v, sizeof v))
		snprintf(model, sizeof model, " — model %s", v);
	char title[900];
	snprintf(title, sizeof title, "%s%s", f->rel, model);
	ctq_rep_heading(r, 3, title);
	static const char *const cols[] = {"model", "backend", "batch", "input", "output", "reps",
					   "TTFT ms median [min, max]", "TTFT cv",
					   "prefill tok/s", "decode ms/step", "decode tok/s",
					   "weights MB", NULL};
	ctq_rep_table_head(r, cols);
	double *buf = ctq_malloc((R.t.n_rows + 1) * 4 * sizeof *buf);
	bool *done = ctq_calloc(R.t.n_rows + 1, sizeof *done);
	if (!buf || !done) {
		free(buf);
		free(done);
		ctq_table_free(&R.t);
		return ctq_error_set(r->err, CTQ_ERR_NOMEM, R.path, "out of memory");
	}
	for (size_t i = 0; i < R.t.n_rows && !st; i++) {
		if (done[i])
			continue;
		size_t n = 0;
		double *tt = buf, *pf = buf + R.t.n_rows, *dm = buf + 2 * R.t.n_rows, *dt = buf + 3 * R.t.n_rows;
		for (size_t j = i; j < R.t.n_rows; j++) {
			bool same = crole < 0 || !strcmp(ctq_table_get(&R.t, i, crole), ctq_table_get(&R.t, j, crole));
			for (int k = 0; k < 4 && same; k++)
				same = !strcmp(ctq_table_get(&R.t, i, R.col[k]), ctq_table_get(&R.t, j, R.col[k]));
			if (!same)
				continue;
			done[j] = true;
			tt[n] = ctq_table_num(&R.t, j, R.col[4]);
			pf[n] = ctq_table_num(&R.t, j, R.col[5]);
			dm[n] = ctq_table_num(&R.t, j, R.col[6]);
			dt[n] = ctq_table_num(&R.t, j, R.col[7]);
			n++;
		}
		struct ctq_sample_summary s;
		if ((st = ctq_sample_summarize(tt, n, &s, r->err)))
			break;
		double med_pf = median_of(pf, n), med_dm = median_of(dm, n), med_dt = median_of(dt, n);
		char kind[32];
		model_kind(ctq_table_get(&R.t, i, cmodel), kind, sizeof kind);
		const char *role = crole >= 0 ? ctq_table_get(&R.t, i, crole) : "";
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, kind, "strong");
		if (two_roles)
			ctq_rep_cellf(r, NULL, "%s (%s)", ctq_table_get(&R.t, i, R.col[0]), role);
		else
			ctq_rep_cell(r, ctq_table_get(&R.t, i, R.col[0]), NULL);
		for (int k = 1; k < 4; k++)
			ctq_rep_cell(r, ctq_table_get(&R.t, i, R.col[k]), "num");
		ctq_rep_cellf(r, "num", "%zu", n);
		ctq_rep_cellf(r, "num", "%.4g [%.4g, %.4g]", s.median, s.min, s.max);
		ctq_rep_cellf(r, s.cv > 0.2 ? "num warn" : "num", "%.3g", s.cv);
		ctq_rep_cellf(r, "num", "%.4g", med_pf);
		ctq_rep_cellf(r, "num", "%.4g", med_dm);
		ctq_rep_cellf(r, "num", "%.4g", med_dt);
		ctq_rep_cellf(r, "num", "%.2f", ctq_table_num(&R.t, i, R.col[8]) / 1e6);
		ctq_rep_row_end(r);
		if (*n_cases == *cap) {
			size_t nc = *cap ? 2 * *cap : 16;
			struct ctq_perf_case *pc = ctq_realloc(*cases, nc * sizeof *pc);
			if (!pc) {
				st = ctq_error_set(r->err, CTQ_ERR_NOMEM, R.path, "out of memory");
				break;
			}
			*cases = pc;
			*cap = nc;
		}
		struct ctq_perf_case *pc = &(*cases)[(*n_cases)++];
		snprintf(pc->kind, sizeof pc->kind, "%s", kind);
		snprintf(pc->key, sizeof pc->key, "%s b%s in%s out%s", ctq_table_get(&R.t, i, R.col[0]),
			 ctq_table_get(&R.t, i, R.col[1]), ctq_table_get(&R.t, i, R.col[2]), ctq_table_get(&R.t, i, R.col[3]));
		snprintf(pc->label, sizeof pc->label, "%s %s %s b%s in%s", *f->dir ? f->dir : "run", kind,
			 ctq_table_get(&R.t, i, R.col[0]), ctq_table_get(&R.t, i, R.col[1]), ctq_table_get(&R.t, i, R.col[2]));
		snprintf(pc->series_ttft, sizeof pc->series_ttft, "%s_%s%s%s_b%s_out%s",
			 *f->dir ? f->dir : "run", ctq_table_get(&R.t, i, R.col[0]), *role ? "_" : "", role,
			 ctq_table_get(&R.t, i, R.col[1]), ctq_table_get(&R.t, i, R.col[3]));
		snprintf(pc->series_tps, sizeof pc->series_tps, "%s_%s%s%s_in%s_out%s",
			 *f->dir ? f->dir : "run", ctq_table_get(&R.t, i, R.col[0]), *role ? "_" : "", role,
			 ctq_table_get(&R.t, i, R.col[2]), ctq_table_get(&R.t, i, R.col[3]));
		pc->batch = ctq_table_num(&R.t, i, R.col[1]);
		pc->input = ctq_table_num(&R.t, i, R.col[2]);
		pc->ttft[0] = s.median;
		pc->ttft[1] = s.min;
		pc->ttft[2] = s.max;
		pc->prefill = med_pf;
		pc->decode_ms = med_dm;
		pc->decode_tps = med_dt;
	}
	ctq_rep_table_end(r);
	free(buf);
	free(done);
	ctq_table_free(&R.t);
	return st;
}

/* W8A8 / BF16: each quantized case beside the BF16 case of the same
 * backend, batch, input and output length (the first of each), as ratios of
 * the medians: below 1 for TTFT and above 1 for throughput is W8A8 faster. */
static void ratio_table(struct ctq_rep *r, const struct ctq_perf_case *pc, size_t n)
{
	bool head = false;
	for (size_t i = 0; i < n; i++) {
		if (pc[i].kind[0] != 'W')
			continue;
		size_t j;
		for (j = 0; j < n; j++)
			if (!strcmp(pc[j].kind, "BF16") && !strcmp(pc[j].key, pc[i].key))
				break;
		if (j == n)
			continue;
		if (!head) {
			ctq_rep_heading(r, 3, "W8A8 / BF16 (ratio of medians)");
			static const char *const cols[] = {"case", "quantized", "TTFT ratio", "prefill tok/s ratio",
							   "decode tok/s ratio", NULL};
			ctq_rep_table_head(r, cols);
			head = true;
		}
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, pc[i].key, NULL);
		ctq_rep_cellf(r, NULL, "%s / %s", pc[i].kind, pc[j].kind);
		ctq_rep_cellf(r, "num", "%.3g", pc[i].ttft[0] / pc[j].ttft[0]);
		ctq_rep_cellf(r, "num", "%.3g", pc[i].prefill / pc[j].prefill);
		ctq_rep_cellf(r, "num", "%.3g", pc[i].decode_tps / pc[j].decode_tps);
		ctq_rep_row_end(r);
	}
	if (head) {
		ctq_rep_table_end(r);
		ctq_rep_para(r, "A TTFT ratio below 1 and a throughput ratio above 1 mean the quantized model is faster.");
	}
}

/* The TTFT panel's y range. One stalled repetition (a 40 ms maximum beside
 * 0.3 ms medians) would stretch an autoscaled axis until the medians
 * vanish, so the axis stops at CTQ_PERF_TTFT_CLIP times the largest median
 * when some maximum lies above that; the bars of those cases end at the top
 * and a label gives each one's maximum. Returns the top, or 0 for an
 * autoscaled axis (nothing above it). */
static double ttft_top(const struct ctq_perf_case *pc, size_t n, size_t *n_clipped)
{
	double med = 0;
	for (size_t i = 0; i < n; i++)
		if (pc[i].ttft[0] > med)
			med = pc[i].ttft[0];
	double top = CTQ_PERF_TTFT_CLIP * med;
	*n_clipped = 0;
	for (size_t i = 0; i < n && top > 0; i++)
		*n_clipped += pc[i].ttft[2] > top;
	return *n_clipped ? top : 0;
}

void ctq_fam_bench_model_perf_plot(const struct ctq_perf_case *pc, size_t n, struct ctq_strbuf *body,
				   struct ctq_strbuf *data, char *caption, size_t cap)
{
	size_t n_clipped;
	double top = ttft_top(pc, n, &n_clipped);
	ctq_strbuf_append(data, "# index case ttft_median ttft_min ttft_max prefill_tps decode_ms decode_tps "
				"ttft_max_drawn\n");
	for (size_t i = 0; i < n; i++) {
		ctq_strbuf_printf(data, "%zu ", i);
		ctq_plot_quoted(data, pc[i].label);
		ctq_strbuf_printf(data, " %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n", pc[i].ttft[0], pc[i].ttft[1],
				  pc[i].ttft[2], pc[i].prefill, pc[i].decode_ms, pc[i].decode_tps,
				  top > 0 && pc[i].ttft[2] > top ? top : pc[i].ttft[2]);
	}
	ctq_strbuf_append(body, "set multiplot layout 2,1\n"
				"set style fill solid 0.8 border -1\nset boxwidth 0.6\n"
				"set xtics rotate by 30 right font \",8\"\nset offsets 0.5, 0.5, 0, 0\n"
				"set bmargin 9\nset lmargin 22\nset ytics\nset mytics 2\n");
	if (top > 0) {
		ctq_strbuf_printf(body, "set yrange [0:%.6g]\n", top);
		for (size_t i = 0; i < n; i++)
			if (pc[i].ttft[2] > top)
				ctq_strbuf_printf(body,
						  "set label %zu \"max %.4g ms (clipped)\" at %zu, %.6g left "
						  "offset 0.8,-0.8 front font \",8\" tc rgb \"#b00020\"\n",
						  i + 1, pc[i].ttft[2], i, top);
		ctq_strbuf_printf(body, "set title \"time to first token (median, min-max bars; y clipped at "
					"%g x the largest median)\"\n",
				  CTQ_PERF_TTFT_CLIP);
	} else {
		ctq_strbuf_append(body, "set yrange [0:*]\n"
					"set title \"time to first token (median, min-max bars)\"\n");
	}
	ctq_strbuf_append(body,
			  "set ylabel \"TTFT ms\"\n"
			  "plot \"perf.dat\" using 1:3:4:9:(0.6):xtic(2) with boxerrorbars lc rgb \"#1f77b4\" notitle\n"
			  "unset label\nset yrange [0:*]\n"
			  "set title \"throughput (median)\"\nset ylabel \"tokens/s\"\n"
			  "set boxwidth 0.35\nset key inside top right vertical opaque box\n"
			  "set offsets 0.5, 0.5, graph 0.2, 0\n"
			  "plot \"perf.dat\" using ($1-0.18):6:xtic(2) with boxes lc rgb \"#2ca02c\" title \"prefill tok/s\", "
			  "\"perf.dat\" using ($1+0.18):8 with boxes lc rgb \"#ff7f0e\" title \"decode tok/s\"\n"
			  "unset multiplot\n");
	if (top > 0)
		snprintf(caption, cap,
			 "TTFT and throughput per benchmark case; TTFT axis clipped at %.4g ms (%g x the "
			 "largest median): %zu case(s) with a maximum above it, labelled with its value",
			 top, CTQ_PERF_TTFT_CLIP, n_clipped);
	else
		snprintf(caption, cap, "TTFT and throughput per benchmark case");
}

static void perf_plots(struct ctq_rep *r, const struct ctq_perf_case *pc, size_t n)
{
	if (!n)
		return;
	struct ctq_strbuf data, body;
	ctq_strbuf_init(&data);
	ctq_strbuf_init(&body);
	char caption[400];
	ctq_fam_bench_model_perf_plot(pc, n, &body, &data, caption, sizeof caption);
	if (!data.oom && !body.oom)
		ctq_rep_plot(r, "perf", 1000, 900, caption, body.data, data.data);
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&body);
}

/* One side of the scaling plot: for each series (a name of pc) with at
 * least two cases, a data block of (x, y) sorted by x, and its plot clause.
 * Returns the number of blocks written (their indices continue from
 * *index). */
static size_t scaling_blocks(const struct ctq_perf_case *pc, size_t n, bool ttft_side,
			     struct ctq_strbuf *data, struct ctq_strbuf *clauses, size_t *index)
{
	size_t blocks = 0;
	bool *seen = ctq_calloc(n ? n : 1, sizeof *seen);
	size_t *m = ctq_malloc((n ? n : 1) * sizeof *m);
	if (!seen || !m) {
		free(seen);
		free(m);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (seen[i])
			continue;
		const char *name = ttft_side ? pc[i].series_ttft : pc[i].series_tps;
		size_t k = 0;
		for (size_t j = i; j < n; j++)
			if (!strcmp(name, ttft_side ? pc[j].series_ttft : pc[j].series_tps)) {
				seen[j] = true;
				m[k++] = j;
			}
		if (k < 2)
			continue;
		/* Insertion sort by x (input length or batch). */
		for (size_t a = 1; a < k; a++)
			for (size_t b = a; b > 0; b--) {
				double xb = ttft_side ? pc[m[b]].input : pc[m[b]].batch;
				double xa = ttft_side ? pc[m[b - 1]].input : pc[m[b - 1]].batch;
				if (xa <= xb)
					break;
				size_t t = m[b];
				m[b] = m[b - 1];
				m[b - 1] = t;
			}
		ctq_strbuf_append(data, "# ");
		ctq_strbuf_append(data, name);
		ctq_strbuf_append(data, ttft_side ? "\n# input_tokens ttft_ms_median\n"
						  : "\n# batch decode_tokens_per_s prefill_tokens_per_s\n");
		for (size_t a = 0; a < k; a++) {
			const struct ctq_perf_case *c = &pc[m[a]];
			if (ttft_side)
				ctq_strbuf_printf(data, "%.9g %.9g\n", c->input, c->ttft[0]);
			else
				ctq_strbuf_printf(data, "%.9g %.9g %.9g\n", c->batch, c->decode_tps, c->prefill);
		}
		ctq_strbuf_append(data, "\n\n");
		ctq_strbuf_printf(clauses, "%s\"perf_scaling.dat\" index %zu using 1:2 with linespoints pt 7 title ",
				  blocks ? ", " : "", *index);
		ctq_plot_quoted(clauses, name);
		(*index)++;
		blocks++;
	}
	free(seen);
	free(m);
	return blocks;
}

/* TTFT against input length (one line per role, backend and batch) and
 * decode throughput against batch (one per role, backend and input), the
 * two views bench model's cases support; drawn only where a series has two
 * or more points. */
static void scaling_plots(struct ctq_rep *r, const struct ctq_perf_case *pc, size_t n)
{
	struct ctq_strbuf data, left, right, body;
	ctq_strbuf_init(&data);
	ctq_strbuf_init(&left);
	ctq_strbuf_init(&right);
	ctq_strbuf_init(&body);
	size_t index = 0;
	size_t nl = scaling_blocks(pc, n, true, &data, &left, &index);
	size_t nr = scaling_blocks(pc, n, false, &data, &right, &index);
	if (nl || nr) {
		ctq_strbuf_printf(&body, "set multiplot layout 1,%d\nset key bottom right font \",8\"\n"
					 "set logscale x 2\nset grid\n", nl && nr ? 2 : 1);
		if (nl)
			ctq_strbuf_printf(&body, "set title \"TTFT against input length (median)\"\n"
						 "set xlabel \"input tokens\"\nset ylabel \"TTFT ms\"\n"
						 "set logscale y\nplot %s\nunset logscale y\n",
					  ctq_strbuf_str(&left));
		if (nr)
			ctq_strbuf_printf(&body, "set title \"decode throughput against batch (median)\"\n"
						 "set xlabel \"batch (sequences)\"\nset ylabel \"decode tokens/s\"\n"
						 "plot %s\n",
					  ctq_strbuf_str(&right));
		ctq_strbuf_append(&body, "unset multiplot\n");
		if (!data.oom && !body.oom && !left.oom && !right.oom)
			ctq_rep_plot(r, "perf_scaling", nl && nr ? 1200 : 700, 500,
			     "TTFT against input length and decode throughput against batch", body.data,
			     data.data);
	}
	ctq_strbuf_free(&data);
	ctq_strbuf_free(&left);
	ctq_strbuf_free(&right);
	ctq_strbuf_free(&body);
}


enum ctq_status ctq_fam_bench_model_report_end(struct ctq_rep *r)
{
	const struct ctq_perf_case *pc = r->perf;
	size_t n = r->n_perf;
	if (!n)
		return CTQ_OK;
	ctq_rep_para(r, "Timings are wall clock after a backend synchronisation (ctq bench model); "
			"TTFT is the prefill of the whole batch. A TTFT cv above 0.2 (amber) makes "
			"`ctq compare` call that case ambiguous.");
	ratio_table(r, pc, n);
	perf_plots(r, pc, n);
	scaling_plots(r, pc, n);
	return CTQ_OK;
}
