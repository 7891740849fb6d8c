/* tools/serve_soak: the attacks of Step 20 on `ctq serve`, bounded and on
 * loopback (make serve-soak; not part of make test):
 *
 *   serve_soak CTQ MODEL TOKENIZER [RSS_LIMIT_MB]
 *
 * starts `CTQ serve --model MODEL --tokenizer TOKENIZER --port 0 --quiet
 * --max-len 4096`, then, while a monitor asks GET /health every half second
 * (5 s limit) and samples the server's VmRSS and thread count:
 *   1. 200 concurrent streams of 32 tokens;
 *   2. 600 sockets held 10 s (300 idle, 300 sending a byte a second) while
 *      20 real requests run;
 *   3. 8 bodies of 8 MiB of token ids at once (refused: 413);
 *   4. 16 non-streamed 2,000-token requests and 16 streams abandoned, then a
 *      4-token request (must finish within 30 s);
 *   5. SIGTERM while 50 streams run: they finish, the server exits 0.
 * Prints served / refused / failed per phase, peak RSS and threads; exit 1
 * when /health went unanswered (3 times running), the server died, a
 * phase's check failed or the peak RSS passed RSS_LIMIT_MB (default 1024). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int port;
static pid_t server;
static volatile int stop_monitor;
static long peak_rss_kb, peak_threads, health_ok, health_fail, health_fail_run, health_fail_max;
static int failures;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
	nanosleep(&(struct timespec){(time_t)s, (long)((s - (double)(time_t)s) * 1e9)}, NULL);
}

static long proc_field(const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)server);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = atol(line + n + 1);
	fclose(f);
	return v;
}

static size_t sink(char *p, size_t sz, size_t n, void *cls)
{
	(void)p, (void)cls;
	return sz * n;
}

static CURL *easy(const char *path, const char *body, size_t len, long timeout_s)
{
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	}
	return c;
}

static void *monitor(void *arg)
{
	(void)arg;
	while (!stop_monitor) {
		CURL *c = easy("/health", NULL, 0, 5);
		long status = 0;
		CURLcode rc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_cleanup(c);
		if (rc == CURLE_OK && (status == 200 || status == 503)) {
			health_ok++;
			health_fail_run = 0;
		} else {
			health_fail++;
			if (++health_fail_run > health_fail_max)
				health_fail_max = health_fail_run;
		}
		long rss = proc_field("VmRSS"), th = proc_field("Threads");
		if (rss > peak_rss_kb)
			peak_rss_kb = rss;
		if (th > peak_threads)
			peak_threads = th;
		sleep_s(0.5);
	}
	return NULL;
}

/* n requests at once (multi); status per request in st; abort_ms > 0: each
 * is given up after that long. Returns how many got 200. */
static int run_many(int n, const char *body, size_t len, long timeout_s, long abort_ms, long *st)
{
	CURLM *m = curl_multi_init();
	CURL **h = calloc((size_t)n, sizeof *h);
	for (int i = 0; i < n; i++) {
		h[i] = easy("/v1/completions", body, len, timeout_s);
		if (abort_ms > 0)
			curl_easy_setopt(h[i], CURLOPT_TIMEOUT_MS, abort_ms);
		curl_multi_add_handle(m, h[i]);
	}
	int running = n, ok = 0;
	while (running) {
		curl_multi_perform(m, &running);
		if (running)
			curl_multi_poll(m, NULL, 0, 1000, NULL);
	}
	for (int i = 0; i < n; i++) {
		long s = 0;
		curl_easy_getinfo(h[i], CURLINFO_RESPONSE_CODE, &s);
		st[i] = s;
		ok += s == 200;
		curl_multi_remove_handle(m, h[i]);
		curl_easy_cleanup(h[i]);
	}
	curl_multi_cleanup(m);
	free(h);
	return ok;
}

static void tally(const char *phase, int n, const long *st, double t0)
{
	int served = 0, refused = 0, failed = 0;
	for (int i = 0; i < n; i++) {
		if (st[i] == 200)
			served++;
		else if (st[i] >= 400)
			refused++;
		else
			failed++;
	}
	printf("serve-soak: %-28s served %4d refused %4d no answer %4d  (%.1f s)\n", phase, served, refused,
	       failed, now_s() - t0);
	fflush(stdout);
}

static void check(bool ok, const char *what)
{
	if (!ok) {
		printf("serve-soak: FAILED: %s\n", what);
		failures++;
	}
}

static int connect_loopback(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
		close(fd);
		return -1;
	}
	return fd;
}

static pid_t start_server(char **argv, int *out_port)
{
	int fd[2];
	if (pipe(fd))
		return -1;
	pid_t pid = fork();
	if (!pid) {
		dup2(fd[1], 1);
		close(fd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	char line[256];
	size_t n = 0;
	while (n + 1 < sizeof line) {
		struct pollfd p = {fd[0], POLLIN, 0};
		if (poll(&p, 1, 60000) <= 0 || read(fd[0], line + n, 1) != 1)
			return -1;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	close(fd[0]);
	const char *c = strstr(line, "127.0.0.1:");
	*out_port = c ? atoi(c + 10) : 0;
	return *out_port > 0 ? pid : -1;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: serve_soak CTQ MODEL TOKENIZER [RSS_LIMIT_MB]\n");
		return 2;
	}
	long rss_limit_mb = argc > 4 ? atol(argv[4]) : 1024;
	struct rlimit nofile;
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	char *sargv[] = {argv[1], "serve", "--model", argv[2], "--tokenizer", argv[3], "--port", "0",
			 "--quiet", "--max-len", "4096", NULL};
	server = start_server(sargv, &port);
	if (server < 0) {
		fprintf(stderr, "serve-soak: ctq serve did not start\n");
		return 1;
	}
	printf("serve-soak: ctq serve pid %d on port %d; RSS at start %ld kB, %ld threads\n", (int)server, port,
	       proc_field("VmRSS"), proc_field("Threads"));
	pthread_t mon;
	pthread_create(&mon, NULL, monitor, NULL);
	static long st[1024];
	double t0 = now_s();

	/* 1. 200 concurrent streams */
	const char *stream_body = "{\"prompt\":[5,6,7,8],\"max_tokens\":32,\"ignore_eos\":true,\"stream\":true}";
	int ok = run_many(200, stream_body, strlen(stream_body), 300, 0, st);
	tally("200 concurrent streams", 200, st, t0);
	check(ok == 200, "every stream of phase 1 served");

	/* 2. 600 idle and slow sockets while 20 requests run */
	t0 = now_s();
	enum { HELD = 600 };
	int fds[HELD], held = 0;
	for (int i = 0; i < HELD; i++)
		if ((fds[i] = connect_loopback()) >= 0)
			held++;
	const char *slow = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
	const char *small = "{\"prompt\":[5,6,7],\"max_tokens\":8,\"ignore_eos\":true}";
	int served2 = 0;
	for (int sec = 0; sec < 10; sec++) {
		for (int i = HELD / 2; i < HELD; i++)
			if (fds[i] >= 0)
				send(fds[i], slow + (sec % (int)strlen(slow)), 1, MSG_NOSIGNAL);
		served2 += run_many(2, small, strlen(small), 30, 0, st + 2 * sec);
		sleep_s(0.5);
	}
	tally("20 requests beside 600 sockets", 20, st, t0);
	printf("serve-soak:   %d of %d sockets connected (300 idle, 300 a byte a second)\n", held, HELD);
	check(served2 == 20, "every request beside the held sockets served");
	for (int i = 0; i < HELD; i++)
		if (fds[i] >= 0)
			close(fds[i]);

	/* 3. 8 x 8 MiB bodies of token ids */
	t0 = now_s();
	size_t len = (8u << 20) - 64, k = 0;
	char *big = malloc(len + 1);
	k = (size_t)sprintf(big, "{\"prompt\":[");
	while (k + 3 < len) {
		big[k++] = '1';
		big[k++] = ',';
	}
	big[k++] = '1', big[k++] = ']', big[k++] = '}';
	run_many(8, big, k, 240, 0, st);
	free(big);
	tally("8 x 8 MiB id bodies", 8, st, t0);
	int r413 = 0;
	for (int i = 0; i < 8; i++)
		r413 += st[i] == 413;
	check(r413 == 8, "every 8 MiB id body refused with 413");

	/* 4. abandoned requests, then a short one */
	t0 = now_s();
	const char *long_body = "{\"prompt\":[5,6,7],\"max_tokens\":2000,\"ignore_eos\":true}";
	const char *long_stream = "{\"prompt\":[5,6,7],\"max_tokens\":2000,\"ignore_eos\":true,\"stream\":true}";
	run_many(16, long_body, strlen(long_body), 30, 300, st);
	run_many(16, long_stream, strlen(long_stream), 30, 300, st + 16);
	double t1 = now_s();
	const char *four = "{\"prompt\":[5,6,7],\"max_tokens\":4,\"ignore_eos\":true}";
	ok = run_many(1, four, strlen(four), 30, 0, st + 32);
	printf("serve-soak: 32 abandoned requests; the next 4-token request took %.2f s\n", now_s() - t1);
	tally("abandoned + 1 short", 33, st, t0);
	check(ok == 1, "a short request after 32 abandoned ones served within 30 s");

	/* 5. SIGTERM mid-load */
	t0 = now_s();
	const char *mid = "{\"prompt\":[5,6,7],\"max_tokens\":256,\"ignore_eos\":true,\"stream\":true}";
	CURLM *m = curl_multi_init();
	CURL *h[50];
	for (int i = 0; i < 50; i++) {
		h[i] = easy("/v1/completions", mid, strlen(mid), 300);
		curl_multi_add_handle(m, h[i]);
	}
	int running = 50;
	bool signalled = false;
	while (running) {
		curl_multi_perform(m, &running);
		if (!signalled && now_s() - t0 > 0.3) {
			kill(server, SIGTERM);
			signalled = true;
		}
		if (running)
			curl_multi_poll(m, NULL, 0, 500, NULL);
	}
	for (int i = 0; i < 50; i++) {
		curl_easy_getinfo(h[i], CURLINFO_RESPONSE_CODE, &st[i]);
		curl_multi_remove_handle(m, h[i]);
		curl_easy_cleanup(h[i]);
	}
	curl_multi_cleanup(m);
	tally("50 streams, SIGTERM at 0.3 s", 50, st, t0);
	stop_monitor = 1;
	pthread_join(mon, NULL);
	int status = 0;
	pid_t w = 0;
	for (int i = 0; i < 600 && (w = waitpid(server, &status, WNOHANG)) == 0; i++)
		sleep_s(0.1);
	if (w != server) {
		kill(server, SIGKILL);
		waitpid(server, &status, 0);
	}
	check(w == server && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the server exited 0 within 60 s of SIGTERM");
	printf("serve-soak: /health answered %ld, unanswered %ld (at most %ld running); peak RSS %.1f MB, peak threads %ld\n",
	       health_ok, health_fail, health_fail_max, (double)peak_rss_kb / 1024.0, peak_threads);
	check(health_fail_max < 3, "/health answered throughout (never 3 misses running)");
	check(peak_rss_kb < rss_limit_mb * 1024, "peak RSS under the limit");
	printf("serve-soak: %s\n", failures ? "FAILED" : "passed");
	curl_global_cleanup();
	return failures ? 1 : 0;
}
