/* ctq eval kld, the engine (eval/kld.h): from text and two models to the
 * run directory's files. */
#include "eval/kld.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/hf_config.h"
#include "core/json.h"
#include "core/policy.h"
#include "core/sha256.h"
#include "core/time.h"
#include "core/utf8.h"
#include "eval/datasets.h"
#include "results/junit.h"
#include "stats/kld.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest text file read: 256 MiB (about 60 M tokens). */
#define TEXT_MAX_BYTES ((size_t)256 << 20)

/* ---- policy ---------------------------------------------------------------------- */

/* The criteria and their ranges; the values and why they are what they
 * are live in policies/kld.json, the built-in policy the build embeds. */
static const struct {
	const char *key;
	double min, max;
} crit_def[CTQ_KLD_N_CRIT] = {
	[CTQ_KLD_KL_MEAN_MAX] = {"kl_mean_max", 0, 100},
	[CTQ_KLD_TOP1_MIN] = {"top1_min", 0, 1},
	[CTQ_KLD_PPL_RATIO_MAX] = {"ppl_ratio_max", 1, 100},
};

/* The relative criteria, under the policy's "relative" object. */
static const struct {
	const char *key;
	double min, max;
} rel_def[CTQ_KLD_N_REL] = {
	[CTQ_KLD_REL_KL_FACTOR_MAX] = {"kl_factor_max", 1, 100},
	[CTQ_KLD_REL_TOP1_DROP_MAX] = {"top1_drop_max", 0, 1},
	[CTQ_KLD_REL_PPL_EXCESS_FACTOR_MAX] = {"ppl_excess_factor_max", 1, 100},
};

const char *ctq_kld_criterion_name(enum ctq_kld_criterion c)
{
	return c < CTQ_KLD_N_CRIT ? crit_def[c].key : "unknown";
}

const char *ctq_kld_rel_criterion_name(enum ctq_kld_rel_criterion c)
{
	return c < CTQ_KLD_N_REL ? rel_def[c].key : "unknown";
}

/* The entries of root (a policy object, or its "relative" object when rel)
 * over *p; file names it in errors. */
static enum ctq_status policy_apply(struct ctq_kld_policy *p, const cJSON *root, const char *file,
				    bool rel, struct ctq_error *err)
{
	if (!cJSON_IsObject(root))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, rel ? "relative" : file,
				     "a policy is a JSON object");
	const int n = rel ? CTQ_KLD_N_REL : CTQ_KLD_N_CRIT;
	for (const cJSON *it = root->child; it; it = it->next) {
		if (!strcmp(it->string, "about"))
			continue;
		if (!rel && !strcmp(it->string, "relative")) {
			enum ctq_status st = policy_apply(p, it, file, true, err);
			if (st)
				return st;
			continue;
		}
		int k;
		for (k = 0; k < n; k++)
			if (!strcmp(rel ? rel_def[k].key : crit_def[k].key, it->string))
				break;
		if (k == n)
			return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, it->string,
					     rel ? "unknown relative policy entry in %s (kl_factor_max, top1_drop_max, ppl_excess_factor_max)"
						 : "unknown policy entry in %s (kl_mean_max, top1_min, ppl_ratio_max, relative)",
					     file);
		const cJSON *val = ctq_json_get(it, "value"), *why = ctq_json_get(it, "reason");
		if (!cJSON_IsObject(it) || !cJSON_IsNumber(val) || !cJSON_IsString(why) || !why->valuestring[0])
			return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, it->string,
					     "expected {\"value\": number, \"reason\": \"why\"} in %s", file);
		const double x = val->valuedouble, lo = rel ? rel_def[k].min : crit_def[k].min,
			     hi = rel ? rel_def[k].max : crit_def[k].max;
		if (!(x >= lo && x <= hi))
			return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, it->string,
					     "is %g in %s; expected a number in [%g, %g]", x, file, lo, hi);
		if (rel) {
			p->rel[k] = x;
			snprintf(p->rel_reason[k], sizeof p->rel_reason[k], "%s", why->valuestring);
		} else {
			p->v[k] = x;
			snprintf(p->reason[k], sizeof p->reason[k], "%s", why->valuestring);
		}
	}
	return CTQ_OK;
}

/* policy_apply as core/policy.h calls it: a whole policy file. */
static enum ctq_status policy_apply_file(void *p, const cJSON *root, const char *file,
					 struct ctq_error *err)
{
	return policy_apply(p, root, file, false, err);
}

/* The built-in policy is policies/kld.json itself, embedded by the build
 * (core/policy.h). A broken embedded file leaves the thresholds 0 and
 * says so in source; tests/test_policies.c checks it parses and equals the file. */
void ctq_kld_policy_default(struct ctq_kld_policy *p)
{
	ctq_policy_default(p, sizeof *p, CTQ_KLD_POLICY_FILE, policy_apply_file, p->source);
}

enum ctq_status ctq_kld_policy_load(struct ctq_kld_policy *p, const char *path,
				    struct ctq_error *err)
{
	return ctq_policy_load(p, path, policy_apply_file, p->source, err);
}

/* ---- models ---------------------------------------------------------------------- */

static void sha_hex(const void *data, size_t n, char hex[65])
{
	unsigned char dg[CTQ_SHA256_BYTES];
	ctq_sha256(data, n, dg);
	ctq_sha256_hex(dg, hex);
}

/* The model's config: vocabulary, context, its digest and the weight grid
 * (quantization_config: 8; ctq_simulated_weight_bits: that). */
static enum ctq_status model_config(struct ctq_kld_model *m, struct ctq_error *err)
{
	cJSON *root = NULL;
	struct ctq_model_config cfg;
	enum ctq_status st = ctq_hf_config_load(m->dir, &root, m->config_sha, NULL, 0, err);
	if (!st && !(st = ctq_model_config_parse(&cfg, root, err)) &&
	    !(st = ctq_hf_config_context(root, &m->context, err))) {
		m->vocab = cfg.vocab;
		const cJSON *wb = ctq_json_get(root, "ctq_simulated_weight_bits");
		m->weight_bits = cJSON_IsNumber(wb) ? (int)wb->valuedouble
				 : ctq_json_get(root, "quantization_config") ? 8
									     : 0;
	}
	cJSON_Delete(root);
	return st;
}

static enum ctq_status open_tokenizer(struct ctq_kld_run *r, struct ctq_error *err)
{
	const struct ctq_kld_options *o = &r->o;
	struct ctq_kld_model *ms[2] = {&r->base, &r->cand};
	for (int i = 0; i < 2; i++) {
		const char *tp = o->tokenizer ? o->tokenizer : ms[i]->dir;
		if (ctq_path_is_dir(tp))
			snprintf(ms[i]->tok_path, sizeof ms[i]->tok_path, "%s/tokenizer.json", tp);
		else
			snprintf(ms[i]->tok_path, sizeof ms[i]->tok_path, "%s", tp);
		if (!ctq_path_exists(ms[i]->tok_path))
			return ctq_error_set(err, CTQ_ERR_IO, ms[i]->tok_path,
					     "no tokenizer (a synthetic checkpoint has none: give --tokenizer PATH)");
		unsigned char dg[CTQ_SHA256_BYTES];
		enum ctq_status st = ctq_sha256_file(ms[i]->tok_path, dg, err);
		if (st)
			return st;
		ctq_sha256_hex(dg, ms[i]->tok_sha);
	}
	if (strcmp(r->base.tok_sha, r->cand.tok_sha))
		return ctq_error_set(err, CTQ_ERR_USAGE, r->cand.tok_path,
				     "differs from the reference's %s: KL needs both models to read the same tokens (give --tokenizer PATH to use one for both)",
				     r->base.tok_path);
	if (r->base.vocab != r->cand.vocab)
		return ctq_error_set(err, CTQ_ERR_USAGE, r->cand.dir,
				     "vocabulary %lld; the reference %s has %lld: KL over the vocabulary needs the same one",
				     (long long)r->cand.vocab, r->base.dir, (long long)r->base.vocab);
	enum ctq_status st = ctq_tokenizer_load(&r->tok, o->tokenizer ? o->tokenizer : r->cand.dir, err);
	if (st)
		return st;
	if ((int64_t)ctq_tokenizer_vocab_size(&r->tok) > r->cand.vocab)
		return ctq_error_set(err, CTQ_ERR_USAGE, r->cand.tok_path,
				     "has %zu tokens; the model's vocabulary is %lld",
				     ctq_tokenizer_vocab_size(&r->tok), (long long)r->cand.vocab);
	return CTQ_OK;
}

/* ---- text ------------------------------------------------------------------------ */

/* The questions and answers of a benchmark split as text, interleaved
 * across subjects (question i of every subject, then i + 1), so that the
 * first tokens of the text already cover every subject. */
static enum ctq_status bench_text(const char *spec, const char *split, struct ctq_strbuf *sb,
				  char *name, size_t cap, struct ctq_error *err)
{
	char bench_name[16] = "", dir[1024];
	const char *eq = strchr(spec, '=');
	if (eq && (size_t)(eq - spec) < sizeof bench_name) {
		memcpy(bench_name, spec, (size_t)(eq - spec));
		bench_name[eq - spec] = '\0';
		snprintf(dir, sizeof dir, "%s", eq + 1);
	} else {
		snprintf(dir, sizeof dir, "%s", spec);
		size_t n = strlen(dir);
		while (n > 1 && dir[n - 1] == '/')
			dir[--n] = '\0';
		const char *base = strrchr(dir, '/');
		snprintf(bench_name, sizeof bench_name, "%s", base ? base + 1 : dir);
	}
	enum ctq_bench b = ctq_bench_parse(bench_name);
	if (b == CTQ_BENCH_COUNT)
		return ctq_error_set(err, CTQ_ERR_USAGE, spec,
				     "names no benchmark: the folder must be called mmlu, ceval or cmmlu, or give BENCH=DIR");
	if (!split)
		split = b == CTQ_BENCH_CMMLU ? "test" : "val";
	struct ctq_eval_data d;
	enum ctq_status st = ctq_eval_data_load(&d, b, dir, split, NULL, 0, false, err);
	if (st)
		return st;
	size_t longest = 0;
	for (size_t s = 0; s < d.n; s++)
		if (d.subjects[s].items.n > longest)
			longest = d.subjects[s].items.n;
	for (size_t i = 0; i < longest; i++)
		for (size_t s = 0; s < d.n; s++) {
			const struct ctq_question_file *f = &d.subjects[s].items;
			if (i >= f->n)
				continue;
			const struct ctq_question *q = &f->q[i];
			ctq_strbuf_printf(sb, "%s\nA. %s\nB. %s\nC. %s\nD. %s\n", q->question,
					  q->choice[0], q->choice[1], q->choice[2], q->choice[3]);
			if (q->answer)
				ctq_strbuf_printf(sb, "Answer: %c\n", q->answer);
			ctq_strbuf_append(sb, "\n");
		}
	snprintf(name, cap, "%s/%s", ctq_bench_name(b), split);
	ctq_eval_data_free(&d);
	return sb->oom ? ctq_error_set(err, CTQ_ERR_NOMEM, spec, "out of memory") : CTQ_OK;
}

/* Tokenizes text into source s and checks it holds one window. */
static enum ctq_status source_tokens(struct ctq_kld_run *r, struct ctq_kld_source *s,
				     const char *text, size_t len, struct ctq_error *err)
{
	const struct ctq_kld_options *o = &r->o;
	s->n_bytes = len;
	sha_hex(text, len, s->sha256);
	enum ctq_status st = ctq_tokenizer_encode(&r->tok, text, len, false, &s->ids, &s->n_ids, err);
	if (st)
		return st;
	s->n_ids_all = s->n_ids;
	if (o->max_tokens > 0 && s->n_ids > (size_t)o->max_tokens)
		s->n_ids = (size_t)o->max_tokens;
	if (s->n_ids < (size_t)o->ctx) {
		if (s->n_ids < s->n_ids_all)
			return ctq_error_set(err, CTQ_ERR_USAGE, s->name,
					     "--max-tokens %ld leaves %zu of its %zu tokens; one window is --ctx %ld tokens",
					     o->max_tokens, s->n_ids, s->n_ids_all, o->ctx);
		return ctq_error_set(err, CTQ_ERR_USAGE, s->name,
				     "tokenizes to %zu tokens (%zu bytes); one window is --ctx %ld tokens: give more text or a smaller --ctx",
				     s->n_ids, len, o->ctx);
	}
	return CTQ_OK;
}

/* --save-text: DIR/BENCH-SPLIT.txt ("mmlu/val" -> mmlu-val.txt). */
static enum ctq_status save_text(const char *dir, const char *name, const char *text, size_t len,
				 struct ctq_error *err)
{
	char file[300], *path = NULL;
	snprintf(file, sizeof file, "%s.txt", name);
	for (char *c = file; *c; c++)
		if (*c == '/')
			*c = '-';
	enum ctq_status st = ctq_mkdirs(dir, err);
	if (st)
		return st;
	if (!(path = ctq_path_join(dir, file)))
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	st = ctq_file_write_atomic(path, text, len, err);
	free(path);
	return st;
}

static enum ctq_status read_sources(struct ctq_kld_run *r, struct ctq_error *err)
{
	const struct ctq_kld_options *o = &r->o;
	r->n_src = o->n_texts + o->n_data;
	if (!r->n_src)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--text", "no text: give --text FILE or --data DIR");
	if (r->n_src > CTQ_KLD_MAX_SOURCES)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--text", "%zu text sources; at most %d",
				     r->n_src, CTQ_KLD_MAX_SOURCES);
	r->src = ctq_calloc(r->n_src, sizeof *r->src);
	r->src_names = ctq_calloc(r->n_src, sizeof *r->src_names);
	if (!r->src || !r->src_names)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory");
	enum ctq_status st = CTQ_OK;
	for (size_t i = 0; i < r->n_src && !st; i++) {
		struct ctq_kld_source *s = &r->src[i];
		r->src_names[i] = s->name;
		if (i < o->n_texts) {
			snprintf(s->name, sizeof s->name, "%s", o->texts[i]);
			char *text = NULL;
			size_t len = 0, bad = 0;
			if ((st = ctq_file_read(o->texts[i], TEXT_MAX_BYTES, &text, &len, err)))
				break;
			if (!ctq_utf8_valid(text, len, &bad))
				st = ctq_error_set(err, CTQ_ERR_PARSE, o->texts[i],
						   "is not UTF-8 (the first invalid byte is at offset %zu)", bad);
			else
				st = source_tokens(r, s, text, len, err);
			ctq_free(text);
		} else {
			struct ctq_strbuf sb;
			ctq_strbuf_init(&sb);
			st = bench_text(o->data[i - o->n_texts], o->split, &sb, s->name, sizeof s->name, err);
			if (!st && o->save_text)
				st = save_text(o->save_text, s->name, sb.data ? sb.data : "", sb.len, err);
			if (!st)
				st = source_tokens(r, s, sb.data ? sb.data : "", sb.len, err);
			ctq_strbuf_free(&sb);
		}
	}
	return st;
}

/* Windows start every stride tokens while a whole window fits. */
static enum ctq_status lay_windows(struct ctq_kld_run *r, struct ctq_error *err)
{
	const size_t ctx = (size_t)r->o.ctx, stride = (size_t)r->o.stride;
	r->n_win = 0;
	for (size_t i = 0; i < r->n_src; i++) {
		struct ctq_kld_source *s = &r->src[i];
		s->first_window = r->n_win;
		s->n_windows = (s->n_ids - ctx) / stride + 1;
		r->n_win += s->n_windows;
	}
	const int64_t first = r->o.ctx / 2, per = r->o.ctx - 1 - first;
	r->win = ctq_calloc(r->n_win, sizeof *r->win);
	r->n_tok = r->n_win * (size_t)per;
	r->tok_kl = ctq_calloc(r->n_tok ? r->n_tok : 1, sizeof *r->tok_kl);
	r->hist = ctq_calloc(r->n_src * CTQ_KLD_HIST_BINS, sizeof *r->hist);
	if (!r->win || !r->tok_kl || !r->hist)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory");
	for (size_t i = 0; i < r->n_src; i++)
		for (size_t k = 0; k < r->src[i].n_windows; k++) {
			struct ctq_kld_window *w = &r->win[r->src[i].first_window + k];
			w->source = i;
			w->index = k;
			w->start = (int64_t)(k * stride);
			w->n = per;
		}
	return CTQ_OK;
}

/* --reference-run DIR: its eval_kld.csv must hold exactly this run's
 * windows (source, number, first token, scored tokens), in order. */
static enum ctq_status reference_run_open(struct ctq_kld_run *r, struct ctq_error *err)
{
	const char *dir = r->o.reference_run;
	char *path = ctq_path_join(dir, "eval_kld.csv");
	if (!path)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	enum ctq_status st = CTQ_OK;
	if (!ctq_path_exists(path)) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, path,
				   "is missing; --reference-run names the run directory of a ctq eval kld run");
		goto done;
	}
	if ((st = ctq_fam_eval_kld_read_windows(&r->ref_run, path, err)))
		goto done;
	const struct ctq_kld_windows *x = &r->ref_run;
	const int64_t per = r->o.ctx - 1 - r->o.ctx / 2;
	if (x->n != r->n_win) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, path,
				   "holds %zu windows, this run %zu: the reference run must score the same text with the same --ctx, --stride and --max-tokens",
				   x->n, r->n_win);
		goto done;
	}
	for (size_t k = 0; k < x->n; k++) {
		const struct ctq_kld_window *a = &x->w[k], *b = &r->win[k];
		if (strcmp(x->names[a->source], r->src_names[b->source]) || a->index != b->index ||
		    a->start != b->start || a->n != per) {
			st = ctq_error_set(err, CTQ_ERR_USAGE, path,
					   "window %zu is %s #%zu from token %lld (%lld scored); this run's is %s #%zu from token %lld (%lld): not the same windows",
					   k, x->names[a->source], a->index, (long long)a->start, (long long)a->n,
					   r->src_names[b->source], b->index, (long long)b->start, (long long)per);
			goto done;
		}
	}
	r->rel.on = true;
done:
	free(path);
	return st;
}

enum ctq_status ctq_kld_open(struct ctq_kld_run *r, const struct ctq_kld_options *o,
			     struct ctq_error *err)
{
	memset(r, 0, sizeof *r);
	r->o = *o;
	if (!r->o.stride)
		r->o.stride = r->o.ctx;
	if (o->policy)
		r->pol = *o->policy;
	else
		ctq_kld_policy_default(&r->pol);
	r->cand.dir = o->model;
	r->base.dir = o->ref;
	ctq_strbuf_init(&r->table);
	if (o->ctx < 4)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--ctx", "is %ld; a window needs at least 4 tokens", o->ctx);
	enum ctq_status st;
	/* The inputs first (configs, tokenizer, texts), then the backends: a
	 * missing text or a broken config is what is said, on any machine. */
	if ((st = model_config(&r->base, err)) || (st = model_config(&r->cand, err)))
		return st;
	for (int i = 0; i < 2; i++) {
		const struct ctq_kld_model *m = i ? &r->cand : &r->base;
		if (m->context && o->ctx > m->context)
			return ctq_error_set(err, CTQ_ERR_USAGE, m->dir,
					     "max_position_embeddings is %lld; --ctx %ld does not fit",
					     (long long)m->context, o->ctx);
	}
	if ((st = open_tokenizer(r, err)) || (st = read_sources(r, err)) || (st = lay_windows(r, err)) ||
	    (o->reference_run && (st = reference_run_open(r, err))) ||
	    (st = ctq_model_open_ranks(&r->ranks, o->backend, (int)o->tp, CTQ_ACT_NUMERICS_CTQ, err)))
		return st;
	snprintf(r->device, sizeof r->device, "%s", r->ranks.device);
	return CTQ_OK;
}

/* ---- scoring --------------------------------------------------------------------- */

static enum ctq_status model_load(struct ctq_kld_run *r, struct ctq_kld_model *m,
				  struct ctq_error *err)
{
	const struct ctq_model_limits shape = {.max_slots = 1, .max_len = r->o.ctx, .max_tokens = r->o.ctx};
	ctq_model_share_ranks(&m->mdl, &r->ranks);
	enum ctq_status st = ctq_model_load(&m->mdl, m->dir, &shape, err);
	if (st)
		return st;
	m->load_s = m->mdl.load_s;
	m->n_quantized = m->mdl.n_quantized;
	m->n_dense = m->mdl.n_dense;
	return CTQ_OK;
}

static enum ctq_status forward(struct ctq_kld_run *r, struct ctq_kld_model *m, const int32_t *ids,
			       const int32_t *slot, const int32_t *pos, const int64_t *rows,
			       int64_t n_rows, float *logits, struct ctq_error *err)
{
	double t = ctq_now_s();
	enum ctq_status st = ctq_model_forward(&m->mdl, ids, slot, pos, r->o.ctx, rows, n_rows, logits, err);
	m->score_s += ctq_now_s() - t;
	return st;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The scored tokens of window w from both models' logits (n, V): each
 * token's statistics in parallel (a pass over the vocabulary each), then
 * summed in token order, so the sums do not depend on the thread count. */
static void window_stats(struct ctq_kld_run *r, struct ctq_kld_window *w, const int32_t *ids,
			 const float *lr, const float *ln, double *kl, double *sorted,
			 struct ctq_kld_token *tok)
{
	const int64_t V = r->cand.vocab, first = r->o.ctx / 2;
	uint64_t *h = r->hist + w->source * CTQ_KLD_HIST_BINS;
#pragma omp parallel for schedule(static)
	for (int64_t j = 0; j < w->n; j++)
		ctq_stats_kld_token(lr + j * V, ln + j * V, V, ids[first + j + 1], &tok[j]);
	for (int64_t j = 0; j < w->n; j++) {
		const struct ctq_kld_token t = tok[j];
		kl[j] = sorted[j] = t.kl;
		w->kl_sum += t.kl;
		if (t.kl > w->kl_max)
			w->kl_max = t.kl;
		w->agree += t.top_ref == t.top_new;
		w->nll_ref -= t.lp_ref;
		w->nll_new -= t.lp_new;
		h[ctq_kld_hist_bin(t.kl)]++;
	}
	qsort(sorted, (size_t)w->n, sizeof *sorted, cmp_double);
	w->kl_median = ctq_quantile_sorted(sorted, (size_t)w->n, 0.5);
}

enum ctq_status ctq_kld_score(struct ctq_kld_run *r, ctq_kld_progress_fn progress, void *ctx,
			      struct ctq_error *err)
{
	const int64_t T = r->o.ctx, first = T / 2, n = T - 1 - first, V = r->cand.vocab;
	enum ctq_status st;
	if ((st = model_load(r, &r->base, err)) || (st = model_load(r, &r->cand, err)))
		return st;
	int32_t *ids = ctq_malloc((size_t)T * sizeof *ids);           /* (T) */
	int32_t *slot = ctq_calloc((size_t)T, sizeof *slot);          /* (T) all slot 0 */
	int32_t *pos = ctq_malloc((size_t)T * sizeof *pos);           /* (T) */
	int64_t *rows = ctq_malloc((size_t)n * sizeof *rows);         /* (n) */
	float *lr = ctq_malloc((size_t)n * (size_t)V * sizeof *lr);   /* (n, V) reference */
	float *ln = ctq_malloc((size_t)n * (size_t)V * sizeof *ln);   /* (n, V) candidate */
	double *sorted = ctq_malloc((size_t)n * sizeof *sorted);      /* (n) */
	struct ctq_kld_token *tok = ctq_malloc((size_t)n * sizeof *tok); /* (n) */
	if (!ids || !slot || !pos || !rows || !lr || !ln || !sorted || !tok) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory for the logits");
		goto done;
	}
	for (int64_t i = 0; i < T; i++)
		pos[i] = (int32_t)i;
	for (int64_t j = 0; j < n; j++)
		rows[j] = first + j;
	for (size_t k = 0; k < r->n_win && !st; k++) {
		struct ctq_kld_window *w = &r->win[k];
		memcpy(ids, r->src[w->source].ids + w->start, (size_t)T * sizeof *ids);
		if (r->o.add_bos && r->tok.bos_id >= 0)
			ids[0] = r->tok.bos_id;
		if ((st = forward(r, &r->base, ids, slot, pos, rows, n, lr, err)) ||
		    (st = forward(r, &r->cand, ids, slot, pos, rows, n, ln, err)))
			break;
		window_stats(r, w, ids, lr, ln, r->tok_kl + k * (size_t)n, sorted, tok);
		if (progress)
			progress(ctx, k + 1, r->n_win);
	}
done:
	ctq_free(ids), ctq_free(slot), ctq_free(pos), ctq_free(rows);
	ctq_free(lr), ctq_free(ln), ctq_free(sorted), ctq_free(tok);
	return st;
}

/* ---- summary --------------------------------------------------------------------- */

/* The aggregate of windows [w0, w0 + nw) and their tokens. */
static enum ctq_status aggregate(struct ctq_kld_run *r, size_t w0, size_t nw, struct ctq_kld_agg *a,
				 struct ctq_error *err)
{
	const size_t per = (size_t)(r->o.ctx - 1 - r->o.ctx / 2);
	memset(a, 0, sizeof *a);
	a->n_windows = nw;
	a->n_tokens = nw * per;
	double *kl = ctq_malloc((a->n_tokens ? a->n_tokens : 1) * sizeof *kl); /* (n_tokens) sorted */
	double *num = ctq_malloc((nw ? nw : 1) * 4 * sizeof *num);             /* (4, nw) */
	if (!kl || !num) {
		ctq_free(kl), ctq_free(num);
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory");
	}
	double *ag = num + nw, *dn = num + 2 * nw, *tk = num + 3 * nw;
	double skl = 0, sag = 0, snr = 0, snn = 0;
	for (size_t k = 0; k < nw; k++) {
		const struct ctq_kld_window *w = &r->win[w0 + k];
		num[k] = w->kl_sum;
		ag[k] = (double)w->agree;
		dn[k] = w->nll_new - w->nll_ref;
		tk[k] = (double)w->n;
		skl += w->kl_sum, sag += (double)w->agree, snr += w->nll_ref, snn += w->nll_new;
	}
	memcpy(kl, r->tok_kl + w0 * per, a->n_tokens * sizeof *kl);
	qsort(kl, a->n_tokens, sizeof *kl, cmp_double);
	const double N = (double)a->n_tokens;
	a->kl_mean = skl / N;
	a->kl_median = ctq_quantile_sorted(kl, a->n_tokens, 0.5);
	a->kl_p90 = ctq_quantile_sorted(kl, a->n_tokens, 0.90);
	a->kl_p99 = ctq_quantile_sorted(kl, a->n_tokens, 0.99);
	a->kl_p999 = ctq_quantile_sorted(kl, a->n_tokens, 0.999);
	a->kl_max = a->n_tokens ? kl[a->n_tokens - 1] : NAN;
	a->top1 = sag / N;
	a->ppl_ref = exp(snr / N);
	a->ppl_new = exp(snn / N);
	a->ppl_ratio = exp((snn - snr) / N);
	const uint64_t seed = CTQ_KLD_BOOTSTRAP_SEED;
	double lo, hi;
	int bad = ctq_stats_ratio_bootstrap(num, tk, nw, CTQ_KLD_BOOTSTRAP, seed, 0.95, &a->kl_lo, &a->kl_hi);
	bad |= ctq_stats_ratio_bootstrap(ag, tk, nw, CTQ_KLD_BOOTSTRAP, seed, 0.95, &a->top1_lo, &a->top1_hi);
	bad |= ctq_stats_ratio_bootstrap(dn, tk, nw, CTQ_KLD_BOOTSTRAP, seed, 0.95, &lo, &hi);
	a->ppl_ratio_lo = exp(lo);
	a->ppl_ratio_hi = exp(hi);
	ctq_free(kl), ctq_free(num);
	if (bad)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory");
	/* Non-inferior: every interval on the good side of its threshold;
	 * inferior: some interval wholly on the bad side. */
	const double *v = r->pol.v;
	bool good = a->kl_hi <= v[CTQ_KLD_KL_MEAN_MAX] && a->top1_lo >= v[CTQ_KLD_TOP1_MIN] &&
		    a->ppl_ratio_hi <= v[CTQ_KLD_PPL_RATIO_MAX];
	bool worse = a->kl_lo > v[CTQ_KLD_KL_MEAN_MAX] || a->top1_hi < v[CTQ_KLD_TOP1_MIN] ||
		     a->ppl_ratio_lo > v[CTQ_KLD_PPL_RATIO_MAX];
	a->verdict = nw < CTQ_KLD_MIN_WINDOWS ? "inconclusive"
		     : worse			 ? "inferior"
		     : good			 ? "non-inferior"
						 : "inconclusive";
	return CTQ_OK;
}

/* The relative verdict (eval/kld.h): paired sums over the windows, each
 * criterion's percentile bootstrap interval over windows (the same
 * resampling as the absolute intervals), the three-way rule. */
static enum ctq_status relative_judge(struct ctq_kld_run *r, struct ctq_error *err)
{
	struct ctq_kld_relative *x = &r->rel;
	const double *pol = r->pol.rel;
	const size_t n = r->n_win;
	double *b = ctq_malloc((n ? n : 1) * 5 * sizeof *b); /* (5, n) */
	if (!b)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory");
	double *kc = b, *kr = b + n, *dag = b + 2 * n, *dln = b + 3 * n, *tk = b + 4 * n;
	double skc = 0, skr = 0, sac = 0, sar = 0, sdc = 0, sdr = 0, snr = 0, snr2 = 0, N = 0;
	const double f_ppl = pol[CTQ_KLD_REL_PPL_EXCESS_FACTOR_MAX];
	for (size_t k = 0; k < n; k++) {
		const struct ctq_kld_window *c = &r->win[k], *e = &r->ref_run.w[k];
		const double dc = c->nll_new - c->nll_ref, de = e->nll_new - e->nll_ref;
		kc[k] = c->kl_sum, kr[k] = e->kl_sum;
		dag[k] = (double)c->agree - (double)e->agree;
		dln[k] = dc - de;
		tk[k] = (double)c->n;
		skc += kc[k], skr += kr[k], sac += (double)c->agree, sar += (double)e->agree;
		sdc += dc, sdr += de, snr += c->nll_ref, snr2 += e->nll_ref, N += tk[k];
	}
	x->n_windows = n;
	x->n_tokens = (size_t)N;
	x->kl_new = skc / N, x->kl_ref = skr / N;
	x->top1_new = sac / N, x->top1_ref = sar / N, x->top1_diff = (sac - sar) / N;
	x->excess_new = exp(sdc / N) - 1, x->excess_ref = exp(sdr / N) - 1;
	x->excess_factor = x->excess_ref > 0 ? x->excess_new / x->excess_ref : NAN;
	/* The candidate's log-excess may pass the reference run's by (f - 1)
	 * times its size: f x for a positive one, and a run equal to its
	 * reference passes even where the recipe beats the reference model
	 * (a negative excess, where f x would demand more than equality).
	 * The allowance is the point value; the interval is the paired
	 * difference's. */
	const double allow = (f_ppl - 1) * fabs(sdr / N);
	for (size_t k = 0; k < n; k++)
		dln[k] -= allow * tk[k];
	x->excess_margin = (sdc - sdr) / N - allow;
	x->ref_nll_rel_diff = snr > 0 ? fabs(snr - snr2) / snr : 0;
	const uint64_t seed = CTQ_KLD_BOOTSTRAP_SEED;
	int bad = 0;
	if (skr > 0) {
		x->kl_factor = skc / skr;
		bad |= ctq_stats_ratio_bootstrap(kc, kr, n, CTQ_KLD_BOOTSTRAP, seed, 0.95, &x->kl_factor_lo,
						 &x->kl_factor_hi);
	} else { /* the reference recipe is the reference model itself */
		x->kl_factor = x->kl_factor_lo = x->kl_factor_hi = skc > 0 ? INFINITY : 1.0;
	}
	bad |= ctq_stats_ratio_bootstrap(dag, tk, n, CTQ_KLD_BOOTSTRAP, seed, 0.95, &x->top1_diff_lo,
					 &x->top1_diff_hi);
	bad |= ctq_stats_ratio_bootstrap(dln, tk, n, CTQ_KLD_BOOTSTRAP, seed, 0.95, &x->excess_margin_lo,
					 &x->excess_margin_hi);
	ctq_free(b);
	if (bad)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory");
	const double fk = pol[CTQ_KLD_REL_KL_FACTOR_MAX], m = pol[CTQ_KLD_REL_TOP1_DROP_MAX];
	const bool good = x->kl_factor_hi <= fk && x->top1_diff_lo >= -m && x->excess_margin_hi <= 0;
	const bool worse = x->kl_factor_lo > fk || x->top1_diff_hi < -m || x->excess_margin_lo > 0;
	const struct ctq_kld_agg *all = &r->agg[r->n_src];
	x->outer_bound = all->kl_lo > r->pol.v[CTQ_KLD_KL_MEAN_MAX];
	x->verdict = n < CTQ_KLD_MIN_WINDOWS	 ? "inconclusive"
		     : worse || x->outer_bound ? "inferior"
		     : good		       ? "non-inferior"
					       : "inconclusive";
	r->pass = !strcmp(x->verdict, "non-inferior");
	return CTQ_OK;
}

static void relative_table(struct ctq_kld_run *r)
{
	const struct ctq_kld_relative *x = &r->rel;
	const double *p = r->pol.rel;
	struct ctq_strbuf *sb = &r->table;
	ctq_strbuf_printf(sb, "\nRelative to the reference run %s, paired over %zu windows (%zu tokens); "
			      "policy (%s, relative): mean KL <= %gx the reference run's, top-1 at most %g "
			      "point(s) below, ppl excess <= %gx; the absolute mean KL <= %g nats stays the outer bound.\n",
			  r->o.reference_run, x->n_windows, x->n_tokens, r->pol.source,
			  p[CTQ_KLD_REL_KL_FACTOR_MAX], 100 * p[CTQ_KLD_REL_TOP1_DROP_MAX],
			  p[CTQ_KLD_REL_PPL_EXCESS_FACTOR_MAX], r->pol.v[CTQ_KLD_KL_MEAN_MAX]);
	ctq_strbuf_printf(sb, "  mean KL    %.4g vs %.4g nats: %.3fx [%.3f, %.3f]\n", x->kl_new, x->kl_ref,
			  x->kl_factor, x->kl_factor_lo, x->kl_factor_hi);
	ctq_strbuf_printf(sb, "  top-1      %.2f%% vs %.2f%%: %+.2f points [%+.2f, %+.2f]\n", 100 * x->top1_new,
			  100 * x->top1_ref, 100 * x->top1_diff, 100 * x->top1_diff_lo, 100 * x->top1_diff_hi);
	ctq_strbuf_printf(sb, "  ppl excess %.4g vs %.4g: %.3gx (log-excess over the reference's minus %g x "
			      "its size: %.3g [%.3g, %.3g] nats/token, <= 0 passes)\n",
			  x->excess_new, x->excess_ref, x->excess_factor, p[CTQ_KLD_REL_PPL_EXCESS_FACTOR_MAX] - 1,
			  x->excess_margin, x->excess_margin_lo, x->excess_margin_hi);
	if (x->ref_nll_rel_diff > 1e-6)
		ctq_strbuf_printf(sb, "  note: the two runs' reference-model NLLs differ by %.2g (relative): "
				      "another reference model or backend\n", x->ref_nll_rel_diff);
	ctq_strbuf_printf(sb, "verdict (relative, %s): %s%s\n", r->pol.source, x->verdict,
			  x->outer_bound ? " (beyond the absolute mean KL bound)" : "");
}

static void table_row(struct ctq_strbuf *sb, const char *name, const struct ctq_kld_agg *a)
{
	ctq_strbuf_printf(sb, "%-28.28s %7zu %4zu %9.3g [%8.3g, %8.3g] %8.3g %8.3g %8.3g %8.3g  "
			      "%6.2f [%6.2f, %6.2f] %9.4g %9.4g %7.4f  %s\n",
			  name, a->n_tokens, a->n_windows, a->kl_mean, a->kl_lo, a->kl_hi, a->kl_median,
			  a->kl_p90, a->kl_p99, a->kl_max, 100 * a->top1, 100 * a->top1_lo,
			  100 * a->top1_hi, a->ppl_ref, a->ppl_new, a->ppl_ratio, a->verdict);
}

enum ctq_status ctq_kld_summarize(struct ctq_kld_run *r, struct ctq_error *err)
{
	r->agg = ctq_calloc(r->n_src + 1, sizeof *r->agg);
	if (!r->agg)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory");
	enum ctq_status st = CTQ_OK;
	for (size_t i = 0; i < r->n_src && !st; i++)
		st = aggregate(r, r->src[i].first_window, r->src[i].n_windows, &r->agg[i], err);
	if (st || (st = aggregate(r, 0, r->n_win, &r->agg[r->n_src], err)))
		return st;
	const struct ctq_kld_agg *all = &r->agg[r->n_src];
	r->pass = !strcmp(all->verdict, "non-inferior");
	if (r->rel.on && (st = relative_judge(r, err)))
		return st;
	struct ctq_strbuf *sb = &r->table;
	ctq_strbuf_printf(sb, "%-28s %7s %4s %9s %-22s %8s %8s %8s %8s  %6s %-16s %9s %9s %7s  %s\n",
			  "source", "tokens", "win", "KL mean", "95% CI (bootstrap)", "median", "p90",
			  "p99", "max", "top-1%", "95% CI", "ppl ref", "ppl new", "ratio", "verdict");
	for (size_t i = 0; i < r->n_src; i++)
		table_row(sb, r->src[i].name, &r->agg[i]);
	table_row(sb, "(all)", all);
	ctq_strbuf_printf(sb, "\nKL p99.9 %.4g nats overall. Policy (%s): mean KL <= %g nats, top-1 >= %g%%, "
			      "ppl ratio <= %g; non-inferior when every 95%% interval is on the good side, "
			      "inferior when one lies wholly on the bad side.\n",
			  all->kl_p999, r->pol.source, r->pol.v[CTQ_KLD_KL_MEAN_MAX],
			  100 * r->pol.v[CTQ_KLD_TOP1_MIN], r->pol.v[CTQ_KLD_PPL_RATIO_MAX]);
	ctq_strbuf_printf(sb, "windows of %ld tokens every %ld, the last %ld of each scored; "
			      "reference %.2f s, candidate %.2f s of forward passes\n",
			  r->o.ctx, r->o.stride, r->o.ctx - 1 - r->o.ctx / 2, r->base.score_s,
			  r->cand.score_s);
	if (r->rel.on)
		relative_table(r);
	if (sb->oom)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "eval kld", "out of memory");
	return CTQ_OK;
}

/* ---- the run directory ----------------------------------------------------------- */

static void agg_json(cJSON *j, const struct ctq_kld_agg *a)
{
	cJSON_AddNumberToObject(j, "tokens", (double)a->n_tokens);
	cJSON_AddNumberToObject(j, "windows", (double)a->n_windows);
	cJSON_AddNumberToObject(j, "kl_mean_nats", a->kl_mean);
	cJSON_AddNumberToObject(j, "kl_ci_low", a->kl_lo);
	cJSON_AddNumberToObject(j, "kl_ci_high", a->kl_hi);
	cJSON_AddNumberToObject(j, "kl_median_nats", a->kl_median);
	cJSON_AddNumberToObject(j, "kl_p99_nats", a->kl_p99);
	cJSON_AddNumberToObject(j, "kl_max_nats", a->kl_max);
	cJSON_AddNumberToObject(j, "top1", a->top1);
	cJSON_AddNumberToObject(j, "ppl_ref", a->ppl_ref);
	cJSON_AddNumberToObject(j, "ppl_new", a->ppl_new);
	cJSON_AddNumberToObject(j, "ppl_ratio", a->ppl_ratio);
	cJSON_AddStringToObject(j, "verdict", a->verdict);
}

static void manifest(const struct ctq_kld_run *r, cJSON *ev)
{
	const struct ctq_kld_model *ms[2] = {&r->cand, &r->base};
	const char *mk[2] = {"model", "ref_model"};
	for (int i = 0; i < 2; i++) {
		cJSON *j = cJSON_AddObjectToObject(ev, mk[i]);
		cJSON_AddStringToObject(j, "path", ms[i]->dir);
		cJSON_AddStringToObject(j, "config_sha256", ms[i]->config_sha);
		cJSON_AddStringToObject(j, "tokenizer", ms[i]->tok_path);
		cJSON_AddStringToObject(j, "tokenizer_sha256", ms[i]->tok_sha);
		cJSON_AddNumberToObject(j, "weight_bits", ms[i]->weight_bits);
		cJSON_AddNumberToObject(j, "linear_w8a8", (double)ms[i]->n_quantized);
		cJSON_AddNumberToObject(j, "linear_dense", (double)ms[i]->n_dense);
		cJSON_AddNumberToObject(j, "load_s", ms[i]->load_s);
		cJSON_AddNumberToObject(j, "score_s", ms[i]->score_s);
	}
	cJSON_AddStringToObject(ev, "device", r->device);
	cJSON_AddNumberToObject(ev, "tp", (double)r->o.tp);
	cJSON_AddNumberToObject(ev, "ctx", (double)r->o.ctx);
	cJSON_AddNumberToObject(ev, "stride", (double)r->o.stride);
	cJSON_AddNumberToObject(ev, "scored_per_window", (double)(r->o.ctx - 1 - r->o.ctx / 2));
	cJSON_AddNumberToObject(ev, "max_tokens_per_source", (double)r->o.max_tokens);
	cJSON_AddBoolToObject(ev, "add_bos", r->o.add_bos);
	cJSON_AddStringToObject(ev, "kl", "sum_v p_ref (log p_ref - log p_new) over the full vocabulary, log-softmax in double of the f32 logits");
	cJSON_AddStringToObject(ev, "interval", "percentile bootstrap over windows, 2000 resamples, seed 1, 95%");
	cJSON *srcs = cJSON_AddArrayToObject(ev, "sources");
	for (size_t i = 0; i < r->n_src; i++) {
		const struct ctq_kld_source *s = &r->src[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddItemToArray(srcs, j);
		cJSON_AddStringToObject(j, "name", s->name);
		cJSON_AddStringToObject(j, "text_sha256", s->sha256);
		cJSON_AddNumberToObject(j, "bytes", (double)s->n_bytes);
		cJSON_AddNumberToObject(j, "tokens_in_text", (double)s->n_ids_all);
		cJSON_AddNumberToObject(j, "tokens_used", (double)s->n_ids);
		agg_json(j, &r->agg[i]);
	}
	cJSON *pol = cJSON_AddObjectToObject(ev, "policy");
	cJSON_AddStringToObject(pol, "source", r->pol.source);
	for (int k = 0; k < CTQ_KLD_N_CRIT; k++) {
		cJSON *j = cJSON_AddObjectToObject(pol, crit_def[k].key);
		cJSON_AddNumberToObject(j, "value", r->pol.v[k]);
		cJSON_AddStringToObject(j, "reason", r->pol.reason[k]);
	}
	cJSON *rp = cJSON_AddObjectToObject(pol, "relative");
	for (int k = 0; k < CTQ_KLD_N_REL; k++) {
		cJSON *j = cJSON_AddObjectToObject(rp, rel_def[k].key);
		cJSON_AddNumberToObject(j, "value", r->pol.rel[k]);
		cJSON_AddStringToObject(j, "reason", r->pol.rel_reason[k]);
	}
	agg_json(cJSON_AddObjectToObject(ev, "overall"), &r->agg[r->n_src]);
	/* The run's verdict, the one its exit code gives (ctq report's gate):
	 * the relative one when there is a reference run. */
	cJSON_AddStringToObject(ev, "verdict", r->rel.on ? r->rel.verdict : r->agg[r->n_src].verdict);
	if (!r->rel.on)
		return;
	cJSON_AddStringToObject(ev, "absolute_verdict", r->agg[r->n_src].verdict);
	const struct ctq_kld_relative *x = &r->rel;
	cJSON *j = cJSON_AddObjectToObject(ev, "relative");
	cJSON_AddStringToObject(j, "reference_run", r->o.reference_run);
	cJSON_AddNumberToObject(j, "windows", (double)x->n_windows);
	cJSON_AddNumberToObject(j, "kl_mean_nats", x->kl_new);
	cJSON_AddNumberToObject(j, "reference_kl_mean_nats", x->kl_ref);
	cJSON_AddNumberToObject(j, "kl_factor", x->kl_factor);
	cJSON_AddNumberToObject(j, "kl_factor_ci_low", x->kl_factor_lo);
	cJSON_AddNumberToObject(j, "kl_factor_ci_high", x->kl_factor_hi);
	cJSON_AddNumberToObject(j, "top1", x->top1_new);
	cJSON_AddNumberToObject(j, "reference_top1", x->top1_ref);
	cJSON_AddNumberToObject(j, "top1_diff_ci_low", x->top1_diff_lo);
	cJSON_AddNumberToObject(j, "top1_diff_ci_high", x->top1_diff_hi);
	cJSON_AddNumberToObject(j, "ppl_excess", x->excess_new);
	cJSON_AddNumberToObject(j, "reference_ppl_excess", x->excess_ref);
	cJSON_AddNumberToObject(j, "ppl_excess_margin_ci_low", x->excess_margin_lo);
	cJSON_AddNumberToObject(j, "ppl_excess_margin_ci_high", x->excess_margin_hi);
	cJSON_AddBoolToObject(j, "outer_bound_exceeded", x->outer_bound);
	cJSON_AddStringToObject(j, "verdict", x->verdict);
}

static enum ctq_status write_junit(const struct ctq_kld_run *r, struct ctq_run *run,
				   struct ctq_error *err)
{
	const struct ctq_kld_agg *a = &r->agg[r->n_src];
	char msg[512], path[1200];
	snprintf(msg, sizeof msg,
		 "%s: mean KL %.4g nats [%.4g, %.4g] (max %g), top-1 %.2f%% [%.2f, %.2f] (min %g%%), "
		 "ppl ratio %.4f [%.4f, %.4f] (max %g)",
		 a->verdict, a->kl_mean, a->kl_lo, a->kl_hi, r->pol.v[CTQ_KLD_KL_MEAN_MAX],
		 100 * a->top1, 100 * a->top1_lo, 100 * a->top1_hi, 100 * r->pol.v[CTQ_KLD_TOP1_MIN],
		 a->ppl_ratio, a->ppl_ratio_lo, a->ppl_ratio_hi, r->pol.v[CTQ_KLD_PPL_RATIO_MAX]);
	if (r->rel.on)
		snprintf(msg, sizeof msg,
			 "%s relative to %s: mean KL %.3fx [%.3f, %.3f] (max %g), top-1 %+.2f points "
			 "[%+.2f, %+.2f] (min %+g), ppl excess %.3gx (max %g)%s",
			 r->rel.verdict, r->o.reference_run, r->rel.kl_factor, r->rel.kl_factor_lo,
			 r->rel.kl_factor_hi, r->pol.rel[CTQ_KLD_REL_KL_FACTOR_MAX], 100 * r->rel.top1_diff,
			 100 * r->rel.top1_diff_lo, 100 * r->rel.top1_diff_hi,
			 -100 * r->pol.rel[CTQ_KLD_REL_TOP1_DROP_MAX], r->rel.excess_factor,
			 r->pol.rel[CTQ_KLD_REL_PPL_EXCESS_FACTOR_MAX],
			 r->rel.outer_bound ? "; beyond the absolute mean KL bound" : "");
	struct ctq_junit_case c = {.classname = "eval_kld", .name = "(all)", .failed = !r->pass,
				   .message = r->pass ? NULL : msg};
	return ctq_junit_write(ctq_run_path(run, "junit.xml", path, sizeof path), "eval.kld", &c, 1, err);
}

enum ctq_status ctq_kld_write(struct ctq_kld_run *r, struct ctq_run *run, struct ctq_error *err)
{
	char path[1200];
	enum ctq_status st;
	if ((st = ctq_fam_eval_kld_write_windows(ctq_run_path(run, "eval_kld.csv", path, sizeof path),
						 r->win, r->n_win, r->src_names, err)) ||
	    (st = ctq_fam_eval_kld_write_summary(ctq_run_path(run, "eval_kld_summary.csv", path, sizeof path),
						 r->agg, r->n_src, r->src_names, r->cand.weight_bits, err)) ||
	    (st = ctq_fam_eval_kld_write_hist(ctq_run_path(run, "eval_kld_hist.csv", path, sizeof path),
					      r->hist, r->n_src, r->src_names, err)) ||
	    (st = write_junit(r, run, err)) ||
	    (st = ctq_run_write_file(run, "summary.md", r->table.data, r->table.len, err)))
		return st;
	manifest(r, cJSON_AddObjectToObject(run->manifest, "eval_kld"));
	return CTQ_OK;
}

void ctq_kld_free(struct ctq_kld_run *r)
{
	if (!r)
		return;
	ctq_model_close(&r->cand.mdl);
	ctq_model_close(&r->base.mdl);
	for (size_t i = 0; r->src && i < r->n_src; i++)
		free(r->src[i].ids);
	ctq_free(r->src);
	ctq_free(r->src_names);
	ctq_free(r->win);
	ctq_free(r->tok_kl);
	ctq_free(r->hist);
	ctq_free(r->agg);
	ctq_fam_eval_kld_windows_free(&r->ref_run);
	ctq_strbuf_free(&r->table);
	ctq_tokenizer_free(&r->tok);
	ctq_model_close(&r->ranks);
	memset(r, 0, sizeof *r);
}
