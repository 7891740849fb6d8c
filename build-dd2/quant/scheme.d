build-dd2/quant/scheme.o: quant/scheme.c quant/scheme.h core/status.h \
 quant/qconfig.h core/arena.h
quant/scheme.h:
core/status.h:
quant/qconfig.h:
core/arena.h:
