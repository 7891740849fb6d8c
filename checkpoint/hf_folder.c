/* ctq Hugging Face output folders (checkpoint/hf_folder.h). */
#include "checkpoint/hf_folder.h"
#include "core/fileio.h"

#include <string.h>

bool ctq_hf_folder_writable(const char *out, bool force, bool *replace)
{
	*replace = false;
	if (!ctq_path_exists(out))
		return true;
	if (force || (ctq_path_is_dir(out) && ctq_dir_is_empty(out))) {
		*replace = true;
		return true;
	}
	return false;
}

void ctq_hf_folder_trim(char *out)
{
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
}
