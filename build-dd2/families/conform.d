build-dd2/families/conform.o: families/conform.c families/conform.h \
 families/family.h core/status.h core/strbuf.h results/files.h \
 results/plot.h reports/compare_internal.h reports/compare.h \
 stats/sample.h results/table.h
families/conform.h:
families/family.h:
core/status.h:
core/strbuf.h:
results/files.h:
results/plot.h:
reports/compare_internal.h:
reports/compare.h:
stats/sample.h:
results/table.h:
