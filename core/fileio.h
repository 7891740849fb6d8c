/* ctq file helpers: bounded whole-file reads, directories, and atomic
 * output (write to a temporary name, rename when complete) so that a command
 * that fails leaves no partial file behind. */
#ifndef CTQ_CORE_FILEIO_H
#define CTQ_CORE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct stat;

/* Opens path for reading only if it is a regular file: the type is checked
 * on a descriptor opened with O_NONBLOCK, so a FIFO, device or socket never
 * blocks the caller. *fd_out receives the descriptor (blocking again; the
 * caller closes it), *sb its fstat. `expected` names the file for the error
 * ("a .gguf file"). Errors: io-error naming path (cannot open or stat, a
 * directory, FIFO, socket or device). */
enum ctq_status ctq_file_open_regular(const char *path, const char *expected, int *fd_out,
				      struct stat *sb, struct ctq_error *err);

/* Reads the regular file path (ctq_file_open_regular) into a malloc'ed
 * NUL-terminated buffer (returned owned in *out, length in *n_bytes). Files
 * over max_bytes are an io-error naming the size. */
enum ctq_status ctq_file_read(const char *path, size_t max_bytes, char **out,
			      size_t *n_bytes, struct ctq_error *err);

/* A parser of a whole file's text (n_bytes, NUL-terminated, borrowed);
 * path names the file in errors. */
typedef enum ctq_status (*ctq_file_parse_fn)(void *ctx, const char *text, size_t n_bytes,
					     const char *path, struct ctq_error *err);
/* Reads path (at most max_bytes, as ctq_file_read), hands its text to
 * parse(ctx, ...) and frees it; returns the read's error or parse's
 * status. */
enum ctq_status ctq_file_parse(const char *path, size_t max_bytes, ctq_file_parse_fn parse,
			       void *ctx, struct ctq_error *err);

/* Reads the text file path (at most max_bytes) into *out, as ctq_file_read,
 * and points *tail at its last lines: at most tail_bytes, starting at a line
 * start. Free *out with free(). */
enum ctq_status ctq_file_read_tail(const char *path, size_t max_bytes, size_t tail_bytes,
				   char **out, const char **tail, struct ctq_error *err);

/* Writes n_bytes to path through path.tmp.<pid> and rename(2). */
enum ctq_status ctq_file_write_atomic(const char *path, const void *data,
				      size_t n_bytes, struct ctq_error *err);

struct ctq_strbuf;
/* Writes the text of sb to path as ctq_file_write_atomic does; a buffer
 * that ran out of memory while it was built is nomem at path, and nothing is
 * written. */
enum ctq_status ctq_strbuf_write_atomic(const struct ctq_strbuf *sb, const char *path,
					struct ctq_error *err);

/* Maps the regular file path read-only (MAP_PRIVATE): *map receives the
 * bytes (NULL for an empty file), *n_bytes its size. `expected` names the
 * kind of file for the error ("a .gguf file"). Errors: io-error (open, stat,
 * not a regular file, map). ctq_file_unmap accepts NULL. */
enum ctq_status ctq_file_map(const char *path, const char *expected, const void **map,
			     size_t *n_bytes, struct ctq_error *err);
void ctq_file_unmap(const void *map, size_t n_bytes);

bool ctq_path_is_dir(const char *path);
/* The first line the shell command cmd prints, without its line end, into
 * buf (cap bytes); empty when cmd cannot run or prints nothing. For the
 * manifest's facts about the host (git, /proc, nvidia-smi). */
void ctq_read_cmd_line(const char *cmd, char *buf, size_t cap);
bool ctq_path_exists(const char *path);
/* True for a folder that holds nothing (false when it cannot be read). */
bool ctq_dir_is_empty(const char *path);

/* mkdir -p. */
enum ctq_status ctq_mkdirs(const char *path, struct ctq_error *err);

/* Removes a directory tree (best effort; used to drop unfinished outputs). */
void ctq_remove_tree(const char *path);

/* A fresh temporary directory next to final_dir (final_dir + ".tmp-XXXXXX"),
 * created; the name is written to tmp (cap bytes). */
enum ctq_status ctq_tmpdir_beside(const char *final_dir, char *tmp, size_t cap,
				  struct ctq_error *err);

/* Moves a completed temporary directory to final_dir; an existing final_dir
 * is replaced only if replace is true, and then never deleted before the
 * new one is in place: the two are swapped in one rename (RENAME_EXCHANGE)
 * where the filesystem can, else the old one is moved aside first
 * (final_dir.old-XXXXXX), the new one renamed in, the old one deleted last.
 * If the new one cannot move in, the old one stays (or is moved back). */
enum ctq_status ctq_tmpdir_commit(const char *tmp, const char *final_dir,
				  bool replace, struct ctq_error *err);

/* Joins a and b with one '/' into an owned malloc'ed string (NULL on OOM). */
char *ctq_path_join(const char *a, const char *b);

#endif
