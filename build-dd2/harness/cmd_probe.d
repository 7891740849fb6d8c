build-dd2/harness/cmd_probe.o: harness/cmd_probe.c harness/commands.h \
 core/status.h quant/modules.h core/arena.h quant/qconfig.h \
 backend/backend.h conform/probe.h core/dtype.h checkpoint/loader.h \
 quant/resolve.h quant/regex.h checkpoint/safetensors.h quant/shard.h \
 core/fileio.h results/csv_out.h results/run.h families/probe.h \
 families/family.h core/strbuf.h results/files.h results/plot.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
conform/probe.h:
core/dtype.h:
checkpoint/loader.h:
quant/resolve.h:
quant/regex.h:
checkpoint/safetensors.h:
quant/shard.h:
core/fileio.h:
results/csv_out.h:
results/run.h:
families/probe.h:
families/family.h:
core/strbuf.h:
results/files.h:
results/plot.h:
