/* The module tree of a suite case (see conform/suite.h): its modules list,
 * its model {arch, layers, ...} (the arch checked against the config's
 * model_type), its tensors {name: shape} with the config, or else the
 * config.json alone. */
#include "conform/suite.h"
#include "core/arena.h"
#include "core/json.h"
#include "quant/modules.h"

enum ctq_status ctq_case_modules(const struct ctq_case *c, const cJSON *config,
				 struct ctq_modules *mods, struct ctq_error *err)
{
	if (c->modules) {
		for (const cJSON *m = c->modules->child; m; m = m->next) {
			const cJSON *t = ctq_json_get(m, "type");
			const char *types[16];
			size_t n = 0;
			for (const cJSON *x = t->child; x && n < 16; x = x->next)
				types[n++] = x->valuestring;
			const cJSON *vt = ctq_json_get(m, "vllm_type");
			enum ctq_status st = ctq_modules_add(mods, ctq_json_get(m, "name")->valuestring,
							     types, n, vt ? vt->valuestring : NULL, err);
			if (st)
				return st;
		}
		return ctq_modules_finish(mods, err);
	}
	if (c->tensors) {
		size_t n = (size_t)cJSON_GetArraySize(c->tensors), i = 0;
		struct ctq_tensor_name *t = ctq_malloc((n ? n : 1) * sizeof *t);
		int64_t (*shape)[8] = ctq_malloc((n ? n : 1) * sizeof *shape); /* (n, 8) validated shapes */
		enum ctq_status st = CTQ_OK;
		if (!t || !shape)
			st = ctq_error_set(err, CTQ_ERR_NOMEM, c->id, "out of memory");
		for (const cJSON *x = c->tensors->child; x && !st; x = x->next, i++) {
			int d = 0;
			for (const cJSON *v = x->child; v && d < 8; v = v->next)
				shape[i][d++] = (int64_t)v->valuedouble;
			t[i] = (struct ctq_tensor_name){x->string, d, shape[i]};
		}
		if (!st)
			st = ctq_modules_from_tensors(mods, config, "config", t, n, err);
		ctq_free(shape);
		ctq_free(t);
		return st;
	}
	if (c->model) {
		enum ctq_status cst = ctq_modules_check_arch(config, ctq_json_get(c->model, "arch")->valuestring,
							    "model.arch", "config", err);
		if (cst)
			return cst;
		cJSON *m = cJSON_Duplicate(c->model, 1);
		if (!m)
			return ctq_error_set(err, CTQ_ERR_NOMEM, c->id, "out of memory");
		cJSON_AddItemToObject(m, "model_type",
				      cJSON_CreateString(ctq_json_get(c->model, "arch")->valuestring));
		cJSON_AddItemToObject(m, "num_hidden_layers",
				      cJSON_CreateNumber(ctq_json_get(c->model, "layers")->valuedouble));
		const cJSON *pfx = ctq_json_get(c->model, "prefix");
		enum ctq_status st = ctq_modules_from_config(mods, m, "model",
							     pfx ? pfx->valuestring : NULL, err);
		cJSON_Delete(m);
		return st;
	}
	return ctq_modules_from_config(mods, config, "config", NULL, err);
}

