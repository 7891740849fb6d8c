build-dd2/harness/cmd_eval.o: harness/cmd_eval.c harness/commands.h \
 core/status.h quant/modules.h core/arena.h quant/qconfig.h \
 backend/backend.h core/fileio.h core/json.h core/sha256.h core/strbuf.h \
 eval/datasets.h eval/eval.h eval/prompts.h model/runner.h \
 quant/resolve.h quant/regex.h text/tokenizer.h stats/accuracy.h \
 results/csv_out.h results/junit.h results/run.h core/time.h \
 families/eval.h families/family.h results/files.h results/plot.h
harness/commands.h:
core/status.h:
quant/modules.h:
core/arena.h:
quant/qconfig.h:
backend/backend.h:
core/fileio.h:
core/json.h:
core/sha256.h:
core/strbuf.h:
eval/datasets.h:
eval/eval.h:
eval/prompts.h:
model/runner.h:
quant/resolve.h:
quant/regex.h:
text/tokenizer.h:
stats/accuracy.h:
results/csv_out.h:
results/junit.h:
results/run.h:
core/time.h:
families/eval.h:
families/family.h:
results/files.h:
results/plot.h:
