build-dd2/reports/report.o: reports/report.c reports/report.h \
 core/status.h reports/compare.h core/strbuf.h stats/sample.h \
 results/files.h families/bench_gemm.h families/family.h results/plot.h \
 families/bench_model.h families/bench_serve.h families/conform.h \
 families/eval.h families/probe.h core/fileio.h core/json.h \
 stats/accuracy.h bench/gemm.h kernels/gemm_timing.h results/csv_out.h \
 results/table.h
reports/report.h:
core/status.h:
reports/compare.h:
core/strbuf.h:
stats/sample.h:
results/files.h:
families/bench_gemm.h:
families/family.h:
results/plot.h:
families/bench_model.h:
families/bench_serve.h:
families/conform.h:
families/eval.h:
families/probe.h:
core/fileio.h:
core/json.h:
stats/accuracy.h:
bench/gemm.h:
kernels/gemm_timing.h:
results/csv_out.h:
results/table.h:
