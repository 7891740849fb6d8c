build-dd2/quant/shard.o: quant/shard.c quant/shard.h core/status.h \
 quant/resolve.h core/arena.h quant/modules.h quant/qconfig.h \
 quant/regex.h
quant/shard.h:
core/status.h:
quant/resolve.h:
core/arena.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
