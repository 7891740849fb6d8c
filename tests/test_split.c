/* core/split.h: the one splitter of comma-separated option values. Each
 * refusal is its own case, since each was once a silent acceptance in one
 * of the copies it replaced (an empty entry skipped, a long list cut at 255
 * bytes, too many entries refused without a word). */
#include <criterion/criterion.h>
#include <string.h>

#include "core/split.h"

Test(split, entries_in_order)
{
	char buf[32];
	const char *items[4];
	struct ctq_error err = {0};
	cr_assert_eq(ctq_split_list("--m", "1,16,64", buf, sizeof buf, items, 4, &err), 3);
	cr_expect_str_eq(items[0], "1");
	cr_expect_str_eq(items[1], "16");
	cr_expect_str_eq(items[2], "64");
	cr_assert_eq(ctq_split_list("--m", "x", buf, sizeof buf, items, 1, &err), 1);
	cr_expect_str_eq(items[0], "x");
	cr_expect_eq(err.status, CTQ_OK);
}

Test(split, refusals_say_what_and_why)
{
	static const struct {
		const char *s;
		size_t size;
		int cap;
		const char *message;
	} cases[] = {
		{"", 32, 4, "--m is empty; expected ENTRY[,ENTRY...]"},
		{"1,,2", 32, 4, "--m is \"1,,2\"; an entry is empty"},
		{",1", 32, 4, "--m is \",1\"; an entry is empty"},
		{"1,", 32, 4, "--m is \"1,\"; an entry is empty"},
		{"1,2,3", 32, 2, "--m is \"1,2,3\"; expected at most 2 entries"},
		{"1,2,3", 5, 4, "--m is 5 bytes long; expected at most 4"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char buf[32];
		const char *items[4];
		struct ctq_error err = {0};
		cr_expect_eq(ctq_split_list("--m", cases[i].s, buf, cases[i].size, items, cases[i].cap, &err),
			     -1, "case %zu", i);
		cr_expect_eq(err.status, CTQ_ERR_USAGE, "case %zu", i);
		cr_expect_str_eq(err.path, "--m", "case %zu", i);
		cr_expect_str_eq(err.message, cases[i].message, "case %zu", i);
	}
}

/* A value exactly size - 1 bytes long fits. */
Test(split, fills_the_buffer_exactly)
{
	char buf[6];
	const char *items[3];
	struct ctq_error err = {0};
	cr_assert_eq(ctq_split_list("--m", "12,3,", buf, sizeof buf, items, 3, &err), -1);
	ctq_error_clear(&err);
	cr_assert_eq(ctq_split_list("--m", "12,3,4", buf, sizeof buf, items, 3, &err), -1);
	ctq_error_clear(&err);
	cr_assert_eq(ctq_split_list("--m", "1,3,4", buf, sizeof buf, items, 3, &err), 3, "%s", err.message);
	cr_expect_str_eq(items[2], "4");
}
