/* ctq result files of a run directory (see files.h). */
#include "results/files.h"
#include "core/arena.h"
#include "core/fileio.h"
#include "core/json.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static enum ctq_status add(struct ctq_results *r, size_t *cap, int f, const char *rel_dir, const char *name,
			   struct ctq_error *err)
{
	if (r->n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		struct ctq_result_file *v = ctq_realloc(r->v, c * sizeof *v);
		if (!v)
			return ctq_error_set(err, CTQ_ERR_NOMEM, name, "out of memory");
		r->v = v;
		*cap = c;
	}
	struct ctq_result_file *e = &r->v[r->n++];
	e->fam = f;
	snprintf(e->dir, sizeof e->dir, "%s", rel_dir);
	snprintf(e->rel, sizeof e->rel, "%s%s%s", rel_dir, *rel_dir ? "/" : "", name);
	return CTQ_OK;
}

static enum ctq_status walk(struct ctq_results *r, size_t *cap, const char *root, const char *rel_dir,
			    int depth, int (*family_of)(const char *), struct ctq_error *err)
{
	char path[1200];
	snprintf(path, sizeof path, "%s%s%s", root, *rel_dir ? "/" : "", rel_dir);
	DIR *d = opendir(path);
	if (!d)
		return depth ? CTQ_OK : ctq_error_set(err, CTQ_ERR_IO, root, "not a readable folder");
	enum ctq_status st = CTQ_OK;
	struct dirent *e;
	while (!st && (e = readdir(d))) {
		const char *n = e->d_name;
		if (n[0] == '.' || strstr(n, ".tmp-") || strstr(n, ".tmp.") ||
		    strstr(n, ".old-"))
			continue;
		char child[1200];
		snprintf(child, sizeof child, "%s/%s", path, n);
		struct stat sb;
		if (lstat(child, &sb) != 0)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			if (depth < 8 && strcmp(n, "plots") != 0) {
				char sub[600];
				snprintf(sub, sizeof sub, "%s%s%s", rel_dir, *rel_dir ? "/" : "", n);
				st = walk(r, cap, root, sub, depth + 1, family_of, err);
			}
			continue;
		}
		if (!S_ISREG(sb.st_mode))
			continue;
		int f = family_of(n);
		if (f >= 0)
			st = add(r, cap, f, rel_dir, n, err);
	}
	closedir(d);
	return st;
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct ctq_result_file *)a)->rel,
		      ((const struct ctq_result_file *)b)->rel);
}

enum ctq_status ctq_results_find(struct ctq_results *r, const char *run_dir,
				 int (*family_of)(const char *file_name), struct ctq_error *err)
{
	memset(r, 0, sizeof *r);
	size_t cap = 0;
	if (!ctq_path_is_dir(run_dir))
		return ctq_error_set(err, CTQ_ERR_IO, run_dir, "not a folder");
	enum ctq_status st = walk(r, &cap, run_dir, "", 0, family_of, err);
	if (st) {
		ctq_results_free(r);
		return st;
	}
	if (r->n)
		qsort(r->v, r->n, sizeof *r->v, cmp_file);
	return CTQ_OK;
}

void ctq_results_free(struct ctq_results *r)
{
	if (!r)
		return;
	ctq_free(r->v);
	r->v = NULL;
	r->n = 0;
}

enum ctq_status ctq_results_manifest(const char *run_dir, cJSON **out, struct ctq_error *err)
{
	*out = NULL;
	char path[1200];
	snprintf(path, sizeof path, "%s/manifest.json", run_dir);
	if (!ctq_path_exists(path))
		return CTQ_OK;
	return ctq_json_load_file(path, (size_t)64 << 20, NULL, out, err);
}

const char *ctq_json_str_at(const cJSON *root, const char *dotted, const char *def)
{
	char key[128];
	const cJSON *cur = root;
	const char *c = dotted;
	while (cur && *c) {
		size_t n = strcspn(c, ".");
		if (n >= sizeof key)
			return def;
		memcpy(key, c, n);
		key[n] = '\0';
		cur = ctq_json_get(cur, key);
		c += n;
		if (*c == '.')
			c++;
	}
	return cJSON_IsString(cur) ? cur->valuestring : def;
}
