build-dd2/quant/modules.o: quant/modules.c quant/modules.h core/arena.h \
 core/status.h core/json.h
quant/modules.h:
core/arena.h:
core/status.h:
core/json.h:
