build-dd2/harness/common.o: harness/common.c harness/commands.h \
 core/status.h quant/modules.h core/arena.h quant/qconfig.h \
 backend/backend.h core/fileio.h core/json.h results/run.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
core/fileio.h:
core/json.h:
results/run.h:
