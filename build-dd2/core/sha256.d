build-dd2/core/sha256.o: core/sha256.c core/sha256.h core/status.h \
 core/fileio.h
core/sha256.h:
core/status.h:
core/fileio.h:
