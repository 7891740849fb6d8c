build-dd2/conform/suite.o: conform/suite.c conform/suite.h core/status.h \
 core/strbuf.h quant/qconfig.h core/arena.h quant/resolve.h \
 quant/modules.h quant/regex.h core/cleanup.h core/fileio.h core/json.h \
 quant/shard.h checkpoint/quantize.h core/dtype.h checkpoint/synth.h \
 checkpoint/safetensors.h conform/tpcheck.h
conform/suite.h:
core/status.h:
core/strbuf.h:
quant/qconfig.h:
core/arena.h:
quant/resolve.h:
quant/modules.h:
quant/regex.h:
core/cleanup.h:
core/fileio.h:
core/json.h:
quant/shard.h:
checkpoint/quantize.h:
core/dtype.h:
checkpoint/synth.h:
checkpoint/safetensors.h:
conform/tpcheck.h:
