build-dd2/model/scheduler.o: model/scheduler.c model/scheduler.h \
 core/status.h model/runner.h quant/resolve.h core/arena.h \
 quant/modules.h quant/qconfig.h quant/regex.h backend/backend.h \
 core/time.h
model/scheduler.h:
core/status.h:
model/runner.h:
quant/resolve.h:
core/arena.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
backend/backend.h:
core/time.h:
