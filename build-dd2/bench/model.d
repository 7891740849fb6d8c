build-dd2/bench/model.o: bench/model.c bench/model.h backend/tp.h \
 core/status.h backend/backend.h model/runner.h quant/resolve.h \
 core/arena.h quant/modules.h quant/qconfig.h quant/regex.h \
 results/csv_out.h core/fileio.h core/rng.h core/time.h
bench/model.h:
backend/tp.h:
core/status.h:
backend/backend.h:
model/runner.h:
quant/resolve.h:
core/arena.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
results/csv_out.h:
core/fileio.h:
core/rng.h:
core/time.h:
