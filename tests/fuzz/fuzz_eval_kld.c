/* Fuzz target: the eval_kld.csv reader of ctq compare and ctq report
 * (ctq_fam_eval_kld_read_windows). The input is written as eval_kld.csv
 * and read; what the reader accepts is written back with the family's own
 * writer (ctq_fam_eval_kld_write_windows) and read again, and the two
 * readings must agree window for window: the writer's %.17g gives a double
 * back bit for bit, and a count the reader accepts is one the writer
 * prints whole. */
#include "tests/fuzz/fuzz.h"

#include "families/eval_kld.h"

/* The second reading against the first; abort on the first difference. */
static void same_windows(const struct ctq_kld_windows *a, const struct ctq_kld_windows *b)
{
	if (a->n != b->n || a->n_sources != b->n_sources)
		abort();
	for (size_t s = 0; s < a->n_sources; s++)
		if (strcmp(a->names[s], b->names[s]))
			abort();
	for (size_t i = 0; i < a->n; i++) {
		const struct ctq_kld_window *x = &a->w[i], *y = &b->w[i];
		if (x->source >= a->n_sources || x->source != y->source || x->index != y->index ||
		    x->start != y->start || x->n != y->n || x->agree != y->agree ||
		    memcmp(&x->kl_sum, &y->kl_sum, sizeof x->kl_sum) ||
		    memcmp(&x->kl_median, &y->kl_median, sizeof x->kl_median) ||
		    memcmp(&x->kl_max, &y->kl_max, sizeof x->kl_max) ||
		    memcmp(&x->nll_ref, &y->nll_ref, sizeof x->nll_ref) ||
		    memcmp(&x->nll_new, &y->nll_new, sizeof x->nll_new))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTQ_FUZZ_MAX_BYTES)
		return -1;
	char path[512], again[512];
	snprintf(path, sizeof path, "%s", ctq_fuzz_path("eval_kld.csv"));
	snprintf(again, sizeof again, "%s", ctq_fuzz_path("again.csv"));
	ctq_fuzz_write(path, data, size);

	struct ctq_kld_windows w, w2;
	struct ctq_error err = {0};
	if (ctq_fam_eval_kld_read_windows(&w, path, &err))
		return 0;
	if (ctq_fam_eval_kld_write_windows(again, w.w, w.n, (const char *const *)w.names, &err)) {
		fprintf(stderr, "ctq fuzz: %s: %s\n", again, err.message);
		abort(); /* the environment, not the input: writing a temporary file failed */
	}
	struct ctq_error err2 = {0};
	if (ctq_fam_eval_kld_read_windows(&w2, again, &err2)) {
		fprintf(stderr, "ctq fuzz: the reader refuses what the writer wrote: %s\n",
			err2.message);
		abort();
	}
	same_windows(&w, &w2);
	ctq_fam_eval_kld_windows_free(&w);
	ctq_fam_eval_kld_windows_free(&w2);
	return 0;
}
