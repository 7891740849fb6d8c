/* Criterion tests for core/sha256 against the FIPS 180-4 / NIST CAVP
 * example vectors, streaming in awkward chunk sizes, and file hashing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sha256.h"

static void hex_of(const void *data, size_t n, char hex[CTQ_SHA256_HEX])
{
	unsigned char d[CTQ_SHA256_BYTES];
	ctq_sha256(data, n, d);
	ctq_sha256_hex(d, hex);
}

Test(sha256, nist_vectors)
{
	static const struct {
		const char *id, *msg, *want;
	} cases[] = {
		{"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"two-blocks-448-bits", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{"896-bits", "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		 "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
	};
	/* both compressions: the SHA extensions where the CPU has them, and
	 * the portable loop */
	for (int portable = 0; portable < 2; portable++) {
		ctq_sha256_portable(portable);
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			char hex[CTQ_SHA256_HEX];
			hex_of(cases[i].msg, strlen(cases[i].msg), hex);
			cr_assert_str_eq(hex, cases[i].want, "sha256/%s portable %d", cases[i].id, portable);
		}
	}
	ctq_sha256_portable(0);
}

/* The SHA-extension compression and the portable one give the same digest
 * for every length 0 .. 300 and a 1 MB buffer of varied bytes. */
Test(sha256, extensions_equal_the_portable_loop)
{
	const size_t big = 1 << 20;
	unsigned char *buf = malloc(big);
	cr_assert(buf);
	uint32_t x = 12345;
	for (size_t i = 0; i < big; i++) {
		x = x * 1664525u + 1013904223u;
		buf[i] = (unsigned char)(x >> 24);
	}
	for (size_t n = 0; n <= 301; n++) {
		const size_t len = n == 301 ? big : n;
		unsigned char a[CTQ_SHA256_BYTES], b[CTQ_SHA256_BYTES];
		ctq_sha256_portable(0);
		ctq_sha256(buf, len, a);
		ctq_sha256_portable(1);
		ctq_sha256(buf, len, b);
		cr_assert(!memcmp(a, b, sizeof a), "length %zu: the two compressions differ", len);
	}
	ctq_sha256_portable(0);
	free(buf);
}

Test(sha256, million_a_streamed_in_odd_chunks)
{
	static char chunk[997];
	memset(chunk, 'a', sizeof chunk);
	struct ctq_sha256 s;
	ctq_sha256_init(&s);
	size_t left = 1000000;
	while (left) {
		size_t k = left < sizeof chunk ? left : sizeof chunk;
		ctq_sha256_update(&s, chunk, k);
		left -= k;
	}
	unsigned char d[CTQ_SHA256_BYTES];
	char hex[CTQ_SHA256_HEX];
	ctq_sha256_final(&s, d);
	ctq_sha256_hex(d, hex);
	cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Every length around the padding boundary (55, 56, 64 bytes) gives the same
 * digest one-shot and byte by byte. */
Test(sha256, streaming_equals_one_shot_at_every_length)
{
	unsigned char msg[200];
	for (size_t i = 0; i < sizeof msg; i++)
		msg[i] = (unsigned char)(i * 31 + 7);
	for (size_t n = 0; n <= sizeof msg; n++) {
		unsigned char a[CTQ_SHA256_BYTES], b[CTQ_SHA256_BYTES];
		ctq_sha256(msg, n, a);
		struct ctq_sha256 s;
		ctq_sha256_init(&s);
		for (size_t i = 0; i < n; i++)
			ctq_sha256_update(&s, msg + i, 1);
		ctq_sha256_final(&s, b);
		cr_assert_arr_eq(a, b, sizeof a, "length %zu", n);
	}
}

Test(sha256, file_digest_and_missing_file)
{
	char path[] = "/tmp/ctq-sha256-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "abc", 3), 3);
	close(fd);
	unsigned char d[CTQ_SHA256_BYTES];
	char hex[CTQ_SHA256_HEX];
	struct ctq_error err = {0};
	cr_assert_eq(ctq_sha256_file(path, d, &err), CTQ_OK, "%s", err.message);
	ctq_sha256_hex(d, hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	unlink(path);
	cr_assert_eq(ctq_sha256_file(path, d, &err), CTQ_ERR_IO);
	cr_assert_str_eq(err.path, path);
}
