build-dd2/conform/tpcheck.o: conform/tpcheck.c conform/tpcheck.h \
 core/status.h quant/resolve.h core/arena.h quant/modules.h \
 quant/qconfig.h quant/regex.h checkpoint/safetensors.h core/dtype.h \
 core/numerics.h core/rng.h checkpoint/loader.h quant/shard.h \
 reference/ref_ops.h
conform/tpcheck.h:
core/status.h:
quant/resolve.h:
core/arena.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
checkpoint/safetensors.h:
core/dtype.h:
core/numerics.h:
core/rng.h:
checkpoint/loader.h:
quant/shard.h:
reference/ref_ops.h:
