build-dd2/harness/cmd_conform.o: harness/cmd_conform.c harness/commands.h \
 core/status.h quant/modules.h core/arena.h quant/qconfig.h \
 backend/backend.h conform/suite.h core/strbuf.h quant/resolve.h \
 quant/regex.h results/csv_out.h results/junit.h results/run.h \
 families/conform.h families/family.h results/files.h results/plot.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
conform/suite.h:
core/strbuf.h:
quant/resolve.h:
quant/regex.h:
results/csv_out.h:
results/junit.h:
results/run.h:
families/conform.h:
families/family.h:
results/files.h:
results/plot.h:
