build-dd2/core/version.o: core/version.c core/version.h
core/version.h:
