/* Criterion tests for the central file readers (core/fileio.h and the
 * readers over them): a FIFO, a directory or a device where a file is
 * expected is an io-error naming the path, returned at once; nothing
 * waits for a writer. Each test is bounded by a timeout so that a
 * regression fails instead of hanging. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "results/table.h"

TestSuite(fileio);

Test(fileio, readers_refuse_what_is_not_a_regular_file, .timeout = 10)
{
	char root[64], fifo[128];
	snprintf(root, sizeof root, "/tmp/ctq-fileio-XXXXXX");
	cr_assert(mkdtemp(root));
	snprintf(fifo, sizeof fifo, "%s/pipe.json", root);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	static const struct {
		const char *id, *path_fmt, *what;
	} cases[] = {
		{"fifo", "%s/pipe.json", "FIFO"},
		{"directory", "%s", "directory"},
		{"character-device", "/dev/null", "character device"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[128];
		snprintf(path, sizeof path, cases[i].path_fmt, root);
		struct ctq_error err = {0};
		char *text = NULL;
		size_t n = 0;
		cr_expect_eq(ctq_file_read(path, 1 << 20, &text, &n, &err), CTQ_ERR_IO, "%s: read", cases[i].id);
		cr_expect_str_eq(err.path, path, "%s", cases[i].id);
		cr_expect(strstr(err.message, cases[i].what), "%s: %s", cases[i].id, err.message);
		cr_expect_null(text);
		memset(&err, 0, sizeof err);
		const void *map = NULL;
		cr_expect_eq(ctq_file_map(path, "a .safetensors file", &map, &n, &err), CTQ_ERR_IO,
			     "%s: map", cases[i].id);
		cr_expect(strstr(err.message, "a .safetensors file"), "%s: %s", cases[i].id, err.message);
		memset(&err, 0, sizeof err);
		unsigned char d[CTQ_SHA256_BYTES];
		cr_expect_eq(ctq_sha256_file(path, d, &err), CTQ_ERR_IO, "%s: sha256", cases[i].id);
		cr_expect_str_eq(err.path, path, "%s", cases[i].id);
		memset(&err, 0, sizeof err);
		cJSON *root_json = NULL;
		cr_expect_eq(ctq_json_load_file(path, 1 << 20, NULL, &root_json, &err), CTQ_ERR_IO,
			     "%s: json", cases[i].id);
		memset(&err, 0, sizeof err);
		struct ctq_table t;
		cr_expect_eq(ctq_table_load(&t, path, &err), CTQ_ERR_IO, "%s: csv", cases[i].id);
	}
	/* a regular file still reads, through the same descriptor checks */
	char file[128];
	snprintf(file, sizeof file, "%s/ok.json", root);
	FILE *f = fopen(file, "w");
	cr_assert(f);
	fputs("{\"a\": 1}", f);
	fclose(f);
	char *text = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_expect_eq(ctq_file_read(file, 1 << 20, &text, &n, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(n, 8);
	free(text);
	unlink(fifo);
	unlink(file);
	rmdir(root);
}

/* ctq_file_read_tail: the last lines within the bound, starting at a line;
 * the whole text when it is shorter. ctq_strbuf_write_atomic: what the
 * buffer holds, and nomem (nothing written) for a buffer that ran out. */
Test(fileio, tail_and_buffer_writes, .timeout = 10)
{
	char root[64], path[128];
	snprintf(root, sizeof root, "/tmp/ctq-fileio-XXXXXX");
	cr_assert(mkdtemp(root));
	snprintf(path, sizeof path, "%s/log.txt", root);
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	ctq_strbuf_append(&sb, "first line\nsecond line\nthird\n");
	struct ctq_error err = {0};
	cr_assert_eq(ctq_strbuf_write_atomic(&sb, path, &err), CTQ_OK, "%s", err.message);
	char *text = NULL;
	const char *tail = NULL;
	cr_assert_eq(ctq_file_read_tail(path, 1 << 20, 15, &text, &tail, &err), CTQ_OK);
	cr_expect_str_eq(tail, "third\n", "a tail of 15 bytes starts at the next line: \"%s\"", tail);
	free(text);
	cr_assert_eq(ctq_file_read_tail(path, 1 << 20, 4096, &text, &tail, &err), CTQ_OK);
	cr_expect_str_eq(tail, "first line\nsecond line\nthird\n");
	free(text);
	sb.oom = true;
	snprintf(path, sizeof path, "%s/oom.txt", root);
	cr_expect_eq(ctq_strbuf_write_atomic(&sb, path, &err), CTQ_ERR_NOMEM);
	cr_expect(access(path, F_OK) != 0, "a buffer that ran out of memory wrote %s", path);
	ctq_strbuf_free(&sb);
	ctq_remove_tree(root);
}
