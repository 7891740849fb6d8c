/* ctq compressed-tensors config parser (see qconfig.h; spec §1–§3). */
#include "quant/qconfig.h"
#include "core/hf_config.h"
#include "core/json.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


struct parser {
	struct ctq_qconfig *cfg;
	const struct ctq_parse_options *opt;
	struct ctq_error *err;
};

const char *ctq_qlocation_name(enum ctq_qlocation loc)
{
	switch (loc) {
	case CTQ_QLOC_NONE: return "none";
	case CTQ_QLOC_ROOT: return "root";
	case CTQ_QLOC_TEXT_CONFIG: return "text_config";
	case CTQ_QLOC_LEGACY: return "legacy";
	case CTQ_QLOC_BARE: return "bare";
	}
	return "?";
}

static const char *const strategy_names[] = {
	[CTQ_STRATEGY_TENSOR] = "tensor",
	[CTQ_STRATEGY_CHANNEL] = "channel",
	[CTQ_STRATEGY_GROUP] = "group",
	[CTQ_STRATEGY_BLOCK] = "block",
	[CTQ_STRATEGY_TOKEN] = "token",
	[CTQ_STRATEGY_TENSOR_GROUP] = "tensor_group",
	[CTQ_STRATEGY_ATTN_HEAD] = "attn_head",
};

const char *ctq_strategy_name(enum ctq_strategy s) { return strategy_names[s]; }

const char *ctq_qtype_name(enum ctq_qtype t)
{
	return t == CTQ_QTYPE_INT ? "int" : "float";
}

/* §2.4 CompressionFormat plus the non-enum default. */
static const char *const format_names[] = {
	"dense", "sparse-bitmask", "sparse-24-bitmask", "int-quantized",
	"float-quantized", "naive-quantized", "pack-quantized", "marlin-24",
	"mixed-precision", "nvfp4-pack-quantized", "mxfp4-pack-quantized",
	"mxfp6-pack-quantized", "mxfp8-quantized", "fakequant",
};

static bool known_format(const char *f)
{
	for (size_t i = 0; i < sizeof format_names / sizeof *format_names; i++)
		if (strcmp(f, format_names[i]) == 0)
			return true;
	return false;
}


static const char *const status_values[] = {
	"initialized", "calibration", "frozen", "compressed", "decompressed",
};

int ctq_version_parse(const char *s)
{
	if (!s)
		return -1;
	if (*s == 'v')
		s++;
	long part[3] = {0, 0, 0};
	int n = 0;
	while (n < 3) {
		if (!isdigit((unsigned char)*s))
			return -1;
		char *end;
		part[n++] = strtol(s, &end, 10);
		s = end;
		if (*s != '.')
			break;
		s++;
	}
	/* Tolerate suffixes such as ".dev3" or "a1" after X.Y[.Z]. */
	if (n < 2 || part[1] > 99 || part[2] > 99 || part[0] > 999)
		return -1;
	return (int)(part[0] * 10000 + part[1] * 100 + part[2]);
}

static enum ctq_status oom(struct parser *p, const char *path)
{
	return ctq_error_set(p->err, CTQ_ERR_NOMEM, path, "out of memory");
}

static char *path_key(struct parser *p, const char *base, const char *key)
{
	return ctq_arena_printf(&p->cfg->arena, "%s%s%s", base,
				*base ? "." : "", key);
}

/* ---- QuantizationArgs (§2.3) ------------------------------------------ */

static const char *const args_keys[] = {
	"num_bits", "type", "symmetric", "group_size", "strategy",
	"block_structure", "dynamic", "actorder", "observer",
	"observer_kwargs", "scale_dtype", "zp_dtype",
};

static bool in_list(const char *k, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(k, list[i]) == 0)
			return true;
	return false;
}

static enum ctq_status check_keys(struct parser *p, const cJSON *obj,
				  const char *path, const char *const *keys,
				  size_t n_keys, const char *what)
{
	if (p->opt->accept_unknown_keys)
		return CTQ_OK;
	for (const cJSON *c = obj->child; c; c = c->next) {
		if (in_list(c->string, keys, n_keys))
			continue;
		char kp[CTQ_PATH_MAX];
		ctq_json_path_key(kp, sizeof kp, path, c->string);
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, kp,
				     "unknown key \"%s\" in %s; compressed-tensors >= 0.11 rejects extra fields (accept them with --accept-unknown-keys for older producers)",
				     c->string, what);
	}
	return CTQ_OK;
}

/* obj[key] into *out when is_type accepts it, NULL when it is absent or
 * null; anything else is invalid-config at base.key ("expected <what>"). */
static enum ctq_status get_member_or_null(struct parser *p, const cJSON *obj, const char *key,
					  const char *base, cJSON_bool (*is_type)(const cJSON *),
					  const char *what, const cJSON **out)
{
	const cJSON *it = ctq_json_get(obj, key);
	*out = NULL;
	if (!it || cJSON_IsNull(it))
		return CTQ_OK;
	if (!is_type(it)) {
		char kp[CTQ_PATH_MAX];
		ctq_json_path_key(kp, sizeof kp, base, key);
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, kp, "is %s; expected %s",
				     ctq_json_type_name(it), what);
	}
	*out = it;
	return CTQ_OK;
}

static enum ctq_status get_string_or_null(struct parser *p, const cJSON *obj,
					  const char *key, const char *base,
					  const char **out)
{
	const cJSON *it;
	enum ctq_status st = get_member_or_null(p, obj, key, base, cJSON_IsString,
						"a string or null", &it);
	*out = NULL;
	if (st || !it)
		return st;
	*out = ctq_arena_strdup(&p->cfg->arena, it->valuestring);
	return *out ? CTQ_OK : oom(p, base);
}

static enum ctq_status parse_strategy(struct parser *p, const char *s,
				      const char *path, enum ctq_strategy *out)
{
	for (size_t i = 0; i < sizeof strategy_names / sizeof *strategy_names; i++)
		if (strcasecmp(s, strategy_names[i]) == 0) {
			*out = (enum ctq_strategy)i;
			return CTQ_OK;
		}
	return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, path,
			     "is \"%s\"; expected one of tensor, channel, group, block, token, tensor_group, attn_head",
			     s);
}

static enum ctq_status parse_block_structure(struct parser *p, const cJSON *it,
				   const char *path, struct ctq_qargs *a)
{
	long v[2];
	if (cJSON_IsString(it)) {
		/* Legacy "RxC" form. */
		const char *s = it->valuestring;
		char *end;
		int n = 0;
		while (n < 2) {
			if (!isdigit((unsigned char)*s))
				goto bad_string;
			v[n++] = strtol(s, &end, 10);
			s = end;
			if (n == 1) {
				if (*s != 'x')
					goto bad_string;
				s++;
			}
		}
		if (*s != '\0')
			goto bad_string;
	} else if (cJSON_IsArray(it)) {
		int n = cJSON_GetArraySize(it);
		if (n != 2)
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, path,
					     "has %d elements; expected [rows, cols]",
					     n);
		for (int i = 0; i < 2; i++) {
			char ip[CTQ_PATH_MAX];
			ctq_json_path_index(ip, sizeof ip, path, (size_t)i);
			enum ctq_status st = ctq_json_int(cJSON_GetArrayItem(it, i),
							  ip, LONG_MIN, INT_MAX,
							  &v[i], p->err);
			if (st)
				return st;
		}
	} else {
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, path,
				     "is %s; expected [rows, cols] or \"RxC\"",
				     ctq_json_type_name(it));
	}
	if (v[0] <= 0 || v[1] <= 0 || v[0] > INT_MAX || v[1] > INT_MAX)
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, path,
				     "is [%ld, %ld]; block dimensions must be positive",
				     v[0], v[1]);
	a->has_block = true;
	a->block[0] = (int)v[0];
	a->block[1] = (int)v[1];
	return CTQ_OK;
bad_string:
	return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, path,
			     "is \"%s\"; expected \"RxC\" with two positive integers",
			     it->valuestring);
}

/* Normalisation (§2.3 "Normalisation algorithm", in order). */
static enum ctq_status normalise_args(struct parser *p, struct ctq_qargs *a,
				      bool strategy_given, const char *path)
{
	char fp[CTQ_PATH_MAX];
#define FIELD(name) (ctq_json_path_key(fp, sizeof fp, path, name), fp)
	if (!strategy_given) {
		if (!a->has_group_size)
			a->strategy = CTQ_STRATEGY_TENSOR;
		else if (a->group_size > 0)
			a->strategy = CTQ_STRATEGY_GROUP;
		else if (a->group_size == -1)
			a->strategy = CTQ_STRATEGY_CHANNEL;
		else
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
					     FIELD("group_size"),
					     "Invalid group size %d: group_size must be null, -1 (channel) or a positive group size",
					     a->group_size);
	}
	bool grouped = a->strategy == CTQ_STRATEGY_GROUP ||
		       a->strategy == CTQ_STRATEGY_TENSOR_GROUP;
	if (a->strategy == CTQ_STRATEGY_TOKEN && a->dynamic == CTQ_DYNAMIC_FALSE)
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
				     FIELD("dynamic"),
				     "Cannot perform static token quantization, please use `dynamic=True` (strategy is token, dynamic is false)");
	if (grouped && !(a->has_group_size && a->group_size > 0))
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
				     FIELD("group_size"),
				     "strategy %s requires group_size to be set to a positive value",
				     ctq_strategy_name(a->strategy));
	if (!grouped && a->has_group_size && a->group_size > 0)
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
				     FIELD("group_size"),
				     "group_size %d requires strategy to be set to 'group' (strategy is %s)",
				     a->group_size, ctq_strategy_name(a->strategy));
	if (a->strategy == CTQ_STRATEGY_BLOCK && !a->has_block)
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
				     FIELD("block_structure"),
				     "strategy block requires block_structure");
	if (a->strategy != CTQ_STRATEGY_BLOCK && a->has_block)
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
				     FIELD("block_structure"),
				     "block_structure requires strategy block (strategy is %s)",
				     ctq_strategy_name(a->strategy));
	if (a->actorder == CTQ_ACTORDER_GROUP && !grouped)
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
				     FIELD("actorder"),
				     "actorder group requires strategy group or tensor_group (strategy is %s)",
				     ctq_strategy_name(a->strategy));
	if (a->dynamic != CTQ_DYNAMIC_FALSE) {
		enum ctq_strategy s = a->strategy;
		if (s != CTQ_STRATEGY_TOKEN && s != CTQ_STRATEGY_TENSOR &&
		    s != CTQ_STRATEGY_TENSOR_GROUP && s != CTQ_STRATEGY_GROUP)
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
					     FIELD("strategy"),
					     "One of token, tensor, tensor_group, group must be used for dynamic quant (strategy is %s)",
					     ctq_strategy_name(s));
		if (a->dynamic == CTQ_DYNAMIC_LOCAL &&
		    s != CTQ_STRATEGY_TENSOR_GROUP)
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
					     FIELD("dynamic"),
					     "local is only supported for strategy tensor_group (strategy is %s)",
					     ctq_strategy_name(s));
		if (a->dynamic == CTQ_DYNAMIC_TRUE)
			a->observer = NULL;
		else if (!a->observer)
			a->observer = "minmax";
	} else if (!a->observer) {
		a->observer = "memoryless_minmax";
	}
	if (!a->zp_dtype) {
		if (a->type == CTQ_QTYPE_FLOAT) {
			/* compressed-tensors 0.20.0 stores 4-, 6- (FP6 E2M3,
			 * the MXFP6 presets) and 8-bit floats. */
			if (a->num_bits != 4 && a->num_bits != 6 && a->num_bits != 8)
				return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
						     FIELD("num_bits"),
						     "float quantization with num_bits %d has no storage dtype; expected 4, 6 or 8",
						     a->num_bits);
			a->zp_dtype = "float8_e4m3fn";
		} else {
			a->zp_dtype = a->num_bits <= 8	  ? "int8"
				      : a->num_bits <= 16 ? "int16"
							  : "int32";
		}
	}
#undef FIELD
	return CTQ_OK;
}

static enum ctq_status parse_args(struct parser *p, const cJSON *obj,
				  const char *path, const struct ctq_qargs **out)
{
	*out = NULL;
	if (!obj || cJSON_IsNull(obj))
		return CTQ_OK;
	if (!cJSON_IsObject(obj))
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, path,
				     "is %s; expected a QuantizationArgs object or null",
				     ctq_json_type_name(obj));
	enum ctq_status st = check_keys(p, obj, path, args_keys,
					sizeof args_keys / sizeof *args_keys,
					"QuantizationArgs");
	if (st)
		return st;
	struct ctq_qargs *a = ctq_arena_alloc(&p->cfg->arena, sizeof *a);
	if (!a)
		return oom(p, path);
	a->path = path;
	a->num_bits = 8;
	a->type = CTQ_QTYPE_INT;
	a->symmetric = true;
	char fp[CTQ_PATH_MAX];
	const cJSON *it;
	long v;

	if ((it = ctq_json_get(obj, "num_bits"))) {
		ctq_json_path_key(fp, sizeof fp, path, "num_bits");
		if ((st = ctq_json_int(it, fp, INT_MIN, INT_MAX, &v, p->err)))
			return st;
		a->num_bits = (int)v;
	}
	if ((st = get_member_or_null(p, obj, "type", path, cJSON_IsString,
				      "\"int\" or \"float\"", &it)))
		return st;
	if (it) {
		ctq_json_path_key(fp, sizeof fp, path, "type");
		if (strcasecmp(it->valuestring, "int") == 0)
			a->type = CTQ_QTYPE_INT;
		else if (strcasecmp(it->valuestring, "float") == 0)
			a->type = CTQ_QTYPE_FLOAT;
		else
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
					     "is \"%s\"; expected \"int\" or \"float\"",
					     it->valuestring);
	}
	if ((it = ctq_json_get(obj, "symmetric"))) {
		ctq_json_path_key(fp, sizeof fp, path, "symmetric");
		if (!cJSON_IsBool(it))
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
					     "is %s; expected true or false",
					     ctq_json_type_name(it));
		a->symmetric = cJSON_IsTrue(it);
		a->symmetric_given = true;
	}
	if ((it = ctq_json_get(obj, "group_size")) && !cJSON_IsNull(it)) {
		ctq_json_path_key(fp, sizeof fp, path, "group_size");
		if ((st = ctq_json_int(it, fp, INT_MIN, INT_MAX, &v, p->err)))
			return st;
		if (v < -1)
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
					     "is %ld; expected -1 (channel), a positive group size, or null",
					     v);
		a->has_group_size = true;
		a->group_size = (int)v;
	}
	bool strategy_given = false;
	if ((st = get_member_or_null(p, obj, "strategy", path, cJSON_IsString,
				      "a strategy name or null", &it)))
		return st;
	if (it) {
		ctq_json_path_key(fp, sizeof fp, path, "strategy");
		if ((st = parse_strategy(p, it->valuestring, fp, &a->strategy)))
			return st;
		strategy_given = true;
	}
	if ((it = ctq_json_get(obj, "block_structure")) && !cJSON_IsNull(it)) {
		ctq_json_path_key(fp, sizeof fp, path, "block_structure");
		if ((st = parse_block_structure(p, it, fp, a)))
			return st;
	}
	if ((it = ctq_json_get(obj, "dynamic")) && !cJSON_IsNull(it)) {
		ctq_json_path_key(fp, sizeof fp, path, "dynamic");
		if (cJSON_IsBool(it))
			a->dynamic = cJSON_IsTrue(it) ? CTQ_DYNAMIC_TRUE
						      : CTQ_DYNAMIC_FALSE;
		else if (cJSON_IsString(it) &&
			 strcasecmp(it->valuestring, "local") == 0)
			a->dynamic = CTQ_DYNAMIC_LOCAL;
		else
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
					     "is %s%s%s; expected true, false or \"local\"",
					     ctq_json_type_name(it),
					     cJSON_IsString(it) ? " " : "",
					     cJSON_IsString(it) ? it->valuestring : "");
	}
	if ((it = ctq_json_get(obj, "actorder")) && !cJSON_IsNull(it)) {
		ctq_json_path_key(fp, sizeof fp, path, "actorder");
		/* compressed-tensors 0.20.0's validate_actorder: group (dynamic,
		 * true) has been removed; older tables still take it. */
		bool removed = p->cfg->preset_version >= 2000 &&
			       (cJSON_IsTrue(it) ||
				(cJSON_IsString(it) && (!strcasecmp(it->valuestring, "group") ||
							!strcasecmp(it->valuestring, "dynamic"))));
		if (removed)
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
					     "is %s%s%s: actorder group has been removed in compressed-tensors 0.20 (use \"weight\" or null, or name an older version in the config's \"version\")",
					     cJSON_IsString(it) ? "\"" : "",
					     cJSON_IsString(it) ? it->valuestring : "true",
					     cJSON_IsString(it) ? "\"" : "");
		if (cJSON_IsBool(it)) {
			a->actorder = cJSON_IsTrue(it) ? CTQ_ACTORDER_GROUP
						       : CTQ_ACTORDER_NONE;
		} else if (cJSON_IsString(it)) {
			const char *s = it->valuestring;
			if (!strcasecmp(s, "group") || !strcasecmp(s, "dynamic"))
				a->actorder = CTQ_ACTORDER_GROUP;
			else if (!strcasecmp(s, "weight") || !strcasecmp(s, "static"))
				a->actorder = CTQ_ACTORDER_WEIGHT;
			else
				return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
						     "is \"%s\"; expected group, weight, dynamic, static, true, false or null",
						     s);
		} else {
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
					     "is %s; expected a string, a boolean or null",
					     ctq_json_type_name(it));
		}
	}
	if ((st = get_string_or_null(p, obj, "observer", path, &a->observer)))
		return st;
	if ((it = ctq_json_get(obj, "observer_kwargs")) && !cJSON_IsNull(it) &&
	    !cJSON_IsObject(it)) {
		ctq_json_path_key(fp, sizeof fp, path, "observer_kwargs");
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
				     "is %s; expected an object",
				     ctq_json_type_name(it));
	}
	if ((st = get_string_or_null(p, obj, "scale_dtype", path, &a->scale_dtype)))
		return st;
	if ((st = get_string_or_null(p, obj, "zp_dtype", path, &a->zp_dtype)))
		return st;
	if ((st = normalise_args(p, a, strategy_given, path)))
		return st;
	*out = a;
	return CTQ_OK;
}

/* ---- QuantizationScheme (§2.2) ----------------------------------------- */

static const char *const scheme_keys[] = {
	"targets", "weights", "input_activations", "output_activations", "format",
};

static enum ctq_status parse_string_list(struct parser *p, const cJSON *arr,
					 const char *path, const char ***out,
					 const char ***out_paths, size_t *n)
{
	*out = NULL;
	*out_paths = NULL;
	*n = 0;
	if (!cJSON_IsArray(arr))
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, path,
				     "is %s; expected a list of strings",
				     ctq_json_type_name(arr));
	size_t count = (size_t)cJSON_GetArraySize(arr);
	const char **v = ctq_arena_calloc(&p->cfg->arena, count + 1, sizeof *v);
	const char **vp = ctq_arena_calloc(&p->cfg->arena, count + 1, sizeof *vp);
	if (!v || !vp)
		return oom(p, path);
	size_t i = 0;
	for (const cJSON *c = arr->child; c; c = c->next, i++) {
		char ip[CTQ_PATH_MAX];
		ctq_json_path_index(ip, sizeof ip, path, i);
		if (!cJSON_IsString(c))
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, ip,
					     "is %s; expected a string",
					     ctq_json_type_name(c));
		v[i] = ctq_arena_strdup(&p->cfg->arena, c->valuestring);
		vp[i] = ctq_arena_strdup(&p->cfg->arena, ip);
		if (!v[i] || !vp[i])
			return oom(p, path);
	}
	*out = v;
	*out_paths = vp;
	*n = count;
	return CTQ_OK;
}

static enum ctq_status check_activation_args(struct parser *p,
					     const struct ctq_qargs *a,
					     const char *path, bool input)
{
	char fp[CTQ_PATH_MAX];
	if (!a)
		return CTQ_OK;
	if (input) {
		enum ctq_strategy s = a->strategy;
		if (s != CTQ_STRATEGY_TOKEN && s != CTQ_STRATEGY_TENSOR &&
		    s != CTQ_STRATEGY_GROUP && s != CTQ_STRATEGY_TENSOR_GROUP &&
		    s != CTQ_STRATEGY_ATTN_HEAD) {
			ctq_json_path_key(fp, sizeof fp, path, "strategy");
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
					     "Using %s strategy is not supported for activation quantization; expected token, tensor, group, tensor_group or attn_head",
					     ctq_strategy_name(s));
		}
	}
	if (a->actorder != CTQ_ACTORDER_NONE) {
		ctq_json_path_key(fp, sizeof fp, path, "actorder");
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
				     "Cannot apply actorder to %s activations",
				     input ? "input" : "output");
	}
	return CTQ_OK;
}

/* The parser's error kept as the scheme's first args error (a refusal of
 * some profiles only), then cleared so that parsing goes on. */
static enum ctq_status keep_args_error(struct parser *p, struct ctq_qscheme *s, const char *path)
{
	if (!s->args_error) {
		s->args_error = ctq_arena_strdup(&p->cfg->arena, p->err->message);
		s->args_error_path = ctq_arena_strdup(&p->cfg->arena, p->err->path);
		if (!s->args_error || !s->args_error_path)
			return oom(p, path);
	}
	memset(p->err, 0, sizeof *p->err);
	return CTQ_OK;
}

static enum ctq_status parse_scheme(struct parser *p, const cJSON *obj,
				    const char *path, struct ctq_qscheme *s)
{
	enum ctq_status st = check_keys(p, obj, path, scheme_keys,
					sizeof scheme_keys / sizeof *scheme_keys,
					"QuantizationScheme");
	if (st == CTQ_ERR_INVALID_CONFIG) {
		/* QuantizationScheme forbids extra keys; vLLM reads the group's
		 * dict by key and never builds one: refused under ct and strict */
		if ((st = keep_args_error(p, s, path)))
			return st;
	} else if (st) {
		return st;
	}
	const cJSON *t = ctq_json_get(obj, "targets");
	char *tp = path_key(p, path, "targets");
	if (!tp)
		return oom(p, path);
	if (!t)
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, tp,
				     "is missing; a scheme needs a list of targets");
	if ((st = parse_string_list(p, t, tp, &s->targets, &s->target_paths,
				    &s->n_targets)))
		return st;
	static const char *const args_fields[3] = {
		"weights", "input_activations", "output_activations"};
	const struct ctq_qargs **dst[3] = {&s->weights, &s->input, &s->output};
	/* vLLM's from_config drops a group of one target ending in "Attention"
	 * before it reads its args */
	const size_t tl = s->n_targets == 1 ? strlen(s->targets[0]) : 0;
	const bool vllm_drops = tl >= 9 && !strcmp(s->targets[0] + tl - 9, "Attention");
	for (int i = 0; i < 3; i++) {
		char *ap = path_key(p, path, args_fields[i]);
		if (!ap)
			return oom(p, path);
		st = parse_args(p, ctq_json_get(obj, args_fields[i]), ap, dst[i]);
		if (!st && i > 0 && (st = check_activation_args(p, *dst[i], ap, i == 1)) ==
					    CTQ_ERR_INVALID_CONFIG && !vllm_drops) {
			/* QuantizationScheme's validator (quant_scheme.py
			 * validate_model_after), which vLLM never builds: its
			 * QuantizationArgs take the args */
			if ((st = keep_args_error(p, s, ap)))
				return st;
			continue;
		}
		if (st == CTQ_ERR_INVALID_CONFIG && vllm_drops) {
			if ((st = keep_args_error(p, s, ap)))
				return st;
			s->weights = s->input = s->output = NULL;
			break;
		}
		if (st)
			return st;
	}
	const char *fmt;
	if ((st = get_string_or_null(p, obj, "format", path, &fmt)))
		return st;
	if (fmt) {
		char fp[CTQ_PATH_MAX];
		ctq_json_path_key(fp, sizeof fp, path, "format");
		const char *why = NULL;
		if (strcmp(fmt, "mixed-precision") == 0)
			why = "mixed-precision cannot be set as a format for a QuantizationScheme";
		else if (!known_format(fmt) || strcmp(fmt, "fakequant") == 0)
			why = ctq_arena_printf(&p->cfg->arena,
					       "is \"%s\"; not a compressed-tensors CompressionFormat",
					       fmt);
		if (why) {
			s->format_error = why;
			s->format_error_path = ctq_arena_strdup(&p->cfg->arena, fp);
			if (!s->format_error || !s->format_error_path)
				return oom(p, fp);
		}
	}
	s->format = fmt;
	return CTQ_OK;
}

/* ---- the block (§1, §2.1) ----------------------------------------------- */

static void upper(char *s)
{
	for (; *s; s++)
		*s = (char)toupper((unsigned char)*s);
}

static enum ctq_status parse_groups(struct parser *p, const cJSON *groups,
				    const char *path)
{
	struct ctq_qconfig *cfg = p->cfg;
	if (!cJSON_IsObject(groups))
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, path,
				     "is %s; expected an object of groups",
				     ctq_json_type_name(groups));
	size_t n = (size_t)cJSON_GetArraySize(groups);
	cfg->groups = ctq_arena_calloc(&cfg->arena, n + 1, sizeof *cfg->groups);
	if (!cfg->groups)
		return oom(p, path);
	for (const cJSON *g = groups->child; g; g = g->next) {
		struct ctq_qgroup *grp = &cfg->groups[cfg->n_groups++];
		grp->name = ctq_arena_strdup(&cfg->arena, g->string);
		grp->path = path_key(p, path, g->string);
		if (!grp->name || !grp->path)
			return oom(p, path);
		enum ctq_status st;
		if (cJSON_IsArray(g)) {
			/* §3.3: the group name is the preset. */
			char *name = ctq_arena_strdup(&cfg->arena, g->string);
			if (!name)
				return oom(p, path);
			upper(name);
			grp->preset_form = true;
			grp->preset = name;
			if ((st = parse_string_list(p, g, grp->path,
						    &grp->scheme.targets,
						    &grp->scheme.target_paths,
						    &grp->scheme.n_targets)))
				return st;
			if (!ctq_preset_expand(name, cfg->preset_version,
					       &cfg->arena, &grp->scheme,
					       &grp->scheme.format))
				return ctq_error_set(
					p->err, CTQ_ERR_UNKNOWN_PRESET, grp->path,
					"Unknown preset scheme name %s (compressed-tensors %d.%d.%d); a list-valued group is named by its preset, e.g. W8A8, W4A16, FP8_DYNAMIC",
					name, cfg->preset_version / 10000,
					cfg->preset_version / 100 % 100,
					cfg->preset_version % 100);
			if (!grp->scheme.weights && strcmp(name, "UNQUANTIZED"))
				return oom(p, grp->path);
		} else if (cJSON_IsObject(g)) {
			if ((st = parse_scheme(p, g, grp->path, &grp->scheme)))
				return st;
		} else {
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
					     grp->path,
					     "is %s; expected a scheme object or a preset's list of targets",
					     ctq_json_type_name(g));
		}
	}
	return CTQ_OK;
}

static const char *const block_keys_known[] = {
	"config_groups", "quant_method", "format", "quantization_status",
	"kv_cache_scheme", "global_compression_ratio", "ignore",
	"run_compressed", "sparsity_config", "transform_config", "version",
};

static enum ctq_status parse_block(struct parser *p, const cJSON *blk,
				   const char *path)
{
	struct ctq_qconfig *cfg = p->cfg;
	enum ctq_status st;
	char fp[CTQ_PATH_MAX];
	if (!cJSON_IsObject(blk))
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG,
				     *path ? path : "(root)",
				     "is %s; expected the quantization config object",
				     ctq_json_type_name(blk));
	for (const cJSON *c = blk->child; c; c = c->next)
		if (!in_list(c->string, block_keys_known,
			     sizeof block_keys_known / sizeof *block_keys_known))
			cfg->n_unknown_top_keys++;

	const char *method;
	if ((st = get_string_or_null(p, blk, "quant_method", path, &method)))
		return st;
	if (method) {
		char *m = ctq_arena_strdup(&cfg->arena, method);
		if (!m)
			return oom(p, path);
		for (char *c = m; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		if (strcmp(m, "compressed_tensors") == 0)
			m = "compressed-tensors";
		if (strcmp(m, "compressed-tensors") != 0) {
			ctq_json_path_key(fp, sizeof fp, path, "quant_method");
			return ctq_error_set(p->err, CTQ_ERR_UNSUPPORTED_FORMAT, fp,
					     "is \"%s\"; ctq reads compressed-tensors metadata only",
					     method);
		}
		cfg->quant_method = m;
	} else {
		cfg->quant_method = "compressed-tensors";
	}
	if ((st = get_string_or_null(p, blk, "version", path, &cfg->version)))
		return st;
	if (p->opt->ct_version) {
		cfg->preset_version = ctq_version_parse(p->opt->ct_version);
		if (cfg->preset_version < 0)
			return ctq_error_set(p->err, CTQ_ERR_USAGE, "ct_version",
					     "is \"%s\"; expected X.Y or X.Y.Z",
					     p->opt->ct_version);
	} else {
		int v = ctq_version_parse(cfg->version);
		cfg->preset_version = v >= 0 ? v : CTQ_CT_VERSION_HEAD;
	}
	if ((st = get_string_or_null(p, blk, "format", path, &cfg->format)))
		return st;
	/* QuantizationConfig.format is a plain str in compressed-tensors (and
	 * vLLM compares it by value): any string parses at the top level; a
	 * value no engine knows then selects no kernel (strict:
	 * unsupported-format on every quantized module). Group formats are
	 * CompressionFormat values (QuantizationScheme validates them). */
	if ((st = get_string_or_null(p, blk, "quantization_status", path,
				     &cfg->status)))
		return st;
	if (cfg->status &&
	    !in_list(cfg->status, status_values,
		     sizeof status_values / sizeof *status_values)) {
		ctq_json_path_key(fp, sizeof fp, path, "quantization_status");
		return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, fp,
				     "is \"%s\"; expected initialized, calibration, frozen, compressed or decompressed",
				     cfg->status);
	}
	const cJSON *ign = ctq_json_get(blk, "ignore");
	if (ign && !cJSON_IsNull(ign)) {
		char *ip = path_key(p, path, "ignore");
		if (!ip)
			return oom(p, path);
		if ((st = parse_string_list(p, ign, ip, &cfg->ignore,
					    &cfg->ignore_paths, &cfg->n_ignore)))
			return st;
	}
	char *kp = path_key(p, path, "kv_cache_scheme");
	if (!kp)
		return oom(p, path);
	st = parse_args(p, ctq_json_get(blk, "kv_cache_scheme"), kp, &cfg->kv_cache);
	if (st == CTQ_ERR_INVALID_CONFIG) {
		cfg->kv_error = ctq_arena_strdup(&cfg->arena, p->err->message);
		cfg->kv_error_path = ctq_arena_strdup(&cfg->arena, p->err->path);
		if (!cfg->kv_error || !cfg->kv_error_path)
			return oom(p, kp);
		memset(p->err, 0, sizeof *p->err);
		cfg->kv_cache = NULL;
	} else if (st) {
		return st;
	}

	const cJSON *sp, *tr;
	if ((st = get_member_or_null(p, blk, "sparsity_config", path, cJSON_IsObject, "an object",
				      &sp)))
		return st;
	if (sp) {
		const cJSON *t = ctq_json_get(sp, "targets");
		cfg->sparsity_targets = cJSON_IsArray(t) && cJSON_GetArraySize(t) > 0;
	}
	if ((st = get_member_or_null(p, blk, "transform_config", path, cJSON_IsObject,
				      "an object", &tr)))
		return st;
	if (tr) {
		const cJSON *g = ctq_json_get(tr, "config_groups");
		cfg->transform_groups = cJSON_IsObject(g) && g->child;
	}

	const cJSON *groups = ctq_json_get(blk, "config_groups");
	char *gp = path_key(p, path, "config_groups");
	if (!gp)
		return oom(p, path);
	if (!groups || cJSON_IsNull(groups)) {
		if (!cfg->kv_cache)
			return ctq_error_set(p->err, CTQ_ERR_INVALID_CONFIG, gp,
					     "is missing; a compressed-tensors config needs config_groups");
		cfg->groups = NULL;
		return CTQ_OK;
	}
	return parse_groups(p, groups, gp);
}

/* Messages about a value start "is ..." where they are raised next to the
 * path; the parser's contract is that a message names the field too, so the
 * path's last component is put in front once, here. */
static void name_the_field(struct ctq_error *err)
{
	if (!err || !err->status || strncmp(err->message, "is ", 3))
		return;
	const char *leaf = err->path;
	for (const char *c = err->path; *c; c++)
		if (*c == '.')
			leaf = c + 1;
	char msg[CTQ_MESSAGE_MAX];
	snprintf(msg, sizeof msg, "%s %s", leaf, err->message);
	memcpy(err->message, msg, sizeof msg);
}

enum ctq_status ctq_qconfig_parse(struct ctq_qconfig *cfg, const cJSON *root,
				  const struct ctq_parse_options *opt,
				  struct ctq_error *err)
{
	static const struct ctq_parse_options defaults = {0};
	memset(cfg, 0, sizeof *cfg);
	ctq_arena_init(&cfg->arena);
	struct parser p = {cfg, opt ? opt : &defaults, err};
	cfg->preset_version = CTQ_CT_VERSION_HEAD;
	if (!cJSON_IsObject(root))
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "(root)",
				     "is %s; expected a config.json object",
				     ctq_json_type_name(root));
	cfg->raw = cJSON_Duplicate(root, 1);
	if (!cfg->raw)
		return oom(&p, "(root)");

	const cJSON *blk = NULL;
	const char *path = "";
	const cJSON *q = ctq_json_get(root, "quantization_config");
	const cJSON *tc = ctq_json_get(root, "text_config");
	const cJSON *tq = ctq_json_get(tc, "quantization_config");
	const cJSON *lg = ctq_json_get(root, "compression_config");
	if (q && !cJSON_IsNull(q)) {
		blk = q;
		path = "quantization_config";
		cfg->location = CTQ_QLOC_ROOT;
	} else if (tq && !cJSON_IsNull(tq)) {
		blk = tq;
		path = "text_config.quantization_config";
		cfg->location = CTQ_QLOC_TEXT_CONFIG;
	} else if (lg && !cJSON_IsNull(lg)) {
		blk = lg;
		path = "compression_config";
		cfg->location = CTQ_QLOC_LEGACY;
	} else if (ctq_json_get(root, "config_groups")) {
		blk = root;
		path = "";
		cfg->location = CTQ_QLOC_BARE;
	} else {
		cfg->location = CTQ_QLOC_NONE;
		cfg->block_path = "";
		return CTQ_OK;
	}
	const cJSON *inner = ctq_json_get(blk, "quantization_config");
	if (inner && cJSON_IsObject(inner) && blk != root) {
		blk = inner;
		path = ctq_arena_printf(&cfg->arena, "%s.quantization_config", path);
		if (!path)
			return oom(&p, "(root)");
		cfg->nested = true;
	}
	cfg->block_path = path;
	enum ctq_status st = parse_block(&p, blk, path);
	name_the_field(err);
	return st;
}

enum ctq_status ctq_qconfig_load(struct ctq_qconfig *cfg, const char *path,
				 const struct ctq_parse_options *opt,
				 struct ctq_error *err)
{
	memset(cfg, 0, sizeof *cfg);
	cJSON *root = NULL;
	enum ctq_status st = ctq_hf_config_load(path, &root, NULL, NULL, 0, err);
	if (st) {
		ctq_arena_init(&cfg->arena);
		return st;
	}
	st = ctq_qconfig_parse(cfg, root, opt, err);
	cJSON_Delete(root);
	return st;
}

void ctq_qconfig_free(struct ctq_qconfig *cfg)
{
	if (!cfg)
		return;
	cJSON_Delete(cfg->raw);
	cfg->raw = NULL;
	ctq_arena_free(&cfg->arena);
	cfg->groups = NULL;
	cfg->n_groups = 0;
}

const char *ctq_qconfig_group_format(const struct ctq_qconfig *cfg,
				     const struct ctq_qgroup *g)
{
	return g->scheme.format ? g->scheme.format : cfg->format;
}
