build-dd2/reports/compare.o: reports/compare.c reports/compare.h \
 core/status.h core/strbuf.h stats/sample.h results/files.h \
 reports/compare_internal.h results/table.h core/json.h core/fileio.h \
 families/bench_gemm.h families/family.h results/plot.h \
 families/bench_model.h families/bench_serve.h families/conform.h \
 families/eval.h families/probe.h results/csv_out.h results/run.h
reports/compare.h:
core/status.h:
core/strbuf.h:
stats/sample.h:
results/files.h:
reports/compare_internal.h:
results/table.h:
core/json.h:
core/fileio.h:
families/bench_gemm.h:
families/family.h:
results/plot.h:
families/bench_model.h:
families/bench_serve.h:
families/conform.h:
families/eval.h:
families/probe.h:
results/csv_out.h:
results/run.h:
