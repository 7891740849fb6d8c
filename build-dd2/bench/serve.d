build-dd2/bench/serve.o: bench/serve.c bench/serve.h backend/tp.h \
 core/status.h backend/backend.h model/runner.h quant/resolve.h \
 core/arena.h quant/modules.h quant/qconfig.h quant/regex.h \
 model/scheduler.h results/csv_out.h core/rng.h core/time.h
bench/serve.h:
backend/tp.h:
core/status.h:
backend/backend.h:
model/runner.h:
quant/resolve.h:
core/arena.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
model/scheduler.h:
results/csv_out.h:
core/rng.h:
core/time.h:
