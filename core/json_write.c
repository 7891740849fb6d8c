/* ctq JSON serialisation as Python's json.dumps (see json_write.h). */
#include "core/json_write.h"
#include "core/arena.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decodes one UTF-8 sequence at p (n bytes left) into *cp; returns its
 * length, or 0 when it is not well-formed UTF-8 (overlong forms, UTF-16
 * surrogates and code points past U+10FFFF included), as Python's strict
 * decoder rejects them. */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
	unsigned c = p[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xc2 && c < 0xe0) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c < 0xf0) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c < 0xf5) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[k] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* A string as json.encoder.py_encode_basestring_ascii writes it. */
static enum ctq_status write_string(struct ctq_strbuf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	ctq_strbuf_append(out, "\"");
	while (n) {
		unsigned c = *p;
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			/* A run of plain characters in one append. */
			size_t k = 1;
			while (k < n && p[k] >= 0x20 && p[k] < 0x7f && p[k] != '"' &&
			       p[k] != '\\')
				k++;
			ctq_strbuf_appendn(out, (const char *)p, k);
			p += k, n -= k;
			continue;
		}
		const char *esc = NULL;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default: break;
		}
		if (esc) {
			ctq_strbuf_append(out, esc);
			p++, n--;
			continue;
		}
		uint32_t cp;
		size_t len = utf8_decode(p, n, &cp);
		if (!len)
			return CTQ_ERR_PARSE;
		p += len, n -= len;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			ctq_strbuf_printf(out, "\\u%04x\\u%04x", (unsigned)(0xd800 + (cp >> 10)),
					  (unsigned)(0xdc00 + (cp & 0x3ff)));
		} else {
			ctq_strbuf_printf(out, "\\u%04x", (unsigned)cp);
		}
	}
	ctq_strbuf_append(out, "\"");
	return CTQ_OK;
}

/* Python's float repr (the 'short' style of CPython's float_repr): the
 * fewest significant digits that read back to d, then fixed notation when
 * the decimal exponent is in [-4, 16), scientific otherwise. */
static void write_float_repr(struct ctq_strbuf *out, double d)
{
	char buf[40];
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, sizeof buf, "%.*e", p - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	/* buf is [-]d[.ddd]e[+-]XX: take the digits and the exponent. */
	const char *s = buf;
	bool neg = *s == '-';
	if (neg)
		s++;
	char digits[24];
	size_t nd = 0;
	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9')
			digits[nd++] = *s;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	int exp10 = atoi(s + 1);

	if (neg)
		ctq_strbuf_append(out, "-");
	if (exp10 >= -4 && exp10 < 16) {
		if (exp10 >= 0) {
			size_t whole = (size_t)exp10 + 1; /* digits before the point */
			for (size_t i = 0; i < whole; i++)
				ctq_strbuf_appendn(out, i < nd ? &digits[i] : "0", 1);
			ctq_strbuf_append(out, ".");
			ctq_strbuf_append(out, nd > whole ? digits + whole : "0");
		} else {
			ctq_strbuf_append(out, "0.");
			for (int i = 0; i < -exp10 - 1; i++)
				ctq_strbuf_append(out, "0");
			ctq_strbuf_append(out, digits);
		}
		return;
	}
	ctq_strbuf_appendn(out, digits, 1);
	if (nd > 1) {
		ctq_strbuf_append(out, ".");
		ctq_strbuf_append(out, digits + 1);
	}
	ctq_strbuf_printf(out, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
}

static void write_number(struct ctq_strbuf *out, double d)
{
	if (isnan(d)) {
		ctq_strbuf_append(out, "NaN");
	} else if (isinf(d)) {
		ctq_strbuf_append(out, d < 0 ? "-Infinity" : "Infinity");
	} else if (d == floor(d) && fabs(d) <= 9007199254740992.0) {
		/* Exact: |d| <= 2^53 fits a long long. -0.0 becomes 0. */
		ctq_strbuf_printf(out, "%lld", (long long)d);
	} else {
		write_float_repr(out, d);
	}
}

static void newline(struct ctq_strbuf *out, int indent, int level)
{
	ctq_strbuf_append(out, "\n");
	for (long i = 0; i < (long)indent * level; i++)
		ctq_strbuf_append(out, " ");
}

struct member {
	const cJSON *item;
	size_t pos; /* file order, for a stable sort of duplicate keys */
};

static int cmp_member(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int c = strcmp(x->item->string, y->item->string);
	if (c)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static enum ctq_status write_value(const cJSON *v, int indent, bool sort_keys,
				   int level, struct ctq_strbuf *out);

static enum ctq_status write_container(const cJSON *v, bool object, int indent,
				       bool sort_keys, int level,
				       struct ctq_strbuf *out)
{
	size_t n = 0;
	for (const cJSON *c = v->child; c; c = c->next)
		n++;
	if (!n) {
		ctq_strbuf_append(out, object ? "{}" : "[]");
		return CTQ_OK;
	}
	struct member *m = ctq_malloc(n * sizeof *m); /* (n) children in output order */
	if (!m)
		return CTQ_ERR_NOMEM;
	size_t i = 0;
	for (const cJSON *c = v->child; c; c = c->next, i++) {
		m[i].item = c;
		m[i].pos = i;
	}
	enum ctq_status st = CTQ_OK;
	if (object) {
		for (i = 0; i < n; i++)
			if (!m[i].item->string) {
				st = CTQ_ERR_PARSE;
				goto done;
			}
		if (sort_keys)
			qsort(m, n, sizeof *m, cmp_member);
	}
	ctq_strbuf_append(out, object ? "{" : "[");
	for (i = 0; i < n; i++) {
		if (indent >= 0) {
			if (i)
				ctq_strbuf_append(out, ",");
			newline(out, indent, level + 1);
		} else if (i) {
			ctq_strbuf_append(out, ", ");
		}
		if (object) {
			if ((st = write_string(out, m[i].item->string)))
				goto done;
			ctq_strbuf_append(out, ": ");
		}
		if ((st = write_value(m[i].item, indent, sort_keys, level + 1, out)))
			goto done;
	}
	if (indent >= 0)
		newline(out, indent, level);
	ctq_strbuf_append(out, object ? "}" : "]");
done:
	free(m);
	return st;
}

static enum ctq_status write_value(const cJSON *v, int indent, bool sort_keys,
				   int level, struct ctq_strbuf *out)
{
	if (cJSON_IsNull(v))
		ctq_strbuf_append(out, "null");
	else if (cJSON_IsTrue(v))
		ctq_strbuf_append(out, "true");
	else if (cJSON_IsFalse(v))
		ctq_strbuf_append(out, "false");
	else if (cJSON_IsNumber(v))
		write_number(out, v->valuedouble);
	else if (cJSON_IsString(v))
		return v->valuestring ? write_string(out, v->valuestring) : CTQ_ERR_PARSE;
	else if (cJSON_IsArray(v))
		return write_container(v, false, indent, sort_keys, level, out);
	else if (cJSON_IsObject(v))
		return write_container(v, true, indent, sort_keys, level, out);
	else
		return CTQ_ERR_PARSE; /* raw or invalid item */
	return CTQ_OK;
}

enum ctq_status ctq_json_write_python(const cJSON *v, int indent, bool sort_keys,
				      struct ctq_strbuf *out)
{
	if (!v)
		return CTQ_ERR_PARSE;
	enum ctq_status st = write_value(v, indent, sort_keys, 0, out);
	if (st == CTQ_OK && out->oom)
		st = CTQ_ERR_NOMEM;
	return st;
}
