/* ctq JUnit XML of a plan run (see junit_merge.h). */
#include "results/junit_merge.h"
#include "core/arena.h"
#include "results/junit.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "results/table.h"

#include <stdlib.h>
#include <string.h>

/* Copies every <testsuite ...>...</testsuite> (or self-closed) element of
 * text into sb, its name attribute prefixed with "id: ". */
static void copy_suites(struct ctq_strbuf *sb, const char *text, const char *id)
{
	const char *c = text;
	for (;;) {
		const char *open = strstr(c, "<testsuite");
		while (open && open[10] != ' ' && open[10] != '>' && open[10] != '\n' && open[10] != '/')
			open = strstr(open + 10, "<testsuite"); /* skip <testsuites> */
		if (!open)
			return;
		const char *tag_end = strchr(open, '>');
		if (!tag_end)
			return;
		const char *end;
		if (tag_end[-1] == '/') {
			end = tag_end + 1;
		} else {
			const char *close = strstr(tag_end, "</testsuite>");
			if (!close)
				return;
			end = close + strlen("</testsuite>");
		}
		const char *name = strstr(open, " name=\"");
		ctq_strbuf_append(sb, "  ");
		if (name && name < tag_end) {
			name += strlen(" name=\"");
			ctq_strbuf_appendn(sb, open, (size_t)(name - open));
			ctq_junit_xml_escape(sb, id);
			ctq_strbuf_append(sb, ": ");
			ctq_strbuf_appendn(sb, name, (size_t)(end - name));
		} else {
			ctq_strbuf_appendn(sb, open, (size_t)(end - open));
		}
		ctq_strbuf_append(sb, "\n");
		c = end;
	}
}

/* A <testsuite> of the probe rows of csv (ctq probe's probe.csv): one
 * testcase per row, a <failure> unless outcome is pass. An unreadable file
 * adds nothing. */
static void probe_suite(struct ctq_strbuf *sb, const char *csv, const char *id)
{
	struct ctq_table t;
	if (ctq_table_load(&t, csv, NULL))
		return;
	static const char *const keys[] = {"layer", "K", "N", "M", "weights", "acts", "backend",
					   "outcome", "reason"};
	int c[9];
	for (int k = 0; k < 9; k++)
		if ((c[k] = ctq_table_col(&t, keys[k])) < 0) {
			ctq_table_free(&t);
			return;
		}
	size_t failures = 0;
	for (size_t i = 0; i < t.n_rows; i++)
		failures += strcmp(ctq_table_get(&t, i, c[7]), "pass") != 0;
	ctq_strbuf_append(sb, "  <testsuite name=\"");
	ctq_junit_xml_escape(sb, id);
	ctq_strbuf_printf(sb, ": ctq.probe\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"0\" "
			      "time=\"0.000000\">\n", t.n_rows, failures);
	for (size_t i = 0; i < t.n_rows; i++) {
		/* classname probe.LAYER, name "BACKEND K=.. N=.. M=.. WEIGHTS/ACTS" */
		static const struct {
			const char *before;
			int key;
		} parts[] = {{"    <testcase classname=\"probe.", 0}, {"\" name=\"", 6}, {" K=", 1},
			     {" N=", 2}, {" M=", 3}, {" ", 4}, {"/", 5}};
		for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
			ctq_strbuf_append(sb, parts[k].before);
			ctq_junit_xml_escape(sb, ctq_table_get(&t, i, c[parts[k].key]));
		}
		const char *outcome = ctq_table_get(&t, i, c[7]), *reason = ctq_table_get(&t, i, c[8]);
		if (!strcmp(outcome, "pass")) {
			ctq_strbuf_append(sb, "\" time=\"0.000000\"/>\n");
			continue;
		}
		ctq_strbuf_append(sb, "\" time=\"0.000000\">\n      <failure message=\"");
		ctq_junit_xml_escape(sb, outcome);
		if (reason[0]) {
			ctq_strbuf_append(sb, ": ");
			ctq_junit_xml_escape(sb, reason);
		}
		ctq_strbuf_append(sb, "\"/>\n    </testcase>\n");
	}
	ctq_strbuf_append(sb, "  </testsuite>\n");
	ctq_table_free(&t);
}

enum ctq_status ctq_junit_merge(const char *path, const char *name, const char *verdict,
				const struct ctq_junit_step *steps, size_t n,
				struct ctq_error *err)
{
	size_t failures = 0, errors = 0, skipped = 0;
	double total = 0;
	for (size_t i = 0; i < n; i++) {
		failures += !strcmp(steps[i].status, "failed");
		errors += !strcmp(steps[i].status, "error");
		skipped += !strcmp(steps[i].status, "skipped");
		total += steps[i].time_s;
	}
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	ctq_strbuf_append(&sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"");
	ctq_junit_xml_escape(&sb, name);
	ctq_strbuf_append(&sb, "\">\n  <testsuite name=\"ctq.run\"");
	ctq_strbuf_printf(&sb, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.6f\">\n",
			  n, failures, errors, skipped, total);
	if (verdict) {
		ctq_strbuf_append(&sb, "    <properties>\n      <property name=\"verdict\" value=\"");
		ctq_junit_xml_escape(&sb, verdict);
		ctq_strbuf_append(&sb, "\"/>\n    </properties>\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct ctq_junit_step *s = &steps[i];
		ctq_strbuf_append(&sb, "    <testcase classname=\"ctq.run.");
		ctq_junit_xml_escape(&sb, name);
		ctq_strbuf_append(&sb, "\" name=\"");
		ctq_junit_xml_escape(&sb, s->id);
		ctq_strbuf_append(&sb, " (");
		ctq_junit_xml_escape(&sb, s->command);
		ctq_strbuf_printf(&sb, ")\" time=\"%.6f\"", s->time_s);
		const char *tag = !strcmp(s->status, "failed")  ? "failure"
				  : !strcmp(s->status, "error")   ? "error"
				  : !strcmp(s->status, "skipped") ? "skipped"
								  : NULL;
		if (!tag && s->expected_failure && s->message) {
			ctq_strbuf_append(&sb, ">\n      <system-out>");
			ctq_junit_xml_escape(&sb, s->message);
			ctq_strbuf_append(&sb, "</system-out>\n    </testcase>\n");
			continue;
		}
		if (!tag) {
			ctq_strbuf_append(&sb, "/>\n");
			continue;
		}
		ctq_strbuf_printf(&sb, ">\n      <%s message=\"", tag);
		ctq_junit_xml_escape(&sb, s->message ? s->message : s->status);
		if (!strcmp(tag, "skipped")) {
			ctq_strbuf_append(&sb, "\"/>\n    </testcase>\n");
			continue;
		}
		ctq_strbuf_append(&sb, "\">");
		ctq_junit_xml_escape(&sb, s->message ? s->message : s->status);
		ctq_strbuf_printf(&sb, "</%s>\n    </testcase>\n", tag);
	}
	ctq_strbuf_append(&sb, "  </testsuite>\n");
	for (size_t i = 0; i < n; i++) {
		if (steps[i].expected_failure)
			continue;
		if (steps[i].probe_csv && !steps[i].junit_path)
			probe_suite(&sb, steps[i].probe_csv, steps[i].id);
		if (!steps[i].junit_path)
			continue;
		char *text = NULL;
		size_t len = 0;
		if (ctq_file_read(steps[i].junit_path, (size_t)256 << 20, &text, &len, NULL))
			continue;
		copy_suites(&sb, text, steps[i].id);
		ctq_free(text);
	}
	ctq_strbuf_append(&sb, "</testsuites>\n");
	enum ctq_status st = ctq_strbuf_write_atomic(&sb, path, err);
	ctq_strbuf_free(&sb);
	return st;
}
