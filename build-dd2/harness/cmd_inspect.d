build-dd2/harness/cmd_inspect.o: harness/cmd_inspect.c harness/commands.h \
 core/status.h quant/modules.h core/arena.h quant/qconfig.h \
 backend/backend.h quant/regex.h quant/resolve.h quant/shard.h \
 core/strbuf.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
quant/regex.h:
quant/resolve.h:
quant/shard.h:
core/strbuf.h:
