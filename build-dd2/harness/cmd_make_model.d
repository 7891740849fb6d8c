build-dd2/harness/cmd_make_model.o: harness/cmd_make_model.c \
 harness/commands.h core/status.h quant/modules.h core/arena.h \
 quant/qconfig.h backend/backend.h core/fileio.h checkpoint/synth.h \
 core/dtype.h checkpoint/safetensors.h core/time.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
core/fileio.h:
checkpoint/synth.h:
core/dtype.h:
checkpoint/safetensors.h:
core/time.h:
