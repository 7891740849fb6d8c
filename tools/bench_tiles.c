/* bench_tiles: device time of each tile configuration of the compute 8.x
 * W8A8 GEMM (kernels/gemm_w8a8_sm80.cu), beside the one its table picks,
 * the GEMV and the sm90 kernel where the GPU has it, at the Qwen3-4B
 * linear shapes: the data behind the tile table and the GEMV bound
 * (docs/kernels.md). Each configuration runs over enough weight and
 * activation copies that one pass touches 3x the L2; 20 calls are captured
 * into a CUDA graph, the graph replayed 15 times, per-call median printed.
 * Not a test, not a product command (tools/h200-session.sh tiles).
 * usage: build/tools/bench_tiles [M,M,...]
 * BENCH_TILES_SHAPES=gate_up,down runs those shapes only; BENCH_TILES_ONLY=0,3
 * those tiles only (no pick, GEMV or sm90 column): what a profiler run
 * (tools/h200-session.sh tilesprof) narrows to. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/gemm_sm80.h"
#include "kernels/gemm_sm90.h"
#include "kernels/kernels.h"

#define CALLS 20
#define SAMPLES 15

#define CK(x)                                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (x);                                                          \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "bench_tiles: %s: %s\n", #x, cudaGetErrorString(e_));  \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

static cudaStream_t st;

/* true when name is an item of the comma list in environment variable var,
 * or var is unset */
static bool listed(const char *var, const char *name)
{
	const char *l = getenv(var);
	if (!l || !*l)
		return true;
	const size_t n = strlen(name);
	for (const char *p = l; *p;) {
		const char *e = strchr(p, ',');
		const size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

/* kind: 0 an sm80 tile (tile), 1 the sm80 pick, 2 gemv, 3 the sm90 pick */
static int launch(int kind, int tile, const int8_t *q, const int8_t *w, const float *sa, const float *sw,
		  int64_t M, int64_t N, int64_t K, uint16_t *y)
{
	struct ctq_error e = {0};
	enum ctq_status s;
	switch (kind) {
	case 0:
	case 1:
		s = ctq_gemm_sm80_launch(q, w, sa, sw, NULL, M, N, K, NULL, y, kind ? -1 : tile, st, &e);
		break;
	case 2:
		s = ctq_gemv_w8a8_launch(q, w, sa, sw, NULL, M, N, K, NULL, y, 0, st, &e);
		break;
	default:
		s = ctq_gemm_sm90_launch(q, w, sa, sw, NULL, M, N, K, NULL, y, -1, st, &e);
	}
	if (s)
		fprintf(stderr, "bench_tiles: %s\n", e.message);
	return s;
}

int main(int argc, char **argv)
{
	long Ms[32] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
	int nm = 14;
	if (argc > 1) {
		nm = 0;
		char buf[256];
		snprintf(buf, sizeof buf, "%s", argv[1]);
		for (char *t = strtok(buf, ","); t && nm < 32; t = strtok(NULL, ","))
			Ms[nm++] = atol(t);
	}
	static const struct {
		const char *name;
		int64_t K, N;
	} shapes[] = {{"qkv", 2560, 6144}, {"o", 4096, 2560}, {"gate_up", 2560, 19456}, {"down", 9728, 2560}};
	int dev = 0, l2 = 0;
	struct cudaDeviceProp p;
	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&p, dev));
	l2 = p.l2CacheSize;
	CK(cudaStreamCreate(&st));
	static const int8_t al[16] __attribute__((aligned(16)));
	const bool sm90 = ctq_gemm_sm90_fits(al, al, 1, 1, 16, 0);
	printf("%s (sm_%d%d, %d SMs); per-call median us over %d graphs of %d calls\n", p.name, p.major,
	       p.minor, p.multiProcessorCount, SAMPLES, CALLS);
	printf("%-8s %6s", "shape", "M");
	for (int t = 0; t < ctq_gemm_sm80_tiles(); t++)
		printf(" %13s", ctq_gemm_sm80_tile_name(t));
	printf(" %13s %8s %8s%s\n", "sm80 pick", "(tile)", "gemv", sm90 ? "     sm90" : "");
	for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
		const int64_t K = shapes[si].K, N = shapes[si].N;
		if (!listed("BENCH_TILES_SHAPES", shapes[si].name))
			continue;
		for (int mi = 0; mi < nm; mi++) {
			const int64_t M = Ms[mi];
			const size_t touched = (size_t)(M * K + N * K + 2 * M * N);
			int copies = (int)(3.0 * l2 / (double)touched) + 1;
			if (copies > 64)
				copies = 64;
			int8_t *q, *w;
			float *sa, *sw;
			uint16_t *y;
			CK(cudaMalloc((void **)&q, (size_t)copies * (size_t)(M * K)));
			CK(cudaMalloc((void **)&w, (size_t)copies * (size_t)(N * K)));
			CK(cudaMalloc((void **)&y, (size_t)copies * (size_t)(M * N) * 2));
			CK(cudaMalloc((void **)&sa, (size_t)M * 4));
			CK(cudaMalloc((void **)&sw, (size_t)N * 4));
			/* random operands: zeros would flatter the kernels */
			struct ctq_rng r;
			ctq_rng_seed(&r, (uint64_t)(M * 7 + N));
			size_t nb = (size_t)(N * K) > (size_t)(M * K) ? (size_t)(N * K) : (size_t)(M * K);
			int8_t *h = malloc(nb);
			float *hs = malloc((size_t)(N > M ? N : M) * 4);
			for (size_t i = 0; i < nb; i++)
				h[i] = (int8_t)ctq_rng_next(&r);
			for (int64_t i = 0; i < (N > M ? N : M); i++)
				hs[i] = 1e-3f;
			for (int c = 0; c < copies; c++) {
				CK(cudaMemcpy(w + (size_t)c * (size_t)(N * K), h, (size_t)(N * K), cudaMemcpyHostToDevice));
				CK(cudaMemcpy(q + (size_t)c * (size_t)(M * K), h, (size_t)(M * K), cudaMemcpyHostToDevice));
			}
			CK(cudaMemcpy(sa, hs, (size_t)M * 4, cudaMemcpyHostToDevice));
			CK(cudaMemcpy(sw, hs, (size_t)N * 4, cudaMemcpyHostToDevice));
			printf("%-8s %6lld", shapes[si].name, (long long)M);
			const int nt = ctq_gemm_sm80_tiles();
			for (int col = 0; col < nt + 3; col++) {
				const int kind = col < nt ? 0 : col - nt + 1;
				char idx[16];
				snprintf(idx, sizeof idx, "%d", col);
				if (getenv("BENCH_TILES_ONLY") && (kind != 0 || !listed("BENCH_TILES_ONLY", idx))) {
					printf(" %13s", "");
					continue;
				}
				if ((kind == 2 && M > 16) || (kind == 3 && !sm90)) {
					printf(" %8s", kind == 2 ? "-" : "");
					continue;
				}
				cudaGraph_t g;
				cudaGraphExec_t ge;
				int bad = 0;
				CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
				for (int c = 0; c < CALLS && !bad; c++) {
					const int k = c % copies;
					bad = launch(kind, col, q + (size_t)k * (size_t)(M * K), w + (size_t)k * (size_t)(N * K),
						     sa, sw, M, N, K, y + (size_t)k * (size_t)(M * N));
				}
				CK(cudaStreamEndCapture(st, &g));
				if (bad)
					return 1;
				CK(cudaGraphInstantiate(&ge, g, 0));
				CK(cudaGraphLaunch(ge, st)); /* warm-up */
				CK(cudaStreamSynchronize(st));
				float t[SAMPLES];
				cudaEvent_t e0, e1;
				CK(cudaEventCreate(&e0));
				CK(cudaEventCreate(&e1));
				for (int sIdx = 0; sIdx < SAMPLES; sIdx++) {
					CK(cudaEventRecord(e0, st));
					CK(cudaGraphLaunch(ge, st));
					CK(cudaEventRecord(e1, st));
					CK(cudaEventSynchronize(e1));
					CK(cudaEventElapsedTime(&t[sIdx], e0, e1));
				}
				for (int a = 1; a < SAMPLES; a++)
					for (int b = a; b > 0 && t[b - 1] > t[b]; b--) {
						float x = t[b];
						t[b] = t[b - 1];
						t[b - 1] = x;
					}
				const double us = 1e3 * t[SAMPLES / 2] / CALLS;
				if (kind == 0)
					printf(" %13.2f", us);
				else if (kind == 1)
					printf(" %13.2f %8s", us, ctq_gemm_sm80_tile_name(ctq_gemm_sm80_pick(M, N, K)));
				else
					printf(" %8.2f", us);
				CK(cudaEventDestroy(e0));
				CK(cudaEventDestroy(e1));
				CK(cudaGraphExecDestroy(ge));
				CK(cudaGraphDestroy(g));
			}
			printf("\n");
			fflush(stdout);
			free(h);
			free(hs);
			CK(cudaFree(q));
			CK(cudaFree(w));
			CK(cudaFree(y));
			CK(cudaFree(sa));
			CK(cudaFree(sw));
		}
	}
	return 0;
}
