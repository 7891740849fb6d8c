build-dd2/quant/resolve.o: quant/resolve.c quant/resolve.h core/arena.h \
 core/status.h quant/modules.h quant/qconfig.h quant/regex.h \
 quant/scheme.h core/json.h
quant/resolve.h:
core/arena.h:
core/status.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
quant/scheme.h:
core/json.h:
