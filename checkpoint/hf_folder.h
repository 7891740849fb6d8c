/* ctq Hugging Face output folders: whether a checkpoint folder may be
 * written at a path (make-model, quantize and import-gguf write through a
 * temporary folder beside it, renamed into place when complete). Not the
 * writers themselves (checkpoint/synth.h, checkpoint/quantize.h). */
#ifndef CTQ_CHECKPOINT_HF_FOLDER_H
#define CTQ_CHECKPOINT_HF_FOLDER_H

#include <stdbool.h>

/* Whether out may receive a checkpoint folder: it does not exist, is an
 * empty folder, or force is set; *replace then says the commit must
 * replace what is there. */
bool ctq_hf_folder_writable(const char *out, bool force, bool *replace);

/* Drops trailing slashes in place (the temporary folder is made beside
 * out, so "a/b/" must name "a/b"). */
void ctq_hf_folder_trim(char *out);

#endif
