/* End to end over loopback: ctq's HTTP client against ctq's own server
 * (`ctq serve`, branch serve), on the CPU reference backend with a tiny
 * synthetic Qwen3 (vocabulary 2048) carrying the GPT-2-layout tokenizer
 * fixture:
 *   - bench serve --url serves every request with no error;
 *   - eval mmlu --url gives the in-process eval's log-probabilities of the
 *     same model within 1e-4 and the same chosen answers;
 *   - a server killed mid-stream yields failed requests (status error, a
 *     reason) and a clean, bounded exit of the client (1).
 * Each test skips, with the reason, while the ctq under test (CTQ_BIN, else
 * build/ctq) has no serve command
 * (`ctq serve --help` exits non-zero): a skip is not a pass. The server's
 * command line is SERVE_ARGS below: the one place to adjust if ctq serve
 * names its options otherwise. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "core/time.h"
#include "harness/commands.h"
#include "net/http.h"
#include "results/table.h"
#include "tests/mock_openai.h"
#include "tests/model_fixture.h"
#include "tests/command.h"

/* The ctq under test: CTQ_BIN (tools/run-tests.sh sets it to its BUILD's
 * binary), else build/ctq. */
#define TOKENIZER "tests/fixtures/tokenizers/gpt2-small"
/* ctq serve's command line: model folder, loopback port. */
#define SERVE_ARGS(model, port) test_ctq_bin(), "serve", "--model", model, "--port", port, "--backend", "reference"

static struct fixture fx;
static pid_t server = -1;
static char base_url[96];

static void need_serve(void)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "%s serve --help >/dev/null 2>&1", test_ctq_bin());
	if (system(cmd) != 0)
		cr_skip_test("%s has no serve command (`ctq serve --help` fails): build it first (make)",
			     test_ctq_bin());
}

/* The tiny model with the tokenizer fixture beside its weights. */
static void make_model(void)
{
	omp_set_num_threads(1);
	fixture_make(&fx, "http-e2e", 2048, 11);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "cp " TOKENIZER "/*.json %s/ && cp " TOKENIZER "/*.json %s/", fx.bf16,
		 fx.w8a8);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Starts ctq serve on a free loopback port and waits (at most 60 s) until
 * GET /health answers 200. */
static void start_server(const char *model)
{
	int port = mock_closed_port();
	cr_assert(port > 0);
	char port_s[16];
	snprintf(port_s, sizeof port_s, "%d", port);
	snprintf(base_url, sizeof base_url, "http://127.0.0.1:%d/v1", port);
	server = fork();
	cr_assert(server >= 0);
	if (server == 0) {
		execl(test_ctq_bin(), SERVE_ARGS(model, port_s), (char *)NULL);
		_exit(127);
	}
	char health[96];
	snprintf(health, sizeof health, "http://127.0.0.1:%d/health", port);
	for (double t0 = ctq_now_s(); ctq_now_s() - t0 < 60;) {
		struct ctq_http_req r = {.url = health, .timeout_ms = 1000};
		struct ctq_error err = {0};
		bool up = !ctq_http_fetch(&r, &err) && !r.failed && r.status == 200;
		ctq_http_req_free(&r);
		if (up)
			return;
		int status;
		cr_assert_eq(waitpid(server, &status, WNOHANG), 0, "ctq serve exited before it served (status %d)",
			     status);
		mock_sleep_ms(100);
	}
	cr_assert_fail("ctq serve did not answer GET /health within 60 s");
}

static void stop_server(void)
{
	if (server > 0) {
		kill(server, SIGTERM);
		for (int i = 0; i < 100 && waitpid(server, NULL, WNOHANG) == 0; i++)
			mock_sleep_ms(50);
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
	}
	server = -1;
}

static void setup(void)
{
	need_serve();
	make_model();
	start_server(fx.w8a8);
}

static void teardown(void)
{
	stop_server();
	if (fx.dir[0])
		fixture_drop(&fx);
}

static int run_cmd(int (*cmd)(int, char **), const char *args)
{
	static char buf[2048];
	char *argv[48];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", args);
	for (char *t = strtok(buf, " "); t && argc < 47; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	return cmd(argc, argv);
}

static size_t rows_with(const char *csv, const char *col, const char *want)
{
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, csv, &err), CTQ_OK, "%s", err.message);
	int c = ctq_table_col(&t, col);
	cr_assert(c >= 0);
	size_t n = 0;
	for (size_t i = 0; i < t.n_rows; i++)
		n += !strcmp(ctq_table_get(&t, i, c), want);
	ctq_table_free(&t);
	return n;
}

Test(http_e2e, bench_serve_url_serves_every_request, .init = setup, .fini = teardown, .timeout = 300)
{
	char args[1024], csv[200];
	snprintf(args, sizeof args,
		 "bench serve --url %s --tokenizer %s --requests 8 --concurrency 4 --input-len 16 "
		 "--output-len 8 --request-timeout 60 --out %s --force",
		 base_url, fx.w8a8, fx.out);
	cr_expect_eq(run_cmd(ctq_cmd_bench, args), 0);
	snprintf(csv, sizeof csv, "%s/bench_serve.csv", fx.out);
	cr_expect_eq(rows_with(csv, "status", "ok"), 8);
	cr_expect_eq(rows_with(csv, "output_tokens", "8"), 8, "usage must say 8 tokens (ignore_eos)");
}

/* eval_questions.csv's four log-probabilities and choice of each row. */
struct scores {
	size_t n;
	double lp[64][4];
	char chosen[64][4];
};

static void load_scores(const char *dir, struct scores *s)
{
	char path[200];
	snprintf(path, sizeof path, "%s/eval_questions.csv", dir);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	cr_assert(t.n_rows > 0 && t.n_rows <= 64);
	s->n = t.n_rows;
	static const char *const cols[] = {"logprob_A", "logprob_B", "logprob_C", "logprob_D"};
	for (size_t i = 0; i < t.n_rows; i++) {
		for (int k = 0; k < 4; k++)
			s->lp[i][k] = strtod(ctq_table_get(&t, i, ctq_table_col(&t, cols[k])), NULL);
		snprintf(s->chosen[i], sizeof s->chosen[i], "%s", ctq_table_get(&t, i, ctq_table_col(&t, "chosen")));
	}
	ctq_table_free(&t);
}

Test(http_e2e, eval_url_equals_in_process, .init = setup, .fini = teardown, .timeout = 300)
{
	char args[1024], local[160], remote[160];
	snprintf(local, sizeof local, "%s/local", fx.dir);
	snprintf(remote, sizeof remote, "%s/remote", fx.dir);
	snprintf(args, sizeof args,
		 "eval mmlu --model %s --backend reference --limit 2 --shots 1 --max-context 1024 --out %s --force",
		 fx.w8a8, local);
	cr_assert_eq(run_cmd(ctq_cmd_eval, args), 0);
	snprintf(args, sizeof args,
		 "eval mmlu --url %s --tokenizer %s --limit 2 --shots 1 --max-context 1024 --out %s --force",
		 base_url, fx.w8a8, remote);
	cr_assert_eq(run_cmd(ctq_cmd_eval, args), 0);
	static struct scores a, b;
	load_scores(local, &a);
	load_scores(remote, &b);
	cr_assert_eq(a.n, b.n);
	for (size_t i = 0; i < a.n; i++) {
		for (int k = 0; k < 4; k++)
			cr_expect(fabs(a.lp[i][k] - b.lp[i][k]) <= 1e-4,
				  "question %zu choice %c: in process %.9g, over HTTP %.9g", i, 'A' + k, a.lp[i][k],
				  b.lp[i][k]);
		cr_expect_str_eq(a.chosen[i], b.chosen[i], "question %zu", i);
	}
}

static void *killer(void *arg)
{
	mock_sleep_ms(*(long *)arg);
	kill(server, SIGKILL);
	return NULL;
}

Test(http_e2e, server_killed_mid_stream, .init = setup, .fini = teardown, .timeout = 300)
{
	/* Long outputs: the server is still streaming when it is killed. */
	char args[1024], csv[200];
	snprintf(args, sizeof args,
		 "bench serve --url %s --tokenizer %s --requests 8 --concurrency 4 --input-len 16 "
		 "--output-len 1500 --request-timeout 60 --out %s --force",
		 base_url, fx.w8a8, fx.out);
	long delay_ms = 400;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, killer, &delay_ms), 0);
	double t = ctq_now_s();
	int rc = run_cmd(ctq_cmd_bench, args);
	t = ctq_now_s() - t;
	pthread_join(th, NULL);
	snprintf(csv, sizeof csv, "%s/bench_serve.csv", fx.out);
	if (rc == 0)
		cr_skip_test("every request was served within %ld ms, before the kill: raise --output-len",
			     delay_ms);
	cr_expect_eq(rc, 1, "the client's exit code");
	cr_expect(t < 30, "the client took %.1f s after the server died", t);
	cr_expect(rows_with(csv, "status", "error") >= 1);
	cr_expect_eq(rows_with(csv, "status", "ok") + rows_with(csv, "status", "error") +
			     rows_with(csv, "status", "not run"),
		     8);
}
