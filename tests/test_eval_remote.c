/* ctq eval --url against a mock OpenAI server on loopback
 * (tests/mock_openai.h, echo mode: each echoed prompt token i > 0 gets the
 * fixed table's mock_logprob(ids[i-1], ids[i])):
 *   - eval/remote.h scores every choice as the sum of the table over the
 *     continuation's positions after the context — the quantity the
 *     in-process scorer computes — for the items ctq_eval_prepare makes,
 *     with 5 shots (long prompts) and 0; the chosen answers follow;
 *   - a server error, a refused connection, a stall past the request limit
 *     (env errors, exit 3), an answer over the 64 MiB limit (env, naming
 *     the limit), an answer without echoed log-probabilities and one with
 *     a log-probability that is none (> 1e-4, < -1e4, not finite: parse
 *     errors, exit 2) stop the scoring with an error naming the question
 *     and the reason, in bounded time;
 *   - the command writes eval_questions.csv with those scores, and with
 *     --ref-url the paired verdict of two identical servers. */
#include <criterion/criterion.h>
#include <math.h>

#include "core/json.h"
#include "core/time.h"
#include "eval/remote.h"
#include "net/http.h"
#include "harness/commands.h"
#include "results/files.h"
#include "results/table.h"
#include "tests/mock_openai.h"

#define TOKENIZER "tests/fixtures/tokenizers/gpt2-small"

static struct mock_openai mock;

static void start(void)
{
	cr_assert_eq(mock_openai_start(&mock, 0, 0), 0, "the mock server did not start");
}

static void stop(void)
{
	mock_openai_stop(&mock);
}

struct prepared {
	struct ctq_eval_data data;
	struct ctq_tokenizer tok;
	struct ctq_eval_set set;
};

static void prepare(struct prepared *p, int shots, size_t limit)
{
	memset(p, 0, sizeof *p);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_eval_data_load(&p->data, CTQ_BENCH_MMLU, "datasets/mmlu", "test", NULL, 0, shots > 0,
					&err),
		     CTQ_OK, "%s: %s", err.path, err.message);
	cr_assert_eq(ctq_tokenizer_load(&p->tok, TOKENIZER, &err), CTQ_OK, "%s", err.message);
	struct ctq_eval_options o = {.bench = CTQ_BENCH_MMLU, .protocol = CTQ_PROTO_ORIGINAL, .shots = shots,
				     .max_context = 2048, .limit = limit};
	cr_assert_eq(ctq_eval_prepare(&p->set, &p->data, &o, &p->tok, &err), CTQ_OK, "%s", err.message);
	cr_assert(p->set.n > 0);
}

static void prepared_free(struct prepared *p)
{
	ctq_eval_set_free(&p->set);
	ctq_tokenizer_free(&p->tok);
	ctq_eval_data_free(&p->data);
}

/* What the scorer must find for item it, choice k. */
static double expected(const struct ctq_eval_item *it, int k)
{
	double s = 0;
	for (int64_t j = 0; j < it->n_cont[k]; j++) {
		int prev = j ? it->cont[k][j - 1] : it->ctx[it->n_ctx - 1];
		s += mock_logprob(prev, it->cont[k][j]);
	}
	return s;
}

static void url_of(char *buf, size_t cap, const char *mode)
{
	snprintf(buf, cap, "http://127.0.0.1:%d/%s/v1", mock.port, mode);
}

static size_t progress_calls, progress_last;
static void progress(void *ctx, size_t done, size_t total)
{
	(void)ctx, (void)total;
	progress_calls++;
	progress_last = done;
}

Test(eval_remote, scores_are_the_continuation_sums, .init = start, .fini = stop, .timeout = 60)
{
	const int shots[] = {5, 0};
	for (int c = 0; c < 2; c++) {
		struct prepared p;
		prepare(&p, shots[c], 3);
		char url[128];
		url_of(url, sizeof url, "echo");
		const struct ctq_eval_remote_options o = {.url = url, .model = "mock-model", .concurrency = 3,
							  .request_timeout_s = 10};
		double (*lp)[4] = calloc(p.set.n, sizeof *lp);
		struct ctq_eval_counters k = {0};
		struct ctq_error err = {0};
		progress_calls = progress_last = 0;
		cr_assert_eq(ctq_eval_remote_score(&o, &p.set, lp, progress, NULL, &k, NULL, &err), CTQ_OK, "%s: %s",
			     err.path, err.message);
		cr_expect_eq(mock.bad_bodies, 0, "a body lacked echo / logprobs / max_tokens 0: %s",
			     mock.first_body);
		cr_expect_eq(k.calls, (int64_t)(4 * p.set.n));
		cr_expect_eq(progress_last, p.set.n);
		cr_expect(progress_calls >= 1);
		int64_t tokens = 0;
		size_t differ = 0;
		for (size_t i = 0; i < p.set.n; i++) {
			const struct ctq_eval_item *it = &p.set.items[i];
			double want[4];
			for (int ch = 0; ch < 4; ch++) {
				want[ch] = expected(it, ch);
				tokens += it->n_ctx + it->n_cont[ch];
				cr_expect(fabs(lp[i][ch] - want[ch]) <= 1e-12, "%d-shot item %zu choice %c: %.17g, want %.17g",
					  shots[c], i, 'A' + ch, lp[i][ch], want[ch]);
			}
			cr_expect_eq(ctq_eval_argmax4(lp[i]), ctq_eval_argmax4(want));
			differ += ctq_eval_argmax4(want) != 0;
		}
		cr_expect_eq(k.tokens_fed, tokens);
		/* The table is not constant: the choices do not all score alike. */
		cr_expect(differ > 0 || p.set.n < 3, "every item chose A: the table does not discriminate");
		free(lp);
		prepared_free(&p);
	}
}

struct fail_case {
	const char *mode; /* NULL: a closed port */
	double timeout_s;
	enum ctq_status st;
	const char *want;
};

Test(eval_remote, failures_stop_with_the_reason, .init = start, .fini = stop, .timeout = 60)
{
	const struct fail_case cases[] = {
		{"http500", 10, CTQ_ERR_ENV, "mock failure"},
		{"stall", 0.5, CTQ_ERR_ENV, "imeout"},
		{"normal", 10, CTQ_ERR_PARSE, ""}, /* an event stream where JSON was due */
		{NULL, 10, CTQ_ERR_ENV, "onnect"},
		/* an answer over the client's limit: an explicit error naming it */
		{"big", 30, CTQ_ERR_ENV, "too large: more than the client's limit of 64 MiB"},
		/* log-probabilities that are none, on the last continuation token */
		{"badlp", 10, CTQ_ERR_PARSE, "0.5: not a log-probability"},
		{"badlp", 10, CTQ_ERR_PARSE, "1e+308: not a log-probability"},
		{"badlp", 10, CTQ_ERR_PARSE, "not finite"},
		{"badlp", 10, CTQ_ERR_PARSE, "-100000: not a log-probability"},
	};
	const char *const bad[] = {"0.5", "1e308", "1e999", "-1e5"};
	int n_bad = 0;
	mock.big_bytes = CTQ_HTTP_MAX_KEPT + 1;
	struct prepared p;
	prepare(&p, 0, 2);
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		char url[128];
		if (cases[c].mode && !strcmp(cases[c].mode, "badlp"))
			snprintf(mock.bad_logprob, sizeof mock.bad_logprob, "%s", bad[n_bad++]);
		if (cases[c].mode)
			url_of(url, sizeof url, cases[c].mode);
		else
			snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", mock_closed_port());
		const struct ctq_eval_remote_options o = {.url = url, .model = "mock-model", .concurrency = 4,
							  .request_timeout_s = cases[c].timeout_s};
		double (*lp)[4] = calloc(p.set.n, sizeof *lp);
		struct ctq_error err = {0};
		double t = ctq_now_s();
		enum ctq_status st = ctq_eval_remote_score(&o, &p.set, lp, NULL, NULL, NULL, NULL, &err);
		t = ctq_now_s() - t;
		cr_expect_eq(st, cases[c].st, "%s: status %d (%s)", url, st, err.message);
		cr_expect(strstr(err.message, cases[c].want), "%s: \"%s\" lacks \"%s\"", url, err.message,
			  cases[c].want);
		cr_expect(strstr(err.path, "question"), "%s: path %s names no question", url, err.path);
		cr_expect(strstr(err.path, "subject"), "%s: path %s names no subject", url, err.path);
		cr_expect(t < 10, "%s: %.2f s", url, t);
		free(lp);
	}
	prepared_free(&p);
}

static int eval_cmd(const char *args)
{
	static char buf[1024];
	char *argv[40];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", args);
	for (char *t = strtok(buf, " "); t && argc < 39; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	return ctq_cmd_eval(argc, argv);
}

Test(eval_remote, command_writes_the_eval_family, .init = start, .fini = stop, .timeout = 60)
{
	char url[128], dir[64], args[900], path[200];
	url_of(url, sizeof url, "echo");
	snprintf(dir, sizeof dir, "/tmp/ctq-test-eval-remote-%d", (int)getpid());
	snprintf(args, sizeof args,
		 "eval mmlu --url %s --ref-url %s --tokenizer " TOKENIZER " --limit 2 --shots 0 --margin 100 "
		 "--subject-margin 100 --out %s --force",
		 url, url, dir);
	cr_assert_eq(eval_cmd(args), 0);
	struct prepared p;
	prepare(&p, 0, 2);
	snprintf(path, sizeof path, "%s/eval_questions.csv", dir);
	struct ctq_table t;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_table_load(&t, path, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(t.n_rows, p.set.n);
	const int ch = ctq_table_col(&t, "chosen"), rch = ctq_table_col(&t, "ref_chosen"),
		  kl = ctq_table_col(&t, "kl_ref_new_nats");
	static const char *const cols[] = {"logprob_A", "logprob_B", "logprob_C", "logprob_D"};
	for (size_t i = 0; i < p.set.n; i++) {
		double want[4];
		for (int k = 0; k < 4; k++) {
			want[k] = expected(&p.set.items[i], k);
			double got = strtod(ctq_table_get(&t, i, ctq_table_col(&t, cols[k])), NULL);
			cr_expect(fabs(got - want[k]) <= 1e-7 * fabs(want[k]), "row %zu %s: %.9g, want %.9g", i,
				  cols[k], got, want[k]);
		}
		char letter[2] = {(char)('A' + ctq_eval_argmax4(want)), 0};
		cr_expect_str_eq(ctq_table_get(&t, i, ch), letter);
		cr_expect_str_eq(ctq_table_get(&t, i, rch), letter);
		cr_expect(fabs(strtod(ctq_table_get(&t, i, kl), NULL)) < 1e-12);
	}
	ctq_table_free(&t);
	prepared_free(&p);
	/* Refusals: a server model without a tokenizer, both --model and --url. */
	snprintf(args, sizeof args, "eval mmlu --url %s --out %s --force", url, dir);
	cr_expect_eq(eval_cmd(args), 2);
	snprintf(args, sizeof args, "eval mmlu --url %s --model %s --tokenizer " TOKENIZER " --out %s --force", url,
		 dir, dir);
	cr_expect_eq(eval_cmd(args), 2);
	/* A server that refuses is the remote side's failure (exit 3), not bad
	 * usage: on every request, and on GET /v1/models. */
	url_of(url, sizeof url, "http500");
	snprintf(args, sizeof args,
		 "eval mmlu --url %s --served-name mock-model --tokenizer " TOKENIZER
		 " --limit 2 --shots 0 --out %s --force",
		 url, dir);
	cr_expect_eq(eval_cmd(args), 3);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", mock_closed_port());
	snprintf(args, sizeof args,
		 "eval mmlu --url %s --tokenizer " TOKENIZER " --limit 2 --shots 0 --out %s --force", url,
		 dir);
	cr_expect_eq(eval_cmd(args), 3);
	/* A log-probability that is none: bad input (exit 2). */
	url_of(url, sizeof url, "badlp");
	snprintf(mock.bad_logprob, sizeof mock.bad_logprob, "0.25");
	snprintf(args, sizeof args,
		 "eval mmlu --url %s --tokenizer " TOKENIZER " --limit 2 --shots 0 --out %s --force", url,
		 dir);
	cr_expect_eq(eval_cmd(args), 2);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* ---- servers that refuse token-id prompts ---- */

struct text_case {
	const char *mode;
	enum ctq_status st;
	const char *want; /* a piece of the learned line, or of the error */
};

/* Where token ids are refused (llama-cpp-python's 500, a 400), the first
 * request finds it and every choice goes as text; the continuation's score
 * is the echoed tokens from the context's end, found by text_offset
 * (llamacpp) or by count with usage (textecho), and equals the id run's for
 * every item whose text re-encodes to the same ids. A server that ignores
 * echo and logprobs (transformers serve) is refused, saying why. */
Test(eval_remote, string_prompts_where_ids_are_refused, .init = start, .fini = stop, .timeout = 60)
{
	const struct text_case cases[] = {
		{"llamacpp", CTQ_OK, "server refuses token-id prompts (HTTP 500: "},
		{"textecho", CTQ_OK, "server refuses token-id prompts (HTTP 400: token-id prompts are not supported)"},
		{"tfserve", CTQ_ERR_PARSE, "server does not echo prompt log-probabilities"},
	};
	struct prepared p;
	prepare(&p, 0, 3);
	mock.tok = &p.tok;
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		char url[128];
		url_of(url, sizeof url, cases[c].mode);
		const struct ctq_eval_remote_options o = {.url = url, .model = "mock-model", .concurrency = 3,
							  .request_timeout_s = 10, .tok = &p.tok};
		double (*lp)[4] = calloc(p.set.n, sizeof *lp);
		struct ctq_eval_remote_info info;
		struct ctq_error err = {0};
		enum ctq_status st = ctq_eval_remote_score(&o, &p.set, lp, NULL, NULL, NULL, &info, &err);
		cr_expect_eq(st, cases[c].st, "%s: status %d (%s)", cases[c].mode, st, err.message);
		cr_expect(info.text_prompts, "%s: token ids still sent", cases[c].mode);
		if (st) {
			cr_expect(strstr(err.message, cases[c].want) && strstr(err.message, "local-completions"),
				  "%s: \"%s\" lacks \"%s\"", cases[c].mode, err.message, cases[c].want);
			cr_expect(strstr(err.path, "question"), "%s: path %s", cases[c].mode, err.path);
			free(lp);
			continue;
		}
		cr_expect(strstr(info.learned, cases[c].want), "%s: learned \"%s\"", cases[c].mode, info.learned);
		size_t checked = 0;
		for (size_t i = 0; i < p.set.n; i++) {
			const struct ctq_eval_item *it = &p.set.items[i];
			if (it->merged || it->truncated)
				continue;
			for (int ch = 0; ch < 4; ch++) {
				const double want = expected(it, ch);
				cr_expect(fabs(lp[i][ch] - want) <= 1e-12, "%s item %zu choice %c: %.17g, want %.17g",
					  cases[c].mode, i, 'A' + ch, lp[i][ch], want);
			}
			checked++;
		}
		cr_expect(checked > 0, "%s: no item to check", cases[c].mode);
		cr_expect_eq(info.cont_differ, 0, "%s", cases[c].mode);
		free(lp);
	}
	mock.tok = NULL;
	prepared_free(&p);
}

/* Through the command: exit 0 with the learned line and the manifest's
 * prompt_format against llama-cpp-python's behaviour, exit 2 against a
 * server that echoes no prompt log-probabilities. */
Test(eval_remote, command_with_string_prompts, .init = start, .fini = stop, .timeout = 60)
{
	struct ctq_tokenizer tok;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_load(&tok, TOKENIZER, &err), CTQ_OK, "%s", err.message);
	mock.tok = &tok;
	char url[128], dir[64], args[900], path[200];
	snprintf(dir, sizeof dir, "/tmp/ctq-test-eval-text-%d", (int)getpid());
	url_of(url, sizeof url, "llamacpp");
	snprintf(args, sizeof args,
		 "eval mmlu --url %s --served-name mock-model --tokenizer " TOKENIZER " --limit 2 --shots 0 --out %s --force",
		 url, dir);
	cr_expect_eq(eval_cmd(args), 0);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	cJSON *m = NULL;
	cr_assert_eq(ctq_json_load_file(path, 1 << 20, NULL, &m, &err), CTQ_OK, "%s", err.message);
	const cJSON *model = ctq_json_get(ctq_json_get(m, "eval"), "model");
	cr_expect_str_eq(ctq_json_str_at(model, "prompt_format", ""), "text");
	cr_expect(strstr(ctq_json_str_at(model, "probe", ""), "refuses token-id prompts"), "%s",
		  ctq_json_str_at(model, "probe", ""));
	cJSON_Delete(m);
	url_of(url, sizeof url, "tfserve");
	snprintf(args, sizeof args,
		 "eval mmlu --url %s --served-name mock-model --tokenizer " TOKENIZER " --limit 2 --shots 0 --out %s --force",
		 url, dir);
	cr_expect_eq(eval_cmd(args), 2);
	mock.tok = NULL;
	ctq_tokenizer_free(&tok);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
