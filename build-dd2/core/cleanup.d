build-dd2/core/cleanup.o: core/cleanup.c core/cleanup.h
core/cleanup.h:
