/* Run plans: loading and validating a plan file (plan/plan.h). */
#include "plan/plan.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/strbuf.h"

#include <stdlib.h>
#include <string.h>

const char *ctq_step_status_name(enum ctq_step_status s)
{
	static const char *const names[] = {"passed", "failed", "skipped", "error"};
	return (unsigned)s < CTQ_STEP_STATUS_COUNT ? names[s] : "?";
}

static bool valid_id(const char *s)
{
	if (!*s || strlen(s) > 64 || !strcmp(s, "logs") || !strcmp(s, "plots") || s[0] == '.')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

static enum ctq_status bad(struct ctq_error *err, const char *path, const char *fmt, const char *a)
{
	return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, path, fmt, a);
}

static enum ctq_status string_list(const cJSON *v, const char *path, struct ctq_error *err)
{
	if (!cJSON_IsArray(v))
		return bad(err, path, "expected an array of strings, found %s", ctq_json_type_name(v));
	const cJSON *a;
	cJSON_ArrayForEach(a, v) if (!cJSON_IsString(a))
		return bad(err, path, "expected an array of strings; an item is %s", ctq_json_type_name(a));
	return CTQ_OK;
}

static const struct ctq_runplan_command *find_command(const struct ctq_runplan_command *cmds,
						      size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

/* The plan's name, about and steps array (root checked to be an object). */
static enum ctq_status load_head(struct ctq_runplan *p, const cJSON **steps, struct ctq_error *err)
{
	const cJSON *root = p->root;
	if (!cJSON_IsObject(root))
		return bad(err, "(root)", "a plan is a JSON object; found %s", ctq_json_type_name(root));
	for (const cJSON *m = root->child; m; m = m->next)
		if (strcmp(m->string, "name") && strcmp(m->string, "about") && strcmp(m->string, "steps"))
			return bad(err, m->string, "unknown member \"%s\" (name, about, steps)", m->string);
	const cJSON *name = ctq_json_get(root, "name"), *about = ctq_json_get(root, "about");
	*steps = ctq_json_get(root, "steps");
	if (!cJSON_IsString(name) || !valid_id(name->valuestring))
		return bad(err, "name", "expected a name of letters, digits, '-', '_' or '.'; found %s",
			   cJSON_IsString(name) ? name->valuestring : ctq_json_type_name(name));
	if (about && !cJSON_IsString(about))
		return bad(err, "about", "expected a string, found %s", ctq_json_type_name(about));
	p->name = name->valuestring;
	p->about = about ? about->valuestring : "";
	if (!cJSON_IsArray(*steps) || !cJSON_GetArraySize(*steps))
		return bad(err, "steps", "expected a non-empty array of steps, found %s",
			   cJSON_IsArray(*steps) ? "an empty one" : ctq_json_type_name(*steps));
	if (cJSON_GetArraySize(*steps) > CTQ_RUNPLAN_MAX_STEPS)
		return ctq_error_set(err, CTQ_ERR_INVALID_CONFIG, "steps", "more than %d steps",
				     CTQ_RUNPLAN_MAX_STEPS);
	return CTQ_OK;
}

/* A step's "after": one id or a list of ids of earlier steps, each once. */
static enum ctq_status load_after(struct ctq_runplan *p, struct ctq_runplan_step *x,
				  const cJSON *after, const char *mp, struct ctq_error *err)
{
	enum ctq_status st;
	if (after && cJSON_IsString(after)) {
		/* one id as a string */
	} else if (after && (st = string_list(after, mp, err))) {
		return st;
	}
	const cJSON *a = cJSON_IsString(after) ? after : after ? after->child : NULL;
	for (; a; a = cJSON_IsString(after) ? NULL : a->next) {
		int k;
		for (k = 0; k < p->n; k++)
			if (!strcmp(p->steps[k].id, a->valuestring))
				break;
		if (k == p->n)
			return bad(err, mp, "\"%s\" is not an earlier step", a->valuestring);
		if (x->n_after == CTQ_RUNPLAN_MAX_STEPS)
			return bad(err, mp, "names more than %s steps", "256");
		for (int j = 0; j < x->n_after; j++)
			if (x->after[j] == k)
				return bad(err, mp, "names \"%s\" twice", a->valuestring);
		x->after[x->n_after++] = k;
	}
	return CTQ_OK;
}

/* Step number p->n, the object s at JSON path jp. */
static enum ctq_status load_step(struct ctq_runplan *p, const cJSON *s, const char *jp,
				 const struct ctq_runplan_command *cmds, size_t n_cmds,
				 struct ctq_error *err)
{
	struct ctq_runplan_step *x = &p->steps[p->n];
	char mp[CTQ_PATH_MAX];
	enum ctq_status st;
	if (!cJSON_IsObject(s))
		return bad(err, jp, "a step is an object; found %s", ctq_json_type_name(s));
	static const char *const members[] = {"id", "command", "args", "needs", "after",
					      "requires", "expect", "about"};
	for (const cJSON *m = s->child; m; m = m->next) {
		size_t k;
		for (k = 0; k < sizeof members / sizeof *members; k++)
			if (!strcmp(m->string, members[k]))
				break;
		ctq_json_path_key(mp, sizeof mp, jp, m->string);
		if (k == sizeof members / sizeof *members)
			return bad(err, mp, "unknown member \"%s\" (id, command, args, needs, after, requires, expect, about)",
				   m->string);
	}
	const cJSON *id = ctq_json_get(s, "id"), *cmd = ctq_json_get(s, "command");
	ctq_json_path_key(mp, sizeof mp, jp, "id");
	if (!cJSON_IsString(id) || !valid_id(id->valuestring))
		return bad(err, mp, "expected an id of letters, digits, '-', '_' or '.' (not logs or plots); found %s",
			   cJSON_IsString(id) ? id->valuestring : ctq_json_type_name(id));
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->steps[i].id, id->valuestring))
			return bad(err, mp, "duplicate step id \"%s\"", id->valuestring);
	x->id = id->valuestring;
	ctq_json_path_key(mp, sizeof mp, jp, "command");
	if (!cJSON_IsString(cmd))
		return bad(err, mp, "expected a ctq command name, found %s", ctq_json_type_name(cmd));
	x->cmd = find_command(cmds, n_cmds, cmd->valuestring);
	if (!x->cmd)
		return bad(err, mp, "\"%s\" is not a command a plan can run (inspect, conform, probe, "
				    "bench, eval, generate, make-model, quantize, import-gguf, compare)",
			   cmd->valuestring);
	x->command = cmd->valuestring;
	x->args = ctq_json_get(s, "args");
	ctq_json_path_key(mp, sizeof mp, jp, "args");
	if (x->args && (st = string_list(x->args, mp, err)))
		return st;
	if (x->args && cJSON_GetArraySize(x->args) > CTQ_RUNPLAN_MAX_ARGS)
		return bad(err, mp, "more than %s arguments", "128");
	x->requires = ctq_json_get(s, "requires");
	ctq_json_path_key(mp, sizeof mp, jp, "requires");
	if (x->requires && (st = string_list(x->requires, mp, err)))
		return st;
	const cJSON *needs = ctq_json_get(s, "needs");
	ctq_json_path_key(mp, sizeof mp, jp, "needs");
	if (needs && !(cJSON_IsString(needs) && !strcmp(needs->valuestring, "gpu")))
		return bad(err, mp, "the only need is \"gpu\"; found %s",
			   cJSON_IsString(needs) ? needs->valuestring : ctq_json_type_name(needs));
	x->needs_gpu = needs != NULL;
	const cJSON *expect = ctq_json_get(s, "expect");
	ctq_json_path_key(mp, sizeof mp, jp, "expect");
	if (expect && !(cJSON_IsString(expect) && (!strcmp(expect->valuestring, "fail") ||
						   !strcmp(expect->valuestring, "pass"))))
		return bad(err, mp, "expected \"pass\" (the default) or \"fail\" (the step shows a gate's "
				    "teeth: its check must fail); found %s",
			   cJSON_IsString(expect) ? expect->valuestring : ctq_json_type_name(expect));
	x->expect_fail = expect && !strcmp(expect->valuestring, "fail");
	const cJSON *ab = ctq_json_get(s, "about");
	ctq_json_path_key(mp, sizeof mp, jp, "about");
	if (ab && !cJSON_IsString(ab))
		return bad(err, mp, "expected a string, found %s", ctq_json_type_name(ab));
	x->about = ab ? ab->valuestring : "";
	ctq_json_path_key(mp, sizeof mp, jp, "after");
	if ((st = load_after(p, x, ctq_json_get(s, "after"), mp, err)))
		return st;
	x->status = CTQ_STEP_SKIPPED;
	p->n++;
	return CTQ_OK;
}

enum ctq_status ctq_runplan_load(struct ctq_runplan *p, const char *file,
				 const struct ctq_runplan_command *cmds, size_t n_cmds,
				 struct ctq_error *err)
{
	memset(p, 0, sizeof *p);
	enum ctq_status st = ctq_json_load_file(file, (size_t)4 << 20, NULL, &p->root, err);
	if (st)
		return st == CTQ_ERR_IO ? st : CTQ_ERR_PARSE;
	unsigned char d[CTQ_SHA256_BYTES];
	if ((st = ctq_sha256_file(file, d, err)))
		return st;
	ctq_sha256_hex(d, p->sha256);
	const cJSON *steps, *s;
	if ((st = load_head(p, &steps, err)))
		return st;
	char jp[CTQ_PATH_MAX];
	cJSON_ArrayForEach(s, steps)
	{
		ctq_json_path_index(jp, sizeof jp, "steps", (size_t)p->n);
		if ((st = load_step(p, s, jp, cmds, n_cmds, err)))
			return st;
	}
	return CTQ_OK;
}

void ctq_runplan_free(struct ctq_runplan *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		struct ctq_runplan_step *x = &p->steps[i];
		for (int k = 0; k < x->argc; k++)
			free(x->argv[k]);
		x->argc = 0;
	}
	cJSON_Delete(p->root);
	p->root = NULL;
}

char *ctq_runplan_substitute(const char *s, const char *run, const char *step)
{
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	while (*s) {
		if (!strncmp(s, "${run}", 6)) {
			ctq_strbuf_append(&sb, run);
			s += 6;
		} else if (!strncmp(s, "${step}", 7)) {
			ctq_strbuf_append(&sb, step);
			s += 7;
		} else {
			ctq_strbuf_appendn(&sb, s, 1);
			s++;
		}
	}
	if (sb.oom || !sb.data) {
		ctq_strbuf_free(&sb);
		return sb.oom ? NULL : ctq_strdup("");
	}
	return sb.data;
}
