build-dd2/core/strbuf.o: core/strbuf.c core/strbuf.h core/arena.h
core/strbuf.h:
core/arena.h:
