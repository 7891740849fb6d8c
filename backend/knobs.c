/* ctq dispatch knobs (see knobs.h). */
#include "backend/knobs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum knob_kind { KNOB_FLAG, KNOB_INT };

/* One row per variable: where it lands in the struct and its range. */
static const struct knob_def {
	const char *name;
	enum knob_kind kind;
	size_t offset;        /* of the bool, int or int64_t field */
	int64_t lo, hi;       /* KNOB_INT range */
} knob_defs[] = {
	{"CTQ_NO_SM90", KNOB_FLAG, offsetof(struct ctq_knobs, no_sm90), 0, 0},
	{"CTQ_SM90_TILE", KNOB_INT, offsetof(struct ctq_knobs, sm90_tile), 0, INT32_MAX},
	{"CTQ_SM90_SMALL_BN", KNOB_INT, offsetof(struct ctq_knobs, sm90_small_bn), 0, 64},
	{"CTQ_GEMV_MAX_M", KNOB_INT, offsetof(struct ctq_knobs, gemv_max_m), 0, INT64_C(1) << 62},
	{"CTQ_ATTENTION_SIMPLE", KNOB_FLAG, offsetof(struct ctq_knobs, attention_simple), 0, 0},
	{"CTQ_ATTENTION_NO_MMA", KNOB_FLAG, offsetof(struct ctq_knobs, attention_no_mma), 0, 0},
	{"CTQ_ATTENTION_GQA", KNOB_FLAG, offsetof(struct ctq_knobs, attention_no_gqa), 0, 0},
	{"CTQ_ATTENTION_NO_SPLIT", KNOB_FLAG, offsetof(struct ctq_knobs, attention_no_split), 0, 0},
	{"CTQ_KV_STORE_UNFUSED", KNOB_FLAG, offsetof(struct ctq_knobs, kv_store_unfused), 0, 0},
	{"CTQ_NO_PDL", KNOB_FLAG, offsetof(struct ctq_knobs, no_pdl), 0, 0},
	{"CTQ_PDL_LINEARS_ONLY", KNOB_FLAG, offsetof(struct ctq_knobs, pdl_linears_only), 0, 0},
	{"CTQ_PDL_LINEAR_TRIGGER", KNOB_FLAG, offsetof(struct ctq_knobs, pdl_linear_trigger), 0, 0},
	{"CTQ_PDL_PRESTAGES", KNOB_INT, offsetof(struct ctq_knobs, pdl_prestages), 0, 1024},
	{"CTQ_NO_GEMV_BF16", KNOB_FLAG, offsetof(struct ctq_knobs, no_gemv_bf16), 0, 0},
	{"CTQ_SANITIZE_MEMSET_CUBLAS", KNOB_FLAG,
	 offsetof(struct ctq_knobs, sanitize_memset_cublas), 0, 0},
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

static void load(void)
{
	knobs = (struct ctq_knobs){.sm90_tile = -1, .gemv_max_m = 1, .pdl_prestages = -1};
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
		int64_t x;
		if (!v || !*v)
			continue;
		if (!parse_int(v, d->lo, d->hi, &x)) {
			if (!bad_name) {
				bad_name = d->name;
				snprintf(bad_msg, sizeof bad_msg,
					 "is \"%.40s\"; expected an integer %lld..%lld", v,
					 (long long)d->lo, (long long)d->hi);
			}
			continue;
		}
		if (d->offset == offsetof(struct ctq_knobs, sm90_tile))
			knobs.sm90_tile = (int)x;
		else if (d->offset == offsetof(struct ctq_knobs, sm90_small_bn)) {
			if (x != 0 && x != 32 && x != 64) {
				if (!bad_name) {
					bad_name = d->name;
					snprintf(bad_msg, sizeof bad_msg,
						 "is \"%.40s\"; expected 0 (pick by N), 32 or 64", v);
				}
				continue;
			}
			knobs.sm90_small_bn = (int)x;
		}
		else if (d->offset == offsetof(struct ctq_knobs, pdl_prestages))
			knobs.pdl_prestages = (int)x;
		else
			knobs.gemv_max_m = x;
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
