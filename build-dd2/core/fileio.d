build-dd2/core/fileio.o: core/fileio.c core/fileio.h core/status.h \
 core/cleanup.h core/arena.h
core/fileio.h:
core/status.h:
core/cleanup.h:
core/arena.h:
