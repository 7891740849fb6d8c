/* bench serve --url against a mock OpenAI server on loopback
 * (tests/mock_openai.h): the TTFT / ITL / TPOT / E2EL arithmetic against
 * the delays the mock plants (50 ms to the first token, 10 ms between
 * tokens), the request body's fields, the workload's prompts, and each way
 * a request fails — HTTP 500 with error JSON, an error event, a stream
 * dropped without [DONE], a server that stalls past the request's limit,
 * fewer tokens than asked, a refused connection, the overall limit —
 * as the right rows of bench_serve.csv with the client ending in bounded
 * time. Timing bounds are tolerant (a shared 2-core machine) but each can
 * fail: a TTFT that ignored the first delay or counted the usage chunk,
 * an ITL that pooled the wrong gaps, a latency to [DONE] instead of the
 * last token. */
#include <criterion/criterion.h>
#include <math.h>

#include "bench/serve_http.h"
#include "core/json.h"
#include "core/time.h"
#include "harness/commands.h"
#include "results/files.h"
#include "results/table.h"
#include "tests/command.h"
#include "tests/mock_openai.h"

#define TOKENIZER "tests/fixtures/tokenizers/gpt2-small"

static struct mock_openai mock;

static void start(void)
{
	cr_assert_eq(mock_openai_start(&mock, 50, 10), 0, "the mock server did not start");
}

static void stop(void)
{
	mock_openai_stop(&mock);
}

static void url_of(char *buf, size_t cap, const char *mode)
{
	snprintf(buf, cap, "http://127.0.0.1:%d/%s/v1", mock.port, mode);
}

/* Runs the engine against one mode with profile vllm (token ids and
 * ignore_eos, which the vLLM-like modes check); s is left for the test to
 * read. */
static void run_mode(struct ctq_bench_http *s, const char *mode, long requests, long conc, long out_len,
		     double req_timeout, double total_timeout, double rate)
{
	static char url[128];
	url_of(url, sizeof url, mode);
	struct ctq_bench_http_options o = {.url = url, .model = "mock-model", .tokenizer = TOKENIZER,
					   .requests = requests, .concurrency = conc, .input_len = 16,
					   .output_len = out_len, .seed = 7, .rate = rate,
					   .profile = CTQ_PROFILE_VLLM, .request_timeout_s = req_timeout,
					   .total_timeout_s = total_timeout};
	struct ctq_error err = {0};
	cr_assert_eq(ctq_bench_http_open(s, &o, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_bench_http_run(s, &err), CTQ_OK, "%s", err.message);
}

Test(bench_http, normal_stream_timings, .init = start, .fini = stop, .timeout = 30)
{
	struct ctq_bench_http s;
	const long N = 4, OUT = 8;
	run_mode(&s, "normal", N, 2, OUT, 10, 0, 0);
	cr_expect_eq(s.completed, N, "%ld of %ld served; request 0: %s", s.completed, N, s.q[0].reason);
	cr_expect_eq(mock.bad_bodies, 0, "the client sent a body without a required field: %s",
		     mock.first_body);
	for (long i = 0; i < N; i++) {
		const struct ctq_bench_http_req *x = &s.q[i];
		cr_expect_eq(x->output_tokens, OUT, "request %ld: %lld output tokens", i,
			     (long long)x->output_tokens);
		cr_expect_eq(x->chunks, OUT);
		const double ttft = (x->first - x->sent) * 1e3, e2el = (x->last - x->sent) * 1e3;
		const double tpot = (x->last - x->first) * 1e3 / (double)(OUT - 1);
		/* planted: 50 ms, then 7 gaps of 10 ms (plus 1 ms for each split event) */
		cr_expect(ttft >= 48 && ttft < 250, "request %ld: TTFT %.2f ms, planted 50", i, ttft);
		cr_expect(tpot >= 9 && tpot < 60, "request %ld: TPOT %.2f ms, planted 10", i, tpot);
		cr_expect(e2el >= 48 + 7 * 9 && e2el < 700, "request %ld: E2EL %.2f ms, planted 120", i, e2el);
		cr_expect_eq(x->n_itl, (size_t)(OUT - 1), "request %ld: %zu ITL gaps", i, x->n_itl);
		/* The mock sleeps 10 ms before each event, but a gap is timed where the
		 * client reads: an event read d ms late shortens the next gap by d
		 * (a gap of 8.1 ms on a loaded 2-core CI machine). So a floor of 5 ms
		 * per gap (the events are not coalesced), and the planted 10 ms on the
		 * mean (TPOT above) and the median (below), which one late read
		 * cannot move much. */
		for (size_t j = 0; j < x->n_itl; j++)
			cr_expect(x->itl[j] * 1e3 >= 5 && x->itl[j] * 1e3 < 100, "request %ld gap %zu: %.2f ms",
				  i, j, x->itl[j] * 1e3);
	}
	const struct ctq_bench_serve_dist *itl = &s.dist[CTQ_HSERVE_ITL], *tt = &s.dist[CTQ_HSERVE_TTFT];
	cr_expect(itl->p50 >= 9 && itl->p50 < 40, "median ITL %.2f ms, planted 10", itl->p50);
	cr_expect(tt->p50 >= 48 && tt->p50 < 200, "median TTFT %.2f ms, planted 50", tt->p50);
	cr_expect(s.dist[CTQ_HSERVE_QUEUE].p99 < 1e-6, "closed loop: no client queue");
	/* 4 requests, 2 at a time, about 130 ms each: about 0.26 s in all. */
	cr_expect(s.wall_s > 0.2 && s.wall_s < 3, "duration %.3f s", s.wall_s);
	cr_expect_eq(s.output_tokens, N * OUT);
	/* The prompt is the workload's ids, sent as a token-id array. */
	int32_t ids[16];
	ctq_bench_serve_workload(ids, NULL, 1, 16, 0, 7, s.vocab);
	char want[256];
	int len = snprintf(want, sizeof want, "\"prompt\":[");
	for (int t = 0; t < 16; t++)
		len += snprintf(want + len, sizeof want - (size_t)len, t ? ",%d" : "%d", ids[t]);
	cr_expect(strstr(mock.first_body, want) || strstr(s.q[1].body.data, want) ||
			  strstr(s.q[0].body.data, want),
		  "no request carries the workload's first prompt %s", want);
	cr_expect(strstr(s.q[0].body.data, want), "request 0's body: %s", s.q[0].body.data);
	cr_expect(strstr(s.q[0].body.data, "\"max_tokens\":8"));
	cr_expect(strstr(s.q[0].body.data, "\"temperature\":0"));
	ctq_bench_http_free(&s);
}

Test(bench_http, usage_missing_counts_the_text, .init = start, .fini = stop, .timeout = 30)
{
	struct ctq_bench_http s;
	run_mode(&s, "nousage", 2, 2, 5, 10, 0, 0);
	cr_expect_eq(s.completed, 2, "request 0: %s", s.q[0].reason);
	int32_t *ids = NULL;
	size_t n = 0;
	cr_assert_eq(ctq_tokenizer_encode(&s.tok, " a a a a a", 10, false, &ids, &n, NULL), CTQ_OK);
	cr_expect_eq(s.q[0].usage_tokens, -1);
	cr_expect_eq(s.q[0].output_tokens, (int64_t)n, "%lld tokens from the text, encode says %zu",
		     (long long)s.q[0].output_tokens, n);
	free(ids);
	ctq_bench_http_free(&s);
}

struct fail_case {
	const char *mode;
	double req_timeout, max_wall;
	const char *reason; /* a piece of the reason */
};

Test(bench_http, failures_are_rows_not_hangs, .init = start, .fini = stop, .timeout = 60)
{
	const struct fail_case cases[] = {
		{"http500", 10, 3, "mock failure"},
		{"errevent", 10, 3, "boom"},
		{"drop", 10, 3, ""},
		{"stall", 1, 4, "imeout"},
		{"short", 10, 3, "6 tokens generated of the 8 asked"},
		{"nosuchmode", 10, 3, "no such route"},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		struct ctq_bench_http s;
		double t = ctq_now_s();
		run_mode(&s, cases[c].mode, 3, 3, 8, cases[c].req_timeout, 0, 0);
		t = ctq_now_s() - t;
		cr_expect_eq(s.completed, 0, "%s: %ld served", cases[c].mode, s.completed);
		cr_expect_eq(s.failed, 3, "%s: %ld failed", cases[c].mode, s.failed);
		cr_expect(t < cases[c].max_wall, "%s: the client took %.2f s", cases[c].mode, t);
		for (int i = 0; i < 3; i++) {
			cr_expect_eq(s.q[i].state, CTQ_HREQ_FAILED);
			cr_expect(s.q[i].reason[0] && strstr(s.q[i].reason, cases[c].reason),
				  "%s: reason \"%s\" lacks \"%s\"", cases[c].mode, s.q[i].reason, cases[c].reason);
		}
		ctq_bench_http_free(&s);
	}
	/* The drop reason says the stream ended early (curl's or the client's words). */
	struct ctq_bench_http s;
	run_mode(&s, "drop", 1, 1, 8, 10, 0, 0);
	cr_expect(strstr(s.q[0].reason, "[DONE]") || strstr(s.q[0].reason, "ransfer") ||
			  strstr(s.q[0].reason, "closed") || strstr(s.q[0].reason, "ecv"),
		  "drop: reason \"%s\"", s.q[0].reason);
	cr_expect_eq(s.q[0].chunks, 3, "drop: %ld chunks before the close", s.q[0].chunks);
	ctq_bench_http_free(&s);
}

/* A request is served only when the server says it finished. Cut short
 * with [DONE] and no finish_reason (llama-cpp-python's server when another
 * request waits: 15 of 16 such were once counted served), or closed cleanly
 * without one, it fails with its reason; closed cleanly after a
 * finish_reason without [DONE] (transformers serve) it is served; empty
 * events, comments, other fields and mixed line ends change nothing. */
struct finish_case {
	const char *mode;
	bool served;
	const char *reason[2]; /* pieces of a failed request's reason */
	long chunks;
};

Test(bench_http, served_only_when_finished, .init = start, .fini = stop, .timeout = 60)
{
	const long N = 4, OUT = 6;
	const struct finish_case cases[] = {
		{"earlydone", false, {"data: [DONE]", "no finish_reason"}, 1},
		{"cut", false, {"closed", "no finish_reason"}, 3},
		{"nodone", true, {0}, OUT},
		{"keepalive", true, {0}, OUT},
		{"normal", true, {0}, OUT},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct finish_case *k = &cases[c];
		struct ctq_bench_http s;
		run_mode(&s, k->mode, N, N, OUT, 10, 0, 0);
		cr_expect_eq(s.completed, k->served ? N : 0, "%s: %ld of %ld served; request 0: %s", k->mode,
			     s.completed, N, s.q[0].reason);
		cr_expect_eq(s.failed, k->served ? 0 : N, "%s: %ld failed", k->mode, s.failed);
		cr_expect_eq(s.refused, 0, "%s: a 200 answer cut short is no refusal", k->mode);
		for (long i = 0; i < N; i++) {
			const struct ctq_bench_http_req *x = &s.q[i];
			cr_expect_eq(x->chunks, k->chunks, "%s request %ld: %ld chunks", k->mode, i,
				     x->chunks);
			if (k->served) {
				cr_expect_eq(x->output_tokens, OUT, "%s request %ld: %lld tokens", k->mode, i,
					     (long long)x->output_tokens);
				continue;
			}
			for (int r = 0; r < 2; r++)
				cr_expect(strstr(x->reason, k->reason[r]),
					  "%s request %ld: reason \"%s\" lacks \"%s\"", k->mode, i, x->reason,
					  k->reason[r]);
		}
		ctq_bench_http_free(&s);
	}
}

Test(bench_http, refused_connection, .timeout = 30)
{
	int port = mock_closed_port();
	cr_assert(port > 0);
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
	struct ctq_bench_http_options o = {.url = url, .model = "m", .tokenizer = TOKENIZER, .requests = 5,
					   .concurrency = 2, .input_len = 4, .output_len = 4, .seed = 1,
					   .profile = CTQ_PROFILE_VLLM, .request_timeout_s = 5};
	struct ctq_bench_http s;
	struct ctq_error err = {0};
	double t = ctq_now_s();
	cr_assert_eq(ctq_bench_http_open(&s, &o, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_bench_http_run(&s, &err), CTQ_OK, "%s", err.message);
	cr_expect(ctq_now_s() - t < 5);
	cr_expect_eq(s.failed, 5);
	cr_expect_eq(s.refused, 5, "a refused connection is a refusal");
	cr_expect(strstr(s.q[4].reason, "onnect"), "reason: %s", s.q[4].reason);
	ctq_bench_http_free(&s);
	/* Without --model the name comes from GET /v1/models: a refused
	 * connection there is an env error (exit 3) naming the URL. */
	o.model = NULL;
	cr_expect_eq(ctq_bench_http_open(&s, &o, &err), CTQ_ERR_ENV);
	cr_expect(strstr(err.path, "/v1/models"), "path %s", err.path);
	ctq_bench_http_free(&s);
}

Test(bench_http, overall_limit_stops_the_run, .init = start, .fini = stop, .timeout = 30)
{
	struct ctq_bench_http s;
	double t = ctq_now_s();
	run_mode(&s, "stall", 4, 1, 8, 20, 0.8, 0);
	t = ctq_now_s() - t;
	cr_expect(t < 3, "the run took %.2f s past an overall limit of 0.8 s", t);
	cr_expect_eq(s.q[0].state, CTQ_HREQ_FAILED);
	cr_expect(strstr(s.q[0].reason, "overall time limit"), "%s", s.q[0].reason);
	cr_expect_eq(s.not_run, 3);
	ctq_bench_http_free(&s);
}

Test(bench_http, poisson_arrivals_and_model_lookup, .init = start, .fini = stop, .timeout = 30)
{
	static char url[128];
	url_of(url, sizeof url, "normal");
	struct ctq_bench_http_options o = {.url = url, .tokenizer = TOKENIZER, .requests = 6,
					   .concurrency = 1, .input_len = 8, .output_len = 3, .seed = 3,
					   .rate = 40, .request_timeout_s = 10};
	struct ctq_bench_http s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_bench_http_open(&s, &o, &err), CTQ_OK, "%s", err.message);
	cr_expect_str_eq(s.model, "mock-model");
	double arr[6];
	int32_t ids[48];
	ctq_bench_serve_workload(ids, arr, 6, 8, 40, 3, s.vocab);
	for (int i = 0; i < 6; i++)
		cr_expect(fabs(s.q[i].arrival - arr[i]) < 1e-12, "arrival %d", i);
	cr_assert_eq(ctq_bench_http_run(&s, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(s.completed, 6, "%s", s.q[0].reason);
	for (int i = 0; i < 6; i++) {
		cr_expect(s.q[i].sent >= s.q[i].arrival - 1e-9, "request %d sent before it arrived", i);
		if (i)
			cr_expect(s.q[i].sent >= s.q[i - 1].last, "concurrency 1: request %d overlapped", i);
	}
	/* 70 ms per request at 40/s (25 ms apart): one client makes them queue. */
	cr_expect(s.dist[CTQ_HSERVE_QUEUE].p99 > 10, "queue p99 %.2f ms", s.dist[CTQ_HSERVE_QUEUE].p99);
	ctq_bench_http_free(&s);
}

/* ---- through the command: bench_serve.csv, the manifest, the exit code ---- */

static int bench_serve(const char *url, const char *out, const char *extra)
{
	char *argv[32];
	int argc = 0;
	static char buf[1024];
	snprintf(buf, sizeof buf,
		 "bench serve --url %s --tokenizer " TOKENIZER
		 " --requests 3 --concurrency 2 --input-len 8 --output-len 4 --out %s --force %s",
		 url, out, extra);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	return ctq_cmd_bench(argc, argv);
}

static size_t csv_count(const char *run, const char *col, const char *want, char *first, size_t cap)
{
	char path[256];
	snprintf(path, sizeof path, "%s/bench_serve.csv", run);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	int c = ctq_table_col(&t, col), e = ctq_table_col(&t, "error");
	cr_assert(c >= 0 && e >= 0, "%s lacks %s or error", path, col);
	size_t n = 0;
	for (size_t i = 0; i < t.n_rows; i++)
		if (!strcmp(ctq_table_get(&t, i, c), want)) {
			if (!n && first)
				snprintf(first, cap, "%s", ctq_table_get(&t, i, e));
			n++;
		}
	ctq_table_free(&t);
	return n;
}

Test(bench_http, command_writes_the_family, .init = start, .fini = stop, .timeout = 60)
{
	char url[128], dir[64], reason[512] = "";
	snprintf(dir, sizeof dir, "/tmp/ctq-test-bench-http-%d", (int)getpid());
	url_of(url, sizeof url, "normal");
	cr_expect_eq(bench_serve(url, dir, "--model mock-model"), 0);
	cr_expect_eq(csv_count(dir, "status", "ok", NULL, 0), 3);
	char path[256];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	cJSON *m = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, &m, &err), CTQ_OK, "%s", err.message);
	const cJSON *sv = ctq_json_get(m, "bench_serve");
	cr_expect_str_eq(ctq_json_str_at(sv, "engine", ""), "http");
	cr_expect_str_eq(ctq_json_str_at(sv, "url", ""), url);
	cr_expect(cJSON_IsObject(ctq_json_get(sv, "itl_ms")));
	cr_expect(ctq_json_get(sv, "output_tokens_per_s")->valuedouble > 0);
	cJSON_Delete(m);
	/* Every request refused: the server's failure (exit 3), the rows still written. */
	url_of(url, sizeof url, "http500");
	cr_expect_eq(bench_serve(url, dir, "--model mock-model --progress --server-profile vllm"), 3);
	cr_expect_eq(csv_count(dir, "status", "error", reason, sizeof reason), 3);
	cr_expect(strstr(reason, "HTTP 500: mock failure"), "error column: %s", reason);
	/* Streams cut short: failed requests (exit 1), each reason in the error column. */
	url_of(url, sizeof url, "earlydone");
	cr_expect_eq(bench_serve(url, dir, "--model mock-model --server-profile vllm"), 1);
	cr_expect_eq(csv_count(dir, "status", "error", reason, sizeof reason), 3);
	cr_expect(strstr(reason, "no finish_reason"), "error column: %s", reason);
	url_of(url, sizeof url, "nodone");
	cr_expect_eq(bench_serve(url, dir, "--model mock-model"), 0);
	cr_expect_eq(csv_count(dir, "status", "ok", NULL, 0), 3);
	/* Options of the in-process engine are refused with --url. */
	cr_expect_eq(bench_serve(url, dir, "--backend reference"), 2);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* A manifest's bench_serve member rewritten: engine, and one number. */
static void edit_manifest(const char *dir, const char *engine, const char *key, double v)
{
	char path[256];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	cJSON *m = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, &m, &err), CTQ_OK, "%s", err.message);
	cJSON *sv = cJSON_GetObjectItemCaseSensitive(m, "bench_serve");
	cJSON_ReplaceItemInObjectCaseSensitive(sv, "engine", cJSON_CreateString(engine));
	cJSON_DeleteItemFromObjectCaseSensitive(sv, key);
	cJSON_AddNumberToObject(sv, key, v);
	char *s = cJSON_Print(m);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fputs(s, f);
	fclose(f);
	cJSON_free(s);
	cJSON_Delete(m);
}

static bool file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

static int run_argv(int (*cmd)(int, char **), const char *args)
{
	static char buf[1024];
	char *argv[16];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", args);
	for (char *t = strtok(buf, " "); t && argc < 15; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	return cmd(argc, argv);
}

/* report reads an HTTP run; compare pairs it with an in-process run of the
 * same workload (the engine's own settings set aside) and refuses to judge
 * another workload. */
Test(bench_http, report_and_compare_across_engines, .init = start, .fini = stop, .timeout = 60)
{
	char url[128], a[64], b[64], c[64], path[200], args[400];
	const int pid = (int)getpid();
	snprintf(a, sizeof a, "/tmp/ctq-test-bh-a-%d", pid);
	snprintf(b, sizeof b, "/tmp/ctq-test-bh-b-%d", pid);
	snprintf(c, sizeof c, "/tmp/ctq-test-bh-c-%d", pid);
	url_of(url, sizeof url, "normal");
	cr_assert_eq(bench_serve(url, a, "--model mock-model"), 0);
	snprintf(args, sizeof args, "report %s", a);
	cr_expect_eq(run_argv(ctq_cmd_report, args), 0);
	snprintf(path, sizeof path, "%s/summary.md", a);
	cr_expect(file_has(path, "streamed over HTTP"), "%s does not describe the HTTP run", path);
	cr_expect(file_has(path, "itl_ms"), "%s has no ITL row", path);
	snprintf(args, sizeof args, "rm -rf %s && cp -r %s %s", b, a, b);
	cr_assert_eq(system(args), 0);
	edit_manifest(b, "in-process", "max_batch", 8);
	snprintf(args, sizeof args, "compare %s %s --out %s --force --quiet", a, b, c);
	cr_expect_eq(run_argv(ctq_cmd_compare, args), 0);
	snprintf(path, sizeof path, "%s/compare.csv", c);
	cr_expect(file_has(path, "latency_ms"), "%s compares no latency", path);
	cr_expect(!file_has(path, "loads differ"), "%s: same workload, other engine", path);
	edit_manifest(b, "in-process", "concurrency", 1);
	cr_expect_eq(run_argv(ctq_cmd_compare, args), 0);
	cr_expect(file_has(path, "loads differ"), "%s: another concurrency must not be judged", path);
	snprintf(args, sizeof args, "rm -rf %s %s %s", a, b, c);
	cr_expect_eq(system(args), 0);
}

/* --prompt-format text: the prompt goes as the decoded ids, a JSON string. */
Test(bench_http, text_prompts, .init = start, .fini = stop, .timeout = 30)
{
	static char url[128];
	url_of(url, sizeof url, "normal");
	struct ctq_bench_http_options o = {.url = url, .model = "mock-model", .tokenizer = TOKENIZER,
					   .requests = 2, .concurrency = 2, .input_len = 12, .output_len = 2,
					   .seed = 5, .prompt_format = CTQ_PROMPT_TEXT, .request_timeout_s = 10};
	struct ctq_bench_http s;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_bench_http_open(&s, &o, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_bench_http_run(&s, &err), CTQ_OK, "%s", err.message);
	cr_expect_eq(s.completed, 2, "%s", s.q[0].reason);
	cr_expect_eq(mock.bad_bodies, 0);
	cJSON *j = cJSON_Parse(s.q[1].body.data);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "prompt");
	cr_assert(cJSON_IsString(p), "prompt is not a string: %s", s.q[1].body.data);
	cr_expect_str_eq(p->valuestring, s.texts[1]);
	char *text = NULL;
	size_t len = 0;
	cr_assert_eq(ctq_tokenizer_decode(&s.tok, s.prompts + 12, 12, false, &text, &len, NULL), CTQ_OK);
	cr_expect_str_eq(p->valuestring, text, "request 1's prompt is not its ids decoded");
	free(text);
	cJSON_Delete(j);
	ctq_bench_http_free(&s);
}

/* A server that refuses (HTTP errors on every request, a refused
 * connection, a refused GET /v1/models, the auto probe refused in every
 * form or unanswered) ends the command with exit 3 and one line saying
 * why, whatever the number of requests; the ctq binary runs as a child
 * against the mock of this process. */
struct refusal_case {
	const char *mode; /* NULL: a closed port */
	const char *extra;
	const char *want[2];
};

Test(bench_http, refusal_is_one_line_exit_3, .init = start, .fini = stop, .timeout = 120)
{
	char url[128], dir[64], cmd[1024], out[8192];
	snprintf(dir, sizeof dir, "/tmp/ctq-test-bench-refuse-%d", (int)getpid());
	const int closed = mock_closed_port();
	cr_assert(closed > 0);
	const struct refusal_case cases[] = {
		{"http500", "--model mock-model --server-profile vllm", {"mock failure", "refused every request (40 of 40)"}},
		{NULL, "--model mock-model --server-profile openai", {"onnect", "refused every request (40 of 40)"}},
		{NULL, "", {"onnect", "/v1/models"}},
		{"http500", "--model mock-model", {"mock failure", "refused the probe request in every form"}},
		{NULL, "--model mock-model", {"onnect", "the probe request got no answer"}},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		if (cases[c].mode)
			url_of(url, sizeof url, cases[c].mode);
		else
			snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", closed);
		snprintf(
			cmd, sizeof cmd,
			"%s bench serve --url %s --tokenizer " TOKENIZER " --requests 40 --concurrency 4 "
			"--input-len 4 --output-len 2 --request-timeout 5 --out %s --force %s 2>&1 >/dev/null",
			test_ctq_bin(), url, dir, cases[c].extra);
		int rc = test_command(cmd, out, sizeof out);
		cr_expect_eq(rc, 3, "%s %s: exit %d: %s", url, cases[c].extra, rc, out);
		int lines = 0;
		for (const char *p = out; *p; p++)
			lines += *p == '\n';
		cr_expect_eq(lines, 1, "%s: %d lines on stderr: %s", url, lines, out);
		for (int w = 0; w < 2; w++)
			cr_expect(strstr(out, cases[c].want[w]), "%s %s: \"%s\" lacks \"%s\"", url, cases[c].extra, out,
				  cases[c].want[w]);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* ---- servers that are not vLLM: the profile, the probe, early stops ---- */

static void mock_reset(void)
{
	pthread_mutex_lock(&mock.mu);
	mock.bad_bodies = mock.requests = mock.refused = mock.streams = mock.with_eos = mock.with_ids = 0;
	mock.first_body[0] = '\0';
	pthread_mutex_unlock(&mock.mu);
}

/* Runs the engine with a profile and a prompt format against one mode. */
static void run_profile(struct ctq_bench_http *s, const char *mode, enum ctq_server_profile profile,
			enum ctq_prompt_format pf, long requests, long out_len)
{
	static char url[128];
	url_of(url, sizeof url, mode);
	mock_reset();
	struct ctq_bench_http_options o = {.url = url, .model = "mock-model", .tokenizer = TOKENIZER,
					   .requests = requests, .concurrency = requests, .input_len = 12,
					   .output_len = out_len, .seed = 3, .profile = profile, .prompt_format = pf,
					   .request_timeout_s = 10};
	struct ctq_error err = {0};
	cr_assert_eq(ctq_bench_http_open(s, &o, &err), CTQ_OK, "%s: %s", mode, err.message);
	cr_assert_eq(ctq_bench_http_run(s, &err), CTQ_OK, "%s: %s", mode, err.message);
}

/* Whether every request body carries ignore_eos / a string prompt. */
static void expect_bodies(const struct ctq_bench_http *s, const char *id, bool eos, bool text)
{
	for (long i = 0; i < s->o.requests; i++) {
		cJSON *j = cJSON_Parse(s->q[i].body.data);
		cr_assert(j, "%s request %ld: body %s", id, i, s->q[i].body.data);
		cr_expect_eq(cJSON_GetObjectItemCaseSensitive(j, "ignore_eos") != NULL, eos,
			     "%s request %ld: ignore_eos %s: %s", id, i, eos ? "missing" : "sent", s->q[i].body.data);
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "prompt");
		cr_expect(text ? cJSON_IsString(p) && !strcmp(p->valuestring, s->texts[i]) : cJSON_IsArray(p),
			  "%s request %ld: prompt %s", id, i, s->q[i].body.data);
		cJSON_Delete(j);
	}
}

struct auto_case {
	const char *mode;
	enum ctq_server_profile profile;
	bool text, eos;
	const char *learned[2];
	long early; /* of 4 requests */
	const char *from;
};

/* auto: the probe settles on vllm where ids and ignore_eos are taken, and
 * on openai (text where ids are refused, no ignore_eos) where they are
 * not, saying what was refused and why; every request is then served,
 * and llama-cpp-python's early stops are served and counted. */
Test(bench_http, auto_settles_on_the_profile, .init = start, .fini = stop, .timeout = 60)
{
	const long N = 4, OUT = 6;
	const struct auto_case cases[] = {
		{"normal", CTQ_PROFILE_VLLM, false, true, {"takes token-id prompts and ignore_eos", "vllm"}, 0, "usage"},
		{"noeos", CTQ_PROFILE_OPENAI, false, false,
		 {"refuses ignore_eos (HTTP 400: unknown field ignore_eos)", "sending token-id prompts"}, 0, "usage"},
		{"llamacpp", CTQ_PROFILE_OPENAI, true, false,
		 {"refuses token-id prompts (HTTP 500: ", "Input should be a valid string"}, 2, "text re-encoded"},
		{"tfserve", CTQ_PROFILE_OPENAI, true, false,
		 {"refuses token-id prompts (HTTP 400: prompt must be a string.)", "sending text without ignore_eos"}, 0,
		 "usage"},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct auto_case *k = &cases[c];
		struct ctq_bench_http s;
		run_profile(&s, k->mode, CTQ_PROFILE_AUTO, CTQ_PROMPT_DEFAULT, N, OUT);
		cr_expect_eq(s.profile, k->profile, "%s: profile %s", k->mode, ctq_server_profile_name(s.profile));
		cr_expect_eq(s.prompt_text, k->text, "%s", k->mode);
		cr_expect_eq(s.ignore_eos, k->eos, "%s", k->mode);
		for (int w = 0; w < 2; w++)
			cr_expect(strstr(s.learned, k->learned[w]), "%s: learned \"%s\" lacks \"%s\"", k->mode, s.learned,
				  k->learned[w]);
		cr_expect_eq(s.completed, N, "%s: %ld of %ld served; request 0: %s", k->mode, s.completed, N,
			     s.q[0].reason);
		cr_expect_eq(mock.bad_bodies, 0, "%s: %s", k->mode, mock.first_body);
		cr_expect_eq(s.stopped_early, k->early, "%s: %ld stopped early", k->mode, s.stopped_early);
		for (long i = 0; i < N; i++)
			if (s.q[i].early)
				cr_expect_eq(s.q[i].output_tokens, OUT - 2, "%s request %ld", k->mode, i);
		char from[160];
		ctq_bench_http_tokens_from(&s, from, sizeof from);
		cr_expect_str_eq(from, k->from, "%s", k->mode);
		expect_bodies(&s, k->mode, k->eos, k->text);
		ctq_bench_http_free(&s);
	}
}

struct explicit_case {
	const char *mode;
	enum ctq_server_profile profile;
	enum ctq_prompt_format pf;
	bool text, eos;
	long served; /* of 3 */
};

/* An explicit profile sends what it says without a probe, and an explicit
 * prompt format wins over the profile's: the mock counts the bodies. */
Test(bench_http, explicit_profiles_send_what_they_say, .init = start, .fini = stop, .timeout = 60)
{
	const long N = 3;
	const struct explicit_case cases[] = {
		{"normal", CTQ_PROFILE_VLLM, CTQ_PROMPT_DEFAULT, false, true, N},
		{"normal", CTQ_PROFILE_VLLM, CTQ_PROMPT_TEXT, true, true, N},
		{"tfserve", CTQ_PROFILE_OPENAI, CTQ_PROMPT_DEFAULT, true, false, N},
		{"tfserve", CTQ_PROFILE_VLLM, CTQ_PROMPT_DEFAULT, false, true, 0},
		{"noeos", CTQ_PROFILE_OPENAI, CTQ_PROMPT_IDS, false, false, N},
		{"llamacpp", CTQ_PROFILE_OPENAI, CTQ_PROMPT_IDS, false, false, 0},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct explicit_case *k = &cases[c];
		char id[64];
		snprintf(id, sizeof id, "%s as %s, format %d", k->mode, ctq_server_profile_name(k->profile), (int)k->pf);
		struct ctq_bench_http s;
		run_profile(&s, k->mode, k->profile, k->pf, N, 4);
		cr_expect_eq(mock.requests, N, "%s: %d requests (a probe was sent?)", id, mock.requests);
		cr_expect_eq(mock.with_eos, k->eos ? N : 0, "%s: %d bodies with ignore_eos", id, mock.with_eos);
		cr_expect_eq(mock.with_ids, k->text ? 0 : N, "%s: %d bodies with token ids", id, mock.with_ids);
		cr_expect_eq(s.completed, k->served, "%s: %ld served; request 0: %s", id, s.completed, s.q[0].reason);
		cr_expect_eq(s.learned[0], '\0', "%s: no probe, nothing learned", id);
		expect_bodies(&s, id, k->eos, k->text);
		ctq_bench_http_free(&s);
	}
}

/* Through the command: a run against llama-cpp-python's behaviour exits 0
 * with every request served, one line saying what the probe learned, and
 * the summary and the manifest saying that output lengths vary and how many
 * requests stopped early; one against transformers serve's exits 0 too. */
Test(bench_http, early_stops_are_said, .init = start, .fini = stop, .timeout = 120)
{
	char url[128], dir[64], cmd[1024], out[16384], path[200];
	snprintf(dir, sizeof dir, "/tmp/ctq-test-bench-early-%d", (int)getpid());
	static const char *const modes[] = {"llamacpp", "tfserve"};
	for (int c = 0; c < 2; c++) {
		mock_reset();
		url_of(url, sizeof url, modes[c]);
		snprintf(cmd, sizeof cmd,
			 "%s bench serve --url %s --tokenizer " TOKENIZER " --requests 4 --concurrency 2 "
			 "--input-len 8 --output-len 6 --out %s --force 2>&1",
			 test_ctq_bin(), url, dir);
		int rc = test_command(cmd, out, sizeof out);
		cr_expect_eq(rc, 0, "%s: exit %d: %s", modes[c], rc, out);
		cr_expect(strstr(out, "ctq bench serve: server refuses token-id prompts (HTTP"), "%s: %s", modes[c], out);
		cr_expect(strstr(out, "profile openai (text prompts, no ignore_eos): output lengths may vary"), "%s: %s",
			  modes[c], out);
		cr_expect(strstr(out, c == 0 ? "2 of 4 served requests stopped early" : "0 of 4 served requests stopped early"),
			  "%s: %s", modes[c], out);
		cr_expect_eq(csv_count(dir, "status", "ok", NULL, 0), 4, "%s", modes[c]);
		snprintf(path, sizeof path, "%s/manifest.json", dir);
		cJSON *m = NULL;
		struct ctq_error err = {0};
		cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, &m, &err), CTQ_OK, "%s", err.message);
		const cJSON *sv = ctq_json_get(m, "bench_serve");
		cr_expect_str_eq(ctq_json_str_at(sv, "server_profile", ""), "openai");
		cr_expect_str_eq(ctq_json_str_at(sv, "server_profile_asked", ""), "auto");
		cr_expect_str_eq(ctq_json_str_at(sv, "prompt_format", ""), "text");
		cr_expect_str_eq(ctq_json_str_at(sv, "output_lengths", ""), "may vary (no ignore_eos)");
		cr_expect_str_eq(ctq_json_str_at(sv, "output_tokens_from", ""), c == 0 ? "text re-encoded" : "usage");
		cr_expect(strstr(ctq_json_str_at(sv, "probe", ""), "refuses token-id prompts"), "%s",
			  ctq_json_str_at(sv, "probe", ""));
		cr_expect_eq(ctq_json_get(sv, "stopped_early")->valuedouble, c == 0 ? 2 : 0);
		cr_expect(cJSON_IsFalse(ctq_json_get(sv, "ignore_eos")));
		cJSON_Delete(m);
		snprintf(cmd, sizeof cmd, "%s report %s >/dev/null 2>&1", test_ctq_bin(), dir);
		cr_expect_eq(system(cmd), 0);
		snprintf(path, sizeof path, "%s/summary.md", dir);
		cr_expect(file_has(path, "profile openai"), "%s does not name the profile", path);
		if (c == 0)
			cr_expect(file_has(path, "2 stopped early"), "%s does not say the early stops", path);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* auto with an explicit prompt format probes that format only: with and
 * without ignore_eos; a server that refuses it in both is exit 3's error. */
Test(bench_http, auto_keeps_an_explicit_prompt_format, .init = start, .fini = stop, .timeout = 60)
{
	struct ctq_bench_http s;
	run_profile(&s, "tfserve", CTQ_PROFILE_AUTO, CTQ_PROMPT_TEXT, 3, 4);
	cr_expect_eq(s.profile, CTQ_PROFILE_OPENAI);
	cr_expect(s.prompt_text && !s.ignore_eos);
	cr_expect(strstr(s.learned, "refuses ignore_eos (HTTP 422: Unexpected fields in the request: {'ignore_eos'})"),
		  "%s", s.learned);
	cr_expect_eq(s.completed, 3, "%s", s.q[0].reason);
	ctq_bench_http_free(&s);
	run_profile(&s, "normal", CTQ_PROFILE_AUTO, CTQ_PROMPT_TEXT, 3, 4);
	cr_expect(s.profile == CTQ_PROFILE_VLLM && s.prompt_text && s.ignore_eos, "%s", s.learned);
	cr_expect_eq(s.completed, 3, "%s", s.q[0].reason);
	ctq_bench_http_free(&s);
	static char url[128];
	url_of(url, sizeof url, "llamacpp");
	const struct ctq_bench_http_options o = {.url = url, .model = "mock-model", .tokenizer = TOKENIZER,
						 .requests = 2, .concurrency = 1, .input_len = 8, .output_len = 2,
						 .seed = 1, .prompt_format = CTQ_PROMPT_IDS, .request_timeout_s = 10};
	struct ctq_error err = {0};
	cr_expect_eq(ctq_bench_http_open(&s, &o, &err), CTQ_ERR_ENV);
	cr_expect(strstr(err.message, "refused the probe request in every form (token ids with and without "
				      "ignore_eos)") && strstr(err.message, "valid string"),
		  "%s", err.message);
	ctq_bench_http_free(&s);
}
