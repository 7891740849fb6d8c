build-dd2/checkpoint/safetensors.o: checkpoint/safetensors.c \
 checkpoint/safetensors.h core/arena.h core/dtype.h core/status.h \
 core/utf8.h core/fileio.h core/json.h core/strbuf.h
checkpoint/safetensors.h:
core/arena.h:
core/dtype.h:
core/status.h:
core/utf8.h:
core/fileio.h:
core/json.h:
core/strbuf.h:
