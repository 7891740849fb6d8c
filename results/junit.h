/* ctq JUnit XML for CI servers: one <testcase> per check. */
#ifndef CTQ_RESULTS_JUNIT_H
#define CTQ_RESULTS_JUNIT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct ctq_strbuf;

struct ctq_junit_case {
	const char *classname; /* e.g. the suite case id */
	const char *name;      /* e.g. "strict: model.layers.0.mlp.down_proj" */
	bool failed;
	const char *message;   /* failure text; NULL when passed */
	double time_s;
};

/* Appends s (NUL-terminated; NULL appends nothing) to sb as XML 1.0 text
 * or attribute value: markup characters as entities, control characters
 * other than tab, newline and carriage return as '?'. */
void ctq_junit_xml_escape(struct ctq_strbuf *sb, const char *s);

/* Writes one <testsuite> named `suite` holding the cases. */
enum ctq_status ctq_junit_write(const char *path, const char *suite,
				const struct ctq_junit_case *cases, size_t n,
				struct ctq_error *err);

#endif
