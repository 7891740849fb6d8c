/* A session of kernel probes (conform/probe_session.h). */
#include "conform/probe_session.h"
#include "checkpoint/loader.h"
#include "checkpoint/target.h"
#include "core/arena.h"
#include "core/dtype.h"
#include "core/json.h"
#include "quant/shard.h"
#include "backend/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shape {
	const char *name;
	int64_t K, N;
};

static const struct shape qwen3_4b[] = {
	{"qkv_proj", 2560, 6144}, {"o_proj", 4096, 2560}, {"gate_up_proj", 2560, 19456},
	{"down_proj", 9728, 2560}};
static const struct shape qwen3_06b[] = {
	{"qkv_proj", 1024, 4096}, {"o_proj", 2048, 1024}, {"gate_up_proj", 1024, 6144},
	{"down_proj", 3072, 1024}};
static const struct shape tiny[] = {
	{"qkv_proj", 64, 128}, {"o_proj", 64, 64}, {"gate_up_proj", 64, 352}, {"down_proj", 176, 64}};

static const struct {
	const char *name;
	const struct shape *v;
} presets[] = {{"qwen3-4b", qwen3_4b}, {"qwen3-0.6b", qwen3_06b}, {"tiny", tiny}};

enum ctq_status ctq_probe_shapes_parse(const char *s, struct ctq_probe_shapes *out,
				       struct ctq_error *err)
{
	memset(out, 0, sizeof *out);
	for (size_t p = 0; p < sizeof presets / sizeof *presets; p++) {
		if (strcmp(s, presets[p].name))
			continue;
		if (!(out->v = ctq_calloc(4, sizeof *out->v)))
			return ctq_error_set(err, CTQ_ERR_NOMEM, s, "out of memory");
		for (size_t i = 0; i < 4; i++)
			out->v[i] = (struct ctq_probe_layer){
				.name = presets[p].v[i].name, .K = presets[p].v[i].K, .N = presets[p].v[i].N};
		out->n = 4;
		return CTQ_OK;
	}
	size_t cap = 1;
	for (const char *c = s; *c; c++)
		cap += *c == ',';
	out->v = ctq_calloc(cap, sizeof *out->v);
	out->names = ctq_calloc(cap, sizeof *out->names);
	if (!out->v || !out->names)
		return ctq_error_set(err, CTQ_ERR_NOMEM, s, "out of memory");
	const char *c = s;
	bool bad = false;
	while (*c && !bad) {
		char *end;
		long long K = strtoll(c, &end, 10);
		if ((bad = end == c || *end != ':'))
			break;
		c = end + 1;
		long long N = strtoll(c, &end, 10);
		if ((bad = end == c || (*end && *end != ',') || K < 1 || N < 1 || K > (1LL << 20) ||
			   N > (1LL << 20)))
			break;
		char *name = out->names[out->n];
		snprintf(name, sizeof *out->names, "%lld:%lld", K, N);
		out->v[out->n++] = (struct ctq_probe_layer){.name = name, .K = K, .N = N};
		c = *end ? end + 1 : end;
	}
	if (bad || !out->n)
		return ctq_error_set(err, CTQ_ERR_USAGE, s,
				     "expected qwen3-4b, qwen3-0.6b, tiny or K:N[,K:N...]");
	return CTQ_OK;
}

void ctq_probe_shapes_free(struct ctq_probe_shapes *s)
{
	if (!s)
		return;
	free(s->v);
	free(s->names);
	memset(s, 0, sizeof *s);
}

enum ctq_status ctq_probe_backends_open(struct ctq_backend *b, int *n, bool use_ref, bool use_cuda,
					const char *kernel_lib, unsigned defects,
					enum ctq_act_numerics numerics, struct ctq_error *err)
{
	enum ctq_status st = CTQ_OK;
	if (use_ref && !(st = ctq_backend_reference(&b[*n], err)))
		(*n)++;
	if (!st && use_cuda && !(st = ctq_backend_cuda(&b[*n], 0, err)))
		(*n)++;
	for (int i = 0; i < *n && !st; i++) {
		b[i].defects = defects;
		st = ctq_backend_set_act_numerics(&b[i], numerics, err);
	}
	if (!st && kernel_lib && !(st = ctq_backend_plugin(&b[*n], kernel_lib, err)))
		(*n)++;
	return st;
}

enum ctq_status ctq_probe_session_init(struct ctq_probe_session *S, struct ctq_error *err)
{
	S->passed = S->failed = 0;
	S->rows = cJSON_CreateArray();
	return S->rows ? CTQ_OK : ctq_error_set(err, CTQ_ERR_NOMEM, "probe.json", "out of memory");
}

void ctq_probe_session_free(struct ctq_probe_session *S)
{
	ctq_probe_release();
	cJSON_Delete(S->rows);
	S->rows = NULL;
}

cJSON *ctq_probe_result_json(const struct ctq_probe_result *r)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "layer", r->layer);
	cJSON_AddNumberToObject(o, "K", (double)r->K);
	cJSON_AddNumberToObject(o, "N", (double)r->N);
	cJSON_AddNumberToObject(o, "M", (double)r->M);
	cJSON_AddStringToObject(o, "weights", ctq_probe_weights_name(r->weights));
	cJSON_AddStringToObject(o, "acts", ctq_probe_acts_name(r->acts));
	cJSON_AddStringToObject(o, "backend", r->backend);
	cJSON_AddStringToObject(o, "kernel_path", r->kernel_path);
	cJSON_AddNumberToObject(o, "nan_count", (double)r->nan_count);
	cJSON_AddNumberToObject(o, "inf_count", (double)r->inf_count);
	cJSON_AddNumberToObject(o, "nonfinite_mismatch", (double)r->nonfinite_mismatch);
	cJSON_AddBoolToObject(o, "all_zero", r->all_zero);
	cJSON_AddNumberToObject(o, "max_abs_err", r->max_abs_err);
	cJSON_AddNumberToObject(o, "kernel_rel_l2", r->kernel_rel_l2);
	if (r->quant_rel_l2 == r->quant_rel_l2)
		cJSON_AddNumberToObject(o, "quant_rel_l2", r->quant_rel_l2);
	else
		cJSON_AddNullToObject(o, "quant_rel_l2");
	if (r->q_mismatch >= 0) {
		cJSON_AddNumberToObject(o, "q_mismatch", (double)r->q_mismatch);
		cJSON_AddNumberToObject(o, "s_mismatch", (double)r->s_mismatch);
	}
	if (r->y_mismatch >= 0)
		cJSON_AddNumberToObject(o, "y_mismatch", (double)r->y_mismatch);
	cJSON_AddBoolToObject(o, "passed", r->passed);
	if (!r->passed)
		cJSON_AddStringToObject(o, "reason", r->reason);
	return o;
}

/* on_results of a session: tallies, on_result, probe.json's rows. */
static void session_results(void *ctx, const struct ctq_probe_result *res, int n_be)
{
	struct ctq_probe_session *S = ctx;
	for (int bi = 0; bi < n_be; bi++) {
		const struct ctq_probe_result *r = &res[bi];
		r->passed ? S->passed++ : S->failed++;
		if (S->on_result)
			S->on_result(S->ctx, r);
		cJSON_AddItemToArray(S->rows, ctq_probe_result_json(r));
	}
}

enum ctq_status ctq_probe_session_layer(struct ctq_probe_session *S, const struct ctq_probe_layer *L,
					const bool *wsel, const bool *asel, struct ctq_error *err)
{
	struct ctq_backend *bes[CTQ_PROBE_MAX_BACKENDS];
	for (int bi = 0; bi < S->n_backends && bi < CTQ_PROBE_MAX_BACKENDS; bi++)
		bes[bi] = &S->backends[bi];
	struct ctq_probe_job *jobs = ctq_calloc(CTQ_PW_COUNT * CTQ_PA_COUNT * (S->n_m ? S->n_m : 1), sizeof *jobs);
	if (!jobs)
		return ctq_error_set(err, CTQ_ERR_NOMEM, L->name, "out of memory");
	size_t n = 0;
	for (int w = 0; w < CTQ_PW_COUNT; w++)
		for (int a = 0; a < CTQ_PA_COUNT; a++)
			for (size_t mi = 0; mi < S->n_m && wsel[w] && asel[a]; mi++)
				jobs[n++] = (struct ctq_probe_job){(enum ctq_probe_weights)w,
								   (enum ctq_probe_acts)a, S->ms[mi]};
	/* the oracle once per job, every backend held to it; the next job's
	 * computed while this one runs, unless serial */
	enum ctq_status st = ctq_probe_run_jobs(bes, S->n_backends, L, jobs, n, S->seed, S->policy,
						!S->serial, session_results, S, err);
	free(jobs);
	return st;
}

/* Probes one linear module of t with its real weights; its (K, N) joins
 * geo (n_geo of them) when new. */
static enum ctq_status model_linear(struct ctq_probe_session *S, struct ctq_target *t,
				    const struct ctq_shard_plan *sp, size_t i, int64_t (*geo)[2],
				    size_t *n_geo, struct ctq_error *err)
{
	static const bool real_w[CTQ_PW_COUNT] = {true, false, false, false, false};
	struct ctq_linear l;
	enum ctq_status st = ctq_load_linear(&t->ck, &t->plan, sp, i, 0, &l, err);
	if (st)
		return st;
	float *wf = NULL;
	struct ctq_probe_layer L = {.name = l.name, .K = l.K, .N = l.N, .bias = l.bias};
	if (l.quantized) {
		L.wq = l.w_i8;
		L.sw = l.scale;
	} else {
		wf = ctq_malloc((size_t)(l.N * l.K) * sizeof *wf);
		if (!wf) {
			ctq_linear_free(&l);
			return ctq_error_set(err, CTQ_ERR_NOMEM, l.name, "out of memory");
		}
		ctq_convert_to_f32(l.w_bf16, CTQ_DTYPE_BF16, (size_t)(l.N * l.K), wf);
		L.w = wf;
	}
	st = ctq_probe_session_layer(S, &L, real_w, S->real_asel, err);
	size_t g;
	for (g = 0; g < *n_geo; g++)
		if (geo[g][0] == l.K && geo[g][1] == l.N)
			break;
	if (g == *n_geo) {
		geo[*n_geo][0] = l.K;
		geo[*n_geo][1] = l.N;
		(*n_geo)++;
	}
	free(wf);
	ctq_linear_free(&l);
	return st;
}

enum ctq_status ctq_probe_session_model(struct ctq_probe_session *S, const char *dir,
					struct ctq_error *err)
{
	struct ctq_target tg;
	const struct ctq_plan *plan = &tg.plan;
	const struct ctq_modules *mods = &tg.mods;
	struct ctq_shard_plan sp;
	memset(&sp, 0, sizeof sp);
	enum ctq_status st = ctq_target_open_plan(&tg, dir, err);
	int64_t (*geo)[2] = NULL;
	size_t n_geo = 0;
	if (st)
		goto done;
	if (plan->refusal.status) {
		st = ctq_error_set(err, plan->refusal.status, plan->refusal.path, "%s",
				   plan->refusal.message);
		goto done;
	}
	if (plan->n_errors) {
		for (size_t i = 0; i < plan->n; i++)
			if (plan->entries[i].error) {
				st = ctq_error_set(err, plan->entries[i].error, mods->v[i].name, "%s",
						   plan->entries[i].message);
				goto done;
			}
	}
	if ((st = ctq_checkpoint_open(&tg.ck, dir, err)) || (st = ctq_shard_plan_build(&sp, plan, 1, err)))
		goto done;
	geo = ctq_calloc(mods->n + 1, sizeof *geo);
	if (!geo) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < mods->n && !st; i++)
		if (mods->v[i].kind == CTQ_MODULE_LINEAR)
			st = model_linear(S, &tg, &sp, i, geo, &n_geo, err);
	for (size_t g = 0; g < n_geo && !st; g++) {
		char name[48];
		snprintf(name, sizeof name, "%lld:%lld", (long long)geo[g][0], (long long)geo[g][1]);
		struct ctq_probe_layer L = {.name = name, .K = geo[g][0], .N = geo[g][1]};
		st = ctq_probe_session_layer(S, &L, S->wsel, S->asel, err);
	}
done:
	free(geo);
	ctq_shard_plan_free(&sp);
	ctq_target_close(&tg);
	return st;
}

cJSON *ctq_probe_summary_json(const struct ctq_probe_summary *s, const struct ctq_probe_session *S)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "backend", s->backend);
	if (s->kernel_lib) {
		cJSON_AddStringToObject(o, "kernel_lib", s->kernel_lib);
		cJSON_AddStringToObject(o, "kernel_plugin", s->kernel_plugin);
	}
	cJSON_AddStringToObject(o, "act_numerics", ctq_act_numerics_name(s->numerics));
	if (s->model)
		cJSON_AddStringToObject(o, "model", s->model);
	cJSON_AddNumberToObject(o, "passed", (double)S->passed);
	cJSON_AddNumberToObject(o, "failed", (double)S->failed);
	cJSON_AddNumberToObject(o, "seed", (double)s->seed);
	cJSON_AddStringToObject(o, "policy", s->policy);
	return o;
}
