build-dd2/quant/regex.o: quant/regex.c quant/regex.h core/status.h \
 core/arena.h
quant/regex.h:
core/status.h:
core/arena.h:
