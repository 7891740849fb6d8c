build-dd2/harness/cmd_bench_model.o: harness/cmd_bench_model.c \
 harness/commands.h core/status.h quant/modules.h core/arena.h \
 quant/qconfig.h backend/backend.h bench/model.h backend/tp.h \
 model/runner.h quant/resolve.h quant/regex.h results/csv_out.h \
 results/run.h families/bench_model.h families/family.h core/strbuf.h \
 results/files.h results/plot.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
bench/model.h:
backend/tp.h:
model/runner.h:
quant/resolve.h:
quant/regex.h:
results/csv_out.h:
results/run.h:
families/bench_model.h:
families/family.h:
core/strbuf.h:
results/files.h:
results/plot.h:
