/* ctq conformance suites (see suite.h). */
#define _GNU_SOURCE
#include "conform/suite.h"
#include "backend/knobs.h"
#include "core/cleanup.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "quant/modules.h"
#include "quant/shard.h"
#include "checkpoint/quantize.h"
#include "checkpoint/safetensors.h"
#include "core/hf_config.h"
#include "checkpoint/synth.h"
#include "checkpoint/target.h"
#include "conform/tpcheck.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CASE_FILE_MAX ((size_t)16 * 1024 * 1024)

/* ---- file discovery ------------------------------------------------------ */

struct names {
	char **v;
	size_t n, cap;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum ctq_status push_name(struct names *n, char *s, struct ctq_error *err)
{
	if (n->n == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 64;
		char **v = ctq_realloc(n->v, cap * sizeof *v);
		if (!v) {
			free(s);
			return ctq_error_set(err, CTQ_ERR_NOMEM, "suite", "out of memory");
		}
		n->v = v;
		n->cap = cap;
	}
	n->v[n->n++] = s;
	return CTQ_OK;
}

static enum ctq_status walk(const char *dir, struct names *out, int depth,
			    struct ctq_error *err)
{
	if (depth > 32)
		return ctq_error_set(err, CTQ_ERR_IO, dir, "suite folders nested deeper than 32");
	DIR *d = opendir(dir);
	if (!d)
		return ctq_error_set(err, CTQ_ERR_IO, dir, "cannot open suite folder");
	struct names here = {0};
	enum ctq_status st = CTQ_OK;
	struct dirent *de;
	while ((de = readdir(d)) && !st) {
		if (de->d_name[0] == '.')
			continue;
		char *p = ctq_path_join(dir, de->d_name);
		if (!p) {
			st = ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
			break;
		}
		st = push_name(&here, p, err);
	}
	closedir(d);
	if (here.n)
		qsort(here.v, here.n, sizeof *here.v, cmp_str);
	for (size_t i = 0; i < here.n; i++) {
		char *p = here.v[i];
		here.v[i] = NULL;
		if (st) {
			free(p);
			continue;
		}
		const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
		if (ctq_path_is_dir(p)) {
			if (strcmp(base, "fixtures"))
				st = walk(p, out, depth + 1, err);
			free(p);
		} else if (strlen(base) > 5 && !strcmp(base + strlen(base) - 5, ".json")) {
			st = push_name(out, p, err);
		} else {
			free(p);
		}
	}
	free(here.v);
	return st;
}

/* ---- validation ----------------------------------------------------------- */

static const char *const case_keys[] = {
	"id", "about", "semantics", "config", "config_file", "model", "modules", "tensors",
	"tp", "expect", "expect_by_semantics", "parser", "checkpoint", "numeric_tp",
};
static const char *const expect_keys[] = {"modules", "error", "shards", "numeric"};
static const char *const checkpoint_keys[] = {
	"arch", "preset", "seed", "quantize", "ignore", "hidden_size", "intermediate_size",
	"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
};
static const char *const module_expect_keys[] = {
	"scheme", "group", "by", "target", "error", "message_contains", "vllm_class", "absent", "guessed",
};
static const char *const error_expect_keys[] = {"class", "path", "message_contains"};

static bool one_of(const char *k, const char *const *v, size_t n)
{
	return ctq_str_index(k, v, n) >= 0;
}

#define N(a) (sizeof(a) / sizeof *(a))

static enum ctq_status bad(struct ctq_error *err, const char *file,
			   const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static enum ctq_status bad(struct ctq_error *err, const char *file,
			   const char *where, const char *fmt, ...)
{
	char path[CTQ_PATH_MAX];
	snprintf(path, sizeof path, "%s:%s", file, where);
	char msg[CTQ_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ctq_error_set(err, CTQ_ERR_USAGE, path, "not a valid suite case: %s", msg);
}

/* o must be an object (else the message not_object) whose keys are all
 * among keys[0..n-1]. */
static enum ctq_status check_object(const cJSON *o, const char *const *keys, size_t n,
				    const char *not_object, const char *file, const char *where,
				    struct ctq_error *err)
{
	if (!cJSON_IsObject(o))
		return bad(err, file, where, "%s", not_object);
	for (const cJSON *c = o->child; c; c = c->next)
		if (!one_of(c->string, keys, n))
			return bad(err, file, where, "unknown key \"%s\"", c->string);
	return CTQ_OK;
}

static enum ctq_status check_strings(const cJSON *a, const char *file,
				     const char *where, struct ctq_error *err)
{
	if (!cJSON_IsArray(a))
		return bad(err, file, where, "expected a list of strings");
	for (const cJSON *c = a->child; c; c = c->next)
		if (!cJSON_IsString(c))
			return bad(err, file, where, "expected a list of strings");
	return CTQ_OK;
}

static enum ctq_status check_error_expect(const cJSON *e, const char *file,
					  const char *where, struct ctq_error *err)
{
	if (cJSON_IsNull(e))
		return CTQ_OK;
	enum ctq_status st = check_object(e, error_expect_keys, N(error_expect_keys),
					  "expected an object {class, path, message_contains}", file, where, err);
	if (st)
		return st;
	const cJSON *cls = ctq_json_get(e, "class");
	if (!cJSON_IsString(cls) || ctq_status_from_name(cls->valuestring) == CTQ_STATUS_COUNT)
		return bad(err, file, where, "class must be an error class name (parse-error, invalid-config, ...)");
	const cJSON *p = ctq_json_get(e, "path");
	if (p && !cJSON_IsString(p))
		return bad(err, file, where, "path must be a string");
	const cJSON *mc = ctq_json_get(e, "message_contains");
	if (mc)
		return check_strings(mc, file, where, err);
	return CTQ_OK;
}

static enum ctq_status check_module_expect(const cJSON *m, const char *file,
					   const char *where, struct ctq_error *err)
{
	enum ctq_status st = check_object(m, module_expect_keys, N(module_expect_keys),
					  "expected an object", file, where, err);
	if (st)
		return st;
	if (!m->child)
		return bad(err, file, where, "names nothing to check");
	const cJSON *ab = ctq_json_get(m, "absent"), *gu = ctq_json_get(m, "guessed");
	if (ab && (!cJSON_IsTrue(ab) || m->child->next))
		return bad(err, file, where, "absent is true and alone: the plan has no such module");
	if (gu && !cJSON_IsBool(gu))
		return bad(err, file, where, "guessed must be true or false");
	const cJSON *e = ctq_json_get(m, "error");
	if (e && (!cJSON_IsString(e) || ctq_status_from_name(e->valuestring) == CTQ_STATUS_COUNT))
		return bad(err, file, where, "error must be an error class name");
	if (e && (ctq_json_get(m, "scheme") || ctq_json_get(m, "group") || ctq_json_get(m, "by")))
		return bad(err, file, where, "an expected error excludes scheme, group and by");
	const cJSON *by = ctq_json_get(m, "by");
	if (by && (!cJSON_IsString(by) ||
		   !one_of(by->valuestring, (const char *const[]){"name", "regex", "type", "ignore", "default"}, 5)))
		return bad(err, file, where, "by must be name, regex, type, ignore or default");
	for (const char *k = "scheme"; k; k = !strcmp(k, "scheme") ? "target" : !strcmp(k, "target") ? "vllm_class" : NULL) {
		const cJSON *v = ctq_json_get(m, k);
		if (v && !cJSON_IsString(v))
			return bad(err, file, where, "%s must be a string", k);
	}
	const cJSON *g = ctq_json_get(m, "group");
	if (g && !cJSON_IsString(g) && !cJSON_IsNull(g))
		return bad(err, file, where, "group must be a string or null");
	const cJSON *mc = ctq_json_get(m, "message_contains");
	if (mc && (st = check_strings(mc, file, where, err)))
		return st;
	return CTQ_OK;
}

static const char *const shard_expect_keys[] = {
	"rank", "weight_rows", "weight_cols", "scale_rows", "scale", "bias_rows", "bias", "kind",
};

static bool is_range(const cJSON *r)
{
	return cJSON_IsArray(r) && cJSON_GetArraySize(r) == 2 &&
	       cJSON_IsNumber(r->child) && cJSON_IsNumber(r->child->next) &&
	       r->child->valuedouble >= 0 && r->child->valuedouble <= r->child->next->valuedouble;
}

static enum ctq_status check_shard_expect(const cJSON *r, const char *file,
					  const char *where, struct ctq_error *err)
{
	enum ctq_status st = check_object(r, shard_expect_keys, N(shard_expect_keys),
					  "each rank is an object", file, where, err);
	if (st)
		return st;
	const cJSON *rank = ctq_json_get(r, "rank");
	if (!cJSON_IsNumber(rank) || rank->valuedouble < 0)
		return bad(err, file, where, "rank must be a non-negative integer");
	if (!r->child->next)
		return bad(err, file, where, "a rank entry names nothing to check");
	static const char *const ranges[] = {"weight_rows", "weight_cols", "scale_rows", "bias_rows"};
	for (size_t i = 0; i < N(ranges); i++) {
		const cJSON *x = ctq_json_get(r, ranges[i]);
		if (x && !is_range(x))
			return bad(err, file, where, "%s must be [start, end) with 0 <= start <= end", ranges[i]);
	}
	const cJSON *sc = ctq_json_get(r, "scale"), *bi = ctq_json_get(r, "bias"), *k = ctq_json_get(r, "kind");
	if (sc && (!cJSON_IsString(sc) || !one_of(sc->valuestring, (const char *const[]){"replicated", "sliced", "none"}, 3)))
		return bad(err, file, where, "scale must be replicated, sliced or none");
	if (bi && (!cJSON_IsString(bi) || !one_of(bi->valuestring, (const char *const[]){"rank0", "sliced", "replicated", "none"}, 4)))
		return bad(err, file, where, "bias must be rank0, sliced, replicated or none");
	if (k && (!cJSON_IsString(k) || !one_of(k->valuestring, (const char *const[]){"column", "row", "replicated"}, 3)))
		return bad(err, file, where, "kind must be column, row or replicated");
	return CTQ_OK;
}

static enum ctq_status check_expect(const cJSON *e, const char *file,
				    const char *where, struct ctq_error *err)
{
	enum ctq_status st = check_object(e, expect_keys, N(expect_keys),
					  "expected an object", file, where, err);
	if (st)
		return st;
	const cJSON *m = ctq_json_get(e, "modules");
	if (m) {
		if (!cJSON_IsObject(m))
			return bad(err, file, where, "modules must be an object keyed by module name");
		for (const cJSON *c = m->child; c; c = c->next) {
			char w[CTQ_PATH_MAX];
			snprintf(w, sizeof w, "%s.modules.%s", where, c->string);
			if ((st = check_module_expect(c, file, w, err)))
				return st;
		}
	}
	const cJSON *er = ctq_json_get(e, "error");
	if (er) {
		char w[CTQ_PATH_MAX];
		snprintf(w, sizeof w, "%s.error", where);
		if ((st = check_error_expect(er, file, w, err)))
			return st;
	}
	const cJSON *sh = ctq_json_get(e, "shards");
	if (sh) {
		if (!cJSON_IsObject(sh))
			return bad(err, file, where, "shards must be an object keyed by module name");
		for (const cJSON *ms = sh->child; ms; ms = ms->next) {
			char w[CTQ_PATH_MAX];
			snprintf(w, sizeof w, "%s.shards.%s", where, ms->string);
			if (!cJSON_IsArray(ms) || !ms->child)
				return bad(err, file, w, "expected a non-empty list of per-rank objects");
			for (const cJSON *r = ms->child; r; r = r->next)
				if ((st = check_shard_expect(r, file, w, err)))
					return st;
		}
	}
	return CTQ_OK;
}

/* Effective expectations of a case under one profile: expect, with
 * expect_by_semantics[sem] overriding per module and replacing error. */
struct effective {
	const cJSON *modules[2];   /* base, override (either may be NULL) */
	const cJSON *shards[2];
	const cJSON *error;        /* NULL: no config error expected */
};

static void effective(const struct ctq_case *c, enum ctq_semantics sem,
		      struct effective *e)
{
	const cJSON *base = ctq_json_get(c->json, "expect");
	const cJSON *by = ctq_json_get(ctq_json_get(c->json, "expect_by_semantics"),
				       ctq_semantics_name(sem));
	e->modules[0] = ctq_json_get(base, "modules");
	e->modules[1] = ctq_json_get(by, "modules");
	e->shards[0] = ctq_json_get(base, "shards");
	e->shards[1] = ctq_json_get(by, "shards");
	e->error = ctq_json_get(base, "error");
	const cJSON *be = ctq_json_get(by, "error");
	if (be)
		e->error = be;
	if (cJSON_IsNull(e->error))
		e->error = NULL;
}

static size_t count_checks(const struct effective *e)
{
	size_t n = e->error ? 1 : 0;
	for (const cJSON *m = e->modules[0] ? e->modules[0]->child : NULL; m; m = m->next)
		if (!ctq_json_get(e->modules[1], m->string))
			n++;
	for (const cJSON *m = e->modules[1] ? e->modules[1]->child : NULL; m; m = m->next)
		n++;
	for (int k = 0; k < 2; k++)
		for (const cJSON *m = e->shards[k] ? e->shards[k]->child : NULL; m; m = m->next)
			if (k == 1 || !ctq_json_get(e->shards[1], m->string))
				n += (size_t)cJSON_GetArraySize(m);
	return n;
}

/* A numeric case's synthetic checkpoint may hold at most this many bytes
 * (BF16 weights): each field is bounded on its own, but their product is
 * what lands on disk (a 305-byte case once asked for 1 GiB). */
#define CASE_CHECKPOINT_MAX_BYTES ((double)64 * 1024 * 1024)

static long num_or(const cJSON *o, const char *k, long dflt);

/* The synthetic model a numeric case asks for: its preset with the case's
 * overrides. Returns false (cerr filled) when arch or preset is unknown. */
static bool case_spec(const cJSON *ck, struct ctq_synth_spec *spec, struct ctq_error *cerr)
{
	if (ctq_synth_spec_init(spec, ctq_json_get(ck, "arch")->valuestring,
				ctq_json_get(ck, "preset")->valuestring, cerr))
		return false;
	spec->seed = (uint64_t)num_or(ck, "seed", 1);
	spec->hidden_size = num_or(ck, "hidden_size", spec->hidden_size);
	spec->intermediate_size = num_or(ck, "intermediate_size", spec->intermediate_size);
	spec->num_hidden_layers = num_or(ck, "num_hidden_layers", spec->num_hidden_layers);
	spec->num_attention_heads = num_or(ck, "num_attention_heads", spec->num_attention_heads);
	spec->num_key_value_heads = num_or(ck, "num_key_value_heads", spec->num_key_value_heads);
	spec->head_dim = num_or(ck, "head_dim", spec->head_dim);
	spec->vocab_size = num_or(ck, "vocab_size", spec->vocab_size);
	return true;
}

/* Bytes of the BF16 weights of a spec (an upper bound: an untied head). */
static double spec_bytes(const struct ctq_synth_spec *s)
{
	double H = (double)s->hidden_size, I = (double)s->intermediate_size;
	double q = (double)s->num_attention_heads * (double)s->head_dim;
	double kv = (double)s->num_key_value_heads * (double)s->head_dim;
	double layer = H * (q + 2 * kv) + q * H + 3 * H * I + 2 * H + 2 * (double)s->head_dim;
	return 2 * (2 * (double)s->vocab_size * H + (double)s->num_hidden_layers * layer + H);
}

/* A numeric case: a synthetic checkpoint (optionally quantized) whose
 * linear modules are computed as tp ranks on the CPU reference. */
static enum ctq_status validate_numeric(struct ctq_case *c, const cJSON *o, const char *file,
					const char *where, struct ctq_error *err)
{
	const cJSON *ck = c->checkpoint;
	enum ctq_status st = check_object(ck, checkpoint_keys, N(checkpoint_keys),
					  "checkpoint must be an object {arch, preset, ...}", file, where, err);
	if (st)
		return st;
	const cJSON *arch = ctq_json_get(ck, "arch"), *preset = ctq_json_get(ck, "preset");
	if (!cJSON_IsString(arch) || !cJSON_IsString(preset))
		return bad(err, file, where, "checkpoint needs arch and preset strings");
	for (const cJSON *k = ck->child; k; k = k->next)
		if (strcmp(k->string, "arch") && strcmp(k->string, "preset") && strcmp(k->string, "ignore") &&
		    strcmp(k->string, "quantize") &&
		    (!cJSON_IsNumber(k) || k->valuedouble < 0 || k->valuedouble > 1e9))
			return bad(err, file, where, "checkpoint.%s must be a non-negative number", k->string);
	struct ctq_synth_spec spec;
	struct ctq_error cerr = {0};
	if (case_spec(ck, &spec, &cerr)) {
		double bytes = spec_bytes(&spec);
		if (bytes > CASE_CHECKPOINT_MAX_BYTES)
			return bad(err, file, where,
				   "checkpoint would hold %.0f MiB of weights (hidden_size %ld, intermediate_size %ld, %ld layers, vocab %ld); a case's checkpoint is at most %.0f MiB",
				   bytes / (1024 * 1024), spec.hidden_size, spec.intermediate_size,
				   spec.num_hidden_layers, spec.vocab_size,
				   CASE_CHECKPOINT_MAX_BYTES / (1024 * 1024));
	}
	const cJSON *q = ctq_json_get(ck, "quantize"), *ign = ctq_json_get(ck, "ignore");
	if (q && !cJSON_IsBool(q))
		return bad(err, file, where, "checkpoint.quantize must be true or false");
	if (ign && (st = check_strings(ign, file, where, err)))
		return st;
	if (ctq_json_get(o, "config") || ctq_json_get(o, "config_file") || ctq_json_get(o, "model") ||
	    ctq_json_get(o, "modules") || ctq_json_get(o, "tp") || ctq_json_get(o, "expect_by_semantics"))
		return bad(err, file, where,
			   "a checkpoint case takes no config, model, modules, tp or expect_by_semantics");
	for (int s = 0; s < CTQ_SEM_COUNT; s++)
		if (c->sem[s] && s != CTQ_SEM_STRICT)
			return bad(err, file, where, "a checkpoint case runs under strict only");
	const cJSON *tps = ctq_json_get(o, "numeric_tp");
	if (!cJSON_IsArray(tps) || !tps->child || cJSON_GetArraySize(tps) > 8)
		return bad(err, file, where, "numeric_tp must list 1 to 8 tp sizes");
	for (const cJSON *t = tps->child; t; t = t->next) {
		if (!cJSON_IsNumber(t) || t->valuedouble < 2 || t->valuedouble > 64 ||
		    t->valuedouble != (double)(long)t->valuedouble)
			return bad(err, file, where, "numeric_tp entries must be integers 2..64");
		c->numeric_tp[c->n_numeric_tp++] = (long)t->valuedouble;
	}
	const cJSON *e = ctq_json_get(o, "expect");
	const cJSON *nm = ctq_json_get(e, "numeric");
	if (!cJSON_IsObject(e) || !cJSON_IsString(nm) || strcmp(nm->valuestring, "pass") || e->child->next)
		return bad(err, file, where, "a checkpoint case expects exactly {\"numeric\": \"pass\"}");
	return CTQ_OK;
}

/* config (inline) or config_file (relative to the case file, resolved into
 * c->config_file). */
static enum ctq_status validate_config_source(struct ctq_case *c, const cJSON *o,
					      const char *file, const char *where,
					      struct ctq_error *err)
{
	c->config = ctq_json_get(o, "config");
	const cJSON *cf = ctq_json_get(o, "config_file");
	if (!!c->config == !!cf)
		return bad(err, file, where, "give exactly one of config and config_file");
	if (c->config && !cJSON_IsObject(c->config))
		return bad(err, file, where, "config must be a config.json object");
	if (cf) {
		if (!cJSON_IsString(cf) || !cf->valuestring[0] || cf->valuestring[0] == '/')
			return bad(err, file, where, "config_file must be a path relative to the case file");
		const char *slash = strrchr(file, '/');
		size_t dl = slash ? (size_t)(slash - file) : 1;
		c->config_file = ctq_malloc(dl + strlen(cf->valuestring) + 2);
		if (!c->config_file)
			return ctq_error_set(err, CTQ_ERR_NOMEM, file, "out of memory");
		sprintf(c->config_file, "%.*s/%s", (int)dl, slash ? file : ".", cf->valuestring);
		if (!ctq_path_exists(c->config_file))
			return bad(err, file, where, "config_file %s does not exist", c->config_file);
	}
	return CTQ_OK;
}

/* model {arch, layers, prefix?} or modules [{name, type, vllm_type?}]. */
static enum ctq_status validate_target(struct ctq_case *c, const cJSON *o, const char *file,
				       const char *where, struct ctq_error *err)
{
	c->model = ctq_json_get(o, "model");
	c->modules = ctq_json_get(o, "modules");
	c->tensors = ctq_json_get(o, "tensors");
	if (!!c->model + !!c->modules + !!c->tensors > 1)
		return bad(err, file, where, "give one of model, modules and tensors");
	if (c->tensors) {
		if (!cJSON_IsObject(c->tensors) || !c->tensors->child)
			return bad(err, file, where, "tensors must be a non-empty object {name: shape}");
		for (const cJSON *t = c->tensors->child; t; t = t->next) {
			bool ok = cJSON_IsArray(t) && cJSON_GetArraySize(t) <= 8;
			for (const cJSON *d = ok ? t->child : NULL; d; d = d->next)
				ok = ok && cJSON_IsNumber(d) && d->valuedouble >= 0 &&
				     d->valuedouble == (double)(long)d->valuedouble;
			if (!ok)
				return bad(err, file, where,
					   "tensors.%s must be a shape: 0 to 8 non-negative integers", t->string);
		}
	}
	if (c->model) {
		if (!cJSON_IsObject(c->model))
			return bad(err, file, where, "model must be an object {arch, layers, ...}");
		const cJSON *arch = ctq_json_get(c->model, "arch");
		const cJSON *layers = ctq_json_get(c->model, "layers");
		if (!cJSON_IsString(arch) || !ctq_arch_normalise(arch->valuestring))
			return bad(err, file, where, "model.arch must be qwen3, qwen2 or llama");
		if (!cJSON_IsNumber(layers) || layers->valuedouble < 1 || layers->valuedouble > 4096 ||
		    layers->valuedouble != (double)(long)layers->valuedouble)
			return bad(err, file, where, "model.layers must be an integer 1..4096");
		const cJSON *pfx = ctq_json_get(c->model, "prefix");
		if (pfx && !cJSON_IsString(pfx))
			return bad(err, file, where, "model.prefix must be a string");
	}
	if (c->modules) {
		if (!cJSON_IsArray(c->modules) || !c->modules->child)
			return bad(err, file, where, "modules must be a non-empty list");
		for (const cJSON *m = c->modules->child; m; m = m->next) {
			const cJSON *n = ctq_json_get(m, "name"), *t = ctq_json_get(m, "type");
			const cJSON *vt = ctq_json_get(m, "vllm_type");
			if (!cJSON_IsObject(m) || !cJSON_IsString(n) || !t ||
			    check_strings(t, file, where, NULL) || !t->child ||
			    (vt && !cJSON_IsString(vt)))
				return bad(err, file, where,
					   "each module is {\"name\": str, \"type\": [class, ...], \"vllm_type\"?: str}");
			for (const cJSON *k = m->child; k; k = k->next)
				if (strcmp(k->string, "name") && strcmp(k->string, "type") &&
				    strcmp(k->string, "vllm_type"))
					return bad(err, file, where, "module key \"%s\" is unknown", k->string);
		}
	}
	return CTQ_OK;
}

/* expect, expect_by_semantics, and something to check under each profile. */
static enum ctq_status validate_expect(struct ctq_case *c, const cJSON *o, const char *file,
				       const char *where, struct ctq_error *err)
{
	enum ctq_status st;
	const cJSON *e = ctq_json_get(o, "expect");
	if (e && (st = check_expect(e, file, "expect", err)))
		return st;
	const cJSON *eb = ctq_json_get(o, "expect_by_semantics");
	if (eb) {
		if (!cJSON_IsObject(eb))
			return bad(err, file, where, "expect_by_semantics must be an object keyed by profile");
		for (const cJSON *k = eb->child; k; k = k->next) {
			enum ctq_semantics x;
			if (!ctq_semantics_parse(k->string, &x) || !c->sem[x])
				return bad(err, file, where,
					   "expect_by_semantics.%s names a profile the case does not run",
					   k->string);
			char w[128];
			snprintf(w, sizeof w, "expect_by_semantics.%s", k->string);
			if ((st = check_expect(k, file, w, err)))
				return st;
		}
	}
	for (int s = 0; s < CTQ_SEM_COUNT && !c->checkpoint; s++) {
		if (!c->sem[s])
			continue;
		struct effective ef;
		effective(c, (enum ctq_semantics)s, &ef);
		if (!count_checks(&ef))
			return bad(err, file, where, "has nothing to check under %s",
				   ctq_semantics_name((enum ctq_semantics)s));
		if ((ef.shards[0] || ef.shards[1]) && !c->tp)
			return bad(err, file, where, "expects shards but gives no tp");
		if (!c->model && !c->modules && !c->tensors && !(ef.error && !ef.modules[0] && !ef.modules[1]) &&
		    !(c->config && (ctq_json_get(ctq_hf_config_text(c->config, NULL), "num_hidden_layers") ||
				    ctq_json_get(c->config, "num_layers"))))
			return bad(err, file, where,
				   "expects modules but names none (give model or modules)");
	}
	return CTQ_OK;
}

static enum ctq_status validate_case(struct ctq_case *c, const cJSON *o,
				     const char *file, size_t index,
				     struct ctq_error *err)
{
	char where[64];
	snprintf(where, sizeof where, "case[%zu]", index);
	enum ctq_status st = check_object(o, case_keys, N(case_keys),
					  "a case is a JSON object", file, where, err);
	if (st)
		return st;
	memset(c, 0, sizeof *c);
	c->file = file;
	c->json = o;
	const cJSON *id = ctq_json_get(o, "id");
	if (!cJSON_IsString(id) || !id->valuestring[0])
		return bad(err, file, where, "id must be a non-empty string");
	c->id = id->valuestring;
	snprintf(where, sizeof where, "%s", c->id);
	const cJSON *about = ctq_json_get(o, "about");
	if (about && !cJSON_IsString(about))
		return bad(err, file, where, "about must be a string");
	c->about = about ? about->valuestring : "";
	const cJSON *sem = ctq_json_get(o, "semantics");
	if (!sem) {
		c->sem[CTQ_SEM_STRICT] = true;
	} else {
		if ((st = check_strings(sem, file, where, err)))
			return st;
		if (!sem->child)
			return bad(err, file, where, "semantics is empty");
		for (const cJSON *s = sem->child; s; s = s->next) {
			enum ctq_semantics x;
			if (!ctq_semantics_parse(s->valuestring, &x))
				return bad(err, file, where, "semantics \"%s\" is not strict, ct or vllm",
					   s->valuestring);
			c->sem[x] = true;
		}
	}
	c->checkpoint = ctq_json_get(o, "checkpoint");
	if (c->checkpoint)
		return validate_numeric(c, o, file, where, err);
	if ((st = validate_config_source(c, o, file, where, err)) ||
	    (st = validate_target(c, o, file, where, err)))
		return st;
	const cJSON *tp = ctq_json_get(o, "tp");
	if (tp) {
		if (!cJSON_IsNumber(tp) || tp->valuedouble < 1 || tp->valuedouble > 1024 ||
		    tp->valuedouble != (double)(long)tp->valuedouble)
			return bad(err, file, where, "tp must be an integer 1..1024");
		if (!c->model && !c->tensors &&
		    !(c->config && (ctq_json_get(ctq_hf_config_text(c->config, NULL), "num_hidden_layers") ||
				    ctq_json_get(c->config, "num_layers"))))
			return bad(err, file, where,
				   "tp needs a model (its shape) to plan shards: model, tensors, or a config with its layers");
		c->tp = (long)tp->valuedouble;
	}
	const cJSON *p = ctq_json_get(o, "parser");
	if (p) {
		if (!cJSON_IsObject(p))
			return bad(err, file, where, "parser must be an object");
		for (const cJSON *k = p->child; k; k = k->next) {
			if (!strcmp(k->string, "accept_unknown_keys") && cJSON_IsBool(k))
				c->parser.accept_unknown_keys = cJSON_IsTrue(k);
			else if (!strcmp(k->string, "ct_version") && cJSON_IsString(k) &&
				 ctq_version_parse(k->valuestring) >= 0)
				c->parser.ct_version = k->valuestring;
			else
				return bad(err, file, where,
					   "parser takes accept_unknown_keys (bool) and ct_version (\"X.Y[.Z]\")");
		}
	}
	return validate_expect(c, o, file, where, err);
}

enum ctq_status ctq_suite_load(struct ctq_suite *s, const char *dir,
			       struct ctq_error *err)
{
	memset(s, 0, sizeof *s);
	struct names files = {0};
	enum ctq_status st;
	if (!ctq_path_is_dir(dir)) {
		if (!ctq_path_exists(dir))
			return ctq_error_set(err, CTQ_ERR_IO, dir, "no such suite folder");
		char *one = ctq_strdup(dir);
		if (!one)
			return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
		st = push_name(&files, one, err);
	} else {
		st = walk(dir, &files, 0, err);
	}
	s->files = files.v;
	s->n_files = files.n;
	if (st)
		return st;
	if (!files.n)
		return ctq_error_set(err, CTQ_ERR_USAGE, dir, "holds no .json case files");
	s->roots = ctq_malloc(files.n * sizeof *s->roots);
	if (!s->roots)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	memset(s->roots, 0, files.n * sizeof *s->roots);
	size_t total = 0;
	for (size_t i = 0; i < files.n; i++) {
		if ((st = ctq_json_load_file(files.v[i], CASE_FILE_MAX, NULL, &s->roots[i], err)))
			return st;
		total += cJSON_IsArray(s->roots[i]) ? (size_t)cJSON_GetArraySize(s->roots[i]) : 1;
	}
	s->cases = ctq_malloc((total + 1) * sizeof *s->cases);
	if (!s->cases)
		return ctq_error_set(err, CTQ_ERR_NOMEM, dir, "out of memory");
	memset(s->cases, 0, (total + 1) * sizeof *s->cases);
	for (size_t i = 0; i < files.n; i++) {
		const cJSON *r = s->roots[i];
		if (cJSON_IsArray(r)) {
			if (!r->child)
				return bad(err, files.v[i], "(root)", "an empty list of cases");
			size_t k = 0;
			for (const cJSON *c = r->child; c; c = c->next, k++)
				if ((st = validate_case(&s->cases[s->n_cases++], c, files.v[i], k, err)))
					return st;
		} else if ((st = validate_case(&s->cases[s->n_cases++], r, files.v[i], 0, err))) {
			return st;
		}
	}
	for (size_t i = 0; i < s->n_cases; i++)
		for (size_t j = i + 1; j < s->n_cases; j++)
			if (!strcmp(s->cases[i].id, s->cases[j].id))
				return bad(err, s->cases[j].file, s->cases[j].id,
					   "duplicate id (also in %s)", s->cases[i].file);
	return CTQ_OK;
}

void ctq_suite_free(struct ctq_suite *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_cases; i++)
		free(s->cases[i].config_file);
	for (size_t i = 0; i < s->n_files; i++) {
		if (s->roots)
			cJSON_Delete(s->roots[i]);
		free(s->files[i]);
	}
	free(s->roots);
	free(s->files);
	free(s->cases);
	memset(s, 0, sizeof *s);
}

/* ---- running ------------------------------------------------------------- */

void ctq_checks_free(struct ctq_checks *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].name);
		free(c->v[i].expected);
		free(c->v[i].actual);
		free(c->v[i].detail);
	}
	free(c->v);
	memset(c, 0, sizeof *c);
}

static enum ctq_status add_check(struct ctq_checks *out, const struct ctq_case *c,
				 enum ctq_semantics sem, const char *name,
				 const char *expected, const char *actual,
				 const char *detail, struct ctq_error *err)
{
	if (out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 256;
		struct ctq_check *v = ctq_realloc(out->v, cap * sizeof *v);
		if (!v)
			return ctq_error_set(err, CTQ_ERR_NOMEM, c->id, "out of memory");
		out->v = v;
		out->cap = cap;
	}
	struct ctq_check *k = &out->v[out->n];
	k->case_id = c->id;
	k->file = c->file;
	k->sem = sem;
	k->name = ctq_strdup(name);
	k->expected = ctq_strdup(expected);
	k->actual = ctq_strdup(actual);
	k->detail = ctq_strdup(detail ? detail : "");
	k->passed = !detail || !detail[0];
	if (!k->name || !k->expected || !k->actual || !k->detail) {
		free(k->name);
		free(k->expected);
		free(k->actual);
		free(k->detail);
		return ctq_error_set(err, CTQ_ERR_NOMEM, c->id, "out of memory");
	}
	out->n++;
	return CTQ_OK;
}

static bool contains_all(const cJSON *mc, const char *msg, struct ctq_strbuf *why)
{
	bool ok = true;
	for (const cJSON *s = mc ? mc->child : NULL; s; s = s->next)
		if (!strstr(msg, s->valuestring)) {
			ctq_strbuf_printf(why, "%smessage lacks \"%s\"", why->len ? "; " : "",
					  s->valuestring);
			ok = false;
		}
	return ok;
}

static enum ctq_status check_error(const struct ctq_case *c, enum ctq_semantics sem,
				   const cJSON *exp, const struct ctq_error *got,
				   struct ctq_checks *out, struct ctq_error *err)
{
	struct ctq_strbuf e, a, why;
	ctq_strbuf_init(&e);
	ctq_strbuf_init(&a);
	ctq_strbuf_init(&why);
	const char *cls = ctq_json_get(exp, "class")->valuestring;
	const cJSON *path = ctq_json_get(exp, "path");
	ctq_strbuf_printf(&e, "%s", cls);
	if (path)
		ctq_strbuf_printf(&e, " at %s", path->valuestring);
	if (got->status) {
		ctq_strbuf_printf(&a, "%s at %s: %s", ctq_status_name(got->status), got->path,
				  got->message);
		if (strcmp(cls, ctq_status_name(got->status)))
			ctq_strbuf_printf(&why, "class is %s, expected %s",
					  ctq_status_name(got->status), cls);
		if (path && strcmp(path->valuestring, got->path))
			ctq_strbuf_printf(&why, "%spath is %s, expected %s", why.len ? "; " : "",
					  got->path, path->valuestring);
		contains_all(ctq_json_get(exp, "message_contains"), got->message, &why);
	} else {
		ctq_strbuf_printf(&a, "no config error");
		ctq_strbuf_printf(&why, "the config resolved; expected %s", cls);
	}
	enum ctq_status st = add_check(out, c, sem, "error", ctq_strbuf_str(&e),
				       ctq_strbuf_str(&a), ctq_strbuf_str(&why), err);
	ctq_strbuf_free(&e);
	ctq_strbuf_free(&a);
	ctq_strbuf_free(&why);
	return st;
}

static void describe_entry(const struct ctq_plan *p, const struct ctq_plan_entry *en,
			   struct ctq_strbuf *a)
{
	if (en->error) {
		ctq_strbuf_printf(a, "error=%s: %s", ctq_status_name(en->error), en->message);
		return;
	}
	ctq_strbuf_printf(a, "scheme=%s group=%s by=%s target=%s", en->scheme,
			  en->group >= 0 ? p->cfg->groups[en->group].name : "null",
			  ctq_match_by_name(en->by), en->target ? en->target : "null");
	if (en->vllm_class)
		ctq_strbuf_printf(a, " vllm_class=%s", en->vllm_class);
}

static enum ctq_status check_module(const struct ctq_case *c, enum ctq_semantics sem,
				    const char *name, const cJSON *exp,
				    const struct ctq_plan *plan,
				    const struct ctq_error *cfg_err,
				    struct ctq_checks *out, struct ctq_error *err)
{
	struct ctq_strbuf e, a, why;
	ctq_strbuf_init(&e);
	ctq_strbuf_init(&a);
	ctq_strbuf_init(&why);
	for (const cJSON *k = exp->child; k; k = k->next) {
		if (cJSON_IsString(k))
			ctq_strbuf_printf(&e, "%s%s=%s", e.len ? " " : "", k->string, k->valuestring);
		else if (cJSON_IsNull(k))
			ctq_strbuf_printf(&e, "%s%s=null", e.len ? " " : "", k->string);
		else if (cJSON_IsBool(k))
			ctq_strbuf_printf(&e, "%s%s=%s", e.len ? " " : "", k->string,
					  cJSON_IsTrue(k) ? "true" : "false");
	}
	const struct ctq_plan_entry *en = plan ? ctq_plan_find(plan, name) : NULL;
	const cJSON *gu = ctq_json_get(exp, "guessed");
	if (plan && ctq_json_get(exp, "absent")) {
		ctq_strbuf_printf(&a, en ? "present" : "absent");
		if (en)
			ctq_strbuf_printf(&why, "module %s is in the plan; expected none", name);
	} else if (!plan) {
		ctq_strbuf_printf(&a, "config error %s at %s: %s", ctq_status_name(cfg_err->status),
				  cfg_err->path, cfg_err->message);
		ctq_strbuf_printf(&why, "the config did not resolve");
	} else if (!en) {
		ctq_strbuf_printf(&a, "no such module");
		ctq_strbuf_printf(&why, "module %s is not among the %zu enumerated modules", name,
				  plan->n);
	} else {
		describe_entry(plan, en, &a);
		const bool guess = plan->mods->v[en->module].guessed;
		if (gu && cJSON_IsTrue(gu) != guess)
			ctq_strbuf_printf(&why, "class is %s; expected %s", guess ? "guessed" : "known",
					  cJSON_IsTrue(gu) ? "guessed" : "known");
		const cJSON *x;
		if ((x = ctq_json_get(exp, "error"))) {
			if (!en->error)
				ctq_strbuf_printf(&why, "resolved to %s; expected error %s", en->scheme,
						  x->valuestring);
			else if (strcmp(x->valuestring, ctq_status_name(en->error)))
				ctq_strbuf_printf(&why, "error is %s, expected %s",
						  ctq_status_name(en->error), x->valuestring);
			else
				contains_all(ctq_json_get(exp, "message_contains"), en->message, &why);
		} else if (en->error) {
			ctq_strbuf_printf(&why, "error %s: %s", ctq_status_name(en->error), en->message);
		} else {
			if ((x = ctq_json_get(exp, "scheme")) && strcmp(x->valuestring, en->scheme))
				ctq_strbuf_printf(&why, "scheme is %s, expected %s", en->scheme,
						  x->valuestring);
			if ((x = ctq_json_get(exp, "group"))) {
				const char *g = en->group >= 0 ? plan->cfg->groups[en->group].name : NULL;
				bool ok = cJSON_IsNull(x) ? !g : g && !strcmp(g, x->valuestring);
				if (!ok)
					ctq_strbuf_printf(&why, "%sgroup is %s, expected %s",
							  why.len ? "; " : "", g ? g : "null",
							  cJSON_IsNull(x) ? "null" : x->valuestring);
			}
			if ((x = ctq_json_get(exp, "by")) &&
			    strcmp(x->valuestring, ctq_match_by_name(en->by)))
				ctq_strbuf_printf(&why, "%sby is %s, expected %s", why.len ? "; " : "",
						  ctq_match_by_name(en->by), x->valuestring);
			if ((x = ctq_json_get(exp, "target")) &&
			    (!en->target || strcmp(x->valuestring, en->target)))
				ctq_strbuf_printf(&why, "%starget is %s, expected %s",
						  why.len ? "; " : "", en->target ? en->target : "null",
						  x->valuestring);
			if ((x = ctq_json_get(exp, "vllm_class")) &&
			    (!en->vllm_class || strcmp(x->valuestring, en->vllm_class)))
				ctq_strbuf_printf(&why, "%svllm_class is %s, expected %s",
						  why.len ? "; " : "",
						  en->vllm_class ? en->vllm_class : "null",
						  x->valuestring);
			if (ctq_json_get(exp, "message_contains"))
				ctq_strbuf_printf(&why, "%smessage_contains given but the module has no error",
						  why.len ? "; " : "");
		}
	}
	enum ctq_status st = add_check(out, c, sem, name, ctq_strbuf_str(&e), ctq_strbuf_str(&a),
				       ctq_strbuf_str(&why), err);
	ctq_strbuf_free(&e);
	ctq_strbuf_free(&a);
	ctq_strbuf_free(&why);
	return st;
}

static void range_str(struct ctq_strbuf *sb, const char *key, const int64_t r[2])
{
	ctq_strbuf_printf(sb, "%s%s=[%lld, %lld)", sb->len ? " " : "", key, (long long)r[0],
			  (long long)r[1]);
}

static void expect_range(const cJSON *exp, const char *key, const int64_t got[2], bool present,
			 struct ctq_strbuf *e, struct ctq_strbuf *why)
{
	const cJSON *x = ctq_json_get(exp, key);
	if (!x)
		return;
	int64_t want[2] = {(int64_t)x->child->valuedouble, (int64_t)x->child->next->valuedouble};
	range_str(e, key, want);
	if (!present)
		ctq_strbuf_printf(why, "%s%s absent", why->len ? "; " : "", key);
	else if (want[0] != got[0] || want[1] != got[1])
		ctq_strbuf_printf(why, "%s%s is [%lld, %lld), expected [%lld, %lld)", why->len ? "; " : "",
				  key, (long long)got[0], (long long)got[1], (long long)want[0],
				  (long long)want[1]);
}

static void expect_word(const cJSON *exp, const char *key, const char *got, struct ctq_strbuf *e,
			struct ctq_strbuf *why)
{
	const cJSON *x = ctq_json_get(exp, key);
	if (!x)
		return;
	ctq_strbuf_printf(e, "%s%s=%s", e->len ? " " : "", key, x->valuestring);
	if (strcmp(x->valuestring, got))
		ctq_strbuf_printf(why, "%s%s is %s, expected %s", why->len ? "; " : "", key, got,
				  x->valuestring);
}

static enum ctq_status check_shards(const struct ctq_case *c, enum ctq_semantics sem,
				    const char *module, const cJSON *ranks,
				    const struct ctq_plan *plan, const struct ctq_shard_plan *sp,
				    const struct ctq_error *cfg_err, struct ctq_checks *out,
				    struct ctq_error *err)
{
	for (const cJSON *r = ranks->child; r; r = r->next) {
		long rank = (long)ctq_json_get(r, "rank")->valuedouble;
		char name[CTQ_PATH_MAX];
		snprintf(name, sizeof name, "shard:%s:%ld", module, rank);
		struct ctq_strbuf e, a, why;
		ctq_strbuf_init(&e);
		ctq_strbuf_init(&a);
		ctq_strbuf_init(&why);
		long m = plan && sp && sp->v ? ctq_modules_find(plan->mods, module) : -1;
		if (!sp || !sp->v) {
			ctq_strbuf_printf(&e, "rank %ld planned", rank);
			ctq_strbuf_printf(&a, "%s at %s: %s", ctq_status_name(cfg_err->status),
					  cfg_err->path, cfg_err->message);
			ctq_strbuf_printf(&why, "no shard plan");
		} else if (m < 0 || rank >= sp->tp) {
			ctq_strbuf_printf(&e, "rank %ld of %s", rank, module);
			ctq_strbuf_printf(&a, "tp %d, module %s", sp->tp, m < 0 ? "absent" : "present");
			ctq_strbuf_printf(&why, "no such module or rank");
		} else {
			const struct ctq_shard *sh = ctq_shard_at(sp, (size_t)m, (int)rank);
			static const char *const scale_names[] = {"none", "sliced", "replicated"};
			static const char *const bias_names[] = {"none", "sliced", "rank0", "replicated"};
			range_str(&a, "weight_rows", sh->rows);
			range_str(&a, "weight_cols", sh->cols);
			ctq_strbuf_printf(&a, " kind=%s scale=%s", ctq_shard_kind_name(sh->kind),
					  scale_names[sh->scale]);
			if (sh->scale == CTQ_SCALE_SLICED)
				range_str(&a, "scale_rows", sh->scale_rows);
			ctq_strbuf_printf(&a, " bias=%s", bias_names[sh->bias]);
			expect_word(r, "kind", ctq_shard_kind_name(sh->kind), &e, &why);
			expect_range(r, "weight_rows", sh->rows, true, &e, &why);
			expect_range(r, "weight_cols", sh->cols, true, &e, &why);
			expect_range(r, "scale_rows", sh->scale_rows, sh->scale == CTQ_SCALE_SLICED, &e, &why);
			expect_word(r, "scale", scale_names[sh->scale], &e, &why);
			expect_range(r, "bias_rows", sh->bias_rows, sh->bias == CTQ_BIAS_SLICED, &e, &why);
			expect_word(r, "bias", bias_names[sh->bias], &e, &why);
		}
		enum ctq_status st = add_check(out, c, sem, name, ctq_strbuf_str(&e), ctq_strbuf_str(&a),
					       ctq_strbuf_str(&why), err);
		ctq_strbuf_free(&e);
		ctq_strbuf_free(&a);
		ctq_strbuf_free(&why);
		if (st)
			return st;
	}
	return CTQ_OK;
}

static long num_or(const cJSON *o, const char *k, long dflt)
{
	const cJSON *v = ctq_json_get(o, k);
	return cJSON_IsNumber(v) ? (long)v->valuedouble : dflt;
}

/* Builds the case's synthetic checkpoint in a scratch folder under
 * scratch_dir (struct ctq_case_run_options), then one check per (linear
 * module, tp): tp ranks against tp 1 (conform/tpcheck.h). */
static enum ctq_status run_numeric(const struct ctq_case *c, const char *scratch_dir,
				   struct ctq_checks *out, struct ctq_error *err)
{
	const cJSON *ck = c->checkpoint;
	struct ctq_synth_spec spec;
	char base[1200], qdir[1208]; /* scratch_dir may be a run's tmp_dir (results/run.h) */
	const char *parent = scratch_dir;
	if (!parent && (!(parent = ctq_env(CTQ_ENV_TMPDIR)) || !*parent))
		parent = "/tmp";
	if (snprintf(base, sizeof base, "%s/ctq-conform-XXXXXX", parent) >= (int)sizeof base)
		return ctq_error_set(err, CTQ_ERR_IO, parent, "path too long for a scratch folder");
	if (!mkdtemp(base))
		return ctq_error_set(err, CTQ_ERR_IO, parent, "cannot create a scratch folder: %s",
				     strerror(errno));
	snprintf(qdir, sizeof qdir, "%s-w8a8", base);
	/* A SIGINT/SIGTERM during the case removes both (core/cleanup.h): with
	 * the run directory, already registered, when they lie inside it. */
	if (!scratch_dir) {
		ctq_cleanup_register(base);
		ctq_cleanup_register(qdir);
	}
	struct ctq_error cerr = {0};
	struct ctq_target t;
	ctq_target_init(&t);
	enum ctq_status st = CTQ_OK;
	const char *dir = base;
	if (case_spec(ck, &spec, &cerr)) {
		if (!ctq_synth_write(&spec, base, 0, NULL, NULL, &cerr) && cJSON_IsTrue(ctq_json_get(ck, "quantize"))) {
			const cJSON *ign = ctq_json_get(ck, "ignore");
			const char *names[64];
			size_t n = 0;
			for (const cJSON *i = ign ? ign->child : NULL; i && n < 64; i = i->next)
				names[n++] = i->valuestring;
			struct ctq_quantize_options qo = {.ignore = names, .n_ignore = n};
			struct ctq_quantize_result res;
			memset(&res, 0, sizeof res);
			ctq_quantize_checkpoint(base, qdir, &qo, &res, &cerr);
			ctq_quantize_result_free(&res);
			dir = qdir;
		}
	}
	if (!cerr.status)
		ctq_target_open(&t, dir, CTQ_SEM_STRICT, CTQ_TARGET_TENSORS, &cerr);
	if (cerr.status) {
		if (cerr.status == CTQ_ERR_NOMEM)
			st = ctq_error_set(err, cerr.status, cerr.path, "%s", cerr.message);
		else
			st = add_check(out, c, CTQ_SEM_STRICT, "numeric:checkpoint", "a synthetic checkpoint",
				       cerr.message, cerr.message[0] ? cerr.message : "failed", err);
		goto done;
	}
	for (int k = 0; k < c->n_numeric_tp && !st; k++)
		for (size_t m = 0; m < t.mods.n && !st; m++) {
			if (t.mods.v[m].kind != CTQ_MODULE_LINEAR)
				continue;
			struct ctq_tp_result r;
			char name[CTQ_PATH_MAX], exp[96], act[256];
			snprintf(name, sizeof name, "numeric:%s:tp%ld", t.mods.v[m].name, c->numeric_tp[k]);
			struct ctq_error terr = {0};
			if (ctq_tp_check_linear(&t.ck, &t.plan, m, (int)c->numeric_tp[k], 8, 7, &r, &terr)) {
				if (terr.status == CTQ_ERR_NOMEM) {
					st = ctq_error_set(err, terr.status, terr.path, "%s", terr.message);
					break;
				}
				st = add_check(out, c, CTQ_SEM_STRICT, name, "tp ranks reproduce tp 1",
					       terr.message, terr.message, err);
				continue;
			}
			snprintf(exp, sizeof exp, "%s%s, BF16 rel-L2 <= %g", r.kind,
				 r.quantized ? ", int32 exact" : "", CTQ_TP_BF16_REL_L2_MAX);
			snprintf(act, sizeof act, "%s%s, BF16 %s rel-L2 %.3g", r.quantized ? "w8a8-int8" : "bf16",
				 r.quantized ? (r.int32_exact ? ", int32 exact" : ", int32 differs") : "",
				 r.bf16_exact ? "bit-identical," : "", r.bf16_rel_l2);
			st = add_check(out, c, CTQ_SEM_STRICT, name, exp, act, r.passed ? "" : r.reason, err);
		}
done:
	ctq_target_close(&t);
	ctq_remove_tree(base);
	ctq_remove_tree(qdir);
	if (!scratch_dir) {
		ctq_cleanup_unregister(base);
		ctq_cleanup_unregister(qdir);
	}
	return st;
}

enum ctq_status ctq_case_run(const struct ctq_case *c, enum ctq_semantics sem,
			     struct ctq_checks *out, struct ctq_error *err)
{
	return ctq_case_run_opts(c, sem, NULL, out, err);
}

enum ctq_status ctq_case_run_opts(const struct ctq_case *c, enum ctq_semantics sem,
				  const struct ctq_case_run_options *opt,
				  struct ctq_checks *out, struct ctq_error *err)
{
	if (c->checkpoint)
		return sem == CTQ_SEM_STRICT ?
			run_numeric(c, opt ? opt->scratch_dir : NULL, out, err) : CTQ_OK;
	struct ctq_qconfig cfg = {0};
	struct ctq_modules mods;
	struct ctq_plan plan = {0};
	struct ctq_shard_plan sp = {0};
	ctq_modules_init(&mods);
	struct ctq_error cerr = {0};
	cJSON *loaded = NULL;
	const cJSON *config = c->config;
	enum ctq_status st = CTQ_OK;
	if (c->config_file &&
	    ctq_json_load_file(c->config_file, (size_t)64 << 20, NULL, &loaded, &cerr) == CTQ_OK)
		config = loaded;
	bool resolved = false;
	if (config && !ctq_qconfig_parse(&cfg, config, &c->parser, &cerr)) {
		struct ctq_error merr = {0};
		if (ctq_case_modules(c, config, &mods, &merr)) {
			if (merr.status == CTQ_ERR_NOMEM) {
				st = ctq_error_set(err, merr.status, merr.path, "%s", merr.message);
				goto done;
			}
			cerr = merr;
		} else if (!ctq_plan_resolve(&plan, &cfg, &mods, sem, NULL, &cerr)) {
			resolved = true;
			if (c->tp)
				ctq_shard_plan_build(&sp, &plan, (int)c->tp, &cerr);
		}
	}
	if (cerr.status == CTQ_ERR_NOMEM) {
		st = ctq_error_set(err, cerr.status, cerr.path, "%s", cerr.message);
		goto done;
	}
	struct effective ef;
	effective(c, sem, &ef);
	/* A whole-config engine refusal (strict) is the case's config error;
	 * the plan still resolves, so its modules stay checkable. */
	if (ef.error && (st = check_error(c, sem, ef.error,
					  resolved && plan.refusal.status ? &plan.refusal : &cerr,
					  out, err)))
		goto done;
	for (int layer = 0; layer < 2; layer++) {
		for (const cJSON *m = ef.modules[layer] ? ef.modules[layer]->child : NULL; m;
		     m = m->next) {
			if (layer == 0 && ctq_json_get(ef.modules[1], m->string))
				continue;
			if ((st = check_module(c, sem, m->string, m, resolved ? &plan : NULL, &cerr,
					       out, err)))
				goto done;
		}
	}
	for (int layer = 0; layer < 2; layer++) {
		for (const cJSON *m = ef.shards[layer] ? ef.shards[layer]->child : NULL; m;
		     m = m->next) {
			if (layer == 0 && ctq_json_get(ef.shards[1], m->string))
				continue;
			if ((st = check_shards(c, sem, m->string, m, resolved ? &plan : NULL, &sp, &cerr,
					       out, err)))
				goto done;
		}
	}
done:
	ctq_shard_plan_free(&sp);
	ctq_plan_free(&plan);
	ctq_modules_free(&mods);
	ctq_qconfig_free(&cfg);
	cJSON_Delete(loaded);
	return st;
}
