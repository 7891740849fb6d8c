/* ctq JSON serialisation byte for byte as Python's json.dumps writes it, for
 * the files Hugging Face and compressed-tensors tools write with
 * json.dumps(obj, indent=2, sort_keys=True): config.json,
 * generation_config.json, model.safetensors.index.json. A file ctq writes
 * then diffs cleanly against one the Python producer wrote.
 *
 * Rules (CPython 3 json.encoder, ensure_ascii=True, allow_nan=True):
 * - indent >= 0: items separated by "," + newline + indent spaces per level,
 *   keys by ": "; empty containers as {} and []. indent < 0 is Python's
 *   indent=None: one line, separators ", " and ": ".
 * - sort_keys: keys in code point order (bytewise on UTF-8), stable for
 *   duplicate keys (cJSON keeps them; Python dicts cannot have them).
 * - strings: \" \\ \n \r \t \b \f; every other character outside ' '..'~'
 *   as \u00xx / \uxxxx (lowercase hex), UTF-16 surrogate pairs past U+FFFF.
 * - numbers: cJSON does not tell ints from floats, so an integral value
 *   within +-2^53 is written as an integer (-0.0 as 0); any other value as
 *   Python's float repr (shortest digits that read back to the same double;
 *   fixed notation for decimal exponents -4..15 with at least one fractional
 *   digit, else d.ddde+XX with at least two exponent digits: 1e-06, 1e+16,
 *   9100000000000000.0). NaN and infinities as NaN, Infinity, -Infinity.
 *
 * What it is not: a pretty-printer with options beyond these, or a writer of
 * what Python could not have produced (invalid UTF-8 strings, cJSON raw
 * items): those are refused.
 */
#ifndef CTQ_CORE_JSON_WRITE_H
#define CTQ_CORE_JSON_WRITE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "core/strbuf.h"

/* Appends the serialisation of v (borrowed) to out, without a trailing
 * newline (transformers adds "\n" after json.dumps; callers do the same).
 * Returns CTQ_OK; CTQ_ERR_NOMEM when out ran out of memory (out->oom is
 * set); CTQ_ERR_PARSE when v holds something Python's json.dumps cannot
 * have written (a string that is not valid UTF-8, a raw or invalid item):
 * out then holds a partial text the caller discards. */
enum ctq_status ctq_json_write_python(const cJSON *v, int indent, bool sort_keys,
				      struct ctq_strbuf *out);

#endif
