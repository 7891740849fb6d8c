build-dd2/checkpoint/loader.o: checkpoint/loader.c checkpoint/loader.h \
 core/status.h quant/resolve.h core/arena.h quant/modules.h \
 quant/qconfig.h quant/regex.h checkpoint/safetensors.h core/dtype.h \
 quant/shard.h
checkpoint/loader.h:
core/status.h:
quant/resolve.h:
core/arena.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
checkpoint/safetensors.h:
core/dtype.h:
quant/shard.h:
