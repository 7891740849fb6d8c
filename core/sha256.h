/* ctq SHA-256 (FIPS 180-4): streaming and one-shot digests of buffers and
 * files, for run manifests (tensor-file hashes) and test oracles.
 *
 * What it is not: a general crypto library; no HMAC, no other digests.
 */
#ifndef CTQ_CORE_SHA256_H
#define CTQ_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define CTQ_SHA256_BYTES 32
#define CTQ_SHA256_HEX 65 /* 64 lowercase hex digits and a NUL */

struct ctq_sha256 {
	uint32_t h[8];
	uint64_t n_bytes;      /* message length so far */
	unsigned char block[64];
	size_t block_len;      /* bytes waiting in block */
};

void ctq_sha256_init(struct ctq_sha256 *s);
/* Hashes n bytes of data (borrowed; may be NULL when n == 0). */
void ctq_sha256_update(struct ctq_sha256 *s, const void *data, size_t n);
/* Writes the digest; s must be re-initialised before reuse. */
void ctq_sha256_final(struct ctq_sha256 *s, unsigned char out[CTQ_SHA256_BYTES]);

/* One-shot digest of a buffer. */
void ctq_sha256(const void *data, size_t n, unsigned char out[CTQ_SHA256_BYTES]);

/* Test hook: portable != 0 keeps to the portable compression from now on
 * (else the x86 SHA extensions where the CPU has them); returns it.
 * Process-wide; set it before hashing. */
int ctq_sha256_portable(int portable);

/* Lowercase hex of a digest into hex (CTQ_SHA256_HEX bytes, NUL-terminated). */
void ctq_sha256_hex(const unsigned char digest[CTQ_SHA256_BYTES],
		    char hex[CTQ_SHA256_HEX]);

/* Digest of a whole file, read in fixed-size chunks (constant memory).
 * Errors: io-error (cannot open or read), with the path. */
enum ctq_status ctq_sha256_file(const char *path,
				unsigned char out[CTQ_SHA256_BYTES],
				struct ctq_error *err);

#endif
