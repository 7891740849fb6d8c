/* ctq file helpers (see fileio.h). */
#define _GNU_SOURCE
#include "core/fileio.h"
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

enum ctq_status ctq_file_read(const char *path, size_t max_bytes, char **out,
			      size_t *n_bytes, struct ctq_error *err)
{
	*out = NULL;
	*n_bytes = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot open: %s",
				     strerror(errno));
	enum ctq_status st = CTQ_OK;
	char *buf = NULL;
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "cannot stat: %s",
				   strerror(errno));
		goto done;
	}
	if (S_ISDIR(sb.st_mode)) {
		st = ctq_error_set(err, CTQ_ERR_IO, path,
				   "is a directory, expected a file");
		goto done;
	}
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
	enum ctq_status st = CTQ_OK;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ctq_error_set(err, CTQ_ERR_IO, path, "cannot open: %s", strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "cannot stat: %s", strerror(errno));
		goto done;
	}
	if (!S_ISREG(sb.st_mode)) {
		st = ctq_error_set(err, CTQ_ERR_IO, path, "is not a regular file; expected %s", expected);
		goto done;
	}
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

void ctq_remove_tree(const char *path)
{
	if (path && *path)
		nftw(path, remove_cb, 16, FTW_DEPTH | FTW_PHYS);
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
	return CTQ_OK;
}

enum ctq_status ctq_tmpdir_commit(const char *tmp, const char *final_dir,
				  bool replace, struct ctq_error *err)
{
	if (ctq_path_exists(final_dir)) {
		if (!replace)
			return ctq_error_set(err, CTQ_ERR_IO, final_dir,
					     "already exists; not replaced");
		ctq_remove_tree(final_dir);
	}
	if (rename(tmp, final_dir) != 0)
		return ctq_error_set(err, CTQ_ERR_IO, final_dir,
				     "cannot move %s into place: %s", tmp,
				     strerror(errno));
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
