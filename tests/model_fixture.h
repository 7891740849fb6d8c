/* A tiny synthetic Qwen3 checkpoint in BF16 and its W8A8 quantization in a
 * fresh temporary folder, for the tests that run ctq commands end to end
 * (test_eval_run.c, test_bench_model.c). */
#ifndef CTQ_TESTS_MODEL_FIXTURE_H
#define CTQ_TESTS_MODEL_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "checkpoint/quantize.h"
#include "checkpoint/synth.h"

struct fixture {
	char dir[64], bf16[96], w8a8[96], out[96];
};

/* tag names the folder (/tmp/ctq-TAG-XXXXXX); vocab 0 keeps the preset's;
 * untied writes lm_head.weight; logit_gain multiplies model.norm.weight (0 or
 * 1: none; checkpoint/synth.h). */
static inline void fixture_make_ex(struct fixture *f, const char *tag, int64_t vocab, uint64_t seed,
				   bool untied, double logit_gain)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/ctq-%s-XXXXXX", tag);
	cr_assert(mkdtemp(f->dir));
	snprintf(f->bf16, sizeof f->bf16, "%s/bf16", f->dir);
	snprintf(f->w8a8, sizeof f->w8a8, "%s/w8a8", f->dir);
	snprintf(f->out, sizeof f->out, "%s/run", f->dir);
	struct ctq_synth_spec s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_synth_spec_init(&s, "qwen3", "tiny", &err), CTQ_OK, "%s", err.message);
	if (vocab)
		s.vocab_size = vocab;
	s.seed = seed;
	s.tie_word_embeddings = !untied;
	s.logit_gain = logit_gain;
	cr_assert_eq(ctq_synth_write(&s, f->bf16, 0, NULL, NULL, &err), CTQ_OK, "%s", err.message);
	struct ctq_quantize_result res;
	memset(&res, 0, sizeof res);
	cr_assert_eq(ctq_quantize_checkpoint(f->bf16, f->w8a8, NULL, &res, &err), CTQ_OK, "%s",
		     err.message);
	ctq_quantize_result_free(&res);
}

static inline void fixture_make(struct fixture *f, const char *tag, int64_t vocab, uint64_t seed)
{
	fixture_make_ex(f, tag, vocab, seed, false, 0);
}

static inline void fixture_drop(struct fixture *f)
{
	ctq_remove_tree(f->dir);
}

#endif
