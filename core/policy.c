/* ctq policies: the built-in file or the user's, parsed and applied (see
 * policy.h). */
#include "core/policy.h"
#include "core/embedded.h"

#include <stdio.h>
#include <string.h>

#define POLICY_MAX_BYTES ((size_t)1 << 20)

static enum ctq_status applied(void *policy, cJSON *root, enum ctq_status st, const char *where,
			       ctq_policy_apply_fn apply, struct ctq_error *err)
{
	if (!st)
		st = apply(policy, root, where, err);
	cJSON_Delete(root);
	return st;
}

void ctq_policy_default(void *policy, size_t size, const char *file, ctq_policy_apply_fn apply, char *source)
{
	memset(policy, 0, size);
	struct ctq_error err = {0};
	cJSON *root = NULL;
	enum ctq_status st = ctq_embedded_json(file, &root, &err);
	if (!applied(policy, root, st, file, apply, &err)) {
		snprintf(source, CTQ_POLICY_SOURCE_MAX, "%s (built in)", file);
		return;
	}
	memset(policy, 0, size);
	snprintf(source, CTQ_POLICY_SOURCE_MAX, "the built-in %s does not parse: a broken build (%s)", file,
		 err.message);
}

enum ctq_status ctq_policy_load(void *policy, const char *path, ctq_policy_apply_fn apply, char *source,
				struct ctq_error *err)
{
	cJSON *root = NULL;
	enum ctq_status st = ctq_json_load_file(path, POLICY_MAX_BYTES, NULL, &root, err);
	st = applied(policy, root, st, path, apply, err);
	if (!st)
		snprintf(source, CTQ_POLICY_SOURCE_MAX, "%s", path);
	return st;
}
