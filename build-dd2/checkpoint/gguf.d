build-dd2/checkpoint/gguf.o: checkpoint/gguf.c checkpoint/gguf.h \
 core/arena.h core/status.h checkpoint/gguf_internal.h core/utf8.h \
 core/dtype.h core/fileio.h core/json_write.h core/strbuf.h \
 checkpoint/safetensors.h
checkpoint/gguf.h:
core/arena.h:
core/status.h:
checkpoint/gguf_internal.h:
core/utf8.h:
core/dtype.h:
core/fileio.h:
core/json_write.h:
core/strbuf.h:
checkpoint/safetensors.h:
