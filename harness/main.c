/* ctq — qualifies compressed-tensors W8A8 INT8 inference.
 * The program: one subcommand per file under harness/, listed in
 * harness/registry.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/knobs.h"
#include "backend/plugin_host.h"
#include "core/fileio.h"
#include "core/version.h"
#include "harness/commands.h"

/* The commands that load a checkpoint folder named by --model or
 * --ref-model check it exists before anything else (the backend, the
 * tokenizer), so that a mistyped path is said first: io-error naming it,
 * exit 2. Not --help: help is given whatever follows. With --url (a
 * server), --model is a served name, not a folder. */
static bool model_paths_exist(int argc, char **argv)
{
	const char *cmd = argv[1];
	bool bench = !strcmp(cmd, "bench") && argc > 2 &&
		     (!strcmp(argv[2], "model") || !strcmp(argv[2], "serve"));
	if (!bench && strcmp(cmd, "eval") && strcmp(cmd, "generate"))
		return true;
	bool url = false;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
		url |= !strcmp(argv[i], "--url");
	}
	for (int i = 2; i + 1 < argc; i++) {
		if ((strcmp(argv[i], "--model") || url) && strcmp(argv[i], "--ref-model"))
			continue;
		const char *path = argv[++i];
		if (ctq_path_exists(path))
			continue;
		char name[64];
		snprintf(name, sizeof name, "%s%s%s", cmd, bench ? " " : "", bench ? argv[2] : "");
		struct ctq_error err = {0};
		ctq_error_set(&err, CTQ_ERR_IO, path, "%s: no such file or folder", argv[i - 1]);
		ctq_print_error(name, &err);
		return false;
	}
	return true;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ctq <command> [options]\n"
		"\n"
		"ctq qualifies compressed-tensors W8A8 INT8 LLM inference.\n"
		"\n"
		"commands:\n");
	for (size_t i = 0; i < ctq_n_commands; i++)
		fprintf(f, "  %-12s %s\n", ctq_commands[i].name, ctq_commands[i].summary);
	fprintf(f,
		"  %-12s %s\n"
		"\n"
		"`ctq <command> --help` describes a command.\n"
		"exit codes: 0 all passed; 1 a check failed or a regression was found;\n"
		"            2 bad usage or bad input; 3 the environment cannot do it.\n",
		"help", "this text, or `ctq help <command>`");
	fprintf(f, "`ctq --version` prints the version, the git revision of the build and the GPU\n"
		   "architectures it carries code for.\n");
}

/* What GPU code the binary carries, machine code apart from PTX, and the
 * W8A8 GEMM path each generation takes (docs/kernels.md). */
static void print_gpu_code(FILE *f)
{
	const char *a = ctq_build_cuda_archs();
	if (!a[0]) {
		fprintf(f, "GPU code: none (built without CUDA; nvcc on the PATH turns it on)\n");
		return;
	}
	char sass[512] = "", ptx[256] = "";
	char w[32];
	for (const char *s = a; ctq_arch_next(&s, w, sizeof w);) {
		char *dst = !strncmp(w, "sm_", 3) ? sass : ptx;
		size_t cap = dst == sass ? sizeof sass : sizeof ptx, len = strlen(dst);
		snprintf(dst + len, cap - len, "%s%s", len ? " " : "", w);
	}
	fprintf(f, "GPU code: machine code for %s; PTX %s\n", sass[0] ? sass : "none",
		ptx[0] ? ptx : "none (no GPU newer than those runs it)");
	fprintf(f, "          (make CUDA_ARCH=\"...\" or CUDA_ARCH=native chooses; a GPU none of these\n"
		   "          covers is refused with its compute capability)\n");
	fprintf(f, "W8A8 GEMM paths: sm90-wgmma on compute capability 9.0, sm80-mma on 8.x, 10.x and\n"
		   "          12.x, gemv at M = 1 (M <= 16 without them), dp4a where neither takes\n"
		   "          the operands\n");
}

/* OpenMP threads of the CPU backend wait passively (on a futex) unless the
 * user said otherwise: libgomp's default spins up to 300,000 times at every
 * barrier, and on shared cores the spinning thread takes the time slice of
 * the one it waits for; decoding a 35M-parameter model with two busy loops
 * beside it ran 1.5-3x slower (docs/architecture.md, "The reference
 * backend's threads"). libgomp reads OMP_WAIT_POLICY once, as it loads,
 * before main (and glibc resets the environment after .preinit_array), so
 * the variable takes effect only through one exec of this program with it
 * set; without /proc the program runs on with libgomp's default. */
static void omp_wait_passive(char **argv)
{
#ifdef _OPENMP
	if (ctq_knobs_omp_wait_chosen() || setenv("OMP_WAIT_POLICY", "passive", 0))
		return;
	execv("/proc/self/exe", argv);
	unsetenv("OMP_WAIT_POLICY");
#else
	(void)argv;
#endif
}

int main(int argc, char **argv)
{
	omp_wait_passive(argv);
	/* A CUDA kernel plug-in's own process (backend/plugin_host.h). */
	if (argc > 1 && !strcmp(argv[1], CTQ_PLUGIN_HOST_ARG))
		return ctq_plugin_host_main(argc, argv);
	ctq_plugin_host_set_exe("/proc/self/exe");
	if (argc < 2) {
		usage(stderr);
		return CTQ_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("ctq %s (revision %s)\n", ctq_version(), ctq_build_revision());
		print_gpu_code(stdout);
		return CTQ_EXIT_OK;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		/* `ctq help --help` and `ctq help help` describe help: this text. */
		if (argc > 2 && strcmp(argv[2], "--help") && strcmp(argv[2], "-h") &&
		    strcmp(argv[2], "help")) {
			const struct ctq_command *c = ctq_command_find(argv[2]);
			if (c) {
				char *hv[] = {argv[2], "--help", NULL};
				return c->run(2, hv);
			}
			fprintf(stderr, "ctq: unknown command \"%s\"\n", argv[2]);
			return CTQ_EXIT_USAGE;
		}
		usage(stdout);
		return CTQ_EXIT_OK;
	}
	if (!model_paths_exist(argc, argv))
		return CTQ_EXIT_USAGE;
	const struct ctq_command *c = ctq_command_find(cmd);
	if (c)
		return c->run(argc - 1, argv + 1);
	fprintf(stderr, "ctq: unknown command \"%s\"\n\n", cmd);
	usage(stderr);
	return CTQ_EXIT_USAGE;
}
