/* ctq policies: the thresholds a verdict judges by (the JSON files of policies/: probe,
 * verify-weights, kld, compare). Each is a JSON file the build carries into
 * the binary (core/embedded.h), so that the default is the file itself, and
 * that a file of the user's replaces (--policy PATH). This is the one way
 * any of them is read: each owner supplies only how its JSON fills its
 * struct. */
#ifndef CTQ_CORE_POLICY_H
#define CTQ_CORE_POLICY_H

#include "core/json.h"
#include "core/status.h"

/* Fills policy (the owner's struct) from root; errors name where (the
 * file). */
typedef enum ctq_status (*ctq_policy_apply_fn)(void *policy, const cJSON *root, const char *where,
					       struct ctq_error *err);

/* The built-in file (e.g. "policies/probe.json") applied to policy. An
 * error is a broken build: the file was not embedded, does not parse or
 * does not apply (tests/test_policies.c checks that every one does). */
enum ctq_status ctq_policy_builtin(void *policy, const char *file, ctq_policy_apply_fn apply,
				   struct ctq_error *err);

/* The JSON file at path (at most 1 MiB) applied over what policy holds. */
enum ctq_status ctq_policy_file(void *policy, const char *path, ctq_policy_apply_fn apply,
				struct ctq_error *err);

#endif
