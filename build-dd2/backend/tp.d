build-dd2/backend/tp.o: backend/tp.c backend/tp.h core/status.h \
 backend/backend.h model/runner.h quant/resolve.h core/arena.h \
 quant/modules.h quant/qconfig.h quant/regex.h
backend/tp.h:
core/status.h:
backend/backend.h:
model/runner.h:
quant/resolve.h:
core/arena.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
