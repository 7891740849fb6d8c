build-dd2/core/json_write.o: core/json_write.c core/json_write.h \
 core/status.h core/strbuf.h core/arena.h
core/json_write.h:
core/status.h:
core/strbuf.h:
core/arena.h:
