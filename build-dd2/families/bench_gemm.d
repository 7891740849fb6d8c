build-dd2/families/bench_gemm.o: families/bench_gemm.c \
 families/bench_gemm.h families/family.h core/status.h core/strbuf.h \
 results/files.h results/plot.h reports/compare_internal.h \
 reports/compare.h stats/sample.h results/table.h bench/gemm.h \
 kernels/gemm_timing.h results/csv_out.h core/fileio.h core/json.h
families/bench_gemm.h:
families/family.h:
core/status.h:
core/strbuf.h:
results/files.h:
results/plot.h:
reports/compare_internal.h:
reports/compare.h:
stats/sample.h:
results/table.h:
bench/gemm.h:
kernels/gemm_timing.h:
results/csv_out.h:
core/fileio.h:
core/json.h:
