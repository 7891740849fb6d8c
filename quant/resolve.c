/* ctq scheme resolver (see resolve.h and docs/semantics.md). */
#include "quant/resolve.h"
#include "quant/resolve_ctx.h"
#include "quant/scheme.h"
#include "quant/arch.h"
#include "core/json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ctq_semantics_name(enum ctq_semantics s)
{
	switch (s) {
	case CTQ_SEM_STRICT: return "strict";
	case CTQ_SEM_CT: return "ct";
	case CTQ_SEM_VLLM: return "vllm";
	default: return "?";
	}
}

bool ctq_semantics_parse(const char *name, enum ctq_semantics *out)
{
	for (int i = 0; i < CTQ_SEM_COUNT; i++)
		if (!strcmp(name, ctq_semantics_name((enum ctq_semantics)i))) {
			*out = (enum ctq_semantics)i;
			return true;
		}
	return false;
}

const char *ctq_match_by_name(enum ctq_match_by by)
{
	static const char *const names[] = {"name", "regex", "type", "ignore",
					    "default"};
	return names[by];
}

static bool is_regex(const char *t) { return !strncmp(t, "re:", 3); }

/* Exact or `re:` match of a target against a name. */
static enum ctq_status name_hit(struct ctx *c, const char *t, const char *path,
				const char *name, bool *hit)
{
	if (is_regex(t))
		return ctq_regex_match(c->rc, t + 3, path, name, hit, c->err);
	*hit = !strcmp(t, name);
	return CTQ_OK;
}

static bool type_hit(const char *t, const struct ctq_module *m)
{
	if (is_regex(t))
		return false;
	for (size_t i = 0; i < m->n_types; i++)
		if (!strcmp(t, m->types[i]))
			return true;
	return false;
}

/* Level at which target t matches module m (strict and ct). */
static enum ctq_status level_of(struct ctx *c, const char *t, const char *path,
				const struct ctq_module *m, enum level *lv)
{
	bool hit;
	/* ct: the name the module has in transformers 5.23's model */
	const char *name = c->plan->sem == CTQ_SEM_CT && m->ct_name ? m->ct_name : m->name;
	enum ctq_status st = name_hit(c, t, path, name, &hit);
	if (st)
		return st;
	if (hit)
		*lv = is_regex(t) ? LV_REGEX : LV_NAME;
	else
		*lv = type_hit(t, m) ? LV_TYPE : LV_NONE;
	return CTQ_OK;
}

enum ctq_status ctq_resolve_nomem(struct ctx *c)
{
	return ctq_error_set(c->err, CTQ_ERR_NOMEM, "plan", "out of memory");
}

/* compressed-tensors' is_match(name, module, target) without ignore: the
 * name (exact or `re:`) or a class of the module's hierarchy. */
static enum ctq_status is_match(struct ctx *c, const char *t, const char *path,
				const struct ctq_module *m, bool *hit)
{
	enum level lv;
	enum ctq_status st = level_of(c, t, path, m, &lv);
	*hit = lv != LV_NONE;
	return st;
}

/* CT's is_narrow_match for one target (utils/match.py): the target matches
 * the module but neither its parent (name or class) nor any module below it
 * in the model tree — the projections and, on qwen3, q_norm / k_norm. A
 * top-level name is its own parent there (rsplit), so it is never narrow. */
static enum ctq_status narrow(struct ctx *c, const char *t, const char *path,
			      const struct ctq_module *m, bool *ok)
{
	bool hit;
	enum ctq_status st = is_match(c, t, path, m, &hit);
	*ok = false;
	if (st || !hit)
		return st;
	const char *dot = strrchr(m->name, '.');
	if (!dot)
		return CTQ_OK;
	char *parent = ctq_arena_strndup(&c->plan->arena, m->name,
					 (size_t)(dot - m->name));
	if (!parent)
		return ctq_resolve_nomem(c);
	const struct ctq_module *pm = ctq_modules_lookup(c->mods, parent);
	if (pm)
		st = is_match(c, t, path, pm, &hit);
	else
		st = name_hit(c, t, path, parent, &hit);
	if (st || hit)
		return st;
	size_t n = strlen(m->name);
	for (int pass = 0; pass < 2; pass++) {
		const struct ctq_module *v = pass ? c->mods->aux : c->mods->v;
		size_t count = pass ? c->mods->n_aux : c->mods->n;
		for (size_t i = 0; i < count; i++) {
			if (strncmp(v[i].name, m->name, n) || v[i].name[n] != '.')
				continue;
			if ((st = is_match(c, t, path, &v[i], &hit)))
				return st;
			if (hit)
				return CTQ_OK;
		}
	}
	*ok = true;
	return CTQ_OK;
}

static enum ctq_status level_for(struct ctx *c, const char *t, const char *path,
				 const struct ctq_module *m, enum level *lv)
{
	enum ctq_status st = level_of(c, t, path, m, lv);
	if (st || *lv == LV_NONE || m->kind != CTQ_MODULE_ATTENTION)
		return st;
	bool ok;
	if ((st = narrow(c, t, path, m, &ok)))
		return st;
	if (!ok)
		*lv = LV_NONE;
	return CTQ_OK;
}

/* Ignore for strict and ct: exact, regex, or class name. */
static enum ctq_status ignored_ct(struct ctx *c, const struct ctq_module *m,
				  const char **entry)
{
	*entry = NULL;
	for (size_t i = 0; i < c->cfg->n_ignore; i++) {
		enum level lv;
		enum ctq_status st = level_of(c, c->cfg->ignore[i],
					      c->cfg->ignore_paths[i], m, &lv);
		if (st)
			return st;
		if (lv != LV_NONE) {
			*entry = c->cfg->ignore[i];
			return CTQ_OK;
		}
	}
	return CTQ_OK;
}


static char *scheme_name(struct ctx *c, const struct ctq_qscheme *s)
{
	char buf[CTQ_SCHEME_NAME_MAX];
	return ctq_arena_strdup(&c->plan->arena, ctq_scheme_name(s, buf, sizeof buf));
}

enum ctq_status ctq_resolve_set_error(struct ctx *c, struct ctq_plan_entry *e, enum ctq_status cls,
				      const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	e->error = cls;
	e->scheme = NULL;
	e->message = ctq_arena_strdup(&c->plan->arena, buf);
	return e->message ? CTQ_OK : ctq_resolve_nomem(c);
}

/* Fills scheme, group, format of an entry matched to group g. */
static enum ctq_status assign_group(struct ctx *c, struct ctq_plan_entry *e,
				    long g, const char *target, enum level lv)
{
	const struct ctq_qgroup *grp = &c->cfg->groups[g];
	e->group = g;
	e->target = target;
	e->by = lv == LV_NAME ? CTQ_BY_NAME : lv == LV_REGEX ? CTQ_BY_REGEX
							     : CTQ_BY_TYPE;
	e->format = ctq_qconfig_group_format(c->cfg, grp);
	e->scheme = scheme_name(c, &grp->scheme);
	return e->scheme ? CTQ_OK : ctq_resolve_nomem(c);
}

/* ---- strict ------------------------------------------------------------- */

static enum ctq_status strict_module(struct ctx *c, struct ctq_plan_entry *e)
{
	const struct ctq_module *m = &c->mods->v[e->module];
	/* Both engines quantize the KV cache of every attention module,
	 * ignored or not (CT's _apply_kv_cache_scheme, vLLM's Attention
	 * method read no ignore list). */
	if (m->kind == CTQ_MODULE_ATTENTION && c->cfg->kv_cache) {
		char kv[CTQ_SCHEME_NAME_MAX];
		return ctq_resolve_set_error(c, e, CTQ_ERR_UNSUPPORTED_SCHEME,
				 "%s: %s.kv_cache_scheme (%s): KV-cache quantization is not executable; ctq runs attention with BF16 caches",
				 m->name, c->cfg->block_path,
				 ctq_kv_scheme_name(c->cfg->kv_cache, kv, sizeof kv));
	}
	const char *ign;
	enum ctq_status st = ignored_ct(c, m, &ign);
	if (st)
		return st;
	if (ign) {
		e->by = CTQ_BY_IGNORE;
		e->target = ign;
		e->scheme = "unquantized";
		return CTQ_OK;
	}
	/* Best level, and the distinct groups matching at it. */
	enum level best = LV_NONE;
	long first_group = -1;
	const char *first_target = NULL;
	bool ambiguous = false;
	char detail[1024] = "";
	size_t dlen = 0;
	for (size_t g = 0; g < c->cfg->n_groups; g++) {
		const struct ctq_qscheme *s = &c->cfg->groups[g].scheme;
		for (size_t t = 0; t < s->n_targets; t++) {
			enum level lv;
			if ((st = level_for(c, s->targets[t], s->target_paths[t],
					    m, &lv)))
				return st;
			if (lv == LV_NONE || lv > best)
				continue;
			if (lv < best) {
				best = lv;
				first_group = (long)g;
				first_target = s->targets[t];
				ambiguous = false;
				dlen = (size_t)snprintf(detail, sizeof detail,
							"%s (\"%s\")",
							c->cfg->groups[g].name,
							s->targets[t]);
			} else if ((long)g != first_group) {
				ambiguous = true;
				if (dlen < sizeof detail)
					dlen += (size_t)snprintf(
						detail + dlen, sizeof detail - dlen,
						", %s (\"%s\")",
						c->cfg->groups[g].name,
						s->targets[t]);
			}
		}
	}
	if (best == LV_NONE) {
		e->by = CTQ_BY_DEFAULT;
		e->scheme = "unquantized";
	} else if (ambiguous) {
		static const char *const lvn[] = {"exact name", "regex", "type"};
		return ctq_resolve_set_error(c, e, CTQ_ERR_AMBIGUOUS_MATCH,
				 "%s: targets of several groups match at the same level (%s): %s; ctq refuses to pick one by file order — make the targets disjoint or list the module in ignore",
				 m->name, lvn[best], detail);
	} else if ((st = assign_group(c, e, first_group, first_target, best))) {
		return st;
	}

	const struct ctq_qgroup *grp = e->group >= 0 ? &c->cfg->groups[e->group] : NULL;
	bool quantized = grp && !ctq_scheme_is_unquantized(&grp->scheme);
	if (quantized && m->kind != CTQ_MODULE_LINEAR) {
		return ctq_resolve_set_error(c, e, CTQ_ERR_UNSUPPORTED_SCHEME,
				 "%s: config_groups.%s (%s, format %s): %s modules execute unquantized only",
				 m->name, grp->name, e->scheme,
				 e->format ? e->format : "missing",
				 m->kind == CTQ_MODULE_EMBEDDING ? "embedding"
				 : m->kind == CTQ_MODULE_ATTENTION ? "attention"
								   : m->types[0]);
	}
	if (quantized) {
		char reason[512];
		enum ctq_status cls = ctq_scheme_check_exec(&grp->scheme, e->format,
							    reason, sizeof reason);
		if (cls)
			return ctq_resolve_set_error(c, e, cls, "%s: config_groups.%s (%s, format %s): %s",
					 m->name, grp->name, e->scheme,
					 e->format ? e->format : "missing", reason);
	}
	return CTQ_OK;
}

static enum ctq_status strict_fused(struct ctx *c)
{
	const struct ctq_modules *mods = c->mods;
	for (size_t f = 0; f < mods->n_fused; f++) {
		const struct ctq_fused_set *fs = &mods->fused[f];
		struct ctq_plan_entry *e[3];
		bool same = true, clean = true;
		for (size_t i = 0; i < fs->n_members; i++) {
			e[i] = &c->plan->entries[fs->members[i]];
			clean &= e[i]->error == CTQ_OK;
			if (i && clean && strcmp(e[i]->scheme, e[0]->scheme))
				same = false;
		}
		if (!clean || same)
			continue;
		char detail[1024];
		size_t dlen = 0;
		for (size_t i = 0; i < fs->n_members; i++) {
			const char *leaf = strrchr(mods->v[fs->members[i]].name, '.');
			dlen += (size_t)snprintf(detail + dlen, sizeof detail - dlen,
						 "%s%s %s (%s%s%s)", i ? ", " : "",
						 leaf ? leaf + 1 : mods->v[fs->members[i]].name,
						 e[i]->scheme, ctq_match_by_name(e[i]->by),
						 e[i]->group >= 0 ? " " : "",
						 e[i]->group >= 0 ? c->cfg->groups[e[i]->group].name : "");
			if (dlen >= sizeof detail)
				break;
		}
		for (size_t i = 0; i < fs->n_members; i++) {
			enum ctq_status st = ctq_resolve_set_error(
				c, e[i], CTQ_ERR_FUSED_MISMATCH,
				"%s: the fused %s members resolve to different schemes: %s; engines execute them as one GEMM, so they must agree",
				mods->v[fs->members[i]].name, fs->runtime_name, detail);
			if (st)
				return st;
		}
	}
	return CTQ_OK;
}

/* ---- target map (ct, vllm) ---------------------------------------------- */

static enum ctq_status build_map(struct ctx *c)
{
	size_t total = 0;
	for (size_t g = 0; g < c->cfg->n_groups; g++)
		total += c->cfg->groups[g].scheme.n_targets;
	c->map = ctq_arena_calloc(&c->plan->arena, total + 1, sizeof *c->map);
	if (!c->map)
		return ctq_resolve_nomem(c);
	for (size_t g = 0; g < c->cfg->n_groups; g++) {
		if (c->dropped && c->dropped[g])
			continue;
		const struct ctq_qscheme *s = &c->cfg->groups[g].scheme;
		for (size_t t = 0; t < s->n_targets; t++) {
			size_t k;
			for (k = 0; k < c->n_map; k++)
				if (!strcmp(c->map[k].target, s->targets[t]))
					break;
			if (k == c->n_map) {
				c->map[k].target = s->targets[t];
				c->map[k].path = s->target_paths[t];
				c->n_map++;
			}
			c->map[k].group = (long)g; /* a later group overwrites */
		}
	}
	return CTQ_OK;
}

static const struct tmap *sort_base;

static int ct_cmp(const void *a, const void *b)
{
	const char *x = sort_base[*(const size_t *)a].target;
	const char *y = sort_base[*(const size_t *)b].target;
	int rx = strstr(x, "re:") != NULL, ry = strstr(y, "re:") != NULL;
	if (rx != ry)
		return rx - ry;
	return strcmp(x, y);
}

/* ---- ct ----------------------------------------------------------------- */

/* An attention module's KV-cache scheme under ct (kv_cache_scheme, or none). */
static enum ctq_status ct_kv(struct ctx *c, struct ctq_plan_entry *e,
			     const struct ctq_module *m, enum ctq_match_by by,
			     const char *target)
{
	e->by = by;
	e->target = target;
	e->group = -1;
	e->format = NULL;
	if (m->kind == CTQ_MODULE_ATTENTION && c->cfg->kv_cache) {
		char kv[CTQ_SCHEME_NAME_MAX];
		e->scheme = ctq_arena_strdup(&c->plan->arena,
					     ctq_kv_scheme_name(c->cfg->kv_cache, kv, sizeof kv));
		return e->scheme ? CTQ_OK : ctq_resolve_nomem(c);
	}
	e->scheme = "unquantized";
	return CTQ_OK;
}

/* compressed-tensors 0.20.0 apply_quantization_config (lifecycle/apply.py):
 *  1. kv_cache_scheme goes to every cached attention module first, whatever
 *     ignore says;
 *  2. modules matching some target and no ignore entry (name, regex, class)
 *     rank their matching targets — name/regex hits by ("re:" in t, t), then
 *     class hits — and the first target's group wins;
 *  3. an attention module takes that group only when one of the group's
 *     targets matches it narrowly (otherwise it keeps 1.), and then the
 *     group must quantize input activations and neither weights nor outputs
 *     (_validate_attention_scheme raises ValueError otherwise); Linear and
 *     Embedding take it; other modules are left alone. */
static enum ctq_status ct_module(struct ctx *c, struct ctq_plan_entry *e)
{
	const struct ctq_module *m = &c->mods->v[e->module];
	const char *ign;
	enum ctq_status st = ignored_ct(c, m, &ign);
	if (st)
		return st;
	if (ign) {
		/* match_named_modules tests the targets before the ignore list:
		 * a target regex that does not compile raises even when every
		 * module is ignored (utils/match.py) */
		for (size_t k = 0; k < c->n_map; k++) {
			bool hit;
			if (is_regex(c->map[k].target) &&
			    (st = name_hit(c, c->map[k].target, c->map[k].path, m->name, &hit)))
				return st;
		}
		return ct_kv(c, e, m, CTQ_BY_IGNORE, ign);
	}
	/* transformers 5 fuses the experts into one module of 3-D parameters
	 * (Qwen3MoeExperts: gate_up_proj, down_proj) that is no Linear, and no
	 * module of the expert's own name exists: no target gives it a scheme. */
	if (m->ct_fused)
		return ct_kv(c, e, m, CTQ_BY_DEFAULT, NULL);
	const struct tmap *win = NULL;
	enum level wlv = LV_NONE;
	for (int pass = 0; pass < 2 && !win; pass++) {
		for (size_t k = 0; k < c->n_map && !win; k++) {
			const struct tmap *t = &c->map[c->ct_order[k]];
			enum level lv;
			if ((st = level_of(c, t->target, t->path, m, &lv)))
				return st;
			if (lv == LV_NONE || (pass == 0) != (lv != LV_TYPE))
				continue;
			win = t;
			wlv = lv;
		}
	}
	if (!win)
		return ct_kv(c, e, m, CTQ_BY_DEFAULT, NULL);
	const struct ctq_qgroup *grp = &c->cfg->groups[win->group];
	if (m->kind == CTQ_MODULE_ATTENTION) {
		bool ok = false;
		for (size_t t = 0; t < grp->scheme.n_targets && !ok; t++)
			if ((st = narrow(c, grp->scheme.targets[t],
					 grp->scheme.target_paths[t], m, &ok)))
				return st;
		if (!ok)
			return ct_kv(c, e, m, CTQ_BY_DEFAULT, NULL);
		if ((st = assign_group(c, e, win->group, win->target, wlv)))
			return st;
		const char *why = grp->scheme.weights
			? "Cannot apply weight quantization to attention. Instead, target the (q|k|v)_proj submodule layers of attention"
			: !grp->scheme.input
			? "Cannot apply attention quantization without specifying input activations"
			: grp->scheme.output ? "Cannot apply output quantization to attention"
					     : NULL;
		if (why)
			return ctq_resolve_set_error(c, e, CTQ_ERR_UNSUPPORTED_SCHEME,
					 "%s: config_groups.%s (%s) matches the attention module narrowly through \"%s\"; compressed-tensors raises ValueError: %s",
					 m->name, grp->name, e->scheme, win->target, why);
		return CTQ_OK;
	}
	if (m->kind != CTQ_MODULE_LINEAR && m->kind != CTQ_MODULE_EMBEDDING)
		return ct_kv(c, e, m, CTQ_BY_DEFAULT, NULL);
	if ((st = assign_group(c, e, win->group, win->target, wlv)))
		return st;
	/* initialize_qparams: attn_head args observe [heads, tokens, head_dim];
	 * on a Linear or Embedding (at most 2 dimensions) it raises. */
	const struct ctq_qargs *const args[3] = {grp->scheme.weights, grp->scheme.input,
						  grp->scheme.output};
	for (int i = 0; i < 3; i++)
		if (args[i] && args[i]->strategy == CTQ_STRATEGY_ATTN_HEAD)
			return ctq_resolve_set_error(c, e, CTQ_ERR_UNSUPPORTED_SCHEME,
					 "%s: config_groups.%s (%s) quantizes a %s by attn_head; compressed-tensors raises ValueError: Attention quant requires at least 3 observed dimensions",
					 m->name, grp->name, e->scheme ? e->scheme : "?",
					 m->kind == CTQ_MODULE_LINEAR ? "Linear" : "Embedding");
	return CTQ_OK;
}

/* ---- vllm --------------------------------------------------------------- */

/* str.replace(old, new) on the whole name, as vLLM does. */
static char *replace_all(struct ctx *c, const char *s, const char *old,
			 const char *new_)
{
	size_t lo = strlen(old), ln = strlen(new_), count = 0;
	for (const char *p = s; lo && (p = strstr(p, old)); p += lo)
		count++;
	size_t cap = strlen(s) + count * ln + 1;
	char *buf = ctq_arena_alloc(&c->plan->arena, cap);
	if (!buf)
		return NULL;
	size_t n = 0;
	while (*s) {
		if (lo && !strncmp(s, old, lo)) {
			memcpy(buf + n, new_, ln);
			n += ln;
			s += lo;
		} else {
			buf[n++] = *s++;
		}
	}
	buf[n] = '\0';
	return buf;
}

static enum ctq_status vllm_ignore_one(struct ctx *c, const char *name,
				       bool *hit, const char **entry)
{
	*hit = false;
	for (size_t i = 0; i < c->cfg->n_ignore; i++) {
		enum ctq_status st = name_hit(c, c->vignore ? c->vignore[i] : c->cfg->ignore[i],
					      c->cfg->ignore_paths[i], name, hit);
		if (st)
			return st;
		if (*hit) {
			*entry = c->cfg->ignore[i];
			return CTQ_OK;
		}
	}
	return CTQ_OK;
}

static enum ctq_status first_name_hit(struct ctx *c, const char *name,
				      const struct tmap **out, enum level *lv)
{
	*out = NULL;
	for (size_t k = 0; k < c->n_map; k++) {
		bool hit;
		enum ctq_status st = name_hit(c, c->map[k].vtarget ? c->map[k].vtarget : c->map[k].target,
					      c->map[k].path, name, &hit);
		if (st)
			return st;
		if (hit) {
			*out = &c->map[k];
			*lv = is_regex(c->map[k].target) ? LV_REGEX : LV_NAME;
			return CTQ_OK;
		}
	}
	return CTQ_OK;
}

static bool icontains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < n && hay[i] &&
		       tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == n)
			return true;
	}
	return n == 0;
}

/* Resolves one vLLM runtime layer into e (shards: HF member names of a
 * fused layer, or NULL). */
enum ctq_status ctq_resolve_vllm_layer(struct ctx *c, struct ctq_plan_entry *e,
				       const struct ctq_module *m, const struct ctq_fused_set *fs)
{
	const char *layer = ctq_resolve_vmap(c, fs ? fs->runtime_name : m->name, true);
	const char *cls = fs ? fs->runtime_type : m->vllm_type;
	if (!layer)
		return ctq_resolve_nomem(c);
	enum ctq_status st;
	bool hit;
	const char *entry = NULL;

	/* §5.2.2 ignore first. */
	bool literal = false;
	for (size_t i = 0; i < c->cfg->n_ignore; i++)
		if (!strcmp(c->vignore ? c->vignore[i] : c->cfg->ignore[i], layer)) {
			literal = true;
			entry = c->cfg->ignore[i];
		}
	if (fs && fs->unpacked && !literal) {
		/* should_ignore_layer: a layer whose name is not in the packed
		 * mapping is tested by its own name */
		if ((st = vllm_ignore_one(c, layer, &hit, &entry)))
			return st;
	} else if (fs && !literal) {
		int agree = -1;
		char shards[1024] = "";
		size_t sl = 0;
		for (size_t i = 0; i < fs->n_members; i++) {
			const char *leaf = strrchr(c->mods->v[fs->members[i]].name, '.');
			char *shard = replace_all(c, layer, fs->key, leaf ? leaf + 1 : "");
			if (!shard)
				return ctq_resolve_nomem(c);
			const char *ent = NULL;
			if ((st = vllm_ignore_one(c, shard, &hit, &ent)))
				return st;
			sl += (size_t)snprintf(shards + sl, sl < sizeof shards ? sizeof shards - sl : 0,
					       "%s'%s'", i ? ", " : "", shard);
			if (hit && !entry)
				entry = ent;
			if (agree < 0)
				agree = hit;
			else if (agree != (int)hit)
				agree = 2;
		}
		if (agree == 2)
			return ctq_resolve_set_error(c, e, CTQ_ERR_FUSED_MISMATCH,
					 "%s: Found a different quantization schemes for [%s] in %s. vLLM requires all to use the same scheme.",
					 m->name, shards, layer);
		hit = agree == 1;
	} else if (!literal) {
		if ((st = vllm_ignore_one(c, layer, &hit, &entry)))
			return st;
	} else {
		hit = true;
	}
	if (hit) {
		e->by = CTQ_BY_IGNORE;
		e->target = entry;
		e->scheme = "unquantized";
		return CTQ_OK;
	}

	/* §5.2.3: name/regex in map order, then class substring, then shards. */
	const struct tmap *t = NULL;
	enum level lv = LV_NONE;
	if ((st = first_name_hit(c, layer, &t, &lv)))
		return st;
	for (size_t k = 0; !t && k < c->n_map; k++) {
		const char *tg = c->map[k].target;
		if (is_regex(tg)) {
			if ((st = ctq_regex_match(c->rc, tg + 3, c->map[k].path, cls,
						  &hit, c->err)))
				return st;
		} else {
			hit = icontains(cls, tg);
		}
		if (hit) {
			t = &c->map[k];
			lv = LV_TYPE;
		}
	}
	/* _add_fused_moe_to_target_scheme_map (vLLM 0.26.0): "RoutedExperts"
	 * (the class of the layer a FusedMoE block asks with,
	 * fused_moe/routed_experts.py) is added after the other targets with
	 * "Linear"'s scheme, so a Linear target claims the experts when no name
	 * and no other class matched. */
	for (size_t k = 0; !t && cls && !strcmp(cls, "RoutedExperts") && k < c->n_map; k++)
		if (!strcmp(c->map[k].target, "Linear")) {
			t = &c->map[k];
			lv = LV_TYPE;
		}
	if (!t && fs && !fs->unpacked) {
		const struct tmap *first = NULL;
		enum level first_lv = LV_NONE;
		bool all = true;
		for (size_t i = 0; i < fs->n_members && all; i++) {
			const char *leaf = strrchr(c->mods->v[fs->members[i]].name, '.');
			char *shard = replace_all(c, layer, fs->key, leaf ? leaf + 1 : "");
			if (!shard)
				return ctq_resolve_nomem(c);
			const struct tmap *ts;
			enum level sl;
			if ((st = first_name_hit(c, shard, &ts, &sl)))
				return st;
			if (!ts)
				all = false;
			else if (!first) {
				first = ts;
				first_lv = sl;
			}
		}
		if (all) {
			t = first;
			lv = first_lv;
		}
	}
	if (!t) {
		e->by = CTQ_BY_DEFAULT;
		e->scheme = "unquantized";
		return CTQ_OK;
	}
	if ((st = assign_group(c, e, t->group, t->target, lv)))
		return st;
	const struct ctq_qgroup *grp = &c->cfg->groups[t->group];
	if (ctq_scheme_is_unquantized(&grp->scheme) || !grp->scheme.weights) {
		e->scheme = "unquantized";
		return CTQ_OK;
	}
	char reason[512];
	bool value_error = false;
	e->vllm_class = ctq_scheme_vllm_class(&grp->scheme, e->format,
					      m->kind == CTQ_MODULE_EMBEDDING,
					      &value_error, reason, sizeof reason);
	if (!e->vllm_class && value_error && cls && !strcmp(cls, "ParallelLMHead")) {
		/* get_quant_method catches a ValueError of get_scheme for the
		 * LM head, then takes it down the embedding path (ParallelLMHead
		 * is a VocabParallelEmbedding): int weights by channel or group
		 * run there, anything else raises ValueError. */
		e->vllm_class = ctq_scheme_vllm_class(&grp->scheme, e->format, true,
						      &value_error, reason, sizeof reason);
	}
	if (!e->vllm_class)
		return ctq_resolve_set_error(c, e, CTQ_ERR_UNSUPPORTED_SCHEME,
				 "%s: config_groups.%s (%s, format %s): %s",
				 m->name, grp->name, e->scheme,
				 e->format ? e->format : "None", reason);
	return CTQ_OK;
}

static enum ctq_status vllm_attention(struct ctx *c, struct ctq_plan_entry *e,
				      const struct ctq_module *m)
{
	const struct ctq_qargs *kv = c->cfg->kv_cache;
	e->by = CTQ_BY_DEFAULT;
	/* get_quant_method returns CompressedTensorsKVCacheMethod only for an
	 * Attention (compressed_tensors.py); DeepSeek's MLAAttention asks too
	 * (_init_kv_cache_quant) but is none: no method, nothing validated. */
	if (!kv || (m->vllm_type && !strcmp(m->vllm_type, "MLAAttention"))) {
		e->scheme = "unquantized";
		return CTQ_OK;
	}
	if (kv->num_bits != 8 || kv->type != CTQ_QTYPE_FLOAT)
		return ctq_resolve_set_error(c, e, CTQ_ERR_UNSUPPORTED_SCHEME,
				 "%s: Currently supported kv cache quantization is num_bits=8, type=float, however received num_bits=%d, type=%s",
				 m->name, kv->num_bits, ctq_qtype_name(kv->type));
	if (kv->strategy != CTQ_STRATEGY_TENSOR &&
	    kv->strategy != CTQ_STRATEGY_ATTN_HEAD)
		return ctq_resolve_set_error(c, e, CTQ_ERR_UNSUPPORTED_SCHEME,
				 "%s: Invalid strategy for compressed-tensors KV cache. Expected strategies: (tensor, attn_head), found strategy: %s",
				 m->name, ctq_strategy_name(kv->strategy));
	/* validate_kv_cache_scheme reads the raw dict: a missing key is None. */
	if (!kv->symmetric || !kv->symmetric_given)
		return ctq_resolve_set_error(c, e, CTQ_ERR_UNSUPPORTED_SCHEME,
				 "%s: Only support symmetric scaling factor for compressed-tensors KV cache. However found symmetric: %s",
				 m->name, kv->symmetric_given ? "False" : "None");
	char buf[CTQ_SCHEME_NAME_MAX];
	e->scheme = ctq_arena_strdup(&c->plan->arena,
				     ctq_kv_scheme_name(kv, buf, sizeof buf));
	e->vllm_class = "CompressedTensorsKVCacheMethod";
	return e->scheme ? CTQ_OK : ctq_resolve_nomem(c);
}

static bool attention_group(const struct ctq_qgroup *g)
{
	if (g->scheme.n_targets != 1)
		return false;
	const char *t = g->scheme.targets[0];
	size_t n = strlen(t);
	return n >= 9 && !strcmp(t + n - 9, "Attention");
}

static enum ctq_status vllm_config_checks(struct ctx *c)
{
	const struct ctq_qconfig *cfg = c->cfg;
	c->dropped = ctq_arena_calloc(&c->plan->arena, cfg->n_groups + 1, sizeof *c->dropped);
	if (!c->dropped)
		return ctq_resolve_nomem(c);
	for (size_t g = 0; g < cfg->n_groups; g++) {
		const struct ctq_qgroup *grp = &cfg->groups[g];
		char p[CTQ_PATH_MAX];
		/* from_config reads v["targets"] of every group before it
		 * drops attention groups: a list raises TypeError there. */
		if (grp->preset_form)
			return ctq_error_set(c->err, CTQ_ERR_INVALID_CONFIG, grp->path,
					     "is a preset list (%s); vLLM reads every group as an object (v[\"targets\"]) and raises TypeError",
					     grp->preset);
		if (attention_group(grp)) {
			c->dropped[g] = true;
			continue;
		}
		/* _quantization_scheme_map_from_config parses a group's args
		 * once per target: a group with no targets is never looked at. */
		if (grp->scheme.n_targets == 0)
			continue;
		if (!grp->scheme.weights) {
			snprintf(p, sizeof p, "%s.weights", grp->path);
			return ctq_error_set(c->err, CTQ_ERR_INVALID_CONFIG, p,
					     "is null; vLLM's _quantization_scheme_map_from_config runs QuantizationArgs.model_validate(weights) for every target of a non-attention group and None fails it (pydantic ValidationError)");
		}
		const char *f = ctq_qconfig_group_format(cfg, grp);
		if (ctq_format_is_activation(f) && !grp->scheme.input &&
		    grp->scheme.weights->type == CTQ_QTYPE_INT) {
			snprintf(p, sizeof p, "%s.input_activations", grp->path);
			return ctq_error_set(c->err, CTQ_ERR_INVALID_CONFIG, p,
					     "is missing with activation format %s and int weights; vLLM's _quantization_scheme_map_from_config asserts weights.type == QuantizationType.FLOAT there (AssertionError; weight-only int needs pack-quantized)",
					     f);
		}
	}
	return CTQ_OK;
}

/* Tied Qwen2 / Qwen3 / Gemma (the arch row's vllm_head_is_embedding):
 * vLLM's Qwen2ForCausalLM and Qwen3ForCausalLM (qwen2.py, qwen3.py) write
 * `if config.tie_word_embeddings: self.lm_head = self.model.embed_tokens`,
 * Gemma's models have no lm_head at all; so lm_head's entry is the
 * embedding's, resolved first. True when module i was handled so.
 * LlamaForCausalLM (llama.py, and Mistral and Phi-3 through it) always
 * builds `ParallelLMHead(..., quant_config=quant_config,
 * prefix=...lm_head)`, whose quantization method is resolved then, and
 * only afterwards ties its weight: a tied Llama's lm_head resolves as any
 * ParallelLMHead does. */
static bool vllm_tied_head(struct ctx *c, size_t i, enum ctq_status *st)
{
	const struct ctq_module *m = &c->mods->v[i];
	*st = CTQ_OK;
	if (!c->mods->shape.tie_word_embeddings || !c->mods->shape.row ||
	    !c->mods->shape.row->vllm_head_is_embedding || m->kind != CTQ_MODULE_LINEAR ||
	    !m->vllm_type || strcmp(m->vllm_type, "ParallelLMHead"))
		return false;
	for (size_t k = 0; k < i; k++) {
		if (c->mods->v[k].kind != CTQ_MODULE_EMBEDDING)
			continue;
		struct ctq_plan_entry *e = &c->plan->entries[i];
		const struct ctq_plan_entry *emb = &c->plan->entries[k];
		*e = *emb;
		e->module = i;
		if (emb->error) {
			const char *rest = strchr(emb->message, ':');
			*st = ctq_resolve_set_error(c, e, emb->error,
					"%s (tied: vLLM runs it as %s)%s", m->name,
					c->mods->v[k].name, rest ? rest : emb->message);
		}
		return true;
	}
	return false;
}

/* ---- engine divergence (strict) ------------------------------------------ */

enum outcome { OUT_PLAIN, OUT_QUANT, OUT_ERROR };

static enum outcome outcome_of(const struct ctq_plan_entry *e)
{
	if (e->error)
		return OUT_ERROR;
	return strcmp(e->scheme, "unquantized") ? OUT_QUANT : OUT_PLAIN;
}

/* "w8a8-int8 (config_groups.G1 through type \"Linear\")" and the like. */
static void describe(const struct ctq_plan *p, const struct ctq_plan_entry *e,
		     char *buf, size_t cap)
{
	if (e->error) {
		const char *rest = e->message ? strchr(e->message, ':') : NULL;
		snprintf(buf, cap, "%s (%s)", ctq_status_name(e->error),
			 rest ? rest + 2 : e->message ? e->message : "");
	} else if (e->by == CTQ_BY_IGNORE) {
		snprintf(buf, cap, "%s (ignore entry \"%s\")", e->scheme, e->target);
	} else if (e->group >= 0) {
		snprintf(buf, cap, "%s (config_groups.%s through %s \"%s\")", e->scheme,
			 p->cfg->groups[e->group].name, ctq_match_by_name(e->by),
			 e->target);
	} else {
		snprintf(buf, cap, "%s (%s)", e->scheme,
			 strncmp(e->scheme, "kv-", 3) ? "no target matches"
						      : "kv_cache_scheme");
	}
}

/* A config an engine refuses as a whole (vLLM's from_config: a preset-list
 * group, a group without weights, weight-only int under an activation
 * format; compressed-tensors' validation of kv_cache_scheme) does not start
 * there, so it does not run the same everywhere, whatever strict would
 * quantize: the strict plan records the refusal and cannot execute. */
static void record_refusal(struct ctx *c, const enum ctq_status sst[2],
			   const struct ctq_error serr[2])
{
	struct ctq_error *r = &c->plan->refusal;
	ctq_error_clear(r);
	if (sst[0] && sst[1]) {
		ctq_error_set(r, CTQ_ERR_ENGINE_DIVERGENT, serr[0].path,
			      "compressed-tensors refuses the whole config (%s: %s %s) and so does vLLM (%s: %s %s); ctq's strict profile runs only what both engines run the same",
			      ctq_status_name(sst[0]), serr[0].path, serr[0].message,
			      ctq_status_name(sst[1]), serr[1].path, serr[1].message);
	} else if (sst[0] || sst[1]) {
		int bad = sst[0] ? 0 : 1;
		ctq_error_set(r, CTQ_ERR_ENGINE_DIVERGENT, serr[bad].path,
			      "%s refuses the whole config (%s: %s %s) while %s loads it; ctq's strict profile runs only what both engines run the same",
			      bad ? "vLLM" : "compressed-tensors", ctq_status_name(sst[bad]),
			      serr[bad].path, serr[bad].message, bad ? "compressed-tensors" : "vLLM");
	}
}

/* Strict refuses a module where compressed-tensors and vLLM disagree on
 * whether it is quantized (or one of them fails on it) and ctq's own rules
 * do not settle it. Both engines quantizing with different groups is a
 * precedence question strict answers itself (exact > regex > type, or
 * ambiguous-match); a module strict already refuses keeps its error.
 * A config one engine refuses as a whole (vLLM's config checks) diverges
 * on every module the other engine or strict would quantize. */
static enum ctq_status strict_divergence(struct ctx *c)
{
	struct ctq_plan sub[2];
	struct ctq_error serr[2];
	enum ctq_status sst[2];
	static const enum ctq_semantics sems[2] = {CTQ_SEM_CT, CTQ_SEM_VLLM};
	static const char *const engine[2] = {"compressed-tensors", "vLLM"};
	for (int k = 0; k < 2; k++) {
		ctq_error_clear(&serr[k]);
		sst[k] = ctq_plan_resolve(&sub[k], c->cfg, c->mods, sems[k], c->rc,
					  &serr[k]);
		if (sst[k] == CTQ_ERR_NOMEM) {
			for (int j = 0; j <= k; j++)
				ctq_plan_free(&sub[j]);
			return ctq_resolve_nomem(c);
		}
	}
	record_refusal(c, sst, serr);
	enum ctq_status st = CTQ_OK;
	for (size_t i = 0; i < c->plan->n && !st; i++) {
		struct ctq_plan_entry *e = &c->plan->entries[i];
		/* strict's own refusals stand; the KV-cache one of an
		 * attention module gives way, since the engines' KV handling
		 * disagreeing (int8 caches: CT quantizes, vLLM raises) is what
		 * the producer must fix first. */
		bool kv_refusal = c->mods->v[i].kind == CTQ_MODULE_ATTENTION &&
				  c->cfg->kv_cache &&
				  e->error == CTQ_ERR_UNSUPPORTED_SCHEME;
		if (e->error && !kv_refusal)
			continue;
		const char *name = c->mods->v[i].name;
		char d[2][768];
		if (sst[0] || sst[1]) {
			if (sst[0] && sst[1])
				continue;
			int bad = sst[0] ? 0 : 1;
			const struct ctq_plan_entry *o = &sub[1 - bad].entries[i];
			if (outcome_of(o) == OUT_PLAIN &&
			    (e->error || !strcmp(e->scheme, "unquantized")))
				continue;
			describe(&sub[1 - bad], o, d[0], sizeof d[0]);
			st = ctq_resolve_set_error(c, e, CTQ_ERR_ENGINE_DIVERGENT,
				       "%s: the engines diverge: %s gives %s, %s refuses the whole config (%s: %s) — ctq's strict profile runs only what both engines run the same",
				       name, engine[1 - bad], d[0], engine[bad],
				       serr[bad].path, serr[bad].message);
			continue;
		}
		bool handled;
		if ((st = ctq_resolve_moe_diverge(c, i, &sub[0], &sub[1], &handled)) || handled)
			continue;
		const struct ctq_plan_entry *a = &sub[0].entries[i], *b = &sub[1].entries[i];
		if (outcome_of(a) == outcome_of(b))
			continue;
		describe(&sub[0], a, d[0], sizeof d[0]);
		describe(&sub[1], b, d[1], sizeof d[1]);
		st = ctq_resolve_set_error(c, e, CTQ_ERR_ENGINE_DIVERGENT,
			       "%s: the engines diverge and ctq's rules do not settle it: compressed-tensors gives %s, vLLM gives %s — make the config mean the same in both (exact names or `re:` targets, ignore by name)",
			       name, d[0], d[1]);
	}
	ctq_plan_free(&sub[0]);
	ctq_plan_free(&sub[1]);
	return st;
}

/* ---- driver ------------------------------------------------------------- */

enum ctq_status ctq_plan_resolve(struct ctq_plan *plan,
				 const struct ctq_qconfig *cfg,
				 const struct ctq_modules *mods,
				 enum ctq_semantics sem, struct ctq_regex_cache *rc,
				 struct ctq_error *err)
{
	memset(plan, 0, sizeof *plan);
	ctq_arena_init(&plan->arena);
	plan->sem = sem;
	plan->cfg = cfg;
	plan->mods = mods;
	struct ctq_regex_cache own;
	ctq_regex_cache_init(&own);
	struct ctx c = {plan, cfg, mods, rc ? rc : &own, err, NULL, 0, NULL, NULL, NULL};
	enum ctq_status st = CTQ_OK;
	char p[CTQ_PATH_MAX];

	if (cfg->sparsity_targets) {
		ctq_json_path_key(p, sizeof p, cfg->block_path, "sparsity_config.targets");
		st = ctq_error_set(err, CTQ_ERR_UNSUPPORTED_FORMAT, p,
				   "is non-empty: Sparsity support has been removed from compressed-tensors. Please use a model without sparsity configuration.");
		goto done;
	}
	if (sem == CTQ_SEM_STRICT && cfg->transform_groups) {
		ctq_json_path_key(p, sizeof p, cfg->block_path, "transform_config.config_groups");
		st = ctq_error_set(err, CTQ_ERR_UNSUPPORTED_FORMAT, p,
				   "is set; ctq does not execute Hadamard/QuIP/SpinQuant transforms");
		goto done;
	}
	if (sem != CTQ_SEM_VLLM)
		for (size_t g = 0; g < cfg->n_groups; g++)
			if (cfg->groups[g].scheme.args_error) {
				st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG,
						   cfg->groups[g].scheme.args_error_path, "%s",
						   cfg->groups[g].scheme.args_error);
				goto done;
			}
	if (cfg->kv_error) {
		/* vllm: only an Attention layer's KV-cache method reads the scheme */
		bool attention = sem != CTQ_SEM_VLLM;
		for (size_t i = 0; !attention && i < mods->n; i++)
			attention = mods->v[i].kind == CTQ_MODULE_ATTENTION && mods->v[i].vllm_type &&
				    !strcmp(mods->v[i].vllm_type, "Attention");
		if (attention) {
			st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, cfg->kv_error_path, "%s", cfg->kv_error);
			goto done;
		}
	}
	if (sem != CTQ_SEM_VLLM)
		for (size_t g = 0; g < cfg->n_groups; g++)
			if (cfg->groups[g].scheme.format_error) {
				st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG,
						   cfg->groups[g].scheme.format_error_path, "%s",
						   cfg->groups[g].scheme.format_error);
				goto done;
			}
	if (sem == CTQ_SEM_VLLM && (st = vllm_config_checks(&c)))
		goto done;
	/* QuantizationScheme's validator takes token, tensor, group,
	 * tensor_group and attn_head activations; channel and block raise. */
	if (sem == CTQ_SEM_CT && cfg->kv_cache &&
	    cfg->kv_cache->strategy != CTQ_STRATEGY_TOKEN &&
	    cfg->kv_cache->strategy != CTQ_STRATEGY_TENSOR &&
	    cfg->kv_cache->strategy != CTQ_STRATEGY_GROUP &&
	    cfg->kv_cache->strategy != CTQ_STRATEGY_TENSOR_GROUP &&
	    cfg->kv_cache->strategy != CTQ_STRATEGY_ATTN_HEAD) {
		/* apply_quantization_config wraps kv_cache_scheme into a
		 * QuantizationScheme(input_activations=...), whose validator
		 * refuses other activation strategies for the whole model. */
		ctq_json_path_key(p, sizeof p, cfg->block_path, "kv_cache_scheme.strategy");
		st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, p,
				   "is %s; compressed-tensors raises NotImplementedError: Using %s strategy is not supported for activation quantization",
				   ctq_strategy_name(cfg->kv_cache->strategy),
				   ctq_strategy_name(cfg->kv_cache->strategy));
		goto done;
	}
	/* A static kv_cache_scheme by group or tensor_group: compressed-tensors'
	 * initialisation allocates its scales with a None dimension and crashes
	 * (TypeError in torch.empty, measured with 0.20.0); dynamic ones run.
	 * Only where there is an attention module to initialise: a DiT has none
	 * compressed-tensors recognises (diffusers' Attention has to_k / to_v). */
	bool ct_attention = false;
	for (size_t i = 0; sem == CTQ_SEM_CT && !ct_attention && i < mods->n; i++)
		ct_attention = mods->v[i].kind == CTQ_MODULE_ATTENTION;
	if (sem == CTQ_SEM_CT && ct_attention && cfg->kv_cache && cfg->kv_cache->dynamic == CTQ_DYNAMIC_FALSE &&
	    (cfg->kv_cache->strategy == CTQ_STRATEGY_GROUP ||
	     cfg->kv_cache->strategy == CTQ_STRATEGY_TENSOR_GROUP)) {
		ctq_json_path_key(p, sizeof p, cfg->block_path, "kv_cache_scheme.strategy");
		st = ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, p,
				   "is %s with static scales; compressed-tensors' initialisation fails on it (TypeError: empty(): argument 'size' ...); dynamic per-group KV quantization runs",
				   ctq_strategy_name(cfg->kv_cache->strategy));
		goto done;
	}
	if (sem != CTQ_SEM_STRICT && (st = build_map(&c)))
		goto done;
	if (sem == CTQ_SEM_VLLM && (st = ctq_resolve_vllm_names(&c)))
		goto done;
	if (sem == CTQ_SEM_CT) {
		c.ct_order = ctq_arena_calloc(&plan->arena, c.n_map + 1, sizeof *c.ct_order);
		if (!c.ct_order) {
			st = ctq_resolve_nomem(&c);
			goto done;
		}
		for (size_t k = 0; k < c.n_map; k++)
			c.ct_order[k] = k;
		sort_base = c.map;
		qsort(c.ct_order, c.n_map, sizeof *c.ct_order, ct_cmp);
	}

	plan->entries = ctq_arena_calloc(&plan->arena, mods->n + 1, sizeof *plan->entries);
	if (!plan->entries) {
		st = ctq_resolve_nomem(&c);
		goto done;
	}
	plan->n = mods->n;
	for (size_t i = 0; i < mods->n; i++) {
		struct ctq_plan_entry *e = &plan->entries[i];
		e->module = i;
		e->group = -1;
		e->by = CTQ_BY_DEFAULT;
	}
	for (size_t i = 0; i < mods->n && !st; i++) {
		struct ctq_plan_entry *e = &plan->entries[i];
		const struct ctq_module *m = &mods->v[i];
		if (sem == CTQ_SEM_STRICT) {
			st = strict_module(&c, e);
		} else if (sem == CTQ_SEM_CT) {
			st = ct_module(&c, e);
		} else if (m->kind == CTQ_MODULE_ATTENTION) {
			st = vllm_attention(&c, e, m);
		} else if (m->moe >= 0) {
			/* The first expert met resolves the whole FusedMoE block. */
			const struct ctq_moe_block *b = &mods->moe[m->moe];
			bool first = true;
			for (size_t k = 0; k < b->n_experts * 3 && first; k++)
				if (b->member[k] >= 0 && (size_t)b->member[k] < i)
					first = false;
			if (first)
				st = ctq_resolve_moe_vllm(&c, (size_t)m->moe);
		} else if (m->vllm_unquantized) {
			/* Routers and Qwen2-MoE's shared_expert_gate: ReplicatedLinear(...,
			 * quant_config=None) in qwen3_moe.py, qwen2_moe.py, mixtral.py,
			 * deepseek_v2.py — no quantization method is ever asked for. */
			e->scheme = "unquantized";
		} else if (m->fused >= 0) {
			/* The lead resolves the fused layer; the others copy it below
			 * (a tree from a checkpoint's tensors may list k_proj first). */
			const struct ctq_fused_set *fs = &mods->fused[m->fused];
			if (fs->members[0] == i)
				st = ctq_resolve_vllm_layer(&c, e, m, fs);
		} else if (vllm_tied_head(&c, i, &st)) {
			continue;
		} else {
			st = ctq_resolve_vllm_layer(&c, e, m, NULL);
		}
	}
	for (size_t i = 0; i < mods->n && !st && sem == CTQ_SEM_VLLM; i++) {
		const struct ctq_module *m = &mods->v[i];
		if (m->kind == CTQ_MODULE_ATTENTION || m->fused < 0 ||
		    mods->fused[m->fused].members[0] == i)
			continue;
		/* Members share the fused layer's answer. */
		struct ctq_plan_entry *e = &plan->entries[i];
		const struct ctq_plan_entry *lead = &plan->entries[mods->fused[m->fused].members[0]];
		*e = *lead;
		e->module = i;
		if (lead->error) {
			const char *rest = strchr(lead->message, ':');
			st = ctq_resolve_set_error(&c, e, lead->error, "%s%s", m->name, rest ? rest : lead->message);
		}
	}
	if (!st && sem == CTQ_SEM_STRICT)
		st = strict_fused(&c);
	if (!st && sem == CTQ_SEM_STRICT)
		st = ctq_resolve_moe_strict(&c);
	if (!st && sem == CTQ_SEM_STRICT)
		st = strict_divergence(&c);
	for (size_t i = 0; i < plan->n && !st; i++)
		if (plan->entries[i].error)
			plan->n_errors++;
done:
	if (st) {
		plan->entries = NULL;
		plan->n = 0;
		plan->n_errors = 0;
		ctq_error_clear(&plan->refusal);
	}
	ctq_regex_cache_free(&own);
	return st;
}

void ctq_plan_free(struct ctq_plan *plan)
{
	if (!plan)
		return;
	ctq_arena_free(&plan->arena);
	plan->entries = NULL;
	plan->n = 0;
}

const struct ctq_plan_entry *ctq_plan_find(const struct ctq_plan *plan,
					   const char *module)
{
	for (size_t i = 0; i < plan->n; i++)
		if (!strcmp(plan->mods->v[plan->entries[i].module].name, module))
			return &plan->entries[i];
	return NULL;
}

bool ctq_plan_executable(const struct ctq_plan *plan)
{
	return plan->n_errors == 0 && plan->refusal.status == CTQ_OK;
}
