build-dd2/families/bench_serve.o: families/bench_serve.c \
 families/bench_serve.h families/family.h core/status.h core/strbuf.h \
 results/files.h results/plot.h reports/compare_internal.h \
 reports/compare.h stats/sample.h results/table.h core/json.h
families/bench_serve.h:
families/family.h:
core/status.h:
core/strbuf.h:
results/files.h:
results/plot.h:
reports/compare_internal.h:
reports/compare.h:
stats/sample.h:
results/table.h:
core/json.h:
