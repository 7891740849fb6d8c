build-dd2/eval/eval.o: eval/eval.c eval/eval.h core/status.h \
 eval/datasets.h core/arena.h eval/prompts.h core/strbuf.h model/runner.h \
 quant/resolve.h quant/modules.h quant/qconfig.h quant/regex.h \
 backend/backend.h text/tokenizer.h core/sha256.h stats/accuracy.h \
 core/time.h
eval/eval.h:
core/status.h:
eval/datasets.h:
core/arena.h:
eval/prompts.h:
core/strbuf.h:
model/runner.h:
quant/resolve.h:
quant/modules.h:
quant/qconfig.h:
quant/regex.h:
backend/backend.h:
text/tokenizer.h:
core/sha256.h:
stats/accuracy.h:
core/time.h:
