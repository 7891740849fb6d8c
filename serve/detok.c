/* ctq serve's incremental detokenizer (serve/detok.h). */
#include "serve/detok.h"

#include <stdlib.h>
#include <string.h>

void ctq_detok_init(struct ctq_detok *d, const struct ctq_tokenizer *tok, const char *const *stop,
		    int n_stop)
{
	*d = (struct ctq_detok){.tok = tok, .stop = stop, .n_stop = n_stop};
	ctq_strbuf_init(&d->text);
	for (int i = 0; i < n_stop; i++)
		if (strlen(stop[i]) > d->max_stop)
			d->max_stop = strlen(stop[i]);
}

void ctq_detok_free(struct ctq_detok *d)
{
	ctq_strbuf_free(&d->text);
}

static bool ends_in_replacement(const char *s, size_t n)
{
	return n >= 3 && !memcmp(s + n - 3, "\xEF\xBF\xBD", 3);
}

/* The earliest stop string in text at or after from; cuts the text there. */
static void find_stop(struct ctq_detok *d, size_t from)
{
	const char *t = ctq_strbuf_str(&d->text);
	size_t best = d->text.len;
	for (int i = 0; i < d->n_stop; i++) {
		const char *hit = strstr(t + from, d->stop[i]);
		if (hit && (size_t)(hit - t) < best)
			best = (size_t)(hit - t);
	}
	if (best < d->text.len) {
		d->text.len = best;
		d->text.data[best] = '\0';
		d->stopped = true;
	}
}

enum ctq_status ctq_detok_update(struct ctq_detok *d, const int32_t *ids, int64_t n, bool final,
				 struct ctq_error *err)
{
	d->final = d->final || final;
	if (d->stopped || n <= d->committed)
		return CTQ_OK;
	char *piece = NULL;
	size_t len = 0;
	enum ctq_status st = ctq_tokenizer_decode(d->tok, ids + d->committed, (size_t)(n - d->committed),
						  true, &piece, &len, err);
	if (st)
		return st;
	if (!final && ends_in_replacement(piece, len)) {
		free(piece);
		return CTQ_OK;
	}
	/* Text with NUL bytes would hide from the stop search: a stop string
	 * never holds NUL, so searching the part before it misses nothing
	 * that OpenAI would find either. */
	const size_t old = d->text.len;
	ctq_strbuf_appendn(&d->text, piece, len);
	free(piece);
	if (d->text.oom)
		return ctq_error_set(err, CTQ_ERR_NOMEM, "serve", "out of memory");
	d->committed = n;
	if (d->n_stop)
		find_stop(d, old > d->max_stop ? old - d->max_stop + 1 : 0);
	return CTQ_OK;
}

size_t ctq_detok_take(struct ctq_detok *d, const char **s)
{
	size_t ready = d->text.len;
	if (!d->stopped && !d->final && d->max_stop > 1) {
		ready = ready > d->max_stop - 1 ? ready - (d->max_stop - 1) : 0;
		/* Back to a character boundary. */
		while (ready > d->emitted && ready < d->text.len &&
		       ((unsigned char)d->text.data[ready] & 0xC0) == 0x80)
			ready--;
	}
	if (ready <= d->emitted) {
		*s = "";
		return 0;
	}
	*s = d->text.data + d->emitted;
	size_t n = ready - d->emitted;
	d->emitted = ready;
	return n;
}

size_t ctq_detok_piece(const struct ctq_tokenizer *tok, int32_t id, struct ctq_strbuf *out)
{
	ctq_strbuf_reset(out);
	char *text = NULL;
	size_t len = 0, chars = 0;
	if (ctq_tokenizer_decode(tok, &id, 1, false, &text, &len, NULL))
		return 0;
	ctq_strbuf_appendn(out, text, len);
	for (size_t i = 0; i < len; i++)
		chars += ((unsigned char)text[i] & 0xC0) != 0x80;
	free(text);
	return chars;
}
