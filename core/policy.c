/* ctq policies: the built-in file or the user's, parsed and applied (see
 * policy.h). */
#include "core/policy.h"
#include "core/embedded.h"

#define POLICY_MAX_BYTES ((size_t)1 << 20)

static enum ctq_status applied(void *policy, cJSON *root, enum ctq_status st, const char *where,
			       ctq_policy_apply_fn apply, struct ctq_error *err)
{
	if (!st)
		st = apply(policy, root, where, err);
	cJSON_Delete(root);
	return st;
}

enum ctq_status ctq_policy_builtin(void *policy, const char *file, ctq_policy_apply_fn apply,
				   struct ctq_error *err)
{
	cJSON *root = NULL;
	enum ctq_status st = ctq_embedded_json(file, &root, err);
	return applied(policy, root, st, file, apply, err);
}

enum ctq_status ctq_policy_file(void *policy, const char *path, ctq_policy_apply_fn apply,
				struct ctq_error *err)
{
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_load_file(path, POLICY_MAX_BYTES, NULL, &root, err);
	return applied(policy, root, st, path, apply, err);
}
