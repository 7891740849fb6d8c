build-dd2/reports/compare_core.o: reports/compare_core.c \
 reports/compare_internal.h core/status.h reports/compare.h core/strbuf.h \
 stats/sample.h results/files.h results/table.h core/json.h
reports/compare_internal.h:
core/status.h:
reports/compare.h:
core/strbuf.h:
stats/sample.h:
results/files.h:
results/table.h:
core/json.h:
