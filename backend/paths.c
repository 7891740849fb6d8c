/* Kernel paths (see paths.h). */
#include "backend/paths.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *const op_names[CTQ_KOP_COUNT] = {"gemm_w8a8", "linear_bf16", "attention",
						    "launch"};
static const char *const path_names[CTQ_KOP_COUNT][CTQ_KPATH_MAX] = {
	[CTQ_KOP_GEMM_W8A8] = {"sm90-wgmma", "sm80-mma", "gemv", "dp4a"},
	[CTQ_KOP_LINEAR_BF16] = {"cublas", "gemv"},
	[CTQ_KOP_ATTENTION] = {"prefill-mma", "decode-split", "gqa", "simple"},
	[CTQ_KOP_LAUNCH] = {"pdl", "plain"},
};
_Static_assert(CTQ_GEMM_PATH_COUNT <= CTQ_KPATH_MAX && CTQ_ATT_PATH_COUNT <= CTQ_KPATH_MAX,
	       "CTQ_KPATH_MAX too small");

static uint64_t counts[CTQ_KOP_COUNT][CTQ_KPATH_MAX];

const char *ctq_kop_name(enum ctq_kop op)
{
	return (unsigned)op < CTQ_KOP_COUNT ? op_names[op] : "?";
}

const char *ctq_kpath_name(enum ctq_kop op, int p)
{
	if ((unsigned)op >= CTQ_KOP_COUNT || p < 0 || p >= CTQ_KPATH_MAX)
		return NULL;
	return path_names[op][p];
}

const char *ctq_gemm_path_name(enum ctq_gemm_path p)
{
	const char *s = ctq_kpath_name(CTQ_KOP_GEMM_W8A8, (int)p);
	return s ? s : "?";
}

bool ctq_gemm_path_parse(const char *s, enum ctq_gemm_path *out)
{
	for (int p = 0; p < CTQ_GEMM_PATH_COUNT; p++)
		if (s && !strcmp(s, path_names[CTQ_KOP_GEMM_W8A8][p])) {
			*out = (enum ctq_gemm_path)p;
			return true;
		}
	return false;
}

void ctq_kpath_note(enum ctq_kop op, int p)
{
	if ((unsigned)op < CTQ_KOP_COUNT && p >= 0 && p < CTQ_KPATH_MAX)
		__atomic_fetch_add(&counts[op][p], 1, __ATOMIC_RELAXED);
}

void ctq_kpaths_snapshot(struct ctq_kpath_counts *out)
{
	for (int o = 0; o < CTQ_KOP_COUNT; o++)
		for (int p = 0; p < CTQ_KPATH_MAX; p++)
			out->n[o][p] = __atomic_load_n(&counts[o][p], __ATOMIC_RELAXED);
}

static bool ran(const struct ctq_kpath_counts *now, const struct ctq_kpath_counts *since, int o,
		int p)
{
	return path_names[o][p] && now->n[o][p] > (since ? since->n[o][p] : 0);
}

void ctq_kpaths_to_json(cJSON *obj, const struct ctq_kpath_counts *since)
{
	cJSON *k = obj ? cJSON_AddObjectToObject(obj, "kernel_paths") : NULL;
	if (!k)
		return;
	struct ctq_kpath_counts now;
	ctq_kpaths_snapshot(&now);
	for (int o = 0; o < CTQ_KOP_COUNT; o++) {
		cJSON *a = NULL;
		for (int p = 0; p < CTQ_KPATH_MAX; p++) {
			if (!ran(&now, since, o, p))
				continue;
			if (!a && !(a = cJSON_AddArrayToObject(k, op_names[o])))
				return;
			cJSON_AddItemToArray(a, cJSON_CreateString(path_names[o][p]));
		}
	}
}

void ctq_kpaths_line(char *buf, size_t cap, const struct ctq_kpath_counts *since)
{
	if (!cap)
		return;
	buf[0] = '\0';
	struct ctq_kpath_counts now;
	ctq_kpaths_snapshot(&now);
	size_t len = 0;
	for (int o = 0; o < CTQ_KOP_COUNT; o++) {
		int shown = 0;
		for (int p = 0; p < CTQ_KPATH_MAX; p++) {
			if (!ran(&now, since, o, p))
				continue;
			const int w = shown ? snprintf(buf + len, cap - len, "+%s", path_names[o][p])
					    : snprintf(buf + len, cap - len, "%s%s %s", len ? "; " : "",
						       op_names[o], path_names[o][p]);
			if (w < 0 || (size_t)w >= cap - len)
				return;
			len += (size_t)w;
			shown++;
		}
	}
}
