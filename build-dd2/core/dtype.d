build-dd2/core/dtype.o: core/dtype.c core/dtype.h
core/dtype.h:
