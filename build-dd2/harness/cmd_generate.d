build-dd2/harness/cmd_generate.o: harness/cmd_generate.c \
 harness/commands.h core/status.h quant/modules.h core/arena.h \
 quant/qconfig.h backend/backend.h core/fileio.h core/strbuf.h \
 model/runner.h quant/resolve.h quant/regex.h backend/tp.h \
 text/tokenizer.h core/time.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
core/fileio.h:
core/strbuf.h:
model/runner.h:
quant/resolve.h:
quant/regex.h:
backend/tp.h:
text/tokenizer.h:
core/time.h:
