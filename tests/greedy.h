/* The tests' own greedy decoder, the oracle of the batching engine
 * (model/engine.h: ctq generate, ctq serve, ctq bench serve): the prompt
 * in one forward call in slot 0, then one token per call, each the
 * ctq_argmax of its row's logits, stopping at EOS unless ignore_eos.
 * Nothing shared with the engine but the runner's forward pass. */
#ifndef CTQ_TESTS_GREEDY_H
#define CTQ_TESTS_GREEDY_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "model/runner.h"

/* *out (malloc'ed, n_out tokens): the greedy continuation of prompt on r
 * (loaded with max_tokens >= n and max_len >= n + max_new). */
static inline void test_greedy(struct ctq_runner *r, const int32_t *prompt, int64_t n, int64_t max_new,
			       bool ignore_eos, int32_t **out, int64_t *n_out)
{
	const int64_t V = r->cfg.vocab;
	int32_t *slot = calloc((size_t)n, sizeof *slot), *pos = malloc((size_t)n * sizeof *pos);
	float *lg = malloc((size_t)V * sizeof *lg);
	int32_t *toks = malloc((size_t)(max_new + 1) * sizeof *toks);
	cr_assert(slot && pos && lg && toks);
	for (int64_t i = 0; i < n; i++)
		pos[i] = (int32_t)i;
	struct ctq_error err = {0};
	int64_t last = n - 1, zero = 0, k = 0;
	cr_assert_eq(ctq_runner_forward(r, prompt, slot, pos, n, &last, 1, lg, &err), CTQ_OK, "%s",
		     err.message);
	while (k < max_new) {
		const int32_t t = ctq_argmax(lg, V);
		toks[k++] = t;
		if ((!ignore_eos && t == r->cfg.eos_id) || k == max_new)
			break;
		const int32_t p = (int32_t)(n + k - 1);
		cr_assert_eq(ctq_runner_forward(r, &t, slot, &p, 1, &zero, 1, lg, &err), CTQ_OK, "%s",
			     err.message);
	}
	free(slot), free(pos), free(lg);
	*out = toks;
	*n_out = k;
}

#endif
