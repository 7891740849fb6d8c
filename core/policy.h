/* ctq policies: the thresholds a verdict judges by (the JSON files of policies/: probe,
 * verify-weights, kld, compare). Each is a JSON file the build carries into
 * the binary (core/embedded.h), so that the default is the file itself, and
 * that a file of the user's replaces (--policy PATH). This is the one way
 * any of them is read: each owner supplies only how its JSON fills its
 * struct. */
#ifndef CTQ_CORE_POLICY_H
#define CTQ_CORE_POLICY_H

#include <stddef.h>

#include "core/json.h"
#include "core/status.h"

/* Fills policy (the owner's struct) from root; errors name where (the
 * file). */
typedef enum ctq_status (*ctq_policy_apply_fn)(void *policy, const cJSON *root, const char *where,
					       struct ctq_error *err);

/* Each policy struct names where its numbers came from in a
 * char source[CTQ_POLICY_SOURCE_MAX]. */
#define CTQ_POLICY_SOURCE_MAX 512

/* policy (size bytes) zeroed, then the built-in file (e.g.
 * "policies/probe.json") applied; source "FILE (built in)". A file that
 * was not embedded, does not parse or does not apply is a broken build
 * (tests/test_policies.c checks that every one applies): every threshold
 * stays 0, so nothing passes, and source says why. */
void ctq_policy_default(void *policy, size_t size, const char *file, ctq_policy_apply_fn apply, char *source);

/* The JSON file at path (at most 1 MiB) applied over what policy holds;
 * source becomes path when it applies. */
enum ctq_status ctq_policy_load(void *policy, const char *path, ctq_policy_apply_fn apply, char *source,
				struct ctq_error *err);

#endif
