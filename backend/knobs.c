/* ctq dispatch knobs (see knobs.h). */
#include "backend/knobs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* KNOB_INT: an int field; KNOB_NAMED: an int field set from one of a
 * few names (names[i] gives only[i]) */
enum knob_kind { KNOB_FLAG, KNOB_INT, KNOB_INT64, KNOB_NAMED };

/* One row per variable: where it lands in the struct, its range, and for
 * a knob of a few allowed values (n_only > 0) those values and the text
 * that names them in the error. */
static const struct knob_def {
	const char *name;
	enum knob_kind kind;
	size_t offset;        /* of the bool, int or int64_t field */
	int64_t lo, hi;       /* KNOB_INT / KNOB_INT64 range */
	int n_only;
	int64_t only[6];
	const char *names[6]; /* KNOB_NAMED */
	const char *expect;   /* with n_only */
} knob_defs[] = {
#define FLAG(n, f) {.name = n, .kind = KNOB_FLAG, .offset = offsetof(struct ctq_knobs, f)}
#define INT(n, k, f, l, h) {.name = n, .kind = k, .offset = offsetof(struct ctq_knobs, f), .lo = l, .hi = h}
	{.name = "CTQ_ARCH", .kind = KNOB_NAMED, .offset = offsetof(struct ctq_knobs, arch),
	 .n_only = 6, .only = {80, 86, 89, 90, 100, 120},
	 .names = {"sm_80", "sm_86", "sm_89", "sm_90a", "sm_100", "sm_120"},
	 .expect = "sm_80, sm_86, sm_89, sm_90a, sm_100 or sm_120"},
	INT("CTQ_SM90_TILE", KNOB_INT, sm90_tile, 0, INT32_MAX),
	{.name = "CTQ_SM90_SMALL_BN", .kind = KNOB_INT, .offset = offsetof(struct ctq_knobs, sm90_small_bn),
	 .lo = 0, .hi = 160, .n_only = 4, .only = {0, 32, 64, 160},
	 .expect = "0 (pick by N), 32, 64 or 160"},
	INT("CTQ_GEMV_MAX_M", KNOB_INT64, gemv_max_m, 0, INT64_C(1) << 62),
	FLAG("CTQ_ATTENTION_SIMPLE", attention_simple),
	FLAG("CTQ_ATTENTION_NO_MMA", attention_no_mma),
	FLAG("CTQ_ATTENTION_NO_GQA", attention_no_gqa),
	FLAG("CTQ_NO_PDL", no_pdl),
	FLAG("CTQ_NO_GEMV_BF16", no_gemv_bf16),
	FLAG("CTQ_SANITIZE_MEMSET_CUBLAS", sanitize_memset_cublas),
#undef FLAG
#undef INT
};
#define N_KNOBS (sizeof knob_defs / sizeof *knob_defs)

static struct ctq_knobs knobs;
static char raw[N_KNOBS][64];      /* values at load, cut at 63 bytes */
static bool is_set[N_KNOBS];
static const char *bad_name;       /* first invalid variable, or NULL */
static char bad_msg[160];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool allowed(const struct knob_def *d, int64_t x)
{
	for (int i = 0; i < d->n_only; i++)
		if (d->only[i] == x)
			return true;
	return d->n_only == 0;
}

static void load(void)
{
	knobs = (struct ctq_knobs){.sm90_tile = -1, .gemv_max_m = 1};
	for (size_t i = 0; i < N_KNOBS; i++) {
		const struct knob_def *d = &knob_defs[i];
		const char *v = getenv(d->name);
		is_set[i] = v != NULL;
		if (v)
			snprintf(raw[i], sizeof raw[i], "%s", v);
		char *field = (char *)&knobs + d->offset;
		if (d->kind == KNOB_FLAG) {
			*(bool *)field = v != NULL;
			continue;
		}
		int64_t x = 0;
		if (!v || !*v)
			continue;
		bool ok;
		if (d->kind == KNOB_NAMED) {
			ok = false;
			for (int j = 0; j < d->n_only && !ok; j++)
				if (!strcmp(v, d->names[j])) {
					x = d->only[j];
					ok = true;
				}
		} else {
			ok = parse_int(v, d->lo, d->hi, &x) && allowed(d, x);
		}
		if (!ok) {
			if (!bad_name) {
				bad_name = d->name;
				if (d->n_only)
					snprintf(bad_msg, sizeof bad_msg, "is \"%.40s\"; expected %s", v,
						 d->expect);
				else
					snprintf(bad_msg, sizeof bad_msg,
						 "is \"%.40s\"; expected an integer %lld..%lld", v,
						 (long long)d->lo, (long long)d->hi);
			}
			continue;
		}
		if (d->kind == KNOB_INT || d->kind == KNOB_NAMED)
			*(int *)field = (int)x;
		else
			*(int64_t *)field = x;
	}
}

const struct ctq_knobs *ctq_knobs(void)
{
	pthread_once(&once, load);
	return &knobs;
}

enum ctq_status ctq_knobs_check(struct ctq_error *err)
{
	pthread_once(&once, load);
	if (!bad_name)
		return CTQ_OK;
	return ctq_error_set(err, CTQ_ERR_USAGE, bad_name, "%s", bad_msg);
}

void ctq_knobs_to_json(cJSON *obj)
{
	pthread_once(&once, load);
	if (obj)
		cJSON_DeleteItemFromObjectCaseSensitive(obj, "knobs");
	cJSON *k = obj ? cJSON_AddObjectToObject(obj, "knobs") : NULL;
	if (!k)
		return;
	for (size_t i = 0; i < N_KNOBS; i++) {
		if (is_set[i])
			cJSON_AddStringToObject(k, knob_defs[i].name, raw[i]);
		else
			cJSON_AddNullToObject(k, knob_defs[i].name);
	}
	if (bad_name) {
		char msg[sizeof bad_msg + 64];
		snprintf(msg, sizeof msg, "%s %s", bad_name, bad_msg);
		cJSON_AddStringToObject(k, "invalid", msg);
	}
}

static const char *const env_names[CTQ_ENV_COUNT] = {
	[CTQ_ENV_REVISION] = "CTQ_REVISION",       [CTQ_ENV_GNUPLOT] = "CTQ_GNUPLOT",
	[CTQ_ENV_DEPS_PREFIX] = "DEPS_PREFIX",     [CTQ_ENV_LD_LIBRARY_PATH] = "LD_LIBRARY_PATH",
	[CTQ_ENV_TMPDIR] = "TMPDIR",
};

const char *ctq_env_name(enum ctq_env_var v)
{
	return (unsigned)v < CTQ_ENV_COUNT ? env_names[v] : "?";
}

const char *ctq_env(enum ctq_env_var v)
{
	return (unsigned)v < CTQ_ENV_COUNT ? getenv(env_names[v]) : NULL;
}

bool ctq_knobs_omp_wait_chosen(void)
{
	return getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT");
}
