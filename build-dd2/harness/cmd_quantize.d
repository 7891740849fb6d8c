build-dd2/harness/cmd_quantize.o: harness/cmd_quantize.c \
 harness/commands.h core/status.h quant/modules.h core/arena.h \
 quant/qconfig.h backend/backend.h core/fileio.h checkpoint/quantize.h \
 core/dtype.h checkpoint/synth.h checkpoint/safetensors.h \
 results/csv_out.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
core/fileio.h:
checkpoint/quantize.h:
core/dtype.h:
checkpoint/synth.h:
checkpoint/safetensors.h:
results/csv_out.h:
