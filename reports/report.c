/* ctq run report (see report.h): the driver. Environment, steps,
 * provenance and the verdict are here; each family's section is its own
 * (families/<family>.c, ctq_fam_<family>_report), called in report order
 * through the families' registration (families/registry.h). */
#include "reports/report.h"
#include "families/family.h"
#include "families/registry.h"
#include "core/fileio.h"
#include "core/json.h"
#include "stats/accuracy.h"
#include "results/plot.h"
#include "results/files.h"
#include "results/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- environment, steps, provenance ------------------------------------------------- */

static void kv(struct ctq_rep *r, struct ctq_strbuf *mdb, struct ctq_strbuf *hb, const char *k,
	       const char *v)
{
	ctq_strbuf_append(mdb, "| ");
	ctq_rep_md(mdb, k);
	ctq_strbuf_append(mdb, " | ");
	ctq_rep_md(mdb, v);
	ctq_strbuf_append(mdb, " |\n");
	ctq_strbuf_append(hb, "<tr><th>");
	ctq_rep_h(hb, k);
	ctq_strbuf_append(hb, "</th><td>");
	ctq_rep_h(hb, v);
	ctq_strbuf_append(hb, "</td></tr>\n");
	(void)r;
}

/* Which code the run qualified: the GPU architectures the binary carries,
 * the image the device ran, the dispatch knobs set, and per op the kernel
 * paths taken (manifest "ctq.cuda_archs", "cuda_device", "knobs",
 * "kernel_paths"; absent from manifests written before them). */
static void gpu_code(struct ctq_rep *r, struct ctq_strbuf *mdb, struct ctq_strbuf *hb, char *buf,
		     size_t cap)
{
	const cJSON *m = r->m, *e;
	const cJSON *archs = ctq_json_get(ctq_json_get(m, "ctq"), "cuda_archs");
	if (cJSON_IsArray(archs)) {
		struct ctq_strbuf s;
		ctq_strbuf_init(&s);
		cJSON_ArrayForEach(e, archs)
			if (cJSON_IsString(e))
				ctq_strbuf_printf(&s, "%s%s", s.len ? " " : "", e->valuestring);
		/* cuda_device: "NAME (sm_XY, ..., GiB; runs ...)" */
		const char *dev = ctq_json_str_at(m, "cuda_device", NULL);
		const char *runs = dev ? strstr(dev, "; runs ") : NULL;
		const char *end = runs ? strrchr(runs, ')') : NULL;
		snprintf(buf, cap, "%s%s%.*s", s.len ? ctq_strbuf_str(&s) : "none (built without CUDA)",
			 runs ? "; the GPU" : "", runs ? (int)((end ? end : runs + strlen(runs)) - runs - 1) : 0,
			 runs ? runs + 1 : "");
		kv(r, mdb, hb, "GPU code carried", buf);
		ctq_strbuf_free(&s);
	}
	const cJSON *knobs = ctq_json_get(m, "knobs");
	if (cJSON_IsObject(knobs)) {
		struct ctq_strbuf s;
		ctq_strbuf_init(&s);
		for (e = knobs->child; e; e = e->next)
			if (cJSON_IsString(e))
				ctq_strbuf_printf(&s, "%s%s=%s", s.len ? ", " : "", e->string, e->valuestring);
		kv(r, mdb, hb, "dispatch knobs", s.len ? ctq_strbuf_str(&s) : "none set (the defaults)");
		ctq_strbuf_free(&s);
	}
	const cJSON *kp = ctq_json_get(m, "kernel_paths");
	if (cJSON_IsObject(kp)) {
		struct ctq_strbuf s;
		ctq_strbuf_init(&s);
		for (e = kp->child; e; e = e->next) {
			ctq_strbuf_printf(&s, "%s%s: ", s.len ? "; " : "", e->string);
			const cJSON *p;
			int i = 0;
			cJSON_ArrayForEach(p, e)
				if (cJSON_IsString(p))
					ctq_strbuf_printf(&s, "%s%s", i++ ? ", " : "", p->valuestring);
		}
		kv(r, mdb, hb, "kernel paths run", s.len ? ctq_strbuf_str(&s) : "none (no GPU op ran)");
		ctq_strbuf_free(&s);
	}
}

static void environment(struct ctq_rep *r, struct ctq_strbuf *mdb, struct ctq_strbuf *hb)
{
	const cJSON *m = r->m, *host = ctq_json_get(m, "host");
	char buf[1024];
	ctq_strbuf_append(mdb, "## Environment\n\n| | |\n|---|---|\n");
	ctq_strbuf_append(hb, "<h2>Environment</h2>\n<table class=\"kv\">\n");
	const cJSON *dirty = ctq_json_get(ctq_json_get(m, "git"), "dirty");
	snprintf(buf, sizeof buf, "%s%s", ctq_rep_jstr(m, "git.revision"),
		 cJSON_IsTrue(dirty) ? " (dirty working tree)" : "");
	kv(r, mdb, hb, "revision", buf);
	if (ctq_json_get(m, "ctq")) {
		snprintf(buf, sizeof buf, "%s (built from %s)", ctq_rep_jstr(m, "ctq.version"),
			 ctq_rep_jstr(m, "ctq.build_revision"));
		kv(r, mdb, hb, "ctq", buf);
	}
	snprintf(buf, sizeof buf, "%s to %s (%.1f s)", ctq_rep_jstr(m, "started_utc"), ctq_rep_jstr(m, "ended_utc"),
		 ctq_rep_jnum(m, "wall_time_s"));
	kv(r, mdb, hb, "time (UTC)", buf);
	snprintf(buf, sizeof buf, "%s, %s %s", ctq_rep_jstr(host, "name"), ctq_rep_jstr(host, "os"), ctq_rep_jstr(host, "kernel"));
	kv(r, mdb, hb, "host", buf);
	double cores = ctq_rep_jnum(host, "cpu_cores"), logical = ctq_rep_jnum(host, "cpu_logical");
	if (isnan(logical))
		logical = ctq_rep_jnum(host, "cpus_online");
	const char *cpu = ctq_json_str_at(host, "cpu_model", NULL);
	snprintf(buf, sizeof buf, "%s; %.0f cores, %.0f logical; governor %s",
		 cpu ? cpu : ctq_rep_jstr(host, "cpu"), isnan(cores) ? logical : cores, logical,
		 ctq_rep_jstr(host, "cpu_governor"));
	kv(r, mdb, hb, "CPU", buf);
	double mem = ctq_rep_jnum(host, "memory_bytes");
	snprintf(buf, sizeof buf, isnan(mem) ? "unknown" : "%.1f GiB", mem / 1073741824.0);
	kv(r, mdb, hb, "memory", buf);
	/* what the run shared the host with (results/env.h host_load): what ctq
	 * compare's busy-host rule reads */
	const cJSON *hl = ctq_json_get(m, "host_load");
	if (hl) {
		double other = ctq_rep_jnum(hl, "other_cpu_fraction"), steal = ctq_rep_jnum(hl, "steal_fraction");
		double l0 = ctq_rep_jnum(hl, "load_avg_1m_start"), l1 = ctq_rep_jnum(hl, "load_avg_1m_end");
		char o[32] = "unknown", s[32] = "unknown", a[32] = "unknown", z[32] = "unknown";
		if (!isnan(other))
			snprintf(o, sizeof o, "%.0f%%", 100 * other);
		if (!isnan(steal))
			snprintf(s, sizeof s, "%.1f%%", 100 * steal);
		if (!isnan(l0))
			snprintf(a, sizeof a, "%.2f", l0);
		if (!isnan(l1))
			snprintf(z, sizeof z, "%.2f", l1);
		snprintf(buf, sizeof buf, "other processes %s of the CPU time, steal %s; load average %s to %s",
			 o, s, a, z);
		kv(r, mdb, hb, "host load", buf);
	}
	const cJSON *b = ctq_json_get(m, "build");
	if (b)
		snprintf(buf, sizeof buf, "%s; CUDA %s%s", ctq_rep_jstr(b, "compiler"),
			 cJSON_IsTrue(ctq_json_get(b, "cuda")) ? "on" : "off",
			 cJSON_IsTrue(ctq_json_get(b, "sanitizers")) ? "; sanitizers" : "");
	else
		snprintf(buf, sizeof buf, "not recorded (this manifest predates or bypasses ctq run)");
	kv(r, mdb, hb, "compiler", buf);
	kv(r, mdb, hb, "build flags", ctq_rep_jstr(b, "flags"));
	const cJSON *cu = ctq_json_get(m, "cuda");
	if (cJSON_IsObject(cu))
		snprintf(buf, sizeof buf, "runtime %s, cuBLAS %s, driver API %s; driver %s",
			 ctq_rep_jstr(cu, "runtime_version"), ctq_rep_jstr(cu, "cublas_version"),
			 ctq_rep_jstr(cu, "driver_api_version"), ctq_rep_jstr(m, "gpu_driver_version"));
	else
		snprintf(buf, sizeof buf, "%s", cJSON_IsString(cu) ? cu->valuestring : "unknown");
	kv(r, mdb, hb, "CUDA", buf);
	gpu_code(r, mdb, hb, buf, sizeof buf);
	const cJSON *gpus = ctq_json_get(m, "gpus"), *g;
	if (cJSON_IsArray(gpus) && cJSON_GetArraySize(gpus) > 0) {
		cJSON_ArrayForEach(g, gpus)
		{
			char k[32], sms[32];
			const cJSON *s = ctq_json_get(g, "sms");
			snprintf(sms, sizeof sms, cJSON_IsNumber(s) ? "%.0f" : "?",
				 cJSON_IsNumber(s) ? s->valuedouble : 0);
			snprintf(k, sizeof k, "GPU %.0f", ctq_rep_jnum(g, "index"));
			snprintf(buf, sizeof buf,
				 "%s, sm %s, %s SMs, %.0f MiB; SM clock %.0f MHz (max %.0f, application %.0f), "
				 "memory clock %.0f MHz (max %.0f); power limit %.0f W; %.0f C, %s; ECC %s, "
				 "persistence %s, MIG %s; bus %s",
				 ctq_rep_jstr(g, "name"), ctq_rep_jstr(g, "compute_capability"), sms,
				 ctq_rep_jnum(g, "memory_total_mib"), ctq_rep_jnum(g, "clock_sm_mhz"),
				 ctq_rep_jnum(g, "clock_sm_max_mhz"), ctq_rep_jnum(g, "clock_sm_application_mhz"),
				 ctq_rep_jnum(g, "clock_mem_mhz"), ctq_rep_jnum(g, "clock_mem_max_mhz"),
				 ctq_rep_jnum(g, "power_limit_w"), ctq_rep_jnum(g, "temperature_c"), ctq_rep_jstr(g, "pstate"),
				 ctq_rep_jstr(g, "ecc"), ctq_rep_jstr(g, "persistence_mode"), ctq_rep_jstr(g, "mig_mode"),
				 ctq_rep_jstr(g, "pci_bus_id"));
			kv(r, mdb, hb, k, buf);
		}
	} else {
		kv(r, mdb, hb, "GPUs", cJSON_IsString(gpus) ? gpus->valuestring : "not recorded");
	}
	const cJSON *plan = ctq_json_get(m, "plan");
	if (plan) {
		snprintf(buf, sizeof buf, "%s (%s, sha256 %.16s...)", ctq_rep_jstr(plan, "name"),
			 ctq_rep_jstr(plan, "file"), ctq_rep_jstr(plan, "sha256"));
		kv(r, mdb, hb, "plan", buf);
	}
	const cJSON *seeds = ctq_json_get(m, "seeds");
	if (cJSON_IsObject(seeds) && seeds->child) {
		struct ctq_strbuf s;
		ctq_strbuf_init(&s);
		for (const cJSON *e = seeds->child; e; e = e->next)
			if (cJSON_IsString(e))
				ctq_strbuf_printf(&s, "%s%s %s", s.len ? "; " : "", e->string, e->valuestring);
		kv(r, mdb, hb, "seeds", ctq_strbuf_str(&s));
		ctq_strbuf_free(&s);
	}
	const char *argv0 = NULL;
	struct ctq_strbuf cl;
	ctq_strbuf_init(&cl);
	/* The bench families record their argv from the family name on. */
	const char *cmd = ctq_json_str_at(m, "command", "");
	const char *lead = !strncmp(cmd, "bench-", 6) ? "ctq bench " : "ctq ";
	const cJSON *a;
	cJSON_ArrayForEach(a, ctq_json_get(m, "argv"))
	{
		if (cJSON_IsString(a))
			ctq_strbuf_printf(&cl, "%s%s", cl.len ? " " : lead, a->valuestring);
		argv0 = "";
	}
	if (argv0)
		kv(r, mdb, hb, "command", ctq_strbuf_str(&cl));
	ctq_strbuf_free(&cl);
	ctq_strbuf_append(mdb, "\n");
	ctq_strbuf_append(hb, "</table>\n");
}

static void provenance(struct ctq_rep *r)
{
	const cJSON *cks = ctq_json_get(r->m, "checkpoints"), *c;
	if (!cJSON_IsArray(cks) || !cJSON_GetArraySize(cks))
		return;
	ctq_rep_heading(r, 2, "Checkpoints");
	static const char *const cols[] = {"path", "used by", "quantization", "quantization_config sha256",
					   "tensor files (sha256)", NULL};
	ctq_rep_table_head(r, cols);
	cJSON_ArrayForEach(c, cks)
	{
		struct ctq_strbuf files, users;
		ctq_strbuf_init(&files);
		ctq_strbuf_init(&users);
		const cJSON *f, *u;
		cJSON_ArrayForEach(f, ctq_json_get(c, "files"))
			ctq_strbuf_printf(&files, "%s%s %.0f B %.16s...", files.len ? "; " : "",
					  ctq_rep_jstr(f, "name"), ctq_rep_jnum(f, "bytes"), ctq_rep_jstr(f, "sha256"));
		cJSON_ArrayForEach(u, ctq_json_get(c, "used_by"))
			if (cJSON_IsString(u))
				ctq_strbuf_printf(&users, "%s%s", users.len ? ", " : "", u->valuestring);
		ctq_rep_row_begin(r);
		ctq_rep_cell(r, ctq_rep_jstr(c, "path"), NULL);
		ctq_rep_cell(r, ctq_strbuf_str(&users), NULL);
		ctq_rep_cell(r, ctq_rep_jstr(c, "quant_method"), NULL);
		ctq_rep_cell(r, ctq_rep_jstr(c, "quantization_config_sha256"), "mono");
		ctq_rep_cell(r, ctq_strbuf_str(&files), "mono");
		ctq_rep_row_end(r);
		ctq_strbuf_free(&files);
		ctq_strbuf_free(&users);
	}
	ctq_rep_table_end(r);
	const cJSON *err = ctq_json_get(r->m, "checkpoint_errors");
	if (cJSON_IsArray(err))
		cJSON_ArrayForEach(c, err) if (cJSON_IsString(c)) ctq_rep_para(r, c->valuestring);
}

/* The step table; returns the verdict ("PASS"/"FAIL") or NULL without steps. */
static const char *steps(struct ctq_rep *r, struct ctq_strbuf *mdb, struct ctq_strbuf *hb,
			 size_t counts[4])
{
	const cJSON *st = ctq_json_get(r->m, "steps"), *s;
	if (!cJSON_IsArray(st))
		return NULL;
	memset(counts, 0, 4 * sizeof *counts);
	ctq_strbuf_append(mdb, "## Verdicts\n\n| step | command | status | reason | wall s |\n|---|---|---|---|---:|\n");
	ctq_strbuf_append(hb, "<h2>Verdicts</h2>\n<table><tr><th>step</th><th>command</th><th>status</th>"
			      "<th>reason</th><th>wall s</th></tr>\n");
	cJSON_ArrayForEach(s, st)
	{
		const char *status = ctq_rep_jstr(s, "status");
		static const char *const names[4] = {"passed", "failed", "skipped", "error"};
		for (int k = 0; k < 4; k++)
			counts[k] += !strcmp(status, names[k]);
		char cmd[512] = "ctq";
		const cJSON *av = ctq_json_get(s, "argv"), *a;
		size_t len = 3;
		cJSON_ArrayForEach(a, av)
		{
			if (cJSON_IsString(a) && len + strlen(a->valuestring) + 2 < sizeof cmd)
				len += (size_t)snprintf(cmd + len, sizeof cmd - len, "%s%s", len ? " " : "",
							a->valuestring);
		}
		const char *reason = ctq_json_str_at(s, "reason", "");
		double wall = ctq_rep_jnum(s, "wall_time_s");
		ctq_strbuf_append(mdb, "| ");
		ctq_rep_md(mdb, ctq_rep_jstr(s, "id"));
		ctq_strbuf_append(mdb, " | `");
		ctq_rep_md(mdb, cmd);
		ctq_strbuf_printf(mdb, "` | %s%s%s | ", strcmp(status, "passed") ? "**" : "", status,
				  strcmp(status, "passed") ? "**" : "");
		ctq_rep_md(mdb, reason);
		ctq_strbuf_printf(mdb, " | %.2f |\n", wall);
		ctq_strbuf_append(hb, "<tr><td>");
		ctq_rep_h(hb, ctq_rep_jstr(s, "id"));
		ctq_strbuf_append(hb, "</td><td class=\"mono\">");
		ctq_rep_h(hb, cmd);
		ctq_strbuf_printf(hb, "</td><td class=\"st %s\">%s</td><td>", status, status);
		ctq_rep_h(hb, reason);
		ctq_strbuf_printf(hb, "</td><td class=\"num\">%.2f</td></tr>\n", wall);
	}
	ctq_strbuf_append(mdb, "\n");
	ctq_strbuf_append(hb, "</table>\n");
	return counts[1] || counts[3] ? "FAIL" : "PASS";
}

/* A single command's run: the backend it ran on, where its manifest names
 * one. "reference (CPU)" and "reference" are the CPU; anything else (a CUDA
 * device, a kernel plug-in) is not. */
static const char *const device_keys[] = {"eval.device", "bench_model.device", "bench_serve.device",
					  "bench_gemm.device", "probe.device", "probe.backend"};

bool ctq_report_cpu_only(const cJSON *manifest)
{
	const cJSON *st = ctq_json_get(manifest, "steps"), *s;
	if (cJSON_IsArray(st)) {
		cJSON_ArrayForEach(s, st)
		{
			const char *needs = ctq_json_str_at(s, "needs", ""),
				   *status = ctq_json_str_at(s, "status", "");
			if (!strcmp(needs, "gpu") && strcmp(status, "skipped") != 0)
				return false;
		}
		return true;
	}
	/* No steps: CPU only when some backend is named, every one named is
	 * the reference, and no GPU kernel path was dispatched. */
	const cJSON *kp = ctq_json_get(manifest, "kernel_paths");
	if (cJSON_IsObject(kp) && kp->child)
		return false;
	bool cpu = false;
	for (size_t i = 0; i < sizeof device_keys / sizeof *device_keys; i++) {
		const char *dev = ctq_json_str_at(manifest, device_keys[i], NULL);
		if (!dev)
			continue;
		if (strncmp(dev, "reference", 9) != 0)
			return false;
		cpu = true;
	}
	return cpu;
}

/* Above the fold: the skipped steps, each with its reason, so a reader
 * sees what was not run before the tables. */
static void skipped_summary(const cJSON *m, struct ctq_strbuf *md, struct ctq_strbuf *hb)
{
	const cJSON *st = ctq_json_get(m, "steps"), *s;
	size_t n = 0;
	cJSON_ArrayForEach(s, st) n += !strcmp(ctq_json_str_at(s, "status", ""), "skipped");
	if (!n)
		return;
	ctq_strbuf_printf(md, "**Skipped: %zu step(s)**\n\n", n);
	ctq_strbuf_printf(hb, "<div class=\"skips\"><b>Skipped: %zu step(s)</b><ul>\n", n);
	cJSON_ArrayForEach(s, st)
	{
		if (strcmp(ctq_json_str_at(s, "status", ""), "skipped") != 0)
			continue;
		const char *id = ctq_json_str_at(s, "id", "?"), *reason = ctq_json_str_at(s, "reason", "");
		ctq_strbuf_append(md, "- ");
		ctq_rep_md(md, id);
		ctq_strbuf_append(md, *reason ? ": " : "");
		ctq_rep_md(md, reason);
		ctq_strbuf_append(md, "\n");
		ctq_strbuf_append(hb, "<li><b>");
		ctq_rep_h(hb, id);
		ctq_strbuf_append(hb, "</b>");
		ctq_strbuf_append(hb, *reason ? ": " : "");
		ctq_rep_h(hb, reason);
		ctq_strbuf_append(hb, "</li>\n");
	}
	ctq_strbuf_append(md, "\n");
	ctq_strbuf_append(hb, "</ul></div>\n");
}

/* Tails of the logs of steps that did not pass. */
static void failed_logs(struct ctq_rep *r)
{
	const cJSON *st = ctq_json_get(r->m, "steps"), *s;
	cJSON_ArrayForEach(s, st)
	{
		const char *status = ctq_rep_jstr(s, "status"), *log = ctq_json_str_at(s, "log", NULL);
		if ((strcmp(status, "failed") && strcmp(status, "error")) || !log)
			continue;
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", r->dir, log);
		char *text = NULL;
		const char *tail;
		if (ctq_file_read_tail(path, (size_t)16 << 20, 3000, &text, &tail, NULL))
			continue;
		char title[300];
		snprintf(title, sizeof title, "Log of step %s (%s, last lines)", ctq_rep_jstr(s, "id"), log);
		ctq_rep_heading(r, 3, title);
		ctq_strbuf_append(&r->md, "```\n");
		ctq_strbuf_append(&r->md, tail);
		ctq_strbuf_append(&r->md, "\n```\n\n");
		ctq_strbuf_append(&r->html, "<pre>");
		ctq_rep_h(&r->html, tail);
		ctq_strbuf_append(&r->html, "</pre>\n");
		free(text);
	}
}

static const char css[] =
	"body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px auto;"
	"max-width:1150px;color:#222;line-height:1.4;padding:0 16px}"
	"h1{margin-bottom:4px}h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:32px}"
	"h3{margin-top:22px;font-size:1.05em}"
	"table{border-collapse:collapse;margin:8px 0 12px;font-size:13px}"
	"th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}"
	"th{background:#f3f3f3}table.kv th{width:150px}"
	"td.num{text-align:right;font-variant-numeric:tabular-nums}"
	"td.bad{color:#b00020;font-weight:bold}td.warn{color:#a65f00}"
	"td.mono,.mono{font-family:monospace;font-size:12px;word-break:break-all}"
	"td.st{font-weight:bold}td.passed{color:#087f23}td.failed,td.error{color:#b00020}"
	"td.skipped{color:#777}td.strong{font-weight:bold}"
	".verdict{display:inline-block;padding:6px 18px;border-radius:6px;color:#fff;font-size:22px;"
	"font-weight:bold;margin:8px 0}.PASS{background:#087f23}.FAIL{background:#b00020}"
	".CPUONLY{background:#607080}.cpu-only{margin:2px 0 8px;color:#445}"
	".skips{border-left:4px solid #999;background:#f6f6f6;padding:4px 10px;margin:8px 0;font-size:13px}"
	".skips ul{margin:2px 0;padding-left:20px}"
	".dim{color:#777;font-size:12px}figure{margin:10px 0}img{max-width:100%;border:1px solid #eee}"
	"figcaption{font-size:12px;color:#555}pre{background:#f6f6f6;padding:8px;font-size:12px;"
	"overflow-x:auto;white-space:pre-wrap}";

static enum ctq_status sections(struct ctq_rep *r)
{
	enum ctq_status st = CTQ_OK;
	const struct ctq_family_def *order[CTQ_FAM_COUNT];
	size_t n = ctq_families_ordered(order, CTQ_FAM_ORDER_REPORT);
	for (size_t k = 0; k < n && !st; k++) {
		const struct ctq_family_def *d = order[k];
		bool any = false;
		for (size_t i = 0; i < r->res.n && !st; i++) {
			const struct ctq_result_file *f = &r->res.v[i];
			if (f->fam != (int)d->id)
				continue;
			if (!any)
				ctq_rep_heading(r, 2, d->report_title);
			any = true;
			st = d->report(r, f);
		}
		if (!st && any && d->report_end)
			st = d->report_end(r);
	}
	return st;
}

enum ctq_status ctq_report_write(const char *run_dir, const char *display,
				 struct ctq_report_summary *s, struct ctq_error *err)
{
	struct ctq_rep r;
	memset(&r, 0, sizeof r);
	memset(s, 0, sizeof *s);
	r.dir = run_dir;
	r.display = display ? display : run_dir;
	r.err = err;
	ctq_strbuf_init(&r.md);
	ctq_strbuf_init(&r.html);
	struct ctq_strbuf top_md, top_html, top_html_skips;
	ctq_strbuf_init(&top_md);
	ctq_strbuf_init(&top_html);
	ctq_strbuf_init(&top_html_skips);
	char final_plots[1200];
	snprintf(final_plots, sizeof final_plots, "%s/plots", run_dir);
	enum ctq_status st;
	if ((st = ctq_results_find(&r.res, run_dir, ctq_family_by_file, err)) ||
	    (st = ctq_results_manifest(run_dir, &r.m, err)))
		goto done;
	ctq_plot_init(&r.plot);
	if (r.plot.available &&
	    (st = ctq_tmpdir_beside(final_plots, r.plots, sizeof r.plots, err)))
		goto done;
	if (!r.plot.available)
		snprintf(r.plot_note, sizeof r.plot_note, "no plots: %s", r.plot.why);

	if ((st = sections(&r)))
		goto done;
	provenance(&r);
	failed_logs(&r);

	size_t counts[4];
	struct ctq_strbuf smd, shtml;
	ctq_strbuf_init(&smd);
	ctq_strbuf_init(&shtml);
	const char *verdict = steps(&r, &smd, &shtml, counts);
	if (!verdict)
		verdict = r.checks_failed || r.probes_failed || r.gates_failed || r.serve_errors || r.gemm_failed
				  ? "FAIL"
				  : "PASS";
	bool cpu_only = ctq_report_cpu_only(r.m);
	snprintf(s->verdict, sizeof s->verdict, "%s%s", verdict, cpu_only ? " (" CTQ_REPORT_CPU_ONLY ")" : "");
	/* A pass of the CPU reference alone does not wear a GPU qualification's
	 * green: its own badge, and a line saying what was not qualified. */
	const char *badge = cpu_only && !strcmp(verdict, "PASS") ? "CPUONLY" : verdict;
	const char *cpu_line = !cpu_only ? NULL
			       : cJSON_IsArray(ctq_json_get(r.m, "steps"))
				       ? "No GPU code was qualified: every step that needs a GPU was skipped "
					 "or none needs one; this verdict covers the CPU reference only."
				       : "No GPU code was qualified: this run used the CPU reference backend "
					 "only.";
	const char *title = ctq_json_str_at(r.m, "plan.name", NULL);
	char headline[600];
	if (cJSON_IsArray(ctq_json_get(r.m, "steps")))
		snprintf(headline, sizeof headline, "%zu step(s): %zu passed, %zu failed, %zu error, %zu skipped",
			 counts[0] + counts[1] + counts[2] + counts[3], counts[0], counts[1], counts[3],
			 counts[2]);
	else if (r.gates)
		snprintf(headline, sizeof headline,
			 "%zu failed conformance check(s), %zu failed probe(s), %zu of %zu accuracy gate(s) "
			 "failed",
			 r.checks_failed, r.probes_failed, r.gates_failed, r.gates);
	else
		snprintf(headline, sizeof headline, "%zu failed conformance check(s), %zu failed probe(s)",
			 r.checks_failed, r.probes_failed);
	const cJSON *gpus = ctq_json_get(r.m, "gpus");
	char hw[400];
	if (cJSON_IsArray(gpus) && cJSON_GetArraySize(gpus) > 0)
		snprintf(hw, sizeof hw, "%d x %s", cJSON_GetArraySize(gpus),
			 ctq_rep_jstr(cJSON_GetArrayItem(gpus, 0), "name"));
	else {
		/* A single command's manifest names the device it ran on. */
		const char *dev = NULL;
		for (size_t i = 0; !dev && i + 1 < sizeof device_keys / sizeof *device_keys; i++)
			dev = ctq_json_str_at(r.m, device_keys[i], NULL);
		snprintf(hw, sizeof hw, "%s", dev ? dev : "no GPU (CPU reference only)");
	}
	ctq_strbuf_printf(&top_md, "# ctq qualification report%s%s\n\n**Verdict: %s** — %s.\n\n"
				   "Hardware: %s. Run directory: `%s`.%s%s\n\n",
			  title ? ": " : "", title ? title : "", s->verdict, headline, hw, r.display,
			  r.plot_note[0] ? " " : "", r.plot_note);
	if (cpu_line)
		ctq_strbuf_printf(&top_md, "%s\n\n", cpu_line);
	skipped_summary(r.m, &top_md, &top_html_skips);
	ctq_strbuf_append(&top_html, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
				     "<title>ctq report");
	if (title) {
		ctq_strbuf_append(&top_html, ": ");
		ctq_rep_h(&top_html, title);
	}
	ctq_strbuf_printf(&top_html, "</title><style>%s</style></head><body>\n<h1>ctq qualification report",
			  css);
	if (title) {
		ctq_strbuf_append(&top_html, ": ");
		ctq_rep_h(&top_html, title);
	}
	ctq_strbuf_printf(&top_html, "</h1>\n<div class=\"verdict %s\">%s</div> <span>", badge, s->verdict);
	ctq_rep_h(&top_html, headline);
	ctq_strbuf_append(&top_html, "</span>\n<p class=\"dim\">Hardware: ");
	ctq_rep_h(&top_html, hw);
	ctq_strbuf_append(&top_html, ". Run directory: ");
	ctq_rep_h(&top_html, r.display);
	ctq_strbuf_append(&top_html, ". Generated by ctq report.");
	if (r.plot_note[0]) {
		ctq_strbuf_append(&top_html, " ");
		ctq_rep_h(&top_html, r.plot_note);
	}
	ctq_strbuf_append(&top_html, "</p>\n");
	if (cpu_line)
		ctq_strbuf_printf(&top_html, "<p class=\"cpu-only\">%s</p>\n", cpu_line);
	ctq_strbuf_append(&top_html, ctq_strbuf_str(&top_html_skips));
	environment(&r, &top_md, &top_html);
	ctq_strbuf_append(&top_md, smd.data ? smd.data : "");
	ctq_strbuf_append(&top_html, shtml.data ? shtml.data : "");
	ctq_strbuf_free(&smd);
	ctq_strbuf_free(&shtml);
	ctq_strbuf_append(&top_md, ctq_strbuf_str(&r.md));
	ctq_strbuf_append(&top_html, ctq_strbuf_str(&r.html));
	if (!r.res.n) {
		ctq_strbuf_append(&top_md, "No result files (conform.csv, probe.csv, bench_model.csv, "
					   "bench_gemm.csv, eval_questions.csv) in this run.\n");
		ctq_strbuf_append(&top_html, "<p>No result files in this run.</p>\n");
	}
	ctq_strbuf_append(&top_html, "</body></html>\n");
	if (top_md.oom || top_html.oom || top_html_skips.oom || r.md.oom || r.html.oom) {
		st = ctq_error_set(err, CTQ_ERR_NOMEM, run_dir, "out of memory");
		goto done;
	}
	char path[1300];
	snprintf(path, sizeof path, "%s/summary.md", run_dir);
	if ((st = ctq_file_write_atomic(path, top_md.data, top_md.len, err)))
		goto done;
	snprintf(path, sizeof path, "%s/report.html", run_dir);
	if ((st = ctq_file_write_atomic(path, top_html.data, top_html.len, err)))
		goto done;
	if (r.plot.available) {
		if ((st = ctq_tmpdir_commit(r.plots, final_plots, true, err)))
			goto done;
		r.plots[0] = '\0';
	} else {
		/* Plots of an earlier report would no longer match this one. */
		ctq_remove_tree(final_plots);
	}
	s->n_plots = r.n_plots;
	snprintf(s->plot_note, sizeof s->plot_note, "%s", r.plot_note);
done:
	if (r.plots[0])
		ctq_remove_tree(r.plots);
	ctq_strbuf_free(&r.md);
	ctq_strbuf_free(&r.html);
	ctq_strbuf_free(&top_md);
	ctq_strbuf_free(&top_html);
	ctq_strbuf_free(&top_html_skips);
	ctq_results_free(&r.res);
	free(r.perf);
	cJSON_Delete(r.m);
	return st;
}

/* ---- trends --------------------------------------------------------------------------- */

enum ctq_status ctq_report_trend_plots(const struct ctq_trend *t, const char *plots_dir,
				       size_t *n, struct ctq_error *err)
{
	*n = 0;
	struct ctq_plotter p;
	ctq_plot_init(&p);
	if (!p.available)
		return CTQ_OK;
	enum ctq_status st = ctq_mkdirs(plots_dir, err);
	const struct ctq_family_def *fams[CTQ_FAM_COUNT];
	size_t nf = ctq_families_ordered(fams, CTQ_FAM_ORDER_TREND_PLOT);
	for (size_t k = 0; k < nf && !st; k++) {
		const struct ctq_fam_trend_plot *tp = fams[k]->trend_plot;
		struct ctq_strbuf data, body;
		ctq_strbuf_init(&data);
		ctq_strbuf_init(&body);
		size_t ns = 0;
		ctq_strbuf_printf(&body,
				  "set title \"%s\"\nset ylabel \"%s\"\n"
				  "set key outside bottom center horizontal font \",8\"\n"
				  "set xtics (",
				  tp->title, tp->ylabel);
		for (size_t r = 0; r < t->n_runs; r++) {
			ctq_strbuf_printf(&body, "%s", r ? ", " : "");
			ctq_plot_quoted(&body, t->labels[r]);
			ctq_strbuf_printf(&body, " %zu", r + 1);
		}
		ctq_strbuf_printf(&body, ") rotate by -20 font \",8\"\nset xrange [0.5:%zu.5]\n%s", t->n_runs,
				  tp->logy ? "set logscale y\n" : "");
		ctq_strbuf_append(&body, "plot ");
		for (size_t i = 0; i < t->n; i++) {
			const struct ctq_trend_series *s = &t->s[i];
			if (s->fam != (int)fams[k]->id ||
			    (tp->unplotted && !strcmp(s->metric, tp->unplotted)))
				continue;
			ctq_strbuf_printf(&data, "# %s | %s | %s\n", s->file, s->key, s->metric);
			for (size_t r = 0; r < t->n_runs; r++) {
				double v = s->v[r];
				if (tp->logy && v <= 0)
					v = CTQ_REP_LOG_FLOOR;
				ctq_strbuf_printf(&data, "%zu %.9g\n", r + 1, v);
			}
			ctq_strbuf_append(&data, "\n\n");
			char title[600];
			snprintf(title, sizeof title, "%s %s %s", s->file, s->key, s->metric);
			for (char *c = title; *c; c++)
				if (*c == '"')
					*c = '\'';
			ctq_strbuf_printf(
				&body, "%s\"%s.dat\" index %zu using 1:2 with linespoints pt 7 title \"%s\"",
				ns ? ", " : "", tp->name, ns, title);
			ns++;
		}
		ctq_strbuf_append(&body, "\n");
		if (ns && !data.oom && !body.oom) {
			st = ctq_plot_render(&p, plots_dir, tp->name, 1000, 560, body.data, data.data, err);
			if (!st)
				(*n)++;
		}
		ctq_strbuf_free(&data);
		ctq_strbuf_free(&body);
	}
	return st;
}
