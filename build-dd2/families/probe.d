build-dd2/families/probe.o: families/probe.c families/probe.h \
 families/family.h core/status.h core/strbuf.h results/files.h \
 results/plot.h reports/compare_internal.h reports/compare.h \
 stats/sample.h results/table.h
families/probe.h:
families/family.h:
core/status.h:
core/strbuf.h:
results/files.h:
results/plot.h:
reports/compare_internal.h:
reports/compare.h:
stats/sample.h:
results/table.h:
