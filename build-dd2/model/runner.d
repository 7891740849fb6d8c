build-dd2/model/runner.o: model/runner.c model/runner.h core/status.h \
 quant/resolve.h core/arena.h quant/modules.h quant/qconfig.h \
 quant/regex.h backend/backend.h core/dtype.h core/json.h \
 checkpoint/loader.h checkpoint/safetensors.h quant/shard.h
model/runner.h:
core/status.h:
quant/resolve.h:
core/arena.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
backend/backend.h:
core/dtype.h:
core/json.h:
checkpoint/loader.h:
checkpoint/safetensors.h:
quant/shard.h:
