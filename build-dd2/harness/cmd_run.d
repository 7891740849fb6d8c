build-dd2/harness/cmd_run.o: harness/cmd_run.c harness/commands.h \
 core/status.h quant/modules.h core/arena.h quant/qconfig.h \
 backend/backend.h core/fileio.h core/json.h core/sha256.h core/strbuf.h \
 results/env.h results/junit_merge.h reports/report.h reports/compare.h \
 stats/sample.h results/files.h results/run.h core/time.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
core/fileio.h:
core/json.h:
core/sha256.h:
core/strbuf.h:
results/env.h:
results/junit_merge.h:
reports/report.h:
reports/compare.h:
stats/sample.h:
results/files.h:
results/run.h:
core/time.h:
