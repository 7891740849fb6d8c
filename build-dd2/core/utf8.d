build-dd2/core/utf8.o: core/utf8.c core/utf8.h
core/utf8.h:
