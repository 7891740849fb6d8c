build-dd2/families/bench_model.o: families/bench_model.c \
 families/bench_model.h families/family.h core/status.h core/strbuf.h \
 results/files.h results/plot.h reports/compare_internal.h \
 reports/compare.h stats/sample.h results/table.h core/json.h \
 core/fileio.h
families/bench_model.h:
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
core/fileio.h:
