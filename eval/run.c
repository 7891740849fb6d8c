/* ctq eval, the engine (eval/run.h): from the data set and two models to
 * the run directory's files. */
#include "eval/run.h"
#include "core/arena.h"
#include "eval/remote.h"
#include "net/openai.h"
#include "core/fileio.h"
#include "core/hf_config.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/time.h"
#include "families/eval.h"
#include "model/runner.h"
#include "results/csv_out.h"
#include "results/junit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- models ---------------------------------------------------------------------- */

static void model_free(struct ctq_eval_model *m)
{
	ctq_tokenizer_free(&m->tok);
	ctq_eval_set_free(&m->own);
	free(m->lp);
}

static void sha_file_hex(const char *path, char hex[65])
{
	unsigned char dg[CTQ_SHA256_BYTES];
	if (ctq_sha256_file(path, dg, NULL))
		snprintf(hex, 65, "unreadable");
	else
		ctq_sha256_hex(dg, hex);
}

/* The tokenizer file of a model (or the --tokenizer override), its digest,
 * the config digest and its context length. */
static enum ctq_status model_open(struct ctq_eval_model *m, const char *tokenizer,
				  const struct ctq_eval_run_options *o, struct ctq_error *err)
{
	if (m->url && !tokenizer)
		return ctq_error_set(err, CTQ_ERR_USAGE, m->url,
				     "a model behind a server needs --tokenizer PATH (its folder or tokenizer.json)");
	const char *tp = tokenizer ? tokenizer : m->dir;
	if (ctq_path_is_dir(tp))
		snprintf(m->tok_path, sizeof m->tok_path, "%s/tokenizer.json", tp);
	else
		snprintf(m->tok_path, sizeof m->tok_path, "%s", tp);
	if (!ctq_path_exists(m->tok_path))
		return ctq_error_set(err, CTQ_ERR_IO, m->tok_path,
				     "no tokenizer (a synthetic checkpoint has none: give --tokenizer PATH)");
	enum ctq_status st = ctq_tokenizer_load(&m->tok, tp, err);
	if (st)
		return st;
	sha_file_hex(m->tok_path, m->tok_sha);
	if (m->url) {
		/* The server's name and context (max_model_len) from GET /v1/models,
		 * unless the name is given. */
		long ctxlen = 0;
		snprintf(m->config_sha, sizeof m->config_sha, "server");
		if (m->served[0])
			return CTQ_OK;
		const double limit_s = o->request_timeout_s > 0 ? o->request_timeout_s : CTQ_EVAL_REMOTE_TIMEOUT_S;
		st = ctq_openai_models(m->url, (long)(limit_s * 1e3), m->served, sizeof m->served, &ctxlen, err);
		m->context = ctxlen;
		return st;
	}
	cJSON *root = NULL;
	if ((st = ctq_hf_config_load(m->dir, &root, m->config_sha, NULL, 0, err)))
		return st;
	st = ctq_hf_config_context(root, &m->context, err);
	cJSON_Delete(root);
	return st;
}

/* ---- aggregation ---------------------------------------------------------------- */

static void tally_add(struct ctq_eval_tally *t, const struct ctq_eval_tally *u)
{
	t->n += u->n, t->k_new += u->k_new, t->k_ref += u->k_ref;
	t->a += u->a, t->b += u->b, t->c += u->c, t->d += u->d, t->agree += u->agree;
	t->kl += u->kl;
}

static void group_finish(struct ctq_eval_group *g, const struct ctq_eval_tally *subj, const size_t *members,
			 size_t n_members, bool have_ref)
{
	size_t kn[CTQ_EVAL_MAX_SUBJECTS], kr[CTQ_EVAL_MAX_SUBJECTS], nn[CTQ_EVAL_MAX_SUBJECTS];
	g->n_subjects = 0;
	memset(&g->t, 0, sizeof g->t);
	double sn = 0, sr = 0;
	for (size_t i = 0; i < n_members; i++) {
		const struct ctq_eval_tally *u = &subj[members[i]];
		tally_add(&g->t, u);
		if (!u->n)
			continue;
		kn[g->n_subjects] = u->k_new;
		kr[g->n_subjects] = u->k_ref;
		nn[g->n_subjects] = u->n;
		sn += (double)u->k_new / (double)u->n;
		sr += (double)u->k_ref / (double)u->n;
		g->n_subjects++;
	}
	double S = g->n_subjects ? (double)g->n_subjects : NAN;
	g->macro_new = sn / S;
	g->macro_ref = sr / S;
	g->macro_new_se = ctq_stats_macro_se(kn, nn, g->n_subjects);
	g->macro_ref_se = ctq_stats_macro_se(kr, nn, g->n_subjects);
	if (have_ref)
		ctq_stats_paired(&g->paired, g->t.a, g->t.b, g->t.c, g->t.d, CTQ_Z95);
}

static const char *verdict_name(const struct ctq_eval_group *g, bool have_ref)
{
	if (!have_ref)
		return "";
	if (!g->gated)
		return "n/a";
	return g->verdict;
}

static double pct(size_t k, size_t n)
{
	return n ? 100.0 * (double)k / (double)n : NAN;
}

/* ---- outputs ------------------------------------------------------------------- */

static const char *const q_header[] = {CTQ_EVAL_QUESTIONS_CSV_COLUMNS};

static const char *const g_header[] = {CTQ_EVAL_GROUPS_CSV_COLUMNS};

static const char *const p_header[] = {CTQ_EVAL_PAIRED_CSV_COLUMNS};

/* A group's eval_groups.csv row for one model (k of its questions right)
 * and its eval_paired.csv row; the family writes them. */
static void g_row(struct ctq_csv *w, const struct ctq_eval_group *g, const char *model, size_t k,
		  double macro, double macro_se)
{
	const struct ctq_eval_group_row row = {.level = g->level,
					       .name = g->name,
					       .model = model,
					       .n_subjects = g->n_subjects,
					       .n = g->t.n,
					       .correct = k,
					       .acc_micro = g->t.n ? (double)k / (double)g->t.n : NAN,
					       .se_micro = ctq_stats_binom_se(k, g->t.n),
					       .acc_macro = macro,
					       .se_macro = macro_se};
	ctq_fam_eval_group_csv_row(w, &row);
}

static void p_row(struct ctq_csv *w, const struct ctq_eval_group *g)
{
	const struct ctq_eval_paired_row row = {.level = g->level,
						.name = g->name,
						.paired = &g->paired,
						.ref_correct = g->t.k_ref,
						.new_correct = g->t.k_new,
						.agreement =
							g->t.n ? (double)g->t.agree / (double)g->t.n : NAN,
						.kl_mean_nats = g->t.n ? g->t.kl / (double)g->t.n : NAN,
						.margin = g->margin,
						.verdict = verdict_name(g, true)};
	ctq_fam_eval_paired_csv_row(w, &row);
}

/* One line of the summary table. The macro row compares the macro
 * averages only: the paired statistics are of pooled questions. */
static void table_row(struct ctq_strbuf *sb, const struct ctq_eval_group *g, bool have_ref, bool macro)
{
	char name[48];
	snprintf(name, sizeof name, "%s", g->name);
	double acc = macro ? 100 * g->macro_new : pct(g->t.k_new, g->t.n);
	double se = macro ? 100 * g->macro_new_se : 100 * ctq_stats_binom_se(g->t.k_new, g->t.n);
	ctq_strbuf_printf(sb, "%-40s %6zu %7.2f %5.2f", name, g->t.n, acc, se);
	if (have_ref && macro) {
		ctq_strbuf_printf(sb, "  %7.2f %+6.2f", 100 * g->macro_ref, acc - 100 * g->macro_ref);
	} else if (have_ref) {
		const struct ctq_paired *p = &g->paired;
		ctq_strbuf_printf(sb, "  %7.2f %+6.2f [%+6.2f, %+6.2f] %5zu %5zu %9.3g %6.1f %9.3g  %s",
				  pct(g->t.k_ref, g->t.n), 100 * p->diff, 100 * p->lo, 100 * p->hi, p->b,
				  p->c, p->p_mcnemar, pct(g->t.agree, g->t.n),
				  g->t.n ? g->t.kl / (double)g->t.n : NAN, verdict_name(g, true));
	}
	ctq_strbuf_append(sb, "\n");
}

static void table_head(struct ctq_strbuf *sb, bool have_ref)
{
	ctq_strbuf_printf(sb, "%-40s %6s %7s %5s", "group", "n", "acc %", "se");
	if (have_ref)
		ctq_strbuf_printf(sb, "  %7s %6s %-16s %5s %5s %9s %6s %9s  %s", "ref %", "diff",
				  "95% CI Newcombe", "r->w", "w->r", "McNemar p", "agree%", "KL nats",
				  "verdict");
	ctq_strbuf_append(sb, "\n");
}

/* Category of a subject under the chosen protocol. */
static const char *category_of(const struct ctq_eval_run_options *o, const struct ctq_subject_meta *m)
{
	if (o->bench == CTQ_BENCH_MMLU && o->protocol == CTQ_PROTO_LM_EVAL)
		return m->category_lm_eval;
	return m->category;
}

const char *ctq_eval_overflow_name(enum ctq_overflow r)
{
	return r == CTQ_OVERFLOW_DROP_LAST_SHOT ? "drop the last shot until it fits"
	       : r == CTQ_OVERFLOW_DROP_LONGEST ? "drop the longest shots (CMMLU gen_prompt)"
						: "left-truncate (lm-eval)";
}

/* ---- open ------------------------------------------------------------------------ */

static enum ctq_status check_data(const struct ctq_eval_run *r, struct ctq_error *err)
{
	const struct ctq_eval_run_options *o = &r->o;
	const struct ctq_eval_data *data = &r->data;
	if (data->n > CTQ_EVAL_MAX_SUBJECTS)
		return ctq_error_set(err, CTQ_ERR_USAGE, o->data_dir, "%zu subjects; at most %d", data->n,
				     CTQ_EVAL_MAX_SUBJECTS);
	for (size_t i = 0; i < data->n; i++)
		if (!data->subjects[i].items.has_answers)
			return ctq_error_set(err, CTQ_ERR_USAGE, data->subjects[i].path,
					     "the %s %s split has no answers (C-Eval withheld its test labels): it loads but cannot be scored; use --split val",
					     ctq_bench_name(o->bench), o->split);
	return CTQ_OK;
}

/* The questions of the candidate's tokenizer, and of the reference's when
 * it tokenizes otherwise. */
static enum ctq_status prepare(struct ctq_eval_run *r, struct ctq_error *err)
{
	const struct ctq_eval_run_options *o = &r->o;
	struct ctq_eval_model *cand = &r->cand, *base = &r->base;
	int64_t model_ctx = cand->context;
	if (r->have_ref && base->context && (!model_ctx || base->context < model_ctx))
		model_ctx = base->context;
	r->eo = (struct ctq_eval_options){
		.bench = o->bench, .protocol = o->protocol, .shots = (int)o->shots,
		.max_context = o->max_context ? o->max_context : model_ctx ? model_ctx : CTQ_EVAL_DEFAULT_CONTEXT,
		.limit = (size_t)o->limit, .add_bos = o->add_bos, .bos_id = cand->tok.bos_id};
	double t_prep = ctq_now_s();
	enum ctq_status st;
	if ((st = ctq_eval_prepare(&r->shared, &r->data, &r->eo, &cand->tok, err)))
		return st;
	cand->set = &r->shared;
	if (r->have_ref) {
		if (!strcmp(base->tok_sha, cand->tok_sha) && base->tok.bos_id == cand->tok.bos_id) {
			base->set = &r->shared;
		} else {
			struct ctq_eval_options ro = r->eo;
			ro.bos_id = base->tok.bos_id;
			if ((st = ctq_eval_prepare(&base->own, &r->data, &ro, &base->tok, err)))
				return st;
			base->set = &base->own;
		}
	}
	r->prep_s = ctq_now_s() - t_prep;
	if (r->shared.n == 0)
		return ctq_error_set(err, CTQ_ERR_USAGE, o->data_dir, "no questions to evaluate");
	return CTQ_OK;
}

enum ctq_status ctq_eval_run_open(struct ctq_eval_run *r, const struct ctq_eval_run_options *o,
				  struct ctq_error *err)
{
	memset(r, 0, sizeof *r);
	r->o = *o;
	r->cand.dir = o->url ? NULL : o->model;
	r->base.dir = o->ref_url ? NULL : o->ref;
	r->cand.url = o->url;
	r->base.url = o->ref_url;
	r->have_ref = o->ref || o->ref_url;
	if (o->url && o->served_name)
		snprintf(r->cand.served, sizeof r->cand.served, "%s", o->served_name);
	if (o->ref_url && o->ref_served_name)
		snprintf(r->base.served, sizeof r->base.served, "%s", o->ref_served_name);
	ctq_strbuf_init(&r->table);
	enum ctq_status st;
	if ((st = ctq_eval_data_load(&r->data, o->bench, o->data_dir, o->split, o->n_subjects ? o->subjects : NULL,
				     o->n_subjects, o->shots > 0, err)) ||
	    (st = check_data(r, err)))
		return st;
	/* The inputs first (data above, the models' configs and tokenizers),
	 * then the backends, before the prompts are tokenized: a broken input
	 * is what is said on any machine, and no GPU is exit 3 before the long
	 * part. A run whose models are all behind servers opens none. */
	const bool local = r->cand.dir || r->base.dir;
	if ((st = model_open(&r->cand, o->tokenizer, o, err)) ||
	    (r->have_ref && (st = model_open(&r->base, o->tokenizer, o, err))) ||
	    (local && (st = ctq_model_open_ranks(&r->mdl, o->backend, (int)o->tp, o->numerics, err))) ||
	    (st = prepare(r, err)))
		return st;
	char *desc = r->device;
	if (!local) {
		snprintf(desc, sizeof r->device, "OpenAI-compatible server at %s", o->url ? o->url : o->ref_url);
		if (o->url && o->ref_url && strcmp(o->url, o->ref_url)) {
			size_t dl = strlen(desc);
			snprintf(desc + dl, sizeof r->device - dl, " (reference at %s)", o->ref_url);
		}
		r->protocol_id = ctq_protocol_id(o->bench, o->protocol);
		r->macro_head = ctq_protocol_macro(o->bench, o->protocol);
		return CTQ_OK;
	}
	snprintf(desc, sizeof r->device, "%s", r->mdl.device);
	if (o->url || o->ref_url) {
		size_t dl = strlen(desc);
		snprintf(desc + dl, sizeof r->device - dl, "; %s at %s", o->url ? "candidate" : "reference",
			 o->url ? o->url : o->ref_url);
	}
	if (o->numerics != CTQ_ACT_NUMERICS_CTQ) {
		size_t dl = strlen(desc);
		snprintf(desc + dl, sizeof r->device - dl, ", %s activation numerics",
			 ctq_act_numerics_name(o->numerics));
	}
	r->protocol_id = ctq_protocol_id(o->bench, o->protocol);
	r->macro_head = ctq_protocol_macro(o->bench, o->protocol);
	return CTQ_OK;
}

/* ---- scoring --------------------------------------------------------------------- */

static enum ctq_status model_score(struct ctq_eval_run *r, struct ctq_eval_model *m, const char *label,
				   const struct ctq_eval_run_progress *p, struct ctq_error *err)
{
	const struct ctq_eval_run_options *o = &r->o;
	const struct ctq_eval_set *s = m->set;
	m->lp = ctq_calloc(s->n ? s->n : 1, sizeof *m->lp);
	if (!m->lp)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	if (m->url) {
		const struct ctq_eval_remote_options ro = {.url = m->url, .model = m->served,
							   .concurrency = o->concurrency,
							   .request_timeout_s = o->request_timeout_s, .tok = &m->tok};
		if (p && p->begin)
			p->begin(p->ctx, label);
		return ctq_eval_remote_score(&ro, s, m->lp, p ? p->step : NULL, p ? p->ctx : NULL,
					     &m->counters, &m->remote, err);
	}
	const struct ctq_model_limits shape = {
		.max_slots = o->slots < (long)s->n ? o->slots : (long)(s->n ? s->n : 1),
		.max_len = s->max_len,
		.max_tokens = o->max_tokens};
	enum ctq_status st = ctq_model_load(&r->mdl, m->dir, &shape, err);
	if (!st) {
		m->load_s = r->mdl.load_s;
		m->n_quantized = r->mdl.n_quantized;
		m->n_dense = r->mdl.n_dense;
		m->weight_bytes = r->mdl.weight_bytes;
		if (p && p->begin)
			p->begin(p->ctx, label);
		st = ctq_eval_score(&r->mdl, s, m->lp, p ? p->step : NULL, p ? p->ctx : NULL, &m->counters,
				    err);
	}
	ctq_model_unload(&r->mdl);
	return st;
}

enum ctq_status ctq_eval_run_score(struct ctq_eval_run *r, const struct ctq_eval_run_progress *p,
				   struct ctq_error *err)
{
	enum ctq_status st;
	if (r->have_ref && (st = model_score(r, &r->base, "reference", p, err)))
		return st;
	return model_score(r, &r->cand, r->have_ref ? "candidate" : "eval", p, err);
}

/* ---- summary --------------------------------------------------------------------- */

/* Per-subject tallies. */
static void tally_subjects(struct ctq_eval_run *r)
{
	const bool have_ref = r->have_ref;
	for (size_t i = 0; i < r->shared.n; i++) {
		const struct ctq_eval_item *it = &r->shared.items[i];
		const struct ctq_question *q = &r->data.subjects[it->subject].items.q[it->index];
		struct ctq_eval_tally *t = &r->subj[it->subject];
		int gold = q->answer - 'A', cn = ctq_eval_argmax4(r->cand.lp[i]);
		bool rn = cn == gold;
		t->n++;
		t->k_new += rn;
		if (have_ref) {
			int cr = ctq_eval_argmax4(r->base.lp[i]);
			bool rr = cr == gold;
			t->k_ref += rr;
			t->a += rr && rn, t->b += rr && !rn, t->c += !rr && rn, t->d += !rr && !rn;
			t->agree += cr == cn;
			t->kl += ctq_stats_kl(r->base.lp[i], r->cand.lp[i], 4);
		}
	}
}

/* Groups: subjects, categories, the benchmark's extra sets, overall; then
 * the verdicts. */
static enum ctq_status make_groups(struct ctq_eval_run *r, struct ctq_error *err)
{
	const struct ctq_eval_run_options *o = &r->o;
	const struct ctq_eval_data *data = &r->data;
	const bool have_ref = r->have_ref;
	size_t n_cat;
	const char *const *cats = ctq_bench_categories(o->bench, &n_cat);
	size_t n_groups = data->n + n_cat + 3, ng = 0;
	struct ctq_eval_group *groups = r->groups = ctq_calloc(n_groups, sizeof *groups);
	size_t *members = ctq_calloc(data->n, sizeof *members);
	if (!groups || !members) {
		free(members);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	}
	for (size_t s = 0; s < data->n; s++) {
		struct ctq_eval_group *g = &groups[ng++];
		*g = (struct ctq_eval_group){.level = "subject", .name = data->subjects[s].meta->name,
					     .margin = o->subject_margin};
		group_finish(g, r->subj, &s, 1, have_ref);
		g->gated = have_ref && g->t.n >= (size_t)o->min_subject_n;
	}
	for (size_t c = 0; c <= n_cat + 1; c++) {
		const char *name = c < n_cat ? cats[c]
				   : c == n_cat ? (o->bench == CTQ_BENCH_CEVAL   ? "Hard"
						   : o->bench == CTQ_BENCH_CMMLU ? "China specific"
										 : NULL)
						: "overall";
		if (!name)
			continue;
		size_t nm = 0;
		for (size_t s = 0; s < data->n; s++) {
			const struct ctq_subject_meta *m = data->subjects[s].meta;
			bool in = c < n_cat ? !strcmp(category_of(o, m), name)
				  : c == n_cat ? (o->bench == CTQ_BENCH_CEVAL ? m->hard : m->china_specific)
					       : true;
			if (in)
				members[nm++] = s;
		}
		if (!nm)
			continue;
		struct ctq_eval_group *g = &groups[ng++];
		*g = (struct ctq_eval_group){.level = c == n_cat + 1 ? "overall" : "category", .name = name,
					     .margin = o->margin};
		group_finish(g, r->subj, members, nm, have_ref);
		g->gated = have_ref && c == n_cat + 1;
	}
	free(members);
	r->n_groups = ng;
	r->any_inferior = false;
	for (size_t i = 0; i < ng; i++) {
		struct ctq_eval_group *g = &groups[i];
		/* Non-inferior: the whole interval lies above -margin. Inferior: it
		 * lies below. Otherwise the data cannot tell (inconclusive); the gate
		 * fails for both, since non-inferiority was not shown. */
		const double m = -g->margin / 100.0;
		g->verdict = g->paired.lo > m ? "non-inferior" : g->paired.hi < m ? "inferior" : "inconclusive";
		g->inferior = g->gated && strcmp(g->verdict, "non-inferior");
		r->any_inferior |= g->inferior;
	}
	return CTQ_OK;
}

/* The summary table. */
static void render_table(struct ctq_eval_run *r)
{
	const struct ctq_eval_run_options *o = &r->o;
	const bool have_ref = r->have_ref, macro_head = r->macro_head;
	const struct ctq_eval_group *groups = r->groups, *overall = &groups[r->n_groups - 1];
	const struct ctq_eval_model *cand = &r->cand, *base = &r->base;
	struct ctq_strbuf *table = &r->table;
	table_head(table, have_ref);
	for (size_t i = 0; i < r->n_groups; i++) {
		if (i == r->data.n || !strcmp(groups[i].level, "overall"))
			ctq_strbuf_append(table, "\n");
		table_row(table, &groups[i], have_ref, false);
	}
	char macro_name[64];
	snprintf(macro_name, sizeof macro_name, "overall (macro, %zu subjects)", overall->n_subjects);
	struct ctq_eval_group macro_row = *overall;
	macro_row.name = macro_name;
	table_row(table, &macro_row, have_ref, true);
	int64_t fed = cand->counters.tokens_fed + (have_ref ? base->counters.tokens_fed : 0);
	double secs = cand->counters.seconds + (have_ref ? base->counters.seconds : 0);
	ctq_strbuf_printf(table,
			  "\nheadline (%s): %.2f%% ± %.2f",
			  macro_head ? "macro" : "micro",
			  macro_head ? 100 * overall->macro_new : pct(overall->t.k_new, overall->t.n),
			  macro_head ? 100 * overall->macro_new_se
				     : 100 * ctq_stats_binom_se(overall->t.k_new, overall->t.n));
	if (have_ref)
		ctq_strbuf_printf(table, " (reference %.2f%%); verdict %s at margin %.2g points overall, "
				  "%.2g per subject with n >= %ld",
				  macro_head ? 100 * overall->macro_ref : pct(overall->t.k_ref, overall->t.n),
				  !r->any_inferior ? "non-inferior"
				  : !strcmp(overall->verdict, "inferior") ? "INFERIOR"
				  : "NOT SHOWN non-inferior (inconclusive: the interval straddles -margin)",
				  o->margin, o->subject_margin,
				  o->min_subject_n);
	ctq_strbuf_printf(table,
			  "\ntokens: %lld through the model (%lld in the prompts; shared prefixes computed "
			  "once per slot) in %.2f s: %.0f tokens/s, %.1f questions/s; preparation %.2f s\n",
			  (long long)fed,
			  (long long)(cand->counters.prompt_tokens + (have_ref ? base->counters.prompt_tokens : 0)),
			  secs, secs > 0 ? (double)fed / secs : 0,
			  secs > 0 ? (double)(r->shared.n * (have_ref ? 2 : 1)) / secs : 0, r->prep_s);
}

enum ctq_status ctq_eval_run_summarize(struct ctq_eval_run *r, struct ctq_error *err)
{
	enum ctq_status st;
	r->subj = ctq_calloc(r->data.n, sizeof *r->subj);
	if (!r->subj)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	tally_subjects(r);
	if ((st = make_groups(r, err)))
		return st;
	render_table(r);
	if (r->table.oom)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	return CTQ_OK;
}

/* ---- the run directory ----------------------------------------------------------- */

static enum ctq_status write_questions(const struct ctq_eval_run *r, struct ctq_run *run,
				       struct ctq_error *err)
{
	const struct ctq_eval_run_options *o = &r->o;
	const struct ctq_eval_model *cand = &r->cand, *base = &r->base;
	struct ctq_csv csv = {0};
	enum ctq_status st =
		ctq_run_csv_open(run, "eval_questions.csv", &csv, q_header, sizeof q_header / sizeof *q_header, err);
	if (st)
		return st;
	for (size_t i = 0; i < r->shared.n; i++) {
		const struct ctq_eval_item *it = &r->shared.items[i];
		const struct ctq_eval_subject *s = &r->data.subjects[it->subject];
		const struct ctq_question *q = &s->items.q[it->index];
		int cn = ctq_eval_argmax4(cand->lp[i]);
		struct ctq_eval_question_row row = {.benchmark = ctq_bench_name(o->bench),
						    .protocol = r->protocol_id,
						    .split = o->split,
						    .subject = s->meta->name,
						    .category = category_of(o, s->meta),
						    .id = q->id,
						    .line = q->line,
						    .shots = it->shots,
						    .prompt_tokens = (long long)it->n_prompt,
						    .context_tokens = (long long)it->n_ctx,
						    .truncated = it->truncated,
						    .prompt_sha256 = it->sha256,
						    .answer = q->answer,
						    .chosen = (char)('A' + cn),
						    .correct = cn == q->answer - 'A',
						    .lp = cand->lp[i]};
		if (r->have_ref) {
			int cr = ctq_eval_argmax4(base->lp[i]);
			row.ref_lp = base->lp[i];
			row.ref_chosen = (char)('A' + cr);
			row.ref_correct = cr == q->answer - 'A';
			row.kl_ref_new = ctq_stats_kl(base->lp[i], cand->lp[i], 4);
		}
		ctq_fam_eval_question_csv_row(&csv, &row);
	}
	return ctq_csv_close(&csv, err);
}

static enum ctq_status write_groups(const struct ctq_eval_run *r, struct ctq_run *run,
				    struct ctq_error *err)
{
	const struct ctq_eval_group *groups = r->groups;
	struct ctq_csv csv = {0};
	enum ctq_status st =
		ctq_run_csv_open(run, "eval_groups.csv", &csv, g_header, sizeof g_header / sizeof *g_header, err);
	if (st)
		return st;
	for (size_t i = 0; i < r->n_groups; i++) {
		g_row(&csv, &groups[i], "candidate", groups[i].t.k_new, groups[i].macro_new,
		      groups[i].macro_new_se);
		if (r->have_ref)
			g_row(&csv, &groups[i], "reference", groups[i].t.k_ref, groups[i].macro_ref,
			      groups[i].macro_ref_se);
	}
	return ctq_csv_close(&csv, err);
}

/* eval_paired.csv and junit.xml: one case per gated group. */
static enum ctq_status write_paired(const struct ctq_eval_run *r, struct ctq_run *run,
				    struct ctq_error *err)
{
	const size_t ng = r->n_groups;
	struct ctq_csv csv = {0};
	enum ctq_status st =
		ctq_run_csv_open(run, "eval_paired.csv", &csv, p_header, sizeof p_header / sizeof *p_header, err);
	if (st)
		return st;
	for (size_t i = 0; i < ng; i++)
		p_row(&csv, &r->groups[i]);
	if ((st = ctq_csv_close(&csv, err)))
		return st;
	size_t nc = 0;
	struct ctq_junit_case *cases = ctq_calloc(ng, sizeof *cases);
	char (*msgs)[256] = ctq_calloc(ng, sizeof *msgs);
	if (!cases || !msgs) {
		free(cases), free(msgs);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval", "out of memory");
	}
	for (size_t i = 0; i < ng; i++) {
		const struct ctq_eval_group *g = &r->groups[i];
		if (!g->gated)
			continue;
		snprintf(msgs[nc], sizeof msgs[nc],
			 "new - ref = %+.2f points, 95%% CI [%+.2f, %+.2f]; margin -%.2g points",
			 100 * g->paired.diff, 100 * g->paired.lo, 100 * g->paired.hi, g->margin);
		cases[nc] = (struct ctq_junit_case){.classname = g->level, .name = g->name,
						    .failed = g->inferior,
						    .message = g->inferior ? msgs[nc] : NULL};
		nc++;
	}
	char suite[64], path[1200];
	snprintf(suite, sizeof suite, "eval.%s", r->protocol_id);
	st = ctq_junit_write(ctq_run_path(run, "junit.xml", path, sizeof path), suite, cases, nc, err);
	free(cases), free(msgs);
	return st;
}

static void manifest_models(const struct ctq_eval_run *r, cJSON *ev)
{
	const struct ctq_eval_model *mr[2] = {&r->cand, r->have_ref ? &r->base : NULL};
	const char *mk[2] = {"model", "ref_model"};
	for (int m = 0; m < 2 && mr[m]; m++) {
		cJSON *j = cJSON_AddObjectToObject(ev, mk[m]);
		cJSON_AddStringToObject(j, "path", mr[m]->dir ? mr[m]->dir : mr[m]->url);
		if (mr[m]->url) {
			cJSON_AddStringToObject(j, "url", mr[m]->url);
			cJSON_AddStringToObject(j, "served_name", mr[m]->served);
			cJSON_AddStringToObject(
				j, "scoring",
				mr[m]->remote.text_prompts
					? "POST /v1/completions per choice: prompt = the text of the context + "
					  "continuation ids, max_tokens 1, echo, logprobs 1; sum of the token_logprobs "
					  "of the echoed tokens from the context's end to the prompt's"
					: "POST /v1/completions per choice: prompt = context + continuation ids, "
					  "max_tokens 0, echo, logprobs 1; sum of the continuation's token_logprobs");
			cJSON_AddStringToObject(j, "prompt_format", mr[m]->remote.text_prompts ? "text" : "token-ids");
			cJSON_AddStringToObject(j, "probe", mr[m]->remote.learned);
			if (mr[m]->remote.text_prompts)
				cJSON_AddNumberToObject(j, "continuations_tokenized_otherwise",
							(double)mr[m]->remote.cont_differ);
		}
		cJSON_AddStringToObject(j, "config_sha256", mr[m]->config_sha);
		cJSON_AddStringToObject(j, "tokenizer", mr[m]->tok_path);
		cJSON_AddStringToObject(j, "tokenizer_sha256", mr[m]->tok_sha);
		cJSON_AddNumberToObject(j, "linear_w8a8", (double)mr[m]->n_quantized);
		cJSON_AddNumberToObject(j, "linear_dense", (double)mr[m]->n_dense);
		cJSON_AddNumberToObject(j, "weight_bytes", (double)mr[m]->weight_bytes);
		cJSON_AddNumberToObject(j, "load_s", mr[m]->load_s);
		cJSON_AddNumberToObject(j, "tokens_fed", (double)mr[m]->counters.tokens_fed);
		cJSON_AddNumberToObject(j, "prompt_tokens", (double)mr[m]->counters.prompt_tokens);
		cJSON_AddNumberToObject(j, "forward_calls", (double)mr[m]->counters.calls);
		cJSON_AddNumberToObject(j, "score_s", mr[m]->counters.seconds);
		cJSON_AddNumberToObject(j, "tokens_per_s", mr[m]->counters.seconds > 0
								   ? (double)mr[m]->counters.tokens_fed /
									     mr[m]->counters.seconds
								   : 0);
	}
}

static void manifest(const struct ctq_eval_run *r, cJSON *ev)
{
	const struct ctq_eval_run_options *o = &r->o;
	const struct ctq_eval_data *data = &r->data;
	const struct ctq_eval_set *shared = &r->shared;
	const struct ctq_eval_group *overall = &r->groups[r->n_groups - 1];
	cJSON_AddStringToObject(ev, "benchmark", ctq_bench_name(o->bench));
	cJSON_AddStringToObject(ev, "protocol", r->protocol_id);
	cJSON_AddStringToObject(ev, "act_numerics", ctq_act_numerics_name(o->numerics));
	cJSON_AddStringToObject(ev, "split", o->split);
	cJSON_AddNumberToObject(ev, "shots", (double)o->shots);
	cJSON_AddStringToObject(ev, "data", o->data_dir);
	cJSON_AddNumberToObject(ev, "limit_per_subject", (double)o->limit);
	cJSON_AddStringToObject(ev, "continuation_A", ctq_prompt_continuation(o->bench, o->protocol, 0));
	cJSON_AddStringToObject(ev, "scoring",
				"sum of log-probabilities of encode(prompt + letter)[len(encode(prompt)):] (lm-eval _encode_pair); argmax of four");
	cJSON_AddStringToObject(ev, "overflow",
				ctq_eval_overflow_name(ctq_protocol_overflow(o->bench, o->protocol)));
	cJSON_AddNumberToObject(ev, "max_context", (double)r->eo.max_context);
	cJSON_AddBoolToObject(ev, "add_bos", o->add_bos);
	cJSON_AddStringToObject(ev, "headline_average", r->macro_head ? "macro" : "micro");
	cJSON_AddStringToObject(ev, "categories",
				o->bench == CTQ_BENCH_MMLU
					? (o->protocol == CTQ_PROTO_LM_EVAL ? "lm-eval mmlu groups"
									    : "hendrycks/test categories.py")
				: o->bench == CTQ_BENCH_CEVAL ? "hkust-nlp/ceval subject_mapping.json"
							      : "haonan-li/CMMLU src/categories.py");
	cJSON_AddStringToObject(ev, "macro_se", "sqrt(sum_s p_s(1-p_s)/n_s)/S (subjects fixed)");
	cJSON_AddNumberToObject(ev, "questions", (double)shared->n);
	cJSON_AddNumberToObject(ev, "subjects", (double)data->n);
	cJSON_AddNumberToObject(ev, "fewer_shots", (double)shared->n_fewer_shots);
	cJSON_AddNumberToObject(ev, "truncated", (double)shared->n_truncated);
	cJSON_AddNumberToObject(ev, "boundary_merges", (double)shared->n_merged);
	cJSON_AddNumberToObject(ev, "multi_token_continuations", (double)shared->n_multi_token);
	cJSON *df = cJSON_AddObjectToObject(ev, "data_files_sha256");
	for (size_t i = 0; i < data->n; i++) {
		char hex[65];
		sha_file_hex(data->subjects[i].path, hex);
		cJSON_AddStringToObject(df, data->subjects[i].path, hex);
		if (data->subjects[i].dev_path && strcmp(o->split, "dev")) {
			sha_file_hex(data->subjects[i].dev_path, hex);
			cJSON_AddStringToObject(df, data->subjects[i].dev_path, hex);
		}
	}
	manifest_models(r, ev);
	cJSON_AddStringToObject(ev, "device", r->device);
	cJSON_AddNumberToObject(ev, "tp", (double)o->tp);
	cJSON_AddNumberToObject(ev, "acc_micro", (double)overall->t.k_new / (double)overall->t.n);
	cJSON_AddNumberToObject(ev, "acc_macro", overall->macro_new);
	if (r->have_ref) {
		cJSON_AddNumberToObject(ev, "ref_acc_micro", (double)overall->t.k_ref / (double)overall->t.n);
		cJSON_AddNumberToObject(ev, "ref_acc_macro", overall->macro_ref);
		cJSON_AddNumberToObject(ev, "margin_points", o->margin);
		cJSON_AddNumberToObject(ev, "subject_margin_points", o->subject_margin);
		cJSON_AddNumberToObject(ev, "min_subject_n", (double)o->min_subject_n);
		cJSON_AddStringToObject(ev, "interval", "Newcombe hybrid score (method 10), 95%");
		cJSON_AddStringToObject(ev, "verdict", r->any_inferior ? (strcmp(overall->verdict, "inferior") ? "inconclusive" : "inferior") : "non-inferior");
	}
}

enum ctq_status ctq_eval_run_write(struct ctq_eval_run *r, struct ctq_run *run, struct ctq_error *err)
{
	enum ctq_status st;
	if ((st = write_questions(r, run, err)) || (st = write_groups(r, run, err)) ||
	    (r->have_ref && (st = write_paired(r, run, err))) ||
	    (st = ctq_run_write_file(run, "summary.md", r->table.data, r->table.len, err)))
		return st;
	manifest(r, cJSON_AddObjectToObject(run->manifest, "eval"));
	return CTQ_OK;
}

void ctq_eval_run_free(struct ctq_eval_run *r)
{
	if (!r)
		return;
	free(r->groups);
	free(r->subj);
	ctq_strbuf_free(&r->table);
	model_free(&r->cand);
	model_free(&r->base);
	ctq_eval_set_free(&r->shared);
	ctq_eval_data_free(&r->data);
	ctq_model_close(&r->mdl);
	memset(r, 0, sizeof *r);
}
