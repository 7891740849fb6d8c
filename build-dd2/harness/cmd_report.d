build-dd2/harness/cmd_report.o: harness/cmd_report.c harness/commands.h \
 core/status.h quant/modules.h core/arena.h quant/qconfig.h \
 backend/backend.h reports/report.h reports/compare.h core/strbuf.h \
 stats/sample.h results/files.h results/run.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
reports/report.h:
reports/compare.h:
core/strbuf.h:
stats/sample.h:
results/files.h:
results/run.h:
