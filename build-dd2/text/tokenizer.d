build-dd2/text/tokenizer.o: text/tokenizer.c text/tokenizer_internal.h \
 text/tokenizer.h core/status.h core/arena.h core/fileio.h core/json.h \
 core/utf8.h
text/tokenizer_internal.h:
text/tokenizer.h:
core/status.h:
core/arena.h:
core/fileio.h:
core/json.h:
core/utf8.h:
