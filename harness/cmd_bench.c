/* ctq bench: dispatches to the benchmark families (bench model, bench serve,
 * bench gemm). */
#include "harness/commands.h"

#include <string.h>

int ctq_cmd_bench(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("usage: ctq bench model [options]   (ctq bench model --help)\n"
		       "       ctq bench serve [options]   (ctq bench serve --help)\n"
		       "       ctq bench gemm [options]    (ctq bench gemm --help)\n");
		return argc < 2 ? CTQ_EXIT_USAGE : CTQ_EXIT_OK;
	}
	if (!strcmp(argv[1], "model"))
		return ctq_cmd_bench_model(argc - 1, argv + 1);
	if (!strcmp(argv[1], "serve"))
		return ctq_cmd_bench_serve(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gemm"))
		return ctq_cmd_bench_gemm(argc - 1, argv + 1);
	fprintf(stderr, "ctq bench: unknown benchmark \"%s\" (model, serve, gemm)\n", argv[1]);
	return CTQ_EXIT_USAGE;
}
