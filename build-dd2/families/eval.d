build-dd2/families/eval.o: families/eval.c families/eval.h \
 families/family.h core/status.h core/strbuf.h results/files.h \
 results/plot.h reports/compare_internal.h reports/compare.h \
 stats/sample.h results/table.h stats/accuracy.h core/json.h
families/eval.h:
families/family.h:
core/status.h:
core/strbuf.h:
results/files.h:
results/plot.h:
reports/compare_internal.h:
reports/compare.h:
stats/sample.h:
results/table.h:
stats/accuracy.h:
core/json.h:
