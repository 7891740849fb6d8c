build-dd2/bench/gemm.o: bench/gemm.c bench/gemm.h core/status.h \
 core/strbuf.h kernels/gemm_timing.h results/csv_out.h core/dtype.h \
 core/numerics.h core/fileio.h reference/ref_ops.h results/plot.h \
 results/table.h families/bench_gemm.h families/family.h results/files.h
bench/gemm.h:
core/status.h:
core/strbuf.h:
kernels/gemm_timing.h:
results/csv_out.h:
core/dtype.h:
core/numerics.h:
core/fileio.h:
reference/ref_ops.h:
results/plot.h:
results/table.h:
families/bench_gemm.h:
families/family.h:
results/files.h:
