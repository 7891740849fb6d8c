build-dd2/quant/presets.o: quant/presets.c quant/qconfig.h core/arena.h \
 core/status.h
quant/qconfig.h:
core/arena.h:
core/status.h:
