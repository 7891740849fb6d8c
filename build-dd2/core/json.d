build-dd2/core/json.o: core/json.c core/json.h core/status.h core/arena.h \
 core/fileio.h
core/json.h:
core/status.h:
core/arena.h:
core/fileio.h:
