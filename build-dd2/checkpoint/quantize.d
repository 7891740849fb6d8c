build-dd2/checkpoint/quantize.o: checkpoint/quantize.c \
 checkpoint/quantize.h core/arena.h core/dtype.h core/status.h \
 checkpoint/synth.h checkpoint/safetensors.h core/fileio.h core/json.h \
 core/numerics.h quant/modules.h quant/qconfig.h quant/regex.h \
 quant/resolve.h
checkpoint/quantize.h:
core/arena.h:
core/dtype.h:
core/status.h:
checkpoint/synth.h:
checkpoint/safetensors.h:
core/fileio.h:
core/json.h:
core/numerics.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
quant/resolve.h:
