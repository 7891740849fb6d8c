build-dd2/harness/main.o: harness/main.c core/fileio.h core/status.h \
 core/version.h harness/commands.h quant/modules.h core/arena.h \
 quant/qconfig.h backend/backend.h
core/fileio.h:
core/status.h:
core/version.h:
harness/commands.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
