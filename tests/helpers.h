/* Shared helpers for the Criterion unit tests: parse a config.json body
 * given as a string, enumerate a small model, resolve. */
#ifndef CTQ_TESTS_HELPERS_H
#define CTQ_TESTS_HELPERS_H

#include <criterion/criterion.h>
#include <string.h>

#include "core/json.h"
#include "quant/modules.h"
#include "quant/qconfig.h"
#include "quant/resolve.h"

static inline enum ctq_status parse_text(struct ctq_qconfig *cfg, const char *text,
					 const struct ctq_parse_options *opt,
					 struct ctq_error *err)
{
	cJSON *root = NULL;
	memset(cfg, 0, sizeof *cfg);
	enum ctq_status st = ctq_json_parse(text, strlen(text), "test.json", NULL, &root, err);
	if (st)
		return st;
	st = ctq_qconfig_parse(cfg, root, opt, err);
	cJSON_Delete(root);
	return st;
}

/* A quantization_config block with one group `body` (a scheme object). */
#define W8A8_WEIGHTS "{\"num_bits\":8,\"type\":\"int\",\"symmetric\":true,\"strategy\":\"channel\",\"dynamic\":false}"
#define W8A8_INPUTS "{\"num_bits\":8,\"type\":\"int\",\"symmetric\":true,\"strategy\":\"token\",\"dynamic\":true}"
#define W8A8_SCHEME(targets) "{\"targets\":" targets ",\"weights\":" W8A8_WEIGHTS ",\"input_activations\":" W8A8_INPUTS ",\"format\":\"int-quantized\"}"
#define W4A16_SCHEME(targets) "{\"targets\":" targets ",\"weights\":{\"num_bits\":4,\"type\":\"int\",\"symmetric\":true,\"strategy\":\"group\",\"group_size\":128},\"format\":\"pack-quantized\"}"

struct resolved {
	struct ctq_qconfig cfg;
	struct ctq_modules mods;
	struct ctq_plan plan;
	struct ctq_error err;
	enum ctq_status st;
};

static inline void resolve_text(struct resolved *r, const char *config, const char *arch,
				int layers, enum ctq_semantics sem)
{
	memset(r, 0, sizeof *r);
	ctq_modules_init(&r->mods);
	r->st = parse_text(&r->cfg, config, NULL, &r->err);
	if (r->st)
		return;
	r->st = ctq_modules_from_arch(&r->mods, arch, layers, NULL, &r->err);
	cr_assert_eq(r->st, CTQ_OK, "%s", r->err.message);
	r->st = ctq_plan_resolve(&r->plan, &r->cfg, &r->mods, sem, NULL, &r->err);
}

static inline void resolved_free(struct resolved *r)
{
	ctq_plan_free(&r->plan);
	ctq_modules_free(&r->mods);
	ctq_qconfig_free(&r->cfg);
}

static inline const struct ctq_plan_entry *entry(const struct resolved *r, const char *name)
{
	const struct ctq_plan_entry *e = ctq_plan_find(&r->plan, name);
	cr_assert(e, "module %s not in plan", name);
	return e;
}

static inline const char *group_of(const struct resolved *r, const struct ctq_plan_entry *e)
{
	return e->group >= 0 ? r->cfg.groups[e->group].name : "-";
}

#endif
