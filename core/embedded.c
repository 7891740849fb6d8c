/* ctq_embedded_json: an embedded file parsed (the text itself is the
 * generated build/gen/embedded.c's, tools/embed.sh). */
#include "core/embedded.h"

enum ctq_status ctq_embedded_json(const char *path, cJSON **root, struct ctq_error *err)
{
	*root = NULL;
	size_t len = 0;
	const char *text = ctq_embedded(path, &len);
	if (!text)
		return ctq_error_set(err, CTQ_ERR_IO, path, "is not embedded in this build (tools/embed.sh)");
	return ctq_json_parse(text, len, path, NULL, root, err);
}
