/* ctq serve's incremental detokenizer: the text of a growing list of
 * generated token ids, handed out piece by piece as it becomes final, and
 * the stop strings of a request.
 *
 * Text is what ctq_tokenizer_decode gives for the whole list with special
 * tokens skipped. A piece is handed out only when it ends on a complete
 * UTF-8 character: while the decoded tail ends in U+FFFD (a character cut
 * between tokens) it is held until a later token completes it or the list
 * is final (vLLM's incremental detokenizer does the same). With stop
 * strings, the last (longest stop - 1) bytes are held too, so that a stop
 * string split between tokens is never handed out; when one is found the
 * text ends before it (OpenAI: the stop string is not returned).
 *
 * Not thread-safe (one request's state); the tokenizer is borrowed. */
#ifndef CTQ_SERVE_DETOK_H
#define CTQ_SERVE_DETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "text/tokenizer.h"

struct ctq_detok {
	const struct ctq_tokenizer *tok; /* borrowed */
	const char *const *stop;         /* (n_stop) borrowed, non-empty strings */
	int n_stop;
	size_t max_stop;                 /* bytes of the longest stop string */
	struct ctq_strbuf text;          /* the text of ids[0..committed) (cut at a stop) */
	int64_t committed;
	size_t emitted;                  /* bytes of text handed out */
	bool stopped;                    /* a stop string ended the text */
	bool final;                      /* the last update was final */
};

void ctq_detok_init(struct ctq_detok *d, const struct ctq_tokenizer *tok, const char *const *stop,
		    int n_stop);
void ctq_detok_free(struct ctq_detok *d);

/* ids[0..n) are the tokens so far (a prefix of every later call's); final:
 * no more will come. Errors: nomem. */
enum ctq_status ctq_detok_update(struct ctq_detok *d, const int32_t *ids, int64_t n, bool final,
				 struct ctq_error *err);

/* The text ready to hand out since the last call (*s borrowed, valid until
 * the next update); its byte count. */
size_t ctq_detok_take(struct ctq_detok *d, const char **s);

/* The text of one token as an OpenAI logprobs entry shows it (special
 * tokens included, a cut character as U+FFFD), into out (reset first);
 * its length in characters (code points) for text_offset. */
size_t ctq_detok_piece(const struct ctq_tokenizer *tok, int32_t id, struct ctq_strbuf *out);

#endif
