/* ctq UTF-8 validation for untrusted text (safetensors headers, GGUF
 * strings): well-formed UTF-8 only — no overlong forms, surrogates or code
 * points past U+10FFFF — as JSON writers and the `tokenizers` library
 * require. */
#ifndef CTQ_CORE_UTF8_H
#define CTQ_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when the n bytes at s are well-formed UTF-8; otherwise false with
 * *bad (if non-NULL) set to the offset of the first bad sequence. */
bool ctq_utf8_valid(const void *s, size_t n, size_t *bad);

#endif
