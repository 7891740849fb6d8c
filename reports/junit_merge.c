/* ctq JUnit XML of a plan run (see junit_merge.h). */
#include "reports/junit_merge.h"
#include "core/fileio.h"
#include "core/strbuf.h"

#include <stdlib.h>
#include <string.h>

static void esc(struct ctq_strbuf *sb, const char *s)
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
			esc(sb, id);
			ctq_strbuf_append(sb, ": ");
			ctq_strbuf_appendn(sb, name, (size_t)(end - name));
		} else {
			ctq_strbuf_appendn(sb, open, (size_t)(end - open));
		}
		ctq_strbuf_append(sb, "\n");
		c = end;
	}
}

enum ctq_status ctq_junit_merge(const char *path, const char *name,
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
	esc(&sb, name);
	ctq_strbuf_append(&sb, "\">\n  <testsuite name=\"ctq.run\"");
	ctq_strbuf_printf(&sb, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.6f\">\n",
			  n, failures, errors, skipped, total);
	for (size_t i = 0; i < n; i++) {
		const struct ctq_junit_step *s = &steps[i];
		ctq_strbuf_append(&sb, "    <testcase classname=\"ctq.run.");
		esc(&sb, name);
		ctq_strbuf_append(&sb, "\" name=\"");
		esc(&sb, s->id);
		ctq_strbuf_append(&sb, " (");
		esc(&sb, s->command);
		ctq_strbuf_printf(&sb, ")\" time=\"%.6f\"", s->time_s);
		const char *tag = !strcmp(s->status, "failed")  ? "failure"
				  : !strcmp(s->status, "error")   ? "error"
				  : !strcmp(s->status, "skipped") ? "skipped"
								  : NULL;
		if (!tag) {
			ctq_strbuf_append(&sb, "/>\n");
			continue;
		}
		ctq_strbuf_printf(&sb, ">\n      <%s message=\"", tag);
		esc(&sb, s->message ? s->message : s->status);
		if (!strcmp(tag, "skipped")) {
			ctq_strbuf_append(&sb, "\"/>\n    </testcase>\n");
			continue;
		}
		ctq_strbuf_append(&sb, "\">");
		esc(&sb, s->message ? s->message : s->status);
		ctq_strbuf_printf(&sb, "</%s>\n    </testcase>\n", tag);
	}
	ctq_strbuf_append(&sb, "  </testsuite>\n");
	for (size_t i = 0; i < n; i++) {
		if (!steps[i].junit_path)
			continue;
		char *text = NULL;
		size_t len = 0;
		if (ctq_file_read(steps[i].junit_path, (size_t)256 << 20, &text, &len, NULL))
			continue;
		copy_suites(&sb, text, steps[i].id);
		free(text);
	}
	ctq_strbuf_append(&sb, "</testsuites>\n");
	enum ctq_status st;
	if (sb.oom)
		st = ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	else
		st = ctq_file_write_atomic(path, sb.data, sb.len, err);
	ctq_strbuf_free(&sb);
	return st;
}
