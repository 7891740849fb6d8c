/* Criterion tests for `ctq serve` (harness/cmd_serve.c over serve/ and
 * model/engine.c) on the CPU reference, loopback only: the tiny GGUF
 * fixture (tests/fixtures/gguf_tiny.gguf, imported with its tokenizer and a
 * ChatML template) is served from a forked child on a free port (the port
 * read from its first stdout line), and requests go through libcurl.
 * Completions and chat, streamed and not, must give the greedy tokens of
 * the tests' own decoder (tests/greedy.h: one token per forward call, no
 * batching); echo log-probabilities
 * must be the log-softmax of the runner's prompt logits; bad requests get
 * 400 / 404 / 405 / 413 and the server keeps serving; requests beyond
 * --max-batch queue and complete; SIGTERM during a stream lets it finish
 * and exits 0; a client that leaves mid-stream has its request cancelled.
 *
 * The server child is forked before this process runs a model (OpenMP's
 * thread pool does not survive a fork); the expected tokens are computed
 * after the server has stopped. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "checkpoint/gguf.h"
#include "core/fileio.h"
#include "core/json.h"
#include "harness/commands.h"
#include "model/runner.h"
#include "text/tokenizer.h"
#include "tests/greedy.h"

struct server {
	char dir[64], model[96], log[96];
	pid_t pid;
	int port;
};

static void import_model(struct server *s)
{
	snprintf(s->dir, sizeof s->dir, "/tmp/ctq-serve-XXXXXX");
	cr_assert(mkdtemp(s->dir));
	snprintf(s->model, sizeof s->model, "%s/tiny", s->dir);
	snprintf(s->log, sizeof s->log, "%s/serve.log", s->dir);
	const char *fx = getenv("CTQ_FIXTURES");
	char gguf[256];
	snprintf(gguf, sizeof gguf, "%s/gguf_tiny.gguf", fx && *fx ? fx : "tests/fixtures");
	struct ctq_gguf_import_summary sum;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_gguf_import(gguf, s->model, false, &sum, &err), CTQ_OK, "%s: %s", err.path,
		     err.message);
}

/* Forks `ctq serve --model M --port 0 EXTRA...`; reads the port from the
 * first stdout line (20 s at most). stderr goes to s->log. */
static void start(struct server *s, const char *const *extra)
{
	int fd[2];
	cr_assert_eq(pipe(fd), 0);
	fflush(stdout);
	fflush(stderr);
	s->pid = fork();
	cr_assert(s->pid >= 0);
	if (!s->pid) {
		close(fd[0]);
		dup2(fd[1], 1);
		FILE *log = freopen(s->log, "w", stderr);
		(void)log;
		char *argv[32] = {"serve", "--model", s->model, "--port", "0"};
		int argc = 5;
		for (; extra && *extra && argc < 31; extra++)
			argv[argc++] = (char *)*extra;
		argv[argc] = NULL;
		int rc = ctq_cmd_serve(argc, argv);
		fflush(stdout);
		fflush(stderr);
		_exit(rc);
	}
	close(fd[1]);
	char line[256];
	size_t n = 0;
	while (n + 1 < sizeof line) {
		struct pollfd p = {fd[0], POLLIN, 0};
		cr_assert_gt(poll(&p, 1, 20000), 0, "ctq serve printed no line in 20 s");
		ssize_t k = read(fd[0], line + n, 1);
		cr_assert_eq(k, 1, "ctq serve exited before listening (log %s)", s->log);
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	close(fd[0]);
	const char *c = strstr(line, "http://127.0.0.1:");
	cr_assert(c && strstr(line, "serve: listening on ") == line, "first line: %s", line);
	s->port = atoi(c + strlen("http://127.0.0.1:"));
	cr_assert_gt(s->port, 0, "first line: %s", line);
}

/* SIGTERM, then the exit status (30 s at most). */
static int stop(struct server *s)
{
	kill(s->pid, SIGTERM);
	int status = 0;
	for (int i = 0; i < 3000; i++) {
		pid_t w = waitpid(s->pid, &status, WNOHANG);
		if (w == s->pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &status, 0);
	cr_assert_fail("ctq serve did not exit within 30 s of SIGTERM");
	return -1;
}

static char *read_log(const struct server *s)
{
	char *text = NULL;
	size_t len = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_file_read(s->log, 1 << 20, &text, &len, &err), CTQ_OK, "%s", err.message);
	return text;
}

/* ---- HTTP ------------------------------------------------------------------------- */

struct reply {
	long status;
	char *body;
	size_t len;
	size_t abort_after; /* > 0: stop reading after this many bytes */
};

static size_t on_data(char *p, size_t sz, size_t n, void *cls)
{
	struct reply *r = cls;
	size_t k = sz * n;
	char *b = realloc(r->body, r->len + k + 1);
	cr_assert(b);
	memcpy(b + r->len, p, k);
	r->body = b;
	r->len += k;
	b[r->len] = '\0';
	if (r->abort_after && r->len >= r->abort_after)
		return 0;
	return k;
}

static CURL *request(const struct server *s, const char *method, const char *path, const char *body,
		     size_t body_len, struct reply *r)
{
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", s->port, path);
	CURL *c = curl_easy_init();
	cr_assert(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
	}
	return c;
}

static struct reply http(const struct server *s, const char *method, const char *path, const char *body)
{
	struct reply r = {0};
	CURL *c = request(s, method, path, body, body ? strlen(body) : 0, &r);
	CURLcode rc = curl_easy_perform(c);
	cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(c);
	if (!r.body)
		r.body = calloc(1, 1);
	return r;
}

static cJSON *json_of(const struct reply *r)
{
	cJSON *o = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_parse(r->body, r->len, "reply", NULL, &o, &err), CTQ_OK, "%s: %s",
		     err.message, r->body);
	return o;
}

static const cJSON *choice(const cJSON *o)
{
	const cJSON *c = cJSON_GetArrayItem(ctq_json_get(o, "choices"), 0);
	cr_assert(c, "no choices");
	return c;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = ctq_json_get(o, a);
	if (b)
		v = ctq_json_get(v, b);
	cr_assert(cJSON_IsString(v), "no string %s%s%s", a, b ? "." : "", b ? b : "");
	return v->valuestring;
}

/* A stream's events: the text (or chat delta content) joined, the chunk
 * count, the finish of the last one, whether [DONE] closed it and usage. */
struct stream {
	char text[8192];
	int chunks;
	char finish[16];
	bool done, role_first;
	long usage_completion;
};

static void parse_stream(const char *body, bool chat, struct stream *st)
{
	memset(st, 0, sizeof *st);
	st->usage_completion = -1;
	for (const char *p = strstr(body, "data: "); p; p = strstr(p, "data: ")) {
		p += 6;
		const char *e = strstr(p, "\n\n");
		cr_assert(e, "an event without its blank line: %s", p);
		if (!strncmp(p, "[DONE]", 6)) {
			st->done = true;
			cr_assert_null(strstr(e, "data: "), "an event after [DONE]");
			break;
		}
		cJSON *o = NULL;
		cr_assert_eq(ctq_json_parse(p, (size_t)(e - p), "event", NULL, &o, NULL), CTQ_OK);
		const cJSON *ch = cJSON_GetArrayItem(ctq_json_get(o, "choices"), 0);
		if (!ch) {
			st->usage_completion = (long)ctq_json_get(ctq_json_get(o, "usage"), "completion_tokens")->valuedouble;
		} else {
			const char *t = chat ? str_at(ch, "delta", "content") : str_at(ch, "text", NULL);
			if (!st->chunks && chat)
				st->role_first = ctq_json_get(ctq_json_get(ch, "delta"), "role") != NULL;
			strncat(st->text, t, sizeof st->text - strlen(st->text) - 1);
			st->chunks++;
			const cJSON *f = ctq_json_get(ch, "finish_reason");
			if (cJSON_IsString(f))
				snprintf(st->finish, sizeof st->finish, "%s", f->valuestring);
		}
		cJSON_Delete(o);
		p = e;
	}
}

/* ---- the expected tokens ---------------------------------------------------------- */

struct model {
	struct ctq_backend b;
	struct ctq_runner r;
	struct ctq_tokenizer tok;
};

static void model_open(struct model *m, const char *dir)
{
	memset(m, 0, sizeof *m);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_backend_open(&m->b, "reference", &err), CTQ_OK, "%s", err.message);
	struct ctq_runner_options opt = {.max_slots = 1, .max_len = 256, .max_tokens = 256};
	cr_assert_eq(ctq_runner_load(&m->r, &m->b, dir, &opt, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(ctq_tokenizer_load(&m->tok, dir, &err), CTQ_OK, "%s", err.message);
}

static void model_close(struct model *m)
{
	ctq_runner_free(&m->r);
	ctq_backend_close(&m->b);
	ctq_tokenizer_free(&m->tok);
}

/* What ctq generate prints for these ids: the greedy tokens, decoded. */
static char *greedy_text(struct model *m, const int32_t *ids, size_t n, int64_t max_new,
			 bool ignore_eos, int64_t *n_out)
{
	int32_t *out = NULL;
	struct ctq_error err = {0};
	test_greedy(&m->r, ids, (int64_t)n, max_new, ignore_eos, &out, n_out);
	char *text = NULL;
	size_t len = 0;
	cr_assert_eq(ctq_tokenizer_decode(&m->tok, out, (size_t)*n_out, true, &text, &len, &err), CTQ_OK);
	free(out);
	return text;
}

static char *greedy_of_text(struct model *m, const char *prompt, bool special, int64_t max_new,
			    bool ignore_eos, int64_t *n_out)
{
	int32_t *ids = NULL;
	size_t n = 0;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_encode(&m->tok, prompt, strlen(prompt), special, &ids, &n, &err), CTQ_OK);
	char *t = greedy_text(m, ids, n, max_new, ignore_eos, n_out);
	free(ids);
	return t;
}

/* ---- the tests ---------------------------------------------------------------------- */

#define IDS_BODY "\"prompt\":[5,6,7],\"max_tokens\":24,\"ignore_eos\":true"

Test(serve, completions_give_the_greedy_tokens_of_generate, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, (const char *const[]){"--max-batch", "2", NULL});
	struct reply ids = http(&s, "POST", "/v1/completions", "{\"model\":\"tiny\"," IDS_BODY "}");
	struct reply ids_stream = http(&s, "POST", "/v1/completions",
				       "{" IDS_BODY ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
	struct reply text = http(&s, "POST", "/v1/completions", "{\"prompt\":\"Hello world\",\"max_tokens\":8}");
	struct reply text_stream = http(&s, "POST", "/v1/completions",
					"{\"prompt\":\"Hello world\",\"max_tokens\":8,\"stream\":true}");
	struct reply seeded[2];
	for (int i = 0; i < 2; i++)
		seeded[i] = http(&s, "POST", "/v1/completions",
				 "{" IDS_BODY ",\"temperature\":1.0,\"top_p\":0.9,\"top_k\":50,\"seed\":7}");
	struct reply models = http(&s, "GET", "/v1/models", NULL);
	struct reply health = http(&s, "GET", "/health", NULL);
	cr_assert_eq(stop(&s), 0, "ctq serve exit status");

	struct model m;
	model_open(&m, s.model);
	int64_t n_ids = 0, n_text = 0;
	char *want_ids = greedy_text(&m, (const int32_t[]){5, 6, 7}, 3, 24, true, &n_ids);
	char *want_text = greedy_of_text(&m, "Hello world", true, 8, false, &n_text);

	cr_assert_eq(ids.status, 200, "%s", ids.body);
	cJSON *o = json_of(&ids);
	cr_expect_str_eq(str_at(o, "object", NULL), "text_completion");
	cr_expect_str_eq(str_at(choice(o), "text", NULL), want_ids, "token-id prompt: the greedy text of generate");
	cr_expect_str_eq(str_at(choice(o), "finish_reason", NULL), "length");
	cr_expect_eq(ctq_json_get(ctq_json_get(o, "usage"), "completion_tokens")->valuedouble, (double)n_ids);
	cr_expect_eq(ctq_json_get(ctq_json_get(o, "usage"), "prompt_tokens")->valuedouble, 3);
	cJSON_Delete(o);

	struct stream st;
	cr_assert_eq(ids_stream.status, 200);
	parse_stream(ids_stream.body, false, &st);
	cr_expect_str_eq(st.text, want_ids, "the stream's pieces join to the same text");
	cr_expect_eq(st.chunks, n_ids, "one chunk per token");
	cr_expect_str_eq(st.finish, "length");
	cr_expect(st.done, "the stream ends with [DONE]");
	cr_expect_eq(st.usage_completion, n_ids, "include_usage");

	cr_assert_eq(text.status, 200, "%s", text.body);
	o = json_of(&text);
	cr_expect_str_eq(str_at(choice(o), "text", NULL), want_text, "text prompt: the greedy text of generate");
	cr_expect_eq(ctq_json_get(ctq_json_get(o, "usage"), "completion_tokens")->valuedouble, (double)n_text);
	const char *finish = str_at(choice(o), "finish_reason", NULL);
	cr_expect_str_eq(finish, n_text < 8 ? "stop" : "length");
	cJSON_Delete(o);
	parse_stream(text_stream.body, false, &st);
	cr_expect_str_eq(st.text, want_text);
	cr_expect_eq(st.chunks, n_text);

	/* The choices, not the whole bodies: "id" and "created" (seconds) may
	 * differ between the two requests. */
	cr_expect_eq(seeded[0].status, 200);
	cr_expect_eq(seeded[1].status, 200);
	cJSON *s0 = json_of(&seeded[0]), *s1 = json_of(&seeded[1]);
	char *c0 = cJSON_PrintUnformatted(ctq_json_get(s0, "choices"));
	char *c1 = cJSON_PrintUnformatted(ctq_json_get(s1, "choices"));
	cr_expect(c0 && c1 && !strcmp(c0, c1), "the same seed gives the same sample: %s / %s",
		  c0 ? c0 : "?", c1 ? c1 : "?");
	cJSON_free(c0), cJSON_free(c1);
	cJSON_Delete(s0), cJSON_Delete(s1);

	o = json_of(&models);
	cr_expect_str_eq(str_at(cJSON_GetArrayItem(ctq_json_get(o, "data"), 0), "id", NULL), "tiny");
	cr_expect_eq(ctq_json_get(cJSON_GetArrayItem(ctq_json_get(o, "data"), 0), "max_model_len")->valuedouble, 256);
	cJSON_Delete(o);
	cr_expect_eq(health.status, 200);
	free(ids.body), free(ids_stream.body), free(text.body), free(text_stream.body);
	free(seeded[0].body), free(seeded[1].body), free(models.body), free(health.body);
	free(want_ids), free(want_text);
	model_close(&m);
	ctq_remove_tree(s.dir);
}

Test(serve, chat_applies_the_template_and_streams, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, NULL);
	const char *msgs = "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":6,\"ignore_eos\":true";
	char body[256];
	snprintf(body, sizeof body, "{%s}", msgs);
	struct reply whole = http(&s, "POST", "/v1/chat/completions", body);
	snprintf(body, sizeof body, "{%s,\"stream\":true}", msgs);
	struct reply streamed = http(&s, "POST", "/v1/chat/completions", body);
	cr_assert_eq(stop(&s), 0);
	char *log = read_log(&s);
	cr_expect(strstr(log, "chat template chatml"), "the startup line names the template: %s", log);
	free(log);

	struct model m;
	model_open(&m, s.model);
	int64_t n = 0;
	/* The fixture's template has no add_generation_prompt branch. */
	char *want = greedy_of_text(&m, "<|im_start|>user\nHi<|im_end|>\n", false, 6, true, &n);
	cr_assert_eq(whole.status, 200, "%s", whole.body);
	cJSON *o = json_of(&whole);
	cr_expect_str_eq(str_at(o, "object", NULL), "chat.completion");
	cr_expect_str_eq(str_at(choice(o), "message", "role"), "assistant");
	cr_expect_str_eq(str_at(choice(o), "message", "content"), want);
	cr_expect_eq(ctq_json_get(ctq_json_get(o, "usage"), "prompt_tokens")->valuedouble, 9);
	cJSON_Delete(o);
	struct stream st;
	parse_stream(streamed.body, true, &st);
	cr_expect(strstr(streamed.body, "\"object\":\"chat.completion.chunk\""));
	cr_expect_str_eq(st.text, want);
	cr_expect_eq(st.chunks, n);
	cr_expect(st.role_first, "the first chunk carries delta.role");
	cr_expect(st.done);
	free(whole.body), free(streamed.body);
	free(want);
	model_close(&m);
	ctq_remove_tree(s.dir);
}

/* --tokenizer: a model folder without tokenizer.json (a synthetic
 * checkpoint) is refused, exit 2, and served with the tokenizer and chat
 * template of another folder, or of a tokenizer.json named as a file; the
 * replies are those of the model's own tokenizer. */
Test(serve, tokenizer_and_template_from_another_folder, .timeout = 120)
{
	struct server s;
	import_model(&s);
	char tok[128], tok_file[160], from[192], to[192];
	snprintf(tok, sizeof tok, "%s/tok", s.dir);
	snprintf(tok_file, sizeof tok_file, "%s/tokenizer.json", tok);
	cr_assert_eq(mkdir(tok, 0755), 0);
	static const char *files[] = {"tokenizer.json", "tokenizer_config.json"};
	for (int i = 0; i < 2; i++) {
		snprintf(from, sizeof from, "%s/%s", s.model, files[i]);
		snprintf(to, sizeof to, "%s/%s", tok, files[i]);
		cr_assert_eq(rename(from, to), 0, "%s", from);
	}
	char *bare[] = {"serve", "--model", s.model, "--port", "0", "--quiet", NULL};
	cr_expect_eq(ctq_cmd_serve(6, bare), 2, "no tokenizer.json in the model folder: exit 2");
	const char *msgs = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":6,\"ignore_eos\":true}";
	struct reply chat[2];
	const char *paths[2] = {tok, tok_file};
	for (int k = 0; k < 2; k++) {
		start(&s, (const char *const[]){"--tokenizer", paths[k], NULL});
		chat[k] = http(&s, "POST", "/v1/chat/completions", msgs);
		cr_assert_eq(stop(&s), 0);
		char *log = read_log(&s);
		cr_expect(strstr(log, "chat template chatml"), "--tokenizer %s: the template: %s", paths[k], log);
		free(log);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(from, sizeof from, "%s/%s", tok, files[i]);
		snprintf(to, sizeof to, "%s/%s", s.model, files[i]);
		cr_assert_eq(rename(from, to), 0, "%s", from);
	}
	struct model m;
	model_open(&m, s.model);
	int64_t n = 0;
	char *want = greedy_of_text(&m, "<|im_start|>user\nHi<|im_end|>\n", false, 6, true, &n);
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(chat[k].status, 200, "--tokenizer %s: %s", paths[k], chat[k].body);
		cJSON *o = json_of(&chat[k]);
		cr_expect_str_eq(str_at(choice(o), "message", "content"), want, "--tokenizer %s", paths[k]);
		cr_expect_eq(ctq_json_get(ctq_json_get(o, "usage"), "prompt_tokens")->valuedouble, 9);
		cJSON_Delete(o);
		free(chat[k].body);
	}
	free(want);
	model_close(&m);
	ctq_remove_tree(s.dir);
}

/* echo + logprobs with max_tokens 0 (how evaluation harnesses score a
 * continuation): the prompt's log-probabilities are log-softmax of the
 * runner's logits at the previous position; the first is null. Then a
 * stop string cuts the text and finishes with "stop". */
Test(serve, echo_logprobs_and_stop_strings, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, NULL);
	/* 150 prompt tokens: more than one call's echo rows (64). */
	enum { NP = 150 };
	int32_t ids[NP];
	char echo_body[2048];
	size_t eb = (size_t)snprintf(echo_body, sizeof echo_body, "{\"prompt\":[");
	for (int j = 0; j < NP; j++) {
		ids[j] = (int32_t)(5 + (j * 7) % 260);
		eb += (size_t)snprintf(echo_body + eb, sizeof echo_body - eb, j ? ",%d" : "%d", ids[j]);
	}
	snprintf(echo_body + eb, sizeof echo_body - eb, "],\"max_tokens\":0,\"echo\":true,\"logprobs\":1}");
	struct reply echo = http(&s, "POST", "/v1/completions", echo_body);
	struct reply gen = http(&s, "POST", "/v1/completions", "{" IDS_BODY ",\"logprobs\":2}");
	cr_assert_eq(gen.status, 200, "%s", gen.body);
	cJSON *g = json_of(&gen);
	/* A stop string: the first printable ASCII byte after the start. */
	const char *full = str_at(choice(g), "text", NULL);
	char stop_s[2] = {0}, body[256];
	size_t at = 0;
	for (size_t i = 1; full[i] && !stop_s[0]; i++)
		if (full[i] > ' ' && full[i] < 127 && full[i] != '"' && full[i] != '\\')
			stop_s[0] = full[i], at = (size_t)(strchr(full, full[i]) - full);
	cr_assert(stop_s[0], "no ASCII character in the greedy text to stop on: %s", full);
	snprintf(body, sizeof body, "{" IDS_BODY ",\"stop\":[\"%s\"]}", stop_s);
	struct reply stopped = http(&s, "POST", "/v1/completions", body);
	snprintf(body, sizeof body, "{" IDS_BODY ",\"stop\":\"%s\",\"stream\":true}", stop_s);
	struct reply stopped_stream = http(&s, "POST", "/v1/completions", body);
	cr_assert_eq(stop(&s), 0);

	cJSON *st_o = json_of(&stopped);
	cr_expect_eq(strlen(str_at(choice(st_o), "text", NULL)), at, "the text ends before the stop string");
	cr_expect_eq(strncmp(str_at(choice(st_o), "text", NULL), full, at), 0);
	cr_expect_str_eq(str_at(choice(st_o), "finish_reason", NULL), "stop");
	struct stream ss;
	parse_stream(stopped_stream.body, false, &ss);
	cr_expect_eq(strlen(ss.text), at, "streamed: the text ends before the stop string");
	cr_expect_str_eq(ss.finish, "stop");
	cr_expect(ss.done);
	cJSON_Delete(st_o);

	/* Greedy tokens are their rows' most likely ones. */
	const cJSON *glp = ctq_json_get(choice(g), "logprobs");
	const cJSON *vals = ctq_json_get(glp, "token_logprobs"), *tops = ctq_json_get(glp, "top_logprobs");
	cr_assert_eq(cJSON_GetArraySize(vals), 24);
	for (int i = 0; i < 24; i++) {
		double v = cJSON_GetArrayItem(vals, i)->valuedouble, best = -INFINITY;
		const cJSON *d = cJSON_GetArrayItem(tops, i);
		for (const cJSON *x = d->child; x; x = x->next)
			best = x->valuedouble > best ? x->valuedouble : best;
		cr_expect_eq(v, best, "token %d: logprob %.17g, best alternative %.17g", i, v, best);
	}
	cJSON_Delete(g);

	struct model m;
	model_open(&m, s.model);
	const int64_t V = m.r.cfg.vocab;
	float *lg = malloc((size_t)(NP * V) * sizeof *lg);
	int32_t slot[NP] = {0}, pos[NP];
	int64_t rows[NP];
	for (int j = 0; j < NP; j++)
		pos[j] = j, rows[j] = j;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_runner_forward(&m.r, ids, slot, pos, NP, rows, NP, lg, &err), CTQ_OK, "%s", err.message);
	cr_assert_eq(echo.status, 200, "%s", echo.body);
	cJSON *o = json_of(&echo);
	const cJSON *lp = ctq_json_get(choice(o), "logprobs");
	const cJSON *tv = ctq_json_get(lp, "token_logprobs"), *tt = ctq_json_get(lp, "top_logprobs");
	cr_assert_eq(cJSON_GetArraySize(tv), NP, "the prompt's tokens (max_tokens 0)");
	cr_expect(cJSON_IsNull(cJSON_GetArrayItem(tv, 0)) && cJSON_IsNull(cJSON_GetArrayItem(tt, 0)),
		  "the first prompt token has no log-probability");
	for (int j = 1; j < NP; j++) {
		double want = ctq_logprob(lg + (j - 1) * V, V, ids[j]);
		double got = cJSON_GetArrayItem(tv, j)->valuedouble;
		cr_expect(fabs(got - want) <= 1e-12 * fabs(want) + 1e-15, "prompt token %d: %.17g, want %.17g", j,
			  got, want);
		cr_expect_leq(cJSON_GetArraySize(cJSON_GetArrayItem(tt, j)), 2, "top 1 plus the token");
	}
	cr_expect_eq(cJSON_GetArraySize(ctq_json_get(lp, "text_offset")), NP);
	cr_expect_eq(ctq_json_get(ctq_json_get(o, "usage"), "completion_tokens")->valuedouble, 0);
	char *prompt_text = NULL;
	size_t len = 0;
	cr_assert_eq(ctq_tokenizer_decode(&m.tok, ids, NP, false, &prompt_text, &len, NULL), CTQ_OK);
	cr_expect_str_eq(str_at(choice(o), "text", NULL), prompt_text, "echo returns the prompt's text");
	free(prompt_text);
	cJSON_Delete(o);
	free(lg);
	free(echo.body), free(gen.body), free(stopped.body), free(stopped_stream.body);
	model_close(&m);
	ctq_remove_tree(s.dir);
}

Test(serve, bad_requests_get_errors_and_the_server_keeps_serving, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, (const char *const[]){"--max-body", "4096", NULL});
	static const struct {
		const char *id, *method, *path, *body, *param;
		long status;
	} cases[] = {
		{"malformed JSON", "POST", "/v1/completions", "{\"prompt\": [1,2", NULL, 400},
		{"not an object", "POST", "/v1/completions", "[1,2,3]", NULL, 400},
		{"unknown model", "POST", "/v1/completions", "{\"model\":\"gpt-9\",\"prompt\":\"a\"}", "model", 404},
		{"no prompt", "POST", "/v1/completions", "{\"max_tokens\":3}", "prompt", 400},
		{"n = 2", "POST", "/v1/completions", "{\"prompt\":\"a\",\"n\":2}", "n", 400},
		{"logprobs 9", "POST", "/v1/completions", "{\"prompt\":\"a\",\"logprobs\":9}", "logprobs", 400},
		{"temperature -1", "POST", "/v1/completions", "{\"prompt\":\"a\",\"temperature\":-1}", "temperature", 400},
		{"max_tokens string", "POST", "/v1/completions", "{\"prompt\":\"a\",\"max_tokens\":\"5\"}", "max_tokens", 400},
		{"token id past the vocab", "POST", "/v1/completions", "{\"prompt\":[1,99999]}", "prompt", 400},
		{"a prompt list of strings and ids", "POST", "/v1/completions", "{\"prompt\":[\"a\",[1]]}", "prompt", 400},
		{"penalty", "POST", "/v1/completions", "{\"prompt\":\"a\",\"presence_penalty\":0.5}", "presence_penalty", 400},
		{"prompt + max_tokens over the cache", "POST", "/v1/completions",
		 "{\"prompt\":[1,2,3],\"max_tokens\":254}", "max_tokens", 413},
		{"chat without messages", "POST", "/v1/chat/completions", "{\"max_tokens\":3}", "messages", 400},
		{"chat role", "POST", "/v1/chat/completions",
		 "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", "messages", 400},
		{"GET completions", "GET", "/v1/completions", NULL, NULL, 405},
		{"unknown path", "GET", "/v2/nothing", NULL, NULL, 404},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct reply r = http(&s, cases[i].method, cases[i].path, cases[i].body);
		cr_expect_eq(r.status, cases[i].status, "%s: status %ld, want %ld: %s", cases[i].id, r.status,
			     cases[i].status, r.body);
		cJSON *o = json_of(&r);
		const cJSON *e = ctq_json_get(o, "error");
		cr_expect(cJSON_IsString(ctq_json_get(e, "message")), "%s: error.message", cases[i].id);
		cr_expect_eq(ctq_json_get(e, "code")->valuedouble, (double)cases[i].status, "%s: error.code",
			     cases[i].id);
		if (cases[i].param)
			cr_expect_str_eq(str_at(e, "param", NULL), cases[i].param, "%s: error.param", cases[i].id);
		cJSON_Delete(o);
		free(r.body);
	}
	/* A body over --max-body. */
	size_t big_n = 8192;
	char *big = malloc(big_n + 1);
	memset(big, ' ', big_n);
	memcpy(big, "{\"prompt\":\"a\"", 13);
	big[big_n - 1] = '}';
	big[big_n] = '\0';
	struct reply r = http(&s, "POST", "/v1/completions", big);
	cr_expect_eq(r.status, 413, "a body over --max-body: %ld %s", r.status, r.body);
	free(big), free(r.body);
	r = http(&s, "POST", "/v1/completions", "{" IDS_BODY "}");
	cr_expect_eq(r.status, 200, "still serving after the refusals: %s", r.body);
	free(r.body);
	cr_assert_eq(stop(&s), 0);
	ctq_remove_tree(s.dir);
}

/* 6 requests at once on 2 slots: 4 queue, all complete with their own
 * greedy text (prompts differ in their first token). */
Test(serve, requests_beyond_max_batch_queue_and_complete, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, (const char *const[]){"--max-batch", "2", "--max-tokens", "4", NULL});
	enum { N = 6 };
	CURLM *multi = curl_multi_init();
	CURL *h[N];
	struct reply r[N];
	char body[N][128];
	for (int i = 0; i < N; i++) {
		memset(&r[i], 0, sizeof r[i]);
		snprintf(body[i], sizeof body[i],
			 "{\"prompt\":[%d,6,7,8,9,10],\"max_tokens\":12,\"ignore_eos\":true%s}", 20 + i,
			 i % 2 ? ",\"stream\":true" : "");
		h[i] = request(&s, "POST", "/v1/completions", body[i], strlen(body[i]), &r[i]);
		curl_multi_add_handle(multi, h[i]);
	}
	int running = N;
	while (running) {
		cr_assert_eq(curl_multi_perform(multi, &running), CURLM_OK);
		if (running)
			curl_multi_poll(multi, NULL, 0, 1000, NULL);
	}
	for (int i = 0; i < N; i++) {
		curl_easy_getinfo(h[i], CURLINFO_RESPONSE_CODE, &r[i].status);
		curl_multi_remove_handle(multi, h[i]);
		curl_easy_cleanup(h[i]);
	}
	curl_multi_cleanup(multi);
	cr_assert_eq(stop(&s), 0);
	struct model m;
	model_open(&m, s.model);
	for (int i = 0; i < N; i++) {
		int64_t n = 0;
		char *want = greedy_text(&m, (const int32_t[]){20 + i, 6, 7, 8, 9, 10}, 6, 12, true, &n);
		cr_assert_eq(r[i].status, 200, "request %d: %s", i, r[i].body ? r[i].body : "");
		if (i % 2) {
			struct stream st;
			parse_stream(r[i].body, false, &st);
			cr_expect_str_eq(st.text, want, "request %d (streamed)", i);
			cr_expect_eq(st.chunks, 12);
		} else {
			cJSON *o = json_of(&r[i]);
			cr_expect_str_eq(str_at(choice(o), "text", NULL), want, "request %d", i);
			cJSON_Delete(o);
		}
		free(want), free(r[i].body);
	}
	model_close(&m);
	ctq_remove_tree(s.dir);
}

/* SIGTERM while a long stream runs: new requests get 503, the stream runs
 * to its last token and [DONE], the server exits 0. What is checked is the
 * drain, not the speed: on busy shared cores the 4,000 tokens may take
 * minutes, so the stream has no time limit of its own, only one on
 * silence (60 s without a byte), and the test's timeout bounds the rest.
 * The log must say the drain found the stream in flight, so a stream that
 * ended before the signal cannot pass for a drained one. */
Test(serve, sigterm_drains_a_stream_and_exits_0, .timeout = 300)
{
	struct server s;
	import_model(&s);
	start(&s, (const char *const[]){"--max-len", "4096", NULL});
	const char *body = "{\"prompt\":[5,6,7],\"max_tokens\":4000,\"ignore_eos\":true,\"stream\":true}";
	struct reply r = {0};
	CURLM *multi = curl_multi_init();
	CURL *h = request(&s, "POST", "/v1/completions", body, strlen(body), &r);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 0L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_multi_add_handle(multi, h);
	int running = 1;
	bool signalled = false;
	struct reply refused = {0};
	while (running) {
		cr_assert_eq(curl_multi_perform(multi, &running), CURLM_OK);
		if (!signalled && r.len > 0) {
			kill(s.pid, SIGTERM);
			signalled = true;
			nanosleep(&(struct timespec){0, 100000000}, NULL);
			refused = http(&s, "POST", "/v1/completions", "{\"prompt\":\"a\"}");
		}
		if (running)
			curl_multi_poll(multi, NULL, 0, 1000, NULL);
	}
	curl_multi_remove_handle(multi, h);
	curl_easy_cleanup(h);
	curl_multi_cleanup(multi);
	int status = 0;
	cr_assert_eq(waitpid(s.pid, &status, 0), s.pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status %d", status);
	cr_assert(signalled);
	struct stream st;
	parse_stream(r.body, false, &st);
	cr_expect_eq(st.chunks, 4000, "the stream in flight ran to its end (%d chunks)", st.chunks);
	cr_expect(st.done, "and closed with [DONE]");
	cr_expect_eq(refused.status, 503, "a request while draining: %ld %s", refused.status, refused.body);
	char *log = read_log(&s);
	cr_expect(strstr(log, "serve: SIGTERM: draining 1 request(s) in flight"), "the drain found the stream: %s",
		  log);
	cr_expect(strstr(log, "serve: stopped: "), "the summary line: %s", log);
	free(log), free(r.body), free(refused.body);
	ctq_remove_tree(s.dir);
}

/* A client that reads one chunk and leaves: its request is cancelled and
 * the only slot serves the next one. */
Test(serve, a_client_leaving_mid_stream_frees_its_slot, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, (const char *const[]){"--max-batch", "1", "--max-len", "4096", NULL});
	const char *body = "{\"prompt\":[5,6,7],\"max_tokens\":4000,\"ignore_eos\":true,\"stream\":true}";
	struct reply r = {.abort_after = 1};
	CURL *h = request(&s, "POST", "/v1/completions", body, strlen(body), &r);
	CURLcode rc = curl_easy_perform(h);
	cr_assert_eq(rc, CURLE_WRITE_ERROR, "the client stopped reading: %s", curl_easy_strerror(rc));
	curl_easy_cleanup(h);
	struct reply next = http(&s, "POST", "/v1/completions", "{" IDS_BODY "}");
	cr_expect_eq(next.status, 200, "%s", next.body);
	cr_assert_eq(stop(&s), 0);
	char *log = read_log(&s);
	cr_expect(strstr(log, "went away mid-stream"), "%s", log);
	cr_expect(strstr(log, "1 cancelled"), "the engine cancelled the request: %s", log);
	free(log), free(r.body), free(next.body);
	ctq_remove_tree(s.dir);
}

/* ---- bounded by design (Step 20) ---------------------------------------------------- */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "core/utf8.h"
#include "serve/openai.h"

#include <microhttpd.h>

/* A field of /proc/PID/status in kB (VmRSS, VmHWM, Threads). */
static long proc_status(pid_t pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = atol(line + n + 1);
	fclose(f);
	return v;
}

static int connect_to(const struct server *s)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
	return fd;
}

/* Sends req (n bytes) on a fresh connection and reads until the server
 * closes it or 30 s pass without a byte; the answer NUL-terminated. */
static char *raw_exchange(const struct server *s, const char *req, size_t n, size_t *len)
{
	int fd = connect_to(s);
	cr_assert_eq(send(fd, req, n, MSG_NOSIGNAL), (ssize_t)n);
	shutdown(fd, SHUT_WR);
	size_t cap = 1 << 16, k = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 30000) <= 0)
			break;
		ssize_t r = recv(fd, buf + k, cap - k, 0);
		if (r <= 0)
			break;
		k += (size_t)r;
		if (k == cap)
			break;
	}
	close(fd);
	buf[k] = '\0';
	*len = k;
	return buf;
}

/* A raw answer: one status line, a body of valid UTF-8 that is OpenAI
 * error JSON (or any JSON when want_error is false) with that code. */
static void expect_json_answer(const char *id, const char *ans, size_t len, long want, bool want_error)
{
	long status = 0;
	cr_assert(sscanf(ans, "HTTP/1.%*d %ld", &status) == 1, "%s: no status line: %s", id, ans);
	cr_expect_eq(status, want, "%s: status %ld, want %ld: %s", id, status, want, ans);
	const char *body = strstr(ans, "\r\n\r\n");
	cr_assert(body, "%s: no end of headers: %s", id, ans);
	body += 4;
	cr_expect(strncmp(body, "HTTP/", 5), "%s: a second status line: %s", id, ans);
	size_t bad = 0, n = len - (size_t)(body - ans);
	cr_expect(ctq_utf8_valid(body, n, &bad), "%s: the body is not UTF-8 at byte %zu", id, bad);
	cJSON *o = NULL;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_json_parse(body, n, "answer", NULL, &o, &err), CTQ_OK, "%s: not JSON (%s): %s", id,
		     err.message, body);
	if (want_error) {
		const cJSON *e = ctq_json_get(o, "error");
		cr_expect(cJSON_IsString(ctq_json_get(e, "message")), "%s: error.message: %s", id, body);
		const cJSON *code = ctq_json_get(e, "code");
		cr_expect(cJSON_IsNumber(code) && code->valuedouble == (double)want, "%s: error.code: %s", id, body);
	}
	cJSON_Delete(o);
}

/* The body scan counts values and array elements without allocating. */
Test(serve_bounds, the_body_scan_counts_values_before_parsing)
{
	static const struct {
		const char *body;
		int64_t max_elems, max_values;
		bool ok, array;
	} cases[] = {
		{"{\"prompt\":[1,2,3]}", 3, 100, true, false},
		{"{\"prompt\":[1,2,3,4]}", 3, 100, false, true},
		{"{\"prompt\":[[1,2],[3,4,5]]}", 3, 100, true, false},
		{"{\"prompt\":[[1,2],[3,4,5,6]]}", 3, 100, false, true},
		{"{\"prompt\":\"[1,2,3,4,5,6,\\\"]\",\"x\":[]}", 3, 100, true, false},
		/* the object, its keys (a member is one node) and the elements */
		{"{\"a\":1,\"b\":2,\"c\":[1,2]}", 9, 6, true, false},
		{"{\"a\":1,\"b\":2,\"c\":[1,2],\"d\":0}", 9, 6, false, false},
		{"{\"a\":[{},{},{},{}]}", 3, 100, false, true},
		{"[ 1 , 2 ,3 ]", 3, 100, true, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int64_t n = 0;
		bool array = false;
		bool ok = ctq_oai_scan_values(cases[i].body, strlen(cases[i].body), cases[i].max_elems,
					      cases[i].max_values, &n, &array);
		cr_expect_eq(ok, cases[i].ok, "%s: %d (n %lld)", cases[i].body, ok, (long long)n);
		if (!ok)
			cr_expect_eq(array, cases[i].array, "%s: which rule", cases[i].body);
	}
	/* Every ill-formed sequence becomes U+FFFD; valid text is kept. */
	char *f = ctq_oai_utf8_fix("a\xff" "b\xe4\xb8" "c\xe4\xb8\xad", 10);
	cr_expect_str_eq(f, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xe4\xb8\xad");
	free(f);
}

/* Eight bodies of 4 million token ids at once (8 MiB each, under
 * --max-body): refused (413) before their ids are materialised, so the
 * server's peak resident memory grows by the bodies, not by cJSON trees
 * of 4e6 nodes (354 MB each before). */
Test(serve, id_bodies_are_refused_before_they_are_parsed, .timeout = 300)
{
	struct server s;
	import_model(&s);
	start(&s, NULL);
	struct reply warm = http(&s, "POST", "/v1/completions", "{" IDS_BODY "}");
	cr_assert_eq(warm.status, 200, "%s", warm.body);
	free(warm.body);
	long base = proc_status(s.pid, "VmRSS");
	enum { N = 8 };
	const size_t len = (8u << 20) - 64;
	char *body = malloc(len + 1);
	size_t k = (size_t)sprintf(body, "{\"prompt\":[");
	while (k + 3 < len) {
		body[k++] = '1';
		body[k++] = ',';
	}
	body[k++] = '1';
	body[k++] = ']';
	body[k++] = '}';
	CURLM *multi = curl_multi_init();
	CURL *h[N];
	struct reply r[N];
	for (int i = 0; i < N; i++) {
		memset(&r[i], 0, sizeof r[i]);
		h[i] = request(&s, "POST", "/v1/completions", body, k, &r[i]);
		curl_easy_setopt(h[i], CURLOPT_TIMEOUT, 240L);
		curl_multi_add_handle(multi, h[i]);
	}
	int running = N;
	while (running) {
		cr_assert_eq(curl_multi_perform(multi, &running), CURLM_OK);
		if (running)
			curl_multi_poll(multi, NULL, 0, 1000, NULL);
	}
	long peak = proc_status(s.pid, "VmHWM");
	for (int i = 0; i < N; i++) {
		curl_easy_getinfo(h[i], CURLINFO_RESPONSE_CODE, &r[i].status);
		cr_expect_eq(r[i].status, 413, "body %d: %ld %s", i, r[i].status, r[i].body ? r[i].body : "");
		cr_expect(r[i].body && strstr(r[i].body, "--max-len"), "body %d names the limit: %s", i,
			  r[i].body ? r[i].body : "");
		curl_multi_remove_handle(multi, h[i]);
		curl_easy_cleanup(h[i]);
		free(r[i].body);
	}
	curl_multi_cleanup(multi);
	free(body);
	struct reply after = http(&s, "POST", "/v1/completions", "{" IDS_BODY "}");
	cr_expect_eq(after.status, 200, "still serving: %s", after.body);
	free(after.body);
	cr_assert_eq(stop(&s), 0);
	/* The stated budget (docs/serving.md): bodies 8 x 8 MiB, their scan
	 * allocates nothing; 256 MiB leaves room for allocator slack and
	 * sanitizer builds, and is a tenth of what cJSON trees took. */
	cr_expect_lt(peak - base, 256L << 10, "peak RSS grew by %ld kB over %ld kB", peak - base, base);
	ctq_remove_tree(s.dir);
}

/* The server's body budget: bodies held at once and what parsing them
 * takes. A body that alone would pass it is 413; the budget is whole
 * again once a request is parsed. */
Test(serve, the_body_budget_refuses_what_it_cannot_hold, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, (const char *const[]){"--body-budget", "8192", "--max-body", "65536", NULL});
	char body[16384];
	size_t k = (size_t)sprintf(body, "{\"prompt\":\"");
	memset(body + k, 'a', 10000);
	k += 10000;
	strcpy(body + k, "\",\"max_tokens\":1}");
	struct reply over = http(&s, "POST", "/v1/completions", body);
	cr_expect_eq(over.status, 503, "a body over the budget: %ld %s", over.status, over.body);
	/* 1,700 bytes of text: 6,800 bytes of parse estimate, plus the body */
	k = (size_t)sprintf(body, "{\"prompt\":\"");
	memset(body + k, 'a', 1700);
	k += 1700;
	strcpy(body + k, "\",\"max_tokens\":1}");
	struct reply costly = http(&s, "POST", "/v1/completions", body);
	cr_expect_eq(costly.status, 413, "a body whose parse passes the budget: %ld %s", costly.status, costly.body);
	cr_expect(strstr(costly.body, "--body-budget"), "%s", costly.body);
	for (int i = 0; i < 3; i++) {
		struct reply ok = http(&s, "POST", "/v1/completions", "{" IDS_BODY "}");
		cr_expect_eq(ok.status, 200, "a small body, again and again (%d): %s", i, ok.body);
		free(ok.body);
	}
	cr_assert_eq(stop(&s), 0);
	free(over.body), free(costly.body);
	ctq_remove_tree(s.dir);
}

/* A client that gives up on a long non-streamed request: the request is
 * cancelled (its slot freed), as a stream's is. */
Test(serve, a_client_leaving_a_non_streamed_request_frees_its_slot, .timeout = 300)
{
	struct server s;
	import_model(&s);
	start(&s, (const char *const[]){"--max-batch", "1", "--max-len", "65536", NULL});
	const char *body = "{\"prompt\":[5,6,7],\"max_tokens\":65000,\"ignore_eos\":true}";
	struct reply r = {0};
	CURL *h = request(&s, "POST", "/v1/completions", body, strlen(body), &r);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 3000L);
	CURLcode rc = curl_easy_perform(h);
	cr_assert_eq(rc, CURLE_OPERATION_TIMEDOUT, "the client gave up: %s", curl_easy_strerror(rc));
	curl_easy_cleanup(h);
	struct reply next = http(&s, "POST", "/v1/completions", "{" IDS_BODY "}");
	cr_expect_eq(next.status, 200, "%s", next.body);
	cr_assert_eq(stop(&s), 0);
	char *log = read_log(&s);
	cr_expect(strstr(log, "went away before the answer"), "%s", log);
	cr_expect(strstr(log, "1 cancelled"), "the engine cancelled the request: %s", log);
	free(log), free(r.body), free(next.body);
	ctq_remove_tree(s.dir);
}

/* 600 idle sockets (more than the 512 connections the server used to
 * take), a few sending a header byte now and then: /health still answers. */
Test(serve, idle_and_slow_sockets_do_not_starve_health, .timeout = 300)
{
	struct rlimit nofile;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &nofile), 0);
	if (nofile.rlim_cur < 2048 && nofile.rlim_max >= 2048) {
		nofile.rlim_cur = 2048;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if (nofile.rlim_cur < 1024)
		cr_skip_test("the open-file limit (%ld) is under 1024", (long)nofile.rlim_cur);
	struct server s;
	import_model(&s);
	start(&s, NULL);
	enum { N = 600, SLOW = 20 };
	int *fd = malloc(N * sizeof *fd);
	for (int i = 0; i < N; i++)
		fd[i] = connect_to(&s);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < SLOW; i++)
			send(fd[i], round == 0 ? "P" : round == 1 ? "O" : "S", 1, MSG_NOSIGNAL);
		nanosleep(&(struct timespec){0, 300000000}, NULL);
	}
	for (int i = 0; i < 3; i++) {
		struct reply h = {0};
		CURL *c = request(&s, "GET", "/health", NULL, 0, &h);
		curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
		CURLcode rc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h.status);
		curl_easy_cleanup(c);
		cr_expect_eq(rc, CURLE_OK, "/health with %d sockets open: %s", N, curl_easy_strerror(rc));
		cr_expect_eq(h.status, 200, "/health with %d sockets open", N);
		free(h.body);
	}
	struct reply g = http(&s, "POST", "/v1/completions", "{" IDS_BODY "}");
	cr_expect_eq(g.status, 200, "a generation with %d sockets open: %s", N, g.body);
	free(g.body);
	for (int i = 0; i < N; i++)
		close(fd[i]);
	free(fd);
	cr_assert_eq(stop(&s), 0);
	ctq_remove_tree(s.dir);
}

/* Every answer, refusals at the protocol level included, is one status
 * line and JSON in UTF-8: bytes that are not UTF-8 in a body are refused,
 * in a path replaced (U+FFFD). */
Test(serve, every_answer_is_json_in_utf8, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, NULL);
	static const struct {
		const char *id, *req;
		long status;
	} cases[] = {
		{"a prompt not UTF-8", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n{\"prompt\":\"a\xff\xfe" "b\"}", 400},
		{"a model name not UTF-8", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 26\r\n\r\n{\"model\":\"\xc3\",\"prompt\":\"ab\"}", 400},
		{"a path not UTF-8", "GET /he\xff\xc3lth HTTP/1.1\r\nHost: x\r\n\r\n", 404},
		{"HTTP/1.1 without Host", "GET /health HTTP/1.1\r\n\r\n", 400},
		{"Content-Length twice", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400},
		{"Content-Length twice, differing", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400},
		{"Content-Length and Transfer-Encoding", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		size_t len = 0;
		char *ans = raw_exchange(&s, cases[i].req, strlen(cases[i].req), &len);
		expect_json_answer(cases[i].id, ans, len, cases[i].status, true);
		free(ans);
	}
	/* HTTP/1.0 needs no Host. */
	size_t len = 0;
	char *ans = raw_exchange(&s, "GET /v1/models HTTP/1.0\r\n\r\n", 27, &len);
	expect_json_answer("HTTP/1.0 without Host", ans, len, 200, false);
	free(ans);
	cr_assert_eq(stop(&s), 0);
	ctq_remove_tree(s.dir);
}

/* An invalid Content-Length never reaches ctq's handler: libmicrohttpd
 * answers it. 0.9.75 (Debian / Ubuntu's) sends its status line and headers
 * twice, a library bug (docs/serving.md); skipped there, checked on any
 * other version so an upgrade shows whether it is gone. */
Test(serve, an_invalid_content_length_gets_one_status_line, .timeout = 120)
{
	const char *v = MHD_get_version();
	if (!strcmp(v, "0.9.75"))
		cr_skip_test("libmicrohttpd %s doubles its own 400's status line (docs/serving.md)", v);
	struct server s;
	import_model(&s);
	start(&s, NULL);
	const char *req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}";
	size_t len = 0;
	char *ans = raw_exchange(&s, req, strlen(req), &len);
	long status = 0;
	cr_expect(sscanf(ans, "HTTP/1.%*d %ld", &status) == 1 && status == 400, "%s", ans);
	const char *body = strstr(ans, "\r\n\r\n");
	cr_expect(body && strncmp(body + 4, "HTTP/", 5), "one status line: %s", ans);
	free(ans);
	cr_assert_eq(stop(&s), 0);
	ctq_remove_tree(s.dir);
}

/* A list of prompts (strings, or token-id lists) as vLLM takes it: one
 * choice per prompt, index in order, each the greedy text of its prompt;
 * streamed, each chunk names its choice. */
Test(serve, several_prompts_one_choice_each, .timeout = 120)
{
	struct server s;
	import_model(&s);
	start(&s, (const char *const[]){"--max-batch", "2", NULL});
	const char *ids_body = "{\"prompt\":[[20,6,7],[21,6,7,8],[22,9]],\"max_tokens\":6,\"ignore_eos\":true}";
	const char *text_body = "{\"prompt\":[\"Hello\",\"The sky\"],\"max_tokens\":5,\"ignore_eos\":true}";
	struct reply r1 = http(&s, "POST", "/v1/completions", ids_body);
	struct reply r2 = http(&s, "POST", "/v1/completions", text_body);
	char sbody[256];
	snprintf(sbody, sizeof sbody, "%.*s,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
		 (int)strlen(ids_body) - 1, ids_body);
	struct reply r3 = http(&s, "POST", "/v1/completions", sbody);
	struct reply big = http(&s, "POST", "/v1/completions",
				"{\"prompt\":[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
				"\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
				"\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
				"\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]}");
	struct reply one_long = http(&s, "POST", "/v1/completions", "{\"prompt\":[[1,2],[3,4]],\"max_tokens\":255}");
	cr_assert_eq(stop(&s), 0);
	cr_expect_eq(big.status, 400, "65 prompts: %s", big.body);
	cr_expect_eq(one_long.status, 413, "a prompt over --max-len: %s", one_long.body);
	cr_expect(strstr(one_long.body, "prompt 0"), "names the prompt: %s", one_long.body);
	struct model m;
	model_open(&m, s.model);
	static const int32_t p0[] = {20, 6, 7}, p1[] = {21, 6, 7, 8}, p2[] = {22, 9};
	const struct {
		const int32_t *ids;
		size_t n;
	} want_ids[] = {{p0, 3}, {p1, 4}, {p2, 2}};
	cr_assert_eq(r1.status, 200, "%s", r1.body);
	cr_assert_eq(r3.status, 200, "%s", r3.body);
	cJSON *o = json_of(&r1);
	cr_expect_eq(cJSON_GetArraySize(ctq_json_get(o, "choices")), 3);
	char streamed[3][512] = {{0}};
	char finish[3][16] = {{0}};
	long usage = -1;
	for (const char *p = strstr(r3.body, "data: "); p; p = strstr(p, "data: ")) {
		p += 6;
		const char *e = strstr(p, "\n\n");
		cr_assert(e);
		if (!strncmp(p, "[DONE]", 6))
			break;
		cJSON *ev = NULL;
		cr_assert_eq(ctq_json_parse(p, (size_t)(e - p), "event", NULL, &ev, NULL), CTQ_OK);
		const cJSON *ch = cJSON_GetArrayItem(ctq_json_get(ev, "choices"), 0);
		if (ch) {
			int idx = (int)ctq_json_get(ch, "index")->valuedouble;
			cr_assert(idx >= 0 && idx < 3, "index %d", idx);
			strncat(streamed[idx], str_at(ch, "text", NULL), 500 - strlen(streamed[idx]));
			if (cJSON_IsString(ctq_json_get(ch, "finish_reason")))
				snprintf(finish[idx], sizeof finish[idx], "%s", str_at(ch, "finish_reason", NULL));
		} else {
			usage = (long)ctq_json_get(ctq_json_get(ev, "usage"), "completion_tokens")->valuedouble;
		}
		cJSON_Delete(ev);
		p = e;
	}
	for (int i = 0; i < 3; i++) {
		int64_t n = 0;
		char *want = greedy_text(&m, want_ids[i].ids, want_ids[i].n, 6, true, &n);
		const cJSON *c = cJSON_GetArrayItem(ctq_json_get(o, "choices"), i);
		cr_expect_eq(ctq_json_get(c, "index")->valuedouble, (double)i);
		cr_expect_str_eq(str_at(c, "text", NULL), want, "choice %d", i);
		cr_expect_str_eq(streamed[i], want, "streamed choice %d", i);
		cr_expect_str_eq(finish[i], "length", "streamed choice %d finish", i);
		free(want);
	}
	cr_expect_eq(ctq_json_get(ctq_json_get(o, "usage"), "completion_tokens")->valuedouble, 18.0);
	cr_expect_eq(ctq_json_get(ctq_json_get(o, "usage"), "prompt_tokens")->valuedouble, 9.0);
	cr_expect_eq(usage, 18, "streamed usage");
	cJSON_Delete(o);
	cr_assert_eq(r2.status, 200, "%s", r2.body);
	o = json_of(&r2);
	const char *texts[] = {"Hello", "The sky"};
	for (int i = 0; i < 2; i++) {
		int64_t n = 0;
		char *want = greedy_of_text(&m, texts[i], true, 5, true, &n);
		const cJSON *c = cJSON_GetArrayItem(ctq_json_get(o, "choices"), i);
		cr_expect_str_eq(str_at(c, "text", NULL), want, "text choice %d", i);
		free(want);
	}
	cJSON_Delete(o);
	model_close(&m);
	free(r1.body), free(r2.body), free(r3.body), free(big.body), free(one_long.body);
	ctq_remove_tree(s.dir);
}

/* ---- chat templates and the incremental detokenizer (no server) -------------------- */

#include "serve/chat.h"
#include "serve/detok.h"

static char *render(const char *tpl, const char *bos, const struct ctq_chat_message *m, size_t n,
		    enum ctq_chat_family want)
{
	struct ctq_chat_template t;
	ctq_chat_template_detect(&t, tpl, bos);
	cr_assert_eq(t.family, want, "family %s", ctq_chat_family_name(t.family));
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	struct ctq_error err = {0};
	cr_assert_eq(ctq_chat_render(&t, m, n, &sb, &err), CTQ_OK, "%s", err.message);
	char *s = strdup(ctq_strbuf_str(&sb));
	ctq_strbuf_free(&sb);
	return s;
}

Test(serve_chat, renders_the_template_families_it_recognizes)
{
	/* SmolLM2-Instruct's template (newlines as the JSON file decodes them). */
	const char *smol = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
			   "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
			   "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
			   "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
	/* Qwen2.5's default-system branch, with Jinja's \n escapes kept. */
	const char *qwen = "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
			   "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
			   "{%- endif %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
	/* Meta-Llama-3-8B-Instruct's. */
	const char *llama = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
			    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}"
			    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
			    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
	const struct ctq_chat_message user[] = {{"user", "Hi"}};
	const struct ctq_chat_message sys[] = {{"system", "Be brief."}, {"user", " Hi \n"}};
	char *s = render(smol, NULL, user, 1, CTQ_CHAT_CHATML);
	cr_expect_str_eq(s, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
			    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
	free(s);
	s = render(smol, NULL, sys, 2, CTQ_CHAT_CHATML);
	cr_expect_str_eq(s, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi \n<|im_end|>\n<|im_start|>assistant\n");
	free(s);
	s = render(qwen, NULL, user, 1, CTQ_CHAT_CHATML);
	cr_expect_str_eq(s, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
			    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
	free(s);
	s = render(llama, "<|begin_of_text|>", sys, 2, CTQ_CHAT_LLAMA3);
	cr_expect_str_eq(s, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
			    "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
			    "<|start_header_id|>assistant<|end_header_id|>\n\n");
	free(s);

	struct ctq_chat_template t;
	ctq_chat_template_detect(&t, "{{ messages | tojson }}", NULL);
	cr_expect_eq(t.family, CTQ_CHAT_NONE);
	struct ctq_strbuf sb;
	ctq_strbuf_init(&sb);
	struct ctq_error err = {0};
	cr_expect_eq(ctq_chat_render(&t, user, 1, &sb, &err), CTQ_ERR_USAGE, "an unknown template is refused");
	cr_expect(strstr(err.message, "no family"), "%s", err.message);
	ctq_chat_template_detect(&t, smol, NULL);
	const struct ctq_chat_message bad[] = {{"tool", "x"}};
	ctq_error_clear(&err);
	cr_expect_eq(ctq_chat_render(&t, bad, 1, &sb, &err), CTQ_ERR_USAGE, "an unknown role is refused");
	ctq_strbuf_free(&sb);
}

/* A character cut between two byte tokens is held until complete; a stop
 * string split between tokens is never handed out. */
Test(serve_chat, detok_holds_cut_characters_and_stop_strings)
{
	struct server s;
	import_model(&s);
	struct ctq_tokenizer tok;
	struct ctq_error err = {0};
	cr_assert_eq(ctq_tokenizer_load(&tok, s.model, &err), CTQ_OK, "%s", err.message);
	int32_t *ids = NULL;
	size_t n = 0;
	const char *text = "a\xC3\xA9z";
	cr_assert_eq(ctq_tokenizer_encode(&tok, text, strlen(text), false, &ids, &n, &err), CTQ_OK);
	cr_assert_eq(n, 4, "a, the two bytes of U+00E9, z: %zu tokens", n);
	struct ctq_detok d;
	ctq_detok_init(&d, &tok, NULL, 0);
	const char *piece;
	cr_assert_eq(ctq_detok_update(&d, ids, 1, false, &err), CTQ_OK);
	cr_expect_eq(ctq_detok_take(&d, &piece), 1);
	cr_assert_eq(ctq_detok_update(&d, ids, 2, false, &err), CTQ_OK);
	cr_expect_eq(ctq_detok_take(&d, &piece), 0, "half a character is held");
	cr_assert_eq(ctq_detok_update(&d, ids, 3, false, &err), CTQ_OK);
	size_t k = ctq_detok_take(&d, &piece);
	cr_expect(k == 2 && !memcmp(piece, "\xC3\xA9", 2), "the whole character once complete");
	cr_assert_eq(ctq_detok_update(&d, ids, 4, true, &err), CTQ_OK);
	cr_expect_eq(ctq_detok_take(&d, &piece), 1);
	cr_expect_str_eq(ctq_strbuf_str(&d.text), text);
	ctq_detok_free(&d);

	const char *stops[] = {"\xC3\xA9z"};
	ctq_detok_init(&d, &tok, stops, 1);
	size_t out = 0;
	for (size_t i = 1; i <= 4; i++) {
		cr_assert_eq(ctq_detok_update(&d, ids, (int64_t)i, i == 4, &err), CTQ_OK);
		out += ctq_detok_take(&d, &piece);
	}
	cr_expect(d.stopped, "the stop string was found across three tokens");
	cr_expect_eq(out, 1, "only the text before it came out");
	cr_expect_str_eq(ctq_strbuf_str(&d.text), "a");
	ctq_detok_free(&d);
	free(ids);
	ctq_tokenizer_free(&tok);
	ctq_remove_tree(s.dir);
}

/* ---- sampling (model/engine.c) ------------------------------------------------------ */

#include "core/rng.h"
#include "model/engine.h"

Test(serve_sample, greedy_top_k_top_p_and_seeds)
{
	const float lg[6] = {1.0f, 3.0f, 3.0f, 2.0f, -1.0f, 0.5f};
	struct ctq_engine_cand cand[6];
	struct ctq_rng rng;
	ctq_rng_seed(&rng, 1);
	struct ctq_engine_params greedy = {.temperature = 0, .top_p = 1};
	cr_expect_eq(ctq_engine_sample(lg, 6, &greedy, &rng, cand), 1, "greedy: the first of the tied maxima");
	struct ctq_engine_params k1 = {.temperature = 1, .top_p = 1, .top_k = 1};
	cr_expect_eq(ctq_engine_sample(lg, 6, &k1, &rng, cand), 1, "top_k 1 is greedy");
	struct ctq_engine_params p_small = {.temperature = 1, .top_p = 1e-6};
	for (int i = 0; i < 50; i++)
		cr_expect_eq(ctq_engine_sample(lg, 6, &p_small, &rng, cand), 1, "a tiny top_p keeps the first token");
	/* top_k 3 draws only ids 1, 2, 3, in proportion to exp(logit). */
	struct ctq_engine_params k3 = {.temperature = 1, .top_p = 1, .top_k = 3};
	int count[6] = {0};
	enum { N = 20000 };
	for (int i = 0; i < N; i++)
		count[ctq_engine_sample(lg, 6, &k3, &rng, cand)]++;
	cr_expect_eq(count[0] + count[4] + count[5], 0, "only the top 3");
	double z = 2 * exp(3.0) + exp(2.0);
	for (int id = 1; id <= 3; id++) {
		double want = N * exp((double)lg[id]) / z, sd = sqrt(want);
		cr_expect(fabs(count[id] - want) < 6 * sd, "id %d drawn %d times, expected %.0f", id, count[id], want);
	}
	/* The same seed, the same draws; temperature flattens. */
	struct ctq_engine_params hot = {.temperature = 5, .top_p = 0.95};
	struct ctq_rng a, b;
	ctq_rng_seed(&a, 42);
	ctq_rng_seed(&b, 42);
	int seen_low = 0;
	for (int i = 0; i < 200; i++) {
		int32_t x = ctq_engine_sample(lg, 6, &hot, &a, cand);
		cr_expect_eq(x, ctq_engine_sample(lg, 6, &hot, &b, cand), "draw %d", i);
		seen_low += x == 4 || x == 0 || x == 5;
	}
	cr_expect_gt(seen_low, 0, "at temperature 5 the unlikely tokens come up");
}
