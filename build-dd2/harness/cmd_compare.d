build-dd2/harness/cmd_compare.o: harness/cmd_compare.c harness/commands.h \
 core/status.h quant/modules.h core/arena.h quant/qconfig.h \
 backend/backend.h core/fileio.h core/strbuf.h reports/compare.h \
 stats/sample.h results/files.h results/env.h reports/report.h \
 results/run.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
core/fileio.h:
core/strbuf.h:
reports/compare.h:
stats/sample.h:
results/files.h:
results/env.h:
reports/report.h:
results/run.h:
