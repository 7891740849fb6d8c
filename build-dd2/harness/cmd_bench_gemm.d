build-dd2/harness/cmd_bench_gemm.o: harness/cmd_bench_gemm.c \
 harness/commands.h core/status.h quant/modules.h core/arena.h \
 quant/qconfig.h backend/backend.h core/dtype.h core/numerics.h \
 core/rng.h kernels/gemm_timing.h quant/resolve.h quant/regex.h \
 checkpoint/safetensors.h bench/gemm.h core/strbuf.h results/csv_out.h \
 results/env.h results/run.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
core/dtype.h:
core/numerics.h:
core/rng.h:
kernels/gemm_timing.h:
quant/resolve.h:
quant/regex.h:
checkpoint/safetensors.h:
bench/gemm.h:
core/strbuf.h:
results/csv_out.h:
results/env.h:
results/run.h:
