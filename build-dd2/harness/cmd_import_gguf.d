build-dd2/harness/cmd_import_gguf.o: harness/cmd_import_gguf.c \
 harness/commands.h core/status.h quant/modules.h core/arena.h \
 quant/qconfig.h backend/backend.h checkpoint/gguf.h core/time.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
checkpoint/gguf.h:
core/time.h:
