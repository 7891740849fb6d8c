/* ctq serve: an OpenAI-compatible HTTP server over a checkpoint — the
 * tokenizer and chat template of the model folder, the runner on a backend,
 * the online engine (model/engine.h) and the HTTP layer (serve/server.h).
 * Runs until SIGINT or SIGTERM, then drains the requests in flight and
 * exits 0. The first line on stdout says where it listens. */
#include "harness/commands.h"
#include "core/arena.h"
#include "core/hf_config.h"
#include "model/engine.h"
#include "model/model.h"
#include "serve/chat.h"
#include "serve/server.h"
#include "text/tokenizer.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: ctq serve --model DIR [options]\n"
	       "\n"
	       "An OpenAI-compatible HTTP server (as vLLM's) over the model in DIR:\n"
	       "  POST /v1/completions       prompt as text or token ids; stream, echo, logprobs\n"
	       "  POST /v1/chat/completions  messages through the model's chat template\n"
	       "  GET  /v1/models, /health\n"
	       "Greedy by default; temperature, top_p, top_k, seed, max_tokens, stop, n = 1.\n"
	       "Requests beyond --max-batch queue. SIGINT / SIGTERM: new requests get 503,\n"
	       "those in flight finish, then it exits 0. The first line on stdout is\n"
	       "  serve: listening on http://HOST:PORT/v1 (model NAME)\n"
	       "\n"
	       "options:\n"
	       "  --backend B         cuda or reference (default: cuda when a CUDA device\n"
	       "                      opens, else reference; said on stderr)\n"
	       "  --host H            address to bind (default 127.0.0.1: loopback only)\n"
	       "  --port N            port (default 8000; 0: any free port, printed)\n"
	       "  --max-batch N       requests generating at once: KV-cache slots (default 8)\n"
	       "  --max-len N         positions per request, prompt + max_tokens (default: the\n"
	       "                      model's max_position_embeddings, at most 4096)\n"
	       "  --max-tokens N      tokens per forward call, >= --max-batch (default 2048 on\n"
	       "                      cuda, 512 on reference: whole prompts per call)\n"
	       "  --tp N              tensor parallelism over N ranks: GPUs 0..N-1 with NCCL\n"
	       "                      (cuda), or N in-process ranks (reference)\n"
	       "  --served-name NAME  the model name requests give (default: DIR's basename)\n"
	       "  --tokenizer PATH    tokenizer.json, or a folder holding it, and the chat\n"
	       "                      template of the tokenizer_config.json beside it\n"
	       "                      (default: the model folder's)\n"
	       "  --max-body BYTES    largest request body; larger is 413 (default 8388608)\n"
	       "  --body-budget BYTES request bodies held at once over all connections;\n"
	       "                      beyond it 503 (default 8 x --max-body)\n"
	       "  --max-connections N open connections, one thread each (default 4096, at most\n"
	       "                      the open-file limit less 128); one address may hold N/4\n"
	       "  --quiet             no line per request on stderr\n"
	       "\n"
	       "exit: 0 stopped by a signal after draining; 2 bad usage or input; 3 no GPU for\n"
	       "cuda, or the address cannot be bound.\n");
}

struct serve_args {
	const char *model, *backend, *host, *name, *tokenizer;
	long port, max_batch, max_len, max_tokens, tp, max_body, body_budget, max_conns;
	bool quiet;
	cJSON *config; /* the model's config.json, read once (owned) */
};

static bool parse_args(int argc, char **argv, struct serve_args *a, int *rc)
{
	*a = (struct serve_args){.backend = NULL, .host = "127.0.0.1", .port = 8000,
				 .max_batch = 8, .max_tokens = -1, .tp = 1, .max_body = 8L << 20};
	const struct ctq_opt opts[] = {
		CTQ_OPT_STR("--model", &a->model),
		CTQ_OPT_STR("--backend", &a->backend),
		CTQ_OPT_STR("--host", &a->host),
		CTQ_OPT_STR("--served-name", &a->name),
		CTQ_OPT_STR("--tokenizer", &a->tokenizer),
		CTQ_OPT_INT("--port", &a->port, 0, 65535),
		CTQ_OPT_INT("--max-batch", &a->max_batch, 1, 1024),
		CTQ_OPT_INT("--max-len", &a->max_len, 2, 1L << 20),
		CTQ_OPT_INT("--max-tokens", &a->max_tokens, 1, 1L << 16),
		CTQ_OPT_INT("--tp", &a->tp, 1, CTQ_TP_MAX),
		CTQ_OPT_INT("--max-body", &a->max_body, 1024, 1L << 30),
		CTQ_OPT_INT("--body-budget", &a->body_budget, 1024, 1L << 40),
		CTQ_OPT_INT("--max-connections", &a->max_conns, 4, 1L << 20),
		CTQ_OPT_FLAG("--quiet", &a->quiet),
		CTQ_OPT_END,
	};
	int prc = ctq_opt_parse("serve", argc, argv, opts, NULL, 0, help);
	*rc = prc >= 0 ? prc : CTQ_EXIT_USAGE;
	if (prc >= 0)
		return false;
	if (!a->model) {
		fprintf(stderr, "ctq serve: --model DIR is required (see --help)\n");
		return false;
	}
	/* As bench serve's: a whole prompt per call where it fits. A 512-token
	 * prompt cut into 256-token chunks ran at 3.3 requests/s on the H200
	 * (64 x 512 + 64, concurrency 16, W8A8) where 1024 ran 10.7. */
	if (!ctq_opt_model_config("serve", "--model", a->model, &a->config, rc))
		return false;
	if (!a->backend)
		a->backend = ctq_opt_backend_default("serve");
	if (a->max_tokens < 0)
		a->max_tokens = !strcmp(a->backend, "reference") ? 512 : 2048;
	if (a->max_tokens < a->max_batch) {
		fprintf(stderr, "ctq serve: --max-tokens %ld is below --max-batch %ld; a call carries a decode token for every request\n",
			a->max_tokens, a->max_batch);
		cJSON_Delete(a->config);
		a->config = NULL;
		return false;
	}
	return true;
}

/* The served name: the folder's basename, trailing slashes dropped. */
static void base_name(const char *dir, char *out, size_t cap)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	size_t s = n;
	while (s > 0 && dir[s - 1] != '/')
		s--;
	snprintf(out, cap, "%.*s", (int)(n - s), dir + s);
}

struct serve_state {
	struct ctq_tokenizer tok;
	struct ctq_chat_template chat;
	struct ctq_model model;
	struct ctq_engine *engine;
	struct ctq_server *server;
};

static enum ctq_status serve_open(struct serve_state *st, const struct serve_args *a,
				  const char *name, struct ctq_error *err)
{
	enum ctq_status s;
	/* --tokenizer: a tokenizer.json (its folder holds the chat template) or a folder */
	const char *tok = a->tokenizer ? a->tokenizer : a->model;
	if ((s = ctq_tokenizer_load(&st->tok, tok, err))) {
		/* a synthetic checkpoint (ctq make-model) has none: say how to give one */
		size_t n = strlen(err->message);
		if (s == CTQ_ERR_IO && !a->tokenizer && n + 1 < sizeof err->message)
			snprintf(err->message + n, sizeof err->message - n,
				 " (a model folder without a tokenizer: --tokenizer PATH)");
		return s;
	}
	const struct ctq_model_options mo = {
		.dir = a->model, .backend = a->backend, .tp = (int)a->tp, .numerics = CTQ_ACT_NUMERICS_CTQ,
		.limits = {.max_slots = a->max_batch, .max_len = a->max_len, .max_tokens = a->max_tokens}};
	if ((s = ctq_chat_template_load(&st->chat, tok, err)) || (s = ctq_model_open(&st->model, &mo, err)))
		return s;
	struct ctq_engine_options eo = {.max_batch = a->max_batch, .max_len = a->max_len,
					.max_tokens = a->max_tokens, .echo_rows = 64};
	if ((s = ctq_engine_start(&st->engine, &st->model, &eo, err)))
		return s;
	struct ctq_serve_options so = {.host = a->host, .port = (int)a->port, .model_name = name,
				       .max_len = a->max_len, .max_body = (size_t)a->max_body,
				       .body_budget = (size_t)a->body_budget,
				       .max_connections = (unsigned)a->max_conns, .quiet = a->quiet,
				       .log = stderr};
	return ctq_serve_start(&st->server, &so, st->engine, &st->tok, &st->chat, err);
}

static void serve_close(struct serve_state *st, struct ctq_serve_stats *stats,
			struct ctq_engine_stats *es)
{
	ctq_serve_stop(st->server, stats);
	if (st->engine) {
		ctq_engine_stop(st->engine);
		if (es)
			ctq_engine_get_stats(st->engine, es);
	}
	ctq_engine_free(st->engine);
	ctq_model_close(&st->model);
	ctq_tokenizer_free(&st->tok);
}

int ctq_cmd_serve(int argc, char **argv)
{
	struct serve_args a;
	int rc;
	if (!parse_args(argc, argv, &a, &rc))
		return rc;
	if (!a.max_len) {
		/* the one context rule (core/hf_config.h), before anything opens */
		struct ctq_error cerr = {0};
		int64_t ctx = 0;
		if (ctq_hf_config_context(a.config, &ctx, &cerr)) {
			cJSON_Delete(a.config);
			return ctq_print_error_exit("serve", &cerr);
		}
		a.max_len = ctx > 0 && ctx < 4096 ? (long)ctx : 4096;
	}
	cJSON_Delete(a.config);
	a.config = NULL;
	/* A connection is a socket: take the open-file limit up to its hard
	 * limit, and keep the connections 128 files under it. */
	struct rlimit nofile;
	if (!getrlimit(RLIMIT_NOFILE, &nofile)) {
		if (nofile.rlim_cur < nofile.rlim_max) {
			nofile.rlim_cur = nofile.rlim_max;
			setrlimit(RLIMIT_NOFILE, &nofile);
			getrlimit(RLIMIT_NOFILE, &nofile);
		}
		long room = nofile.rlim_cur == RLIM_INFINITY || nofile.rlim_cur > (1UL << 20)
				    ? 1L << 20 : (long)nofile.rlim_cur - 128;
		if (room < 4)
			room = 4;
		if (!a.max_conns)
			a.max_conns = room < (long)CTQ_SERVE_MAX_CONNECTIONS ? room : (long)CTQ_SERVE_MAX_CONNECTIONS;
	}
	char name[256];
	if (a.name)
		snprintf(name, sizeof name, "%s", a.name);
	else
		base_name(a.model, name, sizeof name);
	/* Every thread started from here on (engine, HTTP, OpenMP) inherits
	 * the mask: the signals reach sigwait below and nothing else. */
	sigset_t sigs, old;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	/* A shell starts background jobs with SIGINT ignored, and an ignored
	 * signal never reaches sigwait: take both back to their default
	 * (blocked, so they only ever end up in sigwait). */
	struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN};
	struct sigaction old_int, old_term, old_pipe;
	sigaction(SIGINT, &dfl, &old_int);
	sigaction(SIGTERM, &dfl, &old_term);
	sigaction(SIGPIPE, &ign, &old_pipe);
	struct serve_state *st = ctq_calloc(1, sizeof *st);
	struct ctq_error err = {0};
	struct ctq_serve_stats stats = {0};
	if (!st) {
		fprintf(stderr, "ctq serve: out of memory\n");
		rc = ctq_status_exit_code(CTQ_ERR_NOMEM);
		goto restore;
	}
	if (serve_open(st, &a, name, &err)) {
		rc = ctq_print_error_exit("serve", &err);
		serve_close(st, NULL, NULL);
		goto restore;
	}
	const bool v6 = strchr(a.host, ':') != NULL;
	printf("serve: listening on http://%s%s%s:%d/v1 (model %s)\n", v6 ? "[" : "", a.host, v6 ? "]" : "",
	       ctq_serve_port(st->server), name);
	fflush(stdout);
	fprintf(stderr,
		"serve: %s on %s (tp %ld): %lld W8A8 and %lld BF16 linear modules; max-batch %ld, max-len %ld, max-tokens %ld; chat template %s%s%s\n",
		a.model, a.backend, a.tp, (long long)st->model.n_quantized, (long long)st->model.n_dense,
		a.max_batch, a.max_len, a.max_tokens, ctq_chat_family_name(st->chat.family),
		st->chat.family == CTQ_CHAT_NONE ? ": " : "", st->chat.family == CTQ_CHAT_NONE ? st->chat.why : "");
	int sig = 0;
	sigwait(&sigs, &sig);
	fprintf(stderr, "serve: %s: draining %ld request(s) in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
		ctq_engine_active(st->engine));
	ctq_serve_drain(st->server);
	struct ctq_engine_stats es = {0};
	serve_close(st, &stats, &es);
	fprintf(stderr,
		"serve: stopped: %ld request(s) answered, %ld failed; %ld generation(s) (%ld cancelled), %lld prompt + %lld completion tokens in %ld forward calls\n",
		stats.requests, stats.failed, stats.generations, es.cancelled, (long long)stats.prompt_tokens,
		(long long)stats.completion_tokens, es.calls);
	rc = CTQ_EXIT_OK;
restore:
	free(st);
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGINT, &old_int, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
