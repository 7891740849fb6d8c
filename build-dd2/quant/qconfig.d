build-dd2/quant/qconfig.o: quant/qconfig.c quant/qconfig.h core/arena.h \
 core/status.h core/fileio.h core/json.h
quant/qconfig.h:
core/arena.h:
core/status.h:
core/fileio.h:
core/json.h:
