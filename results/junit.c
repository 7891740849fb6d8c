/* ctq JUnit XML writer (see junit.h). */
#include "results/junit.h"
#include "core/fileio.h"
#include "core/strbuf.h"

#include <stdlib.h>

void ctq_junit_xml_escape(struct ctq_strbuf *sb, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '<': ctq_strbuf_append(sb, "&lt;"); break;
		case '>': ctq_strbuf_append(sb, "&gt;"); break;
		case '&': ctq_strbuf_append(sb, "&amp;"); break;
		case '"': ctq_strbuf_append(sb, "&quot;"); break;
		case '\'': ctq_strbuf_append(sb, "&apos;"); break;
		default:
			/* XML 1.0 forbids most control characters. */
			if (c < 0x20 && c != '\n' && c != '\t' && c != '\r')
				ctq_strbuf_append(sb, "?");
			else
				ctq_strbuf_appendn(sb, (const char *)&c, 1);
		}
	}
}

enum ctq_status ctq_junit_write(const char *path, const char *suite,
				const struct ctq_junit_case *cases, size_t n,
				struct ctq_error *err)
{
	size_t failures = 0;
	double total = 0;
	for (size_t i = 0; i < n; i++) {
		failures += cases[i].failed;
		total += cases[i].time_s;
	}
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	ctq_strbuf_append(&sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"");
	ctq_junit_xml_escape(&sb, suite);
	ctq_strbuf_printf(&sb, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"0\" time=\"%.6f\">\n",
			  n, failures, total);
	for (size_t i = 0; i < n; i++) {
		const struct ctq_junit_case *c = &cases[i];
		ctq_strbuf_append(&sb, "  <testcase classname=\"");
		ctq_junit_xml_escape(&sb, c->classname);
		ctq_strbuf_append(&sb, "\" name=\"");
		ctq_junit_xml_escape(&sb, c->name);
		ctq_strbuf_printf(&sb, "\" time=\"%.6f\"", c->time_s);
		if (!c->failed) {
			ctq_strbuf_append(&sb, "/>\n");
			continue;
		}
		ctq_strbuf_append(&sb, ">\n    <failure message=\"");
		ctq_junit_xml_escape(&sb, c->message);
		ctq_strbuf_append(&sb, "\">");
		ctq_junit_xml_escape(&sb, c->message);
		ctq_strbuf_append(&sb, "</failure>\n  </testcase>\n");
	}
	ctq_strbuf_append(&sb, "</testsuite>\n</testsuites>\n");
	enum ctq_status st = ctq_strbuf_write_atomic(&sb, path, err);
	ctq_strbuf_free(&sb);
	return st;
}
