/* ctq file helpers (see fileio.h). */
#define _GNU_SOURCE
#include "core/fileio.h"
#include "core/cleanup.h"
#include "core/strbuf.h"

#include <dirent.h>
#include "core/arena.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum ctq_status ctq_file_open_regular(const char *path, const char *expected, int *fd_out,
				      struct stat *sb, struct ctq_error *err)
{
	*fd_out = -1;
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	 * writer forever; the type is checked on the open descriptor (no race
	 * between a stat and the open) before anything is read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot open: %s", strerror(errno));
	if (fstat(fd, sb) != 0) {
		int e = errno;
		close(fd);
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot stat: %s", strerror(e));
	}
	if (!S_ISREG(sb->st_mode)) {
		const char *what = S_ISDIR(sb->st_mode)    ? "a directory"
				   : S_ISFIFO(sb->st_mode) ? "a FIFO (named pipe)"
				   : S_ISSOCK(sb->st_mode) ? "a socket"
				   : S_ISCHR(sb->st_mode)  ? "a character device"
				   : S_ISBLK(sb->st_mode)  ? "a block device"
							   : "not a regular file";
		close(fd);
		return ctq_error_set(err, CTQ_ERR_IO, path, "is %s; expected %s", what, expected);
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	*fd_out = fd;
	return CTQ_OK;
}

enum ctq_status ctq_file_read(const char *path, size_t max_bytes, char **out,
			      size_t *n_bytes, struct ctq_error *err)
{
	*out = NULL;
	*n_bytes = 0;
	int fd;
	struct stat sb;
	enum ctq_status st = ctq_file_open_regular(path, "a regular file", &fd, &sb, err);
	if (st)
		return st;
	char *buf = NULL;
	if ((unsigned long long)sb.st_size > max_bytes) {
		st = ctq_error_set(err, CTQ_ERR_IO, path,
				   "file is %lld bytes; at most %zu are accepted",
				   (long long)sb.st_size, max_bytes);
		goto done;
	}
	size_t cap = (size_t)sb.st_size, len = 0;
	buf = ctq_malloc(cap + 1);
	if (!buf) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path,
				   "out of memory reading %zu bytes", cap);
		goto done;
	}
	while (len < cap) {
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			st = ctq_error_set(err, CTQ_ERR_IO, path,
					   "read failed: %s", strerror(errno));
			goto done;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	*out = buf;
	*n_bytes = len;
	buf = NULL;
done:
	free(buf);
	close(fd);
	return st;
}

enum ctq_status ctq_file_write_atomic(const char *path, const void *data,
				      size_t n_bytes, struct ctq_error *err)
{
	char tmp[4096];
	int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof tmp)
		return ctq_error_set(err, CTQ_ERR_IO, path, "path too long");
	FILE *f = fopen(tmp, "wb");
	if (!f)
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot create: %s",
				     strerror(errno));
	size_t w = n_bytes ? fwrite(data, 1, n_bytes, f) : 0;
	int bad = (w != n_bytes) | (fflush(f) != 0);
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot write: %s",
				     strerror(e));
	}
	return CTQ_OK;
}

enum ctq_status ctq_file_map(const char *path, const char *expected, const void **map,
			     size_t *n_bytes, struct ctq_error *err)
{
	*map = NULL;
	*n_bytes = 0;
	int fd;
	struct stat sb;
	enum ctq_status st = ctq_file_open_regular(path, expected, &fd, &sb, err);
	if (st)
		return st;
	if (sb.st_size == 0)
		goto done;
	void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "cannot map %lld bytes: %s",
				   (long long)sb.st_size, strerror(errno));
		goto done;
	}
	*map = m;
	*n_bytes = (size_t)sb.st_size;
done:
	close(fd);
	return st;
}

void ctq_file_unmap(const void *map, size_t n_bytes)
{
	if (map && n_bytes)
		munmap((void *)map, n_bytes);
}

bool ctq_path_is_dir(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

bool ctq_path_exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

enum ctq_status ctq_mkdirs(const char *path, struct ctq_error *err)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf)
		return ctq_error_set(err, CTQ_ERR_IO, path, "bad directory path");
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return ctq_error_set(err, CTQ_ERR_IO, buf,
					     "cannot create directory: %s",
					     strerror(errno));
		buf[i] = c;
	}
	if (!ctq_path_is_dir(path))
		return ctq_error_set(err, CTQ_ERR_IO, path,
				     "exists and is not a directory");
	return CTQ_OK;
}

static int remove_cb(const char *p, const struct stat *sb, int flag,
		     struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

bool ctq_dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	struct dirent *e;
	bool empty = true;
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return empty;
}

void ctq_remove_tree(const char *path)
{
	if (path && *path) {
		nftw(path, remove_cb, 16, FTW_DEPTH | FTW_PHYS);
		ctq_cleanup_unregister(path);
	}
}

enum ctq_status ctq_tmpdir_beside(const char *final_dir, char *tmp, size_t cap,
				  struct ctq_error *err)
{
	char parent[4096];
	int n = snprintf(parent, sizeof parent, "%s", final_dir);
	if (n < 0 || (size_t)n >= sizeof parent)
		return ctq_error_set(err, CTQ_ERR_IO, final_dir, "path too long");
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = '\0';
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		enum ctq_status st = ctq_mkdirs(parent, err);
		if (st)
			return st;
	}
	n = snprintf(tmp, cap, "%.*s.tmp-XXXXXX", (int)strlen(final_dir),
		     final_dir);
	if (n < 0 || (size_t)n >= cap)
		return ctq_error_set(err, CTQ_ERR_IO, final_dir, "path too long");
	if (!mkdtemp(tmp))
		return ctq_error_set(err, CTQ_ERR_IO, final_dir,
				     "cannot create a temporary directory: %s",
				     strerror(errno));
	ctq_cleanup_register(tmp); /* a SIGINT/SIGTERM removes it (cleanup.h) */
	return CTQ_OK;
}

/* Moves final_dir (a folder when is_dir) aside to a fresh name beside it
 * (written to aside). */
static enum ctq_status move_aside(const char *final_dir, bool is_dir, char *aside, size_t cap,
				  struct ctq_error *err)
{
	int n = snprintf(aside, cap, "%s.old-XXXXXX", final_dir);
	if (n < 0 || (size_t)n >= cap)
		return ctq_error_set(err, CTQ_ERR_IO, final_dir, "path too long");
	/* mkdtemp reserves the name; a folder renames onto the empty folder,
	 * anything else needs the name free. */
	if (!mkdtemp(aside))
		return ctq_error_set(err, CTQ_ERR_IO, final_dir,
				     "cannot create a folder to move it aside: %s", strerror(errno));
	if (!is_dir)
		rmdir(aside);
	if (rename(final_dir, aside) != 0) {
		int e = errno;
		rmdir(aside);
		return ctq_error_set(err, CTQ_ERR_IO, final_dir, "cannot move it aside to %s: %s",
				     aside, strerror(e));
	}
	return CTQ_OK;
}

/* Deletes what was moved out of the way (a folder when is_dir). */
static void remove_old(const char *path, bool is_dir)
{
	if (is_dir)
		ctq_remove_tree(path);
	else
		unlink(path);
}

enum ctq_status ctq_tmpdir_commit(const char *tmp, const char *final_dir,
				  bool replace, struct ctq_error *err)
{
	struct stat sb;
	if (lstat(final_dir, &sb) != 0) {
		if (rename(tmp, final_dir) != 0)
			return ctq_error_set(err, CTQ_ERR_IO, final_dir,
					     "cannot move %s into place: %s", tmp, strerror(errno));
		ctq_cleanup_unregister(tmp);
		return CTQ_OK;
	}
	if (!replace)
		return ctq_error_set(err, CTQ_ERR_IO, final_dir, "already exists; not replaced");
	/* The old one is moved aside before the new one moves in and is
	 * deleted only after, so that a kill at any point leaves one of them
	 * under final_dir (or the old one beside it, under *.old-XXXXXX). */
	bool is_dir = S_ISDIR(sb.st_mode);
#ifdef RENAME_EXCHANGE
	/* Where the filesystem can, the two swap in one step and the old one,
	 * now under the temporary name, is deleted after. */
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final_dir, RENAME_EXCHANGE) == 0) {
		remove_old(tmp, is_dir);
		return CTQ_OK;
	}
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP && errno != EXDEV)
		return ctq_error_set(err, CTQ_ERR_IO, final_dir, "cannot move %s into place: %s",
				     tmp, strerror(errno));
#endif
	char aside[4200];
	enum ctq_status st = move_aside(final_dir, is_dir, aside, sizeof aside, err);
	if (st)
		return st;
	if (rename(tmp, final_dir) != 0) {
		int e = errno;
		rename(aside, final_dir);
		return ctq_error_set(err, CTQ_ERR_IO, final_dir, "cannot move %s into place: %s",
				     tmp, strerror(e));
	}
	ctq_cleanup_unregister(tmp);
	remove_old(aside, is_dir);
	return CTQ_OK;
}

char *ctq_path_join(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	while (na > 1 && a[na - 1] == '/')
		na--;
	char *p = ctq_malloc(na + nb + 2);
	if (!p)
		return NULL;
	memcpy(p, a, na);
	p[na] = '/';
	memcpy(p + na + 1, b, nb + 1);
	return p;
}

void ctq_read_cmd_line(const char *cmd, char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(buf, (int)cap, p)) {
		size_t n = strlen(buf);
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
	}
	pclose(p);
}

enum ctq_status ctq_strbuf_write_atomic(const struct ctq_strbuf *sb, const char *path,
					struct ctq_error *err)
{
	if (sb->oom)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	return ctq_file_write_atomic(path, sb->data, sb->len, err);
}

enum ctq_status ctq_file_parse(const char *path, size_t max_bytes, ctq_file_parse_fn parse,
			       void *ctx, struct ctq_error *err)
{
	char *text = NULL;
	size_t n = 0;
	enum ctq_status st = ctq_file_read(path, max_bytes, &text, &n, err);
	if (st)
		return st;
	st = parse(ctx, text, n, path, err);
	ctq_free(text);
	return st;
}

enum ctq_status ctq_file_read_tail(const char *path, size_t max_bytes, size_t tail_bytes,
				   char **out, const char **tail, struct ctq_error *err)
{
	size_t n = 0;
	enum ctq_status st = ctq_file_read(path, max_bytes, out, &n, err);
	if (st)
		return st;
	size_t start = n > tail_bytes ? n - tail_bytes : 0;
	while (start > 0 && start < n && (*out)[start - 1] != '\n')
		start++;
	*tail = *out + start;
	return CTQ_OK;
}
